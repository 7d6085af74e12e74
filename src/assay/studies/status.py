"""``assay status``: where a study stands, from another terminal or after a detach or
a reboot (issue #62, part 2).

Read from the store (opened read-only) and the study's lock file (only read): whether a
process runs the study now (it holds the lock: the kernel drops it when the process
ends, SIGKILL included), its pid and command; the trials done and how the last one
ended; the trials the design still has at most (:func:`assay.studies.plan.trial_counts`)
and the time they take at the pace of the current session; and, when the last session
never ended and nothing holds the lock, that the study was interrupted and how to
resume it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.store import Store, TrialRecord, is_archived, study_lock_state
from assay.studies.plan import TrialCounts, time_budget, trial_counts


@dataclass
class StudyStatus:
    """One study of a store, as :func:`study_statuses` finds it."""

    study: str
    kind: str
    state: str  # running, interrupted, finished, not started
    trials_ok: int
    trials_failed: int
    counts: TrialCounts
    per_trial_s: float | None  # the current (or last) session's pace
    last_status: str  # the last trial's status ("" without trials)
    last_end: float | None  # when it ended (epoch seconds)
    pid: int | None = None
    command: str = ""
    since: float | None = None  # when the running (or last) session started
    budget_left_s: float | None = None  # measured seconds its time budget still allows
    wall_per_measured: float = 1.0  # wall seconds per measured second, at its pace
    reason: str = ""  # a finished study's reason
    resume: str = ""  # how to resume an interrupted one

    @property
    def done(self) -> int:
        return self.trials_ok + self.trials_failed

    @property
    def left_most_s(self) -> float | None:
        """The time the trials the design still has at most take, at this pace."""
        if self.per_trial_s is None or self.state != "running":
            return None
        left = max(0, self.counts.most - self.done) * self.per_trial_s
        if self.budget_left_s is not None:  # the time budget ends it sooner
            left = min(left, max(0.0, self.budget_left_s) * self.wall_per_measured)
        return left

    def as_dict(self) -> dict[str, Any]:
        return {
            "study": self.study,
            "kind": self.kind,
            "state": self.state,
            "trials": {"ok": self.trials_ok, "failed": self.trials_failed},
            "planned": {"least": self.counts.least, "most": self.counts.most},
            "per_trial_s": self.per_trial_s,
            "left_most_s": self.left_most_s,
            "last_trial": {"status": self.last_status, "ended": self.last_end}
            if self.last_status
            else None,
            "pid": self.pid,
            "command": self.command,
            "since": self.since,
            "reason": self.reason,
            "resume": self.resume,
        }


def _pace(trials: list[TrialRecord], since: float | None) -> float | None:
    """Wall seconds a trial in the session that started at ``since``: from its first
    trial's start to its last one's end, over its trials."""
    mine = [t for t in trials if t.started is not None and (since is None or t.started >= since)]
    if len(mine) < 2:
        return None
    first = min(t.started or 0.0 for t in mine)
    last = max((t.started or 0.0) + (t.duration or 0.0) for t in mine)
    return (last - first) / len(mine) if last > first else None


def _command(argv: Any) -> str:
    if not isinstance(argv, list) or not argv:
        return ""
    import shlex

    return " ".join([Path(str(argv[0])).name, *(shlex.quote(str(a)) for a in argv[1:])])


def study_statuses(store: Path, study: str | None = None) -> list[StudyStatus]:
    """Each study of ``store`` (or the one named), as it stands now."""
    from assay.studies.base import find_stored, open_stored
    from assay.studies.stored import study_name

    out: list[StudyStatus] = []
    with Store(store, read_only=True) as db:
        names = (
            [study_name(db, study)]
            if study is not None
            else [n for n in db.study_names() if not is_archived(n)]
        )
        found = [(find_stored(db, n), open_stored(db, n).trials) for n in names]
    for stored, trials in found:
        held, info = study_lock_state(store, stored.name)
        sessions = stored.sessions
        last = sessions[-1] if sessions else None
        since = float(last["started"]) if last and last.get("started") is not None else None
        ok = sum(1 for t in trials if t.ok)
        tail = max(trials, key=lambda t: (t.started or 0.0, t.seq), default=None)
        last_status, last_end = "", None
        if tail is not None and tail.started is not None:
            last_status, last_end = tail.status, tail.started + (tail.duration or 0.0)
        status = StudyStatus(
            stored.name,
            stored.kind,
            "not started",
            ok,
            len(trials) - ok,
            trial_counts(stored.spec),
            _pace(trials, since),
            last_status,
            last_end,
            since=since,
        )
        budget = time_budget(stored.spec, stored.kind)
        measured = sum(t.duration or 0.0 for t in trials)
        if budget is not None:
            status.budget_left_s = budget - measured
            if status.per_trial_s is not None and measured > 0:
                status.wall_per_measured = max(1.0, status.per_trial_s * len(trials) / measured)
        if held:
            status.state = "running"
            pid = info.get("pid")
            status.pid = pid if isinstance(pid, int) else None
            status.command = _command(info.get("argv"))
        elif last is not None and last.get("ended") is None:
            status.state = "interrupted"
            command = _command(info.get("argv"))
            cwd = info.get("cwd")
            where = f" in {cwd}" if isinstance(cwd, str) and cwd else ""
            status.resume = (
                f"run `{command}` again{where}: it resumes from the {len(trials)} trials stored"
                if command
                else f"run the study's command again (assay {stored.kind} STUDY.toml, with "
                f"--store {store} if it is not the study's own): it resumes from the "
                f"{len(trials)} trials stored"
            )
        elif last is not None:
            status.state = "finished"
            result = last.get("result") or {}
            status.reason = str(result.get("reason") or "") if isinstance(result, dict) else ""
        out.append(status)
    return out
