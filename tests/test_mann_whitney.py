"""The Mann–Whitney p without scipy.stats, against scipy.stats.mannwhitneyu (issue #17)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from assay.stats.mann_whitney import EXACT_CELLS, mann_whitney_p

small_ints = st.lists(st.integers(0, 6).map(float), min_size=1, max_size=25)
floats = st.lists(
    st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False), min_size=1, max_size=25
)


@settings(max_examples=300, deadline=None)
@given(a=st.one_of(small_ints, floats), b=st.one_of(small_ints, floats))
def test_p_and_u_are_scipys(a: list[float], b: list[float]) -> None:
    if np.ptp(a + b) == 0.0:
        assert mann_whitney_p(a, b) == (1.0, len(a) * len(b) / 2.0)  # scipy: nan
        return
    ref = stats.mannwhitneyu(a, b, alternative="two-sided")
    p, u = mann_whitney_p(a, b)
    assert u == float(ref.statistic)
    assert p == pytest.approx(float(ref.pvalue), rel=1e-9, abs=1e-300)


def test_the_exact_tail_of_two_separated_samples() -> None:
    """Eight against eight, every value of a below every value of b: of the C(16, 8)
    orders only this one and its mirror are as extreme."""
    p, u = mann_whitney_p(np.arange(8.0), np.arange(8.0) + 100)
    assert u == 0.0
    assert p == pytest.approx(2 / math.comb(16, 8), rel=1e-15)


def test_a_large_exact_case_is_left_to_scipy() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=8), rng.normal(0.3, 1.0, size=EXACT_CELLS // 8 + 1)
    ref = stats.mannwhitneyu(a, b, alternative="two-sided").pvalue
    assert mann_whitney_p(a, b)[0] == pytest.approx(float(ref), rel=1e-12)


@pytest.mark.parametrize("a, b", [([], [1.0]), ([1.0, math.nan], [2.0]), ([1.0], [math.inf])])
def test_bad_samples_are_refused(a: list[float], b: list[float]) -> None:
    with pytest.raises(ValueError):
        mann_whitney_p(a, b)


def test_a_mean_comparison_does_not_import_scipy_stats() -> None:
    """The final table's Mann–Whitney p cost a short comparison ~0.45 s of import."""
    import subprocess
    import sys

    code = (
        "import sys, numpy as np\n"
        "from assay.stats.compare import compare_samples\n"
        "rng = np.random.default_rng(0)\n"
        "c = compare_samples(rng.normal(1, .1, 30), rng.normal(2, .1, 30))\n"
        "print(c.mann_whitney_p < 0.01, 'scipy.stats' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "False"], out.stderr
