"""Work-per-second (WPS) linear regression (Pilot §III-A(b), eq. 4).

For workloads that only report a duration per round, Pilot models the duration
``t`` of a round with work amount ``w`` as

.. math:: t = \\alpha + w / v

where ``v`` is the stable-phase speed (work per second) and ``alpha`` absorbs the
set-up, warm-up and cool-down phases.  Ordinary least squares over rounds of
different lengths estimates both; the t-based confidence interval of the slope
``1/v`` gives a confidence interval for ``v``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from numpy.typing import ArrayLike

from assay.stats._arrays import finite_1d
from assay.stats.autocorr import optimal_subsession
from assay.stats.intervals import _check_confidence

__all__ = ["WPSFit", "fit_wps"]

FloatArray = npt.NDArray[np.float64]

# Residuals this small relative to the durations are treated as an exact fit:
# their autocorrelation is floating-point noise, so no merging is needed.
_EXACT_FIT_RTOL = 1e-12


@dataclass(frozen=True)
class WPSFit:
    """Result of a WPS regression ``t = alpha + w / v``.

    Attributes
    ----------
    alpha : float
        Intercept in seconds **per merged sample**: with a subsession size
        ``q`` the regression is run on sums of ``q`` rounds, so ``alpha`` is
        ``q`` times the per-round overhead (see :attr:`alpha_per_round`).
    v : float
        Work per second, ``1 / slope`` (``inf`` for a zero slope; negative
        for a negative slope, which means the model does not fit).
    v_low, v_high : float
        Confidence interval of ``v``: the t-based interval ``[s_lo, s_hi]`` of
        the slope, inverted (``v_low = 1/s_hi``, ``v_high = 1/s_lo``).  When
        the slope interval includes 0, ``v_high = inf`` (and ``v_low = -inf``
        as well if the slope estimate itself is not positive).
    n : int
        Number of (work, duration) pairs used after merging.
    subsession_size : int
        Number of adjacent rounds merged into each pair.
    r_squared : float
        Coefficient of determination of the merged regression.
    confidence : float
        Confidence level of the interval.

    Examples
    --------
    >>> f = WPSFit(alpha=4.0, v=500.0, v_low=450.0, v_high=560.0, n=20,
    ...            subsession_size=2, r_squared=0.99, confidence=0.95)
    >>> f.relative_half_width, f.alpha_per_round
    (0.11, 2.0)
    """

    alpha: float
    v: float
    v_low: float
    v_high: float
    n: int
    subsession_size: int
    r_squared: float
    confidence: float

    @property
    def relative_half_width(self) -> float:
        """``(v_high - v_low) / 2 / |v|``; ``inf`` when any of them is not finite."""
        if not (math.isfinite(self.v_low) and math.isfinite(self.v_high)):
            return math.inf
        if not math.isfinite(self.v) or self.v == 0.0:
            return math.inf
        return (self.v_high - self.v_low) / 2.0 / abs(self.v)

    @property
    def alpha_per_round(self) -> float:
        """Intercept per single round: ``alpha / subsession_size`` (seconds)."""
        return self.alpha / self.subsession_size


def _pair(work: ArrayLike, durations: ArrayLike) -> tuple[FloatArray, FloatArray]:
    arrays = [finite_1d(work, "work"), finite_1d(durations, "durations")]
    w, t = arrays
    if w.size != t.size:
        raise ValueError(f"work and durations must have the same length, got {w.size} and {t.size}")
    return w, t


def _block_sums(a: FloatArray, q: int) -> FloatArray:
    m = a.size // q
    return np.asarray(a[: m * q].reshape(m, q).sum(axis=1), dtype=np.float64)


def fit_wps(
    work: ArrayLike,
    durations: ArrayLike,
    confidence: float = 0.95,
    max_autocorrelation: float = 0.1,
) -> WPSFit | None:
    """Fit Pilot's WPS model ``t = alpha + w / v`` by ordinary least squares.

    Steps:

    1. A first OLS fit on all rounds gives residuals ``t_i - (a + b w_i)``.
    2. Subsession analysis (:func:`~assay.stats.autocorr.optimal_subsession`,
       at least 3 merged samples) on those **residuals** picks ``q``.  The
       residuals are what the t-based slope interval assumes to be i.i.d.;
       ``durations / work`` would instead mix in the deterministic ``alpha / w``
       term, so the order in which work amounts are scheduled (bisection or
       linear growth) would show up as spurious autocorrelation.
    3. Adjacent rounds are merged by **summing** work and durations in blocks
       of ``q`` (a trailing partial block is dropped).  Sums obey
       ``T = q alpha + W / v``: the slope is unchanged and the intercept is per
       merged sample.
    4. OLS on the merged pairs (:func:`scipy.stats.linregress`); the slope
       interval is ``slope ± t_{(1+c)/2, n-2} * stderr``, inverted for ``v``.

    Parameters
    ----------
    work : array_like
        Work amount of each round, in round order.
    durations : array_like
        Duration of each round in seconds, same length.
    confidence : float, default 0.95
        Confidence level in (0, 1).
    max_autocorrelation : float, default 0.1
        Largest acceptable ``|r1|`` of the merged residuals.

    Returns
    -------
    WPSFit or None
        ``None`` when there are fewer than 3 pairs, all work amounts are equal
        (before or after merging), or no subsession size brings the residual
        autocorrelation within ``max_autocorrelation`` with at least 3 merged
        pairs (Pilot rules such results out).

    Raises
    ------
    ValueError
        If inputs are not finite 1-D arrays of equal length or ``confidence``
        is not in (0, 1).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> w = 500.0 * np.arange(1, 21)
    >>> t = 2.0 + w / 500.0 + rng.normal(0.0, 0.05, w.size)
    >>> fit = fit_wps(w, t)
    >>> fit.subsession_size, fit.v_low < 500.0 < fit.v_high, round(fit.alpha_per_round, 1)
    (2, True, 2.0)
    """
    c = _check_confidence(confidence)
    limit = float(max_autocorrelation)
    if not (math.isfinite(limit) and limit >= 0.0):
        raise ValueError(
            f"max_autocorrelation must be finite and >= 0, got {max_autocorrelation!r}"
        )
    w, t = _pair(work, durations)
    if w.size < 3 or np.ptp(w) == 0.0:
        return None
    from scipy import stats  # here: SciPy takes ~0.6 s to import; not before the first trial

    first = stats.linregress(w, t)
    resid = t - (float(first.intercept) + float(first.slope) * w)
    scale = float(np.max(np.abs(t)))
    if float(np.max(np.abs(resid))) <= _EXACT_FIT_RTOL * scale:
        q = 1
    else:
        sub = optimal_subsession(resid, limit, 3)
        if sub is None:
            return None
        q = sub.size

    big_w = _block_sums(w, q)
    big_t = _block_sums(t, q)
    m = int(big_w.size)
    if m < 3 or np.ptp(big_w) == 0.0:
        return None

    fit = stats.linregress(big_w, big_t)
    slope = float(fit.slope)
    stderr = float(fit.stderr)
    tq = float(stats.t.ppf((1.0 + c) / 2.0, m - 2))
    s_lo = slope - tq * stderr
    s_hi = slope + tq * stderr

    v = 1.0 / slope if slope != 0.0 else math.inf
    if s_lo > 0.0 or s_hi < 0.0:
        v_low, v_high = 1.0 / s_hi, 1.0 / s_lo
    elif slope > 0.0:
        v_low, v_high = 1.0 / s_hi, math.inf
    else:
        v_low, v_high = -math.inf, math.inf
    r = float(fit.rvalue)
    return WPSFit(
        alpha=float(fit.intercept),
        v=v,
        v_low=v_low,
        v_high=v_high,
        n=m,
        subsession_size=q,
        r_squared=r * r,
        confidence=c,
    )
