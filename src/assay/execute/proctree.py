"""Holding every process a command starts, so that killing the command kills them all.

A benchmark's children can leave its process group (``setsid``), close its pipes, or
outlive it; killing the group at the timeout missed them, and a grandchild holding
stdout kept a ``timeout = 2`` trial alive for 413 s (issue #13, item 5).  A
:class:`ProcessTree` holds every descendant by the best means the host offers:

``cgroup``
    a cgroup v2 of its own, where the hierarchy is writable (root, or a delegated
    subtree).  Assay steps into it just before the launch and back out after the reap
    (both outside the timed region; no ``preexec_fn``: the vfork fast path stays), so
    the command and all it forks are born inside.  The kill is ``cgroup.kill``.
``scan``
    elsewhere (or with ``ASSAY_PROCESS_TREE=scan`` in the environment: the tests run
    both).  While the command runs Assay is a child subreaper
    (``PR_SET_CHILD_SUBREAPER``), so orphans are re-parented to it, not to init; the
    kill scans ``/proc`` for the command's session, the processes that carry its
    marker (``ASSAY_TRIAL=...``) in their environment, the orphans Assay adopted
    since the launch, and everything below them, and repeats until none is left.

Linux only; elsewhere the scan finds nothing and the caller's group kill is all.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import signal
import threading
import time
from collections import defaultdict
from pathlib import Path

#: The environment variable that marks a command's processes as its own.
MARKER = "ASSAY_TRIAL"


def new_marker() -> str:
    """A marker no other command has."""
    return secrets.token_hex(12)


_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37
_KILL_ROUNDS = 100  # scans before giving up on a tree that keeps forking
_GONE_S = 5.0  # how long to wait for killed processes to leave their cgroup

_lock = threading.Lock()
_subreaper_users = 0
_base: dict[int, Path | None] = {}  # per process (a forked worker finds its own)
_serial = 0


class ProcessTree:
    """The processes one command starts (see the module docstring).

    ``hold=False`` (setup and reset steps, whose daemons must outlive them): no cgroup
    and no subreaper; :meth:`kill` still finds the command's session and marked
    processes.  Use: ``tree.enter()`` just before the launch, ``tree.attach(pid)``
    after it, ``tree.kill()`` at the end, ``tree.close()`` in a ``finally``.
    """

    def __init__(self, marker: str, *, hold: bool = True) -> None:
        self.marker = f"{MARKER}={marker}".encode()
        self.hold = hold
        self.leader: int | None = None
        self._me = os.getpid()
        self._since = _ticks_now() - 2 * _HZ  # /proc start times are in clock ticks
        self._cgroup: Path | None = None
        self._inside = False
        self._subreaper = False
        self._adopted: set[int] = set()
        self._before: set[int] = set()  # Assay's children before the launch
        self._clean = False  # killed, and nothing was left
        if hold:
            self._cgroup = _new_cgroup()
            if self._cgroup is None:
                self._subreaper = _subreaper_on()

    @property
    def mechanism(self) -> str:
        """``cgroup`` or ``scan``: how the tree is held."""
        return "cgroup" if self._cgroup is not None else "scan"

    def enter(self) -> None:
        """Just before the launch: step into the cgroup, so that the next process started
        is born in it; or note Assay's children, to tell the orphans adopted later."""
        if self._cgroup is not None:
            try:
                _write(self._cgroup / "cgroup.procs", str(self._me))
                self._inside = True
                return
            except OSError:  # not allowed to migrate here: fall back to the scan
                _rmdir(self._cgroup)
                self._cgroup = None
                self._subreaper = _subreaper_on()
        if self._subreaper:
            kids = _children_of(self._me)
            if kids is None:
                kids = {p for p, info in _proc_table().items() if info[0] == self._me}
            self._before = kids

    def leave(self) -> None:
        """Step back out of the cgroup (before anything kills it)."""
        base = _cgroup_base()
        if self._inside and base is not None:
            with contextlib.suppress(OSError):  # then the kill spares Assay (see below)
                _write(base / "cgroup.procs", str(self._me))
                self._inside = False

    def attach(self, pid: int) -> None:
        """The command was started as ``pid`` (a session leader)."""
        self.leader = pid

    def kill(self) -> None:
        """SIGKILL every process of the tree, until none is left."""
        self.leave()
        if self._cgroup is not None:
            self._kill_cgroup(self._cgroup)
        else:
            for _ in range(_KILL_ROUNDS):
                pids = self._scan()
                if not pids:
                    break
                for pid in pids:
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
                self._reap()
            self._reap()
        self._clean = True

    def close(self) -> None:
        """Kill what is left of a held tree; give the cgroup and the subreaper back."""
        if self.hold and not self._clean:
            self.kill()
        self.leave()
        if self._cgroup is not None:
            deadline = time.monotonic() + _GONE_S
            while not _rmdir(self._cgroup) and time.monotonic() < deadline:
                time.sleep(0.001)  # killed processes still exiting
            self._cgroup = None
        self._reap()
        if self._subreaper:
            _subreaper_off()
            self._subreaper = False

    def _kill_cgroup(self, group: Path) -> None:
        deadline = time.monotonic() + _GONE_S
        if not self._inside:  # cgroup.kill would kill Assay too
            with contextlib.suppress(OSError):  # before Linux 5.14: one by one, below
                _write(group / "cgroup.kill", "1")
        while time.monotonic() < deadline:
            pids = {p for p in _read_pids(group / "cgroup.procs") if p != self._me}
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.001)

    def _scan(self) -> set[int]:
        if self._subreaper:
            walked = self._walk()
            if walked is not None:
                return walked
        procs = _proc_table()
        held: set[int] = set()
        for pid, (ppid, pgrp, sid, start, _) in procs.items():
            if pid == self._me:
                continue
            in_session = self.leader is not None and self.leader in (sid, pgrp)
            if in_session or (
                start >= self._since
                and (
                    (self._subreaper and ppid == self._me and pid not in self._before)
                    or _has_marker(pid, self.marker)
                )
            ):
                held.add(pid)
        held = _with_descendants(held, procs, self._me)
        for pid in held:
            if procs[pid][0] == self._me and pid != self.leader:
                self._adopted.add(pid)  # ours to reap; the leader is its Popen's
        return _live(held, procs)

    def _walk(self) -> set[int] | None:
        """As a subreaper, the command and every orphan it left are below the children
        Assay did not have before the launch: walk down from them (the cost grows with
        the tree, not with the host's process count).  None without ``children`` files."""
        kids = _children_of(self._me)
        if kids is None:
            return None
        todo = [k for k in kids if k not in self._before]
        self._adopted.update(k for k in todo if k != self.leader)
        seen: set[int] = set()
        live: set[int] = set()
        while todo:
            pid = todo.pop()
            if pid in seen:
                continue
            seen.add(pid)
            if _state(pid) in (None, b"Z", b"X"):
                continue  # gone, or a zombie: no children
            live.add(pid)
            todo.extend(_children_of(pid) or ())
        return live

    def _reap(self) -> None:
        for pid in list(self._adopted):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done:
                self._adopted.discard(pid)


def kill_marked(marker: str) -> list[int]:
    """SIGKILL every process whose environment carries ``ASSAY_TRIAL=marker``, and all
    below them, until none is left (what a killed Assay left running: see
    :mod:`assay.execute.leftovers`); the pids killed.  Linux only."""
    entry = f"{MARKER}={marker}".encode()
    me = os.getpid()
    killed: set[int] = set()
    for _ in range(_KILL_ROUNDS):
        procs = _proc_table()
        marked = {p for p in procs if p != me and _has_marker(p, entry)}
        pids = _live(_with_descendants(marked, procs, me), procs)
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        killed |= pids
    return sorted(killed)


def _with_descendants(
    held: set[int], procs: dict[int, tuple[int, int, int, int, bytes]], me: int
) -> set[int]:
    """``held`` and every process below them (never ``me``)."""
    children: dict[int, list[int]] = defaultdict(list)
    for pid, (ppid, *_) in procs.items():
        children[ppid].append(pid)
    held = set(held)
    todo = list(held)
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in held and child != me:
                held.add(child)
                todo.append(child)
    return held


def _live(pids: set[int], procs: dict[int, tuple[int, int, int, int, bytes]]) -> set[int]:
    """The processes that are not zombies."""
    return {p for p in pids if p in procs and procs[p][4] not in (b"Z", b"X")}


def _ticks_now() -> int:
    """Now, in the clock of /proc's start times (ticks since boot)."""
    clock = getattr(time, "CLOCK_BOOTTIME", time.CLOCK_MONOTONIC)  # not Linux: unused
    return int(time.clock_gettime(clock) * _HZ)


_HZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _proc_table() -> dict[int, tuple[int, int, int, int, bytes]]:
    """pid -> (ppid, process group, session, start time in ticks, state) from /proc."""
    table: dict[int, tuple[int, int, int, int, bytes]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return table
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            table[int(name)] = (
                int(fields[1]),
                int(fields[2]),
                int(fields[3]),
                int(fields[19]),
                fields[0],
            )
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
    return table


def _children_of(pid: int) -> set[int] | None:
    """``pid``'s children, from /proc/PID/task/*/children; None where the kernel has no
    such files (CONFIG_PROC_CHILDREN)."""
    if not _HAS_CHILDREN:
        return None
    kids: set[int] = set()
    with contextlib.suppress(OSError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            with (
                contextlib.suppress(OSError, ValueError),
                open(f"/proc/{pid}/task/{tid}/children", "rb") as f,
            ):
                kids.update(int(x) for x in f.read().split())
    return kids


def _state(pid: int) -> bytes | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


_HAS_CHILDREN = os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children")


def _has_marker(pid: int, marker: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = f.read()
    except OSError:
        return False
    return marker in env and marker in env.split(b"\0")


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


_LIBC = _libc()
_already_subreaper: bool | None = None


def _subreaper_on() -> bool:
    """Make this process a child subreaper (counted: nested users share it)."""
    global _subreaper_users, _already_subreaper
    if _LIBC is None or not hasattr(_LIBC, "prctl"):
        return False
    with _lock:
        if _already_subreaper is None:
            flag = ctypes.c_int(0)
            _LIBC.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0)
            _already_subreaper = bool(flag.value)
        first = _subreaper_users == 0 and not _already_subreaper
        if first and _LIBC.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            return False
        _subreaper_users += 1
    return True


def _subreaper_off() -> None:
    global _subreaper_users
    if _LIBC is None:
        return
    with _lock:
        _subreaper_users -= 1
        if _subreaper_users == 0 and not _already_subreaper:
            _LIBC.prctl(_PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


def _cgroup_base() -> Path | None:
    """This process's own cgroup v2 directory where it may make sub-cgroups, else None.

    Found once per process, before Assay first steps into a trial's cgroup."""
    pid = os.getpid()
    if pid not in _base:
        base = _base[pid] = _find_base()
        if base is not None:
            _remove_stale(base)
    return _base[pid]


def _find_base() -> Path | None:
    if os.environ.get("ASSAY_PROCESS_TREE") == "scan":
        return None
    try:
        own = next(
            line[3:].strip()
            for line in Path("/proc/self/cgroup").read_text().splitlines()
            if line.startswith("0::")
        )
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            left, _, right = line.partition(" - ")
            if right.split()[:1] != ["cgroup2"]:
                continue
            fields = left.split()
            root, mount = fields[3], fields[4]
            rel = own[len(root) :] if own.startswith(root) and root != "/" else own
            base = Path(mount) / rel.lstrip("/")
            if (base / "cgroup.procs").is_file() and os.access(base, os.W_OK):
                return base
    except (OSError, StopIteration, IndexError):
        pass
    return None


def _new_cgroup() -> Path | None:
    global _serial
    base = _cgroup_base()
    if base is None:
        return None
    with _lock:
        _serial += 1
        path = base / f"assay-{os.getpid()}-{_serial}"
    try:
        path.mkdir()
    except OSError:
        return None
    return path


def _remove_stale(base: Path) -> None:
    """Remove the empty cgroups of Assay processes that were killed (SIGKILL)."""
    with contextlib.suppress(OSError):
        for entry in base.iterdir():
            parts = entry.name.split("-")
            ours = len(parts) == 3 and parts[0] == "assay" and parts[1].isdigit()
            if ours and not Path(f"/proc/{parts[1]}").exists():
                _rmdir(entry)


def _rmdir(path: Path) -> bool:
    """Remove a cgroup, and the empty ones below it (a benchmark that runs Assay)."""
    try:
        path.rmdir()
    except FileNotFoundError:
        return True
    except OSError:
        try:
            subs = [p for p in path.iterdir() if p.is_dir()]
        except OSError:
            return False
        if not subs or not all(_rmdir(p) for p in subs):
            return False
        with contextlib.suppress(OSError):
            path.rmdir()
        return not path.exists()
    return True


def _write(path: Path, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def _read_pids(path: Path) -> set[int]:
    try:
        return {int(x) for x in path.read_text().split()}
    except (OSError, ValueError):
        return set()
