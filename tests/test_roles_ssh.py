"""The multi-host example end to end: a Redis primary and replica and a redis-benchmark
client on three "hosts" (127.0.0.1-3) reached over SSH on this machine, started by
examples/distributed/ssh-loopback-hosts.sh."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from assay.cli import main
from assay.store import Store
from test_target_security import _as_nobody

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "distributed"


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
    # sshd (StrictModes) refuses keys under a folder others can write, as /tmp is: the
    # recipe's folder lies in the home folder, as its default does
    home_cache = Path(os.path.expanduser("~/.cache/assay"))
    home_cache.mkdir(mode=0o700, parents=True, exist_ok=True)
    d = Path(tempfile.mkdtemp(prefix="test-ssh-", dir=home_cache))
    port = _free_port()
    res = subprocess.run(
        ["bash", str(EXAMPLE / "ssh-loopback-hosts.sh"), str(d), str(port)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    try:
        yield {"dir": d, "port": port}
    finally:
        pid = int((d / "sshd.pid").read_text())
        os.kill(pid, signal.SIGTERM)
        shutil.rmtree(d, ignore_errors=True)


def _study(tmp_path: Path, hosts: dict[str, object], rounds: int = 3) -> Path:
    """The example, its SSH options pointed at the test's sshd, on a free Redis port."""
    work = tmp_path / "example"
    work.mkdir()
    shutil.copy(EXAMPLE / "redis_pair.py", work)
    d = hosts["dir"]
    text = (EXAMPLE / "redis-replica-compare.toml").read_text()
    text = text.replace("port = 2222", f"port = {hosts['port']}")
    text = text.replace("~/.cache/assay/ssh-loopback/", f"{d}/")
    text = text.replace("port = 6390", f"port = {_free_port()}")
    text = text.replace("max_rounds = 10", f"max_rounds = {rounds}")
    # the servers' private directory (and password) in the test's folder, not in ~/.cache
    state = json.dumps(str(tmp_path / "redis-state"))
    text = text.replace("timeout = 120\n", f"timeout = 120\nenv = {{REDIS_PAIR_STATE = {state}}}\n")
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


def _pair(action: str, *args: str, state: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXAMPLE / "redis_pair.py"), action, *args],
        capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "REDIS_PAIR_STATE": str(state)},
    )  # fmt: skip


def test_the_example_server_writes_only_its_own_files_and_asks_a_password(
    tmp_path: Path,
) -> None:
    """Round three, item 2: the example reused /tmp/assay-redis-ADDRESS-PORT whoever had
    made it, so root's redis wrote its pid file and log through another user's links,
    and served every local user without a password."""
    if any(shutil.which(p) is None for p in ("redis-server", "redis-cli", "setpriv")):
        pytest.skip("needs redis and setpriv: run scripts/install-targets.sh")
    address, port = "127.0.0.2", str(_free_port())
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    planted = Path(f"/tmp/assay-redis-{address}-{port}")  # the old, predictable folder
    assert _as_nobody("mkdir", "-m", "755", str(planted)).returncode == 0
    for name in ("redis.pid", "redis.log"):
        assert _as_nobody("ln", "-s", str(victim), str(planted / name)).returncode == 0
    state = tmp_path / "state"
    try:
        started = _pair("start", address, port, state=state)
        assert started.returncode == 0, started.stderr
        assert victim.read_text() == "precious\n"
        # another local user is refused without the password; the password is on no
        # command line and in a file of the user's alone
        denied = _as_nobody("redis-cli", "-h", address, "-p", port, "ping")
        assert "NOAUTH" in denied.stdout + denied.stderr and "PONG" not in denied.stdout
        password = (state / "password").read_text().strip()
        assert stat.S_IMODE(os.lstat(state / "password").st_mode) == 0o600
        assert stat.S_IMODE(os.lstat(state).st_mode) == 0o700
        pid = (state / f"{address}-{port}" / "redis.pid").read_text().strip()
        assert password not in Path(f"/proc/{pid}/cmdline").read_text()
        # the benchmark gets in, as a user of its own
        bench = _pair("bench", address, port, "-t", "get", "-n", "100", "-q", state=state)
        assert bench.returncode == 0 and "GET:" in bench.stdout, bench.stderr
        assert password not in bench.stderr + bench.stdout
    finally:
        assert _pair("stop", address, port, state=state).returncode == 0
        shutil.rmtree(planted, ignore_errors=True)
    assert not (state / f"{address}-{port}").exists()
    # a private directory another user made is refused, not used
    assert _as_nobody("mkdir", "-m", "777", str(planted)).returncode == 0
    try:
        refused = _pair("start", address, port, state=planted)
        assert refused.returncode == 1 and "owner uid" in refused.stderr, refused.stderr
        assert victim.read_text() == "precious\n"
    finally:
        shutil.rmtree(planted, ignore_errors=True)


def test_the_example_refuses_to_start_where_an_old_server_still_answers(
    tmp_path: Path,
) -> None:
    """#41, item 6: after a killed driver, the resumed setup said "primary up" because
    the old server answered, while the new one could not bind the port."""
    if any(shutil.which(p) is None for p in ("redis-server", "redis-cli")):
        pytest.skip("needs redis: run scripts/install-targets.sh")
    address, port, state = "127.0.0.2", str(_free_port()), tmp_path / "state"
    try:
        first = _pair("start", address, port, state=state)
        assert first.returncode == 0 and "primary up" in first.stdout, first.stderr
        again = _pair("start", address, port, state=state)  # the old one still answers
        assert again.returncode == 1
        assert f"a server already answers on {address}:{port}" in again.stderr
        assert _pair("stop", address, port, state=state).returncode == 0
        fresh = _pair("start", address, port, state=state)
        assert fresh.returncode == 0 and "primary up" in fresh.stdout, fresh.stderr
    finally:
        _pair("stop", address, port, state=state)
