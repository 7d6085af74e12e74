"""Quantiles of Student's t with an integer number of degrees of freedom, without SciPy.

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


def _cornish_fisher(z: float, nu: int) -> float:
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
