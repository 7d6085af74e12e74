"""Ground truth for ``assay sweep`` on a real system (issue #5, "Show").

Input: the full grid of a sweep measured once (``assay sweep STUDY --sampler grid
--start 1 --r2 1 --csv full.csv``: one row per setting, the PI averaged over its
repetitions).  Output:

(a) the analysis of all of it (significant terms with their share of variance,
    important points), on the raw metric and on log(metric);
(b) Algorithm 1 simulated on it (``simulate``: sample from the full data, as the
    paper's Figure 1) over ``--seeds`` seeds, raw vs log: the sampling rate used,
    whether the R² target was reached, the lowest validation R² at the stop, and the
    paper's mismatch of significant terms and important points against (a);
(c) with ``--live measured.csv`` (the ``--csv`` of a live incremental run of the same
    study), that run's own analysis against (a).

    python3 bench/bench_sweep_real.py bench/data/sqlite-sweep-grid.csv \\
        --params journal_mode,synchronous,batch,value_size --metric throughput \\
        --start 0.05 --step 0.05 --seeds 20 --live live.csv
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import pandas as pd

from assay.designs.sweep import Analysis, IncrementalSampling, analyse, mismatch, simulate
from assay.studies.sweep import transformed


def describe(a: Analysis) -> str:
    terms = ", ".join(f"{r.name} {r.pct_var:.1f}%" for r in a.significant)
    points = "; ".join(p.describe() for p in a.points)
    return f"form {a.form}; significant: {terms}\n      points: {points or 'none'}"


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("grid")
    ap.add_argument("--params", required=True)
    ap.add_argument("--metric", required=True)
    ap.add_argument("--start", type=float, default=0.05)
    ap.add_argument("--step", type=float, default=0.05)
    ap.add_argument("--r2", type=float, default=0.9)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--live", help="the --csv of a live incremental run")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    params = args.params.split(",")
    data = pd.read_csv(args.grid).dropna(subset=[args.metric])
    print(
        f"{args.grid}: {len(data)} settings; R² target {args.r2}, start {args.start}, "
        f"step {args.step}, {args.seeds} seeds"
    )
    fulls: dict[str, Analysis] = {}
    for transform in ("none", "log"):
        d = transformed(data, args.metric, transform)
        full = analyse(d, params, args.metric, threshold=args.r2)
        fulls[transform] = full
        name = f"log({args.metric})" if transform == "log" else args.metric
        r2 = np.asarray(full.r2, float)
        print(
            f"\n[{name}] full-data analysis (validation R² of its 10 splits: min "
            f"{r2.min():.3f}, median {np.median(r2):.3f})\n      {describe(full)}"
        )
        rates, reached, r2min, pm, km = [], 0, [], [], []
        for seed in range(args.seeds):
            sim = simulate(
                d,
                params,
                args.metric,
                start=args.start,
                step=args.step,
                threshold=args.r2,
                seed=seed,
            )
            last = sim.steps[-1]
            rates.append(last.n_measured / last.n_candidates)
            reached += last.reason == "r2"
            r2min.append(float(np.min(last.r2)) if len(last.r2) else float("nan"))
            assert sim.mismatch is not None
            pm.append(sim.mismatch.params_rate)
            km.append(sim.mismatch.points_rate)
        print(
            f"  simulated Algorithm 1: sampling rate median {np.median(rates):.0%} "
            f"[p20 {pct(rates, 20):.0%}, p80 {pct(rates, 80):.0%}]; R² target reached "
            f"{reached}/{args.seeds}; min R² at stop median {np.nanmedian(r2min):.3f}; "
            f"term mismatch median {np.median(pm):.0%} mean {np.mean(pm):.0%}; point "
            f"mismatch median {np.median(km):.0%} mean {np.mean(km):.0%}"
        )
    if args.live:
        live = pd.read_csv(args.live).dropna(subset=[args.metric])
        space = data[params].reset_index(drop=True)
        for transform in ("log",):
            d = transformed(live, args.metric, transform)
            design = IncrementalSampling(space, threshold=args.r2, metric=args.metric)
            a = design.analysis(d)
            mm = mismatch(fulls[transform], a)
            print(
                f"\n[live run, {transform}] {len(live)} of {len(space)} settings "
                f"({len(live) / len(space):.0%})\n      {describe(a)}\n  mismatch against "
                f"the full grid: terms {mm.params_rate:.0%} {list(mm.params_mismatched)}, "
                f"points {mm.points_rate:.0%} {list(mm.points_mismatched)}"
            )


if __name__ == "__main__":
    main()
