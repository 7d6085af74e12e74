"""#59: an order results file whose tests differ in shape, built from a real benchmark's
output and read end to end. redis-benchmark, through the Redis target, is two tests of
a run: ``setget`` reports two values per trial (SET's and GET's requests per second, a
benchmark's sub-results) and ``incr`` one. The trials are run in fixed and in shuffled
orders and written as OrderSage writes its results file (each result quoted, its values
comma-separated); ``assay order --from`` must read the file whole and analyse each
test's every value as a test of its own."""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from test_order_multivalue import HEADER, schedule  # OrderSage's results file

#: the tests of a run: their redis-benchmark commands, in their fixed order
TESTS = {"setget": "set,get", "incr": "incr"}
RUNS = 5  # of each kind: the fewest that can decide at alpha 0.05 / 3


def _target(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "assay.targets", "redis", *args],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip


@pytest.fixture
def redis_state(tmp_path: Path) -> Iterator[str]:
    if not (shutil.which("redis-server") and shutil.which("redis-benchmark")):
        pytest.skip("redis-server, redis-benchmark: run scripts/install-targets.sh")
    state = str(tmp_path / "redis")
    _target("setup", "--state", state)
    try:
        yield state
    finally:
        _target("teardown", "--state", state)


def _trial(state: str, test: str) -> str:
    """One trial of ``test``: its values of requests per second, as a results file's
    ``result`` holds them (several comma-separated and quoted, one as it is)."""
    doc = json.loads(_target("run", "--state", state, "--tests", TESTS[test],
                             "--requests", "3000").stdout)  # fmt: skip
    values = [doc["pi"][f"{cmd}_rps"] for cmd in TESTS[test].split(",")]
    assert all(v > 0 for v in values), doc["pi"]
    text = ",".join(f"{v:.2f}" for v in values)
    return f'"{text}"' if len(values) > 1 else text


def test_a_results_file_of_a_real_benchmark_with_and_without_sub_results_is_read_whole(
    redis_state: str, tmp_path: Path
) -> None:
    rows = [
        f"u,node1,{run},{RUNS},{test},0,{pos},{kind},0,1,Success,{_trial(redis_state, test)}\n"
        for kind, run, pos, test in schedule(list(TESTS), RUNS, random.Random(59))
    ]
    results = tmp_path / "results.csv"
    results.write_text(HEADER + "".join(rows), encoding="utf-8")
    text = results.read_text()
    assert re.search(r',Success,"[0-9.]+,[0-9.]+"$', text, re.M)  # both shapes
    assert re.search(r",Success,[0-9.]+$", text, re.M)

    out = tmp_path / "order.json"
    done = subprocess.run(
        [sys.executable, "-m", "assay", "order", "--from", str(results), "--metrics",
         "set,get", "--unit", "req/s", "--json", str(out)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads(out.read_text())
    rows_by_test = {r["test"]: r for r in doc["tests"]}
    # each value of the test of two is a test of its own; the test of one keeps its name
    assert set(rows_by_test) == {"setget -- set", "setget -- get", "incr"}
    assert doc["tested"] == 3 and doc["threshold"] == pytest.approx(doc["alpha"] / 3)
    for row in rows_by_test.values():
        assert row["runs_fixed"] == RUNS and row["runs_random"] == RUNS, row
        assert row["n_fixed"] == RUNS and row["n_random"] == RUNS, row
        assert row["mean_fixed"] > 0 and row["mean_random"] > 0
    assert doc["unit"] == "req/s"
    assert doc["verdict"].startswith(("order matters", "order likely does not matter"))
    assert "2 metrics per trial, each analysed as a test: set, get (named by --metrics)" in (
        " ".join(done.stdout.split())
    )
