"""Holding every process a command starts, so that killing the command kills them all.

A benchmark's children can leave its process group (``setsid``), close its pipes, or
outlive it; killing the group at the timeout missed them, and a grandchild holding
stdout kept a ``timeout = 2`` trial alive for 413 s (issue #13, item 5).  A
:class:`ProcessTree` holds every descendant by the best means the host offers:

``cgroup``
    a cgroup v2 of Assay's own for the whole session (``assay-PID``), where the
    hierarchy is writable (root, or a delegated subtree).  Assay steps into it once,
    before its first trial, so every command and all it forks are born inside (no
    ``preexec_fn``: the vfork fast path stays).  A trial's processes are those of the
    session cgroup (and the cgroups below it) that were not there before its launch,
    other than Assay and whatever descends from a process that was: a server started
    before the trial, and the children it forks meanwhile, are spared.  Setup, reset
    and teardown steps step out of it for their launch, so the servers they start are
    never in it.  Moving a process between cgroups waits for an RCU grace period
    (~5 ms here once the kernel's fast path has gone cold): one cgroup per trial, stepped
    into and out of, cost 10-12 ms per trial (bench/RESULTS.md, issue #17).
``scan``
    elsewhere (or with ``ASSAY_PROCESS_TREE=scan`` in the environment: the tests run
    both).  While the command runs Assay is a child subreaper
    (``PR_SET_CHILD_SUBREAPER``), so orphans are re-parented to it, not to init; the
    kill scans ``/proc`` for the command's session, the processes that carry its
    marker (``ASSAY_TRIAL=...``) in their environment, the orphans Assay adopted
    since the launch, and everything below them, and repeats until none is left.

Hand-over: a trial may start a process that is not its leftover but a long-lived
service's (a server restarted by ``pg_ctl`` for a knob that needs a restart, a daemon),
which must outlive the trial.  Its environment names a file, ``ASSAY_HANDOVER``, in a
private (0700) folder of Assay's, one per trial; a process of the trial hands a process
over by appending a line ``PID`` or ``PID START`` to it (:func:`hand_over`: START, the
start time in clock ticks, field 22 of ``/proc/PID/stat``, guards against a reused pid).
The kill reads it (the first :data:`HANDOVER_CAP` bytes) and spares each named process
that is the trial's own (any other line is ignored), with all it forks, in every later
trial's kill too; it then belongs to whatever stops the service (a study's teardown).
With the cgroup it is moved out of the session cgroup, where setup's servers are; with
the scan Assay adopted it (the subreaper) and reaps it when it ends.  A handed-over
process should leave the trial's process group (as daemons do: a timeout kills the
leader's group), and better not carry ``ASSAY_TRIAL``: the resume of an Assay killed by
SIGKILL stops whatever carries its marker (:mod:`assay.execute.leftovers`); the targets
start their servers without it (:func:`assay.targets.process.server_env`).

Linux only; elsewhere the scan finds nothing and the caller's group kill is all.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import itertools
import os
import secrets
import signal
import stat
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from assay.execute.procfs import KeptFiles, read_bytes
from assay.handover import HANDOVER_CAP, MARKER, parse_handover


def new_marker() -> str:
    """A marker no other command has."""
    return secrets.token_hex(12)


_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37
_KILL_ROUNDS = 100  # scans before giving up on a tree that keeps forking
_GONE_S = 5.0  # how long to wait for killed processes to leave their cgroup

_lock = threading.Lock()
_session_lock = threading.Lock()  # the session cgroup is made once per process
_subreaper_users = 0
_base: dict[int, Path | None] = {}  # per process (a forked worker finds its own)
# per process: the session cgroup it sits in while it runs trials (None: the scan)
_session: dict[int, Path | None] = {}
# per process: the leaders of the trials running now (a trial's kill spares the others)
_leaders: dict[int, set[int]] = defaultdict(set)
# per process: the processes trials handed over (pid -> start time), spared by every kill
_handed: dict[int, dict[int, int]] = defaultdict(dict)
_handover_dir: dict[int, str] = {}  # per process: the private folder of hand-over files
_handover_count = itertools.count()


class ProcessTree:
    """The processes one command starts (see the module docstring).

    ``hold=False`` (setup and reset steps, whose daemons must outlive them): no cgroup
    and no subreaper (the launch steps out of the session cgroup); :meth:`kill` still
    finds the command's session and marked processes.  Use: ``tree.enter()`` just
    before the launch, ``tree.attach(pid)`` right after it, ``tree.kill()`` at the end,
    ``tree.close()`` in a ``finally``.  A held tree's :attr:`handover` is the file the
    command's environment names as ``ASSAY_HANDOVER`` (None where none could be made).
    """

    def __init__(self, marker: str, *, hold: bool = True) -> None:
        self.marker = f"{MARKER}={marker}".encode()
        self.hold = hold
        self.leader: int | None = None
        self._me = os.getpid()
        self._since = _ticks_now() - 2 * _HZ  # /proc start times are in clock ticks
        self._cgroup: Path | None = None
        self._stepped_out = False
        self._subreaper = False
        self._adopted: set[int] = set()
        self._before: set[int] = set()  # Assay's children before the launch
        self._present: dict[int, int] = {}  # the session cgroup's processes before it
        self._clean = False  # killed, and nothing was left
        self.handover = _handover_file() if hold else None
        self._handover_read = False  # the file was there at the kill: removed at the close
        if hold:
            self._cgroup = _session_cgroup()
            if self._cgroup is None:
                self._subreaper = _subreaper_on()

    @property
    def mechanism(self) -> str:
        """``cgroup`` or ``scan``: how the tree is held."""
        return "cgroup" if self._cgroup is not None else "scan"

    def enter(self) -> None:
        """Just before the launch: note what the session cgroup holds already (or
        Assay's children, to tell the orphans adopted later); a step steps out of the
        session cgroup, so that what it starts is not Assay's to kill."""
        if self._cgroup is not None:
            self._present = _starts(_group_pids(self._cgroup) - {self._me})
        elif self._subreaper:
            kids = _children_of(self._me)
            if kids is None:
                kids = {p for p, info in _proc_table().items() if info[0] == self._me}
            self._before = kids
        elif not self.hold:
            self._stepped_out = _step(_base.get(self._me), _session.get(self._me))

    def attach(self, pid: int) -> None:
        """The command was started as ``pid`` (a session leader)."""
        self.leader = pid
        _leaders[self._me].add(pid)
        self._step_back()

    def _step_back(self) -> None:
        if self._stepped_out:
            self._stepped_out = False
            _step(_session.get(self._me), _base.get(self._me))

    def kill(self) -> None:
        """SIGKILL every process of the tree, until none is left, but those it handed
        over."""
        self._take_handover()
        if self._cgroup is not None:
            self._kill_group(self._cgroup)
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
        """Kill what is left of a held tree; give the subreaper back."""
        self._step_back()
        if self.hold and not self._clean:
            self.kill()
        if self.leader is not None:
            _leaders[self._me].discard(self.leader)
        if self._handover_read and self.handover is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.handover)
        self._reap()
        _sweep_handed(self._me)
        if self._subreaper:
            _subreaper_off()
            self._subreaper = False

    def _take_handover(self) -> None:
        """Spare the processes the trial handed over that are its own (the same start
        time where the line gives one), from now on (see the module docstring)."""
        if self.handover is None:
            return
        data = _read_handover(self.handover)
        self._handover_read = data is not None
        named = parse_handover(data or b"")
        if not named:
            return
        ours = self._trial_pids(self._cgroup) if self._cgroup is not None else self._scan()
        spared: dict[int, int] = {}
        for pid, start in named.items():
            st = _stat(pid) if pid in ours and pid != self.leader else None
            if st is not None and start in (None, st[1]):
                spared[pid] = st[1]
        if not spared:
            return
        with _lock:
            _handed[self._me].update(spared)
        if self._cgroup is not None:  # where setup's servers are: no trial's to count
            _move_out(set(spared), self._cgroup, _base.get(self._me))

    def _kill_group(self, group: Path) -> None:
        """SIGKILL the trial's processes in the session cgroup until none is left (or
        ``_GONE_S`` passed: a process stuck in the kernel)."""
        deadline = time.monotonic() + _GONE_S
        while True:
            pids = self._trial_pids(group)
            if not pids or time.monotonic() > deadline:
                return
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.001)  # killed processes leave the cgroup as they exit

    def _trial_pids(self, group: Path) -> set[int]:
        """The live processes of the session cgroup that are this trial's: not Assay,
        not there before the launch (the same start time: a pid can be reused), and not
        below one that was, nor below another trial's leader or a handed-over process
        (moved out of the cgroup, perhaps after it forked there)."""
        stats: dict[int, tuple[int, int, bytes]] = {}
        for pid in _group_pids(group) - {self._me}:
            st = _stat(pid)
            if st is not None:
                stats[pid] = st
        others = _leaders[self._me] - {self.leader}
        spared = {p for p, st in stats.items() if self._present.get(p) == st[1]} | others
        spared |= _handed_now(self._me, stats)
        verdict: dict[int, bool] = {}  # pid -> the trial's
        for pid in stats:
            chain: list[int] = []
            cur = pid
            while cur not in verdict and cur not in spared and cur in stats:
                if len(chain) > len(stats):  # a loop of re-used pids: stop here
                    break
                chain.append(cur)
                cur = stats[cur][0]
            # the chain ends in a spared process, or leaves the cgroup: at Assay (the
            # leader), at init or an outside subreaper (an orphan)
            ours = verdict.get(cur, cur not in spared)
            for p in chain:
                verdict[p] = ours
        return {p for p, ours in verdict.items() if ours and stats[p][2] not in (b"Z", b"X")}

    def _scan(self) -> set[int]:
        if self._subreaper:
            walked = self._walk()
            if walked is not None:
                return walked
        procs = _proc_table()
        held: set[int] = set()
        others = _leaders[self._me] - {self.leader}
        for pid, (ppid, pgrp, sid, start, _) in procs.items():
            if pid == self._me or pid in others:
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
        handed = _handed.get(self._me, {})
        kept = {p for p, s in handed.items() if p in procs and procs[p][3] == s}
        held -= _with_descendants(kept, procs, self._me)  # they carry the marker
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
        others = _leaders[self._me] - {self.leader}  # other trials' (another thread's)
        todo = [k for k in kids if k not in self._before and k not in others]
        self._adopted.update(k for k in todo if k != self.leader)
        handed = _handed.get(self._me, {})
        seen: set[int] = set()
        live: set[int] = set()
        while todo:
            pid = todo.pop()
            if pid in seen:
                continue
            seen.add(pid)
            st = _stat(pid)
            if st is None or st[2] in (b"Z", b"X"):
                continue  # gone, or a zombie: no children
            if handed.get(pid) == st[1]:
                continue  # handed over: spared with all below it
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


def kill_marked(marker: str, below: str | None = None) -> list[int]:
    """SIGKILL every process whose environment carries ``ASSAY_TRIAL=marker`` (or, with
    ``below``, a marker that starts with ``marker + below``), and all below them, until
    none is left (what a killed Assay left running: see :mod:`assay.execute.leftovers`);
    the pids killed.  Linux only."""
    entry = f"{MARKER}={marker}".encode()
    prefix = None if below is None else entry + below.encode()
    me = os.getpid()
    killed: set[int] = set()
    for _ in range(_KILL_ROUNDS):
        procs = _proc_table()
        marked = {p for p in procs if p != me and _has_marker(p, entry, prefix)}
        pids = _live(_with_descendants(marked, procs, me), procs)
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        killed |= pids
    return sorted(killed)


def _read_handover(path: str) -> bytes | None:
    """The first :data:`HANDOVER_CAP` bytes of a hand-over file; None when there is
    none, or it is no regular file (a FIFO planted there must not block the kill)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return os.read(fd, HANDOVER_CAP) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
    except OSError:
        return b""
    finally:
        os.close(fd)


def _handover_file() -> str | None:
    """A fresh hand-over file's path (not made: the trial makes it) in this process's
    private folder, made at the first call; None when it cannot be."""
    me = os.getpid()
    folder = _handover_dir.get(me)
    if folder is None:
        try:  # mkdtemp: mode 0700, a fresh name
            folder = _handover_dir[me] = tempfile.mkdtemp(prefix=f"{_HANDOVER_PREFIX}{me}-")
        except OSError:
            return None
        atexit.register(_remove_handover_dirs, me)
    return f"{folder}/{next(_handover_count)}"


_HANDOVER_PREFIX = "assay-handover-"  # then the pid of the Assay process it belongs to


def _remove_handover_dirs(me: int) -> None:
    """At exit: remove this process's hand-over folder, and those of Assay processes
    that ended without their exit handlers (SIGKILL; a forked worker's ``os._exit``)."""
    if os.getpid() != me:
        return  # a forked child runs its parent's exit handlers: not its folder
    _handover_dir.pop(me, None)
    with contextlib.suppress(OSError), os.scandir(tempfile.gettempdir()) as entries:
        for entry in entries:
            owner = entry.name[len(_HANDOVER_PREFIX) :].split("-", 1)[0]
            if not entry.name.startswith(_HANDOVER_PREFIX) or not owner.isdigit():
                continue
            other = _stat(int(owner)) if int(owner) != me else None
            if other is not None and other[2] not in (b"Z", b"X"):
                continue  # another Assay that still runs: its folder is in use
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid():
                with contextlib.suppress(OSError):
                    for name in os.listdir(entry.path):
                        os.unlink(os.path.join(entry.path, name))  # never follows a link
                    os.rmdir(entry.path)


def _handed_now(me: int, stats: dict[int, tuple[int, int, bytes]]) -> set[int]:
    """The handed-over processes that still run (in ``stats``, or outside the cgroup)."""
    return {
        pid
        for pid, start in list(_handed.get(me, {}).items())
        if (stats.get(pid) or _stat(pid) or (0, -1, b""))[1] == start
    }


def _sweep_handed(me: int) -> None:
    """Forget the handed-over processes that ended, reaping those Assay adopted (the
    scan's subreaper): no zombie piles up.  A pid is waited for only while the kernel
    shows it as that process's zombie: a new child of Assay's may have its pid."""
    handed = _handed.get(me)
    if not handed:
        return
    for pid, start in list(handed.items()):
        st = _stat(pid)
        if st is not None and st[1] == start:
            if st[2] not in (b"Z", b"X"):
                continue  # still serving
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)  # init's (the cgroup) or its parent's: not ours
        with _lock:
            handed.pop(pid, None)


def _move_out(roots: set[int], group: Path, base: Path | None) -> None:
    """Move ``roots`` and their descendants in ``group`` to ``base``, parents first (what
    they fork meanwhile is born there); best effort: one left behind is spared anyway."""
    if base is None:
        return
    parents = {p: st[0] for p in _group_pids(group) if (st := _stat(p)) is not None}
    children: dict[int, list[int]] = defaultdict(list)
    for pid, ppid in parents.items():
        children[ppid].append(pid)
    todo = sorted(roots)
    while todo:
        pid = todo.pop(0)
        with contextlib.suppress(OSError):
            _write(base / "cgroup.procs", str(pid))
        todo.extend(children.get(pid, ()))


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


_HAS_CHILDREN = os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children")


def _has_marker(pid: int, marker: bytes, prefix: bytes | None = None) -> bool:
    """Whether the environment of ``pid`` has the entry ``marker``, or one that starts
    with ``prefix``."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = f.read()
    except OSError:
        return False
    if marker not in env:
        return False
    entries = env.split(b"\0")
    return marker in entries or (prefix is not None and any(e.startswith(prefix) for e in entries))


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

    Found once per process, before Assay first steps into its session cgroup."""
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
        if own.rsplit("/", 1)[-1] == f"assay-{os.getpid()}":  # already in its session
            own = own.rsplit("/", 1)[0] or "/"
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


def _new_session_lock() -> None:
    global _session_lock
    _session_lock = threading.Lock()  # a fork may copy it held by prepare_session's thread


os.register_at_fork(after_in_child=_new_session_lock)


def prepare_session() -> None:
    """Make the session cgroup and step into it in a background thread, now.

    The kernel's migration of a process between cgroups waits for an RCU grace period
    (17 ms here); started before a study's imports, it is done by its first trial, which
    otherwise waited for it (issue #17: start-up).  The first trial's tree waits for
    the thread if it is not done.  Nothing where trees are held by the scan.
    """
    if os.getpid() in _session or os.environ.get("ASSAY_PROCESS_TREE") == "scan":
        return
    threading.Thread(target=_session_cgroup, name="assay-session-cgroup", daemon=True).start()


def _session_cgroup() -> Path | None:
    """This process's session cgroup, made and stepped into at the first call (the one
    migration of the session); None where it cannot be (then the scan holds trees)."""
    with _session_lock:  # made once, perhaps by prepare_session()'s thread
        return _make_session_cgroup()


def _make_session_cgroup() -> Path | None:
    pid = os.getpid()
    if pid in _session:
        return _session[pid]
    base = _cgroup_base()
    group: Path | None = None
    if base is not None:
        path = base / f"assay-{pid}"
        with contextlib.suppress(OSError):
            path.mkdir(exist_ok=True)
            if _step(path, base):
                group = path
            else:
                _rmdir(path)
    with _lock:
        first = not _session
        _session[pid] = group
    if first:
        atexit.register(end_session)
    return group


def end_session() -> None:
    """Step this process out of its session cgroup and remove it (at exit; a test
    that changes the mechanism).  What still runs in it is left alone: the trials'
    processes were killed with their trials."""
    pid = os.getpid()
    group = _session.pop(pid, None)
    if group is not None:
        _kept.forget(os.fspath(group))
    if group is not None and _step(_base.get(pid), group):
        _rmdir(group)


def _step(to: Path | None, away_from: Path | None) -> bool:
    """Move this process (all its threads) to the cgroup ``to``; whether it moved."""
    if to is None or away_from is None:
        return False
    try:
        _write(to / "cgroup.procs", str(os.getpid()))
    except OSError:
        return False
    return True


#: The session cgroups' files read around every trial, each through a descriptor kept
#: open (closed when the session ends).
_kept = KeptFiles()


def _group_pids(group: Path | str, *, session: bool = True) -> set[int]:
    """The processes in ``group`` and the cgroups below it (a benchmark running Assay
    makes its own there).  Read twice around every trial (plain strings, no ``Path``):
    a session cgroup's files through kept descriptors, and its directory is listed only
    when ``cgroup.stat`` counts cgroups below it (a listing cost ~0.1 ms)."""
    base = os.fspath(group)
    pids = _read_pids(f"{base}/cgroup.procs", _kept.read if session else read_bytes)
    if session and _no_descendants(base):
        return pids
    with contextlib.suppress(OSError), os.scandir(base) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                pids |= _group_pids(entry.path, session=False)
    return pids


def _no_descendants(base: str) -> bool:
    """Whether cgroup v2's ``cgroup.stat`` says no cgroup lives below ``base`` (False
    when it cannot be read)."""
    try:
        for line in _kept.read(f"{base}/cgroup.stat").splitlines():
            key, _, value = line.partition(b" ")
            if key == b"nr_descendants":
                return int(value) == 0
    except (OSError, ValueError):
        pass
    return False


def _stat(pid: int) -> tuple[int, int, bytes] | None:
    """(parent, start time in ticks, state) of a process; None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return int(fields[1]), int(fields[19]), fields[0]
    except (OSError, IndexError, ValueError):
        return None


def _starts(pids: set[int]) -> dict[int, int]:
    """pid -> start time of the processes that still run."""
    out: dict[int, int] = {}
    for pid in pids:
        st = _stat(pid)
        if st is not None:
            out[pid] = st[1]
    return out


def _remove_stale(base: Path) -> None:
    """Remove the empty cgroups of Assay processes that were killed (SIGKILL): session
    cgroups (``assay-PID``) and the per-trial ones of older versions (``assay-PID-N``)."""
    with contextlib.suppress(OSError):
        for entry in base.iterdir():
            parts = entry.name.split("-")
            ours = len(parts) in (2, 3) and parts[0] == "assay" and parts[1].isdigit()
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


def _read_pids(path: str, read: Callable[[str], bytes] = read_bytes) -> set[int]:
    """The pids listed in a ``cgroup.procs`` file; none when it cannot be read."""
    try:
        return {int(x) for x in read(path).split()}
    except (OSError, ValueError):
        return set()
