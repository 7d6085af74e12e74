"""The bottleneck watch (Pilot §III-B): what the machine's components did during a trial.

While a trial runs, a background thread reads the system's counters with psutil:
CPU time per core, memory in use, bytes and busy time per disk, bytes sent and
received per network interface. When the trial ends the cumulative counters become
per-interval series (busy % per core, memory %, disk bytes/s and busy %, network
bytes/s and, where the link speed is known, utilisation %), and a summary gives the
p95 and maximum of each component. A component other than the one under test whose
p95 utilisation passes 80% may be the real bottleneck: the result says so.

The pure part (counters in, series out; series in, summary out; summaries in,
warnings and the JSON form out) is separate from the sampling side effects
(:class:`ResourceMonitor`), so it can be tested on known arrays and used on stored
samples.

Sampling interval (Pilot looks for the highest sampling rate whose overhead stays under
a threshold with Newton's method). Here the monitor's cost is measured directly as the
sampling thread's CPU time (``time.thread_time``): at start-up a few reads give the cost
of one sample, and the interval is ``cost_per_sample / (0.8 * budget)`` (budget 1% of
one core, 20% headroom), clamped to ``[min_interval, max_interval]``. After every trial
the cost per sample is measured again from the thread's CPU time during that trial
(samples taken while the benchmark runs cost more than the start-up ones: caches, a busy
machine), folded into a moving average, and the interval recomputed: a fixed-point
search instead of Newton's, since the cost is measured directly rather than inferred
from the benchmark's result. ``bench/bench_monitor.py`` measures the effect on a
benchmark's wall time.

CPU utilisation is computed from ``psutil.cpu_times(percpu=True)`` differences (the
same arithmetic as ``psutil.cpu_percent(percpu=True)``, without its process-wide
state, which any other caller would disturb): busy = total - idle - iowait.  On Linux
the counters are read from /proc directly, with psutil's arithmetic (psutil's readers
cost ~0.5 ms a read; two reads bracket every trial); elsewhere through psutil.

>>> s = series_from_counters(
...     times=np.array([0.0, 1.0]),
...     cpu_busy=np.array([[0.0, 0.0], [0.9, 0.1]]),
...     cpu_total=np.array([[0.0, 0.0], [1.0, 1.0]]),
...     memory=np.array([40.0, 50.0]),
... )
>>> [float(s["cpu.0"][0]), float(s["cpu.1"][0]), float(s["memory"][0])]
[90.0, 10.0, 50.0]
"""

from __future__ import annotations

import functools
import itertools
import math
import os
import statistics
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import psutil

from assay.execute.procfs import KeptFiles, read_bytes

Component = Literal["cpu", "memory", "disk", "network"]
COMPONENTS: tuple[Component, ...] = ("cpu", "memory", "disk", "network")
#: Pilot's rule: no component other than the one under test above 80% utilisation.
THRESHOLD_PERCENT = 80.0
#: The monitor's own CPU time may be at most this share of one core.
BUDGET = 0.01
#: The interval aims at this share of the budget (headroom for noise in the cost).
AIM = 0.8
START_INTERVAL = 0.1
#: /proc/stat counts CPU time in 10 ms ticks: shorter intervals give mostly noise.
MIN_INTERVAL = 0.05
#: A core's busy share is left out (NaN: not measurable) over a window holding less
#: than this much of its time, 4 ticks (±25%): the start and stop reads of a trial of
#: a few ms gave 0% or 100%, and a no-op's study warned of a CPU bottleneck in one
#: trial in 8 (issue #17).
MIN_CPU_WINDOW = 0.04
MAX_INTERVAL = 1.0

#: Stored series that are not per-sample values (one number each).
INTERVAL_KEY = "_interval_s"
MONITOR_CPU_KEY = "_monitor_cpu_s"
#: The wall time of the watch's start and stop around the trial (its reads and series).
WATCH_COST_KEY = "_watch_s"
TIME_KEY = "time_s"

# --------------------------------------------------------------------------- pure


def choose_interval(
    cost_per_sample: float,
    budget: float = BUDGET,
    min_interval: float = MIN_INTERVAL,
    max_interval: float = MAX_INTERVAL,
) -> float:
    """The shortest interval at which sampling costs at most ``budget`` of one core.

    It aims at 80% of the budget, so that the trial-to-trial noise of the cost stays
    under it.

    >>> choose_interval(0.0003)
    0.05
    >>> choose_interval(0.002)
    0.25
    """
    if not math.isfinite(cost_per_sample) or cost_per_sample <= 0:
        return min_interval
    return float(min(max(cost_per_sample / (AIM * budget), min_interval), max_interval))


#: A table of counters: one row per read (numbers), or a (reads, devices) array.
Counts = Sequence[Sequence[float]] | np.ndarray


def _rows(x: Counts | None, k: int) -> Sequence[Sequence[float]]:
    """``x`` as rows to index (the watch's own lists as they are, not copied)."""
    if x is None:
        return [[] for _ in range(k)]
    if isinstance(x, np.ndarray):
        rows: list[list[float]] = np.asarray(x, dtype=float).reshape(k, -1).tolist()
        return rows
    return x


def _clip(v: float, high: float = 100.0) -> float:
    """``v`` within [0, high]; NaN stays NaN (as ``np.clip``: ``max(nan, 0.0)`` is NaN)."""
    return min(max(v, 0.0), high)


def series_from_counters(
    times: Sequence[float] | np.ndarray,
    cpu_busy: Counts,
    cpu_total: Counts,
    memory: Sequence[float] | np.ndarray,
    disk_bytes: Counts | None = None,
    disk_busy_ms: Counts | None = None,
    disk_names: Sequence[str] = (),
    net_sent: Counts | None = None,
    net_recv: Counts | None = None,
    nic_names: Sequence[str] = (),
    nic_speeds_mbps: Sequence[float] = (),
) -> dict[str, np.ndarray]:
    """Cumulative counters read at ``times`` (k reads) -> k-1 per-interval series.

    ``cpu_busy``/``cpu_total`` are (k, cores) seconds (a core's busy % is NaN over an
    interval holding less than :data:`MIN_CPU_WINDOW` of its time); ``memory`` is % in
    use at each read; ``disk_*`` and ``net_*`` are (k, devices) cumulative bytes / busy ms. Keys:
    ``time_s`` (end of each interval, from the first read), ``cpu.<core>`` (busy %),
    ``memory`` (%), ``disk.<name>.bytes_per_s``, ``disk.<name>.busy`` (%),
    ``net.<nic>.sent_per_s``, ``net.<nic>.recv_per_s`` and, for a NIC with a known
    speed, ``net.<nic>.sent_util`` and ``net.<nic>.recv_util`` (%).

    Plain Python on the few reads around a trial (lists, as the watch reads them; or
    arrays): a trial's series cost ~280 µs in NumPy's small operations once the caches
    had gone cold during a 50 ms command, ~130 µs so (issue #17).
    """
    t = [float(v) for v in times]
    k = len(t)
    nan = math.nan
    dt = [b - a if b > a else nan for a, b in itertools.pairwise(t)]
    steps = range(k - 1)
    out: dict[str, list[float]] = {TIME_KEY: [v - t[0] for v in t[1:]]}
    busy, total = _rows(cpu_busy, k), _rows(cpu_total, k)
    for c in range(len(busy[0]) if k else 0):
        col = []
        for i in steps:
            spent = total[i + 1][c] - total[i][c]
            ok = spent >= MIN_CPU_WINDOW
            col.append(_clip(100.0 * (busy[i + 1][c] - busy[i][c]) / spent) if ok else nan)
        out[f"cpu.{c}"] = col
    out["memory"] = [float(v) for v in memory][1:]

    def rates(rows: Sequence[Sequence[float]], j: int) -> list[float]:
        return [(rows[i + 1][j] - rows[i][j]) / dt[i] for i in steps]

    if disk_bytes is not None and disk_busy_ms is not None:
        moved, busy_ms = _rows(disk_bytes, k), _rows(disk_busy_ms, k)
        for j, name in enumerate(disk_names):
            out[f"disk.{name}.bytes_per_s"] = [max(v, 0.0) for v in rates(moved, j)]
            out[f"disk.{name}.busy"] = [
                _clip((busy_ms[i + 1][j] - busy_ms[i][j]) / (10.0 * dt[i])) for i in steps
            ]
    if net_sent is not None and net_recv is not None:
        sent_rows, recv_rows = _rows(net_sent, k), _rows(net_recv, k)
        speeds = list(nic_speeds_mbps) + [0.0] * (len(nic_names) - len(nic_speeds_mbps))
        for j, name in enumerate(nic_names):
            sent, recv = rates(sent_rows, j), rates(recv_rows, j)
            out[f"net.{name}.sent_per_s"] = [max(v, 0.0) for v in sent]
            out[f"net.{name}.recv_per_s"] = [max(v, 0.0) for v in recv]
            if speeds[j] > 0:
                cap = speeds[j] * 1e6 / 8.0  # Mb/s -> bytes/s
                out[f"net.{name}.sent_util"] = [_clip(100.0 * v / cap) for v in sent]
                out[f"net.{name}.recv_util"] = [_clip(100.0 * v / cap) for v in recv]
    return {key: np.array(col, dtype=float) for key, col in out.items()}


@dataclass(frozen=True)
class Stat:
    """p95 and maximum of one series over a trial (NaN when it has no samples)."""

    p95: float
    max: float

    @staticmethod
    def of(x: np.ndarray) -> Stat:
        """p95 (NumPy's default, linear interpolation) and maximum of the finite values.

        Sorted once and interpolated by hand: ``np.percentile`` cost ~40 µs a call, and
        a trial summarises eight series (issue #17: a trial's own cost).

        >>> Stat.of(np.array([3.0, np.nan, 1.0, 2.0]))
        Stat(p95=2.9, max=3.0)
        """
        v = np.sort(np.asarray(x, dtype=float)[np.isfinite(x)])
        if v.size == 0:
            return Stat(math.nan, math.nan)
        h = 0.95 * (v.size - 1)
        lo = int(h)
        if lo + 1 >= v.size:
            return Stat(float(v[lo]), float(v[-1]))
        a, b, w = float(v[lo]), float(v[lo + 1]), h - lo
        # NumPy's lerp: from the nearer end, so equal neighbours give exactly their value
        p95 = a + (b - a) * w if w < 0.5 else b - (b - a) * (1 - w)
        return Stat(p95, float(v[-1]))


@dataclass(frozen=True)
class ResourceSummary:
    """What the components did during one trial.

    ``cpu`` is the busiest core at each sample (a single-threaded benchmark saturates
    one core, not the machine); ``cpu_mean`` the mean over cores (ELECT's "CPU usage");
    ``disk`` the busiest disk's busy %; ``network`` the busiest link direction's
    utilisation % (NaN when no interface reports its speed).
    """

    samples: int
    interval_s: float
    duration_s: float
    monitor_cpu_s: float
    stats: dict[str, Stat]
    disk_bytes: float
    net_bytes_sent: float
    net_bytes_recv: float
    watch_s: float = math.nan  # the watch's start and stop (stores before #17: NaN)
    # the machine's busy cores on average over the intervals every core's share is
    # known in (NaN: none, a trial shorter than MIN_CPU_WINDOW of a core's time)
    busy_cores: float = math.nan

    @property
    def monitor_cpu_per_s(self) -> float:
        return self.monitor_cpu_s / self.duration_s if self.duration_s > 0 else math.nan

    def utilisation(self) -> dict[Component, float]:
        """p95 utilisation (%) of each component; NaN where it cannot be measured."""
        return {c: self.stats[c].p95 for c in COMPONENTS}

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["monitor_cpu_per_s"] = self.monitor_cpu_per_s
        return d


def _columns(series: Mapping[str, np.ndarray], prefix: str, suffix: str, n: int) -> np.ndarray:
    cols = [
        np.asarray(v, dtype=float)
        for k, v in series.items()
        if k.startswith(prefix) and k.endswith(suffix) and np.size(v) == n
    ]
    return np.column_stack(cols) if cols else np.full((n, 0), np.nan)


def _rowmax(a: np.ndarray) -> np.ndarray:
    if a.shape[1] == 0:
        return np.full(a.shape[0], np.nan)
    with np.errstate(invalid="ignore"):
        return np.asarray(np.nanmax(np.where(np.isnan(a), -np.inf, a), axis=1), dtype=float)


def _rowmean(a: np.ndarray) -> np.ndarray:
    """The mean of each row's finite values (NaN for a row with none)."""
    ok = np.isfinite(a)
    count = ok.sum(axis=1)
    total = np.where(ok, a, 0.0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(np.where(count > 0, total / count, np.nan), dtype=float)


def summarize(series: Mapping[str, np.ndarray]) -> ResourceSummary:
    """The per-trial summary of the series from :func:`series_from_counters` (as stored)."""
    t = np.asarray(series.get(TIME_KEY, np.empty(0)), dtype=float)
    n = int(t.size)
    dt = np.diff(np.concatenate([[0.0], t])) if n else np.empty(0)
    cpu = _columns(series, "cpu.", "", n)
    comps = {
        "cpu": _rowmax(cpu),
        # over the cores with a share: near 40 ms one core may count a tick less
        "cpu_mean": _rowmean(cpu),
        "memory": np.asarray(series.get("memory", np.full(n, np.nan)), dtype=float),
        "disk": _rowmax(_columns(series, "disk.", ".busy", n)),
        "network": _rowmax(
            np.hstack(
                [
                    _columns(series, "net.", ".sent_util", n),
                    _columns(series, "net.", ".recv_util", n),
                ]
            )
        ),
    }
    disk_rate = _columns(series, "disk.", ".bytes_per_s", n).sum(axis=1)
    sent = _columns(series, "net.", ".sent_per_s", n).sum(axis=1)
    recv = _columns(series, "net.", ".recv_per_s", n).sum(axis=1)
    comps["disk_bytes_per_s"] = disk_rate
    comps["net_sent_per_s"] = sent
    comps["net_recv_per_s"] = recv
    interval = series.get(INTERVAL_KEY)
    cpu_s = series.get(MONITOR_CPU_KEY)
    watch_s = series.get(WATCH_COST_KEY)
    known = np.all(np.isfinite(cpu), axis=1) & np.isfinite(dt) & (dt > 0) if cpu.shape[1] else []
    covered = float(np.sum(dt[known])) if np.any(known) else 0.0
    busy = float(np.sum(cpu[known].sum(axis=1) / 100.0 * dt[known])) if covered else math.nan
    return ResourceSummary(
        samples=n,
        interval_s=float(interval[0]) if interval is not None and np.size(interval) else math.nan,
        duration_s=float(t[-1]) if n else 0.0,
        monitor_cpu_s=float(cpu_s[0]) if cpu_s is not None and np.size(cpu_s) else math.nan,
        stats={k: Stat.of(v) for k, v in comps.items()},
        disk_bytes=float(np.nansum(disk_rate * dt)),
        net_bytes_sent=float(np.nansum(sent * dt)),
        net_bytes_recv=float(np.nansum(recv * dt)),
        watch_s=float(watch_s[0]) if watch_s is not None and np.size(watch_s) else math.nan,
        busy_cores=busy / covered if covered else math.nan,
    )


#: Another process's use of the CPU, in cores, from which a trial counts as disturbed.
DISTURBED_CORES = 0.5


def others_cores(summary: ResourceSummary, trial_cpu_s: float | None) -> float:
    """The cores other processes kept busy during a watched trial, on average: the
    machine's busy cores less the trial's own CPU time over the window and the watch's
    (clamped at 0: the counters tick every 10 ms); NaN where the machine's share is not
    known or the trial's CPU time is not.  A server the benchmark talks to, started
    outside the trial, counts among the others.

    >>> s = ResourceSummary(3, 0.05, 0.2, 0.0, {}, 0.0, 0.0, 0.0, busy_cores=1.5)
    >>> others_cores(s, 0.1)  # the trial used half a core of the 1.5 busy
    1.0
    """
    if trial_cpu_s is None or not math.isfinite(summary.busy_cores) or summary.duration_s <= 0:
        return math.nan
    watch = summary.monitor_cpu_s if math.isfinite(summary.monitor_cpu_s) else 0.0
    return max(0.0, summary.busy_cores - (trial_cpu_s + watch) / summary.duration_s)


def interference_dict(others: Sequence[float]) -> dict[str, Any] | None:
    """How much other processes used the CPU during the watched trials (JSON
    ``resources.interference``); None when no trial's could be told. ``trials`` counts
    the watched trials whose others' share could be told, ``not_told`` the rest (a
    trial shorter than two of the watch's samples has no machine-wide share).

    >>> interference_dict([0.0, 0.1, 1.2, 0.7])["disturbed"]
    2
    """
    known = [x for x in others if math.isfinite(x)]
    if not known:
        return None
    return {
        "trials": len(known),
        "disturbed": sum(1 for x in known if x >= DISTURBED_CORES),
        "threshold_cores": DISTURBED_CORES,
        "median_cores": statistics.median(known),
        "max_cores": max(known),
        "not_told": len(others) - len(known),
    }


_WHAT = {
    "cpu": "the busiest CPU core",
    "memory": "memory in use",
    "disk": "the busiest disk's busy time",
    "network": "the busiest network link",
}


def bottleneck_warnings(
    summaries: Sequence[ResourceSummary],
    under_test: str | None,
    threshold: float = THRESHOLD_PERCENT,
    label: str = "",
    others: Sequence[float] = (),
) -> list[str]:
    """One warning per component, other than ``under_test``, whose p95 utilisation
    passed ``threshold`` in any trial; it names the component and how often.  With
    ``others`` (each summary's :func:`others_cores`), a CPU saturated in trials where
    other processes used :data:`DISTURBED_CORES` or more is put down to them."""
    out: list[str] = []
    pairs = [
        (s, others[i] if i < len(others) else math.nan)
        for i, s in enumerate(summaries)
        if s.samples > 0
    ]
    monitored = [s for s, _ in pairs]
    for comp in COMPONENTS:
        if comp == under_test:
            continue
        p95s = [s.utilisation()[comp] for s in monitored]
        over = [p for p in p95s if math.isfinite(p) and p > threshold]
        if not over:
            continue
        busy = [o for (s, o) in pairs if s.utilisation()[comp] > threshold and math.isfinite(o)]
        theirs = [o for o in busy if o >= DISTURBED_CORES]
        if comp == "cpu" and busy and len(theirs) * 2 > len(busy):
            out.append(
                f"{label}bottleneck watch: cpu above {threshold:g}% ({_WHAT[comp]}, p95 up "
                f"to {max(over):.0f}%) in {len(over)} of {len(monitored)} trials, in "
                f"{len(theirs)} of them while other processes used {DISTURBED_CORES:g} "
                f"core or more (median {statistics.median(theirs):.1f}): the machine was "
                "busy with them, not only with this benchmark; measure on a quieter "
                "machine, or see the interference line"
            )
            continue
        if under_test is None:
            hint = (
                f"if {comp} is what this benchmark measures, declare it: [benchmark] "
                f'under_test = "{comp}" (or --under-test {comp})'
            )
        else:
            hint = f"it may limit the result instead of the component under test ({under_test})"
        out.append(
            f"{label}bottleneck watch: {comp} above {threshold:g}% ({_WHAT[comp]}, p95 "
            f"up to {max(over):.0f}%) in {len(over)} of {len(monitored)} trials; {hint}"
        )
    return out


def rounds_summary(values: Sequence[float], confidence: float = 0.95) -> dict[str, Any]:
    """ELECT's round-count rule: 1 round: the value; 2-4: mean, min, max; >= 5: mean and
    its t-interval. NaN values (not measurable) are left out.

    >>> rounds_summary([3.0])
    {'rounds': 1, 'value': 3.0}
    >>> rounds_summary([1.0, 2.0, 3.0])
    {'rounds': 3, 'mean': 2.0, 'min': 1.0, 'max': 3.0}
    >>> rounds_summary([0.0, 0.0, 0.0, 0.0, 9.0])["low"]  # bytes: never below 0
    0.0
    """
    x = np.asarray([v for v in values if math.isfinite(v)], dtype=float)
    n = int(x.size)
    if n == 0:
        return {"rounds": 0}
    if n == 1:
        return {"rounds": 1, "value": float(x[0])}
    mean = float(x.mean())
    if n < 5:
        return {"rounds": n, "mean": mean, "min": float(x.min()), "max": float(x.max())}
    from assay.stats.intervals import t_interval

    ci = t_interval(x, confidence)
    # every figure here (a share, bytes, a total) is at least 0: the interval cut at 0
    # covers the mean as often as the whole one (it cannot lie below), and a byte total
    # of (-1.3e-6, 1.8e-5) GiB is no longer shown (issue #35)
    bounded = ci.low < 0.0 <= float(x.min())
    return {
        "rounds": n,
        "mean": mean,
        "low": 0.0 if bounded else ci.low,
        "high": ci.high,
        "confidence": confidence,
        "method": "t-interval over trials" + (", cut at 0" if bounded else ""),
    }


def resources_dict(
    summaries: Sequence[ResourceSummary],
    under_test: str | None,
    threshold: float = THRESHOLD_PERCENT,
    elapsed_s: float | None = None,
    others: Sequence[float] = (),
) -> dict[str, Any]:
    """The JSON ``resources`` summary: p95 CPU, p95 memory, disk and network totals (as
    in ELECT's artifact-evaluation summaries), over the monitored trials.

    ``elapsed_s``: the time from trial to trial (every trial, watched or not, and the
    gaps between them); ``watch_share`` is then the watch's whole cost (its start and
    stop around watched trials, and its sampling thread's CPU time) as a share of it."""
    s = [x for x in summaries if x.samples > 0]
    duration = sum(x.duration_s for x in s)
    cpu_s = sum(x.monitor_cpu_s for x in s if math.isfinite(x.monitor_cpu_s))
    watch_s = [x.watch_s for x in s if math.isfinite(x.watch_s)]
    share = (cpu_s + sum(watch_s)) / elapsed_s if watch_s and elapsed_s else None
    over = {
        c: sum(1 for x in s if math.isfinite(x.utilisation()[c]) and x.utilisation()[c] > threshold)
        for c in COMPONENTS
    }
    return {
        "trials": len(s),
        "samples": sum(x.samples for x in s),
        "interval_s": s[-1].interval_s if s else None,
        "monitor_cpu_per_s": cpu_s / duration if duration > 0 else None,
        "watch_share": share,
        # other processes' use of the CPU during the watched trials (others_cores)
        "interference": interference_dict(others),
        "under_test": under_test,
        "threshold_percent": threshold,
        "trials_over_threshold": over,
        "cpu_p95_percent": rounds_summary([x.stats["cpu_mean"].p95 for x in s]),
        "cpu_busiest_core_p95_percent": rounds_summary([x.stats["cpu"].p95 for x in s]),
        "memory_p95_percent": rounds_summary([x.stats["memory"].p95 for x in s]),
        "disk_busy_p95_percent": rounds_summary([x.stats["disk"].p95 for x in s]),
        "network_p95_percent": rounds_summary([x.stats["network"].p95 for x in s]),
        "disk_bytes_per_trial": rounds_summary([x.disk_bytes for x in s]),
        "network_bytes_per_trial": rounds_summary([x.net_bytes_sent + x.net_bytes_recv for x in s]),
        "disk_bytes_total": sum(x.disk_bytes for x in s),
        "network_bytes_sent_total": sum(x.net_bytes_sent for x in s),
        "network_bytes_received_total": sum(x.net_bytes_recv for x in s),
    }


# ------------------------------------------------------------------ side effects


def _whole_disks(names: Sequence[str]) -> list[str]:
    """Whole devices: those in /sys/block on Linux, without partitions, RAM disks and
    loop devices (whose I/O is counted again on the disk that holds their file)."""
    block = Path("/sys/block")
    if block.is_dir():
        whole = set(os.listdir(block))
        keep = [n for n in names if n in whole and not n.startswith(("ram", "loop"))]
        if keep:
            return keep
    return list(names)


#: One read: CPU total and busy seconds per core, memory %, bytes and busy ms per disk,
#: bytes sent and received per NIC (NaN where a device is gone).
Counters = tuple[
    list[float], list[float], float, list[float], list[float], list[float], list[float]
]


def _psutil_counters(disks: Sequence[str], nics: Sequence[str]) -> Counters:
    """One read through psutil (any platform)."""
    cpus = psutil.cpu_times(percpu=True)
    total = [sum(c) for c in cpus]
    idle = [c.idle + getattr(c, "iowait", 0.0) for c in cpus]
    mem = psutil.virtual_memory().percent
    dio = psutil.disk_io_counters(perdisk=True) or {}
    nio = psutil.net_io_counters(pernic=True)
    nan = math.nan
    return (
        total,
        [a - b for a, b in zip(total, idle, strict=True)],
        mem,
        [dio[d].read_bytes + dio[d].write_bytes if d in dio else nan for d in disks],
        [float(getattr(dio[d], "busy_time", nan)) if d in dio else nan for d in disks],
        [float(nio[n].bytes_sent) if n in nio else nan for n in nics],
        [float(nio[n].bytes_recv) if n in nio else nan for n in nics],
    )


_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_SECTOR = 512  # /proc/diskstats counts 512-byte sectors, whatever the device's


def _proc_counters(
    disks: Sequence[str], nics: Sequence[str], read: Callable[[str], bytes] = read_bytes
) -> Counters | None:
    """One read straight from Linux's /proc, with psutil's arithmetic (the same
    numbers as :func:`_psutil_counters`); None where a file is missing or not as
    expected.  psutil's readers cost 0.4-0.6 ms a read here, these ~0.1 ms: two reads
    bracket every trial, and the sampling budget buys more samples.  ``read`` reads a
    file whole (the watch's keeps its files open)."""
    try:
        total: list[float] = []
        busy: list[float] = []
        for line in read("/proc/stat").splitlines():
            if not line.startswith(b"cpu"):
                break
            if line[3:4].isdigit():
                v = [int(x) for x in line.split()[1:]]
                t = sum(v) / _TICKS
                total.append(t)
                busy.append(t - (v[3] + (v[4] if len(v) > 4 else 0)) / _TICKS)
        mem_kib: dict[bytes, int] = {}
        for line in read("/proc/meminfo").splitlines():
            key, _, rest = line.partition(b":")
            if key in (b"MemTotal", b"MemAvailable"):
                mem_kib[key] = int(rest.split()[0])
                if len(mem_kib) == 2:
                    break
        used = mem_kib[b"MemTotal"] - mem_kib[b"MemAvailable"]
        mem = round(100.0 * used / mem_kib[b"MemTotal"], 1)
        dio: dict[str, tuple[float, float]] = {}
        if disks:
            for line in read("/proc/diskstats").splitlines():
                w = line.split()
                name = w[2].decode()
                if name in disks:
                    dio[name] = (float((int(w[5]) + int(w[9])) * _SECTOR), float(w[12]))
        nio: dict[str, tuple[float, float]] = {}
        if nics:
            for line in read("/proc/net/dev").splitlines()[2:]:
                name_b, _, rest = line.rpartition(b":")
                name = name_b.strip().decode()
                if name in nics:
                    w = rest.split()
                    nio[name] = (float(w[8]), float(w[0]))
    except (OSError, ValueError, IndexError, KeyError, ZeroDivisionError):
        return None
    if not total:
        return None
    nan = math.nan
    return (
        total,
        busy,
        mem,
        [dio[d][0] if d in dio else nan for d in disks],
        [dio[d][1] if d in dio else nan for d in disks],
        [nio[n][0] if n in nio else nan for n in nics],
        [nio[n][1] if n in nio else nan for n in nics],
    )


@dataclass
class _Reads:
    times: list[float] = field(default_factory=list)
    cpu_busy: list[list[float]] = field(default_factory=list)
    cpu_total: list[list[float]] = field(default_factory=list)
    memory: list[float] = field(default_factory=list)
    disk_bytes: list[list[float]] = field(default_factory=list)
    disk_busy: list[list[float]] = field(default_factory=list)
    net_sent: list[list[float]] = field(default_factory=list)
    net_recv: list[list[float]] = field(default_factory=list)


@dataclass(frozen=True)
class MonitorSamples:
    """One trial's samples: the series (as stored) and their summary."""

    series: dict[str, np.ndarray]

    @functools.cached_property
    def summary(self) -> ResourceSummary:
        """Summarised when asked: the trial loop stores the series only."""
        return summarize(self.series)


#: A paced watch's cost is the median of its last few watched trials' (the least of
#: them let a busy machine's slower reads spend 1-5% of the time against the 1% budget;
#: the first trials, which pay NumPy's and the caches' warm-up, soon leave the window).
PACE_COSTS = 4
#: How far back a paced watch looks for the kinds of trial run since a kind's last one.
PACE_KINDS_WINDOW = 64

#: Seconds the sampling thread waits unarmed before it ends (a monitor nobody closes
#: leaves no thread behind for long).
IDLE_EXIT_S = 30.0


class ResourceMonitor:
    """Samples the system's components in a background thread between start() and stop().

    ``interval=None`` (the default) measures the cost of one sample at the first
    start() and picks the interval from the budget (:func:`choose_interval`);
    ``clock`` is the sampling thread's CPU clock (a test may pass a fake one).

    ``paced``: after a watched trial, the next trials of its kind (``key``) go
    unwatched (stop() returns empty series) until the watch's own cost (its start and
    stop, wall time, and its sampling thread's CPU time during the trial; the median of
    the last :data:`PACE_COSTS`) is at most ``budget`` of
    the time since that trial's start, shared with the other kinds run in between
    (a comparison's interleaved variants share it; a sweep's settings run one after
    the other do not), and until the watch's whole cost so far is at most ``budget``
    of the time since the first trial (the study's share, as the report states it);
    as Pilot keeps its sampling under an overhead threshold.
    A trial's reads and series cost ~0.1 ms warm
    (~0.3-0.45 ms after a trial long enough for the caches to go cold), a third of
    Assay's other work between trials (issue #17), and a trial of a few ms has no CPU
    share to give anyway. Trials of 50 ms or more are all watched, of 20 ms about
    every other one, of `true` about 1 in 40; the first of each kind always is. Off by
    default: the hosts of a cluster study watch every trial, so that each trial's hosts
    can be summed.
    """

    def __init__(
        self,
        interval: float | None = None,
        *,
        budget: float = BUDGET,
        min_interval: float = MIN_INTERVAL,
        max_interval: float = MAX_INTERVAL,
        clock: Callable[[], float] = time.thread_time,
        paced: bool = False,
    ) -> None:
        self.fixed = interval is not None
        self.paced = paced
        # paced: when each kind of trial (its key) may be watched again (monotonic), and
        # the watch cost of the last few watched trials (their least is the cost)
        self._skip_until: dict[Hashable, float] = {}
        self._costs: deque[float] = deque(maxlen=PACE_COSTS)
        self._recent: deque[Hashable] = deque(maxlen=PACE_KINDS_WINDOW)
        # paced: the watch's whole cost so far and the first trial's start (monotonic):
        # a kind's next trial waits also until that cost is within budget of the time
        # since, so that the study's share (the report's) stays under the budget (the
        # per-kind pace alone left it at 1.0-1.2% at load 4, the first watches' warm-up)
        self._spent = 0.0
        self._since: float | None = None
        self._in_trial = False  # between start() and stop()
        self._watching = False  # this trial is watched (the thread samples it)
        self._start_cost = 0.0  # wall time of the watched trial's start()
        # the sampling thread takes a trial's first read (while the command starts, on
        # another core), not start(): ~0.1 ms less of Assay's own time between trials.
        # Once a trial ended before the thread got to it, stop() takes it, and start()
        # from then on (a command of a fraction of a millisecond leaves the thread no
        # time).
        self._first_in_thread = True
        self._first_cost = 0.0  # the thread's CPU time for this trial's first read
        self._thread_first = False  # the thread took this trial's first read
        self.interval = float(interval) if interval is not None else START_INTERVAL
        self.budget = budget
        self.min_interval = min_interval
        self.max_interval = max_interval
        self.clock = clock
        self.cost_per_sample: float | None = None
        disks = psutil.disk_io_counters(perdisk=True) or {}
        self.disks = _whole_disks(sorted(disks))
        stats = psutil.net_if_stats()
        self.nics = sorted(
            n
            for n in psutil.net_io_counters(pernic=True)
            if n != "lo" and (n not in stats or stats[n].isup)
        )
        self.speeds = [float(stats[n].speed) if n in stats else 0.0 for n in self.nics]
        self._reads = _Reads()
        # one sampling thread for the monitor's life, armed by start() and disarmed by
        # stop(): starting a thread per trial cost ~2.5 ms on a loaded 2-core machine
        # (Thread.start waits until the new thread runs)
        self._lock = threading.Lock()
        # start(), stop() and close() notify the sampling thread of what they change
        self._changed = threading.Condition(self._lock)
        self._closing = False
        self._active = False
        self._generation = 0  # one per start(): a sample is kept only in its own trial
        self._armed_at = 0.0
        self._thread: threading.Thread | None = None
        self._thread_cpu = 0.0
        self._from_proc = True  # read /proc directly (Linux): a tenth of psutil's cost
        self._files = KeptFiles()  # closed with the monitor

    def calibrate(self, reads: int = 10) -> float:
        """Measure the CPU cost of one sample and choose the interval from the budget."""
        scratch = _Reads()
        c0 = self.clock()
        for _ in range(reads):
            self._read(scratch)
        self.cost_per_sample = max((self.clock() - c0) / reads, 0.0)
        if not self.fixed:
            self.interval = choose_interval(
                self.cost_per_sample, self.budget, self.min_interval, self.max_interval
            )
        return self.interval

    def _read(self, r: _Reads) -> None:
        t = time.monotonic()
        got = _proc_counters(self.disks, self.nics, self._files.read) if self._from_proc else None
        if got is None:
            self._from_proc = False  # not Linux (or /proc not as expected): psutil
            got = _psutil_counters(self.disks, self.nics)
        total, busy, mem, disk_bytes, disk_busy, sent, recv = got
        r.times.append(t)
        r.cpu_total.append(total)
        r.cpu_busy.append(busy)
        r.memory.append(mem)
        r.disk_bytes.append(disk_bytes)
        r.disk_busy.append(disk_busy)
        r.net_sent.append(sent)
        r.net_recv.append(recv)

    def _loop(self) -> None:
        """Sample every ``interval`` from the arming while armed, the trial's first read
        at once if start() left it to the thread; the first sample after it waits a
        whole interval (CPU counters tick every 10 ms: a sample right after the first
        read would be noise).  A new trial, a stop or a close wakes it (a wait for the
        next sample of a trial already over would delay the next trial's first read)."""
        generation, due = -1, 0.0
        with self._changed:  # the lock, except while waiting
            while True:
                if self._closing:
                    return
                if not self._active:
                    if not self._changed.wait_for(self._awaited, IDLE_EXIT_S):
                        self._thread = None  # idle: the next start() makes another
                        return
                    continue
                if self._generation != generation:
                    generation, due = self._generation, self._armed_at + self.interval
                    if not self._reads.times:
                        c0 = self.clock()
                        self._read(self._reads)
                        self._first_cost = self.clock() - c0
                        self._thread_first = True
                        self._thread_cpu += self._first_cost
                        due = self._reads.times[0] + self.interval
                now = time.monotonic()
                if now < due:
                    self._changed.wait(due - now)  # (woken by start, stop, close)
                    continue
                c0 = self.clock()
                self._read(self._reads)
                self._thread_cpu += self.clock() - c0
                due += self.interval

    def _awaited(self) -> bool:
        return self._active or self._closing

    def start(self, key: Hashable = None) -> None:
        """Start sampling: the sampling thread takes the first read at once (with
        ``paced``, unless this trial goes unwatched; ``key`` names the kind of trial,
        e.g. its command: each kind is paced on its own, so that interleaved variants
        are all watched)."""
        if self.cost_per_sample is None:
            self.calibrate()
        c0 = time.monotonic()
        self._in_trial = True
        self._recent.append(key)  # the last one is this trial's kind
        if self._since is None:
            self._since = c0
        due = self._skip_until.get(key)  # (none: the first of its kind, always watched)
        if due is not None and c0 < max(due, self._since + self._spent / self.budget):
            self._watching = False  # (the sampling thread stays disarmed)
            return
        self._watching = True
        with self._lock:
            self._reads = _Reads()
            self._thread_cpu = 0.0
            self._first_cost = 0.0
            self._thread_first = False
            if not self._first_in_thread:
                self._read(self._reads)
            self._generation += 1
            self._armed_at = time.monotonic()
            self._active = True
            self._changed.notify()
            self._start_cost = time.monotonic() - c0  # (a new thread's start is not)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._loop, name="assay-monitor", daemon=True
                )
                self._thread.start()

    def stop(self) -> MonitorSamples:
        """Stop sampling, take the last read and return the trial's series and summary
        (empty series for a trial that went unwatched)."""
        c0 = time.monotonic()
        if not self._in_trial:
            raise RuntimeError("ResourceMonitor.stop() without start()")
        self._in_trial = False
        if not self._watching:
            return MonitorSamples({})
        with self._lock:
            self._active = False
            self._changed.notify()
            if not self._reads.times:  # over before the thread took the first read:
                self._read(self._reads)  # taken here, and by start() from now on
                self._first_in_thread = False
            self._read(self._reads)
        r = self._reads
        in_thread = max(len(r.times) - (1 if self._thread_first else 2), 0)
        # the monitor's cost to the benchmark: the sampling thread's CPU time (its first
        # read included). start()'s read, if it made one, comes before the executor
        # starts its clock; the last read after it stops.
        cpu_s = self._thread_cpu
        series = series_from_counters(
            r.times,
            r.cpu_busy,
            r.cpu_total,
            r.memory,
            r.disk_bytes,
            r.disk_busy,
            self.disks,
            r.net_sent,
            r.net_recv,
            self.nics,
            self.speeds,
        )
        series[INTERVAL_KEY] = np.array([self.interval])
        series[MONITOR_CPU_KEY] = np.array([cpu_s])
        if in_thread and not self.fixed:
            # re-estimate the cost per sample from this trial's thread CPU time
            # (a moving average, so that one noisy trial does not swing the rate)
            observed = self._thread_cpu / in_thread
            prev = self.cost_per_sample if self.cost_per_sample is not None else observed
            self.cost_per_sample = 0.7 * prev + 0.3 * observed
            self.interval = choose_interval(
                self.cost_per_sample, self.budget, self.min_interval, self.max_interval
            )
        now = time.monotonic()
        cost = self._start_cost + now - c0 + self._first_cost
        series[WATCH_COST_KEY] = np.array([cost])
        if self.paced:
            # its whole cost, as the report counts it: the reads around the trial and
            # the sampling thread's CPU during it (on a busy machine the thread's share
            # grew and the reads alone kept it 1-5% against the budget's 1%)
            whole = cost + (cpu_s if math.isfinite(cpu_s) else 0.0)
            self._costs.append(whole)
            self._spent += whole
            if len(self._skip_until) > 1024:  # a sweep's settings: keep the waiting ones
                self._skip_until = {k: t for k, t in self._skip_until.items() if t > now}
            # each kind paced on its own, k kinds in turn: together within the budget
            wait = statistics.median(self._costs) * self._kinds_in_turn() / self.budget
            self._skip_until[self._recent[-1]] = self._armed_at + wait
        return MonitorSamples(series)

    def _kinds_in_turn(self) -> int:
        """This trial's kind and the others run since its previous trial (1 if none
        in :data:`PACE_KINDS_WINDOW`): the kinds taking turns with it."""
        *before, key = self._recent
        others: set[Hashable] = set()
        for k in reversed(before):
            if k == key:
                return 1 + len(others)
            others.add(k)
        return 1

    def __enter__(self) -> ResourceMonitor:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._in_trial:
            self.stop()

    def close(self) -> None:
        """End the sampling thread now (it also ends after IDLE_EXIT_S unarmed, and is a
        daemon: not needed at exit)."""
        with self._lock:
            self._closing = True
            self._changed.notify()
            thread, self._thread = self._thread, None
        if thread is not None:
            thread.join()
        self._files.close()
