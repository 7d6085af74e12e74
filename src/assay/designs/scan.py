"""Parameter scans, hyperfine's way: ``-P t 1 4`` (with ``-D`` a step), ``-L t a,b,c``.

A scan is one command with placeholders and the values to put in them; each value (each
combination, with several ``-L``) becomes a variant of one interleaved comparison, so
that drift cannot fake a trend.  This module is pure: it turns the options into the
variants, named as hyperfine names them (the command with the values put in).

>>> axes = [range_axis("t", "1", "3")]
>>> [v.name for v in scan_variants(["sleep", "0.0{t}"], axes)]
['sleep 0.01', 'sleep 0.02', 'sleep 0.03']
>>> grid = [list_axis("a", "x,y"), list_axis("b", "1,2")]
>>> [v.params for v in scan_variants(["echo", "{a}{b}"], grid)]
[{'a': 'x', 'b': 1}, {'a': 'x', 'b': 2}, {'a': 'y', 'b': 1}, {'a': 'y', 'b': 2}]
"""

from __future__ import annotations

import itertools
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from assay.template import render

#: More variants than this is a sweep, not a scan: ``assay sweep`` samples them.
MAX_SCAN_VARIANTS = 100

Value = int | float | str

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class ScanError(ValueError):
    """A scan option that cannot be used: one message naming the option."""


@dataclass(frozen=True)
class ScanAxis:
    """One scanned parameter and its values, in scan order."""

    name: str
    values: tuple[Value, ...]
    option: str  # how it was given: "-P" or "-L"

    @property
    def numeric(self) -> bool:
        return all(isinstance(v, int | float) for v in self.values)


@dataclass(frozen=True)
class ScanVariant:
    """A variant of the comparison: its name (the command with the values put in) and
    the values (the variant's ``params``)."""

    name: str
    params: dict[str, Value]


def _number(text: str, option: str, what: str) -> Decimal:
    try:
        value = Decimal(text.strip())
    except InvalidOperation:
        raise ScanError(f"{option}: {what} {text!r} is not a number") from None
    if not value.is_finite():
        raise ScanError(f"{option}: {what} {text!r} is not a finite number")
    return value


def _plain(value: Decimal) -> int | float:
    """An integral value as an int (``{t}`` -> ``3``, not ``3.0``), else a float."""
    return int(value) if value == value.to_integral_value() else float(value)


def _check_name(name: str, option: str) -> str:
    if not _NAME.fullmatch(name):
        raise ScanError(
            f"{option} {name!r}: a parameter name is letters, digits and _ (not first), "
            "as in the command's {name} placeholder"
        )
    return name


def range_axis(name: str, low: str, high: str, step: str | None = None) -> ScanAxis:
    """``-P NAME LOW HIGH`` (``-D STEP``): LOW, LOW+STEP, ... up to HIGH, in decimal
    arithmetic (``-D 0.1`` gives 0.3, not 0.30000000000000004).  Without ``-D`` the
    bounds must be integers and the step is 1, as in hyperfine.

    >>> range_axis("x", "0", "1", "0.25").values
    (0, 0.25, 0.5, 0.75, 1)
    """
    _check_name(name, "-P")
    lo, hi = _number(low, "-P", "LOW"), _number(high, "-P", "HIGH")
    if step is None:
        if lo != lo.to_integral_value() or hi != hi.to_integral_value():
            raise ScanError(
                f"-P {name} {low} {high}: without -D the bounds must be integers; give the "
                "step with -D (e.g. -D 0.1)"
            )
        delta = Decimal(1)
    else:
        delta = _number(step, "-D", "STEP")
        if delta <= 0:
            raise ScanError(f"-D {step}: the step must be positive")
    if hi < lo:
        raise ScanError(f"-P {name} {low} {high}: HIGH is below LOW")
    count = int((hi - lo) / delta) + 1
    if count > MAX_SCAN_VARIANTS:
        raise ScanError(
            f"-P {name} {low} {high}: {count} values, more than {MAX_SCAN_VARIANTS}; take a "
            "larger step (-D) or sample the range with 'assay sweep'"
        )
    if count < 2:
        raise ScanError(f"-P {name} {low} {high}: one value; a scan needs two or more")
    return ScanAxis(name, tuple(_plain(lo + i * delta) for i in range(count)), "-P")


def list_axis(name: str, values: str) -> ScanAxis:
    """``-L NAME A,B,C``: the values as given, in order (numbers read as numbers, so a
    numeric list gets a fitted trend)."""
    _check_name(name, "-L")
    items = values.split(",")
    if any(not v for v in items):
        raise ScanError(f"-L {name} {values!r}: an empty value between commas")
    if len(set(items)) != len(items):
        raise ScanError(f"-L {name} {values!r}: a value given twice")
    return ScanAxis(name, tuple(_list_value(v) for v in items), "-L")


def _list_value(text: str) -> Value:
    try:
        value = Decimal(text)
    except InvalidOperation:
        return text
    # "01" or "1e3" stay as written in the command: only plain numbers are numbers
    return _plain(value) if value.is_finite() and str(_plain(value)) == text else text


def scan_variants(command: Sequence[str], axes: Sequence[ScanAxis]) -> list[ScanVariant]:
    """One variant per combination of the axes' values (the first axis outermost),
    named by the command with the values put in; :class:`ScanError` when a parameter
    is named twice, is not used by the command, or the grid is too large."""
    names = [a.name for a in axes]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ScanError(f"the parameter {twice[0]!r} is scanned twice")
    text = " ".join(command)
    unused = [n for n in names if "{" + n + "}" not in text]
    if unused:
        raise ScanError(
            f"the scanned parameter {unused[0]!r} is not in the command: write "
            f"{{{unused[0]}}} where its value goes (e.g. sleep 0.0{{{unused[0]}}})"
        )
    total = 1
    for a in axes:
        total *= len(a.values)
    if total > MAX_SCAN_VARIANTS:
        raise ScanError(
            f"the scan has {total} combinations, more than {MAX_SCAN_VARIANTS}: sample "
            "the grid with 'assay sweep' instead"
        )
    variants: list[ScanVariant] = []
    for combo in itertools.product(*(a.values for a in axes)):
        params = dict(zip(names, combo, strict=True))
        try:
            words = [render(w, params) for w in command]
        except KeyError as exc:
            raise ScanError(
                f"the command has a placeholder that is not scanned: {exc.args[0]}"
            ) from None
        name = words[0] if len(words) == 1 else shlex.join(words)
        variants.append(ScanVariant(name, params))
    seen: set[str] = set()
    for v in variants:  # "-L x a,a " cannot happen, but values may render alike
        if v.name in seen:
            raise ScanError(f"two values of the scan give the same command: {v.name}")
        seen.add(v.name)
    return variants
