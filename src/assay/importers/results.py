"""Reading existing results for ``assay compare --from``: seven formats.

The format is detected from the file's structure, in this order (``--format`` /
the ``fmt`` argument skips detection):

* **criterion** folder: a folder is read as criterion.rs results (a benchmark's
  ``new/`` folder, the ``<bench>/`` folder holding it, or ``target/criterion`` with
  every benchmark under it); see :mod:`assay.importers.peers`.
* **go**: text that is not JSON (it does not start with ``{`` or ``[``) and has a
  ``go test -bench`` result line ``BenchmarkName-8  N  1234 ns/op ...``.

Then, for a JSON object:

* **hyperfine** ``--export-json``: a top-level ``results`` list:
  ``{"results": [{"command", "mean", "stddev", "times": [seconds, ...], ...}]}``;
  one variant per command, with its samples.
* **google-benchmark** (``--benchmark_format=json``): a ``context`` object and a
  ``benchmarks`` list with ``real_time`` (or ``run_type``) in an entry, or empty; one
  variant per ``run_name``, its samples the ``real_time`` of the repetitions.
* **pytest-benchmark** (``--benchmark-json``): a ``benchmarks`` list with a
  ``machine_info`` object beside it or a ``stats`` object in an entry; one variant
  per test, ``stats.data`` as samples, else a summary.
* **pyperf** JSON (``-o bench.json``, optionally gzip-compressed ``.json.gz``): any
  other top-level ``benchmarks`` list:
  ``{"version": "1.0", "metadata": {...}, "benchmarks": [{"metadata": {"name",
  ...}, "runs": [{"values": [...], "warmups": [[loops, value], ...],
  "metadata": {...}}, ...]}]}``; one variant per benchmark, its samples the
  ``values`` of every run in file order (warm-ups and calibration runs, which
  have no ``values``, are left out).  Metadata missing from a benchmark is
  taken from the file's common ``metadata`` (as pyperf does).
* **assay**: a ``pis`` list is ``assay run --json``
  (:meth:`assay.studies.run.StudyResult.as_dict`): one variant per PI; a
  ``comparisons`` list is ``assay compare --json``: one variant per compared variant
  (of the deciding PI, or ``pi``).  Per-sample data is not in those files, so the
  variant carries only :class:`~assay.stats.compare.SummaryStats` (mean, subsession
  variance recovered from the CI half-width, subsession count and size).
* **criterion** file: ``sample.json`` (``iters`` and ``times`` lists) or
  ``estimates.json`` (a ``mean`` object with a ``point_estimate``).

A variant known only by a summary from a tool that can write samples carries a
``note`` saying so (``compare --from`` shows it as a warning).

Every problem with a file raises :class:`ResultFileError` (a ``ValueError``)
whose message names the file and what was expected; for the formats of
:mod:`assay.importers.peers` and Assay's compare file it also names the format it was
read as.
"""

from __future__ import annotations

import codecs
import dataclasses
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

from assay.importers import RESULT_FORMATS, ResultFormat, peers
from assay.stats._arrays import too_large_to_analyse
from assay.stats.compare import SummaryStats, summary_from_ci

__all__ = [
    "FORMATS",
    "ImportedResult",
    "ResultFileError",
    "detect_format",
    "parse_assay",
    "parse_assay_compare",
    "parse_hyperfine",
    "parse_pyperf",
    "read_result_file",
    "read_result_files",
]

FloatArray = npt.NDArray[np.float64]
Format = ResultFormat

#: The format names ``--format`` takes.
FORMATS: tuple[Format, ...] = RESULT_FORMATS

#: How messages name the formats of :mod:`assay.importers.peers`.
PEER_LABELS: dict[str, str] = {
    "google-benchmark": "Google Benchmark JSON",
    "go": "Go benchmark text",
    "criterion": "criterion.rs results",
    "pytest-benchmark": "pytest-benchmark JSON",
    "asv": "asv results JSON",
}

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
    format : str
        The file format, one of :data:`FORMATS`.
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
        The Assay PI name, or the Go metric (``None`` for the other formats).
    note : str or None
        What the reader should be told, e.g. that the file had only a summary.

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
    note: str | None = None

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
            "(hyperfine, pyperf or Assay JSON) or a criterion folder "
            "(<bench>/new/sample.json, or target/criterion)",
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


def _read_text(path: Path) -> str:
    raw = _read_bytes(path)
    if raw[:2] == b"\x1f\x8b":
        raw = _gunzip(raw, path)
    return _decode(raw, path)


def _load_json(path: Path) -> Any:
    return _parse_json(_read_text(path), path)


def _parse_json(text: str, path: Path) -> Any:
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

    The rules, in order: a ``results`` list is hyperfine; a ``benchmarks`` list is
    Google Benchmark beside a ``context`` object when it is empty or an entry has
    ``real_time`` or ``run_type``, pytest-benchmark beside ``machine_info`` or when an
    entry has a ``stats`` object, else pyperf; a ``pis`` or ``comparisons`` list is
    Assay (``run --json``, ``compare --json``); ``iters`` and ``times`` lists, or a
    ``mean`` object with a ``point_estimate``, are criterion (``sample.json``,
    ``estimates.json``).  (Go benchmark output is text, recognised before JSON is
    parsed: :func:`assay.importers.peers.looks_like_go_bench`.)

    Examples
    --------
    >>> detect_format({"results": [{"command": "sleep 0.1", "times": [0.1, 0.1]}]})
    'hyperfine'
    >>> detect_format({"version": "1.0", "benchmarks": []}), detect_format([1, 2])
    ('pyperf', None)
    >>> detect_format({"context": {}, "benchmarks": [{"name": "BM_a", "real_time": 5}]})
    'google-benchmark'
    >>> detect_format({"machine_info": {}, "benchmarks": []})
    'pytest-benchmark'
    """
    if not isinstance(doc, dict):
        return None
    if isinstance(doc.get("results"), list):
        return "hyperfine"
    benchmarks = doc.get("benchmarks")
    if isinstance(benchmarks, list):
        entries = [b for b in benchmarks if isinstance(b, dict)]
        if isinstance(doc.get("context"), dict) and (
            not benchmarks or any("real_time" in b or "run_type" in b for b in entries)
        ):
            return "google-benchmark"
        if isinstance(doc.get("machine_info"), dict) or any(
            isinstance(b.get("stats"), dict) for b in entries
        ):
            return "pytest-benchmark"
        return "pyperf"
    if isinstance(doc.get("pis"), list) or isinstance(doc.get("comparisons"), list):
        return "assay"
    if isinstance(doc.get("iters"), list) and isinstance(doc.get("times"), list):
        return "criterion"
    mean = doc.get("mean")
    if isinstance(mean, dict) and "point_estimate" in mean:
        return "criterion"
    if isinstance(doc.get("results"), dict) and isinstance(doc.get("result_columns"), list):
        return "asv"
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
    (``study/pi`` when the file yields several PIs).  A document with a
    ``comparisons`` list instead (``assay compare --json``) is read by
    :func:`parse_assay_compare`.

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
    if isinstance(doc, dict) and "pis" not in doc and isinstance(doc.get("comparisons"), list):
        return parse_assay_compare(doc, source, pi)
    if not isinstance(doc, dict) or not isinstance(doc.get("pis"), list):
        raise ResultFileError(source, "expected an Assay --json result with a top-level 'pis' list")
    study = doc.get("study")
    name = _name(study if isinstance(study, str) and study else Path(str(source)).stem)
    out: list[ImportedResult] = []
    skipped: list[str] = []
    seen: list[str] = []
    readings = _assay_readings(doc)
    for i, entry in enumerate(doc["pis"]):
        where = f"pis[{i}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise ResultFileError(source, f"{where}: expected an object with a 'name' string")
        pi_name: str = entry["name"]
        seen.append(pi_name)
        if pi is not None and pi_name != pi:
            continue
        got = _ci_entry(entry, f"{where} ({pi_name!r})", source)
        x = readings.get(pi_name)
        if x is not None:  # the run's own readings: ranked as any tool's samples are
            direction = entry.get("direction", "lower")
            unit = entry.get("unit", "")
            got = ImportedResult(
                name="",
                source=str(source),
                format="assay",
                unit=unit if isinstance(unit, str) else "",
                direction=direction if direction in ("lower", "higher") else "lower",
                samples=x,
                # the stored interval's summary where it has one (a baseline falls
                # back on it), else the readings' own
                summary=got.summary
                if not isinstance(got, str)
                else _summary_of(x, source, f"samples ({pi_name!r})"),
            )
        if isinstance(got, str):
            skipped.append(f"{_name(pi_name)} {got}")
            continue
        out.append(dataclasses.replace(got, name=name, pi=_name(pi_name)))
    if pi is not None and pi not in seen:
        have = ", ".join(seen) or "none"
        raise ResultFileError(source, f"expected a PI named {pi!r}; the file has: {have}")
    if not out:
        why = "; ".join(skipped) if skipped else "the 'pis' list is empty"
        raise ResultFileError(source, f"expected at least one PI with a usable interval: {why}")
    if len(out) > 1:
        out = [_renamed(r, f"{r.name}/{r.pi}") for r in out]
    return out


def _assay_readings(doc: dict[str, Any]) -> dict[str, FloatArray]:
    """An ``assay run --json`` document's readings by PI (its ``samples`` rows of the
    study itself, 3 or more finite values in order); none from an older document.

    >>> _assay_readings({"samples": [{"pi": "t", "variant": None, "values": [1, 2, 3]}]})
    {'t': array([1., 2., 3.])}
    """
    rows = doc.get("samples")
    out: dict[str, FloatArray] = {}
    for row in rows if isinstance(rows, list) else []:
        if not isinstance(row, dict) or row.get("variant") is not None:
            continue
        values = row.get("values")
        if not isinstance(row.get("pi"), str) or not isinstance(values, list):
            continue
        x = np.array([v for v in values if isinstance(v, int | float)], dtype=np.float64)
        x = x[np.isfinite(x)]
        if x.size >= 3:
            out[row["pi"]] = x
    return out


def _ci_entry(entry: dict[str, Any], where: str, source: str | Path) -> ImportedResult | str:
    """The summary behind one stored confidence interval (an ``assay run --json`` PI,
    an ``assay compare --json`` variant), unnamed; or why it cannot be used."""
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
        return (
            "(needs finite mean and half_width, an integer "
            "n_samples >= 2 and a confidence between 0 and 1)"
        )
    if isinstance(q, bool) or not isinstance(q, int) or q < 1:
        q = 1
    direction = entry.get("direction", "lower")
    if direction not in ("lower", "higher"):
        raise ResultFileError(source, f"{where}: direction must be 'lower' or 'higher'")
    try:
        with np.errstate(all="ignore"):
            summary = summary_from_ci(mean, half, n, conf, subsession_size=q)
    except (ValueError, ArithmeticError, TypeError) as exc:
        # ArithmeticError/TypeError: numbers SciPy cannot take (n_samples beyond
        # int64, a confidence so close to 0 that t is 0); never a traceback
        raise ResultFileError(
            source,
            f"{where}: expected mean, half_width, n_samples and confidence "
            f"of a confidence interval, got numbers that give no interval ({exc})",
        ) from None
    unit = entry.get("unit", "")
    return ImportedResult(
        name="",
        source=str(source),
        format="assay",
        unit=unit if isinstance(unit, str) else "",
        direction=direction,
        samples=None,
        summary=summary,
    )


def parse_assay_compare(
    doc: Any, source: str | Path = "<assay compare>", pi: str | None = None
) -> list[ImportedResult]:
    """Variants from a parsed ``assay compare --json`` document, as summaries.

    The comparison read is the one of ``pi``, else of the file's deciding ``pi``,
    else the first.  Each of its ``variants`` becomes one variant named as it was,
    in rank order, its summary recovered from its stored interval as in
    :func:`parse_assay`; a variant whose interval is unusable is left out (an error
    when none is left), so ``compare --from`` on the file ranks them again.

    Examples
    --------
    >>> v = {"unit": "s", "direction": "lower", "half_width": 0.1,
    ...      "n_samples": 10, "confidence": 0.95}
    >>> doc = {"pi": "wall_time", "comparisons": [{"pi": "wall_time", "variants": [
    ...     {"variant": "fast", "mean": 1.0, **v}, {"variant": "slow", "mean": 2.0, **v}]}]}
    >>> [(r.name, r.pi, r.summary.n) for r in parse_assay_compare(doc)]
    [('fast', 'wall_time', 10), ('slow', 'wall_time', 10)]
    """
    label = "Assay compare --json"
    if not isinstance(doc, dict) or not isinstance(doc.get("comparisons"), list):
        raise ResultFileError(
            source, f"{label}: expected a top-level 'comparisons' list (or 'pis': run --json)"
        )
    comps = doc["comparisons"]
    for i, comp in enumerate(comps):
        if not isinstance(comp, dict) or not isinstance(comp.get("variants"), list):
            raise ResultFileError(
                source, f"{label}: comparisons[{i}]: expected an object with a 'variants' list"
            )
    names = [c.get("pi") for c in comps]
    if not comps:
        raise ResultFileError(source, f"{label}: the 'comparisons' list is empty")
    if pi is not None and pi not in names:
        have = ", ".join(str(n) for n in names)
        raise ResultFileError(source, f"{label}: expected a PI named {pi!r}; the file has: {have}")
    want = pi if pi is not None else doc.get("pi")
    k = names.index(want) if want in names else 0
    pi_name = names[k] if isinstance(names[k], str) else None
    out: list[ImportedResult] = []
    skipped: list[str] = []
    for j, entry in enumerate(comps[k]["variants"]):
        where = f"comparisons[{k}].variants[{j}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("variant"), str):
            raise ResultFileError(
                source, f"{label}: {where}: expected an object with a 'variant' string"
            )
        got = _ci_entry(entry, f"{label}: {where} ({entry['variant']!r})", source)
        if isinstance(got, str):
            skipped.append(f"{_name(entry['variant'])} {got}")
            continue
        pi_shown = None if pi_name is None else _name(pi_name)
        out.append(dataclasses.replace(got, name=_name(entry["variant"]), pi=pi_shown))
    if not out:
        why = "; ".join(skipped) if skipped else "the 'variants' list is empty"
        raise ResultFileError(
            source, f"{label}: expected at least one variant with a usable interval: {why}"
        )
    return out


def _renamed(r: ImportedResult, name: str) -> ImportedResult:
    return dataclasses.replace(r, name=name)


_PARSERS = {"hyperfine": parse_hyperfine, "pyperf": parse_pyperf}


def _check_format(fmt: str | None) -> Format | None:
    if fmt is None or fmt in FORMATS:
        return fmt
    raise ValueError(f"unknown results format {fmt!r}; expected one of {', '.join(FORMATS)}")


def _is_folder(path: Path) -> bool:
    try:
        return stat.S_ISDIR(path.stat().st_mode)
    except (OSError, ValueError):
        return False  # _read_bytes says why


def _peer_results(
    variants: list[peers.PeerVariant], fmt: Format, source: Path
) -> list[ImportedResult]:
    """ImportedResults of a peer parser's variants, their numbers checked."""
    label = PEER_LABELS[fmt]
    out: list[ImportedResult] = []
    for v in variants:
        where = f"{label}: {v.where}"
        samples: FloatArray | None = None
        if v.samples is not None:
            x = _samples(v.samples, source, where)
            samples, summary = x, _summary_of(x, source, where)
        else:
            assert v.summary is not None  # a PeerVariant has one or the other
            mean, var, n = v.summary
            try:
                summary = SummaryStats(mean=mean, var=var, n=n)
            except ValueError as exc:
                raise ResultFileError(source, f"{where}: {exc}") from None
        out.append(
            ImportedResult(
                name=_name(v.name),
                source=str(source),
                format=fmt,
                unit=v.unit,
                direction=v.direction,
                samples=samples,
                summary=summary,
                pi=v.pi,
                note=v.note,
            )
        )
    return out


def _read_criterion(path: Path, doc: Any = None) -> list[ImportedResult]:
    """A criterion ``sample.json`` / ``estimates.json`` file (``doc``: parsed already),
    or every benchmark in a folder."""
    try:
        found = peers.read_criterion(path, _load_json, doc)
    except peers.PeerFormatError as exc:
        where = exc.file or path
        raise ResultFileError(where, f"{PEER_LABELS['criterion']}: {exc}") from None
    except OSError as exc:
        raise ResultFileError(path, f"cannot read the folder ({exc.strerror or exc})") from None
    if not found:
        _read_bytes(path)  # the folder error: no benchmark in it
    return [r for file, v in found for r in _peer_results([v], "criterion", file)]


def read_result_file(
    path: str | Path, pi: str | None = None, fmt: str | None = None
) -> list[ImportedResult]:
    """Read one results file, detecting its format (see the module's rules).

    Parameters
    ----------
    path : str or Path
        A results file in one of :data:`FORMATS` (JSON plain or gzip, Go text), or
        a criterion folder.
    pi : str or None
        Assay files: keep only this PI (compare files: read this PI's comparison);
        Go text: the metric (``ns/op`` by default; ``B/op``, ``allocs/op``, ...).
        The other formats have one metric and ignore it.
    fmt : str or None
        Read the file as this format (one of :data:`FORMATS`) instead of detecting
        it; ``None``: detect.

    Returns
    -------
    list of ImportedResult

    Raises
    ------
    ResultFileError
        When the file cannot be read, is not JSON (or Go text), or is in none of
        the formats; or not in the format forced.
    ValueError
        When ``fmt`` is not a known format.

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "h.json"
    >>> _ = p.write_text(json.dumps({"results": [{"command": "a", "times": [1.0, 1.2]}]}))
    >>> [r.format for r in read_result_file(p)]
    ['hyperfine']
    """
    p = Path(path)
    forced = _check_format(fmt)
    if forced == "criterion" or (forced is None and _is_folder(p)):
        if pi is not None and pi != "wall_time":
            raise ResultFileError(
                p,
                f"{PEER_LABELS['criterion']}: --pi {pi!r}: criterion's samples are times "
                "(Assay's wall_time); there is no other measurement to select",
            )
        return _read_criterion(p)
    text = _read_text(p)
    if forced == "go" or (forced is None and peers.looks_like_go_bench(text)):
        try:
            variants = peers.parse_go_bench(text, pi)
        except peers.PeerFormatError as exc:
            raise ResultFileError(p, f"{PEER_LABELS['go']}: {exc}") from None
        return _peer_results(variants, "go", p)
    if forced is None and peers.looks_like_go_test(text):
        raise ResultFileError(
            p,
            f"{PEER_LABELS['go']}: go test output without a benchmark result line "
            "('BenchmarkName-8  N  1234 ns/op'): did -bench's pattern match no benchmark?",
        )
    try:
        doc = _parse_json(text, p)
    except ResultFileError as exc:
        if forced is None:
            raise
        raise ResultFileError(p, f"read as {forced} (format given): {exc.problem}") from None
    found = forced or detect_format(doc)
    if found is None:
        raise ResultFileError(
            p,
            "expected a hyperfine --export-json, pyperf or Assay --json file "
            "(a JSON object with a 'results', 'benchmarks' or 'pis' list), or Google "
            "Benchmark, pytest-benchmark, criterion or asv JSON, or go test -bench output",
        )
    if found == "assay":
        return parse_assay(doc, p, pi)
    if found == "google-benchmark":
        field = pi or "real_time"
        if field not in peers.GB_FIELDS:
            raise ResultFileError(
                p,
                f"{PEER_LABELS[found]}: --pi {pi!r}: no such field; its per-iteration "
                f"times are {', '.join(peers.GB_FIELDS)}",
            )
        try:
            variants = peers.parse_google_benchmark(doc, field)
        except peers.PeerFormatError as exc:
            raise ResultFileError(p, f"{PEER_LABELS[found]}: {exc}") from None
        got = _peer_results(variants, found, p)
        return got if pi is None else [dataclasses.replace(r, pi=pi) for r in got]
    if pi is not None and pi != "wall_time":
        label = PEER_LABELS.get(found, found)
        raise ResultFileError(
            p,
            f"{label}: --pi {pi!r}: this file holds one measurement per benchmark (its "
            "times, Assay's wall_time); --pi selects among the PIs of an Assay file, "
            "Google Benchmark's real_time or cpu_time, or a go test metric",
        )
    if found in _PARSERS:
        return _PARSERS[found](doc, p)
    if found == "criterion":
        return _read_criterion(p, doc)
    parse = {
        "pytest-benchmark": peers.parse_pytest_benchmark,
        "asv": peers.parse_asv,
    }[found]
    try:
        variants = parse(doc)
    except peers.PeerFormatError as exc:
        raise ResultFileError(p, f"{PEER_LABELS[found]}: {exc}") from None
    return _peer_results(variants, found, p)


def read_result_files(
    paths: Sequence[str | Path] | Iterable[str | Path],
    pi: str | None = None,
    fmt: str | None = None,
) -> list[ImportedResult]:
    """Read several results files; names repeated across them get a ``file:`` prefix.

    ``pi`` and ``fmt`` are passed to :func:`read_result_file` for every file.

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
    seen: dict[Path, str] = {}
    for path in paths:
        where = Path(path).resolve()
        if where in seen:
            raise ResultFileError(
                path,
                f"given twice (also as {seen[where]}): each file is read once; to compare a "
                "result with itself, copy the file",
            )
        seen[where] = str(path)
        results.extend(read_result_file(path, pi, fmt))
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
