"""A decision that survives drift: two runs compared by the ranges of their block means.

Where a run's readings give no valid interval for their mean (the level moved, the
autocorrelation does not merge away), Assay still knows a bound that holds whatever the
drift: the run's mean lies between its lowest and its highest block mean
(:func:`assay.stats.validity.block_range`).  Two runs then differ beyond a threshold
with confidence when even those ranges are apart: every block of the candidate is
slower than every block of the baseline by more than the threshold.  The conservative
interval of the ratio is ``[min(c) / max(b), max(c) / min(b)]`` of the block means
``c`` and ``b``.

Why it holds: when the two runs measure the same thing and their blocks are
exchangeable, every arrangement of the ``2k`` block means is equally likely, and
complete separation (all ``k`` of one run above all ``k`` of the other) has
probability ``2 / C(2k, k)``, 1.1e-5 for 10 blocks each.  Readings correlated within a
run make the blocks of one run cluster, so that rate grows (at AR(1) 0.8 and 3 readings
a block, to 0.15-0.45%; at 0.9, 3.4%; bench/RESULTS.md, #58); the margin from 1e-5 up to the
5% of a 95% gate is what the 10 blocks buy.  A drift that is the same in both runs
only widens the ranges (more conservative).  What no within-run rule can see is a
level that moved *between* the runs and not within them; a gate run on a machine that
changed is always exposed to that.

>>> c = [4.0, 4.2, 3.9, 4.4, 4.1, 3.8, 4.3, 4.0, 4.2, 4.1]
>>> b = [1.0, 1.3, 0.9, 1.1, 1.2, 1.0, 1.5, 1.1, 1.0, 0.9]
>>> r = block_ratio_bound(c, b)
>>> round(r.low, 2), round(r.high, 2), r.blocks
(1.53, 3.89, 10)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from assay.stats._arrays import finite_1d

FloatArray = npt.NDArray[np.float64]

__all__ = [
    "DRIFT_BLOCKS",
    "FIRST_LOOK",
    "MIN_PER_BLOCK",
    "RatioBound",
    "block_means",
    "block_ratio_bound",
    "look_prefix",
    "separation_rate",
]

#: Blocks per run of the drift-surviving decision.
DRIFT_BLOCKS = 10
#: Readings a block needs at least: fewer make block means as noisy as the readings,
#: and correlated readings make neighbouring blocks agree (the rate above grows).
MIN_PER_BLOCK = 3


def block_means(
    samples: npt.ArrayLike,
    blocks: int = DRIFT_BLOCKS,
    *,
    harmonic: bool = False,
    min_per_block: int = MIN_PER_BLOCK,
) -> FloatArray | None:
    """The means of ``blocks`` consecutive, (near) equal blocks of ``samples``, in order;
    None with fewer than ``min_per_block`` samples a block (or, ``harmonic``: a reading
    that is not positive).  ``harmonic``: the samples are rates over equal work, and the
    means are harmonic.

    >>> block_means([1.0, 1.2, 1.0, 1.2, 2.0, 2.2, 2.0, 2.2], 4, min_per_block=2).tolist()
    [1.1, 1.1, 2.1, 2.1]
    >>> block_means([1.0, 2.0, 3.0], 2) is None
    True
    """
    z = finite_1d(samples)
    if blocks < 1 or z.size < min_per_block * blocks:
        return None
    if harmonic:
        if not bool(np.all(z > 0)):
            return None
        z = 1.0 / z
    # np.array_split's blocks (the first n % blocks one longer), summed in one call
    size, extra = divmod(z.size, blocks)
    lengths = np.full(blocks, size)
    lengths[:extra] += 1
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    with np.errstate(over="ignore", invalid="ignore"):  # near float's limits: inf, said
        means: FloatArray = np.add.reduceat(z, starts) / lengths
    return np.reciprocal(means) if harmonic else means


#: A study that asks after every cycle (``assay compare``) looks at the bound only
#: when a variant's samples reach FIRST_LOOK, then each LOOK_GROWTH times more: asked
#: at every cycle from 30 to 300 samples, A/A pairs of AR(1) 0.8 readings fell apart
#: in 2.1% (alpha is 1%); at these looks in 0.1% (bench/RESULTS.md, #58).
FIRST_LOOK = 60
LOOK_GROWTH = 1.5


def look_prefix(n: int) -> int:
    """How many of ``n`` samples a sequential study's bound rests on: the largest look
    (FIRST_LOOK, then times LOOK_GROWTH) not beyond ``n``; 0 before the first.

    >>> [look_prefix(n) for n in (59, 60, 89, 90, 200)]
    [0, 60, 60, 90, 135]
    """
    if n < FIRST_LOOK:
        return 0
    look = FIRST_LOOK
    while int(look * LOOK_GROWTH) <= n:
        look = int(look * LOOK_GROWTH)
    return look


def separation_rate(k1: int, k2: int) -> float:
    """Probability that ``k1`` and ``k2`` exchangeable values fall apart completely (all
    of one group above all of the other), ``2 / C(k1 + k2, k1)``.

    >>> f"{separation_rate(10, 10):.2g}", round(separation_rate(3, 3), 2)
    ('1.1e-05', 0.1)
    """
    return 2.0 / math.comb(k1 + k2, k1)


@dataclass(frozen=True)
class RatioBound:
    """The ratio of two runs' means, ``candidate / baseline - 1``, with the conservative
    interval of their block ranges."""

    relative: float  # mean(c) / mean(b) - 1
    low: float  # min(c) / max(b) - 1
    high: float  # max(c) / min(b) - 1
    blocks: int  # block means per run (the fewer of the two)
    error_rate: float  # separation_rate of the blocks: the rate for exchangeable blocks

    def words(self) -> str:
        """How the bound was made, for a verdict's text."""
        return f"the range of {self.blocks} block means of each run, which holds whatever the drift"


def block_ratio_bound(
    candidate_blocks: Sequence[float] | FloatArray,
    baseline_blocks: Sequence[float] | FloatArray,
) -> RatioBound | None:
    """The conservative interval of ``candidate / baseline - 1`` from the two runs' block
    means (see the module); None when either has fewer than two, or a block mean is not
    positive and finite (a ratio of such means says nothing).

    >>> round(block_ratio_bound([2.0, 2.2], [1.0, 1.1]).low, 3)
    0.818
    >>> block_ratio_bound([2.0], [1.0, 1.1]) is None
    True
    """
    c = np.asarray(candidate_blocks, dtype=np.float64)
    b = np.asarray(baseline_blocks, dtype=np.float64)
    if c.ndim != 1 or b.ndim != 1 or c.size < 2 or b.size < 2:
        return None
    both = np.concatenate([c, b])
    if not (bool(np.all(np.isfinite(both))) and bool(np.all(both > 0))):
        return None
    return RatioBound(
        relative=float(c.mean() / b.mean() - 1.0),
        low=float(c.min() / b.max() - 1.0),
        high=float(c.max() / b.min() - 1.0),
        blocks=int(min(c.size, b.size)),
        error_rate=separation_rate(int(c.size), int(b.size)),
    )
