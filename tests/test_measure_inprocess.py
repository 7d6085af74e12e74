"""``assay.measure`` (#39): calls per round calibrated, the garbage collector off while
calls are timed, a fresh process per round with ``isolate=True``. No assertion rests on
a duration."""

from __future__ import annotations

import gc
import os
import warnings

import pytest

from assay.api import TargetNotMetWarning, _time_calls, calls_for_round, measure


def test_the_collector_is_off_while_calls_are_timed_and_back_after() -> None:
    seen: list[bool] = []
    assert gc.isenabled()
    _time_calls(lambda: seen.append(gc.isenabled()), 5, gc_off=True)
    assert seen == [False] * 5 and gc.isenabled()
    seen.clear()
    _time_calls(lambda: seen.append(gc.isenabled()), 3, gc_off=False)
    assert seen == [True] * 3


def test_the_collector_comes_back_when_a_call_raises() -> None:
    def boom() -> None:
        raise KeyError("x")

    with pytest.raises(KeyError):
        _time_calls(boom, 3, gc_off=True)
    assert gc.isenabled()


def test_a_collector_turned_off_by_the_caller_stays_off() -> None:
    gc.disable()
    try:
        _time_calls(lambda: None, 3, gc_off=True)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_calls_per_round_are_chosen_for_the_round_time() -> None:
    calls = 0

    def counted() -> None:
        nonlocal calls
        calls += 1

    n = calls_for_round(counted, round_s=0.05)
    assert 1 <= n <= 1000 and calls >= 1
    # a call that takes longer than a round: one call per round
    assert calls_for_round(lambda: sum(range(10**6)), round_s=1e-6) == 1


def _measured(**kw: object) -> tuple[object, list[type[Warning]]]:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        r = measure(lambda: None, max_rounds=3, min_samples=2, **kw)  # type: ignore[arg-type]
    return r, [w.category for w in seen]


def test_the_result_records_how_it_was_timed() -> None:
    r, _ = _measured(calls_per_round=20)
    extra = r.extra  # type: ignore[attr-defined]
    assert extra["calls_per_round"] == 20 and extra["gc_off"] == 1.0
    assert extra["isolate"] == 0.0 and extra["rounds"] == 3
    r, _ = _measured()  # calibrated
    assert 1 <= r.extra["calls_per_round"] <= 1000  # type: ignore[attr-defined]


def test_isolated_rounds_run_in_fresh_processes() -> None:
    pids: list[int] = []
    state = {"calls": 0}

    def fn() -> None:
        state["calls"] += 1  # a forked round's state never reaches the parent
        pids.append(os.getpid())

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TargetNotMetWarning)
        r = measure(fn, calls_per_round=10, max_rounds=3, min_samples=2, isolate=True)
    assert r.extra["isolate"] == 1.0 and r.n_raw > 0
    assert state["calls"] == 0 and pids == []  # every timed call ran in a child


def test_an_isolated_round_that_fails_says_why() -> None:
    def boom() -> None:
        raise ValueError("no such table")

    with pytest.raises(RuntimeError, match="ValueError: no such table"):
        measure(boom, calls_per_round=5, max_rounds=2, min_samples=2, isolate=True)
