"""Input validation and the few reductions the statistics modules share.

The reductions give NumPy's own numbers (``np.mean``, ``np.std``, ``np.ptp``) for a
1-D float64 array, through the ufuncs' C reductions: ``np.mean`` and friends go
through several Python frames each, and an analysis of a sequential study makes some
fifty such calls after every round (issue #17: ~0.6 ms an analysis once the caches had
gone cold during a 50 ms command).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

_sum = np.add.reduce
_max = np.maximum.reduce
_min = np.minimum.reduce
_all = np.logical_and.reduce


def finite_1d(x: npt.ArrayLike, name: str = "x") -> npt.NDArray[np.float64]:
    """``x`` as a 1-D float64 array of finite values, or a ValueError saying what is wrong.

    >>> finite_1d([1, 2.5]).tolist()
    [1.0, 2.5]
    """
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a 1-D array of real numbers ({exc})") from None
    if a.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of real numbers, got shape {a.shape}")
    if not all_finite(a):
        bad = int(np.count_nonzero(~np.isfinite(a)))
        raise ValueError(f"{name} must be finite: found {bad} NaN/inf value(s)")
    return a


def mean(a: npt.NDArray[np.float64]) -> float:
    """``np.mean(a)`` of a non-empty 1-D float64 array (the same number).

    >>> mean(np.array([1.0, 2.0, 4.0])) == float(np.mean([1.0, 2.0, 4.0]))
    True
    """
    return float(_sum(a)) / a.size


def var(a: npt.NDArray[np.float64], ddof: int = 0) -> float:
    """``np.var(a, ddof=ddof)`` of a 1-D float64 array of more than ``ddof`` values
    (the same number).

    >>> var(np.array([1.0, 2.0, 4.0]), ddof=1) == float(np.var([1.0, 2.0, 4.0], ddof=1))
    True
    """
    d = a - mean(a)
    return float(_sum(d * d)) / (a.size - ddof)


def std(a: npt.NDArray[np.float64], ddof: int = 0) -> float:
    """``np.std(a, ddof=ddof)`` (the same number), as :func:`var`.

    >>> std(np.array([1.0, 2.0, 4.0]), ddof=1) == float(np.std([1.0, 2.0, 4.0], ddof=1))
    True
    """
    return math.sqrt(var(a, ddof))


def spread(a: npt.NDArray[np.float64]) -> tuple[float, float]:
    """``np.ptp(a)`` and ``np.max(np.abs(a))`` of a non-empty 1-D float64 array.

    >>> spread(np.array([-3.0, 1.0, 2.0]))
    (5.0, 3.0)
    """
    hi, lo = float(_max(a)), float(_min(a))
    return hi - lo, max(abs(hi), abs(lo))


def all_positive(a: npt.NDArray[np.float64]) -> bool:
    """Whether every value of ``a`` is > 0 (True for an empty array, as ``np.all``).

    >>> all_positive(np.array([1.0, 2.0])), all_positive(np.array([1.0, 0.0]))
    (True, False)
    """
    return bool(_all(a > 0.0))


def all_finite(a: npt.NDArray[np.float64]) -> bool:
    """Whether every value of ``a`` is finite (``np.all(np.isfinite(a))``).

    >>> all_finite(np.array([1.0, 2.0])), all_finite(np.array([1.0, np.nan]))
    (True, False)
    """
    return bool(_all(np.isfinite(a)))


def too_large_to_analyse(x: npt.NDArray[np.float64]) -> float | None:
    """The largest magnitude in finite ``x`` where the sum of its squares overflows a
    float, else ``None``: values too large to analyse (a single one beyond ±1.3e154).
    One rule for a trial's live readings and the samples of an imported result file.

    >>> too_large_to_analyse(np.array([1e308])), too_large_to_analyse(np.array([1e150, 2.0]))
    (1e+308, None)
    """
    with np.errstate(over="ignore", invalid="ignore"):
        squares = float(np.sum(x * x))
    return None if math.isfinite(squares) else float(np.max(np.abs(x)))
