"""Plain values: settings and results as JSON and people want them, free of NumPy
scalars and float noise (``4.0`` and ``np.int64(4)`` are the same setting as ``4``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def plain(v: Any) -> Any:
    """A NumPy scalar as a Python one, and an integral float as an int.

    >>> plain(np.int64(4)), plain(4.0), plain(0.5), plain("wal")
    (4, 4, 0.5, 'wal')
    """
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def finite_or_none(x: float) -> float | None:
    """``x`` as a float, or ``None`` where JSON has no number for it (NaN, ±inf).

    >>> finite_or_none(np.float64(1.5)), finite_or_none(float("nan"))
    (1.5, None)
    """
    return float(x) if math.isfinite(x) else None


def short(v: Any) -> str:
    """A value as people write it: ``8`` not ``8.0``, ``0.25``, ``wal``.

    >>> short(np.float64(8.0)), short(0.25), short("wal")
    ('8', '0.25', 'wal')
    """
    v = plain(v)
    return f"{v:g}" if isinstance(v, float) else str(v)
