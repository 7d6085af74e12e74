"""Reading existing results for ``assay compare --from``: hyperfine, pyperf and Assay JSON.

Three formats are understood:

* **hyperfine** ``--export-json``: ``{"results": [{"command", "mean", "stddev",
  "times": [seconds, ...], ...}]}``; one variant per command, with its samples.
* **pyperf** JSON (``-o bench.json``, optionally gzip-compressed ``.json.gz``):
  ``{"version": "1.0", "metadata": {...}, "benchmarks": [{"metadata": {"name",
  ...}, "runs": [{"values": [...], "warmups": [[loops, value], ...],
  "metadata": {...}}, ...]}]}``; one variant per benchmark, its samples the
  ``values`` of every run in file order (warm-ups and calibration runs, which
  have no ``values``, are left out).  Metadata missing from a benchmark is
  taken from the file's common ``metadata`` (as pyperf does).
* **Assay** ``--json`` (:meth:`assay.studies.run.StudyResult.as_dict`): one variant per
  PI.  Per-sample data is not in that file, so the variant carries only
  :class:`~assay.stats.compare.SummaryStats` (mean, subsession variance
  recovered from the CI half-width, subsession count and size).

Every problem with a file raises :class:`ResultFileError` (a ``ValueError``)
whose message names the file and what was expected.
"""

from __future__ import annotations

import codecs
import gzip
import io
import json
import math
import stat
import zlib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from assay.stats._arrays import too_large_to_analyse
from assay.stats.compare import SummaryStats, summary_from_ci

__all__ = [
    "ImportedResult",
    "ResultFileError",
    "detect_format",
    "parse_assay",
    "parse_hyperfine",
    "parse_pyperf",
    "read_result_file",
    "read_result_files",
]

FloatArray = npt.NDArray[np.float64]
Format = Literal["hyperfine", "pyperf", "assay"]

#: pyperf unit names and the unit Assay reports.
PYPERF_UNITS = {"second": "s", "byte": "B", "integer": ""}


class ResultFileError(ValueError):
    """A results file cannot be read; the message names the file and what was expected."""

    def __init__(self, source: str | Path, problem: str) -> None:
        self.source = str(source)
        self.problem = problem
        super().__init__(f"{self.source}: {problem}")


@dataclass(frozen=True, eq=False)
class ImportedResult:
    """One variant read from a results file.

    Attributes
    ----------
    name : str
        The variant's name (hyperfine command, pyperf benchmark name, Assay
        study name; :func:`read_result_files` makes names unique).
    source : str
        The file it came from.
    format : {"hyperfine", "pyperf", "assay"}
        The file format.
    unit : str
        Unit of the values (``"s"`` for hyperfine).
    direction : {"lower", "higher"}
        Which values are better.
    samples : numpy.ndarray or None
        The raw samples in measurement order, when the file has them.
    summary : SummaryStats
        Mean, variance and count: of the raw samples (subsession size 1) when
        there are samples, else of the subsession samples behind the stored CI.
    pi : str or None
        The Assay PI name (``None`` for the other formats).

    Notes
    -----
    Compared by identity (``eq=False``): arrays have no single truth value.
    """

    name: str
    source: str
    format: Format
    unit: str
    direction: Literal["lower", "higher"]
    samples: FloatArray | None
    summary: SummaryStats
    pi: str | None = None

    @property
    def data(self) -> FloatArray | SummaryStats:
        """What :func:`assay.stats.compare.rank_variants` takes: samples when known."""
        return self.samples if self.samples is not None else self.summary


# --------------------------------------------------------------------------- helpers


#: The most bytes read from a results file, or inflated from a gzip one: a hostile
#: file (a gzip bomb, /dev/zero behind a symlink) ends in an error, not in swapping.
MAX_BYTES = 256 * 1024 * 1024

#: Integers with more digits than this are read as floats (so ``1e400``-sized integers
#: become ``inf`` and are rejected as not finite instead of overflowing NumPy).
_MAX_INT_DIGITS = 18


def _read_bytes(path: Path) -> bytes:
    try:
        st = path.stat()
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise ResultFileError(path, "cannot read the file: no such file") from None
        raise ResultFileError(path, f"cannot read the file ({exc.strerror or exc})") from None
    if stat.S_ISDIR(st.st_mode):
        raise ResultFileError(
            path,
            "cannot read the file: it is a folder; expected a results file "
            "(hyperfine, pyperf or Assay JSON)",
        )
    if not stat.S_ISREG(st.st_mode):
        raise ResultFileError(
            path, "cannot read the file: it is not a regular file; expected a results file"
        )
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except OSError as exc:
        raise ResultFileError(path, f"cannot read the file ({exc.strerror or exc})") from None
    if len(raw) > MAX_BYTES:
        raise ResultFileError(
            path, f"is larger than {MAX_BYTES >> 20} MiB; expected a results file"
        )
    return raw


def _gunzip(raw: bytes, path: Path) -> bytes:
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(raw)) as f:
            out = f.read(MAX_BYTES + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise ResultFileError(path, f"looks gzip-compressed but cannot be read ({exc})") from None
    if len(out) > MAX_BYTES:
        raise ResultFileError(
            path, f"inflates to more than {MAX_BYTES >> 20} MiB; expected a results file"
        )
    return out


def _decode(raw: bytes, path: Path) -> str:
    try:
        # utf-8-sig: a byte-order mark (Windows editors write one) is skipped, not an error
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        utf16 = raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))
        hint = "it looks UTF-16 encoded: convert it to UTF-8" if utf16 else "is it binary?"
        raise ResultFileError(
            path,
            f"expected a UTF-8 JSON file, got a byte that is not UTF-8 "
            f"(0x{raw[exc.start]:02x} at offset {exc.start}; {hint})",
        ) from None


def _parse_int(text: str) -> int | float:
    return int(text) if len(text.lstrip("-")) <= _MAX_INT_DIGITS else float(text)


def _load_json(path: Path) -> Any:
    raw = _read_bytes(path)
    if raw[:2] == b"\x1f\x8b":
        raw = _gunzip(raw, path)
    text = _decode(raw, path)
    try:
        return json.loads(text, parse_int=_parse_int)
    except json.JSONDecodeError as exc:
        raise ResultFileError(
            path,
            f"expected JSON, got a syntax error at line {exc.lineno} column {exc.colno}: {exc.msg}",
        ) from None
    except RecursionError:
        raise ResultFileError(
            path, "expected JSON results, got structures nested too deeply"
        ) from None
    except ValueError as exc:  # e.g. a number literal Python will not convert
        raise ResultFileError(
            path, f"expected JSON, got a value that cannot be read: {exc}"
        ) from None


def _short(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _samples(values: Any, source: str | Path, where: str) -> FloatArray:
    if not isinstance(values, list) or not values:
        raise ResultFileError(
            source, f"{where}: expected a non-empty list of numbers, got {_short(values)}"
        )
    for k, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise ResultFileError(
                source, f"{where}: expected a list of numbers, item {k} is {_short(v)}"
            )
        if not math.isfinite(v):
            # NaN/Infinity literals (and numbers too large for a float) never reach the
            # statistics: a sample that is not a number is an error, not a silent gap
            sign = "-" if v < 0 else ""
            got = "NaN" if math.isnan(v) else f"{sign}Infinity (or a number beyond ±1.8e308)"
            raise ResultFileError(
                source, f"{where}: expected a list of finite numbers, item {k} is {got}"
            )
    x = np.asarray(values, dtype=np.float64)
    top = too_large_to_analyse(x)
    if top is not None:
        raise ResultFileError(
            source,
            f"{where}: values up to {top:.3g} are too large to analyse "
            "(their squares overflow a float); expected measurements",
        )
    return x


def _summary_of(x: FloatArray, source: str | Path, where: str) -> SummaryStats:
    if x.size < 2:
        raise ResultFileError(source, f"{where}: expected at least 2 values, got {x.size}")
    try:
        return SummaryStats(mean=float(np.mean(x)), var=float(np.var(x, ddof=1)), n=int(x.size))
    except ValueError as exc:
        raise ResultFileError(source, f"{where}: {exc}") from None


def _name(text: str) -> str:
    """A variant name safe to print: control characters (a terminal escape sequence,
    a newline that would forge a report line) are shown as escapes."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    v = float(value)
    return v if math.isfinite(v) else None


# --------------------------------------------------------------------------- formats


def detect_format(doc: Any) -> Format | None:
    """Which results format a parsed JSON document is in (``None``: none of them).

    Examples
    --------
    >>> detect_format({"results": [{"command": "sleep 0.1", "times": [0.1, 0.1]}]})
    'hyperfine'
    >>> detect_format({"version": "1.0", "benchmarks": []}), detect_format([1, 2])
    ('pyperf', None)
    """
    if not isinstance(doc, dict):
        return None
    if isinstance(doc.get("results"), list):
        return "hyperfine"
    if isinstance(doc.get("benchmarks"), list):
        return "pyperf"
    if isinstance(doc.get("pis"), list):
        return "assay"
    return None


def parse_hyperfine(doc: Any, source: str | Path = "<hyperfine>") -> list[ImportedResult]:
    """Variants from a parsed hyperfine ``--export-json`` document.

    Each ``results[i]`` gives one variant named by its ``command``, with its
    ``times`` (seconds, one per run) as samples.

    Examples
    --------
    >>> doc = {"results": [{"command": "sleep 0.1", "mean": 0.1015,
    ...                     "stddev": 0.0007, "times": [0.101, 0.102]}]}
    >>> [(r.name, r.unit, r.samples.size) for r in parse_hyperfine(doc)]
    [('sleep 0.1', 's', 2)]
    """
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        raise ResultFileError(
            source, "expected a hyperfine --export-json file with a top-level 'results' list"
        )
    out: list[ImportedResult] = []
    for i, res in enumerate(doc["results"]):
        where = f"results[{i}]"
        if not isinstance(res, dict):
            raise ResultFileError(source, f"{where}: expected an object")
        name = res.get("command")
        if not isinstance(name, str) or not name:
            raise ResultFileError(source, f"{where}: expected a 'command' string")
        if "times" not in res:
            raise ResultFileError(
                source,
                f"{where} ({name!r}): expected 'times' (per-run seconds); export with a "
                "hyperfine version that writes them",
            )
        x = _samples(res["times"], source, f"{where}.times")
        out.append(
            ImportedResult(
                name=_name(name),
                source=str(source),
                format="hyperfine",
                unit="s",
                direction="lower",
                samples=x,
                summary=_summary_of(x, source, f"{where}.times"),
            )
        )
    if not out:
        raise ResultFileError(source, "expected at least one entry in 'results', got none")
    return out


def parse_pyperf(doc: Any, source: str | Path = "<pyperf>") -> list[ImportedResult]:
    """Variants from a parsed pyperf JSON document.

    One variant per benchmark; its samples are the ``values`` of every run in
    file order (each value is already the time of one loop iteration).
    Runs without ``values`` (calibration) and warm-ups are left out.  The
    name and unit come from the benchmark's metadata, else the file's common
    metadata; a nameless benchmark is called ``benchmark<i>``.  Every pyperf
    unit (``second``, ``byte``, ``integer``) is lower-is-better.

    Examples
    --------
    >>> doc = {"version": "1.0", "metadata": {"unit": "second"},
    ...        "benchmarks": [{"metadata": {"name": "sort"},
    ...                        "runs": [{"warmups": [[1, 2.2e-6]]},
    ...                                 {"values": [2.1e-6, 2.0e-6, 2.2e-6]}]}]}
    >>> [(r.name, r.unit, r.samples.size) for r in parse_pyperf(doc)]
    [('sort', 's', 3)]
    """
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
        raise ResultFileError(
            source, "expected a pyperf JSON file with a top-level 'benchmarks' list"
        )
    common = doc.get("metadata", {})
    if not isinstance(common, dict):
        raise ResultFileError(source, "'metadata': expected an object")
    out: list[ImportedResult] = []
    for i, bench in enumerate(doc["benchmarks"]):
        where = f"benchmarks[{i}]"
        if not isinstance(bench, dict):
            raise ResultFileError(source, f"{where}: expected an object")
        meta = bench.get("metadata", {})
        if not isinstance(meta, dict):
            raise ResultFileError(source, f"{where}.metadata: expected an object")
        meta = {**common, **meta}
        name = meta.get("name")
        if not isinstance(name, str) or not name:
            name = f"benchmark{i}"
        runs = bench.get("runs")
        if not isinstance(runs, list):
            raise ResultFileError(source, f"{where} ({name!r}): expected a 'runs' list")
        values: list[Any] = []
        for j, run in enumerate(runs):
            if not isinstance(run, dict):
                raise ResultFileError(source, f"{where}.runs[{j}]: expected an object")
            vals = run.get("values")
            if vals is None:
                continue  # calibration run: warm-ups only
            if not isinstance(vals, list):
                raise ResultFileError(source, f"{where}.runs[{j}].values: expected a list")
            values.extend(vals)
        if not values:
            raise ResultFileError(
                source, f"{where} ({name!r}): expected runs with 'values', found none"
            )
        x = _samples(values, source, f"{where} ({name!r}) values")
        unit_name = meta.get("unit", "second")
        if not isinstance(unit_name, str) or unit_name not in PYPERF_UNITS:
            raise ResultFileError(
                source,
                f"{where} ({name!r}): unknown unit {unit_name!r}, expected one of "
                f"{', '.join(PYPERF_UNITS)}",
            )
        out.append(
            ImportedResult(
                name=_name(name),
                source=str(source),
                format="pyperf",
                unit=PYPERF_UNITS[unit_name],
                direction="lower",
                samples=x,
                summary=_summary_of(x, source, f"{where} ({name!r}) values"),
            )
        )
    if not out:
        raise ResultFileError(source, "expected at least one entry in 'benchmarks', got none")
    return out


def parse_assay(
    doc: Any, source: str | Path = "<assay>", pi: str | None = None
) -> list[ImportedResult]:
    """Variants from a parsed ``assay run --json`` document, one per usable PI.

    A PI is usable when its ``mean`` and ``half_width`` are finite (JSON
    ``null`` stands for inf/nan) and ``n_samples >= 2``.  The variance of the
    subsession samples is recovered from the half-width
    (:func:`~assay.stats.compare.summary_from_ci`), which reproduces the
    standard error the interval was built from; for asymmetric (harmonic)
    intervals the stored ``half_width = (high - low) / 2`` makes it a
    first-order approximation.  The variant is named after the study
    (``study/pi`` when the file yields several PIs).

    Parameters
    ----------
    doc : Any
        The parsed document.
    source : str or Path
        Its file, for messages.
    pi : str or None
        Keep only this PI (an error if it is missing or unusable).

    Examples
    --------
    >>> doc = {"study": "fast", "pis": [{"name": "wall_time", "unit": "s",
    ...        "direction": "lower", "mean": 1.0, "half_width": 0.02,
    ...        "n_samples": 30, "confidence": 0.95, "subsession_size": 2}]}
    >>> r, = parse_assay(doc)
    >>> r.name, r.pi, r.samples, r.summary.n, r.summary.subsession_size
    ('fast', 'wall_time', None, 30, 2)
    """
    if not isinstance(doc, dict) or not isinstance(doc.get("pis"), list):
        raise ResultFileError(source, "expected an Assay --json result with a top-level 'pis' list")
    study = doc.get("study")
    name = _name(study if isinstance(study, str) and study else Path(str(source)).stem)
    out: list[ImportedResult] = []
    skipped: list[str] = []
    seen: list[str] = []
    for i, entry in enumerate(doc["pis"]):
        where = f"pis[{i}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise ResultFileError(source, f"{where}: expected an object with a 'name' string")
        pi_name: str = entry["name"]
        seen.append(pi_name)
        if pi is not None and pi_name != pi:
            continue
        mean = _number(entry.get("mean"))
        half = _number(entry.get("half_width"))
        n = entry.get("n_samples")
        conf = _number(entry.get("confidence"))
        q = entry.get("subsession_size", 1)
        usable = (
            mean is not None
            and half is not None
            and isinstance(n, int)
            and not isinstance(n, bool)
            and n >= 2
            and conf is not None
            and 0.0 < conf < 1.0
        )
        if not usable or mean is None or half is None or conf is None or not isinstance(n, int):
            skipped.append(
                f"{_name(pi_name)} (needs finite mean and half_width, an integer "
                "n_samples >= 2 and a confidence between 0 and 1)"
            )
            continue
        if isinstance(q, bool) or not isinstance(q, int) or q < 1:
            q = 1
        direction = entry.get("direction", "lower")
        if direction not in ("lower", "higher"):
            raise ResultFileError(
                source, f"{where} ({pi_name!r}): direction must be 'lower' or 'higher'"
            )
        try:
            with np.errstate(all="ignore"):
                summary = summary_from_ci(mean, half, n, conf, subsession_size=q)
        except (ValueError, ArithmeticError, TypeError) as exc:
            # ArithmeticError/TypeError: numbers SciPy cannot take (n_samples beyond
            # int64, a confidence so close to 0 that t is 0); never a traceback
            raise ResultFileError(
                source,
                f"{where} ({pi_name!r}): expected mean, half_width, n_samples and confidence "
                f"of a confidence interval, got numbers that give no interval ({exc})",
            ) from None
        unit = entry.get("unit", "")
        out.append(
            ImportedResult(
                name=name,
                source=str(source),
                format="assay",
                unit=unit if isinstance(unit, str) else "",
                direction=direction,
                samples=None,
                summary=summary,
                pi=_name(pi_name),
            )
        )
    if pi is not None and pi not in seen:
        have = ", ".join(seen) or "none"
        raise ResultFileError(source, f"expected a PI named {pi!r}; the file has: {have}")
    if not out:
        why = "; ".join(skipped) if skipped else "the 'pis' list is empty"
        raise ResultFileError(source, f"expected at least one PI with a usable interval: {why}")
    if len(out) > 1:
        out = [_renamed(r, f"{r.name}/{r.pi}") for r in out]
    return out


def _renamed(r: ImportedResult, name: str) -> ImportedResult:
    return ImportedResult(name, r.source, r.format, r.unit, r.direction, r.samples, r.summary, r.pi)


_PARSERS = {"hyperfine": parse_hyperfine, "pyperf": parse_pyperf}


def read_result_file(path: str | Path, pi: str | None = None) -> list[ImportedResult]:
    """Read one results file, detecting its format.

    Parameters
    ----------
    path : str or Path
        A hyperfine ``--export-json``, pyperf JSON (plain or gzip) or Assay
        ``--json`` file.
    pi : str or None
        For Assay files, keep only this PI.

    Returns
    -------
    list of ImportedResult

    Raises
    ------
    ResultFileError
        When the file cannot be read, is not JSON, or is in none of the formats.

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "h.json"
    >>> _ = p.write_text(json.dumps({"results": [{"command": "a", "times": [1.0, 1.2]}]}))
    >>> [r.format for r in read_result_file(p)]
    ['hyperfine']
    """
    p = Path(path)
    doc = _load_json(p)
    fmt = detect_format(doc)
    if fmt is None:
        raise ResultFileError(
            p,
            "expected a hyperfine --export-json, pyperf or Assay --json file "
            "(a JSON object with a 'results', 'benchmarks' or 'pis' list)",
        )
    if fmt == "assay":
        return parse_assay(doc, p, pi)
    return _PARSERS[fmt](doc, p)


def read_result_files(
    paths: Sequence[str | Path] | Iterable[str | Path], pi: str | None = None
) -> list[ImportedResult]:
    """Read several results files; names repeated across them get a ``file:`` prefix.

    Raises :class:`ResultFileError` for a bad file, and a plain ``ValueError``
    when names stay ambiguous (the same name twice in one file).

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> for stem in ("old", "new"):
    ...     doc = {"results": [{"command": "./app", "times": [1.0, 1.1, 1.2]}]}
    ...     _ = (d / f"{stem}.json").write_text(json.dumps(doc))
    >>> [r.name for r in read_result_files([d / "old.json", d / "new.json"])]
    ['old.json:./app', 'new.json:./app']
    """
    results: list[ImportedResult] = []
    for path in paths:
        results.extend(read_result_file(path, pi))
    counts = Counter(r.name for r in results)
    out = [
        _renamed(r, f"{Path(r.source).name}:{r.name}") if counts[r.name] > 1 else r for r in results
    ]
    dup = sorted(n for n, c in Counter(r.name for r in out).items() if c > 1)
    if dup:
        files = sorted({r.source for r in out if r.name in dup})
        raise ValueError(
            f"{', '.join(files)}: variant names are not unique, even with file prefixes: "
            f"{', '.join(dup)} (one file names the same command or benchmark twice)"
        )
    return out
