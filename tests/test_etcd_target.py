"""The etcd target: knobs and their ranges, the initial cluster, and a real three-member
cluster on 127.0.0.1 with mutual TLS (another local user refused on every port), YCSB
on it, and nothing left after its teardown.

The real cluster is skipped, with the reason, where etcd, openssl or go-ycsb is
missing (``bash scripts/install-targets.sh`` installs them).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assay.targets.base import TargetError
from assay.targets.etcd import KNOBS, _names, check_knobs, initial_cluster
from test_ycsb import _agrees_with_ycsb, needs_go_ycsb

HAVE_ETCD = bool((shutil.which("etcd") or Path("/usr/bin/etcd").exists()) and
                 shutil.which("etcdctl") and shutil.which("openssl"))  # fmt: skip
needs_etcd = pytest.mark.skipif(
    not HAVE_ETCD, reason="etcd, etcdctl or openssl not installed; run: "
    "bash scripts/install-targets.sh"
)  # fmt: skip


# -- knobs --------------------------------------------------------------------------------
def test_every_listed_knob_takes_its_range() -> None:
    for name, (_, lo, hi) in KNOBS.items():
        check_knobs({name: str(lo)}) if name != "election-timeout" else None
        with pytest.raises(TargetError, match=f"from {lo} to {hi}"):
            check_knobs({name: str(hi + 1)})
        with pytest.raises(TargetError, match="whole number"):
            check_knobs({name: "fast"})


@pytest.mark.parametrize(
    ("name", "why"),
    [("listen-client-urls", "listener"), ("client-cert-auth", "who may connect"),
     ("initial-cluster", "which cluster"), ("data-dir", "files outside"),
     ("Peer-Trusted-CA-File", "who may connect")],
)  # fmt: skip
def test_protected_settings_are_refused_with_the_reason(name: str, why: str) -> None:
    with pytest.raises(TargetError, match=why):
        check_knobs({name: "x"})


def test_an_unknown_setting_names_the_knobs() -> None:
    with pytest.raises(TargetError, match="snapshot-count, heartbeat-interval"):
        check_knobs({"experimental-foo": "1"})


def test_the_election_timeout_is_five_heartbeats_at_least() -> None:
    check_knobs({"heartbeat-interval": "50", "election-timeout": "250"})
    with pytest.raises(TargetError, match="at least 5 times"):
        check_knobs({"heartbeat-interval": "100", "election-timeout": "400"})


def test_the_initial_cluster_and_certificate_names() -> None:
    assert initial_cluster(["10.0.0.1", "fe80::1"], 2380) == (
        "m0=https://10.0.0.1:2380,m1=https://[fe80::1]:2380"
    )
    assert (
        initial_cluster(["127.0.0.1"] * 2, [5, 6])
        == "m0=https://127.0.0.1:5,m1=https://127.0.0.1:6"
    )
    assert _names("127.0.0.4") == ["127.0.0.4", "127.0.0.1"]  # loopback hosts' peers
    assert _names("192.168.7.2") == ["192.168.7.2"]


def test_a_host_outside_the_cluster_is_refused(tmp_path: Path) -> None:
    done = _etcd("setup", "--state", str(tmp_path / "e"), "--cluster", "10.1.1.1,10.1.1.2",
                 "--host", "10.1.1.9", check=False)  # fmt: skip
    assert done.returncode == 2 and "expected one of --cluster" in done.stderr
    done = _etcd("setup", "--state", str(tmp_path / "e"), "--cluster", "db1,db2",
                 "--host", "db1", check=False)  # fmt: skip
    assert done.returncode == 2 and "not an IP address" in done.stderr


# -- a real cluster -----------------------------------------------------------------------
def _etcd(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "assay.targets", "etcd", *args],
                          capture_output=True, text=True, timeout=180, check=False)  # fmt: skip
    if check:
        assert done.returncode == 0, done.stderr
    return done


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    state = str(tmp_path / "etcd")
    described = json.loads(_etcd("setup", "--state", state, "--members", "3",
                                 "--knob", "snapshot-count=5000").stdout)  # fmt: skip
    try:
        yield state, described
    finally:
        _etcd("teardown", "--state", state)


def _pids(state: str) -> list[int]:
    found = []
    for rec in Path(state).glob("member-*.json"):
        found.append(int(json.loads(rec.read_text())["server"]["pid"]))
    return found


@needs_etcd
def test_three_members_elect_a_leader_and_keep_their_knobs(
    cluster: tuple[str, dict[str, Any]],
) -> None:
    state, described = cluster
    assert len(described["members"]) == 3
    assert described["leader"] in described["members"]
    assert described["knobs"] == {"snapshot-count": "5000"}
    assert oct(Path(state).stat().st_mode & 0o777) == "0o700"
    refused = _etcd("run", "--state", state, "--knob", "snapshot-count=10", check=False)
    assert refused.returncode == 2 and "only at its start" in refused.stderr


NOBODY_PROBE = r"""
import socket, ssl, sys
port = int(sys.argv[1])
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
try:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        with ctx.wrap_socket(raw) as s:
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            print("answered", s.recv(200))
except (OSError, ssl.SSLError) as exc:
    print("refused", type(exc).__name__)
"""


@needs_etcd
@pytest.mark.skipif(os.geteuid() != 0, reason="runs a probe as the user nobody: needs root")
def test_another_local_user_is_refused_on_every_port(cluster: tuple[str, dict[str, Any]]) -> None:
    state, _ = cluster
    ports = []
    for rec in Path(state).glob("member-*.json"):
        doc = json.loads(rec.read_text())
        ports += [int(doc["client_port"]), int(doc["peer_port"])]
    assert len(ports) == 6
    for port in ports:
        done = subprocess.run(["/usr/bin/python3", "-c", NOBODY_PROBE, str(port)], user=65534,
                              group=65534, extra_groups=[], capture_output=True, text=True,
                              timeout=30, cwd="/", check=False)  # fmt: skip
        assert done.stdout.startswith("refused"), (port, done.stdout, done.stderr)
    # and the client certificate is out of its reach
    done = subprocess.run(["/usr/bin/python3", "-c", f"open({state + '/client.key'!r})"],
                          user=65534, group=65534, extra_groups=[], capture_output=True,
                          text=True, cwd="/", check=False)  # fmt: skip
    assert "PermissionError" in done.stderr


@needs_etcd
@needs_go_ycsb
def test_ycsb_on_the_cluster_through_the_target_and_the_driver(
    cluster: tuple[str, dict[str, Any]],
) -> None:
    state, _ = cluster
    doc = json.loads(_etcd("run", "--state", state, "--load", "--records", "200",
                           "--operations", "1500", "--threads", "4", "--workload", "b"
                           ).stdout)  # fmt: skip
    assert doc["target"] == "etcd" and doc["knobs"] == {"snapshot-count": "5000"}
    _agrees_with_ycsb(doc)
    done = subprocess.run(
        [sys.executable, "-m", "assay.targets", "ycsb", "run", "--db", "etcd", "--state", state,
         "--records", "200", "--operations", "1000", "--workload", "c"],
        capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    reads = json.loads(done.stdout)
    _agrees_with_ycsb(reads)
    assert reads["pi"]["read_count"] == 1000
    refused = _etcd("run", "--state", state, "--workload", "e", check=False)
    assert refused.returncode == 2 and "fails nearly every scan" in refused.stderr
    # more records asked for than loaded: etcd fails the reads of the others, and says so
    short = _etcd("run", "--state", state, "--records", "2000", "--operations", "500",
                  "--workload", "c", "--distribution", "uniform")  # fmt: skip
    assert json.loads(short.stdout)["pi"]["errors"] > 0
    assert "operations failed (read " in short.stderr and "load as many" in short.stderr


@needs_etcd
@needs_go_ycsb
def test_a_run_stopped_by_max_time_counts_no_failure_it_cut_off(
    cluster: tuple[str, dict[str, Any]],
) -> None:
    # go-ycsb cancels what each thread has in flight when --max-time stops it and counts
    # those as failed: 6-16 "failed" operations in every fault-free trial of the
    # leader-kill example, blamed on records never loaded
    state, _ = cluster
    args = ["run", "--state", state, "--load", "--records", "200", "--operations",
            "100000000", "--max-time", "3", "--threads", "16", "--workload", "a"]  # fmt: skip
    windowed = _etcd(*args, "--windows", "1,2")
    doc = json.loads(windowed.stdout)
    assert doc["pi"]["errors"] == 0 and doc["pi"]["errors_after"] == 0, windowed.stderr
    assert doc["pi"]["cut_off"] >= 0 and "warning" not in windowed.stderr
    assert doc["report"]["stopped_by_max_time"] is True
    # without one record per operation the cut-off ones cannot be told apart: said so
    plain = _etcd(*args)
    summed = json.loads(plain.stdout)
    assert summed["report"]["stopped_by_max_time"] is True and "cut_off" not in summed["pi"]
    if summed["pi"]["errors"]:
        assert "in flight when --max-time stopped go-ycsb" in plain.stderr
        assert "not loaded" not in plain.stderr


@needs_etcd
def test_teardown_leaves_nothing(tmp_path: Path) -> None:
    state = str(tmp_path / "etcd")
    _etcd("setup", "--state", state, "--members", "3")
    pids = _pids(state)
    datas = [json.loads(p.read_text())["data"] for p in Path(state).glob("member-*.json")]
    assert len(pids) == 3 and all(Path(d).is_dir() for d in datas)
    _etcd("teardown", "--state", state)
    assert not Path(state).exists()
    assert not any(Path(d).exists() for d in datas)
    for pid in pids:
        stat = Path(f"/proc/{pid}/stat")
        assert not stat.exists() or stat.read_text().split(") ")[1].startswith("Z")
