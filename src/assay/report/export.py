"""Exports: JSON (everything) and CSV (one row per PI)."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

CSV_FIELDS = [
    "study",
    "pi",
    "unit",
    "direction",
    "method",
    "mean",
    "low",
    "high",
    "half_width",
    "relative_half_width",
    "confidence",
    "n_samples",
    "n_raw",
    "rounds_used",
    "subsession_size",
    "autocorrelation",
    "warmup_removed",
    "rounds_rejected",
    "met",
]


def _clean(value: Any) -> Any:
    """JSON has no inf/nan: write them as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def to_json(data: Mapping[str, Any]) -> str:
    return json.dumps(_clean(data), indent=2, sort_keys=False, default=str)


def to_csv(study: str, pis: Sequence[Mapping[str, Any]]) -> str:
    return rows_to_csv(CSV_FIELDS, [{"study": study, "pi": p["name"], **p} for p in pis])


def rows_to_csv(fields: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> str:
    """CSV with a header of ``fields``; other keys are left out, missing ones are empty."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(fields), extrasaction="ignore")
    w.writeheader()
    for r in rows:
        w.writerow(r)
    return buf.getvalue()


def write_text(path: str, text: str) -> None:
    """Write to a file, or to stdout for '-'; the file is replaced atomically."""
    if path == "-":
        print(text, end="" if text.endswith("\n") else "\n")
        return
    p = Path(path)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(p)
