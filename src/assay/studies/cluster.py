"""ELECT's resource summary of a study that spans several hosts: per host, per role, in all.

From each trial's stored host runs (:class:`~assay.store.HostRun`, their bottleneck
watch samples) it builds ELECT's cluster summary per trial
(:mod:`assay.stats.cluster_summary`), summarises it over the trials by ELECT's
round-count rule, and gives one bottleneck warning per host and component;
:func:`assay.report.summary.cluster_block` prints it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from assay.execute.monitor import TIME_KEY, bottleneck_warnings, rounds_summary, summarize
from assay.stats.cluster_summary import ClusterSummary, HostSeries, by_role
from assay.store import HostRun, TrialRecord

__all__ = ["METHOD", "cluster_report", "host_series"]

METHOD = (
    "ELECT (FAST '24, Exp#5): p95 over common timestamps of the CPU busy on all hosts "
    "over all their cores, p95 of the memory in use summed over the hosts, disk I/O and "
    "network traffic (both ways) summed; per trial, then over trials by the number of rounds"
)


def host_series(run: HostRun) -> HostSeries:
    """A host run's samples as the cluster summary reads them."""
    s = run.resources
    t = np.asarray(s.get(TIME_KEY, np.empty(0)), dtype=float)
    cpu = [np.asarray(v, dtype=float) for k, v in s.items() if k.startswith("cpu.")]
    busy = np.nansum(np.column_stack(cpu), axis=1) / 100.0 if cpu else np.zeros(t.size)
    cores = int(run.info.get("cpu_count") or len(cpu) or 1)
    total = float(run.info.get("memory_bytes") or math.nan)
    memory = np.asarray(s.get("memory", np.full(t.size, np.nan)), dtype=float) * total / 100.0
    watched = summarize(s)
    return HostSeries(
        run.role,
        run.host,
        float(run.started or 0.0),
        t,
        busy,
        cores,
        memory,
        watched.disk_bytes,
        watched.net_bytes_sent + watched.net_bytes_recv,
    )


def _watched(t: TrialRecord) -> list[HostRun]:
    return [h for h in t.host_runs if h.what == "trial" and h.resources]


def _rounds(per_trial: Sequence[ClusterSummary]) -> dict[str, Any]:
    return {
        "hosts": per_trial[0].hosts if per_trial else 0,
        "cores": per_trial[0].cores if per_trial else 0,
        "cpu_p95_percent": rounds_summary([s.cpu_p95_percent for s in per_trial]),
        "memory_p95_bytes": rounds_summary([s.memory_p95_bytes for s in per_trial]),
        "disk_bytes_per_trial": rounds_summary([s.disk_bytes for s in per_trial]),
        "network_bytes_per_trial": rounds_summary([s.network_bytes for s in per_trial]),
        "disk_bytes_total": float(sum(s.disk_bytes for s in per_trial)),
        "network_bytes_total": float(sum(s.network_bytes for s in per_trial)),
    }


def cluster_report(
    trials: Sequence[TrialRecord], under_test: str | None, label: str = ""
) -> tuple[list[str], dict[str, Any]]:
    """Bottleneck warnings naming host and component, and the JSON ``cluster`` summary:
    ``all`` and ``roles`` (ELECT's figures by rounds), ``hosts`` (each host's)."""
    alls: list[ClusterSummary] = []
    roles: dict[str, list[ClusterSummary]] = {}
    per_host: dict[str, list[HostRun]] = {}
    for t in trials:
        runs = _watched(t)
        if not runs:
            continue
        everyone, by = by_role([host_series(h) for h in runs])
        alls.append(everyone)
        for role, s in by.items():
            roles.setdefault(role, []).append(s)
        for h in runs:
            per_host.setdefault(h.where(), []).append(h)
    warnings: list[str] = []
    hosts: dict[str, Any] = {}
    for where, runs in per_host.items():
        summaries = [summarize(h.resources) for h in runs]
        warnings.extend(bottleneck_warnings(summaries, under_test, label=f"{label}host {where}: "))
        hosts[where] = {
            "role": runs[0].role,
            "host": runs[0].host,
            "cores": runs[0].info.get("cpu_count"),
            "memory_bytes": runs[0].info.get("memory_bytes"),
            "trials": len(runs),
            "cpu_p95_percent": rounds_summary([s.stats["cpu_mean"].p95 for s in summaries]),
            "cpu_busiest_core_p95_percent": rounds_summary([s.stats["cpu"].p95 for s in summaries]),
            "memory_p95_percent": rounds_summary([s.stats["memory"].p95 for s in summaries]),
            "disk_bytes_total": float(sum(s.disk_bytes for s in summaries)),
            "network_bytes_total": float(
                sum(s.net_bytes_sent + s.net_bytes_recv for s in summaries)
            ),
        }
    doc = {
        "trials": len(alls),
        "all": _rounds(alls),
        "roles": {r: _rounds(v) for r, v in roles.items()},
        "hosts": hosts,
        "method": METHOD,
    }
    return warnings, doc
