"""etcd, a Raft cluster: private members with mutual TLS on clients and peers, YCSB on it.

``setup`` starts etcd members and returns once the cluster answers. Two forms:

- on one machine, ``--members N`` (default 1) members on 127.0.0.1, on free ports;
- on the hosts of a role (``[benchmark.roles.member]``), ``--cluster {hosts.member}
  --host {host.name}`` starts the one member of this host; the initial cluster is the
  role's hosts in order (members ``m0``, ``m1``, ...), every member on ``--client-port``
  (2379) and ``--peer-port`` (2380) of its host's address only. Every host of a role is
  set up at once, as a Raft cluster needs to elect its first leader.

Every listener is TLS with client certificates (``--client-cert-auth``,
``--peer-client-cert-auth``), from a certificate authority made for the state directory
(``openssl``; the CA key never leaves it): a client or peer without a certificate of
that CA (another local user's) is refused at the handshake. The state directory
(``--state``, default per user, mode 700) holds the CA, Assay's client certificate, each
member's certificate, log and record; each member's data lies in a fresh private
directory (mode 700) of its own. On hosts with separate file systems, copy the state
directory's ``ca.pem`` to the same place on every host first (the first setup makes it
where there is none; namespace hosts share one file system, so they share it).

Knobs (``--knob NAME=VALUE`` at setup; etcd reads them only at its start, so a change
is a new setup: a sweep sets its members up again when their setting changes):
:data:`KNOBS`, each with its range. Every other setting is refused, those that would
open the cluster up (listeners, certificates, the initial cluster, data directories)
with the reason.

``run`` runs YCSB (:mod:`assay.targets.ycsb`) against the cluster (every member an
endpoint); ``reset`` deletes every key; ``teardown`` stops the members this host runs
and removes their data; the last member's teardown removes the state directory.

>>> check_knobs({"snapshot-count": "10000", "heartbeat-interval": "100"})
>>> check_knobs({"listen-client-urls": "http://0.0.0.0:2379"})  # doctest: +ELLIPSIS
Traceback (most recent call last):
assay.targets.base.TargetError: knob listen-client-urls: refused, it opens or changes ...
>>> initial_cluster(["10.0.0.1", "10.0.0.2"], 2380)
'm0=https://10.0.0.1:2380,m1=https://10.0.0.2:2380'
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import ipaddress
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from assay.privatefs import private_temp
from assay.targets.base import (
    RunResult,
    Target,
    TargetError,
    check_port_free,
    free_port,
    missing_binary,
)
from assay.targets.etcd_cluster import (
    CA_CERT,
    CLIENT,
    CLIENT_PORT,
    PEER_PORT,
    Member,
    binary,
    etcdctl,
    ip_address_of,
    member_records,
    recorded_members,
    url_host,
)
from assay.targets.private import (
    StateDir,
    default_state_dir,
    make_private_dir,
    new_secret,
    owned_private_dir,
    remove_private_dir,
)
from assay.targets.process import (
    ProcessIdentity,
    kill,
    send_signal,
    server_env,
    verified,
    wait_gone,
)

HOST = "127.0.0.1"
CA = "ca.pem"  # the CA's key and certificate (made once; copied to other file systems)
READY_S = 60.0  # how long a setup waits for its member to answer /health
#: knob -> (what it takes, lowest, highest); etcd takes each at its start only
KNOBS: dict[str, tuple[str, int, int]] = {
    "snapshot-count": ("committed transactions between snapshots", 1, 10**9),
    "heartbeat-interval": ("milliseconds between leader heartbeats", 1, 10_000),
    "election-timeout": ("milliseconds before a follower calls an election", 5, 50_000),
    "quota-backend-bytes": ("bytes the backend may grow to (0: etcd's default)", 0, 8 << 30),
    "auto-compaction-retention": ("hours of history kept (0: no compaction)", 0, 10_000),
    "max-request-bytes": ("largest client request in bytes", 1024, 64 << 20),
}
#: settings the target sets itself, by why a knob may not change them
PROTECTED: dict[str, frozenset[str]] = {
    "it opens or changes a listener": frozenset(
        {
            "listen-client-urls",
            "listen-peer-urls",
            "advertise-client-urls",
            "initial-advertise-peer-urls",
            "listen-metrics-urls",
            "enable-pprof",
            "enable-grpc-gateway",
        }
    ),
    "it changes who may connect (the certificates and their checks)": frozenset(
        {
            "client-cert-auth",
            "trusted-ca-file",
            "cert-file",
            "key-file",
            "auto-tls",
            "peer-client-cert-auth",
            "peer-trusted-ca-file",
            "peer-cert-file",
            "peer-key-file",
            "peer-auto-tls",
            "peer-cert-allowed-cn",
            "peer-cert-allowed-hostname",
            "client-crl-file",
            "peer-crl-file",
            "cipher-suites",
        }
    ),
    "it changes which cluster the member joins": frozenset(
        {
            "name",
            "initial-cluster",
            "initial-cluster-state",
            "initial-cluster-token",
            "discovery",
            "discovery-srv",
            "discovery-proxy",
            "force-new-cluster",
        }
    ),
    "it writes files outside the private directories": frozenset(
        {
            "data-dir",
            "wal-dir",
            "log-outputs",
            "config-file",
        }
    ),
}


def check_knobs(knobs: Mapping[str, str]) -> None:
    """Refuse a knob that is not one of :data:`KNOBS` or is out of its range."""
    for name, value in knobs.items():
        low = name.lower()
        why = next((w for w, names in PROTECTED.items() if low in names), None)
        if why is not None:
            raise TargetError(
                f"knob {name}: refused, {why}: the target sets it itself, to keep the "
                f"cluster private; the knobs are {', '.join(KNOBS)}"
            )
        if low not in KNOBS:
            raise TargetError(f"knob {name!r}: not an etcd knob here; expected one of "
                              f"{', '.join(KNOBS)}")  # fmt: skip
        what, lo, hi = KNOBS[low]
        try:
            number = int(value)
        except ValueError:
            number = None
        if number is None or not lo <= number <= hi:
            raise TargetError(
                f"knob {name}={value!r}: expected a whole number from {lo} to {hi} ({what})"
            )
    beat = int(knobs.get("heartbeat-interval", 100))
    election = int(knobs.get("election-timeout", 1000))
    if election < 5 * beat:
        raise TargetError(
            f"knob election-timeout={election}: etcd needs at least 5 times "
            f"heartbeat-interval ({beat} ms), i.e. {5 * beat}"
        )


def initial_cluster(addresses: Sequence[str], peer_ports: int | Sequence[int]) -> str:
    """etcd's ``--initial-cluster``: members ``m0``, ``m1``, ... at ``addresses``."""
    ports = [peer_ports] * len(addresses) if isinstance(peer_ports, int) else list(peer_ports)
    return ",".join(f"m{i}=https://{url_host(a)}:{p}" for i, (a, p) in
                    enumerate(zip(addresses, ports, strict=True)))  # fmt: skip


def _names(address: str) -> list[str]:
    """The IP names of a member's certificate. etcd checks a peer's certificate against
    the address its connection comes from, and a connection between two loopback
    addresses (the SSH loopback hosts 127.0.0.2-5) comes from 127.0.0.1.

    >>> _names("127.0.0.3"), _names("10.0.0.2")
    (['127.0.0.3', '127.0.0.1'], ['10.0.0.2'])
    """
    ip = ipaddress.ip_address(address)
    return [address, "127.0.0.1"] if ip.is_loopback and address != "127.0.0.1" else [address]


def leads(status: Mapping[str, Any]) -> bool:
    """Whether the member whose ``etcdctl endpoint status`` this is leads the cluster.

    >>> leads({"leader": 7, "header": {"member_id": 7}}), leads({"leader": 7, "header": {}})
    (True, False)
    """
    leader = status.get("leader")
    return bool(leader) and leader == (status.get("header") or {}).get("member_id")


@contextlib.contextmanager
def locked(state: StateDir) -> Iterator[None]:
    """The state directory, locked against the setups and teardowns of other members
    (namespace hosts share it)."""
    state.create()
    fd = os.open(state.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _openssl(*args: str, cwd: Path) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        raise missing_binary("openssl", "openssl")
    done = subprocess.run([openssl, *args], cwd=cwd, capture_output=True, check=False,
                          stdin=subprocess.DEVNULL)  # fmt: skip
    if done.returncode != 0:
        raise TargetError(
            f"openssl {args[0]} failed: {done.stderr.decode(errors='replace')[-400:]}"
        )


_EC = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")


def ensure_ca(state: StateDir) -> None:
    """The state directory's CA (``ca.pem``: key and certificate; made when there is
    none) and its certificate alone (``ca.crt``); call it holding :func:`locked`."""
    if state.read(CA) is None:
        with private_temp("assay-etcd-ca-") as tmp:
            _openssl("req", "-x509", *_EC, "-keyout", "ca.key", "-out", "ca.crt",
                     "-days", "30", "-subj", "/CN=assay-etcd-ca",
                     "-addext", "basicConstraints=critical,CA:TRUE",
                     "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=tmp)  # fmt: skip
            pem = (tmp / "ca.key").read_text() + (tmp / "ca.crt").read_text()
        state.write(CA, pem, exclusive=True)
    pem = state.read(CA) or ""
    cert = pem[pem.find("-----BEGIN CERTIFICATE-----") :]
    if "PRIVATE KEY" not in pem or not cert:
        raise TargetError(f"{state.file(CA)} holds no CA key and certificate; remove it")
    if state.read(CA_CERT) != cert:
        state.write(CA_CERT, cert)


def issue(state: StateDir, name: str, cn: str, addresses: Sequence[str], usage: str) -> None:
    """Certificate ``name.crt`` and key ``name.key`` signed by the state directory's CA,
    for ``addresses`` (its IP names) and ``usage`` (extendedKeyUsage)."""
    pem = state.read(CA) or ""
    with private_temp("assay-etcd-cert-") as tmp:
        key_at = pem.find("-----BEGIN CERTIFICATE-----")
        (tmp / "ca.key").write_text(pem[:key_at])
        (tmp / "ca.crt").write_text(pem[key_at:])
        ext = [f"extendedKeyUsage={usage}"]
        if addresses:
            ext.append("subjectAltName=" + ",".join(f"IP:{a}" for a in addresses))
        (tmp / "ext").write_text("\n".join(ext) + "\n")
        _openssl("req", *_EC, "-keyout", "m.key", "-out", "m.csr", "-subj", f"/CN={cn}", cwd=tmp)
        _openssl("x509", "-req", "-in", "m.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                 "-set_serial", str(int.from_bytes(os.urandom(8), "big")), "-days", "30",
                 "-extfile", "ext", "-out", "m.crt", cwd=tmp)  # fmt: skip
        state.write(f"{name}.key", (tmp / "m.key").read_text())
        state.write(f"{name}.crt", (tmp / "m.crt").read_text())


def _context(state: StateDir) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(state.file(CA_CERT)))
    ctx.load_cert_chain(str(state.file(f"{CLIENT}.crt")), str(state.file(f"{CLIENT}.key")))
    return ctx


def health(state: StateDir, member: Member, timeout: float = 2.0) -> bool:
    """Whether ``member`` answers /health with "true" (it has a leader), over TLS with
    Assay's client certificate."""
    import http.client

    conn = http.client.HTTPSConnection(
        member.address, member.client_port, context=_context(state), timeout=timeout
    )
    try:
        conn.request("GET", "/health")
        body = conn.getresponse().read()
    except (OSError, ssl.SSLError, http.client.HTTPException):
        return False
    finally:
        conn.close()
    with contextlib.suppress(ValueError):
        return str(json.loads(body).get("health")) == "true"
    return False


class EtcdTarget(Target):
    """etcd, a Raft cluster: members with mutual TLS on clients and peers, YCSB on it."""

    name = "etcd"

    def __init__(
        self, state: str | None = None, members: int = 1, cluster: str | None = None,
        host: str | None = None, client_port: int = CLIENT_PORT, peer_port: int = PEER_PORT,
    ) -> None:  # fmt: skip
        self.state = StateDir(state or default_state_dir(self.name))
        self.members = members
        self.cluster = (
            [ip_address_of(a) for a in cluster.split(",") if a.strip()] if cluster else []
        )
        self.host = ip_address_of(host) if host else None
        self.client_port = client_port
        self.peer_port = peer_port

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        g = parser.add_argument_group("etcd")
        g.add_argument("--state",
                       help=f"private state directory (mode 700; default: "
                       f"{default_state_dir(cls.name)})")  # fmt: skip
        g.add_argument(
            "--members",
            type=int,
            default=1,
            help="setup on one machine: members on 127.0.0.1 (default 1)",
        )
        g.add_argument(
            "--cluster",
            help="the role's hosts, comma-separated ({hosts.member}): "
            "the initial cluster; with --host, this host's member only",
        )
        g.add_argument("--host", help="this host's address ({host.name}); teardown: its members")
        g.add_argument(
            "--client-port",
            type=int,
            default=CLIENT_PORT,
            help=f"with --cluster: every member's client port ({CLIENT_PORT})",
        )
        g.add_argument(
            "--peer-port",
            type=int,
            default=PEER_PORT,
            help=f"with --cluster: every member's peer port ({PEER_PORT})",
        )
        g.add_argument(
            "--fault",
            choices=cls.faults,
            help="fault: what to do to this host's member ({fault.action})",
        )
        g.add_argument("--leader-only", action="store_true",
                       help="fault: only to a member that is the leader now")  # fmt: skip
        from assay.targets.ycsb import add_workload_arguments

        add_workload_arguments(parser)

    @classmethod
    def from_options(cls, opts: argparse.Namespace) -> EtcdTarget:
        if opts.members < 1:
            raise TargetError(f"--members {opts.members}: expected 1 or more")
        return cls(opts.state, opts.members, opts.cluster, opts.host, opts.client_port,
                   opts.peer_port)  # fmt: skip

    @staticmethod
    def workload_from_options(opts: argparse.Namespace) -> dict[str, Any]:
        return {"ycsb": opts}

    # -- members -----------------------------------------------------------------------
    def _planned(self) -> tuple[list[Member], str]:
        """The members this setup starts, and the initial cluster they form."""
        if self.cluster:
            if self.host is None or self.host not in self.cluster:
                raise TargetError(
                    f"--host {self.host}: expected one of --cluster {','.join(self.cluster)} "
                    "(this host's address, {host.name})"
                )
            everyone = [Member(f"m{i}", a, self.client_port, self.peer_port)
                        for i, a in enumerate(self.cluster)]  # fmt: skip
            mine = [m for m in everyone if m.address == self.host]
            return mine, initial_cluster(self.cluster, self.peer_port)
        ports = [(free_port(HOST), free_port(HOST)) for _ in range(self.members)]
        everyone = [Member(f"m{i}", HOST, c, p) for i, (c, p) in enumerate(ports)]
        return everyone, initial_cluster([HOST] * self.members, [p for _, p in ports])

    def _records(self) -> list[dict[str, Any]]:
        """The member records in the state directory (this host's with --host)."""
        return member_records(self.state, self.host)

    def _spawn(self, member: Member, cluster: str, token: str, knobs: Mapping[str, str]) -> None:
        data = make_private_dir("assay-etcd-", None, self.state, None)
        rec: dict[str, Any] = {
            "name": member.name, "address": member.address, "client_port": member.client_port,
            "peer_port": member.peer_port, "data": str(data), "server": None,
            "knobs": dict(knobs), "cluster": cluster, "token": token,
        }  # fmt: skip
        self.state.write(member.record, json.dumps(rec))  # before the start: teardown finds it
        self._launch(rec, data)

    def _launch(self, rec: dict[str, Any], data: Path) -> None:
        """Start the member ``rec`` records, on its data directory ``data`` (a new
        member's, or a killed one's that ``restore`` starts again: etcd then takes its
        cluster from the data), and record its process."""
        etcd = binary("etcd")
        member = Member(rec["name"], rec["address"], int(rec["client_port"]), int(rec["peer_port"]))
        base = f"{member.name}-{member.address}"
        cert, key = self.state.file(f"{base}.crt"), self.state.file(f"{base}.key")
        ca = self.state.file(CA_CERT)
        peer_url = f"https://{url_host(member.address)}:{member.peer_port}"
        argv = [
            etcd, "--name", member.name, "--data-dir", str(data / "data"),
            "--listen-client-urls", member.client_url, "--advertise-client-urls", member.client_url,
            "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
            "--initial-cluster", str(rec["cluster"]), "--initial-cluster-state", "new",
            "--initial-cluster-token", str(rec["token"]),
            "--client-cert-auth", "--trusted-ca-file", str(ca),
            "--cert-file", str(cert), "--key-file", str(key),
            "--peer-client-cert-auth", "--peer-trusted-ca-file", str(ca),
            "--peer-cert-file", str(cert), "--peer-key-file", str(key),
            "--logger", "zap", "--log-outputs", "stderr",
        ]  # fmt: skip
        knobs = dict(rec.get("knobs") or {})
        check_knobs(knobs)  # (read back from the state file)
        for k, v in knobs.items():
            argv += [f"--{k}", str(v)]
        logfd = self.state.open_log(f"{base}.log")
        try:
            proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=logfd, stderr=subprocess.STDOUT,
                start_new_session=True, env=server_env(), cwd=data,
            )  # fmt: skip
        finally:
            os.close(logfd)
        ident = None
        for _ in range(100):
            ident = ProcessIdentity.of(proc.pid)
            if ident is not None or proc.poll() is not None:
                break
            time.sleep(0.01)
        rec["server"] = ident.to_json() if ident else None
        self.state.write(member.record, json.dumps({k: v for k, v in rec.items() if k != "_file"}))

    def _wait_ready(self, members: Sequence[Member]) -> None:
        deadline = time.monotonic() + READY_S
        waiting = list(members)
        while waiting and time.monotonic() < deadline:
            waiting = [m for m in waiting if not health(self.state, m)]
            if waiting:
                for rec in self._records():
                    ident = ProcessIdentity.from_json(rec.get("server"))
                    if rec["name"] in {m.name for m in waiting} and (
                        ident is None or not ident.is_running()
                    ):
                        raise TargetError(self._failure(rec))
                time.sleep(0.2)
        if waiting:
            names = ", ".join(f"{m.name} ({m.client_url})" for m in waiting)
            raise TargetError(
                f"etcd member {names} had no healthy cluster within {READY_S:g} s (are the "
                "other members set up too? a Raft cluster needs a majority); its log: "
                f"{self.state.file(f'{waiting[0].name}-{waiting[0].address}.log')}"
            )

    def _failure(self, rec: Mapping[str, Any]) -> str:
        log = self.state.read(f"{rec['name']}-{rec['address']}.log") or ""
        tail = " | ".join(log.strip().splitlines()[-3:])[-500:]
        return (
            f"etcd member {rec['name']} ({rec['address']}) exited at start: {tail or 'no output'}"
        )

    def start(self, knobs: Mapping[str, str], workload: Mapping[str, Any] | None = None) -> None:
        binary("etcd")
        check_knobs(knobs)
        self._stop_members()
        members, cluster = self._planned()
        for m in members:
            check_port_free(m.client_port, m.address)
            check_port_free(m.peer_port, m.address)
        token = f"assay-{new_secret()[:16]}" if not self.cluster else "assay-" + "-".join(
            a.replace(":", "_") for a in self.cluster)  # fmt: skip
        with locked(self.state):
            ensure_ca(self.state)
            if self.state.read(f"{CLIENT}.crt") is None:
                issue(self.state, CLIENT, "assay-client", [], "clientAuth")
            for m in members:
                issue(self.state, f"{m.name}-{m.address}", m.name, _names(m.address),
                      "serverAuth,clientAuth")  # fmt: skip
        for m in members:
            self._spawn(m, cluster, token, knobs)
        self._wait_ready(members)

    def _stop_members(self) -> None:
        """Stop this host's recorded members (only processes the kernel still shows as
        the etcd started here) and remove their data and files."""
        uid = os.geteuid()
        etcd = None
        with contextlib.suppress(TargetError):
            etcd = binary("etcd")
        for rec in self._records():
            server = verified(rec.get("server"), etcd, uid) if etcd else None
            if server is not None:
                if rec.get("faulted") == "stop":  # a stopped process ends only once continued
                    send_signal(server, signal.SIGCONT)
                send_signal(server, signal.SIGTERM)
                if not wait_gone(server, 5):
                    kill(server)
            data = owned_private_dir(rec.get("data"), uid, self.state)
            if data is not None:
                remove_private_dir(str(data), uid, self.state)
            base = f"{rec.get('name')}-{rec.get('address')}"
            self.state.remove(rec["_file"], f"{base}.crt", f"{base}.key", f"{base}.log")

    def stop(self) -> None:
        with locked(self.state):
            self._stop_members()
            if not list(self.state.path.glob("member-*.json")):
                self.state.remove(CA, CA_CERT, f"{CLIENT}.crt", f"{CLIENT}.key")
        self.state.remove_dir()

    def endpoints(self) -> list[Member]:
        """Every recorded member of the cluster (its initial cluster, as set up)."""
        return recorded_members(self.state, self.host)

    def reset(self, workload: Mapping[str, Any] | None = None) -> None:
        self.etcdctl("del", "", "--from-key")

    def etcdctl(self, *args: str) -> str:
        """Run etcdctl against the cluster's recorded members."""
        return etcdctl(self.state, ",".join(m.client_url for m in self.endpoints()), *args)

    def _status(self, member: Member) -> dict[str, Any]:
        """``member``'s own status (etcdctl endpoint status: version, leader, its id)."""
        status = json.loads(etcdctl(self.state, member.client_url, "endpoint", "status",
                                    "-w", "json") or "[]")  # fmt: skip
        got = status[0].get("Status", {}) if status else {}
        return got if isinstance(got, dict) else {}

    def describe(self) -> dict[str, Any]:
        members = self.endpoints()
        version, leader = "", None
        for m in members:  # one at a time: a member that is down answers nothing
            try:
                status = self._status(m)
            except (TargetError, ValueError):
                continue
            version = str(status.get("version", version))
            if leads(status):
                leader = m.client_url
        recs = self._records()
        return {
            "target": self.name, "version": version, "state": str(self.state.path),
            "members": [m.client_url for m in members], "leader": leader,
            "knobs": recs[0].get("knobs", {}) if recs else {},
        }  # fmt: skip

    faults = ("kill", "stop")

    def fault(self, action: str, opts: argparse.Namespace) -> dict[str, Any]:
        """``kill`` (SIGKILL) or ``stop`` (SIGSTOP: a member that hangs) this host's
        member (``--host``); with ``--leader-only``, only when it is the leader now."""
        recs = self._records()
        if not recs:
            raise self.state.not_running("etcd", "etcd")
        done = []
        for rec in recs:
            member = Member(rec["name"], rec["address"], int(rec["client_port"]),
                            int(rec["peer_port"]))  # fmt: skip
            if getattr(opts, "leader_only", False) and not leads(self._status(member)):
                done.append({"member": member.name, "fault": None, "why": "not the leader"})
                continue
            server = verified(rec.get("server"), binary("etcd"), os.geteuid())
            if server is None:
                raise TargetError(f"etcd member {member.name} ({member.address}) does not run")
            send_signal(server, signal.SIGKILL if action == "kill" else signal.SIGSTOP)
            if action == "kill":
                wait_gone(server, 10)
            rec["faulted"] = action
            self.state.write(rec.pop("_file"), json.dumps(rec))
            done.append({"member": member.name, "fault": action, "pid": str(server.pid)})
        return {"target": self.name, "faults": done, "at": time.time()}

    def restore(self, opts: argparse.Namespace) -> dict[str, Any]:
        """Undo this host's faults: a killed member started again on its data (it catches
        up with the cluster), a stopped one continued; then wait until it answers."""
        done = []
        for rec in self._records():
            action = rec.get("faulted")
            if not action:
                continue
            member = Member(rec["name"], rec["address"], int(rec["client_port"]),
                            int(rec["peer_port"]))  # fmt: skip
            clean = {k: v for k, v in rec.items() if k not in ("_file", "faulted")}
            if action == "stop":
                server = verified(rec.get("server"), binary("etcd"), os.geteuid())
                if server is not None:
                    send_signal(server, signal.SIGCONT)
                self.state.write(member.record, json.dumps(clean))
            else:
                data = owned_private_dir(rec.get("data"), os.geteuid(), self.state)
                if data is None:
                    raise TargetError(f"etcd member {member.name}: its data directory is gone")
                self._launch(clean, data)  # (records its new process)
            self._wait_ready([member])
            done.append({"member": member.name, "restored": action})
        return {"target": self.name, "restored": done, "at": time.time()}

    def apply(self, knobs: Mapping[str, str]) -> dict[str, str]:
        """The knobs the members run with; ``knobs`` must be those (etcd reads its
        settings at its start only: a change is a new setup)."""
        recs = self._records()
        running = {str(k): str(v) for k, v in (recs[0].get("knobs") or {}).items()} if recs else {}
        if knobs and dict(knobs) != running:
            raise TargetError(
                "etcd takes its settings only at its start: give the knobs to setup "
                f"(--knob), not to run ({', '.join(f'{k}={v}' for k, v in knobs.items())})"
            )
        return running

    def run(self, workload: Mapping[str, Any]) -> RunResult:
        from assay.targets.ycsb import failed_operations, run_phase

        applied = self.apply(dict(workload.get("knobs") or {}))
        opts = workload["ycsb"]
        opts.db = "etcd"
        result = run_phase(opts, "load" if opts.action == "load" else "run")
        result.target = self.name
        result.knobs = applied
        failed = failed_operations(result, "etcd")
        if failed:  # the JSON counts them; a person running it by hand is told
            print(f"warning: etcd: {failed}", file=sys.stderr)
        return result
