"""Where a series' warm-up ends: the Marginal Standard Error Rule (MSER).

A study with one reading per round has no unit readings to find a warm-up in (Pilot's
E-Divisive path), but its first rounds can still differ from the rest: a cold page
cache, a JIT, a server that fills its buffers.  MSER (White 1997; White, Cobb & Spratt
2000) truncates the first ``d`` values where the standard error of the mean of the
rest, ``sqrt(sum((x[d:] - mean(x[d:]))**2)) / (n - d)``, is least: dropping a head that
differs from the rest narrows it more than losing those values widens it, dropping a
head like the rest does not.  In Hoad, Robinson & Davies' (2010) comparison of 42
warm-up methods it was among the few that were accurate, robust and automatic.  As is
usual, ``d`` is searched in the first half of the series only (the statistic is
unstable near the end).

MSER alone cuts a head from about a third of stationary series (its statistic is
noisy), and those cuts cost a sequential study its coverage (bench/RESULTS.md);
:func:`head_differs` is the gate a cut must pass to be kept.
"""

from __future__ import annotations

import math

import numpy as np

from assay.stats._arrays import all_finite, all_positive, mean, std
from assay.stats.autocorr import autocorrelation, lag1_upper_bound, unbiased_lag1
from assay.stats.student_t import t_quantile

#: The share of a series MSER may truncate (the search covers ``d <= MAX_FRACTION * n``).
MAX_FRACTION = 0.5
#: The level at which a head MSER found must differ from the rest to be cut
#: (:func:`head_differs`, over all the cut points MSER chose among).
HEAD_ALPHA = 0.05
#: z of the upper bound on the means' lag-1 autocorrelation the gate allows for.
HEAD_PHI_Z = 1.645


def mser_statistic(x: np.ndarray) -> np.ndarray:
    """``MSER(d)`` for every ``d`` in ``0 .. n - 2``: the sum of squared deviations of
    ``x[d:]`` from their mean, over ``(n - d)²``.

    >>> mser_statistic(np.array([5.0, 1.0, 1.2, 0.8])).round(4).tolist()
    [0.755, 0.0089, 0.02]
    """
    v = np.asarray(x, dtype=float)
    v = v - mean(v)  # centred: the suffix sums below lose nothing to cancellation
    m = np.arange(v.size, 1, -1, dtype=float)  # n - d
    s1 = np.add.accumulate(v[::-1])[::-1][: v.size - 1]
    s2 = np.add.accumulate((v * v)[::-1])[::-1][: v.size - 1]
    ss = np.maximum(s2 - s1 * s1 / m, 0.0)
    out: np.ndarray = ss / (m * m)
    return out


def mser_truncation(x: np.ndarray, max_fraction: float = MAX_FRACTION, batch: int = 1) -> int:
    """How many of the first values of ``x`` are warm-up by MSER (0: none); the
    smallest minimiser over ``d <= max_fraction * n``.  With ``batch`` > 1 the rule
    runs on the means of consecutive batches of that many values (MSER-5 with 5: less
    swayed by single values and by autocorrelation) and truncates whole batches.

    >>> rng = np.random.default_rng(1)
    >>> warm = np.r_[np.linspace(3.0, 1.2, 8), 1.0 + 0.05 * rng.standard_normal(60)]
    >>> mser_truncation(warm)
    8
    >>> mser_truncation(1.0 + 0.05 * rng.standard_normal(60))
    0
    """
    v = np.asarray(x, dtype=float)
    k = v.size // batch
    if k < 3 or not all_finite(v):
        return 0
    means = v[:k] if batch == 1 else v[: k * batch].reshape(k, batch).mean(axis=1)
    stat = mser_statistic(means)
    last = min(int(max_fraction * k), stat.size - 1)
    return int(stat[: last + 1].argmin()) * batch


def head_differs(means: np.ndarray, head: int, alpha: float = HEAD_ALPHA) -> bool:
    """Whether the first ``head`` of independent ``means`` differ from the rest by more
    than chance: Student's t of the difference of their means with the rest's standard
    deviation (of their logarithms where all are positive: timings and rates are
    right-skewed, and one far value of a heavy tail is not a warm-up), two-sided at
    ``alpha`` over the ``len(means) // 2 + 1`` cut points MSER chose among
    (Bonferroni: MSER picks the cut where the head differs most).

    On stationary values MSER still cuts a head in about a third of series of 60 (the
    minimum of a noisy statistic); the gate keeps those, whose removal would only make
    the rest look more alike than they are.

    >>> rest = np.tile([0.9, 1.0, 1.1], 10)
    >>> head_differs(np.r_[3.0, 2.0, rest], 2), head_differs(np.r_[1.08, rest], 1)
    (True, False)
    """
    v = np.asarray(means, dtype=float)
    if head < 1 or v.size - head < 2:
        return False
    if all_positive(v):
        v = np.log(v)
    rest = v[head:]
    s = std(rest, ddof=1)
    diff = abs(mean(v[:head]) - mean(rest))
    if s == 0.0:
        return diff > 0.0
    # what autocorrelation is left among the means widens both sides' errors (its
    # upper bound: a few means of an AR(1) series often read as independent)
    phi = lag1_upper_bound(unbiased_lag1(autocorrelation(rest), rest.size), rest.size, HEAD_PHI_Z)
    widen = math.sqrt((1.0 + phi) / (1.0 - phi))
    t = diff / (widen * s * math.sqrt(1.0 / head + 1.0 / rest.size))
    return t > t_quantile(1.0 - alpha / (2 * (v.size // 2 + 1)), rest.size - 1)
