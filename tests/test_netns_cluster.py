"""The multi-host example on hosts as a user's CloudLab nodes are: network namespaces on
a private bridge, each with its own address and sshd, all with one hostname (#41).  The
hosts are made and removed here (tests/netns_hosts.py); skipped where namespaces cannot
be made (not root)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.store import Store
from netns_hosts import Hosts, link, netns_hosts, why_not

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "multihost"
NEEDED = ("redis-server", "redis-cli", "redis-benchmark")


@pytest.fixture
def hosts(tmp_path: Path) -> Iterator[Hosts]:
    reason = why_not(*NEEDED)
    if reason is not None:
        pytest.skip(reason)
    with netns_hosts(3, tmp_path) as made:
        yield made


def _example(tmp_path: Path, hosts: Hosts, rounds: int) -> Path:
    """The example as a user adapts it: the hosts' addresses, their SSH keys."""
    work = tmp_path / "example"
    work.mkdir()
    shutil.copy(EXAMPLE / "redis_pair.py", work)
    text = (EXAMPLE / "redis-replica-compare.toml").read_text()
    client, primary, replica = hosts.addresses
    for old, new in [
        ('primary = ["127.0.0.2"]', f'primary = ["{primary}"]'),
        ('replica = ["127.0.0.3"]', f'replica = ["{replica}"]'),
        ('client = ["127.0.0.1"]', f'client = ["{client}"]'),
        ('port = 2222\nkey = "/tmp/assay-ssh/client_key"\n'
         'known_hosts = "/tmp/assay-ssh/known_hosts"\n', hosts.cluster_toml()),
        ("max_rounds = 10", f"max_rounds = {rounds}"),
    ]:  # fmt: skip
        assert old in text, old
        text = text.replace(old, new)
    # the servers' password in the test's folder (one file system: every host sees it)
    state = json.dumps(str(tmp_path / "redis-state"))
    text = text.replace("timeout = 120\n", f"timeout = 120\nenv = {{REDIS_PAIR_STATE = {state}}}\n")
    (work / "redis-replica-compare.toml").write_text(text)
    return work


def test_the_example_runs_on_distinct_addresses_and_leaves_nothing_on_any_host(
    tmp_path: Path, hosts: Hosts
) -> None:
    work = _example(tmp_path, hosts, rounds=2)
    # as a user starts it: from its folder, the study file's path relative (#41, item 11)
    done = subprocess.run(
        [sys.executable, "-m", "assay", "compare", "redis-replica-compare.toml", "-q",
         "--json", "r.json"],
        cwd=work, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode in (0, 5), done.stderr  # 5: 2 rounds are too few to decide
    assert "distributed." not in done.stderr  # no Dask log lines on the user's terminal
    client, primary, replica = hosts.addresses
    with Store(work / "redis-replica-compare.assay.db") as st:
        found = st.find_study("redis-replica-get")
        assert found is not None
        trials = st.trials(found[0])
        steps = st.host_runs(found[0], steps=True)[None]
    assert len(trials) == 4 and all(t.ok and t.readings["get_rps"] > 0 for t in trials)
    # one hostname for all three hosts: each is told apart by its address (#41, item 1)
    assert {t.host for t in trials} == {client}
    setups = {(s.role, s.host, s.status) for s in steps if s.what == "setup"}
    assert setups == {("primary", primary, "ok"), ("replica", replica, "ok")}
    teardowns = {(s.role, s.host, s.status) for s in steps if s.what == "teardown"}
    assert teardowns == {("primary", primary, "ok"), ("replica", replica, "ok")}
    argvs = {t.setting["variant"]: t.argv for t in trials}
    assert primary in argvs["get-from-primary"] and replica in argvs["get-from-replica"]
    # no Redis server, Dask worker or scheduler left on any host (its sshd aside)
    # the hosts' Dask processes end on their own within seconds of the driver (they
    # noticed its scheduler gone: 2-4 s here)
    deadline = time.monotonic() + 60
    while any(hosts.commands(n) for n in hosts.names) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = {name: hosts.commands(name) for name in hosts.names}
    assert left == {name: [] for name in hosts.names}


def _trials_stored(db: Path) -> int:
    try:
        with Store(db) as st:
            found = st.find_study("redis-replica-get")
            return len(st.trials(found[0])) if found else 0
    except Exception:  # not made yet
        return 0


def test_a_host_back_from_an_outage_gets_a_new_worker_and_the_study_goes_on(
    tmp_path: Path, hosts: Hosts
) -> None:
    """#41, item 8: an outage longer than the workers' death_timeout ended the host's Dask
    processes; the host never came back, and a trial failed on it every minute (a 75 s
    outage: 9 of 12 trials failed, 10 min of wall time, its Redis server left running).
    A worker cut off notices after Dask's 30 s connection timeout, then waits its
    death_timeout for the scheduler (here 5 s: [cluster] idle_timeout): an outage of
    50 s ends it."""
    work = _example(tmp_path, hosts, rounds=4)
    study = work / "redis-replica-compare.toml"
    text = study.read_text()
    for old, new in [
        ('on_host_failure = "stop"', 'on_host_failure = "continue"\nidle_timeout = 5'),
        ("max_time = 120", "max_time = 600"),
    ]:
        assert old in text
        text = text.replace(old, new)
    study.write_text(text)
    db = work / "redis-replica-compare.assay.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "assay", "compare", study.name, "-q", "--json", "r.json"],
        cwd=work, stdout=subprocess.DEVNULL, stderr=open(tmp_path / "err.txt", "w"),  # noqa: SIM115
    )  # fmt: skip
    deadline = time.monotonic() + 300
    while _trials_stored(db) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    link(hosts, 2, up=False)  # the replica's host
    time.sleep(50)  # its worker and nanny end without their scheduler
    link(hosts, 2, up=True)
    assert proc.wait(timeout=600) in (0, 5), (tmp_path / "err.txt").read_text()
    with Store(db) as st:
        found = st.find_study("redis-replica-get")
        assert found is not None
        trials = st.trials(found[0])
        steps = st.host_runs(found[0], steps=True)[None]
    failed = [t for t in trials if not t.ok]
    assert len(trials) == 8 and len(failed) <= 2, [t.error for t in failed]
    assert trials[-1].ok and trials[-2].ok  # the replica's host back, measured again
    doc = json.loads((work / "r.json").read_text())
    replica = hosts.addresses[2]
    assert doc["environment"]["executor"]["revived"] == [f"{replica} (replica[0])"]
    # its teardown ran there too: no Redis server, worker or scheduler left anywhere
    assert ("replica", replica, "ok") in {(s.role, s.host, s.status) for s in steps}
    deadline = time.monotonic() + 60
    while any(hosts.commands(n) for n in hosts.names) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert {n: hosts.commands(n) for n in hosts.names} == {n: [] for n in hosts.names}


def test_a_killed_scheduler_ends_the_study_in_one_line_naming_its_host(
    tmp_path: Path, hosts: Hosts
) -> None:
    """#41, item 10: exit 3 after 40-70 s and ~60 lines of tracebacks (a KeyError among
    them), the host named only inside a traceback."""
    work = _example(tmp_path, hosts, rounds=10)
    db = work / "redis-replica-compare.assay.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "assay", "compare", "redis-replica-compare.toml", "-q"],
        cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 300
    while _trials_stored(db) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    killed = []
    for name in hosts.names:
        for pid in hosts.pids(name):
            with contextlib.suppress(OSError):
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
                if b"distributed.cli.dask_spec" in cmd and b"Scheduler" in cmd:
                    os.kill(pid, signal.SIGKILL)
                    killed.append(name)
    assert len(killed) == 1
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 3, err
    assert "Traceback" not in err and "tornado" not in err, err
    scheduler = hosts.addresses[hosts.names.index(killed[0])]
    first = err.strip().splitlines()[0]
    assert first.startswith("error: ") and "Dask scheduler tls://" + scheduler in first, err
