"""Intervals that respect the quantity (issue #35): a rate, a count or a total whose
readings are all positive never gets a negative lower bound; Cox's log-normal interval
takes over from the t-interval when that crosses zero, and says so."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from assay.designs.run_until_ci import POSITIVE_NOTE, analyze_samples
from assay.report.summary import rounds
from assay.spec import PISpec, StopSpec
from assay.stats.intervals import t_interval
from assay.stats.skewed_mean import cox_interval


def test_cox_interval_is_the_published_formula() -> None:
    x = np.array([3.1, 0.4, 12.0, 1.7, 0.9, 55.0, 2.2, 7.5])
    y = np.log(x)
    n, s2 = x.size, float(np.var(y, ddof=1))
    t = stats.t.ppf(0.975, n - 1)
    se = math.sqrt(s2 / n + s2**2 / (2 * (n - 1)))
    centre = float(np.mean(y)) + s2 / 2
    ci = cox_interval(x, 0.95)
    assert ci.low == pytest.approx(math.exp(centre - t * se), rel=1e-12)
    assert ci.high == pytest.approx(math.exp(centre + t * se), rel=1e-12)
    assert ci.mean == pytest.approx(float(np.mean(x)))


def test_cox_interval_refuses_what_it_cannot_take() -> None:
    for bad in ([1.0], [1.0, 0.0], [2.0, -1.0]):
        with pytest.raises(ValueError, match="positive samples"):
            cox_interval(bad)
    assert cox_interval([1e308, 1.7e308, 1e300]).high == math.inf  # no OverflowError


def test_on_log_normal_readings_it_covers_where_the_t_interval_does_not() -> None:
    """Log-normal sigma 1.5, 20 readings: the t-interval covers the mean ~75% of the
    time and goes below zero in ~17%; Cox's covers ~94% and never does."""
    rng = np.random.default_rng(7)
    true = math.exp(1.5**2 / 2)
    cox = t = 0
    for _ in range(2000):
        x = rng.lognormal(0.0, 1.5, 20)
        c = cox_interval(x)
        assert c.low > 0
        cox += c.low <= true <= c.high
        ti = t_interval(x)
        t += ti.low <= true <= ti.high
    assert 0.92 <= cox / 2000 <= 0.97
    assert t / 2000 < 0.82


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(1e-6, 1e9, allow_nan=False), min_size=2, max_size=40),
    st.sampled_from([0.8, 0.95, 0.99]),
)
def test_its_bounds_are_positive_and_hold_the_mean(x: list[float], confidence: float) -> None:
    ci = cox_interval(x, confidence)
    assert 0 <= ci.low <= ci.mean <= ci.high  # 0: exp() of a bound below -745 (n = 2, 99%)


def test_a_run_of_positive_readings_with_a_heavy_spread_gets_a_positive_ci() -> None:
    """``6858 rows/s ± 11403`` (low -4545 rows/s) was reported for a rate."""
    rng = np.random.default_rng(11)
    x = next(x for x in (rng.lognormal(8.0, 2.5, 12) for _ in range(100)) if t_interval(x).low < 0)
    pi = PISpec(name="rate", unit="rows/s", direction="higher")
    res = analyze_samples(pi, x, StopSpec(min_samples=5), "readings", 12)
    assert math.isfinite(res.low) and res.low > 0
    assert res.low <= res.mean <= res.high
    assert POSITIVE_NOTE in res.note


def test_readings_that_can_be_negative_keep_the_t_interval() -> None:
    x = np.array([-3.0, 5.0, 1.0, -2.0, 4.0, 0.5, -1.0, 2.0, 3.0, -0.5, 1.5, 2.5])
    res = analyze_samples(PISpec(name="delta"), x, StopSpec(min_samples=5), "readings", 12)
    assert POSITIVE_NOTE not in res.note


def test_elect_summaries_of_positive_rounds_stay_positive() -> None:
    got = rounds([1.0, 1.0, 1.0, 1.0, 400.0])
    assert got["low"] > 0 and got["low"] <= got["mean"] <= got["high"]
    assert rounds([10.0, 11.0, 12.0, 11.0, 10.0])["low"] == pytest.approx(
        t_interval([10.0, 11.0, 12.0, 11.0, 10.0]).low
    )


def test_a_compared_variant_of_positive_readings_gets_a_positive_ci() -> None:
    from assay.stats.compare import analyze_variant

    rng = np.random.default_rng(5)
    x = next(x for x in (rng.lognormal(-7.0, 2.5, 6) for _ in range(200)) if t_interval(x).low < 0)
    v = analyze_variant(x)
    assert 0 < v.ci.low <= v.mean <= v.ci.high
    assert v.var == pytest.approx(float(np.var(x, ddof=1)) * v.residual_factor**2)
