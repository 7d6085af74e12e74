"""How much of the spread of setting means is not measurement noise: the R² ceiling.

A sweep measures each setting ``k`` times; the repetitions of one setting disagree by
the measurement noise, and the setting means carry ``1/k`` of it.  The share of the
variance of the setting means that is *not* noise is the reliability of a mean of
``k`` repetitions, ICC(1,k) in Shrout & Fleiss (1979) and McGraw & Wong (1996):
``1 - MSW / MSB`` from the one-way ANOVA over the settings (MSB between settings, MSW
within).  No model of the settings can predict held-out setting means with an R²
above it (to within sampling error): it is the ceiling the sweep's R² target is held
against.  Its interval is McGraw & Wong's, from the F distribution:
``1 - 1/F_L`` and ``1 - 1/F_U`` with ``F_L = F / F(1-a/2; df1, df2)`` and
``F_U = F * F(1-a/2; df2, df1)``.

>>> r = mean_reliability([0, 0, 1, 1, 2, 2], [1.0, 1.2, 5.0, 5.1, 9.0, 8.8])
>>> round(r.estimate, 4)
0.9995
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class Reliability:
    """ICC(1,k) of the setting means, its interval, and the one-way ANOVA behind it."""

    estimate: float
    low: float
    high: float
    confidence: float
    f: float
    df_between: int
    df_within: int


def mean_reliability(
    groups: Sequence[int] | npt.NDArray[np.int64],
    values: Sequence[float] | npt.NDArray[np.float64],
    confidence: float = 0.95,
) -> Reliability | None:
    """The reliability of the group means of ``values`` (``groups[i]`` is row ``i``'s
    setting); None with fewer than two groups, no group with two finite values, or no
    spread at all.  Unequal group sizes use the one-way ANOVA as it is (the estimate
    is then that of a mean of about the average group size)."""
    from scipy import special  # the F quantiles; not before a sweep needs them

    g = np.asarray(groups, dtype=np.int64)
    y = np.asarray(values, dtype=float)
    ok = np.isfinite(y)
    g, y = g[ok], y[ok]
    if g.size == 0:
        return None
    _, g = np.unique(g, return_inverse=True)
    k = int(g.max()) + 1
    n = np.bincount(g, minlength=k).astype(float)
    sums = np.bincount(g, weights=y, minlength=k)
    means = sums / n
    df_between, df_within = k - 1, int(y.size) - k
    if df_between < 1 or df_within < 1:
        return None
    grand = float(y.mean())
    ssb = float(np.sum(n * (means - grand) ** 2))
    ssw = float(np.sum((y - means[g]) ** 2))
    msb, msw = ssb / df_between, ssw / df_within
    if msb <= 0:
        return None
    if msw <= 0:  # repetitions agree exactly: nothing is noise
        return Reliability(1.0, 1.0, 1.0, confidence, math.inf, df_between, df_within)
    f = msb / msw
    q = 0.5 + confidence / 2
    f_low = f / float(special.fdtri(df_between, df_within, q))
    f_high = f * float(special.fdtri(df_within, df_between, q))
    return Reliability(
        1.0 - 1.0 / f,
        1.0 - 1.0 / f_low,
        1.0 - 1.0 / f_high,
        confidence,
        f,
        df_between,
        df_within,
    )
