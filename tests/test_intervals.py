"""Tests for assay.stats.intervals."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from assay.stats.intervals import (
    MeanCI,
    harmonic_t_interval,
    required_sample_size,
    t_interval,
)

finite_floats = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)
positive_floats = st.floats(min_value=1e-3, max_value=1e6, allow_nan=False, allow_infinity=False)


# --------------------------------------------------------------------------- t_interval


def test_t_interval_student_sleep_data() -> None:
    # Student (1908), "The probable error of a mean", Biometrika 6(1): Cushny & Peebles'
    # extra hours of sleep, drug 2 minus drug 1, for 10 patients.  The classic published
    # analysis (R: t.test(extra ~ group, data = sleep, paired = TRUE)) reports
    # mean difference 1.58, sd 1.229995, 95% CI [0.7001142, 2.4598858], t = 4.0621, df = 9.
    diffs = [1.2, 2.4, 1.3, 1.3, 0.0, 1.0, 1.8, 0.8, 4.6, 1.4]
    ci = t_interval(diffs, 0.95)
    assert ci.n == 10
    assert ci.mean == pytest.approx(1.58, abs=1e-12)
    assert ci.std == pytest.approx(1.229995, abs=1e-6)
    assert ci.low == pytest.approx(0.7001142, abs=1e-7)
    assert ci.high == pytest.approx(2.4598858, abs=1e-7)
    assert ci.mean / (ci.std / math.sqrt(ci.n)) == pytest.approx(4.0621, abs=1e-4)
    assert ci.confidence == 0.95


@settings(max_examples=60, deadline=None)
@given(
    st.lists(finite_floats, min_size=2, max_size=50),
    st.floats(min_value=0.5, max_value=0.999),
)
def test_t_interval_matches_scipy(xs: list[float], confidence: float) -> None:
    x = np.array(xs)
    ci = t_interval(x, confidence)
    sem = stats.sem(x)
    if sem == 0.0:  # equal values, or a spread whose squares underflow (t_interval keeps it)
        assert ci.half_width == 0.0 or np.ptp(x) > 0.0
        assert ci.low == pytest.approx(np.mean(x)) and ci.high == pytest.approx(np.mean(x))
        return
    lo, hi = stats.t.interval(confidence, x.size - 1, loc=np.mean(x), scale=sem)
    tol = 1e-9 * max(1.0, abs(lo), abs(hi))
    assert ci.low == pytest.approx(lo, abs=tol)
    assert ci.high == pytest.approx(hi, abs=tol)
    # equal values: NumPy's rounding leaves a std of ~1e-16 of their size, ours 0
    scale = max(1.0, float(np.max(np.abs(x))))
    assert ci.std == pytest.approx(np.std(x, ddof=1), rel=1e-12, abs=1e-12 * scale)
    assert ci.n == x.size


def test_t_interval_single_sample() -> None:
    ci = t_interval([3.0])
    assert ci.mean == 3.0
    assert math.isinf(ci.half_width)
    assert math.isnan(ci.std)
    assert ci.low == -math.inf and ci.high == math.inf
    assert math.isinf(ci.relative_half_width)


def test_t_interval_wider_at_higher_confidence() -> None:
    x = [1.0, 2.0, 4.0, 3.0, 5.0]
    assert t_interval(x, 0.99).half_width > t_interval(x, 0.95).half_width > 0


@pytest.mark.parametrize(
    ("samples", "confidence", "match"),
    [
        ([], 0.95, "at least one"),
        ([1.0, float("nan")], 0.95, "finite"),
        ([1.0, float("inf")], 0.95, "finite"),
        ([[1.0, 2.0]], 0.95, "1-D"),
        ([1.0, 2.0], 0.0, r"\(0, 1\)"),
        ([1.0, 2.0], 1.0, r"\(0, 1\)"),
        ([1.0, 2.0], float("nan"), r"\(0, 1\)"),
        (["a", "b"], 0.95, "real numbers"),
    ],
)
def test_t_interval_rejects_bad_input(samples: object, confidence: float, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        t_interval(samples, confidence)  # type: ignore[arg-type]


def test_mean_ci_properties() -> None:
    ci = MeanCI(mean=-4.0, half_width=1.0, n=5, std=1.0, confidence=0.9)
    assert (ci.low, ci.high) == (-5.0, -3.0)
    assert ci.relative_half_width == 0.25
    assert MeanCI(0.0, 1.0, 5, 1.0, 0.9).relative_half_width == math.inf
    asym = MeanCI(mean=2.0, half_width=1.5, n=5, std=1.0, confidence=0.9, lower=1.0, upper=4.0)
    assert (asym.low, asym.high) == (1.0, 4.0)


# --------------------------------------------------------------------------- harmonic


@settings(max_examples=60, deadline=None)
@given(
    st.lists(positive_floats, min_size=2, max_size=40),
    st.floats(min_value=0.5, max_value=0.99),
)
def test_harmonic_interval_is_reciprocal_of_t_interval(xs: list[float], c: float) -> None:
    x = np.array(xs)
    h = harmonic_t_interval(x, c)
    inner = t_interval(1.0 / x, c)
    assert h.mean == pytest.approx(stats.hmean(x), rel=1e-9)
    assert h.mean == pytest.approx(1.0 / inner.mean, rel=1e-12)
    assert h.low == pytest.approx(1.0 / inner.high, rel=1e-12)
    if inner.low > 0:
        assert h.high == pytest.approx(1.0 / inner.low, rel=1e-12)
    else:
        assert h.high == math.inf
    assert h.low <= h.mean <= h.high
    assert h.half_width == pytest.approx((h.high - h.low) / 2, rel=1e-12)
    assert h.n == x.size and h.confidence == c


def test_harmonic_interval_known_value() -> None:
    # Equal work at 100 MB/s and 200 MB/s: overall 2 / (1/100 + 1/200) = 133.33 MB/s.
    x = np.array([100.0, 200.0] * 10)
    ci = harmonic_t_interval(x)
    assert ci.mean == pytest.approx(400.0 / 3.0)
    y = 1.0 / x
    h = stats.t.ppf(0.975, 19) * np.std(y, ddof=1) / math.sqrt(20)
    assert ci.low == pytest.approx(1.0 / (np.mean(y) + h))
    assert ci.high == pytest.approx(1.0 / (np.mean(y) - h))
    # Asymmetric: the upper arm is longer than the lower one.
    assert ci.high - ci.mean > ci.mean - ci.low
    # std is the delta-method std in rate units: t * std / sqrt(n) ~ first-order half-width.
    assert ci.std == pytest.approx(np.std(y, ddof=1) * ci.mean**2)


def test_harmonic_interval_rejects_non_positive() -> None:
    with pytest.raises(ValueError, match="strictly positive"):
        harmonic_t_interval([1.0, 0.0, 2.0])
    with pytest.raises(ValueError, match="strictly positive"):
        harmonic_t_interval([1.0, -3.0])


def test_harmonic_interval_single_sample() -> None:
    ci = harmonic_t_interval([50.0])
    assert ci.mean == 50.0
    assert ci.low == 0.0 and ci.high == math.inf
    assert math.isinf(ci.half_width) and math.isnan(ci.std)


# --------------------------------------------------------------------------- sample size


def _brute_force_n(std: float, mean: float, rel: float, c: float) -> int:
    n = 2
    while stats.t.ppf((1 + c) / 2, n - 1) * std / math.sqrt(n) > rel * abs(mean):
        n += 1
    return n


@settings(max_examples=40, deadline=None)
@given(
    std=st.floats(min_value=0.01, max_value=10.0),
    mean=st.floats(min_value=1.0, max_value=100.0) | st.floats(min_value=-100.0, max_value=-1.0),
    rel=st.floats(min_value=0.01, max_value=0.5),
    c=st.sampled_from([0.8, 0.9, 0.95, 0.99]),
)
def test_required_sample_size_matches_brute_force(
    std: float, mean: float, rel: float, c: float
) -> None:
    # Keep the brute-force loop short: cap the expected n at a few thousand.
    if (3.0 * std / (rel * abs(mean))) ** 2 > 3000:
        rel = 3.0 * std / abs(mean) / math.sqrt(3000)
    assert required_sample_size(std, mean, rel, c) == _brute_force_n(std, mean, rel, c)


def test_required_sample_size_examples() -> None:
    assert required_sample_size(1.0, 10.0, 0.05) == 18
    assert required_sample_size(0.0, 10.0, 0.05) == 2
    # A tiny std still needs the minimum of 2 samples.
    assert required_sample_size(1e-9, 10.0, 0.05) == 2
    # Large n: close to the normal approximation (z/0.001)^2 = 3841458.8...
    n = required_sample_size(1.0, 1.0, 0.001)
    assert 3_841_459 <= n <= 3_841_470
    assert stats.t.ppf(0.975, n - 1) / math.sqrt(n) <= 0.001
    assert stats.t.ppf(0.975, n - 2) / math.sqrt(n - 1) > 0.001
    # Then the achieved half-width of that n is within target.
    ci_hw = stats.t.ppf(0.975, n - 1) * 1.0 / math.sqrt(n)
    assert ci_hw <= 0.001


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((-1.0, 1.0, 0.1, 0.95), "std"),
        ((float("nan"), 1.0, 0.1, 0.95), "std"),
        ((1.0, float("inf"), 0.1, 0.95), "mean"),
        ((1.0, 1.0, 0.0, 0.95), "relative_half_width"),
        ((1.0, 1.0, 0.1, 1.5), "confidence"),
        ((1.0, 0.0, 0.1, 0.95), "non-zero"),
    ],
)
def test_required_sample_size_rejects_bad_input(
    args: tuple[float, float, float, float], match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        required_sample_size(*args)


# --- residual autocorrelation correction (an Assay addition) ---------------------------


def test_widen_scales_distances_from_the_mean() -> None:
    from assay.stats.intervals import widen

    ci = MeanCI(mean=10.0, half_width=1.0, n=5, std=2.0, confidence=0.95, lower=9.5, upper=11.0)
    w = widen(ci, 2.0)
    assert (w.low, w.high, w.half_width, w.std) == (9.0, 12.0, 2.0, 4.0)
    with pytest.raises(ValueError):
        widen(ci, 0.5)


def test_residual_factor_matches_ar1_variance_of_the_mean() -> None:
    from assay.stats.intervals import residual_autocorrelation_factor

    # var(mean) of a long AR(1) sequence is var/n * (1 + r) / (1 - r)
    assert residual_autocorrelation_factor(0.0) == 1.0
    assert residual_autocorrelation_factor(-0.3) == 1.0
    assert residual_autocorrelation_factor(float("nan")) == 1.0
    assert residual_autocorrelation_factor(0.5) == pytest.approx(math.sqrt(3.0))


@given(
    st.floats(min_value=-1e300, max_value=1e300, allow_nan=False, allow_subnormal=False),
    st.integers(min_value=2, max_value=60),
)
def test_equal_values_have_no_spread_and_no_skew(value: float, n: int) -> None:
    """np.std of seven 0.1s is 1.5e-17 (the mean's rounding): the interval of equal
    values is the value itself, and their skewness 0 (found by the property above on
    three 1.6e-264s: a half-width of 1.3e-280, and a skewness of 2.4)."""
    from assay.stats.skewed_mean import sample_skewness

    ci = t_interval([value] * n)
    assert (ci.mean, ci.half_width, ci.std) == (value, 0.0, 0.0)
    assert sample_skewness([value] * n) == 0.0
