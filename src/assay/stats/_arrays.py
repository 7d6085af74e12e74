"""Input validation shared by the statistics modules."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


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
    if not np.all(np.isfinite(a)):
        bad = int(np.count_nonzero(~np.isfinite(a)))
        raise ValueError(f"{name} must be finite: found {bad} NaN/inf value(s)")
    return a
