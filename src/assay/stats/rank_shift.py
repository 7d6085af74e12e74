"""Rank statistics for heavy tails: the Hodges–Lehmann shift, its Moses interval, Mann–Whitney.

A mean has little power when a few readings are far out (a lognormal's mean moves
with its tail); ranks do not care how far out they are.  For two samples the
Hodges–Lehmann estimate of the location shift is the median of all pairwise
differences ``a_i - b_j``; its distribution-free confidence interval (Moses; Hollander
& Wolfe, *Nonparametric Statistical Methods*, §4.3) is the set of shifts ``d`` that
the Mann–Whitney test of ``a - d`` against ``b`` does not reject, which lies between
two order statistics of the same differences.  Here that interval is found by
inverting :func:`scipy.stats.mannwhitneyu` itself (exact null distribution for small
samples without ties, the normal approximation with tie and continuity correction
otherwise; its ``method="auto"``), so the interval excludes 0 exactly when the test
rejects, up to the shifts where a difference is itself 0.  With the exact
distribution the bounds are R's ``wilcox.test(a, b, conf.int = TRUE)``; where no
order statistic reaches the confidence (tiny samples) the bound is infinite, where R
gives the extreme difference.

All functions are pure: arrays in, frozen dataclasses out.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from numpy.typing import ArrayLike

from assay.stats._arrays import finite_1d
from assay.stats.intervals import _check_confidence
from assay.stats.mann_whitney import mann_whitney_method, mann_whitney_p

__all__ = [
    "MAX_REQUIRED_N",
    "MedianCI",
    "RankShift",
    "median_interval",
    "noether_required_n",
    "rank_shift",
]

FloatArray = npt.NDArray[np.float64]

#: Largest per-group sample size :func:`noether_required_n` returns.
MAX_REQUIRED_N = 10**12


@dataclass(frozen=True)
class RankShift:
    """The Hodges–Lehmann shift of ``A`` against ``B`` and the Mann–Whitney test.

    Attributes
    ----------
    shift : float
        Median of all pairwise differences ``a_i - b_j`` (``A - B``: positive when A
        lies higher).
    low, high : float
        Distribution-free confidence interval of the shift (``-inf``/``inf`` when no
        order statistic reaches the confidence).
    p_value : float
        Two-sided Mann–Whitney p-value of ``A`` against ``B``.
    u : float
        Mann–Whitney U of A: pairs with ``a_i > b_j``, ties counting one half.
    superiority : float
        ``u / (n_a n_b)``, the estimated ``P(A > B) + P(A = B) / 2`` (0.5: no shift).
    baseline_median : float
        Median of B, the reference of the relative shift.
    relative, rel_low, rel_high : float
        ``shift``, ``low`` and ``high`` divided by ``|baseline_median|`` (``nan``
        when it is 0).  The baseline's median is taken as known: its own
        uncertainty is not in this interval.
    confidence : float
        Confidence level of the interval.
    n_a, n_b : int
        Sample sizes.
    method : {"exact", "asymptotic"}
        The Mann–Whitney distribution behind the p-value and the interval.
    """

    shift: float
    low: float
    high: float
    p_value: float
    u: float
    superiority: float
    baseline_median: float
    relative: float
    rel_low: float
    rel_high: float
    confidence: float
    n_a: int
    n_b: int
    method: str


def _mwu_ps(a: FloatArray, b: FloatArray, shifts: FloatArray) -> FloatArray:
    """Two-sided Mann–Whitney p of ``a - d`` against ``b`` for every ``d`` in ``shifts``
    (one vectorized call: scipy tests each row)."""
    from scipy import stats

    rows = a[None, :] - shifts[:, None]
    got = stats.mannwhitneyu(rows, np.broadcast_to(b, (shifts.size, b.size)), axis=1)
    return np.asarray(got.pvalue, dtype=np.float64)


def _method(a: FloatArray, b: FloatArray) -> str:
    both = np.concatenate((a, b))
    return mann_whitney_method(a.size, b.size, ties=np.unique(both).size < both.size)


def rank_shift(a: ArrayLike, b: ArrayLike, confidence: float = 0.95) -> RankShift:
    """Hodges–Lehmann shift of ``a`` against ``b``, its Moses interval and Mann–Whitney's p.

    The interval is ``{d : p(a - d, b) >= 1 - confidence}``, ``p`` the two-sided
    :func:`scipy.stats.mannwhitneyu` p-value.  ``p(a - d, b)`` is constant between
    consecutive distinct pairwise differences and rises, then falls, as ``d`` grows, so
    the bounds are pairwise differences, found by bisection over those gaps (each
    tested at its midpoint; about ``2 log2(n_a n_b)`` tests).

    Parameters
    ----------
    a, b : array_like
        Finite 1-D samples, at least one value each (``b`` is the baseline).
    confidence : float, default 0.95
        Confidence level of the interval.

    Returns
    -------
    RankShift

    Examples
    --------
    Hollander & Wolfe's chicken data (R: 0.5600562, [-0.3699774, 1.1829708]):

    >>> r = rank_shift([1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30],
    ...                [0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29])
    >>> round(r.shift, 3), round(r.low, 3), round(r.high, 3), r.method
    (0.56, -0.37, 1.183, 'asymptotic')
    """
    c = _check_confidence(confidence)
    x = finite_1d(a)
    y = finite_1d(b)
    if x.size == 0 or y.size == 0:
        raise ValueError("rank_shift needs at least one value in each sample")
    diffs = np.sort(np.subtract.outer(x, y).ravel())
    mid = diffs.size // 2  # the median of the sorted differences, without sorting again
    shift = float(diffs[mid]) if diffs.size % 2 else 0.5 * float(diffs[mid - 1] + diffs[mid])
    cuts = diffs[np.concatenate(([True], diffs[1:] != diffs[:-1]))]  # np.unique, sorted
    p, u = mann_whitney_p(x, y)  # scipy's method="auto"
    low, high = _moses_bounds(x, y, cuts, shift, 1.0 - c)
    mb = float(np.median(y))
    scale = abs(mb)

    def rel(v: float) -> float:
        return v / scale if scale > 0.0 else math.nan

    return RankShift(
        shift=shift,
        low=low,
        high=high,
        p_value=p,
        u=u,
        superiority=u / (x.size * y.size),
        baseline_median=mb,
        relative=rel(shift),
        rel_low=rel(low),
        rel_high=rel(high),
        confidence=c,
        n_a=int(x.size),
        n_b=int(y.size),
        method=_method(x, y),
    )


def _moses_bounds(
    x: FloatArray, y: FloatArray, cuts: FloatArray, shift: float, alpha: float
) -> tuple[float, float]:
    """The shifts the Mann–Whitney test at ``alpha`` accepts, as ``(low, high)``.

    Gap ``g`` (0..K) is the open interval between ``cuts[g - 1]`` and ``cuts[g]``
    (``-inf``/``inf`` at the ends); a shift inside it gives one p-value.  Acceptance
    is monotone on each side of the estimate, so each bound is found by testing up to
    :data:`_BATCH` evenly spread gaps at once and narrowing to the bracket that
    changes (three rounds for 10**5 gaps).
    """
    k = cuts.size
    if np.ptp(np.concatenate((x, y))) == 0.0:
        return 0.0, 0.0  # every value equal: no shift is compatible but 0

    def points(gaps: npt.NDArray[np.int64]) -> FloatArray:
        lo = float(cuts[0]) - 1.0 - abs(float(cuts[0]))
        hi = float(cuts[-1]) + 1.0 + abs(float(cuts[-1]))
        left = np.where(gaps == 0, lo, cuts[np.clip(gaps - 1, 0, k - 1)])
        right = np.where(gaps == k, hi, cuts[np.clip(gaps, 0, k - 1)])
        return np.asarray(0.5 * (left + right), dtype=np.float64)

    def accepted(gaps: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
        return np.asarray(_mwu_ps(x, y, points(gaps)) >= alpha)

    # the gaps on either side of the estimate (it may be a cut itself)
    near = np.unique(np.clip(np.searchsorted(cuts, shift, side="left") + np.arange(2), 0, k))
    ok = near[accepted(near)]
    if ok.size == 0:
        # ties can leave the estimate the only shift accepted (its own differences tie)
        only = _mwu_ps(x, y, np.array([shift]))[0] >= alpha
        return (shift, shift) if only else (math.nan, math.nan)
    first = _edge(accepted, 0, int(ok[0]), want_first=True)
    last = _edge(accepted, int(ok[-1]), k, want_first=False)
    low = -math.inf if first == 0 else float(cuts[first - 1])
    high = math.inf if last == k else float(cuts[last])
    return low, high


#: Gaps tested per vectorized Mann–Whitney call in the interval search.
_BATCH = 48


def _edge(
    accepted: Callable[[npt.NDArray[np.int64]], npt.NDArray[np.bool_]],
    lo: int,
    hi: int,
    *,
    want_first: bool,
) -> int:
    """The first (or last) accepted gap in ``[lo, hi]``, acceptance being monotone there
    and ``hi`` (or ``lo``) known to be accepted."""
    while hi > lo:
        grid = np.unique(np.linspace(lo, hi, min(_BATCH, hi - lo + 1)).round().astype(np.int64))
        ok = accepted(grid)
        if want_first:
            i = int(np.argmax(ok))  # the first accepted point of the grid
            if i == 0:
                return int(grid[0])
            lo, hi = int(grid[i - 1]) + 1, int(grid[i])
        else:
            i = int(grid.size - 1 - np.argmax(ok[::-1]))  # the last accepted point
            if i == grid.size - 1:
                return int(grid[-1])
            lo, hi = int(grid[i]), int(grid[i + 1]) - 1
    return lo


def noether_required_n(superiority: float, alpha: float = 0.01, power: float = 0.8) -> int:
    """Per-group sample size for a two-sided Mann–Whitney test to detect ``P(A > B)``.

    Noether's formula (JASA 82, 1987) with equal groups:
    ``n = (z_{1-alpha/2} + z_power)**2 / (6 (p - 1/2)**2)`` per group.  The observed
    ``p`` is a noisy estimate of the true one: a planning figure, not a guarantee.

    Raises
    ------
    ValueError
        When ``p == 1/2`` (no shift to detect), the answer exceeds ``10**12`` or an
        argument is out of range.

    Examples
    --------
    >>> noether_required_n(0.7, alpha=0.05, power=0.8)
    33
    """
    from scipy import stats

    p = float(superiority)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"superiority must be in [0, 1], got {superiority!r}")
    if not 0.0 < alpha < 1.0 or not 0.0 < power < 1.0:
        raise ValueError(f"alpha and power must be in (0, 1), got {alpha!r}, {power!r}")
    if p == 0.5:
        raise ValueError("the samples interleave evenly: no sample size detects no shift")
    z = float(stats.norm.isf(alpha / 2.0) + stats.norm.ppf(power))
    n = z * z / (6.0 * (p - 0.5) ** 2)
    if n > MAX_REQUIRED_N:
        raise ValueError(f"more than {MAX_REQUIRED_N} samples per group would be needed")
    return max(2, math.ceil(n))


@dataclass(frozen=True)
class MedianCI:
    """A median with its distribution-free (order-statistic) interval."""

    median: float
    low: float
    high: float
    confidence: float
    n: int


def median_interval(x: ArrayLike, confidence: float = 0.95) -> MedianCI:
    """The median and the order-statistic interval of ``scipy.stats.quantile_test``
    (binomial coverage at least ``confidence``; infinite bounds when too few values).

    Examples
    --------
    >>> m = median_interval(range(1, 21))
    >>> m.median, m.low, m.high
    (10.5, 6.0, 15.0)
    """
    from scipy import stats

    c = _check_confidence(confidence)
    v = finite_1d(x)
    if v.size == 0:
        raise ValueError("median_interval needs at least one value")
    med = float(np.median(v))
    ci = stats.quantile_test(v, q=med, p=0.5).confidence_interval(c)
    low, high = float(ci.low), float(ci.high)
    return MedianCI(
        median=med,
        low=low if math.isfinite(low) else -math.inf,
        high=high if math.isfinite(high) else math.inf,
        confidence=c,
        n=int(v.size),
    )
