"""The client side of the etcd target: where its members are and how Assay's clients
(etcdctl, YCSB) reach them, with the state directory's client certificate.

A module of its own so that the YCSB driver (:mod:`assay.targets.ycsb`) reaches a
cluster without the target (:mod:`assay.targets.etcd`), which runs YCSB.

>>> url_host("fe80::1"), ip_address_of(" 10.0.0.2 ")
('[fe80::1]', '10.0.0.2')
>>> Member("m0", "10.0.0.2", 2379, 2380).client_url
'https://10.0.0.2:2379'
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.targets.base import TargetError, missing_binary
from assay.targets.private import StateDir, default_state_dir

CLIENT_PORT, PEER_PORT = 2379, 2380
CA_CERT = "ca.crt"  # the CA's certificate alone (what members and clients trust)
CLIENT = "client"  # Assay's client certificate: client.crt, client.key


def url_host(address: str) -> str:
    return f"[{address}]" if ":" in address else address


def ip_address_of(text: str) -> str:
    """An IP address (members are named by address: the certificates name them so)."""
    try:
        return str(ipaddress.ip_address(text.strip()))
    except ValueError:
        raise TargetError(
            f"{text!r} is not an IP address; etcd members are given by address (a "
            "[cluster.roles] host, {hosts.member})"
        ) from None


@dataclass(frozen=True)
class Member:
    """One member: its name, address and ports (the record's key is ``name``)."""

    name: str
    address: str
    client_port: int
    peer_port: int

    @property
    def record(self) -> str:
        return f"member-{self.name}-{self.address.replace(':', '_')}.json"

    @property
    def client_url(self) -> str:
        return f"https://{url_host(self.address)}:{self.client_port}"


def binary(name: str) -> str:
    found = shutil.which(name) or (f"/usr/bin/{name}" if Path(f"/usr/bin/{name}").exists()
                                   else None)  # fmt: skip
    if not found:
        raise missing_binary(name, "etcd-server" if name == "etcd" else "etcd-client")
    return found


def member_records(state: StateDir, host: str | None) -> list[dict[str, Any]]:
    """The member records in ``state`` (those on address ``host`` when given); each
    with ``_file``, its file name."""
    if not state.exists():
        return []
    out = []
    for path in sorted(state.path.glob("member-*.json")):
        with contextlib.suppress(ValueError, TypeError):
            rec = json.loads(state.read(path.name) or "")
            if isinstance(rec, dict) and (host is None or rec.get("address") == host):
                rec["_file"] = path.name
                out.append(rec)
    return out


def recorded_members(state: StateDir, host: str | None) -> list[Member]:
    """The members ``state`` records; a :class:`TargetError` when there are none."""
    recs = member_records(state, host)
    if not recs:
        raise state.not_running("etcd", "etcd")
    return [Member(r["name"], r["address"], int(r["client_port"]), int(r["peer_port"]))
            for r in recs]  # fmt: skip


def etcdctl(state: StateDir, urls: str, *args: str) -> str:
    """Run etcdctl (API v3) against ``urls`` with Assay's client certificate."""
    argv = [
        binary("etcdctl"), "--endpoints", urls,
        "--cacert", str(state.file(CA_CERT)),
        "--cert", str(state.file(f"{CLIENT}.crt")),
        "--key", str(state.file(f"{CLIENT}.key")), *args,
    ]  # fmt: skip
    env = {**os.environ, "ETCDCTL_API": "3"}
    done = subprocess.run(argv, capture_output=True, env=env, timeout=60, check=False)
    if done.returncode != 0:
        raise TargetError(f"etcdctl {args[0]} failed: "
                          f"{done.stderr.decode(errors='replace').strip()[-400:]}")  # fmt: skip
    return done.stdout.decode(errors="replace")


def client_properties(state_path: str | None, endpoints: str | None) -> dict[str, str]:
    """go-ycsb's etcd properties: the cluster's members (``endpoints``, comma-separated
    addresses of the role's hosts on port 2379, else those recorded in the state
    directory) and Assay's client certificate."""
    state = StateDir(state_path or default_state_dir("etcd"))
    if endpoints:
        urls = []
        for item in endpoints.split(","):
            host, _, port = item.strip().rpartition(":") if item.count(":") == 1 else (
                item.strip(), "", "")  # fmt: skip
            urls.append(f"https://{url_host(ip_address_of(host))}:{int(port or CLIENT_PORT)}")
    else:
        urls = [m.client_url for m in recorded_members(state, None)]
    if state.read(f"{CLIENT}.crt") is None:
        raise state.not_running("etcd", "etcd")
    return {
        "etcd.endpoints": ",".join(urls),
        "etcd.cacert_file": str(state.file(CA_CERT)),
        "etcd.cert_file": str(state.file(f"{CLIENT}.crt")),
        "etcd.key_file": str(state.file(f"{CLIENT}.key")),
        "etcd.dial_timeout": "5s",
    }
