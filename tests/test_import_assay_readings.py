"""``compare --from`` on ``assay run --json`` files (#60): the run's readings are its
samples, so a run without a valid CI (``--runs 3``) is ranked on them, as any other
tool's samples are, instead of being refused."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from assay.cli import main
from assay.importers.results import read_result_file


def _run_doc(path: Path, study: str, values: list[float], half_width: float | None) -> Path:
    pi = {
        "name": "wall_time",
        "unit": "s",
        "direction": "lower",
        "mean": sum(values) / len(values),
        "half_width": half_width,  # None: JSON's null, no interval (--runs 3)
        "n_samples": len(values),
        "confidence": 0.95,
    }
    doc = {
        "study": study,
        "pis": [pi],
        "samples": [{"pi": "wall_time", "variant": None, "values": values}],
    }
    path.write_text(json.dumps(doc))
    return path


def test_a_run_without_an_interval_is_ranked_on_its_readings(tmp_path: Path) -> None:
    fast = _run_doc(tmp_path / "a.json", "fast", [0.0114, 0.0113, 0.0116], None)
    slow = _run_doc(tmp_path / "b.json", "slow", [0.0214, 0.0213, 0.0215], None)
    (r,) = read_result_file(fast)
    assert r.samples is not None and r.samples.tolist() == [0.0114, 0.0113, 0.0116]
    out = tmp_path / "r.json"
    res = CliRunner().invoke(main, ["compare", "--from", str(fast), str(slow), "--json", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert doc["decided"] and [v["variant"] for v in doc["comparisons"][0]["variants"]] == [
        "fast",
        "slow",
    ]


def test_a_run_with_an_interval_keeps_its_summary_beside_its_readings(tmp_path: Path) -> None:
    path = _run_doc(tmp_path / "a.json", "fast", [1.0, 1.1, 0.9, 1.0], 0.02)
    (r,) = read_result_file(path)
    assert r.samples is not None and r.samples.size == 4
    assert r.summary.n == 4 and abs(r.summary.mean - 1.0) < 1e-12  # the stored interval's


def test_without_readings_or_interval_the_file_is_still_refused(tmp_path: Path) -> None:
    path = _run_doc(tmp_path / "a.json", "fast", [1.0, 2.0], None)  # two readings: too few
    other = _run_doc(tmp_path / "b.json", "slow", [2.0, 2.1, 1.9], None)
    res = CliRunner().invoke(main, ["compare", "--from", str(path), str(other)])
    assert res.exit_code != 0 and "usable interval" in res.output, res.output


def test_go_test_output_without_a_benchmark_says_so(tmp_path: Path) -> None:
    """#60: ``go test -bench NoSuch`` prints no result line; it was reported as "expected
    JSON, got a syntax error"."""
    out = tmp_path / "go.txt"
    out.write_text(
        "goos: linux\ngoarch: amd64\npkg: example.com/x\nPASS\nok  \texample.com/x\t0.002s\n"
    )
    other = _run_doc(tmp_path / "a.json", "fast", [1.0, 1.1, 0.9], None)
    res = CliRunner().invoke(main, ["compare", "--from", str(out), str(other)])
    assert res.exit_code == 2, res.output
    assert "go test output without a benchmark result line" in res.output
    assert "JSON" not in res.output


def test_the_same_file_twice_is_named_as_such(tmp_path: Path) -> None:
    path = _run_doc(tmp_path / "a.json", "fast", [1.0, 1.1, 0.9], None)
    res = CliRunner().invoke(main, ["compare", "--from", str(path), str(path)])
    assert res.exit_code == 2 and "given twice" in res.output, res.output


def _google_benchmark(path: Path) -> Path:
    rows = [
        {"name": n, "run_name": n, "run_type": "iteration", "real_time": r, "cpu_time": c}
        | {"time_unit": "us"}
        for n, rc in (("BM_a", [(10, 5), (11, 5.5), (12, 6)]), ("BM_b", [(20, 15), (21, 16)]))
        for r, c in rc
    ]
    path.write_text(json.dumps({"context": {}, "benchmarks": rows}))
    return path


def test_pi_selects_google_benchmarks_field_or_is_refused(tmp_path: Path) -> None:
    """#60: --pi on another tool's file was only a label (cpu_time showed real_time's
    numbers; --pi nonsense answered 'best on nonsense')."""
    gb = _google_benchmark(tmp_path / "gb.json")
    cpu = read_result_file(gb, pi="cpu_time")
    first = cpu[0].samples
    assert first is not None and first.tolist() == [5e-6, 5.5e-6, 6e-6]
    assert {r.pi for r in cpu} == {"cpu_time"}
    res = CliRunner().invoke(main, ["compare", "--from", str(gb), "--pi", "nonsense"])
    assert res.exit_code == 2 and "real_time, cpu_time" in res.output, res.output
    run = _run_doc(tmp_path / "a.json", "fast", [1.0, 1.1, 0.9], None)
    hf = tmp_path / "h.json"
    hf.write_text(json.dumps({"results": [{"command": "x", "times": [1.0, 1.1, 1.2]}]}))
    res = CliRunner().invoke(main, ["compare", "--from", str(hf), str(run), "--pi", "cpu_time"])
    assert res.exit_code == 2 and "one measurement per benchmark" in res.output, res.output
