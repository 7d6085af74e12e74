"""Comparing benchmark results: Welch's t-test, effect sizes and rankings (Pilot §III-F).

Two results are compared in two steps, as Pilot does.  When their confidence
intervals do not overlap, one is better than the other at the confidence level of
the intervals ("separated").  When they overlap, Welch's unequal-variance t-test
decides whether the difference of the means is significant.  Every sample is first
merged into subsessions (:func:`assay.stats.autocorr.subsession_interval`), because
the tests assume independent samples; old results that only survive as summary
statistics (mean, subsession variance and subsession count) enter as
:class:`SummaryStats`.

The smallest subsession size that passes ``|r1| <= 0.1`` is chosen on a noisy
estimate, so the merged samples keep some positive correlation and Pilot's plain
tests find differences that are not there (bench/RESULTS.md, issue #21: 2.2 % of
A/A comparisons decided at alpha 1 % under AR(1) noise with phi 0.8, 1.0 %
corrected).  By default (``correct_residual=True``, as ``assay run`` with
``residual_correction = true``) each variant's variance is widened by the same
residual-autocorrelation factor that widens its interval, so Welch's test, the
extra-sample estimate and the interval rest on one standard error; ``False`` is
Pilot's method as published.

All functions are pure: arrays or numbers in, frozen dataclasses out.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Literal

import numpy as np
import numpy.typing as npt
from numpy.typing import ArrayLike

from assay.stats._arrays import finite_1d as _finite_1d
from assay.stats.autocorr import subsession_interval
from assay.stats.drift_bound import RatioBound, block_means, block_ratio_bound, look_prefix
from assay.stats.intervals import MeanCI, _check_confidence, _t_quantile, t_interval
from assay.stats.mann_whitney import mann_whitney_p
from assay.stats.rank_shift import RankShift
from assay.stats.sequential import (
    DEFAULT_SCALES,
    critical_t,
    mixture_e_value,
    samples_to_decide,
)
from assay.stats.student_t import nct_cdf, t_ppf, t_sf

# SciPy is imported inside the functions that use it: `assay compare` starts its first
# trial without it (~0.6 s of imports; bench/RESULTS.md, start-up)

__all__ = [
    "Comparison",
    "InsufficientDataError",
    "PairDecision",
    "Ranking",
    "RawComparison",
    "SummaryStats",
    "VariantStats",
    "WelchResult",
    "always_valid_relative",
    "analyze_variant",
    "compare_samples",
    "compare_variants",
    "pair_e_value",
    "rank_variants",
    "ranking_at_level",
    "ranking_by_evidence",
    "raw_comparison",
    "summary_from_ci",
    "welch_e_value",
    "welch_required_n",
    "welch_test",
]

FloatArray = npt.NDArray[np.float64]
Direction = Literal["lower", "higher"]
PairStatus = Literal["separated", "significant", "bounded", "undecided"]

#: Largest per-group sample size :func:`welch_required_n` will return.
MAX_REQUIRED_N = 10**12


class InsufficientDataError(ValueError):
    """A sample cannot be analysed: too few values, or autocorrelation that merging
    into subsessions cannot bring within the limit."""


# --------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class SummaryStats:
    """A result known only by its summary statistics (Pilot §III-F: "old results").

    Attributes
    ----------
    mean : float
        Mean of the result.
    var : float
        Sample variance (``ddof=1``) of the *subsession* samples, ``>= 0``.
    n : int
        Number of subsession samples, ``>= 2``.
    subsession_size : int, default 1
        Raw samples per subsession sample (used to turn sample-size estimates
        back into raw samples or rounds).

    Examples
    --------
    >>> s = SummaryStats(mean=10.0, var=4.0, n=16)
    >>> s.std, s.standard_error
    (2.0, 0.5)
    """

    mean: float
    var: float
    n: int
    subsession_size: int = 1

    def __post_init__(self) -> None:
        if not math.isfinite(self.mean):
            raise ValueError(f"mean must be finite, got {self.mean!r}")
        if not (math.isfinite(self.var) and self.var >= 0.0):
            raise ValueError(f"var must be finite and >= 0, got {self.var!r}")
        _check_n(self.n, "n")
        q = self.subsession_size
        if isinstance(q, bool) or not isinstance(q, int | np.integer) or q < 1:
            raise ValueError(f"subsession_size must be an integer >= 1, got {q!r}")

    @property
    def std(self) -> float:
        """Standard deviation ``sqrt(var)``."""
        return math.sqrt(self.var)

    @property
    def standard_error(self) -> float:
        """Standard error of the mean ``sqrt(var / n)``."""
        return math.sqrt(self.var / self.n)


def summary_from_ci(
    mean: float,
    half_width: float,
    n: int,
    confidence: float = 0.95,
    subsession_size: int = 1,
) -> SummaryStats:
    """Summary statistics recovered from a Student-t confidence interval.

    Inverts ``half_width = t_{(1+c)/2, n-1} * s / sqrt(n)``:
    ``var = (half_width * sqrt(n) / t)**2``.  Welch's test only uses ``var / n``
    (the squared standard error) and ``n`` (its degrees of freedom), so this is
    exact for a symmetric t-interval and a first-order approximation for an
    asymmetric one (pass ``(high - low) / 2``).

    Parameters
    ----------
    mean : float
        Point estimate.
    half_width : float
        Finite, ``>= 0``.
    n : int
        Number of (subsession) samples the interval rests on, ``>= 2``.
    confidence : float, default 0.95
        Confidence level of the interval.
    subsession_size : int, default 1
        Raw samples per subsession sample.

    Returns
    -------
    SummaryStats

    Examples
    --------
    >>> s = summary_from_ci(mean=10.0, half_width=0.5, n=20)
    >>> round(s.var, 3)
    1.141
    """
    c = _check_confidence(confidence)
    n = _check_n(n, "n")
    hw = float(half_width)
    if not (math.isfinite(hw) and hw >= 0.0):
        raise ValueError(f"half_width must be finite and >= 0, got {half_width!r}")
    t = _t_quantile(c, n - 1)
    var = (hw * math.sqrt(n) / t) ** 2
    return SummaryStats(mean=float(mean), var=var, n=n, subsession_size=subsession_size)


def _check_n(n: int, name: str) -> int:
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 2:
        raise ValueError(f"{name} must be an integer >= 2, got {n!r}")
    return int(n)


def _check_moments(mean: float, var: float, name: str) -> tuple[float, float]:
    m = float(mean)
    v = float(var)
    if not math.isfinite(m):
        raise ValueError(f"mean_{name} must be finite, got {mean!r}")
    if not (math.isfinite(v) and v >= 0.0):
        raise ValueError(f"var_{name} must be finite and >= 0, got {var!r}")
    return m, v


# --------------------------------------------------------------------------- Welch


@dataclass(frozen=True)
class WelchResult:
    """Welch's unequal-variance t-test of ``mean_a == mean_b``.

    Attributes
    ----------
    t : float
        ``(mean_a - mean_b) / se`` (Pilot eq. 6).
    df : float
        Welch–Satterthwaite degrees of freedom (Pilot eq. 7, unfloored unless
        asked).
    p_value : float
        Two-sided p-value (Pilot eq. 8).
    difference : float
        ``mean_a - mean_b``.
    se : float
        ``sqrt(var_a / n_a + var_b / n_b)``.
    diff_low, diff_high : float
        Confidence interval of ``mean_a - mean_b``: ``difference ± t_q * se``.
    relative : float
        ``(mean_a - mean_b) / mean_b`` (``nan`` when ``mean_b == 0``).
    rel_low, rel_high : float
        Fieller confidence interval of ``relative`` (``-inf``/``inf`` when
        unbounded).
    confidence : float
        Confidence level of both intervals.
    """

    t: float
    df: float
    p_value: float
    difference: float
    se: float
    diff_low: float
    diff_high: float
    relative: float
    rel_low: float
    rel_high: float
    confidence: float


def welch_test(
    mean_a: float,
    var_a: float,
    n_a: int,
    mean_b: float,
    var_b: float,
    n_b: int,
    confidence: float = 0.95,
    *,
    floor_df: bool = False,
) -> WelchResult:
    """Welch's t-test from summary statistics, with CIs of the absolute and relative difference.

    ``t = (mean_a - mean_b) / sqrt(var_a/n_a + var_b/n_b)`` (Pilot eq. 6);
    ``df`` is the Welch–Satterthwaite value (eq. 7); ``p = 2 * P(T_df > |t|)``
    (eq. 8).  Pilot floors ``df`` to an integer; by default this function does
    not (as ``scipy.stats.ttest_ind(..., equal_var=False)``), which gives
    slightly smaller p-values; pass ``floor_df=True`` for Pilot's exact rule.

    The relative difference ``(mean_a - mean_b) / mean_b`` gets **Fieller's**
    interval for the ratio ``R = mean_a / mean_b`` (minus 1): the set of ``R``
    with ``(mean_a - R mean_b)**2 <= t_q**2 (var_a/n_a + R**2 var_b/n_b)``, where
    ``t_q`` uses the same Welch ``df`` as the test.  Unlike the delta method it
    is not forced to be symmetric, and it excludes 0 exactly when the
    difference interval does.  When ``mean_b`` is not itself clearly away from
    zero (``t_q * se_b >= |mean_b|``) the set is unbounded and the bounds are
    ``-inf`` and ``inf``.

    Parameters
    ----------
    mean_a, var_a, n_a : float, float, int
        Mean, sample variance (``ddof=1``) and size (``>= 2``) of sample A.
    mean_b, var_b, n_b : float, float, int
        The same for sample B (the reference of the relative difference).
    confidence : float, default 0.95
        Confidence level of the intervals.
    floor_df : bool, default False
        Floor the degrees of freedom as Pilot's eq. 7 does.

    Returns
    -------
    WelchResult
        When both variances are 0: ``t = ±inf``, ``p = 0`` if the means differ,
        and ``t = nan``, ``p = 1`` if they are equal (scipy gives ``nan``);
        ``df`` is then ``n_a + n_b - 2``.

    Raises
    ------
    ValueError
        On non-finite moments, negative variances, ``n < 2`` or a bad confidence.

    Examples
    --------
    >>> r = welch_test(10.5, 1.0, 30, 10.0, 1.0, 30)
    >>> round(r.t, 4), round(r.df, 1), round(r.p_value, 4)
    (1.9365, 58.0, 0.0577)
    >>> round(r.relative, 3), r.rel_low < 0.0 < r.rel_high
    (0.05, True)
    """
    c = _check_confidence(confidence)
    ma, va = _check_moments(mean_a, var_a, "a")
    mb, vb = _check_moments(mean_b, var_b, "b")
    na = _check_n(n_a, "n_a")
    nb = _check_n(n_b, "n_b")
    sa2 = va / na
    sb2 = vb / nb
    s2 = sa2 + sb2
    se = math.sqrt(s2)
    diff = ma - mb
    if s2 > 0.0:
        df = s2 * s2 / (sa2 * sa2 / (na - 1) + sb2 * sb2 / (nb - 1))
        if floor_df:
            df = float(math.floor(df))
        t = diff / se
        p = 2.0 * t_sf(abs(t), df)
    else:
        df = float(na + nb - 2)
        if diff == 0.0:
            t, p = math.nan, 1.0
        else:
            t, p = math.copysign(math.inf, diff), 0.0
    tq = t_ppf((1.0 + c) / 2.0, df)
    rel_low, rel_high = _fieller(ma, sa2, mb, sb2, tq)
    return WelchResult(
        t=float(t),
        df=float(df),
        p_value=min(1.0, p),
        difference=diff,
        se=se,
        diff_low=diff - tq * se,
        diff_high=diff + tq * se,
        relative=diff / mb if mb != 0.0 else math.nan,
        rel_low=rel_low,
        rel_high=rel_high,
        confidence=c,
    )


def _fieller(ma: float, sa2: float, mb: float, sb2: float, tq: float) -> tuple[float, float]:
    """Fieller interval of ``ma / mb - 1`` for independent means with variances sa2, sb2."""
    t2 = tq * tq
    lead = mb * mb - t2 * sb2  # leading coefficient of the quadratic in R
    if lead <= 0.0:
        return -math.inf, math.inf
    disc = mb * mb * sa2 + ma * ma * sb2 - t2 * sa2 * sb2
    root = tq * math.sqrt(max(disc, 0.0))
    low = (ma * mb - root) / lead
    high = (ma * mb + root) / lead
    return low - 1.0, high - 1.0


# --------------------------------------------------------------------------- sample size


def welch_required_n(
    mean_a: float,
    var_a: float,
    mean_b: float,
    var_b: float,
    alpha: float = 0.01,
    power: float = 0.8,
) -> int:
    """Per-group sample size for Welch's test to reject ``mean_a == mean_b``.

    Smallest ``n >= 2`` (equal in both groups) at which a two-sided Welch test
    at level ``alpha`` has the requested power to detect the *observed*
    difference ``delta = mean_a - mean_b`` with the observed variances.  Power
    is computed exactly from the noncentral t distribution with noncentrality
    ``delta / sqrt((var_a + var_b) / n)`` and the Welch–Satterthwaite degrees
    of freedom for equal group sizes,
    ``(n - 1) (var_a + var_b)**2 / (var_a**2 + var_b**2)``.  With equal
    variances this is exactly ``statsmodels``' ``TTestIndPower`` with Cohen's
    ``d`` from the pooled standard deviation (df ``2n - 2``); with unequal
    variances the Welch df is smaller and the answer is at least as large.

    The observed difference is a noisy estimate of the true one, so the
    result is a planning estimate, not a guarantee.

    Parameters
    ----------
    mean_a, var_a : float
        Mean and variance (``ddof=1``) of one (subsession) sample of A.
    mean_b, var_b : float
        The same for B.
    alpha : float, default 0.01
        Significance level of the two-sided test, in (0, 1).
    power : float, default 0.8
        Required power, in (0, 1).

    Returns
    -------
    int
        Samples needed per group (compare with each group's current size).

    Raises
    ------
    ValueError
        When ``mean_a == mean_b`` while a variance is positive (no sample size
        detects a zero difference), when the answer exceeds ``10**12``, or on
        invalid arguments.  With both variances zero and different means the
        answer is 2.

    Examples
    --------
    >>> welch_required_n(10.5, 1.0, 10.0, 1.0, alpha=0.05, power=0.8)
    64
    """
    ma, va = _check_moments(mean_a, var_a, "a")
    mb, vb = _check_moments(mean_b, var_b, "b")
    a = float(alpha)
    pw = float(power)
    if not 0.0 < a < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    if not 0.0 < pw < 1.0:
        raise ValueError(f"power must be in (0, 1), got {power!r}")
    delta = abs(ma - mb)
    v = va + vb
    if v == 0.0:
        if delta == 0.0:
            raise ValueError("the means are equal: no sample size can detect a zero difference")
        return 2
    if delta == 0.0:
        raise ValueError("the means are equal: no sample size can detect a zero difference")
    df_factor = v * v / (va * va + vb * vb)  # df = (n - 1) * df_factor

    def achieved(n: int) -> float:
        # stats.t.isf and stats.nct.cdf without SciPy, whose import cost a comparison's
        # first analysis ~0.1 s, and whose distribution objects' argument handling ~0.1
        # ms a call: a comparison plans after every cycle (issue #17)
        df = (n - 1) * df_factor
        nc = delta / math.sqrt(v / n)
        tc = -t_ppf(a / 2.0, df)
        return 1.0 - nct_cdf(tc, df, nc) + nct_cdf(-tc, df, nc)

    def ok(n: int) -> bool:
        return achieved(n) >= pw

    z = -NormalDist().inv_cdf(a / 2.0) + NormalDist().inv_cdf(pw)  # norm.isf + norm.ppf
    n_normal = z * z * v / (delta * delta)
    if not math.isfinite(n_normal) or n_normal > MAX_REQUIRED_N:
        raise ValueError(
            f"the difference is too small for its variance: more than {MAX_REQUIRED_N} "
            "samples per group would be needed"
        )
    lo = max(1, math.floor(n_normal) - 1)  # every n below the normal bound fails
    hi = max(2, lo + 1)
    step = max(1, hi // 16)
    while not ok(hi):
        lo = hi
        hi += step
        step *= 2
        if hi > MAX_REQUIRED_N:
            raise ValueError(f"more than {MAX_REQUIRED_N} samples per group would be needed")
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if mid >= 2 and ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


# --------------------------------------------------------------------------- one variant


@dataclass(frozen=True, eq=False)
class VariantStats:
    """One variant's data as the comparison uses it (after subsession merging).

    Attributes
    ----------
    mean : float
        Mean of the merged samples (equal to the mean of the raw samples used).
    var : float
        Variance the tests use: the sample variance (``ddof=1``) of the merged
        samples times ``residual_factor ** 2`` (so ``sqrt(var / n)`` is the
        standard error the interval rests on).
    n : int
        Number of merged (subsession) samples.
    subsession_size : int
        Raw samples per merged sample.
    ci : MeanCI
        Student-t interval of the mean from the merged samples.
    n_raw : int
        Raw samples given (``n * subsession_size`` for a summary).
    autocorrelation : float
        Lag-1 autocorrelation of the merged samples (``nan`` for a summary).
    merged : numpy.ndarray or None
        The merged samples (``None`` for a summary).
    residual_factor : float, default 1.0
        Factor by which the residual-autocorrelation correction widened the
        standard error (and the interval); 1 when uncorrected.

    Notes
    -----
    Compared by identity (``eq=False``): arrays have no single truth value.
    """

    mean: float
    var: float
    n: int
    subsession_size: int
    ci: MeanCI
    n_raw: int
    autocorrelation: float
    merged: FloatArray | None
    residual_factor: float = 1.0

    @property
    def summary(self) -> SummaryStats:
        """The summary statistics of the merged samples."""
        return SummaryStats(self.mean, self.var, self.n, self.subsession_size)


def analyze_variant(
    data: ArrayLike | SummaryStats,
    confidence: float = 0.95,
    max_autocorrelation: float = 0.1,
    *,
    correct_residual: bool = True,
    independence_alpha: float | None = None,
) -> VariantStats:
    """Merge a sample into subsessions and take its t-interval; or wrap a summary.

    With ``correct_residual`` the interval is
    ``subsession_interval(..., correct_residual=True)``'s (widened for the merged
    samples' residual lag-1 autocorrelation, floored by the AR(1) value) and the
    variance is widened by the same factor, so that a Welch test built from
    ``var`` and ``n`` gives back exactly this interval's standard error.  A
    summary is taken as it is (its variance is whatever was stored).

    Parameters
    ----------
    data : array_like or SummaryStats
        Raw samples in the order they were taken (merging relies on it), or the
        summary of an already merged sample.
    confidence : float, default 0.95
        Confidence level of the interval.
    max_autocorrelation : float, default 0.1
        Largest acceptable ``|r1|`` of the merged samples (Pilot §III-D).
    correct_residual : bool, default True, keyword-only
        Apply the residual-autocorrelation correction (``False``: Pilot's plain
        subsession t-interval).
    independence_alpha : float or None, keyword-only
        No merging while the raw lag-1 autocorrelation is not significant at this
        level (:func:`assay.stats.autocorr.optimal_subsession`), and with the residual
        correction the floor's phi is taken at its upper bound
        (:func:`assay.stats.autocorr.subsession_interval`; ``assay compare``'s
        always-valid rule uses both); ``None``: Pilot's rule, which at small n merges,
        or finds no subsession size, on noise alone.

    Returns
    -------
    VariantStats

    Raises
    ------
    InsufficientDataError
        When fewer than 3 samples are given or no subsession size brings the
        autocorrelation within the limit.
    ValueError
        On non-finite or non-1-D samples.

    Examples
    --------
    >>> v = analyze_variant(np.random.default_rng(0).normal(10.0, 0.5, 200))
    >>> v.subsession_size, v.n, v.ci.low < 10.0 < v.ci.high
    (1, 200, True)
    """
    c = _check_confidence(confidence)
    if isinstance(data, SummaryStats):
        half = _t_quantile(c, data.n - 1) * data.standard_error
        ci = MeanCI(mean=data.mean, half_width=half, n=data.n, std=data.std, confidence=c)
        return VariantStats(
            mean=data.mean,
            var=data.var,
            n=data.n,
            subsession_size=data.subsession_size,
            ci=ci,
            n_raw=data.n * data.subsession_size,
            autocorrelation=math.nan,
            merged=None,
        )
    x = _finite_1d(data)
    got = subsession_interval(
        x,
        confidence=c,
        max_autocorrelation=max_autocorrelation,
        correct_residual=correct_residual,
        independence_alpha=independence_alpha,
    )
    if got is None:
        if x.size < 3:
            raise InsufficientDataError(f"needs at least 3 samples, got {x.size}")
        raise InsufficientDataError(
            f"no subsession size brings |lag-1 autocorrelation| to <= {max_autocorrelation} "
            f"with at least 3 merged samples ({x.size} samples)"
        )
    ci, sub = got
    merged = sub.means
    factor = _widening(ci, merged, c)
    if ci.low < 0.0 < ci.mean and merged.size >= 2 and bool(np.all(merged > 0)):
        # a rate or a time of positive samples whose t-interval crosses zero: the CI
        # shown is Cox's, positive (the tests keep the variance below)
        from assay.stats.skewed_mean import cox_interval

        ci = cox_interval(merged, c, widen_by=factor)
    return VariantStats(
        mean=ci.mean,
        var=float(np.var(merged, ddof=1)) * factor * factor,
        n=int(merged.size),
        subsession_size=sub.size,
        ci=ci,
        n_raw=int(x.size),
        autocorrelation=float(sub.autocorrelation),
        merged=merged,
        residual_factor=factor,
    )


def _widening(ci: MeanCI, merged: FloatArray, confidence: float) -> float:
    """How much ``subsession_interval`` widened the plain t-interval of ``merged``.

    Read off the interval it returned rather than recomputed, so the variance the
    tests use follows whatever correction ``assay run``'s interval applies.
    """
    plain = t_interval(merged, confidence).std
    if not (math.isfinite(plain) and plain > 0.0 and math.isfinite(ci.std)):
        return 1.0  # constant or overflowing samples: nothing to widen
    return max(1.0, ci.std / plain)


# --------------------------------------------------------------------------- two variants


@dataclass(frozen=True, eq=False)
class Comparison:
    """Everything known about ``A`` versus ``B``.

    Attributes
    ----------
    a, b : VariantStats
        Each side after subsession merging.
    welch : WelchResult
        Welch's test on the sides' means, variances and merged-sample counts
        (``VariantStats.var``: corrected for residual autocorrelation unless
        asked not to); difference and relative difference are ``A - B`` and
        ``(A - B) / B``.
    mann_whitney_p : float
        Two-sided Mann–Whitney U p-value on the merged samples (``nan`` when a
        side is a summary).  A robustness check, not a decision rule: computed
        when first read (a comparison ranks its variants after every cycle), by
        :func:`~assay.stats.mann_whitney.mann_whitney_p`: scipy's p without the
        ~0.45 s import of ``scipy.stats`` (issue #17).
    cohens_d : float
        ``(mean_a - mean_b) / s_pooled``, where ``s_pooled`` is the pooled
        standard deviation of the *merged* samples (with subsession size 1 this
        is the usual Cohen's d; larger subsessions shrink the sd and raise d).
    hedges_g : float
        ``cohens_d`` times the exact small-sample correction
        ``J = Γ(m/2) / (sqrt(m/2) Γ((m-1)/2))``, ``m = n_a + n_b - 2``.
    ci_overlap : bool
        Whether the two confidence intervals of the means overlap.
    shift : RankShift or None
        The Hodges–Lehmann shift of the merged samples with its interval, when the
        comparison is on the median (:mod:`assay.stats.compare_median`); else ``None``.
    """

    a: VariantStats
    b: VariantStats
    welch: WelchResult
    cohens_d: float
    hedges_g: float
    ci_overlap: bool
    shift: RankShift | None = None

    @property
    def confidence(self) -> float:
        """Confidence level of the intervals."""
        return self.welch.confidence

    @functools.cached_property
    def mann_whitney_p(self) -> float:
        """Two-sided Mann–Whitney U p-value on the merged samples (see the class)."""
        a, b = self.a.merged, self.b.merged
        if a is None or b is None:
            return math.nan
        return mann_whitney_p(a, b)[0]  # scipy's p, without importing scipy.stats


def _effect_sizes(a: VariantStats, b: VariantStats) -> tuple[float, float]:
    m = a.n + b.n - 2
    # the spread of the merged samples themselves: the correction concerns the mean's error
    va = a.var / (a.residual_factor * a.residual_factor)
    vb = b.var / (b.residual_factor * b.residual_factor)
    pooled = math.sqrt(((a.n - 1) * va + (b.n - 1) * vb) / m)
    diff = a.mean - b.mean
    d = _ratio(diff, pooled)
    j = math.exp(math.lgamma(m / 2.0) - math.lgamma((m - 1) / 2.0)) / math.sqrt(m / 2.0)
    return d, d * j


def _ratio(num: float, den: float) -> float:
    """``num / den`` with ``den == 0`` giving ``0`` (``num == 0``) or ``±inf``."""
    if den > 0.0:
        return num / den
    return 0.0 if num == 0.0 else math.copysign(math.inf, num)


def _overlap(a: MeanCI, b: MeanCI) -> bool:
    return a.low <= b.high and b.low <= a.high


def _compare(a: VariantStats, b: VariantStats, confidence: float) -> Comparison:
    welch = welch_test(a.mean, a.var, a.n, b.mean, b.var, b.n, confidence)
    d, g = _effect_sizes(a, b)
    return Comparison(
        a=a,
        b=b,
        welch=welch,
        cohens_d=d,
        hedges_g=g,
        ci_overlap=_overlap(a.ci, b.ci),
    )


def compare_variants(a: VariantStats, b: VariantStats, confidence: float = 0.95) -> Comparison:
    """:func:`compare_samples` on two already analysed variants (no merging again)."""
    return _compare(a, b, _check_confidence(confidence))


def compare_samples(
    a: ArrayLike | SummaryStats,
    b: ArrayLike | SummaryStats,
    confidence: float = 0.95,
    max_autocorrelation: float = 0.1,
    *,
    correct_residual: bool = True,
    independence_alpha: float | None = None,
) -> Comparison:
    """Compare two results: subsession merging, then Welch, Mann–Whitney and effect sizes.

    Each sample is merged into subsessions until ``|r1| <= max_autocorrelation``
    (:func:`analyze_variant`); the tests run on the merged samples.

    Parameters
    ----------
    a, b : array_like or SummaryStats
        Raw samples in measurement order, or summaries of merged samples.
    confidence : float, default 0.95
        Confidence level of every interval.
    max_autocorrelation : float, default 0.1
        Largest acceptable ``|r1|`` of the merged samples.
    correct_residual : bool, default True, keyword-only
        Widen each side for residual autocorrelation (:func:`analyze_variant`).
    independence_alpha : float or None, keyword-only
        The merging rule at small n (:func:`analyze_variant`).

    Returns
    -------
    Comparison

    Raises
    ------
    InsufficientDataError
        When a side cannot be analysed (message names the side).

    Examples
    --------
    >>> rng = np.random.default_rng(7)
    >>> c = compare_samples(rng.normal(1.10, 0.05, 100), rng.normal(1.00, 0.05, 100))
    >>> c.ci_overlap, c.welch.p_value < 1e-10, round(c.welch.relative, 2)
    (False, True, 0.1)
    """
    c = _check_confidence(confidence)
    sides = []
    for label, data in (("a", a), ("b", b)):
        try:
            sides.append(
                analyze_variant(
                    data,
                    c,
                    max_autocorrelation,
                    correct_residual=correct_residual,
                    independence_alpha=independence_alpha,
                )
            )
        except InsufficientDataError as exc:
            raise InsufficientDataError(f"sample {label}: {exc}") from None
    return _compare(sides[0], sides[1], c)


# --------------------------------------------------------------------------- ranking


@dataclass(frozen=True, eq=False)
class PairDecision:
    """The verdict on two variants adjacent in the ranking.

    Attributes
    ----------
    better, worse : str
        Names, ``better`` ranked first.
    status : {"separated", "significant", "bounded", "undecided"}
        ``separated``: the CIs do not overlap; ``significant``: they overlap
        but Welch's p < alpha; ``bounded``: a side has no valid interval, but even
        the ranges of the two sides' block means are apart (``bound``; the decision
        that survives drift, :mod:`assay.stats.drift_bound`); ``undecided``: none.
    comparison : Comparison or None
        ``better`` as A and ``worse`` as B; ``None`` when a side could not be
        analysed.
    extra_better, extra_worse : int or None
        For an undecided pair, more *raw* samples each side needs according to
        :func:`welch_required_n` (merged samples times subsession size);
        0 for a decided pair; ``None`` when no estimate exists.
    note : str
        Why a pair is undecided without an estimate, or how a bounded one was decided.
    bound : RatioBound or None
        ``worse / better - 1`` from the block ranges, for a ``bounded`` pair.
    """

    better: str
    worse: str
    status: PairStatus
    comparison: Comparison | None
    extra_better: int | None = 0
    extra_worse: int | None = 0
    note: str = ""
    # the conservative bound of worse / better - 1 a "bounded" pair rests on
    bound: RatioBound | None = None

    @property
    def decided(self) -> bool:
        """``status != "undecided"``."""
        return self.status != "undecided"


@dataclass(frozen=True)
class RawComparison:
    """What the raw samples say about a variant that has no valid interval (issue #40).

    Without an interval there is no verdict on the mean; the medians of the raw samples
    and a Mann–Whitney test on them are what can still be said.  The samples are
    autocorrelated (that is why there is no interval), so the p-value is indicative
    only: positive autocorrelation makes it too small.

    Attributes
    ----------
    name, other : str
        The variant without an interval, and the one it is compared with.
    median, other_median : float
        Medians of the raw samples.
    relative : float
        ``(median - other_median) / |other_median|`` (``nan`` when that is 0).
    mann_whitney_p : float
        Two-sided Mann–Whitney p on the raw samples.
    n, other_n : int
        Raw sample counts.
    direction : {"lower", "higher"}
        Which values are better.
    """

    name: str
    other: str
    median: float
    other_median: float
    relative: float
    mann_whitney_p: float
    n: int
    other_n: int
    direction: Direction

    @property
    def looks_better(self) -> bool:
        """Whether ``name``'s median is on the better side of ``other``'s."""
        if self.direction == "lower":
            return self.median < self.other_median
        return self.median > self.other_median

    def text(self, alpha: float) -> str:
        """One line: the medians, the relative difference and the Mann–Whitney p, and
        what they suggest at ``alpha`` (no verdict: there is no interval)."""
        if math.isfinite(self.relative):
            word = "lower" if self.relative < 0 else "higher"
            diff = f"{abs(self.relative):.1%} {word} than"
        else:
            diff = "against"
        if self.mann_whitney_p < alpha:
            hint = (
                f"{self.name if self.looks_better else self.other} looks better "
                f"({self.direction} is better)"
            )
        else:
            hint = "no difference shown"
        return (
            f"on the raw samples (no interval, so no verdict): {self.name}'s median "
            f"{self.median:.4g} is {diff} {self.other}'s {self.other_median:.4g}, Mann-Whitney "
            f"p = {self.mann_whitney_p:.2g} ({self.n} vs {self.other_n} samples; autocorrelated "
            f"samples make this p too small): {hint}"
        )


def raw_comparison(
    name: str, x: ArrayLike, other: str, y: ArrayLike, direction: Direction = "lower"
) -> RawComparison:
    """Medians and the Mann–Whitney test of two raw samples (:class:`RawComparison`).

    >>> r = raw_comparison("a", [1.0, 1.1, 1.2, 1.0, 1.1], "b", [2.0, 2.1, 2.2, 2.1, 2.0])
    >>> round(r.relative, 3), round(r.mann_whitney_p, 4), r.looks_better
    (-0.476, 0.0112, True)
    """
    a, b = _finite_1d(x), _finite_1d(y)
    ma, mb = float(np.median(a)), float(np.median(b))
    rel = (ma - mb) / abs(mb) if mb != 0.0 else math.nan
    return RawComparison(
        name=name,
        other=other,
        median=ma,
        other_median=mb,
        relative=rel,
        mann_whitney_p=mann_whitney_p(a, b)[0],
        n=int(a.size),
        other_n=int(b.size),
        direction=direction,
    )


@dataclass(frozen=True, eq=False)
class Ranking:
    """Variants ordered best first, with a verdict on each adjacent pair.

    Attributes
    ----------
    order : tuple of str
        Names, best first (variants that could not be analysed come last).
    variants : dict
        ``name -> VariantStats``; absent for a variant that could not be analysed.
    pairs : tuple of PairDecision
        ``pairs[i]`` compares ``order[i]`` with ``order[i + 1]``.
    direction : {"lower", "higher"}
        Which means are better.
    alpha : float
        Significance level of Welch's test.
    confidence : float
        Confidence level of the intervals.
    problems : dict
        ``name -> reason`` for variants that could not be analysed (with what their raw
        samples say against the first-ranked variant, when both have raw samples).
    raw : dict
        ``name -> RawComparison`` of each variant that could not be analysed against
        the first-ranked variant, on the raw samples (medians, Mann–Whitney).
    blocks : dict
        ``name -> block means`` of each variant given raw samples, enough of them
        (:func:`assay.stats.drift_bound.block_means`): the ranges a ``bounded`` pair
        and a gate rest on where intervals cannot decide.
    """

    order: tuple[str, ...]
    variants: dict[str, VariantStats]
    pairs: tuple[PairDecision, ...]
    direction: Direction
    alpha: float
    confidence: float
    problems: dict[str, str]
    raw: dict[str, RawComparison] = field(default_factory=dict)
    # each variant's block means (raw samples; a sequential study's up to its last
    # look): the ranges that decide where intervals cannot (#58, drift_bound)
    blocks: dict[str, tuple[float, ...]] = field(default_factory=dict)

    @property
    def decided(self) -> bool:
        """True when every adjacent pair is separated or significant."""
        return all(p.decided for p in self.pairs)

    @property
    def undecided(self) -> tuple[PairDecision, ...]:
        """The undecided pairs."""
        return tuple(p for p in self.pairs if not p.decided)

    def extra_samples(self) -> dict[str, int | None]:
        """More raw samples each variant needs (the largest over its undecided pairs).

        ``None`` when some undecided pair of the variant has no estimate.
        """
        out: dict[str, int | None] = dict.fromkeys(self.order, 0)
        for p in self.pairs:
            for name, extra in ((p.better, p.extra_better), (p.worse, p.extra_worse)):
                cur = out[name]
                out[name] = None if cur is None or extra is None else max(cur, extra)
        return out


def rank_variants(
    samples: Mapping[str, ArrayLike | SummaryStats],
    direction: Direction = "lower",
    alpha: float = 0.01,
    confidence: float = 0.95,
    max_autocorrelation: float = 0.1,
    power: float = 0.8,
    *,
    correct_residual: bool = True,
    independence_alpha: float | None = None,
    plan: bool = True,
    sequential: bool = False,
) -> Ranking:
    """Rank variants by mean and decide each adjacent pair (Pilot §III-F).

    Variants are sorted by mean (ascending for ``direction="lower"``, else
    descending; ties keep the mapping's order).  For each adjacent pair:
    ``separated`` when the CIs do not overlap, else ``significant`` when
    Welch's p < ``alpha``, else ``undecided`` with the additional raw samples
    each side needs for Welch's test to reach ``power`` at ``alpha`` for the
    observed difference (:func:`welch_required_n`).  A variant that cannot be
    analysed yet (too few samples, autocorrelation) ranks last -- never above one
    with a valid interval -- and its pairs are undecided without an estimate; its raw
    samples are compared with the first-ranked variant's (medians, Mann–Whitney:
    :attr:`Ranking.raw`), and its problem says what they suggest, since ranking it
    last says nothing about which is better (issue #40).  Where a side has no valid
    interval, or the intervals overlap, a pair is still ``bounded`` when even the
    ranges of the two sides' block means are apart (raw samples only; issue #58,
    :mod:`assay.stats.drift_bound`), and such a variant moves up past one it beats so.

    Parameters
    ----------
    samples : mapping of str to array_like or SummaryStats
        At least two variants.
    direction : {"lower", "higher"}, default "lower"
        Which means are better.
    alpha : float, default 0.01
        Significance level of Welch's test.
    confidence : float, default 0.95
        Confidence level of the intervals.
    max_autocorrelation : float, default 0.1
        Largest acceptable ``|r1|`` of merged samples.
    power : float, default 0.8
        Power used for the extra-sample estimate.
    correct_residual : bool, default True, keyword-only
        Widen each variant for residual autocorrelation (:func:`analyze_variant`).
    independence_alpha : float or None, keyword-only
        The merging rule at small n (:func:`analyze_variant`).
    plan : bool, default True, keyword-only
        Estimate the extra samples of undecided pairs; ``False`` leaves them ``None``
        (a caller that judges the pairs again by their e-values: a comparison's loop
        ranks after every cycle, and the estimate's noncentral t costs ~0.5 ms a pair).
    sequential : bool, default False, keyword-only
        The samples are asked again after every cycle: the block ranges rest on each
        side's samples up to its last look (:func:`~assay.stats.drift_bound.look_prefix`).

    Returns
    -------
    Ranking

    Examples
    --------
    >>> rng = np.random.default_rng(3)
    >>> r = rank_variants({"a": rng.normal(1.2, 0.1, 60), "b": rng.normal(1.0, 0.1, 60)})
    >>> r.order, r.pairs[0].status, r.decided
    (('b', 'a'), 'separated', True)
    """
    if direction not in ("lower", "higher"):
        raise ValueError(f"direction must be 'lower' or 'higher', got {direction!r}")
    a = float(alpha)
    if not 0.0 < a < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    c = _check_confidence(confidence)
    if len(samples) < 2:
        raise ValueError(f"rank_variants needs at least two variants, got {len(samples)}")
    variants: dict[str, VariantStats] = {}
    problems: dict[str, str] = {}
    for name, data in samples.items():
        try:
            variants[name] = analyze_variant(
                data,
                c,
                max_autocorrelation,
                correct_residual=correct_residual,
                independence_alpha=independence_alpha,
            )
        except InsufficientDataError as exc:
            problems[name] = str(exc)
    sign = 1.0 if direction == "lower" else -1.0
    ranked = sorted(variants, key=lambda k: sign * variants[k].mean)
    order = (*ranked, *(k for k in samples if k in problems))
    blocks = variant_blocks(samples, sequential)
    order, bounds = _bounded_order(blocks, order, problems, direction, a)
    raw = _raw_against_first(samples, order, problems, direction)
    for name, rc in raw.items():
        problems[name] = f"{problems[name]}; {rc.text(a)}"
    pairs: list[PairDecision] = []
    for better, worse in itertools.pairwise(order):
        bound = bounds.get((better, worse))
        if bound is not None:
            bad = worse if worse in problems else better
            why = problems[bad].split("; ")[0]
            pairs.append(
                PairDecision(
                    better,
                    worse,
                    "bounded",
                    None,
                    note=(
                        f"{bad} has no valid interval ({why}); even the ranges of "
                        f"{bound.blocks} block means of each, which hold whatever the "
                        "drift, are apart"
                    ),
                    bound=bound,
                )
            )
            continue
        if better in problems or worse in problems:
            bad = better if better in problems else worse
            if worse in raw:  # the side whose raw samples were compared says more
                bad = worse
            pairs.append(
                PairDecision(
                    better, worse, "undecided", None, None, None, f"{bad}: {problems[bad]}"
                )
            )
            continue
        vb, vw = variants[better], variants[worse]
        comp = _compare(vb, vw, c)
        if not comp.ci_overlap:
            pairs.append(PairDecision(better, worse, "separated", comp))
        elif comp.welch.p_value < a:
            pairs.append(PairDecision(better, worse, "significant", comp))
        elif (bound := _block_bound(blocks, better, worse, a)) is not None and _apart(
            bound, direction
        ):  # intervals as wide as a drift makes them: its range still decides (#58)
            note = (
                f"the intervals overlap, but even the ranges of {bound.blocks} block means "
                "of each, which hold whatever the drift, are apart"
            )
            pairs.append(PairDecision(better, worse, "bounded", comp, note=note, bound=bound))
        elif not plan:
            pairs.append(PairDecision(better, worse, "undecided", comp, None, None))
        else:
            try:
                need = welch_required_n(vb.mean, vb.var, vw.mean, vw.var, a, power)
            except ValueError as exc:
                pairs.append(PairDecision(better, worse, "undecided", comp, None, None, str(exc)))
                continue
            more_b, more_w = max(need - vb.n, 0), max(need - vw.n, 0)
            if more_b == 0 and more_w == 0:  # unequal sizes: the estimate says "enough"
                more_b = more_w = 1
            pairs.append(
                PairDecision(
                    better,
                    worse,
                    "undecided",
                    comp,
                    more_b * vb.subsession_size,
                    more_w * vw.subsession_size,
                )
            )
    return Ranking(
        order=tuple(order),
        variants=variants,
        pairs=tuple(pairs),
        direction=direction,
        alpha=a,
        confidence=c,
        problems=problems,
        raw=raw,
        blocks=blocks,
    )


def variant_blocks(
    samples: Mapping[str, ArrayLike | SummaryStats], sequential: bool
) -> dict[str, tuple[float, ...]]:
    """Each variant's block means (raw samples only, enough of them); ``sequential``:
    its samples up to its last look (:func:`~assay.stats.drift_bound.look_prefix`)."""
    out: dict[str, tuple[float, ...]] = {}
    for name, data in samples.items():
        if isinstance(data, SummaryStats):
            continue
        x = np.asarray(data, dtype=np.float64)
        if x.ndim != 1 or not bool(np.all(np.isfinite(x))):
            continue
        means = block_means(x[: look_prefix(x.size)] if sequential else x)
        if means is not None:
            out[name] = tuple(float(m) for m in means)
    return out


def _block_bound(
    blocks: Mapping[str, tuple[float, ...]], better: str, worse: str, alpha: float
) -> RatioBound | None:
    """``worse / better - 1`` from the two sides' block ranges, None without them."""
    if worse not in blocks or better not in blocks:
        return None
    b = block_ratio_bound(blocks[worse], blocks[better])
    return None if b is None or b.error_rate > alpha else b


def _apart(b: RatioBound, direction: Direction) -> bool:
    """Is the worse side worse whatever the drift (its block range beyond the other's)?"""
    return b.low > 0 if direction == "lower" else b.high < 0


def _bounded_order(
    blocks: Mapping[str, tuple[float, ...]],
    order: Sequence[str],
    problems: Mapping[str, str],
    direction: Direction,
    alpha: float,
) -> tuple[tuple[str, ...], dict[tuple[str, str], RatioBound]]:
    """The ranking's order, with each adjacent pair where a side has no valid interval
    decided by the two sides' block ranges when they are apart, and put the right way
    round when the ranges say the ranking (which puts variants without an interval
    last) had them the wrong way."""
    out = list(order)
    bounds: dict[tuple[str, str], RatioBound] = {}
    for i in range(len(out) - 1):
        better, worse = out[i], out[i + 1]
        if better not in problems and worse not in problems:
            continue
        b = _block_bound(blocks, better, worse, alpha)
        if b is not None and _apart(b, direction):
            bounds[(better, worse)] = b
            continue
        flipped = _block_bound(blocks, worse, better, alpha)
        if flipped is not None and _apart(flipped, direction):
            out[i], out[i + 1] = worse, better
            bounds[(worse, better)] = flipped
    return tuple(out), bounds


def _raw_against_first(
    samples: Mapping[str, ArrayLike | SummaryStats],
    order: Sequence[str],
    problems: Mapping[str, str],
    direction: Direction,
) -> dict[str, RawComparison]:
    """Each variant that could not be analysed against the first-ranked one, on the
    raw samples (both sides raw, at least 3 finite values each)."""
    if not problems:
        return {}
    first = order[0]
    out: dict[str, RawComparison] = {}
    for name in order:
        if name not in problems or name == first:
            continue
        x, y = samples[name], samples[first]
        if isinstance(x, SummaryStats) or isinstance(y, SummaryStats):
            continue
        xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        xs, ys = xs[np.isfinite(xs)], ys[np.isfinite(ys)]
        if xs.ndim != 1 or ys.ndim != 1 or xs.size < 3 or ys.size < 3:
            continue
        out[name] = raw_comparison(name, xs, first, ys, direction)
    return out


def ranking_at_level(ranking: Ranking, alpha: float, power: float = 0.8) -> Ranking:
    """The same ranking with every adjacent pair judged by Welch's p < ``alpha`` alone.

    A sequential comparison looks at the data again and again; a fixed-level rule
    (CI separation, or Welch's p below the nominal threshold) applied at every
    look rejects a true equality far more often than its level says.  At each look
    the stopping rule therefore tests at a smaller, look-dependent level (see
    :func:`assay.designs.compare.look_level`), and CI separation, a fixed-level
    test of its own, no longer suffices.  A pair keeps its status (``separated``
    or ``significant``) when its p-value is below ``alpha``; otherwise it becomes
    ``undecided`` with the extra samples :func:`welch_required_n` asks for at
    ``alpha``.  Pairs already undecided are re-estimated at ``alpha`` as well.

    Parameters
    ----------
    ranking : Ranking
        From :func:`rank_variants`.
    alpha : float
        Level of this look, in (0, 1).
    power : float, default 0.8
        Power used for the extra-sample estimate.

    Returns
    -------
    Ranking
        With ``alpha`` set to the given level; order, variants and problems unchanged.

    Examples
    --------
    >>> rng = np.random.default_rng(3)
    >>> r = rank_variants({"a": rng.normal(1.02, 0.1, 60), "b": rng.normal(1.0, 0.1, 60)})
    >>> ranking_at_level(r, 1e-6).decided
    False
    """
    a = _check_alpha(alpha)

    def judge(p: PairDecision, comp: Comparison) -> PairDecision:
        if comp.welch.p_value < a:
            status: PairStatus = "significant" if p.status == "undecided" else p.status
            return PairDecision(p.better, p.worse, status, comp)
        vb, vw = comp.a, comp.b
        try:
            need = welch_required_n(vb.mean, vb.var, vw.mean, vw.var, a, power)
        except ValueError as exc:
            return PairDecision(p.better, p.worse, "undecided", comp, None, None, str(exc))
        return undecided_for(p, comp, need - vb.n, need - vw.n)

    return rejudged(ranking, a, judge)


def _check_alpha(alpha: float) -> float:
    a = float(alpha)
    if not 0.0 < a < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    return a


def rejudged(
    ranking: Ranking, alpha: float, judge: Callable[[PairDecision, Comparison], PairDecision]
) -> Ranking:
    """The same ranking at level ``alpha`` with every compared adjacent pair replaced by
    ``judge(pair, comparison)`` (a pair with no comparison is kept as it is)."""
    pairs = tuple(
        p if p.comparison is None or p.status == "bounded" else judge(p, p.comparison)
        for p in ranking.pairs
    )
    return Ranking(
        order=ranking.order,
        variants=ranking.variants,
        pairs=pairs,
        direction=ranking.direction,
        alpha=alpha,
        confidence=ranking.confidence,
        problems=ranking.problems,
        raw=ranking.raw,
        blocks=ranking.blocks,
    )


def undecided_for(p: PairDecision, comp: Comparison, more_b: int, more_w: int) -> PairDecision:
    """``p`` undecided, with ``more_b`` / ``more_w`` more merged samples each side asks
    for, in raw samples (at least one more each when the estimate says "enough")."""
    more_b, more_w = max(more_b, 0), max(more_w, 0)
    if more_b == 0 and more_w == 0:
        more_b = more_w = 1
    return PairDecision(
        p.better,
        p.worse,
        "undecided",
        comp,
        more_b * comp.a.subsession_size,
        more_w * comp.b.subsession_size,
    )


# --------------------------------------------------------------------------- always valid


def pair_e_value(comp: Comparison, scales: Sequence[float] = DEFAULT_SCALES) -> float:
    """The always-valid e-value of ``A != B``: the mixture sequential t-test on Welch's t.

    :func:`assay.stats.sequential.mixture_e_value` of Welch's t-statistic (on the
    corrected variances Welch's test uses), with the effective sample size
    ``1 / (1/n_a + 1/n_b)`` of the merged samples and Welch's degrees of freedom
    times ``(1 - r) / (1 + r)``, ``r`` the larger positive lag-1 autocorrelation of
    the two merged samples: positively correlated samples hold fewer independent
    pieces of evidence about their variance than their count (the effective sample
    size of an AR(1) series), and the e-value then asks for a larger t.  Under equal
    means the chance that it *ever* reaches ``1 / alpha``, however often it is looked
    at, is at most ``alpha`` for i.i.d. normal samples of equal variance;
    ``bench/bench_compare.py`` measures the rest.

    Examples
    --------
    A 2x difference after 4 rounds, noise 5 % of each mean:

    >>> c = compare_samples(SummaryStats(2.0, 0.01, 4), SummaryStats(1.0, 0.0025, 4))
    >>> round(c.welch.t, 1), pair_e_value(c) > 100
    (17.9, True)
    """
    return welch_e_value(comp.welch, comp.a, comp.b, scales)


def welch_e_value(
    welch: WelchResult,
    a: VariantStats,
    b: VariantStats,
    scales: Sequence[float] = DEFAULT_SCALES,
) -> float:
    """:func:`pair_e_value` from Welch's test of ``a`` against ``b``."""
    nu, n_eff = _evidence_size(welch, a, b)
    return mixture_e_value(welch.t, nu, n_eff, scales)


def _evidence_size(welch: WelchResult, a: VariantStats, b: VariantStats) -> tuple[float, float]:
    """The degrees of freedom and effective sample size of :func:`pair_e_value`."""
    n_eff = 1.0 / (1.0 / a.n + 1.0 / b.n)
    rs = [x for x in (a.autocorrelation, b.autocorrelation) if math.isfinite(x)]
    r = min(max([0.0, *rs]), 0.99)  # a summary has no autocorrelation: nan
    return welch.df * (1.0 - r) / (1.0 + r), n_eff


def always_valid_relative(
    comp: Comparison, alpha: float, scales: Sequence[float] = DEFAULT_SCALES
) -> tuple[float, float]:
    """The always-valid ``1 - alpha`` interval of ``(mean_a - mean_b) / mean_b``: the
    relative differences ``R`` at which :func:`pair_e_value` of ``A = (1 + R) B`` stays
    below ``1 / alpha`` (Fieller's set with :func:`~assay.stats.sequential.critical_t`
    in place of the t quantile).  It excludes 0 exactly when the pair's e-value reaches
    ``1 / alpha``, so it agrees with the always-valid stopping rule where the fixed-look
    interval (``comp.welch.rel_low``, ``rel_high``) may not: that one holds at one look
    chosen in advance, this one at every look (issue #45).  ``(-inf, inf)`` when no
    t-statistic can reach the e-value yet.

    >>> c = compare_samples(SummaryStats(1.05, 0.01, 40), SummaryStats(1.0, 0.01, 40))
    >>> low, high = always_valid_relative(c, 0.01)
    >>> low < c.welch.rel_low < c.welch.rel_high < high
    True
    """
    nu, n_eff = _evidence_size(comp.welch, comp.a, comp.b)
    crit = critical_t(alpha, nu, n_eff, scales, rel_tol=1e-6)
    if not math.isfinite(crit):
        return -math.inf, math.inf
    a, b = comp.a, comp.b
    return _fieller(a.mean, a.var / a.n, b.mean, b.var / b.n, crit)


def ranking_by_evidence(
    ranking: Ranking, scales: Sequence[float] = DEFAULT_SCALES, power: float = 0.8
) -> Ranking:
    """The same ranking with every adjacent pair judged by its always-valid e-value.

    A pair is decided when :func:`pair_e_value` reaches ``1 / ranking.alpha`` (it
    keeps ``separated`` when its CIs do not overlap, else becomes ``significant``);
    otherwise it is ``undecided``, and the extra raw samples each side needs come
    from :func:`assay.stats.sequential.samples_to_decide` (the observed
    standardized effect taken as the truth, at ``power``).  CI separation alone,
    a fixed-level test of its own, does not decide a pair here: asked after every
    cycle it would find differences that are not there.

    Examples
    --------
    >>> rng = np.random.default_rng(3)
    >>> r = rank_variants({"a": rng.normal(1.02, 0.1, 60), "b": rng.normal(1.0, 0.1, 60)})
    >>> e = ranking_by_evidence(r)
    >>> e.decided, e.pairs[0].extra_better is not None and e.pairs[0].extra_better > 0
    (False, True)
    """
    z = NormalDist().inv_cdf(power)  # stats.norm.ppf
    a = ranking.alpha

    def judge(p: PairDecision, comp: Comparison) -> PairDecision:
        if pair_e_value(comp, scales) >= 1.0 / a:
            status: PairStatus = "separated" if p.status == "separated" else "significant"
            return PairDecision(p.better, p.worse, status, comp)
        vb, vw = comp.a, comp.b
        n_eff = 1.0 / (1.0 / vb.n + 1.0 / vw.n)
        t = comp.welch.t
        effect = 0.0 if math.isnan(t) else t / math.sqrt(n_eff)
        more = samples_to_decide(effect, a, vb.n, vw.n, power_z=z, scales=scales)
        if more is None:
            why = "the means are equal" if effect == 0.0 else "the difference is too small"
            return PairDecision(p.better, p.worse, "undecided", comp, None, None, why)
        return undecided_for(p, comp, more, more)

    return rejudged(ranking, a, judge)
