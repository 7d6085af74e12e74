"""The always-valid interval of a comparison agrees with its always-valid test (#45)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.stats.compare import (
    InsufficientDataError,
    SummaryStats,
    always_valid_relative,
    compare_samples,
    pair_e_value,
)


@settings(max_examples=60, deadline=None)
@given(
    shift=st.floats(0.0, 0.3),
    noise=st.floats(0.01, 0.2),
    n=st.integers(12, 120),
    seed=st.integers(0, 2**16),
)
def test_it_excludes_zero_exactly_when_the_e_value_decides(
    shift: float, noise: float, n: int, seed: int
) -> None:
    """Fieller's set with the e-value's critical t: 0 lies outside it exactly when the
    pair's e-value reaches 1/alpha, and it holds the fixed-look interval (a 5% gap
    left undecided with a 95% CI that excluded zero: the report had only that one)."""
    rng = np.random.default_rng(seed)
    a = rng.normal(1.0 + shift, noise, n)
    b = rng.normal(1.0, noise, n)
    try:
        comp = compare_samples(a, b)
    except InsufficientDataError:  # (samples that look autocorrelated: no comparison)
        return
    low, high = always_valid_relative(comp, 0.01)
    decided = pair_e_value(comp) >= 100.0
    e_margin = abs(math.log(pair_e_value(comp)) - math.log(100.0))
    if e_margin > 1e-3:  # (at the boundary itself the bisection's tolerance decides)
        assert (not low <= 0.0 <= high) == decided
    if math.isfinite(low) and math.isfinite(comp.welch.rel_low):
        assert low <= comp.welch.rel_low and comp.welch.rel_high <= high


def test_a_few_samples_give_no_bounds() -> None:
    comp = compare_samples(SummaryStats(1.1, 0.01, 2), SummaryStats(1.0, 0.01, 2))
    assert always_valid_relative(comp, 0.01) == (-math.inf, math.inf)


def test_an_undecided_pair_whose_fixed_look_ci_excludes_zero_says_which_interval_governs() -> None:
    """Issue #45: `sleep 0.0100` vs `sleep 0.0105` spent its 1,000 cycles undecided while
    the difference's CI excluded zero.  The decision names both intervals; the
    always-valid one (the stopping rule's) includes zero and governs."""
    from assay.designs.compare import compare_decision
    from assay.stats.compare import rank_variants

    found = None
    for seed in range(200):
        rng = np.random.default_rng(seed)
        r = rank_variants({"a": rng.normal(1.0, 0.1, 40), "b": rng.normal(1.05, 0.1, 40)})
        pair = r.pairs[0]
        comp = pair.comparison
        assert comp is not None
        if pair_e_value(comp) < 100.0 and (comp.welch.rel_high < 0 or comp.welch.rel_low > 0):
            found = r
            break
    assert found is not None, "no seed gave a fixed-look CI that excludes zero, undecided"
    d = compare_decision(found, None, 40, max_rounds=40)
    assert not d.decided
    assert "b vs a: the fixed-look 95% CI" in d.reason
    assert "the always-valid 99% interval [" in d.reason and "governs" in d.reason
    low = float(d.reason.split("the always-valid 99% interval [")[1].split("%")[0])
    assert low < 0.0  # it includes zero, as the undecided verdict says
