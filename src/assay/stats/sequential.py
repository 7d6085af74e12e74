"""Always-valid evidence for a difference of means: the mixture sequential t-test.

A comparison looks at its data after every cycle.  A fixed-level test asked again
and again rejects a true equality far more often than its level; an *e-value* (a
test martingale) does not: by Ville's inequality, the chance that it *ever* reaches
``1 / alpha`` under the null hypothesis is at most ``alpha``, however often and
whenever one looks (Robbins 1970; Johari et al. 2017, "Peeking at A/B tests";
Howard et al. 2021, "Time-uniform, nonparametric, nonasymptotic confidence
sequences"; Grünwald, de Heide & Koolen 2024, "Safe testing").

The e-value here is the Bayes factor of a t-statistic with a normal prior on the
standardized effect ``delta = (mean_a - mean_b) / sigma`` (Rouder et al. 2009,
"unit-information" prior; Gönen et al. 2005 for two samples)::

    E_g(t; nu, n) = (1 + n g)**-0.5
                    * ((1 + t**2 / nu) / (1 + t**2 / (nu (1 + n g))))**((nu + 1) / 2)

for a t-statistic ``t`` with ``nu`` degrees of freedom whose noncentrality is
``delta * sqrt(n)`` (``n`` the sample size of a one-sample or paired test; for two
samples ``n = 1 / (1 / n_a + 1 / n_b)``) and a prior ``delta ~ N(0, g)``.  It is the
ratio of the t-statistic's density averaged over the prior to its density under
``delta = 0``; with a scale-invariant (right Haar) prior on ``sigma`` it is a test
martingale for i.i.d. normal data with unknown variance, so it stays valid at *any*
sample size, the smallest included (Pérez-Ortiz, Lardy, de Heide & Grünwald 2024,
"E-statistics, group invariance and anytime-valid testing"; R's ``safestats``,
``eType = "eGauss"``).  Unlike the plug-in mSPRT (which takes an estimated variance
as known) it needs no large-sample approximation, so it may decide after three
cycles when the difference is large, and it cannot decide early on a lucky small
variance: at most ``(1 + n g)**(nu / 2)`` whatever ``t``.

Benchmarks compare effects from a tenth of a standard deviation to hundreds, so no
single ``g`` fits; :func:`mixture_e_value` averages the e-values of several prior
scales (an average of test martingales is one), paying ``log(len(scales))`` in
evidence for not knowing the scale in advance.

All functions are pure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = [
    "DEFAULT_SCALES",
    "critical_t",
    "log_mixture_e_value",
    "log_t_e_value",
    "mixture_e_value",
    "samples_to_decide",
]

#: Prior standard deviations of the standardized effect averaged by default: from a
#: quarter of a standard deviation (a 2 % difference at 5 % noise needs hundreds of
#: samples anyway) to 64 (a 2x difference of quiet commands: decided in 3 or 4 cycles).
DEFAULT_SCALES: tuple[float, ...] = (0.25, 1.0, 4.0, 16.0, 64.0)


def _check(nu: float, n: float) -> tuple[float, float]:
    v, m = float(nu), float(n)
    if not (math.isfinite(v) and v > 0.0):
        raise ValueError(f"nu (degrees of freedom) must be finite and > 0, got {nu!r}")
    if not (math.isfinite(m) and m > 0.0):
        raise ValueError(f"n (effective sample size) must be finite and > 0, got {n!r}")
    return v, m


def _check_scales(scales: Sequence[float]) -> list[float]:
    out = [float(s) for s in scales]
    if not out or not all(math.isfinite(s) and s > 0.0 for s in out):
        raise ValueError(f"scales must be finite values > 0 (at least one), got {scales!r}")
    return out


def log_t_e_value(t: float, nu: float, n: float, scale: float) -> float:
    """Natural log of the normal-prior t-test e-value ``E_g`` with ``g = scale**2``.

    Parameters
    ----------
    t : float
        The t-statistic; ``±inf`` (zero variance, different means) gives the cap
        ``(nu / 2) log(1 + n g)``; ``nan`` (no variance, equal means) counts as 0.
    nu : float
        Its degrees of freedom (> 0; Welch's may be fractional).
    n : float
        Effective sample size: the noncentrality is ``delta * sqrt(n)``.
    scale : float
        Prior standard deviation of the standardized effect ``delta`` (> 0).

    Returns
    -------
    float

    Examples
    --------
    At ``t = 0`` the evidence is against a difference: ``E = (1 + n g)**-0.5``.

    >>> round(math.exp(log_t_e_value(0.0, 9.0, 10.0, 1.0)), 6) == round(11**-0.5, 6)
    True
    """
    v, m = _check(nu, n)
    s = float(scale)
    if not (math.isfinite(s) and s > 0.0):
        raise ValueError(f"scale must be finite and > 0, got {scale!r}")
    a = m * s * s  # n g
    tt = float(t)
    if math.isnan(tt):
        tt = 0.0
    if math.isinf(tt):
        return 0.5 * v * math.log1p(a)
    x = (tt / math.sqrt(v)) ** 2 if abs(tt) < 1e150 else math.inf
    # log((1 + x) / (1 + x / (1 + a))); for large x in 1/x, so that t**2 never overflows
    if x <= 1.0:
        gain = math.log1p(x) - math.log1p(x / (1.0 + a))
    else:
        u = 1.0 / x
        gain = math.log1p(u) - math.log(u + 1.0 / (1.0 + a))
    return -0.5 * math.log1p(a) + 0.5 * (v + 1.0) * gain


def log_mixture_e_value(
    t: float,
    nu: float,
    n: float,
    scales: Sequence[float] = DEFAULT_SCALES,
) -> float:
    """Natural log of the equal-weight average of :func:`log_t_e_value` over ``scales``.

    Examples
    --------
    >>> one = log_t_e_value(3.0, 20.0, 21.0, 1.0)
    >>> log_mixture_e_value(3.0, 20.0, 21.0, [1.0]) == one
    True
    """
    return _LogMixture(nu, n, scales)(t)


class _LogMixture:
    """:func:`log_mixture_e_value` as a function of ``t`` at fixed ``(nu, n, scales)``:
    validated once, the prior's constants computed once (a root search evaluates it
    dozens of times; issue #17: the planning estimate ran after every cycle)."""

    def __init__(self, nu: float, n: float, scales: Sequence[float]) -> None:
        v, m = _check(nu, n)
        self.v = v
        self.half = 0.5 * (v + 1.0)
        a = [m * s * s for s in _check_scales(scales)]  # n g per scale
        self.base = [-0.5 * math.log1p(x) for x in a]
        self.shrink = [1.0 / (1.0 + x) for x in a]
        self.cap = [0.5 * v * math.log1p(x) for x in a]
        self.log_k = math.log(len(a))

    def __call__(self, t: float) -> float:
        tt = float(t)
        if math.isnan(tt):
            tt = 0.0
        if math.isinf(tt):
            logs = self.cap
        else:
            x = (tt / math.sqrt(self.v)) ** 2 if abs(tt) < 1e150 else math.inf
            # log((1 + x) / (1 + x / (1 + a))); for large x in 1/x (t**2 never overflows)
            if x <= 1.0:
                up = math.log1p(x)
                logs = [
                    b + self.half * (up - math.log1p(x * c))
                    for b, c in zip(self.base, self.shrink, strict=True)
                ]
            else:
                u = 1.0 / x
                up = math.log1p(u)
                logs = [
                    b + self.half * (up - math.log(u + c))
                    for b, c in zip(self.base, self.shrink, strict=True)
                ]
        top = max(logs)
        return top + math.log(sum(math.exp(x - top) for x in logs)) - self.log_k


def mixture_e_value(
    t: float,
    nu: float,
    n: float,
    scales: Sequence[float] = DEFAULT_SCALES,
) -> float:
    """The mixture e-value of a t-statistic (``inf`` on overflow).

    Reject equality of the means, at level ``alpha``, as soon as it reaches
    ``1 / alpha``: under i.i.d. normal data the chance that it ever does is at most
    ``alpha``, whatever the stopping rule.  ``1 / E`` is a p-value valid at any
    stopping time.

    Parameters
    ----------
    t, nu, n :
        As :func:`log_t_e_value`.
    scales : sequence of float, default DEFAULT_SCALES
        Prior standard deviations of the standardized effect, equally weighted.

    Returns
    -------
    float

    Examples
    --------
    A 2x difference after 4 cycles (5 % and 10 % noise: Welch's t ≈ 18, 4.4 df):

    >>> mixture_e_value(17.9, 4.4, 2.0) > 100
    True
    >>> mixture_e_value(0.5, 50.0, 26.0) < 1
    True
    """
    return math.exp(min(log_mixture_e_value(t, nu, n, scales), 700.0))


def critical_t(
    alpha: float,
    nu: float,
    n: float,
    scales: Sequence[float] = DEFAULT_SCALES,
    *,
    rel_tol: float = 1e-10,
) -> float:
    """The smallest ``|t|`` whose mixture e-value reaches ``1 / alpha`` (``inf`` when none).

    The e-value grows with ``|t|`` up to its cap at ``|t| = inf``; when the cap is
    below ``1 / alpha`` no t-statistic at this ``(nu, n)`` can decide (too few
    samples for any effect).

    Examples
    --------
    >>> c = critical_t(0.01, 30.0, 16.0)
    >>> abs(log_mixture_e_value(c, 30.0, 16.0) - math.log(100.0)) < 1e-9
    True
    >>> critical_t(0.01, 1.0, 1.5)
    inf
    """
    a = float(alpha)
    if not 0.0 < a < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    target = -math.log(a)
    log_e = _LogMixture(nu, n, scales)
    if log_e(math.inf) <= target:
        return math.inf
    lo, hi = 0.0, 1.0
    while log_e(hi) < target:
        lo, hi = hi, hi * 2.0
    # bisection: the e-value is increasing in |t| (scipy.optimize's Brent would take
    # fewer steps, but importing it costs a short comparison ~0.16 s)
    while hi - lo > rel_tol * hi:
        mid = 0.5 * (lo + hi)
        if log_e(mid) < target:
            lo = mid
        else:
            hi = mid
    return hi


def samples_to_decide(
    effect: float,
    alpha: float,
    n_a: int,
    n_b: int,
    *,
    power_z: float = 0.8416212335729143,
    scales: Sequence[float] = DEFAULT_SCALES,
    limit: int = 10**9,
) -> int | None:
    """More samples each side needs before the mixture e-value is likely to reach ``1/alpha``.

    A planning estimate, as Welch's sample-size estimate is: the observed
    standardized effect ``effect = t / sqrt(n)`` is taken as the truth, both sides
    grow alike, the degrees of freedom are ``n_a + n_b - 2``, and the expected
    t-statistic must exceed :func:`critical_t` by ``power_z`` (0.84: 80 % power in
    the normal approximation).

    Returns
    -------
    int or None
        Additional samples per side (at least 1); ``None`` when the effect is 0 or
        more than ``limit`` would be needed.

    Examples
    --------
    >>> samples_to_decide(1.0, 0.01, 10, 10) > samples_to_decide(2.0, 0.01, 10, 10)
    True
    >>> samples_to_decide(0.0, 0.01, 10, 10) is None
    True
    """
    d = abs(float(effect))
    if not math.isfinite(d) or d == 0.0:
        return None

    def ok(k: int) -> bool:
        na, nb = n_a + k, n_b + k
        n_eff = 1.0 / (1.0 / na + 1.0 / nb)
        # a planning estimate: the critical t to 1e-4 is plenty
        crit = critical_t(alpha, na + nb - 2, n_eff, scales, rel_tol=1e-4)
        return d * math.sqrt(n_eff) >= crit + power_z

    # start at the size the current critical t asks for (it grows only with log n; a
    # start, so to 1e-4 too: the search below finds the same size from any start)
    n_now = 1.0 / (1.0 / n_a + 1.0 / n_b)
    now = critical_t(alpha, max(n_a + n_b - 2, 1), n_now, scales, rel_tol=1e-4)
    lo, hi = 0, 1
    if math.isfinite(now):
        target = 2.0 * ((now + power_z) / d) ** 2  # both sides alike: n_eff = n / 2
        hi = max(1, math.ceil(min(target, 4.0 * limit)) - min(n_a, n_b))
    if hi > limit:
        return None
    while not ok(hi):
        lo, hi = hi, hi * 2
        if hi > limit:
            return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return max(1, hi)
