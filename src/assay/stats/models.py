"""Prediction models for incremental sampling, behind one scikit-learn-like interface.

- ``anova`` (the paper's choice): :class:`~assay.stats.anova.CategoricalAnova`, every
  parameter categorical, p > 0.05 terms dropped and refitted.
- ``mlp`` (§4.2): scikit-learn ``MLPRegressor`` with hidden layers 10-10-5 and the lbfgs
  solver; categorical parameters one-hot encoded, numeric ones standardised, and the
  metric standardised (undone on prediction).
- ``linear`` (§4.2): ordinary least squares with the numeric parameters as numbers and
  the categorical ones one-hot encoded.

:func:`validation_r2` computes the R² of a model on random train/validation splits, the
stopping statistic of Algorithm 1.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, Self

import numpy as np
import numpy.typing as npt
import pandas as pd

from assay.extras import require_extra
from assay.stats.anova import CategoricalAnova

__all__ = [
    "MODELS",
    "Model",
    "make_model",
    "r2_score",
    "require_model",
    "split_indices",
    "validation_r2",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Names accepted by :func:`make_model` (the first is the default).
MODELS: tuple[str, ...] = ("anova", "mlp", "linear")


#: The models that scikit-learn fits (the ``models`` extra), as messages name them.
SKLEARN_MODELS: dict[str, str] = {"mlp": "the MLP model", "linear": "the linear model"}


def require_model(name: str) -> None:
    """A :class:`~assay.extras.MissingExtra` naming the extra when model ``name`` needs
    scikit-learn and it is not installed (checked before anything is measured)."""
    if name in SKLEARN_MODELS:
        require_extra("sklearn", "models", SKLEARN_MODELS[name])


class Model(Protocol):
    """Anything with scikit-learn's ``fit(X, y) -> self`` and ``predict(X) -> array``."""

    def fit(self, X: pd.DataFrame, y: npt.ArrayLike) -> Self: ...

    def predict(self, X: pd.DataFrame) -> FloatArray: ...


def _columns(X: pd.DataFrame) -> tuple[list[str], list[str]]:
    num, cat = [], []
    for c in X.columns:
        s = X[c]
        if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s):
            num.append(str(c))
        else:
            cat.append(str(c))
    return num, cat


class _SklearnModel:
    """A scikit-learn regressor behind the preprocessing the paper describes."""

    def __init__(self, kind: str, seed: int) -> None:
        self.kind = kind
        self.seed = seed
        self._pipe: Any = None

    def _build(self, X: pd.DataFrame) -> Any:
        from sklearn.compose import ColumnTransformer, TransformedTargetRegressor
        from sklearn.linear_model import LinearRegression
        from sklearn.neural_network import MLPRegressor
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import OneHotEncoder, StandardScaler

        num, cat = _columns(X)
        parts: list[tuple[str, Any, list[str]]] = []
        if cat:
            parts.append(("cat", OneHotEncoder(handle_unknown="ignore"), cat))
        if num:
            scale = StandardScaler() if self.kind == "mlp" else "passthrough"
            parts.append(("num", scale, num))
        pre = ColumnTransformer(parts, sparse_threshold=0.0)
        if self.kind == "linear":
            return make_pipeline(pre, LinearRegression())
        mlp = MLPRegressor(hidden_layer_sizes=(10, 10, 5), solver="lbfgs", random_state=self.seed)
        return TransformedTargetRegressor(
            regressor=make_pipeline(pre, mlp), transformer=StandardScaler()
        )

    def fit(self, X: pd.DataFrame, y: npt.ArrayLike) -> Self:
        require_model(self.kind)
        from sklearn.exceptions import ConvergenceWarning

        Xc = X.copy()
        _, cat = _columns(Xc)
        for c in cat:
            Xc[c] = Xc[c].astype(str)
        self._pipe = self._build(Xc)
        with warnings.catch_warnings():
            # lbfgs stops at scikit-learn's default max_iter, as in the paper's setup
            warnings.simplefilter("ignore", ConvergenceWarning)
            self._pipe.fit(Xc, np.asarray(y, dtype=float))
        return self

    def predict(self, X: pd.DataFrame) -> FloatArray:
        if self._pipe is None:
            raise RuntimeError("fit the model first")
        Xc = X.copy()
        _, cat = _columns(Xc)
        for c in cat:
            Xc[c] = Xc[c].astype(str)
        return np.asarray(self._pipe.predict(Xc), dtype=float).reshape(-1)


def make_model(
    name: str = "anova",
    *,
    interactions: bool = False,
    levels: Mapping[str, Sequence[Any]] | None = None,
    seed: int = 0,
) -> Model:
    """A fresh, unfitted model called ``name`` (one of :data:`MODELS`).

    ``interactions`` and ``levels`` apply to ``anova``; ``seed`` to ``mlp``.

    >>> X = pd.DataFrame({"n": [1, 2, 3, 4] * 3, "c": list("aabb") * 3})
    >>> y = 2.0 * X["n"] + (X["c"] == "b")
    >>> [round(float(make_model(m).fit(X, y).predict(X.iloc[:1])[0]), 1) for m in MODELS]
    [2.0, 2.0, 2.0]
    >>> make_model("forest")
    Traceback (most recent call last):
    ...
    ValueError: unknown model 'forest'; choose one of: anova, mlp, linear
    """
    if name == "anova":
        return CategoricalAnova(interactions=interactions, levels=levels)
    if name in ("mlp", "linear"):
        return _SklearnModel(name, seed)
    raise ValueError(f"unknown model {name!r}; choose one of: {', '.join(MODELS)}")


def r2_score(y: npt.ArrayLike, pred: npt.ArrayLike) -> float:
    """Coefficient of determination ``1 - SS_res / SS_tot`` (NaN when y is constant).

    >>> r2_score([1, 2, 3, 4], [1.1, 1.9, 3.2, 3.8])
    0.98
    """
    a = np.asarray(y, dtype=float)
    b = np.asarray(pred, dtype=float)
    ss_tot = float(np.sum((a - a.mean()) ** 2))
    if ss_tot <= 0:
        return float("nan")
    return round(1.0 - float(np.sum((a - b) ** 2)) / ss_tot, 15)


def split_indices(
    n: int, splits: int, train_fraction: float, rng: np.random.Generator
) -> list[tuple[IntArray, IntArray]]:
    """``splits`` random (train, validation) partitions of ``range(n)``.

    >>> [(len(t), len(v)) for t, v in split_indices(10, 2, 0.8, np.random.default_rng(0))]
    [(8, 2), (8, 2)]
    """
    if not 0 < train_fraction < 1:
        raise ValueError(f"train_fraction must be in (0, 1), got {train_fraction}")
    if n < 2:
        raise ValueError("a split needs at least 2 settings")
    n_train = min(max(1, round(train_fraction * n)), n - 1)
    out = []
    for _ in range(splits):
        perm = rng.permutation(n).astype(np.int64)
        out.append((np.sort(perm[:n_train]), np.sort(perm[n_train:])))
    return out


def validation_r2(
    make: Callable[[], Model],
    X: pd.DataFrame,
    y: npt.ArrayLike,
    splits: int = 10,
    train_fraction: float = 0.8,
    rng: np.random.Generator | None = None,
) -> FloatArray:
    """R² on the validation part of ``splits`` random splits (NaN where it cannot be fitted).

    >>> X = pd.DataFrame({"n": list(range(20))})
    >>> r2 = validation_r2(lambda: make_model("linear"), X, 3.0 * X["n"], splits=3)
    >>> r2.round(6).tolist()
    [1.0, 1.0, 1.0]
    """
    yv = np.asarray(y, dtype=float).reshape(-1)
    gen = rng if rng is not None else np.random.default_rng(0)
    out = np.full(splits, np.nan)
    for k, (tr, va) in enumerate(split_indices(len(yv), splits, train_fraction, gen)):
        try:
            model = make().fit(X.iloc[tr], yv[tr])
        except (ValueError, np.linalg.LinAlgError):
            continue
        out[k] = r2_score(yv[va], model.predict(X.iloc[va]))
    return out
