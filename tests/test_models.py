"""The three prediction models behind one interface, and validation R²."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import r2_score as sk_r2

from assay.stats.anova import CategoricalAnova
from assay.stats.models import MODELS, make_model, r2_score, split_indices, validation_r2


def _grid() -> tuple[pd.DataFrame, np.ndarray]:
    X = pd.DataFrame(
        list(itertools.product([1, 2, 4, 8, 16], [0, 50, 100], ["x", "y"])), columns=["w", "b", "c"]
    )
    y = np.log2(X["w"].to_numpy(float)) * 3 + 0.02 * X["b"].to_numpy(float) + (X["c"] == "y") * 2
    return X, y.to_numpy(float) if hasattr(y, "to_numpy") else y


def test_r2_matches_sklearn() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=30), rng.normal(size=30)
    assert r2_score(a, b) == pytest.approx(sk_r2(a, b))


@pytest.mark.parametrize("name", MODELS)
def test_models_fit_and_predict(name: str) -> None:
    X, y = _grid()
    m = make_model(name).fit(X, y)
    pred = m.predict(X)
    assert pred.shape == (len(X),)
    floor = {"anova": 0.999, "mlp": 0.95, "linear": 0.8}[name]
    assert r2_score(y, pred) > floor


def test_linear_cannot_fit_a_log_curve_but_anova_can() -> None:
    X, y = _grid()
    lin = validation_r2(lambda: make_model("linear"), X, y, splits=5)
    ano = validation_r2(lambda: make_model("anova"), X, y, splits=5)
    assert np.all(ano > 0.99)
    assert np.median(lin) < np.median(ano)


def test_anova_model_is_categorical_anova() -> None:
    assert isinstance(make_model("anova", interactions=True), CategoricalAnova)


def test_mlp_is_deterministic_for_a_seed() -> None:
    X, y = _grid()
    p1 = make_model("mlp", seed=3).fit(X, y).predict(X)
    p2 = make_model("mlp", seed=3).fit(X, y).predict(X)
    np.testing.assert_array_equal(p1, p2)


def test_models_accept_unseen_categories() -> None:
    X, y = _grid()
    new = pd.DataFrame({"w": [4], "b": [50], "c": ["z"]})
    for name in MODELS:
        assert np.isfinite(make_model(name).fit(X, y).predict(new)).all()


def test_splits_partition_the_rows() -> None:
    for tr, va in split_indices(50, 10, 0.8, np.random.default_rng(1)):
        assert len(tr) == 40 and len(va) == 10
        assert sorted(np.concatenate([tr, va]).tolist()) == list(range(50))
    with pytest.raises(ValueError):
        split_indices(10, 1, 1.0, np.random.default_rng(0))


def test_unknown_model() -> None:
    with pytest.raises(ValueError, match="unknown model"):
        make_model("forest")
