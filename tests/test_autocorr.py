"""Tests for assay.stats.autocorr."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.signal import lfilter
from statsmodels.tsa.stattools import acf

from assay.stats import autocorr
from assay.stats.autocorr import (
    LAG1_BOUND_CAP,
    ar1_batch_autocorrelation,
    autocorrelation,
    lag1_upper_bound,
    merge_subsessions,
    optimal_subsession,
    subsession_interval,
    unbiased_lag1,
)
from assay.stats.intervals import harmonic_t_interval, residual_autocorrelation_factor, t_interval

FloatArray = npt.NDArray[np.float64]

moderate = st.floats(min_value=-1e3, max_value=1e3, allow_nan=False, allow_infinity=False)


def ar1(phi: float, n: int, seed: int) -> FloatArray:
    e = np.random.default_rng(seed).standard_normal(n)
    return np.asarray(lfilter([1.0], [1.0, -phi], e), dtype=np.float64)


def ar1_block_r1(phi: float, q: int) -> float:
    """Theoretical lag-1 autocorrelation of means of q-blocks of an AR(1) process.

    With Cov(X_s, X_t) = sigma^2 phi^|s-t| and S_j the sum of block j:
      Cov(S_0, S_1) = sigma^2 phi (1 - phi^q)^2 / (1 - phi)^2
      Var(S_0)      = sigma^2 [q (1 - phi^2) - 2 phi (1 - phi^q)] / (1 - phi)^2
    so r1(q) = phi (1 - phi^q)^2 / (q (1 - phi^2) - 2 phi (1 - phi^q)).
    """
    return phi * (1 - phi**q) ** 2 / (q * (1 - phi**2) - 2 * phi * (1 - phi**q))


# --------------------------------------------------------------------------- autocorrelation


@settings(max_examples=80, deadline=None)
@given(st.lists(moderate, min_size=3, max_size=80), st.integers(min_value=1, max_value=5))
def test_autocorrelation_matches_statsmodels(xs: list[float], lag: int) -> None:
    x = np.array(xs)
    assume(x.size >= lag + 2)
    assume(np.std(x) > 1e-6 * max(1.0, float(np.max(np.abs(x)))))
    expected = acf(x, nlags=lag, fft=False)[lag]
    assert autocorrelation(x, lag) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("phi", [0.5, 0.9])
def test_autocorrelation_recovers_ar1_phi(phi: float) -> None:
    x = ar1(phi, 100_000, seed=11)
    assert abs(autocorrelation(x) - phi) < 0.02
    # lag 2 of an AR(1) is phi^2
    assert abs(autocorrelation(x, 2) - phi**2) < 0.03


def test_autocorrelation_edge_cases() -> None:
    assert math.isnan(autocorrelation([1.0, 2.0]))
    assert math.isnan(autocorrelation([1.0, 2.0, 3.0], lag=2))
    assert autocorrelation([1.0, 2.0, 3.0], lag=1) == 0.0  # (-1*0 + 0*1) / 2
    assert autocorrelation([0.1] * 10) == 0.0
    assert autocorrelation([7.0] * 10, lag=3) == 0.0
    assert autocorrelation([1.0, -1.0] * 20) == pytest.approx(-39 / 40)
    assert autocorrelation([3.0, 1.0, 4.0, 1.0], lag=0) == pytest.approx(1.0)


def test_autocorrelation_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="finite"):
        autocorrelation([1.0, float("nan"), 2.0])
    with pytest.raises(ValueError, match="lag"):
        autocorrelation([1.0, 2.0, 3.0], lag=-1)
    with pytest.raises(ValueError, match="1-D"):
        autocorrelation(np.zeros((3, 3)))


# --------------------------------------------------------------------------- merging


def naive_merge(x: list[float], q: int) -> list[float]:
    out = []
    for start in range(0, len(x) - q + 1, q):
        block = x[start : start + q]
        out.append(sum(block) / q)
    return out


@settings(max_examples=80, deadline=None)
@given(st.lists(moderate, max_size=60), st.integers(min_value=1, max_value=12))
def test_merge_subsessions_matches_naive_loop(xs: list[float], q: int) -> None:
    got = merge_subsessions(xs, q)
    want = naive_merge(xs, q)
    assert got.shape == (len(xs) // q,)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-9)


def test_merge_subsessions_rejects_bad_q() -> None:
    with pytest.raises(ValueError, match="q"):
        merge_subsessions([1.0, 2.0], 0)
    with pytest.raises(ValueError, match="q"):
        merge_subsessions([1.0, 2.0], 1.5)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- optimal subsession


def brute_force_q(x: FloatArray, limit: float, min_subsessions: int) -> int | None:
    for q in range(1, x.size + 1):
        means = merge_subsessions(x, q)
        if means.size < min_subsessions:
            break
        r = autocorrelation(means)
        if not math.isnan(r) and abs(r) <= limit:
            return q
    return None


def correlated_series(draw_xs: list[float], smoothing: int) -> FloatArray:
    """Moving sums of hypothesis data, to produce series that need q > 1."""
    x = np.array(draw_xs)
    if smoothing > 1:
        x = np.convolve(x, np.ones(smoothing), mode="valid")
    return x


@settings(max_examples=80, deadline=None)
@given(
    st.lists(moderate, min_size=1, max_size=220),
    st.integers(min_value=1, max_value=12),
    st.sampled_from([0.05, 0.1, 0.2]),
    st.integers(min_value=1, max_value=8),
)
def test_optimal_subsession_matches_brute_force(
    xs: list[float], smoothing: int, limit: float, min_subsessions: int
) -> None:
    x = correlated_series(xs, smoothing)
    assume(x.size >= 1)
    got = optimal_subsession(x, limit, min_subsessions)
    want = brute_force_q(x, limit, min_subsessions)
    if want is None:
        assert got is None
        return
    assert got is not None
    if want <= 64:
        assert got.size == want  # exact range
    else:
        assert got.size >= want  # bisection range: a qualifying q, never a smaller one
    np.testing.assert_array_equal(got.means, merge_subsessions(x, got.size))
    assert abs(got.autocorrelation) <= limit
    assert got.means.size >= max(3, min_subsessions)
    # With the exhaustive limit raised, the search is brute force everywhere.
    full = optimal_subsession(x, limit, min_subsessions, exhaustive_limit=max(1, x.size))
    assert full is not None and full.size == want


def qualifies(x: FloatArray, q: int, limit: float) -> bool:
    r = autocorrelation(merge_subsessions(x, q))
    return not math.isnan(r) and abs(r) <= limit


@settings(max_examples=80, deadline=None)
@given(
    st.lists(moderate, min_size=3, max_size=200),
    st.integers(min_value=1, max_value=12),
    st.sampled_from([0.05, 0.1, 0.2]),
    st.integers(min_value=1, max_value=4),
    st.booleans(),
)
def test_optimal_subsession_checkpoint_search_properties(
    xs: list[float], smoothing: int, limit: float, exhaustive: int, bisect: bool
) -> None:
    # A tiny exhaustive range exercises the checkpoint / scan / bisection code on small data.
    x = correlated_series(xs, smoothing)
    want = brute_force_q(x, limit, 2)
    with pytest.MonkeyPatch.context() as mp:
        if bisect:
            mp.setattr(autocorr, "_BRACKET_SCAN_LIMIT", 0)
        got = optimal_subsession(x, limit, exhaustive_limit=exhaustive)
    if want is None:
        assert got is None
        return
    if want <= exhaustive:
        assert got is not None and got.size == want
        return
    if got is None:
        # Every checkpoint failed: exhaustive range, powers of two and the largest q.
        q_max = x.size // 3
        q = 2 * exhaustive
        while q < q_max:
            assert not qualifies(x, q, limit)
            q *= 2
        assert not qualifies(x, q_max, limit)
        return
    assert got.size >= want
    assert qualifies(x, got.size, limit)
    assert not qualifies(x, got.size - 1, limit)  # a fail -> pass boundary
    assert got.means.size >= 3


def test_optimal_subsession_beyond_exhaustive_range() -> None:
    # AR(1) with phi = 0.99: theory r1(q) ~ 0.99 / (0.0199 q - 1.98) <= 0.1 from q = 595
    # (ar1_block_r1), beyond the exhaustive range; the checkpoints are 128, 256, 512, 1024.
    # With n = 200_000 only ~330 merged samples remain (sd of r1 ~ 0.055), so the
    # estimated crossing is noisy (brute force finds 500 for this seed).
    assert ar1_block_r1(0.99, 594) > 0.1 >= ar1_block_r1(0.99, 595)
    x = ar1(0.99, 200_000, seed=5)
    got = optimal_subsession(x)
    want = brute_force_q(x, 0.1, 2)
    assert got is not None and want is not None
    assert want > 64
    assert want <= got.size <= 2 * want
    assert qualifies(x, got.size, 0.1)
    assert not qualifies(x, got.size - 1, 0.1)


def test_optimal_subsession_none_when_impossible() -> None:
    assert optimal_subsession([]) is None
    assert optimal_subsession([1.0, 2.0]) is None
    # A linear trend stays a trend after merging: |r1| > 0.1 with >= 10 merged samples.
    assert optimal_subsession(np.arange(1000.0), 0.1, min_subsessions=10) is None
    # Asking for more subsessions than samples.
    assert optimal_subsession(np.random.default_rng(0).standard_normal(50), 0.1, 60) is None


def test_optimal_subsession_iid_and_constant() -> None:
    x = np.random.default_rng(3).standard_normal(10_000)
    s = optimal_subsession(x)
    assert s is not None and s.size == 1 and s.means.size == x.size
    c = optimal_subsession(np.full(10, 2.5))
    assert c is not None and c.size == 1 and c.autocorrelation == 0.0
    assert not s.means.flags.writeable


def test_optimal_subsession_ar1_phi_09_plausible_q() -> None:
    # Theory (ar1_block_r1): for phi = 0.9, r1(q) ~ 0.9 / (0.19 q - 1.8) for large q, so
    # r1(q) <= 0.1 from q ~ 57 (r1(50) = 0.115, r1(57) = 0.099, r1(64) = 0.087).  With
    # n = 200_000 (m ~ 3500 merged samples, sd of r1 ~ 0.017) noise moves the first
    # crossing by a few units either way.
    assert ar1_block_r1(0.9, 56) > 0.1 >= ar1_block_r1(0.9, 57)
    x = ar1(0.9, 200_000, seed=2024)
    s = optimal_subsession(x)
    assert s is not None
    assert 35 <= s.size <= 90
    assert abs(s.autocorrelation) <= 0.1


def test_optimal_subsession_ar1_phi_05_matches_theory() -> None:
    # r1(q) for phi = 0.5: q = 7 -> 0.116, q = 8 -> 0.099; n = 1e6 gives sd(r1) ~ 0.003.
    assert ar1_block_r1(0.5, 7) > 0.1 >= ar1_block_r1(0.5, 8)
    s = optimal_subsession(ar1(0.5, 1_000_000, seed=7))
    assert s is not None and s.size in (7, 8, 9)


def test_optimal_subsession_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="max_autocorrelation"):
        optimal_subsession([1.0, 2.0, 3.0], -0.1)
    with pytest.raises(ValueError, match="min_subsessions"):
        optimal_subsession([1.0, 2.0, 3.0], 0.1, 0)


# --------------------------------------------------------------------------- interval


def test_subsession_interval_arithmetic() -> None:
    x = 100.0 + ar1(0.9, 50_000, seed=9)
    got = subsession_interval(x, confidence=0.9)
    assert got is not None
    ci, sub = got
    ref = t_interval(merge_subsessions(x, sub.size), 0.9)
    assert ci == ref
    assert sub.size > 20
    # The naive interval pretends the samples are independent and is much narrower.
    assert t_interval(x, 0.9).half_width < ci.half_width / 2


def test_subsession_interval_harmonic() -> None:
    rates = 50.0 + 5.0 * ar1(0.5, 20_000, seed=4) / math.sqrt(1 / (1 - 0.25))
    got = subsession_interval(rates, harmonic=True)
    assert got is not None
    ci, sub = got
    assert sub.size > 1
    # Block harmonic means: total work / total time of each block.
    m = rates.size // sub.size
    blocks = rates[: m * sub.size].reshape(m, sub.size)
    np.testing.assert_allclose(sub.means, sub.size / (1.0 / blocks).sum(axis=1), rtol=1e-12)
    assert ci == harmonic_t_interval(sub.means)
    assert ci.mean == pytest.approx(m * sub.size / (1.0 / blocks).sum(), rel=1e-12)
    assert abs(autocorrelation(1.0 / sub.means) - sub.autocorrelation) < 1e-12
    with pytest.raises(ValueError, match="strictly positive"):
        subsession_interval([1.0, -1.0, 2.0], harmonic=True)


def test_subsession_interval_none() -> None:
    assert subsession_interval(np.arange(100.0), min_subsessions=10) is None
    with pytest.raises(ValueError, match="confidence"):
        subsession_interval([1.0, 2.0, 3.0], confidence=2.0)


def test_residual_correction_widens_by_the_merged_autocorrelation() -> None:
    from assay.stats.intervals import residual_autocorrelation_factor

    rng = np.random.default_rng(11)
    x = 10.0 + rng.standard_normal(3000).cumsum() * 0.01 + rng.standard_normal(3000)
    plain = subsession_interval(x)
    fixed = subsession_interval(x, correct_residual=True)
    assert plain is not None and fixed is not None
    (ci0, sub0), (ci1, sub1) = plain, fixed
    assert sub0.size == sub1.size
    # the larger of the merged samples' r1 and the AR(1) floor of the raw r1, its bias
    # at n corrected (Marriott & Pope)
    floor = ar1_batch_autocorrelation(unbiased_lag1(autocorrelation(x), x.size), sub0.size)
    f = residual_autocorrelation_factor(max(sub0.autocorrelation, floor))
    assert f > 1.0
    assert ci1.half_width == pytest.approx(ci0.half_width * f)
    assert ci1.mean == ci0.mean


def test_the_lag1_bias_correction_recovers_phi_at_small_n() -> None:
    # Marriott & Pope: E[r1] ~ phi - (1 + 4 phi) / n; averaged over many short AR(1)
    # series the corrected estimate is near phi where the raw one is far below it
    rng = np.random.default_rng(5)
    raw, fixed = [], []
    for _ in range(2000):
        e = rng.standard_normal(20)
        x = np.empty(20)
        x[0] = e[0] / math.sqrt(1 - 0.64)
        for i in range(1, 20):
            x[i] = 0.8 * x[i - 1] + e[i]
        r = autocorrelation(x)
        raw.append(r)
        fixed.append(unbiased_lag1(r, 20))
    assert np.mean(raw) < 0.65
    assert abs(np.mean(fixed) - 0.8) < abs(np.mean(raw) - 0.8) / 2


def test_the_upper_bound_on_phi_covers_an_ar1_08_at_small_n() -> None:
    # a comparison that may stop at any cycle floors its correction at this bound: the
    # one-sided 95% bound reaches phi = 0.8 in 66% / 79% / 87% / 91% of series of 5 /
    # 10 / 20 / 40 readings (2000 each), the bias-corrected estimate in 18% / 34% /
    # 43% / 48%
    rng = np.random.default_rng(11)
    for n, least in ((5, 0.55), (10, 0.7), (20, 0.8), (40, 0.85)):
        covered = point = 0
        for _ in range(400):
            e = rng.standard_normal(n)
            x = np.empty(n)
            x[0] = e[0] / math.sqrt(1 - 0.64)
            for i in range(1, n):
                x[i] = 0.8 * x[i - 1] + e[i]
            phi = unbiased_lag1(autocorrelation(x), n)
            covered += lag1_upper_bound(phi, n, 1.645) >= 0.8
            point += phi >= 0.8
        assert covered / 400 > least, n
        assert covered > point + 40, n


@given(st.floats(-1.0, 1.0), st.integers(3, 10_000), st.floats(0.0, 4.0))
def test_the_upper_bound_on_phi_is_above_the_estimate_and_capped(
    phi: float, n: int, z: float
) -> None:
    b = lag1_upper_bound(phi, n, z)
    assert b <= LAG1_BOUND_CAP
    assert b >= min(max(phi, 0.0), LAG1_BOUND_CAP)
    assert lag1_upper_bound(phi, n + 1, z) <= b  # more samples: a tighter bound


def test_the_independence_rule_floors_the_correction_at_phis_upper_bound() -> None:
    # 8 readings that pass for independent: no merging, and the interval is widened as
    # if phi were at its 95% upper bound, not at its point estimate
    x = np.array([1.0, 1.3, 0.9, 1.1, 1.2, 0.8, 1.05, 1.15])
    bound = subsession_interval(x, correct_residual=True, independence_alpha=0.05)
    assert bound is not None
    assert bound[1].size == 1
    phi = unbiased_lag1(autocorrelation(x), x.size)
    expected = residual_autocorrelation_factor(lag1_upper_bound(phi, x.size, 1.6448536))
    assert bound[0].half_width == pytest.approx(t_interval(x).half_width * expected, rel=1e-6)


def test_merged_samples_floor_the_correction_at_phis_upper_bound() -> None:
    # assay run: once the readings are merged, phi is taken at its upper bound; readings
    # that need no merging keep the estimate (i.i.d. readings cost nothing)
    x = ar1(0.6, 120, 4)
    plain = subsession_interval(x, correct_residual=True)
    bound = subsession_interval(x, correct_residual=True, merged_bound_alpha=0.05)
    assert plain is not None and bound is not None
    q = bound[1].size
    assert q > 1 and plain[1].size == q
    phi = lag1_upper_bound(unbiased_lag1(autocorrelation(x), x.size), x.size, 1.6448536)
    floor = ar1_batch_autocorrelation(phi, q)
    factor = residual_autocorrelation_factor(max(bound[1].autocorrelation, floor))
    assert bound[0].half_width == pytest.approx(t_interval(bound[1].means).half_width * factor)
    assert bound[0].half_width > plain[0].half_width
    iid = np.random.default_rng(0).standard_normal(200)
    a = subsession_interval(iid, correct_residual=True)
    b = subsession_interval(iid, correct_residual=True, merged_bound_alpha=0.05)
    assert a is not None and b is not None and a[1].size == 1
    assert b[0].half_width == a[0].half_width
