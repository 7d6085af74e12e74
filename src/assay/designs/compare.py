"""Interleaved comparison (Pilot §III-F): which of several variants is best, in the least time.

This module is pure.  :func:`interleaved_schedule` says which variant runs in which
round; :func:`compare_decision` turns a :class:`~assay.stats.compare.Ranking` of the
data so far into a decision: done, or how many more rounds the undecided pairs need.

Rounds are interleaved, ``A0 B0 C0 A1 B1 C1 ...``, to lower the temporal correlation
between variants (a slow period of the machine then hits every variant alike); the
order inside each cycle is a fresh random permutation unless a fixed order is asked.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

from assay.designs.run_until_ci import Decision, budget_spent
from assay.stats.compare import (
    Comparison,
    Direction,
    PairDecision,
    Ranking,
    SummaryStats,
    VariantStats,
    always_valid_relative,
    compare_variants,
    rank_variants,
    ranking_at_level,
    ranking_by_evidence,
)
from assay.stats.compare_median import median_at_level, median_comparison, rank_by_median
from assay.stats.rank_shift import MedianCI, median_interval

__all__ = [
    "ALWAYS_VALID_MIN_SAMPLES",
    "SEQUENTIAL_RULES",
    "STATISTICS",
    "CompareDecision",
    "PIComparison",
    "compare_decision",
    "compare_pi",
    "cycle_order",
    "interleaved_schedule",
    "look_cycles",
    "look_level",
    "undecided_text",
]

#: How a comparison guards against looking at its data after every cycle.
Sequential = Literal["always-valid", "looks", "every-cycle"]

#: The rules, the default first.
SEQUENTIAL_RULES: tuple[Sequential, ...] = ("always-valid", "looks", "every-cycle")

#: What a comparison ranks on: the mean (Welch) or the median (Mann–Whitney, ranks).
Statistic = Literal["mean", "median"]
STATISTICS: tuple[Statistic, ...] = ("mean", "median")

#: Merged samples per variant the always-valid rule needs before it may stop, unless
#: ``min_samples`` is set: the fewest a lag-1 autocorrelation (and so the merging)
#: is computed on.  The e-value itself asks for more when the difference is small.
ALWAYS_VALID_MIN_SAMPLES = 3

#: First look and growth of the look schedule (cycles 10, 15, 23, 35, 53, 80, ...).
FIRST_LOOK = 10
LOOK_RATIO = 1.5


def _check_variants(variants: Sequence[str]) -> list[str]:
    names = list(variants)
    if not names:
        raise ValueError("at least one variant is needed")
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"variant names must be unique, repeated: {', '.join(dup)}")
    return names


def _check_nonneg_int(value: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
        raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
    return int(value)


def cycle_order(
    variants: Sequence[str], seed: int, cycle: int, fixed_order: bool = False
) -> list[str]:
    """The order of the variants in one cycle of an interleaved schedule.

    The permutation is drawn from ``numpy.random.default_rng([seed, cycle])``:
    it depends only on ``(seed, cycle)`` and the list of variants, so any cycle
    can be regenerated on its own (resuming a study, extending the budget).

    Parameters
    ----------
    variants : sequence of str
        Unique names, in their declared order.
    seed : int
        Non-negative seed of the study.
    cycle : int
        Non-negative cycle index.
    fixed_order : bool, default False
        Keep the declared order in every cycle.

    Returns
    -------
    list of str

    Examples
    --------
    >>> cycle_order(["a", "b", "c"], seed=1, cycle=0, fixed_order=True)
    ['a', 'b', 'c']
    >>> sorted(cycle_order(["a", "b", "c"], seed=1, cycle=5))
    ['a', 'b', 'c']
    """
    names = _check_variants(variants)
    s = _check_nonneg_int(seed, "seed")
    k = _check_nonneg_int(cycle, "cycle")
    if fixed_order:
        return names
    perm = np.random.default_rng([s, k]).permutation(len(names))
    return [names[int(i)] for i in perm]


def interleaved_schedule(
    variants: Sequence[str], cycles: int, seed: int, fixed_order: bool = False
) -> list[tuple[int, str]]:
    """Interleaved rounds ``(cycle, variant)``: every variant once per cycle, cycle after cycle.

    Parameters
    ----------
    variants : sequence of str
        Unique variant names.
    cycles : int
        Number of cycles (``>= 0``); the schedule has ``cycles * len(variants)``
        rounds.
    seed : int
        Non-negative seed.  The same seed gives the same schedule, and a longer
        schedule extends a shorter one (cycle ``k`` depends only on
        ``(seed, k)``; see :func:`cycle_order`).
    fixed_order : bool, default False
        Use the declared order in every cycle instead of a random permutation.

    Returns
    -------
    list of (int, str)

    Examples
    --------
    >>> interleaved_schedule(["a", "b"], cycles=2, seed=0, fixed_order=True)
    [(0, 'a'), (0, 'b'), (1, 'a'), (1, 'b')]
    >>> s = interleaved_schedule(["a", "b", "c"], cycles=3, seed=42)
    >>> s == interleaved_schedule(["a", "b", "c"], cycles=5, seed=42)[:9]
    True
    """
    n = _check_nonneg_int(cycles, "cycles")
    return [
        (k, name)
        for k in range(n)
        for name in cycle_order(variants, seed, k, fixed_order=fixed_order)
    ]


def look_cycles(up_to: int, first: int = FIRST_LOOK, ratio: float = LOOK_RATIO) -> list[int]:
    """The cycles at which a sequential comparison looks at its data, up to ``up_to``.

    ``first``, then each look ``ceil(ratio * previous)`` (at least one cycle later):
    with the defaults 10, 15, 23, 35, 53, 80, 120, 180, 270, 405, ...  Looking at
    geometrically spaced cycles rather than after every cycle keeps the number of
    looks, and so the price of each in significance level, small (about
    ``log(n / first) / log(ratio)`` looks up to cycle ``n``).

    Examples
    --------
    >>> look_cycles(200)
    [10, 15, 23, 35, 53, 80, 120, 180]
    """
    if isinstance(first, bool) or not isinstance(first, int | np.integer) or first < 1:
        raise ValueError(f"first must be an integer >= 1, got {first!r}")
    if not (math.isfinite(ratio) and ratio > 1.0):
        raise ValueError(f"ratio must be > 1, got {ratio!r}")
    out: list[int] = []
    c = int(first)
    while c <= up_to:
        out.append(c)
        c = max(c + 1, math.ceil(c * ratio))
    return out


def look_level(
    alpha: float,
    rounds_done: int,
    *,
    final: bool = False,
    first: int = FIRST_LOOK,
    ratio: float = LOOK_RATIO,
) -> tuple[int, float] | None:
    """The look at cycle ``rounds_done`` and its significance level, or ``None``.

    Look ``j`` (1-based) of :func:`look_cycles` tests at ``alpha / (j (j + 1))``.
    These levels sum to ``alpha`` over any number of looks, so by the union bound
    the chance that a true equality is declared a difference at *some* look is at
    most ``alpha`` (in practice well below: consecutive looks share most of their
    data).  When the budget ends (``final``) at a cycle that is not a look, the
    last look there takes the level of the next unused look, which the
    comparison will never reach; the bound still holds.

    Parameters
    ----------
    alpha : float
        Overall significance level, in (0, 1).
    rounds_done : int
        Cycles completed.
    final : bool, keyword-only
        The budget is spent: this is the last look.
    first, ratio : keyword-only
        The look schedule (:func:`look_cycles`).

    Returns
    -------
    (int, float) or None
        ``(j, level)``; ``None`` when ``rounds_done`` is no look (and not final).

    Examples
    --------
    >>> look_level(0.01, 10), look_level(0.01, 15)
    ((1, 0.005), (2, 0.0016666666666666668))
    >>> look_level(0.01, 12) is None, look_level(0.01, 12, final=True)
    (True, (2, 0.0016666666666666668))
    """
    a = float(alpha)
    if not 0.0 < a < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    done = _check_nonneg_int(rounds_done, "rounds_done")
    looks = look_cycles(done, first, ratio)
    if looks and looks[-1] == done:
        j = len(looks)
    elif final:
        j = len(looks) + 1
    else:
        return None
    return j, a / (j * (j + 1))


def _next_look(after: int, first: int = FIRST_LOOK, ratio: float = LOOK_RATIO) -> int:
    """The first look at a cycle ``>= after``."""
    c = int(first)
    while c < after:
        c = max(c + 1, math.ceil(c * ratio))
    return c


@dataclass(frozen=True)
class CompareDecision(Decision):
    """A :class:`~assay.designs.run_until_ci.Decision` for a comparison study.

    ``done``, ``reason`` and ``rounds_left`` (more *cycles* needed, an estimate;
    ``None`` when unknown) as for run-until-CI, plus:

    Attributes
    ----------
    decided : bool
        Every adjacent pair of the ranking is separated or significant.
    undecided : tuple of (str, str)
        The undecided pairs ``(better, worse)``.
    """

    decided: bool = False
    undecided: tuple[tuple[str, str], ...] = ()


def _pair_text(p: PairDecision) -> str:
    return f"{p.better} vs {p.worse}"


def _rounds_for(ranking: Ranking, samples_per_round: Mapping[str, float] | None) -> int | None:
    """Cycles still needed by the undecided pairs (None when some pair has no estimate)."""
    worst = 0
    for name, extra in ranking.extra_samples().items():
        if extra is None:
            return None
        per = float((samples_per_round or {}).get(name, 1.0)) or 1.0
        worst = max(worst, math.ceil(extra / per))
    return worst


def compare_decision(
    ranking: Ranking,
    ci_targets_met: bool | None,
    rounds_done: int,
    *,
    max_rounds: int | None = None,
    elapsed: float = 0.0,
    max_time: float | None = None,
    samples_per_round: Mapping[str, float] | None = None,
    sequential: Sequential = "always-valid",
    statistic: Statistic = "mean",
) -> CompareDecision:
    """Is the comparison done?  Pilot §III-F's stopping rule plus the budget.

    Done when every adjacent pair is decided and, when CI width targets are
    used (``ci_targets_met`` is not ``None``), every CI is as narrow as asked;
    or when the budget (``max_rounds`` cycles or ``max_time`` seconds) is
    spent, in which case the reason names the undecided pairs and the rounds
    Welch's sample-size estimate asks for.

    The loop asks after every cycle, and a fixed-level test asked again and
    again finds a difference that is not there far more often than its level
    (``bench/bench_compare.py``: about 10 % instead of 1 % over 200 cycles).
    By default (``sequential="always-valid"``) a pair is decided, at any cycle,
    when its always-valid e-value (the mixture sequential t-test on Welch's t,
    :func:`assay.stats.compare.pair_e_value`) reaches ``1 / alpha``: by Ville's
    inequality the chance that a true equality ever gets there is at most
    ``alpha``, however often one looks, and a large difference is decided after
    a few cycles.  ``sequential="looks"`` (the rule before issue #17) may stop
    only at the looks of :func:`look_cycles` (10, 15, 23, 35, ... cycles) and at
    the end of the budget, deciding a pair at look ``j`` only when Welch's p is
    below ``alpha / (j (j + 1))`` (:func:`look_level`).  ``sequential="every-cycle"``
    is Pilot's rule as published: stop at the first cycle where every pair is
    CI-separated or Welch p < ``alpha``.

    On the median (``statistic="median"``, a ranking from
    :func:`assay.stats.compare_median.rank_by_median`) a pair is decided by the
    two-sided Mann–Whitney test instead of Welch's.  The always-valid e-value is a
    sequential *t*-test and says nothing about ranks, so ``"always-valid"`` then stops
    as ``"looks"`` does (Mann–Whitney p < ``alpha / (j (j + 1))`` at look ``j``) and
    the reason says so; ``"every-cycle"`` tests at ``alpha`` after every cycle.

    Parameters
    ----------
    ranking : Ranking
        From :func:`assay.stats.compare.rank_variants` on the data so far.
    ci_targets_met : bool or None
        Whether every variant's CI meets its width target; ``None`` when no
        target is set.
    rounds_done : int
        Cycles completed (every variant ran once per cycle).
    max_rounds : int or None, keyword-only
        Budget in cycles.
    elapsed, max_time : float, keyword-only
        Seconds spent and the time budget (``None``: none).
    samples_per_round : mapping of str to float, keyword-only
        Raw samples one round of each variant contributes (default 1: one
        reading per round); turns extra samples into rounds.
    sequential : {"always-valid", "looks", "every-cycle"}, keyword-only
        The guard against repeated looks (see above).
    statistic : {"mean", "median"}, keyword-only
        What the ranking is on (see above).

    Returns
    -------
    CompareDecision
        ``rounds_left`` is the number of further cycles the undecided pairs
        need (0 when decided; ``None`` when unknown, e.g. a variant without
        enough data yet, or when only CI targets are pending).

    Examples
    --------
    >>> import numpy as np
    >>> from assay.stats.compare import rank_variants
    >>> rng = np.random.default_rng(3)
    >>> r = rank_variants({"a": rng.normal(1.2, 0.1, 60), "b": rng.normal(1.0, 0.1, 60)})
    >>> d = compare_decision(r, ci_targets_met=None, rounds_done=60)
    >>> d.done, d.rounds_left, d.reason[:46]
    (True, 0, 'decided: every adjacent pair has an e-value of')
    >>> d = compare_decision(r, ci_targets_met=None, rounds_done=53, sequential="looks")
    >>> d.done, d.rounds_left, d.reason[:51]
    (True, 0, 'decided: every adjacent pair has Welch p < 0.000333')
    >>> d = compare_decision(r, ci_targets_met=None, rounds_done=60, sequential="looks")
    >>> d.done, d.rounds_left
    (False, 20)
    >>> compare_decision(r, None, 60, sequential="every-cycle").reason
    'decided: every adjacent pair is CI-separated or Welch p < 0.01'
    """
    if sequential not in SEQUENTIAL_RULES:
        raise ValueError(
            f"sequential must be one of {', '.join(SEQUENTIAL_RULES)}, got {sequential!r}"
        )
    if statistic not in STATISTICS:
        raise ValueError(f"statistic must be one of {', '.join(STATISTICS)}, got {statistic!r}")
    median = statistic == "median"
    done_rounds = _check_nonneg_int(rounds_done, "rounds_done")
    budget = budget_spent(done_rounds, max_rounds, elapsed, max_time)
    if median and sequential != "every-cycle":
        # the e-value is Welch's: ranks get the looks' alpha spending, whichever was asked
        note = (
            " (the median's rank test has no always-valid e-value: it stops at the looks)"
            if sequential == "always-valid"
            else ""
        )
        return _looks_decision(
            ranking, ci_targets_met, done_rounds, budget, samples_per_round, _MEDIAN, note
        )
    if sequential == "looks":
        return _looks_decision(ranking, ci_targets_met, done_rounds, budget, samples_per_round)
    if sequential == "always-valid":
        return _always_valid_decision(ranking, ci_targets_met, budget, samples_per_round)
    test = _MEDIAN if median else _WELCH
    rule = "Mann-Whitney p" if median else "CI-separated or Welch p"
    return _verdict(
        ranking,
        ci_targets_met,
        budget,
        samples_per_round,
        decided_reason=f"decided: every adjacent pair is {rule} < {ranking.alpha:g}",
        undecided_reason=lambda: undecided_text(ranking, test.estimate),
    )


def bounded_words(ranking: Ranking) -> str:
    """What a decision adds when a pair was decided by its block ranges (#58), else "".

    >>> bounded_words(rank_variants({"a": [1.0, 1.1, 0.9], "b": [5.0, 5.2, 4.9]}))
    ''
    """
    bounded = [f"{p.worse} vs {p.better}" for p in ranking.pairs if p.status == "bounded"]
    if not bounded:
        return ""
    return (
        f"; {', '.join(bounded)}: bounded (no valid CI, or CIs a drift widened; even the "
        "ranges of their block means are apart, which holds whatever the drift)"
    )


def _verdict(
    judged: Ranking,
    ci_targets_met: bool | None,
    budget: str | None,
    samples_per_round: Mapping[str, float] | None,
    *,
    decided_reason: str,
    undecided_reason: Callable[[], str],
    to_stop: Callable[[int | None], int | None] = lambda est: est,
) -> CompareDecision:
    """The decision every rule ends with, once its pairs are ``judged``: decided (and the
    CI targets met), running, or the budget spent with the pairs still undecided.
    ``to_stop`` turns the rounds the undecided pairs need into rounds to the next cycle
    the rule may stop at."""
    pairs = tuple((p.better, p.worse) for p in judged.undecided)
    decided = not pairs
    left = 0 if decided else _rounds_for(judged, samples_per_round)

    def make(done: bool, reason: str, rounds: int | None) -> CompareDecision:
        return CompareDecision(done, reason, rounds, decided=decided, undecided=pairs)

    if decided and ci_targets_met is not False:
        return make(True, decided_reason + bounded_words(judged), 0)
    if budget is None:
        if decided:
            return make(False, "ranking decided; waiting for the CI width targets", None)
        return make(False, "running", to_stop(left))
    if decided:
        return make(True, f"{budget}; ranking decided but some CI width targets not met", None)
    more = "" if left is None else f"; about {left} more rounds needed"
    return make(True, f"{budget}; {undecided_reason()}{more}", left)


@dataclass(frozen=True)
class _Test:
    """The test a ranking's pairs are judged by at a look."""

    name: str  # in reasons: "Welch p < 0.005"
    estimate: str  # whose sample-size estimate the undecided pairs get
    at_level: Callable[[Ranking, float], Ranking]


_WELCH = _Test("Welch p", "Welch", ranking_at_level)
_MEDIAN = _Test("Mann-Whitney p", "Noether", median_at_level)


def _to_look(done_rounds: int, est: int | None) -> int | None:
    """Cycles from ``done_rounds`` to the first look after ``est`` more cycles (at least 1)."""
    return None if est is None else _next_look(done_rounds + max(est, 1)) - done_rounds


def _looks_decision(
    ranking: Ranking,
    ci_targets_met: bool | None,
    done_rounds: int,
    budget: str | None,
    samples_per_round: Mapping[str, float] | None,
    test: _Test = _WELCH,
    note: str = "",
) -> CompareDecision:
    """:func:`compare_decision` with ``sequential="looks"``: pairs judged by ``test``;
    ``note`` ends a decided reason (why this rule)."""
    look = look_level(ranking.alpha, done_rounds, final=budget is not None)
    if look is None:  # between looks: report progress, stop never
        nxt = _next_look(done_rounds)
        nxt_look = look_level(ranking.alpha, nxt)
        assert nxt_look is not None
        at_next = test.at_level(ranking, nxt_look[1])
        pairs = tuple((p.better, p.worse) for p in at_next.undecided)
        est = 0 if at_next.decided else _rounds_for(at_next, samples_per_round)
        # the ranking may already look decided at the nominal level: say when it is checked
        reason = f"running: the next look is at cycle {nxt}" if ranking.decided else "running"
        return CompareDecision(
            False, reason, _to_look(done_rounds, est), decided=False, undecided=pairs
        )
    j, level = look
    judged = test.at_level(ranking, level)
    where = f"look {j} (cycle {done_rounds})"
    return _verdict(
        judged,
        ci_targets_met,
        budget,
        samples_per_round,
        decided_reason=f"decided: every adjacent pair has {test.name} < {level:.3g} at "
        f"{where}; alpha {ranking.alpha:g} spread over the looks{note}",
        undecided_reason=lambda: (
            f"{undecided_text(judged, test.estimate)} at {where}, {test.name} < {level:.3g} needed"
        ),
        to_stop=lambda est: _to_look(done_rounds, est),
    )


def _always_valid_decision(
    ranking: Ranking,
    ci_targets_met: bool | None,
    budget: str | None,
    samples_per_round: Mapping[str, float] | None,
) -> CompareDecision:
    """:func:`compare_decision` with ``sequential="always-valid"``."""
    judged = ranking_by_evidence(ranking)
    e = 1.0 / ranking.alpha
    return _verdict(
        judged,
        ci_targets_met,
        budget,
        samples_per_round,
        decided_reason=f"decided: every adjacent pair has an e-value of at least {e:g} "
        f"(always valid at alpha {ranking.alpha:g}: mixture sequential t-test on Welch's t)",
        undecided_reason=lambda: (
            f"{undecided_text(judged, 'the sequential test')}, e-value >= {e:g} needed"
            + "".join(f"; {x}" for x in interval_disagreements(judged))
        ),
    )


def interval_disagreements(ranking: Ranking) -> list[str]:
    """For each pair the always-valid rule left undecided although its fixed-look
    interval excludes zero: both intervals, and which one governs (issue #45: a 5% gap
    spent 1,000 cycles undecided beside a CI that excluded zero, and the report did not
    say why).  The worse variant against the better, as the report's "vs best"."""
    out = []
    for p in ranking.undecided:
        if p.comparison is None:
            continue
        comp = compare_variants(p.comparison.b, p.comparison.a, ranking.confidence)
        low, high = comp.welch.rel_low, comp.welch.rel_high
        if not (math.isfinite(low) and math.isfinite(high)) or low <= 0.0 <= high:
            continue
        vlow, vhigh = always_valid_relative(comp, ranking.alpha)
        out.append(
            f"{p.worse} vs {p.better}: the fixed-look {ranking.confidence:.0%} CI "
            f"{_pct(comp.welch.relative)} [{_pct(low)}, {_pct(high)}] excludes 0 but holds at "
            "one look chosen in advance, and the study looks after every cycle; the "
            f"always-valid {1.0 - ranking.alpha:.0%} interval [{_pct(vlow)}, {_pct(vhigh)}], "
            "the stopping rule's, governs"
        )
    return out


def _pct(x: float) -> str:
    """A relative difference as the report writes it: ``+4.9%``, ``-∞``."""
    if math.isfinite(x):
        return f"{x:+.1%}"
    return "-∞" if x < 0 else "+∞"


def undecided_text(ranking: Ranking, estimate: str = "Welch") -> str:
    """``undecided: A vs B (Welch asks for ...)``: the undecided pairs and what they need
    (``estimate`` names the sample-size estimate)."""
    parts = []
    for p in ranking.undecided:
        if p.extra_better is None or p.extra_worse is None:
            parts.append(f"{_pair_text(p)} (no estimate: {p.note or 'not enough data'})")
        else:
            parts.append(
                f"{_pair_text(p)} ({estimate} asks for {p.extra_better} more samples of "
                f"{p.better} and {p.extra_worse} of {p.worse})"
            )
    return f"undecided: {'; '.join(parts)}"


@dataclass(frozen=True, eq=False)
class PIComparison:
    """The ranking of the variants on one PI, with each variant compared to the best.

    Attributes
    ----------
    name, unit : str
        The PI.
    direction : {"lower", "higher"}
        Which values are better.
    method : str
        How the samples were obtained (warm-up handling, merging, tests).
    ranking : Ranking
        Best first; each adjacent pair decided (separated / significant) or not.
    to_best : dict
        ``variant -> Comparison`` of that variant (A) against the best (B): the
        relative difference ``(A - best) / best`` with its Fieller CI, Welch's p,
        Mann–Whitney's p and the effect sizes.  Absent for the best variant and
        for variants that could not be analysed.
    samples_per_round : dict
        Raw samples one round of each variant contributed (turns Welch's extra
        samples into rounds).
    statistic : {"mean", "median"}
        What the ranking is on.  On the median the ranking is by the merged samples'
        medians, pairs are judged by Mann–Whitney, and each ``to_best`` comparison
        carries the Hodges–Lehmann shift (``Comparison.shift``) of the variant
        against the best.
    medians : dict
        ``variant -> MedianCI`` of the merged samples, on the median (else empty).
    """

    name: str
    unit: str
    direction: Direction
    method: str
    ranking: Ranking
    to_best: dict[str, Comparison]
    samples_per_round: dict[str, float]
    statistic: Statistic = "mean"
    medians: dict[str, MedianCI] = field(default_factory=dict)

    @property
    def best(self) -> str | None:
        """The best variant, or ``None`` when none could be analysed."""
        first = self.ranking.order[0]
        return first if first in self.ranking.variants else None


def compare_pi(
    name: str,
    unit: str,
    direction: Direction,
    samples: Mapping[str, npt.ArrayLike | SummaryStats],
    *,
    alpha: float = 0.01,
    confidence: float = 0.95,
    max_autocorrelation: float = 0.1,
    method: str = "subsession t-interval",
    samples_per_round: Mapping[str, float] | None = None,
    correct_residual: bool = True,
    independence_alpha: float | None = None,
    statistic: Statistic = "mean",
    plan: bool = True,
    sequential: bool = False,
) -> PIComparison:
    """Rank the variants on one PI and compare each with the best (pure).

    ``statistic="median"`` ranks on the merged samples' medians instead
    (:func:`assay.stats.compare_median.rank_by_median`: Mann–Whitney decides, the
    effect is the Hodges–Lehmann shift); the merging is the mean's.

    ``correct_residual`` is the study's ``stop.residual_correction``: widen each
    variant's interval and variance for the residual autocorrelation of its merged
    samples (:func:`assay.stats.compare.analyze_variant`), as ``assay run`` does;
    ``independence_alpha`` is its merging rule at small n (no merging while the lag-1
    autocorrelation is not significant at that level); ``plan=False`` leaves out the
    extra samples undecided pairs need, and ``sequential`` says the samples are asked
    after every cycle (both: :func:`~assay.stats.compare.rank_variants`).

    Examples
    --------
    >>> rng = np.random.default_rng(5)
    >>> c = compare_pi("t", "s", "lower", {"slow": rng.normal(1.2, 0.05, 40),
    ...                                    "fast": rng.normal(1.0, 0.05, 40)})
    >>> c.best, c.ranking.pairs[0].status, round(c.to_best["slow"].welch.relative, 1)
    ('fast', 'separated', 0.2)
    """
    ranking = rank_variants(
        samples,
        direction,
        alpha,
        confidence,
        max_autocorrelation,
        correct_residual=correct_residual,
        independence_alpha=independence_alpha,
        plan=plan,
        sequential=sequential,
    )
    if statistic not in STATISTICS:
        raise ValueError(f"statistic must be one of {', '.join(STATISTICS)}, got {statistic!r}")
    if statistic == "median":
        return _median_pi(name, unit, direction, ranking, method, samples_per_round)
    return PIComparison(
        name=name,
        unit=unit,
        direction=direction,
        method=method,
        ranking=ranking,
        to_best=_to_best(ranking, compare_variants),
        samples_per_round=dict(samples_per_round or {}),
    )


def _to_best(
    ranking: Ranking, compare: Callable[[VariantStats, VariantStats, float], Comparison]
) -> dict[str, Comparison]:
    """Every other analysed variant against the best, ``compare(variant, best,
    confidence)`` on the ranking's analyses (not a second merge of the same samples)."""
    best = ranking.variants.get(ranking.order[0])
    return {
        v: compare(ranking.variants[v], best, ranking.confidence)
        for v in ranking.order[1:]
        if best is not None and v in ranking.variants
    }


def _median_pi(
    name: str,
    unit: str,
    direction: Direction,
    by_mean: Ranking,
    method: str,
    samples_per_round: Mapping[str, float] | None,
) -> PIComparison:
    """:func:`compare_pi` on the median, from the ranking by mean (its merged samples)."""
    ranking = rank_by_median(by_mean)
    c = ranking.confidence
    medians = {
        k: median_interval(v.merged, c) for k, v in ranking.variants.items() if v.merged is not None
    }
    return PIComparison(
        name=name,
        unit=unit,
        direction=direction,
        method=method,
        ranking=ranking,
        to_best=_to_best(ranking, median_comparison),
        samples_per_round=dict(samples_per_round or {}),
        statistic="median",
        medians=medians,
    )
