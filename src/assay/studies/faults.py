"""The faults of a study's trials (``[[fault]]``, #63), as their reports show them: when
each fault and its restore ran (seconds after the measured command started), on which
host, and the measured command's per-second series when it printed one (``report.series``
of its JSON: ``t_s`` and ``ops_per_s``, as the YCSB driver prints them).

>>> from assay.store import HostRun, TrialRecord
>>> fault = HostRun("fault", "member", "10.0.0.2", 0, "ok",
...                 info={"action": "kill", "fired": True, "offset_s": 3.01})
>>> restore = HostRun("restore", "member", "10.0.0.2", 0, "ok", info={"offset_s": 6.2})
>>> t = TrialRecord(seq=4, status="ok", setting={"variant": "killed"},
...                 stdout=b'{"report": {"series": {"t_s": [1, 2], "ops_per_s": [9, 3]}}}',
...                 host_runs=[fault, restore])
>>> (line,) = fault_timelines([t])
>>> line.label, line.faults, line.restores, line.series
('killed', [('kill', '10.0.0.2', 3.01)], [6.2], ([1.0, 2.0], [9.0, 3.0]))
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from assay.store import TrialRecord


@dataclass
class FaultTimeline:
    """One trial's faults and series: ``faults`` as (action, host, seconds after the
    start) of those that fired, ``restores`` their restores' times, ``series`` the
    measured command's per-second series (empty when it printed none)."""

    seq: int
    label: str
    faults: list[tuple[str, str, float]] = field(default_factory=list)
    restores: list[float] = field(default_factory=list)
    series: tuple[list[float], list[float]] = ([], [])


def _series(stdout: bytes) -> tuple[list[float], list[float]]:
    try:
        doc = json.loads(stdout)
        got = doc["report"]["series"]
        xs = [float(x) for x in got["t_s"]]
        ys = [float(y) for y in got["ops_per_s"]]
    except (ValueError, TypeError, KeyError):
        return [], []
    return (xs, ys) if len(xs) == len(ys) else ([], [])


def fault_timelines(trials: Sequence[TrialRecord]) -> list[FaultTimeline]:
    """The ok trials of a study with faults, each with its faults, restores and series
    (a trial of a variant without faults too, to compare with); none when no trial
    had a fault."""
    if not any(h.what == "fault" for t in trials for h in t.host_runs):
        return []
    out = []
    for t in trials:
        if not t.ok:
            continue
        line = FaultTimeline(t.seq, str(t.setting.get("variant", "")), series=_series(t.stdout))
        for h in t.host_runs:
            offset = h.info.get("offset_s")
            if h.what == "fault" and h.info.get("fired") and offset is not None:
                line.faults.append((str(h.info.get("action", "")), h.host, float(offset)))
            elif h.what == "restore" and offset is not None:
                line.restores.append(float(offset))
        out.append(line)
    return out
