"""In-process measurement of a Python callable, with the same method as ``assay run``.

Each round calls ``fn`` ``calls_per_round`` times and times every call: those times are
the round's unit readings. The warm-up of each round is removed with E-Divisive with
Medians, samples are merged into subsessions until their lag-1 autocorrelation is small,
and rounds continue until the CI of the mean time per call is as narrow as asked.

>>> r = measure(lambda: sum(range(100)), calls_per_round=200, max_time=2)
>>> r.name, r.unit, r.n_raw > 0
('time_per_call', 's', True)
"""

from __future__ import annotations

import gc
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Literal, TextIO

import numpy as np

from assay.designs.run_until_ci import PIResult, RoundData, analyze_pi, decide, round_segment
from assay.spec import PISpec, StopSpec

_PI = PISpec(name="time_per_call", unit="s", direction="lower")


class TargetNotMetWarning(UserWarning):
    """:func:`measure` ended (its time or round budget spent) with a CI wider than asked."""


def _estimate(result: PIResult) -> str:
    if result.n_samples and result.relative_half_width < float("inf"):
        return f"{result.mean:.4g} s ± {result.relative_half_width:.1%}"
    return "no interval yet"


def _progress_line(result: PIResult, rounds: int, elapsed: float, stop: StopSpec) -> str:
    return (
        f"assay.measure: round {rounds}, {_estimate(result)} (target "
        f"±{stop.ci_width:.1%}), {elapsed:.1f} of {stop.max_time:g} s"
    )


def _time_calls(fn: Callable[[], object], calls: int, gc_off: bool = False) -> np.ndarray:
    """Each call's duration in seconds; with ``gc_off`` the cyclic garbage collector is
    off while they run (as :mod:`timeit` does: a collection lands in whichever call
    happens to trigger it) and back as it was after."""
    clock = time.perf_counter_ns
    out = np.empty(calls, dtype=np.float64)
    was = gc.isenabled()
    if gc_off:
        gc.disable()
    try:
        for i in range(calls):
            t0 = clock()
            fn()
            out[i] = clock() - t0
    finally:
        if gc_off and was:
            gc.enable()
    out *= 1e-9
    return out


#: A round's target length when :func:`measure` chooses the calls per round.
ROUND_S = 0.05


def calls_for_round(fn: Callable[[], object], round_s: float = ROUND_S) -> int:
    """Calls per round so that a round takes about ``round_s`` (1 to 1000), from calls
    timed for a fifth of it (as pyperf calibrates its loops).

    >>> 1 <= calls_for_round(lambda: None) <= 1000
    True
    """
    calls, started = 0, time.perf_counter()
    while calls == 0 or (calls < 1000 and time.perf_counter() - started < round_s / 5):
        fn()  # at least once: a round shorter than the clock's step still needs a rate
        calls += 1
    per_call = (time.perf_counter() - started) / calls
    return max(1, min(1000, int(round_s / max(per_call, 1e-9))))


def _isolated_round(fn: Callable[[], object], calls: int, gc_off: bool) -> np.ndarray:
    """One round in a fresh process forked for it (``isolate=True``): the heap, caches
    and garbage the earlier rounds left do not bias it. Fork: ``fn`` need not pickle."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_round_in_child, args=(send, fn, calls, gc_off), daemon=True)
    child.start()
    send.close()
    try:
        got = receive.recv()
    except EOFError:
        got = None
    finally:
        child.join()
        receive.close()
    if not isinstance(got, bytes):
        raise RuntimeError(
            f"assay.measure(isolate=True): the round's process ended without a result "
            f"(exit status {child.exitcode}): {got if isinstance(got, str) else 'no output'}"
        )
    return np.frombuffer(got, dtype=np.float64).copy()


def _round_in_child(send: Any, fn: Callable[[], object], calls: int, gc_off: bool) -> None:
    try:
        send.send(_time_calls(fn, calls, gc_off).tobytes())
    except BaseException as exc:  # the parent says what went wrong
        send.send(f"{type(exc).__name__}: {exc}")
    finally:
        send.close()


def timer_overhead(calls: int = 2000) -> float:
    """Seconds the per-call timing adds: the median timed duration of a no-op call."""
    return float(np.median(_time_calls(lambda: None, calls)))


def measure(
    fn: Callable[[], object],
    *,
    calls_per_round: int | None = None,
    ci_width: float = 0.05,
    confidence: float = 0.95,
    max_rounds: int = 1000,
    max_time: float = 60.0,
    min_samples: int = 10,
    warmup_removal: Literal["edm", "edm-pilot", "none"] = "edm",
    subtract_timer_overhead: bool = False,
    progress: bool | TextIO = False,
    gc_off: bool = True,
    isolate: bool = False,
) -> PIResult:
    """Measure the mean time per call of ``fn`` to the requested relative CI width.

    ``calls_per_round`` (None: chosen so that a round takes about :data:`ROUND_S`, as
    pyperf calibrates its loops; :func:`calls_for_round`). The garbage collector is off
    while calls are timed (``gc_off``, as :mod:`timeit` does) and collects between
    rounds; ``isolate=True`` runs each round in a fresh forked process, so that one
    round's heap does not bias the next (and a benchmark's state cannot leak between
    rounds), at the cost of a fork per round. ``result.extra`` records
    ``calls_per_round``, ``gc_off`` and ``isolate`` (1.0 or 0.0).

    The timer's own cost (timing a no-op) is reported in ``result.extra['timer_overhead_s']``;
    with ``subtract_timer_overhead=True`` it is subtracted from every unit reading.
    ``progress=True`` (or a text stream) prints a line about once a second: the round,
    the estimate and its width so far, the time spent of ``max_time``.  When the budget
    ends before the target, :class:`TargetNotMetWarning` says so (``result.met`` is
    False and ``result.note`` says why).

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     r = measure(lambda: None, calls_per_round=50, max_rounds=2, min_samples=2)
    >>> r.met, [w.category.__name__ for w in seen]
    (False, ['TargetNotMetWarning'])
    """
    if calls_per_round is None:
        calls_per_round = calls_for_round(fn)
    if calls_per_round < 1:
        raise ValueError(f"calls_per_round must be >= 1, got {calls_per_round}")
    stop = StopSpec(
        ci_width=ci_width,
        confidence=confidence,
        max_rounds=max_rounds,
        max_time=max_time,
        min_samples=min_samples,
        warmup_removal=warmup_removal,
    )
    overhead = timer_overhead()
    rounds: list[RoundData] = []
    started = time.perf_counter()
    streak = 0
    out = (sys.stderr if progress is True else progress) or None
    shown = started
    while True:
        result = analyze_pi(_PI, rounds, stop)
        if out is not None and time.perf_counter() - shown >= 1.0:
            shown = time.perf_counter()
            print(_progress_line(result, len(rounds), shown - started, stop), file=out)
        decision = decide(
            [result],
            [_PI],
            stop,
            rounds_done=len(rounds),
            rounds_failed=0,
            elapsed=time.perf_counter() - started,
            met_streak=streak,
        )
        streak = streak + 1 if decision.target_met else 0
        if decision.done:
            break
        t0 = time.perf_counter()
        if isolate:
            units = _isolated_round(fn, calls_per_round, gc_off)
        else:
            units = _time_calls(fn, calls_per_round, gc_off)
            if gc_off:
                gc.collect()  # the garbage of the round, collected outside the timing
        duration = time.perf_counter() - t0
        if subtract_timer_overhead:
            units = np.maximum(units - overhead, 0.0)
        rounds.append(
            RoundData(
                units=units, duration=duration, segment=round_segment(units, stop.warmup_removal)
            )
        )
    if not result.met:
        warnings.warn(
            f"assay.measure: the CI target ±{stop.ci_width:.1%} was not met: "
            f"{decision.reason} ({_estimate(result)})",
            TargetNotMetWarning,
            stacklevel=2,
        )
    return replace(
        result,
        note=(result.note + "; " if result.note else "") + decision.reason,
        extra={
            **result.extra,
            "timer_overhead_s": overhead,
            "rounds": float(len(rounds)),
            "calls_per_round": float(calls_per_round),
            "gc_off": float(gc_off),
            "isolate": float(isolate),
        },
    )
