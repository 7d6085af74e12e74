"""Ranking variants on the median (``statistic = "median"``): ranks instead of means.

For heavy-tailed readings a mean, and so Welch's test, has little power (a lognormal
mean moves with its tail).  Here the variants are ranked by the median of their
merged samples, each adjacent pair is judged by the two-sided Mann–Whitney test,
and the effect reported is the Hodges–Lehmann shift with its distribution-free
interval (:func:`assay.stats.rank_shift.rank_shift`).  The samples are the same
subsession means the mean's comparison uses (:func:`assay.stats.compare.analyze_variant`):
merging until ``|r1| <= 0.1`` is what lets autocorrelated readings be tested as if
independent, and rank tests need independence as much as Welch's does.  The shift is
therefore the shift of the subsession means' distribution; under a pure location shift
of the readings it is the same shift.

All functions are pure.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np

from assay.stats.compare import (
    Comparison,
    PairDecision,
    Ranking,
    VariantStats,
    _check_alpha,
    compare_variants,
    rejudged,
    undecided_for,
)
from assay.stats.rank_shift import noether_required_n, rank_shift

__all__ = ["median_at_level", "median_comparison", "rank_by_median"]

#: Why a variant known only by its summary cannot be ranked on the median.
NO_SAMPLES = "a summary (mean and variance) has no samples to take a median of"


def median_comparison(a: VariantStats, b: VariantStats, confidence: float) -> Comparison:
    """:func:`~assay.stats.compare.compare_variants` plus the Hodges–Lehmann shift of
    ``a`` against ``b`` on their merged samples (``ValueError`` for a summary)."""
    if a.merged is None or b.merged is None:
        raise ValueError(NO_SAMPLES)
    comp = compare_variants(a, b, confidence)
    return replace(comp, shift=rank_shift(a.merged, b.merged, confidence))


def rank_by_median(ranking: Ranking, power: float = 0.8) -> Ranking:
    """The variants of ``ranking`` ranked by their merged samples' medians, each adjacent
    pair judged by Mann–Whitney at ``ranking.alpha`` (:func:`median_at_level`).

    Ties keep the order in which the variants were given; variants that could not be
    analysed, or that are summaries, rank last with their reason in ``problems``.

    Examples
    --------
    >>> import numpy as np
    >>> from assay.stats.compare import rank_variants
    >>> rng = np.random.default_rng(1)
    >>> r = rank_by_median(rank_variants({"a": rng.lognormal(0.3, 1, 200),
    ...                                   "b": rng.lognormal(0.0, 1, 200)}))
    >>> r.order, r.pairs[0].status, round(r.pairs[0].comparison.shift.relative, 1)
    (('b', 'a'), 'significant', -0.2)
    """
    problems = dict(ranking.problems)
    variants: dict[str, VariantStats] = {}
    for name, v in ranking.variants.items():
        if v.merged is None:
            problems[name] = NO_SAMPLES
        else:
            variants[name] = v
    sign = 1.0 if ranking.direction == "lower" else -1.0
    medians = {k: float(np.median(v.merged)) for k, v in variants.items() if v.merged is not None}
    ranked = sorted(variants, key=lambda k: sign * medians[k])
    order = (*ranked, *(k for k in ranking.order if k in problems))
    pairs: list[PairDecision] = []
    for better, worse in itertools.pairwise(order):
        bad = next((k for k in (better, worse) if k in problems), None)
        if bad is not None:
            note = f"{bad}: {problems[bad]}"
            pairs.append(PairDecision(better, worse, "undecided", None, None, None, note))
            continue
        comp = median_comparison(variants[better], variants[worse], ranking.confidence)
        pairs.append(PairDecision(better, worse, "undecided", comp))
    unjudged = Ranking(
        order=order,
        variants=variants,
        pairs=tuple(pairs),
        direction=ranking.direction,
        alpha=ranking.alpha,
        confidence=ranking.confidence,
        problems=problems,
    )
    return median_at_level(unjudged, ranking.alpha, power)


def median_at_level(ranking: Ranking, alpha: float, power: float = 0.8) -> Ranking:
    """The same ranking with every adjacent pair judged by Mann–Whitney's p < ``alpha``.

    The counterpart of :func:`assay.stats.compare.ranking_at_level` for a ranking from
    :func:`rank_by_median`: a pair is ``significant`` when its two-sided Mann–Whitney
    p is below ``alpha``, else ``undecided`` with the extra raw samples each side
    needs by Noether's formula for the observed ``P(A > B)`` at ``alpha`` and
    ``power`` (:func:`assay.stats.rank_shift.noether_required_n`).

    Examples
    --------
    >>> import numpy as np
    >>> from assay.stats.compare import rank_variants
    >>> rng = np.random.default_rng(1)
    >>> r = rank_by_median(rank_variants({"a": rng.lognormal(0.3, 1, 200),
    ...                                   "b": rng.lognormal(0.0, 1, 200)}))
    >>> median_at_level(r, 1e-9).decided
    False
    """
    a = _check_alpha(alpha)

    def judge(p: PairDecision, comp: Comparison) -> PairDecision:
        if comp.shift is None:
            return p
        if comp.shift.p_value < a:
            return PairDecision(p.better, p.worse, "significant", comp)
        try:
            need = noether_required_n(comp.shift.superiority, a, power)
        except ValueError as exc:
            return PairDecision(p.better, p.worse, "undecided", comp, None, None, str(exc))
        return undecided_for(p, comp, need - comp.a.n, need - comp.b.n)

    return rejudged(ranking, a, judge)
