"""Exports: JSON (everything) and CSV (one row per PI)."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
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


def hyperfine_json(results: Sequence[Mapping[str, Any]]) -> str:
    """hyperfine's ``--export-json`` document of ``results``
    (:func:`assay.studies.scan.hyperfine_results`)."""
    return to_json({"results": list(results)}) + "\n"


#: hyperfine's ``--export-csv`` columns (then a ``parameter_NAME`` column per parameter).
HYPERFINE_CSV = ["command", "mean", "stddev", "median", "user", "system", "min", "max"]


def hyperfine_csv(results: Sequence[Mapping[str, Any]]) -> str:
    """hyperfine's ``--export-csv`` table of ``results``."""
    params = list(results[0].get("parameters", {})) if results else []
    rows = [
        {**r, **{f"parameter_{p}": r.get("parameters", {}).get(p, "") for p in params}}
        for r in results
    ]
    return rows_to_csv(HYPERFINE_CSV + [f"parameter_{p}" for p in params], rows)


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


@contextlib.contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """A file to write beside ``path``, moved over it when the block ends (never half a
    file); removed when the block fails.

    The file is new (``mkstemp``: a fresh name, so no link planted beside the output is
    followed) and private while it is written; when it is moved over ``path`` its mode
    is what the umask gives a new file (#38: a report to share is not 0600 whatever the
    umask). A ``path`` that exists and is not a regular file (``/dev/null``, a FIFO,
    ``/dev/stdout``) is written in place: renaming over it would replace the device (as
    root, ``--json /dev/null`` did).
    """
    if path.exists() and not path.is_file():
        yield path
        return
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, 0o666 & ~current_umask())
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def current_umask() -> int:
    """The process's umask, read without changing it (Linux's /proc/self/status; where
    that is missing, set and put back at once).

    >>> 0 <= current_umask() <= 0o777
    True
    """
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    old = os.umask(0o077)
    os.umask(old)
    return old


def save_figure(fig: Any, out: Path, **options: Any) -> None:
    """Save a Matplotlib figure to ``out`` through :func:`replacing` (a fresh file
    renamed over it: a link planted at ``out`` is replaced, never written through);
    its format is ``out``'s suffix unless ``format`` is given."""
    options.setdefault("format", out.suffix.lower().lstrip(".") or "png")
    with replacing(out) as tmp:
        fig.savefig(tmp, **options)


def write_text(path: str, text: str) -> None:
    """Write to a file, or to stdout for '-'; the file is replaced atomically."""
    if path == "-":
        print(text, end="" if text.endswith("\n") else "\n")
        return
    with replacing(Path(path)) as tmp:
        tmp.write_text(text, encoding="utf-8")
