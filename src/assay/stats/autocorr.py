"""Autocorrelation detection and subsession analysis (Pilot §III-D).

Confidence intervals built with the t-distribution assume independent samples.
Measurements of stateful systems are usually autocorrelated; *subsession
analysis* merges every ``q`` adjacent samples into their mean, which keeps the
mean but lowers the autocorrelation.  Pilot increases ``q`` until the lag-1
autocorrelation coefficient of the merged samples is within ``[-0.1, 0.1]``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import numpy.typing as npt
from numpy.typing import ArrayLike

from assay.stats._arrays import finite_1d as _finite_1d
from assay.stats._arrays import mean as _mean
from assay.stats._arrays import spread as _spread
from assay.stats.intervals import (
    MeanCI,
    _check_confidence,
    _z_quantile,
    harmonic_t_interval,
    residual_autocorrelation_factor,
    t_interval,
    widen,
)

__all__ = [
    "Subsession",
    "autocorrelation",
    "is_white_noise",
    "merge_subsessions",
    "optimal_subsession",
    "subsession_interval",
]

FloatArray = npt.NDArray[np.float64]

#: Every q in 1..EXHAUSTIVE_LIMIT is tried in order; larger q are searched
#: geometrically, then by a scan or bisection (see :func:`optimal_subsession`).
EXHAUSTIVE_LIMIT = 64

# Brackets (last failing, first qualifying checkpoint] up to this size are scanned
# linearly for the smallest qualifying q; larger ones are bisected.
_BRACKET_SCAN_LIMIT = 4096

# A fast (cumulative-sum) estimate of r1 within this distance of the threshold
# is recomputed exactly, so decisions agree with merge_subsessions + autocorrelation.
_RECHECK_TOLERANCE = 1e-6


def _check_int(value: int, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _nearly_constant(a: FloatArray) -> bool:
    """Spread at rounding level: autocorrelation would measure only floating-point noise."""
    ptp, top = _spread(a)
    return ptp <= 1e-12 * top


def _acf(a: FloatArray, lag: int) -> float:
    """Standard sample autocorrelation of a validated array (no checks)."""
    n = a.size
    if n < lag + 2:
        return math.nan
    if _nearly_constant(a):
        return 0.0
    d = a - _mean(a)
    den = float(np.dot(d, d))
    if den == 0.0:
        return 0.0
    num = float(np.dot(d[: n - lag], d[lag:]))
    return num / den


def autocorrelation(x: ArrayLike, lag: int = 1) -> float:
    """Sample autocorrelation coefficient at a given lag.

    ``R(lag) = sum_t (x_t - m)(x_{t+lag} - m) / sum_t (x_t - m)**2`` with ``m``
    the sample mean: the standard (biased, full-sample-denominator) estimator,
    identical to ``statsmodels.tsa.stattools.acf(x, fft=False)[lag]``.

    Parameters
    ----------
    x : array_like
        One-dimensional finite series.
    lag : int, default 1
        Non-negative lag.

    Returns
    -------
    float
        The coefficient in [-1, 1]; ``nan`` when there are fewer than
        ``lag + 2`` samples; ``0.0`` for a constant series (at any lag).

    Examples
    --------
    >>> autocorrelation([1.0, 2.0, 3.0, 4.0])
    0.25
    >>> autocorrelation([5.0, 5.0, 5.0])
    0.0
    """
    lag = _check_int(lag, "lag", 0)
    return _acf(_finite_1d(x), lag)


def merge_subsessions(x: ArrayLike, q: int) -> FloatArray:
    """Means of consecutive blocks of ``q`` samples.

    Parameters
    ----------
    x : array_like
        One-dimensional finite series.
    q : int
        Block (subsession) size, ``>= 1``.

    Returns
    -------
    numpy.ndarray
        ``len(x) // q`` block means; a trailing partial block is dropped.

    Examples
    --------
    >>> merge_subsessions([1.0, 3.0, 5.0, 7.0, 9.0], 2)
    array([2., 6.])
    """
    q = _check_int(q, "q", 1)
    a = _finite_1d(x)
    m = a.size // q
    return np.asarray(a[: m * q].reshape(m, q).mean(axis=1), dtype=np.float64)


@dataclass(frozen=True, eq=False)
class Subsession:
    """Result of a subsession analysis.

    Attributes
    ----------
    size : int
        The subsession size ``q`` (number of raw samples per merged sample).
    means : numpy.ndarray
        The merged samples (read-only).
    autocorrelation : float
        Lag-1 autocorrelation coefficient of ``means``.

    Notes
    -----
    Compared by identity (``eq=False``): arrays have no single truth value.

    Examples
    --------
    >>> s = Subsession(size=2, means=np.array([2.0, 6.0, 4.0]), autocorrelation=-0.5)
    >>> s.size, s.means.size
    (2, 3)
    """

    size: int
    means: FloatArray
    autocorrelation: float


class _FastR1:
    """Lag-1 autocorrelation of merged samples for any q in O(n/q), via a cumulative sum."""

    def __init__(self, a: FloatArray) -> None:
        self._a = a
        self._n = a.size
        # Demeaning keeps the cumulative sum small (a random walk rather than a
        # ramp), which keeps the block sums accurate.
        c = np.empty(a.size + 1, dtype=np.float64)
        c[0] = 0.0
        np.add.accumulate(a - _mean(a), out=c[1:])
        self._c = c

    def fast(self, q: int) -> float:
        m = self._n // q
        sums = self._c[q : m * q + 1 : q] - self._c[0 : (m - 1) * q + 1 : q]
        return _acf(sums, 1)  # scale-invariant: sums and means give the same r1

    def exact(self, q: int) -> float:
        m = self._n // q
        return _acf(self._a[: m * q].reshape(m, q).mean(axis=1), 1)

    def qualifies(self, q: int, limit: float) -> bool:
        r = self.fast(q)
        if math.isnan(r):
            return False
        if abs(abs(r) - limit) <= _RECHECK_TOLERANCE:
            r = self.exact(q)
        return abs(r) <= limit


def optimal_subsession(
    x: ArrayLike,
    max_autocorrelation: float = 0.1,
    min_subsessions: int = 2,
    *,
    exhaustive_limit: int = EXHAUSTIVE_LIMIT,
    independence_alpha: float | None = None,
) -> Subsession | None:
    """Smallest subsession size whose merged samples are (nearly) uncorrelated.

    Pilot §III-D: try ``q = 1, 2, 3, ...`` and stop at the first ``q`` with
    ``|r1(merge_subsessions(x, q))| <= max_autocorrelation`` and at least
    ``min_subsessions`` merged samples.  Because ``r1`` needs three values,
    at least three merged samples are always required.

    The search is **exact for** ``q <= exhaustive_limit`` (default 64): every
    such ``q`` is tried in order.  Beyond it, ``r1(q)`` is evaluated at
    ``q = 2 * exhaustive_limit, 4 * exhaustive_limit, ...`` (and at the largest
    admissible ``q``) until one qualifies.  Between the last failing checkpoint
    ``lo`` and the qualifying one ``hi`` the smallest qualifying ``q`` is then
    found by a linear scan when ``hi - lo <= 4096`` (every ``q`` up to 8192
    with the default limit), otherwise by bisection, which returns a ``q`` that
    qualifies while ``q - 1`` does not.  ``r1(q)`` is noisy rather than
    monotone, so above the exhaustive range the answer is the smallest
    qualifying ``q`` *above the last failing checkpoint*, not necessarily the
    global smallest (a ``q`` between two failing checkpoints can be missed);
    it is never smaller than the global smallest.  Merged means come from one
    cumulative sum, so each trial costs O(n/q): 10 million samples take well
    under a second.

    Parameters
    ----------
    x : array_like
        One-dimensional finite series.
    max_autocorrelation : float, default 0.1
        Largest acceptable ``|r1|`` (``>= 0``).
    min_subsessions : int, default 2
        Minimum number of merged samples (the effective minimum is 3).
    exhaustive_limit : int, default 64
        Largest ``q`` searched exhaustively; pass ``len(x)`` for a fully
        exhaustive (slow for long series) search.
    independence_alpha : float or None, default None
        When set, ``q = 1`` (no merging) also qualifies when the raw series' ``|r1|``
        is within white noise's two-sided ``1 - independence_alpha`` band,
        ``z / sqrt(n)`` (Bartlett): at small ``n`` the estimate of ``r1`` is too noisy
        to tell 0.1 from 0, and merging independent samples only throws samples away
        (on i.i.d. noise Pilot's rule merges at n = 30 in about half the cases). Such
        a series needs only 3 samples: ``min_subsessions`` then bounds merges.
        ``None`` is Pilot's rule as published.

    Returns
    -------
    Subsession or None
        ``None`` when no admissible ``q`` qualifies (including series with
        fewer than three samples).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> e = rng.standard_normal(20_000)
    >>> x = e + np.concatenate(([0.0], e[:-1]))  # MA(1): r1(q) = 1 / (4q - 2)
    >>> s = optimal_subsession(x)
    >>> s is not None and 3 <= s.size <= 5 and abs(s.autocorrelation) <= 0.1
    True
    """
    a = _finite_1d(x)
    limit = float(max_autocorrelation)
    if not (math.isfinite(limit) and limit >= 0.0):
        raise ValueError(
            f"max_autocorrelation must be finite and >= 0, got {max_autocorrelation!r}"
        )
    min_m = max(3, _check_int(min_subsessions, "min_subsessions", 1))
    exhaustive_limit = _check_int(exhaustive_limit, "exhaustive_limit", 1)
    n = a.size
    if independence_alpha is not None and n >= 3 and is_white_noise(a, independence_alpha):
        return _subsession(a, 1)  # at any n: min_subsessions bounds merging only
    q_max = n // min_m
    if q_max < 1:
        return None
    if _nearly_constant(a):
        return _subsession(a, 1)

    r1 = _FastR1(a)
    for q in range(1, min(exhaustive_limit, q_max) + 1):
        if r1.qualifies(q, limit):
            return _subsession(a, q)
    if q_max <= exhaustive_limit:
        return None

    lo = exhaustive_limit  # known to fail
    hi = None
    q = 2 * exhaustive_limit
    while hi is None:
        q = min(q, q_max)
        if r1.qualifies(q, limit):
            hi = q
        elif q == q_max:
            return None
        else:
            lo = q
            q *= 2
    if hi - lo <= _BRACKET_SCAN_LIMIT:
        q = next(q for q in range(lo + 1, hi + 1) if q == hi or r1.qualifies(q, limit))
        return _subsession(a, q)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if r1.qualifies(mid, limit):
            hi = mid
        else:
            lo = mid
    return _subsession(a, hi)


def is_white_noise(x: ArrayLike, alpha: float = 0.05) -> bool:
    """Is the lag-1 autocorrelation of ``x`` within white noise's two-sided 1 - alpha
    band, ``z_{1-alpha/2} / sqrt(n)`` (Bartlett)? False with fewer than 3 samples.

    >>> is_white_noise(np.random.default_rng(0).normal(size=100))
    True
    >>> is_white_noise(np.arange(100.0))
    False
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"independence_alpha must be in (0, 1), got {alpha!r}")
    a = _finite_1d(x)
    r = _acf(a, 1)
    return not math.isnan(r) and abs(r) <= _z_quantile(1.0 - alpha) / math.sqrt(a.size)


def _subsession(a: FloatArray, q: int) -> Subsession:
    m = a.size // q
    # (q = 1: the samples themselves, as the mean of one value is that value)
    means = np.array(a) if q == 1 else a[: m * q].reshape(m, q).mean(axis=1)
    means.setflags(write=False)
    return Subsession(size=q, means=means, autocorrelation=_acf(means, 1))


#: With ``small_sample``, the bound on phi takes ``z (1 + SMALL_SAMPLE_Z_SLOPE / sqrt(n))``
#: for ``z``: Bartlett's standard error and Marriott & Pope's bias are first-order, and
#: the 5% quantile of r1 under AR(1) 0.8 (simulated) bounds phi at 0.52 / 0.67 / 0.77
#: with z 1.645 itself at n = 12 / 20 / 50, at 0.80 / 0.82 / 0.82 with this (issue #37).
SMALL_SAMPLE_Z_SLOPE = 2.0

#: With ``unmerged_floor_below``, the phi of fewer unmerged samples: conditional on
#: passing ``|r1| <= 0.1``, 11 to 25 AR(1) 0.8 samples need a t-interval 4.9 to 5.5 times
#: as wide (simulated), which :func:`ar1_small_sample_factor` gives at 0.9 (4.9 at m = 12).
UNMERGED_PHI_FLOOR = 0.9


def subsession_interval(
    x: ArrayLike,
    confidence: float = 0.95,
    max_autocorrelation: float = 0.1,
    min_subsessions: int = 2,
    harmonic: bool = False,
    correct_residual: bool = False,
    independence_alpha: float | None = None,
    merged_bound_alpha: float | None = None,
    subsession: Subsession | None = None,
    unmerged_bound_alpha: float | None = None,
    unmerged_bound_below: int | None = None,
    unmerged_floor_below: int | None = None,
    small_sample: bool = False,
) -> tuple[MeanCI, Subsession] | None:
    """Confidence interval of the mean after subsession analysis.

    With ``correct_residual=True`` the interval is widened by
    :func:`~assay.stats.intervals.residual_autocorrelation_factor` of the merged
    samples' lag-1 autocorrelation, taken as the larger of the observed one and the one
    an AR(1) process with the raw series' lag-1 autocorrelation would give at this q
    (:func:`ar1_batch_autocorrelation`): the smallest q with ``|r1| <= 0.1`` is chosen
    on a noisy estimate, so the merged samples keep some positive correlation that
    Pilot's plain t-interval ignores (bench/RESULTS.md). ``False`` is Pilot's method as
    published.

    Finds the optimal subsession (:func:`optimal_subsession`) and computes a
    t-interval of the merged samples.

    With ``harmonic=True`` the samples are rates over equal work: the analysis
    is done on the reciprocals ``1/x`` (time per unit of work), whose block
    means are exactly the reciprocals of the block *harmonic* means.  The
    returned :class:`Subsession` then holds the block harmonic means (rates)
    in ``means`` and the lag-1 autocorrelation of the reciprocal block means
    (the quantity the search bounded) in ``autocorrelation``, and the interval
    is :func:`~assay.stats.intervals.harmonic_t_interval` of those means.

    Parameters
    ----------
    x : array_like
        One-dimensional finite series (strictly positive if ``harmonic``).
    confidence : float, default 0.95
        Confidence level in (0, 1).
    max_autocorrelation : float, default 0.1
        Largest acceptable ``|r1|`` of the merged samples.
    min_subsessions : int, default 2
        Minimum number of merged samples (effectively at least 3).
    harmonic : bool, default False
        Treat samples as rates and estimate their harmonic mean.
    independence_alpha : float or None, default None
        Passed to :func:`optimal_subsession`: no merging when the raw lag-1
        autocorrelation is not significant at this level.  With ``correct_residual``
        the AR(1) floor then takes the raw series' phi at its one-sided upper
        ``1 - independence_alpha`` bound (:func:`lag1_upper_bound`): a few readings of
        an AR(1) 0.8 series often pass for independent ones.
    merged_bound_alpha : float or None, default None
        With ``correct_residual``, once the samples were merged (q > 1: their
        autocorrelation showed) the AR(1) floor takes phi at its one-sided upper
        ``1 - merged_bound_alpha`` bound: the merge size is chosen on a noisy, low
        estimate (``assay run``: AR(1) 0.5 readings 89% -> 93% coverage; samples
        that need no merging keep the estimate, so i.i.d. ones cost nothing).
    subsession : Subsession or None, default None
        What :func:`optimal_subsession` gave on ``x`` with these arguments, when the
        caller searched already (not with ``harmonic``, which searches ``1/x``): the
        search is not made again.
    unmerged_bound_alpha : float or None, default None
        With ``correct_residual``, samples that need no merging (q = 1) take phi at its
        one-sided upper ``1 - unmerged_bound_alpha`` bound too, when there are fewer
        than ``unmerged_bound_below`` of them (``None``: at any n). Pilot's
        ``|r1| <= max_autocorrelation`` passes 27% of 12 AR(1) 0.5 readings and 11% of
        12 AR(1) 0.8 ones, and a study that may stop at any round stops on those
        (issue #37: 71% coverage at 11-14 rounds).
    unmerged_bound_below : int or None, default None
        See ``unmerged_bound_alpha``.
    unmerged_floor_below : int or None, default None
        With ``correct_residual``, fewer unmerged samples than this take phi at least at
        :data:`UNMERGED_PHI_FLOOR`: below ~30 samples, a bound that i.i.d. samples can
        live with does not cover the AR(1) 0.8 ones that pass the test, and a
        sequential study stops on just those. Such an interval is wide (4.9 times the
        t-interval at 12), not refused: quiet enough samples still meet a target.
    small_sample : bool, default False
        With ``correct_residual``: the bounds on phi take a larger ``z`` at small n
        (:data:`SMALL_SAMPLE_Z_SLOPE`), and the interval widens by
        :func:`ar1_small_sample_factor` at the number of merged samples rather than
        by the large-sample :func:`~assay.stats.intervals.residual_autocorrelation_factor`
        (the sample variance of few autocorrelated samples is biased low).

    Returns
    -------
    tuple of (MeanCI, Subsession) or None
        ``None`` when no subsession size brings the autocorrelation in range.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> res = subsession_interval(10.0 + rng.standard_normal(1000))
    >>> ci, sub = res
    >>> sub.size, ci.low < 10.0 < ci.high
    (1, True)
    """
    _check_confidence(confidence)
    if harmonic:
        a = _finite_1d(x)
        if not np.all(a > 0.0):
            raise ValueError("harmonic subsession_interval needs strictly positive samples (rates)")
        sub = optimal_subsession(
            1.0 / a, max_autocorrelation, min_subsessions, independence_alpha=independence_alpha
        )
        if sub is None:
            return None
        rates = np.ascontiguousarray(1.0 / sub.means, dtype=np.float64)
        rates.setflags(write=False)
        merged = Subsession(size=sub.size, means=rates, autocorrelation=sub.autocorrelation)
        ci = harmonic_t_interval(rates, confidence)
    else:
        sub = subsession
        if sub is None:
            sub = optimal_subsession(
                x, max_autocorrelation, min_subsessions, independence_alpha=independence_alpha
            )
        if sub is None:
            return None
        merged = sub
        ci = t_interval(sub.means, confidence)
    if correct_residual:
        raw = 1.0 / _finite_1d(x) if harmonic else _finite_1d(x)
        phi = unbiased_lag1(autocorrelation(raw), raw.size)
        bound = independence_alpha  # not significant is not independent
        if bound is None and merged.size > 1:
            bound = merged_bound_alpha
        elif bound is None and (unmerged_bound_below is None or raw.size < unmerged_bound_below):
            bound = unmerged_bound_alpha  # looking independent at small n is not being so
        if bound is not None:
            z = NormalDist().inv_cdf(1.0 - bound)
            if small_sample:
                z *= 1.0 + SMALL_SAMPLE_Z_SLOPE / math.sqrt(max(raw.size, 1))
            phi = lag1_upper_bound(phi, raw.size, z)
        few = unmerged_floor_below is not None and raw.size < unmerged_floor_below
        if merged.size == 1 and few:
            phi = max(phi, UNMERGED_PHI_FLOOR)
        r = max(merged.autocorrelation, ar1_batch_autocorrelation(phi, merged.size))
        if small_sample:
            ci = widen(ci, ar1_small_sample_factor(r, merged.means.size))
        else:
            ci = widen(ci, residual_autocorrelation_factor(r))
    return ci, merged


def unbiased_lag1(r1: float, n: int) -> float:
    """The lag-1 autocorrelation ``r1`` of ``n`` samples corrected for its bias.

    With the mean estimated, ``E[r1] ~ phi - (1 + 4 phi) / n`` for an AR(1) process
    (Marriott & Pope 1954; Kendall 1954): at n = 10 a phi of 0.8 reads about 0.38,
    and the correction floors that at small n, where an underestimate matters most.

    >>> round(unbiased_lag1(0.38, 10), 2)
    0.63
    >>> unbiased_lag1(float("nan"), 10)
    0.0
    """
    if not math.isfinite(r1) or n < 3:
        return 0.0
    return min(0.99, r1 + (1.0 + 4.0 * r1) / n)


#: The largest lag-1 autocorrelation :func:`lag1_upper_bound` gives: the variance of a
#: mean grows by (1 + phi) / (1 - phi), 39 here; beyond it no few samples decide anything.
LAG1_BOUND_CAP = 0.95


def lag1_upper_bound(phi: float, n: int, z: float) -> float:
    """An upper bound on an AR(1) series' lag-1 autocorrelation from ``n`` samples.

    ``phi`` (bias-corrected, :func:`unbiased_lag1`; 0 if negative) plus ``z`` of its
    standard errors, ``sqrt((1 - phi**2) / n)`` (Bartlett's for an AR(1)), at most
    :data:`LAG1_BOUND_CAP`: at small n an AR(1) 0.8 series often reads as independent,
    and a rule that may stop at any cycle must not take it so.

    >>> round(lag1_upper_bound(0.0, 16, 1.0), 2)
    0.25
    >>> round(lag1_upper_bound(0.6, 100, 2.0), 2)
    0.76
    >>> lag1_upper_bound(0.9, 4, 2.0)
    0.95
    """
    if n < 3 or not math.isfinite(phi):
        return LAG1_BOUND_CAP
    p = min(max(phi, 0.0), 1.0)
    return min(LAG1_BOUND_CAP, p + z * math.sqrt((1.0 - p * p) / n))


def ar1_batch_autocorrelation(phi: float, q: int) -> float:
    """Lag-1 autocorrelation of the means of blocks of q samples of an AR(1) process.

    r1(q) = phi (1 - phi^q)^2 / (q (1 - phi^2) - 2 phi (1 - phi^q)); 0 for phi <= 0.
    Used as a floor for the merged samples' observed r1, which is noisy and, having been
    chosen as the first to pass the threshold, biased low.

    >>> round(ar1_batch_autocorrelation(0.9, 57), 4)
    0.0991
    """
    if not math.isfinite(phi) or phi <= 0.0:
        return 0.0
    p = min(phi, 0.999)
    pq = p**q
    return p * (1 - pq) ** 2 / (q * (1 - p * p) - 2 * p * (1 - pq))


def ar1_small_sample_factor(phi: float, m: int) -> float:
    """How much the t-interval of ``m`` samples of an AR(1) process with lag-1
    autocorrelation ``phi`` must widen to cover its mean, at this ``m``.

    The variance of the mean is ``f sigma**2 / m`` with ``f = (1 + phi) / (1 - phi) -
    2 phi (1 - phi**m) / (m (1 - phi)**2)``, and the sample variance is biased low,
    ``E[s**2] = sigma**2 (m - f) / (m - 1)``: the factor is ``sqrt(f (m - 1) / (m -
    f))`` (``m - f`` at least 1), which tends to
    :func:`~assay.stats.intervals.residual_autocorrelation_factor`'s ``sqrt((1 + phi) /
    (1 - phi))`` as m grows; 1 for phi <= 0.

    >>> round(ar1_small_sample_factor(0.5, 12), 2), round(ar1_small_sample_factor(0.5, 10**6), 2)
    (1.77, 1.73)
    >>> round(ar1_small_sample_factor(0.8, 12), 2)
    3.26
    >>> ar1_small_sample_factor(-0.2, 12)
    1.0
    """
    if not math.isfinite(phi) or phi <= 0.0 or m < 2:
        return 1.0
    p = min(phi, 0.99)
    f = (1.0 + p) / (1.0 - p) - 2.0 * p * (1.0 - p**m) / (m * (1.0 - p) ** 2)
    return math.sqrt(f * (m - 1) / max(m - f, 1.0))
