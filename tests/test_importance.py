"""Random-forest knob importance against scikit-learn and synthetic data with a known truth."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.ensemble import RandomForestRegressor
from sklearn.inspection import permutation_importance

from assay.designs.knobs import CategoricalKnob, KnobSpace, NumericKnob, analyze_knobs
from assay.designs.knobs import latin_hypercube as lhs
from assay.stats.importance import (
    KnobMatrix,
    StabilityRow,
    _disagreement,
    default_subset_sizes,
    forest_model,
    impurity_importance,
    iou,
    permutation_drops,
    permutation_importance_cv,
    r2_curve,
    rank_knobs,
    stability,
    stable_from,
    validation_summary,
)
from assay.stats.objective import Constraint, composite_score, parse_objective


def _data(n: int = 150, seed: int = 0) -> tuple[KnobMatrix, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = np.column_stack(
        [
            rng.uniform(size=n),  # a: strong
            rng.integers(0, 3, n),  # mode: categorical, code 1 matters
            rng.uniform(size=n),  # b: interacts with c
            rng.uniform(size=n),  # c
            rng.integers(0, 2, n),  # flag: irrelevant
            rng.uniform(size=n),  # noise: irrelevant, many distinct values
        ]
    ).astype(float)
    y = 4 * X[:, 0] + 2 * (X[:, 1] == 1) + 3 * X[:, 2] * X[:, 3] + rng.normal(0, 0.2, n)
    return KnobMatrix(X, ("a", "mode", "b", "c", "flag", "noise"), (0, 3, 0, 0, 0, 0)), y


def test_impurity_importance_is_sklearns_forest_summed_over_dummies() -> None:
    m, y = _data()
    imp, r2 = impurity_importance(m, y, n_trees=40, seed=3)
    assert sum(imp.values()) == pytest.approx(1.0)
    # the same forest by hand: dummies of 'mode' first, then the numeric knobs' ranks
    # (issue #20: trees split on order alone; ranks keep it where outliers squash
    # standardised values below float32 precision)
    X = m.values
    dummies = (X[:, [1]] == np.arange(3)).astype(float)
    num = X[:, [0, 2, 3, 4, 5]]
    ranks = np.column_stack([np.unique(c, return_inverse=True)[1] for c in num.T])
    Z = np.hstack([dummies, ranks.astype(float)])
    rf = RandomForestRegressor(n_estimators=40, random_state=3, oob_score=True).fit(Z, y)
    fi = rf.feature_importances_
    assert imp["mode"] == pytest.approx(fi[:3].sum())
    assert [imp[k] for k in ("a", "b", "c", "flag", "noise")] == pytest.approx(list(fi[3:]))
    assert r2 == pytest.approx(rf.oob_score_)


def test_permutation_drops_equal_sklearns_permutation_importance() -> None:
    m, y = _data(80)
    model = forest_model(m, n_trees=30, seed=1, oob=False).fit(m.values[:60], y[:60])
    ref = permutation_importance(
        model, m.values[60:], y[60:], scoring="r2", n_repeats=4, random_state=11
    )
    mine = permutation_drops(model.predict, m.values[60:], y[60:], repeats=4, random_state=11)
    np.testing.assert_allclose(mine, ref.importances, rtol=1e-12, atol=1e-12)
    # the batching does not change the result
    small = permutation_drops(
        model.predict, m.values[60:], y[60:], repeats=4, random_state=11, max_rows=25
    )
    np.testing.assert_allclose(small, mine)


def test_rank_knobs_recovers_the_known_truth() -> None:
    m, y = _data(200)
    r = rank_knobs(
        m,
        y,
        pi="perf",
        top_k=4,
        n_trees=50,
        max_k=4,
        stability_sizes=[100],
        stability_repeats=3,
        permutation_repeats=3,
    )
    assert set(r.top) == {"a", "mode", "b", "c"}
    assert r.agree and r.disagreement is None
    assert r.r2_oob > 0.8 and r.r2_cv > 0.8
    perm = {k.knob: k.permutation for k in r.knobs}
    assert perm["flag"] < 0.02 and perm["noise"] < 0.02 and perm["a"] > 0.3
    # Figure 3: the curve rises over the important knobs
    assert [p.knob for p in r.curve[:4]] == list(r.top)
    assert r.curve[3].r2 > r.curve[0].r2
    assert r.stability[0].iou_mean == 1.0
    assert r.stable_from == 100
    assert "was enough" in r.stability_verdict()
    d = r.as_dict()
    assert d["r2_method"].startswith("out-of-bag") and d["top"] == list(r.top)


def test_impurity_overrates_the_high_cardinality_noise_knob() -> None:
    """Strobl et al.'s bias: a noise knob with many distinct values gets more impurity
    importance than a binary noise knob; held-out permutation importance does not."""
    ratios, perms = [], []
    for seed in range(3):
        m, y = _data(150, seed)
        imp, _ = impurity_importance(m, y, n_trees=40, seed=seed)
        perm, _, _ = permutation_importance_cv(m, y, n_trees=40, seed=seed, repeats=2, folds=3)
        ratios.append(imp["noise"] / max(imp["flag"], 1e-12))
        perms.append(perm["noise"])
    assert min(ratios) > 2
    assert max(abs(p) for p in perms) < 0.02


def test_disagreement_message_names_the_bias() -> None:
    text = _disagreement(["a", "noise"], ["a", "flag"], {"a": 50, "noise": 150, "flag": 2}, 2)
    assert text is not None
    assert "noise (150 distinct values)" in text and "flag (2 distinct values)" in text
    assert "many distinct values" in text
    assert _disagreement(["a", "b"], ["b", "a"], {"a": 2, "b": 2}, 2) is None


def test_stability_detects_too_few_samples() -> None:
    rng = np.random.default_rng(5)
    X = rng.uniform(size=(60, 8))
    y = rng.normal(size=60)  # nothing matters: every top-3 is noise
    m = KnobMatrix(X, tuple("abcdefgh"), (0,) * 8)
    imp, _ = impurity_importance(m, y, n_trees=30)
    top = sorted(imp, key=lambda k: -imp[k])[:3]
    rows = stability(m, y, top, sizes=[20, 30], repeats=4, n_trees=30)
    assert [r.size for r in rows] == [20, 30]
    assert all(r.iou_mean < 1 for r in rows)
    assert stable_from(rows) is None


def test_stable_from_and_sizes() -> None:
    rows = [
        StabilityRow(10, 3, 1.0, 1.0, 1.0, 0.1),
        StabilityRow(20, 3, 0.8, 0.5, 0.5, 0.2),
        StabilityRow(40, 3, 1.0, 1.0, 1.0, 0.3),
        StabilityRow(80, 3, 1.0, 1.0, 1.0, 0.4),
    ]
    assert stable_from(rows) == 40  # a lucky small subset does not count
    assert default_subset_sizes(25_600) == [400, 800, 1600, 3200, 6400, 12800]
    assert default_subset_sizes(30) == []


@given(
    a=st.sets(st.sampled_from("abcdefgh"), max_size=6),
    b=st.sets(st.sampled_from("abcdefgh"), max_size=6),
)
def test_iou_properties(a: set[str], b: set[str]) -> None:
    v = iou(a, b)
    assert 0 <= v <= 1 and v == iou(b, a)
    assert (v == 1) == (a == b)


def test_r2_curve_and_input_errors() -> None:
    m, y = _data(100)
    pts = r2_curve(m, y, ["a", "mode", "b", "c", "flag"], max_k=3, n_trees=30)
    assert [p.k for p in pts] == [1, 2, 3] and pts[2].r2 > pts[0].r2
    with pytest.raises(ValueError, match="at least 10 settings"):
        impurity_importance(m.rows(np.arange(5)), y[:5])
    with pytest.raises(ValueError, match="values for"):
        impurity_importance(m, y[:50])
    with pytest.raises(ValueError, match="finite"):
        impurity_importance(m, np.where(np.arange(100) == 3, np.nan, y))
    with pytest.raises(ValueError, match="category codes"):
        KnobMatrix(np.array([[3.0]]), ("m",), (3,))


def test_objective_parsing() -> None:
    o = parse_objective("maximize tps subject to p99 <= 20, p50<5")
    assert (o.pi, o.direction) == ("tps", "higher")
    assert o.constraints == (Constraint("p99", "<=", 20.0), Constraint("p50", "<=", 5.0))
    assert o.pis == ("tps", "p99", "p50")
    assert parse_objective("min lat").constraints == ()
    assert parse_objective("max tps s.t. err >= -1e-3").constraints[0].bound == -1e-3
    for bad in ("tps", "max", "max tps s.t.", "max tps s.t. p99 = 3", "best tps"):
        with pytest.raises(ValueError, match="expected 'max PI'"):
            parse_objective(bad)


@settings(max_examples=60, deadline=None)
@given(
    y=st.lists(st.floats(-1e6, 1e6), min_size=2, max_size=30),
    data=st.data(),
)
def test_composite_score_ranks_infeasible_below_feasible(
    y: list[float], data: st.DataObject
) -> None:
    lat = data.draw(st.lists(st.floats(0, 100), min_size=len(y), max_size=len(y)))
    for text in ("max y s.t. lat <= 50", "min y s.t. lat <= 50"):
        obj = parse_objective(text)
        s = composite_score(obj, {"y": y, "lat": lat})
        feasible = np.array(lat) <= 50
        if feasible.all() or not feasible.any():
            continue
        if obj.direction == "higher":
            assert s[~feasible].max() <= s[feasible].min()
        else:
            assert s[~feasible].min() >= s[feasible].max()
        np.testing.assert_array_equal(s[feasible], np.array(y)[feasible])


def test_validation_summary_both_directions() -> None:
    rows = validation_summary(
        {"tps": [100, 300, 200], "p99": [9.0, 4.0, 6.0]},
        {"tps": [290, 250], "p99": [5.0, 8.0]},
        {"tps": "higher", "p99": "lower"},
    )
    assert rows[0].best_full == 300 and rows[0].best_top == 290
    assert rows[0].ratio == pytest.approx(290 / 300)
    assert rows[1].ratio == pytest.approx(4.0 / 5.0)
    assert rows[1].as_dict()["n_top"] == 2


def test_analyze_knobs_per_pi_and_objective() -> None:
    space = KnobSpace(
        (
            NumericKnob("buf", 1, 1024, 32, integer=True, log=True),
            NumericKnob("delay", 0.0, 10.0, 0.0),
            CategoricalKnob("sync", ("on", "off"), "on", unsafe=True),
            NumericKnob("junk", 0.0, 1.0, 0.5),
        )
    )
    s = lhs(space, 120, seed=4)
    rng = np.random.default_rng(0)
    tps = np.array([np.log2(x["buf"]) + (3 if x["sync"] == "off" else 0) for x in s])
    tps += rng.normal(0, 0.1, len(s))
    p99 = np.array([x["delay"] for x in s]) + rng.normal(0, 0.05, len(s))
    obj = parse_objective("max tps s.t. p99 <= 5")
    res = analyze_knobs(
        space,
        s,
        {"tps": tps, "p99": p99},
        {"tps": "higher", "p99": "lower"},
        objective=obj,
        top_k=2,
        n_trees=30,
        stability_sizes=[60],
        stability_repeats=2,
        permutation_repeats=2,
        max_k=2,
    )
    assert [r.pi for r in res.rankings] == ["tps", "p99", str(obj)]
    assert set(res.ranking("tps").top) == {"buf", "sync"}
    assert res.ranking("p99").top[0] == "delay"
    assert res.primary.pi == str(obj) and "delay" in res.primary.top
    assert res.as_dict()["primary"] == str(obj)


def test_trees_grow_on_capped_bootstrap_samples(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue #17: past MAX_TREE_SAMPLES settings each tree sees a bootstrap sample of that
    many (the forest as a whole sees them all), and the ranking says so."""
    import assay.stats.importance as imp_mod

    rng = np.random.default_rng(4)
    X = rng.uniform(size=(200, 3))
    m = KnobMatrix(X, ("a", "b", "c"), (0, 0, 0))
    monkeypatch.setattr(imp_mod, "MAX_TREE_SAMPLES", 50)
    assert imp_mod.forest_model(m).named_steps["forest"].max_samples == 0.25
    small = m.rows(np.arange(40))
    assert imp_mod.forest_model(small).named_steps["forest"].max_samples is None
    r = imp_mod.rank_knobs(m, 5 * X[:, 0] + X[:, 1], pi="y", n_trees=30, max_k=2,
                           stability_sizes=[], folds=2, permutation_repeats=2)  # fmt: skip
    assert r.knobs[0].knob == "a" and any("bootstrap sample of 50" in n for n in r.notes)


def test_stability_trees_and_permutation_scoring_are_capped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue #17: the stability check's trees see at most CHECK_TREE_SAMPLES settings
    (the importances' and the curve's keep MAX_TREE_SAMPLES), and a permutation fold
    shuffles at most PERMUTATION_ROWS of its held-out settings while the pooled R²
    still uses all of them."""
    import assay.stats.importance as imp_mod

    rng = np.random.default_rng(6)
    X = rng.uniform(size=(200, 3))
    m = KnobMatrix(X, ("a", "b", "c"), (0, 0, 0))
    monkeypatch.setattr(imp_mod, "MAX_TREE_SAMPLES", 100)
    monkeypatch.setattr(imp_mod, "CHECK_TREE_SAMPLES", 40)
    assert imp_mod.forest_model(m).named_steps["forest"].max_samples == 0.5
    assert imp_mod.forest_model(m, check=True).named_steps["forest"].max_samples == 0.2
    monkeypatch.setattr(imp_mod, "MAX_TREE_SAMPLES", None)  # no cap lifts both
    assert imp_mod.forest_model(m, check=True).named_steps["forest"].max_samples is None

    scored: list[int] = []
    real = imp_mod.permutation_drops

    def counting(predict: object, Xs: np.ndarray, ys: np.ndarray, **kw: object) -> object:
        scored.append(len(Xs))
        return real(predict, Xs, ys, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(imp_mod, "permutation_drops", counting)
    monkeypatch.setattr(imp_mod, "PERMUTATION_ROWS", 30)
    y = 5 * X[:, 0] + X[:, 1] + rng.normal(0, 0.1, 200)
    mean, _sd, r2 = imp_mod.permutation_importance_cv(m, y, n_trees=20, folds=2, repeats=2)
    assert scored == [30, 30]
    assert max(mean, key=lambda k: mean[k]) == "a"
    monkeypatch.setattr(imp_mod, "PERMUTATION_ROWS", 10_000)
    _m, _s, r2_all = imp_mod.permutation_importance_cv(m, y, n_trees=20, folds=2, repeats=2)
    assert scored[2:] == [100, 100]
    assert r2 == r2_all  # the same folds and forests: out-of-fold R² on every setting


def _forests_fitted(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """From now on, (settings of the matrix, trees) of every forest the module makes."""
    import assay.stats.importance as imp_mod

    seen: list[tuple[int, int]] = []
    real = imp_mod.forest_model

    def counting(matrix: KnobMatrix, **kw: object) -> object:
        seen.append((matrix.n, int(kw["n_trees"])))  # type: ignore[call-overload]
        return real(matrix, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(imp_mod, "forest_model", counting)
    return seen


def test_the_curve_and_stability_fit_fewer_trees(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue #17: the importances keep n_trees; the top-k curve and the stability check
    fit at most CHECK_TREES (their figures were the same with 100 as with 300)."""
    import assay.stats.importance as imp_mod

    fitted = _forests_fitted(monkeypatch)
    monkeypatch.setattr(imp_mod, "CHECK_TREES", 7)
    rng = np.random.default_rng(5)
    X = rng.uniform(size=(60, 3))
    m = KnobMatrix(X, ("a", "b", "c"), (0, 0, 0))
    imp_mod.rank_knobs(m, X[:, 0], pi="y", n_trees=20, max_k=2, stability_sizes=[30],
                       stability_repeats=2, folds=2, permutation_repeats=2)  # fmt: skip
    # impurity (1) and permutation folds (2) with 20 trees; curve (2) and stability (2): 7
    assert [trees for _n, trees in fitted] == [20, 20, 20, 7, 7, 7, 7]


def test_large_rankings_use_two_folds_and_fewer_check_trees(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue #17: once half the settings exceed MAX_TREE_SAMPLES the permutation
    importance uses 2 folds (every tree grows on a capped sample anyway), and the curve
    and stability forests have CAPPED_CHECK_TREES trees."""
    import assay.stats.importance as imp_mod

    seen = _forests_fitted(monkeypatch)  # (settings of the matrix, trees)
    monkeypatch.setattr(imp_mod, "CAPPED_CHECK_TREES", 4)
    rng = np.random.default_rng(7)
    X = rng.uniform(size=(200, 3))
    m = KnobMatrix(X, ("a", "b", "c"), (0, 0, 0))
    y = 5 * X[:, 0] + X[:, 1]
    kw = dict(n_trees=20, max_k=1, stability_sizes=[100], stability_repeats=1, folds=5,
              permutation_repeats=2)  # fmt: skip
    imp_mod.rank_knobs(m, y, pi="y", **kw)  # type: ignore[arg-type]
    # the all-knobs forest, 5 permutation folds, the curve's k = 1, one stability subset
    assert seen == [(200, 20)] * 6 + [(200, 20), (100, 20)]
    seen.clear()
    monkeypatch.setattr(imp_mod, "MAX_TREE_SAMPLES", 99)
    ranking = imp_mod.rank_knobs(m, y, pi="y", **kw)  # type: ignore[arg-type]
    assert seen == [(200, 20)] * 3 + [(200, 4), (100, 4)]
    assert ranking.top[:2] == ("a", "b")
