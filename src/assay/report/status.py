"""``assay status``'s words (:mod:`assay.studies.status` reads the states)."""

from __future__ import annotations

import time

from assay.report.format import format_duration
from assay.studies.status import StudyStatus


def _ago(when: float) -> str:
    return f"{format_duration(max(0.0, time.time() - when))} ago"


def status_lines(s: StudyStatus) -> list[str]:
    """One study's status in words."""
    c = s.counts
    planned = f"{c.least}" if c.least == c.most else f"{c.least} to {c.most}"
    lines = [f"{s.study} ({s.kind}): {s.state}"]
    if s.state == "running":
        lines.append(f"  process: pid {s.pid}, {s.command}" if s.pid else "  process: running")
    lines.append(
        f"  trials: {s.done} done ({s.trials_ok} ok, {s.trials_failed} failed) of the "
        f"{planned} its design runs"
        + (f"; last: {s.last_status} {_ago(s.last_end)}" if s.last_end is not None else "")
    )
    if s.per_trial_s is not None and s.state == "running":
        left = s.left_most_s
        lines.append(
            f"  pace: {format_duration(s.per_trial_s)} a trial; at most "
            f"~{format_duration(left or 0.0)} left"
            + (" (to the end of its time budget)" if s.budget_left_s is not None else "")
            + "; it stops sooner when its target is met"
        )
    if s.since is not None:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(s.since))
        lines.append(f"  {'running' if s.state == 'running' else 'last session'} since {stamp}")
    if s.state == "interrupted":
        lines.append(
            "  the last session did not end and no process runs it (killed, or the machine "
            "restarted)"
        )
        lines.append(f"  resume: {s.resume}")
    if s.reason:
        lines.append(f"  ended: {s.reason}")
    return lines
