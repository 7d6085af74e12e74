"""Benchmark of incremental sampling + categorical ANOVA (Hui et al., Algorithm 1–3).

(a) Accuracy: a synthetic full grid (630 settings, 3 repetitions each) with known
    main effects, one interaction, a knee (workers = 8) and a turning point
    (warehouses = 16).  For R² thresholds 0.6–0.95 the loop is run from random
    samples over ``--reps`` seeds; reported: the sampling rate used, how often the
    knee and the turning point are found, and the paper's mismatch of significant
    terms and important points against the full-data analysis (median, as in Fig. 1).
(b) Speed: the whole loop on a 25,000-setting, 6-factor synthetic grid.

    python3 bench/bench_sweep.py            # 100 seeds per threshold
    python3 bench/bench_sweep.py --reps 20  # quicker
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np
import pandas as pd

from assay.designs.sweep import analyse, simulate

THRESHOLDS = (0.6, 0.7, 0.8, 0.9, 0.95)


def synthetic_grid(seed: int = 0, reps: int = 3, noise: float = 0.3) -> pd.DataFrame:
    """Full grid with a knee (workers = 8), a turning point (warehouses = 16),
    a categorical effect, a linear effect and one workers × cross interaction."""
    workers = [1, 2, 4, 8, 16, 32]
    warehouses = [1, 2, 4, 8, 16, 32, 64]
    cross = [0, 25, 50, 75, 100]
    txn = ["new-order", "payment", "mix"]
    g = pd.DataFrame(
        list(itertools.product(workers, warehouses, cross, txn)),
        columns=["workers", "warehouses", "cross", "txn"],
    )
    lw = np.log2(g["workers"].to_numpy(float))
    lh = np.log2(g["warehouses"].to_numpy(float))
    x = g["cross"].to_numpy(float) / 100
    y = (
        10.0 * np.minimum(g["workers"].to_numpy(float), 8) / 8  # knee at 8 ...
        + 0.3 * lw  # ... and still rising slowly after it (a real knee, not a plateau)
        - 0.5 * (lh - 4.0) ** 2  # turning point at 16
        - 2.0 * x  # linear
        - 2.4 * (x - 0.5) * (lw - 2.5)  # interaction workers × cross (zero on average)
        + g["txn"].map({"new-order": 0.0, "payment": 1.5, "mix": 0.7}).to_numpy(float)
    )
    rng = np.random.default_rng(seed)
    rows = []
    for r in range(reps):
        rows.append(g.assign(tput=y + rng.normal(0, noise, len(g)), rep=r))
    return pd.concat(rows, ignore_index=True)


def part_a(reps: int) -> None:
    data = synthetic_grid()
    params = ["workers", "warehouses", "cross", "txn"]
    print(f"(a) synthetic grid: {len(data) // 3} settings × 3 repetitions, {reps} seeds\n")
    print(
        "| R² threshold | sampling rate (median [p20, p80]) | knee found | turning found "
        "| mismatch terms (median, mean) | mismatch points (median, mean) | time/run |"
    )
    print("|---|---|---|---|---|---|---|")
    for thr in THRESHOLDS:
        ref = analyse(data, params, "tput", threshold=thr)
        if thr == THRESHOLDS[0]:
            print_ref(ref)
        rates, mp, mt, knee, turn = [], [], [], 0, 0
        t0 = time.perf_counter()
        for seed in range(reps):
            sim = simulate(data, params, "tput", threshold=thr, seed=seed, reference=ref)
            assert sim.mismatch is not None
            rates.append(sim.sampling_rate)
            mt.append(sim.mismatch.params_rate)
            mp.append(sim.mismatch.points_rate)
            pts = {(p.param, p.kind, p.value) for p in sim.analysis.points if p.fixed is None}
            knee += ("workers", "knee", 8.0) in pts
            turn += ("warehouses", "turning", 16.0) in pts
        dt = (time.perf_counter() - t0) / reps
        r = np.asarray(rates)
        print(
            f"| {thr} | {np.median(r):.0%} "
            f"[{np.percentile(r, 20):.0%}, {np.percentile(r, 80):.0%}] "
            f"| {knee}/{reps} | {turn}/{reps} | {np.median(mt):.0%}, {np.mean(mt):.0%} "
            f"| {np.median(mp):.0%}, {np.mean(mp):.0%} | {dt:.2f} s |"
        )
    print()


def print_ref(ref: object) -> None:
    from assay.designs.sweep import Analysis

    assert isinstance(ref, Analysis)
    terms = ", ".join(f"{r.name} {r.pct_var:.1f}%" for r in ref.significant)
    pts = "; ".join(p.describe() for p in ref.points)
    print(f"full-data analysis ({ref.form}): {terms}\nimportant points: {pts}\n")


def part_b(seed: int = 0) -> None:
    levels = {
        "a": list(range(1, 11)),
        "b": [1, 2, 4, 8, 16],
        "c": [0, 25, 50, 75, 100],
        "d": [8, 64, 512, 4096, 32768],
        "e": ["p", "q", "r", "s"],
        "f": [1, 2, 3, 4, 5],
    }
    g = pd.DataFrame(list(itertools.product(*levels.values())), columns=list(levels))
    rng = np.random.default_rng(seed)
    a = g["a"].to_numpy(float)
    y = (
        5 * np.minimum(a, 4)
        - 0.6 * (np.log2(g["b"].to_numpy(float)) - 2) ** 2
        - 0.02 * g["c"].to_numpy(float)
        - 0.3 * np.log2(g["d"].to_numpy(float))
        + g["e"].map({"p": 0, "q": 1, "r": 2, "s": 0.5}).to_numpy(float)
        + 0.1 * g["f"].to_numpy(float)
        + 0.004 * a * g["c"].to_numpy(float)
        + rng.normal(0, 1.0, len(g))
    )
    data = g.assign(y=y)
    print(f"(b) speed: {len(g)} settings, 6 factors (one categorical), noise σ = 1")
    print("| R² threshold | steps | settings measured | sampling rate | form | wall time |")
    print("|---|---|---|---|---|---|")
    for thr in (0.9, 0.99):
        t0 = time.perf_counter()
        sim = simulate(data, list(levels), "y", threshold=thr, seed=seed, reference=None)
        dt = time.perf_counter() - t0
        last = sim.steps[-1]
        print(
            f"| {thr} | {len(sim.steps)} | {last.n_measured} | {last.sampling_rate:.0%} "
            f"| {last.form} | {dt:.1f} s |"
        )
    print()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=100, help="seeds per R² threshold (a)")
    ap.add_argument("--skip-a", action="store_true")
    ap.add_argument("--skip-b", action="store_true")
    args = ap.parse_args()
    if not args.skip_a:
        part_a(args.reps)
    if not args.skip_b:
        part_b()


if __name__ == "__main__":
    main()
