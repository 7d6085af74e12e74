"""Reading a sweep's results measured elsewhere (``assay sweep --from``): parameter
columns and a numeric metric, one row per trial (or per round column)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from assay.importers.csvdata import Measurements


class SweepDataError(ValueError):
    """A results file for ``assay sweep --from`` is unusable; the message says why."""


def read_results_csv(
    path: str | Path,
    params: Sequence[str] | None,
    metric: str,
    *,
    repetitions: str | None = None,
    one_hot: str = "auto",
    drop_values: Sequence[float] = (),
) -> Measurements:
    """Measured trials from a CSV file: the parameter columns (``params``, or every
    column that is not the metric, a PI-like or id-like column, or constant) and the
    numeric metric, as :func:`~assay.importers.csvdata.read_measurements` reads them.

    Rows whose metric is empty (failed trials) are dropped with a note; any other
    non-number is an error naming the line.  A named parameter needs two values.
    """
    from assay.importers.csvdata import read_measurements

    p = Path(path)
    data = read_measurements(
        p,
        [metric],
        SweepDataError,
        params=params,
        option="--params",
        repetitions=repetitions,
        one_hot=one_hot,
        drop_values=drop_values,
    )
    for name in data.params:
        if data.frame[name].nunique() < 2:
            raise SweepDataError(
                f"{p}: column {name!r} has a single value; a swept parameter needs two or more"
            )
    if len(data.frame) < 4:
        raise SweepDataError(f"{p}: {len(data.frame)} usable row(s); an analysis needs more")
    return data
