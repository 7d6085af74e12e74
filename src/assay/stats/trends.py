"""Important points of ANOVA effects: Algorithms 2 and 3 of Hui et al. (§3.3).

For each significant term explaining at least 10% of the variance, the effects of the
term over an ordered parameter are examined (for a two-way term, one parameter is
fixed at a time and the other varied).  When the effects are monotone (Spearman's rank
correlation is ±1) the *knee point* is located with the Kneedle algorithm (the
``kneed`` library); otherwise the *turning point* is the value p_i that maximises
``|Spearman(left of p_i) - Spearman(right of p_i)|`` provided that it is at least 1
(p_i itself belongs to neither side, as in Algorithm 3).  Each point gets a
``turn_ratio = |(k_b - k_a) / k_a|`` from the least-squares slopes left and right of it
(the point belongs to both sides), and the points are ranked by
``turn_ratio × % variance explained``.

Issue #37 (a PostgreSQL curve flat up to block 4, ~40% lower from block 5 on, was
reported as "knee at 0 (turn ratio nan)"): Kneedle is not asked about a *step*, and
what it says is kept only inside the range.  The rules, checked in this order on the
sorted curve:

* a parameter with fewer than three levels has no point (two levels make one
  difference, which the ANOVA already tests; there is no bend to place);
* a **step** between adjacent levels p_j and p_(j+1) is one difference that holds at
  least :data:`STEP_SHARE` of the curve's range while the effects on either side of
  it scatter (standard deviation) by at most :data:`STEP_FLAT` of that difference (a
  knee's side climbs towards it: on 1, 2, 4, 8 ↦ 1, 2, 4, 8 the side 1, 2, 4 scatters
  by 0.31 of the last difference); it is reported as
  ``kind="step"`` with ``value = p_(j+1)`` (where the new level starts, so that "both
  sides of it" are the two sides of the step) and ``before = p_j``;
* a knee or a turning point is always strictly inside the range (Kneedle's answer at
  an end, which it gives on a step-like difference curve, is not a knee), so both of
  its sides have two points or more and its turn ratio is defined; a slope before the
  point flatter than :data:`FLAT_SLOPE` of the curve's mean slope (range of the
  effects / range of the values) counts as that much, so that a point after a flat
  start has a large but finite ratio (the paper's ratio divides by zero there);
* a step's ``turn_ratio`` is the share of the curve's range it holds (0.5 to 1): the
  slopes either side of a step are both flat, so their ratio would rank noise.

Choices the paper leaves open: Kneedle's curve shape (concave or convex) is taken from
which side of the chord between the end points the effects lie on (the direction from
the sign of Spearman's correlation); a segment with fewer than two points has no
Spearman correlation and is not a candidate; when several values tie for the largest
``|ΔSpearman|``, the one with the most extreme effect in the direction of the turn (the
peak, or the valley) is taken.  Only ordered (numeric) parameters are analysed, as in
the paper.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from assay.stats.anova import Term, term_name
from assay.values import finite_or_none as _finite
from assay.values import plain as _jsonable
from assay.values import short as _fmt

__all__ = [
    "ImportantPoint",
    "TermEffects",
    "find_important_point",
    "important_points",
    "near_monotone",
    "rank_points",
    "spearman",
    "step_of",
]

FloatArray = npt.NDArray[np.float64]
Kind = Literal["knee", "turning", "step"]

#: Terms below this share of the variance are not analysed (Algorithm 2, line 1).
MIN_PCT_VAR = 10.0
_EPS = 1e-9
#: A step holds at least this share of its curve's range in one adjacent difference...
STEP_SHARE = 0.5
#: ...and the effects on each side of it scatter (standard deviation) by at most this
#: share of that difference.
STEP_FLAT = 0.2
#: A slope before a point flatter than this share of the curve's mean slope counts as
#: this share in the turn ratio's denominator (a finite ratio after a flat start).
FLAT_SLOPE = 0.01


def spearman(x: npt.ArrayLike, y: npt.ArrayLike) -> float:
    """Spearman's rank correlation; NaN with fewer than 2 points or a constant input.

    >>> spearman([1, 2, 3], [3, 5, 9]), spearman([1, 2, 3], [1, 5, 2])
    (1.0, 0.5)
    """
    a = np.asarray(x, dtype=float)
    b = np.asarray(y, dtype=float)
    if len(a) < 2:
        return math.nan
    from scipy.stats import rankdata  # here: scipy.stats costs a stored report ~0.5 s

    ra, rb = rankdata(a), rankdata(b)
    ra -= ra.mean()
    rb -= rb.mean()
    den = math.sqrt(float(ra @ ra) * float(rb @ rb))
    return float(ra @ rb) / den if den > 0 else math.nan


@dataclass(frozen=True)
class ImportantPoint:
    """A knee, turning point or step of one term's effects over one parameter.

    For a step, ``value`` is the first level after it and ``before`` the last level
    before it (None for the other kinds).
    """

    term: Term
    param: str
    kind: Kind
    value: float
    turn_ratio: float
    pct_var: float
    fixed: tuple[str, Any] | None = None
    before: float | None = None
    # the share of resampled data sets in which the same point was found again, and of
    # how many (see assay.designs.sweep.point_support); None where not resampled
    support: float | None = None
    resamples: int = 0

    @property
    def score(self) -> float:
        """The ranking key of Algorithm 2: ``turn_ratio × % variance explained``."""
        return self.turn_ratio * self.pct_var

    def key(self) -> tuple[Any, ...]:
        """Identity used to match points between two analyses (type and value included)."""
        return (self.term, self.param, self.fixed, self.kind, float(self.value))

    def describe(self) -> str:
        """``"workers: knee at 16"``, ``"workers (warehouses = 8): turning point at 4"``
        or ``"block: step between 4 and 5"``."""
        where = f" ({self.fixed[0]} = {_fmt(self.fixed[1])})" if self.fixed else ""
        if self.kind == "step" and self.before is not None:
            return f"{self.param}{where}: step between {_fmt(self.before)} and {_fmt(self.value)}"
        what = "knee" if self.kind == "knee" else "turning point"
        return f"{self.param}{where}: {what} at {_fmt(self.value)}"

    def as_record(self) -> list[Any]:
        """The point as JSON keeps it exactly (:meth:`from_record` reads it back);
        :meth:`to_dict` is for people and drops what tells the types apart."""
        fixed = None if self.fixed is None else [self.fixed[0], _item(self.fixed[1])]
        return [
            list(self.term), self.param, self.kind, float(self.value), float(self.turn_ratio),
            float(self.pct_var), fixed, None if self.before is None else float(self.before),
            self.support, self.resamples,
        ]  # fmt: skip

    @classmethod
    def from_record(cls, row: Sequence[Any]) -> ImportantPoint:
        """The point :meth:`as_record` wrote.

        >>> import json
        >>> p = ImportantPoint(("w", "c"), "w", "knee", 8.0, 2.5, 40.0, ("c", np.int64(4)))
        >>> ImportantPoint.from_record(json.loads(json.dumps(p.as_record()))) == p
        True
        """
        term, param, kind, value, ratio, pct, fixed, before, support, resamples = row
        if kind not in ("knee", "turning", "step"):
            raise ValueError(f"not a kind of important point: {kind!r}")
        return cls(
            tuple(str(t) for t in term), str(param), kind, float(value), float(ratio),
            float(pct), None if fixed is None else (str(fixed[0]), fixed[1]),
            None if before is None else float(before),
            None if support is None else float(support), int(resamples),
        )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        return {
            "term": term_name(self.term),
            "param": self.param,
            "fixed": None if self.fixed is None else [self.fixed[0], _jsonable(self.fixed[1])],
            "kind": self.kind,
            "value": _jsonable(self.value),
            "before": None if self.before is None else _jsonable(self.before),
            "turn_ratio": _finite(self.turn_ratio),
            "pct_var": _finite(self.pct_var),
            "score": _finite(self.score),
            "support": self.support,
            "support_resamples": self.resamples,
        }


def _item(v: Any) -> Any:
    """A NumPy scalar as the Python one JSON can keep; anything else as it is."""
    return v.item() if isinstance(v, np.generic) else v


def _slope(x: FloatArray, y: FloatArray) -> float:
    if len(x) < 2 or np.ptp(x) == 0:
        return math.nan
    xc = x - x.mean()
    return float(xc @ (y - y.mean()) / (xc @ xc))


def _turn_ratio(p: FloatArray, c: FloatArray, val: float) -> float:
    """``|(k_b - k_a) / k_a|`` with the point on both sides; ``|k_a|`` is at least
    :data:`FLAT_SLOPE` × the curve's mean slope.  NaN only where a side has fewer than
    two values (a point at an end, which :func:`find_important_point` never reports).
    Computed with the values divided by their range and the effects scaled to [0, 1]
    (the ratio does not change), so that neither huge nor tiny numbers overflow it."""
    width = p[-1] - p[0]
    x = p / width  # not shifted: values a hair apart stay apart
    lo, hi = float(np.min(c)), float(np.max(c))
    if hi == lo:  # a constant curve: no turn
        return 0.0
    y = (c - lo) / (hi - lo)
    at = val / width
    left, right = x <= at, x >= at
    ka, kb = _slope(x[left], y[left]), _slope(x[right], y[right])
    if not (math.isfinite(ka) and math.isfinite(kb)):
        return math.nan
    return abs(kb - ka) / max(abs(ka), FLAT_SLOPE)


#: A curve whose departures from a monotone one stay within this share of its range is
#: searched for a knee (issue #21: noise on a plateau made saturating curves "turning
#: points": 0 of 60 synthetic knees were found as knees with the exact rule).
MONOTONE_TOLERANCE = 0.1


def near_monotone(
    p: npt.ArrayLike, c: npt.ArrayLike, tolerance: float | None = None
) -> tuple[float, FloatArray] | None:
    """``(direction, fit)`` when ``c`` over ``p`` is monotone within ``tolerance`` × its
    range (default :data:`MONOTONE_TOLERANCE`): the isotonic (least-squares monotone)
    fit departs from no point by more; ``direction`` is +1 (increasing) or -1; None
    otherwise.

    >>> near_monotone([1, 2, 4, 8, 16], [1.0, 5.0, 8.0, 8.3, 8.1])[0]
    1.0
    >>> near_monotone([1, 2, 3, 4, 5], [1.0, 5.0, 9.0, 5.0, 1.0]) is None
    True
    """
    limit = MONOTONE_TOLERANCE if tolerance is None else tolerance
    x = np.asarray(p, dtype=float)
    y = np.asarray(c, dtype=float)
    span = float(np.ptp(y)) if y.size else 0.0
    if limit <= 0 or span == 0 or not np.all(np.isfinite(y)):
        return None
    best: tuple[float, float, FloatArray] | None = None
    for direction in (1.0, -1.0):
        fit = _isotonic(x, y, increasing=direction > 0)
        worst = float(np.max(np.abs(y - fit))) / span
        if worst <= limit and (best is None or worst < best[0]):
            best = (worst, direction, np.asarray(fit, dtype=float))
    return None if best is None else (best[1], best[2])


def _isotonic(x: FloatArray, y: FloatArray, *, increasing: bool) -> FloatArray:
    """The least-squares monotone fit of ``y`` over ``x``, at each point, as
    scikit-learn's ``IsotonicRegression().fit_transform`` gives it (points with the same
    ``x`` pooled into their mean first), with SciPy alone: scikit-learn is an extra.

    >>> _isotonic(np.array([1.0, 2.0, 2.0, 3.0]), np.array([1.0, 3.0, 1.0, 0.0]), increasing=True)
    array([1.        , 1.33333333, 1.33333333, 1.33333333])
    """
    from scipy.optimize import isotonic_regression

    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    means = np.bincount(inverse, weights=y) / counts
    fit = isotonic_regression(means, weights=counts.astype(float), increasing=increasing).x
    return np.asarray(fit[inverse], dtype=float)


def _knee(p: FloatArray, c: FloatArray, rho: float) -> float | None:
    """Kneedle's knee strictly inside the range, or None.  Kneedle can answer with the
    first (or last) value (issue #37: on a step its difference curve starts below zero
    and it named the first value): that is no knee; then the interior knee among all it
    found with the largest difference is taken, if any."""
    from kneed import KneeLocator

    chord = c[0] + (c[-1] - c[0]) * (p - p[0]) / (p[-1] - p[0])
    curve = "concave" if float(np.mean(c - chord)) > 0 else "convex"
    direction = "increasing" if rho > 0 else "decreasing"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loc = KneeLocator(p, c, curve=curve, direction=direction)
    lo, hi = float(p[0]), float(p[-1])

    def inside(v: Any) -> bool:
        return v is not None and lo < float(v) < hi

    if inside(loc.knee):
        return float(loc.knee)
    others = sorted(float(v) for v in loc.all_knees if inside(v))
    if not others:
        return None
    diff = np.asarray(loc.y_difference, dtype=float)  # one value per value of p
    return max(others, key=lambda v: float(diff[int(np.searchsorted(p, v))]))


def _step(p: FloatArray, c: FloatArray) -> tuple[int, float] | None:
    """``(j, share)`` when the curve is a step between ``p[j]`` and ``p[j + 1]``: that
    difference holds ``share`` ≥ :data:`STEP_SHARE` of the range, and the effects on
    each side scatter by at most :data:`STEP_FLAT` of it; None otherwise."""
    span = float(np.ptp(c))
    if span <= 0:
        return None
    d = np.diff(c)
    j = int(np.argmax(np.abs(d)))
    jump = float(abs(d[j]))
    if jump < STEP_SHARE * span:
        return None
    if max(float(np.std(c[: j + 1])), float(np.std(c[j + 1 :]))) > STEP_FLAT * jump:
        return None
    return j, jump / span


def find_important_point(
    values: npt.ArrayLike, coefs: npt.ArrayLike
) -> tuple[Kind, float, float] | None:
    """Algorithm 3 on one curve: ``(kind, value, turn_ratio)``, or None when there is none.

    ``values`` are a parameter's (numeric) values, ``coefs`` the effects at them (a
    value given twice counts with the mean of its effects).  A curve that is a step
    (:func:`step_of`) is ``("step", first value after it, share of the range)``.  As
    published, Kneedle runs only on a strictly monotone curve (Spearman ±1); here also
    on one monotone within :data:`MONOTONE_TOLERANCE` of its range (:func:`near_monotone`),
    so that noise on a plateau does not make a saturating curve a turning point.  A knee
    or turning point is strictly inside the range and its turn ratio is finite.

    >>> find_important_point([1, 2, 4, 8, 16, 32], [1, 2, 4, 8, 8.2, 8.3])[:2]
    ('knee', 8.0)
    >>> find_important_point([1, 2, 3, 4, 5, 6, 7], [1, 2, 3, 5, 3, 2, 1])[:2]
    ('turning', 4.0)
    >>> find_important_point([0, 1, 2, 3, 4, 5, 6, 7], [95, 96, 94, 95, 95, 57, 58, 56])
    ('step', 5.0, 0.95)
    >>> find_important_point([0, 1], [95, 57]) is None  # two levels: no point
    True
    """
    found = _important_point(values, coefs)
    return None if found is None else (found[0], found[1], found[2])


def step_of(values: npt.ArrayLike, coefs: npt.ArrayLike) -> tuple[float, float, float] | None:
    """``(before, after, share)`` when the curve is a step between the adjacent values
    ``before`` and ``after``: their difference holds ``share`` ≥ :data:`STEP_SHARE` of the
    curve's range and the effects on each side scatter (standard deviation) by at most
    :data:`STEP_FLAT` of it.

    >>> step_of([0, 1, 2, 3, 4, 5, 6], [95, 95, 95, 95, 95, 57, 57])
    (4.0, 5.0, 1.0)
    >>> step_of([1, 2, 4, 8, 16], [1, 2, 4, 8, 8.1]) is None  # a knee, not a step
    True
    """
    prepared = _prepare(values, coefs)
    if prepared is None:
        return None
    p, c = prepared
    st = _step(p, c)
    return None if st is None else (float(p[st[0]]), float(p[st[0] + 1]), st[1])


def _prepare(values: npt.ArrayLike, coefs: npt.ArrayLike) -> tuple[FloatArray, FloatArray] | None:
    """The curve sorted by value, a repeated value's effects averaged; None when it has
    fewer than three values or a non-finite number."""
    p = np.asarray(values, dtype=float)
    c = np.asarray(coefs, dtype=float)
    if p.shape != c.shape or p.ndim != 1:
        raise ValueError("values and coefs must be 1-D arrays of the same length")
    with np.errstate(over="ignore"):
        spans = np.ptp(p) if p.size else 0.0, np.ptp(c) if c.size else 0.0
    if not (np.all(np.isfinite(p)) and np.all(np.isfinite(c)) and np.all(np.isfinite(spans))):
        return None  # a non-finite number, or one so large that the range overflows
    uniq, inverse = np.unique(p, return_inverse=True)
    if len(uniq) < 3:
        return None
    if len(uniq) < len(p):
        c = np.bincount(inverse, weights=c) / np.bincount(inverse)
    else:
        c = c[np.argsort(p, kind="stable")]
    return uniq.astype(float), np.asarray(c, dtype=float)


def _important_point(
    values: npt.ArrayLike, coefs: npt.ArrayLike
) -> tuple[Kind, float, float, float | None] | None:
    """``(kind, value, turn_ratio, before)``: :func:`find_important_point` with the
    value before a step (None for a knee or a turning point)."""
    prepared = _prepare(values, coefs)
    if prepared is None:
        return None
    p, c = prepared
    n = len(p)
    rho = spearman(p, c)
    if not math.isfinite(rho):
        return None
    st = _step(p, c)
    if st is not None:
        j, share = st
        return "step", float(p[j + 1]), share, float(p[j])
    if abs(rho) >= 1 - _EPS:
        val = _knee(p, c, rho)
        if val is None:
            return None
        return _finite_point("knee", val, _turn_ratio(p, c, val))
    monotone = near_monotone(p, c)
    if monotone is not None:  # monotone within noise: the knee of its monotone fit
        direction, fit = monotone
        val = _knee(p, fit, direction)
        if val is not None:
            return _finite_point("knee", val, _turn_ratio(p, c, val))
    delta = np.full(n, math.nan)
    for i in range(1, n - 1):
        delta[i] = spearman(p[:i], c[:i]) - spearman(p[i + 1 :], c[i + 1 :])
    mag = np.where(np.isfinite(delta), np.abs(delta), -1.0)
    best = float(mag.max())
    if best < 1 - _EPS:
        return None
    tied = np.flatnonzero(mag >= best - _EPS)
    # ties: the peak (rise then fall) or the valley (fall then rise)
    j = int(tied[np.argmax(c[tied])] if delta[tied[0]] > 0 else tied[np.argmin(c[tied])])
    val = float(p[j])  # 1 <= j <= n - 2: strictly inside
    return _finite_point("turning", val, _turn_ratio(p, c, val))


def _finite_point(kind: Kind, val: float, ratio: float) -> tuple[Kind, float, float, None] | None:
    """The point, unless its turn ratio is not finite: inside the range both sides have
    two values, so only values too close for floating point to tell apart get here."""
    return (kind, val, ratio, None) if math.isfinite(ratio) else None


@dataclass(frozen=True)
class TermEffects:
    """Input to Algorithm 2: a term, its % of variance, and its effects.

    ``effects`` is a Series indexed by the levels (main effect) or a DataFrame with the
    first parameter's levels as index and the second's as columns (two-way term).
    A parameter is ordered when its levels are numeric.
    """

    term: Term
    pct_var: float
    effects: pd.Series | pd.DataFrame


def _ordered(index: pd.Index) -> bool:
    return bool(pd.api.types.is_numeric_dtype(index) and not pd.api.types.is_bool_dtype(index))


def _points_on(
    t: TermEffects, param: str, idx: pd.Index, c: FloatArray, fixed: tuple[str, Any] | None
) -> ImportantPoint | None:
    found = _important_point(idx.to_numpy(dtype=float), c)
    if found is None:
        return None
    kind, val, ratio, before = found
    return ImportantPoint(t.term, param, kind, val, ratio, t.pct_var, fixed, before)


def important_points(
    terms: Iterable[TermEffects], min_pct_var: float = MIN_PCT_VAR
) -> list[ImportantPoint]:
    """Algorithm 2: the important points of every term above ``min_pct_var``, ranked.

    >>> eff = pd.Series([0.0, 1.0, 2.0, 4.0, 4.1, 4.2], index=[1, 2, 4, 8, 16, 32])
    >>> [p.describe() for p in important_points([TermEffects(("w",), 60.0, eff)])]
    ['w: knee at 8']
    """
    out: list[ImportantPoint] = []
    for t in terms:
        if not (math.isfinite(t.pct_var) and t.pct_var >= min_pct_var):
            continue
        eff = t.effects
        if isinstance(eff, pd.Series):
            if _ordered(eff.index):
                pt = _points_on(t, t.term[0], eff.index, eff.to_numpy(float), None)
                if pt is not None:
                    out.append(pt)
            continue
        p_name, q_name = t.term
        if _ordered(eff.columns):
            for pv, row in eff.iterrows():
                pt = _points_on(t, q_name, eff.columns, row.to_numpy(float), (p_name, pv))
                if pt is not None:
                    out.append(pt)
        if _ordered(eff.index):
            for qv in eff.columns:
                col = eff[qv].to_numpy(float)
                pt = _points_on(t, p_name, eff.index, col, (q_name, qv))
                if pt is not None:
                    out.append(pt)
    return rank_points(out)


def rank_points(points: Sequence[ImportantPoint]) -> list[ImportantPoint]:
    """Highest ``turn_ratio × % variance`` first; undefined scores last."""
    return sorted(
        points, key=lambda p: (math.isnan(p.score), 0.0 if math.isnan(p.score) else -p.score)
    )
