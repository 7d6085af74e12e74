"""Knees of saturating curves with noise: found as knees? (issue #21)

Run from the repository root::

    python bench/bench_knee.py [--seeds 60]

A saturating effect curve over a parameter with power-of-two levels (1 … 64): it rises
linearly to a knee at 8 or 16 and stays flat after it, plus Gaussian noise of a given
share of the rise; Algorithm 3 (:func:`assay.stats.trends.find_important_point`) is
asked for its important point, with the published rule (Kneedle only on a strictly
monotone curve: ``MONOTONE_TOLERANCE = 0``) and with the tolerance.  Counted: found as
a knee within one level of the true knee, found as a turning point, nothing.  A curve
with a real peak (falls by half of its rise after the peak) checks that the tolerance
does not turn turning points into knees.

Prints a Markdown table with the machine, date and load.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform

import numpy as np

import assay.stats.trends as trends

LEVELS = np.array([1, 2, 4, 8, 16, 32, 64], dtype=float)


def curve(knee: float, noise: float, rng: np.random.Generator, peak: bool = False) -> np.ndarray:
    rise = np.minimum(np.log2(LEVELS), np.log2(knee)) / np.log2(knee)  # 0 .. 1 at the knee
    if peak:  # after the peak it falls by half of the rise
        after = knee < LEVELS
        rise[after] = 1 - 0.5 * (np.log2(LEVELS[after]) - np.log2(knee)) / 3
    return rise + noise * rng.standard_normal(LEVELS.size)


def classify(found: tuple[str, float, float] | None, knee: float) -> str:
    if found is None:
        return "none"
    kind, value, _ = found
    i, j = np.searchsorted(LEVELS, value), np.searchsorted(LEVELS, knee)
    near = abs(int(i) - int(j)) <= 1
    return f"{kind}{'' if near else ' (elsewhere)'}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=60)
    args = ap.parse_args()
    rows = []
    for shape in ("saturating", "peak"):
        for knee in (8.0, 16.0):
            for noise in (0.0, 0.02, 0.05, 0.1):
                for tol, label in ((0.0, "published (exact)"), (trends.MONOTONE_TOLERANCE,
                                   f"tolerance {trends.MONOTONE_TOLERANCE:.0%}")):  # fmt: skip
                    counts: dict[str, int] = {}
                    for seed in range(args.seeds):
                        rng = np.random.default_rng(seed)
                        y = curve(knee, noise, rng, peak=shape == "peak")
                        old = trends.MONOTONE_TOLERANCE
                        trends.MONOTONE_TOLERANCE = tol
                        try:
                            found = trends.find_important_point(LEVELS, y)
                        finally:
                            trends.MONOTONE_TOLERANCE = old
                        key = classify(found, knee)
                        counts[key] = counts.get(key, 0) + 1
                    shown = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
                    rows.append(f"| {shape} | {knee:g} | {noise:.0%} | {label} | {shown} |")
    load = os.getloadavg()
    print(f"Machine: {platform.node()}, {os.cpu_count()} cores; "
          f"{dt.datetime.now().isoformat(timespec='minutes')}; load {load[0]:.2f}; "
          f"{args.seeds} seeds per row\n")  # fmt: skip
    print("| curve | knee at | noise (share of the rise) | rule | found (of seeds) |")
    print("|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
