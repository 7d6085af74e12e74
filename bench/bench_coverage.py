"""Coverage and time-to-result of run-until-CI on synthetic workloads with a known mean.

For each workload, 200 independent studies run the same analysis and stopping rule as
``assay run`` (``analyze_pi`` + ``decide``) on simulated rounds of unit readings, and we
count how often the reported 95% CI contains the true mean. Beside it, a naive
t-interval on all raw unit readings at the same stopping point (no warm-up removal, no
subsession merging) shows what ignoring autocorrelation and warm-up does.

Time to result: unit readings used vs the minimum an oracle needs, knowing the process'
variance and autocorrelation: n* = (z * sigma_mean_1 / (w * mu))^2 with the long-run
variance sigma_x^2 (1 + phi) / (1 - phi) of an AR(1) process.

Run: python bench/bench_coverage.py [--reps 200] [--units 200]
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import stats

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

from assay.designs.run_until_ci import RoundData, analyze_pi, decide, round_segment
from assay.execute.environment import cpu_model
from assay.spec import PISpec, StopSpec
from assay.stats.intervals import t_interval

MU = 10.0
SIGMA_X = 1.0


@dataclass(frozen=True)
class Workload:
    name: str
    phi: float
    warmup: int  # unit readings of warm-up at the start of every round


WORKLOADS = [
    Workload("i.i.d.", 0.0, 0),
    Workload("AR(1) phi=0.5", 0.5, 0),
    Workload("AR(1) phi=0.9", 0.9, 0),
    Workload("warm-up + AR(1) phi=0.5", 0.5, 40),
]


def ar1(rng: np.random.Generator, n: int, phi: float, state: float) -> tuple[np.ndarray, float]:
    """AR(1) noise with stationary std SIGMA_X, continuing from ``state``."""
    e = rng.normal(0.0, SIGMA_X * math.sqrt(1 - phi * phi), n)
    out = np.empty(n)
    x = state
    for i in range(n):
        x = phi * x + e[i]
        out[i] = x
    return out, x


def make_round(
    rng: np.random.Generator, w: Workload, units: int, state: float
) -> tuple[np.ndarray, float]:
    noise, state = ar1(rng, units, w.phi, state)
    x = MU + noise
    if w.warmup:
        # a decaying slow start: 3 sigma above the mean at the first unit
        x[: w.warmup] += 3.0 * np.exp(-np.arange(w.warmup) / (w.warmup / 4))
    return x, state


def oracle_units(w: Workload, stop: StopSpec) -> float:
    z = stats.norm.ppf(0.5 + stop.confidence / 2)
    long_run_sd = SIGMA_X * math.sqrt((1 + w.phi) / (1 - w.phi))
    return (z * long_run_sd / (stop.ci_width * MU)) ** 2 + w.warmup * 0


@dataclass
class Outcome:
    covered: bool
    naive_covered: bool
    units_used: int
    rounds: int
    met: bool
    subsession: int
    analysis_s: float


def one_study(rng: np.random.Generator, w: Workload, stop: StopSpec, units: int) -> Outcome:
    pi = PISpec(name="t", unit="s")
    rounds: list[RoundData] = []
    raw: list[np.ndarray] = []
    state = rng.normal(0, SIGMA_X)
    analysis = 0.0
    streak = 0
    while True:
        t0 = time.perf_counter()
        res = analyze_pi(pi, rounds, stop)
        d = decide(
            [res],
            [pi],
            stop,
            rounds_done=len(rounds),
            rounds_failed=0,
            elapsed=0.0,
            raw_per_round={"t": float(units)},
            met_streak=streak,
        )
        analysis += time.perf_counter() - t0
        if d.done:
            break
        streak = streak + 1 if d.target_met else 0
        x, state = make_round(rng, w, units, state)
        raw.append(x)
        t0 = time.perf_counter()
        rounds.append(
            RoundData(units=x, duration=1.0, segment=round_segment(x, stop.warmup_removal))
        )
        analysis += time.perf_counter() - t0
    naive = t_interval(np.concatenate(raw), stop.confidence)
    return Outcome(
        covered=res.low <= MU <= res.high,
        naive_covered=naive.low <= MU <= naive.high,
        units_used=sum(r.size for r in raw),
        rounds=len(rounds),
        met=res.met,
        subsession=res.subsession_size,
        analysis_s=analysis,
    )


def run(
    reps: int, units: int, stop: StopSpec, log: Callable[[str], None], rows: list[int] | None = None
) -> None:
    log(
        f"machine: {cpu_model()}, {os.cpu_count()} cores, {platform.system()} "
        f"{platform.release()}; date {datetime.date.today()}"
    )
    log(
        f"{reps} studies per workload, {units} unit readings per round, target ±"
        f"{stop.ci_width:.0%} at {stop.confidence:.0%}, true mean {MU}"
    )
    log("")
    log(
        "| workload | Assay CI covers truth | naive t-interval covers | target met | "
        "units used (median) | oracle units | used/oracle | subsession q (median) | "
        "analysis s/study (mean) |"
    )
    log("|---|---|---|---|---|---|---|---|---|")
    for i, w in enumerate(WORKLOADS, start=1):
        if rows and i not in rows:
            continue
        rng = np.random.default_rng(20261122)
        outs = [one_study(rng, w, stop, units) for _ in range(reps)]
        cov = np.mean([o.covered for o in outs])
        lo, hi = stats.binomtest(int(cov * reps), reps).proportion_ci(0.95)
        naive = np.mean([o.naive_covered for o in outs])
        used = float(np.median([o.units_used for o in outs]))
        oracle = oracle_units(w, stop)
        log(
            f"| {w.name} | {cov:.1%} [{lo:.1%}, {hi:.1%}] | {naive:.1%} | "
            f"{np.mean([o.met for o in outs]):.0%} | {used:.0f} | {oracle:.0f} | "
            f"{used / oracle:.2f} | {np.median([o.subsession for o in outs]):.0f} | "
            f"{np.mean([o.analysis_s for o in outs]):.3f} |"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--units", type=int, default=200)
    ap.add_argument("--ci-width", type=float, default=0.01)
    ap.add_argument("--warmup-removal", default="edm", choices=["edm", "edm-pilot", "none"])
    ap.add_argument("--max-autocorrelation", type=float, default=0.1)
    ap.add_argument(
        "--pilot",
        action="store_true",
        help="Pilot as published: EDM without pruning, no residual correction",
    )
    ap.add_argument("--prune-block", default="1", help="'auto' or a block size")
    ap.add_argument("--only", default="", help="comma-separated row numbers (1-based)")
    ap.add_argument("--no-residual-correction", action="store_true")
    ap.add_argument("--cut-quantile", type=float, default=0.5)
    ap.add_argument("--confirm", type=int, default=2, help="stop.confirm_rounds")
    args = ap.parse_args()
    from assay.designs import run_until_ci

    run_until_ci.EDM_PRUNE_BLOCK = None if args.prune_block == "auto" else int(args.prune_block)
    run_until_ci.EDM_CUT_QUANTILE = args.cut_quantile
    stop = StopSpec(
        ci_width=args.ci_width,
        max_rounds=2000,
        max_time=1e9,
        warmup_removal="edm-pilot" if args.pilot else args.warmup_removal,
        residual_correction=not (args.pilot or args.no_residual_correction),
        max_autocorrelation=args.max_autocorrelation,
        confirm_rounds=1 if args.pilot else args.confirm,
    )
    rows = [int(i) for i in args.only.split(",") if i]
    run(args.reps, args.units, stop, print, rows)


if __name__ == "__main__":
    main()
