"""Reading measured settings for knob ranking (``assay knobs --from``): knob columns
and PI columns, one row per measured setting."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assay.importers.csvdata import Measurements


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
    repetitions: str | None = None,
    one_hot: str = "auto",
    drop_values: Sequence[float] = (),
) -> tuple[Any, dict[str, Any], Measurements]:
    """Read measured settings: knob columns and PI columns, one row per trial.

    ``metrics`` and ``extra`` (PIs an objective needs) are read as by
    :func:`~assay.importers.csvdata.read_measurements` (rows without a value dropped
    with a note, round columns melted); the knob columns are ``knobs``, or every other
    column that does not look like a PI or a row id.  Rows that repeat a setting are
    repetitions: the forest gets one sample per setting, the mean of its rows (a
    repeated setting in the bag would predict its own out-of-bag copy).  Returns the
    knob columns as a data frame, the PI columns as arrays, and how the file was read.
    Raises :class:`SamplesError`.
    """
    from assay.importers.csvdata import read_measurements

    p = Path(path)
    data = read_measurements(
        p,
        metrics,
        SamplesError,
        params=list(knobs) or None,
        extra=extra,
        option="--knob",
        repetitions=repetitions,
        one_hot=one_hot,
        drop_values=drop_values,
        noun="samples file",
        expected="a header row with knob and PI column names, then one row per measured setting",
    )
    pis = data.metrics
    frame = data.frame
    settings = frame.groupby(data.params, sort=False, dropna=False, observed=True)[pis].mean()
    if len(settings) < len(frame):
        data.notes.append(
            f"{len(frame)} rows hold {len(settings)} distinct settings: each setting's "
            "repetitions are averaged into one sample"
        )
        frame = settings.reset_index()
    if len(frame) < min_rows:
        raise SamplesError(
            f"{p}: {len(frame)} measured setting(s); a random forest needs at least "
            f"{min_rows} (hundreds make the ranking stable)"
        )
    values = {name: frame[name].to_numpy(dtype=float) for name in pis}
    return frame[data.params], values, data
