"""Knob pre-selection on a synthetic system with a known answer.

Run from the repository root::

    python bench/bench_knobs.py [--sizes 25,50,100,200,400] [--seeds 5] [--trees 300] [--jobs N]

The synthetic "system" has 30 knobs of which 5 matter:

* ``buffer`` (float, 0..1): ``+4 * buffer``
* ``threads`` (int 1..64, log scale): ``+0.5 * log2(threads)`` (up to +3)
* ``mode`` (categorical a/b/c): ``+1.5`` when ``b``
* ``batch`` and ``delay`` (floats 0..1): ``+3 * batch * delay`` (an interaction; no
  main effect beyond what the product implies)

plus Gaussian noise (sd 0.5, like a noisy benchmark).  The 25 irrelevant knobs are
mostly of low cardinality (12 on/off, 8 integers with 4 values, 4 categoricals with 3
values) and one, ``noise_hi``, is a float with a distinct value in every sample: the
knob that impurity importance is known to over-rate (Strobl et al. 2007).

For every sample count N and seed: N Latin Hypercube settings
(:func:`assay.designs.knobs.latin_hypercube`), then
:func:`assay.designs.knobs.analyze_knobs` (300 trees, impurity and held-out permutation
importance, stability on subsets N/2 .. N/64).  Reported per N: how often the top-5 set
equals the true one (IoU = 1) by impurity and by permutation importance, the mean IoU,
the rank of ``noise_hi`` by each measure and its impurity importance relative to the
mean irrelevant low-cardinality knob, the out-of-bag R², and the subset size from which
the top-5 set was stable.  Then the top-k R² curve (paper's Figure 3) at one N, and the
tuning cost of the top 5 vs all 30 knobs with Optuna TPE on the noiseless function.

Prints Markdown tables with the machine and date.
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

try:
    from assay.designs import knobs as kn
except ModuleNotFoundError:  # a checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from assay.designs import knobs as kn

from assay.designs.tune import compare_tuning_cost
from assay.stats.importance import iou

TRUE_TOP = {"buffer", "threads", "mode", "batch", "delay"}
NOISE_SD = 0.5


def make_space() -> kn.KnobSpace:
    knobs: list[kn.Knob] = [
        kn.NumericKnob("buffer", 0.0, 1.0, 0.5),
        kn.NumericKnob("threads", 1, 64, 8, integer=True, log=True),
        kn.CategoricalKnob("mode", ("a", "b", "c"), "a"),
        kn.NumericKnob("batch", 0.0, 1.0, 0.5),
        kn.NumericKnob("delay", 0.0, 1.0, 0.5),
        kn.NumericKnob("noise_hi", 0.0, 1.0, 0.5),
    ]
    knobs += [kn.CategoricalKnob(f"flag{i}", ("off", "on"), "off") for i in range(12)]
    knobs += [kn.NumericKnob(f"level{i}", 1, 4, 2, integer=True) for i in range(8)]
    knobs += [kn.CategoricalKnob(f"choice{i}", ("x", "y", "z"), "x") for i in range(4)]
    assert len(knobs) == 30
    return kn.KnobSpace(tuple(knobs))


def system(setting: dict[str, Any]) -> float:
    """The noiseless performance of one setting (higher is better)."""
    return (
        10.0
        + 4.0 * float(setting["buffer"])
        + 0.5 * math.log2(float(setting["threads"]))
        + (1.5 if setting["mode"] == "b" else 0.0)
        + 3.0 * float(setting["batch"]) * float(setting["delay"])
    )


def one(args: tuple[int, int, int]) -> dict[str, Any]:
    n, seed, trees = args
    space = make_space()
    settings = kn.latin_hypercube(space, n, seed=seed)
    rng = np.random.default_rng(10_000 + seed)
    y = np.array([system(s) for s in settings]) + rng.normal(0, NOISE_SD, n)
    t0 = time.perf_counter()
    res = kn.analyze_knobs(
        space, settings, {"perf": y}, {"perf": "higher"}, n_trees=trees, seed=seed, max_k=8
    )
    secs = time.perf_counter() - t0
    r = res.rankings[0]
    imp_top = [k.knob for k in sorted(r.knobs, key=lambda k: k.impurity_rank)][:5]
    perm_top = [k.knob for k in sorted(r.knobs, key=lambda k: k.permutation_rank)][:5]
    noise = next(k for k in r.knobs if k.knob == "noise_hi")
    lowcard = [k.impurity for k in r.knobs if k.knob not in TRUE_TOP and k.knob != "noise_hi"]
    return {
        "n": n,
        "seed": seed,
        "iou_imp": iou(imp_top, TRUE_TOP),
        "iou_perm": iou(perm_top, TRUE_TOP),
        "noise_imp_rank": noise.impurity_rank,
        "noise_perm_rank": noise.permutation_rank,
        "noise_ratio": noise.impurity / float(np.mean(lowcard)),
        "r2_oob": r.r2_oob,
        "r2_cv": r.r2_cv,
        "stable_from": r.stable_from,
        "agree": r.agree,
        "curve": [(p.k, p.knob, p.r2) for p in r.curve],
        "secs": secs,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="25,50,100,200,400")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--trees", type=int, default=300)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--tune-trials", type=int, default=150)
    ap.add_argument("--tune-seeds", type=int, default=5)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    tasks = [(n, s, args.trees) for n in sizes for s in range(args.seeds)]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.jobs) as ex:
        rows = list(ex.map(one, tasks))
    wall = time.perf_counter() - t0

    print("## Knob pre-selection on a synthetic system (bench/bench_knobs.py)\n")
    print(
        f"{dt.date.today()} · {platform.machine()} · {os.cpu_count()} CPUs · Python "
        f"{platform.python_version()} · {args.trees} trees · {args.seeds} seeds per N · "
        f"30 knobs, 5 matter, noise sd {NOISE_SD} · wall {wall:.0f} s\n"
    )
    print(
        "| N | top-5 = truth (impurity) | top-5 = truth (permutation) | mean IoU imp / perm "
        "| noise_hi rank imp / perm (median) | noise_hi impurity ÷ mean irrelevant | OOB R² "
        "| CV R² | stable from (subset size, median) | rankings agree | analysis s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for n in sizes:
        rs = [r for r in rows if r["n"] == n]
        k = len(rs)
        sf = [r["stable_from"] for r in rs]
        sf_txt = (
            "never"
            if all(s is None for s in sf)
            else f"{np.median([math.inf if s is None else s for s in sf]):.0f}"
            + (f" ({sum(s is None for s in sf)} never)" if any(s is None for s in sf) else "")
        )
        print(
            f"| {n} | {sum(r['iou_imp'] == 1 for r in rs)}/{k} "
            f"| {sum(r['iou_perm'] == 1 for r in rs)}/{k} "
            f"| {np.mean([r['iou_imp'] for r in rs]):.2f} / "
            f"{np.mean([r['iou_perm'] for r in rs]):.2f} "
            f"| {np.median([r['noise_imp_rank'] for r in rs]):.0f} / "
            f"{np.median([r['noise_perm_rank'] for r in rs]):.0f} "
            f"| {np.mean([r['noise_ratio'] for r in rs]):.1f}× "
            f"| {np.mean([r['r2_oob'] for r in rs]):.2f} | {np.mean([r['r2_cv'] for r in rs]):.2f} "
            f"| {sf_txt} | {sum(r['agree'] for r in rs)}/{k} "
            f"| {np.mean([r['secs'] for r in rs]):.1f} |"
        )

    n_curve = sizes[-1]
    r0 = next(r for r in rows if r["n"] == n_curve and r["seed"] == 0)
    print(f"\n### Top-k out-of-bag R² (N = {n_curve}, seed 0; all 30 knobs: {r0['r2_oob']:.3f})\n")
    print("| k | knob added | OOB R² |")
    print("|---|---|---|")
    for k, knob, r2 in r0["curve"]:
        print(f"| {k} | {knob} | {r2:.3f} |")

    space = make_space()
    t1 = time.perf_counter()
    cost = compare_tuning_cost(
        space,
        system,
        sorted(TRUE_TOP),
        args.tune_trials,
        seeds=range(args.tune_seeds),
        tolerance=0.01,
    )
    tsecs = time.perf_counter() - t1
    print(
        f"\n### Tuning cost, Optuna TPE, noiseless function, {args.tune_trials} trials × "
        f"{args.tune_seeds} seeds ({tsecs:.0f} s)\n"
    )
    print(f"best found {cost.reference:.3f}; target (within 1%) {cost.target:.3f}\n")
    print("| knobs tuned | trials to within 1% (per seed) | median | best per seed |")
    print("|---|---|---|---|")
    for name, arm in (("top 5", cost.top), ("all 30", cost.all)):
        needed = ", ".join("never" if t is None else str(t) for t in arm.trials_needed)
        med = "n/a" if arm.median_trials is None else f"{arm.median_trials:.0f}"
        best = ", ".join(f"{b:.2f}" for b in arm.best)
        print(f"| {name} | {needed} | {med} | {best} |")
    sp = cost.speedup
    print(f"\nspeed-up (median trials all / top 5): {'n/a' if sp is None else f'{sp:.1f}×'}")


if __name__ == "__main__":
    main()
