"""Other benchmark tools' results for ``assay compare --from``: the parsing half.

Four formats, read into :class:`PeerVariant` (numbers in Assay's units, not yet
checked for finiteness); :mod:`assay.importers.results` detects the format, reads the
file, checks the numbers and builds its ``ImportedResult`` from them.  A problem in a
document raises :class:`PeerFormatError`, whose message names the field; the reader
adds the file and the format.

* **Google Benchmark** ``--benchmark_format=json`` / ``--benchmark_out``
  (:func:`parse_google_benchmark`): a ``context`` object and a ``benchmarks`` list
  whose entries have ``real_time``.  One variant per ``run_name`` (older files:
  ``name``), its samples the ``real_time`` of the ``iteration`` entries (one per
  repetition) in seconds; a benchmark with only aggregates is a summary (the ``mean``
  and ``stddev`` aggregates over ``repetitions``), and its note says so.
* **Go** ``go test -bench`` text, as benchstat reads it (:func:`parse_go_bench`):
  lines ``BenchmarkName-8  <iterations>  <value> <unit> [<value> <unit> ...]``; the
  other lines (``goos:``, ``pkg:``, ``PASS``, ``ok``, logs) are skipped.  Each line of a
  benchmark (``-count N``) is one sample of each of its metrics: ``ns/op`` (read as
  seconds, the PI ``sec/op``) by default, another (``B/op``, ``allocs/op``, ``MB/s``, a
  custom unit) chosen by name.
* **criterion.rs** ``target/criterion/<bench>/new/`` (:func:`parse_criterion_sample`,
  :func:`parse_criterion_estimates`, :func:`criterion_folders`): ``sample.json``
  (``iters`` and ``times``; sample ``i`` is ``times[i] / iters[i]`` ns) gives samples,
  ``estimates.json`` (``mean.point_estimate`` and ``standard_error``, ns) a summary.
* **pytest-benchmark** ``--benchmark-json`` (:func:`parse_pytest_benchmark`): a
  ``benchmarks`` list whose entries have a ``stats`` object (and ``machine_info`` at the
  top); samples are ``stats.data`` (``--benchmark-save-data``), else the summary
  ``mean``, ``stddev`` and ``rounds``, with a note.

* **asv** (airspeed velocity) ``results/<machine>/<commit>-<env>.json`` (results format
  2, :func:`parse_asv`): a ``results`` object and its ``result_columns``; one variant per
  benchmark and combination of its parameters; samples are the ``samples`` column
  (``asv run --record-samples``), else a summary from the result (asv's median) and its
  99% interval (``stats_ci_99_a``/``_b``) over ``stats_repeat`` repeats, with a note.

Nothing here reads a file or imports NumPy.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "CRITERION_DEFAULT_SAMPLES",
    "GO_TIME_NAMES",
    "PeerFormatError",
    "PeerVariant",
    "criterion_folders",
    "looks_like_go_bench",
    "parse_asv",
    "parse_criterion_estimates",
    "parse_criterion_sample",
    "parse_go_bench",
    "parse_google_benchmark",
    "parse_pytest_benchmark",
    "read_criterion",
]

#: The aggregates Google Benchmark reports with ``--benchmark_repetitions``.
_GB_AGGREGATES = ("mean", "median", "stddev", "cv")

#: Google Benchmark's ``time_unit`` values: how many make a second.
TIME_UNITS = {"ns": 1e9, "us": 1e6, "ms": 1e3, "s": 1.0}

#: The names ``--pi`` accepts for a Go benchmark's time per operation.
GO_TIME_NAMES = ("sec/op", "ns/op", "time", "wall_time")

#: criterion's default ``sample_size``: the sample count assumed for an
#: ``estimates.json`` read without its ``sample.json``.
CRITERION_DEFAULT_SAMPLES = 100

#: The most folders looked at under a criterion root (a hostile tree ends in an error).
MAX_FOLDERS = 100_000


class PeerFormatError(ValueError):
    """A document is not what its format says; the message names the field, and
    ``file`` the file where it is not the one the caller named (criterion folders)."""

    def __init__(self, problem: str, file: Path | None = None) -> None:
        super().__init__(problem)
        self.file = file


@dataclass(frozen=True)
class PeerVariant:
    """One variant read from another tool's results.

    Attributes
    ----------
    name : str
        The benchmark's name, as the tool prints it.
    unit : str
        Unit of the values (``"s"`` for times).
    where : str
        The field the numbers came from, for messages.
    samples : list or None
        The samples, in measurement order, when the file has them (numbers, not
        yet checked for finiteness).
    summary : tuple of (float, float, int) or None
        ``(mean, variance, n)`` when the file has only a summary.
    direction : {"lower", "higher"}
        Which values are better.
    pi : str or None
        The metric's name where a file has several (Go).
    note : str or None
        What the reader should be told about this variant (a summary only).
    """

    name: str
    unit: str
    where: str
    samples: list[Any] | None = None
    summary: tuple[float, float, int] | None = None
    direction: Literal["lower", "higher"] = "lower"
    pi: str | None = None
    note: str | None = None


def _short(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _num(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PeerFormatError(f"{where}: expected a number, got {_short(value)}")
    return float(value)


def _count(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 2:
        raise PeerFormatError(
            f"{where}: expected a whole number of at least 2, got {_short(value)}"
        )
    return value


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise PeerFormatError(f"{where}: expected an object, got {_short(value)}")
    return value


# --------------------------------------------------------------------------- Google Benchmark


def _gb_per_second(entry: dict[str, Any], where: str) -> float:
    unit = entry.get("time_unit", "ns")
    if not isinstance(unit, str) or unit not in TIME_UNITS:
        raise PeerFormatError(
            f"{where}.time_unit: expected one of {', '.join(TIME_UNITS)}, got {_short(unit)}"
        )
    return TIME_UNITS[unit]


#: The per-iteration times a Google Benchmark file holds, selectable with ``--pi``.
GB_FIELDS = ("real_time", "cpu_time")


def parse_google_benchmark(doc: Any, field: str = "real_time") -> list[PeerVariant]:
    """Variants from a parsed Google Benchmark JSON document.

    Entries are grouped by ``run_name`` (files from before Google Benchmark 1.5 have
    none: ``name``), in order of first appearance.  The samples of a benchmark are
    the ``real_time`` of its ``iteration`` entries (wall-clock time per iteration,
    converted from ``time_unit`` to seconds), or with ``field="cpu_time"`` their CPU
    time.  A benchmark with only aggregates
    (``--benchmark_report_aggregates_only``) is read as a summary: the ``mean`` and
    ``stddev`` aggregates over the aggregate's ``repetitions``; its note says so.
    ``median``, ``cv``, ``BigO`` and ``RMS`` aggregates are not used.

    Examples
    --------
    >>> doc = {"context": {}, "benchmarks": [
    ...     {"name": "BM_a", "run_name": "BM_a", "run_type": "iteration",
    ...      "real_time": t, "time_unit": "us"} for t in (10, 11, 12)]}
    >>> [(v.name, v.samples) for v in parse_google_benchmark(doc)]
    [('BM_a', [1e-05, 1.1e-05, 1.2e-05])]
    """
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
        raise PeerFormatError("expected a top-level 'benchmarks' list")
    groups: dict[str, dict[str, list[tuple[str, dict[str, Any]]]]] = {}
    for i, entry in enumerate(doc["benchmarks"]):
        where = f"benchmarks[{i}]"
        entry = _object(entry, where)
        name = entry.get("run_name", entry.get("name"))
        if not isinstance(name, str) or not name:
            raise PeerFormatError(f"{where}: expected a 'run_name' or 'name' string")
        where = f"{where} ({name!r})"
        if entry.get("error_occurred") is True:
            why = entry.get("error_message", "no message")
            raise PeerFormatError(f"{where}: the benchmark reported an error: {_short(why, 80)}")
        kind = entry.get("run_type")
        if kind is None:  # before Google Benchmark 1.5: no run_type, BM_x_mean after BM_x
            base, _, suffix = name.rpartition("_")
            if "aggregate_name" in entry:
                kind = "aggregate"
            elif suffix in _GB_AGGREGATES and base in groups and "run_name" not in entry:
                kind, name, entry = "aggregate", base, {**entry, "aggregate_name": suffix}
            else:
                kind = "iteration"
        group = groups.setdefault(name, {"iteration": [], "aggregate": []})
        if kind == "iteration":
            group["iteration"].append((where, entry))
        elif kind == "aggregate":
            group["aggregate"].append((where, entry))
        else:
            raise PeerFormatError(
                f"{where}.run_type: expected 'iteration' or 'aggregate', got {_short(kind)}"
            )
    if not groups:
        raise PeerFormatError("expected at least one entry in 'benchmarks', got none")
    if field not in GB_FIELDS:
        raise PeerFormatError(f"no field {field!r}; its times are {', '.join(GB_FIELDS)}")
    return [_gb_variant(name, g["iteration"], g["aggregate"], field) for name, g in groups.items()]


def _gb_variant(
    name: str,
    iterations: list[tuple[str, dict[str, Any]]],
    aggregates: list[tuple[str, dict[str, Any]]],
    field: str = "real_time",
) -> PeerVariant:
    if iterations:
        values = [_num(e.get(field), f"{w}.{field}") / _gb_per_second(e, w) for w, e in iterations]
        if len(values) < 2:
            raise PeerFormatError(
                f"{iterations[0][0]}: one repetition only; a comparison needs its spread: "
                "run with --benchmark_repetitions=N (N >= 2)"
            )
        return PeerVariant(name, "s", f"benchmarks ({name!r}) {field}", samples=values)
    by_kind = {e.get("aggregate_name"): (w, e) for w, e in aggregates}
    if "mean" not in by_kind or "stddev" not in by_kind:
        have = ", ".join(sorted(str(k) for k in by_kind)) or "none"
        raise PeerFormatError(
            f"benchmarks ({name!r}): expected 'iteration' entries, or 'mean' and 'stddev' "
            f"aggregates; found aggregates: {have}"
        )
    w_mean, mean = by_kind["mean"]
    w_sd, sd = by_kind["stddev"]
    m = _num(mean.get(field), f"{w_mean}.{field}") / _gb_per_second(mean, w_mean)
    s = _num(sd.get(field), f"{w_sd}.{field}") / _gb_per_second(sd, w_sd)
    n = _count(mean.get("repetitions"), f"{w_mean}.repetitions")
    return PeerVariant(
        name,
        "s",
        f"{w_mean} {field}",
        summary=(m, s * s, n),
        note=f"summary only: the mean and stddev aggregates of {n} repetitions (the file "
        "has no per-repetition entries; they are left out by "
        "--benchmark_report_aggregates_only)",
    )


# --------------------------------------------------------------------------- Go


#: A benchmark result line: ``Benchmark<Name>``, the iteration count, then the metrics.
_GO_LINE = re.compile(r"^(Benchmark(?:[^a-z\s]\S*)?)[ \t]+([0-9]+)[ \t]+(\S.*)$", re.M)


def looks_like_go_bench(text: str) -> bool:
    """Whether ``text`` is ``go test -bench`` output: not JSON, with a result line.

    >>> looks_like_go_bench("goos: linux\\nBenchmarkA-8  100  12.5 ns/op\\nPASS\\n")
    True
    >>> looks_like_go_bench('{"results": []}'), looks_like_go_bench("BenchmarkA-8 --- FAIL")
    (False, False)
    """
    if text.lstrip()[:1] in ("{", "["):
        return False
    return _GO_LINE.search(text) is not None


#: Lines ``go test`` prints around its results (``goos: linux``, ``pkg: …``, ``PASS``).
_GO_HEADER = re.compile(
    r"^(goos|goarch|pkg|cpu): |^testing: warning: no tests to run|^ok  \t?\S+\s+[0-9.]+s$", re.M
)


def looks_like_go_test(text: str) -> bool:
    """Whether ``text`` is ``go test`` output, with or without a benchmark result line.

    >>> looks_like_go_test("goos: linux\\ntesting: warning: no tests to run\\nPASS\\n")
    True
    >>> looks_like_go_test("PASS\\nok  \\texample.com/x\\t0.002s\\n")
    True
    >>> looks_like_go_test('{"goos": 1}')
    False
    """
    return text.lstrip()[:1] not in ("{", "[") and _GO_HEADER.search(text) is not None


def _go_metric(unit: str) -> tuple[str, str, float, Literal["lower", "higher"]]:
    """(PI name, unit, divisor, direction) of a Go metric."""
    if unit == "ns/op":
        return "sec/op", "s", 1e9, "lower"
    return unit, unit, 1.0, "higher" if unit.endswith("/s") else "lower"


def parse_go_bench(text: str, pi: str | None = None) -> list[PeerVariant]:
    """Variants from ``go test -bench`` output (the text benchstat reads).

    Every result line ``BenchmarkName-P  N  v1 u1  v2 u2 ...`` is one sample of each
    of its metrics; the lines of one benchmark (``-count N``) are its samples, in
    file order.  A benchmark is named as printed (``BenchmarkFoo/size=10-8``),
    qualified by its ``pkg:`` where two packages have one of the same name.

    Parameters
    ----------
    text : str
        The output.
    pi : str or None
        The metric: ``ns/op`` by default (read as seconds; also called ``sec/op``),
        else a unit as printed (``B/op``, ``allocs/op``, ``MB/s``, a custom one).
        Units ending in ``/s`` are higher-is-better, the others lower.  Benchmarks
        without it are left out.

    Examples
    --------
    >>> line = "BenchmarkA-8 100 {} ns/op 64 B/op\\n"
    >>> out = "pkg: x\\n" + line.format(1200) + line.format(1300)
    >>> [(v.name, v.unit, v.samples) for v in parse_go_bench(out)]
    [('BenchmarkA-8', 's', [1.2e-06, 1.3e-06])]
    >>> [(v.pi, v.samples) for v in parse_go_bench(out, pi="B/op")]
    [('B/op', [64.0, 64.0])]
    """
    metric = "ns/op" if pi is None or pi in GO_TIME_NAMES else pi
    pkg = ""
    lines: dict[tuple[str, str], list[tuple[int, dict[str, float]]]] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        if line.startswith("pkg:"):
            pkg = line[4:].strip()
            continue
        m = _GO_LINE.match(line)
        if m is None:
            continue
        name, rest = m.group(1), m.group(3).rstrip()
        fields = rest.split()
        where = f"line {lineno} ({name!r})"
        if len(fields) % 2:
            raise PeerFormatError(
                f"{where}: expected value-unit pairs after the iteration count "
                f"(as in '1234 ns/op'), got {_short(rest, 60)}"
            )
        values: dict[str, float] = {}
        for value, unit in zip(fields[::2], fields[1::2], strict=True):
            try:
                values[unit] = float(value)
            except ValueError:
                raise PeerFormatError(
                    f"{where}: expected a number before {unit!r}, got {_short(value)}"
                ) from None
        lines.setdefault((pkg, name), []).append((lineno, values))
    if not lines:
        raise PeerFormatError(
            "expected result lines 'BenchmarkName-8  N  1234 ns/op ...', found none"
        )
    packages: dict[str, set[str]] = {}
    for p, n in lines:
        packages.setdefault(n, set()).add(p)
    out: list[PeerVariant] = []
    seen: set[str] = set()
    for (p, name), rows in lines.items():
        seen.update(u for _, v in rows for u in v)
        have = [(lineno, v[metric]) for lineno, v in rows if metric in v]
        if not have:
            continue
        shown = f"{p}.{name}" if p and len(packages[name]) > 1 else name
        if len(have) < 2:
            raise PeerFormatError(
                f"line {have[0][0]} ({name!r}): one result line only; a comparison needs "
                "its spread: run go test with -count N (N >= 2)"
            )
        pi_name, unit, scale, direction = _go_metric(metric)
        out.append(
            PeerVariant(
                shown,
                unit,
                f"{name!r} {metric}",
                samples=[v / scale for _, v in have],
                direction=direction,
                pi=pi_name,
            )
        )
    if not out:
        raise PeerFormatError(
            f"expected benchmarks with the metric {metric!r}; the file has: "
            f"{', '.join(sorted(seen)) or 'none'}"
        )
    return out


# --------------------------------------------------------------------------- criterion


def parse_criterion_sample(doc: Any, name: str) -> PeerVariant:
    """A variant from criterion's ``new/sample.json``: ``times[i] / iters[i]`` ns each.

    >>> v = parse_criterion_sample({"sampling_mode": "Linear", "iters": [10.0, 20.0],
    ...                             "times": [1000.0, 2100.0]}, "fib")
    >>> v.name, v.unit, v.samples
    ('fib', 's', [1e-07, 1.05e-07])
    """
    if not isinstance(doc, dict):
        raise PeerFormatError("expected an object with 'iters' and 'times' lists")
    iters, times = doc.get("iters"), doc.get("times")
    for field, value in (("iters", iters), ("times", times)):
        if not isinstance(value, list) or not value:
            raise PeerFormatError(f"{field}: expected a non-empty list of numbers")
    assert isinstance(iters, list) and isinstance(times, list)
    if len(iters) != len(times):
        raise PeerFormatError(
            f"iters and times: expected lists of one length, got {len(iters)} and {len(times)}"
        )
    values: list[float] = []
    for k, (n, t) in enumerate(zip(iters, times, strict=True)):
        count = _num(n, f"iters[{k}]")
        if not count > 0:
            raise PeerFormatError(f"iters[{k}]: expected a positive count, got {_short(n)}")
        values.append(_num(t, f"times[{k}]") / count / 1e9)
    return PeerVariant(name, "s", "times / iters", samples=values)


def parse_criterion_estimates(doc: Any, name: str, n: int | None = None) -> PeerVariant:
    """A summary from criterion's ``estimates.json``: the mean and its standard error.

    The variance is ``standard_error**2 * n``, so that Welch's test sees criterion's
    (bootstrap) standard error; ``n`` is the sample count from ``sample.json`` when the
    caller has it, else criterion's default of 100 (the note says which).

    >>> v = parse_criterion_estimates({"mean": {"point_estimate": 2000.0,
    ...                                         "standard_error": 10.0}}, "fib", n=50)
    >>> v.summary[0], v.summary[2], round(v.summary[1] ** 0.5 / 50**0.5 * 1e9, 6)
    (2e-06, 50, 10.0)
    """
    if not isinstance(doc, dict):
        raise PeerFormatError("expected an object with a 'mean' estimate")
    mean = _object(doc.get("mean"), "mean")
    m = _num(mean.get("point_estimate"), "mean.point_estimate") / 1e9
    se = _num(mean.get("standard_error"), "mean.standard_error") / 1e9
    if se < 0:
        raise PeerFormatError(f"mean.standard_error: expected a number >= 0, got {se * 1e9:g}")
    count = n if n is not None else CRITERION_DEFAULT_SAMPLES
    how = "from sample.json" if n is not None else "criterion's default sample size, assumed"
    return PeerVariant(
        name,
        "s",
        "mean",
        summary=(m, se * se * count, count),
        note=f"summary only: criterion's mean and its standard error from estimates.json "
        f"(n = {count}, {how})",
    )


def _is_bench(folder: Path) -> bool:
    return (folder / "sample.json").is_file() or (folder / "estimates.json").is_file()


def criterion_folders(root: Path) -> list[tuple[str, Path]]:
    """``(name, new/ folder)`` of every criterion benchmark at or under ``root``.

    ``root`` may be a benchmark's ``new/`` folder, the benchmark folder holding it,
    or ``target/criterion`` (or a group in it): every ``new/`` folder under it with a
    ``sample.json`` or ``estimates.json``, named by its path from ``root``
    (``group/function``).  ``report/``, ``base/`` and ``change/`` folders are not
    entered, nor are symbolic links.  Empty when there is none.
    """
    if root.name in ("new", "base") and _is_bench(root):
        return [(root.resolve().parent.name or root.name, root)]
    if _is_bench(root / "new"):
        return [(root.resolve().name or str(root), root / "new")]
    found: list[tuple[str, Path]] = []
    for seen, (dirpath, dirnames, _) in enumerate(os.walk(root, followlinks=False), start=1):
        if seen > MAX_FOLDERS:
            raise PeerFormatError(f"more than {MAX_FOLDERS} folders; expected a criterion folder")
        here = Path(dirpath)
        if "new" in dirnames and _is_bench(here / "new"):
            rel = here.relative_to(root).as_posix()
            found.append((rel if rel != "." else here.resolve().name, here / "new"))
        dirnames[:] = sorted(d for d in dirnames if d not in ("new", "base", "change", "report"))
    return found


def _criterion_name(folder: Path, default: str, load: Callable[[Path], Any]) -> str:
    """A criterion benchmark's ``full_id`` (else ``title``) from ``benchmark.json``."""
    meta = folder / "benchmark.json"
    if not meta.is_file():
        return default
    try:
        doc = load(meta)
    except ValueError:
        return default
    for key in ("full_id", "title"):
        value = doc.get(key) if isinstance(doc, dict) else None
        if isinstance(value, str) and value:
            return value
    return default


def _sample_count(folder: Path, load: Callable[[Path], Any]) -> int | None:
    """How many samples the ``sample.json`` in ``folder`` has (``None``: no such file)."""
    sample = folder / "sample.json"
    if not sample.is_file():
        return None
    try:
        doc = load(sample)
    except ValueError:
        return None
    iters = doc.get("iters") if isinstance(doc, dict) else None
    return len(iters) if isinstance(iters, list) and len(iters) >= 2 else None


def _criterion_file(doc: Any, file: Path, name: str, load: Callable[[Path], Any]) -> PeerVariant:
    kind = "estimates" if isinstance(doc, dict) and "mean" in doc else "sample"
    try:
        if kind == "sample":
            return parse_criterion_sample(doc, name)
        return parse_criterion_estimates(doc, name, _sample_count(file.parent, load))
    except PeerFormatError as exc:
        raise PeerFormatError(f"{kind}.json: {exc}", file) from None


def read_criterion(
    path: Path, load: Callable[[Path], Any], doc: Any = None
) -> list[tuple[Path, PeerVariant]]:
    """``(file, variant)`` of a criterion ``sample.json`` / ``estimates.json`` file, or of
    every benchmark in a folder (:func:`criterion_folders`; empty when there is none).

    A benchmark folder's ``sample.json`` is read, else its ``estimates.json``; the
    variant is named by ``new/benchmark.json``'s ``full_id`` (else ``title``), else by
    its folder (the one holding ``new/``; a file outside ``new/``: its stem).

    Parameters
    ----------
    path : Path
        The file or folder.
    load : callable
        Reads a JSON file; its errors (``ValueError``) pass through, except for the
        ``benchmark.json`` and ``sample.json`` only looked at for a name or a count.
    doc : Any
        ``path`` parsed already, when it is a file.
    """
    if not path.is_dir():
        folder = path.parent
        default = folder.resolve().parent.name if folder.name in ("new", "base") else path.stem
        name = _criterion_name(folder, default, load)
        return [(path, _criterion_file(load(path) if doc is None else doc, path, name, load))]
    out: list[tuple[Path, PeerVariant]] = []
    for default, folder in criterion_folders(path):
        file = folder / "sample.json"
        if not file.is_file():
            file = folder / "estimates.json"
        name = _criterion_name(folder, default, load)
        out.append((file, _criterion_file(load(file), file, name, load)))
    return out


# --------------------------------------------------------------------------- pytest-benchmark


def parse_pytest_benchmark(doc: Any) -> list[PeerVariant]:
    """Variants from a parsed pytest-benchmark ``--benchmark-json`` document.

    One variant per benchmark, named by its ``name`` (its ``fullname`` where two
    share a name).  Samples are ``stats.data`` (seconds per iteration, one per round;
    only written with ``--benchmark-save-data``); without them the variant is the
    summary ``mean``, ``stddev`` and ``rounds``, and its note says so.

    Examples
    --------
    >>> doc = {"machine_info": {}, "benchmarks": [
    ...     {"name": "test_a", "stats": {"mean": 0.5, "stddev": 0.1, "rounds": 10}},
    ...     {"name": "test_b", "stats": {"data": [0.1, 0.2], "mean": 0.15}}]}
    >>> [(v.name, v.samples, v.summary) for v in parse_pytest_benchmark(doc)]
    [('test_a', None, (0.5, 0.010000000000000002, 10)), ('test_b', [0.1, 0.2], None)]
    """
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
        raise PeerFormatError("expected a top-level 'benchmarks' list")
    entries: list[tuple[str, str, dict[str, Any]]] = []
    for i, bench in enumerate(doc["benchmarks"]):
        where = f"benchmarks[{i}]"
        bench = _object(bench, where)
        name = bench.get("name")
        if not isinstance(name, str) or not name:
            raise PeerFormatError(f"{where}: expected a 'name' string")
        full = bench.get("fullname")
        stats = _object(bench.get("stats"), f"{where} ({name!r}).stats")
        entries.append((name, full if isinstance(full, str) and full else name, stats))
    if not entries:
        raise PeerFormatError("expected at least one entry in 'benchmarks', got none")
    names = Counter(n for n, _, _ in entries)
    out: list[PeerVariant] = []
    for i, (name, full, stats) in enumerate(entries):
        shown = full if names[name] > 1 else name
        where = f"benchmarks[{i}] ({name!r}).stats"
        if "data" in stats:
            out.append(PeerVariant(shown, "s", f"{where}.data", samples=stats["data"]))
            continue
        mean = _num(stats.get("mean"), f"{where}.mean")
        sd = _num(stats.get("stddev"), f"{where}.stddev")
        rounds = _count(stats.get("rounds"), f"{where}.rounds")
        out.append(
            PeerVariant(
                shown,
                "s",
                f"{where}.mean",
                summary=(mean, sd * sd, rounds),
                note=f"summary only: mean and stddev of {rounds} rounds (save the samples "
                "with --benchmark-save-data)",
            )
        )
    return out


#: The unit of an asv benchmark, by the prefix of its function's name (asv's rule).
_ASV_UNITS = (("timeraw_", "s"), ("time_", "s"), ("peakmem_", "B"), ("mem_", "B"))
#: z for asv's 99% intervals: a summary's spread from one (no SciPy here).
_Z99 = 2.5758293035489


def parse_asv(doc: Any) -> list[PeerVariant]:
    """Variants from a parsed asv results file (results format 2).

    Each row of ``results`` is aligned with ``result_columns`` (asv drops trailing
    empty columns); ``result`` and ``samples`` hold one entry per combination of the
    benchmark's ``params``.  A combination without samples is the summary of its
    99% interval (``stats_ci_99_a``, ``stats_ci_99_b``) and ``stats_repeat``, taken as
    normal around the result; a failed one (``null``) is left out.

    Examples
    --------
    >>> doc = {"version": 2, "result_columns": ["result", "params", "version",
    ...     "started_at", "duration", "stats_ci_99_a", "stats_ci_99_b", "stats_q_25",
    ...     "stats_q_75", "stats_number", "stats_repeat", "samples"],
    ...     "results": {"b.time_sort": [[0.5, 0.7], [["10", "100"]], "v", 0, 1.0,
    ...         [0.4, 0.6], [0.6, 0.8], None, None, [1, 1], [10, 10],
    ...         [[0.5, 0.51, 0.49], None]]}}
    >>> [(v.name, v.unit, v.samples, v.summary is not None) for v in parse_asv(doc)]
    [('b.time_sort(10)', 's', [0.5, 0.51, 0.49], False), ('b.time_sort(100)', 's', None, True)]
    """
    if not isinstance(doc, dict):
        raise PeerFormatError("expected a JSON object")
    columns = doc.get("result_columns")
    results = doc.get("results")
    if not isinstance(columns, list) or not isinstance(results, dict):
        raise PeerFormatError("expected a 'results' object and a 'result_columns' list")
    if doc.get("version") not in (None, 2):
        raise PeerFormatError(f"results format {doc.get('version')!r}: only format 2 is read")
    out: list[PeerVariant] = []
    lone: list[str] = []  # a single value (a memory figure, a track_): nothing to compare
    for name, row in results.items():
        where = f"results[{name!r}]"
        if not isinstance(row, list):
            raise PeerFormatError(f"{where}: expected a list aligned with result_columns")
        cell = dict(zip(columns, row, strict=False))
        values = cell.get("result")
        if values is None:
            continue  # the benchmark failed or was skipped: nothing measured
        if not isinstance(values, list):
            raise PeerFormatError(f"{where}: expected 'result' to be a list, one per combination")
        labels = _asv_labels(str(name), cell.get("params"), len(values), where)
        unit = next(
            (u for prefix, u in _ASV_UNITS if str(name).rsplit(".", 1)[-1].startswith(prefix)), ""
        )
        samples = cell.get("samples")
        for i, (label, value) in enumerate(zip(labels, values, strict=True)):
            got = samples[i] if isinstance(samples, list) and i < len(samples) else None
            if isinstance(got, list) and got:
                out.append(PeerVariant(label, unit, f"{where}.samples[{i}]", samples=got))
            elif value is not None:
                summary = _asv_summary(label, unit, cell, i, value, f"{where}")
                if summary is None:
                    lone.append(label)
                else:
                    out.append(summary)
    if not out:
        why = f" (one value each, no interval: {', '.join(lone)})" if lone else ""
        raise PeerFormatError(f"no benchmark with samples or an interval in 'results'{why}")
    if lone:  # said once, with the first variant
        said = f"left out, one value and no interval each: {', '.join(lone)}"
        first = out[0]
        out[0] = replace(first, note=f"{first.note}; {said}" if first.note else said)
    return out


def _asv_labels(name: str, params: Any, n: int, where: str) -> list[str]:
    """The names of a benchmark's parameter combinations, in asv's order (the product
    of its parameters' values), ``name(v1, v2)``; ``name`` alone without parameters."""
    if not params:
        if n != 1:
            raise PeerFormatError(f"{where}: {n} results but no 'params'")
        return [name]
    combos: list[list[str]] = [[]]
    for values in params:
        if not isinstance(values, list):
            raise PeerFormatError(f"{where}: expected 'params' to be a list of lists")
        combos = [[*c, str(v)] for c in combos for v in values]
    if len(combos) != n:
        raise PeerFormatError(f"{where}: {n} results for {len(combos)} parameter combinations")
    return [f"{name}({', '.join(c)})" for c in combos]


def _asv_summary(
    label: str, unit: str, cell: dict[str, Any], i: int, value: Any, where: str
) -> PeerVariant | None:
    def at(column: str) -> Any:
        got = cell.get(column)
        return got[i] if isinstance(got, list) and i < len(got) else None

    low, high, repeat = at("stats_ci_99_a"), at("stats_ci_99_b"), at("stats_repeat")
    if low is None or high is None or repeat is None:
        return None  # one value (asv computes no interval for it)
    mean = _num(value, f"{where}.result[{i}]")
    n = _count(repeat, f"{where}.stats_repeat[{i}]")
    half = (
        _num(high, f"{where}.stats_ci_99_b[{i}]") - _num(low, f"{where}.stats_ci_99_a[{i}]")
    ) / 2
    sd = half / _Z99 * n**0.5
    return PeerVariant(
        label,
        unit,
        f"{where}.result[{i}]",
        summary=(mean, sd * sd, n),
        note=f"summary only: asv's result and its 99% interval over {n} repeats "
        "(asv run --record-samples keeps every sample)",
    )
