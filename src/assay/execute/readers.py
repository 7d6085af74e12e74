"""Reading PI values out of what a trial produced: wall time, a regex on stdout,
a JSON path in stdout, or a file the command wrote.

>>> read_json_path({"a": {"b": [1.5, 2.5]}}, "a.b[1]")
2.5
>>> parse_numbers("1.0\\n2e3 3")
[1.0, 2000.0, 3.0]
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from assay.execute.command import CommandResult
from assay.execute.output import iter_matches
from assay.spec import PISpec, UnitsSpec


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
_COMMA_NUMBER = re.compile(r"[-+]?\d+,\d+")


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
    words = [w for w in re.split(r"[\s;]+", text.strip()) if w]
    if len(words) > 1:
        for w in words:
            if _COMMA_NUMBER.fullmatch(w):
                raise ReadError(
                    f"{w[:40]!r}: a decimal comma or a thousands separator? the numbers are "
                    f"split by spaces or ';', so write {w[:40].replace(',', '.')!r} or "
                    f"{w[:40].replace(',', '')!r}"
                )
    out: list[float] = []
    for w in words:
        for tok in w.split(","):
            if tok:
                try:
                    out.append(float(tok))
                except ValueError:
                    raise ReadError(f"{tok[:40]!r} is not a number") from None
    return out


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


def _text_of(result: CommandResult, file: str | None, cwd: str | None, what: str) -> str:
    if file is None:
        try:
            with result.stdout_stream() as stream:  # the whole of stdout, not the stored cut
                return stream.read()
        except OSError as exc:  # the spool's temporary file could not be written
            raise ReadError(f"{what}: cannot read the output: {exc.strerror or exc}") from None
    p = Path(file)
    if not p.is_absolute() and cwd:
        p = Path(cwd) / p
    try:
        return p.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ReadError(f"{what}: cannot read {p}: {exc.strerror or exc}") from None
    except ValueError as exc:  # a NUL in the name
        raise ReadError(f"{what}: cannot read {str(p)!r}: {exc}") from None


def _matches(
    pattern: str, result: CommandResult, file: str | None, cwd: str | None, what: str
) -> Iterator[re.Match[str]]:
    """The pattern's matches (``re.MULTILINE``), in order; stdout is searched as a
    stream, so memory stays flat however long it is.  Positions are in ``m.string``."""
    if file is not None:
        yield from re.finditer(pattern, _text_of(result, file, cwd, what), flags=re.MULTILINE)
        return
    try:
        stream = result.stdout_stream()
    except OSError as exc:
        raise ReadError(f"{what}: cannot read the output: {exc.strerror or exc}") from None
    with stream:
        yield from iter_matches(pattern, stream)


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


def _matched_number(m: re.Match[str], text: str, what: str) -> float:
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
    after = text[end : end + 3] if end == m.end(0) else ""
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
    text = "" if pi.pattern else _text_of(result, file, cwd, what)
    if pi.pattern:
        m = next(_matches(pi.pattern, result, file, cwd, what), None)
        if m is None:
            raise ReadError(f"{what}: pattern {pi.pattern!r} matched nothing in the output")
        return _matched_number(m, m.string, what)
    if pi.path:
        return _as_float(read_json_path(_load_json(text, what), pi.path), what)
    nums = parse_numbers(text)
    if len(nums) != 1:
        raise ReadError(f"{what}: expected one number in {pi.file}, found {len(nums)}")
    return _as_float(nums[0], what)


def read_unit_readings(
    units: UnitsSpec, pi_name: str, result: CommandResult, cwd: str | None = None
) -> np.ndarray:
    """All unit readings (one per unit of work) for this trial, in order."""
    what = f"unit readings of PI '{pi_name}'"
    file = units.file if units.source == "file" else None
    text = "" if units.pattern else _text_of(result, file, cwd, what)
    if units.pattern:
        values = [
            _matched_number(m, m.string, what)
            for m in _matches(units.pattern, result, file, cwd, what)
        ]
    elif units.path:
        node = read_json_path(_load_json(text, what), units.path)
        if not isinstance(node, list):
            raise ReadError(f"{what}: JSON path {units.path!r} is not a list")
        values = [_as_float(v, what) for v in node]
    else:
        values = [_as_float(v, what) for v in parse_numbers(text)]
    return np.asarray(values, dtype=np.float64)
