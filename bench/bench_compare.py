"""Simulate ``assay compare``: false positives and time to decision of the sequential rules.

Run from the repository root::

    python bench/bench_compare.py [--reps 200] [--budget 1000] [--jobs N]
                                  [--rules looks,always-valid] [--correction on]
                                  [--statistic mean,median]

Variants A (mean 1) and B (mean ``1 + d``, so A is faster when ``d > 0``; a third
variant C, when the shape has one, is like B) each give one reading per round in
interleaved cycles.  The noise has a standard deviation of 5 % of each variant's mean
and one of these shapes (``SHAPES``), along each variant's own rounds:

* i.i.d. normal;
* AR(1) with phi = 0.5 or 0.8 (stationary from the first round);
* heavy tails: a lognormal with sigma = 1, standardized (skewness 6.2);
* three variants with AR(1) phi = 0.5 noise (A/A/A only);
* heavy tails, unscaled: readings ``m exp(sigma Z) / exp(sigma**2 / 2)`` with sigma = 1
  (mean ``m``, sd 131 % of it; the shape of the issue's lognormal readings).

Differences: 0 (A/A: any decision is a false positive), 2 %, 5 %, 20 % and 100 % (2x).

Sequential rules (``--rules``, values of ``stop.sequential``):

* ``looks`` (the rule before issue #17): the *live loop's own decision code* runs, as
  :class:`assay.studies.compare.CompareRunner` calls it: ``compare_pi`` with the
  arguments ``compare_trials`` passes, then ``decide_comparison``.  It can stop only at
  a look or at the end of the budget, so only those cycles are evaluated (the same
  outcome as asking after every cycle).
* ``always-valid`` (issue #17): can stop after any cycle, so it is evaluated after
  every cycle; the live code (Mann-Whitney, effect sizes, sample-size estimates) costs
  ~5 ms a cycle, so the bench runs the part the decision rests on:
  ``analyze_variant`` per variant with ``compare_trials``' arguments, the ranking by
  mean, Welch's test and ``pair_e_value`` per adjacent pair, and ``decide_comparison``'s
  minimum-sample rule.  ``--check N`` replays the first N repetitions of every case
  through the live code (every cycle up to ``CHECK_CYCLES``) and counts disagreements.
* ``every-cycle`` (Pilot as published): the live code after every cycle (slow).

``--statistic``: ``mean`` (the default PI) or ``median`` (``statistic = "median"``: the
live code at the looks and the end of the budget, whatever the rule, since the median
stops at the looks; Mann-Whitney on the merged samples decides).

``--correction``: ``on`` is the study's default ``residual_correction = true``;
``off`` is Pilot's plain subsession t-interval (the code before issue #21).

Baselines (two-variant shapes): hyperfine-style fixed repetitions, the first 10 or
30 readings of each variant and one Welch test at ``alpha`` (no subsession merging);
and the most any level-``alpha`` rule can have by cycle 15 (Neyman-Pearson: the
one-sided z-test with known variances).

Prints Markdown tables with the machine, date and load; proportions carry
Clopper-Pearson 95 % intervals (``scipy.stats.binomtest(...).proportion_ci``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import math
import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
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

from assay.designs.compare import (
    ALWAYS_VALID_MIN_SAMPLES,
    CompareDecision,
    compare_pi,
    look_cycles,
)
from assay.designs.run_until_ci import INDEPENDENCE_ALPHA, auto_warmup
from assay.execute.environment import cpu_model, usable_cores
from assay.spec import Spec
from assay.stats.compare import (
    InsufficientDataError,
    VariantStats,
    analyze_variant,
    welch_e_value,
    welch_test,
)

FloatArray = npt.NDArray[np.float64]

SD = 0.05  # noise sd, relative to each variant's mean
FIXED = (10, 30)
POWER_DIFFS = (1.0, 0.20, 0.05, 0.02)
NAMES = ("A", "B", "C")
CHECK_CYCLES = 120  # --check: cycles of the live code replayed per repetition
CHUNK = 25  # repetitions per task (the A/A cases run to the budget: spread them)


@dataclass(frozen=True)
class Shape:
    """A noise model and the number of variants."""

    name: str
    kind: str  # "normal", "ar1", "lognormal", "lognormal-raw" or "mixed"
    phi: float = 0.0
    variants: int = 2


SHAPES = (
    Shape("i.i.d.", "normal"),
    Shape("AR(1) phi=0.5", "ar1", 0.5),
    Shape("AR(1) phi=0.8", "ar1", 0.8),
    Shape("lognormal sigma=1", "lognormal"),
    Shape("3 variants, AR(1) phi=0.5", "ar1", 0.5, 3),
    Shape("lognormal sigma=1 unscaled", "lognormal-raw"),
    # equal means, unequal noise: A's readings AR(1) 0.8, B's independent
    Shape("A AR(1) 0.8, B i.i.d.", "mixed", 0.8),
)
POWER_SHAPES = tuple(s for s in SHAPES if s.variants == 2)
LOGNORMAL_SIGMA = 1.0


def make_spec(
    budget: int, alpha: float, variants: int, correction: bool, rule: str, statistic: str = "mean"
) -> Spec:
    """A study with the sequential rule ``rule``, a budget of ``budget`` cycles, the
    residual correction on or off and its PI on ``statistic`` (everything else the
    defaults)."""
    return Spec.model_validate(
        {
            "study": {"name": "bench-compare"},
            "benchmark": {"command": ["true"]},
            "pi": [{"name": "wall_time", "unit": "s", "statistic": statistic}],
            "variant": [{"name": n} for n in NAMES[:variants]],
            "stop": {
                "max_rounds": budget,
                "max_time": 1e12,
                "alpha": alpha,
                "residual_correction": correction,
                "sequential": rule,
                "warmup_rounds": WARMUP["rounds"],
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
    if shape.kind == "lognormal-raw":  # multiplicative: the shift moves median and mean
        s = LOGNORMAL_SIGMA
        return {
            NAMES[i]: m * np.exp(s * rng.standard_normal(budget) - s * s / 2.0)
            for i, m in enumerate(means)
        }
    if shape.kind == "mixed":  # the first variant AR(1) phi, the second i.i.d.
        kinds = (Shape("A", "ar1", shape.phi), Shape("B", "normal"))
        return {NAMES[i]: means[i] * (1.0 + SD * noise(kinds[i], budget, rng)) for i in range(2)}
    return {NAMES[i]: m * (1.0 + SD * noise(shape, budget, rng)) for i, m in enumerate(means)}


@dataclass(frozen=True)
class Outcome:
    cycles: int  # cycles run when the loop stopped
    decided: bool  # every adjacent pair decided
    winner: str | None  # best variant when decided
    declared: int  # adjacent pairs declared different when the loop stopped


def checked_cycles(rule_name: str, budget: int, statistic: str = "mean") -> list[int]:
    """The cycles at which the loop can stop: the looks and the budget, or every cycle
    (the median stops at the looks unless the rule is every-cycle)."""
    if rule_name == "looks" or (statistic == "median" and rule_name == "always-valid"):
        return sorted({*look_cycles(budget), budget})
    return list(range(1, budget + 1))


#: ``--merging``: "live" is what ``compare_trials`` uses (``small_n_rule``: for the
#: always-valid mean, no merging at small n without significant autocorrelation and the
#: residual correction floored at phi's upper bound; else Pilot's); "pilot" is Pilot's
#: rule always; "independence" the small-n rule always
MERGING = {"rule": "live"}
# stop.warmup_rounds of every study ("auto": MSER, assay.designs.run_until_ci.auto_warmup)
WARMUP: dict[str, int | str] = {"rounds": "auto"}


def independence(spec: Spec) -> float | None:
    """The merging rule's ``independence_alpha`` (see :data:`MERGING`)."""
    if MERGING["rule"] == "live":
        return compare_study.small_n_rule(spec, spec.pis[0])
    if MERGING["rule"] == "pilot" or not spec.stop.residual_correction:
        return None
    return INDEPENDENCE_ALPHA


def sequential(spec: Spec, data: dict[str, FloatArray], up_to: int | None = None) -> Outcome:
    """The live loop's decision at each cycle it can stop, on the first ``c`` readings
    (``up_to``: stop replaying there; the outcome then says ``cycles = up_to + 1``)."""
    stop = spec.stop
    pi = spec.pis[0]
    for c in checked_cycles(stop.sequential, stop.max_rounds, pi.statistic):
        if up_to is not None and c > up_to:
            return Outcome(up_to + 1, False, None, 0)
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
            independence_alpha=independence(spec),
            statistic=pi.statistic,
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


def always_valid(spec: Spec, data: dict[str, FloatArray], up_to: int | None = None) -> Outcome:
    """``sequential = "always-valid"`` after every cycle: what its decision rests on.

    Per cycle: ``analyze_variant`` of every variant's readings so far (as
    ``compare_pi`` calls it), the minimum-sample rule of ``decide_comparison``, the
    ranking by mean (ties in the given order, as ``rank_variants``) and, per adjacent
    pair, Welch's test on the analysed variants and ``pair_e_value`` against
    ``1 / alpha``, as ``ranking_by_evidence`` does.
    """
    stop = spec.stop
    need = stop.min_samples
    if need == type(stop).model_fields["min_samples"].default:
        need = ALWAYS_VALID_MIN_SAMPLES
    ind = independence(spec)
    sign = 1.0 if spec.pis[0].direction == "lower" else -1.0
    last = stop.max_rounds if up_to is None else min(up_to, stop.max_rounds)
    for c in range(1, last + 1):
        vs: dict[str, VariantStats] = {}
        for k, x in data.items():
            seen = x[:c]
            if stop.warmup_rounds == "auto":  # as pi_samples does for compare_trials
                seen = seen[auto_warmup(seen, stop) :]
            elif stop.warmup_rounds:
                seen = seen[stop.warmup_rounds :]
            try:
                vs[k] = analyze_variant(
                    seen,
                    stop.confidence,
                    stop.max_autocorrelation,
                    correct_residual=stop.residual_correction,
                    independence_alpha=ind,
                )
            except InsufficientDataError:
                continue
        spent = c >= stop.max_rounds
        if not spent and (len(vs) < len(data) or any(v.n < need for v in vs.values())):
            continue
        order = sorted(vs, key=lambda k: sign * vs[k].mean)
        declared = 0
        for better, worse in itertools.pairwise(order):
            b, w = vs[better], vs[worse]
            comp = welch_test(b.mean, b.var, b.n, w.mean, w.var, w.n, stop.confidence)
            declared += welch_e_value(comp, b, w) >= 1.0 / stop.alpha
        if len(vs) == len(data) and declared == len(data) - 1:
            return Outcome(c, True, order[0], declared)
        if spent:
            return Outcome(c, False, None, declared)
    return Outcome(last + 1, False, None, 0)


def outcome(spec: Spec, data: dict[str, FloatArray]) -> Outcome:
    """The comparison's outcome under the spec's rule."""
    if spec.stop.sequential == "always-valid" and spec.pis[0].statistic == "mean":
        return always_valid(spec, data)
    return sequential(spec, data)


def live_check(spec: Spec, data: dict[str, FloatArray], got: Outcome) -> bool:
    """Does the live code agree with ``got`` over the first ``CHECK_CYCLES`` cycles?"""
    live = sequential(spec, data, up_to=CHECK_CYCLES)
    if got.cycles > CHECK_CYCLES:
        return live.cycles > CHECK_CYCLES
    return (live.cycles, live.decided, live.winner) == (got.cycles, got.decided, got.winner)


def fixed(a: FloatArray, b: FloatArray, n: int, alpha: float) -> str | None:
    """Hyperfine-style: ``n`` runs each, one Welch test; the winner when p < alpha."""
    x, y = a[:n], b[:n]
    w = welch_test(
        float(x.mean()), float(x.var(ddof=1)), n, float(y.mean()), float(y.var(ddof=1)), n
    )
    if w.p_value >= alpha:
        return None
    return "A" if w.difference < 0 else "B"


Case = tuple[str, str, float, bool, str, int, int, float, int, int]


def one_case(args: Case) -> dict[str, Any]:
    """Repetitions ``first .. first + reps - 1`` of one case."""
    rule_name, shape_name, diff, correction, statistic, first, reps, budget, alpha, check = args
    shape = next(s for s in SHAPES if s.name == shape_name)
    spec = make_spec(budget, alpha, shape.variants, correction, rule_name, statistic)
    outs: list[Outcome] = []
    fixed_winners: dict[int, list[str | None]] = {n: [] for n in FIXED}
    mismatches = checked = 0
    t0 = time.perf_counter()
    for r in range(first, first + reps):
        # the same seeds with the correction on and off, and for every rule
        seed = 1_000_003 * (round(diff * 100) + 1) + 7919 * SHAPES.index(shape) + r
        data = streams(shape, diff, budget, seed)
        got = outcome(spec, data)
        outs.append(got)
        if rule_name == "always-valid" and statistic == "mean" and r < check:
            checked += 1
            mismatches += not live_check(spec, data, got)
        if shape.variants == 2:
            for n in FIXED:
                fixed_winners[n].append(fixed(data["A"], data["B"], n, alpha))
    return {
        "key": (rule_name, shape_name, diff, correction, statistic),
        "first": first,
        "outs": outs,
        "fixed": fixed_winners,
        "checked": checked,
        "mismatches": mismatches,
        "seconds": time.perf_counter() - t0,
    }


def merge(parts: list[dict[str, Any]]) -> dict[tuple[Any, ...], dict[str, Any]]:
    """The chunks of each case, in repetition order."""
    by: dict[tuple[Any, ...], dict[str, Any]] = {}
    for x in sorted(parts, key=lambda x: (str(x["key"]), x["first"])):
        got = by.setdefault(
            x["key"],
            {"outs": [], "fixed": {n: [] for n in FIXED}, "checked": 0, "mismatches": 0},
        )
        got["outs"].extend(x["outs"])
        for n in FIXED:
            got["fixed"][n].extend(x["fixed"][n])
        got["checked"] += x["checked"]
        got["mismatches"] += x["mismatches"]
    return by


def np_bound(diff: float, cycles: int, alpha: float) -> float:
    """The most power any level-alpha rule has by ``cycles`` cycles (Neyman-Pearson:
    the one-sided z-test of A's and B's means with known sds)."""
    se = math.sqrt(SD**2 + (SD * (1.0 + diff)) ** 2) / math.sqrt(cycles)
    return float(stats.norm.cdf(diff / se - stats.norm.isf(alpha)))


def quantile_cycles(outs: list[Outcome], q: float) -> str:
    """The cycle by which a share ``q`` of all repetitions decided, right winner ("-":
    never within the budget)."""
    cyc = sorted(o.cycles for o in outs if o.decided and o.winner == "A")
    k = math.ceil(q * len(outs))
    return str(cyc[k - 1]) if len(cyc) >= k else "-"


def rate(k: int, n: int) -> str:
    """``k / n`` as a percentage with its Clopper–Pearson 95 % interval."""
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95)
    return f"{100.0 * k / n:.1f}% [{100.0 * ci.low:.1f}%, {100.0 * ci.high:.1f}%]"


def label(rule_name: str, correction: bool, flags: list[bool], statistic: str = "mean") -> str:
    which = "" if len(flags) == 1 else (", correction on" if correction else ", correction off")
    on = "" if statistic == "mean" else f", {statistic} (Mann-Whitney)"
    return f"`{rule_name}`{which}{on}"


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
    parser.add_argument("--alpha", type=float, default=0.01, help="the false-positive rate")
    parser.add_argument("--jobs", type=int, default=usable_cores(), help="worker processes")
    parser.add_argument(
        "--rules",
        default="looks,always-valid",
        help="comma-separated sequential rules (stop.sequential: looks, always-valid, every-cycle)",
    )
    parser.add_argument(
        "--correction",
        default="on",
        help="residual correction: on (residual_correction = true), off (before #21), or both",
    )
    parser.add_argument(
        "--check", type=int, default=3, help="always-valid: repetitions replayed in the live code"
    )
    parser.add_argument(
        "--diffs", default="", help="comma-separated differences (default 0 and POWER_DIFFS)"
    )
    parser.add_argument(
        "--warmup", default="auto", help="stop.warmup_rounds: N, or auto (MSER, the default)"
    )
    parser.add_argument(
        "--merging",
        choices=("live", "independence", "pilot"),
        default="live",
        help="subsession merging at small n: as compare_trials (live), Pilot's, or the "
        "small-n rule (independence) whatever the rule",
    )
    parser.add_argument("--shapes", default="", help="';'-separated shape names (default all)")
    parser.add_argument(
        "--statistic",
        default="mean",
        help="comma-separated PI statistics: mean (Welch), median (Mann-Whitney at the looks)",
    )
    args = parser.parse_args(argv)
    MERGING["rule"] = args.merging  # set before the workers fork
    WARMUP["rounds"] = args.warmup if args.warmup == "auto" else int(args.warmup)
    reps: int = args.reps
    budget: int = args.budget
    alpha: float = args.alpha
    rules = [r.strip() for r in args.rules.split(",") if r.strip()]
    flags = [c.strip() == "on" for c in args.correction.split(",") if c.strip()]
    diffs = [float(d) for d in args.diffs.split(",") if d.strip()] or [0.0, *POWER_DIFFS]
    statistics = [x.strip() for x in args.statistic.split(",") if x.strip()]

    wanted = {x.strip() for x in args.shapes.split(";") if x.strip()}
    shapes = [s for s in SHAPES if not wanted or s.name in wanted]
    keys = [
        (r, s.name, d, f, st)
        for d in diffs
        for s in shapes
        if d == 0.0 or s.variants == 2
        for r in rules
        for f in flags
        for st in statistics
    ]
    cases: list[Case] = [
        (*k, first, min(CHUNK, reps - first), budget, alpha, args.check)
        for k in keys
        for first in range(0, reps, CHUNK)
    ]
    cases.sort(key=lambda c: (c[2] == 0.0, c[2] == 0.02), reverse=True)  # long ones first
    st0 = statistics[0]
    load_before = load()
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(one_case, cases))
    wall = time.perf_counter() - t0
    by = merge(results)

    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(f"# bench_compare: {reps} repetitions per case, budget {budget} cycles, alpha {alpha:g}")
    print()
    print(f"- machine: {cpu_model()}, {usable_cores()} usable cores ({os.cpu_count()} online)")
    print(f"- date: {now}; wall time {wall:.0f} s with {args.jobs} worker(s)")
    print(f"- load average (1, 5, 15 min): {load_before} at the start, {load()} at the end")
    print(f"- python {platform.python_version()}, numpy {np.__version__}")
    print(f"- noise sd {SD:.0%} of the mean; lognormal sigma {LOGNORMAL_SIGMA:g}, standardized")
    print(f"- subsession merging at small n: {args.merging}")
    checked = sum(x["checked"] for x in by.values())
    if checked:
        bad = sum(x["mismatches"] for x in by.values())
        print(
            f"- always-valid: {checked} repetitions replayed in the live code (first "
            f"{CHECK_CYCLES} cycles): {bad} disagreement(s)"
        )
    print()

    if 0.0 in diffs:
        print("### False positives at a true difference of 0 % (A/A)")
        print()
        head = ["noise", "rule", "decided (false positives)", "rate [95% CI]"]
        head += ["any pair declared [95% CI]", "cycles of the false positives"]
        print("| " + " | ".join(head) + " |")
        print("|" + "|".join("---" for _ in head) + "|")
        for s in shapes:
            for r, f, st in itertools.product(rules, flags, statistics):
                outs = by[(r, s.name, 0.0, f, st)]["outs"]
                k = sum(o.decided for o in outs)
                anyp = sum(o.declared > 0 for o in outs)
                when = ", ".join(str(o.cycles) for o in outs if o.declared > 0) or "-"
                print(
                    f"| {s.name} | {label(r, f, flags, st)} | {k} / {reps} | {rate(k, reps)} | "
                    f"{rate(anyp, reps)} | {when} |"
                )
            if s.variants == 2:
                for n in FIXED:
                    ws = by[(rules[0], s.name, 0.0, flags[0], st0)]["fixed"][n]
                    k = sum(w is not None for w in ws)
                    print(
                        f"| {s.name} | fixed {n} runs each + Welch (no merging) | {k} / {reps} | "
                        f"{rate(k, reps)} | {rate(k, reps)} | |"
                    )
        print()

    power = [d for d in diffs if d != 0.0]
    if power:
        print("### Power and time to decision")
        print()
        head = [
            "noise",
            "true diff",
            "rule",
            "decided, right winner [95% CI]",
            "wrong winner",
            "median cycles (decided)",
            "cycles to 50% / 80% power",
            "mean cycles run",
        ]
        print("| " + " | ".join(head) + " |")
        print("|" + "|".join("---" for _ in head) + "|")
        for s in (s for s in shapes if s.variants == 2):
            for d in power:
                for r, f, st in itertools.product(rules, flags, statistics):
                    outs = by[(r, s.name, d, f, st)]["outs"]
                    right = [o for o in outs if o.decided and o.winner == "A"]
                    wrong = sum(o.decided and o.winner != "A" for o in outs)
                    cyc = [o.cycles for o in outs if o.decided]
                    med = f"{np.median(cyc):.0f}" if cyc else "-"
                    q = f"{quantile_cycles(outs, 0.5)} / {quantile_cycles(outs, 0.8)}"
                    mean_run = np.mean([o.cycles for o in outs])
                    print(
                        f"| {s.name} | {d:.0%} | {label(r, f, flags, st)} | "
                        f"{rate(len(right), reps)} | {wrong} / {reps} | {med} | {q} | "
                        f"{mean_run:.1f} |"
                    )
                ws = by[(rules[0], s.name, d, flags[0], st0)]["fixed"][30]
                k = sum(w == "A" for w in ws)
                print(
                    f"| {s.name} | {d:.0%} | fixed 30 runs each + Welch | {rate(k, reps)} | "
                    f"{sum(w == 'B' for w in ws)} / {reps} | 30 | | 30 |"
                )
        print()
        print(
            "Most power any rule at level alpha can have by cycle 15 (i.i.d. normal, "
            "Neyman-Pearson one-sided z-test with known sds): "
            + ", ".join(f"{d:.0%}: {np_bound(d, 15, alpha):.1%}" for d in power)
        )
        print()
    secs = sum(x["seconds"] for x in results)
    print(f"Worker time in the simulated decision code (wall, under the load above): {secs:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
