"""#63: the etcd example sweep on network-namespace hosts (tests/netns_hosts.py), cut
to a size for the test suite: members 1 and 3 of three member hosts, workloads A and C,
one field size, two repetitions. Every member count is its own Raft cluster (set up
again when it changes), YCSB runs on the client host against the trial's members, and
nothing is left on any host or in the state directory. Skipped where namespaces, etcd
or go-ycsb are missing."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.store import Store
from netns_hosts import Hosts, netns_hosts, why_not
from test_ycsb import needs_go_ycsb

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "distributed"


@pytest.fixture
def hosts(tmp_path: Path) -> Iterator[Hosts]:
    reason = why_not("etcd", "etcdctl", "openssl")
    if reason is not None:
        pytest.skip(reason)
    with netns_hosts(4, tmp_path) as made:
        yield made


def _adapted(
    tmp_path: Path, hosts: Hosts, state: Path, name: str, more: list[tuple[str, str]]
) -> Path:
    """Example ``name`` as a user adapts it: these hosts (the first is the client, the
    others the members), a state directory of the test's own for every etcd and YCSB
    step, and the replacements ``more``; the folder it is in."""
    work = tmp_path / name.removesuffix(".toml")
    work.mkdir()
    text = (EXAMPLE / name).read_text()
    quoted = json.dumps(str(state))
    client, *members = hosts.addresses
    listed = re.search(r"^member = \[.*\]$", text, re.M)
    assert listed is not None
    steps = [
        (f'"etcd", "{a}",', f'"etcd", "{a}", "--state", {quoted},')
        for a in ("setup", "teardown", "fault", "restore")
        if f'"etcd", "{a}",' in text
    ]
    for old, new in [
        ('port = 2222\nkey = "~/.cache/assay/ssh-loopback/client_key"\n'
         'known_hosts = "~/.cache/assay/ssh-loopback/known_hosts"\n', hosts.cluster_toml()),
        ('"--db", "etcd",', f'"--db", "etcd", "--state", {quoted},'),
        (listed[0], f"member = {json.dumps(members)}"),
        ('client = ["127.0.0.1"]', f"client = {json.dumps([client])}"),
        *steps, *more,
    ]:  # fmt: skip
        assert old in text, old
        text = text.replace(old, new)
    (work / name).write_text(text)
    return work


def _example(tmp_path: Path, hosts: Hosts, state: Path) -> Path:
    """The sweep example with a smaller space and fewer operations."""
    return _adapted(tmp_path, hosts, state, "etcd-ycsb-sweep.toml", [
        ("operations = 4000", "operations = 1000"),
        ("repetitions = 3", "repetitions = 2"),
        ("members = [1, 3, 5]", "members = [1, 3]"),
        ('workload = ["a", "b", "c"]', 'workload = ["a", "c"]'),
        ("field_length = [100, 1000]\n", ""),
        ("threads = 16\n", "threads = 16\nfield_length = 100\n"),
    ])  # fmt: skip


@needs_go_ycsb
@pytest.mark.skipif(not shutil.which("etcd"), reason="etcd: run scripts/install-targets.sh")
def test_the_member_count_sweep_on_namespace_hosts(tmp_path: Path, hosts: Hosts) -> None:
    state = tmp_path / "etcd-state"  # one file system: every host sees it
    work = _example(tmp_path, hosts, state)
    done = subprocess.run(
        [sys.executable, "-m", "assay", "sweep", "etcd-ycsb-sweep.toml", "-q", "--json",
         "r.json"],
        cwd=work, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode in (0, 5), done.stderr
    client, *members = hosts.addresses
    with Store(work / "etcd-ycsb-sweep.assay.db") as st:
        found = st.find_study("etcd-ycsb-sweep")
        assert found is not None
        trials = st.trials(found[0])
    assert len(trials) == 8 and all(t.ok for t in trials), [t.error for t in trials]
    for t in trials:
        n = int(t.setting["members"])
        parts = {h.host for h in t.host_runs if h.what == "trial"}
        assert parts == {client, *members[:n]}
        doc = json.loads(t.stdout)
        assert doc["report"]["connection"]["etcd.endpoints"].count("https://") == n
        assert doc["pi"]["errors"] == 0 and t.readings["throughput"] > 0
    doc = json.loads((work / "r.json").read_text())
    assert {int(s["members"]) for s in doc["settings"]} == {1, 3}
    assert all(s["throughput"] > 0 for s in doc["settings"])
    assert hosts.left() == {}  # no member, no Dask process on any host
    assert not state.exists()  # the last teardown removed the CA, the records, the logs


def _leader_kill(tmp_path: Path, hosts: Hosts, state: Path) -> Path:
    """The leader-kill example as it stands."""
    return _adapted(tmp_path, hosts, state, "etcd-leader-kill.toml", [])


@needs_go_ycsb
@pytest.mark.skipif(not shutil.which("etcd"), reason="etcd: run scripts/install-targets.sh")
def test_the_leader_killed_mid_trial_on_namespace_hosts(tmp_path: Path) -> None:
    reason = why_not("etcd", "etcdctl", "openssl")
    if reason is not None:
        pytest.skip(reason)
    state = tmp_path / "etcd-state"
    with netns_hosts(4, tmp_path) as hosts:
        work = _leader_kill(tmp_path, hosts, state)
        done = subprocess.run(
            [sys.executable, "-m", "assay", "compare", "etcd-leader-kill.toml", "-q",
             "--max-rounds", "2", "--json", "r.json"],
            cwd=work, capture_output=True, text=True, timeout=900,
        )  # fmt: skip
        assert done.returncode in (0, 5), done.stderr
        with Store(work / "etcd-leader-kill.assay.db") as st:
            found = st.find_study("etcd-leader-kill")
            assert found is not None
            trials = st.trials(found[0])
        assert len(trials) == 4 and all(t.ok for t in trials), [t.error for t in trials]
        for t in trials:
            faults = [h for h in t.host_runs if h.what == "fault"]
            restores = [h for h in t.host_runs if h.what == "restore"]
            doc = json.loads(t.stdout)
            series = doc["report"]["series"]["ops_per_s"]
            # what the 9 s stop cancelled is no failure (it read as 6-16 in every trial)
            assert doc["report"]["stopped_by_max_time"] and "cut_off" in doc["pi"]
            if t.setting["variant"] == "no-fault":
                assert not faults and not restores
                assert doc["pi"]["errors"] == 0, t.stderr
                assert t.readings["unanswered_during"] == 0
                continue
            # every member host ran the step; only the leader's member was killed
            assert sorted(h.host for h in faults) == sorted(hosts.addresses[1:])
            killed = [h for h in faults if b'"fault":"kill"' in h.stdout]
            assert len(killed) == 1 and all(h.ok for h in faults + restores)
            assert all(h.info["offset_s"] >= 3.0 for h in faults)
            # the cluster had no leader for a while: a second of less than half the
            # throughput before the fault (not the run's median: an outage that lasts
            # half the run, seen once in CI, makes that 0)
            before = series[: int(min(h.info["offset_s"] for h in faults))]
            assert before and min(series) < 0.5 * sorted(before)[len(before) // 2], series
            assert {
                "throughput_before",
                "throughput_during",
                "throughput_after",
                "unanswered_during",
            } <= set(t.readings)
        assert hosts.left() == {}
    assert not state.exists()
