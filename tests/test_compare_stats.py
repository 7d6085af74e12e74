"""Welch's test, effect sizes, sample sizes and rankings (assay.stats.compare)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.power import TTestIndPower

from assay.stats.autocorr import subsession_interval
from assay.stats.compare import (
    InsufficientDataError,
    SummaryStats,
    analyze_variant,
    compare_samples,
    rank_variants,
    ranking_at_level,
    ranking_by_evidence,
    summary_from_ci,
    welch_required_n,
    welch_test,
)
from assay.stats.intervals import t_interval

# ----------------------------------------------------------------------------- Welch

samples_pair = st.tuples(
    st.integers(0, 2**32 - 1),
    st.integers(2, 60),
    st.integers(2, 60),
    st.floats(0.01, 10.0),
    st.floats(0.01, 10.0),
    st.floats(-3.0, 3.0),
)


def _draw(
    seed: int, na: int, nb: int, sa: float, sb: float, shift: float
) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(10.0 + shift, sa, na), rng.normal(10.0, sb, nb)


@settings(max_examples=60, deadline=None)
@given(samples_pair)
def test_welch_matches_scipy_ttest_ind(params: tuple[int, int, int, float, float, float]) -> None:
    a, b = _draw(*params)
    r = welch_test(
        float(np.mean(a)), float(np.var(a, ddof=1)), a.size,
        float(np.mean(b)), float(np.var(b, ddof=1)), b.size,
    )  # fmt: skip
    ref = stats.ttest_ind(a, b, equal_var=False)
    assert r.t == pytest.approx(ref.statistic, rel=1e-9, abs=1e-12)
    assert r.p_value == pytest.approx(ref.pvalue, rel=1e-7, abs=1e-14)
    assert r.df == pytest.approx(ref.df, rel=1e-9)
    ci = ref.confidence_interval(0.95)
    assert r.diff_low == pytest.approx(ci.low, rel=1e-7, abs=1e-12)
    assert r.diff_high == pytest.approx(ci.high, rel=1e-7, abs=1e-12)
    assert r.difference == pytest.approx(np.mean(a) - np.mean(b))


@settings(max_examples=40, deadline=None)
@given(samples_pair)
def test_welch_matches_scipy_from_stats(params: tuple[int, int, int, float, float, float]) -> None:
    a, b = _draw(*params)
    ma, sa, mb, sb = np.mean(a), np.std(a, ddof=1), np.mean(b), np.std(b, ddof=1)
    ref = stats.ttest_ind_from_stats(ma, sa, a.size, mb, sb, b.size, equal_var=False)
    r = welch_test(float(ma), float(sa**2), a.size, float(mb), float(sb**2), b.size)
    assert r.t == pytest.approx(ref.statistic, rel=1e-9, abs=1e-12)
    assert r.p_value == pytest.approx(ref.pvalue, rel=1e-7, abs=1e-14)


@settings(max_examples=60, deadline=None)
@given(samples_pair, st.sampled_from([0.9, 0.95, 0.99]))
def test_fieller_interval_agrees_with_the_test(
    params: tuple[int, int, int, float, float, float], confidence: float
) -> None:
    a, b = _draw(*params)
    r = welch_test(
        float(np.mean(a)), float(np.var(a, ddof=1)), a.size,
        float(np.mean(b)), float(np.var(b, ddof=1)), b.size,
        confidence,
    )  # fmt: skip
    assert r.rel_low <= r.relative <= r.rel_high
    if math.isinf(r.rel_low) and math.isinf(r.rel_high):
        # the baseline's mean is not told from 0 at this level: Fieller's interval of
        # the ratio is the whole line, whatever the difference (hypothesis found
        # (362880, 14, 2, 1.0, 6.0, 0.0) at 90%)
        return
    # Fieller with the Welch df excludes 0 exactly when the difference CI does.
    diff_excludes = r.diff_low > 0 or r.diff_high < 0
    rel_excludes = r.rel_low > 0 or r.rel_high < 0
    if abs(r.p_value - (1 - confidence)) > 1e-9:
        assert diff_excludes == rel_excludes == (r.p_value < 1 - confidence)


def test_relative_interval_coverage() -> None:
    rng = np.random.default_rng(5)
    true_rel = 1.05 / 1.0 - 1.0
    hits = 0
    trials = 2000
    a = rng.normal(1.05, 0.2, (trials, 8))
    b = rng.normal(1.0, 0.05, (trials, 25))
    for i in range(trials):
        r = welch_test(
            float(a[i].mean()), float(a[i].var(ddof=1)), 8,
            float(b[i].mean()), float(b[i].var(ddof=1)), 25,
        )  # fmt: skip
        hits += r.rel_low <= true_rel <= r.rel_high
    assert 0.93 <= hits / trials <= 0.97


def test_relative_interval_unbounded_when_reference_mean_is_near_zero() -> None:
    r = welch_test(1.0, 1.0, 10, 0.05, 1.0, 10)
    assert (r.rel_low, r.rel_high) == (-math.inf, math.inf)
    r0 = welch_test(1.0, 1.0, 10, 0.0, 1.0, 10)
    assert math.isnan(r0.relative)


def test_floor_df_is_pilots_rule() -> None:
    plain = welch_test(10.3, 1.0, 12, 10.0, 4.0, 7)
    floored = welch_test(10.3, 1.0, 12, 10.0, 4.0, 7, floor_df=True)
    assert floored.df == math.floor(plain.df) < plain.df
    assert floored.p_value > plain.p_value
    assert floored.t == plain.t


def test_constant_samples() -> None:
    same = welch_test(5.0, 0.0, 3, 5.0, 0.0, 4)
    assert math.isnan(same.t) and same.p_value == 1.0
    diff = welch_test(6.0, 0.0, 3, 5.0, 0.0, 4)
    assert diff.t == math.inf and diff.p_value == 0.0
    assert diff.diff_low == diff.diff_high == 1.0


@pytest.mark.parametrize(
    "args",
    [
        (1.0, 1.0, 1, 1.0, 1.0, 5),
        (1.0, -1.0, 5, 1.0, 1.0, 5),
        (math.nan, 1.0, 5, 1.0, 1.0, 5),
        (1.0, 1.0, 5, 1.0, math.inf, 5),
        (1.0, 1.0, 5.5, 1.0, 1.0, 5),
    ],
)
def test_welch_rejects_bad_input(args: tuple[float, ...]) -> None:
    with pytest.raises(ValueError):
        welch_test(*args)  # type: ignore[arg-type]


def test_welch_rejects_bad_confidence() -> None:
    with pytest.raises(ValueError, match="confidence"):
        welch_test(1.0, 1.0, 5, 1.0, 1.0, 5, confidence=1.0)


# ----------------------------------------------------------------------------- sample size


@settings(max_examples=12, deadline=None)
@given(
    st.floats(0.05, 1.5),
    st.floats(0.1, 4.0),
    st.sampled_from([0.01, 0.05]),
    st.sampled_from([0.8, 0.9]),
)
def test_required_n_equals_statsmodels_for_equal_variances(
    d: float, var: float, alpha: float, power: float
) -> None:
    delta = d * math.sqrt(var)
    ref = TTestIndPower().solve_power(effect_size=d, alpha=alpha, power=power, ratio=1.0)
    n = welch_required_n(10.0 + delta, var, 10.0, var, alpha=alpha, power=power)
    assert n == max(2, math.ceil(ref - 1e-6))


def test_required_n_unequal_variances_at_least_pooled_answer() -> None:
    va, vb = 0.2, 3.0
    d = 0.5 / math.sqrt((va + vb) / 2)
    ref = TTestIndPower().solve_power(effect_size=d, alpha=0.01, power=0.8)
    n = welch_required_n(10.5, va, 10.0, vb, alpha=0.01, power=0.8)
    assert n >= math.ceil(ref)


def test_required_n_reaches_the_power_by_simulation() -> None:
    delta, va, vb, alpha, power = 0.5, 1.0, 4.0, 0.05, 0.8
    n = welch_required_n(delta, va, 0.0, vb, alpha=alpha, power=power)
    rng = np.random.default_rng(17)
    reps = 4000
    a = rng.normal(delta, math.sqrt(va), (reps, n))
    b = rng.normal(0.0, math.sqrt(vb), (reps, n))
    rate = float(np.mean(stats.ttest_ind(a, b, axis=1, equal_var=False).pvalue < alpha))
    assert 0.77 <= rate <= 0.85
    a1 = a[:, : n - 6]
    b1 = b[:, : n - 6]
    rate_less = float(np.mean(stats.ttest_ind(a1, b1, axis=1, equal_var=False).pvalue < alpha))
    assert rate_less < rate


def test_required_n_edge_cases() -> None:
    with pytest.raises(ValueError, match="equal"):
        welch_required_n(1.0, 1.0, 1.0, 2.0)
    with pytest.raises(ValueError, match="equal"):
        welch_required_n(1.0, 0.0, 1.0, 0.0)
    assert welch_required_n(1.1, 0.0, 1.0, 0.0) == 2
    with pytest.raises(ValueError, match="too small"):
        welch_required_n(1.0 + 1e-9, 1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="alpha"):
        welch_required_n(1.1, 1.0, 1.0, 1.0, alpha=0.0)
    with pytest.raises(ValueError, match="power"):
        welch_required_n(1.1, 1.0, 1.0, 1.0, power=1.0)
    # symmetric in the sign of the difference
    assert welch_required_n(1.1, 1.0, 1.0, 2.0) == welch_required_n(1.0, 2.0, 1.1, 1.0)


# ----------------------------------------------------------------------------- summaries


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 200), st.sampled_from([0.9, 0.95, 0.99]))
def test_summary_from_ci_recovers_the_variance(seed: int, n: int, confidence: float) -> None:
    x = np.random.default_rng(seed).normal(3.0, 0.7, n)
    ci = t_interval(x, confidence)
    s = summary_from_ci(ci.mean, ci.half_width, ci.n, confidence)
    assert s.var == pytest.approx(np.var(x, ddof=1), rel=1e-9)
    assert s.n == n and s.mean == ci.mean


def test_summary_stats_validation() -> None:
    with pytest.raises(ValueError, match="var"):
        SummaryStats(1.0, -1.0, 5)
    with pytest.raises(ValueError, match="n must"):
        SummaryStats(1.0, 1.0, 1)
    with pytest.raises(ValueError, match="subsession_size"):
        SummaryStats(1.0, 1.0, 5, subsession_size=0)
    with pytest.raises(ValueError, match="half_width"):
        summary_from_ci(1.0, math.inf, 5)


# ----------------------------------------------------------------------------- compare_samples


def _ar1(rng: np.random.Generator, n: int, phi: float, mean: float, sd: float) -> np.ndarray:
    e = rng.standard_normal(n)
    x = np.empty(n)
    x[0] = e[0]
    for i in range(1, n):
        x[i] = phi * x[i - 1] + e[i]
    return mean + sd * x


def test_compare_samples_runs_the_tests_on_merged_samples() -> None:
    rng = np.random.default_rng(8)
    a = _ar1(rng, 2000, 0.7, 10.2, 0.5)
    b = rng.normal(10.0, 0.5, 300)
    # Pilot's plain tests; the residual correction is tested in test_compare_autocorr.py
    c = compare_samples(a, b, correct_residual=False)
    got_a = subsession_interval(a)
    assert got_a is not None
    assert c.a.subsession_size == got_a[1].size > 1
    assert c.b.subsession_size == 1
    assert c.a.merged is not None and c.b.merged is not None
    ma, mb = c.a.merged, c.b.merged
    ref = stats.ttest_ind(ma, mb, equal_var=False)
    assert c.welch.p_value == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-300)
    assert c.mann_whitney_p == pytest.approx(stats.mannwhitneyu(ma, mb).pvalue, rel=1e-12)
    sp = math.sqrt(
        ((ma.size - 1) * ma.var(ddof=1) + (mb.size - 1) * mb.var(ddof=1)) / (ma.size + mb.size - 2)
    )
    d = (ma.mean() - mb.mean()) / sp
    assert c.cohens_d == pytest.approx(d, rel=1e-12)
    df = ma.size + mb.size - 2
    assert c.hedges_g == pytest.approx(d * (1 - 3 / (4 * df - 1)), rel=1e-4)
    assert abs(c.hedges_g) < abs(c.cohens_d)
    assert c.a.ci.mean == pytest.approx(a[: c.a.n * c.a.subsession_size].mean())
    assert c.ci_overlap == (c.a.ci.low <= c.b.ci.high and c.b.ci.low <= c.a.ci.high)
    assert c.welch.relative == pytest.approx((ma.mean() - mb.mean()) / mb.mean())


def test_compare_samples_accepts_summaries() -> None:
    sa, sb = SummaryStats(10.4, 1.0, 30, 2), SummaryStats(10.0, 2.0, 25)
    c = compare_samples(sa, sb)
    ref = welch_test(10.4, 1.0, 30, 10.0, 2.0, 25)
    assert c.welch == ref
    assert math.isnan(c.mann_whitney_p)
    assert c.a.n_raw == 60 and c.a.subsession_size == 2
    assert c.a.ci.half_width == pytest.approx(stats.t.ppf(0.975, 29) * math.sqrt(1.0 / 30))
    mixed = compare_samples(np.random.default_rng(1).normal(10.0, 1.0, 50), sb)
    assert math.isnan(mixed.mann_whitney_p) and mixed.b.merged is None


def test_compare_samples_names_the_side_without_enough_data() -> None:
    with pytest.raises(InsufficientDataError, match="sample b"):
        compare_samples(np.random.default_rng(0).normal(1.0, 0.1, 50), [1.0, 2.0])
    with pytest.raises(ValueError):
        compare_samples([1.0, math.nan, 3.0], [1.0, 2.0, 3.0])


def test_compare_identical_constant_samples() -> None:
    c = compare_samples([2.0] * 10, [2.0] * 10)
    assert c.welch.p_value == 1.0 and c.mann_whitney_p == 1.0
    assert c.cohens_d == 0.0 and c.ci_overlap


def test_analyze_variant_needs_three_samples() -> None:
    with pytest.raises(InsufficientDataError, match="at least 3"):
        analyze_variant([1.0, 2.0])
    v = analyze_variant([1.0, 1.0, 1.0])
    assert v.n == 3 and v.n_raw == 3 and v.merged is not None


# ----------------------------------------------------------------------------- ranking


def test_rank_orders_by_direction_and_decides() -> None:
    rng = np.random.default_rng(4)
    data = {
        "slow": rng.normal(1.30, 0.05, 80),
        "fast": rng.normal(1.00, 0.05, 80),
        "mid": rng.normal(1.15, 0.05, 80),
    }
    low = rank_variants(data, "lower")
    assert low.order == ("fast", "mid", "slow")
    assert [(p.better, p.worse) for p in low.pairs] == [("fast", "mid"), ("mid", "slow")]
    assert all(p.status == "separated" for p in low.pairs) and low.decided
    high = rank_variants(data, "higher")
    assert high.order == ("slow", "mid", "fast")
    assert high.extra_samples() == {"slow": 0, "mid": 0, "fast": 0}


def test_rank_significant_when_cis_overlap_but_welch_rejects() -> None:
    # 95% CIs overlap (half-widths 0.198 each) but Welch p ≈ 0.007 (t ≈ 2.72).
    a = SummaryStats(10.0, 1.0, 100)
    b = SummaryStats(10.385, 1.0, 100)
    r = rank_variants({"a": a, "b": b}, "lower", alpha=0.01)
    p = r.pairs[0]
    assert p.comparison is not None and p.comparison.ci_overlap
    assert p.comparison.welch.p_value < 0.01
    assert p.status == "significant" and r.decided


def test_rank_undecided_asks_for_welch_sample_size() -> None:
    a = SummaryStats(10.0, 1.0, 20, subsession_size=3)
    b = SummaryStats(10.2, 1.0, 20)
    r = rank_variants({"a": a, "b": b}, "lower", alpha=0.01, power=0.8)
    p = r.pairs[0]
    assert p.status == "undecided" and not r.decided
    need = welch_required_n(10.0, 1.0, 10.2, 1.0, alpha=0.01, power=0.8)
    assert p.extra_better == (need - 20) * 3
    assert p.extra_worse == need - 20
    assert r.extra_samples() == {"a": (need - 20) * 3, "b": need - 20}
    assert r.undecided == (p,)


def test_rank_equal_means_is_undecided_without_estimate() -> None:
    r = rank_variants({"a": SummaryStats(1.0, 1.0, 10), "b": SummaryStats(1.0, 2.0, 10)})
    p = r.pairs[0]
    assert p.status == "undecided" and p.extra_better is None and "equal" in p.note
    assert r.extra_samples() == {"a": None, "b": None}


def test_rank_puts_unanalysable_variants_last() -> None:
    rng = np.random.default_rng(2)
    r = rank_variants(
        {"new": [1.0, 2.0], "a": rng.normal(1.0, 0.1, 50), "b": rng.normal(2.0, 0.1, 50)}
    )
    assert r.order == ("a", "b", "new")
    assert r.pairs[0].status == "separated"
    assert r.pairs[1].status == "undecided" and r.pairs[1].comparison is None
    assert "new" in r.problems and "new" not in r.variants
    assert not r.decided and r.extra_samples()["new"] is None


def test_rank_validation() -> None:
    with pytest.raises(ValueError, match="two"):
        rank_variants({"a": [1.0, 2.0, 3.0]})
    with pytest.raises(ValueError, match="direction"):
        rank_variants({"a": [1.0, 2.0, 3.0], "b": [1.0, 2.0, 3.0]}, "faster")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="alpha"):
        rank_variants({"a": [1.0, 2.0, 3.0], "b": [1.0, 2.0, 3.0]}, alpha=1.5)


def test_rank_false_positive_rate_and_power() -> None:
    """Same distribution: 'significant'/'separated' in <= 2% of 300 seeds at alpha = 0.01;
    a 5% difference with n = 200 each is detected (and ordered right) in >= 95%."""
    false_pos = 0
    detected = 0
    seeds = 300
    for s in range(seeds):
        rng = np.random.default_rng(s)
        same = rank_variants(
            {"a": rng.normal(1.0, 0.1, 200), "b": rng.normal(1.0, 0.1, 200)}, alpha=0.01
        )
        false_pos += same.pairs[0].status != "undecided"
        diff = rank_variants(
            {"base": rng.normal(1.0, 0.1, 200), "slower": rng.normal(1.05, 0.1, 200)},
            alpha=0.01,
        )
        detected += diff.decided and diff.order == ("base", "slower")
    assert false_pos / seeds <= 0.02
    assert detected / seeds >= 0.95


def test_ranking_at_level_judges_by_welch_alone() -> None:
    # separated (p tiny) stays separated; significant at 0.01 (p ≈ 0.007) fails at 0.001
    r = rank_variants({"a": SummaryStats(1.0, 0.01, 50), "b": SummaryStats(2.0, 0.01, 50)})
    assert r.pairs[0].status == "separated"
    mid = SummaryStats(10.0, 1.0, 100)
    top = SummaryStats(10.385, 1.0, 100, subsession_size=2)
    nominal = rank_variants({"a": mid, "b": top}, alpha=0.01)
    assert nominal.pairs[0].status == "significant"
    strict = ranking_at_level(nominal, 0.001)
    p = strict.pairs[0]
    assert p.status == "undecided" and not strict.decided and strict.alpha == 0.001
    need = welch_required_n(10.0, 1.0, 10.385, 1.0, alpha=0.001, power=0.8)
    assert p.extra_better == need - 100 and p.extra_worse == (need - 100) * 2
    assert strict.order == nominal.order and strict.variants is nominal.variants
    assert ranking_at_level(nominal, 0.008).pairs[0].status == "significant"
    sep = ranking_at_level(r, 1e-6)
    assert sep.pairs[0].status == "separated"


def test_ranking_at_level_keeps_pairs_without_data_and_validates() -> None:
    rng = np.random.default_rng(2)
    r = rank_variants({"new": [1.0, 2.0], "a": rng.normal(1.0, 0.1, 50)})
    got = ranking_at_level(r, 0.001)
    assert got.pairs[0] is r.pairs[0] and got.pairs[0].comparison is None
    eq = rank_variants({"a": SummaryStats(1.0, 1.0, 10), "b": SummaryStats(1.0, 2.0, 10)})
    assert "equal" in ranking_at_level(eq, 0.001).pairs[0].note
    with pytest.raises(ValueError, match="alpha"):
        ranking_at_level(r, 0.0)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.0, 0.05), st.integers(3, 40))
def test_a_ranking_without_planning_differs_only_in_the_extra_samples(
    seed: int, diff: float, n: int
) -> None:
    """Issue #17: a comparison's loop ranks after every cycle without Welch's
    sample-size estimate (its e-values judge the pairs again, with their own)."""
    rng = np.random.default_rng(seed)
    samples = {
        "a": rng.normal(1.0, 0.05, n),
        "b": rng.normal(1.0 + diff, 0.05, n),
        "c": rng.normal(1.0 + 2 * diff, 0.05, n),
    }
    full = rank_variants(samples, independence_alpha=0.05)
    lean = rank_variants(samples, independence_alpha=0.05, plan=False)
    assert full.order == lean.order and full.problems == lean.problems
    for f, g in zip(full.pairs, lean.pairs, strict=True):
        assert (f.better, f.worse, f.status) == (g.better, g.worse, g.status)
        if g.comparison is not None and g.status == "undecided":
            assert g.extra_better is None and g.extra_worse is None
        elif g.comparison is not None:
            assert (f.extra_better, f.extra_worse) == (g.extra_better, g.extra_worse)
    judged = [ranking_by_evidence(r).pairs for r in (full, lean)]
    assert [(p.status, p.extra_better, p.extra_worse) for p in judged[0]] == [
        (p.status, p.extra_better, p.extra_worse) for p in judged[1]
    ]
