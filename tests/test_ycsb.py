"""YCSB (go-ycsb) as a workload: its report parsed, its workloads, and real runs against
the SQLite, Redis, PostgreSQL and etcd targets whose PIs equal YCSB's own summary lines.

The real runs are skipped, with the reason, where go-ycsb or a server is missing
(``bash scripts/install-targets.sh`` builds and installs them).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay.targets.base import TargetError
from assay.targets.ycsb import (
    CORE_WORKLOADS,
    build_parser,
    find_binary,
    parse_ycsb,
    property_text,
    report_pis,
    workload_properties,
)

LINE = (
    "{op} - Takes(s): {takes}, Count: {count}, OPS: {ops}, Avg(us): {avg}, Min(us): 1, "
    "Max(us): {mx}, 50th(us): {p50}, 90th(us): 10, 95th(us): {p95}, 99th(us): {p99}, "
    "99.9th(us): {mx}, 99.99th(us): {mx}"
)


def _line(op: str, takes: float, count: int, **kw: float) -> str:
    values = {"avg": 5, "mx": 90, "p50": 4, "p95": 20, "p99": 40, "ops": f"{count / takes:.1f}"}
    values.update(kw)
    return LINE.format(op=op.ljust(6), takes=takes, count=count, **values)


def _have_go_ycsb() -> bool:
    try:
        find_binary()
    except TargetError:
        return False
    return True


needs_go_ycsb = pytest.mark.skipif(
    not _have_go_ycsb(), reason="go-ycsb not installed; run: bash scripts/install-targets.sh"
)


# -- the report ---------------------------------------------------------------------------
def test_intervals_are_the_differences_of_the_cumulative_totals() -> None:
    text = "\n".join([
        '"redis.password"="secret"',  # go-ycsb prints every property first
        _line("READ", 1.0, 100), _line("TOTAL", 1.0, 100),
        _line("READ", 2.0, 250), _line("TOTAL", 2.0, 250),
        _line("READ", 3.0, 330), _line("TOTAL", 3.0, 330),
        "**********************************************",
        "Run finished, takes 3.4s",
        _line("READ", 3.4, 360, p99=44), _line("TOTAL", 3.4, 360, p99=44),
    ])  # fmt: skip
    rep = parse_ycsb(text, interval=1.0)
    assert rep.interval_ops == [100.0, 150.0, 80.0]
    assert rep.elapsed_s == 3.4
    assert rep.ops["READ"]["count"] == 360
    assert rep.ops["READ"]["p99_us"] == 44
    assert len(rep.summary) == 2 and rep.summary[0].startswith("READ")
    pi = report_pis(rep)
    assert pi["throughput"] == round(360 / 3.4, 1)
    assert pi["read_p99_us"] == 44 and pi["errors"] == 0


def test_a_two_second_interval_divides_by_two() -> None:
    text = "\n".join([_line("TOTAL", 2.0, 300), "Run finished, takes 3s", _line("TOTAL", 3.0, 420)])
    assert parse_ycsb(text, interval=2.0).interval_ops == [150.0]


def test_failed_operations_are_counted_apart() -> None:
    text = "\n".join([
        "Run finished, takes 1s",
        _line("READ", 1.0, 90), _line("READ_ERROR", 1.0, 10), _line("TOTAL", 1.0, 90),
    ])  # fmt: skip
    rep = parse_ycsb(text)
    assert rep.errors == 10
    pi = report_pis(rep)
    assert pi["errors"] == 10 and pi["read_error_count"] == 10
    assert "read_error_p99_us" not in pi  # the failures' latencies are no PI


def test_no_final_report_is_an_error_without_the_properties() -> None:
    text = '"redis.password"="hunter2"\nUsing request distribution\npanic: dial unix'
    with pytest.raises(TargetError, match="no final report") as err:
        parse_ycsb(text)
    assert "hunter2" not in str(err.value)
    assert "panic: dial unix" in str(err.value)


@given(st.lists(st.integers(min_value=0, max_value=10_000), min_size=1, max_size=30))
def test_interval_series_sums_to_the_last_total(steps: list[int]) -> None:
    counts, total = [], 0
    for s in steps:
        total += s
        counts.append(total)
    lines = [_line("TOTAL", i + 1.0, c) for i, c in enumerate(counts)]
    lines += ["Run finished, takes 99s", _line("TOTAL", 99.0, total)]
    rep = parse_ycsb("\n".join(lines))
    assert rep.interval_ops == [float(s) for s in steps]
    assert sum(rep.interval_ops) == total


# -- workloads and properties ---------------------------------------------------------------
PROPORTIONS = ("readproportion", "updateproportion", "insertproportion", "scanproportion",
               "readmodifywriteproportion")  # fmt: skip


@pytest.mark.parametrize("letter", sorted(CORE_WORKLOADS))
def test_every_core_workload_sums_to_one(letter: str) -> None:
    opts = build_parser().parse_args(["run", "--workload", letter.upper()])
    props = workload_properties(opts)
    assert sum(float(props[k]) for k in PROPORTIONS) == pytest.approx(1.0)
    assert props["requestdistribution"] == ("latest" if letter == "d" else "zipfian")


def test_workload_options_reach_the_properties() -> None:
    opts = build_parser().parse_args([
        "run", "--records", "50", "--operations", "70", "--threads", "3", "--field-count", "2",
        "--field-length", "16", "--distribution", "uniform", "--max-time", "9",
    ])  # fmt: skip
    props = workload_properties(opts)
    counts = (props["recordcount"], props["operationcount"], props["threadcount"])
    assert counts == ("50", "70", "3")
    assert (props["fieldcount"], props["fieldlength"]) == ("2", "16")
    assert props["requestdistribution"] == "uniform"
    assert "maxexecutiontime" not in props  # go-ycsb ignores it: the driver stops the run


def test_a_property_cannot_smuggle_in_another() -> None:
    with pytest.raises(TargetError, match="line break"):
        property_text({"sqlite.db": "/x\nredis.addr=evil"})


def test_bad_options_are_refused_by_the_parser(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["run", "--threads", "0"], ["run", "--workload", "g"], ["run", "--db", "mysql"]):
        with pytest.raises(SystemExit) as exc:
            build_parser().parse_args(argv)
        assert exc.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


# -- real runs ------------------------------------------------------------------------------
def _ycsb(*args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "assay.targets", "ycsb", *args],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc: dict[str, Any] = json.loads(done.stdout)
    return doc


_OWN = re.compile(r"^TOTAL\s+- Takes\(s\): ([\d.]+), Count: (\d+), OPS: ([\d.]+), "
                  r"Avg\(us\): (\d+).*?99th\(us\): (\d+),")  # fmt: skip


def _agrees_with_ycsb(doc: dict[str, Any]) -> None:
    """The PIs are the numbers of YCSB's own TOTAL summary line (read with a pattern of
    this test's own), and nothing failed."""
    own = [m for line in doc["report"]["summary"] if (m := _OWN.match(line))]
    assert len(own) == 1, doc["report"]["summary"]
    takes, count, ops, avg, p99 = (float(g) for g in own[0].groups())
    pi = doc["pi"]
    assert pi["throughput"] == pi["total_ops"] == ops > 0
    assert pi["total_count"] == count and pi["total_avg_us"] == avg and pi["total_p99_us"] == p99
    assert doc["report"]["elapsed_s"] == takes
    assert pi["errors"] == 0
    assert all(u > 0 for u in doc["units"]["throughput"])


@needs_go_ycsb
def test_sqlite_run_with_its_own_load(tmp_path: Path) -> None:
    state = str(tmp_path / "y")
    doc = _ycsb("run", "--db", "sqlite", "--state", state, "--load", "--records", "300",
                "--operations", "3000", "--workload", "f", "--field-length", "20")  # fmt: skip
    _agrees_with_ycsb(doc)
    assert doc["pi"]["read_modify_write_count"] > 0
    assert doc["params"]["fieldlength"] == "20"
    assert doc["version"].startswith("go-ycsb")
    _ycsb_teardown(state)


def _ycsb_teardown(state: str) -> None:
    subprocess.run([sys.executable, "-m", "assay.targets", "ycsb", "teardown", "--db", "sqlite",
                    "--state", state], check=True, timeout=60)  # fmt: skip
    assert not Path(state).exists()


@needs_go_ycsb
def test_the_interval_series_is_per_second(tmp_path: Path) -> None:
    """A run of over two seconds reports each whole second's operations; their sum is
    at most the total (the last partial second is not one)."""
    state = str(tmp_path / "y")
    doc = _ycsb("run", "--db", "sqlite", "--state", state, "--load", "--records", "200",
                "--operations", "5000000", "--max-time", "3", "--workload", "c")  # fmt: skip
    series = doc["report"]["series"]
    assert len(series["ops_per_s"]) >= 2 and series["t_s"][:2] == [1, 2]
    assert sum(series["ops_per_s"]) <= doc["pi"]["total_count"]
    _ycsb_teardown(state)


@pytest.fixture
def redis_state(tmp_path: Path) -> Iterator[str]:
    if not shutil.which("redis-server"):
        pytest.skip("redis-server not installed; run: bash scripts/install-targets.sh")
    state = str(tmp_path / "redis")
    subprocess.run([sys.executable, "-m", "assay.targets", "redis", "setup", "--state", state],
                   check=True, capture_output=True, timeout=60)  # fmt: skip
    yield state
    subprocess.run([sys.executable, "-m", "assay.targets", "redis", "teardown", "--state", state],
                   check=True, capture_output=True, timeout=60)  # fmt: skip


@needs_go_ycsb
def test_redis_through_a_user_of_its_own(redis_state: str) -> None:
    doc = _ycsb("run", "--db", "redis", "--state", redis_state, "--load", "--records", "300",
                "--operations", "3000", "--threads", "4")  # fmt: skip
    _agrees_with_ycsb(doc)
    assert "redis.password" not in json.dumps(doc)  # the run's password is not in the result
    from assay.targets.redis import RedisTarget, redis_command

    target = RedisTarget(redis_state)
    st_, _ = target._running()
    users = redis_command(target._endpoint(st_), "ACL", "USERS")
    assert users == ["default"]  # the run's user is gone
    done = subprocess.run(
        [sys.executable, "-m", "assay.targets", "ycsb", "run", "--db", "redis", "--state",
         redis_state, "--workload", "e"], capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and "no scan" in done.stderr


@needs_go_ycsb
def test_postgres_over_tcp_only(tmp_path: Path) -> None:
    if not any(Path("/usr/lib/postgresql").glob("*/bin/initdb")):
        pytest.skip("PostgreSQL not installed; run: bash scripts/install-targets.sh")
    state = str(tmp_path / "pg")

    def target(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "assay.targets", *args, "--state", state],
                              capture_output=True, text=True, timeout=120, check=False)  # fmt: skip

    assert target("postgres", "setup", "--scale", "1").returncode == 0
    try:
        refused = target("ycsb", "run", "--db", "postgres", "--load")
        assert refused.returncode == 2 and "--tcp" in refused.stderr
    finally:
        target("postgres", "teardown")
    assert target("postgres", "setup", "--scale", "1", "--tcp").returncode == 0
    try:
        doc = _ycsb("run", "--db", "postgres", "--state", state, "--load", "--records", "300",
                    "--operations", "2000", "--threads", "2", "--workload", "e")  # fmt: skip
        _agrees_with_ycsb(doc)
        assert doc["pi"]["scan_count"] > 0
    finally:
        target("postgres", "teardown")


def test_the_targets_entry_lists_ycsb(capsys: pytest.CaptureFixture[str]) -> None:
    from assay.targets.__main__ import main

    assert main(["--help"]) == 0
    assert "ycsb load|run|teardown" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["ycsb", "--help"])
    assert "--workload" in capsys.readouterr().out


def test_options_namespace_matches_the_etcd_target() -> None:
    """The etcd target's run takes the same workload options (one parser for both)."""
    from assay.targets.__main__ import build_parser as target_parser

    opts = target_parser("etcd").parse_args(["run", "--workload", "b", "--threads", "2"])
    assert isinstance(opts, argparse.Namespace)
    assert (opts.workload, opts.threads, opts.records) == ("b", 2, 1000)
