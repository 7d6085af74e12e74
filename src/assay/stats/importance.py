"""Which knobs matter: random-forest importance, top-k R² and stability (Kanellis et al.).

The method of the knob pre-selection paper (seeds/002): dummy-encode categorical
knobs, standardise numeric ones (Assay gives the trees each value's rank instead: the
same splits, without the precision that outliers take away; see :class:`KnobEncoder`
and :func:`extreme_values`), fit a random forest of 300 CART trees
(scikit-learn's :class:`~sklearn.ensemble.RandomForestRegressor`) and rank the knobs by
their impurity importance (the variance reduction of the splits on a knob, averaged
over the trees; a categorical knob gets the sum over its dummy columns).  Then

* :func:`r2_curve` fits forests on the top-1, top-2, ... top-K knobs and compares their
  R² with the all-knobs model (the paper's Figure 3).  R² is **out-of-bag**: each
  sample is predicted only by the trees that did not see it, so a model with more
  knobs cannot look better merely by overfitting;
* :func:`stability` refits on random subsets of the samples and reports the
  intersection-over-union of each subset's top-k set with the full-sample top-k (the
  paper's Figure 6), per subset size, so that the sample count can be judged.

Impurity importance is biased towards knobs with many distinct values (Strobl et
al. 2007): such a knob offers many split points, so noise splits on it look useful.
:func:`rank_knobs` therefore also measures *permutation* importance
(:func:`sklearn.inspection.permutation_importance`) on held-out folds (cross-fitting:
fit on k-1 folds, permute a knob's columns in the held-out fold, measure the drop in
R²), which does not have that bias, and says so when the two top-k sets disagree.

Every function is pure: a :class:`KnobMatrix` and a response in, results out.

>>> rng = np.random.default_rng(0)
>>> X = rng.uniform(size=(120, 4))
>>> y = 3 * X[:, 0] + X[:, 1] ** 2 + rng.normal(0, 0.05, 120)
>>> m = KnobMatrix(X, ("a", "b", "c", "d"), (0, 0, 0, 0))
>>> r = rank_knobs(m, y, pi="y", top_k=2, n_trees=50, stability_repeats=2, permutation_repeats=2)
>>> r.top
('a', 'b')
>>> r.agree
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from assay.extras import require_extra
from assay.stats._arrays import finite_1d

__all__ = [
    "KnobImportance",
    "KnobMatrix",
    "PIRanking",
    "R2Point",
    "StabilityRow",
    "ValidationRow",
    "default_subset_sizes",
    "extreme_values",
    "forest_model",
    "impurity_importance",
    "iou",
    "knob_encoder",
    "permutation_drops",
    "permutation_importance_cv",
    "r2_curve",
    "rank_knobs",
    "stability",
    "validation_summary",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]
Direction = Literal["higher", "lower"]

#: What needs scikit-learn here, as :class:`~assay.extras.MissingExtra` says it.
KNOB_FORESTS = "ranking knobs with random forests"

#: The fewest samples a forest is fitted on (stability subsets included).
MIN_SAMPLES = 10
#: Trees of the forests behind the top-k R² curve and the stability check (issue #17):
#: on 5,000 samples × 20 knobs their figures with 100 trees matched those with 300
#: (R² within 0.002, IoU within one knob's noise) in a third of the time
#: (bench/RESULTS.md); the importances themselves keep ``n_trees``.
CHECK_TREES = 100
#: Trees of those check forests when the ranked matrix is larger than
#: :data:`MAX_TREE_SAMPLES` (each tree then grows on a capped sample): on 25,000 × 30 the
#: curve with 50 trees was within 0.003 R² of the one with 100 and the stability IoUs
#: were identical, in half the time (issue #17; bench/RESULTS.md).
CAPPED_CHECK_TREES = 50
#: Each tree is grown on a bootstrap sample of at most this many settings (issue #17):
#: on 25,000 samples × 30 knobs one 300-tree forest took 76 s on 2 cores, 12.6 s with
#: the cap, with the same top-5 knobs and out-of-bag R² 0.965 against 0.970
#: (bench/RESULTS.md); a ranking fits ~50 forests.  ``None``: no cap.
MAX_TREE_SAMPLES: int | None = 4000
#: The stability check's trees are grown on at most this many settings: it compares
#: top-k sets, not R² levels, and its subsets of n/4 and n/2 would otherwise each cost
#: a full-size forest (issue #17; bench/RESULTS.md).
CHECK_TREE_SAMPLES = 2000
#: Each permutation fold shuffles at most this many of its held-out settings: predicting
#: the shuffled copies (knobs × repeats of them) cost more than the fold's forest on
#: 25,000 samples (12.7 s against 8.6 s per fold); the pooled out-of-fold R² still uses
#: every held-out setting.  1,000 instead of 2,000 gave the same order of knobs on
#: 25,000 × 30 (sd of the drops within 0.004) and saved 2 s of the ranking's 60.
PERMUTATION_ROWS = 1000


@dataclass(frozen=True)
class KnobMatrix:
    """Knob values of ``n`` settings, one column per knob.

    ``levels[j]`` is 0 for a numeric knob (the column holds its value, on a log scale
    for log-scale knobs) and the number of categories for a categorical knob (the
    column holds category codes ``0 .. levels[j] - 1``).

    >>> m = KnobMatrix(np.array([[1.0, 0], [2.0, 1]]), ("x", "mode"), (0, 2))
    >>> m.n, m.p, m.columns(["mode"]).names
    (2, 2, ('mode',))
    """

    values: FloatArray
    names: tuple[str, ...]
    levels: tuple[int, ...]

    def __post_init__(self) -> None:
        v = np.asarray(self.values, dtype=np.float64)
        if v.ndim != 2 or v.shape[1] != len(self.names) or len(self.levels) != len(self.names):
            raise ValueError(
                f"knob matrix: values of shape {v.shape} do not match {len(self.names)} "
                f"names and {len(self.levels)} levels"
            )
        if not np.all(np.isfinite(v)):
            raise ValueError("knob matrix: values must be finite (a setting has a missing knob)")
        if len(set(self.names)) != len(self.names):
            raise ValueError("knob matrix: knob names must be unique")
        for j, lv in enumerate(self.levels):
            codes = v[:, j]
            if lv and (
                np.any(codes < 0) or np.any(codes >= lv) or np.any(codes != np.round(codes))
            ):
                raise ValueError(
                    f"knob matrix: column {self.names[j]!r} must hold category codes 0..{lv - 1}"
                )
        object.__setattr__(self, "values", v)

    @property
    def n(self) -> int:
        """Number of settings (rows)."""
        return int(self.values.shape[0])

    @property
    def p(self) -> int:
        """Number of knobs (columns)."""
        return int(self.values.shape[1])

    def rows(self, index: npt.ArrayLike) -> KnobMatrix:
        """The settings at ``index``."""
        return KnobMatrix(self.values[np.asarray(index)], self.names, self.levels)

    def columns(self, names: Sequence[str]) -> KnobMatrix:
        """Only the knobs ``names``, in that order."""
        idx = [self.names.index(n) for n in names]
        return KnobMatrix(self.values[:, idx], tuple(names), tuple(self.levels[i] for i in idx))

    def distinct(self) -> dict[str, int]:
        """Number of distinct values each knob takes in these settings."""
        return {n: int(np.unique(self.values[:, j]).size) for j, n in enumerate(self.names)}


class KnobEncoder:
    """The knobs as model columns (see :func:`knob_encoder`), as a scikit-learn transformer.

    ``scale="standard"``: numeric knobs standardised, the paper's pre-processing.
    ``scale="rank"``: each numeric knob replaced by the rank of its value among the
    values seen in fitting (interpolated between them for new values).  Trees split on
    order alone, so ranks change nothing for them, except that they survive outliers:
    standardised against a value of 5e14, the ordinary values of a knob differ by less
    than the 1e-7 that scikit-learn's float32 trees can tell apart, and the knob's 611
    distinct values collapse to a few (issue #20).

    Plain NumPy: a forest predicts thousands of permuted copies in permutation
    importance, and :class:`sklearn.compose.ColumnTransformer` adds a large per-call overhead.

    >>> enc = KnobEncoder((0,), scale="rank").fit(np.array([[1.0], [5e14], [3.0]]))
    >>> enc.transform(np.array([[1.0], [2.0], [3.0], [5e14]])).ravel().tolist()
    [0.0, 0.5, 1.0, 2.0]
    """

    def __init__(self, levels: tuple[int, ...] = (), scale: str = "standard") -> None:
        self.levels = levels
        self.scale = scale

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """scikit-learn's estimator protocol (clone, repr)."""
        return {"levels": self.levels, "scale": self.scale}

    def set_params(self, **params: Any) -> KnobEncoder:
        """scikit-learn's estimator protocol."""
        for k, v in params.items():
            setattr(self, k, v)
        return self

    def fit(self, X: npt.ArrayLike, y: Any = None) -> KnobEncoder:
        """Learn the means and standard deviations (or the distinct values) of the
        numeric knobs."""
        if self.scale not in ("standard", "rank"):
            raise ValueError(f"scale must be 'standard' or 'rank', got {self.scale!r}")
        a = np.asarray(X, dtype=np.float64)
        self.numeric_ = [j for j, lv in enumerate(self.levels) if not lv]
        self.mean_ = a[:, self.numeric_].mean(axis=0) if a.shape[0] else np.zeros(0)
        sd = a[:, self.numeric_].std(axis=0) if a.shape[0] else np.ones(0)
        self.scale_ = np.where(sd > 0, sd, 1.0)  # a constant knob stays at 0
        self.values_ = [np.unique(a[:, j]) for j in self.numeric_]
        return self

    def _numeric(self, a: FloatArray) -> FloatArray:
        if self.scale == "standard":
            return (a[:, self.numeric_] - self.mean_) / self.scale_
        cols = [
            np.interp(a[:, j], seen, np.arange(seen.size, dtype=np.float64))
            if seen.size
            else np.zeros(a.shape[0])
            for j, seen in zip(self.numeric_, self.values_, strict=True)
        ]
        return np.column_stack(cols) if cols else np.zeros((a.shape[0], 0))

    def transform(self, X: npt.ArrayLike) -> FloatArray:
        """Dummy columns of each categorical knob, then the numeric knobs."""
        a = np.asarray(X, dtype=np.float64)
        parts = [
            (a[:, [j]] == np.arange(lv, dtype=np.float64)).astype(np.float64)
            for j, lv in enumerate(self.levels)
            if lv
        ]
        parts.append(self._numeric(a))
        return np.hstack(parts)

    def fit_transform(self, X: npt.ArrayLike, y: Any = None) -> FloatArray:
        """:meth:`fit`, then :meth:`transform`."""
        return self.fit(X, y).transform(X)


def extreme_values(values: npt.ArrayLike, factor: float = 100.0) -> tuple[int, float]:
    """How many values lie more than ``factor`` interquartile ranges outside the middle
    half of ``values``, and the farthest of them (0 and NaN when none; a column whose
    middle half is one value has none).

    Such values (5e14 in a column of page counts) are usually sentinels or errors;
    the forest sees ranks, so they cannot distort the ranking, but the user should know.

    >>> extreme_values([1.0, 2, 3, 4, 5, 6, 7, 8, 5e14])
    (1, 500000000000000.0)
    >>> extreme_values(np.arange(100.0))
    (0, nan)
    """
    a = np.asarray(values, dtype=np.float64)
    a = a[np.isfinite(a)]
    if a.size < 4:
        return 0, float("nan")
    q1, q3 = np.percentile(a, [25, 75])
    iqr = q3 - q1
    if iqr <= 0:
        return 0, float("nan")
    far = (a < q1 - factor * iqr) | (a > q3 + factor * iqr)
    if not far.any():
        return 0, float("nan")
    out = a[far]
    return int(far.sum()), float(out[np.argmax(np.abs(out - (q1 + q3) / 2))])


def knob_encoder(matrix: KnobMatrix, scale: str = "standard") -> KnobEncoder:
    """The paper's pre-processing: categorical knobs become one dummy column per category
    (all categories, so that a knob's importance is the sum over its own columns),
    numeric knobs are standardised to zero mean and unit variance.  Output columns: the
    dummies of each categorical knob in knob order, then the numeric knobs in knob order
    (see :func:`encoded_groups`).

    >>> m = KnobMatrix(np.array([[0.0, 1.0], [2.0, 0.0]]), ("x", "mode"), (0, 2))
    >>> knob_encoder(m).fit_transform(m.values).tolist()
    [[0.0, 1.0, -1.0], [1.0, 0.0, 1.0]]
    """
    return KnobEncoder(matrix.levels, scale)


def encoded_groups(matrix: KnobMatrix) -> tuple[list[str], list[str]]:
    """Names of the encoded columns and the knob each belongs to (see :func:`knob_encoder`).

    >>> encoded_groups(KnobMatrix(np.zeros((1, 2)), ("x", "mode"), (0, 2)))
    (['mode=0', 'mode=1', 'x'], ['mode', 'mode', 'x'])
    """
    columns: list[str] = []
    groups: list[str] = []
    for name, lv in zip(matrix.names, matrix.levels, strict=True):
        for c in range(lv):
            columns.append(f"{name}={c}")
            groups.append(name)
    for name, lv in zip(matrix.names, matrix.levels, strict=True):
        if not lv:
            columns.append(name)
            groups.append(name)
    return columns, groups


def forest_model(
    matrix: KnobMatrix,
    *,
    n_trees: int = 300,
    seed: int = 0,
    oob: bool = True,
    n_jobs: int | None = 1,
    check: bool = False,
) -> Any:
    """An unfitted pipeline: :func:`knob_encoder` with ranks for numeric knobs (see
    :class:`KnobEncoder`: the same trees as on standardised values, without the loss of
    precision to outliers), then a random forest of ``n_trees`` trees, each grown on a
    bootstrap sample of at most :data:`MAX_TREE_SAMPLES` of the matrix's settings
    (:data:`CHECK_TREE_SAMPLES` for a ``check`` forest; ``MAX_TREE_SAMPLES = None``
    lifts both caps)."""
    require_extra("sklearn", "models", KNOB_FORESTS)
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.pipeline import Pipeline

    cap = MAX_TREE_SAMPLES
    if cap is not None and check:
        cap = min(cap, CHECK_TREE_SAMPLES)
    share = cap / matrix.n if cap is not None and matrix.n > cap else None
    forest = RandomForestRegressor(
        n_estimators=n_trees, random_state=seed, oob_score=oob, n_jobs=n_jobs, max_samples=share
    )
    return Pipeline([("encode", knob_encoder(matrix, "rank")), ("forest", forest)])


def _check_xy(matrix: KnobMatrix, y: npt.ArrayLike, name: str = "y") -> FloatArray:
    a = finite_1d(y, name)
    if a.size != matrix.n:
        raise ValueError(f"{name}: {a.size} values for {matrix.n} settings")
    if matrix.n < MIN_SAMPLES:
        raise ValueError(
            f"{name}: a random forest needs at least {MIN_SAMPLES} settings, got {matrix.n}"
        )
    return a


def _oob_r2(model: Any) -> float:
    return float(model.named_steps["forest"].oob_score_)


def impurity_importance(
    matrix: KnobMatrix,
    y: npt.ArrayLike,
    *,
    n_trees: int = 300,
    seed: int = 0,
    n_jobs: int | None = 1,
    check: bool = False,
) -> tuple[dict[str, float], float]:
    """Impurity (mean decrease in variance) importance per knob, and the out-of-bag R².

    Importances sum to 1 over the knobs (a categorical knob sums its dummy columns).

    >>> rng = np.random.default_rng(1)
    >>> X = rng.uniform(size=(60, 2))
    >>> imp, r2 = impurity_importance(KnobMatrix(X, ("a", "b"), (0, 0)), X[:, 0], n_trees=30)
    >>> imp["a"] > 0.9, r2 > 0.8
    (True, True)
    """
    target = _check_xy(matrix, y)
    model = forest_model(matrix, n_trees=n_trees, seed=seed, n_jobs=n_jobs, check=check)
    model.fit(matrix.values, target)
    raw = np.asarray(model.named_steps["forest"].feature_importances_, dtype=np.float64)
    _, groups = encoded_groups(matrix)
    out = dict.fromkeys(matrix.names, 0.0)
    for g, v in zip(groups, raw, strict=True):
        out[g] += float(v)
    return out, _oob_r2(model)


def permutation_importance_cv(
    matrix: KnobMatrix,
    y: npt.ArrayLike,
    *,
    n_trees: int = 300,
    seed: int = 0,
    folds: int = 5,
    repeats: int = 5,
    n_jobs: int | None = 1,
) -> tuple[dict[str, float], dict[str, float], float]:
    """Held-out permutation importance per knob (mean, sd) and the cross-validated R².

    For each of ``folds`` folds a forest is fitted on the other folds and each knob's
    column of the held-out fold is shuffled ``repeats`` times (all dummy columns of a
    categorical knob move together: the encoding happens inside the model), exactly as
    :func:`sklearn.inspection.permutation_importance` does it (see
    :func:`permutation_drops`).  The importance is the mean drop in held-out R²; the sd
    is over folds and repeats.  The R² is that of the pooled out-of-fold predictions.
    A fold shuffles at most :data:`PERMUTATION_ROWS` of its held-out settings (a random
    subset), all of them up to 5,000 samples with the default 5 folds.  Once half the
    settings exceed :data:`MAX_TREE_SAMPLES` every tree grows on a capped sample however
    many folds train it, so 2 folds are used (issue #17: on 25,000 × 30, 17 s instead of
    59 s, the same order of knobs).
    """
    require_extra("sklearn", "models", KNOB_FORESTS)
    from sklearn.model_selection import KFold

    target = _check_xy(matrix, y)
    k = max(2, min(folds, matrix.n // 5))
    if MAX_TREE_SAMPLES is not None and matrix.n // 2 > MAX_TREE_SAMPLES:
        k = 2
    drops: dict[str, list[float]] = {n: [] for n in matrix.names}
    predicted = np.empty_like(target)
    splitter = KFold(n_splits=k, shuffle=True, random_state=seed)
    for i, (train, test) in enumerate(splitter.split(matrix.values)):
        model = forest_model(matrix, n_trees=n_trees, seed=seed + i, oob=False, n_jobs=n_jobs)
        model.fit(matrix.values[train], target[train])
        predicted[test] = model.predict(matrix.values[test])
        scored = test
        if test.size > PERMUTATION_ROWS:
            pick = np.random.default_rng(seed + i).choice(test.size, PERMUTATION_ROWS, False)
            scored = test[np.sort(pick)]
        res = permutation_drops(
            model.predict,
            matrix.values[scored],
            target[scored],
            repeats=repeats,
            random_state=seed + i,
        )
        for j, name in enumerate(matrix.names):
            drops[name].extend(float(v) for v in res[j])
    mean = {n: float(np.mean(v)) for n, v in drops.items()}
    sd = {n: float(np.std(v, ddof=1)) if len(v) > 1 else 0.0 for n, v in drops.items()}
    return mean, sd, _r2(target, predicted)


def permutation_drops(
    predict: Any,
    X: npt.ArrayLike,
    y: npt.ArrayLike,
    *,
    repeats: int = 5,
    random_state: int = 0,
    max_rows: int = 200_000,
) -> FloatArray:
    """Drop in R² when each column of ``X`` is shuffled, ``repeats`` times: an array of
    shape ``(columns, repeats)``.

    The same shuffles and scores as :func:`sklearn.inspection.permutation_importance`
    with ``scoring="r2"`` (its ``importances``; the tests check they are equal), but the
    shuffled copies are stacked and predicted in a few calls instead of one call per
    column and repeat: a 300-tree forest spends most of a call in per-call overhead.

    >>> X = np.arange(20.0).reshape(10, 2)
    >>> d = permutation_drops(lambda a: a[:, 0], X, X[:, 0], repeats=3)
    >>> d.shape, bool(np.all(d[0] > 0)), bool(np.all(d[1] == 0))
    ((2, 3), True, True)
    """
    require_extra("sklearn", "models", KNOB_FORESTS)
    from sklearn.metrics import r2_score

    a = np.asarray(X, dtype=np.float64)
    target = np.asarray(y, dtype=np.float64)
    n, p = a.shape
    baseline = float(r2_score(target, predict(a)))
    seed = np.random.RandomState(random_state).randint(np.iinfo(np.int32).max + 1)
    copies: list[FloatArray] = []
    for j in range(p):
        rs = np.random.RandomState(seed)
        permuted = a.copy()
        idx = np.arange(n)
        for _ in range(repeats):
            rs.shuffle(idx)
            permuted[:, j] = permuted[idx, j]
            copies.append(permuted.copy())
    per_call = max(1, max_rows // max(n, 1))
    scores: list[float] = []
    for start in range(0, len(copies), per_call):
        block = copies[start : start + per_call]
        pred = np.asarray(predict(np.vstack(block)), dtype=np.float64)
        for b in range(len(block)):
            scores.append(float(r2_score(target, pred[b * n : (b + 1) * n])))
    return baseline - np.asarray(scores, dtype=np.float64).reshape(p, repeats)


def _r2(y: FloatArray, predicted: FloatArray) -> float:
    sst = float(np.sum((y - y.mean()) ** 2))
    if sst == 0:
        return float("nan")
    return 1.0 - float(np.sum((y - predicted) ** 2)) / sst


def _order(scores: Mapping[str, float], names: Sequence[str]) -> list[str]:
    """Knobs by decreasing score; ties keep the knobs' order (deterministic)."""
    return sorted(names, key=lambda n: (-scores[n], names.index(n)))


@dataclass(frozen=True)
class R2Point:
    """Out-of-bag R² of a forest on the ``k`` most important knobs (``knob`` added last)."""

    k: int
    knob: str
    r2: float


def r2_curve(
    matrix: KnobMatrix,
    y: npt.ArrayLike,
    order: Sequence[str],
    *,
    max_k: int | None = None,
    n_trees: int = 300,
    seed: int = 0,
    n_jobs: int | None = 1,
) -> tuple[R2Point, ...]:
    """Out-of-bag R² of forests fitted on the top-1 .. top-``max_k`` knobs of ``order``.

    The paper's Figure 3: the curve rises while important knobs are added and flattens
    at the all-knobs model's R² once only unimportant ones are left.

    >>> rng = np.random.default_rng(2)
    >>> X = rng.uniform(size=(80, 3))
    >>> m = KnobMatrix(X, ("a", "b", "c"), (0, 0, 0))
    >>> pts = r2_curve(m, X[:, 0] + X[:, 1], ["a", "b", "c"], max_k=2, n_trees=40)
    >>> [p.k for p in pts], pts[1].r2 > pts[0].r2
    ([1, 2], True)
    """
    target = _check_xy(matrix, y)
    top = list(order)[: max_k or len(order)]
    out: list[R2Point] = []
    for k in range(1, len(top) + 1):
        sub = matrix.columns(top[:k])
        model = forest_model(sub, n_trees=n_trees, seed=seed, n_jobs=n_jobs)
        model.fit(sub.values, target)
        out.append(R2Point(k, top[k - 1], _oob_r2(model)))
    return tuple(out)


def iou(a: Sequence[str] | set[str], b: Sequence[str] | set[str]) -> float:
    """Intersection over union (Jaccard index) of two knob sets.

    >>> iou(["a", "b", "c"], ["b", "c", "d"])
    0.5
    """
    sa, sb = set(a), set(b)
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)


@dataclass(frozen=True)
class StabilityRow:
    """Top-k agreement of forests fitted on ``repeats`` random subsets of ``size`` samples."""

    size: int
    repeats: int
    iou_mean: float
    iou_min: float
    identical: float  # share of subsets whose top-k set equals the full-sample one
    r2_mean: float  # mean out-of-bag R² of the subset models


def default_subset_sizes(n: int, minimum: int = 20) -> list[int]:
    """Subset sizes ``n/64, n/32, ..., n/2`` (the paper's Figure 6), those ≥ ``minimum``.

    >>> default_subset_sizes(400)
    [25, 50, 100, 200]
    """
    sizes = {n // 2**j for j in range(1, 7)}
    return sorted(s for s in sizes if s >= max(minimum, MIN_SAMPLES))


def stability(
    matrix: KnobMatrix,
    y: npt.ArrayLike,
    reference: Sequence[str],
    *,
    sizes: Sequence[int] | None = None,
    repeats: int = 5,
    n_trees: int = 300,
    seed: int = 0,
    n_jobs: int | None = 1,
) -> tuple[StabilityRow, ...]:
    """IoU of the impurity top-k from random subsets with ``reference`` (the full top-k).

    ``k = len(reference)``; subsets are drawn without replacement, ``repeats`` per size,
    from a generator seeded with ``seed``; each tree sees at most
    :data:`CHECK_TREE_SAMPLES` of a subset's settings.

    >>> rng = np.random.default_rng(3)
    >>> X = rng.uniform(size=(100, 4))
    >>> m = KnobMatrix(X, tuple("abcd"), (0, 0, 0, 0))
    >>> rows = stability(m, 5 * X[:, 0] + X[:, 3], ["a", "d"], sizes=[50], repeats=2, n_trees=30)
    >>> rows[0].iou_mean
    1.0
    """
    target = _check_xy(matrix, y)
    k = len(reference)
    rng = np.random.default_rng(seed)
    out: list[StabilityRow] = []
    for size in sizes if sizes is not None else default_subset_sizes(matrix.n):
        if not MIN_SAMPLES <= size <= matrix.n:
            raise ValueError(
                f"stability: subset size {size} is outside {MIN_SAMPLES}..{matrix.n} samples"
            )
        ious: list[float] = []
        r2s: list[float] = []
        for r in range(repeats):
            idx = rng.choice(matrix.n, size=size, replace=False)
            imp, r2 = impurity_importance(
                matrix.rows(idx),
                target[idx],
                n_trees=n_trees,
                seed=seed + r,
                n_jobs=n_jobs,
                check=True,
            )
            ious.append(iou(_order(imp, matrix.names)[:k], reference))
            r2s.append(r2)
        out.append(
            StabilityRow(
                size=int(size),
                repeats=repeats,
                iou_mean=float(np.mean(ious)),
                iou_min=float(np.min(ious)),
                identical=float(np.mean([v == 1.0 for v in ious])),
                r2_mean=float(np.mean(r2s)),
            )
        )
    return tuple(out)


def stable_from(rows: Sequence[StabilityRow]) -> int | None:
    """The smallest subset size from which every subset (this size and all larger ones)
    gave the full-sample top-k set; ``None`` when even the largest did not.

    >>> stable_from([StabilityRow(25, 5, .8, .5, .4, .5), StabilityRow(50, 5, 1, 1, 1, .7)])
    50
    """
    best: int | None = None
    for row in sorted(rows, key=lambda r: r.size, reverse=True):
        if row.identical < 1.0:
            break
        best = row.size
    return best


@dataclass(frozen=True)
class KnobImportance:
    """One knob's importance for one PI, by both measures."""

    knob: str
    impurity: float
    permutation: float
    permutation_sd: float
    impurity_rank: int
    permutation_rank: int
    distinct: int


@dataclass(frozen=True)
class PIRanking:
    """The knobs ranked for one PI (or composite objective), with the model checks."""

    pi: str
    direction: Direction
    knobs: tuple[KnobImportance, ...]  # by impurity importance, as in the paper
    top_k: int
    by: Literal["impurity", "permutation"]
    r2_oob: float  # all knobs, out-of-bag
    r2_cv: float  # all knobs, pooled out-of-fold predictions of the permutation folds
    curve: tuple[R2Point, ...]
    stability: tuple[StabilityRow, ...]
    n_samples: int
    n_trees: int
    seed: int
    disagreement: str | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def top(self) -> tuple[str, ...]:
        """The ``top_k`` knobs by the chosen measure (``by``)."""
        key = "impurity_rank" if self.by == "impurity" else "permutation_rank"
        ranked = sorted(self.knobs, key=lambda k: getattr(k, key))
        return tuple(k.knob for k in ranked[: self.top_k])

    @property
    def agree(self) -> bool:
        """Whether impurity and permutation importance pick the same top-k set."""
        return self.disagreement is None

    @property
    def stable_from(self) -> int | None:
        """See :func:`stable_from`."""
        return stable_from(self.stability)

    @property
    def suggested_k(self) -> int | None:
        """The fewest top knobs whose model reaches 95% of the all-knobs out-of-bag R²."""
        if not self.curve or not np.isfinite(self.r2_oob) or self.r2_oob <= 0:
            return None
        for p in self.curve:
            if p.r2 >= 0.95 * self.r2_oob:
                return p.k
        return None

    def stability_verdict(self) -> str:
        """One sentence: was the sample count enough for a stable top-k set?"""
        if not self.stability:
            return f"stability not measured ({self.n_samples} samples)"
        s = self.stable_from
        largest = max(r.size for r in self.stability)
        if s is None:
            return (
                f"the top-{self.top_k} set changed even on subsets of {largest} of the "
                f"{self.n_samples} samples: collect more samples before trusting it"
            )
        return (
            f"the top-{self.top_k} set was already the same on every subset of {s} or more "
            f"of the {self.n_samples} samples: the sample count was enough"
        )

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON export."""
        return {
            "pi": self.pi,
            "direction": self.direction,
            "top_k": self.top_k,
            "ranked_by": self.by,
            "top": list(self.top),
            "n_samples": self.n_samples,
            "n_trees": self.n_trees,
            "seed": self.seed,
            "r2_all_knobs_oob": self.r2_oob,
            "r2_all_knobs_cv": self.r2_cv,
            "suggested_k": self.suggested_k,
            "knobs": [vars(k) for k in self.knobs],
            "r2_curve": [vars(p) for p in self.curve],
            "r2_method": "out-of-bag R² of a random forest fitted on the top-k knobs",
            "stability": [vars(r) for r in self.stability],
            "stable_from": self.stable_from,
            "stability_verdict": self.stability_verdict(),
            "agree": self.agree,
            "disagreement": self.disagreement,
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> PIRanking:
        """The ranking that :meth:`as_dict` wrote (what it derives is derived again).

        >>> r = PIRanking("tps", "higher", (KnobImportance("a", .9, .8, .1, 1, 1, 50),),
        ...               1, "impurity", .7, .6, (R2Point(1, "a", .7),), (), 50, 300, 0)
        >>> PIRanking.from_dict(r.as_dict()) == r
        True
        """
        return cls(
            pi=str(doc["pi"]),
            direction=doc["direction"],
            knobs=tuple(KnobImportance(**k) for k in doc["knobs"]),
            top_k=int(doc["top_k"]),
            by=doc["ranked_by"],
            r2_oob=float(doc["r2_all_knobs_oob"]),
            r2_cv=float(doc["r2_all_knobs_cv"]),
            curve=tuple(R2Point(**p) for p in doc["r2_curve"]),
            stability=tuple(StabilityRow(**r) for r in doc["stability"]),
            n_samples=int(doc["n_samples"]),
            n_trees=int(doc["n_trees"]),
            seed=int(doc["seed"]),
            disagreement=doc["disagreement"],
            notes=tuple(doc["notes"]),
        )


def _disagreement(
    imp_top: Sequence[str], perm_top: Sequence[str], distinct: Mapping[str, int], k: int
) -> str | None:
    only_imp = [n for n in imp_top if n not in perm_top]
    only_perm = [n for n in perm_top if n not in imp_top]
    if not only_imp:
        return None

    def named(ns: list[str]) -> str:
        return ", ".join(f"{n} ({distinct[n]} distinct values)" for n in ns)

    text = (
        f"impurity and permutation importance disagree on the top {k}: only impurity "
        f"ranks {named(only_imp)} in it, only permutation ranks {named(only_perm)}."
    )
    if max(distinct[n] for n in only_imp) > min(distinct[n] for n in only_perm):
        text += (
            " Impurity importance favours knobs with many distinct values (more split "
            "points to fit noise with); permutation importance, measured on held-out "
            "samples, is not biased that way: prefer it here, or collect more samples."
        )
    else:
        text += " Collect more samples, or tune the union of both sets."
    return text


def rank_knobs(
    matrix: KnobMatrix,
    y: npt.ArrayLike,
    *,
    pi: str,
    direction: Direction = "higher",
    top_k: int = 5,
    by: Literal["impurity", "permutation"] = "impurity",
    n_trees: int = 300,
    seed: int = 0,
    max_k: int | None = 15,
    stability_sizes: Sequence[int] | None = None,
    stability_repeats: int = 5,
    permutation_repeats: int = 5,
    folds: int = 5,
    n_jobs: int | None = 1,
) -> PIRanking:
    """The full analysis of one PI: both importances (``n_trees`` trees), the top-k R²
    curve and stability (at most :data:`CHECK_TREES` trees, :data:`CAPPED_CHECK_TREES`
    above :data:`MAX_TREE_SAMPLES` settings).

    ``top_k`` is capped at the number of knobs; ``max_k`` (default 15, ``None``: all)
    bounds the R² curve; ``stability_sizes`` defaults to :func:`default_subset_sizes`
    (pass ``[]`` to skip).  ``by`` picks the measure whose top-k is handed on
    (default: impurity, as in the paper).
    """
    target = _check_xy(matrix, y, pi)
    k = max(1, min(top_k, matrix.p))
    notes: list[str] = []
    if float(np.ptp(target)) == 0:
        notes.append(f"{pi} is the same in every sample: no knob can explain it")
    impurity, r2_oob = impurity_importance(
        matrix, target, n_trees=n_trees, seed=seed, n_jobs=n_jobs
    )
    perm, perm_sd, r2_cv = permutation_importance_cv(
        matrix,
        target,
        n_trees=n_trees,
        seed=seed,
        folds=folds,
        repeats=permutation_repeats,
        n_jobs=n_jobs,
    )
    names = list(matrix.names)
    imp_order = _order(impurity, names)
    perm_order = _order(perm, names)
    distinct = matrix.distinct()
    knobs = tuple(
        KnobImportance(
            knob=n,
            impurity=impurity[n],
            permutation=perm[n],
            permutation_sd=perm_sd[n],
            impurity_rank=imp_order.index(n) + 1,
            permutation_rank=perm_order.index(n) + 1,
            distinct=distinct[n],
        )
        for n in imp_order
    )
    chosen = imp_order if by == "impurity" else perm_order
    capped = MAX_TREE_SAMPLES is not None and matrix.n > MAX_TREE_SAMPLES
    check_trees = min(n_trees, CAPPED_CHECK_TREES if capped else CHECK_TREES)
    curve = r2_curve(
        matrix, target, chosen, max_k=max_k, n_trees=check_trees, seed=seed, n_jobs=n_jobs
    )
    sizes = default_subset_sizes(matrix.n) if stability_sizes is None else stability_sizes
    stab = (
        stability(
            matrix,
            target,
            chosen[:k],
            sizes=[s for s in sizes if s < matrix.n],
            repeats=stability_repeats,
            n_trees=check_trees,
            seed=seed,
            n_jobs=n_jobs,
        )
        if by == "impurity"
        else ()
    )
    if by == "permutation":
        notes.append("stability is measured for impurity rankings only (as in the paper)")
    if MAX_TREE_SAMPLES is not None and matrix.n > MAX_TREE_SAMPLES:
        notes.append(
            f"each tree was grown on a bootstrap sample of {MAX_TREE_SAMPLES:,} of the "
            f"{matrix.n:,} samples (a cap that keeps large rankings fast; the forests see "
            "all of them together)"
        )
    if r2_oob < 0.5:
        notes.append(
            f"the all-knobs model explains little of {pi} (out-of-bag R² {r2_oob:.2f}): "
            "the ranking is weak; collect more samples or check the measurement noise"
        )
    return PIRanking(
        pi=pi,
        direction=direction,
        knobs=knobs,
        top_k=k,
        by=by,
        r2_oob=r2_oob,
        r2_cv=r2_cv,
        curve=curve,
        stability=stab,
        n_samples=matrix.n,
        n_trees=n_trees,
        seed=seed,
        disagreement=_disagreement(imp_order[:k], perm_order[:k], distinct, k),
        notes=tuple(notes),
    )


@dataclass(frozen=True)
class ValidationRow:
    """The paper's Table 1 for one PI: best of the all-knob samples vs best of the
    samples that varied only the top-k knobs."""

    pi: str
    direction: Direction
    best_full: float
    best_top: float
    n_full: int
    n_top: int

    @property
    def ratio(self) -> float:
        """How close the top-k samples came: 1.0 = as good, > 1 better (either direction)."""
        if self.direction == "higher":
            return self.best_top / self.best_full if self.best_full else float("nan")
        return self.best_full / self.best_top if self.best_top else float("nan")

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON export."""
        return {**vars(self), "ratio": self.ratio}


def validation_summary(
    full: Mapping[str, npt.ArrayLike],
    top: Mapping[str, npt.ArrayLike],
    directions: Mapping[str, Direction],
) -> tuple[ValidationRow, ...]:
    """Best value per PI of the all-knob samples and of the top-k-only samples.

    >>> rows = validation_summary({"tps": [1, 5, 3]}, {"tps": [4, 4.9]}, {"tps": "higher"})
    >>> round(rows[0].ratio, 2)
    0.98
    """
    out: list[ValidationRow] = []
    for pi, direction in directions.items():
        a = finite_1d(full[pi], f"{pi} (all-knob samples)")
        b = finite_1d(top[pi], f"{pi} (top-k samples)")
        if a.size == 0 or b.size == 0:
            raise ValueError(f"validation: no samples of {pi}")
        pick = np.max if direction == "higher" else np.min
        out.append(ValidationRow(pi, direction, float(pick(a)), float(pick(b)), a.size, b.size))
    return tuple(out)
