"""Reading an ordering-trap study's trials measured elsewhere (``assay order --from``).

The CSV has one row per trial: ``test, order, run, position, value``.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pandas as pd

from assay.stats.order import ORDER_COLUMNS


class OrderDataError(ValueError):
    """A ``--from`` trials file is unusable; the message names the file, the line or
    column, and what was expected."""


_EXPECTED = (
    "expected columns test (name), order (fixed or random), run (run id), position "
    "(integer position of the trial in its run) and value (a number)"
)


def read_trials_csv(path: str | Path) -> pd.DataFrame:
    """Read a trials CSV (columns ``test, order, run, position, value``; others ignored).

    Raises :class:`OrderDataError` naming the file, the line and column, and what was
    expected, on the first problem; every run must hold one kind of order, every
    ``(run, position)`` one trial, and both kinds must be present.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "t.csv")
    >>> _ = open(p, "w").write("test,order,run,position,value\\na,fixed,0,0,1.5\\n"
    ...                        "a,random,1,0,1.7\\n")
    >>> read_trials_csv(p)["value"].tolist()
    [1.5, 1.7]
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise OrderDataError(f"{p}: no such file") from None
    except UnicodeDecodeError:
        raise OrderDataError(f"{p}: not a UTF-8 text file: {_EXPECTED}") from None
    except OSError as exc:
        raise OrderDataError(f"{p}: cannot read the file: {exc}") from None
    try:
        return _parse_trials(p, text)
    except csv.Error as exc:
        raise OrderDataError(f"{p}: not a readable CSV file ({exc}): {_EXPECTED}") from None


def _parse_trials(p: Path, text: str) -> pd.DataFrame:
    if "\x00" in text:
        raise OrderDataError(f"{p}: contains NUL bytes; not a CSV text file: {_EXPECTED}")
    reader = csv.reader(text.splitlines())
    header = next(reader, None)
    while header is not None and not any(h.strip() for h in header):
        header = next(reader, None)
    if header is None:
        raise OrderDataError(f"{p}: empty file: {_EXPECTED}")
    names = [h.strip().lower() for h in header]
    dup = sorted({n for n in names if n and names.count(n) > 1})
    if dup:
        raise OrderDataError(f"{p}: column {dup[0]!r} appears twice in the header: {_EXPECTED}")
    missing = [c for c in ORDER_COLUMNS if c not in names]
    if missing:
        found = ", ".join(h for h in names if h) or "none"
        raise OrderDataError(
            f"{p}: missing column{'s' if len(missing) > 1 else ''} "
            f"{', '.join(repr(m) for m in missing)}: {_EXPECTED} (found: {found})"
        )
    at = {c: names.index(c) for c in ORDER_COLUMNS}
    rows: list[tuple[str, str, str, int, float]] = []
    slots: dict[tuple[str, int], int] = {}
    kinds: dict[str, tuple[str, int]] = {}
    for fields in reader:
        line = reader.line_num
        if not any(f.strip() for f in fields):
            continue  # blank line
        if len(fields) != len(names):
            raise OrderDataError(
                f"{p}: line {line}: expected {len(names)} fields like the header, found "
                f"{len(fields)}"
            )
        test = fields[at["test"]].strip()
        if not test:
            raise OrderDataError(f"{p}: line {line}: column 'test': empty; expected a test name")
        order = fields[at["order"]].strip().lower()
        if order not in ("fixed", "random"):
            raise OrderDataError(
                f"{p}: line {line}: column 'order': expected 'fixed' or 'random' "
                f"(got {fields[at['order']]!r})"
            )
        run = fields[at["run"]].strip()
        if not run:
            raise OrderDataError(f"{p}: line {line}: column 'run': empty; expected a run id")
        position = _int(fields[at["position"]])
        if position is None:
            raise OrderDataError(
                f"{p}: line {line}: column 'position': expected an integer >= 0 (the trial's "
                f"position in its run), got {fields[at['position']]!r}"
            )
        value = _float(fields[at["value"]])
        if value is None:
            raise OrderDataError(
                f"{p}: line {line}: column 'value': expected a finite number, got "
                f"{fields[at['value']]!r}"
            )
        first = kinds.setdefault(run, (order, line))
        if first[0] != order:
            raise OrderDataError(
                f"{p}: line {line}: column 'order': run {run!r} is {first[0]} at line "
                f"{first[1]} but {order} here; every run has one kind of order"
            )
        other = slots.setdefault((run, position), line)
        if other != line:
            raise OrderDataError(
                f"{p}: line {line}: run {run!r} already has a trial at position {position} "
                f"(line {other}); every position of a run holds one trial"
            )
        rows.append((test, order, run, position, value))
    if not rows:
        raise OrderDataError(f"{p}: no trials after the header: {_EXPECTED}")
    present = {r[1] for r in rows}
    for kind in ("fixed", "random"):
        if kind not in present:
            raise OrderDataError(
                f"{p}: column 'order': no {kind}-order trials; the ordering trap compares "
                "fixed-order runs with random-order runs, so both are needed"
            )
    return pd.DataFrame(rows, columns=list(ORDER_COLUMNS))


def _int(text: str) -> int | None:
    t = text.strip()
    if not t.isascii() or not t.isdigit():
        return None
    return int(t)


def _float(text: str) -> float | None:
    try:
        x = float(text.strip())
    except ValueError:
        return None
    return x if math.isfinite(x) else None
