"""ELECT's artifact summaries (``assay show --summary``): per PI, by the number of rounds.

ELECT's artifact evaluation (FAST '24) summarises each measure by how many rounds
measured it: one round gives the value (``Only one round: X``), two to four the
average, minimum and maximum, five or more the average and its 95% Student-t
confidence interval; the resource usage (95th-percentile CPU and memory, total disk
I/O and network traffic per round) is summarised the same way.  The figures come in
as per-round values, and the bottleneck watch's ``resources`` summary
(:func:`assay.execute.monitor.resources_dict`); this module only formats them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from assay.execute.monitor import rounds_summary
from assay.stats.intervals import t_interval
from assay.stats.skewed_mean import cox_interval

if TYPE_CHECKING:
    from assay.store import TrialRecord

__all__ = ["CONFIDENCE", "number", "pi_block", "resource_block", "round_line", "rounds"]

#: ELECT's confidence level.
CONFIDENCE = 0.95
GIB = float(2**30)


def rounds(values: Sequence[float], confidence: float = CONFIDENCE) -> dict[str, Any]:
    """The round-count summary of per-round ``values`` (NaN left out), in the form of
    :func:`~assay.execute.monitor.rounds_summary`; five rounds or more: the mean's
    Student-t interval (:func:`~assay.stats.intervals.t_interval`), or, when that crosses
    zero for positive rounds, Cox's log-normal one
    (:func:`~assay.stats.skewed_mean.cox_interval`), which stays positive.

    >>> rounds([2.0])
    {'rounds': 1, 'value': 2.0}
    >>> rounds([1.0, 2.0, 3.0, 4.0, 5.0])["high"] > 3.0
    True
    >>> rounds([1.0, 1.0, 1.0, 1.0, 400.0])["low"] > 0
    True
    """
    x = [float(v) for v in values if math.isfinite(v)]
    if len(x) < 5:
        return rounds_summary(x, confidence)
    ci = t_interval(x, confidence)
    if ci.low < 0.0 < min(x):  # a rate or a total of positive rounds: Cox's interval
        ci = cox_interval(x, confidence)
    return {
        "rounds": len(x),
        "mean": ci.mean,
        "low": ci.low,
        "high": ci.high,
        "confidence": confidence,
    }


def number(x: float) -> str:
    """ELECT's two decimals; below 0.1, three significant digits without an exponent
    (a 1 ms wall time would read 0.00).

    >>> number(9992.379), number(1883), number(0.0012345), number(8.9e-06), number(0.0)
    ('9992.38', '1883.00', '0.00123', '0.0000089', '0.00')
    """
    if x == 0 or abs(x) >= 0.1 or not math.isfinite(x):
        return f"{x:.2f}"
    return str(np.format_float_positional(x, precision=3, fractional=False, trim="-"))


def round_line(summary: Mapping[str, Any], scale: float = 1.0) -> str:
    """One summary line of :func:`rounds` (values divided by ``scale``).

    >>> round_line(rounds([9992.38]))
    'Only one round: 9992.38'
    >>> round_line(rounds([1823.0, 1883.0, 1943.0]))
    'Average: 1883.00, Min: 1823.00, Max: 1943.00'
    >>> round_line(rounds([10.0, 11.0, 12.0, 11.0, 10.0]))
    'Average: 10.80; The 95% confidence interval: (9.76, 11.84)'
    >>> round_line(rounds([]))
    'No round measured'
    """
    n = int(summary.get("rounds", 0))

    def f(key: str) -> str:
        return number(float(summary[key]) / scale)

    if n == 0:
        return "No round measured"
    if n == 1:
        return f"Only one round: {f('value')}"
    if "low" not in summary:
        return f"Average: {f('mean')}, Min: {f('min')}, Max: {f('max')}"
    conf = float(summary.get("confidence", CONFIDENCE))
    return f"Average: {f('mean')}; The {conf:.0%} confidence interval: ({f('low')}, {f('high')})"


def pi_block(name: str, unit: str, values: Sequence[float]) -> list[str]:
    """A PI's title (``Throughput (unit: op/s):``) and the summary of its per-round values.

    >>> pi_block("wall_time", "s", [0.5])
    ['wall_time (unit: s):', 'Only one round: 0.50']
    """
    title = f"{name} (unit: {unit}):" if unit else f"{name}:"
    return [title, round_line(rounds(values))]


def resource_block(resources: Mapping[str, Any] | None) -> list[str]:
    """ELECT's resource usage lines from the bottleneck watch's ``resources`` summary:
    95th-percentile CPU (mean over cores) and memory, disk I/O and network traffic
    (sent and received) per round in GiB; one line when no trial was monitored.  A
    study on several hosts adds the cluster's (:func:`cluster_block`).

    >>> r = {"cpu_p95_percent": rounds([1.19]), "memory_p95_percent": rounds([40.0]),
    ...      "disk_bytes_per_trial": rounds([GIB]), "network_bytes_per_trial": rounds([0.0])}
    >>> for line in resource_block(r)[:6]:
    ...     print(line)
    95%-percentile CPU Usage (%):
    Only one round: 1.19
    95%-percentile RAM Usage (%):
    Only one round: 40.00
    Total Disk I/O (GiB):
    Only one round: 1.00
    >>> resource_block(None)
    ['Resource usage: not monitored']
    """
    if not resources:
        return ["Resource usage: not monitored"]
    return [
        "95%-percentile CPU Usage (%):",
        round_line(resources["cpu_p95_percent"]),
        "95%-percentile RAM Usage (%):",
        round_line(resources["memory_p95_percent"]),
        "Total Disk I/O (GiB):",
        round_line(resources["disk_bytes_per_trial"], GIB),
        "Total Network traffic (GiB):",
        round_line(resources["network_bytes_per_trial"], GIB),
        *cluster_block(resources.get("cluster")),
    ]


def cluster_block(cluster: Mapping[str, Any] | None) -> list[str]:
    """ELECT's resource lines for all hosts, then each role, from
    :func:`~assay.studies.cluster.cluster_report`.

    >>> doc = {"all": {"hosts": 2, "cores": 4, "cpu_p95_percent": rounds([1.19]),
    ...        "memory_p95_bytes": rounds([GIB]), "disk_bytes_per_trial": rounds([0.0]),
    ...        "network_bytes_per_trial": rounds([GIB / 2])}, "roles": {}}
    >>> print("\\n".join(cluster_block(doc)))
    [Cluster resource usage] all hosts (2 hosts, 4 cores)
    95%-percentile CPU Usage (%):
    Only one round: 1.19
    95%-percentile RAM Usage (GiB):
    Only one round: 1.00
    Total Disk I/O (GiB):
    Only one round: 0.00
    Total Network traffic (GiB):
    Only one round: 0.50
    """
    if not cluster:
        return []
    groups = {"all hosts": cluster["all"]}
    groups.update({f"role {r}": v for r, v in cluster.get("roles", {}).items()})
    lines: list[str] = []
    for name, g in groups.items():
        lines += [
            f"[Cluster resource usage] {name} ({g['hosts']} hosts, {g['cores']} cores)",
            "95%-percentile CPU Usage (%):",
            round_line(g["cpu_p95_percent"]),
            "95%-percentile RAM Usage (GiB):",
            round_line(g["memory_p95_bytes"], GIB),
            "Total Disk I/O (GiB):",
            round_line(g["disk_bytes_per_trial"], GIB),
            "Total Network traffic (GiB):",
            round_line(g["network_bytes_per_trial"], GIB),
        ]
    return lines


def summary_lines(stored: Any, trials: list[TrialRecord]) -> list[str]:
    """ELECT's summaries of a study: per PI, per variant (compare) or test (order)."""
    from assay.studies.base import watch_report

    spec = stored.spec
    if stored.kind in ("sweep", "knobs"):
        # one round per setting: its readings are not rounds of one measurement
        return [
            f"--summary: per-round summaries are for run, compare and order studies, "
            f"not {'knob' if stored.kind == 'knobs' else stored.kind} studies"
        ]
    groups: dict[str, list[TrialRecord]] = {"": trials}
    if stored.kind == "compare":
        groups = {f"variant: {v.name}": _of(trials, "variant", v.name) for v in spec.variants}
    elif stored.kind == "order":
        groups = {f"test: {t.name}": _of(trials, "test", t.name) for t in spec.tests}
    lines: list[str] = []
    for label, mine in groups.items():
        where = f"study: {stored.name}" + (f", {label}" if label else "")
        lines.append(f"[Exp info] {where}, kind: {stored.kind}, trials: {len(mine)}")
        for pi in spec.pis:
            values = [t.readings[pi.name] for t in mine if t.ok and pi.name in t.readings]
            lines.extend(pi_block(pi.name, pi.unit, values))
        lines.append(f"[Resource usage] {where}")
        # watch_report: a study on several hosts adds its cluster summary
        lines.extend(resource_block(watch_report(spec, mine)[1]))
        lines.append("")
    return lines[:-1]


def _of(trials: list[TrialRecord], key: str, name: str) -> list[TrialRecord]:
    return [t for t in trials if t.setting.get(key) == name]
