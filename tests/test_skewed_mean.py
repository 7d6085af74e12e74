"""Hall's skewness-corrected interval of a mean (issue #21) and its use by `assay run`."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, stats

from assay.designs.run_until_ci import RoundData, analyze_pi, skew_corrected
from assay.spec import PISpec, StopSpec
from assay.stats.autocorr import subsession_interval
from assay.stats.intervals import t_interval
from assay.stats.skewed_mean import (
    cox_interval,
    hall_interval,
    hall_max_skewness,
    log_normal_hull,
    lognormal_skewness,
    looks_log_normal,
    sample_skewness,
    skewness_se,
    tail_skewness,
)

PI = PISpec(name="t", unit="s")


def _reference(
    x: np.ndarray, confidence: float = 0.95, g: float | None = None
) -> tuple[float, float]:
    """Hall's interval by root finding on T(W) = W + g W^2/3 + g^2 W^3/27 + g/(6n), |g|
    capped where the far root reaches T's stationary point 1 + g W / 3 = 0."""
    n = x.size
    m, s = float(np.mean(x)), float(np.std(x, ddof=1))
    g = float(stats.skew(x, bias=False)) if g is None else g
    q = float(stats.t.ppf((1 + confidence) / 2, n - 1)) / math.sqrt(n)
    # T(-3/g) = -1/g + g/(6n) = -q  <=>  g^2/(6n) + q g - 1 = 0
    top = optimize.brentq(lambda h: h * h / (6 * n) + q * h - 1, 1e-9, 1e6, xtol=1e-14)
    g = min(max(g, -top), top)

    def t_of(w: float) -> float:
        return w + g * w * w / 3 + g * g * w**3 / 27 + g / (6 * n)

    w_hi = optimize.brentq(lambda w: t_of(w) - q, -1e3, 1e3, xtol=1e-14)
    w_lo = optimize.brentq(lambda w: t_of(w) + q, -1e3, 1e3, xtol=1e-14)
    return m - w_hi * s, m - w_lo * s


def test_hall_interval_by_hand() -> None:
    # nine 1s and one 10: mean 1.9, s = 2.846050, q = t(0.975, 9)/sqrt(10) = 0.715357.
    # With g = 1: T^-1(-q) = 3 (cbrt(1 - (q + 1/60)) - 1) = -1.065865 and
    # T^-1(q) = 3 (cbrt(1 + q - 1/60) - 1) = 0.579530: [0.25063, 4.93350]
    x = [1.0] * 9 + [10.0]
    ci = hall_interval(x, skewness=1.0)
    assert (ci.low, ci.mean, ci.high) == pytest.approx((0.25063, 1.9, 4.93350), abs=1e-4)
    assert ci.half_width == pytest.approx((ci.high - ci.low) / 2)
    # G1 = sqrt(10) is past the cap g0 = 30 (sqrt(q^2 + 1/15) - q) = 1.355120, where
    # 1 - g0 (q + g0/60) = 0: the upper bound is 1.9 + 3 s / g0 = 8.20066, the lower
    # 1.9 - 3 (cbrt(1 + g0 (q - g0/60)) - 1) s / g0 = 0.34415
    assert sample_skewness(x) == pytest.approx(math.sqrt(10), rel=1e-12)
    assert hall_max_skewness(10, 0.7153569) == pytest.approx(1.355120, abs=1e-6)
    ci = hall_interval(x)
    assert (ci.low, ci.high) == pytest.approx((0.34415, 8.20066), abs=1e-4)


@pytest.mark.parametrize("n", [5, 10, 30, 200])
def test_the_far_bound_grows_with_the_skewness_up_to_the_cap(n: int) -> None:
    x = np.random.default_rng(n).normal(10, 1, n)
    highs = [hall_interval(x, skewness=g).high for g in np.linspace(0, 3 * math.sqrt(n), 40)]
    assert all(b >= a - 1e-12 for a, b in itertools.pairwise(highs))
    assert hall_interval(x, skewness=1e9).high == pytest.approx(highs[-1])


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_hall_interval_matches_root_finding(seed: int, confidence: float) -> None:
    x = np.random.default_rng(seed).lognormal(0, 1, 50 + 100 * seed)
    ci = hall_interval(x, confidence)
    assert (ci.low, ci.high) == pytest.approx(_reference(x, confidence), rel=1e-9)
    g = tail_skewness(x)
    ci = hall_interval(x, confidence, skewness=g)
    # at the cap the far root sits where T is flat (a cube): root finding is good to ~1e-6
    assert (ci.low, ci.high) == pytest.approx(_reference(x, confidence, g), rel=1e-5)


def test_lognormal_skewness_of_a_known_log_variance() -> None:
    # logs -1, 0, 1: variance 1, so (e + 2) sqrt(e - 1) = 6.184877
    x = [math.exp(-1.0), 1.0, math.exp(1.0)]
    assert lognormal_skewness(x) == pytest.approx((math.e + 2) * math.sqrt(math.e - 1))
    assert math.isnan(lognormal_skewness([0.0, 1.0, 2.0]))


def test_tail_skewness_corrects_only_a_significant_skew() -> None:
    # logs -1, 0, 1, 0, 0, 0: variance 0.4, floor (e^0.4 + 2) sqrt(e^0.4 - 1) = 2.44882
    # above G1 = 1.838 (significant: 1.96 * se(6) = 1.7)
    x = [math.exp(-1.0), 1.0, math.exp(1.0), 1.0, 1.0, 1.0]
    assert skewness_se(6) * 1.96 < sample_skewness(x)
    assert (
        tail_skewness(x) == pytest.approx(lognormal_skewness(x)) == pytest.approx(2.44882, abs=1e-5)
    )
    # left-skewed, or not all positive: the sample skewness (sqrt(10) in size)
    left = [1.0] + [10.0] * 9
    assert tail_skewness(left) == pytest.approx(-math.sqrt(10))
    shifted = [-1.0] * 9 + [8.0]
    assert tail_skewness(shifted) == pytest.approx(math.sqrt(10))
    # not significant: no correction (G1 = 1.21 at n = 10, below 1.96 * 0.687)
    small = [1.0, 2.0, 2.0, 3.0, 3.0, 3.0, 4.0, 4.0, 6.0, 8.0]
    assert 0.5 < sample_skewness(small) < 1.96 * skewness_se(10)
    assert tail_skewness(small) == 0.0
    # normal samples' skewness has the standard error skewness_se gives
    rng = np.random.default_rng(0)
    g = [sample_skewness(rng.normal(size=30)) for _ in range(4000)]
    assert float(np.std(g)) == pytest.approx(skewness_se(30), rel=0.05)


def test_sample_skewness_is_scipys_adjusted_one() -> None:
    x = np.random.default_rng(7).gamma(2.0, 1.0, 123)
    assert sample_skewness(x) == pytest.approx(stats.skew(x, bias=False), rel=1e-12)


def test_symmetric_samples_give_the_t_interval() -> None:
    x = np.array([-3.0, -1.0, 0.0, 1.0, 3.0, 7.0, 9.0, 10.0, 11.0, 13.0])  # symmetric about 5
    ci, t = hall_interval(x), t_interval(x)
    assert (ci.low, ci.high) == pytest.approx((t.low, t.high), rel=1e-12)


def test_a_lognormal_samples_interval_is_wider_on_the_right() -> None:
    x = np.random.default_rng(3).lognormal(0, 1, 200)
    ci, t = hall_interval(x), t_interval(x)
    assert ci.high - ci.mean > 1.3 * (ci.mean - ci.low)
    assert ci.high > t.high  # the t-interval is the one too short on the right


def test_readings_near_the_float_limit_keep_their_skewness() -> None:
    x = np.array([1.0] * 9 + [10.0])
    assert sample_skewness(x * 1.7e307 - 1.5e308) == pytest.approx(math.sqrt(10))
    ci = hall_interval(x * 1e300)
    assert ci.high == pytest.approx(1e300 * hall_interval(x).high)


def test_one_sample_has_no_interval_and_empty_is_an_error() -> None:
    assert math.isinf(hall_interval([3.0]).half_width)
    with pytest.raises(ValueError, match="at least one sample"):
        hall_interval([])


samples = st.lists(st.floats(-1e3, 1e3), min_size=3, max_size=60).map(np.array)


def _spread(x: np.ndarray) -> bool:
    return bool(np.ptp(x) > 1e-6 * max(1.0, float(np.abs(x).max())))


@settings(max_examples=100, deadline=None)
@given(samples, st.floats(0.01, 100), st.floats(-1e3, 1e3))
def test_hall_interval_is_location_and_scale_equivariant(x: np.ndarray, a: float, b: float) -> None:
    if not _spread(x):
        return
    ci, moved = hall_interval(x), hall_interval(a * x + b)
    tol = 1e-6 * (abs(a) * (abs(ci.low) + abs(ci.high)) + abs(b) + 1.0)
    assert moved.low == pytest.approx(a * ci.low + b, abs=tol)
    assert moved.high == pytest.approx(a * ci.high + b, abs=tol)
    # a reflection mirrors it
    flipped = hall_interval(-x)
    assert flipped.low == pytest.approx(-ci.high, abs=tol)
    assert flipped.high == pytest.approx(-ci.low, abs=tol)


@settings(max_examples=100, deadline=None)
@given(samples)
def test_hall_interval_contains_the_mean_and_leans_to_the_tail(x: np.ndarray) -> None:
    if not _spread(x):
        return
    ci = hall_interval(x)
    assert ci.low < ci.mean < ci.high
    g = sample_skewness(x)
    up, down = ci.high - ci.mean, ci.mean - ci.low
    if g > 1e-6:
        assert up > down
    elif g < -1e-6:
        assert down > up


@settings(max_examples=60, deadline=None)
@given(samples)
def test_symmetrised_samples_give_the_t_interval(x: np.ndarray) -> None:
    if not _spread(x):
        return
    z = np.concatenate([x, 2 * float(np.mean(x)) - x])  # symmetric about its mean
    ci, t = hall_interval(z), t_interval(z)
    scale = float(np.abs(z).max()) + 1.0
    assert ci.low == pytest.approx(t.low, abs=1e-7 * scale)
    assert ci.high == pytest.approx(t.high, abs=1e-7 * scale)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.01, 1e3), min_size=3, max_size=60).map(np.array), st.floats(0.01, 100))
def test_tail_skewness_interval_is_scale_equivariant(x: np.ndarray, a: float) -> None:
    # the lognormal floor has zero as its origin: scale, not location, equivariant
    if not _spread(x):
        return
    ci = hall_interval(x, skewness=tail_skewness(x))
    scaled = hall_interval(a * x, skewness=tail_skewness(a * x))
    assert scaled.low == pytest.approx(a * ci.low, rel=1e-6, abs=1e-9)
    assert scaled.high == pytest.approx(a * ci.high, rel=1e-6, abs=1e-9)
    assert ci.low < ci.mean < ci.high


# --- assay run: the mean's interval ----------------------------------------------------


def _readings(x: np.ndarray) -> list[RoundData]:
    return [RoundData(reading=float(v), duration=1.0) for v in x]


def test_run_gives_lognormal_readings_halls_interval_longer_on_the_right() -> None:
    x = np.random.default_rng(5).lognormal(0, 1, 300)
    stop = StopSpec(ci_width=0.2, residual_correction=False)
    res = analyze_pi(PI, _readings(x), stop)
    assert res.subsession_size == 1
    assert looks_log_normal(x)  # so the interval also holds Cox's
    ref = log_normal_hull(hall_interval(x, skewness=tail_skewness(x)), x)
    assert (res.low, res.high) == pytest.approx((ref.low, ref.high), rel=1e-12)
    t = t_interval(x)
    assert res.high > t.high and res.high - res.mean > 1.2 * (res.mean - res.low)
    assert res.extra["skewness"] == pytest.approx(tail_skewness(x))
    assert "skewed samples" in res.note and "Cox's log-normal interval" in res.note


def test_run_keeps_the_t_interval_for_symmetric_readings() -> None:
    x = np.random.default_rng(6).normal(10, 0.5, 60)
    assert abs(sample_skewness(x)) < 1.96 * skewness_se(60)
    res = analyze_pi(PI, _readings(x), StopSpec(ci_width=0.05, residual_correction=False))
    t = t_interval(x)
    assert res.subsession_size == 1
    assert (res.low, res.high) == pytest.approx((t.low, t.high), rel=1e-12)
    assert res.note == "" and "skewness" not in res.extra


def test_run_keeps_its_residual_widening_on_the_skewed_interval() -> None:
    x = np.random.default_rng(8).lognormal(0, 1, 300)
    on = analyze_pi(PI, _readings(x), StopSpec(ci_width=0.2))
    off = analyze_pi(PI, _readings(x), StopSpec(ci_width=0.2, residual_correction=False))
    assert on.subsession_size == off.subsession_size == 1
    # Hall's interval scaled about the mean by the residual factor f, Cox's log-scale
    # error by the same f: the hull of both, for the f one of the sides shows
    g = tail_skewness(x)
    hall = hall_interval(x, skewness=g)

    def hull(f: float) -> tuple[float, float]:
        cox = cox_interval(x, widen_by=f)
        low = min(hall.mean - f * (hall.mean - hall.low), cox.low)
        return low, max(hall.mean + f * (hall.high - hall.mean), cox.high)

    sides = (
        (on.high - on.mean) / (hall.high - hall.mean),
        (on.mean - on.low) / (hall.mean - hall.low),
    )
    assert any(f >= 1.0 and hull(f) == pytest.approx((on.low, on.high), rel=1e-9) for f in sides)
    assert hull(1.0) == pytest.approx((off.low, off.high), rel=1e-9)
    assert on.low <= off.low and on.high >= off.high


# --- log-normal samples: Cox's interval held too (#59) --------------------------------


def test_looks_log_normal_tells_log_normal_from_other_right_skews() -> None:
    rng = np.random.default_rng(12)

    def share(draw: object) -> float:
        return float(np.mean([looks_log_normal(draw()) for _ in range(300)]))  # type: ignore[operator]

    # right-skewed beyond chance and logs symmetric: about 95% (the logs' gate at 5%)
    assert share(lambda: rng.lognormal(0.0, 1.0, 200)) > 0.9
    assert share(lambda: rng.lognormal(2.0, 0.5, 200)) > 0.9
    # exponential and gamma logs are skewed left; normal readings are not skewed
    assert share(lambda: rng.exponential(1.0, 200)) < 0.02
    assert share(lambda: rng.gamma(2.0, 1.0, 200)) < 0.1
    assert share(lambda: rng.normal(10.0, 3.0, 200)) < 0.05
    assert not looks_log_normal([1.0, 2.0])
    assert not looks_log_normal(np.append(rng.lognormal(0.0, 1.0, 200), 0.0))


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 2**31),
    st.integers(10, 400),
    st.floats(0.2, 2.0),
    st.floats(1.0, 3.0),
)
def test_the_hull_holds_both_intervals_or_is_the_given_one(
    seed: int, n: int, sigma: float, widen_by: float
) -> None:
    x = np.random.default_rng(seed).lognormal(0.0, sigma, n)
    ci = hall_interval(x, skewness=tail_skewness(x))
    hull = log_normal_hull(ci, x, widen_by=widen_by)
    assert hull.mean == ci.mean and hull.n == ci.n
    if looks_log_normal(x):
        cox = cox_interval(x, widen_by=widen_by)
        assert hull.low == min(ci.low, cox.low) and hull.high == max(ci.high, cox.high)
        assert hull.half_width == pytest.approx((hull.high - hull.low) / 2.0)
    else:
        assert hull == ci


def test_merged_samples_carry_the_skewness_of_their_readings() -> None:
    # ten means of six log-normal readings: their own skewness is not significant at
    # ten samples, their readings' is; a mean of q readings has 1/sqrt(q) of it
    x = np.random.default_rng(4).lognormal(0.0, 1.0, 60)
    means = x.reshape(10, 6).mean(axis=1)
    assert tail_skewness(means) == 0.0
    ci, g, _ = skew_corrected(t_interval(means), means, x)
    # significant at the ten means' number (autocorrelated readings' skewness varies more)
    assert g == pytest.approx(tail_skewness(x, effective_n=10) / math.sqrt(6.0))
    assert g > 1.0 and ci.high > t_interval(means).high
    if looks_log_normal(x):
        assert (
            ci.high
            >= cox_interval(
                x, widen_by=t_interval(means).half_width / t_interval(x).half_width
            ).high
            - 1e-12
        )
    # without the readings, the means alone: the t-interval
    same, g0, _ = skew_corrected(t_interval(means), means)
    assert g0 == 0.0 and same == t_interval(means)


def test_run_leaves_the_harmonic_mean_alone() -> None:
    x = np.random.default_rng(9).lognormal(0, 1, 100)
    pi = PISpec(name="t", unit="s", mean="harmonic")
    stop = StopSpec(ci_width=0.5, residual_correction=False)
    res = analyze_pi(pi, _readings(x), stop)
    got = subsession_interval(x, min_subsessions=stop.min_samples, harmonic=True)
    assert got is not None and res.subsession_size == got[1].size
    assert (res.low, res.high) == pytest.approx((got[0].low, got[0].high), rel=1e-12)


def test_the_skewness_gate_can_count_fewer_samples() -> None:
    # a skewness significant at 200 samples but not at the 10 merged samples they make
    x = np.random.default_rng(2).gamma(20.0, 1.0, 200)  # skewness about 0.45
    g = sample_skewness(x)
    assert 1.96 * skewness_se(200) < g < 1.96 * skewness_se(10)
    assert tail_skewness(x) != 0.0
    assert tail_skewness(x, effective_n=10) == 0.0


def test_log_normal_readings_hold_coxs_interval_with_no_significant_skewness_on_means() -> None:
    # 60 log-normal readings merged by six: the means' skewness and the readings' at ten
    # merged samples' number may not pass; the readings look log-normal at their own
    rng = np.random.default_rng(0)
    for _ in range(200):
        x = rng.lognormal(0.0, 1.0, 60)
        means = x.reshape(10, 6).mean(axis=1)
        if looks_log_normal(x) and tail_skewness(x, effective_n=10) == 0.0:
            break
    else:
        pytest.fail("no such sample in 200 draws")
    assert tail_skewness(means) == 0.0
    ci, g, _ = skew_corrected(t_interval(means), means, x)
    assert g == 0.0
    cox = cox_interval(
        x, widen_by=max(t_interval(means).half_width / t_interval(x).half_width, 1.0)
    )
    assert ci.low == min(t_interval(means).low, cox.low)
    assert ci.high == max(t_interval(means).high, cox.high)
