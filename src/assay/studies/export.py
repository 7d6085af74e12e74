"""Stored trials as two flat tables, for pandas, R or a spreadsheet (``assay export``).

The trials table has one row per trial: its study, run, seq and status, one
``setting.KEY`` column per setting key, one ``reading.PI`` column per PI, then when it
started (local ISO 8601), how long it took and what it cost.  The unit readings (many
values per trial) go in a second table in long format, one row per value:
``study, run, seq, pi, index, value``.  (``run`` and ``seq`` together name a trial:
an order study numbers its trials from 0 in every run.)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.store import Store, TrialRecord, is_archived
from assay.studies.catalog import iso_time

LEADING = ["study", "seq", "run", "status"]
TRAILING = [
    "started",
    "duration_s",
    "work",
    "exit_code",
    "error",
    "stderr_tail",
    "host",
    "cpu_user",
    "cpu_system",
    "max_rss_kib",
]
UNIT_FIELDS = ["study", "run", "seq", "pi", "index", "value"]


@dataclass(frozen=True)
class Table:
    """Column names and rows (each a list in the order of ``fields``)."""

    fields: list[str]
    rows: list[list[Any]]

    def records(self) -> list[dict[str, Any]]:
        """The rows as objects (for JSON)."""
        return [dict(zip(self.fields, row, strict=True)) for row in self.rows]


@dataclass(frozen=True)
class Export:
    """What ``assay export`` writes: the studies read, their trials and unit readings."""

    studies: list[str]
    trials: Table
    unit_readings: Table


class UnknownStudyError(LookupError):
    """No study of that name in the store; ``names`` are those it has."""

    def __init__(self, store: Path, name: str, names: list[str]) -> None:
        known = ", ".join(names) if names else "none"
        super().__init__(f"{store}: no study named {name!r}; the store's studies: {known}")
        self.names = names


def _cell(value: Any) -> Any:
    """A setting's value for a flat table: scalars as they are, anything else as JSON."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return json.dumps(value, sort_keys=True, default=str)


def _keys(dicts: list[dict[str, Any]]) -> list[str]:
    """The keys of ``dicts`` in the order they first appear."""
    return list(dict.fromkeys(k for d in dicts for k in d))


def tables(trials: list[tuple[str, TrialRecord]]) -> tuple[Table, Table]:
    """The trials table and the unit-readings table of (study name, trial) pairs."""
    from assay.studies.base import last_lines

    settings = _keys([t.setting for _, t in trials])
    pis = _keys([t.readings for _, t in trials])
    fields = [
        *LEADING,
        *(f"setting.{k}" for k in settings),
        *(f"reading.{p}" for p in pis),
        *TRAILING,
    ]
    rows: list[list[Any]] = []
    units: list[list[Any]] = []
    for study, t in trials:
        rows.append(
            [
                study,
                t.seq,
                t.run,
                t.status,
                *(_cell(t.setting.get(k)) for k in settings),
                *(t.readings.get(p) for p in pis),
                iso_time(t.started, "microseconds"),  # a float's precision, near enough
                t.duration,
                t.work,
                t.exit_code,
                t.error,
                "\n".join(last_lines(t.stderr)),  # why it failed, or what it wrote anyway
                t.host,
                t.cpu_user,
                t.cpu_system,
                t.max_rss_kib,
            ]
        )
        for pi, values in t.unit_readings.items():
            units.extend([study, t.run, t.seq, pi, i, v] for i, v in enumerate(values.tolist()))
    return Table(fields, rows), Table(list(UNIT_FIELDS), units)


def export_store(path: Path, study: str | None = None, *, archived: bool = False) -> Export:
    """The trials of ``study`` in the store at ``path``, or of every study when it is
    None (archived ones only with ``archived``).  The store is opened read-only.

    Raises :class:`UnknownStudyError` for a name the store lacks and
    :class:`assay.store.StoreError` for a store that cannot be read.
    """
    with Store(path, read_only=True) as store:
        studies = [(o.id, o.name) for o in store.overview()]
        listed = [s for s in studies if archived or not is_archived(s[1])]
        if study is not None:
            chosen = [s for s in studies if s[1] == study]  # an archived one by its name
            if not chosen:
                raise UnknownStudyError(path, study, [name for _, name in listed])
        else:
            chosen = listed
        with store.reading("read the trials"):
            pairs = [(name, t) for sid, name in chosen for t in store.trials(sid, disturbed=True)]
    trials, units = tables(pairs)
    return Export([name for _, name in chosen], trials, units)
