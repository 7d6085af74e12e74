"""The Hodges–Lehmann shift, its Moses interval and Mann–Whitney (stats/rank_shift.py)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from assay.stats.rank_shift import median_interval, noether_required_n, rank_shift

# Hollander & Wolfe (1973, p. 69), R's ?wilcox.test: permeability constants of the human
# chorioamnion at term (x) and at 12-26 weeks (y)
PERM_X = [0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46]
PERM_Y = [1.15, 0.88, 0.90, 0.74, 1.21]

# Hollander & Wolfe's chicken example (with ties), as CAMIS runs it in R
# (psiaims.github.io/CAMIS/R/nparestimate.html): wilcox.test(x, y, conf.int = TRUE)
# gives the estimate 0.5600562 and the interval [-0.3699774, 1.1829708]
CHICK_X = [1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30]
CHICK_Y = [0.878, 0.647, 0.598, 2.050, 1.060, 1.290, 1.060, 3.140, 1.290]


def exact_u_cdf(m: int, n: int) -> np.ndarray:
    """The null distribution of U by brute force: every way to give m of the m + n
    ranks to the first sample (no scipy)."""
    counts = np.zeros(m * n + 1)
    for chosen in itertools.combinations(range(m + n), m):
        rank_sum = sum(chosen) + m  # ranks 1..m+n
        counts[rank_sum - m * (m + 1) // 2] += 1
    cdf: np.ndarray = np.cumsum(counts) / counts.sum()
    return cdf


def brute_force_moses(x: list[float], y: list[float], conf: float) -> tuple[float, float, float]:
    """HL estimate and Moses interval from all pairwise differences and the exact U
    quantile: D_(k), D_(mn + 1 - k) with k the smallest q with P(U <= q) >= alpha / 2
    (R's qwilcox)."""
    d = np.sort(np.subtract.outer(np.asarray(x), np.asarray(y)).ravel())
    cdf = exact_u_cdf(len(x), len(y))
    k = int(np.argmax(cdf >= (1 - conf) / 2))
    assert k >= 1
    return float(np.median(d)), float(d[k - 1]), float(d[d.size - k])


def test_exact_case_matches_the_brute_force_order_statistics() -> None:
    got = rank_shift(PERM_X, PERM_Y, 0.95)
    est, low, high = brute_force_moses(PERM_X, PERM_Y, 0.95)
    assert got.method == "exact"
    assert got.shift == pytest.approx(est, abs=1e-12)
    assert (got.low, got.high) == pytest.approx((low, high), abs=1e-12)
    # R: W = 35, p-value = 0.2544 (two-sided)
    assert got.u == 35.0
    assert got.p_value == pytest.approx(0.2544, abs=5e-5)
    assert got.shift == pytest.approx(0.305, abs=1e-9)
    assert (got.low, got.high) == pytest.approx((-0.15, 0.76), abs=1e-9)


@pytest.mark.parametrize("conf", [0.8, 0.9, 0.95, 0.99])
def test_exact_interval_at_several_levels(conf: float) -> None:
    rng = np.random.default_rng(int(conf * 100))
    x = rng.normal(0.5, 1.0, 7).round(6).tolist()
    y = rng.normal(0.0, 1.0, 8).round(6).tolist()
    got = rank_shift(x, y, conf)
    _, low, high = brute_force_moses(x, y, conf)
    assert got.method == "exact"
    assert (got.low, got.high) == pytest.approx((low, high), abs=1e-12)


def test_asymptotic_case_with_ties_matches_r() -> None:
    got = rank_shift(CHICK_X, CHICK_Y, 0.95)
    assert got.method == "asymptotic"
    # R root-finds the continuous normal approximation; its bounds sit within a
    # rounding of the pairwise differences this returns
    assert got.shift == pytest.approx(0.5600562, abs=1e-3)
    assert got.low == pytest.approx(-0.3699774, abs=1e-3)
    assert got.high == pytest.approx(1.1829708, abs=1e-3)
    diffs = np.subtract.outer(CHICK_X, CHICK_Y).ravel()
    assert np.isclose(diffs, got.low).any() and np.isclose(diffs, got.high).any()


def test_asymptotic_case_matches_the_normal_approximation_by_hand() -> None:
    rng = np.random.default_rng(11)
    x, y = rng.lognormal(0.2, 1.0, 40), rng.lognormal(0.0, 1.0, 30)
    got = rank_shift(x, y, 0.95)
    m, n = x.size, y.size
    d = np.sort(np.subtract.outer(x, y).ravel())
    # gap g (g differences below) has U = mn - g; accepted when the continuity-corrected
    # |U - mn/2| - 1/2 <= z sigma: g in [first, last], the bounds D_(first), D_(last + 1)
    z = stats.norm.isf(0.025)
    sigma = math.sqrt(m * n * (m + n + 1) / 12)
    first = math.ceil(m * n / 2 - z * sigma - 0.5)
    last = math.floor(m * n / 2 + z * sigma + 0.5)
    assert got.method == "asymptotic"
    assert (got.low, got.high) == (d[first - 1], d[last])
    assert got.p_value == pytest.approx(stats.mannwhitneyu(x, y).pvalue)


def test_relative_shift_is_against_the_baseline_median() -> None:
    got = rank_shift(PERM_X, PERM_Y)
    med = float(np.median(PERM_Y))
    assert got.baseline_median == med
    assert got.relative == pytest.approx(got.shift / med)
    assert (got.rel_low, got.rel_high) == pytest.approx((got.low / med, got.high / med))


def test_tiny_samples_get_an_unbounded_interval() -> None:
    # 2 against 2: P(U = 0) = 1/6 > 2.5%, no order statistic reaches 95% (R would
    # return the extreme differences)
    got = rank_shift([1.0, 2.0], [3.0, 4.0])
    assert (got.low, got.high) == (-math.inf, math.inf)
    assert got.shift == -2.0


def test_equal_values_and_bad_input() -> None:
    got = rank_shift([1.0, 1.0, 1.0], [1.0, 1.0])
    assert (got.shift, got.low, got.high, got.p_value) == (0.0, 0.0, 0.0, 1.0)
    with pytest.raises(ValueError, match="at least one value"):
        rank_shift([], [1.0])
    with pytest.raises(ValueError, match="finite"):
        rank_shift([1.0, math.nan], [1.0])


small = st.lists(st.integers(-50, 50), min_size=3, max_size=14)


@settings(max_examples=60, deadline=None)
@given(small, small, st.integers(-1000, 1000))
def test_shift_equivariance(a: list[int], b: list[int], c: int) -> None:
    """Adding c to A moves the estimate and the interval by c; adding it to B, by -c
    (the p-value need not follow: a shift makes or breaks ties between the samples)."""
    x, y = np.asarray(a, float), np.asarray(b, float)
    base = rank_shift(x, y)
    up = rank_shift(x + c, y)
    down = rank_shift(x, y + c)
    assert up.shift == base.shift + c and down.shift == base.shift - c
    assert (up.low, up.high) == (base.low + c, base.high + c)
    assert (down.low, down.high) == (base.low - c, base.high - c)


@settings(max_examples=60, deadline=None)
@given(small, small)
def test_swapping_the_samples_negates(a: list[int], b: list[int]) -> None:
    x, y = np.asarray(a, float), np.asarray(b, float)
    ab, ba = rank_shift(x, y), rank_shift(y, x)
    assert ba.shift == -ab.shift
    assert (ba.low, ba.high) == (-ab.high, -ab.low)
    assert ba.p_value == pytest.approx(ab.p_value)
    assert ab.superiority + ba.superiority == pytest.approx(1.0)


@settings(max_examples=60, deadline=None)
@given(small, small, st.sampled_from([0.8, 0.9, 0.95, 0.99]))
def test_interval_contains_the_estimate_and_nests(a: list[int], b: list[int], conf: float) -> None:
    x, y = np.asarray(a, float), np.asarray(b, float)
    got = rank_shift(x, y, conf)
    assert got.low <= got.shift <= got.high
    wider = rank_shift(x, y, min(0.995, conf + 0.04))
    assert wider.low <= got.low and got.high <= wider.high


@settings(max_examples=40, deadline=None)
@given(small, small)
def test_interval_excludes_zero_when_the_test_rejects(a: list[int], b: list[int]) -> None:
    """The interval is the inversion of the same test: 0 outside it means p < 5%
    (0 on a bound is a shift where a difference ties, tested there with the tie)."""
    x, y = np.asarray(a, float), np.asarray(b, float)
    got = rank_shift(x, y, 0.95)
    if got.low > 0.0 or got.high < 0.0:
        assert got.p_value < 0.05
    if got.p_value < 0.05:
        assert not got.low < 0.0 < got.high


def test_noether_sample_size() -> None:
    # Noether (1987): n per group = (z_{1-a/2} + z_{power})^2 / (6 (p - 1/2)^2)
    z = stats.norm.isf(0.005) + stats.norm.ppf(0.8)
    assert noether_required_n(0.6, 0.01, 0.8) == math.ceil(z * z / (6 * 0.01))
    assert noether_required_n(0.4, 0.01, 0.8) == noether_required_n(0.6, 0.01, 0.8)
    with pytest.raises(ValueError, match="interleave evenly"):
        noether_required_n(0.5)


def test_median_interval_is_the_binomial_order_statistics() -> None:
    x = np.arange(1.0, 21.0)
    m = median_interval(x, 0.95)
    # Binomial(20, 1/2): P(X <= 5) = 2.07% < 2.5% <= P(X <= 6): the 6th and 15th values
    assert (m.median, m.low, m.high, m.n) == (10.5, 6.0, 15.0, 20)
    assert median_interval([1.0, 2.0], 0.95).low == -math.inf
