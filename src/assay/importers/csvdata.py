"""Reading a CSV of measurements someone else collected (``--from`` of sweep and knobs)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd


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
    p = Path(path)
    if not p.exists():
        raise error(f"{p}: no such {noun}")
    if not p.is_file():
        raise error(f"{p}: not a regular file; expected a CSV file with {expected}")
    try:
        frame = pd.read_csv(p, skipinitialspace=True)
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise error(f"{p}: cannot read it as CSV ({exc}); expected {expected}") from None
    frame.columns = [str(c) for c in frame.columns]
    return frame
