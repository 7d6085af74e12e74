"""The residual-autocorrelation correction in comparisons (assay.stats.compare).

``assay compare`` must widen each variant as ``assay run`` widens its interval
(``subsession_interval(..., correct_residual=True)``), and Welch's test must use the
same standard error, or A/A comparisons of autocorrelated series find differences
that are not there (bench/bench_compare.py).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.signal import lfilter

from assay.designs.compare import compare_pi
from assay.designs.run_until_ci import INDEPENDENCE_ALPHA
from assay.spec import parse_spec_data
from assay.stats.autocorr import autocorrelation, subsession_interval
from assay.stats.compare import (
    SummaryStats,
    VariantStats,
    analyze_variant,
    compare_samples,
    rank_variants,
)
from assay.store import TrialRecord
from assay.studies.compare import compare_trials

FloatArray = npt.NDArray[np.float64]


def _ar1(seed: int, n: int, phi: float, mean: float = 10.0, sd: float = 0.5) -> FloatArray:
    """Stationary AR(1) with marginal sd ``sd``."""
    e = np.random.default_rng(seed).standard_normal(n)
    e[0] /= math.sqrt(1.0 - phi * phi)
    x = np.asarray(lfilter([1.0], [1.0, -phi], e), dtype=np.float64)
    return mean + sd * math.sqrt(1.0 - phi * phi) * x


def _t(v: VariantStats) -> float:
    return float(stats.t.ppf((1.0 + v.ci.confidence) / 2.0, v.n - 1))


# ------------------------------------------------------------------- known answers


def test_ar1_interval_is_runs_corrected_interval_and_wider_than_plain() -> None:
    x = _ar1(3, 2000, 0.8)
    ref = subsession_interval(x, correct_residual=True)
    plain_ref = subsession_interval(x, correct_residual=False)
    assert ref is not None and plain_ref is not None
    v = analyze_variant(x)  # the default corrects
    plain = analyze_variant(x, correct_residual=False)
    # exactly the interval `assay run` reports for these samples
    assert (v.ci.mean, v.ci.low, v.ci.high, v.ci.half_width) == (
        ref[0].mean,
        ref[0].low,
        ref[0].high,
        ref[0].half_width,
    )
    assert (plain.ci.low, plain.ci.high) == (plain_ref[0].low, plain_ref[0].high)
    assert v.subsession_size == plain.subsession_size == ref[1].size > 1
    assert v.n == plain.n
    # strongly correlated: the correction matters (> 5 % wider), and by the factor reported
    assert v.residual_factor > 1.05
    assert plain.residual_factor == 1.0
    assert v.ci.half_width == pytest.approx(plain.ci.half_width * v.residual_factor, rel=1e-12)
    assert v.var == pytest.approx(plain.var * v.residual_factor**2, rel=1e-12)
    # the variance Welch's test uses gives back the interval: one standard error
    assert _t(v) * math.sqrt(v.var / v.n) == pytest.approx(v.ci.half_width, rel=1e-12)
    assert v.summary.var == v.var


def test_welch_uses_the_corrected_standard_errors() -> None:
    a = _ar1(11, 1500, 0.8, mean=10.05)
    b = _ar1(12, 1500, 0.8, mean=10.0)
    c = compare_samples(a, b)
    plain = compare_samples(a, b, correct_residual=False)
    ra = subsession_interval(a, correct_residual=True)
    rb = subsession_interval(b, correct_residual=True)
    assert ra is not None and rb is not None
    (ca, sa), (cb, sb) = ra, rb
    # reference: scipy's Welch test from the corrected intervals' std and merged counts
    ref = stats.ttest_ind_from_stats(
        ca.mean, ca.std, sa.means.size, cb.mean, cb.std, sb.means.size, equal_var=False
    )
    assert c.welch.t == pytest.approx(ref.statistic, rel=1e-9)
    assert c.welch.p_value == pytest.approx(ref.pvalue, rel=1e-9)
    assert c.welch.se == pytest.approx(
        math.hypot(ca.std / math.sqrt(ca.n), cb.std / math.sqrt(cb.n))
    )
    assert c.welch.p_value > plain.welch.p_value
    assert c.welch.diff_high - c.welch.diff_low > plain.welch.diff_high - plain.welch.diff_low
    # the effect sizes describe the merged samples' spread: untouched by the correction
    assert c.cohens_d == pytest.approx(plain.cohens_d, rel=1e-12)
    assert c.hedges_g == pytest.approx(plain.hedges_g, rel=1e-12)
    assert c.mann_whitney_p == plain.mann_whitney_p


def test_iid_without_positive_autocorrelation_is_unchanged_exactly() -> None:
    a = np.random.default_rng(1).normal(10.0, 0.5, 200)
    b = np.random.default_rng(3).normal(10.1, 0.5, 200)
    # the precondition of a no-op: no positive lag-1 autocorrelation to correct
    assert autocorrelation(a) <= 0.0 and autocorrelation(b) <= 0.0
    on, off = analyze_variant(a), analyze_variant(a, correct_residual=False)
    assert on.residual_factor == 1.0
    assert (on.mean, on.var, on.n, on.subsession_size) == (off.mean, off.var, off.n, 1)
    assert (on.ci.low, on.ci.high, on.ci.std) == (off.ci.low, off.ci.high, off.ci.std)
    c, p = compare_samples(a, b), compare_samples(a, b, correct_residual=False)
    assert (c.welch.t, c.welch.df, c.welch.p_value) == (p.welch.t, p.welch.df, p.welch.p_value)
    assert (c.welch.rel_low, c.welch.rel_high) == (p.welch.rel_low, p.welch.rel_high)


def test_summaries_are_taken_as_they_are() -> None:
    s = SummaryStats(mean=10.0, var=4.0, n=16, subsession_size=3)
    v = analyze_variant(s)
    assert (v.var, v.n, v.residual_factor) == (4.0, 16, 1.0)
    assert analyze_variant(s, correct_residual=False).ci.half_width == v.ci.half_width


def test_rank_variants_and_compare_pi_pass_the_flag_on() -> None:
    data = {"a": _ar1(21, 1000, 0.8), "b": _ar1(22, 1000, 0.8, mean=10.01)}
    for flag in (True, False):
        want = {k: analyze_variant(x, correct_residual=flag) for k, x in data.items()}
        r = rank_variants(data, correct_residual=flag)
        got = compare_pi("t", "s", "lower", data, correct_residual=flag)
        for k, w in want.items():
            assert r.variants[k].var == w.var
            assert got.ranking.variants[k].ci.half_width == w.ci.half_width
        worse = got.ranking.order[1]
        assert got.to_best[worse].a.residual_factor == want[worse].residual_factor
    assert rank_variants(data).variants["a"].residual_factor > 1.0  # default: corrected


@pytest.mark.parametrize("flag", [True, False])
def test_compare_trials_follows_the_stop_residual_correction(flag: bool) -> None:
    spec = parse_spec_data(
        {
            "study": {"name": "c"},
            "benchmark": {"command": ["true"]},
            "pi": [{"name": "t", "unit": "s"}],
            "variant": [{"name": "x"}, {"name": "y"}],
            "stop": {"residual_correction": flag, "warmup_rounds": 0},
        },
        "c.toml",
    )
    series = {"x": _ar1(31, 400, 0.8), "y": _ar1(32, 400, 0.8)}
    trials = [
        TrialRecord(
            seq=2 * k + i,
            status="ok",
            setting={"variant": v, "cycle": k},
            readings={"t": float(series[v][k])},
        )
        for k in range(400)
        for i, v in enumerate(("x", "y"))
    ]
    comp = compare_trials(spec, spec.pis[0], trials)
    for v, x in series.items():
        # corrected: with the always-valid rule's small-n merging (studies.compare)
        want = analyze_variant(
            x, correct_residual=flag, independence_alpha=INDEPENDENCE_ALPHA if flag else None
        )
        assert comp.ranking.variants[v].ci.half_width == want.ci.half_width
        assert (comp.ranking.variants[v].residual_factor > 1.0) == flag


# ------------------------------------------------------------------- properties


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(20, 600),
    phi=st.floats(-0.5, 0.95),
)
def test_correction_only_widens_and_keeps_one_standard_error(seed: int, n: int, phi: float) -> None:
    x = _ar1(seed, n, phi)
    try:
        plain = analyze_variant(x, correct_residual=False)
    except ValueError:  # no subsession size qualifies: both sides refuse alike
        with pytest.raises(ValueError):
            analyze_variant(x)
        return
    v = analyze_variant(x)
    assert (v.mean, v.n, v.subsession_size) == (plain.mean, plain.n, plain.subsession_size)
    assert v.residual_factor >= 1.0
    assert v.ci.half_width >= plain.ci.half_width
    assert v.var == pytest.approx(plain.var * v.residual_factor**2, rel=1e-12)
    assert _t(v) * math.sqrt(v.var / v.n) == pytest.approx(v.ci.half_width, rel=1e-9)
    if v.residual_factor == 1.0:
        assert (v.var, v.ci.low, v.ci.high) == (plain.var, plain.ci.low, plain.ci.high)
