"""Time of the analysis between rounds, as `assay run` does it.

After each round: change-point detection on the newest round's unit readings (earlier
rounds' stable segments are cached), then subsession merging and the t-interval over
all stable unit readings so far. The target: the analysis takes no more than 5% of the
round it analyses, for rounds of 1 s or longer. The table gives the slowest analysis
over 10 rounds and the shortest round length for which it stays within 5%.

Run: python bench/bench_round_analysis.py
"""

from __future__ import annotations

import datetime
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

from assay.designs.run_until_ci import RoundData, analyze_pi, round_segment
from assay.execute.environment import cpu_model
from assay.spec import PISpec, StopSpec

ROUNDS = 10


def main() -> None:
    print(
        f"machine: {cpu_model()}, {os.cpu_count()} cores, {platform.system()} "
        f"{platform.release()}; date {datetime.date.today()}"
    )
    print()
    print(
        "| unit readings per round | EDM on the new round, s | CI over all rounds "
        "(max), s | analysis per round (max), s | 5% rule holds for rounds ≥ |"
    )
    print("|---|---|---|---|---|")
    pi = PISpec(name="t", unit="s")
    stop = StopSpec()
    rng = np.random.default_rng(1)
    for n in (1_000, 10_000, 100_000, 1_000_000):
        rounds: list[RoundData] = []
        seg_t: list[float] = []
        ci_t: list[float] = []
        for _ in range(ROUNDS):
            x = rng.normal(10.0, 1.0, n)
            x[: n // 20] += 3.0
            t0 = time.perf_counter()
            seg = round_segment(x, stop.warmup_removal)
            t1 = time.perf_counter()
            rounds.append(RoundData(units=x, duration=1.0, segment=seg))
            analyze_pi(pi, rounds, stop)
            t2 = time.perf_counter()
            seg_t.append(t1 - t0)
            ci_t.append(t2 - t1)
        total = max(a + b for a, b in zip(seg_t, ci_t, strict=True))
        print(
            f"| {n:,} | {max(seg_t):.3f} | {max(ci_t):.3f} | {total:.3f} | {total / 0.05:.1f} s |"
        )


if __name__ == "__main__":
    main()
