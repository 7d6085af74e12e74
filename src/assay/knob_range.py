"""The range of a numeric knob: what makes ``min`` and ``max`` unusable.

Pure and free of imports, so that the study file's validation (:mod:`assay.spec`) and
the knob designs (:mod:`assay.designs.knobs`) share one check.
"""

from __future__ import annotations

import math

#: Integer knobs are sampled and tuned as 64-bit integers (NumPy, Optuna's samplers).
INT_KNOB_MIN, INT_KNOB_MAX = -(2**63), 2**63 - 1


def range_problem(low: float, high: float, *, integer: bool, log: bool) -> str | None:
    """What makes ``[low, high]`` unusable as a numeric knob's range (in the study file's
    words, ``min`` and ``max``), or ``None``.

    Sampling and tuning take positions within ``max - min``, so that span must be a
    finite float: ``-1e308 … 1e308`` spans 2e308, infinity, and every sample would be
    NaN or infinite.

    >>> range_problem(-1e308, 1e308, integer=False, log=False)
    "'max' - 'min' = 1e+308 - -1e+308 overflows a float: narrow the range"
    >>> range_problem(1e-300, 1e300, integer=False, log=True) is None
    True
    """
    if not (math.isfinite(low) and math.isfinite(high)):
        return f"'min' and 'max' must be finite numbers, got {low:g}, {high:g}"
    if not low < high:
        return f"'min' ({low:g}) must be less than 'max' ({high:g})"
    if log and low <= 0:
        return f"'log = true' needs 'min' > 0, got {low:g}"
    if integer and not (low >= INT_KNOB_MIN and high <= INT_KNOB_MAX):
        return (
            f"an int knob's 'min' and 'max' must be 64-bit integers "
            f"(within ±9.2e18), got {low:g}, {high:g}"
        )
    if not math.isfinite(high - low):
        return f"'max' - 'min' = {high:g} - {low:g} overflows a float: narrow the range"
    return None
