"""Claims judged on their evidence (#62): error rates and power of the verdicts.

Run from the repository root::

    python bench/bench_claims.py [--studies 1000] [--cycles 200]

A claim's verdict rests on the ratio of two variants' means and its interval at
``1 - 2 alpha`` (:mod:`assay.stats.claims`, ``alpha = 0.05``: a 90% interval).  Its
errors are a claim called **holds** when the true ratio lies outside the claimed region,
and called **fails** when the true ratio lies inside; each should happen at most alpha
of the time, most often at the region's boundary, where this bench puts the truth.

``fixed``: one look at the end (a study that stops on its ranking, or runs a fixed
number of cycles), the live comparison's analysis of raw samples
(``compare_samples`` with the small-sample rule), at 10 and 30 samples a side, normal
(CV 10%) and lognormal (sigma 0.3) readings.

``sequential``: ``[stop] until = "claims"``: the claim is judged after every cycle
(from 3 samples a side) on the always-valid interval, and the study stops at the
first verdict or at ``--cycles``; beside it the same looks on the fixed interval,
which a study asking after every cycle must not use.  Normal readings (CV 10%);
the running summaries (mean, variance, n) stand for the merged samples.

Prints Markdown tables with the machine, date and load; proportions carry
Clopper-Pearson 95% intervals.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy.stats import beta

sys.path.insert(0, str(Path(__file__).resolve().parent))
from assay.designs.run_until_ci import INDEPENDENCE_ALPHA
from assay.stats.claims import ClaimRule, judge_claim, ratio_interval
from assay.stats.compare import (
    InsufficientDataError,
    SummaryStats,
    analyze_variant,
    compare_samples,
)
from machine import machine_line

CONFIDENCE = 0.95  # alpha 0.05: the claims' 90% interval


def rate(k: int, n: int) -> str:
    low = beta.ppf(0.025, k, n - k + 1) if k > 0 else 0.0
    high = beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    return f"{k}/{n} = {k / n:.2%} [{low:.2%}, {high:.2%}]"


Draw = Callable[[np.random.Generator, float, int], np.ndarray]


def normal(rng: np.random.Generator, mean: float, n: int) -> np.ndarray:
    return rng.normal(mean, 0.1 * mean, n)


def lognormal(rng: np.random.Generator, mean: float, n: int) -> np.ndarray:
    s = 0.3  # mean of exp(N(mu, s^2)) is exp(mu + s^2 / 2)
    return rng.lognormal(np.log(mean) - s * s / 2, s, n)


#: (claim, true ratio, the error a verdict would be)
CASES: list[tuple[ClaimRule, float, str]] = [
    (ClaimRule("within", 0.05), 1.05, "holds"),  # just outside: holds is wrong
    (ClaimRule("within", 0.05), 0.95, "holds"),
    (ClaimRule("within", 0.05), 1.0499, "fails"),  # just inside: fails is wrong
    (ClaimRule("at_least", 1.5), 1.4999, "holds"),
    (ClaimRule("at_least", 1.5), 1.5, "fails"),
    (ClaimRule("at_most", 0.8), 0.8001, "holds"),
]
#: (claim, true ratio): the verdict that is right, and how often it comes
POWER: list[tuple[ClaimRule, float, str]] = [
    (ClaimRule("at_least", 1.5), 2.0, "holds"),
    (ClaimRule("at_least", 1.5), 1.2, "fails"),
    (ClaimRule("within", 0.1), 1.0, "holds"),
    (ClaimRule("within", 0.05), 1.0, "holds"),
]


def verdict_fixed(a: np.ndarray, b: np.ndarray, rule: ClaimRule) -> str:
    try:
        c = compare_samples(a, b, CONFIDENCE, independence_alpha=INDEPENDENCE_ALPHA)
    except InsufficientDataError:
        return "undecided"
    return judge_claim(rule, *ratio_interval(c.a, c.b, CONFIDENCE)).verdict


def fixed(studies: int) -> None:
    rng = np.random.default_rng(62)
    print("### One look at the end (`fixed`)\n")
    print("| claim | true ratio | readings | n a side | wrong verdict | its rate |")
    print("|---|---|---|---|---|---|")
    for draw in (normal, lognormal):
        for n in (10, 30):
            for rule, truth, wrong in CASES:
                k = sum(
                    verdict_fixed(draw(rng, truth, n), draw(rng, 1.0, n), rule) == wrong
                    for _ in range(studies)
                )
                print(
                    f"| {rule.text()} | {truth:g} | {draw.__name__} | {n} | {wrong} | "
                    f"{rate(k, studies)} |"
                )
    print("\n| claim | true ratio | readings | n a side | right verdict | its rate |")
    print("|---|---|---|---|---|---|")
    for n in (10, 30):
        for rule, truth, right in POWER:
            k = sum(
                verdict_fixed(normal(rng, truth, n), normal(rng, 1.0, n), rule) == right
                for _ in range(studies)
            )
            print(f"| {rule.text()} | {truth:g} | normal | {n} | {right} | {rate(k, studies)} |")


def summary(x: np.ndarray) -> SummaryStats:
    return SummaryStats(float(x.mean()), float(x.var(ddof=1)), int(x.size))


def sequential_study(
    rng: np.random.Generator, rule: ClaimRule, truth: float, cycles: int, always_valid: bool
) -> tuple[str, int]:
    """The verdict a study that stops on its claim reaches, and at which cycle."""
    a, b = normal(rng, truth, cycles), normal(rng, 1.0, cycles)
    for n in range(3, cycles + 1):
        va, vb = analyze_variant(summary(a[:n])), analyze_variant(summary(b[:n]))
        v = judge_claim(rule, *ratio_interval(va, vb, CONFIDENCE, always_valid=always_valid))
        if v.verdict != "undecided":
            return v.verdict, n
    return "undecided", cycles


def sequential(studies: int, cycles: int) -> None:
    rng = np.random.default_rng(6262)
    print(f'\n### `until = "claims"`: judged after every cycle, up to {cycles} (`sequential`)\n')
    print("| claim | true ratio | interval | wrong verdict | its rate | median cycles to stop |")
    print("|---|---|---|---|---|---|")
    for rule, truth, wrong in CASES:
        for always_valid in (True, False):
            got = [sequential_study(rng, rule, truth, cycles, always_valid) for _ in range(studies)]
            k = sum(v == wrong for v, _ in got)
            name = "always-valid" if always_valid else "fixed, every cycle (not used)"
            print(
                f"| {rule.text()} | {truth:g} | {name} | {wrong} | {rate(k, studies)} | "
                f"{int(np.median([c for _, c in got]))} |"
            )
    print("\n| claim | true ratio | right verdict | its rate | median cycles to stop |")
    print("|---|---|---|---|---|")
    for rule, truth, right in POWER:
        got = [sequential_study(rng, rule, truth, cycles, True) for _ in range(studies)]
        k = sum(v == right for v, _ in got)
        print(
            f"| {rule.text()} | {truth:g} | {right} | {rate(k, studies)} | "
            f"{int(np.median([c for _, c in got]))} |"
        )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("what", nargs="?", choices=("fixed", "sequential", "all"), default="all")
    p.add_argument("--studies", type=int, default=1000)
    p.add_argument("--cycles", type=int, default=200)
    args = p.parse_args()
    start = os.getloadavg()
    if args.what in ("fixed", "all"):
        fixed(args.studies)
    if args.what in ("sequential", "all"):
        sequential(args.studies, args.cycles)
    print("\n" + machine_line(start, f"bench_claims.py {' '.join(sys.argv[1:])}"))


if __name__ == "__main__":
    main()
