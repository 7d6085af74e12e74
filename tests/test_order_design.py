"""The schedule of an order experiment: baselines, seeded random orders, replay."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.designs.order import (
    baseline_order,
    flat_schedule,
    order_schedule,
    random_order,
    run_kinds,
)


def test_baselines() -> None:
    assert baseline_order(["a", "b", "c"], 2) == ["a", "a", "b", "b", "c", "c"]
    assert baseline_order(["a", "b", "c"], 2, "cycled") == ["a", "b", "c", "a", "b", "c"]
    assert baseline_order(["a", "b"], 1, "cycled") == baseline_order(["a", "b"], 1)


def test_random_order_is_seeded_and_pinned() -> None:
    # pinned: a change of the generator would silently change every recorded schedule
    assert random_order(["a", "b", "c"], 2, seed=42, run=1) == ["c", "a", "a", "b", "b", "c"]
    assert random_order(["a", "b", "c"], 2, 42, 1) == random_order(["a", "b", "c"], 2, 42, 1)
    orders = {tuple(random_order(["a", "b", "c", "d"], 2, 42, k)) for k in range(20)}
    assert len(orders) > 15  # a fresh permutation per run


def test_run_kinds_alternate() -> None:
    assert run_kinds(1, 1) == ["fixed", "random"]
    assert run_kinds(3, 1) == ["fixed", "random", "fixed", "fixed"]
    assert run_kinds(1, 3) == ["fixed", "random", "random", "random"]


def test_schedule_fixed_runs_repeat_the_baseline() -> None:
    plan = order_schedule(["x", "y"], fixed_runs=3, random_runs=3, repetitions=2, seed=9)
    assert [r.index for r in plan] == list(range(6))
    fixed = [r for r in plan if r.kind == "fixed"]
    assert all(r.trials == ("x", "x", "y", "y") for r in fixed)
    rnd = [r for r in plan if r.kind == "random"]
    assert all(r.trials == tuple(random_order(["x", "y"], 2, 9, r.index)) for r in rnd)


def test_flat_schedule_positions_restart_per_run() -> None:
    flat = flat_schedule(
        order_schedule(["a", "b"], fixed_runs=2, random_runs=1, repetitions=3, seed=1)
    )
    assert len(flat) == 3 * 6
    assert [t.position for t in flat if t.run == 1] == list(range(6))
    assert {t.kind for t in flat if t.run == 1} == {"random"}


def test_more_runs_extend_the_same_schedule() -> None:
    """Asking for more runs of each kind keeps every run already planned (resume with a
    bigger budget continues the same experiment)."""
    small = order_schedule(["a", "b", "c"], fixed_runs=2, random_runs=2, repetitions=2, seed=5)
    big = order_schedule(["a", "b", "c"], fixed_runs=4, random_runs=4, repetitions=2, seed=5)
    assert big[: len(small)] == small


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"tests": []}, "at least one test"),
        ({"tests": ["a", "a"]}, "unique"),
        ({"repetitions": 0}, "repetitions"),
        ({"seed": -1}, "seed"),
        ({"fixed_runs": 0}, "fixed_runs"),
        ({"baseline": "sorted"}, "baseline"),
    ],
)
def test_schedule_rejects_bad_arguments(kwargs: dict[str, object], match: str) -> None:
    args: dict[str, object] = {
        "tests": ["a", "b"],
        "fixed_runs": 1,
        "random_runs": 1,
        "repetitions": 1,
        "seed": 0,
        "baseline": "blocked",
    }
    args.update(kwargs)
    tests = args.pop("tests")
    with pytest.raises(ValueError, match=match):
        order_schedule(tests, **args)  # type: ignore[arg-type]


@given(
    tests=st.lists(
        st.text("abcdefgh", min_size=1, max_size=3), min_size=1, max_size=5, unique=True
    ),
    fixed=st.integers(1, 4),
    rnd=st.integers(1, 4),
    reps=st.integers(1, 4),
    seed=st.integers(0, 2**31 - 1),
    baseline=st.sampled_from(["blocked", "cycled"]),
)
@settings(max_examples=80, deadline=None)
def test_every_run_holds_each_test_repetitions_times(
    tests: list[str], fixed: int, rnd: int, reps: int, seed: int, baseline: str
) -> None:
    plan = order_schedule(
        tests,
        fixed_runs=fixed,
        random_runs=rnd,
        repetitions=reps,
        seed=seed,
        baseline="cycled" if baseline == "cycled" else "blocked",
    )
    assert Counter(r.kind for r in plan) == {"fixed": fixed, "random": rnd}
    for r in plan:
        assert Counter(r.trials) == {t: reps for t in tests}
    again = order_schedule(
        tests,
        fixed_runs=fixed,
        random_runs=rnd,
        repetitions=reps,
        seed=seed,
        baseline="cycled" if baseline == "cycled" else "blocked",
    )
    assert again == plan  # replayable from the recorded seed
