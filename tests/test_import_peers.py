"""Issue #40: ``assay compare --from`` on the results other tools write.

Google Benchmark JSON, ``go test -bench`` text, criterion.rs folders, pytest-benchmark
JSON and Assay's own ``compare --json``: each built here in the shape the tool writes
(field for field, from their documentation and real output), read through
:func:`read_result_file` and through the CLI; detection (Google Benchmark is not
pyperf, Go text is not "expected JSON"), ``--format`` and the messages of bad files.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner, Result

from assay.cli import main
from assay.importers.results import (
    FORMATS,
    ResultFileError,
    detect_format,
    read_result_file,
    read_result_files,
)


def _compare(*args: str) -> Result:
    return CliRunner().invoke(main, ["compare", *args], catch_exceptions=False)


def _write(path: Path, doc: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc, indent=2))
    return path


def _noisy(mean: float, n: int, seed: int, sd: float = 0.01) -> list[float]:
    """``n`` readings around ``mean`` (relative spread ``sd``) without lag-1
    autocorrelation to speak of (the pattern + + - -, a little jitter), so that every
    comparison of them has an interval."""
    rng = np.random.default_rng(seed)
    signs = np.resize([1.0, 1.0, -1.0, -1.0], n)
    return [float(v) for v in mean * (1 + sd * (signs + 0.1 * rng.standard_normal(n)))]


# ----------------------------------------------------------------------------- Google Benchmark

GB_CONTEXT = {
    "date": "2026-11-20T10:12:31+00:00",
    "host_name": "vm",
    "executable": "./build/bench_sort",
    "num_cpus": 2,
    "mhz_per_cpu": 2596,
    "cpu_scaling_enabled": False,
    "caches": [{"type": "Data", "level": 1, "size": 32768, "num_sharing": 1}],
    "load_avg": [0.52, 0.41, 0.3],
    "library_build_type": "release",
}


def _gb_iteration(
    name: str, index: int, reps: int, real: float, unit: str = "ns"
) -> dict[str, Any]:
    return {
        "name": name,
        "family_index": 0,
        "per_family_instance_index": 0,
        "run_name": name,
        "run_type": "iteration",
        "repetitions": reps,
        "repetition_index": index,
        "threads": 1,
        "iterations": 35087719,
        "real_time": real,
        "cpu_time": real * 0.99,
        "time_unit": unit,
    }


def _gb_aggregate(name: str, kind: str, reps: int, real: float, unit: str = "ns") -> dict[str, Any]:
    return {
        "name": f"{name}_{kind}",
        "family_index": 0,
        "per_family_instance_index": 0,
        "run_name": name,
        "run_type": "aggregate",
        "repetitions": reps,
        "threads": 1,
        "aggregate_name": kind,
        "aggregate_unit": "percentage" if kind == "cv" else "time",
        "iterations": reps,
        "real_time": real,
        "cpu_time": real,
        "time_unit": unit,
    }


def _google(benches: dict[str, list[float]], unit: str = "ns") -> dict[str, Any]:
    """A ``--benchmark_format=json --benchmark_repetitions=N`` file: iterations, then
    the mean, median, stddev and cv aggregates of each benchmark."""
    entries: list[dict[str, Any]] = []
    for name, times in benches.items():
        n = len(times)
        entries += [_gb_iteration(name, i, n, t, unit) for i, t in enumerate(times)]
        m, sd = float(np.mean(times)), float(np.std(times, ddof=1))
        entries += [
            _gb_aggregate(name, "mean", n, m, unit),
            _gb_aggregate(name, "median", n, float(np.median(times)), unit),
            _gb_aggregate(name, "stddev", n, sd, unit),
            _gb_aggregate(name, "cv", n, sd / m, unit),
        ]
    return {"context": GB_CONTEXT, "benchmarks": entries}


def test_google_benchmark_repetitions_are_the_samples(tmp_path: Path) -> None:
    slow, fast = _noisy(2000.0, 12, 1), _noisy(1500.0, 12, 2)
    p = _write(tmp_path / "gb.json", _google({"BM_Slow": slow, "BM_Fast": fast}, unit="us"))
    got = read_result_file(p)
    assert [(r.name, r.format, r.unit, r.direction) for r in got] == [
        ("BM_Slow", "google-benchmark", "s", "lower"),
        ("BM_Fast", "google-benchmark", "s", "lower"),
    ]
    assert got[0].samples is not None and got[0].note is None
    np.testing.assert_allclose(got[0].samples, np.array(slow) / 1e6)  # us -> s
    assert got[1].summary.n == 12
    res = _compare("--from", str(p), "--json", str(tmp_path / "c.json"))
    assert res.exit_code == 0, res.output
    out = json.loads((tmp_path / "c.json").read_text())
    assert out["comparisons"][0]["order"] == ["BM_Fast", "BM_Slow"]


def test_google_benchmark_aggregates_only_is_a_summary_with_a_note(tmp_path: Path) -> None:
    doc = _google({"BM_A": _noisy(100.0, 10, 3), "BM_B": _noisy(130.0, 10, 4)}, unit="ms")
    doc["benchmarks"] = [e for e in doc["benchmarks"] if e["run_type"] == "aggregate"]
    p = _write(tmp_path / "agg.json", doc)
    got = read_result_files([p])
    a = got[0]
    assert a.samples is None and a.summary.n == 10
    mean = next(e for e in doc["benchmarks"] if e["name"] == "BM_A_mean")["real_time"]
    sd = next(e for e in doc["benchmarks"] if e["name"] == "BM_A_stddev")["real_time"]
    assert a.summary.mean == pytest.approx(mean / 1e3)
    assert a.summary.var == pytest.approx((sd / 1e3) ** 2)
    assert a.note is not None and "summary only" in a.note and "10 repetitions" in a.note
    assert all(r.note and "summary only" in r.note for r in got)
    res = _compare("--from", str(p), "--json", str(tmp_path / "r.json"))
    assert res.exit_code == 0, res.output
    assert "summary only" in res.output and "BM_A" in res.output
    warned = json.loads((tmp_path / "r.json").read_text())["warnings"]
    assert sum("summary only" in w for w in warned) == 2


def test_google_benchmark_is_no_longer_taken_for_pyperf(tmp_path: Path) -> None:
    doc = _google({"BM_A": [10.0, 11.0]})
    assert detect_format(doc) == "google-benchmark"
    # the default run (one repetition): before, "expected a 'runs' list" (pyperf)
    one = {"context": GB_CONTEXT, "benchmarks": [_gb_iteration("BM_A", 0, 1, 10.0)]}
    with pytest.raises(ResultFileError) as err:
        read_result_file(_write(tmp_path / "one.json", one))
    msg = str(err.value)
    assert "Google Benchmark JSON" in msg and "--benchmark_repetitions" in msg
    assert "runs" not in msg
    # pyperf files stay pyperf
    assert detect_format({"version": "1.0", "benchmarks": [{"runs": []}]}) == "pyperf"


# ----------------------------------------------------------------------------- Go

GO_HEADER = "goos: linux\ngoarch: amd64\npkg: example.com/sorts\ncpu: AMD EPYC 7B13\n"


def _go_text(
    benches: dict[str, list[float]], footer: str = "PASS\nok  \texample.com/sorts\t9.412s\n"
) -> str:
    """``go test -bench . -benchmem -count N`` output: each benchmark's N lines in turn."""
    lines = []
    for name, times in benches.items():
        for t in times:
            lines.append(
                f"{name:<30}\t  300000\t{t:>10.1f} ns/op\t{t / 40:>8.2f} MB/s\t"
                f"     128 B/op\t       2 allocs/op"
            )
    return GO_HEADER + "\n".join(lines) + "\n" + footer


def test_go_bench_lines_are_samples_of_each_metric(tmp_path: Path) -> None:
    quick, merge = _noisy(4000.0, 20, 5), _noisy(5200.0, 20, 6)
    p = _write(
        tmp_path / "new.txt",
        _go_text({"BenchmarkSort/quick-8": quick, "BenchmarkSort/merge-8": merge}),
    )
    got = read_result_file(p)
    assert [(r.name, r.format, r.unit, r.pi) for r in got] == [
        ("BenchmarkSort/quick-8", "go", "s", "sec/op"),
        ("BenchmarkSort/merge-8", "go", "s", "sec/op"),
    ]
    assert got[0].samples is not None
    np.testing.assert_allclose(got[0].samples, np.round(quick, 1) / 1e9)
    allocs = read_result_file(p, pi="allocs/op")
    assert allocs[0].unit == "allocs/op" and allocs[0].direction == "lower"
    assert allocs[0].samples is not None and set(allocs[0].samples) == {2.0}
    mbs = read_result_file(p, pi="MB/s")
    assert mbs[0].direction == "higher"  # a rate: higher is better
    assert read_result_file(p, pi="ns/op")[0].pi == "sec/op"
    with pytest.raises(ResultFileError, match=r"metric 'ops/s'; the file has: B/op, MB/s"):
        read_result_file(p, pi="ops/s")
    res = _compare("--from", str(p), "--json", str(tmp_path / "c.json"))
    assert res.exit_code == 0, res.output
    order = json.loads((tmp_path / "c.json").read_text())["comparisons"][0]["order"]
    assert order == ["BenchmarkSort/quick-8", "BenchmarkSort/merge-8"]


def test_go_text_is_no_longer_expected_json(tmp_path: Path) -> None:
    verbose = (
        GO_HEADER
        + "BenchmarkA\n    a_test.go:12: warming up\n"
        + "BenchmarkA-8   \t 1000000\t      1234 ns/op\n"
        + "BenchmarkA-8   \t 1000000\t      1250 ns/op\n"
        + "--- BENCH: BenchmarkA-8\nPASS\nok  \texample.com/sorts\t2.1s\n"
        + "pkg: example.com/other\n"
        + "BenchmarkA-8   \t 1000000\t       900 ns/op\n"
        + "BenchmarkA-8   \t 1000000\t       910 ns/op\nPASS\n"
    )
    got = read_result_file(_write(tmp_path / "bench.txt", verbose))
    # the same name in two packages: qualified by the package
    assert [r.name for r in got] == [
        "example.com/sorts.BenchmarkA-8",
        "example.com/other.BenchmarkA-8",
    ]
    assert [r.summary.n for r in got] == [2, 2]
    # text that is neither JSON nor Go output still says what was expected
    with pytest.raises(ResultFileError, match="expected JSON, got a syntax error"):
        read_result_file(_write(tmp_path / "notes.txt", "BenchmarkA is fast\n"))


# ----------------------------------------------------------------------------- criterion


def _criterion_bench(folder: Path, times: list[float], full_id: str | None = None) -> Path:
    """A ``target/criterion/<bench>/`` folder as criterion 0.5 leaves it (linear sampling:
    iteration counts d, 2d, 3d, ...; ``times`` the per-iteration ns)."""
    iters = [float(28 * (i + 1)) for i in range(len(times))]
    new = folder / "new"
    _write(
        new / "sample.json",
        {
            "sampling_mode": "Linear",
            "iters": iters,
            "times": [t * n for t, n in zip(times, iters, strict=True)],
        },
    )
    m = float(np.mean(times))
    se = float(np.std(times, ddof=1) / np.sqrt(len(times)))
    est = {
        "confidence_interval": {
            "confidence_level": 0.95,
            "lower_bound": m - 2 * se,
            "upper_bound": m + 2 * se,
        },
        "point_estimate": m,
        "standard_error": se,
    }
    _write(
        new / "estimates.json",
        {"mean": est, "median": est, "median_abs_dev": est, "slope": est, "std_dev": est},
    )
    name = full_id or folder.name
    _write(
        new / "benchmark.json",
        {
            "group_id": name,
            "function_id": None,
            "value_str": None,
            "throughput": None,
            "full_id": name,
            "directory_name": folder.name,
            "title": name,
        },
    )
    _write(new / "tukey.json", [1.0, 2.0, 3.0, 4.0])
    (folder / "report").mkdir(exist_ok=True)
    (folder / "base").mkdir(exist_ok=True)  # the previous run, not read
    return folder


def test_criterion_files_folders_and_the_whole_target(tmp_path: Path) -> None:
    root = tmp_path / "target" / "criterion"
    fib = _criterion_bench(root / "fib 20", _noisy(25000.0, 30, 7))
    _criterion_bench(root / "sorting" / "quick", _noisy(900.0, 30, 8), full_id="sorting/quick")
    _criterion_bench(root / "sorting" / "merge", _noisy(1100.0, 30, 9), full_id="sorting/merge")
    (root / "report").mkdir()
    sample = read_result_file(fib / "new" / "sample.json")
    assert [(r.name, r.format, r.unit, r.note) for r in sample] == [
        ("fib 20", "criterion", "s", None)
    ]
    assert sample[0].samples is not None
    assert sample[0].samples.size == 30 and 24e-6 < sample[0].samples.mean() < 26e-6
    est = read_result_file(fib / "new" / "estimates.json")[0]
    assert est.samples is None and est.summary.n == 30  # n from the sample.json beside it
    assert est.summary.mean == pytest.approx(sample[0].summary.mean)
    assert est.note is not None and "estimates.json" in est.note
    assert [r.name for r in read_result_file(fib)] == ["fib 20"]
    everything = read_result_file(root)
    assert sorted(r.name for r in everything) == ["fib 20", "sorting/merge", "sorting/quick"]
    assert all(r.samples is not None for r in everything)
    res = _compare("--from", str(root / "sorting"), "--json", str(tmp_path / "c.json"))
    assert res.exit_code == 0, res.output
    order = json.loads((tmp_path / "c.json").read_text())["comparisons"][0]["order"]
    assert order == ["sorting/quick", "sorting/merge"]
    # a bad file deep in the tree: the message names that file and its field
    bad = _write(root / "sorting" / "merge" / "new" / "sample.json", {"iters": [1.0], "times": []})
    with pytest.raises(ResultFileError) as err:
        read_result_file(root)
    assert str(err.value).startswith(f"{bad}: criterion.rs results: sample.json: times:")


def test_criterion_estimates_alone_assume_the_default_sample_size(tmp_path: Path) -> None:
    bench = _criterion_bench(tmp_path / "fib", _noisy(1000.0, 20, 10))
    (bench / "new" / "sample.json").unlink()
    (bench / "new" / "benchmark.json").unlink()
    r = read_result_file(bench)[0]
    assert r.name == "fib" and r.samples is None and r.summary.n == 100
    assert r.note is not None and "assumed" in r.note
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ResultFileError, match=r"it is a folder.*criterion folder"):
        read_result_file(empty)


# ----------------------------------------------------------------------------- pytest-benchmark

MACHINE_INFO = {
    "node": "vm",
    "processor": "x86_64",
    "machine": "x86_64",
    "python_compiler": "GCC 11.4.0",
    "python_implementation": "CPython",
    "python_implementation_version": "3.11.7",
    "python_version": "3.11.7",
    "python_build": ["main", "Dec  8 2023 14:22:46"],
    "release": "6.1.0",
    "system": "Linux",
    "cpu": {"arch": "X86_64", "bits": 64, "count": 2, "brand_raw": "AMD EPYC"},
}


def _pytest_bench(name: str, data: list[float], save_data: bool) -> dict[str, Any]:
    x = np.array(data)
    q1, q3 = np.percentile(x, [25, 75])
    stats: dict[str, Any] = {
        "min": float(x.min()),
        "max": float(x.max()),
        "mean": float(x.mean()),
        "stddev": float(x.std(ddof=1)),
        "rounds": len(data),
        "median": float(np.median(x)),
        "iqr": float(q3 - q1),
        "q1": float(q1),
        "q3": float(q3),
        "iqr_outliers": 0,
        "stddev_outliers": 3,
        "outliers": "3;0",
        "ld15iqr": float(x.min()),
        "hd15iqr": float(x.max()),
        "ops": float(1 / x.mean()),
        "total": float(x.sum()),
        "iterations": 1,
    }
    if save_data:
        stats["data"] = data
    return {
        "group": None,
        "name": name,
        "fullname": f"tests/test_sort.py::{name}",
        "params": None,
        "param": None,
        "extra_info": {},
        "options": {
            "disable_gc": False,
            "timer": "perf_counter",
            "min_rounds": 5,
            "max_time": 1.0,
            "min_time": 5e-06,
            "warmup": False,
        },
        "stats": stats,
    }


def _pytest_doc(save_data: bool) -> dict[str, Any]:
    return {
        "machine_info": MACHINE_INFO,
        "commit_info": {
            "id": "0123abc",
            "time": "2026-11-20T10:00:00+00:00",
            "dirty": False,
            "project": "sorts",
            "branch": "main",
        },
        "benchmarks": [
            _pytest_bench("test_sorted", _noisy(2e-4, 40, 11), save_data),
            _pytest_bench("test_heapsort", _noisy(3e-4, 40, 12), save_data),
        ],
        "datetime": "2026-11-20T10:01:02.345678",
        "version": "4.0.0",
    }


def test_pytest_benchmark_data_are_samples_else_a_summary_with_a_note(tmp_path: Path) -> None:
    doc = _pytest_doc(save_data=True)
    got = read_result_file(_write(tmp_path / "data.json", doc))
    assert [(r.name, r.format, r.unit, r.note) for r in got] == [
        ("test_sorted", "pytest-benchmark", "s", None),
        ("test_heapsort", "pytest-benchmark", "s", None),
    ]
    assert got[0].samples is not None
    np.testing.assert_allclose(got[0].samples, doc["benchmarks"][0]["stats"]["data"])
    p = _write(tmp_path / "summary.json", _pytest_doc(save_data=False))
    r = read_result_file(p)[0]
    assert r.samples is None and r.summary.n == 40
    assert r.summary.var == pytest.approx(doc["benchmarks"][0]["stats"]["stddev"] ** 2)
    assert r.note is not None and "--benchmark-save-data" in r.note
    res = _compare("--from", str(p), "--json", str(tmp_path / "c.json"))
    assert res.exit_code == 0, res.output
    out = json.loads((tmp_path / "c.json").read_text())
    assert out["comparisons"][0]["order"] == ["test_sorted", "test_heapsort"]
    assert any("summary only" in w for w in out["warnings"])


# ----------------------------------------------------------------------------- Assay compare


def test_compare_json_round_trip_reproduces_the_ranking(tmp_path: Path) -> None:
    means = {"mid": 1.1, "slow": 1.3, "fast": 1.0}  # not in rank order
    hyperfine = {
        "results": [
            {"command": c, "times": _noisy(m, 30, i, sd=0.02)}
            for i, (c, m) in enumerate(means.items())
        ]
    }
    h = _write(tmp_path / "h.json", hyperfine)
    first = tmp_path / "c.json"
    res = _compare("--from", str(h), "--json", str(first))
    assert res.exit_code == 0, res.output
    doc = json.loads(first.read_text())
    assert doc["comparisons"][0]["order"] == ["fast", "mid", "slow"]
    got = read_result_file(first)
    assert [(r.name, r.format, r.pi, r.samples) for r in got] == [
        ("fast", "assay", "wall_time", None),
        ("mid", "assay", "wall_time", None),
        ("slow", "assay", "wall_time", None),
    ]
    # the variants in another order: the ranking is computed again, not copied
    doc["comparisons"][0]["variants"].reverse()
    again = _write(tmp_path / "reversed.json", doc)
    second = tmp_path / "c2.json"
    res = _compare("--from", str(again), "--json", str(second))
    assert res.exit_code == 0, res.output
    back = json.loads(second.read_text())["comparisons"][0]
    assert back["order"] == ["fast", "mid", "slow"]
    for old, new in zip(doc["comparisons"][0]["variants"][::-1], back["variants"], strict=True):
        assert new["mean"] == pytest.approx(old["mean"])
        assert new["half_width"] == pytest.approx(old["half_width"], rel=1e-6)
    with pytest.raises(ResultFileError, match="expected a PI named 'cpu'; the file has: wall_time"):
        read_result_file(first, pi="cpu")


# ----------------------------------------------------------------------------- --format


def test_format_forces_the_reader(tmp_path: Path) -> None:
    from assay.importers import RESULT_FORMATS

    assert RESULT_FORMATS == FORMATS
    # a Google Benchmark file without its context object reads as pyperf ...
    doc = _google({"BM_A": _noisy(10.0, 5, 13), "BM_B": _noisy(20.0, 5, 14)})
    del doc["context"]
    p = _write(tmp_path / "gb.json", doc)
    with pytest.raises(ResultFileError, match="expected a 'runs' list"):
        read_result_file(p)
    # ... and as Google Benchmark when told
    assert [r.format for r in read_result_file(p, fmt="google-benchmark")] == [
        "google-benchmark"
    ] * 2
    res = _compare("--from", str(p), "--format", "google-benchmark")
    assert res.exit_code == 0, res.output
    assert "BM_A" in res.output and "BM_B" in res.output
    # a format that does not fit names the format and what it missed
    with pytest.raises(
        ResultFileError, match=r"^.*gb\.json: Go benchmark text: expected result lines"
    ):
        read_result_file(p, fmt="go")
    with pytest.raises(ResultFileError, match=r"read as pyperf \(format given\): expected JSON"):
        read_result_file(
            _write(tmp_path / "go.txt", _go_text({"BenchmarkA-8": [1.0, 2.0]})), fmt="pyperf"
        )
    with pytest.raises(ValueError, match="unknown results format 'csv'"):
        read_result_file(p, fmt="csv")
    assert read_result_file(p, fmt="google-benchmark")[0].format == "google-benchmark"
    bad = _compare("--from", str(p), "--format", "gbench")
    assert bad.exit_code == 2
    assert "Invalid value for '--format'" in bad.output and "google-benchmark" in bad.output
    alone = _compare("--format", "go", "--", "true")
    assert alone.exit_code == 2 and "only with --from" in alone.output


# ----------------------------------------------------------------------------- bad files

GB_ITER = _gb_iteration("BM_A", 0, 2, 10.0)


@pytest.mark.parametrize(
    ("name", "content", "fmt", "match"),
    [
        (
            "gb.json",
            {"context": {}, "benchmarks": [GB_ITER, {**GB_ITER, "real_time": "fast"}]},
            None,
            r"Google Benchmark JSON: benchmarks\[1\] \('BM_A'\)\.real_time: expected a number",
        ),
        (
            "gb.json",
            {"context": {}, "benchmarks": [GB_ITER, {**GB_ITER, "time_unit": "ps"}]},
            None,
            r"Google Benchmark JSON: benchmarks\[1\] \('BM_A'\)\.time_unit: expected one of ns",
        ),
        (
            "gb.json",
            {"context": {}, "benchmarks": [GB_ITER, {**GB_ITER, "real_time": float("nan")}]},
            None,
            r"Google Benchmark JSON: benchmarks \('BM_A'\) real_time: .*item 1 is NaN",
        ),
        (
            "gb.json",
            {
                "context": {},
                "benchmarks": [{**GB_ITER, "error_occurred": True, "error_message": "no input"}],
            },
            None,
            r"Google Benchmark JSON: .*reported an error: 'no input'",
        ),
        (
            "gb.json",
            {"context": {}, "benchmarks": [_gb_aggregate("BM_A", "median", 3, 1.0)]},
            None,
            r"Google Benchmark JSON: .*'mean' and 'stddev' aggregates; found aggregates: median",
        ),
        ("gb.json", {"context": {}, "benchmarks": []}, None, "Google Benchmark JSON: .*none"),
        (
            "go.txt",
            "BenchmarkA-8  100  12 ns/op\nBenchmarkA-8  100  12 ns/op 5\n",
            None,
            r"Go benchmark text: line 2 \('BenchmarkA-8'\): expected value-unit pairs",
        ),
        (
            "go.txt",
            "BenchmarkA-8  100  12 ns/op\nBenchmarkA-8  100  1x2 ns/op\n",
            None,
            r"Go benchmark text: line 2 \('BenchmarkA-8'\): expected a number before 'ns/op'",
        ),
        (
            "go.txt",
            "BenchmarkA-8  100  12 ns/op\nBenchmarkA-8  100  1e999 ns/op\n",
            None,
            r"Go benchmark text: 'BenchmarkA-8' ns/op: .*item 1 is Infinity",
        ),
        (
            "go.txt",
            "BenchmarkA-8  100  12 ns/op\n",
            None,
            r"Go benchmark text: line 1 .*one result line only; .*-count N",
        ),
        (
            "sample.json",
            {"sampling_mode": "Linear", "iters": [1.0, 2.0], "times": [1.0]},
            None,
            r"criterion.rs results: sample.json: iters and times: expected lists of one length",
        ),
        (
            "sample.json",
            {"sampling_mode": "Flat", "iters": [1.0, 0.0], "times": [1.0, 2.0]},
            None,
            r"criterion.rs results: sample.json: iters\[1\]: expected a positive count",
        ),
        (
            "estimates.json",
            {"mean": {"point_estimate": 10.0, "standard_error": "n/a"}},
            None,
            r"criterion.rs results: estimates.json: mean.standard_error: expected a number",
        ),
        (
            "results.json",
            {"results": [{"command": "a", "times": [1.0, 2.0]}]},
            "criterion",
            r"criterion.rs results: sample.json: iters: expected a non-empty list",
        ),
        (
            "pb.json",
            {
                "machine_info": {},
                "benchmarks": [{"name": "t", "stats": {"mean": 1.0, "stddev": 0.1}}],
            },
            None,
            r"pytest-benchmark JSON: benchmarks\[0\] \('t'\)\.stats\.rounds: expected a whole",
        ),
        (
            "pb.json",
            {"machine_info": {}, "benchmarks": [{"name": "t", "stats": None}]},
            None,
            r"pytest-benchmark JSON: benchmarks\[0\] \('t'\)\.stats: expected an object",
        ),
        (
            "pb.json",
            {"benchmarks": [{"name": "t", "stats": {"data": [1.0, "x"]}}]},
            None,
            r"pytest-benchmark JSON: benchmarks\[0\] \('t'\)\.stats\.data: .*item 1 is 'x'",
        ),
        (
            "c.json",
            {"pi": "t", "comparisons": [{"pi": "t", "variants": [{"mean": 1.0}]}]},
            None,
            r"Assay compare --json: comparisons\[0\]\.variants\[0\]: expected an object with "
            r"a 'variant' string",
        ),
        (
            "c.json",
            {"pi": "t", "comparisons": [{"pi": "t", "variants": [{"variant": "a", "mean": None}]}]},
            None,
            r"Assay compare --json: expected at least one variant with a usable interval: a "
            r"\(needs finite mean",
        ),
    ],
)
def test_malformed_files_name_the_format_and_the_field(
    tmp_path: Path, name: str, content: Any, fmt: str | None, match: str
) -> None:
    p = _write(tmp_path / name, content)
    with pytest.raises(ResultFileError) as err:
        read_result_file(p, fmt=fmt)
    assert str(err.value).startswith(f"{p}: "), str(err.value)
    assert re.search(match, str(err.value)), str(err.value)
    res = _compare("--from", str(p), str(p), *(["--format", fmt] if fmt else []))
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert res.output.startswith("error: ") and str(p) in res.output


def test_google_benchmark_files_from_before_run_type(tmp_path: Path) -> None:
    """Google Benchmark before 1.5 wrote no ``run_name``/``run_type``: the repetitions
    share the name and the aggregates are ``BM_x_mean`` (and so on) after them."""
    old = [
        {"name": "BM_A", "iterations": 1000, "real_time": t, "cpu_time": t, "time_unit": "ns"}
        for t in (10.0, 11.0, 12.0)
    ]
    old += [
        {"name": f"BM_A_{k}", "iterations": 3, "real_time": v, "cpu_time": v, "time_unit": "ns"}
        for k, v in (("mean", 11.0), ("median", 11.0), ("stddev", 1.0))
    ]
    got = read_result_file(
        _write(tmp_path / "old.json", {"context": GB_CONTEXT, "benchmarks": old})
    )
    assert [(r.name, r.summary.n) for r in got] == [("BM_A", 3)]
    assert got[0].samples is not None
    np.testing.assert_allclose(got[0].samples, [10e-9, 11e-9, 12e-9])


def test_a_hostile_go_line_is_read_in_linear_time(tmp_path: Path) -> None:
    line = "BenchmarkA-8 1 12" + " " * 200_000 + "ns/op junk\n"
    p = _write(tmp_path / "spaces.txt", line + line)
    with pytest.raises(ResultFileError, match="expected value-unit pairs"):
        read_result_file(p)


# ----------------------------------------------------------------------------- asv

#: Written by asv 0.6.6's own ``Results.add_result`` / ``Results.save`` (results format
#: 2): one parametrized time benchmark (n = 10, 100), 10 samples each, and a memory
#: benchmark of one value; with ``record_samples`` (asv run --record-samples) and without.
ASV_SAMPLES = Path(__file__).parent / "data" / "asv_samples.json"
ASV_SUMMARY = Path(__file__).parent / "data" / "asv_summary.json"


def test_asv_results_are_read_one_variant_per_parameter_combination() -> None:
    """#40: asv's results files were not read ("expected a hyperfine --export-json ...")."""
    got = read_result_file(ASV_SAMPLES)
    assert [(r.name, r.format, r.unit) for r in got] == [
        ("benchmarks.TimeSuite.time_sort(10)", "asv", "s"),
        ("benchmarks.TimeSuite.time_sort(100)", "asv", "s"),
    ]
    assert [r.samples.size for r in got if r.samples is not None] == [10, 10]
    # the memory figure is one value: left out, and said
    assert "left out, one value and no interval each: benchmarks.MemSuite.mem_list" in (
        got[0].note or ""
    )


def test_asv_without_samples_is_its_99_interval_as_a_summary_with_a_note() -> None:
    got = read_result_file(ASV_SUMMARY)
    assert all(r.samples is None for r in got)
    fast, slow = got
    assert slow.summary.mean > fast.summary.mean
    assert fast.summary.n == 10 and fast.summary.mean == pytest.approx(0.01007, rel=1e-3)
    # the 99% interval [0.0098678, 0.010344] as a normal one over 10 repeats
    half = (0.010344 - 0.0098678) / 2
    assert fast.summary.var == pytest.approx((half / 2.5758293035489) ** 2 * 10, rel=1e-6)
    assert "summary only: asv's result and its 99% interval over 10 repeats" in (fast.note or "")
    res = _compare("--from", str(ASV_SUMMARY))
    assert res.exit_code == 0, res.output
    assert "benchmarks.TimeSuite.time_sort(10)" in res.output.split("time_sort(100)")[0]


def test_asv_is_detected_by_its_result_columns_and_a_bad_file_names_the_field(
    tmp_path: Path,
) -> None:
    doc = json.loads(ASV_SAMPLES.read_text())
    assert detect_format(doc) == "asv"
    doc["results"]["benchmarks.TimeSuite.time_sort"][1] = [["10", "100", "1000"]]
    res = _compare("--from", str(_write(tmp_path / "bad.json", doc)))
    assert res.exit_code == 2
    assert "asv results JSON" in res.output and "2 results for 3 parameter combinations" in (
        res.output
    )
