"""Time of E-Divisive means with its permutation test (``assay.stats.history.e_divisive``).

Run from the repository root, once per Assay tree to compare (``PYTHONPATH=OTHER/src``
runs another)::

    python bench/bench_edivisive.py

The series: ``n`` normal samples, with a step of 1.5 standard deviations in the middle
(the test rejects: all 999 shuffles are scored) and without one (``assay run``'s level
check on a stationary PI), at alpha 0.002 as ``check_level`` uses it.  Reported: the
best of 3 calls after a first one, and the change points found (index, p-value): they
must not differ between trees.  Prints the machine, date and load, and one Markdown
table row per series.
"""

from __future__ import annotations

import os
import time

import numpy as np

import assay
from assay.stats.history import e_divisive
from machine import machine_line


def main() -> None:
    rng = np.random.default_rng(7)
    load0 = os.getloadavg()
    rows = []
    for n in (30, 60, 120):
        for step in (0.0, 1.5):
            x = rng.normal(10.0, 1.0, n)
            x[n // 2 :] += step
            e_divisive(x, alpha=0.002, permutations=999)
            took = []
            for _ in range(3):
                t0 = time.perf_counter()
                found = e_divisive(x, alpha=0.002, permutations=999)
                took.append(time.perf_counter() - t0)
            points = [(c.index, round(c.p_value, 4)) for c in found]
            rows.append(f"| {n} | {step} sd | {min(took) * 1e3:.1f} ms | {points} |")
    print(machine_line(load0, f"Assay from {assay.__file__}") + "\n")
    print("| samples | step | best of 3 | change points (index, p) |")
    print("|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
