"""Test hosts as network namespaces on a private bridge, each with its own address and
sshd, all sharing this machine's hostname (as clones of one image do): a user's
CloudLab nodes, on one machine (#41).  Made and removed by the test that uses them;
needs root (or CAP_NET_ADMIN), ``ip`` and sshd.

The file system is shared, so a host runs this Python and this Assay; what is a host's
own is its network (address, ports, links) and its processes (``ip netns pids``).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import random
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

SSHD = "/usr/sbin/sshd"


def why_not(*programs: str) -> str | None:
    """Why namespace hosts (running ``programs``) cannot be made here (None: they can)."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "ssh-keygen", *programs):
        if shutil.which(tool) is None:
            return f"no {tool}: run scripts/install-targets.sh"
    if not os.path.exists(SSHD):
        return "no sshd: run scripts/install-targets.sh"
    probe = f"assay-probe-{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"cannot make a network namespace: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def _ip(*args: str, ns: str | None = None) -> None:
    argv = ["ip", *args] if ns is None else ["ip", "netns", "exec", ns, "ip", *args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {done.stderr.strip()}")


@dataclass
class Hosts:
    """The hosts: ``addresses[i]`` is namespace ``names[i]``'s; ``dir`` holds the SSH
    key, known_hosts and each sshd's files; ``port`` is every sshd's."""

    names: list[str]
    addresses: list[str]
    bridge: str
    dir: Path
    port: int = 22
    sshd: dict[str, int] = field(default_factory=dict)  # namespace -> sshd pid

    def pids(self, name: str) -> set[int]:
        """The processes in namespace ``name`` but its sshd."""
        out = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True)
        return {int(p) for p in out.stdout.split()} - {self.sshd.get(name, -1)}

    def commands(self, name: str) -> list[str]:
        """What runs in namespace ``name`` (but its sshd): one command line each."""
        found = []
        for pid in sorted(self.pids(name)):
            with contextlib.suppress(OSError):
                raw = Path(f"/proc/{pid}/cmdline").read_bytes()
                found.append(raw.replace(b"\0", b" ").decode(errors="replace").strip())
        return found

    def left(self, timeout: float = 90.0) -> dict[str, list[str]]:
        """What still runs on the hosts (but their sshd) once nothing does, or after
        ``timeout`` seconds: the study's Dask processes end within seconds of its driver
        (the scheduler closes them), and a nanny that missed that close ends by its
        death_timeout (``[cluster] idle_timeout``, 60 s) once it notices the scheduler
        gone (seen once in CI: still up at 60 s).  ``{}``: nothing left."""
        deadline = time.monotonic() + timeout
        while any(self.commands(n) for n in self.names) and time.monotonic() < deadline:
            time.sleep(0.2)
        return {n: c for n in self.names if (c := self.commands(n))}

    def cluster_toml(self) -> str:
        """The ``[cluster]`` keys that reach these hosts."""
        return (
            f'port = {self.port}\nkey = "{self.dir / "client_key"}"\n'
            f'known_hosts = "{self.dir / "known_hosts"}"\n'
        )


_MADE = itertools.count()  # the hosts made by this process, for their names


@contextlib.contextmanager
def netns_hosts(count: int, tmp_path: Path) -> Iterator[Hosts]:
    """``count`` hosts on a bridge of a random 10.x.y.0/24 (the driver is .1)."""
    # unique in this process (a random part collided: CI's "ip link add asv20183141 …:
    # File exists", an earlier test's veth of the same name not yet gone), and of
    # fixed width, so that no two (pid, count) pairs spell the same name
    tag = f"{os.getpid() % 100000:05d}{next(_MADE) % 100:02d}"
    subnet = f"10.{random.randrange(100, 250)}.{random.randrange(0, 250)}"
    d = tmp_path / "netns"
    d.mkdir(mode=0o700)
    hosts = Hosts(
        names=[f"assay-h{tag}-{i}" for i in range(count)],
        addresses=[f"{subnet}.{i + 2}" for i in range(count)],
        bridge=f"asbr{tag}"[:15],
        dir=d,
    )
    try:
        _ip("link", "add", hosts.bridge, "type", "bridge")
        _ip("addr", "add", f"{subnet}.1/24", "dev", hosts.bridge)
        _ip("link", "set", hosts.bridge, "up")
        for i, (name, addr) in enumerate(zip(hosts.names, hosts.addresses, strict=True)):
            outside = f"asv{tag}{i}"[:15]
            _ip("netns", "add", name)
            _ip("link", "add", outside, "type", "veth", "peer", "name", "eth0", "netns", name)
            _ip("link", "set", outside, "master", hosts.bridge, "up")
            _ip("addr", "add", f"{addr}/24", "dev", "eth0", ns=name)
            _ip("link", "set", "eth0", "up", ns=name)
            _ip("link", "set", "lo", "up", ns=name)
        _start_sshds(hosts)
        yield hosts
    finally:
        _remove(hosts)


def _start_sshds(hosts: Hosts) -> None:
    d = hosts.dir
    for key in ("host_key", "client_key"):
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / key)], check=True
        )
    shutil.copy(d / "client_key.pub", d / "authorized_keys")
    kind, key = (d / "host_key.pub").read_text().split()[:2]
    (d / "known_hosts").write_text("".join(f"{a} {kind} {key}\n" for a in hosts.addresses))
    Path("/run/sshd").mkdir(exist_ok=True)  # the privilege-separation folder
    for name, addr in zip(hosts.names, hosts.addresses, strict=True):
        config = d / f"sshd-{name}.conf"
        config.write_text(
            f"Port {hosts.port}\nListenAddress {addr}\nHostKey {d / 'host_key'}\n"
            f"AuthorizedKeysFile {d / 'authorized_keys'}\nPidFile {d / f'sshd-{name}.pid'}\n"
            "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
            # a host's own python3 has no Assay, as a user's hosts' (#61): this machine's
            # shell start-up puts pyenv's shims, whose Python has it, first on PATH
            "SetEnv PYENV_VERSION=system\n"
        )
        proc = subprocess.Popen(
            ["ip", "netns", "exec", name, SSHD, "-D", "-f", str(config),
             "-E", str(d / f"sshd-{name}.log")],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
        hosts.sshd[name] = proc.pid  # ip netns exec execs sshd: the same process
    deadline = time.monotonic() + 20
    for addr in hosts.addresses:
        while not _listening(addr, hosts.port):
            if time.monotonic() > deadline:
                raise RuntimeError(f"sshd on {addr}:{hosts.port} did not start")
            time.sleep(0.05)


def _listening(addr: str, port: int) -> bool:
    import socket

    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex((addr, port)) == 0


def _remove(hosts: Hosts) -> None:
    """Kill every process of the hosts, then remove their namespaces and the bridge."""
    for name in hosts.names:
        out = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True)
        for pid in out.stdout.split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
    for name in hosts.names:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)
    subprocess.run(["ip", "link", "del", hosts.bridge], capture_output=True)


def link(hosts: Hosts, index: int, up: bool) -> None:
    """Take host ``index``'s link down (or up again): an outage of that host."""
    _ip("link", "set", "eth0", "up" if up else "down", ns=hosts.names[index])


@contextlib.contextmanager
def cpu_capped(hosts: Hosts, index: int, share: float) -> Iterator[None]:
    """Host ``index`` gets ``share`` of one CPU: its sshd joins a cgroup with a CFS quota,
    so every session, Dask worker and benchmark started through it does too (a slower
    machine of the pool).  Raises OSError where no cgroup CPU controller can be written."""
    name = hosts.names[index]
    v1 = Path("/sys/fs/cgroup/cpu")
    period = 100_000
    if (v1 / "cpu.cfs_quota_us").exists():
        group = v1 / f"assay-{name}"
        group.mkdir()
        (group / "cpu.cfs_period_us").write_text(str(period))
        (group / "cpu.cfs_quota_us").write_text(str(int(period * share)))
        root = v1
    else:  # cgroup v2
        root = Path("/sys/fs/cgroup")
        group = root / f"assay-{name}"
        group.mkdir()
        (group / "cpu.max").write_text(f"{int(period * share)} {period}")
    try:
        (group / "cgroup.procs").write_text(str(hosts.sshd[name]))
        yield
    finally:
        # what is left in the group (the test kills the hosts' processes) back to the root
        for pid in (group / "cgroup.procs").read_text().split():
            with contextlib.suppress(OSError):
                (root / "cgroup.procs").write_text(pid)
        with contextlib.suppress(OSError):
            group.rmdir()
