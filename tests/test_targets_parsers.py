"""Parsers of the targets against real captured output (tests/data/targets/), the target
interface's helpers, the Zipf key choice and the embedded SQLite target."""

from __future__ import annotations

import json
import re
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.targets import TARGETS, target_class
from assay.targets.__main__ import main as targets_main
from assay.targets.base import TargetError, check_port_free, parse_knobs, percentile
from assay.targets.fio import interval_series, parse_fio_json, parse_fio_log
from assay.targets.postgres import parse_pgbench, parse_pgbench_log
from assay.targets.redis import parse_redis_benchmark
from assay.targets.sqlite import SqliteTarget, apply_pragmas
from assay.targets.zipf import zipf_keys, zipf_probabilities

DATA = Path(__file__).parent / "data" / "targets"


# -- pgbench ------------------------------------------------------------------------------
def test_pgbench_tpcb_report_and_progress() -> None:
    out = (DATA / "pgbench-15-tpcb.stdout.txt").read_text()
    err = (DATA / "pgbench-15-tpcb.stderr.txt").read_text()
    rep = parse_pgbench(out, err)
    assert rep["tps"] == pytest.approx(491.303862)
    assert rep["latency_ms_mean"] == pytest.approx(8.116)
    assert rep["latency_ms_stddev"] == pytest.approx(4.590)
    assert rep["connection_ms"] == pytest.approx(15.773)
    assert rep["transactions"] == 2461
    assert rep["failed"] == 0
    assert rep["clients"] == 4
    assert rep["transaction_type"] == "<builtin: TPC-B (sort of)>"
    assert rep["interval_tps"] == [491.9, 551.9, 509.8, 439.2, 465.0]
    assert rep["interval_latency_ms"][0] == pytest.approx(7.968)
    # pgbench's own consistency: tps x duration ~ transactions, and the interval mean ~ tps
    assert rep["tps"] * 5 == pytest.approx(rep["transactions"], rel=0.05)
    assert np.mean(rep["interval_tps"]) == pytest.approx(rep["tps"], rel=0.05)


def test_pgbench_select_only_with_per_statement_report() -> None:
    rep = parse_pgbench((DATA / "pgbench-15-select.stdout.txt").read_text())
    assert rep["tps"] == pytest.approx(9137.426901)
    assert rep["latency_ms_mean"] == pytest.approx(0.219)
    assert rep["transactions"] == 400  # "400/400" with -t
    assert "latency_ms_stddev" not in rep  # pgbench prints no stddev without -P or -L
    assert rep["interval_tps"] == []


def test_pgbench_latency_log() -> None:
    lat = parse_pgbench_log((DATA / "pgbench-15-select.log").read_text())
    first = (DATA / "pgbench-15-select.log").read_text().splitlines()[0].split()
    assert lat[0] == pytest.approx(int(first[2]) / 1000)
    assert len(lat) == 50
    assert all(x > 0 for x in lat)


def test_pgbench_without_tps_is_a_clear_error() -> None:
    with pytest.raises(TargetError, match=r"no 'tps = \.\.\.' line: connection to server"):
        parse_pgbench("", "connection to server at 127.0.0.1 failed")


# -- redis-benchmark ----------------------------------------------------------------------
def test_redis_benchmark_full_report() -> None:
    text = (DATA / "redis-benchmark-7.0.15.txt").read_text()
    rep = parse_redis_benchmark(text)
    assert list(rep) == ["SET", "GET", "LPUSH"]
    for test, entry in rep.items():
        # the parsed numbers equal those in the report's own summary lines
        block = text.split(f"====== {test} ======")[1]
        summary = re.search(r"throughput summary: ([0-9.]+)", block)
        assert summary is not None
        assert entry["rps"] == float(summary.group(1))
        assert entry["min_ms"] <= entry["p50_ms"] <= entry["p95_ms"] <= entry["p99_ms"]
        assert entry["p99_ms"] <= entry["max_ms"]
        assert entry["interval_rps"], test
        assert all(x > 0 for x in entry["interval_rps"])
        # the 250 ms intervals average to roughly the overall rate
        assert np.mean(entry["interval_rps"]) == pytest.approx(entry["rps"], rel=0.5)


def test_redis_benchmark_csv_agrees_in_kind() -> None:
    """The CSV export (another run) names the same fields that the full report gives."""
    header = (DATA / "redis-benchmark-7.0.15.csv").read_text().splitlines()[0]
    assert "p99_latency_ms" in header and "rps" in header


def test_redis_benchmark_error_output() -> None:
    with pytest.raises(TargetError, match="Could not connect"):
        parse_redis_benchmark("Could not connect to Redis at 127.0.0.1:1: Connection refused")


# -- fio ----------------------------------------------------------------------------------
def test_fio_json_randread() -> None:
    doc = json.loads((DATA / "fio-3.33-randread.json").read_text())
    rep = parse_fio_json(doc)
    assert rep["version"] == "fio-3.33"
    assert "write" not in rep
    r = rep["read"]
    job = doc["jobs"][0]["read"]
    assert r["iops"] == pytest.approx(job["iops"])
    assert r["bw_kib_s"] == job["bw"]
    assert r["latency_us_p99"] == pytest.approx(job["clat_ns"]["percentile"]["99.000000"] / 1e3)
    assert r["latency_us_p50"] < r["latency_us_p99"] < r["latency_us_p99_9"]
    # fio's own consistency: IOPS x block size = bandwidth; bytes / runtime = bandwidth
    assert r["iops"] * 4 == pytest.approx(r["bw_kib_s"], rel=0.01)
    assert r["io_bytes"] / 1024 / (r["runtime_ms"] / 1e3) == pytest.approx(r["bw_kib_s"], rel=0.01)


def test_fio_interval_logs() -> None:
    iops = parse_fio_log((DATA / "fio-3.33_iops.1.log").read_text())
    bw = parse_fio_log((DATA / "fio-3.33_bw.1.log").read_text())
    clat = parse_fio_log((DATA / "fio-3.33_clat.1.log").read_text())
    assert iops[0] == (100, 18300.0, 0)
    assert len(iops) == len(bw) == 12
    # 4 KiB blocks: each interval's bandwidth (KiB/s) is four times its IOPS
    for (_, i, _), (_, b, _) in zip(iops, bw, strict=True):
        assert b == pytest.approx(4 * i, rel=0.01)
    assert all(v > 0 for _, v, _ in clat)
    assert interval_series(iops, "sum") == [v for _, v, _ in iops]


def test_fio_no_io_is_an_error() -> None:
    with pytest.raises(TargetError, match="no I/O"):
        parse_fio_json({"jobs": [{"read": {"io_bytes": 0}, "write": {"io_bytes": 0}}]})
    with pytest.raises(TargetError, match="no 'jobs'"):
        parse_fio_json({})


# -- helpers and the registry -------------------------------------------------------------
def test_parse_knobs() -> None:
    assert parse_knobs(["a=1", "b = x y", "a=2"]) == {"a": "2", "b": "x y"}
    for bad in ("novalue", "=1", "1x=2", "a b=1"):
        with pytest.raises(TargetError, match="expected NAME=VALUE"):
            parse_knobs([bad])


def test_check_port_free_names_a_taken_port() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(TargetError, match=f"port {port} .* is taken"):
            check_port_free(port)


@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=50), st.floats(0, 100))
def test_percentile_matches_numpy(xs: list[float], q: float) -> None:
    assert percentile(xs, q) == pytest.approx(np.percentile(xs, q), abs=1e-6)


def test_every_target_builds_a_parser() -> None:
    for name in TARGETS:
        cls = target_class(name)
        assert cls.name == name


def test_cli_usage_and_unknown_target(capsys: pytest.CaptureFixture[str]) -> None:
    assert targets_main([]) == 2
    assert targets_main(["nosuch", "run"]) == 2
    assert "NAME: sqlite, postgres, redis, fio" in capsys.readouterr().err


# -- Zipf -----------------------------------------------------------------------------------
def test_zipf_probabilities_known_values() -> None:
    p = zipf_probabilities(4, 1.0)
    h4 = 1 + 1 / 2 + 1 / 3 + 1 / 4
    assert p == pytest.approx([1 / h4, 1 / (2 * h4), 1 / (3 * h4), 1 / (4 * h4)])
    assert zipf_probabilities(5, 0.0) == pytest.approx([0.2] * 5)


def test_zipf_keys_follow_the_law() -> None:
    n, theta = 50, 0.99
    keys = zipf_keys(n, theta, 200_000, np.random.default_rng(3))
    freq = np.sort(np.bincount(keys, minlength=n))[::-1] / keys.size
    # sorted key frequencies match the rank probabilities (the scramble only relabels)
    assert freq == pytest.approx(zipf_probabilities(n, theta), abs=0.004)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 500), st.floats(0, 3), st.integers(0, 2**31))
def test_zipf_keys_in_range(n: int, theta: float, seed: int) -> None:
    keys = zipf_keys(n, theta, 100, np.random.default_rng(seed))
    assert keys.min() >= 0 and keys.max() < n


# -- SQLite (embedded) ----------------------------------------------------------------------
def test_sqlite_pragmas_are_checked() -> None:
    db = sqlite3.connect(":memory:")
    assert apply_pragmas(db, {"temp_store": "MEMORY", "synchronous": "0"}) == {
        "synchronous": "off",
        "temp_store": "memory",
    }
    with pytest.raises(TargetError, match="knob journal_mode=SIDEWAYS: SQLite did not take it"):
        apply_pragmas(db, {"journal_mode": "SIDEWAYS"})
    with pytest.raises(TargetError, match="PRAGMA values are a word or an integer"):
        apply_pragmas(db, {"cache_size": "1; DROP TABLE x"})


@pytest.mark.parametrize("workload", ["insert", "kv", "tpcb"])
def test_sqlite_workloads(tmp_path: Path, workload: str) -> None:
    t = SqliteTarget(db=None, workdir=str(tmp_path))
    r = t.run(
        {"workload": workload, "rows": 2000, "ops": 300, "batch": 10, "zipf": 0.9,
         "knobs": {"journal_mode": "WAL", "synchronous": "OFF", "page_size": "8192"}}
    )  # fmt: skip
    n = 2000 if workload == "insert" else 300
    assert len(r.units["latency_ms"]) == n // 10
    assert r.pi["throughput"] == pytest.approx(n / r.pi["elapsed_s"])
    assert r.pi["txn_per_s"] == pytest.approx(n / 10 / r.pi["elapsed_s"])
    # the per-transaction times add up to (nearly) the whole measured time
    assert sum(r.units["latency_ms"]) / 1e3 <= r.pi["elapsed_s"]
    assert sum(r.units["latency_ms"]) / 1e3 > 0.5 * r.pi["elapsed_s"]
    assert r.knobs == {"journal_mode": "wal", "synchronous": "off", "page_size": "8192"}
    assert list(tmp_path.iterdir()) == []  # the fresh database is gone


def test_sqlite_per_op_units_and_persistent_db(tmp_path: Path) -> None:
    path = tmp_path / "kv.db"
    t = SqliteTarget(db=str(path))
    t.start({"page_size": "4096"}, {"workload": "kv", "rows": 500})
    assert path.exists()
    r = t.run({"workload": "kv", "rows": 500, "ops": 100, "batch": 20, "units": "op",
               "read_ratio": 0.0, "knobs": {}})  # fmt: skip
    assert len(r.units["latency_ms"]) == 100
    assert r.pi["writes"] == 100
    assert t.describe()["config"]["page_size"] == "4096"
    t.reset({"workload": "kv", "rows": 500})
    t.stop()
    assert not path.exists()


def test_sqlite_cli_prints_one_json_object(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "assay.targets", "sqlite", "run", "--rows", "500", "--ops",
         "200", "--dir", str(tmp_path), "--knob", "cache_size=-2000"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["target"] == "sqlite" and doc["knobs"] == {"cache_size": "-2000"}
    assert doc["pi"]["throughput"] > 0


def test_sqlite_cli_bad_knob_exits_2_without_traceback(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "assay.targets", "sqlite", "run", "--dir", str(tmp_path),
         "--knob", "synchronous=sometimes"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("error: sqlite: knob synchronous=sometimes")
