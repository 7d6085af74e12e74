"""What a results store holds: one entry per study, with its kind, its trials by status,
when they ran, its sessions and whether it is done (``assay ls``).

The kind is told from the study file as stored (the sections a kind's study file
has), and "done" from what the newest session stored when it ended.

>>> study_kind({"variants": [], "sweep": None})
'run'
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from assay.store import Store, StudyOverview, is_archived
from assay.studies.base import study_kind


def iso_time(t: float | None, timespec: str = "seconds") -> str | None:
    """Unix seconds as local ISO 8601 with the UTC offset (None stays None).

    >>> datetime.fromisoformat(iso_time(1700000000.25, "microseconds")).timestamp()
    1700000000.25
    >>> iso_time(None) is None
    True
    """
    if t is None:
        return None
    return datetime.fromtimestamp(t).astimezone().isoformat(timespec=timespec)


@dataclass(frozen=True)
class StudyEntry:
    """One study of a store, as ``assay ls`` shows it."""

    name: str
    kind: str
    archived: bool
    trials_by_status: dict[str, int]
    first_trial: float | None
    last_trial: float | None
    sessions: int
    done: bool  # the newest session ended and said its study was done
    # "done", "stopped" (ended short of done), "failed" (ended, no trial ok), "unfinished"
    # (never ended), "new"
    state: str
    reason: str  # why the newest session stopped, as it stored it ("" if it did not say)

    @property
    def trials(self) -> int:
        return sum(self.trials_by_status.values())

    def as_dict(self) -> dict[str, Any]:
        """Plain data for ``assay ls --json``."""
        return {
            "name": self.name,
            "kind": self.kind,
            "archived": self.archived,
            "trials": self.trials,
            "trials_by_status": dict(self.trials_by_status),
            "first_trial": iso_time(self.first_trial),
            "last_trial": iso_time(self.last_trial),
            "sessions": self.sessions,
            "done": self.done,
            "state": self.state,
            "reason": self.reason,
        }


def _state(o: StudyOverview) -> tuple[str, str]:
    """The newest session's state and reason (see :attr:`StudyEntry.state`)."""
    if o.sessions == 0:
        return "new", ""
    if o.last_ended is None:  # still running, or killed (Ctrl-C ends without a result)
        return "unfinished", ""
    result = o.last_result or {}
    reason = str(result.get("reason") or "")
    done = result.get("done")
    steps = result.get("steps")
    if done is None and isinstance(steps, list):  # a sweep says so in its last step
        done = bool(steps) and isinstance(steps[-1], dict) and bool(steps[-1].get("done"))
    if done is None:  # a knobs study stores no verdict: its session ending is its end
        done = True
    if o.trials_by_status and not o.trials_by_status.get("ok"):
        return "failed", reason  # not one trial worked: no result, whatever ended it
    return ("done" if done else "stopped"), reason


def entry(o: StudyOverview) -> StudyEntry:
    """The :class:`StudyEntry` of one study the store read."""
    state, reason = _state(o)
    return StudyEntry(
        name=o.name,
        kind=study_kind(o.spec),
        archived=is_archived(o.name),
        trials_by_status=dict(o.trials_by_status),
        first_trial=o.first_trial,
        last_trial=o.last_trial,
        sessions=o.sessions,
        done=state == "done",
        state=state,
        reason=reason,
    )


def list_studies(path: Path, *, archived: bool = False) -> list[StudyEntry]:
    """The studies of the store at ``path``, oldest first; archived ones (``--fresh``)
    only with ``archived``. Opens the store read-only: nothing is created or changed,
    and a study may be running meanwhile. Raises :class:`assay.store.StoreError`."""
    with Store(path, read_only=True) as store:
        overview = store.overview()
    entries = [entry(o) for o in overview]
    return [e for e in entries if archived or not e.archived]
