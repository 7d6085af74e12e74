"""Tests for assay.stats.wps (Pilot eq. 4: t = alpha + w / v)."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pytest
from scipy import stats
from scipy.signal import lfilter

from assay.stats.autocorr import merge_subsessions
from assay.stats.wps import WPSFit, fit_wps

FloatArray = npt.NDArray[np.float64]

ALPHA = 2.0
V = 500.0


def synthetic(
    n: int, seed: int, noise: float = 0.2, phi: float = 0.0
) -> tuple[FloatArray, FloatArray]:
    """t = 2 + w / 500 + noise, work amounts spread over [100, 10000]."""
    rng = np.random.default_rng(seed)
    w = rng.uniform(100.0, 10_000.0, n)
    e = rng.normal(0.0, noise, n)
    if phi:
        e = np.asarray(lfilter([1.0], [1.0, -phi], e)) * math.sqrt(1 - phi**2)
    return w, ALPHA + w / V + e


def test_fit_wps_recovers_v_and_alpha() -> None:
    w, t = synthetic(400, seed=1, noise=0.1)
    fit = fit_wps(w, t)
    assert fit is not None
    assert fit.v == pytest.approx(V, rel=0.01)
    assert fit.alpha_per_round == pytest.approx(ALPHA, abs=0.1)
    assert fit.alpha == pytest.approx(ALPHA * fit.subsession_size, abs=0.1 * fit.subsession_size)
    assert fit.v_low < V < fit.v_high
    assert fit.v_low < fit.v < fit.v_high
    assert fit.n == 400 // fit.subsession_size
    assert fit.r_squared > 0.99
    assert fit.confidence == 0.95
    assert 0 < fit.relative_half_width < 0.01


def test_fit_wps_matches_linregress_when_no_merging() -> None:
    w, t = synthetic(60, seed=3)
    fit = fit_wps(w, t)
    assert fit is not None and fit.subsession_size == 1
    ref = stats.linregress(w, t)
    tq = stats.t.ppf(0.975, 58)
    assert fit.v == pytest.approx(1 / ref.slope)
    assert fit.alpha == pytest.approx(ref.intercept)
    assert fit.v_low == pytest.approx(1 / (ref.slope + tq * ref.stderr))
    assert fit.v_high == pytest.approx(1 / (ref.slope - tq * ref.stderr))
    assert fit.r_squared == pytest.approx(ref.rvalue**2)


def test_fit_wps_ci_coverage() -> None:
    # 200 independent sessions of 40 rounds: the 95% CI must cover the true v in >= 90%.
    covered = 0
    fitted = 0
    for seed in range(200):
        w, t = synthetic(40, seed=seed, noise=0.5)
        fit = fit_wps(w, t)
        if fit is None:
            continue
        fitted += 1
        covered += fit.v_low <= V <= fit.v_high
    assert fitted >= 190
    assert covered >= 0.90 * fitted


def test_fit_wps_merges_autocorrelated_rounds() -> None:
    # AR(1) errors with phi = 0.8: the residuals need q > 1, and the work sums keep the slope.
    w, t = synthetic(2000, seed=8, noise=0.3, phi=0.8)
    fit = fit_wps(w, t)
    assert fit is not None
    assert fit.subsession_size > 1
    assert fit.n == 2000 // fit.subsession_size
    assert fit.v == pytest.approx(V, rel=0.02)
    assert fit.alpha_per_round == pytest.approx(ALPHA, abs=0.2)
    # The merged regression is the OLS of the block sums.
    q = fit.subsession_size
    ref = stats.linregress(q * merge_subsessions(w, q), q * merge_subsessions(t, q))
    assert fit.v == pytest.approx(1 / ref.slope)
    assert fit.alpha == pytest.approx(ref.intercept)


def test_fit_wps_exact_fit() -> None:
    w = np.arange(1.0, 11.0) * 1000.0
    fit = fit_wps(w, ALPHA + w / V)
    assert fit is not None
    assert fit.subsession_size == 1
    assert fit.v == pytest.approx(V)
    assert fit.alpha == pytest.approx(ALPHA)
    assert fit.v_low == pytest.approx(V) and fit.v_high == pytest.approx(V)


def test_fit_wps_slope_ci_including_zero() -> None:
    # Durations that barely depend on work: the slope CI crosses 0, v_high is unbounded.
    rng = np.random.default_rng(0)
    w = np.linspace(1.0, 10.0, 30)
    t = 5.0 + 1e-4 * w + rng.normal(0.0, 1.0, 30)
    fit = fit_wps(w, t)
    assert fit is not None
    assert fit.v_high == math.inf
    assert fit.relative_half_width == math.inf


def test_fit_wps_none_cases() -> None:
    assert fit_wps([], []) is None
    assert fit_wps([1.0, 2.0], [1.0, 2.0]) is None
    assert fit_wps([5.0] * 10, np.linspace(1.0, 2.0, 10)) is None
    # A duration trend the model cannot explain (alternating work, drifting time):
    # the residual autocorrelation cannot be merged away with >= 3 pairs.
    w = np.tile([1.0, 2.0], 50)
    t = w + np.linspace(0.0, 100.0, 100)
    assert fit_wps(w, t) is None


def test_fit_wps_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="same length"):
        fit_wps([1.0, 2.0, 3.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="finite"):
        fit_wps([1.0, 2.0, float("nan")], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="confidence"):
        fit_wps([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], confidence=0.0)
    with pytest.raises(ValueError, match="max_autocorrelation"):
        fit_wps([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], max_autocorrelation=float("nan"))


def test_wpsfit_properties() -> None:
    f = WPSFit(4.0, 500.0, 450.0, 560.0, 20, 2, 0.99, 0.95)
    assert f.relative_half_width == pytest.approx(0.11)
    assert f.alpha_per_round == 2.0
    assert WPSFit(4.0, 500.0, 450.0, math.inf, 20, 2, 0.99, 0.95).relative_half_width == math.inf
