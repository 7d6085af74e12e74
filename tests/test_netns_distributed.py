"""Extensive evaluation of a distributed system, end to end (#42): the example sweep of a
Redis primary and 0-2 replicas driven by two clients at once, on five network-namespace
hosts with their own addresses and sshd (tests/netns_hosts.py).  A server knob reaches
every server and the replicas' count is a parameter (each role set up again only when
its setting changes), the two clients' throughputs are summed, and nothing is left on
any host.  Skipped where namespaces cannot be made."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from assay.store import Store
from netns_hosts import Hosts, link, netns_hosts, why_not

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "distributed"
NEEDED = ("redis-server", "redis-cli", "redis-benchmark")


@pytest.fixture
def hosts(tmp_path: Path) -> Iterator[Hosts]:
    reason = why_not(*NEEDED)
    if reason is not None:
        pytest.skip(reason)
    with netns_hosts(5, tmp_path) as made:
        yield made


def _example(
    tmp_path: Path, hosts: Hosts, name: str = "redis-fsync-sweep.toml", requests: int = 3000
) -> Path:
    """An example as a user adapts it: the hosts' addresses (127.0.0.N is host N-1) and
    keys; fewer requests (and, in a sweep, repetitions)."""
    work = tmp_path / "example"
    work.mkdir()
    shutil.copy(EXAMPLE / "redis_pair.py", work)
    text = (EXAMPLE / name).read_text()
    for old, new in [
        ('port = 2222\nkey = "~/.cache/assay/ssh-loopback/client_key"\n'
         'known_hosts = "~/.cache/assay/ssh-loopback/known_hosts"\n', hosts.cluster_toml()),
        ("requests = 20000", f"requests = {requests}"),
        *([("repetitions = 3", "repetitions = 2")] if "[sweep]" in text else []),
    ]:  # fmt: skip
        assert old in text, old
        text = text.replace(old, new)
    roles = text.index("[cluster.roles]")
    for n, address in enumerate(hosts.addresses, start=1):
        text = text[:roles] + text[roles:].replace(f'"127.0.0.{n}"', f'"{address}"')
    state = json.dumps(str(tmp_path / "redis-state"))  # one file system: every host sees it
    text = text.replace("timeout = 120\n", f"timeout = 120\nenv = {{REDIS_PAIR_STATE = {state}}}\n")
    (work / name).write_text(text)
    return work


def _venv_python(tmp_path: Path) -> str:
    """A virtual environment's Python that has Assay, as the README installs it (over
    this Python's packages, so nothing is downloaded), on a machine whose system
    ``python3`` (an SSH session's, on the hosts) has none (#61)."""
    system = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin")
    if system is None or subprocess.run([system, "-c", "import assay"]).returncode == 0:
        pytest.skip("needs a system python3 without Assay (as a host's is)")
    venv = tmp_path / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
        check=True,
    )
    python = str(venv / "bin" / "python")
    probe = "import assay, sys; assert sys.prefix != sys.base_prefix"
    assert subprocess.run([python, "-c", probe]).returncode == 0
    return python


def test_a_server_knob_a_replica_count_and_two_summed_clients_on_five_hosts(
    tmp_path: Path, hosts: Hosts
) -> None:
    """The example as the README installs Assay: from a venv, on hosts whose own
    ``python3`` lacks it; the role steps' ``python3 redis_pair.py`` find the venv's."""
    work = _example(tmp_path, hosts)
    done = subprocess.run(
        [_venv_python(tmp_path), "-m", "assay", "sweep", "redis-fsync-sweep.toml", "-q",
         "--json", "r.json"],
        cwd=work, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode in (0, 5), done.stderr
    client0, primary, replica0, client1, replica1 = hosts.addresses
    with Store(work / "redis-fsync-sweep.assay.db") as st:
        found = st.find_study("redis-fsync-sweep")
        assert found is not None
        trials = sorted(st.trials(found[0]), key=lambda t: t.started or 0.0)
    assert len(trials) == 18 and all(t.ok for t in trials), [t.error for t in trials]
    last: tuple[object, object] | None = None
    changes = {"primary": 0, "replica": 0}
    for t in trials:
        policy, n = t.setting["appendfsync"], int(t.setting["replicas"])
        replicas = [replica0, replica1][:n]
        parts = {h.host: h for h in t.host_runs if h.what == "trial"}
        assert set(parts) == {client0, client1, primary, *replicas}  # the others idle
        each = [parts[h].info["readings"]["set_rps"] for h in (client0, client1)]
        assert t.readings["set_rps"] == pytest.approx(sum(each)) and min(each) > 0
        # a role set up before the trial whose setting changed it, with that setting
        ups = {h.host: h for h in t.host_runs if h.what == "setup"}
        if last is None or last[0] != policy:
            assert set(ups) == {primary, *replicas}
        elif last[1] != n:
            assert set(ups) == set(replicas)
        else:
            assert not ups
        assert all(f"(appendfsync {policy})" in h.stdout.decode() for h in ups.values())
        if last is not None:
            changes["primary"] += last[0] != policy
            changes["replica"] += last != (policy, n)
        last = (policy, n)
    # the sweep's incremental sampling asks for one setting at a time here (9 settings
    # are more than its first batch): each change of setting changes the replicas'
    # (policy, count), the primary's only where the policy changed
    assert changes["replica"] == 8 and changes["primary"] <= 8
    doc = json.loads((work / "r.json").read_text())
    assert doc["environment"]["executor"]["reconfigurations"]["roles"] == changes
    assert hosts.left() == {}  # nothing of the study on any host


def test_a_knobs_study_ranks_a_server_roles_knobs_set_up_for_every_sample(
    tmp_path: Path, hosts: Hosts
) -> None:
    """#42: a `knobs` study on a server role, end to end: each Latin Hypercube sample
    sets the primary up again with its values (the knobs reach the role's steps), the
    client on another host measures, and the knobs are ranked."""
    work = tmp_path / "example"
    work.mkdir()
    shutil.copy(EXAMPLE / "redis_pair.py", work)
    text = (EXAMPLE / "redis-knobs.toml").read_text()
    client, primary = hosts.addresses[:2]
    for old, new in [
        ('primary = ["127.0.0.2"]', f'primary = ["{primary}"]'),
        ('client = ["127.0.0.1"]', f'client = ["{client}"]'),
        ('port = 2222\nkey = "~/.cache/assay/ssh-loopback/client_key"\n'
         'known_hosts = "~/.cache/assay/ssh-loopback/known_hosts"\n', hosts.cluster_toml()),
        ("requests = 20000", "requests = 2000"),
        ("samples = 30\nvalidation_samples = 8", "samples = 10\nvalidation_samples = 3"),
    ]:  # fmt: skip
        assert old in text, old
        text = text.replace(old, new)
    state = json.dumps(str(tmp_path / "redis-state"))
    text = text.replace("timeout = 120\n", f"timeout = 120\nenv = {{REDIS_PAIR_STATE = {state}}}\n")
    (work / "redis-knobs.toml").write_text(text)
    done = subprocess.run(
        [sys.executable, "-m", "assay", "knobs", "redis-knobs.toml", "-q", "--json", "r.json"],
        cwd=work, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    with Store(work / "redis-knobs.assay.db") as st:
        found = st.find_study("redis-knobs")
        assert found is not None
        trials = sorted(st.trials(found[0]), key=lambda t: t.started or 0.0)
    assert len(trials) == 13 and all(t.ok for t in trials), [t.error for t in trials]
    changed = 0
    for t in trials:
        assert t.readings["set_rps"] > 0
        ups = [h for h in t.host_runs if h.what == "setup"]
        if ups:  # set up with this sample's values, on the primary's host
            (up,) = ups
            assert up.host == primary and up.role == "primary"
            said = up.stdout.decode()
            assert f"(appendfsync {t.setting['appendfsync']}, hz {t.setting['hz']}," in said
            assert f"io-threads {t.setting['io_threads']}," in said
            changed += 1
    assert changed >= 10  # every LHS sample differs from the one before it
    doc = json.loads((work / "r.json").read_text())
    assert doc["environment"]["executor"]["reconfigurations"]["roles"] == {"primary": changed - 1}
    (ranking,) = doc["rankings"]
    ranked = {k["knob"] for k in ranking["knobs"]}
    assert ranked == {"appendfsync", "hz", "activerehashing", "io_threads", "lazyfree"}
    # where it ran, and what each host did: the primary's host is in the resources
    assert primary in json.dumps(doc["resources"]["cluster"])
    assert "ran on a Dask cluster" in done.stdout and "reconfigur" not in done.stderr
    assert hosts.left() == {}  # nothing of the study on any host


GROUPS = """
[study]
name = "redis-groups"
[benchmark]
command = ["python3", "redis_pair.py", "bench", "{{hosts.primary}}", "{{port}}", "-t", "set",
           "-n", "30000", "-c", "8", "--csv"]
cwd = "."
timeout = 120
env = {{REDIS_PAIR_STATE = {state}}}
[params]
port = 6393
[[pi]]
name = "set_rps"
source = "regex"
pattern = '"SET","([0-9.]+)"'
[benchmark.roles.primary]
setup = ["python3", "redis_pair.py", "start", "{{host.name}}", "{{port}}",
         "--appendfsync", "{{appendfsync}}"]
teardown = ["python3", "redis_pair.py", "stop", "{{host.name}}", "{{port}}"]
[sweep]
repetitions = 2
[sweep.params]
appendfsync = ["off", "everysec", "always"]
[cluster]
groups = 2
on_host_failure = "continue"
{keys}
[cluster.roles]
primary = {primaries}
client = {clients}
"""


def _groups_sweep_with_a_fault(
    tmp_path: Path, hosts: Hosts, fault: Callable[[], None]
) -> dict[str, Any]:
    """The two-group sweep (GROUPS) on hosts 0-3, ``fault`` called once group 1's client
    measures; checks that every planned trial is kept once, each measured, that group 1
    was taken out naming its server host, and that nothing is left on any host; returns
    the result's executor."""
    work = tmp_path / "example"
    work.mkdir()
    shutil.copy(EXAMPLE / "redis_pair.py", work)
    primaries, clients = hosts.addresses[:2], hosts.addresses[2:4]
    (work / "s.toml").write_text(
        GROUPS.format(
            state=json.dumps(str(tmp_path / "redis-state")),
            keys=hosts.cluster_toml(),
            primaries=json.dumps(primaries),
            clients=json.dumps(clients),
        )
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "assay", "sweep", "s.toml", "-q", "--json", "r.json"],
        cwd=work, stdout=subprocess.DEVNULL, stderr=open(tmp_path / "err.txt", "w"),  # noqa: SIM115
    )  # fmt: skip
    client = hosts.names[3]  # group 1's
    deadline = time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline:
        if any("redis-benchmark" in c for c in hosts.commands(client)):
            fault()
            break
        time.sleep(0.05)
    else:
        pytest.fail("group 1's client never measured")
    assert proc.wait(timeout=600) in (0, 5), (tmp_path / "err.txt").read_text()
    with Store(work / "s.assay.db") as st:
        found = st.find_study("redis-groups")
        assert found is not None
        trials = st.trials(found[0])
    # every planned trial kept once, each measured (the one cut off again, on group 0)
    assert sorted((t.setting["appendfsync"], t.setting["repetition"]) for t in trials) == sorted(
        (f, r) for f in ("off", "everysec", "always") for r in (0, 1)
    )
    assert all(t.ok for t in trials), [t.error for t in trials]
    executor: dict[str, Any] = json.loads((work / "r.json").read_text())["environment"]["executor"]
    (out,) = executor["groups"]["taken_out"]
    assert out["group"] == 1 and primaries[1] in out["why"]
    assert hosts.left() == {}  # nothing of the study on any host
    return executor


def test_a_group_whose_server_host_dies_mid_trial_hands_its_trial_to_the_other(
    tmp_path: Path, hosts: Hosts
) -> None:
    """#42, node groups in parallel on namespace hosts: two groups (a Redis primary and
    a client each) run a sweep's trials at once; every process of group 1's server host
    is killed while its client measures.  The trial runs again on group 0 and is kept
    once, group 1 is listed as taken out, and no process is left on any host."""

    def kill() -> None:  # the host dies: its worker, nanny, server
        for pid in hosts.pids(hosts.names[1]):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    _groups_sweep_with_a_fault(tmp_path, hosts, kill)


def test_a_group_whose_server_host_is_cut_off_for_30_s_loses_no_trial(
    tmp_path: Path, hosts: Hosts
) -> None:
    """#42's Show list, a link down for 30 s under node groups: group 1's server host
    loses its link while group 1's client measures and gets it back 30 s later.  Its
    worker is gone (Dask ends a worker that cannot reach its scheduler), or its part of
    the trial fails with the lost connection first (once in a clean-clone run), so
    group 1 is taken out and its trial runs on group 0; the host, back, gets a new
    worker where its own ended; every planned trial is kept once and nothing is left
    on any host."""

    def cut() -> None:
        link(hosts, 1, up=False)
        time.sleep(30)
        link(hosts, 1, up=True)

    executor = _groups_sweep_with_a_fault(tmp_path, hosts, cut)
    # back after the outage, it got a new worker, named as the cluster's roles name it
    # (none where its worker outlived the outage, reconnecting in time)
    primary = f"{hosts.addresses[1]} (primary[1])"
    assert executor["revived"] in ([primary], []) and primary in executor["roles"]
    (out,) = executor["groups"]["taken_out"]
    assert "its Dask worker" in out["why"]


def test_a_pool_packed_by_the_replica_count_runs_each_trial_on_its_own_hosts(
    tmp_path: Path, hosts: Hosts
) -> None:
    """#42, a host pool packed by each trial's need: the example
    (examples/distributed/redis-replicas-packed.toml) on namespace hosts: two
    primaries, one replica, two clients; a trial without a replica takes a primary and a
    client (two such groups), one with a replica takes primary 0, the replica and client
    0, after the groups set up on those hosts are torn down.  Every trial measures its
    own group's primary, the replica follows its group's primary, nothing is left."""
    work = _example(tmp_path, hosts, "redis-replicas-packed.toml", requests=5000)
    p0, p1, r0, c0, c1 = hosts.addresses
    done = subprocess.run(
        [sys.executable, "-m", "assay", "sweep", "redis-replicas-packed.toml", "--json", "r.json"],
        cwd=work, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode in (0, 5), done.stderr
    with Store(work / "redis-replicas-packed.assay.db") as st:
        found = st.find_study("redis-replicas-packed")
        assert found is not None
        trials = st.trials(found[0])
    assert len(trials) == 8 and all(t.ok for t in trials), [t.error for t in trials]
    for t in trials:
        parts = {h.host for h in t.host_runs if h.what == "trial"}
        if t.setting["replicas"] == 1:
            assert parts == {p0, r0, c0}
        else:
            assert parts in ({p0, c0}, {p1, c1})
        assert t.readings["set_rps"] > 0
        for up in (h for h in t.host_runs if h.what == "setup"):
            assert f"(appendfsync {t.setting['appendfsync']}" in up.stdout.decode()
            assert up.host in parts  # set up on the trial's own group
    executor = json.loads((work / "r.json").read_text())["environment"]["executor"]
    assert executor["groups"]["packed"] == 2
    assert len(executor["groups"]["hosts"]) == 3  # (p0, c0), (p1, c1), (p0, r0, c0)
    assert "trials packed onto 3 groups of hosts" in " ".join(done.stdout.split())
    assert hosts.left() == {}  # nothing of the study on any host


def test_the_replica_claim_is_judged_on_three_hosts(tmp_path: Path, hosts: Hosts) -> None:
    """#62: the artifact example's claim (a replica costs the primary at most a third of
    its SET throughput), judged on namespace hosts; the exit status is its verdict's, the
    replica takes part in its variant's trials only, and nothing is left."""
    work = _example(tmp_path, hosts, "redis-replica-claims.toml")
    done = subprocess.run(
        [sys.executable, "-m", "assay", "compare", "redis-replica-claims.toml", "-q",
         "--json", "r.json"],
        cwd=work, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    doc = json.loads((work / "r.json").read_text())
    (claim,) = doc["claims"]
    assert claim["ratio"] == ["one-replica", "no-replica"] and claim["kind"] == "at_least"
    assert done.returncode == {"holds": 0, "fails": 1, "undecided": 5}[claim["verdict"]], (
        done.stderr
    )
    assert claim["estimate"] is not None and 0 < claim["estimate"] < 2
    replica = hosts.addresses[2]  # host 3: 127.0.0.3 in the example
    with Store(work / "redis-replica-claims.assay.db") as st:
        found = st.find_study("redis-replica-claims")
        assert found is not None
        trials = st.trials(found[0])
    assert trials and all(t.ok for t in trials), [t.error for t in trials]
    for t in trials:
        parts = {h.host for h in t.host_runs if h.what == "trial"}
        with_replica = t.setting["variant"] == "one-replica"
        assert (replica in parts) == with_replica, (t.setting, parts)
    assert hosts.left() == {}
