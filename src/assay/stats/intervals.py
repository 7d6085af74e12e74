"""Confidence intervals for a mean, and the sample size needed for a target width.

All functions are pure: arrays in, results out.  The intervals are the classic
Student-t intervals, which assume independent, identically distributed samples;
feed them subsession means (see :mod:`assay.stats.autocorr`) when the raw samples
are autocorrelated (Pilot §III-D).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike

from assay.stats._arrays import finite_1d as _finite_1d
from assay.stats._arrays import mean as _mean
from assay.stats._arrays import spread as _spread
from assay.stats._arrays import std as _std
from assay.stats.student_t import t_ppf

__all__ = [
    "UNREACHABLE_SAMPLE_SIZE",
    "MeanCI",
    "harmonic_t_interval",
    "required_sample_size",
    "t_interval",
]

#: What :func:`required_sample_size` answers for a width no study can reach (an
#: infinite std, or more samples than this): a count, so that callers that plan
#: rounds with it keep working, and more than any study will ever take.
UNREACHABLE_SAMPLE_SIZE = 2**62


@dataclass(frozen=True)
class MeanCI:
    """A confidence interval for a mean.

    Attributes
    ----------
    mean : float
        The point estimate (arithmetic mean for :func:`t_interval`, harmonic
        mean for :func:`harmonic_t_interval`).
    half_width : float
        ``t_{(1+c)/2, n-1} * s / sqrt(n)`` for a symmetric interval; ``inf`` when
        ``n < 2``.  For an asymmetric interval (``lower``/``upper`` set) it is
        ``(high - low) / 2``.
    n : int
        Number of samples the interval is based on.
    std : float
        Sample standard deviation (``ddof=1``); ``nan`` when ``n < 2``.
    confidence : float
        Confidence level ``c`` in (0, 1).
    lower, upper : float or None
        Explicit bounds of an asymmetric interval.  ``None`` (the default) means
        the interval is ``mean ± half_width``.  Use :attr:`low` / :attr:`high`
        rather than reading these directly.

    Examples
    --------
    >>> ci = MeanCI(mean=10.0, half_width=0.5, n=20, std=1.07, confidence=0.95)
    >>> (ci.low, ci.high, ci.relative_half_width)
    (9.5, 10.5, 0.05)
    """

    mean: float
    half_width: float
    n: int
    std: float
    confidence: float
    lower: float | None = None
    upper: float | None = None

    @property
    def low(self) -> float:
        """Lower bound of the interval."""
        if self.lower is not None:
            return self.lower
        return self.mean - self.half_width

    @property
    def high(self) -> float:
        """Upper bound of the interval."""
        if self.upper is not None:
            return self.upper
        return self.mean + self.half_width

    @property
    def relative_half_width(self) -> float:
        """``half_width / |mean|``; ``inf`` when the mean is zero."""
        if self.mean == 0.0:
            return math.inf
        return self.half_width / abs(self.mean)


def _check_confidence(confidence: float) -> float:
    try:
        c = float(confidence)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"confidence must be a number in (0, 1), got {confidence!r}") from exc
    if not 0.0 < c < 1.0:
        raise ValueError(f"confidence must be in the open interval (0, 1), got {confidence!r}")
    return c


@functools.lru_cache(maxsize=4096)
def _t_quantile(confidence: float, df: float) -> float:
    # cached: the stopping rule asks for the same few (confidence, n) pairs after every
    # round.  Without SciPy, whose import took ~0.2 s of a short study (issue #17)
    return t_ppf((1.0 + confidence) / 2.0, df)


@functools.lru_cache(maxsize=256)
def _z_quantile(confidence: float) -> float:
    # cached like _t_quantile; the standard library's (Wichura's AS 241, as SciPy's)
    return NormalDist().inv_cdf((1.0 + confidence) / 2.0)


def widen(ci: MeanCI, factor: float) -> MeanCI:
    """The interval with its distances from the mean (and the std) scaled by ``factor``.

    >>> widen(MeanCI(mean=10.0, half_width=0.5, n=20, std=1.0, confidence=0.95), 2.0).high
    11.0
    """
    if not factor >= 1.0:
        raise ValueError(f"factor must be >= 1, got {factor}")
    lower = None if ci.lower is None else ci.mean - factor * (ci.mean - ci.lower)
    upper = None if ci.upper is None else ci.mean + factor * (ci.upper - ci.mean)
    return MeanCI(
        mean=ci.mean,
        half_width=ci.half_width * factor,
        n=ci.n,
        std=ci.std * factor,
        confidence=ci.confidence,
        lower=lower,
        upper=upper,
    )


def residual_autocorrelation_factor(r1: float) -> float:
    """How much a lag-1 autocorrelation r1 > 0 widens the standard error of a mean.

    For an AR(1)-like sequence the variance of the mean grows by (1 + r1) / (1 - r1);
    the factor is its square root (1 for r1 <= 0 or nan).

    >>> round(residual_autocorrelation_factor(0.1), 4)
    1.1055
    """
    if not math.isfinite(r1) or r1 <= 0.0:
        return 1.0
    r = min(r1, 0.99)
    return math.sqrt((1.0 + r) / (1.0 - r))


def _ldexp(m: float, e: int) -> float:
    """``m * 2**e``, ``±inf`` where that is beyond float's range."""
    try:
        return math.ldexp(m, e)
    except OverflowError:
        return math.copysign(math.inf, m)


def _mean_std(x: np.ndarray) -> tuple[float, float]:
    """Mean and sample std (``ddof=1``) of finite ``x``, free of spurious overflow.

    The samples are scaled by a power of two so their largest magnitude is below 1:
    exact, so ordinary samples give the very numbers ``np.mean`` and ``np.std`` give,
    while readings of 1e200 (whose squares overflow) or 1e-300 (whose squared
    deviations underflow to a zero std) keep a true std.  The std is ``inf`` only
    where it is beyond float's range itself.  Equal values have their value for mean
    and a std of 0 (``np.std`` gives their mean's rounding error: 1.5e-17 for seven
    0.1s).
    """
    ptp, top = _spread(x)
    if ptp == 0.0:  # equal values: no spread (np.std gives the mean's rounding, 1e-16 of it)
        return float(x[0]), 0.0
    e = math.frexp(top)[1] if top > 0.0 else 0
    y = np.ldexp(x, -e) if e else x
    return _ldexp(_mean(y), e), _ldexp(_std(y, ddof=1), e)


def t_interval(samples: ArrayLike, confidence: float = 0.95) -> MeanCI:
    """Student-t confidence interval for the mean of i.i.d. samples.

    Parameters
    ----------
    samples : array_like
        One-dimensional, finite, at least one value.
    confidence : float, default 0.95
        Confidence level in (0, 1).

    Returns
    -------
    MeanCI
        ``mean ± t_{(1+c)/2, n-1} * s / sqrt(n)``; with a single sample the
        half-width is ``inf`` and the std ``nan``.  Samples so spread that their
        std is beyond float's range (``±1e308``) give no valid interval either:
        half-width ``inf``, std ``nan``, rather than an error.

    Raises
    ------
    ValueError
        If ``samples`` is empty, not 1-D or not finite, or ``confidence`` is
        not in (0, 1).

    Examples
    --------
    >>> ci = t_interval([1.2, 2.4, 1.3, 1.3, 0.0, 1.0, 1.8, 0.8, 4.6, 1.4])
    >>> round(ci.mean, 2), round(ci.low, 4), round(ci.high, 4)
    (1.58, 0.7001, 2.4599)
    """
    c = _check_confidence(confidence)
    x = _finite_1d(samples)
    n = int(x.size)
    if n == 0:
        raise ValueError("t_interval needs at least one sample, got an empty array")
    if n < 2:
        return MeanCI(mean=float(x[0]), half_width=math.inf, n=n, std=math.nan, confidence=c)
    mean, std = _mean_std(x)
    if not math.isfinite(std):  # no valid interval: callers see an unmet, infinite width
        return MeanCI(mean=mean, half_width=math.inf, n=n, std=math.nan, confidence=c)
    half = _t_quantile(c, n - 1) * std / math.sqrt(n)
    return MeanCI(mean=mean, half_width=half, n=n, std=std, confidence=c)


def harmonic_t_interval(samples: ArrayLike, confidence: float = 0.95) -> MeanCI:
    """Confidence interval for the harmonic mean of rates measured over equal work.

    When each sample is a rate (e.g. MB/s) obtained for the same amount of
    work, the overall rate is the harmonic mean.  The interval is a Student-t
    interval for ``mean(1/x)`` (time per unit of work, which *is* an
    arithmetic mean), mapped back through ``1/.``.

    Parameters
    ----------
    samples : array_like
        One-dimensional, finite, strictly positive rates.
    confidence : float, default 0.95
        Confidence level in (0, 1).

    Returns
    -------
    MeanCI
        ``mean`` is the harmonic mean ``1 / mean(1/x)``.  ``low = 1/(m + h)``
        and ``high = 1/(m - h)`` where ``m ± h`` is the t-interval of
        ``1/x`` (``high = inf`` when ``m - h <= 0``).  The interval is **not**
        symmetric around ``mean``: its bounds are stored in ``lower`` /
        ``upper`` and ``half_width`` is ``(high - low) / 2``.  ``std`` is the
        delta-method standard deviation in rate units, ``s_{1/x} * mean**2``,
        so that ``t * std / sqrt(n)`` is the first-order half-width and
        :func:`required_sample_size` can be fed ``(ci.std, ci.mean)``; it is
        close to, but not equal to, ``np.std(x, ddof=1)``.

    Raises
    ------
    ValueError
        If any sample is not strictly positive and finite, ``samples`` is empty,
        or ``confidence`` is not in (0, 1).

    Examples
    --------
    >>> ci = harmonic_t_interval([100.0, 200.0, 100.0, 200.0])
    >>> round(ci.mean, 6)
    133.333333
    >>> ci.low < ci.mean < ci.high
    True
    """
    c = _check_confidence(confidence)
    x = _finite_1d(samples)
    if x.size == 0:
        raise ValueError("harmonic_t_interval needs at least one sample, got an empty array")
    if not np.all(x > 0.0):
        raise ValueError("harmonic_t_interval needs strictly positive samples (rates)")
    inner = t_interval(1.0 / x, c)
    m, h = inner.mean, inner.half_width
    mean = 1.0 / m
    low = 1.0 / (m + h)  # 0.0 when h is inf
    high = 1.0 / (m - h) if m - h > 0.0 else math.inf
    half = (high - low) / 2.0
    std = inner.std * mean * mean if inner.n >= 2 else math.nan
    return MeanCI(
        mean=mean,
        half_width=half,
        n=inner.n,
        std=std,
        confidence=c,
        lower=low,
        upper=high,
    )


def required_sample_size(
    std: float, mean: float, relative_half_width: float, confidence: float = 0.95
) -> int:
    """Smallest sample size whose t-interval is as narrow as asked.

    Returns the smallest ``n >= 2`` such that
    ``t_{(1+c)/2, n-1} * std / sqrt(n) <= relative_half_width * |mean|``.
    The left side decreases strictly with ``n``, so the answer is found by a
    galloping search started at the normal-approximation lower bound
    ``floor((z * std / target)**2)`` followed by bisection (exact, a few dozen
    quantile evaluations even for huge ``n``).

    Parameters
    ----------
    std : float
        Standard deviation of one sample (finite, ``>= 0``).
    mean : float
        Mean (finite; must be non-zero unless ``std == 0``).
    relative_half_width : float
        Target half-width as a fraction of ``|mean|`` (finite, ``> 0``).
    confidence : float, default 0.95
        Confidence level in (0, 1).

    Returns
    -------
    int
        The required number of (independent) samples, at least 2;
        :data:`UNREACHABLE_SAMPLE_SIZE` when the std is ``inf`` (readings so
        spread that it overflowed) or the answer would be larger still.

    Raises
    ------
    ValueError
        On invalid arguments, or when ``mean == 0`` with ``std > 0`` (no
        relative width can be reached).

    Examples
    --------
    >>> required_sample_size(std=1.0, mean=10.0, relative_half_width=0.05)
    18
    >>> required_sample_size(std=1e300, mean=1e-300, relative_half_width=0.05) == 2**62
    True
    """
    c = _check_confidence(confidence)
    std = float(std)
    mean = float(mean)
    rel = float(relative_half_width)
    if not std >= 0.0:  # NaN included
        raise ValueError(f"std must be >= 0, got {std!r}")
    if not math.isfinite(mean):
        raise ValueError(f"mean must be finite, got {mean!r}")
    if not (math.isfinite(rel) and rel > 0.0):
        raise ValueError(f"relative_half_width must be finite and > 0, got {rel!r}")
    if std == 0.0:
        return 2
    target = rel * abs(mean)
    if target == 0.0:
        raise ValueError("mean must be non-zero: a relative half-width of a zero mean is undefined")
    if std == math.inf:
        return UNREACHABLE_SAMPLE_SIZE

    def ok(n: int) -> bool:
        return _t_quantile(c, n - 1) * std / math.sqrt(n) <= target

    ratio = _z_quantile(c) * std / target  # inf when std / target overflows
    if not ratio < math.sqrt(UNREACHABLE_SAMPLE_SIZE):
        return UNREACHABLE_SAMPLE_SIZE
    n_normal = ratio**2
    # Every n < n_normal fails (t quantile > z quantile), so start there.
    lo = max(1, math.floor(n_normal))  # invariant: ok(lo) is False or lo == 1
    hi = max(2, lo)
    step = max(1, hi // 64)
    while not ok(hi):
        lo = hi
        hi += step
        step *= 2
    if lo < 2 or lo == hi:
        lo = 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi
