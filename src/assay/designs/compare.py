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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from assay.designs.run_until_ci import Decision
from assay.stats.compare import (
    Comparison,
    Direction,
    PairDecision,
    Ranking,
    SummaryStats,
    compare_samples,
    rank_variants,
)

__all__ = [
    "CompareDecision",
    "PIComparison",
    "compare_decision",
    "compare_pi",
    "cycle_order",
    "interleaved_schedule",
    "undecided_text",
]


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
) -> CompareDecision:
    """Is the comparison done?  Pilot §III-F's stopping rule plus the budget.

    Done when every adjacent pair is separated or significant and, when CI
    width targets are used (``ci_targets_met`` is not ``None``), every CI is
    as narrow as asked; or when the budget (``max_rounds`` cycles or
    ``max_time`` seconds) is spent, in which case the reason names the
    undecided pairs and the rounds Welch's sample-size estimate asks for.

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
    >>> d.done, d.rounds_left, d.reason
    (True, 0, 'decided: every adjacent pair is CI-separated or Welch p < 0.01')
    """
    done_rounds = _check_nonneg_int(rounds_done, "rounds_done")
    undecided = ranking.undecided
    pairs = tuple((p.better, p.worse) for p in undecided)
    decided = not undecided
    rounds_left = 0 if decided else _rounds_for(ranking, samples_per_round)

    def make(done: bool, reason: str, left: int | None) -> CompareDecision:
        return CompareDecision(done, reason, left, decided=decided, undecided=pairs)

    if decided and ci_targets_met is not False:
        return make(
            True,
            f"decided: every adjacent pair is CI-separated or Welch p < {ranking.alpha:g}",
            0,
        )
    budget = None
    if max_rounds is not None and done_rounds >= max_rounds:
        budget = f"budget spent: {done_rounds} rounds (max_rounds)"
    elif max_time is not None and elapsed >= max_time:
        budget = f"budget spent: {elapsed:.0f} s (max_time)"
    if budget is None:
        if decided:
            return make(False, "ranking decided; waiting for the CI width targets", None)
        return make(False, "running", rounds_left)
    if decided:
        return make(True, f"{budget}; ranking decided but some CI width targets not met", None)
    more = "" if rounds_left is None else f"; about {rounds_left} more rounds needed"
    return make(True, f"{budget}; {undecided_text(ranking)}{more}", rounds_left)


def undecided_text(ranking: Ranking) -> str:
    """``undecided: A vs B (Welch asks for ...)``: the undecided pairs and what they need."""
    parts = []
    for p in ranking.undecided:
        if p.extra_better is None or p.extra_worse is None:
            parts.append(f"{_pair_text(p)} (no estimate: {p.note or 'not enough data'})")
        else:
            parts.append(
                f"{_pair_text(p)} (Welch asks for {p.extra_better} more samples of "
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
        Which means are better.
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
    """

    name: str
    unit: str
    direction: Direction
    method: str
    ranking: Ranking
    to_best: dict[str, Comparison]
    samples_per_round: dict[str, float]

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
) -> PIComparison:
    """Rank the variants on one PI and compare each with the best (pure).

    Examples
    --------
    >>> rng = np.random.default_rng(5)
    >>> c = compare_pi("t", "s", "lower", {"slow": rng.normal(1.2, 0.05, 40),
    ...                                    "fast": rng.normal(1.0, 0.05, 40)})
    >>> c.best, c.ranking.pairs[0].status, round(c.to_best["slow"].welch.relative, 1)
    ('fast', 'separated', 0.2)
    """
    ranking = rank_variants(samples, direction, alpha, confidence, max_autocorrelation)
    first = ranking.order[0]
    to_best: dict[str, Comparison] = {}
    if first in ranking.variants:
        for v in ranking.order[1:]:
            if v in ranking.variants:
                to_best[v] = compare_samples(
                    samples[v], samples[first], confidence, max_autocorrelation
                )
    return PIComparison(
        name=name,
        unit=unit,
        direction=direction,
        method=method,
        ranking=ranking,
        to_best=to_best,
        samples_per_round=dict(samples_per_round or {}),
    )
