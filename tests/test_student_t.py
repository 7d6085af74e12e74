"""Student's t quantiles without SciPy (issue #17), against SciPy's."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

from assay.stats.student_t import EXPANSION_DF, t_quantile

DFS = st.one_of(
    st.integers(1, 60),
    st.integers(61, 2 * EXPANSION_DF),
    st.integers(2 * EXPANSION_DF, 10**8),
)


@settings(max_examples=400, deadline=None)
@given(DFS, st.floats(0.55, 1 - 1e-6))
def test_the_quantile_is_scipys(df: int, p: float) -> None:
    want = float(special.stdtrit(df, p))
    assert t_quantile(p, df) == pytest.approx(want, rel=1e-10)
    assert t_quantile(1.0 - p, df) == pytest.approx(-want, rel=1e-10)


@settings(max_examples=300, deadline=None)
@given(DFS, st.floats(1e-6, 1 - 1e-6))
def test_scipys_cdf_at_the_quantile_is_p(df: int, p: float) -> None:
    """Also near 0.5, where stdtrit itself is off (4e-4 relative at df 4, p 0.5000001)."""
    got = float(special.stdtr(df, t_quantile(p, df)))
    assert got == pytest.approx(p, rel=1e-11, abs=1e-14)


@pytest.mark.parametrize(
    ("p", "df", "want"),
    [  # a printed table's values (4 significant digits), and two closed forms
        (0.975, 1, 12.71),
        (0.975, 2, 4.303),
        (0.975, 9, 2.262),
        (0.995, 29, 2.756),
        (0.95, 120, 1.658),
        (0.9995, 5, 6.869),
    ],
)
def test_a_printed_tables_values(p: float, df: int, want: float) -> None:
    assert t_quantile(p, df) == pytest.approx(
        want, abs=0.5 * 10 ** (math.floor(math.log10(want)) - 3)
    )


def test_closed_forms_for_one_and_two_degrees_of_freedom() -> None:
    assert t_quantile(0.975, 1) == pytest.approx(math.tan(0.475 * math.pi), rel=1e-15)
    assert t_quantile(0.975, 2) == pytest.approx(0.95 / math.sqrt(2 * 0.975 * 0.025), rel=1e-15)
    assert t_quantile(0.5, 7) == 0.0


@pytest.mark.parametrize(("p", "df"), [(0.0, 3), (1.0, 3), (math.nan, 3), (0.9, 0), (0.9, 2.5)])
def test_bad_arguments_are_refused(p: float, df: int) -> None:
    with pytest.raises(ValueError):
        t_quantile(p, df)


def test_an_interval_needs_no_scipy() -> None:
    """The point of the module: ``assay run``'s intervals do not import SciPy."""
    code = (
        "import sys\n"
        "from assay.stats.intervals import t_interval, required_sample_size\n"
        "t_interval([1.0, 2.0, 4.0], 0.99)\n"
        "required_sample_size(1.0, 10.0, 0.05, 0.95)\n"
        "print('scipy' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


# -- any real degrees of freedom (Welch's test) ---------------------------------------

REAL_DFS = st.one_of(st.floats(0.5, 3.0), st.floats(3.0, 200.0), st.floats(200.0, 1e5)).filter(
    lambda df: not float(df).is_integer()
)


@settings(max_examples=500, deadline=None)
@given(REAL_DFS, st.floats(-1e6, 1e6, allow_nan=False))
def test_the_tail_is_scipys(df: float, t: float) -> None:
    from assay.stats.student_t import t_cdf, t_sf

    want = float(special.stdtr(df, -t))
    got = t_sf(t, df)
    if want > 1e-290:
        assert got == pytest.approx(want, rel=1e-11, abs=1e-300)
    else:
        assert got <= 1e-280
    assert t_cdf(t, df) == pytest.approx(float(special.stdtr(df, t)), rel=1e-11, abs=1e-300)


@settings(max_examples=500, deadline=None)
@given(REAL_DFS, st.floats(0.5 + 1e-9, 1 - 1e-12))
def test_the_real_df_quantile_is_scipys(df: float, p: float) -> None:
    from assay.stats.student_t import t_ppf

    want = float(special.stdtrit(df, p))
    assert t_ppf(p, df) == pytest.approx(want, rel=1e-10, abs=1e-12)
    assert t_ppf(1.0 - p, df) == pytest.approx(-want, rel=1e-10, abs=1e-12)


def test_the_incomplete_beta_is_scipys() -> None:
    from assay.stats.student_t import regularized_beta

    for a, b, x in [(0.5, 0.5, 0.3), (2.0, 3.0, 0.4), (50.0, 0.5, 0.99), (1e4, 0.5, 0.999)]:
        assert regularized_beta(a, b, x) == pytest.approx(
            float(special.betainc(a, b, x)), rel=1e-12
        )


@settings(max_examples=500, deadline=None)
@given(
    st.floats(0.5, 1e5),
    st.floats(-30.0, 30.0),
    st.floats(-60.0, 60.0),
)
def test_the_noncentral_t_is_scipys(df: float, delta: float, t: float) -> None:
    from assay.stats.student_t import nct_cdf

    want = float(special.nctdtr(df, delta, t))
    if math.isnan(want):  # (scipy's own failures, e.g. df 1, delta 8)
        return
    # AS 243's recursion loses ~1e-11 at tens of thousands of degrees of freedom
    # (df 35163.75, delta 4, t 1.5: 1.41e-11 below scipy's value, which mpmath's
    # quadrature confirms to 1e-16); the power calculations never feel it
    assert nct_cdf(t, df, delta) == pytest.approx(want, rel=1e-9, abs=1e-10)


def test_the_noncentral_t_beyond_its_range_is_scipys() -> None:
    from assay.stats.student_t import nct_cdf

    assert nct_cdf(45.0, 10.0, 39.4) == float(special.nctdtr(10.0, 39.4, 45.0))
