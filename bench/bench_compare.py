"""Simulate ``assay compare``: false positives and time to decision.

Run from the repository root::

    python bench/bench_compare.py [--reps 200] [--budget 200] [--jobs N]

Two variants, A (mean 1) and B (mean ``1 + d``, so A is faster when ``d > 0``), each
give one reading per round in interleaved cycles; the noise has a standard deviation
of 5 % of each variant's mean, i.i.d. or AR(1) with phi = 0.5 along each variant's
own rounds.  For every repetition the *live loop's own decision code* runs after each
cycle, exactly as :class:`assay.studies.compare.CompareRunner` calls it:
:func:`assay.designs.compare.compare_pi` on the readings so far (the same arguments
``compare_trials`` passes) and then :func:`assay.studies.compare.decide_comparison`
(the ``min_samples`` rule, then :func:`assay.designs.compare.compare_decision`).
Nothing is executed: the readings are drawn from the model.

Sequential rules compared (``--rules``):

* ``looks`` (the default of ``compare_decision``): the ranking may stop only at the
  looks ``10, 15, 23, 35, 53, ...`` cycles (and at the end of the budget), and a pair
  is decided at look ``j`` only when Welch's p < ``alpha / (j (j + 1))``;
* ``every-cycle`` (the old rule, ``sequential="every-cycle"``): stop at the first
  cycle at which every pair is CI-separated or Welch p < ``alpha``.

A rule other than the default reaches the live ``decide_comparison`` by replacing
the ``compare_decision`` it calls with one that passes ``sequential=...``.

Baselines: hyperfine-style fixed repetitions, the first 10 or 30 readings of each
variant and one Welch test at ``alpha`` (no subsession merging).

Prints Markdown tables with the machine and date.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import math
import os
import platform
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import stats
from scipy.signal import lfilter

try:
    import assay.studies.compare as compare_study
except ModuleNotFoundError:  # a checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    import assay.studies.compare as compare_study

from assay.designs.compare import compare_decision, compare_pi
from assay.execute.environment import cpu_model, usable_cores
from assay.spec import Spec
from assay.stats.compare import welch_test

FloatArray = npt.NDArray[np.float64]

DIFFS = (0.0, 0.01, 0.05, 0.20)
NOISES = ("i.i.d.", "AR(1) phi=0.5")
SD = 0.05  # noise sd, relative to each variant's mean
PHI = 0.5
FIXED = (10, 30)


def make_spec(budget: int, alpha: float) -> Spec:
    """A two-variant study with the default stopping rule and a budget of ``budget`` cycles."""
    return Spec.model_validate(
        {
            "study": {"name": "bench-compare"},
            "benchmark": {"command": ["true"]},
            "variant": [{"name": "A"}, {"name": "B"}],
            "stop": {"max_rounds": budget, "max_time": 1e12, "alpha": alpha},
        }
    )


def noise(model: str, n: int, rng: np.random.Generator) -> FloatArray:
    """Unit-variance noise: i.i.d. normal or stationary AR(1) with phi = PHI."""
    e = rng.standard_normal(n)
    if model == "i.i.d.":
        return e
    e[0] /= math.sqrt(1.0 - PHI * PHI)  # start in the stationary distribution
    x = np.asarray(lfilter([1.0], [1.0, -PHI], e), dtype=np.float64)
    return x * math.sqrt(1.0 - PHI * PHI)


def streams(model: str, diff: float, budget: int, seed: int) -> tuple[FloatArray, FloatArray]:
    rng = np.random.default_rng(seed)
    a = 1.0 * (1.0 + SD * noise(model, budget, rng))
    b = (1.0 + diff) * (1.0 + SD * noise(model, budget, rng))
    return a, b


@contextmanager
def rule(name: str) -> Iterator[None]:
    """Make the live ``decide_comparison`` use the sequential rule ``name``."""
    saved = compare_study.compare_decision
    if name != "looks":  # "looks" is compare_decision's default: the live code as it is
        compare_study.compare_decision = functools.partial(  # type: ignore[assignment]
            compare_decision, sequential=name
        )
    try:
        yield
    finally:
        compare_study.compare_decision = saved  # type: ignore[assignment]


@dataclass(frozen=True)
class Outcome:
    cycles: int  # cycles run when the loop stopped
    decided: bool
    winner: str | None  # best variant when decided


def sequential(spec: Spec, a: FloatArray, b: FloatArray) -> Outcome:
    """The live loop's decision after each cycle, on the first ``c`` readings of each variant."""
    stop = spec.stop
    pi = spec.pis[0]
    for c in range(1, stop.max_rounds + 1):
        # as compare_trials: readings (no warm-up rounds), then compare_pi
        comp = compare_pi(
            pi.name,
            pi.unit,
            pi.direction,
            {"A": a[:c], "B": b[:c]},
            alpha=stop.alpha,
            confidence=stop.confidence,
            max_autocorrelation=stop.max_autocorrelation,
            samples_per_round={"A": 1.0, "B": 1.0},
        )
        d = compare_study.decide_comparison(
            comp, spec, cycles=c, trials=2 * c, failed=0, elapsed=0.0
        )
        if d.done:
            decided = bool(getattr(d, "decided", False))
            return Outcome(c, decided, comp.ranking.order[0] if decided else None)
    raise AssertionError("the budget should have stopped the loop")


def fixed(a: FloatArray, b: FloatArray, n: int, alpha: float) -> str | None:
    """Hyperfine-style: ``n`` runs each, one Welch test; the winner when p < alpha."""
    x, y = a[:n], b[:n]
    w = welch_test(
        float(x.mean()), float(x.var(ddof=1)), n, float(y.mean()), float(y.var(ddof=1)), n
    )
    if w.p_value >= alpha:
        return None
    return "A" if w.difference < 0 else "B"


def one_case(args: tuple[str, str, float, int, int, float]) -> dict[str, Any]:
    rule_name, model, diff, reps, budget, alpha = args
    spec = make_spec(budget, alpha)
    outs: list[Outcome] = []
    fixed_winners: dict[int, list[str | None]] = {n: [] for n in FIXED}
    t0 = time.perf_counter()
    with rule(rule_name):
        for r in range(reps):
            seed = 1_000_003 * (DIFFS.index(diff) + 1) + 7919 * NOISES.index(model) + r
            a, b = streams(model, diff, budget, seed)
            outs.append(sequential(spec, a, b))
            for n in FIXED:
                fixed_winners[n].append(fixed(a, b, n, alpha))
    return {
        "rule": rule_name,
        "model": model,
        "diff": diff,
        "outs": outs,
        "fixed": fixed_winners,
        "seconds": time.perf_counter() - t0,
    }


def upper95(k: int, n: int) -> float:
    """Clopper–Pearson 95 % upper bound of a proportion."""
    return 1.0 if k == n else float(stats.beta.ppf(0.975, k + 1, n - k))


def pct(k: int, n: int) -> str:
    return f"{100.0 * k / n:.1f} %"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--reps", type=int, default=200, help="repetitions per case")
    parser.add_argument("--budget", type=int, default=200, help="budget in cycles")
    parser.add_argument("--alpha", type=float, default=0.01, help="Welch threshold")
    parser.add_argument("--jobs", type=int, default=usable_cores(), help="worker processes")
    parser.add_argument(
        "--rules",
        default="looks,every-cycle",
        help="comma-separated sequential rules of compare_decision to compare",
    )
    args = parser.parse_args(argv)
    reps: int = args.reps
    budget: int = args.budget
    alpha: float = args.alpha
    rules = [r.strip() for r in args.rules.split(",") if r.strip()]

    cases = [(r, m, d, reps, budget, alpha) for r in rules for m in NOISES for d in DIFFS]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(one_case, cases))
    wall = time.perf_counter() - t0
    by = {(x["rule"], x["model"], x["diff"]): x for x in results}

    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(f"# bench_compare: {reps} repetitions per case, budget {budget} cycles, alpha {alpha:g}")
    print()
    print(f"- machine: {cpu_model()}, {usable_cores()} usable cores ({os.cpu_count()} online)")
    print(f"- date: {now}; wall time {wall:.0f} s with {args.jobs} worker(s)")
    print(f"- python {platform.python_version()}, numpy {np.__version__}")
    print(f"- noise sd {SD:.0%} of the mean; AR(1) phi = {PHI} along each variant's rounds")
    print()

    print("### False positives at a true difference of 0 %")
    print()
    head = ["noise", "method", "decided (false positives)", "rate", "95 % upper bound"]
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    for m in NOISES:
        for r in rules:
            outs = by[(r, m, 0.0)]["outs"]
            k = sum(o.decided for o in outs)
            bound = f"{upper95(k, reps):.1%}"
            print(f"| {m} | sequential `{r}` | {k} / {reps} | {pct(k, reps)} | {bound} |")
        for n in FIXED:
            ws = by[(rules[0], m, 0.0)]["fixed"][n]
            k = sum(w is not None for w in ws)
            bound = f"{upper95(k, reps):.1%}"
            print(
                f"| {m} | fixed {n} runs each + Welch | {k} / {reps} | {pct(k, reps)} | {bound} |"
            )
    print()

    print("### Time to decision and power")
    print()
    head = [
        "noise",
        "true diff",
        "method",
        "decided, right winner",
        "wrong winner",
        "median cycles to decision (decided)",
        "p90 cycles (decided)",
        "mean cycles run",
    ]
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    for m in NOISES:
        for d in DIFFS[1:]:
            for r in rules:
                outs = by[(r, m, d)]["outs"]
                right = [o for o in outs if o.decided and o.winner == "A"]
                wrong = sum(o.decided and o.winner != "A" for o in outs)
                cyc = [o.cycles for o in outs if o.decided]
                med = f"{np.median(cyc):.0f}" if cyc else "-"
                p90 = f"{np.percentile(cyc, 90):.0f}" if cyc else "-"
                mean_run = np.mean([o.cycles for o in outs])
                print(
                    f"| {m} | {d:.0%} | sequential `{r}` | {pct(len(right), reps)} | "
                    f"{pct(wrong, reps)} | {med} | {p90} | {mean_run:.1f} |"
                )
            for n in FIXED:
                ws = by[(rules[0], m, d)]["fixed"][n]
                right_n = sum(w == "A" for w in ws)
                wrong_n = sum(w == "B" for w in ws)
                print(
                    f"| {m} | {d:.0%} | fixed {n} runs each + Welch | {pct(right_n, reps)} | "
                    f"{pct(wrong_n, reps)} | {n} | {n} | {n} |"
                )
    print()
    secs = sum(x["seconds"] for x in results)
    print(f"CPU time in the simulated decision code: {secs:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
