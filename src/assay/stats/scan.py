"""The trend of a parameter scan: how the mean moves with a numeric parameter.

Each scanned value has a mean and its standard error (after subsession merging, as
the comparison uses them).  The trend is a weighted least-squares line through the
means (weights 1/se²) against the value (``linear``) or its logarithm (``log``: a
constant change per doubling).  While the line fits the means within their errors
(the weighted residual sum, chi² with k-2 degrees of freedom, at p > 0.05) the slope's
interval is the normal one from the errors; otherwise the errors are scaled by the
residual scatter (the Birge ratio) and the interval is Student's with k-2 degrees of
freedom, so a curve that is not a line gets a wide interval, not a false precise one.
The linear model is kept when it fits; else the log one when it fits; else the one
with the smaller residual sum (a line rejected by chance, 5% of the time, may so be
reported on the log scale: the linear slope's coverage is 92-96% at 3-8 values,
tests/test_scan.py).  When the line does not fit, the knee (or turning point), if
there is one, is Algorithm 3 of the sweep
(:func:`assay.stats.trends.find_important_point`) on the means.

>>> fit = fit_trend([1, 2, 3, 4], [11.0, 21.0, 31.0, 41.0], [0.1, 0.1, 0.1, 0.1])
>>> fit.model, round(fit.slope, 6), round(fit.intercept, 6), fit.fits
('linear', 10.0, 1.0, True)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

Model = Literal["linear", "log"]

#: Below this p-value of the residual chi², the line does not fit the means.
LACK_OF_FIT_ALPHA = 0.05


@dataclass(frozen=True)
class TrendFit:
    """A fitted trend: ``mean ≈ intercept + slope · x`` (``x`` the value, or its natural
    log for ``log``) with the slope's CI; ``per`` says what the slope is per."""

    model: Model
    slope: float
    low: float
    high: float
    intercept: float
    confidence: float
    r2: float  # weighted R² of the means
    lack_of_fit_p: float  # the residual chi²'s p-value (nan with two values)
    fits: bool  # the line fits the means within their errors
    knee: tuple[str, float] | None  # ("knee" | "turning", value)

    @property
    def per(self) -> str:
        return "per unit" if self.model == "linear" else "per doubling"

    @property
    def step(self) -> tuple[float, float, float]:
        """The slope and its CI per unit (linear) or per doubling (log)."""
        k = 1.0 if self.model == "linear" else math.log(2.0)
        return self.slope * k, self.low * k, self.high * k

    def as_dict(self) -> dict[str, Any]:
        slope, low, high = self.step
        return {
            "model": self.model,
            "per": self.per,
            "slope": slope,
            "low": low,
            "high": high,
            "intercept": self.intercept,
            "confidence": self.confidence,
            "r2": self.r2,
            "lack_of_fit_p": self.lack_of_fit_p,
            "fits": self.fits,
            "knee": None if self.knee is None else {"kind": self.knee[0], "at": self.knee[1]},
        }


def _wls(
    x: np.ndarray[Any, Any], y: np.ndarray[Any, Any], w: np.ndarray[Any, Any]
) -> tuple[float, float, float, float, float]:
    """Slope, intercept, the slope's variance (from the weights), chi², weighted R²."""
    sw = float(w.sum())
    xm, ym = float((w * x).sum()) / sw, float((w * y).sum()) / sw
    sxx = float((w * (x - xm) ** 2).sum())
    slope = float((w * (x - xm) * (y - ym)).sum()) / sxx
    intercept = ym - slope * xm
    chi2 = float((w * (y - intercept - slope * x) ** 2).sum())
    total = float((w * (y - ym) ** 2).sum())
    r2 = 1.0 - chi2 / total if total > 0 else 1.0
    return slope, intercept, 1.0 / sxx, chi2, r2


def fit_trend(
    values: Sequence[float],
    means: Sequence[float],
    errors: Sequence[float],
    confidence: float = 0.95,
) -> TrendFit | None:
    """The trend of ``means`` (standard errors ``errors``) over ``values``; None with
    fewer than two distinct values or without finite, positive errors."""
    from scipy import special  # the interval's quantiles; not before a report needs them

    x = np.asarray(values, dtype=float)
    y = np.asarray(means, dtype=float)
    se = np.asarray(errors, dtype=float)
    usable = np.isfinite(x) & np.isfinite(y) & np.isfinite(se) & (se > 0)
    x, y, se = x[usable], y[usable], se[usable]
    if np.unique(x).size < 2:
        return None
    w = 1.0 / se**2
    dof = x.size - 2
    fitted: list[tuple[Model, float, float, float, float, float, float]] = []
    candidates: list[tuple[Model, Any]] = [("linear", x)]
    candidates.append(("log", np.log(x) if np.all(x > 0) else None))
    for name, xs in candidates:
        if xs is None:
            continue
        slope, intercept, var, chi2, r2 = _wls(xs, y, w)
        p = float(special.chdtrc(dof, chi2)) if dof > 0 else math.nan
        fitted.append((name, slope, intercept, var, chi2, r2, p))
        if not p < LACK_OF_FIT_ALPHA:
            break  # the line fits (the linear one is tried first): no model is chosen
    name, slope, intercept, var, chi2, r2, p = (
        fitted[-1] if not fitted[-1][6] < LACK_OF_FIT_ALPHA else min(fitted, key=lambda f: f[4])
    )
    fits = not (p < LACK_OF_FIT_ALPHA)
    if fits:
        quantile = float(special.ndtri(0.5 + confidence / 2))
    else:  # the scatter is larger than the errors say: scale them by it
        var *= chi2 / dof
        quantile = float(special.stdtrit(dof, 0.5 + confidence / 2))
    half = quantile * math.sqrt(var)
    return TrendFit(
        model=name,
        slope=slope,
        low=slope - half,
        high=slope + half,
        intercept=intercept,
        confidence=confidence,
        r2=r2,
        lack_of_fit_p=p,
        fits=fits,
        knee=None if fits else _knee(x, y),  # a line that fits has no knee
    )


def _knee(x: np.ndarray[Any, Any], y: np.ndarray[Any, Any]) -> tuple[str, float] | None:
    from assay.stats.trends import find_important_point  # kneed: only here

    found = find_important_point(x, y)
    return None if found is None else (found[0], found[1])
