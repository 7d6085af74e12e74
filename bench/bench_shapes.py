"""Coverage of `assay run`'s CI on the shapes real benchmarks have (issue #21).

Each case simulates 200 studies that run the same analysis and stopping rule as
``assay run`` (``analyze_pi`` + ``decide``, as ``Runner._loop`` calls them) on synthetic
rounds with a known truth, and counts how often the reported CI covers it. A study that
ends with "no valid CI" (infinite bounds: the analysis refused to give one) is counted
apart: for the non-stationary shapes (a step, a drift) that is the right answer; on
stationary shapes it must stay rare (<= 5%).

Truth: the expectation of the process for stationary shapes (for the two-mode rounds,
the mixture's mean); for a step or a drift, the mean of the true means of the rounds
the study ran (what a reader takes "the mean" to be).

Run: python bench/bench_shapes.py [--reps 200] [--only 1,3] [--by-round]

Rows after the default ones (issue #37: readings AR(1) 0.5 and 0.8 and i.i.d. at a
±20% target, where some studies stop at the first rounds allowed) run only when
``--only`` names them; ``--by-round`` adds each case's coverage by stopping round.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import math
import os
import platform
import sys
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import stats

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

from assay.designs.run_until_ci import (
    Decision,
    PIResult,
    RoundData,
    analyze_pi,
    decide,
    next_look,
    round_segment,
)
from assay.execute.environment import cpu_model
from assay.spec import PISpec, StopSpec

MU = 10.0
# (rng, round index, carried noise state) -> (units or a reading, new state, true mean)
RoundFn = Callable[[np.random.Generator, int, float], tuple[np.ndarray | float, float, float]]


def ar1(rng: np.random.Generator, n: int, phi: float, state: float, sd: float = 1.0):  # type: ignore[no-untyped-def]
    e = rng.normal(0.0, sd * math.sqrt(1 - phi * phi), n)
    out = np.empty(n)
    x = state
    for i in range(n):
        x = phi * x + e[i]
        out[i] = x
    return out, x


def units_iid(rng: np.random.Generator, k: int, s: float):  # type: ignore[no-untyped-def]
    return MU + rng.normal(0, 1, 200), s, MU


def units_ar05(rng: np.random.Generator, k: int, s: float):  # type: ignore[no-untyped-def]
    x, s = ar1(rng, 200, 0.5, s)
    return MU + x, s, MU


def units_round_effects(rng: np.random.Generator, k: int, s: float):  # type: ignore[no-untyped-def]
    # i.i.d. units whose rounds also differ a little: a random level per round of one
    # round mean's noise (sd 1 / sqrt(200)), which the F test misses half the time
    level = MU + float(rng.normal(0, 1 / math.sqrt(200)))
    return level + rng.normal(0, 1, 200), s, MU


def two_modes(rng: np.random.Generator, k: int, s: float):  # type: ignore[no-untyped-def]
    # each round (process start) lands in a slow mode 20% above with p = 0.3; the unit
    # readings inside a round agree
    level = MU * (1.2 if rng.random() < 0.3 else 1.0)
    return level + rng.normal(0, 1, 200), s, level


TWO_MODES_TRUTH = MU * (1 + 0.2 * 0.3)


def step_after_4(rng: np.random.Generator, k: int, s: float):  # type: ignore[no-untyped-def]
    x, s = ar1(rng, 200, 0.5, s)
    level = MU * (1.03 if k >= 4 else 1.0)
    return level + x, s, level


def slow_drift(rng: np.random.Generator, k: int, s: float):  # type: ignore[no-untyped-def]
    x, s = ar1(rng, 200, 0.5, s)
    level = MU * (1 + 0.001 * k)
    return level + x, s, level


def readings_lognormal(rng: np.random.Generator, k: int, s: float):  # type: ignore[no-untyped-def]
    return float(rng.lognormal(0.0, 1.0)), s, math.exp(0.5)


def readings_strong_drift(rng: np.random.Generator, k: int, s: float):  # type: ignore[no-untyped-def]
    level = MU * (1 + 0.002 * k)  # +12% over 60 rounds
    return level + float(rng.normal(0, 0.2)), s, level


def readings_iid_cv30(rng: np.random.Generator, k: int, s: float):  # type: ignore[no-untyped-def]
    return MU + float(rng.normal(0, 3.0)), s, MU


def readings_ar05(rng: np.random.Generator, k: int, s: float):  # type: ignore[no-untyped-def]
    x, s = ar1(rng, 1, 0.5, s, sd=0.5)
    return MU + float(x[0]), s, MU


def readings_ar(phi: float, sd: float) -> RoundFn:
    """Readings MU + AR(1) phi noise of stationary std ``sd``."""

    def fn(rng: np.random.Generator, k: int, s: float):  # type: ignore[no-untyped-def]
        x, s = ar1(rng, 1, phi, s, sd=sd)
        return MU + float(x[0]), s, MU

    return fn


def readings_drift_ar(rate: float, sd: float) -> RoundFn:
    """Readings whose level moves by ``rate`` of MU per round, with AR(1) 0.5 noise of
    stationary std ``sd`` (#37: a drift with autocorrelated readings)."""

    def fn(rng: np.random.Generator, k: int, s: float):  # type: ignore[no-untyped-def]
        x, s = ar1(rng, 1, 0.5, s, sd=sd)
        level = MU * (1 + rate * k)
        return level + float(x[0]), s, level

    return fn


def readings_warmup(rng: np.random.Generator, k: int, s: float):  # type: ignore[no-untyped-def]
    # the first rounds slower (a cold cache filling): +30%, decaying by half a round
    level = MU * (1 + 0.3 * 0.5**k)
    return level + float(rng.normal(0, 0.5)), s, level


@dataclass(frozen=True)
class Case:
    name: str
    fn: RoundFn
    ci_width: float
    truth: float | None  # None: the mean of the rounds' true means
    stationary: bool
    statistic: str = "mean"


CASES = [
    Case("units i.i.d., ±1%", units_iid, 0.01, MU, True),
    Case("units AR(1) 0.5, ±1%", units_ar05, 0.01, MU, True),
    Case("two modes by round (p 0.3, 20% apart), ±5%", two_modes, 0.05, TWO_MODES_TRUTH, True),
    Case("step +3% after round 4, AR 0.5, ±1%", step_after_4, 0.01, None, False),
    Case("slow drift +0.1%/round, AR 0.5, ±1%", slow_drift, 0.01, None, False),
    Case("readings lognormal σ 1, ±20%", readings_lognormal, 0.20, math.exp(0.5), True),
    Case("readings lognormal σ 1, median, ±20%", readings_lognormal, 0.20, 1.0, True, "median"),
    Case("readings strong drift +0.2%/round, ±1%", readings_strong_drift, 0.01, None, False),
    Case("readings i.i.d. CV 30%, ±10%", readings_iid_cv30, 0.10, MU, True),
    Case("readings AR(1) 0.5, ±2%", readings_ar05, 0.02, MU, True),
    Case(
        "readings with a warm-up (+30%, halving each round), CV 5%, ±2%",
        readings_warmup,
        0.02,
        MU,
        True,
    ),
]


# Run only when --only names them (issue #37), so the default table stays as it was.
EXTRA_CASES = [
    Case("readings AR(1) 0.5, CV 30%, ±20%", readings_ar(0.5, 3.0), 0.20, MU, True),
    Case("readings AR(1) 0.8, CV 30%, ±20%", readings_ar(0.8, 3.0), 0.20, MU, True),
    Case("readings i.i.d. CV 30%, ±20%", readings_ar(0.0, 3.0), 0.20, MU, True),
    Case("readings AR(1) 0.5, CV 15%, ±20%", readings_ar(0.5, 1.5), 0.20, MU, True),
    Case("readings AR(1) 0.8, CV 15%, ±20%", readings_ar(0.8, 1.5), 0.20, MU, True),
    Case("readings i.i.d. CV 15%, ±20%", readings_ar(0.0, 1.5), 0.20, MU, True),
    # a level that moved by less than the width asked (#36, a busy CI runner): the range
    # of block means answers; the same shapes at ±1% above still get no valid CI
    Case("step +3% after round 4, AR 0.5, ±20%", step_after_4, 0.20, None, False),
    Case("slow drift +0.1%/round, AR 0.5, ±5%", slow_drift, 0.05, None, False),
    Case("readings strong drift +0.2%/round, ±20%", readings_strong_drift, 0.20, None, False),
    Case("readings strong drift +0.2%/round, ±5%", readings_strong_drift, 0.05, None, False),
    # a drift with autocorrelated readings (#37: the trend check)
    Case(
        "readings drift +0.5%/round, AR(1) 0.5, CV 15%, ±20%",
        readings_drift_ar(0.005, 1.5), 0.20, None, False,
    ),
    Case(
        "readings drift +0.2%/round, AR(1) 0.5, CV 5%, ±5%",
        readings_drift_ar(0.002, 0.5), 0.05, None, False,
    ),
    Case(
        "readings drift +0.1%/round, AR(1) 0.5, CV 2%, ±2%",
        readings_drift_ar(0.001, 0.2), 0.02, None, False,
    ),
    # rounds that differ a little, by chance (#37: the step check's false alarms)
    Case("units i.i.d., small round effects, ±1%", units_round_effects, 0.01, MU, True),
]  # fmt: skip

# Stopping-round bins of --by-round (first round of each bin).
ROUND_BINS = (1, 11, 15, 20, 30, 50, 100, 200)


@dataclass
class Outcome:
    covered: bool
    no_ci: bool
    rounds: int
    raw: int
    met: bool
    covered_start: bool = False  # the first round's true level
    step_noted: bool = False  # a met CI whose note says the level may have stepped


def one_study(
    rng: np.random.Generator,
    case: Case,
    max_rounds: int,
    warmup: int | str = 0,
    every_round: bool = False,
) -> Outcome:
    stop = StopSpec(
        ci_width=case.ci_width, max_rounds=max_rounds, max_time=1e9, warmup_rounds=warmup
    )
    pi = PISpec(name="t", unit="s", statistic=case.statistic)
    rounds: list[RoundData] = []
    truths: list[float] = []
    state = float(rng.normal())
    streak = 0
    raw = 0
    looked_at, look_at = -1, 0

    def decided(rounds: list[RoundData], streak: int) -> tuple[PIResult, Decision]:
        res = analyze_pi(pi, rounds, stop)
        return res, decide(
            [res],
            [pi],
            stop,
            rounds_done=len(rounds),
            rounds_failed=0,
            elapsed=0.0,
            raw_per_round={"t": 200.0 if rounds and rounds[0].units is not None else 1.0},
            met_streak=streak,
        )

    while True:
        # as Runner._loop: an analysis where one can change the decision (next_look;
        # --every-round: after every round), the confirmation replayed on the rounds
        # before when they were not analysed
        n = len(rounds)
        if every_round or n >= look_at or n >= max_rounds:
            res, d = decided(rounds, streak)
            if d.target_met and looked_at != n - 1 and stop.confirm_rounds > 1:
                streak = 0
                for k in range(min(stop.confirm_rounds - 1, n), 0, -1):
                    streak = streak + 1 if decided(rounds[:-k], streak)[1].target_met else 0
                res, d = decided(rounds, streak)
            if d.done:
                break
            streak = streak + 1 if d.target_met else 0
            looked_at, look_at = n, next_look(d, n, stop)
        got, state, true_mean = case.fn(rng, len(rounds), state)
        truths.append(true_mean)
        if isinstance(got, np.ndarray):
            raw += got.size
            rounds.append(RoundData(units=got, duration=1.0, segment=round_segment(got)))
        else:
            raw += 1
            rounds.append(RoundData(reading=got, duration=1.0))
    truth = case.truth if case.truth is not None else float(np.mean(truths))
    no_ci = not (math.isfinite(res.low) and math.isfinite(res.high))
    return Outcome(
        covered=not no_ci and res.low <= truth <= res.high,
        no_ci=no_ci,
        rounds=len(rounds),
        raw=raw,
        met=res.met,
        covered_start=not no_ci and bool(truths) and res.low <= truths[0] <= res.high,
        step_noted=not no_ci and "step_round" in res.extra,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--max-rounds", type=int, default=300)
    ap.add_argument("--only", default="", help="comma-separated row numbers (1-based)")
    ap.add_argument(
        "--warmup", default="auto", help="warmup_rounds: N, or auto (MSER, the default)"
    )
    ap.add_argument(
        "--every-round", action="store_true", help="analyse after every round (before #17)"
    )
    ap.add_argument(
        "--by-round", action="store_true", help="also coverage by stopping round, per case"
    )
    ap.add_argument("--seed", type=int, default=20261124, help="base seed (row i: seed + i)")
    ap.add_argument("--no-trend", action="store_true", help="without the drift stop (before #37's)")
    args = ap.parse_args()
    if args.no_trend:
        import assay.designs.run_until_ci as loop

        loop.DRIFT_ALPHA = 0.0
    warmup: int | str = args.warmup if args.warmup == "auto" else int(args.warmup)
    only = {int(i) for i in args.only.split(",") if i}
    print(
        f"machine: {cpu_model()}, {os.cpu_count()} cores, {platform.system()} "
        f"{platform.release()}; date {datetime.date.today()}; load {os.getloadavg()[0]:.1f}"
    )
    print(f"{args.reps} studies per case, 95% CI, budget {args.max_rounds} rounds")
    print()
    print(
        "| case | CI covers truth (of finite CIs) | no valid CI | step noted | target met | "
        "rounds (median) | readings used (median) |"
    )
    print("|---|---|---|---|---|---|---|")
    by_round: list[tuple[str, list[Outcome]]] = []
    for i, case in enumerate(CASES + EXTRA_CASES, start=1):
        if (only and i not in only) or (not only and i > len(CASES)):
            continue
        rng = np.random.default_rng(args.seed + i)
        outs = [
            one_study(rng, case, args.max_rounds, warmup, args.every_round)
            for _ in range(args.reps)
        ]
        finite = [o for o in outs if not o.no_ci]
        k = sum(o.covered for o in finite)
        if not case.stationary:  # and against the level the study started at
            first = sum(o.covered_start for o in finite)
            start_cov = f" (of the starting level: {first}/{len(finite)})" if finite else ""
        else:
            start_cov = ""
        if finite:
            ci = stats.binomtest(k, len(finite)).proportion_ci(0.95)
            cov = f"{k / len(finite):.1%} [{ci.low:.1%}, {ci.high:.1%}]{start_cov}"
        else:
            cov = "—"
        print(
            f"| {case.name} | {cov} | {sum(o.no_ci for o in outs) / len(outs):.1%} | "
            f"{sum(o.step_noted for o in outs) / len(outs):.1%} | "
            f"{np.mean([o.met for o in outs]):.0%} | "
            f"{np.median([o.rounds for o in outs]):.0f} | "
            f"{np.median([o.raw for o in outs]):.0f} |",
            flush=True,
        )
        by_round.append((case.name, outs))
    if args.by_round:
        print_by_round(by_round, args.max_rounds)


def print_by_round(cases: list[tuple[str, list[Outcome]]], max_rounds: int) -> None:
    """Coverage of the finite CIs by the round the study stopped at."""
    edges = [b for b in ROUND_BINS if b < max_rounds] + [max_rounds, max_rounds + 1]
    labels = [
        f"{lo}–{hi - 1}" if hi - 1 > lo else f"{lo}" for lo, hi in itertools.pairwise(edges[:-1])
    ] + [f"{max_rounds} (budget)"]
    for name, outs in cases:
        print()
        print(f"{name}: by stopping round")
        print()
        print("| stopped at round | studies | CI covers truth (of finite CIs) | no valid CI |")
        print("|---|---|---|---|")
        for k, label in enumerate(labels):
            lo, hi = edges[k], edges[k + 1]
            sel = [o for o in outs if lo <= o.rounds < hi]
            if not sel:
                continue
            finite = [o for o in sel if not o.no_ci]
            c = sum(o.covered for o in finite)
            if finite:
                b = stats.binomtest(c, len(finite)).proportion_ci(0.95)
                cov = f"{c}/{len(finite)} = {c / len(finite):.1%} [{b.low:.1%}, {b.high:.1%}]"
            else:
                cov = "—"
            print(f"| {label} | {len(sel)} | {cov} | {len(sel) - len(finite)} |", flush=True)


if __name__ == "__main__":
    main()
