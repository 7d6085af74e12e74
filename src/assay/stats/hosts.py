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


@dataclass(frozen=True)
class HostBlockEffect:
    """Host as a blocking factor beside the settings: the F test of the host term in the
    additive model ``y ~ setting + host``, and each host's fitted effect, centred on the
    median host's (the lower of the middle two); ``ratios`` for log-scale readings."""

    hosts: tuple[str, ...]
    n: tuple[int, ...]
    effects: tuple[float, ...]  # each host's departure from the median host's, in y's units
    statistic: float
    df: tuple[int, int]
    p_value: float

    def ratios(self) -> tuple[float, ...]:
        """``exp`` of the effects: each host's readings as a multiple of the median
        host's, for readings analysed on the log scale."""
        return tuple(float(np.exp(e)) for e in self.effects)


def host_block_effect(
    y: Sequence[float], settings: Sequence[object], hosts: Sequence[str]
) -> HostBlockEffect | None:
    """Do the hosts differ once the settings' own effects are taken out?  The extra sum
    of squares of ``host`` added to a one-way model of the settings (each distinct
    setting its own level), tested against the additive model's residual: a two-way
    ANOVA without interaction, type II for the host term.  Unlike ranks of departures
    (Kruskal–Wallis), it uses the size of a host's departures, so a host 10x slower is
    seen in the two trials it managed while the others ran seven each (#41).

    ``None`` when fewer than two hosts share a setting (no host effect is estimable) or
    the additive model leaves no residual to test against.

    >>> e = host_block_effect(
    ...     [1.0, 1.1, 5.0, 2.0, 2.1, 6.1, 3.0, 2.9, 7.0],
    ...     ["x", "x", "x", "y", "y", "y", "z", "z", "z"],
    ...     ["a", "b", "c"] * 3,
    ... )
    >>> e.hosts, e.p_value < 0.01, round(e.effects[2], 1)  # c: 4 above the median host
    (('a', 'b', 'c'), True, 4.0)
    """
    yv = np.asarray(y, dtype=float)
    if not (len(yv) == len(settings) == len(hosts)) or not np.all(np.isfinite(yv)):
        raise ValueError("host_block_effect: y, settings and hosts must be finite and alike")
    names = tuple(sorted(set(hosts)))
    if len(names) < 2:
        return None
    keys = {s: i for i, s in enumerate(dict.fromkeys(settings))}
    setting_cols = np.zeros((len(yv), len(keys)))
    setting_cols[np.arange(len(yv)), [keys[s] for s in settings]] = 1.0
    host_cols = np.zeros((len(yv), len(names) - 1))  # the first host is the reference
    for row, h in enumerate(hosts):
        if h != names[0]:
            host_cols[row, names.index(h) - 1] = 1.0
    full = np.hstack([setting_cols, host_cols])

    def fit(x: np.ndarray) -> tuple[float, int, np.ndarray]:
        coef, _, rank, _ = np.linalg.lstsq(x, yv, rcond=None)
        resid = yv - x @ coef
        return float(resid @ resid), int(rank), coef

    rss0, rank0, _ = fit(setting_cols)
    rss1, rank1, coef = fit(full)
    df_host, df_resid = rank1 - rank0, len(yv) - rank1
    scale = max(float(np.abs(yv).max()), 1.0)
    if df_host < 1 or df_resid < 1 or rss1 <= 1e-24 * scale**2 * len(yv):
        return None
    f = ((rss0 - rss1) / df_host) / (rss1 / df_resid)
    p = float(stats.f.sf(f, df_host, df_resid))
    raw = np.concatenate([[0.0], coef[len(keys) :]])
    effects = raw - float(np.sort(raw)[(len(raw) - 1) // 2])  # of two hosts: the lower
    counts = tuple(sum(1 for h in hosts if h == name) for name in names)
    return HostBlockEffect(
        hosts=names,
        n=counts,
        effects=tuple(float(e) for e in effects),
        statistic=float(f),
        df=(df_host, df_resid),
        p_value=p,
    )
