"""A run's per-operation log (go-ycsb's raw measurements): the run's figures, its
per-second throughput, and the same figures in the windows before, during and after a
fault.

go-ycsb with ``measurementtype=raw`` writes one line per operation, ``OP,start_us,
latency_us`` (the start in microseconds since the epoch); ``TOTAL`` repeats every
successful operation, ``<OP>_ERROR`` the failed ones. From it, :func:`summarise` gives
what YCSB's report gives (count, operations/s, average, p50/p95/p99 and maximum latency;
its own percentiles, not YCSB's HDR histogram's, which round to 3 significant digits)
and :func:`windows` the throughput, latency and errors of each window: *before* (from
the first operation to the fault's time), *during* (to its end) and *after* (to the
last operation), times counted from the command's start.

>>> log = parse_oplog("operation,timestamp_us,latency_us\\nREAD,1000000,50\\n"
...                   "TOTAL,1000000,50\\nTOTAL,2500000,70\\nREAD_ERROR,2600000,9\\n")
>>> summarise(log)["TOTAL"]["count"], summarise(log)["TOTAL"]["max_us"]
(2.0, 70.0)
>>> w = windows(log, t0_s=0.0, at_s=2.0, until_s=3.0)
>>> w["before"]["count"], w["during"]["count"], w["during"]["errors"]
(1.0, 1.0, 1.0)
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from assay.targets.base import TargetError

#: one operation kind's starts and latencies (microseconds), in start order
OpLog = dict[str, tuple[np.ndarray, np.ndarray]]
WINDOWS = ("before", "during", "after")


def parse_oplog(text: str) -> OpLog:
    """The operations of go-ycsb's raw measurement file, by kind."""
    rows: dict[str, list[tuple[int, int]]] = {}
    for n, line in enumerate(text.splitlines(), start=1):
        if n == 1 and line.startswith("operation,"):
            continue
        parts = line.split(",")
        if len(parts) != 3:
            if line.strip():
                raise TargetError(f"go-ycsb's raw measurements, line {n}: expected OP,us,us")
            continue
        try:
            rows.setdefault(parts[0], []).append((int(parts[1]), int(parts[2])))
        except ValueError:
            raise TargetError(f"go-ycsb's raw measurements, line {n}: {line[:80]!r}") from None
    out: OpLog = {}
    for op, pairs in rows.items():
        arr = np.array(sorted(pairs), dtype=float)
        out[op] = (arr[:, 0], arr[:, 1])
    return out


#: the kind :func:`cut_off` gives the operations a stop cancelled
CUT_OFF = "CUT_OFF"


def cut_off(log: OpLog, stop_s: float) -> OpLog:
    """``log`` with the failed operations that ended once the run was asked to stop at
    ``stop_s`` (epoch seconds) moved to kind :data:`CUT_OFF` (there even when none
    was), their latency the time they had been in flight: go-ycsb cancels what each
    thread has in flight when it is stopped (SIGTERM, ``--max-time``) and counts it as
    failed. Most were started just before the stop; one started long before had hung
    (after a fault: a request the cluster lost), which is no failure either, but no
    success.

    >>> log = parse_oplog("READ,1000000,50\\nTOTAL,1000000,50\\nREAD_ERROR,1500000,9\\n"
    ...                   "UPDATE_ERROR,1900000,200000\\n")
    >>> kept = cut_off(log, stop_s=2.0)
    >>> sorted(kept), kept[CUT_OFF][1].tolist()
    (['CUT_OFF', 'READ', 'READ_ERROR', 'TOTAL'], [200000.0])
    """
    stop_us = stop_s * 1e6
    kept: OpLog = {}
    cut: list[tuple[np.ndarray, np.ndarray]] = []
    for op, (starts, lat) in log.items():
        if op.endswith("_ERROR"):
            late = starts + lat >= stop_us
            if late.any():
                cut.append((starts[late], lat[late]))
            starts, lat = starts[~late], lat[~late]
            if not starts.size:
                continue
        kept[op] = (starts, lat)
    pairs = np.concatenate([np.column_stack(c) for c in cut] or [np.empty((0, 2))])
    pairs = pairs[np.argsort(pairs[:, 0], kind="stable")]
    kept[CUT_OFF] = (pairs[:, 0], pairs[:, 1])
    return kept


def _figures(starts: np.ndarray, lat: np.ndarray, seconds: float) -> dict[str, float]:
    count = float(len(lat))
    if count == 0:
        return {"count": 0.0, "ops": 0.0, "takes_s": seconds}
    p50, p95, p99 = np.percentile(lat, [50, 95, 99])
    return {
        "takes_s": seconds,
        "count": count,
        "ops": count / seconds if seconds > 0 else 0.0,
        "avg_us": float(lat.mean()),
        "min_us": float(lat.min()),
        "max_us": float(lat.max()),
        "p50_us": float(p50),
        "p95_us": float(p95),
        "p99_us": float(p99),
    }


def span(log: OpLog) -> tuple[float, float]:
    """The first operation's start and the last one's end (µs since the epoch)."""
    firsts = [s[0] for s, _ in log.values() if len(s)]
    lasts = [float((s + lat).max()) for s, lat in log.values() if len(s)]
    if not firsts:
        raise TargetError("go-ycsb's raw measurements hold no operation")
    return float(min(firsts)), max(lasts)


def summarise(log: OpLog) -> dict[str, dict[str, float]]:
    """Per operation kind: YCSB's figures over the whole run (its ``ops`` per second
    of the run, from the first start to the last end)."""
    first, last = span(log)
    seconds = max((last - first) / 1e6, 1e-9)
    return {op: _figures(s, lat, seconds) for op, (s, lat) in log.items()}


def per_second(log: OpLog, t0_s: float) -> tuple[list[float], list[float]]:
    """The successful operations started in each whole second after ``t0_s`` (the
    command's start, epoch seconds) that lies within the run: the seconds' ends (s
    since ``t0_s``) and their operations per second."""
    first, last = span(log)
    starts = log.get("TOTAL", (np.array([]), np.array([])))[0] / 1e6 - t0_s
    lo, hi = int(np.ceil(first / 1e6 - t0_s)), int(np.floor(last / 1e6 - t0_s))
    if hi - lo < 1:
        return [], []
    edges = np.arange(lo, hi + 1, dtype=float)
    counts, _ = np.histogram(starts, bins=edges)
    return [float(e) for e in edges[1:]], [float(c) for c in counts]


def windows(
    log: OpLog, t0_s: float, at_s: float, until_s: float | None
) -> dict[str, dict[str, float]]:
    """The successful operations' figures and the failed ones' count in the windows
    before ``at_s``, from it to ``until_s`` and after (seconds since ``t0_s``; no
    ``until_s``: *during* runs to the end). A window's throughput is its operations
    over its length within the run."""
    first, last = span(log)
    run_lo, run_hi = first / 1e6 - t0_s, last / 1e6 - t0_s
    end = run_hi if until_s is None else until_s
    bounds = {"before": (run_lo, at_s), "during": (at_s, end), "after": (end, run_hi)}
    ok_s, ok_lat = log.get("TOTAL", (np.array([]), np.array([])))
    ok_t = ok_s / 1e6 - t0_s
    failed = np.concatenate([s for op, (s, _) in log.items() if op.endswith("_ERROR")] or
                            [np.array([])]) / 1e6 - t0_s  # fmt: skip
    cut = log.get(CUT_OFF, (np.array([]), np.array([])))[0] / 1e6 - t0_s
    out: dict[str, dict[str, float]] = {}
    for name, (lo, hi) in bounds.items():
        lo, hi = max(lo, run_lo), min(hi, run_hi)
        if hi <= lo:
            continue
        mask = (ok_t >= lo) & (ok_t < hi)
        fig = _figures(ok_s[mask], ok_lat[mask], hi - lo)
        fig["errors"] = float(((failed >= lo) & (failed < hi)).sum())
        if CUT_OFF in log:  # started in this window, still in flight at the stop
            fig["cut_off"] = float(((cut >= lo) & (cut < hi)).sum())
        fig["from_s"], fig["to_s"] = float(lo), float(hi)
        out[name] = fig
    return out


def window_pis(figures: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """The windows' PIs: ``throughput_<w>``, ``total_avg_us_<w>``, ``total_p99_us_<w>``,
    ``errors_<w>`` (and ``cut_off_<w>`` after a stop) for each window ``w`` the run
    reached.

    >>> window_pis({"during": {"ops": 5.0, "avg_us": 9.0, "p99_us": 20.0, "errors": 1.0,
    ...                        "count": 3.0}})["throughput_during"]
    5.0
    """
    pi: dict[str, float] = {}
    for w in WINDOWS:
        fig = figures.get(w)
        if not fig:
            continue
        pi[f"throughput_{w}"] = float(fig["ops"])
        pi[f"errors_{w}"] = float(fig.get("errors", 0.0))
        if "cut_off" in fig:
            pi[f"cut_off_{w}"] = float(fig["cut_off"])
        if fig.get("count"):
            pi[f"total_avg_us_{w}"] = float(fig["avg_us"])
            pi[f"total_p99_us_{w}"] = float(fig["p99_us"])
    return pi
