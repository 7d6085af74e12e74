"""Change points in a performance history: E-Divisive means with a permutation test.

A history is one value per commit (a study's mean at each revision), oldest first.
MongoDB's performance CI finds the commits where such a series steps with E-Divisive
means (Matteson & James, "A nonparametric approach for multiple change point
analysis of multivariate data", JASA 2014) and a permutation test of every candidate
(Daly et al., "The use of change point detection to identify software performance
regressions in a continuous integration system", ICPE 2020):

1. for each segment between the change points found so far (at first the whole
   series) and each split ``tau`` leaving at least ``min_size`` values on each side,
   the energy statistic ``q(tau)`` (:func:`energy_statistics`); the candidate is the
   split of largest ``q`` over all segments;
2. the candidate is tested by permutation: every segment is shuffled on its own
   ``permutations`` times and the largest ``q`` of the shuffled series recorded;
   ``p = (1 + #{shuffled >= observed}) / (1 + permutations)`` (Matteson & James'
   p-value; MongoDB's code leaves out the 1 in the numerator, which makes ``p`` too
   small);
3. while ``p <= alpha`` the candidate is kept and the search goes on in the segments
   it made (recursive bisection); the first ``p > alpha`` stops it.

As in MongoDB's implementation (and unlike ``ecp``'s, which also searches the end
``kappa`` of the right-hand sample), the right-hand sample of a split runs to the end
of its segment. The statistic uses ``|x - y|`` (exponent 1).

Under the null (a series of exchangeable values) the first test is an exact
permutation test, so a change-free history gets a change point with probability at
most ``alpha``; bench/bench_history.py measures that rate and the power.

Each change point's step is estimated by :func:`segment_steps`: Welch's interval
(:func:`assay.stats.compare.welch_test`) of the difference between the means of the
segments on either side, the per-commit values being its samples.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from assay.stats._arrays import finite_1d
from assay.stats.compare import WelchResult, welch_test

__all__ = [
    "ChangePoint",
    "Step",
    "e_divisive",
    "energy_statistics",
    "permutation_p_value",
    "segment_steps",
]

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class ChangePoint:
    """A change point: a new segment starts at ``index``.

    Attributes
    ----------
    index : int
        The first value after the change (the first commit of the new level).
    statistic : float
        The energy statistic ``q`` of the split when it was found.
    p_value : float
        Its permutation p-value.
    """

    index: int
    statistic: float
    p_value: float


@dataclass(frozen=True)
class Step:
    """The step at a change point: the segment after it against the one before it.

    ``welch`` is Welch's test of ``mean(after) - mean(before)``, with the confidence
    interval of the difference (``diff_low``, ``diff_high``) and Fieller's interval of
    the relative difference (``rel_low``, ``rel_high``).
    """

    index: int
    before: tuple[int, int]  # half-open range of the segment before
    after: tuple[int, int]
    mean_before: float
    mean_after: float
    welch: WelchResult


def _check(min_size: int, alpha: float, permutations: int) -> None:
    if isinstance(min_size, bool) or not isinstance(min_size, int) or min_size < 2:
        raise ValueError(f"min_size must be an integer >= 2, got {min_size!r}")
    if not (isinstance(alpha, int | float) and 0.0 < alpha < 1.0):
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    if isinstance(permutations, bool) or not isinstance(permutations, int) or permutations < 1:
        raise ValueError(f"permutations must be an integer >= 1, got {permutations!r}")


def _qhat(z: FloatArray, min_size: int) -> FloatArray:
    """``q(tau)`` for ``tau = min_size .. n - min_size`` of each row of ``z`` (2-D).

    With ``D = |z_i - z_j|`` and ``P[t, u]`` the sum of ``D`` over ``i < t, j < u``, the
    between-sample sum of split ``tau`` is ``P[tau, n] - P[tau, tau]``, the left
    within-sample sum ``P[tau, tau] / 2`` and the right one ``(P[n, n] - 2 P[tau, n] +
    P[tau, tau]) / 2``.  Only those entries are needed: ``P[t, n]`` is a running sum of
    D's row sums and ``P[t, t]`` one of twice its sums below the diagonal, so every split
    of every row costs O(1) after O(n²) per row (2-D prefix sums of all of D took 2.5×
    as long: issue #17).
    """
    rows, n = z.shape
    d = np.abs(z[:, :, None] - z[:, None, :])
    row_sums = np.zeros((rows, n + 1))
    np.cumsum(d.sum(axis=2), axis=1, out=row_sums[:, 1:])
    diagonal = np.zeros((rows, n + 1))
    np.cumsum(np.tril(d, -1).sum(axis=2), axis=1, out=diagonal[:, 1:])
    diagonal *= 2.0
    tau = np.arange(min_size, n - min_size + 1)
    m = n - tau
    corner = diagonal[:, tau]
    row = row_sums[:, tau]
    between = row - corner
    left = corner / 2.0
    right = (row_sums[:, n][:, None] - 2.0 * row + corner) / 2.0
    energy = (
        2.0 * between / (tau * m) - left / (tau * (tau - 1) / 2.0) - right / (m * (m - 1) / 2.0)
    )
    return np.asarray(tau * m / n * energy, dtype=np.float64)


def energy_statistics(x: npt.ArrayLike, min_size: int = 3) -> FloatArray:
    """E-Divisive's statistic ``q(tau)`` of every split of ``x`` into ``x[:tau]``, ``x[tau:]``.

    ``q(tau) = tau m / n * (2/(tau m) sum|x_i - y_j| - sum_{i<k}|x_i - x_k| / C(tau, 2)
    - sum_{j<l}|y_j - y_l| / C(m, 2))`` with ``m = n - tau``; entry ``k`` of the
    result is the split ``tau = min_size + k`` (empty when ``n < 2 * min_size``).

    >>> energy_statistics([0.0, 0.0, 1.0, 1.0], min_size=2).tolist()
    [2.0]
    """
    z = finite_1d(x)
    _check(min_size, 0.5, 1)
    if z.size < 2 * min_size:
        return np.empty(0, dtype=np.float64)
    return np.asarray(_qhat(z[None, :], min_size)[0], dtype=np.float64)


def _best_split(z: FloatArray, bounds: Sequence[int], min_size: int) -> tuple[float, int]:
    """The largest ``q`` over all segments and the split that gives it (-1: none)."""
    best, at = -math.inf, -1
    for a, b in itertools.pairwise(bounds):
        if b - a < 2 * min_size:
            continue
        q = _qhat(z[None, a:b], min_size)[0]
        k = int(np.argmax(q))
        if q[k] > best:
            best, at = float(q[k]), a + min_size + k
    return best, at


#: Bytes of one of :func:`_qhat`'s temporaries per call in :func:`_shuffled_maxima`.
_CHUNK_BYTES = 1 << 19


def _shuffled_maxima(
    z: FloatArray,
    bounds: Sequence[int],
    min_size: int,
    permutations: int,
    rng: np.random.Generator,
    *,
    observed: float = math.inf,
    enough: int | None = None,
) -> FloatArray | None:
    """The largest ``q`` of each of ``permutations`` series, each segment shuffled alone.

    With ``enough``: None as soon as more than ``enough`` series are as extreme as
    ``observed`` (as :func:`_p_value` counts; a series' maximum only grows as more
    segments are shuffled), where a test that rejects with at most ``enough`` of them
    no longer can.  The shuffles drawn are the same either way, in the same order.
    """
    top = np.full(permutations, -np.inf)
    for a, b in itertools.pairwise(bounds):
        if b - a < 2 * min_size:
            continue
        # a few rows at a time: each of _qhat's n x n temporaries stays in the caches
        # (all 999 shuffles of 60 values at once: 29 MB each, 8x slower, issue #17)
        rows = max(8, _CHUNK_BYTES // (8 * (b - a) ** 2))
        for i in range(0, permutations, rows):
            k = min(rows, permutations - i)
            shuffled = rng.permuted(np.tile(z[a:b], (k, 1)), axis=1)
            top[i : i + k] = np.maximum(top[i : i + k], _qhat(shuffled, min_size).max(axis=1))
            if enough is not None and _as_extreme(observed, top) > enough:
                return None
    return top


def _as_extreme(observed: float, maxima: FloatArray) -> int:
    # ties count against the change (a shuffle as extreme as the data): 1e-9 relative
    # slack keeps rounding in the prefix sums from turning a tie into a "significant" one
    return int(np.count_nonzero(maxima >= observed - 1e-9 * abs(observed)))


def _most_as_extreme(alpha: float, permutations: int) -> int:
    """The most shuffles as extreme as the data with which ``p <= alpha`` (-1: none)."""
    g = int(alpha * (permutations + 1))
    while g >= 0 and (1 + g) / (1 + permutations) > alpha:
        g -= 1
    while (2 + g) / (1 + permutations) <= alpha:
        g += 1
    return g


def _p_value(observed: float, maxima: FloatArray) -> float:
    return (1 + _as_extreme(observed, maxima)) / (1 + maxima.size)


def permutation_p_value(
    x: npt.ArrayLike,
    min_size: int = 3,
    permutations: int = 199,
    seed: int | np.random.Generator = 0,
) -> float:
    """The permutation p-value of the best single split of ``x`` (step 2 of the module
    notes, on one segment): 1.0 when ``x`` is too short to split.

    >>> permutation_p_value([1.0] * 10 + [5.0] * 10, permutations=99, seed=1)
    0.01
    >>> permutation_p_value([1.0] * 20, permutations=99)
    1.0
    """
    z = finite_1d(x)
    _check(min_size, 0.5, permutations)
    bounds = [0, int(z.size)]
    observed, at = _best_split(z, bounds, min_size)
    if at < 0:
        return 1.0
    rng = np.random.default_rng(seed)
    maxima = _shuffled_maxima(z, bounds, min_size, permutations, rng)
    assert maxima is not None  # without `enough`: every shuffle
    return _p_value(observed, maxima)


def e_divisive(
    x: npt.ArrayLike,
    alpha: float = 0.05,
    permutations: int = 199,
    min_size: int = 3,
    seed: int | np.random.Generator = 0,
) -> list[ChangePoint]:
    """Change points of ``x`` by E-Divisive means with a permutation test (module notes).

    Parameters
    ----------
    x : array_like
        1-D series of finite values (one per commit, oldest first).
    alpha : float, default 0.05
        Significance level of each candidate's permutation test; the search stops at
        the first candidate with ``p > alpha``.
    permutations : int, default 199
        Shuffles per test (the smallest possible p-value is ``1 / (permutations + 1)``).
    min_size : int, default 3
        Fewest values on either side of a change point (>= 2).
    seed : int or numpy Generator, default 0
        Seed of the shuffles: the same series gives the same answer.

    Returns
    -------
    list of ChangePoint
        Sorted by index.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(1)
    >>> x = np.concatenate([rng.normal(100, 1, 12), rng.normal(105, 1, 12)])
    >>> [c.index for c in e_divisive(x)]
    [12]
    """
    z = finite_1d(x)
    _check(min_size, alpha, permutations)
    rng = np.random.default_rng(seed)
    enough = _most_as_extreme(alpha, permutations)
    found: list[ChangePoint] = []
    if z.size == 0 or np.all(z == z[0]):
        return found
    while True:
        bounds = [0, *sorted(c.index for c in found), int(z.size)]
        observed, at = _best_split(z, bounds, min_size)
        if at < 0 or observed <= 0.0:
            break
        # the test stops as soon as it can no longer reject (a stationary series: after
        # a few dozen shuffles instead of all), with the decision all would give
        maxima = _shuffled_maxima(
            z, bounds, min_size, permutations, rng, observed=observed, enough=enough
        )
        if maxima is None:
            break
        p = _p_value(observed, maxima)
        if p > alpha:
            break
        found.append(ChangePoint(at, observed, p))
    return sorted(found, key=lambda c: c.index)


def segment_steps(x: npt.ArrayLike, points: Sequence[int], confidence: float = 0.95) -> list[Step]:
    """The step at each change point: Welch's interval of ``mean(after) - mean(before)``,
    the segments being the ranges between neighbouring change points.

    >>> s = segment_steps([10.0, 11.0, 10.0, 20.0, 21.0, 20.0], [3])[0]
    >>> s.before, s.after, round(s.welch.difference, 6)
    ((0, 3), (3, 6), 10.0)
    """
    z = finite_1d(x)
    pts = sorted(int(p) for p in points)
    bounds = [0, *pts, int(z.size)]
    steps = []
    for k, c in enumerate(pts):
        a, b = bounds[k], bounds[k + 2]
        before, after = z[a:c], z[c:b]
        if before.size < 2 or after.size < 2:
            raise ValueError(f"change point {c}: each side needs at least 2 values")
        welch = welch_test(
            float(after.mean()),
            float(after.var(ddof=1)),
            int(after.size),
            float(before.mean()),
            float(before.var(ddof=1)),
            int(before.size),
            confidence,
        )
        steps.append(Step(c, (a, c), (c, b), float(before.mean()), float(after.mean()), welch))
    return steps
