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

A trial may report several metrics (a memory-bandwidth benchmark's four kernels):

* a ``result`` (or ``value``) holding several comma-separated values, quoted
  (``"33888.15,33794.10,38016.58,38157.31"``), is split into one metric per value,
  named by ``--metrics copy,scale,add,triad`` or ``value[1]`` ... ``value[k]``; every
  successful row of that test must then hold the same number of values (other tests
  of the file may hold one, or another number: the count is each test's own);
* the long format's ``metric`` column, or several value columns (``value_copy,
  value_scale``, or the columns ``--metrics`` names), give one metric per row or column;
* rows of different tests may share a position of a run (the same data already split
  into one row per metric, ``CMD -- copy``, ``CMD -- add``); the same test twice at one
  position is an error.

Each metric of a test is analysed as a test of its own, named ``TEST -- METRIC``, so the
Bonferroni correction counts every metric.
"""

from __future__ import annotations

import csv
import dataclasses
import math
import os
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
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
#: How a test's name and a metric's name are joined into the name of the test analysed.
METRIC_SEPARATOR = " -- "
_METRIC_COLUMN = "metric"


def metric_test(test: str, metric: str) -> str:
    """The name under which one metric of a test is analysed (``CMD -- copy``).

    >>> metric_test("stream", "triad")
    'stream -- triad'
    """
    return f"{test}{METRIC_SEPARATOR}{metric}"


@dataclass(frozen=True)
class OrderTrials:
    """A ``--from`` file read: its successful trials, and the failed ones counted."""

    table: pd.DataFrame  # ORDER_COLUMNS, plus HOST_COLUMN when the file names hosts
    source_format: str  # "long", "ordersage" or "assay" (an order --json result)
    failed: dict[str, int] = field(default_factory=dict)  # failed trials by test
    statuses: dict[str, int] = field(default_factory=dict)  # failed trials by status
    metrics: tuple[str, ...] = ()  # the metrics each trial was split into (none: one value)
    metrics_from: str = ""  # where their names came from ("--metrics", "default", ...)
    # an Assay order --json document names its PI: (name, unit, direction)
    pi: tuple[str, str, str] | None = None

    @property
    def failed_total(self) -> int:
        """Failed trials (rows whose ``completion_status`` is not ``Success``)."""
        return sum(self.failed.values())

    def metrics_text(self) -> str:
        """Which metrics the trials were split into and where their names came from
        ("" when every trial holds one value)."""
        if not self.metrics:
            return ""
        names = ", ".join(self.metrics)
        k = len(self.metrics)
        return (
            f"{k} metric{'s' if k > 1 else ''} per trial, each analysed as a test: {names} "
            f"({self.metrics_from})"
        )


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


def read_order_file(path: str | Path, *, metrics: Sequence[str] | None = None) -> OrderTrials:
    """Read a trials file in either format (told apart by its header).

    ``metrics``: the names of the values of a multi-valued result, in order (default
    ``value[1]`` ... ``value[k]``), or of the long format's value columns.

    Raises :class:`OrderDataError` naming the file, the line and column, and what was
    expected, on the first problem; every run must hold one kind of order, every
    position of a run one trial of each test, every result the same number of values,
    and both kinds must have successful trials.
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
    if text.lstrip().startswith("{"):  # an Assay order --json document: its trials
        return _parse_assay_json(p, text)
    try:
        return _parse(p, text, tuple(metrics) if metrics else None)
    except csv.Error as exc:
        raise OrderDataError(f"{p}: not a readable CSV file ({exc}): {_EXPECTED}") from None


@dataclass
class _Rows:
    """What the parsers collect, and the checks every format shares."""

    p: Path
    host_column: bool
    given: tuple[str, ...] | None = None  # --metrics
    rows: list[tuple[str, str, str, int, float, str]] = field(default_factory=list)
    slots: dict[tuple[str, int, str], int] = field(default_factory=dict)
    failed: Counter[str] = field(default_factory=Counter)
    statuses: Counter[str] = field(default_factory=Counter)
    # values per result of each test, from its first successful row (and that row's
    # line): a file may hold a test of several values beside tests of one (#59)
    k: dict[str, tuple[int, int]] = field(default_factory=dict)
    metrics: tuple[str, ...] = ()
    metrics_from: str = ""

    def slot(self, line: int, run: str, shown_run: str, position: int, test: str) -> None:
        """Check that no other row holds ``test`` at this position of this run."""
        other = self.slots.setdefault((run, position, test), line)
        if other != line:
            raise OrderDataError(
                f"{self.p}: line {line}: run {shown_run} already has a trial of {test!r} at "
                f"position {position} (line {other}); a position of a run holds one trial "
                "of each test"
            )

    def values(self, line: int, column: str, text: str, test: str) -> list[float]:
        """The value(s) of a result of ``test``: several when comma-separated, as many in
        every row of that test (``--metrics`` names those of a test of several)."""
        parts = text.split(",") if "," in text else [text]
        k = len(parts)
        if k == 1:
            values = [_value(self.p, line, column, text)]
        else:
            values = []
            for i, part in enumerate(parts, 1):
                x = _float(part)
                if x is None:
                    raise OrderDataError(
                        f"{self.p}: line {line}: column {column!r}: value {i} of {k}: expected "
                        f"a finite number, got {_cut(part)!r} (in {_cut(text)!r})"
                    )
                values.append(x)
        first = self.k.setdefault(test, (k, line))
        if first[1] != line:
            want = first[0]
            why = (
                f"as at line {first[1]}; every result of a test holds the same number of "
                f"values (test {_cut(test)!r})"
            )
        elif self.given is not None and k > 1:
            want, why = len(self.given), f"--metrics {','.join(self.given)}"
        else:
            want, why = k, ""
        if k != want:
            raise OrderDataError(
                f"{self.p}: line {line}: column {column!r}: found {k} value"
                f"{'s' if k > 1 else ''}, expected {want} ({why}): {_cut(text)!r}"
            )
        return values

    def add(
        self, test: str, order: str, run: str, position: int, values: list[float], host: str
    ) -> None:
        """A successful row: one trial per value, each metric a test of its own."""
        if len(values) == 1:  # a test of one value keeps its own name
            self.rows.append((test, order, run, position, values[0], host))
            return
        from assay.importers.columns import default_metric_names  # numpy, pandas: not at start-up

        names = self.given or default_metric_names(len(values))
        if len(self.metrics) < len(names):  # the widest test's names
            self.metrics = names
            self.metrics_from = (
                "named by --metrics"
                if self.given
                else "default names value[1]...; name them with --metrics"
            )
        for name, value in zip(names, values, strict=True):
            self.rows.append((metric_test(test, name), order, run, position, value, host))

    def result(self, source_format: str) -> OrderTrials:
        p = self.p
        if self.given is not None and self.k and all(k == 1 for k, _ in self.k.values()):
            raise OrderDataError(
                f"{p}: --metrics {','.join(self.given)}: every result holds one value; "
                "--metrics names the values of a result that holds several"
            )
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
        return OrderTrials(
            table,
            source_format,
            dict(self.failed),
            dict(self.statuses),
            metrics=self.metrics,
            metrics_from=self.metrics_from,
        )


def _parse(p: Path, text: str, metrics: tuple[str, ...] | None) -> OrderTrials:
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
    long = all(c in names for c in ORDER_COLUMNS if c != "value")
    if not long and ("order_type" in names or "run_num" in names):
        return _parse_ordersage(p, records(), names, metrics)
    return _parse_long(p, records(), names, metrics)


def _parse_assay_json(p: Path, text: str) -> OrderTrials:
    """The trials of an ``assay order --json`` document (its ``samples``, schema 1): the
    same table the study analysed, so the analysis of the file is the study's."""
    import json

    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise OrderDataError(f"{p}: not a readable JSON file ({exc}): {_EXPECTED}") from None
    if not isinstance(doc, dict) or doc.get("kind") != "order":
        kind = doc.get("kind") if isinstance(doc, dict) else None
        raise OrderDataError(
            f"{p}: a JSON file must be an 'assay order --json' result (kind 'order'), "
            f"got kind {kind!r}: {_EXPECTED}"
        )
    samples = doc.get("samples")
    if not isinstance(samples, list):
        raise OrderDataError(
            f"{p}: no 'samples' list (a result written before Assay kept its trials in "
            "the JSON): read the study's trials with 'assay export' instead"
        )
    host = any(isinstance(r, dict) and HOST_COLUMN in r for r in samples)
    rows = _Rows(p, host)
    for i, r in enumerate(samples):
        where = f"samples[{i}]"
        if not isinstance(r, dict):
            raise OrderDataError(
                f"{p}: {where}: expected an object with {', '.join(ORDER_COLUMNS)}"
            )
        test, order, run = r.get("test"), r.get("order"), r.get("run")
        position, value = r.get("position"), r.get("value")
        if not isinstance(test, str) or order not in ("fixed", "random"):
            raise OrderDataError(
                f"{p}: {where}: expected a 'test' name and an 'order' of fixed or random"
            )
        if isinstance(position, bool) or not isinstance(position, int) or position < 0:
            raise OrderDataError(f"{p}: {where}: 'position': expected a whole number >= 0")
        number = _float(str(value)) if isinstance(value, int | float) else None
        if number is None:
            raise OrderDataError(f"{p}: {where}: 'value': expected a finite number, got {value!r}")
        if isinstance(run, bool) or not isinstance(run, int | str):
            raise OrderDataError(f"{p}: {where}: 'run': expected a run id")
        rows.slot(i + 1, f"{order}:{run}", repr(run), position, test)
        # (fixed and random runs may share numbers in a study's table: the id keeps its
        # order, as the study's analysis tells its runs apart)
        rows.rows.append(
            (test, order, f"{order}:{run}", position, number, str(r.get(HOST_COLUMN, "")))
        )
    read = rows.result("assay")
    name, unit, direction = doc.get("pi"), doc.get("unit"), doc.get("direction")
    if isinstance(name, str) and name and direction in ("lower", "higher"):
        pi = (name, unit if isinstance(unit, str) else "", str(direction))
        return dataclasses.replace(read, pi=pi)
    return read


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


def _value_columns(
    p: Path, names: list[str], metrics: tuple[str, ...] | None
) -> list[tuple[int, str]]:
    """The long format's value columns when it has no ``value`` column: those
    ``--metrics`` names, else ``value_NAME`` ones (renamed by ``--metrics``); each with
    its metric's name.  Empty when there are none."""
    if metrics and all(m.lower() in names for m in metrics):
        return [(names.index(m.lower()), m) for m in metrics]
    from assay.importers.columns import metric_columns  # numpy, pandas: not at start-up

    found = metric_columns(names)
    if found and metrics and len(metrics) != len(found):
        columns = ", ".join(c for c, _ in found)
        raise OrderDataError(
            f"{p}: --metrics {','.join(metrics)}: {len(metrics)} names for {len(found)} value "
            f"columns ({columns})"
        )
    return [(names.index(c), metrics[i] if metrics else m) for i, (c, m) in enumerate(found)]


def _parse_long(
    p: Path,
    records: Iterable[tuple[int, list[str]]],
    names: list[str],
    metrics: tuple[str, ...] | None,
) -> OrderTrials:
    columns = _value_columns(p, names, metrics) if "value" not in names else []
    _missing(p, names, [c for c in ORDER_COLUMNS if c != "value" or not columns], _EXPECTED)
    at = {c: names.index(c) for c in ORDER_COLUMNS if c != "value" or not columns}
    host_at = names.index(HOST_COLUMN) if HOST_COLUMN in names else None
    metric_at = names.index(_METRIC_COLUMN) if _METRIC_COLUMN in names else None
    if metric_at is not None and (metrics or columns):
        raise OrderDataError(
            f"{p}: column 'metric' names each row's metric; "
            + ("--metrics is not used with it" if metrics else "one value column is expected")
        )
    out = _Rows(p, host_column=host_at is not None, given=None if columns else metrics)
    if columns:
        out.metrics = tuple(m for _, m in columns)
        out.metrics_from = (
            "value columns named by --metrics"
            if metrics
            else f"value columns {', '.join(names[i] for i, _ in columns)}"
        )
    seen: dict[str, None] = {}
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
        if metric_at is not None:
            metric = fields[metric_at].strip()
            if not metric:
                raise OrderDataError(
                    f"{p}: line {line}: column 'metric': empty; expected the metric's name"
                )
            seen.setdefault(metric)
            test = metric_test(test, metric)
        first = kinds.setdefault(run, (order, line))
        if first[0] != order:
            raise OrderDataError(
                f"{p}: line {line}: column 'order': run {run!r} is {first[0]} at line "
                f"{first[1]} but {order} here; every run has one kind of order"
            )
        out.slot(line, run, repr(run), position, test)
        host = fields[host_at].strip() if host_at is not None else ""
        if columns:
            for i, metric in columns:
                value = _value(p, line, names[i], fields[i])
                out.rows.append((metric_test(test, metric), order, run, position, value, host))
        elif metric_at is not None:  # one metric per row: one value
            value = _value(p, line, "value", fields[at["value"]])
            out.rows.append((test, order, run, position, value, host))
        else:
            values = out.values(line, "value", fields[at["value"]], test)
            out.add(test, order, run, position, values, host)
    if metric_at is not None and seen:
        out.metrics, out.metrics_from = tuple(seen), "column 'metric'"
    return out.result("long")


def _parse_ordersage(
    p: Path,
    records: Iterable[tuple[int, list[str]]],
    names: list[str],
    metrics: tuple[str, ...] | None,
) -> OrderTrials:
    tests = [c for c in _ORDERSAGE_TESTS if c in names]
    _missing(p, names, _ORDERSAGE_REQUIRED, _EXPECTED_ORDERSAGE)
    if not tests:
        _missing(p, names, ["exp_command"], _EXPECTED_ORDERSAGE)
    at = {c: names.index(c) for c in _ORDERSAGE_REQUIRED}
    test_at = [names.index(c) for c in tests]  # the command first, its number if empty
    host_at = names.index("hostname") if "hostname" in names else None
    out = _Rows(p, host_column=host_at is not None, given=metrics)
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
        out.slot(line, run, shown_run, position, test)
        status = fields[at["completion_status"]].strip()
        if status.lower() != "success":
            out.failed[test] += 1  # a failed trial: its result is not a reading
            out.statuses[status or "(empty)"] += 1
            continue
        values = out.values(line, "result", fields[at["result"]], test)
        out.add(test, kind, run, position, values, host)
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
