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
from pathlib import Path
from typing import Any

import numpy as np

from assay.execute.command import CommandResult
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
        except (KeyError, IndexError, TypeError):
            raise ReadError(
                f"JSON path {path!r}: no {key or '[' + str(index) + ']'!s} here"
            ) from None
    if pos != len(path):
        raise ReadError(f"bad JSON path {path!r} near position {pos}")
    return cur


def parse_numbers(text: str) -> list[float]:
    """Whitespace- or comma-separated numbers."""
    out: list[float] = []
    for tok in re.split(r"[\s,;]+", text.strip()):
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
    except ValueError:
        raise ReadError(f"{what}: {str(value)[:40]!r} is not a number") from None
    if not math.isfinite(x):
        raise ReadError(f"{what}: value is {x}, not a finite number")
    return x


def _text_of(result: CommandResult, file: str | None, cwd: str | None, what: str) -> str:
    if file is None:
        return result.stdout.decode("utf-8", errors="replace")
    p = Path(file)
    if not p.is_absolute() and cwd:
        p = Path(cwd) / p
    try:
        return p.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ReadError(f"{what}: cannot read {p}: {exc.strerror or exc}") from None


def _load_json(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReadError(f"{what}: output is not JSON ({exc.msg} at line {exc.lineno})") from None


def read_reading(pi: PISpec, result: CommandResult, cwd: str | None = None) -> float:
    """The PI's one reading for this trial."""
    what = f"PI '{pi.name}'"
    if pi.source == "wall_time":
        return result.duration
    text = _text_of(result, pi.file if pi.source == "file" else None, cwd, what)
    if pi.pattern:
        m = re.search(pi.pattern, text, flags=re.MULTILINE)
        if m is None:
            raise ReadError(f"{what}: pattern {pi.pattern!r} matched nothing in the output")
        return _as_float(m.group(1), what)
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
    text = _text_of(result, units.file if units.source == "file" else None, cwd, what)
    if units.pattern:
        values = [
            _as_float(m.group(1), what)
            for m in re.finditer(units.pattern, text, flags=re.MULTILINE)
        ]
    elif units.path:
        node = read_json_path(_load_json(text, what), units.path)
        if not isinstance(node, list):
            raise ReadError(f"{what}: JSON path {units.path!r} is not a list")
        values = [_as_float(v, what) for v in node]
    else:
        values = [_as_float(v, what) for v in parse_numbers(text)]
    return np.asarray(values, dtype=np.float64)
