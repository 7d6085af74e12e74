"""Reading an ordering-trap study's trials measured elsewhere (``assay order --from``).

Two formats, told apart by the header:

* Assay's long format, one row per successful trial: ``test, order, run, position,
  value`` and optionally ``host`` (what ``assay order --trials-csv`` writes);
* OrderSage's results file as it writes it (``run_uuid, hostname, run_num, total_runs,
  exp_command, exp_number, order_number, order_type, time_start, time_stop,
  completion_status, result``; newer versions say ``test_command, test_number``): a
  test is its command (its number when the command is empty), its position the
  ``order_number`` within the run, its value ``result``; ``order_type`` is ``fixed``
  (``baseline`` accepted) or ``random``.  OrderSage numbers the runs of each kind from
  0, and each host its own, so a run is keyed by (host, kind of order, ``run_num``).  A
  row whose ``completion_status`` is not ``Success`` is a failed trial: counted, not
  analysed (its ``result`` is whatever the benchmark left, often not a number).
"""

from __future__ import annotations

import csv
import math
import os
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from assay.stats.order import HOST_COLUMN, ORDER_COLUMNS

if TYPE_CHECKING:
    import pandas as pd


class OrderDataError(ValueError):
    """A ``--from`` trials file is unusable; the message names the file, the line or
    column, and what was expected."""


_EXPECTED = (
    "expected columns test (name), order (fixed or random), run (run id), position "
    "(integer position of the trial in its run) and value (a number), optionally host; "
    "or OrderSage's results file (run_num, exp_command, order_number, order_type, "
    "completion_status, result, optionally hostname)"
)
_EXPECTED_ORDERSAGE = (
    "OrderSage's results file needs columns run_num, exp_command or exp_number (or "
    "test_command, test_number), order_number, order_type (fixed or random), "
    "completion_status and result; hostname is optional"
)

#: OrderSage's spellings of the kinds of order (``baseline`` is the paper's word).
_ORDERSAGE_KINDS = {"fixed": "fixed", "baseline": "fixed", "random": "random"}
_ORDERSAGE_REQUIRED = ("run_num", "order_number", "order_type", "completion_status", "result")
_ORDERSAGE_TESTS = ("exp_command", "test_command", "exp_number", "test_number")


@dataclass(frozen=True)
class OrderTrials:
    """A ``--from`` file read: its successful trials, and the failed ones counted."""

    table: pd.DataFrame  # ORDER_COLUMNS, plus HOST_COLUMN when the file names hosts
    source_format: str  # "long" or "ordersage"
    failed: dict[str, int] = field(default_factory=dict)  # failed trials by test
    statuses: dict[str, int] = field(default_factory=dict)  # failed trials by status

    @property
    def failed_total(self) -> int:
        return sum(self.failed.values())


def read_trials_csv(path: str | Path) -> pd.DataFrame:
    """The successful trials of a ``--from`` file (:func:`read_order_file`).

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "t.csv")
    >>> _ = open(p, "w").write("test,order,run,position,value\\na,fixed,0,0,1.5\\n"
    ...                        "a,random,1,0,1.7\\n")
    >>> read_trials_csv(p)["value"].tolist()
    [1.5, 1.7]
    """
    return read_order_file(path).table


def read_order_file(path: str | Path) -> OrderTrials:
    """Read a trials file in either format (told apart by its header).

    Raises :class:`OrderDataError` naming the file, the line and column, and what was
    expected, on the first problem; every run must hold one kind of order, every
    position of a run one trial, and both kinds must have successful trials.
    """
    from assay.importers.csvdata import MAX_CSV_BYTES
    from assay.inputfile import InputFileError, read_bounded

    p = Path(path)
    if not os.path.lexists(p):
        raise OrderDataError(f"{p}: no such file")
    try:  # a FIFO, /dev/zero or a huge file is refused, not read for ever
        text = read_bounded(p, MAX_CSV_BYTES).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise OrderDataError(f"{p}: not a UTF-8 text file: {_EXPECTED}") from None
    except InputFileError as exc:
        raise OrderDataError(f"{p}: {exc}; {_EXPECTED}") from None
    try:
        return _parse(p, text)
    except csv.Error as exc:
        raise OrderDataError(f"{p}: not a readable CSV file ({exc}): {_EXPECTED}") from None


@dataclass
class _Rows:
    """What the parsers collect, and the checks every format shares."""

    p: Path
    host_column: bool
    rows: list[tuple[str, str, str, int, float, str]] = field(default_factory=list)
    slots: dict[tuple[str, int], int] = field(default_factory=dict)
    failed: Counter[str] = field(default_factory=Counter)
    statuses: Counter[str] = field(default_factory=Counter)

    def slot(self, line: int, run: str, shown_run: str, position: int) -> None:
        other = self.slots.setdefault((run, position), line)
        if other != line:
            raise OrderDataError(
                f"{self.p}: line {line}: run {shown_run} already has a trial at position "
                f"{position} (line {other}); every position of a run holds one trial"
            )

    def result(self, source_format: str) -> OrderTrials:
        p = self.p
        if not self.rows:
            failed = sum(self.failed.values())
            if failed:
                raise OrderDataError(
                    f"{p}: no successful trials: all {failed} trials failed; nothing to analyse"
                )
            raise OrderDataError(f"{p}: no trials after the header: {_EXPECTED}")
        present = {r[1] for r in self.rows}
        ok = " that succeeded" if self.failed else ""
        for kind in ("fixed", "random"):
            if kind not in present:
                raise OrderDataError(
                    f"{p}: column 'order': no {kind}-order trials{ok}; the ordering "
                    "trap compares fixed-order runs with random-order runs, so both are needed"
                )
        import pandas as pd  # not before the first trial of 'assay order' (start-up)

        columns = [*ORDER_COLUMNS, HOST_COLUMN]
        table = pd.DataFrame(self.rows, columns=columns)
        if not self.host_column:
            table = table.drop(columns=[HOST_COLUMN])
        return OrderTrials(table, source_format, dict(self.failed), dict(self.statuses))


def _parse(p: Path, text: str) -> OrderTrials:
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

    def records() -> Iterator[tuple[int, list[str]]]:
        """Each non-blank row with its line number, as wide as the header."""
        for fields in reader:
            line = reader.line_num
            if not any(f.strip() for f in fields):
                continue  # blank line
            if len(fields) != len(names):
                raise OrderDataError(
                    f"{p}: line {line}: expected {len(names)} fields like the header, found "
                    f"{len(fields)}"
                )
            yield line, fields

    # OrderSage's own columns (and not the long format's): its results file, read as it is
    long = all(c in names for c in ORDER_COLUMNS)
    if not long and ("order_type" in names or "run_num" in names):
        return _parse_ordersage(p, records(), names)
    return _parse_long(p, records(), names)


def _missing(p: Path, names: list[str], wanted: Iterable[str], expected: str) -> None:
    missing = [c for c in wanted if c not in names]
    if missing:
        found = ", ".join(h for h in names if h) or "none"
        raise OrderDataError(
            f"{p}: missing column{'s' if len(missing) > 1 else ''} "
            f"{', '.join(repr(m) for m in missing)}: {expected} (found: {found})"
        )


def _cut(text: str, width: int = 40) -> str:
    """A cell as an error shows it: a 5000-digit number is not repeated whole."""
    return text if len(text) <= width else f"{text[: width - 1]}…"


def _position(p: Path, line: int, column: str, text: str) -> int:
    position = _int(text)
    if position is None:
        raise OrderDataError(
            f"{p}: line {line}: column {column!r}: expected an integer >= 0 (the trial's "
            f"position in its run), got {_cut(text)!r}"
        )
    return position


def _value(p: Path, line: int, column: str, text: str) -> float:
    value = _float(text)
    if value is None:
        raise OrderDataError(
            f"{p}: line {line}: column {column!r}: expected a finite number, got {_cut(text)!r}"
        )
    return value


def _parse_long(p: Path, records: Iterable[tuple[int, list[str]]], names: list[str]) -> OrderTrials:
    _missing(p, names, ORDER_COLUMNS, _EXPECTED)
    at = {c: names.index(c) for c in ORDER_COLUMNS}
    host_at = names.index(HOST_COLUMN) if HOST_COLUMN in names else None
    out = _Rows(p, host_column=host_at is not None)
    kinds: dict[str, tuple[str, int]] = {}
    for line, fields in records:
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
        position = _position(p, line, "position", fields[at["position"]])
        value = _value(p, line, "value", fields[at["value"]])
        first = kinds.setdefault(run, (order, line))
        if first[0] != order:
            raise OrderDataError(
                f"{p}: line {line}: column 'order': run {run!r} is {first[0]} at line "
                f"{first[1]} but {order} here; every run has one kind of order"
            )
        out.slot(line, run, repr(run), position)
        host = fields[host_at].strip() if host_at is not None else ""
        out.rows.append((test, order, run, position, value, host))
    return out.result("long")


def _parse_ordersage(
    p: Path, records: Iterable[tuple[int, list[str]]], names: list[str]
) -> OrderTrials:
    tests = [c for c in _ORDERSAGE_TESTS if c in names]
    _missing(p, names, _ORDERSAGE_REQUIRED, _EXPECTED_ORDERSAGE)
    if not tests:
        _missing(p, names, ["exp_command"], _EXPECTED_ORDERSAGE)
    at = {c: names.index(c) for c in _ORDERSAGE_REQUIRED}
    test_at = [names.index(c) for c in tests]  # the command first, its number if empty
    host_at = names.index("hostname") if "hostname" in names else None
    out = _Rows(p, host_column=host_at is not None)
    for line, fields in records:
        test = next((fields[i].strip() for i in test_at if fields[i].strip()), "")
        if not test:
            raise OrderDataError(
                f"{p}: line {line}: column {tests[0]!r}: empty; expected the test's command "
                "or number"
            )
        raw_kind = fields[at["order_type"]]
        kind = _ORDERSAGE_KINDS.get(raw_kind.strip().lower())
        if kind is None:
            raise OrderDataError(
                f"{p}: line {line}: column 'order_type': expected 'fixed' or 'random' "
                f"(got {raw_kind!r})"
            )
        run_num = fields[at["run_num"]].strip()
        if not run_num:
            raise OrderDataError(
                f"{p}: line {line}: column 'run_num': empty; expected a run number"
            )
        host = fields[host_at].strip() if host_at is not None else ""
        # OrderSage numbers each kind's runs from 0 on each host: the run is all three
        run = f"{host}/{kind}-{run_num}" if host else f"{kind}-{run_num}"
        position = _position(p, line, "order_number", fields[at["order_number"]])
        shown_run = f"{run_num!r} ({kind}{f' on {host}' if host else ''})"
        out.slot(line, run, shown_run, position)
        status = fields[at["completion_status"]].strip()
        if status.lower() != "success":
            out.failed[test] += 1  # a failed trial: its result is not a reading
            out.statuses[status or "(empty)"] += 1
            continue
        value = _value(p, line, "result", fields[at["result"]])
        out.rows.append((test, kind, run, position, value, host))
    return out.result("ordersage")


def _int(text: str) -> int | None:
    t = text.strip()
    if not t.isascii() or not t.isdigit() or len(t) > 18:  # a run or a position, not 10^18
        return None
    return int(t)


def _float(text: str) -> float | None:
    try:
        x = float(text.strip())
    except ValueError:
        return None
    return x if math.isfinite(x) else None
