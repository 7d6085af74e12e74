"""Skewed key choice: Zipf's law over ``n`` keys with exponent ``theta`` (YCSB's skew).

Rank ``r`` (1-based) is drawn with probability proportional to ``1 / r**theta``;
``theta = 0`` is uniform, YCSB's default skew is 0.99. Ranks are mapped to keys
through a fixed permutation ("scrambled Zipfian", as YCSB does), so that the hot
keys are spread over the table instead of sitting in its first pages.

>>> import numpy as np
>>> keys = zipf_keys(1000, 0.99, 20000, np.random.default_rng(1))
>>> int(keys.min()) >= 0 and int(keys.max()) < 1000
True
>>> counts = np.bincount(keys, minlength=1000)
>>> bool(counts.max() > 20 * np.median(counts))   # one key is far hotter than the rest
True
"""

from __future__ import annotations

import numpy as np


def zipf_probabilities(n: int, theta: float) -> np.ndarray:
    """Probability of each rank ``1..n`` under Zipf's law with exponent ``theta``.

    >>> [round(float(p), 3) for p in zipf_probabilities(3, 1.0)]
    [0.545, 0.273, 0.182]
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    if not theta >= 0:
        raise ValueError(f"theta must be >= 0, got {theta}")
    w: np.ndarray = np.arange(1, n + 1, dtype=np.float64) ** -theta
    out: np.ndarray = w / w.sum()
    return out


def zipf_keys(n: int, theta: float, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` keys in ``0..n-1`` drawn with Zipf skew ``theta`` (0: uniform)."""
    if theta == 0:
        uniform: np.ndarray = rng.integers(0, n, size=count)
        return uniform
    cdf = np.cumsum(zipf_probabilities(n, theta))
    ranks = np.searchsorted(cdf, rng.random(count) * cdf[-1], side="right")
    ranks = np.minimum(ranks, n - 1)
    # a permutation fixed by n alone: the same keys are hot in every trial
    perm = np.random.default_rng(n).permutation(n)
    keys: np.ndarray = perm[ranks]
    return keys
