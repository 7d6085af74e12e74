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
* **heavy tails**: the t-interval of a skewed distribution's mean under-covers at
  small n; :mod:`assay.stats.skewed_mean` corrects it for the skewness. (Cochran's
  rule, no interval below ``25 g1^2`` samples, was tried and dropped: the sample
  skewness is lowest on the samples that missed the tail, so the rule let studies
  stop on exactly those; bench/RESULTS.md, #21.)

All functions are pure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from assay.stats._arrays import finite_1d

FloatArray = npt.NDArray[np.float64]

__all__ = [
    "LevelShift",
    "LevelTrend",
    "block_range",
    "largest_step",
    "level_shift",
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
    z = finite_1d(samples)
    if blocks < 1 or z.size < 2 * blocks:
        return None
    if harmonic:
        if not bool(np.all(z > 0)):
            return None
        z = 1.0 / z
    with np.errstate(over="ignore", invalid="ignore"):  # near float's limits: inf, said
        means = np.array([float(b.mean()) for b in np.array_split(z, blocks)])
        mean = float(z.mean())
    if harmonic:
        means, mean = 1.0 / means, 1.0 / mean
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
