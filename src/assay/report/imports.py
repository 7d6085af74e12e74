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
* **Assay** ``--json`` (:meth:`assay.runner.StudyResult.as_dict`): one variant per
  PI.  Per-sample data is not in that file, so the variant carries only
  :class:`~assay.stats.compare.SummaryStats` (mean, subsession variance
  recovered from the CI half-width, subsession count and size).

Every problem with a file raises :class:`ResultFileError` (a ``ValueError``)
whose message names the file and what was expected.
"""

from __future__ import annotations

import gzip
import json
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

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


def _load_json(path: Path) -> Any:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ResultFileError(path, f"cannot read the file ({exc.strerror or exc})") from None
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise ResultFileError(
                path, f"looks gzip-compressed but cannot be read ({exc})"
            ) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ResultFileError(path, "expected a UTF-8 JSON file, got binary data") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultFileError(
            path,
            f"expected JSON, got a syntax error at line {exc.lineno} column {exc.colno}: {exc.msg}",
        ) from None


def _samples(values: Any, source: str | Path, where: str) -> FloatArray:
    if not isinstance(values, list) or not values:
        raise ResultFileError(source, f"{where}: expected a non-empty list of numbers")
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        raise ResultFileError(source, f"{where}: expected a list of numbers")
    x = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(x)):
        raise ResultFileError(source, f"{where}: expected finite numbers")
    return x


def _summary_of(x: FloatArray, source: str | Path, where: str) -> SummaryStats:
    if x.size < 2:
        raise ResultFileError(source, f"{where}: expected at least 2 values, got {x.size}")
    return SummaryStats(mean=float(np.mean(x)), var=float(np.var(x, ddof=1)), n=int(x.size))


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
                name=name,
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
        if unit_name not in PYPERF_UNITS:
            raise ResultFileError(
                source,
                f"{where} ({name!r}): unknown unit {unit_name!r}, expected one of "
                f"{', '.join(PYPERF_UNITS)}",
            )
        out.append(
            ImportedResult(
                name=name,
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
    name = study if isinstance(study, str) and study else Path(str(source)).stem
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
            skipped.append(f"{pi_name} (needs finite mean and half_width, n_samples >= 2)")
            continue
        if isinstance(q, bool) or not isinstance(q, int) or q < 1:
            q = 1
        direction = entry.get("direction", "lower")
        if direction not in ("lower", "higher"):
            raise ResultFileError(
                source, f"{where} ({pi_name!r}): direction must be 'lower' or 'higher'"
            )
        try:
            summary = summary_from_ci(mean, half, n, conf, subsession_size=q)
        except ValueError as exc:
            raise ResultFileError(source, f"{where} ({pi_name!r}): {exc}") from None
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
                pi=pi_name,
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
        raise ValueError(f"variant names are not unique, even with file prefixes: {', '.join(dup)}")
    return out
