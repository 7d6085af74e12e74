"""Is a t-interval of these samples valid? Checks on the shape of a benchmark's data.

A subsession t-interval (Pilot) assumes the merged samples are exchangeable draws from
one distribution whose mean is near-normal. Real benchmarks break that in three
common ways, each with its check here:

* **rounds differ** (process start, JIT, memory layout, data placement): unit readings
  inside a round agree, the rounds do not, so an interval on unit readings measures
  only the within-round noise. :func:`round_effect` tests whether the round means vary
  more than the unit-level interval predicts (an F test of a between-round variance
  component, as in Kalibera & Jones, "Rigorous benchmarking in reasonable time",
  ISMM 2013); when they do, the interval must rest on the round means.
* **the level shifts or drifts** during the study: :func:`level_shift` finds the
  change of level with E-Divisive means and a permutation test
  (:func:`assay.stats.history.e_divisive`) in the samples the interval rests on.
* **the level moves steadily** (a drift too gradual for a change point):
  :func:`level_trend` tests the slope of a straight line through the samples, its
  variance widened for the autocorrelation of what the line leaves (at an upper bound
  of its lag-1 autocorrelation), so that a stationary but autocorrelated series is not
  taken for a trend.
* **the level stepped** early or late in a short series, where E-Divisive's
  permutation test cannot reach its level (11 values split 4 | 7 have 330
  arrangements): :func:`level_step` tests the largest mean difference over all
  splits against that maximum's distribution for i.i.d. normal values (simulated,
  seeded), its variance widened for the autocorrelation the split leaves, as
  :func:`level_trend` does.
* **heavy tails**: the t-interval of a skewed distribution's mean under-covers at
  small n; :mod:`assay.stats.skewed_mean` corrects it for the skewness. (Cochran's
  rule, no interval below ``25 g1^2`` samples, was tried and dropped: the sample
  skewness is lowest on the samples that missed the tail, so the rule let studies
  stop on exactly those; bench/RESULTS.md, #21.)

All functions are pure.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from assay.stats._arrays import finite_1d
from assay.stats.drift_bound import block_means

FloatArray = npt.NDArray[np.float64]

__all__ = [
    "LevelShift",
    "LevelStep",
    "LevelTrend",
    "block_range",
    "largest_step",
    "level_shift",
    "level_step",
    "level_trend",
    "round_effect",
]


@dataclass(frozen=True)
class LevelTrend:
    """A straight line through a series: its slope per sample and the series' mean,
    the p-value of the slope (two-sided) and the lag-1 autocorrelation bound its
    variance was widened with."""

    slope: float
    mean: float
    p_value: float
    phi_bound: float

    @property
    def relative_slope(self) -> float:
        """The slope as a share of the mean, per sample (``nan`` for a zero mean)."""
        return self.slope / self.mean if self.mean else math.nan


def level_trend(samples: npt.ArrayLike, *, z: float = 1.645) -> LevelTrend | None:
    """The least-squares slope of ``samples`` against their order, tested against 0.

    The residuals of a line through an autocorrelated series are autocorrelated, and
    the slope's variance then grows by ``(1 + phi) / (1 - phi)`` (an AR(1) of lag-1
    autocorrelation phi, for a smooth regressor): it is widened at the upper bound of
    phi from the residuals (bias-corrected, ``z`` standard errors above:
    :func:`~assay.stats.autocorr.lag1_upper_bound`), a t test on n - 2 degrees of
    freedom then.  None below 8 samples or for a constant series.

    >>> t = level_trend([10.0 + 0.1 * i + (-1) ** i * 0.05 for i in range(30)])
    >>> round(t.slope, 3), t.p_value < 1e-6
    (0.1, True)
    >>> level_trend([10.0, 10.1] * 15).p_value > 0.5  # flat: no trend
    True
    """
    from scipy import stats

    from assay.stats.autocorr import autocorrelation, lag1_upper_bound, unbiased_lag1

    y = finite_1d(samples, "samples")
    n = y.size
    if n < 8 or float(np.ptp(y)) == 0.0:
        return None
    t = np.arange(n, dtype=float) - (n - 1) / 2.0
    sxx = float(t @ t)
    slope = float(t @ (y - y.mean())) / sxx
    resid = y - y.mean() - slope * t
    sse = float(resid @ resid)
    if sse <= 0.0:
        p = 0.0 if slope != 0.0 else 1.0
        return LevelTrend(slope, float(y.mean()), p, 0.0)
    phi = lag1_upper_bound(unbiased_lag1(autocorrelation(resid), n), n, z)
    se = math.sqrt(sse / (n - 2) / sxx * (1.0 + phi) / (1.0 - phi))
    p = float(2.0 * stats.t.sf(abs(slope) / se, n - 2))
    return LevelTrend(slope, float(y.mean()), p, phi)


@dataclass(frozen=True)
class LevelStep:
    """The largest step in a series: values from ``index`` on have mean ``mean_after``,
    those before ``mean_before``; ``p_value`` of "no step anywhere" (the maximum over
    every split, :func:`level_step`), ``phi_bound`` the autocorrelation it allowed for."""

    index: int
    mean_before: float
    mean_after: float
    p_value: float
    phi_bound: float
    # with a known variance: p of "the values vary around the two means no more than
    # that variance says" (an F test, as :func:`round_effect`); nan without one
    residual_p: float = math.nan


#: Series simulated per length for :func:`level_step`'s null distribution: p-values
#: down to 1/2000, the same for the same length (seeded).
STEP_NULL_DRAWS = 1999


def _split_t(y: FloatArray, min_size: int) -> tuple[FloatArray, FloatArray]:
    """Per row of ``y`` (series × n), the t statistic of every split ``k`` in
    ``[min_size, n - min_size]`` (pooled variance around the two means) and the
    splits' residual sums of squares."""
    n = y.shape[-1]
    k = np.arange(min_size, n - min_size + 1, dtype=float)
    c = np.cumsum(y, axis=-1)[..., min_size - 1 : n - min_size]
    total = c[..., -1:] + np.sum(y[..., n - min_size :], axis=-1, keepdims=True)
    m1 = c / k
    m2 = (total - c) / (n - k)
    sse = np.sum(y * y, axis=-1, keepdims=True) - k * m1 * m1 - (n - k) * m2 * m2
    sse = np.maximum(sse, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.abs(m2 - m1) / np.sqrt(sse / (n - 2) * (1.0 / k + 1.0 / (n - k)))
    return t, sse


def _split_z(y: FloatArray, min_size: int) -> FloatArray:
    """Per row of ``y`` (values of unit variance), the z of every split's two means."""
    n = y.shape[-1]
    k = np.arange(min_size, n - min_size + 1, dtype=float)
    c = np.cumsum(y, axis=-1)[..., min_size - 1 : n - min_size]
    diff = (np.sum(y, axis=-1, keepdims=True) - c) / (n - k) - c / k
    return np.asarray(np.abs(diff) / np.sqrt(1.0 / k + 1.0 / (n - k)), dtype=np.float64)


@functools.lru_cache(maxsize=64)
def _max_z_null(n: int, min_size: int, head: int | None = None) -> FloatArray:
    """The sorted maxima over splits of :func:`_split_z` (the first ``head - min_size
    + 1`` of them with ``head``) for i.i.d. standard normal series of length ``n``."""
    rng = np.random.default_rng(20261129 + n)
    z = _split_z(rng.standard_normal((STEP_NULL_DRAWS, n)), min_size)
    if head is not None:
        z = z[:, : head - min_size + 1]
    return np.sort(np.max(z, axis=-1))


@functools.lru_cache(maxsize=64)
def _max_t_null(n: int, min_size: int, head: int | None = None) -> FloatArray:
    """The sorted maxima over splits of :func:`_split_t` (the first ``head - min_size
    + 1`` of them with ``head``) for i.i.d. normal series of length ``n``: the
    reference :func:`level_step` compares its maximum with."""
    rng = np.random.default_rng(20261129 + n)
    t, _ = _split_t(rng.standard_normal((STEP_NULL_DRAWS, n)), min_size)
    if head is not None:
        t = t[:, : head - min_size + 1]
    return np.sort(np.max(t, axis=-1))


def level_step(
    samples: npt.ArrayLike,
    *,
    min_size: int = 3,
    z: float | None = 1.645,
    max_samples: int = 60,
    variance: float | None = None,
    variance_df: float = math.inf,
    head: int | None = None,
) -> LevelStep | None:
    """The largest step in ``samples`` and whether it is more than noise.

    Every split into ``samples[:k]`` and ``samples[k:]`` (each at least ``min_size``
    long) gets the t statistic of its two means (pooled variance); the largest is
    widened for the lag-1 autocorrelation of what the two means leave (its
    bias-corrected value ``z`` standard errors up, as :func:`level_trend`; not at all
    with ``z=None``, for values already taken as independent) and
    compared with the largest of i.i.d. normal series of the same length
    (:data:`STEP_NULL_DRAWS` of them, seeded). Unlike a permutation test its p-value
    has no floor at few samples. Series longer than ``max_samples`` are read as the
    means of equal blocks (``index`` is in the input's units). None below
    ``2 * min_size + 2`` values or for a constant series.

    With ``variance`` (each value's, known from elsewhere on ``variance_df`` degrees
    of freedom: a round mean's, from the unit readings inside the rounds) each split
    is a z test on it instead, against the maximum of i.i.d. standard normal series,
    and ``residual_p`` says whether the values vary around the two means no more than
    that variance allows (when they do not, the z test does not hold: use the t one).

    With ``head`` the splits are those whose first part holds at most ``head`` values,
    and so is the reference: whether the first values sit apart from
    the rest (an early step), with the power of a few splits rather than all.

    >>> x = [10.0, 10.1, 9.9, 10.0, 10.3, 10.4, 10.2, 10.3, 10.35, 10.25, 10.3]
    >>> s = level_step(x, z=None)  # taken as independent
    >>> s.index, round(s.mean_after - s.mean_before, 2), s.p_value < 0.002
    (4, 0.3, True)
    >>> level_step(x).p_value > 0.01  # an AR(1) up to 0.5 could give it: widened
    True
    >>> level_step([10.0, 10.1, 9.9, 10.0, 10.1, 9.9, 10.0, 10.1, 9.9, 10.0]).p_value > 0.5
    True
    """
    from assay.stats.autocorr import autocorrelation, lag1_upper_bound, unbiased_lag1

    y, block, scale = _prepared(samples, max_samples)
    n = y.size
    if n < 2 * min_size + 2 or float(np.ptp(y)) == 0.0:
        return None
    if head is not None:
        head = min(head, n - min_size) // block
        if head < min_size:
            return None
    if variance is not None:
        return _known_variance_step(y, block, scale, min_size, variance, variance_df, head)
    t, sse = _split_t(y, min_size)
    if head is not None:
        t, sse = t[: head - min_size + 1], sse[: head - min_size + 1]
    if not np.any(np.isfinite(t)):
        return None  # every split leaves no variance: two constant segments
    i = int(np.nanargmax(np.where(np.isfinite(t), t, -np.inf)))
    k = min_size + i
    before, after = float(y[:k].mean()), float(y[k:].mean())
    resid = np.concatenate([y[:k] - before, y[k:] - after])
    phi = 0.0 if z is None else lag1_upper_bound(unbiased_lag1(autocorrelation(resid), n), n, z)
    widened = float(t[i]) / math.sqrt((1.0 + phi) / (1.0 - phi)) if sse[i] > 0 else math.inf
    null = _max_t_null(n, min_size, head)
    exceed = int(null.size - np.searchsorted(null, widened, side="left"))
    return LevelStep(
        index=k * block,
        mean_before=before * scale,
        mean_after=after * scale,
        p_value=(exceed + 1) / (null.size + 1),
        phi_bound=phi,
    )


def _known_variance_step(
    y: FloatArray,
    block: int,
    scale: float,
    min_size: int,
    variance: float,
    df: float,
    head: int | None = None,
) -> LevelStep | None:
    """:func:`level_step` of the prepared values ``y`` (blocks of ``block`` values,
    divided by ``scale``) whose every input value has ``variance`` (with ``head``: the
    splits whose first part holds at most ``head`` values)."""
    from scipy import stats  # the analysis needs SciPy; start-up does not

    if not (variance > 0 and math.isfinite(variance)):
        return None
    unit = math.sqrt(variance / block) / scale  # one prepared value's standard deviation
    zs = _split_z(y / unit, min_size)
    if head is not None:
        zs = zs[: head - min_size + 1]
    i = int(np.argmax(zs))
    k, n = min_size + i, y.size
    before, after = float(y[:k].mean()), float(y[k:].mean())
    resid = np.concatenate([y[:k] - before, y[k:] - after]) / unit
    ratio = float(resid @ resid) / (n - 2)  # 1 when only the known variance is there
    null = _max_z_null(n, min_size, head)
    exceed = int(null.size - np.searchsorted(null, float(zs[i]), side="left"))
    return LevelStep(
        index=k * block,
        mean_before=before * scale,
        mean_after=after * scale,
        p_value=(exceed + 1) / (null.size + 1),
        phi_bound=0.0,
        residual_p=float(stats.f.sf(ratio, n - 2, max(df, 1.0))),
    )


def round_effect(round_means: npt.ArrayLike, variance_of_mean: float, df_within: float) -> float:
    """p-value of "the rounds share one mean" against a between-round variance component.

    Under that hypothesis the variance of the grand mean estimated from the ``R`` round
    means, ``s^2(round means) / R``, estimates the same quantity as the unit-level
    interval's ``variance_of_mean`` (its squared standard error, on ``df_within``
    degrees of freedom), so their ratio follows F(R - 1, df_within); a large ratio says
    the rounds differ by more than their unit readings explain.

    >>> round(round_effect([10.0, 12.0, 10.1, 11.9], 0.0025, 800), 6)
    0.0
    >>> round_effect([10.0, 10.05, 9.95, 10.02], 0.01, 800) > 0.5
    True
    """
    from scipy import stats  # the analysis needs SciPy; start-up does not

    m = finite_1d(round_means)
    r = int(m.size)
    if r < 2 or not (variance_of_mean > 0 and math.isfinite(variance_of_mean)):
        return 1.0
    between = float(np.var(m, ddof=1)) / r
    f = between / variance_of_mean
    return float(stats.f.sf(f, r - 1, max(float(df_within), 1.0)))


def block_range(
    samples: npt.ArrayLike, blocks: int = 10, harmonic: bool = False
) -> tuple[float, float, float] | None:
    """The lowest and the highest mean of ``blocks`` consecutive, (near) equal blocks of
    ``samples``, with the mean of all: a bound on the mean over a series whose level
    moved, which no t-interval describes (None: fewer than two samples per block).

    The mean over the series is the average of the blocks' true means, so it lies between
    the lowest and the highest of them; the observed block means scatter around those,
    and all of them fall on one side of the mean over the series only when the noise
    pushes every block that way: for a stationary series, with probability
    ``2 * 0.5**blocks`` (0.2% for 10). The bound is wide (it holds the whole drift);
    it answers a target wider than the drift (a ±50% question on a series that moved
    3%), not a narrow one. ``harmonic``: the samples are rates over equal work, and the
    means are harmonic.

    >>> block_range([1.0, 1.2, 1.0, 1.2, 2.0, 2.2, 2.0, 2.2], blocks=4)
    (1.1, 1.6, 2.1)
    >>> block_range([1.0, 2.0], blocks=2) is None
    True
    """
    means = block_means(samples, blocks, harmonic=harmonic, min_per_block=2)
    if means is None:
        return None
    z = finite_1d(samples)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        mean = float(1.0 / np.mean(1.0 / z)) if harmonic else float(z.mean())
    return float(means.min()), mean, float(means.max())


def _prepared(samples: npt.ArrayLike, max_samples: int) -> tuple[FloatArray, int, float]:
    """The samples as E-Divisive reads them: means of equal blocks when longer than
    ``max_samples`` (its permutation test holds n x n matrices), divided by their
    largest magnitude (readings near 1e308 would overflow its differences; the
    statistic's argmax and p-value do not depend on the scale); with the block size
    and the scale."""
    z = finite_1d(samples)
    block = max(1, math.ceil(z.size / max_samples))
    if block > 1:
        m = z.size // block
        z = z[: m * block].reshape(m, block).mean(axis=1)
    scale = float(np.max(np.abs(z))) if z.size else 1.0
    scale = scale or 1.0
    return z / scale, block, scale


@dataclass(frozen=True)
class LevelShift:
    """A change of level: the samples from ``index`` on differ from those before it.

    ``mean_before``/``mean_after`` are the means of the two segments around the change
    (between the neighbouring change points, if there are several), with Welch's
    interval of the difference of ``after - before`` in ``diff_low``/``diff_high``.
    """

    index: int
    p_value: float
    mean_before: float
    mean_after: float
    diff_low: float
    diff_high: float
    changes: int  # change points found in all
    test: str = "E-Divisive means, permutation"  # what found it, for the report


def level_shift(
    samples: npt.ArrayLike,
    alpha: float = 0.01,
    min_size: int = 3,
    permutations: int = 199,
    confidence: float = 0.95,
    max_samples: int = 120,
) -> LevelShift | None:
    """The most significant change of level in ``samples``, or None when there is none.

    E-Divisive means with a permutation test (:func:`assay.stats.history.e_divisive`);
    the samples must be (nearly) uncorrelated under "no change", as subsession means
    are, or autocorrelated noise reads as shifts. A steady drift shows as a change too.
    The shuffles are seeded, so the same samples give the same answer. A series longer
    than ``max_samples`` is tested on the means of equal blocks of it (the permutation
    test holds ``permutations`` n x n matrices); ``index`` is in the input's units.

    >>> x = [10.0, 10.2, 9.9, 10.1, 10.0, 9.8, 11.0, 11.1, 10.9, 11.2, 11.0, 10.8]
    >>> s = level_shift(x)
    >>> s.index, round(s.mean_after - s.mean_before, 2)
    (6, 1.0)
    >>> level_shift([10.0, 10.2, 9.9, 10.1, 10.0, 9.8, 10.1, 10.2, 9.9, 10.0]) is None
    True
    """
    from assay.stats.history import e_divisive, segment_steps

    z, block, scale = _prepared(samples, max_samples)
    if z.size < 2 * min_size:
        return None
    points = e_divisive(z, alpha=alpha, permutations=permutations, min_size=min_size)
    if not points:
        return None
    best = min(points, key=lambda c: (c.p_value, -c.statistic))
    step = next(
        s for s in segment_steps(z, [c.index for c in points], confidence) if s.index == best.index
    )
    return LevelShift(
        index=best.index * block,
        p_value=best.p_value,
        mean_before=step.mean_before * scale,
        mean_after=step.mean_after * scale,
        diff_low=step.welch.diff_low * scale,
        diff_high=step.welch.diff_high * scale,
        changes=len(points),
    )


def largest_step(
    samples: npt.ArrayLike, min_size: int = 3, max_samples: int = 120
) -> tuple[int, float, float] | None:
    """Where the level of ``samples`` changes most, untested: E-Divisive's best single
    split (the largest energy statistic), with the means on either side; None when
    there are too few samples. For a series that has no interval anyway (its
    autocorrelation does not merge away), where a permutation test would be invalid and
    slow; ``index`` is in the input's units (block means of longer series, as
    :func:`level_shift`).

    >>> largest_step([1.0, 1.1, 0.9, 1.0, 3.0, 3.1, 2.9, 3.0])
    (4, 1.0, 3.0)
    """
    from assay.stats.history import energy_statistics

    z, block, scale = _prepared(samples, max_samples)
    if z.size < 2 * min_size:
        return None
    k = min_size + int(np.argmax(energy_statistics(z, min_size)))
    return k * block, float(z[:k].mean()) * scale, float(z[k:].mean()) * scale
