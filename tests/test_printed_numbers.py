"""Numbers printed as they are (#58 item 5): an asymmetric interval as mean [low, high],
the skewness of the data beside the one corrected for, an underflowed p as p < 1e-300."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from assay.designs.run_until_ci import _skew_note
from assay.designs.sweep import _p_text
from assay.report.format import format_estimate
from assay.stats.skewed_mean import looks_log_normal, sample_skewness


def test_a_lopsided_interval_is_printed_with_its_ends() -> None:
    assert format_estimate(16583.0, 104012.0, "rows/s", 1815.0, 209838.0) == (
        "16583 [1815, 209838] rows/s"
    )
    assert format_estimate(0.02, 0.5, "s", 0.001, 1.0) == "20 [1, 1000] ms"


@given(
    st.floats(min_value=1e-3, max_value=1e6),
    st.floats(min_value=1e-6, max_value=0.5),
)
def test_a_symmetric_interval_keeps_plus_minus(mean: float, rel: float) -> None:
    half = mean * rel
    text = format_estimate(mean, half, "ops/s", mean - half, mean + half)
    assert " ± " in text and "[" not in text


def test_the_note_gives_the_datas_skewness_and_the_one_corrected_for() -> None:
    means = np.exp(np.random.default_rng(1).normal(0.0, 1.0, 200))
    own = sample_skewness(means)
    note = _skew_note(1300.0, means, looks_log_normal(means))
    assert f"skewness {own:.2g};" in note and "skewness 1.3e+03" in note
    assert "1.3e+03" not in _skew_note(own, means, True)  # the same: said once
    assert "Cox's log-normal interval" in note  # log-normal samples: it holds Cox's too


def test_an_underflowed_p_is_not_called_no_spread() -> None:
    assert _p_text(0.0, 70.3) == "p < 1e-300"
    assert "no residual spread" in _p_text(0.0, math.inf)
    assert _p_text(1e-5, 20.0) == "p = 1e-05"
