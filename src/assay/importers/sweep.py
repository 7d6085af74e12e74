"""Reading a sweep's results measured elsewhere (``assay sweep --from``): parameter
columns and a numeric metric, one row per trial or setting."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd


class SweepDataError(ValueError):
    """A results file for ``assay sweep --from`` is unusable; the message says why."""


def read_results_csv(path: str | Path, params: list[str], metric: str) -> pd.DataFrame:
    """Measured settings from a CSV file: the parameter columns and a numeric metric.

    Rows whose metric is empty (failed settings) are dropped; any other non-number is
    an error naming the line.
    """
    import numpy as np
    import pandas as pd

    from assay.importers.csvdata import read_csv_frame

    p = Path(path)
    frame = read_csv_frame(
        p,
        SweepDataError,
        expected="a header row naming the parameters and the metric, then one row per "
        "measured trial or setting",
    )
    for name in [*params, metric]:
        if name not in frame.columns:
            role = "--metric" if name == metric else "--params"
            raise SweepDataError(
                f"{p}: no column {name!r} (named by {role}); the columns are: "
                f"{', '.join(frame.columns)}"
            )
    raw = frame[metric]
    values = pd.to_numeric(raw, errors="coerce")
    bad = (values.isna() & raw.notna()) | np.isinf(values.to_numpy(float, na_value=np.nan))
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise SweepDataError(
            f"{p}: line {row + 2}: column {metric!r}: expected a finite number "
            f"(got {raw.iloc[row]!r})"
        )
    frame[metric] = values
    frame = frame.dropna(subset=[metric])
    for name in params:
        if frame[name].isna().any():
            row = int(np.flatnonzero(frame[name].isna().to_numpy())[0])
            raise SweepDataError(f"{p}: line {row + 2}: column {name!r} is empty")
        if frame[name].nunique() < 2:
            raise SweepDataError(
                f"{p}: column {name!r} has a single value; a swept parameter needs two or more"
            )
    if len(frame) < 4:
        raise SweepDataError(f"{p}: {len(frame)} usable row(s); an analysis needs more")
    return frame[[*params, metric]].reset_index(drop=True)
