"""``assay knobs --from`` on a configuration data set whose dominant knob has outliers.

Issue #20: on a published data set (53,662 settings × 17 knobs) where 681 values of
the dominant knob are ~5e14, the all-knobs out-of-bag R² was −0.12 and the dominant
knob's permutation importance 0.001, while plain scikit-learn on the raw values gave
R² 0.93.  Standardised against the outliers, the knob's ordinary values differ by
less than the 1e-7 that scikit-learn's float32 trees tell apart, so its distinct
values collapse.  This benchmark builds a smaller data set of the same shape (the
same share of outliers, the same number of distinct values of the dominant knob),
reads it through ``samples_from_csv`` as the command does, and compares

* the ranking as ``assay knobs`` computes it now (ranks of the numeric knobs),
* the same forest on standardised values (the paper's pre-processing, as before),
* plain scikit-learn on the raw values, on the same rows.

Run from the repository root::

    python bench/bench_knobs_outlier.py [--rows 4000] [--trees 100]
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

try:
    from assay.designs.knobs import knob_matrix
except ModuleNotFoundError:  # a checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from assay.designs.knobs import knob_matrix
from assay.stats.importance import KnobEncoder, rank_knobs
from assay.studies.knobs import rank_samples, samples_from_csv

KNOBS = 17
OUTLIER_SHARE = 681 / 53_662
DISTINCT = 611


def outlier_data(rows: int, seed: int = 0) -> pd.DataFrame:
    """``rows`` settings of 17 knobs and a throughput: ``k00`` dominates (611 distinct
    values, 1.27% of them ~5e14), ``k01`` (integer) and ``k03`` (real) matter a little,
    the rest not."""
    rng = np.random.default_rng(seed)
    levels = np.unique(np.round(np.geomspace(16, 2_000_000, DISTINCT * 3)))[:DISTINCT]
    k00 = rng.choice(levels, size=rows)
    far = rng.random(rows) < OUTLIER_SHARE
    k00 = np.where(far, 5e14 + rng.integers(0, 1000, rows), k00)
    frame = pd.DataFrame({"k00": k00})
    for j in range(1, KNOBS):
        frame[f"k{j:02d}"] = rng.integers(1, 65, rows) if j % 3 else rng.uniform(0, 1, rows)
    # throughput rises with log(k00) and saturates; an outlier acts like "unlimited"
    x = np.log(np.minimum(k00, levels[-1]))
    tput = 1000 * np.tanh((x - np.log(16)) / 3) + 0.5 * frame["k01"] + 40 * frame["k03"]
    frame["throughput"] = np.round(tput + rng.normal(0, 15, rows), 2)
    return frame


def standardised_r2(matrix: object, y: np.ndarray, trees: int, seed: int) -> tuple[float, float]:
    """OOB R² and the dominant knob's impurity share with the paper's standardisation."""
    from sklearn.ensemble import RandomForestRegressor

    m = matrix  # a KnobMatrix
    Z = KnobEncoder(m.levels, "standard").fit_transform(m.values)  # type: ignore[attr-defined]
    rf = RandomForestRegressor(n_estimators=trees, random_state=seed, oob_score=True, n_jobs=-1)
    rf.fit(Z, y)
    distinct = int(np.unique(Z[:, 0].astype(np.float32)).size)
    print(f"  standardised k00 as float32: {distinct} distinct values")
    return float(rf.oob_score_), float(rf.feature_importances_[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=4000)
    ap.add_argument("--trees", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    from sklearn.ensemble import RandomForestRegressor

    frame = outlier_data(args.rows, args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "configs.csv"
        frame.to_csv(path, index=False)
        samples = samples_from_csv(str(path), ["throughput"])
    matrix = knob_matrix(samples.space, samples.settings)
    y = samples.values["throughput"]
    k00 = frame["k00"].to_numpy()
    print(
        f"{args.rows} settings × {KNOBS} knobs; k00: {np.unique(k00[k00 < 1e14]).size} "
        f"ordinary distinct values, {int((k00 > 1e14).sum())} outliers ~5e14; {args.trees} trees; "
        f"{platform.processor() or platform.machine()}"
    )
    t0 = time.perf_counter()
    r = rank_knobs(
        matrix,
        y,
        pi="throughput",
        top_k=3,
        n_trees=args.trees,
        seed=args.seed,
        max_k=3,
        stability_sizes=[],
        permutation_repeats=3,
        n_jobs=-1,
    )
    took = time.perf_counter() - t0
    first = r.knobs[0]
    perm = {k.knob: k for k in r.knobs}
    rf = RandomForestRegressor(
        n_estimators=args.trees, random_state=args.seed, oob_score=True, n_jobs=-1
    ).fit(frame[[f"k{j:02d}" for j in range(KNOBS)]].to_numpy(), y)
    old_r2, old_share = standardised_r2(matrix, y, args.trees, args.seed)
    with warnings.catch_warnings():  # a 10-tree forest leaves some samples without OOB trees
        warnings.simplefilter("ignore", UserWarning)
        warn = rank_samples(samples, top_k=3, trees=10, seed=args.seed, jobs=-1).warnings
    print()
    print("| pipeline | OOB R² (all knobs) | k00 impurity share | k00 rank | k00 permutation ΔR² |")
    print("|---|---|---|---|---|")
    print(f"| standardised (before) | {old_r2:.3f} | {old_share:.3f} | – | – |")
    print(
        f"| ranks (assay now) | {r.r2_oob:.3f} | {perm['k00'].impurity:.3f} | "
        f"{perm['k00'].impurity_rank} (first: {first.knob}) | {perm['k00'].permutation:.3f} |"
    )
    print(
        f"| plain scikit-learn, raw values | {rf.oob_score_:.3f} | "
        f"{rf.feature_importances_[0]:.3f} | – | – |"
    )
    print(f"\nranking took {took:.1f} s; warnings: {warn}")
    ok = first.knob == "k00" and abs(r.r2_oob - rf.oob_score_) < 0.02
    print("PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
