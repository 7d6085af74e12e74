"""Student's t without SciPy: quantiles for whole degrees of freedom, and (below) the
tail, the quantile and the noncentral CDF for any real degrees of freedom.

Every confidence interval of ``assay run`` needs a t quantile, and importing
``scipy.special`` for it took ~0.2 s of a study of a few seconds (issue #17;
bench/RESULTS.md).  With integer degrees of freedom ``nu`` the t distribution's CDF is
a finite sum (Abramowitz & Stegun 26.7.3-4): with ``theta = atan(t / sqrt(nu))``,
``A(t | nu) = P(|T| <= t)`` is ``(2/pi) (theta + sin(theta) (cos(theta) + 2/3 cos^3 +
... + (2*4*...*(nu-3)) / (1*3*...*(nu-2)) cos^(nu-2)))`` for odd ``nu`` and ``sin(theta)
(1 + 1/2 cos^2 + ... + (1*3*...*(nu-3)) / (2*4*...*(nu-2)) cos^(nu-2))`` for even
``nu``.  The quantile starts from the Cornish-Fisher expansion (A&S 26.7.5) and is
refined by Newton's method on that CDF; beyond :data:`EXPANSION_DF` degrees of freedom
the expansion alone is used (its error is then below 1e-12).  Checked against
``scipy.special.stdtrit`` (tests/test_student_t.py).
"""

from __future__ import annotations

import functools
import math
from statistics import NormalDist

import numpy as np

#: Above this many degrees of freedom the Cornish-Fisher expansion is the quantile.
EXPANSION_DF = 1000
_NEWTON_STEPS = 8


def _two_sided_cdf(t: float, nu: int) -> float:
    """``P(|T| <= t)`` for ``t >= 0`` (A&S 26.7.3-4; ``nu >= 3``)."""
    theta = math.atan(t / math.sqrt(nu))
    s, c2 = math.sin(theta), math.cos(theta) ** 2
    # each term is the one before times cos^2 and a ratio of odd and even numbers
    if nu % 2 == 1:
        k = np.arange(2, (nu - 1) // 2 + 1)
        terms = np.cumprod(c2 * (2.0 * k - 2.0) / (2.0 * k - 1.0))
        return 2.0 / math.pi * (theta + s * math.cos(theta) * (1.0 + float(terms.sum())))
    k = np.arange(1, (nu - 2) // 2 + 1)
    terms = np.cumprod(c2 * (2.0 * k - 1.0) / (2.0 * k))
    return s * (1.0 + float(terms.sum()))


def _density(t: float, nu: int) -> float:
    log = (
        math.lgamma((nu + 1) / 2.0)
        - math.lgamma(nu / 2.0)
        - 0.5 * math.log(nu * math.pi)
        - (nu + 1) / 2.0 * math.log1p(t * t / nu)
    )
    return math.exp(log)


def _cornish_fisher(z: float, nu: float) -> float:
    z2 = z * z
    g1 = (z2 + 1.0) * z / 4.0
    g2 = ((5.0 * z2 + 16.0) * z2 + 3.0) * z / 96.0
    g3 = (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) * z / 384.0
    g4 = ((((79.0 * z2 + 776.0) * z2 + 1482.0) * z2 - 1920.0) * z2 - 945.0) * z / 92160.0
    return z + (g1 + (g2 + (g3 + g4 / nu) / nu) / nu) / nu


@functools.lru_cache(maxsize=4096, typed=True)
def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile of Student's t with ``df`` (a positive integer) degrees of
    freedom: ``scipy.special.stdtrit(df, p)`` to 1e-10 relative or better for
    ``0.55 <= p <= 1 - 1e-6`` (and its mirror), and nearer ``p`` than that near 0.5,
    where ``stdtrit`` itself is off by up to 4e-4 (tests/test_student_t.py).

    >>> round(t_quantile(0.975, 9), 6)
    2.262157
    >>> t_quantile(0.5, 3)
    0.0
    >>> round(t_quantile(0.025, 1), 6)
    -12.706205

    Remembered (a pure function): an analysis after every trial asks for the same few
    quantiles again (~5-16 µs each).
    """
    if isinstance(df, bool) or not isinstance(df, int) or df < 1:
        raise ValueError(f"df must be a positive integer, got {df!r}")
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p!r}")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    if df == 1:
        return math.tan(math.pi * (p - 0.5))
    if df == 2:
        return (2.0 * p - 1.0) / math.sqrt(2.0 * p * (1.0 - p))
    z = NormalDist().inv_cdf(p)
    t = _cornish_fisher(z, df)
    if df > EXPANSION_DF:
        return t
    target = 2.0 * p - 1.0  # P(|T| <= t)
    t = max(t, 1e-300)
    for _ in range(_NEWTON_STEPS):
        step = (_two_sided_cdf(t, df) - target) / (2.0 * _density(t, df))
        # the CDF is concave for t > 0: after one step Newton stays below the root
        # and climbs to it (the halving guards a first step past 0)
        t = max(t - step, t / 2.0)
        if abs(step) <= 1e-12 * t:  # the sum's rounding is ~1e-14 of t
            break
    return t


# ------------------------------------------------------------ any real degrees of freedom
# Welch's test has real degrees of freedom (Welch-Satterthwaite): its p-value and
# quantile came from scipy.special, whose import (~0.1-0.15 s) fell between two trials
# of every comparison's first analysis (issue #17).  The t distribution's tail is a
# regularized incomplete beta function, I_x(df/2, 1/2) with x = df/(df + t^2)
# (A&S 26.7.1 with 26.5.27), here by its continued fraction (A&S 26.5.8, evaluated
# with the modified Lentz method); checked against scipy.special.stdtr and stdtrit.

_CF_MAX_STEPS = 20_000
_CF_EPS = 1e-15  # (the fraction is then within a few ulps)
_TINY = 1e-300


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b) (A&S 26.5.8), for x < (a + 1) / (a + b + 2)."""
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, _CF_MAX_STEPS):
        m2 = 2 * m
        for num in (
            m * (b - m) * x / ((a + m2 - 1.0) * (a + m2)),
            -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0)),
        ):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + num / c
            c = c if abs(c) > _TINY else _TINY
            step = d * c
            h *= step
        if abs(step - 1.0) <= _CF_EPS:
            break
    return h


def _log_inverse_beta(a: float, b: float) -> float:
    """``log(Gamma(a + b) / (Gamma(a) Gamma(b)))``.  With ``b = 1/2`` (the t
    distribution's) and a large ``a``, lgamma's differences lose ~1e-16 of lgamma(a)
    itself (2e-12 relative at a = 5,000); the series of Gamma(a + 1/2) / Gamma(a) =
    sqrt(a) (1 - 1/(8a) + 1/(128a^2) + 5/(1024a^3) - 21/(32768a^4) ...) does not
    (checked against mpmath: 1e-17 from a = 500, 2e-15 at a = 200)."""
    if b == 0.5 and a >= 200.0:
        series = 1.0 - 1.0 / (8.0 * a) + 1.0 / (128.0 * a * a) + 5.0 / (1024.0 * a**3)
        series -= 21.0 / (32768.0 * a**4)
        return 0.5 * math.log(a) + math.log(series) - _LGAMMA_HALF
    return math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)


_LGAMMA_HALF = math.lgamma(0.5)  # log(sqrt(pi))


def regularized_beta(a: float, b: float, x: float, y: float | None = None) -> float:
    """The regularized incomplete beta function I_x(a, b) (``scipy.special.betainc``),
    for a, b > 0 and 0 <= x <= 1; ``y`` is 1 - x when the caller has it more exactly.

    >>> round(regularized_beta(2.0, 3.0, 0.4), 12)  # 1 - (0.6**4 + 4 * 0.4 * 0.6**3)
    0.5248
    """
    y = 1.0 - x if y is None else y
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    log_x = math.log1p(-y) if y < 0.5 else math.log(x)
    log_y = math.log1p(-x) if x < 0.5 else math.log(y)
    log_front = _log_inverse_beta(a, b) + a * log_x + b * log_y
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(b, a, y) / b


def t_sf(t: float, df: float) -> float:
    """``P(T > t)`` for Student's t with ``df > 0`` (real) degrees of freedom:
    ``scipy.special.stdtr(df, -t)``.

    >>> round(t_sf(2.262157, 9), 6)
    0.025
    >>> t_sf(0.0, 3.7)
    0.5
    """
    if not df > 0.0:
        raise ValueError(f"df must be > 0, got {df!r}")
    if math.isnan(t):
        return math.nan
    if math.isinf(t):
        return 0.0 if t > 0 else 1.0
    t2 = t * t
    # half the two-sided tail P(|T| > |t|) = I_x(df/2, 1/2), x = df / (df + t^2)
    tail = 0.5 * regularized_beta(df / 2.0, 0.5, df / (df + t2), t2 / (df + t2))
    return tail if t >= 0.0 else 1.0 - tail


def t_cdf(t: float, df: float) -> float:
    """``P(T <= t)`` (``scipy.special.stdtr(df, t)``), any real ``df > 0``.

    >>> round(t_cdf(-2.262157, 9.0), 6)
    0.025
    """
    return t_sf(-t, df)


def _t_density(t: float, df: float) -> float:
    return math.exp(
        math.lgamma((df + 1.0) / 2.0)
        - math.lgamma(df / 2.0)
        - 0.5 * math.log(df * math.pi)
        - (df + 1.0) / 2.0 * math.log1p(t * t / df)
    )


@functools.lru_cache(maxsize=4096)
def t_ppf(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df > 0`` (real) degrees of freedom:
    ``scipy.special.stdtrit(df, p)``; :func:`t_quantile` for whole ``df``.

    >>> round(t_ppf(0.975, 9.5), 6)
    2.244137
    >>> t_ppf(0.975, 9.0) == t_quantile(0.975, 9)
    True
    """
    if not df > 0.0 or math.isinf(df):
        raise ValueError(f"df must be finite and > 0, got {df!r}")
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p!r}")
    if float(df).is_integer():
        return t_quantile(p, int(df))
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_ppf(1.0 - p, df)
    tail = 1.0 - p  # find t with P(T > t) = tail: Newton, kept within a bracket
    lo, hi = 0.0, math.inf
    t = max(_cornish_fisher(NormalDist().inv_cdf(p), df), 1e-12)  # (df < 1: far off)
    for _ in range(200):
        err = t_sf(t, df) - tail  # decreasing in t
        if err > 0.0:
            lo = t
        else:
            hi = t
        step = err / _t_density(t, df)
        nxt = t + step
        if not lo < nxt < hi:  # out of the bracket: bisect it (or grow it)
            nxt = 2.0 * t if math.isinf(hi) else (lo + hi) / 2.0
        if abs(nxt - t) <= 1e-14 * abs(nxt):
            return nxt
        t = nxt
    return t


# ------------------------------------------------------------------ the noncentral t
# The power of Welch's test (welch_required_n: the samples an undecided pair of a
# comparison needs) is a noncentral t CDF, scipy.special.nctdtr; its import cost the
# first analysis of such a comparison ~0.1 s (issue #17).  Lenth's algorithm AS 243
# (Applied Statistics 38(1), 1989): a Poisson mixture of incomplete beta functions,
# summed from the first term; beyond |delta| = 30, where it loses its accuracy (1e-2
# at 36, against 2e-11 up to 30), SciPy's.

_NCT_ERROR = 1e-13
_NCT_MAX_TERMS = 10_000
_NCT_MAX_DELTA = 30.0


def _nct_cdf_nonnegative(t: float, df: float, delta: float) -> float:
    """``P(T <= t)`` for ``t >= 0`` (AS 243)."""
    normal = NormalDist().cdf(-delta)
    x, y = t * t / (t * t + df), df / (t * t + df)
    if x == 0.0:  # t = 0, or t^2 below float's range: the value at 0
        return normal
    lam = delta * delta / 2.0
    p = 0.5 * math.exp(-lam)  # Poisson weights, for the odd and the even terms
    q = math.sqrt(2.0 / math.pi) * p * delta
    rest = 0.5 - p  # what the Poisson weights not yet summed add up to
    a, b = 0.5, 0.5 * df
    rxb = math.pow(y, b)
    log_beta = -_log_inverse_beta(b, 0.5)  # log B(1/2, b)
    x_odd = regularized_beta(a, b, x, y)
    g_odd = 2.0 * rxb * math.exp(a * math.log(x) - log_beta)
    x_even = 1.0 - rxb
    g_even = b * x * rxb
    total = p * x_odd + q * x_even
    k = 1.0
    for _ in range(_NCT_MAX_TERMS):
        a += 1.0
        x_odd -= g_odd
        x_even -= g_even
        g_odd *= x * (a + b - 1.0) / a
        g_even *= x * (a + b - 0.5) / (a + 0.5)
        p *= lam / k
        q *= lam / (k + 0.5)
        rest -= p
        k += 1.0
        total += p * x_odd + q * x_even
        if k > lam and 2.0 * rest * (x_odd - g_odd) <= _NCT_ERROR:
            break
    return min(total + normal, 1.0)


def nct_cdf(t: float, df: float, delta: float) -> float:
    """``P(T <= t)`` for the noncentral t with ``df > 0`` degrees of freedom and
    noncentrality ``delta``: ``scipy.special.nctdtr(df, delta, t)``.

    >>> round(nct_cdf(2.0, 10.0, 1.0), 6)
    0.807612
    >>> nct_cdf(1.5, 7.5, 0.0) == t_cdf(1.5, 7.5)
    True
    """
    if not df > 0.0:
        raise ValueError(f"df must be > 0, got {df!r}")
    if delta == 0.0:
        return t_cdf(t, df)
    if abs(delta) > _NCT_MAX_DELTA:
        from scipy import special

        return float(special.nctdtr(df, delta, t))
    if t >= 0.0:
        return _nct_cdf_nonnegative(t, df, delta)
    return max(1.0 - _nct_cdf_nonnegative(-t, df, -delta), 0.0)
