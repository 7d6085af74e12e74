"""Reading a CSV of measurements someone else collected (``--from`` of sweep and knobs):
the file itself (:func:`read_csv_frame`), and its rows and columns read the same way
for both commands (:func:`read_measurements`)."""

from __future__ import annotations

import io
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from assay.importers.columns import OneHotGroup


def _numeric(cells: pd.Series) -> pd.Series:
    """``cells`` as numbers (NaN where one is not a number).  pandas reads a column of
    integers of some 400 digits as Python ints and then fails to make floats of them
    (OverflowError): such a column is read again as text, each cell as a float (inf)."""
    try:
        return pd.to_numeric(cells, errors="coerce")
    except OverflowError:
        return pd.to_numeric(cells.astype(str).map(_as_float), errors="coerce")


def _as_float(text: str) -> float:
    try:
        return float(text)
    except (ValueError, OverflowError):
        return math.nan


#: The largest CSV of results read (``--from``): some hundred thousand rows.
MAX_CSV_BYTES = 256 << 20


def read_csv_frame(
    path: str | Path, error: Callable[[str], Exception], *, expected: str, noun: str = "file"
) -> pd.DataFrame:
    """The CSV at ``path`` as a data frame with string column names.

    Anything that is not a readable regular CSV file (missing, a folder, a FIFO that
    would block, not UTF-8, not CSV, empty) raises ``error(message)``; the message
    names the file and says what was ``expected``.

    >>> read_csv_frame("/nonexistent.csv", ValueError, expected="a header row")
    Traceback (most recent call last):
    ValueError: /nonexistent.csv: no such file
    """
    from assay.inputfile import InputFileError, read_bounded

    p = Path(path)
    if not os.path.lexists(p):
        raise error(f"{p}: no such {noun}")
    try:  # a FIFO, /dev/zero or a huge file is refused, not read for ever
        raw = read_bounded(p, MAX_CSV_BYTES)
    except InputFileError as exc:
        raise error(f"{p}: {exc}; expected a CSV file with {expected}") from None
    try:
        frame = pd.read_csv(io.BytesIO(raw), skipinitialspace=True)
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise error(f"{p}: cannot read it as CSV ({exc}); expected {expected}") from None
    frame.columns = [str(c) for c in frame.columns]
    return frame


@dataclass
class Measurements:
    """A results CSV read for an analysis: one row per trial, the parameter columns and
    the metric columns; the frame's index is each row's line in the file."""

    frame: pd.DataFrame
    params: list[str]
    metrics: list[str]
    rows_read: int  # data rows in the file
    notes: list[str] = field(default_factory=list)  # what was done to the data, and why
    warnings: list[str] = field(default_factory=list)  # what looks wrong in it
    excluded: list[tuple[str, str]] = field(default_factory=list)  # (column, reason)
    one_hot: list[OneHotGroup] = field(default_factory=list)
    rounds: dict[str, list[str]] = field(default_factory=dict)  # metric -> its round columns

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON: how the file was read."""
        return {
            "rows_read": self.rows_read,
            "rows_used": len(self.frame),
            "params": self.params,
            "excluded": [{"column": c, "reason": r} for c, r in self.excluded],
            "one_hot": [
                {"param": g.name, "columns": list(g.columns), "levels": list(g.levels)}
                for g in self.one_hot
            ],
            "repetition_columns": self.rounds,
            "notes": self.notes,
            "warnings": self.warnings,
        }


def _shown(value: Any) -> str:
    """A cell as the file had it: ``'fast'``, ``'nan'`` (never ``np.float64(nan)``)."""
    return repr(str(value))


#: Largest magnitude a number read for an analysis may have: beyond any measurement or
#: setting, and far below where the models' sums of squares overflow (~1e154).
MAX_MAGNITUDE = 1e100


def _check_magnitude(
    frame: pd.DataFrame, column: str, p: Path, error: Callable[[str], Exception], way_out: str
) -> None:
    """Refuse an infinite number or one beyond :data:`MAX_MAGNITUDE` in a numeric
    ``column``, naming the file, the column and the line of the first; ``way_out``
    ends the message (``{value}`` is replaced by the value)."""
    if not pd.api.types.is_numeric_dtype(frame[column]):
        return
    a = frame[column].to_numpy(dtype=float, na_value=np.nan)
    huge = np.abs(a) > MAX_MAGNITUDE  # infinities too; NaN compares False
    if huge.any():
        at = int(np.flatnonzero(huge)[0])
        value = repr(float(a[at]))  # as exactly as --drop-value needs it
        what = "is not a finite number" if np.isinf(a[at]) else "is too large to analyse"
        raise error(
            f"{p}: column {column!r}, line {frame.index[at]}: {value} {what} "
            f"({int(huge.sum())} such row(s)); expected a number within ±{MAX_MAGNITUDE:g}, "
            f"{way_out.format(value=value)}"
        )


def _lines(index: pd.Index, mask: np.ndarray, limit: int = 5) -> str:
    where = [str(i) for i in index[mask][:limit]]
    more = int(mask.sum()) - len(where)
    return ", ".join(where) + (f" and {more} more" if more > 0 else "")


def _melt(
    frame: pd.DataFrame, rounds: dict[str, list[str]], p: Path, error: Callable[[str], Exception]
) -> pd.DataFrame:
    """One row per round: the round columns of each metric become that metric."""
    counts = {len(c) for c in rounds.values()}
    if len(counts) > 1:
        raise error(
            f"{p}: the metrics have different numbers of round columns ("
            + "; ".join(f"{m}: {', '.join(c)}" for m, c in rounds.items())
            + "); expected the same rounds for each"
        )
    drop = [c for cols in rounds.values() for c in cols]
    base = frame.drop(columns=drop)
    parts = []
    for j in range(counts.pop()):
        part = base.copy()
        for metric, cols in rounds.items():
            part[metric] = frame[cols[j]]
        parts.append(part)
    return pd.concat(parts)


def read_measurements(
    path: str | Path,
    metrics: Sequence[str],
    error: Callable[[str], Exception],
    *,
    params: Sequence[str] | None = None,
    extra: Sequence[str] = (),
    option: str = "--params",
    repetitions: str | None = None,
    one_hot: str = "auto",
    drop_values: Sequence[float] = (),
    noun: str = "file",
    expected: str = "a header row naming the parameters and the metric, then one row per "
    "measured trial or setting",
) -> Measurements:
    """Read a results CSV the same way for ``sweep --from`` and ``knobs --from``.

    * ``metrics`` (then ``extra``, PIs an objective needs) must be columns, or have
      round columns (``tput_1, tput_2``: ``repetitions`` names them, else they are
      detected), which become one row per round;
    * a metric cell that is empty is a failed trial: its row is dropped, with a note;
      text or an infinite number is an error naming the line; rows whose metric is in
      ``drop_values`` are dropped too; a value that repeats suspiciously (0 in 63% of
      the rows) gets a warning;
    * the parameters are ``params``, or every other column except those that look like
      PIs or row ids (listed with their reason) and constant columns (a note);
    * ``one_hot="auto"``: 0/1 columns of which exactly one is 1 per row become one
      categorical parameter;
    * a parameter cell must not be empty;
    * a number, metric or parameter, must lie within ±:data:`MAX_MAGNITUDE` (1e308 is
      finite, but its square is not).

    Every refusal is ``error(message)``, the message naming the file, the column, the
    line and what was expected.
    """
    from assay.importers.columns import (
        metric_like,
        one_hot_groups,
        repetition_columns,
        row_id_like,
        sentinel_value,
    )

    p = Path(path)
    raw = read_csv_frame(p, error, expected=expected, noun=noun)
    raw.index = pd.RangeIndex(2, len(raw) + 2)  # the line of each row (after the header)
    columns = list(raw.columns)
    pis = list(dict.fromkeys([*metrics, *extra]))
    out = Measurements(raw, [], pis, len(raw))
    for i, metric in enumerate(pis):
        cols = repetition_columns(columns, metric, repetitions if i == 0 else None)
        missing = [c for c in cols if c not in columns]
        if missing or (repetitions and i == 0 and not cols):
            raise error(
                f"{p}: --repetitions {repetitions!r}: no column "
                f"{', '.join(map(repr, missing)) or 'matches'}; the columns are: "
                f"{', '.join(columns)}"
            )
        if cols:
            out.rounds[metric] = cols
            out.notes.append(
                f"{metric}: the {len(cols)} columns {', '.join(cols)} are read as repetitions "
                "(one per round) of each row's setting"
            )
    frame = _melt(raw, out.rounds, p, error) if out.rounds else raw.copy()
    for metric in pis:
        if metric not in frame.columns:
            hint = "" if metric in out.rounds else " (one column per round? name them with "
            hint += "--repetitions 'NAME_*')" if hint else ""
            raise error(
                f"{p}: no column {metric!r} for the metric{hint}; the columns are: "
                f"{', '.join(columns)}"
            )
    keep = np.ones(len(frame), dtype=bool)
    for metric in pis:
        cells = frame[metric]
        values = _numeric(cells)
        a = values.to_numpy(dtype=float, na_value=np.nan)
        text = (values.isna() & cells.notna()).to_numpy() | np.isinf(a)
        if text.any():
            at = int(np.flatnonzero(text)[0])
            raise error(
                f"{p}: column {metric!r}, line {frame.index[at]}: {_shown(cells.iloc[at])} is "
                f"not a finite number ({int(text.sum())} such row(s)); expected a number, or "
                "an empty cell for a failed trial"
            )
        frame[metric] = values
        empty = np.isnan(a) & keep
        if empty.any():
            out.notes.append(
                f"dropped {int(empty.sum())} row(s) with no {metric} value (failed trials; "
                f"lines {_lines(frame.index, empty)})"
            )
            keep &= ~empty
        for v in drop_values:
            hit = (a == v) & keep
            if hit.any():
                out.notes.append(
                    f"dropped {int(hit.sum())} row(s) whose {metric} is {v:g} (--drop-value)"
                )
                keep &= ~hit
    frame = frame[keep]
    for metric in pis:
        # after --drop-value: a failed run coded as 1e308 can be left out that way
        way_out = "or, if it codes a failed trial, leave such rows out with --drop-value {value}"
        _check_magnitude(frame, metric, p, error, way_out)
    for metric in pis:
        found = sentinel_value(frame[metric].to_numpy(dtype=float))
        if found is not None:
            v, n = found
            out.warnings.append(
                f"{metric} is exactly {v:g} in {n} of {len(frame)} rows ({n / len(frame):.0%}): "
                "failed runs coded as a value? They are analysed as measurements; leave "
                f"them out with --drop-value {v:g}"
            )
    rounds = {c for cols in out.rounds.values() for c in cols}
    if params:
        for name in params:
            if name not in frame.columns:
                raise error(
                    f"{p}: no column {name!r} for {option}; the columns are: {', '.join(columns)}"
                )
        chosen = list(dict.fromkeys(params))
    else:
        chosen, ids = [], []
        for c in columns:
            if c in pis or c in rounds:
                continue
            reason = metric_like(c)
            if reason:
                out.excluded.append((c, reason))
            elif frame[c].nunique(dropna=False) <= 1:
                out.notes.append(f"column {c} has a single value: not a parameter")
            else:
                chosen.append(c)
                if (why := row_id_like(raw[c])) is not None:
                    ids.append((c, why))
        # a column of row numbers takes a new value in every row: beside other parameters
        # it cannot be one (it would explain everything); alone, it is a 1-D sweep
        if len(ids) < len(chosen):
            out.excluded += ids
            chosen = [c for c in chosen if c not in dict(ids)]
        if out.excluded:
            out.notes.append(
                "left out: "
                + "; ".join(f"{c} ({r})" for c, r in out.excluded)
                + f"; name the parameters with {option} to use them"
            )
    for name in chosen:
        empty = frame[name].isna().to_numpy()
        if empty.any():
            raise error(
                f"{p}: column {name!r}, line {frame.index[int(np.flatnonzero(empty)[0])]}: empty "
                f"({int(empty.sum())} empty); expected a value in every row of a parameter "
                f"column, or leave the column out with {option}"
            )
        _check_magnitude(frame, name, p, error, f"or leave the column out with {option}")
    if one_hot == "auto":
        out.one_hot = one_hot_groups(frame, chosen, columns)
    for g in out.one_hot:
        frame = frame.assign(**{g.name: g.values(frame)})
        at = chosen.index(g.columns[0])
        chosen = (
            [c for c in chosen[:at] if c not in g.columns]
            + [g.name]
            + [c for c in chosen[at:] if c not in g.columns]
        )
        out.notes.append(
            f"the 0/1 columns {', '.join(g.columns)} (one of them 1 in every row) are read as "
            f"one option {g.name} = {', '.join(g.levels)}"
        )
    if not chosen:
        raise error(
            f"{p}: no parameter columns left besides {', '.join(pis)}; name them with {option}"
        )
    out.params = chosen
    out.frame = frame[[*chosen, *pis]]
    return out
