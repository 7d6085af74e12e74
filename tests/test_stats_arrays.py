"""The shared reductions give NumPy's own numbers (issue #17: the analysis calls them
after every round, through the ufuncs instead of NumPy's Python wrappers)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from assay.stats._arrays import all_finite, all_positive, mean, spread, std, var

_values = arrays(
    np.float64,
    st.integers(min_value=2, max_value=300),
    elements=st.floats(min_value=-1e150, max_value=1e150, allow_nan=False),
)


@given(_values, st.integers(min_value=0, max_value=1))
def test_the_reductions_are_numpys_bit_for_bit(a: np.ndarray, ddof: int) -> None:
    assert mean(a) == float(np.mean(a))
    assert var(a, ddof) == float(np.var(a, ddof=ddof))
    assert std(a, ddof) == float(np.std(a, ddof=ddof))
    assert spread(a) == (float(np.ptp(a)), float(np.max(np.abs(a))))
    assert all_positive(a) == bool(np.all(a > 0.0))
    assert all_finite(a) and not all_finite(np.append(a, np.inf))
    view = a[::2]  # a strided view: the same numbers as NumPy's too
    assert mean(view) == float(np.mean(view))
