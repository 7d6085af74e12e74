"""The +3% step after round 4 (#59): the step each study's own rounds show, by what the
study said (no valid CI, the step note, or nothing), from ``bench_shapes.py``'s row
"step +3% after round 4, AR 0.5, ±1%".

The realized step is the mean of the rounds from the fifth on over the mean of the
first four, less one: the truth plus the noise of those round means. A study that
meets its target early and says nothing is one whose rounds showed a small step.

Run from the repository root::

    python bench/bench_step_realized.py [--reps 400] [--seed 11]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import bench_shapes as shapes  # noqa: E402
from machine import machine_line  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=400)
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args()
    load = os.getloadavg()
    means: list[float] = []

    def step(rng: np.random.Generator, k: int, s: float):  # type: ignore[no-untyped-def]
        units, s, level = shapes.step_after_4(rng, k, s)
        means.append(float(np.mean(units)))
        return units, s, level

    case = shapes.Case("step", step, 0.01, None, False)
    rng = np.random.default_rng(args.seed)
    said: dict[str, list[tuple[float, int]]] = {"no valid CI": [], "step noted": [], "nothing": []}
    for _ in range(args.reps):
        means.clear()
        out = shapes.one_study(rng, case, 300, warmup="auto")
        m = np.array(means)
        realized = float(m[4:].mean() / m[:4].mean() - 1.0)
        what = "no valid CI" if out.no_ci else "step noted" if out.step_noted else "nothing"
        said[what].append((realized, out.rounds))
    print(machine_line(load, f"step +3% after round 4, AR 0.5, ±1%: {args.reps} studies"))
    print()
    print("| said | studies | realized step: median [10%, 90%] | rounds (median) | ≤ 14 rounds |")
    print("|---|---|---|---|---|")
    for what, got in said.items():
        if not got:
            continue
        steps = np.array([g[0] for g in got])
        rounds = np.array([g[1] for g in got])
        q10, q50, q90 = np.quantile(steps, [0.1, 0.5, 0.9])
        print(
            f"| {what} | {len(got)} | {q50:+.2%} [{q10:+.2%}, {q90:+.2%}] | "
            f"{np.median(rounds):.0f} | {np.mean(rounds <= 14):.0%} |"
        )


if __name__ == "__main__":
    main()
