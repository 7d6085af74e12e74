"""Reading PI values out of what a trial produced: wall time, a regex on stdout,
a JSON path in stdout, or a file the command wrote.

Whatever the output, a read ends, in bounded memory, with finite readings small
enough to analyse or a :class:`ReadError` saying why: a PI's file is read only if it
is a regular file of at most :data:`~assay.execute.output.READ_CAP` bytes, and a
pattern searches within :data:`~assay.execute.output.MATCH_TIME_LIMIT_S`.

>>> read_json_path({"a": {"b": [1.5, 2.5]}}, "a.b[1]")
2.5
>>> parse_numbers("1.0\\n2e3 3")
[1.0, 2000.0, 3.0]
"""

from __future__ import annotations

import io
import json
import math
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import numpy.typing as npt

from assay.execute.command import CommandResult
from assay.execute.output import READ_CAP, Match, iter_matches
from assay.inputfile import InputFileError, is_kernel_path, read_bounded
from assay.spec import PISpec, UnitsSpec
from assay.stats._arrays import too_large_to_analyse

FloatArray = npt.NDArray[np.float64]


class ReadError(ValueError):
    """A PI could not be read from a trial's output; the message says what was looked for."""


_PATH_TOKEN = re.compile(r"([^.\[\]]+)|\[(-?\d+)\]")


def read_json_path(doc: Any, path: str) -> Any:
    """Follow a dotted path with ``[index]`` parts (``result.lat[0]``) into parsed JSON."""
    cur = doc
    pos = 0
    for m in _PATH_TOKEN.finditer(path):
        if m.start() != pos and path[pos : m.start()] != ".":
            raise ReadError(f"bad JSON path {path!r} near position {pos}")
        pos = m.end()
        key, index = m.group(1), m.group(2)
        try:
            cur = cur[int(index)] if index is not None else cur[key]
        except (KeyError, IndexError, TypeError, ValueError):  # ValueError: a 5000-digit index
            raise ReadError(
                f"JSON path {path!r}: no {key or '[' + str(index) + ']'!s} here"
            ) from None
    if pos != len(path):
        raise ReadError(f"bad JSON path {path!r} near position {pos}")
    return cur


# a word of one comma between digits ("1,5") among words split by spaces or ';' is a
# decimal comma (or a thousands separator), not a list of two numbers
_COMMA_WORD = re.compile(r"(?:\A|(?<=[\s;]))[-+]?\d+,\d+(?=[\s;]|\Z)")


def parse_numbers(text: str) -> list[float]:
    """Whitespace- or comma-separated numbers.

    Numbers split by spaces (or ``;``) where one is written ``1,5`` are ambiguous:
    ``1,5 2,5`` is two readings with decimal commas, not four; that is an error.

    >>> parse_numbers("1.5,2.5,3.5")
    [1.5, 2.5, 3.5]
    >>> parse_numbers("1,5 2,5")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    assay.execute.readers.ReadError: '1,5': a decimal comma or a thousands separator? ...
    """
    # str.split() and re's \s split at the same characters; a million numbers take
    # 0.1 s this way, 2 s a word at a time
    words = text.replace(";", " ").split()
    comma = "," in text
    if comma and len(words) > 1 and (m := _COMMA_WORD.search(text)):
        w = m.group(0)[:40]
        raise ReadError(
            f"{w!r}: a decimal comma or a thousands separator? the numbers are split by "
            f"spaces or ';', so write {w.replace(',', '.')!r} or {w.replace(',', '')!r}"
        )
    toks = [t for t in ",".join(words).split(",") if t] if comma else words
    try:
        return list(map(float, toks))
    except ValueError:
        for tok in toks:
            try:
                float(tok)
            except ValueError:
                raise ReadError(f"{tok[:40]!r} is not a number") from None
        raise


def _as_float(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ReadError(f"{what}: expected a number, got {type(value).__name__}")
    try:
        x = float(value)
    except OverflowError:  # an integer beyond float's range, e.g. from JSON
        # str() of an int refuses over 4300 digits: give its size from its bits
        digits = int(int(value).bit_length() * math.log10(2)) + 1
        raise ReadError(
            f"{what}: an integer of about {digits} digits, beyond the range of a "
            "floating-point number"
        ) from None
    except ValueError:
        raise ReadError(f"{what}: {str(value)[:40]!r} is not a number") from None
    if not math.isfinite(x):
        shown = f" ({value[:40]!r})" if isinstance(value, str) else ""
        raise ReadError(f"{what}: value is {x}{shown}, not a finite number")
    return x


def _analysable(x: FloatArray, what: str) -> FloatArray:
    """Finite ``x``, checked to be small enough to analyse."""
    top = too_large_to_analyse(x)
    if top is None:
        return x
    if x.size == 1:
        raise ReadError(
            f"{what}: a reading of {top:.3g} is too large to analyse (its square overflows "
            "a float); expected a measurement"
        )
    raise ReadError(
        f"{what}: values up to {top:.3g} are too large to analyse (their squares overflow "
        "a float); expected measurements"
    )


def _finite(values: list[float], what: str) -> FloatArray:
    """The parsed numbers as readings: all at once, as :func:`_as_float` takes each."""
    x = np.asarray(values, dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(x))
    if bad.size:
        _as_float(float(x[bad[0]]), what)  # raises, with the message of one value
    return _analysable(x, what)


def _file_path(file: str, cwd: str | None) -> Path:
    p = Path(file)
    return Path(cwd) / p if not p.is_absolute() and cwd else p


def _read_file(p: Path, what: str) -> TextIO:
    """A PI's file as text, if it is a regular file of at most ``READ_CAP`` bytes
    (:func:`assay.inputfile.read_bounded`: a link to one, a benchmark's ``latest ->
    run-3.txt``, is followed; a FIFO, a device or a folder is refused at once).  A larger
    file is an error rather than its head: a cut list of unit readings would be stored
    as the whole."""
    real = os.path.realpath(p)
    if is_kernel_path(real):  # a link to /proc/self/environ, say
        raise ReadError(
            f"{what}: {p} leads to {real}, a file of the kernel's, not one the command "
            "wrote: not read"
        )
    try:
        data = read_bounded(p, READ_CAP)
    except InputFileError as exc:
        raise ReadError(f"{what}: {p} {exc}") from None
    # universal newlines, as the file's reading always had
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace")


def _open(result: CommandResult, file: str | None, cwd: str | None, what: str) -> TextIO:
    """The whole of stdout (not the stored cut), or the PI's file, as text."""
    if file is not None:
        return _read_file(_file_path(file, cwd), what)
    try:
        return result.stdout_stream()
    except OSError as exc:  # the spool's temporary file could not be written
        raise ReadError(f"{what}: cannot read the output: {exc.strerror or exc}") from None


def _text_of(result: CommandResult, file: str | None, cwd: str | None, what: str) -> str:
    if file is None:
        size = result.output.size if result.output is not None else len(result.stdout)
        if size > READ_CAP:
            raise ReadError(
                f"{what}: the output is {size} bytes, more than the {READ_CAP >> 20} MiB "
                f"({READ_CAP} bytes) a JSON or number reading reads whole; expected less "
                "output (a 'pattern' reads any length)"
            )
    with _open(result, file, cwd, what) as stream:
        try:
            return stream.read()
        except OSError as exc:
            raise ReadError(f"{what}: cannot read the output: {exc.strerror or exc}") from None


def _matches(
    pattern: str, result: CommandResult, file: str | None, cwd: str | None, what: str
) -> Iterator[Match]:
    """The pattern's matches (``re.MULTILINE``), in order, searched as a stream, so
    memory stays flat however long stdout is.  Positions are in ``m.string``."""
    with _open(result, file, cwd, what) as stream:
        try:
            yield from iter_matches(pattern, stream)
        except TimeoutError as exc:
            raise ReadError(
                f"{what}: pattern {pattern[:80]!r}: {exc} on this output; expected a "
                "pattern that does not backtrack without end (a repeat of a repeat, "
                "such as '(a+)+' or '(a|aa)+'?)"
            ) from None
        except OSError as exc:
            raise ReadError(f"{what}: cannot read the output: {exc.strerror or exc}") from None
        except ValueError as exc:
            raise ReadError(f"{what}: pattern {pattern[:80]!r} {exc}") from None


def _load_json(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReadError(f"{what}: output is not JSON ({exc.msg} at line {exc.lineno})") from None
    except ValueError as exc:  # an integer of more than 4300 digits
        raise ReadError(f"{what}: output JSON cannot be read: {str(exc)[:120]}") from None
    except RecursionError:
        raise ReadError(f"{what}: output JSON is nested too deeply to read") from None


# what may go on after a number: more digits, a decimal point (or a comma, unless the
# number has its point) and digits, an exponent; what may come before it: digits or a
# point; and a minus sign after a non-word character ("= -2", not "id-2")
_NUMBER_GOES_ON = re.compile(r"\d|\.\d|,\d|[eE][+-]?\d")
_NUMBER_STARTED = re.compile(r"(?:\d|\d[.,]|\.)\Z")
_MINUS = re.compile(r"(?:\A|[^\w.])-\Z")
# the characters, digits aside, that _NUMBER_GOES_ON may start with, and that
# _NUMBER_STARTED or _MINUS may end with
_GOES_ON_FIRST = frozenset(".,eE")
_ENDS_ON = frozenset(".,-")


def _matched_number(m: Match, text: str, what: str) -> float:
    """The number in the pattern's first group, refusing one the group cut short.

    ``([0-9.]+)`` on ``1,5`` captures ``1``, on ``1.5e3`` ``1.5`` and on ``-2`` ``2``:
    each a wrong reading, stored as if true.  Where the group is at the edge of the
    match, the characters just outside it must not continue the number; a minus sign
    just before it is its sign even where the pattern took it (``\\D*``).
    """
    value = m.group(1)
    if value is None:
        raise ReadError(f"{what}: the pattern's first group matched nothing in {m.group(0)[:40]!r}")
    start, end = m.span(1)
    at_end = end == m.end()
    # the common case, a million times a trial with unit readings: no character next to
    # the number that could continue it (the checks below cost 2 us a number)
    nxt = text[end : end + 1] if at_end else ""
    prev = text[start - 1 : start] if start else ""
    if not (nxt in _GOES_ON_FIRST or nxt.isdecimal() or prev in _ENDS_ON or prev.isdecimal()):
        try:
            x = float(value)
        except ValueError:
            x = math.nan
        return x if math.isfinite(x) else _as_float(value, what)  # that raises, with why
    after = text[end : end + 3] if at_end else ""
    before = text[max(start - 3, 0) : start]
    goes_on = _NUMBER_GOES_ON.match(after)
    if goes_on and goes_on.group(0).startswith(",") and "." in value:
        goes_on = None  # "1.5,2.5": a list of numbers with decimal points
    cut = goes_on or (start == m.start(0) and _NUMBER_STARTED.search(before))
    if cut or (value[:1].isdigit() and _MINUS.search(before)):
        around = text[max(start - 10, 0) : end + 10].strip()
        if len(around) > 70:
            around = around[:40] + "…" + around[-20:]
        raise ReadError(
            f"{what}: the pattern's group took {value[:40]!r} out of {around!r}, only part "
            "of the number there (a decimal comma, an exponent or a sign?); widen the "
            "group, e.g. '([-+0-9.eE]+)'"
        )
    return _as_float(value, what)


def read_reading(pi: PISpec, result: CommandResult, cwd: str | None = None) -> float:
    """The PI's one reading for this trial."""
    what = f"PI '{pi.name}'"
    if pi.source == "wall_time":
        return result.duration
    file = pi.file if pi.source == "file" else None
    if pi.pattern:
        m = next(_matches(pi.pattern, result, file, cwd, what), None)
        if m is None:
            raise ReadError(f"{what}: pattern {pi.pattern!r} matched nothing in the output")
        x = _matched_number(m, m.string, what)
    elif pi.path:
        text = _text_of(result, file, cwd, what)
        x = _as_float(read_json_path(_load_json(text, what), pi.path), what)
    else:
        nums = parse_numbers(_text_of(result, file, cwd, what))
        if len(nums) != 1:
            raise ReadError(f"{what}: expected one number in {pi.file}, found {len(nums)}")
        x = _as_float(nums[0], what)
    return float(_analysable(np.array([x]), what)[0])


def read_unit_readings(
    units: UnitsSpec, pi_name: str, result: CommandResult, cwd: str | None = None
) -> FloatArray:
    """All unit readings (one per unit of work) for this trial, in order."""
    what = f"unit readings of PI '{pi_name}'"
    file = units.file if units.source == "file" else None
    if units.pattern:
        values = [
            _matched_number(m, m.string, what)
            for m in _matches(units.pattern, result, file, cwd, what)
        ]
        return _analysable(np.asarray(values, dtype=np.float64), what)
    text = _text_of(result, file, cwd, what)
    if units.path:
        node = read_json_path(_load_json(text, what), units.path)
        if not isinstance(node, list):
            raise ReadError(f"{what}: JSON path {units.path!r} is not a list")
        return _finite(_json_numbers(node, what), what)
    return _finite(parse_numbers(text), what)


def _json_numbers(node: list[Any], what: str) -> list[float]:
    """A JSON list's numbers; a list of plain numbers (not true/false) in one step."""
    if set(map(type, node)) <= {int, float}:
        try:
            return list(map(float, node))
        except OverflowError:  # an integer beyond float's range: _as_float says which
            pass
    return [_as_float(v, what) for v in node]
