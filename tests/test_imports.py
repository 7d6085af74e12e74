"""Reading hyperfine, pyperf and Assay results (assay.importers.results)."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from assay.importers.results import (
    ResultFileError,
    detect_format,
    parse_assay,
    parse_hyperfine,
    parse_pyperf,
    read_result_file,
    read_result_files,
)
from assay.stats.compare import rank_variants

DATA = Path(__file__).parent / "data"
HYPERFINE = DATA / "hyperfine_sqlite_sync.json"
PYPERF = DATA / "pyperf_sort.json"
ASSAY = DATA / "assay_sqlite_sync_off.json"


def _doc(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


# ----------------------------------------------------------------------------- hyperfine


def test_hyperfine_fixture() -> None:
    doc = _doc(HYPERFINE)
    got = read_result_file(HYPERFINE)
    assert [r.format for r in got] == ["hyperfine", "hyperfine"]
    assert [r.name for r in got] == [res["command"] for res in doc["results"]]
    for r, res in zip(got, doc["results"], strict=True):
        assert r.samples is not None
        np.testing.assert_array_equal(r.samples, res["times"])
        assert r.summary.mean == pytest.approx(res["mean"], rel=1e-12)
        assert r.summary.std == pytest.approx(res["stddev"], rel=1e-12)
        assert r.summary.n == len(res["times"]) and r.summary.subsession_size == 1
        assert (r.unit, r.direction, r.source, r.pi) == ("s", "lower", str(HYPERFINE), None)
        assert r.data is r.samples


def test_hyperfine_ranking_end_to_end() -> None:
    got = read_result_file(HYPERFINE)
    r = rank_variants({v.name: v.data for v in got}, "lower")
    assert "synchronous=OFF" in r.order[0] and r.decided


# ----------------------------------------------------------------------------- pyperf


def test_pyperf_fixture() -> None:
    doc = _doc(PYPERF)
    got = read_result_file(PYPERF)
    assert [r.name for r in got] == ["sorted(list)", "list.sort()"]
    for r, bench in zip(got, doc["benchmarks"], strict=True):
        values = [v for run in bench["runs"] for v in run.get("values", [])]
        assert r.samples is not None
        np.testing.assert_array_equal(r.samples, values)
        assert r.samples.size == 30  # the calibration run (warm-ups only) is left out
        assert (r.unit, r.direction, r.format) == ("s", "lower", "pyperf")


def test_pyperf_gzip_and_common_metadata(tmp_path: Path) -> None:
    doc = {
        "version": "1.0",
        "metadata": {"name": "telco", "unit": "byte"},
        "benchmarks": [{"runs": [{"values": [10.0, 11.0]}, {"values": [12.0]}]}],
    }
    p = tmp_path / "telco.json.gz"
    p.write_bytes(gzip.compress(json.dumps(doc).encode()))
    (r,) = read_result_file(p)
    assert r.name == "telco" and r.unit == "B"
    assert r.samples is not None and r.samples.tolist() == [10.0, 11.0, 12.0]


def test_pyperf_nameless_benchmark_gets_an_index() -> None:
    doc = {"benchmarks": [{"runs": [{"values": [1.0, 2.0]}]}]}
    assert parse_pyperf(doc)[0].name == "benchmark0"


# ----------------------------------------------------------------------------- assay


def test_assay_fixture_all_usable_pis() -> None:
    doc = _doc(ASSAY)
    got = read_result_file(ASSAY)
    # the third PI has no finite interval (nulls) and is skipped
    assert [r.pi for r in got] == ["wall_time", "throughput"]
    assert [r.name for r in got] == ["sqlite-sync-off/wall_time", "sqlite-sync-off/throughput"]
    for r, pi in zip(got, doc["pis"], strict=False):
        assert r.samples is None and r.data is r.summary
        s = r.summary
        assert s.mean == pi["mean"] and s.n == pi["n_samples"]
        assert s.subsession_size == pi["subsession_size"]
        t = stats.t.ppf((1 + pi["confidence"]) / 2, s.n - 1)
        assert t * s.standard_error == pytest.approx(pi["half_width"], rel=1e-12)
        assert r.direction == pi["direction"] and r.unit == pi["unit"]


def test_assay_select_pi() -> None:
    (r,) = read_result_file(ASSAY, pi="throughput")
    assert r.name == "sqlite-sync-off" and r.direction == "higher" and r.unit == "rows/s"
    with pytest.raises(ResultFileError, match=r"'latency'.*wall_time, throughput, p99_latency"):
        read_result_file(ASSAY, pi="latency")
    with pytest.raises(ResultFileError, match=r"p99_latency \(needs finite mean"):
        read_result_file(ASSAY, pi="p99_latency")


def test_assay_summaries_rank_against_each_other(tmp_path: Path) -> None:
    doc = _doc(ASSAY)
    doc["study"] = "sqlite-sync-full"
    doc["pis"][0]["mean"] *= 1.6
    doc["pis"][0]["half_width"] *= 1.6
    other = tmp_path / "full.json"
    other.write_text(json.dumps(doc))
    got = read_result_files([ASSAY, other], pi="wall_time")
    assert [r.name for r in got] == ["sqlite-sync-off", "sqlite-sync-full"]
    r = rank_variants({v.name: v.data for v in got}, "lower")
    assert r.order == ("sqlite-sync-off", "sqlite-sync-full") and r.decided
    assert math.isnan(r.pairs[0].comparison.mann_whitney_p)  # type: ignore[union-attr]


# ----------------------------------------------------------------------------- several files


def test_repeated_names_get_file_prefixes(tmp_path: Path) -> None:
    other = tmp_path / "again.json"
    other.write_text(HYPERFINE.read_text())
    got = read_result_files([HYPERFINE, other])
    assert len(got) == 4 and len({r.name for r in got}) == 4
    assert got[0].name.startswith("hyperfine_sqlite_sync.json:sqlite3")
    assert got[2].name.startswith("again.json:sqlite3")


def test_same_name_twice_in_one_file_is_an_error(tmp_path: Path) -> None:
    p = tmp_path / "dup.json"
    p.write_text(json.dumps({"results": [{"command": "x", "times": [1.0, 2.0]}] * 2}))
    with pytest.raises(ValueError, match="not unique"):
        read_result_files([p])


# ----------------------------------------------------------------------------- bad files


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ('{"results": [', "expected JSON, got a syntax error at line 1"),
        ("[1, 2, 3]", "expected a hyperfine --export-json, pyperf or Assay --json file"),
        ('{"something": 1}', "expected a hyperfine --export-json, pyperf or Assay --json file"),
        ('{"results": []}', "at least one entry in 'results'"),
        ('{"results": [{"times": [1.0, 2.0]}]}', r"results\[0\]: expected a 'command' string"),
        ('{"results": [{"command": "a", "mean": 1.0}]}', "expected 'times'"),
        ('{"results": [{"command": "a", "times": ["x"]}]}', "list of numbers"),
        ('{"results": [{"command": "a", "times": [1.0]}]}', "at least 2 values"),
        ('{"benchmarks": [{"runs": [{"warmups": [[1, 1.0]]}]}]}', "runs with 'values'"),
        ('{"benchmarks": [{"runs": 3}]}', "expected a 'runs' list"),
        (
            '{"metadata": {"unit": "parsec"}, "benchmarks": [{"runs": [{"values": [1, 2]}]}]}',
            "unknown unit 'parsec'",
        ),
        ('{"pis": []}', "the 'pis' list is empty"),
        ('{"pis": [{"mean": 1.0}]}', r"pis\[0\]: expected an object with a 'name'"),
        (
            '{"pis": [{"name": "t", "mean": 1.0, "half_width": 0.1, "n_samples": 9,'
            ' "confidence": 0.95, "direction": "sideways"}]}',
            "direction must be",
        ),
    ],
)
def test_bad_files_name_the_file_and_the_expectation(
    tmp_path: Path, content: str, match: str
) -> None:
    p = tmp_path / "bad.json"
    p.write_text(content)
    with pytest.raises(ResultFileError, match=match) as err:
        read_result_file(p)
    assert isinstance(err.value, ValueError)
    assert str(err.value).startswith(f"{p}: ")
    assert err.value.source == str(p)


def test_missing_binary_and_broken_gzip_files(tmp_path: Path) -> None:
    with pytest.raises(ResultFileError, match="cannot read the file"):
        read_result_file(tmp_path / "nope.json")
    b = tmp_path / "bin.json"
    b.write_bytes(b"\xff\xfe\x00\x01")
    with pytest.raises(ResultFileError, match="UTF-8"):
        read_result_file(b)
    g = tmp_path / "broken.json.gz"
    g.write_bytes(b"\x1f\x8b\x08\x00garbage")
    with pytest.raises(ResultFileError, match="gzip"):
        read_result_file(g)
    with pytest.raises(ResultFileError, match=r"cannot read the file"):
        read_result_file(tmp_path)


def test_parsers_reject_the_wrong_format() -> None:
    with pytest.raises(ResultFileError, match="'results' list"):
        parse_hyperfine({"benchmarks": []})
    with pytest.raises(ResultFileError, match="'benchmarks' list"):
        parse_pyperf({"results": []})
    with pytest.raises(ResultFileError, match="'pis' list"):
        parse_assay({"results": []})
    assert detect_format(_doc(ASSAY)) == "assay"
    assert detect_format("text") is None
