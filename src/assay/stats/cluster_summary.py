"""ELECT's cluster-wide resource summary of one trial that spans several hosts.

ELECT's artifact evaluation (FAST '24, Exp#5) summarises a cluster's resource usage as
"the 95th percentile of CPU usage, the 95th percentile of total memory overhead, total
disk I/O, and total network overhead (bidirectional)", where the CPU figure is "based
on the sum of the CPU usage of all nodes with the same timestamp", divided by the total
number of cores.  Here:

* each host's samples are put on a common clock: the grid of timestamps every
  ``step`` seconds (default: the coarsest host's median sampling interval) across the
  window all hosts watched; a host's value at a timestamp is that of its sample whose
  interval holds it (its samples are interval averages);
* CPU at a timestamp: the busy cores summed over the hosts, over their cores summed,
  in %; its 95th percentile over the timestamps;
* memory at a timestamp: the bytes in use summed over the hosts; its 95th percentile;
* disk I/O and network traffic: each host's totals over the trial, summed.

Pure: arrays in, numbers out (:mod:`assay.studies.cluster` reads the stored samples).

>>> a = HostSeries("server", "a", 100.0, np.array([1.0, 2.0]), np.array([1.0, 2.0]), 2,
...                np.array([10.0, 20.0]), 5.0, 1.0)
>>> b = HostSeries("client", "b", 100.0, np.array([1.0, 2.0]), np.array([0.0, 2.0]), 2,
...                np.array([1.0, 1.0]), 0.0, 1.0)
>>> s = cluster_summary([a, b])
>>> s.samples, s.cores, s.disk_bytes, s.network_bytes
(2, 4, 5.0, 2.0)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["ClusterSummary", "HostSeries", "by_role", "cluster_summary", "common_grid"]


@dataclass(frozen=True)
class HostSeries:
    """One host's watch during one trial.

    ``time_s``: the end of each sampling interval, in seconds from ``start`` (the epoch
    second of the watch's first read); ``busy_cores``: the cores busy in each interval
    (sum over cores of busy % / 100); ``memory_bytes``: in use in each interval;
    ``disk_bytes`` and ``network_bytes``: the totals over the trial (network: sent and
    received).
    """

    role: str
    host: str
    start: float
    time_s: np.ndarray
    busy_cores: np.ndarray
    cores: int
    memory_bytes: np.ndarray
    disk_bytes: float
    network_bytes: float

    @property
    def ends(self) -> np.ndarray:
        """Each interval's end, in epoch seconds."""
        return self.start + np.asarray(self.time_s, dtype=float)


@dataclass(frozen=True)
class ClusterSummary:
    """ELECT's four figures for a group of hosts during one trial (NaN: no common
    timestamp, e.g. no host was sampled)."""

    hosts: int
    cores: int
    samples: int  # common timestamps
    cpu_p95_percent: float
    memory_p95_bytes: float
    disk_bytes: float
    network_bytes: float


def _median_interval(h: HostSeries) -> float:
    t = np.asarray(h.time_s, dtype=float)
    return float(np.median(np.diff(np.concatenate([[0.0], t])))) if t.size else math.nan


def common_grid(hosts: Sequence[HostSeries], step: float | None = None) -> np.ndarray:
    """The timestamps (epoch s) at which every host's value is known: every ``step``
    seconds after the last host's first read, up to the first host's last sample.

    >>> h = HostSeries("r", "h", 0.0, np.array([0.5, 1.0, 1.5]), np.zeros(3), 1, np.zeros(3),
    ...                0.0, 0.0)
    >>> common_grid([h]).tolist()
    [0.5, 1.0, 1.5]
    """
    sampled = [h for h in hosts if np.size(h.time_s) > 0]
    if not sampled:
        return np.empty(0)
    lo = max(h.start for h in sampled)
    hi = min(float(h.ends[-1]) for h in sampled)
    if hi < lo:
        return np.empty(0)
    if step is None:
        step = max(_median_interval(h) for h in sampled)
    if not math.isfinite(step) or step <= 0:
        return np.array([hi])
    k = math.floor((hi - lo) / step + 1e-9)
    grid = lo + step * np.arange(1, k + 1)
    return grid if grid.size else np.array([hi])


def _at(h: HostSeries, values: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """The host's value at each timestamp: the sample whose interval holds it."""
    ends = h.ends
    k = np.searchsorted(ends, grid - 1e-9, side="left")
    return np.asarray(values, dtype=float)[np.clip(k, 0, ends.size - 1)]


def cluster_summary(hosts: Sequence[HostSeries], step: float | None = None) -> ClusterSummary:
    """ELECT's summary of ``hosts`` during one trial (see the module docstring)."""
    sampled = [h for h in hosts if np.size(h.time_s) > 0]
    grid = common_grid(sampled, step)
    cores = sum(h.cores for h in sampled)
    if grid.size and cores > 0:
        busy = np.sum([_at(h, h.busy_cores, grid) for h in sampled], axis=0)
        memory = np.sum([_at(h, h.memory_bytes, grid) for h in sampled], axis=0)
        cpu_p95 = float(np.nanpercentile(100.0 * busy / cores, 95))
        mem_p95 = float(np.nanpercentile(memory, 95))
    else:
        cpu_p95 = mem_p95 = math.nan
    return ClusterSummary(
        hosts=len(hosts),
        cores=sum(h.cores for h in hosts),
        samples=int(grid.size),
        cpu_p95_percent=cpu_p95,
        memory_p95_bytes=mem_p95,
        disk_bytes=float(sum(h.disk_bytes for h in hosts)),
        network_bytes=float(sum(h.network_bytes for h in hosts)),
    )


def by_role(
    hosts: Sequence[HostSeries], step: float | None = None
) -> tuple[ClusterSummary, dict[str, ClusterSummary]]:
    """The summary of all hosts and of each role's (in order of first appearance); one
    grid step for all of them, so the figures are on the same clock."""
    sampled = [h for h in hosts if np.size(h.time_s) > 0]
    if step is None and sampled:
        step = max(_median_interval(h) for h in sampled)
    roles = list(dict.fromkeys(h.role for h in hosts))
    return cluster_summary(hosts, step), {
        r: cluster_summary([h for h in hosts if h.role == r], step) for r in roles
    }
