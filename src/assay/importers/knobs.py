"""Reading measured settings for knob ranking (``assay knobs --from``): knob columns
and PI columns, one row per measured setting."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


class SamplesError(ValueError):
    """A samples file for ``assay knobs --from`` is unusable; the message names the file,
    the column and what was expected."""


_LOWER_HINTS = ("lat", "time", "p50", "p90", "p95", "p99", "p999", "duration", "_ms", "_us")


def metric_direction(spec: str) -> tuple[str, str]:
    """``NAME[:higher|:lower]`` -> (name, direction); without a suffix, names that look
    like latencies or times are lower-is-better, everything else higher-is-better.

    >>> metric_direction("throughput"), metric_direction("p99_ms"), metric_direction("x:lower")
    (('throughput', 'higher'), ('p99_ms', 'lower'), ('x', 'lower'))
    """
    name, _, direction = spec.partition(":")
    if direction:
        if direction not in ("higher", "lower"):
            raise SamplesError(
                f"--metric {spec!r}: the direction after ':' must be 'higher' or 'lower'"
            )
        return name, direction
    low = name.lower()
    return name, "lower" if any(h in low for h in _LOWER_HINTS) else "higher"


def read_samples_csv(
    path: str | Path,
    metrics: Sequence[str],
    *,
    knobs: Sequence[str] = (),
    extra: Sequence[str] = (),
    min_rows: int = 10,
) -> tuple[Any, dict[str, Any]]:
    """Read measured settings: one row per setting, knob columns and PI columns.

    ``metrics`` and ``extra`` (PIs an objective needs) must be numeric in every row;
    the knob columns are ``knobs``, or every other column.  Returns the knob columns
    as a data frame and the PI columns as arrays.  Raises :class:`SamplesError`.
    """
    import numpy as np
    import pandas as pd

    from assay.importers.csvdata import read_csv_frame

    p = Path(path)
    frame = read_csv_frame(
        p,
        SamplesError,
        noun="samples file",
        expected="a header row with knob and PI column names, then one row per measured setting",
    )
    columns = list(frame.columns)
    pis = list(dict.fromkeys([*metrics, *extra]))
    for name in [*pis, *knobs]:
        if name not in columns:
            what = "--knob" if name in knobs and name not in pis else "a PI (--metric/objective)"
            raise SamplesError(
                f"{p}: no column {name!r} for {what}; the columns are: {', '.join(columns)}"
            )
    if len(frame) < min_rows:
        raise SamplesError(
            f"{p}: {len(frame)} data row(s); a random forest needs at least {min_rows} "
            "measured settings (hundreds make the ranking stable)"
        )
    values: dict[str, Any] = {}
    for name in pis:
        col = pd.to_numeric(frame[name], errors="coerce")
        bad = col.isna() | ~np.isfinite(col.to_numpy(dtype=float, na_value=np.nan))
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise SamplesError(
                f"{p}: column {name!r}, line {row + 2}: {frame[name].iloc[row]!r} is not a "
                f"finite number ({int(bad.sum())} such row(s)); a PI column needs a number "
                "in every row (drop failed settings first)"
            )
        values[name] = col.to_numpy(dtype=float)
    knob_cols = list(knobs) or [c for c in columns if c not in pis]
    if not knob_cols:
        raise SamplesError(f"{p}: no knob columns left besides the PIs {', '.join(pis)}")
    for name in knob_cols:
        empty = frame[name].isna()
        if empty.any():
            row = int(np.flatnonzero(empty.to_numpy())[0])
            raise SamplesError(
                f"{p}: column {name!r}, line {row + 2}: empty; every knob column needs a value "
                f"in every row ({int(empty.sum())} empty), or leave the column out with --knob"
            )
    return frame[knob_cols], values
