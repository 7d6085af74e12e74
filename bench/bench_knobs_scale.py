"""Knob ranking at scale: ``assay knobs --from`` on synthetic samples (issue #17).

Run from the repository root::

    python bench/bench_knobs_scale.py [--sizes 5000x20,25000x30] [--jobs N]

For every size it writes a CSV of uniform knobs ``k0 .. k{p-1}`` and
``tps = 10·k0 + 5·k1² + 3·k2·k3 + 2·k4 + noise`` (sd 0.5) to a temporary folder and
runs ``assay knobs --from CSV --metric tps --json -`` with the defaults (300 trees,
permutation importance, top-k R² curve to 15, stability on 6 subset sizes × 5
repeats).  It prints one Markdown row per size: wall time of the whole command (start-up
and CSV reading included), the child's peak RSS, the top 5 by impurity and by
permutation importance, the out-of-bag and cross-validated R² and the subset size from
which the top 5 was stable, with the machine, date and load.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def write_samples(path: Path, n: int, p: int, seed: int = 0) -> None:
    """``n`` uniform settings of ``p`` knobs and their synthetic throughput."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, p))
    y = 10 * X[:, 0] + 5 * X[:, 1] ** 2 + 3 * X[:, 2] * X[:, 3] + 2 * X[:, 4]
    y = y + rng.normal(0, 0.5, n)
    header = ",".join([*(f"k{i}" for i in range(p)), "tps"])
    np.savetxt(path, np.column_stack([X, y]), delimiter=",", header=header, comments="", fmt="%.6g")


def one(n: int, p: int, jobs: int | None, folder: Path) -> str:
    """Rank one synthetic data set; a Markdown table row."""
    csv = folder / f"samples-{n}x{p}.csv"
    write_samples(csv, n, p)
    cmd = [sys.executable, "-m", "assay", "knobs", "--from", str(csv), "--metric", "tps"]
    cmd += ["--json", "-", "--quiet"] + (["--jobs", str(jobs)] if jobs else [])
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    rss = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
    ranking = json.loads(done.stdout)["rankings"][0]
    by_imp = [k["knob"] for k in ranking["knobs"]][:5]
    by_perm = [k["knob"] for k in sorted(ranking["knobs"], key=lambda k: -k["permutation"])][:5]
    r2 = f"{ranking['r2_all_knobs_oob']:.3f} / {ranking['r2_all_knobs_cv']:.3f}"
    return (
        f"| {n:,} × {p} | {wall:.1f} s | {rss:.0f} MB | {' '.join(by_imp)} | "
        f"{' '.join(by_perm)} | {r2} | "
        f"{ranking.get('stable_from')} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="5000x20,25000x30", help="NxP,NxP,...")
    ap.add_argument("--jobs", type=int, default=None, help="--jobs of assay knobs")
    args = ap.parse_args()
    sizes = [tuple(int(v) for v in s.split("x")) for s in args.sizes.split(",")]
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, "
          f"load {os.getloadavg()[0]:.1f}")  # fmt: skip
    print()
    print("| samples × knobs | wall | peak RSS | top 5 (impurity) | top 5 (permutation) "
          "| R² OOB / CV | stable from |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="assay-knobs-scale-") as tmp:
        for n, p in sizes:
            print(one(n, p, args.jobs, Path(tmp)), flush=True)
    print(f"\nload at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
