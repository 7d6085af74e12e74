"""Non-stable phase removal by E-Divisive with Medians (EDM), as in Pilot.

Pilot (Li et al., "Pilot: a framework that understands how to do performance
benchmarks the right way", §III-A(a)) removes warm-up and cool-down phases from
a round's unit readings by running the *EDM-percent* change-point detector of
BreakoutDetection (James, Kejariwal & Matteson, "Leveraging cloud data to
mitigate user experience from 'breaking bad'", arXiv:1411.7955) with
``min_size=30``, ``percent=0.25`` and ``degree=1``, and then keeping the
*dominant* segment: the longest segment between change points, provided it
holds more than half of the samples. If no segment does, the round contributes
no unit readings at all.

Public functions
----------------
edm_percent
    The exact EDM-percent dynamic programme, vectorised with numpy/pandas.
detect_change_points
    ``edm_percent`` for short series, a block-median approximation (with exact
    local refinement) for long ones.
dominant_segment
    Pilot's rule for picking the stable segment.

Behaviour worth knowing (measured on synthetic series, sigma-1 Gaussian noise,
with Pilot's settings; see tests/test_changepoint.py):

* The ``percent`` penalty only prunes a change point *relative to an earlier
  one*, so the first change point is never pruned: any series of at least
  ``2 * min_size`` values that are not tied enough to make every split score
  zero gets at least one change point, even pure i.i.d. noise. The spurious
  points sit near the start; on N(5, 1) noise of length 1000 the dominant
  segment keeps 73% to 97% of the readings (median 90%) and always ends at n.
* The penalty grows with the number of change points (``degree=1``: a change
  point added to a segmentation with k of them must raise the score by
  ``percent * (k + 1)`` of it), and the score of an early change is inflated
  by being evaluated on a short, balanced prefix. So a cool-down that is
  smaller than the warm-up is usually pruned (kept in the "stable" segment),
  a linear warm-up ramp is typically cut only about half-way, and three
  equal plateaus at 0, 100 and 200 are usually split only once, the last two
  plateaus being taken together as the dominant segment.
* The median statistic favours balanced splits: a change close to the end of
  the series is placed early (a 100-reading, 10-sigma cool-down in 1000
  readings was cut 51 to 85 readings early), because the median of the last
  segment stays inside the cool-down cluster until that segment is nearly
  half stable readings. This wastes stable readings but does not keep
  cool-down ones.

The recurrence implemented here (left median over ``x[prev[t]:t]``, penalty
factor ``G(k) = 1, k + 1, (k + 1)**2``) is not bit-compatible with Twitter's
BreakoutDetection C++ code, of which Pilot builds a patched copy: there the
left median runs over the whole prefix ``x[:t]`` (the left multiset is never
emptied between splits), and the penalty factors are ``0, 1, 2k + 1`` for
degree 0, 1, 2. On the synthetic series above that variant reports more
change points and starts the dominant segment later.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from assay.stats._arrays import finite_1d

__all__ = [
    "MIN_CHANGEPOINT_DETECTION_SAMPLE_SIZE",
    "StableSegment",
    "detect_change_points",
    "dominant_segment",
    "edm_percent",
]

MIN_CHANGEPOINT_DETECTION_SAMPLE_SIZE = 30
"""Below this many unit readings Pilot runs no detection and keeps them all."""

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


# ---------------------------------------------------------------------------
# validation and small helpers
# ---------------------------------------------------------------------------


def _check_params(min_size: int, percent: float, degree: int) -> None:
    if isinstance(min_size, bool) or not isinstance(min_size, int | np.integer):
        raise ValueError(f"min_size must be an integer, got {min_size!r}")
    if min_size < 2:
        raise ValueError(f"min_size must be >= 2, got {min_size}")
    if not (isinstance(percent, int | float | np.floating) and math.isfinite(percent)):
        raise ValueError(f"percent must be a finite number, got {percent!r}")
    if percent < 0:
        raise ValueError(f"percent must be >= 0, got {percent}")
    if isinstance(degree, bool) or degree not in (0, 1, 2):
        raise ValueError(f"degree must be 0, 1 or 2, got {degree!r}")


def _penalty_growth(k: int, degree: int) -> float:
    """G(k) of EDM-percent: 1, k + 1 or (k + 1)**2 for degree 0, 1, 2."""
    if degree == 0:
        return 1.0
    if degree == 1:
        return float(k + 1)
    return float((k + 1) ** 2)


def _expanding_median(values: FloatArray) -> FloatArray:
    """``out[k] = median(values[: k + 1])`` in O(len log len), computed in C by pandas."""
    if values.size == 0:
        return np.empty(0, dtype=np.float64)
    import pandas as pd  # here: pandas takes ~0.3 s to import; not before the first trial

    med = pd.Series(values, copy=False).expanding().median().to_numpy(dtype=np.float64)
    return np.asarray(med, dtype=np.float64)


@functools.cache
def _piecewise_indexer() -> Any:
    """The pandas window indexer class that restarts an expanding window at each piece's
    offset (made on first use: it subclasses a pandas class, and pandas is imported late)."""
    from pandas.api.indexers import BaseIndexer

    class PiecewiseExpandingIndexer(BaseIndexer):  # type: ignore[misc]
        def __init__(self, start: IntArray, end: IntArray) -> None:
            super().__init__()
            self._start = start
            self._end = end

        def get_window_bounds(
            self,
            num_values: int = 0,
            min_periods: int | None = None,
            center: bool | None = None,
            closed: str | None = None,
            step: int | None = None,
        ) -> tuple[IntArray, IntArray]:
            return self._start, self._end

    return PiecewiseExpandingIndexer


def _piecewise_expanding_median(values: FloatArray, lengths: IntArray) -> FloatArray:
    """Expanding medians restarted at each piece of ``values`` (pieces of ``lengths``).

    One pandas call for many expanding medians: the skiplist restarts whenever a
    window begins at or after the previous window's end, so the cost is that of
    the separate calls without their per-call overhead.
    """
    if values.size == 0:
        return np.empty(0, dtype=np.float64)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    start = np.repeat(offsets, lengths).astype(np.int64)
    end = np.arange(1, values.size + 1, dtype=np.int64)
    import pandas as pd  # here: pandas takes ~0.3 s to import; not before the first trial

    rolled = pd.Series(values, copy=False).rolling(_piecewise_indexer()(start, end), min_periods=1)
    return np.asarray(rolled.median().to_numpy(dtype=np.float64), dtype=np.float64)


def _median(values: FloatArray) -> float:
    return float(np.median(values))


# ---------------------------------------------------------------------------
# exact EDM-percent
# ---------------------------------------------------------------------------


def edm_percent(
    x: npt.ArrayLike,
    min_size: int = 30,
    percent: float = 0.25,
    degree: int = 1,
) -> list[int]:
    """Change points of ``x`` by E-Divisive with Medians, percent-penalty variant.

    The EDM-percent dynamic programme (after BreakoutDetection's ``EDM-percent``,
    James, Kejariwal & Matteson, arXiv:1411.7955; the module notes say how it
    differs from that package's code), computed exactly, with the inner loop
    over split positions vectorised. With ``F[s]`` the best score
    of the prefix ``x[:s]``, ``prev[s]`` its last change point and
    ``number[s]`` its number of change points, for ``s = 2*min_size .. n``::

        for t in min_size .. s - min_size:
            w   = (t - prev[t]) * (s - t) / (s - prev[t])**2
            tmp = F[t] + w * (median(x[prev[t]:t]) - median(x[t:s]))**2
            if tmp > F[s]:                    # first maximiser wins; F[s] starts at 0
                F[s], prev[s], number[s] = tmp, t, number[t] + 1
        p = prev[s]
        if p != 0 and F[s] - F[p] < percent * G(number[p]) * F[p]:
            number[s], F[s], prev[s] = number[p], F[p], prev[p]

    with ``G(k) = 1, k + 1, (k + 1)**2`` for ``degree = 0, 1, 2``. The change
    points are read back by following ``prev`` from ``n``. The series is not
    rescaled (the choice of split is scale-invariant up to floating-point ties).

    Cost: O(n² log n) time, O(n) memory plus a fixed buffer of about 40 MB.
    Step ``s`` needs ``median(x[t:s])`` for every ``t``: the expanding median
    of the reversed prefix, computed in C by pandas (a skiplist), batched over
    many steps per call since it does not depend on the DP state; and
    ``median(x[prev[t]:t])``, which is fixed once step ``t`` is done and so is
    computed once per ``t``. Measured on a 2-core AMD EPYC VM: 0.16 s at
    n = 1000, 0.8 s at n = 2000, 2.4 s at n = 4000. Use
    :func:`detect_change_points` for long series.

    Note that the penalty compares a new change point with the score of the
    previous one, so the first change point (whose predecessor has score 0)
    is never pruned: on pure noise of length ``>= 2 * min_size`` at least one
    change point is reported unless ties make every split score zero.

    Parameters
    ----------
    x : array_like
        1-D series of finite values (e.g. unit readings in time order).
    min_size : int, default 30
        Minimum number of observations between change points (>= 2).
    percent : float, default 0.25
        Minimum relative improvement of the score needed to keep an extra
        change point (>= 0).
    degree : {0, 1, 2}, default 1
        Growth of the penalty with the number of change points
        (constant, linear, quadratic).

    Returns
    -------
    list of int
        Sorted change points; a change point ``c`` means a new segment starts
        at index ``c``. Empty when ``len(x) < 2 * min_size``.

    Raises
    ------
    ValueError
        If ``x`` is not 1-D or holds NaN/inf, or a parameter is out of range.

    Examples
    --------
    The step at 100 is found; so is a spurious change point inside the first
    noise segment (see the note above):

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = np.concatenate([rng.normal(10, 1, 100), rng.normal(20, 1, 200)])
    >>> edm_percent(x)
    [38, 99]
    >>> edm_percent(np.ones(100))
    []
    """
    z = finite_1d(x)
    _check_params(min_size, percent, degree)
    n = int(z.size)
    if n < 2 * min_size:
        return []

    prev = np.zeros(n + 1, dtype=np.int64)
    number = np.zeros(n + 1, dtype=np.int64)
    score = np.zeros(n + 1, dtype=np.float64)
    # left_median[t] = median(z[prev[t]:t]); final once step t is finished.
    # For t < 2 * min_size, prev[t] == 0 forever, so it is a prefix median.
    prefix_median = np.empty(n + 1, dtype=np.float64)
    prefix_median[0] = np.nan
    prefix_median[1:] = _expanding_median(z)
    left_median = prefix_median.copy()
    all_ts = np.arange(min_size, n - min_size + 1, dtype=np.int64)

    for s, right in zip(range(2 * min_size, n + 1), _iter_right_medians(z, min_size), strict=True):
        ts = all_ts[: s - 2 * min_size + 1]
        p = prev[ts]
        weight = ((ts - p) * (s - ts)) / ((s - p) ** 2)
        diff = left_median[ts] - right
        tmp = score[ts] + weight * (diff * diff)
        best = int(np.argmax(tmp))  # first maximiser, like the strict '>' scan
        if tmp[best] > 0.0:
            t_best = min_size + best
            score[s] = tmp[best]
            prev[s] = t_best
            number[s] = number[t_best] + 1
        ps = int(prev[s])
        if ps != 0 and score[s] - score[ps] < percent * _penalty_growth(
            int(number[ps]), degree
        ) * float(score[ps]):
            number[s] = number[ps]
            score[s] = score[ps]
            prev[s] = prev[ps]
        ps = int(prev[s])
        if s < n:
            left_median[s] = prefix_median[s] if ps == 0 else _median(z[ps:s])

    return _walk_back(prev, n)


def _iter_right_medians(
    z: FloatArray, min_size: int, batch_values: int = 1 << 20
) -> Iterator[FloatArray]:
    """Yield, for ``s = 2*min_size .. n``, ``median(z[t:s])`` for ``t = min_size .. s-min_size``.

    For a given ``s`` these are expanding medians of the reversed prefix
    ``z[s-1], z[s-2], ...``. They do not depend on the DP state, so many
    ``s`` are computed in one pandas call (about ``batch_values`` values).
    """
    n = int(z.size)
    reversed_z = z[::-1]
    s_all = np.arange(2 * min_size, n + 1, dtype=np.int64)
    lengths_all = s_all - min_size  # piece for s is reversed_z[n - s : n - min_size]
    cum = np.cumsum(lengths_all)
    first = 0
    while first < s_all.size:
        base = int(cum[first - 1]) if first else 0
        last = max(first + 1, int(np.searchsorted(cum, base + batch_values, side="right")))
        lengths = lengths_all[first:last]
        offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        within = np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(offsets, lengths)
        values = reversed_z[np.repeat(n - s_all[first:last], lengths) + within]
        medians = _piecewise_expanding_median(values, lengths)
        for off, length in zip(offsets.tolist(), lengths.tolist(), strict=True):
            # piece[k] = median(z[s-k-1 : s]); split t needs k = s - t - 1
            yield medians[off + min_size - 1 : off + length][::-1]
        first = last


def _walk_back(prev: IntArray, n: int) -> list[int]:
    points: list[int] = []
    at = n
    while at != 0:
        nxt = int(prev[at])
        if nxt != 0:
            points.append(nxt)
        at = nxt
    return sorted(points)


def _edm_percent_reference(
    x: npt.ArrayLike,
    min_size: int = 30,
    percent: float = 0.25,
    degree: int = 1,
) -> list[int]:
    """Plain, loop-by-loop transliteration of EDM-percent (test oracle only).

    Deliberately unoptimised pure Python (including the medians), so that it
    shares no code path with :func:`edm_percent` beyond input validation.
    O(n³ log n); use only on short series.

    Examples
    --------
    >>> _edm_percent_reference([0.0] * 5 + [9.0] * 5, min_size=2)
    [5]
    """
    zs = [float(v) for v in finite_1d(x)]
    _check_params(min_size, percent, degree)
    n = len(zs)

    def med(values: list[float]) -> float:
        ordered = sorted(values)
        k = len(ordered)
        mid = k // 2
        if k % 2 == 1:
            return ordered[mid]
        return (ordered[mid - 1] + ordered[mid]) / 2

    def growth(k: int) -> float:
        return [1.0, float(k + 1), float((k + 1) ** 2)][degree]

    prev = [0] * (n + 1)
    number = [0] * (n + 1)
    f = [0.0] * (n + 1)
    for s in range(2 * min_size, n + 1):
        for t in range(min_size, s - min_size + 1):
            left = med(zs[prev[t] : t])
            right = med(zs[t:s])
            normalize = (t - prev[t]) * (s - t) / (s - prev[t]) ** 2
            # (left - right) ** 2 written as a product: Python's float ** 2
            # calls libm pow(), which can differ from d * d by one ulp and so
            # flip exact ties between candidate splits.
            tmp = f[t] + normalize * ((left - right) * (left - right))
            if tmp > f[s]:
                f[s] = tmp
                prev[s] = t
                number[s] = number[t] + 1
        p = prev[s]
        if p != 0 and f[s] - f[p] < percent * growth(number[p]) * f[p]:
            number[s] = number[p]
            f[s] = f[p]
            prev[s] = prev[p]

    points: list[int] = []
    at = n
    while at != 0:
        if prev[at] != 0:
            points.append(prev[at])
        at = prev[at]
    return sorted(points)


# ---------------------------------------------------------------------------
# approximation for long series
# ---------------------------------------------------------------------------


def _medians_with_extras(base: FloatArray, extras: FloatArray) -> FloatArray:
    """``out[j] = median(concat(base, extras[:j]))`` for ``j = 0 .. len(extras)``.

    Costs O(len(base) + J log J) with ``J = len(extras)``, instead of sorting
    ``base`` again for every ``j``. Any order statistic of rank ``r`` of the
    union lies between ``base``'s order statistics of rank ``r - j`` and
    ``r``, so the medians only involve the middle ``~2J`` order statistics of
    ``base``: trim ``k`` values off each end of ``base`` (which leaves the
    median of a multiset unchanged when trimmed symmetrically), and clip the
    extras into the kept range (a monotone map, which commutes with order
    statistics that lie inside the range).
    """
    size = int(base.size)
    n_extra = int(extras.size)
    if size == 0:
        return np.concatenate([[np.nan], _expanding_median(extras)])
    k = max(0, min((size - 1) // 2 - n_extra, size - 1 - (size + n_extra) // 2))
    if k > 0:
        kept = np.partition(base, (k, size - k - 1))[k : size - k]
        low, high = np.min(kept), np.max(kept)
        extras = np.clip(extras, low, high)
    else:
        kept = base
    kept = np.sort(kept)
    merged = np.concatenate([kept, extras])
    return _expanding_median(merged)[kept.size - 1 :]


def _split_scores(x: FloatArray, a: int, b: int, lo: int, hi: int) -> FloatArray:
    """Two-sample median statistic of splitting ``x[a:b]`` at each t in ``[lo, hi]``.

    ``score(t) = (t - a)(b - t) / (b - a)**2 * (median(x[a:t]) - median(x[t:b]))**2``
    with ``a < lo <= hi < b``.
    """
    ts = np.arange(lo, hi + 1, dtype=np.int64)
    left = _medians_with_extras(x[a:lo], x[lo:hi])  # median(x[a:t]), t = lo..hi
    right = _medians_with_extras(x[hi:b], x[lo:hi][::-1])[::-1]  # median(x[t:b])
    weight = ((ts - a) * (b - ts)) / float((b - a) ** 2)
    diff = left - right
    return np.asarray(weight * diff * diff, dtype=np.float64)


def _block_medians(z: FloatArray, m: int) -> FloatArray:
    n = int(z.size)
    n_full = n // m
    parts: list[FloatArray] = []
    if n_full:
        parts.append(np.median(z[: n_full * m].reshape(n_full, m), axis=1))
    if n_full * m < n:
        parts.append(np.array([np.median(z[n_full * m :])]))
    return np.concatenate(parts)


def detect_change_points(
    x: npt.ArrayLike,
    min_size: int = 30,
    percent: float = 0.25,
    degree: int = 1,
    max_exact: int = 4000,
) -> list[int]:
    """EDM-percent change points, exact for short series and approximate for long ones.

    For ``len(x) <= max_exact`` this is exactly :func:`edm_percent`.

    Longer series are handled approximately, because exact EDM-percent costs
    O(n² log n) time (about 2 s at n = 4000, so hours at n = 10⁶):

    1. split ``x`` into ``ceil(n / m)`` blocks of ``m = ceil(n / max_exact)``
       consecutive values (the last block may be partial) and take each
       block's median; medians keep level shifts and ignore outliers, which is
       what EDM looks for;
    2. run :func:`edm_percent` on the block medians with
       ``max(2, ceil(min_size / m))`` blocks as the minimum segment size;
    3. map each block change point ``c`` to index ``c * m`` and refine it to the
       index ``t`` within ``±m`` (and strictly inside its neighbouring
       segments ``[a, b)``) that maximises the two-sample statistic
       ``(t-a)(b-t)/(b-a)² · (median(x[a:t]) - median(x[t:b]))²``. Points are
       refined left to right, each using the already refined left neighbour.

    The result is therefore at most ``max_exact`` points' worth of DP work
    (about 2-3 s at the default) plus O(n) per change point. It can differ
    from exact EDM-percent:

    * the minimum segment length is only enforced in whole blocks and the
      percent penalty acts on block-level scores; change points that exact
      EDM-percent only reports by chance (e.g. in noise) need not agree;
    * the block-level DP can misplace a change by several blocks (a spurious
      block change point just before it shortens the left segment and so
      lowers its score), and refinement only searches ``±m``. Observed on a
      10-sigma step at 15000 in 50000 readings: errors of -11..+41 readings
      with ``max_exact=4000`` (m = 13), up to 550 readings with
      ``max_exact=1000`` (m = 50);
    * the refinement statistic is biased towards the middle of ``[a, b)`` for
      large shifts (medians barely move when a few readings of the other
      level are included), so it tends to end at the ``±m`` edge nearer the
      middle rather than at the true change.

    Parameters
    ----------
    x : array_like
        1-D series of finite values.
    min_size, percent, degree
        As for :func:`edm_percent`.
    max_exact : int, default 4000
        Longest series handled exactly; also the maximum number of blocks.

    Returns
    -------
    list of int
        Sorted change points (index where a new segment starts).

    Raises
    ------
    ValueError
        On invalid input, as :func:`edm_percent`, or if ``max_exact < 1``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(1)
    >>> x = np.concatenate([rng.normal(10, 1, 3000), rng.normal(20, 1, 7000)])
    >>> points = detect_change_points(x, max_exact=1000)  # 1000 blocks of 10
    >>> points[-1]
    3010
    """
    z = finite_1d(x)
    _check_params(min_size, percent, degree)
    if isinstance(max_exact, bool) or not isinstance(max_exact, int | np.integer):
        raise ValueError(f"max_exact must be an integer, got {max_exact!r}")
    if max_exact < 1:
        raise ValueError(f"max_exact must be >= 1, got {max_exact}")
    n = int(z.size)
    if n <= max_exact:
        return edm_percent(z, min_size, percent, degree)

    m = math.ceil(n / max_exact)
    blocks = _block_medians(z, m)
    block_min = max(2, math.ceil(min_size / m))
    coarse = [c * m for c in edm_percent(blocks, block_min, percent, degree)]

    refined: list[int] = []
    for i, c in enumerate(coarse):
        a = refined[-1] if refined else 0
        b = coarse[i + 1] if i + 1 < len(coarse) else n
        lo = max(a + 1, c - m)
        hi = min(b - 1, c + m)
        if lo > hi:  # cannot happen for a < c < b, kept as a guard
            refined.append(c)
            continue
        scores = _split_scores(z, a, b, lo, hi)
        refined.append(lo + int(np.argmax(scores)))
    return refined


# ---------------------------------------------------------------------------
# Pilot's dominant segment
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class StableSegment:
    """The stable (dominant) segment ``x[begin:end]`` of a series of length ``n``.

    Attributes
    ----------
    begin, end : int
        Half-open index range of the kept unit readings.
    change_points : tuple of int
        All change points found in the series (sorted).
    n : int
        Length of the whole series.

    Examples
    --------
    >>> seg = StableSegment(begin=40, end=950, change_points=(40, 950), n=1000)
    >>> seg.removed_head, seg.removed_tail, seg.length
    (40, 50, 910)
    """

    begin: int
    end: int
    change_points: tuple[int, ...]
    n: int

    @property
    def removed_head(self) -> int:
        """Number of readings dropped at the start (warm-up)."""
        return self.begin

    @property
    def removed_tail(self) -> int:
        """Number of readings dropped at the end (cool-down)."""
        return self.n - self.end

    @property
    def length(self) -> int:
        """Number of readings kept."""
        return self.end - self.begin


def prune_change_points(
    x: npt.ArrayLike, points: Sequence[int], alpha: float = 0.01, block: int = 1
) -> list[int]:
    """Drop change points whose neighbouring segments do not differ significantly.

    EDM-percent never rejects its first change point, so it splits even pure noise
    (see the module notes). This post-filter tests each change point with a two-sided
    Mann-Whitney U test between the segments on either side; while the least
    significant one has p > alpha / (number of change points) (Bonferroni), it is
    removed and the neighbouring segments merge. Not part of Pilot: an Assay addition,
    measured in bench/RESULTS.md.

    The test assumes independent samples. For autocorrelated readings pass ``block``
    = the subsession size that decorrelates them: each segment is then reduced to the
    means of consecutive blocks of that many readings before testing, so that local
    wandering of an autocorrelated series is not taken for a change.

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = np.concatenate([rng.normal(0, 1, 100), rng.normal(5, 1, 100)])
    >>> prune_change_points(x, [50, 100, 150])
    [100]
    """
    z = finite_1d(x)
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if block < 1:
        raise ValueError(f"block must be >= 1, got {block}")
    pts = sorted(int(p) for p in points)
    from scipy import stats  # here: SciPy takes ~0.6 s to import; not before the first trial

    def reduced(seg: FloatArray) -> FloatArray:
        m = seg.size // block
        return seg[: m * block].reshape(m, block).mean(axis=1) if m else seg

    while pts:
        bounds = [0, *pts, int(z.size)]
        pvals = [
            float(
                stats.mannwhitneyu(
                    reduced(z[bounds[i] : bounds[i + 1]]),
                    reduced(z[bounds[i + 1] : bounds[i + 2]]),
                    alternative="two-sided",
                    method="asymptotic",
                ).pvalue
            )
            for i in range(len(pts))
        ]
        worst = int(np.argmax(pvals))
        if pvals[worst] <= alpha / len(pts):
            break
        del pts[worst]
    return pts


def _decorrelating_block(z: FloatArray, points: Sequence[int]) -> int:
    from assay.stats.autocorr import optimal_subsession

    bounds = [0, *points, int(z.size)]
    lengths = np.diff(bounds)
    i = int(np.argmax(lengths))
    seg = z[bounds[i] : bounds[i + 1]]
    sub = optimal_subsession(seg) if seg.size >= 30 else None
    return sub.size if sub is not None else 1


def dominant_segment(
    x: npt.ArrayLike,
    min_size: int = 30,
    percent: float = 0.25,
    degree: int = 1,
    max_exact: int = 4000,
    alpha: float | None = None,
    block: int | None = 1,
) -> StableSegment | None:
    """Pilot's stable segment: the longest segment, if it holds > 50% of the readings.

    Series shorter than :data:`MIN_CHANGEPOINT_DETECTION_SAMPLE_SIZE` (30) are
    returned whole, without detection. Otherwise the change points come from
    :func:`detect_change_points`, the segments are the ranges between
    consecutive points (``0`` and ``n`` included), and the longest one (the
    first on ties) is returned if its length is more than ``n / 2``. If no
    segment is that long there is no dominant segment and ``None`` is
    returned; Pilot then uses none of that round's unit readings.

    Parameters
    ----------
    x : array_like
        1-D series of finite unit readings, in time order.
    min_size, percent, degree, max_exact
        As for :func:`detect_change_points`.
    alpha : float, optional
        When given, change points are first pruned with
        :func:`prune_change_points` at this level (an Assay addition; ``None``
        is Pilot's rule as published).
    block : int or None, default 1
        Block size for the pruning test (see :func:`prune_change_points`); ``None``
        chooses it as the subsession size that decorrelates the longest segment
        before pruning (the warm-up itself would otherwise look like autocorrelation).

    Returns
    -------
    StableSegment or None
        The dominant segment, or ``None`` when there is none.

    Raises
    ------
    ValueError
        On invalid input, as :func:`detect_change_points`.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(2)
    >>> warm_up, stable = rng.normal(7, 1, 60), rng.normal(10, 1, 940)
    >>> seg = dominant_segment(np.concatenate([warm_up, stable]))
    >>> seg.begin, seg.end, seg.removed_head
    (59, 1000, 59)
    >>> plateaus = np.repeat([5.0, 0.0, 10.0], 100) + rng.normal(0, 1, 300)
    >>> dominant_segment(plateaus) is None
    True
    >>> dominant_segment(np.arange(20.0))  # too short to look for changes
    StableSegment(begin=0, end=20, change_points=(), n=20)
    """
    z = finite_1d(x)
    _check_params(min_size, percent, degree)
    n = int(z.size)
    if n < MIN_CHANGEPOINT_DETECTION_SAMPLE_SIZE:
        return StableSegment(0, n, (), n)
    points = detect_change_points(z, min_size, percent, degree, max_exact)
    if alpha is not None:
        if block is None:
            block = _decorrelating_block(z, points)
        points = prune_change_points(z, points, alpha, block)
    bounds = [0, *points, n]
    best = 0
    for i in range(1, len(bounds) - 1):
        if bounds[i + 1] - bounds[i] > bounds[best + 1] - bounds[best]:
            best = i
    begin, end = bounds[best], bounds[best + 1]
    if 2 * (end - begin) <= n:
        return None
    return StableSegment(begin, end, tuple(points), n)
