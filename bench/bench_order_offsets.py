"""Simulate ``assay order``'s decision under run-to-run offsets: pooled trials vs run medians.

Run from the repository root::

    python bench/bench_order_offsets.py [--reps 200] [--runs 8] [--repetitions 5]

Issue #21.  Three tests ``a, c, b`` in a cycled baseline (``a c b a c b …``: in the
fixed-order runs ``c`` always runs right after ``a``) and in seeded random orders, from
the real schedule (:func:`assay.designs.order.order_schedule`), ``--runs`` runs of each
kind, every test ``--repetitions`` times per run.  A trial reads ``10 × (1 + 0.1 ε)``
(ε standard normal: the trial sd is 1, 10% of the mean) plus its run's offset, drawn
once per run from N(0, (k × trial sd)²) and shared by every trial of the run (a reboot,
a memory layout, a thermal state).  A carry-over of e makes ``c`` e × slower when it
follows ``a``.  Nothing is executed.

For every experiment :func:`assay.stats.order.analyse_order` runs once (Kruskal-Wallis,
Bonferroni over the 3 tests at alpha 0.05) and gives both decisions:

* pooled trials (every trial a sample: ``pooled_flagged``);
* one value per run, its median (the same function on a table reduced to run medians);
* one value per run, its mean (``flagged``: what ``assay order`` decides, since #37);
* either of the last two, each at alpha / 2 (a combination #59 proposed).

``--itself``: the carry-over makes ``c`` slower right after itself, in the default
blocked baseline (#59).

Rates are experiment-wide (any test flagged); 95% Clopper-Pearson intervals.  Prints
Markdown tables with the machine, the date and the load.
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

try:
    import assay.stats.order as order_stats
except ModuleNotFoundError:  # a checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    import assay.stats.order as order_stats

from assay.designs.order import flat_schedule, order_schedule
from assay.execute.environment import cpu_model

TESTS = ("a", "c", "b")
MEAN = 10.0
SD = 1.0  # the trial sd: 10% of the mean
OFFSETS = (0.0, 0.2, 0.5, 1.0)  # run offset sd, × trial sd
CARRY = (0.05, 0.20)  # c slower by this fraction right after a
POWER_OFFSETS = (0.0, 0.5, 1.0)


def experiment(
    seed: int,
    *,
    runs: int,
    repetitions: int,
    offset: float,
    carry: float,
    tests: tuple[str, ...] = TESTS,
    itself: bool = False,
) -> pd.DataFrame:
    """One experiment's trials (``test, order, run, position, value``); with ``itself``
    the carry-over makes ``c`` slower right after ``c`` (in ``assay order``'s default
    blocked baseline, ``a a a c c c b b b``, the fixed runs hold most of those)."""
    rng = np.random.default_rng([seed, 21])
    flat = flat_schedule(
        order_schedule(
            tests,
            fixed_runs=runs,
            random_runs=runs,
            repetitions=repetitions,
            seed=seed,
            baseline="blocked" if itself else "cycled",
        )
    )
    run_offset = rng.normal(0.0, offset * SD, 2 * runs) if offset > 0 else np.zeros(2 * runs)
    noise = rng.normal(0.0, SD, len(flat))
    rows = []
    prev = ""
    for t, eps in zip(flat, noise, strict=True):
        if t.position == 0:
            prev = ""
        v = MEAN + eps + run_offset[t.run]
        if t.test == "c" and prev == ("c" if itself else "a"):
            v *= 1 + carry
        rows.append((t.test, t.kind, t.run, t.position, v))
        prev = t.test
    return pd.DataFrame(rows, columns=list(order_stats.ORDER_COLUMNS))


def run_means(table: pd.DataFrame) -> pd.DataFrame:
    """One row per run and test, its mean as the value (position: the run's first)."""
    g = table.groupby(["test", "order", "run"], sort=False)
    return g.agg(position=("position", "min"), value=("value", "mean")).reset_index()


def run_medians(table: pd.DataFrame) -> pd.DataFrame:
    """One row per run and test, its median as the value (position: 0)."""
    out = order_stats.run_medians(table)
    out["position"] = 0
    return out[list(order_stats.ORDER_COLUMNS)]


def decide(seed: int, **setting: Any) -> tuple[bool, bool, bool, bool]:
    """(pooled flags, run medians flag, run means flag, either flags at alpha / 2): any
    test flagged, for the experiment of ``seed`` and ``setting`` (:func:`experiment`'s
    keywords). ``assay order`` decides on the run means (#37)."""
    t = experiment(seed, **setting)
    a = order_stats.analyse_order(t)
    medians = order_stats.analyse_order(run_medians(t))
    either = (
        order_stats.analyse_order(t, alpha=0.025).order_matters
        or order_stats.analyse_order(run_medians(t), alpha=0.025).order_matters
    )
    return bool(a.pooled_flagged), medians.order_matters, a.order_matters, either


def exact_size(runs: int, threshold: float) -> float:
    """The exact chance that one test's per-run Kruskal-Wallis p falls below ``threshold``
    without an order effect.  Run offsets drawn independently per run leave the run
    medians i.i.d., so every split of their ranks between the kinds is equally likely:
    count the splits (no ties) whose p is below."""
    n = 2 * runs
    fixed = np.array(list(itertools.combinations(range(1, n + 1), runs)), dtype=np.float64)
    r1 = fixed.sum(axis=1)
    r2 = n * (n + 1) / 2 - r1
    h = 12 / (n * (n + 1)) * (r1**2 / runs + r2**2 / runs) - 3 * (n + 1)
    return float(np.mean(stats.chi2.sf(h, 1) < threshold))


def rate(k: int, n: int) -> str:
    ci = stats.binomtest(k, n).proportion_ci(0.95)
    return f"{100 * k / n:.1f}% [{100 * ci.low:.1f}, {100 * ci.high:.1f}]"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=200, help="experiments per row (default 200)")
    ap.add_argument("--runs", type=int, default=8, help="runs of each kind (default 8)")
    ap.add_argument("--repetitions", type=int, default=5, help="trials per test per run")
    ap.add_argument(
        "--minority",
        action="store_true",
        help="baseline a b c (c never follows a there): the carry-over hits only the "
        "random runs' trials of c that follow a, a minority of each run's (issue #37)",
    )
    ap.add_argument(
        "--itself",
        action="store_true",
        help="self carry-over: c slower right after c, in the default blocked baseline "
        "(issue #59)",
    )
    args = ap.parse_args(argv)
    tests = ("a", "b", "c") if args.minority else TESTS
    load = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    t0 = time.monotonic()
    print(
        f"Machine: {cpu_model()} ({os.cpu_count()} cores), Python {platform.python_version()}; "
        f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC; load: {load}"
    )
    print(
        f"\n{args.reps} experiments per row; 3 tests, {args.runs} fixed + "
        f"{args.runs} random runs × {args.repetitions} repetitions, baseline "
        f"{' '.join(tests)} ({'blocked' if args.itself else 'cycled'}); carry-over: c "
        f"slower right after {'c' if args.itself else 'a'}; Kruskal-Wallis, "
        "Bonferroni alpha 0.05; rate of experiments with any test flagged [95% CI]\n"
    )
    print(
        "| carry-over | run offset (× trial sd) | pooled trials | run medians "
        "| run means (decides) | either, at alpha / 2 each |"
    )
    print("|---|---|---|---|---|---|")
    rows = [(0.0, k) for k in OFFSETS] + [(e, k) for e in CARRY for k in POWER_OFFSETS]
    for carry, offset in rows:
        got = [
            decide(
                s,
                runs=args.runs,
                repetitions=args.repetitions,
                offset=offset,
                carry=carry,
                tests=tests,
                itself=args.itself,
            )
            for s in range(args.reps)
        ]
        pooled, med, mean, either = (sum(g[i] for g in got) for i in range(4))
        label = "none (false positives)" if carry == 0 else f"{carry:.0%} (power)"
        print(
            f"| {label} | {offset:g} | {rate(pooled, args.reps)} | {rate(med, args.reps)} | "
            f"{rate(mean, args.reps)} | {rate(either, args.reps)} |",
            flush=True,
        )
    size = exact_size(args.runs, 0.05 / len(TESTS))
    print(
        f"\nRun medians, exactly: with {args.runs} runs a side and no order effect, one test "
        f"is flagged with probability {100 * size:.2f}% whatever the run offsets (every split "
        f"of the i.i.d. run medians equally likely); experiment-wide at most "
        f"{len(TESTS)} × that = {100 * len(TESTS) * size:.2f}% (Bonferroni)."
    )
    print(f"\n({time.monotonic() - t0:.0f} s)")


if __name__ == "__main__":
    main()
