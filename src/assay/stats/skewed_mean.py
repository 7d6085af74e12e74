"""Confidence intervals for the mean of skewed samples.

The Student-t interval of a right-skewed distribution's mean is too short on the
right: its studentized mean is skewed to the left, so the interval misses high more
often than low (a lognormal with sigma 1 needs ~1000 samples before it covers).
:func:`hall_interval` corrects for the sample skewness with Hall's transformation
(P. Hall, "On the removal of skewness by transformation", JRSS B 54(1), 1992, 221-228,
in the form of X.-H. Zhou and P. Dinh, "Nonparametric confidence intervals for the
one- and two-sample problems", Biostatistics 6(2), 2005, 187-200): a monotone cubic of
the studentized mean whose Edgeworth expansion has no skewness term, inverted in
closed form. Symmetric samples give the t-interval back.

All functions are pure.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from assay.stats._arrays import all_positive, finite_1d, mean, spread, std, var
from assay.stats.intervals import MeanCI, _check_confidence, _t_quantile, t_interval

__all__ = [
    "cox_hull",
    "cox_interval",
    "hall_interval",
    "hall_max_skewness",
    "log_normal_hull",
    "lognormal_skewness",
    "looks_log_normal",
    "sample_skewness",
    "skewness_se",
    "tail_skewness",
]


def sample_skewness(samples: ArrayLike) -> float:
    """The adjusted Fisher-Pearson skewness ``G1 = n^2 m3 / ((n-1)(n-2) s^3)``.

    0 for fewer than 3 samples or constant ones (there is no skew to correct).

    >>> round(sample_skewness([1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 10.0]), 4)
    3.1623
    >>> sample_skewness([1.0, 2.0, 3.0])
    0.0
    """
    x = finite_1d(samples)
    n = int(x.size)
    if n < 3:
        return 0.0
    # scaled by a power of two below 1 first: readings near 1e308 would overflow x - mean
    ptp, top = spread(x)
    if ptp == 0.0:  # constant (their std would be the mean's rounding error, not 0)
        return 0.0
    y = np.ldexp(x, -math.frexp(top)[1]) if top > 0.0 else x
    s = std(y, ddof=1)
    if not s > 0.0:
        return 0.0
    z = (y - mean(y)) / s
    return float(n * np.add.reduce(z**3) / ((n - 1) * (n - 2)))


def _hall_inverse(t: float, g: float, n: int) -> float:
    """W with T(W) = t, for Hall's T(W) = W + g W^2/3 + g^2 W^3/27 + g/(6n)."""
    u = t - g / (6.0 * n)
    if abs(g) < 1e-12:
        return u
    # T(W) = ((1 + g W / 3)^3 - 1) / g + g / (6n): a cube, monotone in W
    return 3.0 * (float(np.cbrt(1.0 + g * u)) - 1.0) / g


def hall_max_skewness(n: int, q: float) -> float:
    """The largest |skewness| :func:`hall_interval` corrects for at ``n`` samples and
    ``q`` = quantile / sqrt(n): where the far bound reaches T's stationary point
    ``1 + g W / 3 = 0``, ``3 n (sqrt(q^2 + 2 / (3n)) - q)``.

    Past it the far bound would come back towards the mean (as g grows the cube root
    flattens the correction; at ``g -> inf`` both bounds shrink to the mean), so a larger
    skewness is treated as this one: the far side is then ``3 s / g`` long, about 3
    times the t-interval's.

    >>> round(hall_max_skewness(200, 1.971957 / math.sqrt(200)), 2)
    6.89
    """
    return 3.0 * n * (math.sqrt(q * q + 2.0 / (3.0 * n)) - q)


def lognormal_skewness(samples: ArrayLike) -> float:
    """The skewness of the lognormal fitted to positive samples: with ``v`` the variance
    of their logs, ``(e^v + 2) sqrt(e^v - 1)``; nan when a sample is not positive.

    It rests on the spread of the logs, which a few far readings sway little, where the
    sample skewness of a heavy right tail is far below the truth at moderate n (a
    lognormal with sigma 1 has skewness 6.18; 200 samples typically read 3 to 4).

    >>> round(lognormal_skewness([math.exp(-1.0), 1.0, math.exp(1.0)]), 3)
    6.185
    """
    x = finite_1d(samples)
    if x.size < 2 or not all_positive(x):
        return math.nan
    v = var(np.log(x), ddof=1)
    return (math.exp(v) + 2.0) * math.sqrt(math.expm1(v)) if v < 700.0 else math.inf


def skewness_se(n: int) -> float:
    """The standard error of :func:`sample_skewness` for ``n`` normal samples,
    ``sqrt(6 n (n - 1) / ((n - 2) (n + 1) (n + 3)))``; inf below 3 samples.

    >>> round(skewness_se(10), 4)
    0.687
    """
    if n < 3:
        return math.inf
    return math.sqrt(6.0 * n * (n - 1) / ((n - 2) * (n + 1) * (n + 3)))


#: Normal quantile a sample skewness must pass (two-sided 5%) before it is corrected for.
SKEW_Z = 1.96


def tail_skewness(samples: ArrayLike, effective_n: int | None = None) -> float:
    """The skewness :func:`hall_interval` corrects for in ``assay run``: 0 unless the
    sample skewness is significant (beyond ``SKEW_Z`` standard errors of a normal
    sample's, :func:`skewness_se`), else the sample skewness, or for right-skewed
    positive samples the larger of it and :func:`lognormal_skewness`.

    Significance first: at a few dozen merged samples a symmetric PI's skewness reads
    +-0.5 by chance, and correcting for that noise cost coverage (bench/RESULTS.md,
    #21: AR(1) readings 93% -> 87%). The lognormal floor then, because the sample
    skewness alone corrects too little exactly where it matters: a sequential study
    stops when the interval first looks narrow enough, which happens on samples that
    missed the tail, so with a small sample skewness too (lognormal sigma 1 readings
    covered 92% with it, 94.5% with the floor). Left-skewed or non-positive samples keep
    their sample skewness. ``effective_n`` replaces the number of samples in the
    significance test (autocorrelated samples, whose skewness varies more by chance: the
    number of merged samples they make).

    >>> x = [math.exp(-1.0), 1.0, math.exp(1.0), 1.0, 1.0, 1.0]
    >>> round(sample_skewness(x), 3), round(tail_skewness(x), 3)
    (1.838, 2.449)
    >>> tail_skewness([1.0, 2.0, 3.0, 4.0, 10.0])
    0.0
    """
    x = finite_1d(samples)
    g = sample_skewness(x)
    if abs(g) <= SKEW_Z * skewness_se(int(x.size) if effective_n is None else effective_n):
        return 0.0
    if g < 0.0:
        return g
    floor = lognormal_skewness(x)
    return max(g, floor) if math.isfinite(floor) else g


def hall_interval(
    samples: ArrayLike, confidence: float = 0.95, skewness: float | None = None
) -> MeanCI:
    """Hall's (1992) skewness-corrected interval for the mean of i.i.d. samples.

    With ``W = (mean - mu) / s`` and ``g`` the sample skewness
    (:func:`sample_skewness`; ``skewness`` replaces it, e.g. :func:`tail_skewness`),
    ``T(W) = W + g W^2 / 3 + g^2 W^3 / 27 + g / (6n)`` has
    ``sqrt(n) T`` close to N(0, 1) up to O(1/n); inverting it at ``±q / sqrt(n)``
    (``q`` Student's quantile on n - 1 degrees of freedom, so that ``g = 0`` gives the
    t-interval exactly) gives
    ``[mean - T^-1(q / sqrt(n)) s, mean - T^-1(-q / sqrt(n)) s]``, longer on the side
    of the tail. ``half_width`` is half the length; ``lower``/``upper`` hold the bounds.
    ``|g|`` is capped at :func:`hall_max_skewness`, beyond which the transformation
    would narrow the interval again.

    >>> ci = hall_interval([1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 10.0])
    >>> round(ci.low, 3), round(ci.mean, 3), round(ci.high, 3)
    (0.344, 1.9, 8.201)
    """
    c = _check_confidence(confidence)
    x = finite_1d(samples)
    if x.size == 0:
        raise ValueError("hall_interval needs at least one sample, got an empty array")
    plain = t_interval(x, c)  # also what a single or overflowing sample gets
    if not math.isfinite(plain.half_width):
        return plain
    mean, std, n = plain.mean, plain.std, plain.n
    q = _t_quantile(c, n - 1) / math.sqrt(n)
    g = sample_skewness(x) if skewness is None else float(skewness)
    top = hall_max_skewness(n, q)
    g = min(max(g, -top), top)  # nan (no skewness known) stays nan: no interval
    if not math.isfinite(g):
        return MeanCI(mean=mean, half_width=math.inf, n=n, std=std, confidence=c)
    low = mean - _hall_inverse(q, g, n) * std
    high = mean - _hall_inverse(-q, g, n) * std
    return MeanCI(
        mean=mean,
        half_width=(high - low) / 2.0,
        n=n,
        std=std,
        confidence=c,
        lower=low,
        upper=high,
    )


def looks_log_normal(samples: ArrayLike) -> bool:
    """Whether positive samples are consistent with a log-normal: right-skewed beyond
    chance (:data:`SKEW_Z` standard errors, :func:`skewness_se`) while their logs are
    not skewed beyond chance either way.

    An exponential or gamma sample is right-skewed too, but its logs are skewed to the
    left (a log-normal fitted to it would overstate its spread twice over); a sample with
    a non-positive value has no logs.

    >>> rng = np.random.default_rng(1)
    >>> looks_log_normal(rng.lognormal(0.0, 1.0, 200)), looks_log_normal(rng.exponential(1.0, 200))
    (True, False)
    >>> looks_log_normal(rng.normal(10.0, 1.0, 200))
    False
    """
    x = finite_1d(samples)
    n = int(x.size)
    if n < 3 or not all_positive(x):
        return False
    se = skewness_se(n)
    return sample_skewness(x) > SKEW_Z * se and abs(sample_skewness(np.log(x))) <= SKEW_Z * se


def log_normal_hull(ci: MeanCI, samples: ArrayLike, widen_by: float = 1.0) -> MeanCI:
    """``ci`` (an interval of the samples' mean) stretched to also hold Cox's
    (:func:`cox_interval`, its log-scale error scaled by ``widen_by``) where the samples
    look log-normal (:func:`looks_log_normal`); else ``ci`` itself.

    A sequential study stops when its interval first looks narrow enough, which on a
    heavy right tail is on samples that have not yet drawn a far value: their mean, their
    standard deviation and their skewness all read low, so a moment-based interval
    (Student's, Hall's) is short exactly then. The spread of the logs hardly depends on
    the few far values, so Cox's interval, which rests on it, stays as long as the tail
    asks; the hull keeps the arithmetic mean as its estimate.

    >>> x = np.random.default_rng(3).lognormal(0.0, 1.0, 60)
    >>> ci = hall_interval(x, skewness=tail_skewness(x))
    >>> hull = log_normal_hull(ci, x)
    >>> hull.low <= ci.low and hull.high >= ci.high
    True
    """
    x = finite_1d(samples)
    return cox_hull(ci, x, widen_by) if looks_log_normal(x) else ci


def cox_hull(ci: MeanCI, samples: ArrayLike, widen_by: float = 1.0) -> MeanCI:
    """The hull of ``ci`` and Cox's interval (:func:`cox_interval`) of ``samples``,
    whether they look log-normal or not (:func:`log_normal_hull` asks first); the
    estimate stays ``ci``'s mean.

    >>> ci = cox_hull(MeanCI(3.0, 1.0, 5, 2.0, 0.95), [1.0, 2.0, 2.5, 4.0, 5.5])
    >>> ci.low < 2.0 and ci.high > 4.0
    True
    """
    x = finite_1d(samples)
    cox = cox_interval(x, ci.confidence, widen_by=widen_by)
    low, high = min(ci.low, cox.low), max(ci.high, cox.high)
    return MeanCI(
        mean=ci.mean,
        half_width=(high - low) / 2.0,
        n=ci.n,
        std=ci.std,
        confidence=ci.confidence,
        lower=low,
        upper=high,
    )


def cox_interval(samples: ArrayLike, confidence: float = 0.95, widen_by: float = 1.0) -> MeanCI:
    """Cox's interval for the mean of positive, log-normal-like samples (Land 1972; Zhou &
    Gao, Stat. Med. 16, 1997, 783-790): with ``y = log x``, its mean ``ybar`` and
    variance ``s2``, ``exp(ybar + s2/2 ± t * sqrt(s2/n + s2²/(2(n-1))))``.

    For a rate, a count or a byte total whose t-interval crosses zero: the bounds stay
    positive, and are asymmetric as the data are.  The point estimate stays the
    arithmetic mean (inside the interval: a bound that misses it is moved to it);
    ``widen_by`` scales the log-scale standard error, as :func:`widen` does a
    t-interval's (residual autocorrelation).  ``ValueError`` unless every sample is
    positive and there are two or more.

    >>> ci = cox_interval([1.0, 2.0, 4.0, 8.0, 100.0])
    >>> 0 < ci.low < ci.mean < ci.high
    True
    """
    x = finite_1d(samples)
    n = x.size
    if n < 2 or not all_positive(x):
        raise ValueError("Cox's interval needs two or more positive samples")
    c = _check_confidence(confidence)
    y = np.log(x)
    ybar, s2 = mean(y), var(y, ddof=1)
    se = math.sqrt(s2 / n + s2 * s2 / (2.0 * (n - 1))) * widen_by
    t = _t_quantile(c, float(n - 1))
    centre = ybar + s2 / 2.0
    m = mean(x)
    low = min(_exp(centre - t * se), m)
    high = max(_exp(centre + t * se), m)
    return MeanCI(m, (high - low) / 2.0, n, std(x, ddof=1), c, lower=low, upper=high)


def _exp(x: float) -> float:
    """``exp(x)``, ``inf`` past the largest float (bounds of readings near 1e308)."""
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf
