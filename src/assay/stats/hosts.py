"""Do the hosts of a cluster give the same results?  Host as a factor.

Trials of one setting spread over several machines are only one sample when the
machines agree.  :func:`host_effect` tests that with the Kruskal–Wallis H test
(rank-based: no normality assumed, robust to the heavy tails benchmarks have) on the
readings grouped by host, and gives each host's median and count for the report.

>>> e = host_effect({"a": [10.0, 10.2, 9.9, 10.1, 10.0], "b": [12.0, 12.3, 11.9, 12.1, 12.2]})
>>> e.hosts, e.medians, e.p_value < 0.05
(('a', 'b'), (10.0, 12.1), True)
>>> host_effect({"a": [1.0, 2.0, 3.0]}) is None  # one host: nothing to compare
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from assay.stats._arrays import finite_1d


@dataclass(frozen=True)
class HostEffect:
    """The Kruskal–Wallis test of readings by host, and each host's median and count."""

    hosts: tuple[str, ...]
    n: tuple[int, ...]
    medians: tuple[float, ...]
    statistic: float
    p_value: float

    def text(self, unit: str = "") -> str:
        """``Kruskal-Wallis p = 0.0012; medians: a 10 (n=5), b 12.1 (n=5)``."""
        u = f" {unit}" if unit else ""
        medians = ", ".join(
            f"{h} {m:.4g}{u} (n={n})"
            for h, m, n in zip(self.hosts, self.medians, self.n, strict=True)
        )
        return f"Kruskal-Wallis p = {self.p_value:.2g}; medians: {medians}"


def host_effect(groups: Mapping[str, Sequence[float]], min_n: int = 2) -> HostEffect | None:
    """Kruskal–Wallis H test of the readings grouped by host.

    Hosts with fewer than ``min_n`` readings are left out; ``None`` when fewer than two
    hosts remain, or when every reading is equal (no ranks to compare).
    """
    kept = {h: finite_1d(v, f"readings of {h}") for h, v in sorted(groups.items())}
    kept = {h: v for h, v in kept.items() if v.size >= min_n}
    if len(kept) < 2:
        return None
    values = list(kept.values())
    if np.ptp(np.concatenate(values)) == 0:
        return None
    h, p = stats.kruskal(*values)
    return HostEffect(
        hosts=tuple(kept),
        n=tuple(v.size for v in values),
        medians=tuple(float(np.median(v)) for v in values),
        statistic=float(h),
        p_value=float(p),
    )
