"""False alarms and power of ``assay history``'s change points on synthetic histories.

Run as ``python bench/bench_history.py``. Each history is 30 commits, one value per
commit (the commit's mean), ``100 * (1 + noise)`` with the noise's standard deviation
a given share of the mean; a step history adds +5% from a commit drawn uniformly in
6..24 on. Every history goes through :func:`assay.stats.history.e_divisive` (E-Divisive
means, 199 permutations, min size 3) with its own seed. Reported per noise and alpha:

* false: share of the 200 change-free histories with any change point (goal <= 5% at
  alpha 0.05), with its 95% Clopper-Pearson interval (then the same on 2000 histories);
* detected: share of the 200 step histories with a change point within one commit of
  the step; exact: at the step's commit; extra: with a change point elsewhere too.

Prints the machine, the date, the load and a Markdown table.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt
from scipy import stats

try:
    from assay.stats.history import e_divisive
except ImportError:  # not installed: use the checkout's src/
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from assay.stats.history import e_divisive
from assay.execute.environment import cpu_model

N_COMMITS = 30
HISTORIES = 200
STEP = 0.05


def noise(rng: np.random.Generator, kind: str, sd: float) -> npt.NDArray[np.float64]:
    if kind == "normal":
        return rng.normal(0.0, sd, N_COMMITS)
    # Student t with 3 df scaled to the same sd: heavy tails, the occasional outlier
    return np.asarray(rng.standard_t(3, N_COMMITS) * sd / np.sqrt(3.0), dtype=np.float64)


def clopper_pearson(k: int, n: int) -> tuple[float, float]:
    low = 0.0 if k == 0 else float(stats.beta.ppf(0.025, k, n - k + 1))
    high = 1.0 if k == n else float(stats.beta.ppf(0.975, k + 1, n - k))
    return low, high


def false_alarms(kind: str, sd: float, alpha: float, rng: np.random.Generator, n: int) -> int:
    """How many of ``n`` change-free histories get a change point."""
    hits = 0
    for i in range(n):
        x = 100.0 * (1.0 + noise(rng, kind, sd))
        hits += bool(e_divisive(x, alpha=alpha, seed=i))
    return hits


def row(kind: str, sd: float, alpha: float, seed: int) -> str:
    rng = np.random.default_rng(seed)
    false = false_alarms(kind, sd, alpha, rng, HISTORIES)
    detected = exact = extra = 0
    for i in range(HISTORIES):
        at = int(rng.integers(6, 25))
        x = 100.0 * (1.0 + noise(rng, kind, sd))
        x[at:] += 100.0 * STEP
        found = [c.index for c in e_divisive(x, alpha=alpha, seed=10_000 + i)]
        near = [p for p in found if abs(p - at) <= 1]
        detected += bool(near)
        exact += at in found
        extra += len(found) > len(near[:1])
    lo, hi = clopper_pearson(false, HISTORIES)
    pct = 100.0 / HISTORIES
    return (
        f"| {kind} | {sd:.0%} | {alpha:g} | {false * pct:.1f}% [{lo:.1%}, {hi:.1%}] "
        f"| {detected * pct:.1f}% | {exact * pct:.1f}% | {extra * pct:.1f}% |"
    )


def main() -> None:
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print("# assay history: false change points and detection of a 5% step\n")
    print(f"- date: {dt.datetime.now().astimezone().isoformat(timespec='seconds')}")
    print(f"- CPU: {cpu_model()}, {os.cpu_count()} logical cores; uptime: {load}")
    print(
        f"- {HISTORIES} change-free and {HISTORIES} step histories per row, {N_COMMITS} "
        "commits, 199 permutations, min size 3\n"
    )
    print("| noise | sd (of the mean) | alpha | false (95% CI) | detected ±1 | exact | extra |")
    print("|---|---|---|---|---|---|---|")
    start = time.perf_counter()
    for k, (kind, sd, alpha) in enumerate(
        [
            ("normal", 0.01, 0.05),
            ("normal", 0.02, 0.05),
            ("normal", 0.03, 0.05),
            ("normal", 0.02, 0.01),
            ("t3", 0.02, 0.05),
        ]
    ):
        print(row(kind, sd, alpha, seed=k), flush=True)
    # the false-alarm rate pinned down on many more change-free histories
    big = 10 * HISTORIES
    for kind in ("normal", "t3"):
        hits = false_alarms(kind, 0.02, 0.05, np.random.default_rng(99), big)
        lo, hi = clopper_pearson(hits, big)
        print(
            f"\n{kind} noise, alpha 0.05, {big} change-free histories: {hits / big:.2%} with a "
            f"change point (95% CI [{lo:.2%}, {hi:.2%}])",
            end="",
        )
    print()
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
