"""The multi-host example end to end: a Redis primary and replica and a redis-benchmark
client on three "hosts" (127.0.0.1-3) reached over SSH on this machine, started by
examples/multihost/ssh-loopback-hosts.sh."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from assay.cli import main
from assay.store import Store

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "multihost"


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def loopback_hosts(tmp_path: Path) -> Iterator[dict[str, object]]:
    """The example's sshd on 127.0.0.1-3, on a free port, its keys in the test's folder."""
    needed = ("redis-server", "redis-cli", "redis-benchmark", "ssh-keygen")
    if not Path("/usr/sbin/sshd").exists() or any(shutil.which(p) is None for p in needed):
        pytest.skip("needs sshd and redis: run scripts/install-targets.sh")
    d = tmp_path / "ssh"
    port = _free_port()
    res = subprocess.run(
        ["bash", str(EXAMPLE / "ssh-loopback-hosts.sh"), str(d), str(port)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    yield {"dir": d, "port": port}
    pid = int((d / "sshd.pid").read_text())
    os.kill(pid, signal.SIGTERM)


def _study(tmp_path: Path, hosts: dict[str, object], rounds: int = 3) -> Path:
    """The example, its SSH options pointed at the test's sshd, on a free Redis port."""
    work = tmp_path / "example"
    work.mkdir()
    shutil.copy(EXAMPLE / "redis_pair.py", work)
    d = hosts["dir"]
    text = (EXAMPLE / "redis-replica-compare.toml").read_text()
    text = text.replace("port = 2222", f"port = {hosts['port']}")
    text = text.replace("/tmp/assay-ssh/", f"{d}/")
    text = text.replace("port = 6390", f"port = {_free_port()}")
    text = text.replace("max_rounds = 10", f"max_rounds = {rounds}")
    study = work / "redis-replica-compare.toml"
    study.write_text(text)
    return study


def test_the_redis_replica_example_runs_on_three_ssh_hosts(
    tmp_path: Path, loopback_hosts: dict[str, object]
) -> None:
    study = _study(tmp_path, loopback_hosts)
    out = tmp_path / "r.json"
    res = CliRunner().invoke(main, ["compare", str(study), "-q", "--json", str(out)])
    assert res.exit_code in (0, 5), res.output  # 5: the 3 rounds ran out before a decision
    with Store(study.with_name("redis-replica-compare.assay.db")) as st:
        found = st.find_study("redis-replica-get")
        assert found is not None
        trials = st.trials(found[0])
        steps = st.host_runs(found[0], steps=True)[None]
    assert len(trials) == 6 and all(t.ok and t.readings["get_rps"] > 0 for t in trials)
    # each server role set up on its own host, with its output stored; torn down after
    setup = {(s.role, s.host, s.status): s.stdout.decode() for s in steps if s.what == "setup"}
    assert set(setup) == {("primary", "127.0.0.2", "ok"), ("replica", "127.0.0.3", "ok")}
    assert "replica of 127.0.0.2 up on 127.0.0.3" in setup[("replica", "127.0.0.3", "ok")]
    assert {(s.role, s.status) for s in steps if s.what == "teardown"} == {
        ("primary", "ok"),
        ("replica", "ok"),
    }
    # the variants read from the primary's and the replica's address
    argvs = {t.setting["variant"]: t.argv for t in trials}
    assert "127.0.0.2" in argvs["get-from-primary"] and "127.0.0.3" in argvs["get-from-replica"]
    for t in trials:  # every host watched during every trial
        watched = {h.host for h in t.host_runs if h.what == "trial" and "time_s" in h.resources}
        assert watched == {"127.0.0.1", "127.0.0.2", "127.0.0.3"}
    doc = json.loads(out.read_text())
    cluster = doc["resources"]["get-from-replica"]["cluster"]
    assert set(cluster["roles"]) == {"primary", "replica", "client"}
    assert cluster["all"]["hosts"] == 3 and cluster["all"]["cpu_p95_percent"]["rounds"] == 3
    assert set(cluster["hosts"]) == {
        "127.0.0.1 (client[0])",
        "127.0.0.2 (primary[0])",
        "127.0.0.3 (replica[0])",
    }
    shown = CliRunner().invoke(
        main, ["show", str(study.with_name("redis-replica-compare.assay.db")), "--summary"]
    )
    assert "[Cluster resource usage] role replica (1 hosts" in shown.output


def test_a_failing_replica_setup_is_named_with_its_host(
    tmp_path: Path, loopback_hosts: dict[str, object]
) -> None:
    study = _study(tmp_path, loopback_hosts)
    text = study.read_text()
    # the replica's setup gets a port that is not a number: redis_pair.py refuses it
    bad = text.replace(
        '"start", "{host.name}", "{port}",\n         "--replicaof"',
        '"start", "{host.name}", "no-port",\n         "--replicaof"',
    )
    assert bad != text
    study.write_text(bad)
    res = CliRunner().invoke(main, ["compare", str(study), "-q"])
    assert res.exit_code == 3, res.output
    flat = " ".join(res.output.split())
    assert "on host 127.0.0.3 (replica[0])" in flat and "invalid int value" in flat
