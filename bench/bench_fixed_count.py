"""What a fixed count of readings (``assay run --runs N``) is told: how often a finite
interval, and how often it covers the true mean (#60: ``--runs 10`` gave "± ∞" in 7
of 12 tries of ``sleep 0.01``).

Run from the repository root::

    python bench/bench_fixed_count.py [--reps 2000] [--runs 10 15 20] [--seed 1]

Each repetition draws N readings of a shape (below) and analyses them as ``assay run
--runs N`` does (``min_rounds = max_rounds = N``, the default ±5% target, which a
fixed count does not stop on); a finite interval covers when it holds the shape's true
mean. "unmerged" are the results whose readings merging could not make independent
(the fixed-count interval of :func:`assay.designs.run_until_ci.unmerged_interval`);
before that interval existed they were "± ∞". Clopper–Pearson 95% intervals.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import time
from collections.abc import Callable

import numpy as np
from scipy.stats import beta

from assay.designs.run_until_ci import RoundData, analyze_pi
from assay.spec import PISpec, StopSpec

MU = 10.0


def ar1(rng: np.random.Generator, n: int, phi: float, cv: float) -> np.ndarray:
    e = rng.normal(0.0, 1.0, n)
    x = np.empty(n)
    x[0] = e[0]
    for i in range(1, n):
        x[i] = phi * x[i - 1] + math.sqrt(1 - phi * phi) * e[i]
    return MU * (1.0 + cv * x)


SHAPES: dict[str, tuple[Callable[[np.random.Generator, int], np.ndarray], float]] = {
    "i.i.d. normal, CV 5%": (lambda rng, n: ar1(rng, n, 0.0, 0.05), MU),
    "AR(1) 0.5, CV 5%": (lambda rng, n: ar1(rng, n, 0.5, 0.05), MU),
    "AR(1) 0.8, CV 5%": (lambda rng, n: ar1(rng, n, 0.8, 0.05), MU),
    "AR(1) 0.95, CV 5%": (lambda rng, n: ar1(rng, n, 0.95, 0.05), MU),
    "lognormal sigma 0.5": (
        lambda rng, n: rng.lognormal(0.0, 0.5, n),
        math.exp(0.125),
    ),
}


def cp(k: int, n: int) -> str:
    if n == 0:
        return "–"
    lo = 0.0 if k == 0 else float(beta.ppf(0.025, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(0.975, k + 1, n - k))
    return f"{k / n:.1%} [{lo:.1%}, {hi:.1%}]"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--runs", type=int, nargs="+", default=[10, 15, 20])
    ap.add_argument("--seed", type=int, default=1)
    opts = ap.parse_args()
    print(f"machine: {platform.node()}, {os.cpu_count()} cores; "
          f"{time.strftime('%Y-%m-%d %H:%M')}; load {os.getloadavg()[0]:.2f}; "
          f"{opts.reps} repetitions, seed {opts.seed}")  # fmt: skip
    print("\n| shape | runs | finite | covers (of finite) | unmerged | covers (of unmerged) "
          "| median ± (unmerged) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    pi = PISpec(name="t", unit="s")
    for name, (draw, truth) in SHAPES.items():
        for n in opts.runs:
            rng = np.random.default_rng([opts.seed, n, len(name)])
            stop = StopSpec(min_rounds=n, max_rounds=n)
            finite = covered = unmerged = unmerged_covered = 0
            widths: list[float] = []
            for _ in range(opts.reps):
                rounds = [RoundData(reading=float(x), duration=1.0) for x in draw(rng, n)]
                r = analyze_pi(pi, rounds, stop)
                if not math.isfinite(r.half_width):
                    continue
                finite += 1
                hit = r.low <= truth <= r.high
                covered += hit
                if "fixed count" in r.note:
                    unmerged += 1
                    unmerged_covered += hit
                    widths.append(r.relative_half_width)
            med = f"{np.median(widths):.1%}" if widths else "–"
            share, unshare = f"{finite / opts.reps:.1%}", f"{unmerged / opts.reps:.1%}"
            cells = [name, str(n), share, cp(covered, finite), unshare,
                     cp(unmerged_covered, unmerged), med]  # fmt: skip
            print("| " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
