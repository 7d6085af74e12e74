"""The mixture sequential t-test (assay.stats.sequential): closed form, validity, inversion."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from assay.stats.sequential import (
    DEFAULT_SCALES,
    critical_t,
    log_mixture_e_value,
    log_t_e_value,
    mixture_e_value,
    samples_to_decide,
)


def _reference(t: float, nu: float, n: float, scale: float) -> float:
    """The Bayes factor by its definition: the noncentral-t density of ``t`` averaged
    over ``delta ~ N(0, scale**2)`` (noncentrality ``delta sqrt(n)``), over its
    central-t density."""

    def integrand(delta: float) -> float:
        return float(stats.nct.pdf(t, nu, delta * math.sqrt(n)) * stats.norm.pdf(delta, 0.0, scale))

    num, _ = integrate.quad(integrand, -12 * scale, 12 * scale, limit=400, points=[0.0])
    return num / float(stats.t.pdf(t, nu))


@pytest.mark.parametrize(
    ("t", "nu", "n", "scale"),
    [
        (0.0, 9.0, 10.0, 1.0),
        (2.5, 9.0, 10.0, 1.0),
        (-3.1, 19.0, 20.0, 0.5),
        (1.7, 38.0, 10.0, 0.25),  # two samples of 20: n = 1 / (1/20 + 1/20)
        (4.0, 6.3, 3.5, 2.0),  # Welch's fractional degrees of freedom
    ],
)
def test_closed_form_matches_the_noncentral_t_mixture(
    t: float, nu: float, n: float, scale: float
) -> None:
    got = math.exp(log_t_e_value(t, nu, n, scale))
    assert got == pytest.approx(_reference(t, nu, n, scale), rel=1e-6)


def test_known_values() -> None:
    # t = 0: the evidence is (1 + n g)^(-1/2), against a difference
    assert math.exp(log_t_e_value(0.0, 4.0, 5.0, 2.0)) == pytest.approx(21**-0.5)
    # |t| -> inf: the cap (1 + n g)^(nu / 2): no t decides on too few samples
    assert log_t_e_value(math.inf, 4.0, 5.0, 2.0) == pytest.approx(2.0 * math.log(21.0))
    assert log_t_e_value(1e300, 4.0, 5.0, 2.0) == pytest.approx(2.0 * math.log(21.0))
    # nan (no variance, equal means) counts as no difference
    assert log_t_e_value(math.nan, 4.0, 5.0, 2.0) == log_t_e_value(0.0, 4.0, 5.0, 2.0)
    # two rounds per variant can never decide at alpha 0.01: every scale's cap is lower
    assert critical_t(0.01, 1.0, 1.0) == math.inf
    assert mixture_e_value(math.inf, 1.0, 1.0) < 100.0


finite_t = st.floats(-60.0, 60.0, allow_nan=False)
dof = st.floats(1.0, 500.0)
size = st.floats(0.5, 500.0)
scale = st.floats(0.05, 100.0)


@settings(max_examples=200, deadline=None)
@given(finite_t, dof, size, scale)
def test_symmetric_and_increasing_in_abs_t(t: float, nu: float, n: float, s: float) -> None:
    here = log_t_e_value(t, nu, n, s)
    assert here == pytest.approx(log_t_e_value(-t, nu, n, s), abs=1e-12)
    further = log_t_e_value(abs(t) + 0.5, nu, n, s)
    assert further >= here - 1e-12
    assert here <= log_t_e_value(math.inf, nu, n, s) + 1e-9
    assert log_t_e_value(0.0, nu, n, s) <= 0.0  # t = 0 is evidence for equality


@settings(max_examples=100, deadline=None)
@given(finite_t, dof, size, st.lists(scale, min_size=1, max_size=6))
def test_mixture_is_the_average(t: float, nu: float, n: float, scales: list[float]) -> None:
    parts = [math.exp(log_t_e_value(t, nu, n, s)) for s in scales]
    got = math.exp(log_mixture_e_value(t, nu, n, scales))
    assert got == pytest.approx(sum(parts) / len(parts), rel=1e-9)
    assert min(parts) * (1 - 1e-9) <= got <= max(parts) * (1 + 1e-9)


@settings(max_examples=60, deadline=None)
@given(st.floats(0.001, 0.2), st.floats(2.0, 300.0), st.floats(2.0, 300.0))
def test_critical_t_inverts_the_e_value(alpha: float, nu: float, n: float) -> None:
    c = critical_t(alpha, nu, n)
    if math.isinf(c):
        assert log_mixture_e_value(math.inf, nu, n) <= -math.log(alpha)
        return
    assert log_mixture_e_value(c, nu, n) == pytest.approx(-math.log(alpha), abs=1e-7)
    assert log_mixture_e_value(c * (1 - 1e-6), nu, n) < -math.log(alpha)
    # more evidence is needed at a smaller alpha
    assert critical_t(alpha / 2, nu, n) > c


def _ever_crosses(paths: np.ndarray, alpha: float) -> float:
    """Share of one-sample paths whose e-value (t-statistic of the first n values,
    nu = n - 1, n) reaches 1 / alpha at some n >= 2."""
    crossed = 0
    thr = -math.log(alpha)
    for x in paths:
        c = np.cumsum(x)
        c2 = np.cumsum(x * x)
        for n in range(2, x.size + 1):
            m = c[n - 1] / n
            var = (c2[n - 1] - n * m * m) / (n - 1)
            t = m / math.sqrt(var / n)
            if log_mixture_e_value(t, n - 1.0, float(n)) >= thr:
                crossed += 1
                break
    return crossed / len(paths)


def test_time_uniform_false_positive_rate_under_the_null() -> None:
    """Ville's inequality: over all n <= 80, i.i.d. normal data cross 1/alpha at most
    alpha of the time (a fixed t-test at 5 % checked at every n: about 30 %)."""
    rng = np.random.default_rng(2024)
    paths = rng.standard_normal((600, 80))
    rate = _ever_crosses(paths, 0.05)
    assert rate <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / 600)
    # and it is a test with power: a one-sd shift is found on nearly every path
    assert _ever_crosses(paths[:100] + 1.0, 0.05) >= 0.95


def test_samples_to_decide_plans_enough() -> None:
    more = samples_to_decide(1.0, 0.01, 10, 10)
    assert more is not None
    n = 10 + more
    n_eff = n / 2
    # the expected t at the planned size clears the critical t by the power margin
    assert 1.0 * math.sqrt(n_eff) >= critical_t(0.01, 2 * n - 2, n_eff) + 0.84
    n1 = n - 1
    assert 1.0 * math.sqrt(n1 / 2) < critical_t(0.01, 2 * n1 - 2, n1 / 2) + 0.8416
    assert samples_to_decide(0.0, 0.01, 10, 10) is None
    assert samples_to_decide(1e-9, 0.01, 10, 10, limit=1000) is None
    assert samples_to_decide(50.0, 0.01, 3, 3) == 1


def test_validation() -> None:
    with pytest.raises(ValueError, match="nu"):
        log_t_e_value(1.0, 0.0, 5.0, 1.0)
    with pytest.raises(ValueError, match="effective sample size"):
        log_t_e_value(1.0, 3.0, math.nan, 1.0)
    with pytest.raises(ValueError, match="scale"):
        log_t_e_value(1.0, 3.0, 4.0, -1.0)
    with pytest.raises(ValueError, match="scales"):
        log_mixture_e_value(1.0, 3.0, 4.0, [])
    with pytest.raises(ValueError, match="alpha"):
        critical_t(1.0, 3.0, 4.0)
    assert len(DEFAULT_SCALES) >= 3


def test_samples_to_decide_from_too_few_samples() -> None:
    # one sample each: no t decides yet (critical t infinite), more samples will
    assert critical_t(0.01, 1.0, 0.5) == math.inf
    more = samples_to_decide(2.0, 0.01, 1, 1)
    assert more is not None and 1 <= more < 20
    assert more == samples_to_decide(2.0, 0.01, 2, 2) + 1  # the same total either way
