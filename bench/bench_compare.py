"""Simulate ``assay compare``: false positives and time to decision, with and without
the residual-autocorrelation correction.

Run from the repository root::

    python bench/bench_compare.py [--reps 200] [--budget 1000] [--jobs N]
                                  [--correction on,off] [--rules looks]

Variants A (mean 1) and B (mean ``1 + d``, so A is faster when ``d > 0``; a third
variant C, when the shape has one, is like B) each give one reading per round in
interleaved cycles.  The noise has a standard deviation of 5 % of each variant's mean
and one of these shapes (``SHAPES``), along each variant's own rounds:

* i.i.d. normal;
* AR(1) with phi = 0.5 or 0.8 (stationary from the first round);
* heavy tails: a lognormal with sigma = 1, standardized (skewness 6.2);
* three variants with AR(1) phi = 0.5 noise.

For every repetition the *live loop's own decision code* runs, exactly as
:class:`assay.studies.compare.CompareRunner` calls it:
:func:`assay.designs.compare.compare_pi` on the readings so far (the same arguments
``compare_trials`` passes, ``correct_residual=stop.residual_correction`` included) and
then :func:`assay.studies.compare.decide_comparison` (the ``min_samples`` rule, then
:func:`assay.designs.compare.compare_decision`).  Nothing is executed: the readings
are drawn from the model.  With the default ``looks`` rule the loop can stop only at a
look (:func:`assay.designs.compare.look_cycles`) or at the end of the budget, so only
those cycles are evaluated: the same outcome as asking after every cycle, ~20 times
faster.

``--correction``: ``on`` is the study's default ``residual_correction = true`` (each
variant widened for the residual autocorrelation of its merged samples, as
``assay run`` does); ``off`` (``residual_correction = false``) is Pilot's plain
subsession t-interval, the code before issue #21.  Both see the same seeds.

Sequential rules (``--rules``): ``looks`` (the default of ``compare_decision``) and
``every-cycle`` (Pilot's rule as published, ``sequential="every-cycle"``, evaluated
after every cycle: slow).  A rule other than the default reaches the live
``decide_comparison`` by replacing the ``compare_decision`` it calls.

Baselines (two-variant shapes): hyperfine-style fixed repetitions, the first 10 or
30 readings of each variant and one Welch test at ``alpha`` (no subsession merging).

Prints Markdown tables with the machine, date and load; proportions carry
Clopper–Pearson 95 % intervals (``scipy.stats.binomtest(...).proportion_ci``).
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

from assay.designs.compare import CompareDecision, compare_decision, compare_pi, look_cycles
from assay.execute.environment import cpu_model, usable_cores
from assay.spec import Spec
from assay.stats.compare import welch_test

FloatArray = npt.NDArray[np.float64]

SD = 0.05  # noise sd, relative to each variant's mean
FIXED = (10, 30)
POWER_DIFFS = (0.05, 0.20)
NAMES = ("A", "B", "C")


@dataclass(frozen=True)
class Shape:
    """A noise model and the number of variants."""

    name: str
    kind: str  # "normal", "ar1" or "lognormal"
    phi: float = 0.0
    variants: int = 2


SHAPES = (
    Shape("i.i.d.", "normal"),
    Shape("AR(1) phi=0.5", "ar1", 0.5),
    Shape("AR(1) phi=0.8", "ar1", 0.8),
    Shape("lognormal sigma=1", "lognormal"),
    Shape("3 variants, AR(1) phi=0.5", "ar1", 0.5, 3),
)
POWER_SHAPES = tuple(s for s in SHAPES if s.variants == 2)
LOGNORMAL_SIGMA = 1.0


def make_spec(budget: int, alpha: float, variants: int, correction: bool) -> Spec:
    """A study with the default stopping rule, a budget of ``budget`` cycles and the
    residual correction on or off."""
    return Spec.model_validate(
        {
            "study": {"name": "bench-compare"},
            "benchmark": {"command": ["true"]},
            "variant": [{"name": n} for n in NAMES[:variants]],
            "stop": {
                "max_rounds": budget,
                "max_time": 1e12,
                "alpha": alpha,
                "residual_correction": correction,
            },
        }
    )


def noise(shape: Shape, n: int, rng: np.random.Generator) -> FloatArray:
    """Zero-mean, unit-variance noise of the shape."""
    e = rng.standard_normal(n)
    if shape.kind == "normal":
        return e
    if shape.kind == "lognormal":
        s2 = LOGNORMAL_SIGMA**2
        mean, var = math.exp(s2 / 2.0), (math.exp(s2) - 1.0) * math.exp(s2)
        return (np.exp(LOGNORMAL_SIGMA * e) - mean) / math.sqrt(var)
    phi = shape.phi
    e[0] /= math.sqrt(1.0 - phi * phi)  # start in the stationary distribution
    x = np.asarray(lfilter([1.0], [1.0, -phi], e), dtype=np.float64)
    return x * math.sqrt(1.0 - phi * phi)


def streams(shape: Shape, diff: float, budget: int, seed: int) -> dict[str, FloatArray]:
    """Each variant's readings for the whole budget: A at 1, the others at ``1 + diff``."""
    rng = np.random.default_rng(seed)
    means = [1.0] + [1.0 + diff] * (shape.variants - 1)
    return {NAMES[i]: m * (1.0 + SD * noise(shape, budget, rng)) for i, m in enumerate(means)}


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
    decided: bool  # every adjacent pair decided
    winner: str | None  # best variant when decided
    declared: int  # adjacent pairs declared different when the loop stopped


def checked_cycles(rule_name: str, budget: int) -> list[int]:
    """The cycles at which the loop can stop: the looks and the budget, or every cycle."""
    if rule_name == "looks":
        return sorted({*look_cycles(budget), budget})
    return list(range(1, budget + 1))


def sequential(spec: Spec, data: dict[str, FloatArray], rule_name: str) -> Outcome:
    """The live loop's decision at each cycle it can stop, on the first ``c`` readings."""
    stop = spec.stop
    pi = spec.pis[0]
    for c in checked_cycles(rule_name, stop.max_rounds):
        # as compare_trials: readings (no warm-up rounds), then compare_pi
        comp = compare_pi(
            pi.name,
            pi.unit,
            pi.direction,
            {k: x[:c] for k, x in data.items()},
            alpha=stop.alpha,
            confidence=stop.confidence,
            max_autocorrelation=stop.max_autocorrelation,
            samples_per_round=dict.fromkeys(data, 1.0),
            correct_residual=stop.residual_correction,
        )
        d = compare_study.decide_comparison(
            comp, spec, cycles=c, trials=len(data) * c, failed=0, elapsed=0.0
        )
        if d.done:
            if not isinstance(d, CompareDecision):  # not reached: no trial fails here
                return Outcome(c, False, None, 0)
            # at the end of the budget some pairs may be decided at the last look's level
            declared = len(data) - 1 - len(d.undecided)
            return Outcome(c, d.decided, comp.ranking.order[0] if d.decided else None, declared)
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


Case = tuple[str, str, float, bool, int, int, float]


def one_case(args: Case) -> dict[str, Any]:
    rule_name, shape_name, diff, correction, reps, budget, alpha = args
    shape = next(s for s in SHAPES if s.name == shape_name)
    spec = make_spec(budget, alpha, shape.variants, correction)
    outs: list[Outcome] = []
    fixed_winners: dict[int, list[str | None]] = {n: [] for n in FIXED}
    t0 = time.perf_counter()
    with rule(rule_name):
        for r in range(reps):
            # the same seeds with the correction on and off, and for every rule
            seed = 1_000_003 * (round(diff * 100) + 1) + 7919 * SHAPES.index(shape) + r
            data = streams(shape, diff, budget, seed)
            outs.append(sequential(spec, data, rule_name))
            if shape.variants == 2:
                for n in FIXED:
                    fixed_winners[n].append(fixed(data["A"], data["B"], n, alpha))
    return {
        "key": (rule_name, shape_name, diff, correction),
        "outs": outs,
        "fixed": fixed_winners,
        "seconds": time.perf_counter() - t0,
    }


def rate(k: int, n: int) -> str:
    """``k / n`` as a percentage with its Clopper–Pearson 95 % interval."""
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95)
    return f"{100.0 * k / n:.1f}% [{100.0 * ci.low:.1f}%, {100.0 * ci.high:.1f}%]"


def label(rule_name: str, correction: bool, rules: list[str]) -> str:
    which = "on (after)" if correction else "off (before)"
    return which if len(rules) == 1 else f"`{rule_name}`, {which}"


def load() -> str:
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "unknown"
    return f"{one:.2f}, {five:.2f}, {fifteen:.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--reps", type=int, default=200, help="repetitions per case")
    parser.add_argument(
        "--budget", type=int, default=1000, help="budget in cycles (stop.max_rounds default)"
    )
    parser.add_argument("--alpha", type=float, default=0.01, help="Welch threshold")
    parser.add_argument("--jobs", type=int, default=usable_cores(), help="worker processes")
    parser.add_argument(
        "--rules",
        default="looks",
        help="comma-separated sequential rules of compare_decision (looks, every-cycle)",
    )
    parser.add_argument(
        "--correction",
        default="on,off",
        help="residual correction: on (residual_correction = true), off (before), or both",
    )
    args = parser.parse_args(argv)
    reps: int = args.reps
    budget: int = args.budget
    alpha: float = args.alpha
    rules = [r.strip() for r in args.rules.split(",") if r.strip()]
    flags = [c.strip() == "on" for c in args.correction.split(",") if c.strip()]

    cases: list[Case] = [
        (r, s.name, 0.0, f, reps, budget, alpha) for r in rules for s in SHAPES for f in flags
    ]
    cases += [
        (r, s.name, d, f, reps, budget, alpha)
        for r in rules
        for s in POWER_SHAPES
        for d in POWER_DIFFS
        for f in flags
    ]
    load_before = load()
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(one_case, cases))
    wall = time.perf_counter() - t0
    by = {x["key"]: x for x in results}

    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(f"# bench_compare: {reps} repetitions per case, budget {budget} cycles, alpha {alpha:g}")
    print()
    print(f"- machine: {cpu_model()}, {usable_cores()} usable cores ({os.cpu_count()} online)")
    print(f"- date: {now}; wall time {wall:.0f} s with {args.jobs} worker(s)")
    print(f"- load average (1, 5, 15 min): {load_before} at the start, {load()} at the end")
    print(f"- python {platform.python_version()}, numpy {np.__version__}")
    print(f"- noise sd {SD:.0%} of the mean; lognormal sigma {LOGNORMAL_SIGMA:g}, standardized")
    print()

    print("### False positives at a true difference of 0 % (A/A)")
    print()
    head = ["noise", "correction", "decided (false positives)", "rate [95% CI]"]
    head += ["any pair declared [95% CI]"]
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    for s in SHAPES:
        for r in rules:
            for f in flags:
                outs = by[(r, s.name, 0.0, f)]["outs"]
                k = sum(o.decided for o in outs)
                anyp = sum(o.declared > 0 for o in outs)
                print(
                    f"| {s.name} | {label(r, f, rules)} | {k} / {reps} | {rate(k, reps)} | "
                    f"{rate(anyp, reps)} |"
                )
        if s.variants == 2:
            for n in FIXED:
                ws = by[(rules[0], s.name, 0.0, flags[0])]["fixed"][n]
                k = sum(w is not None for w in ws)
                print(
                    f"| {s.name} | fixed {n} runs each + Welch (no merging) | {k} / {reps} | "
                    f"{rate(k, reps)} | {rate(k, reps)} |"
                )
    print()

    print("### Power and time to decision")
    print()
    head = [
        "noise",
        "true diff",
        "correction",
        "decided, right winner [95% CI]",
        "wrong winner",
        "median cycles (decided)",
        "p90 cycles (decided)",
        "mean cycles run",
    ]
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    for s in POWER_SHAPES:
        for d in POWER_DIFFS:
            for r in rules:
                for f in flags:
                    outs = by[(r, s.name, d, f)]["outs"]
                    right = [o for o in outs if o.decided and o.winner == "A"]
                    wrong = sum(o.decided and o.winner != "A" for o in outs)
                    cyc = [o.cycles for o in outs if o.decided]
                    med = f"{np.median(cyc):.0f}" if cyc else "-"
                    p90 = f"{np.percentile(cyc, 90):.0f}" if cyc else "-"
                    mean_run = np.mean([o.cycles for o in outs])
                    print(
                        f"| {s.name} | {d:.0%} | {label(r, f, rules)} | "
                        f"{rate(len(right), reps)} | {wrong} / {reps} | {med} | {p90} | "
                        f"{mean_run:.1f} |"
                    )
    print()
    secs = sum(x["seconds"] for x in results)
    print(f"CPU time in the simulated decision code: {secs:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
