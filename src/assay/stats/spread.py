"""What hyperfine users read of a fixed number of runs: mean ± standard deviation,
median, min … max and the count.  Descriptive only: a fixed count asked for by the user
gets its summary whatever the interval says (Assay's interval, or the reason there is
none, is printed beside it).

>>> s = spread([1.0, 2.0, 3.0, 4.0])
>>> s.n, s.mean, round(s.sd, 4), s.median, s.low, s.high
(4, 2.5, 1.291, 2.5, 1.0, 4.0)
>>> spread([]).n, spread([5.0]).sd
(0, None)
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Spread:
    """Finite values' count, mean, sample standard deviation (None below two values),
    median, smallest and largest (None without values)."""

    n: int
    mean: float | None
    sd: float | None
    median: float | None
    low: float | None
    high: float | None

    def as_dict(self) -> dict[str, Any]:
        """For ``--json``: ``min``/``max`` named as hyperfine names them."""
        d = asdict(self)
        d["min"], d["max"] = d.pop("low"), d.pop("high")
        return d


def spread(values: Sequence[float]) -> Spread:
    """The :class:`Spread` of ``values`` (NaN and infinities left out)."""
    x = [float(v) for v in values if math.isfinite(v)]
    if not x:
        return Spread(0, None, None, None, None, None)
    return Spread(
        n=len(x),
        mean=statistics.fmean(x),
        sd=statistics.stdev(x) if len(x) > 1 else None,
        median=statistics.median(x),
        low=min(x),
        high=max(x),
    )
