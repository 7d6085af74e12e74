"""Categorical ANOVA against statsmodels and against a known truth."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.stats.anova import CategoricalAnova, Encoder

PARAMS = ["a", "b", "c"]


def _data(seed: int = 1, reps: int = 2) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    grid = pd.DataFrame(
        list(itertools.product([1, 2, 4, 8], [0, 50, 100], ["x", "y", "z"])), columns=PARAMS
    )
    df = pd.concat([grid] * reps, ignore_index=True)
    df["y"] = (
        df["a"].map({1: 1.0, 2: 3.0, 4: 4.0, 8: 4.2})
        + 0.01 * df["b"]
        + (df["c"] == "y") * 0.5
        + 0.4 * (df["a"] == 8) * (df["c"] == "z")
        + rng.normal(0, 0.3, len(df))
    )
    return df


def _formula(inter: bool) -> str:
    f = "y ~ C(a) + C(b) + C(c)"
    return f + (" + C(a):C(b) + C(a):C(c) + C(b):C(c)" if inter else "")


@pytest.mark.parametrize("balanced", [True, False])
@pytest.mark.parametrize("typ", [1, 2])
@pytest.mark.parametrize("inter", [False, True])
def test_matches_statsmodels(balanced: bool, typ: int, inter: bool) -> None:
    data = _data()
    if not balanced:
        data = data.sample(50, random_state=3)
    fit = smf.ols(_formula(inter), data=data).fit()
    ref = sm.stats.anova_lm(fit, typ=typ)
    m = CategoricalAnova(interactions=inter, typ=typ, drop_insignificant=False)
    mine = m.fit(data[PARAMS], data["y"]).table_.to_frame()
    np.testing.assert_allclose(mine["df"], ref["df"])
    np.testing.assert_allclose(mine["sum_sq"], ref["sum_sq"], rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(mine["F"].iloc[:-1], ref["F"].iloc[:-1], rtol=1e-9)
    np.testing.assert_allclose(
        mine["PR(>F)"].iloc[:-1], ref["PR(>F)"].iloc[:-1], rtol=1e-7, atol=1e-15
    )
    np.testing.assert_allclose(m.predict(data[PARAMS]), fit.fittedvalues, atol=1e-9)


def test_balanced_type1_equals_type2() -> None:
    data = _data()
    t1 = CategoricalAnova(interactions=True, typ=1, drop_insignificant=False)
    t2 = CategoricalAnova(interactions=True, typ=2, drop_insignificant=False)
    a = t1.fit(data[PARAMS], data["y"]).table_.to_frame()
    b = t2.fit(data[PARAMS], data["y"]).table_.to_frame()
    np.testing.assert_allclose(a["sum_sq"], b["sum_sq"], rtol=1e-9)


def test_known_truth_selects_terms_and_effects() -> None:
    rng = np.random.default_rng(5)
    grid = pd.DataFrame(
        list(itertools.product([1, 2, 4, 8, 16], ["p", "q"], [0, 1, 2, 3])), columns=["w", "k", "z"]
    )
    df = pd.concat([grid] * 3, ignore_index=True)
    truth_w = {1: -4.0, 2: -1.0, 4: 1.0, 8: 2.0, 16: 2.0}
    df["y"] = df["w"].map(truth_w) + 3.0 * (df["k"] == "q") + rng.normal(0, 0.2, len(df))
    m = CategoricalAnova(interactions=True).fit(df[["w", "k", "z"]], df["y"])
    assert set(m.terms_) >= {("w",), ("k",)}
    assert ("z",) not in m.terms_  # z has no effect (p > 0.05 with this seed)
    assert all(len(t) == 1 for t in m.terms_)  # no interaction in the truth
    eff = m.effects(("w",))
    expected = np.array(list(truth_w.values())) - np.mean(list(truth_w.values()))
    np.testing.assert_allclose(eff.to_numpy(), expected, atol=0.1)
    share = {r.name: r.pct_var for r in m.table_.rows}
    assert share["w"] > share["k"] > 5


def test_dropped_main_effect_keeps_interaction_span() -> None:
    # y depends on the a×b cells only (no main effect of a): the refit with a:b but
    # without a must still reproduce the cell means
    grid = pd.DataFrame(list(itertools.product([0, 1], [0, 1])), columns=["a", "b"])
    df = pd.concat([grid] * 5, ignore_index=True)
    rng = np.random.default_rng(0)
    df["y"] = np.where(df["a"] == df["b"], 1.0, -1.0) + 2.0 * df["b"] + rng.normal(0, 0.01, 20)
    m = CategoricalAnova(interactions=True).fit(df[["a", "b"]], df["y"])
    assert ("a", "b") in m.terms_
    pred = m.predict(grid)
    np.testing.assert_allclose(pred, [1.0, 1.0, -1.0, 3.0], atol=0.02)


def test_unseen_levels_are_handled() -> None:
    X = pd.DataFrame({"n": [1, 1, 4, 4] * 3, "c": ["u", "v"] * 6})
    y = 2.0 * X["n"] + (X["c"] == "v") + np.tile([0.01, -0.01, 0.0], 4)
    m = CategoricalAnova().fit(X, y)
    # numeric 2 was never seen: interpolated between 1 and 4; category "w" falls back
    new = pd.DataFrame({"n": [2, 1], "c": ["u", "w"]})
    p = m.predict(new)
    assert p[0] == pytest.approx(2.0 + (8.0 - 2.0) / 3, abs=0.05)
    assert 2.0 < p[1] < 3.0
    m2 = CategoricalAnova(levels={"n": [1, 2, 4]}).fit(X, y)
    assert m2.predict(new)[0] == pytest.approx(p[0], abs=1e-9)


def test_saturated_fit_is_flagged() -> None:
    X = pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "x"]})
    m = CategoricalAnova().fit(X, [1.0, 2.0, 4.0])
    assert m.insufficient_
    assert m.table_.resid_df == 0


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="finite"):
        CategoricalAnova().fit(pd.DataFrame({"a": [1, 2]}), [1.0, np.nan])
    with pytest.raises(ValueError, match="lack"):
        Encoder.from_frame(pd.DataFrame({"a": [1]})).codes(pd.DataFrame({"b": [1]}))


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10_000), st.integers(12, 36))
def test_fitted_values_equal_statsmodels_on_random_samples(seed: int, n: int) -> None:
    data = _data(seed, reps=1).sample(n, random_state=seed)
    fit = smf.ols(_formula(False), data=data).fit()
    m = CategoricalAnova(drop_insignificant=False).fit(data[PARAMS], data["y"])
    np.testing.assert_allclose(m.predict(data[PARAMS]), fit.fittedvalues, atol=1e-8)
    tab = m.table_
    assert tab.resid_df == int(fit.df_resid)
    assert tab.resid_ss == pytest.approx(fit.ssr, rel=1e-8, abs=1e-10)
