"""Server processes a target started, recognised before any signal is sent to them.

A pid written in a state file may since belong to another process (the server died and
the pid was reused) or may have been planted. A target therefore records a server's
:class:`ProcessIdentity` (pid, start time, program, user) and signals a pid only when
the kernel still reports that identity, with the program the target found itself (an
absolute path; never one read from the state file). On Linux the signal goes through a
pidfd, so a pid reused between the check and the signal is not hit. :func:`kill` and
:func:`wait_gone` wait until the process has exited with its files closed (its port
free again), not only until its program can no longer be read: that comes earlier.

A server a trial (re)starts, for a knob that needs a restart, is the study's, not the
trial's: :func:`hand_over` tells Assay so (``ASSAY_HANDOVER``: see
:mod:`assay.execute.proctree`), which would otherwise kill it with the trial's leftover
processes; :func:`server_env` is the environment it starts in, without the trial's
variables.

>>> ident = ProcessIdentity.of(os.getpid())
>>> ident is not None and ident.pid == os.getpid() and ident.uid == os.geteuid()
True
>>> ProcessIdentity.from_json({"pid": "1; rm", "start": 1, "exe": "/x", "uid": 0}) is None
True
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from assay.handover import HANDOVER, MARKER
from assay.handover import hand_over as _hand_over


@dataclass(frozen=True)
class ProcessIdentity:
    """What tells one process apart from a later one with the same pid."""

    pid: int
    start: int  # clock ticks after boot (/proc/PID/stat field 22): unique per pid
    exe: str  # the program it runs (/proc/PID/exe)
    uid: int  # its real user

    @classmethod
    def of(cls, pid: int) -> ProcessIdentity | None:
        """The identity of the live (not zombie) process ``pid``; None when there is none
        or its program cannot be read."""
        if pid <= 0:
            return None
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            exe = os.readlink(f"/proc/{pid}/exe")
            uid = os.stat(f"/proc/{pid}").st_uid
        except (OSError, IndexError):
            return None
        if fields[0] in ("Z", "X"):
            return None
        return cls(pid, int(fields[19]), exe, uid)

    @classmethod
    def from_json(cls, data: object) -> ProcessIdentity | None:
        """Read back :meth:`to_json`; None for anything malformed."""
        if not isinstance(data, Mapping):
            return None
        try:
            pid, start, uid = (int(str(data[k])) for k in ("pid", "start", "uid"))
            return cls(pid, start, str(data["exe"]), uid)
        except (KeyError, ValueError):
            return None

    def to_json(self) -> dict[str, Any]:
        """JSON-able form, for a state file."""
        return {"pid": self.pid, "start": self.start, "exe": self.exe, "uid": self.uid}

    def matches(self, program: str, uid: int) -> bool:
        """Whether this is ``program`` (a path the target found itself) run by ``uid``."""
        return self.uid == uid and self.exe == os.path.realpath(program)

    def is_running(self) -> bool:
        """Whether the kernel still reports exactly this process under its pid."""
        return ProcessIdentity.of(self.pid) == self


def verified(recorded: object, program: str, uid: int) -> ProcessIdentity | None:
    """The process ``recorded`` (a :meth:`ProcessIdentity.to_json` read from a state
    file) when it still runs and is ``program`` run by ``uid``; else None (then it must
    not be signalled)."""
    ident = ProcessIdentity.from_json(recorded)
    if ident is None or not ident.matches(program, uid) or not ident.is_running():
        return None
    return ident


def send_signal(ident: ProcessIdentity, sig: int) -> bool:
    """Signal ``ident`` if it still runs; whether the signal was sent."""
    if not hasattr(os, "pidfd_open"):  # not Linux >= 5.3: check, then signal the pid
        if not ident.is_running():
            return False
        with contextlib.suppress(OSError):
            os.kill(ident.pid, sig)
            return True
        return False
    try:
        fd = os.pidfd_open(ident.pid)
    except OSError:
        return False
    try:
        if not ident.is_running():  # checked after the pidfd pins the process
            return False
        signal.pidfd_send_signal(fd, sig)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def _stat(pid: int) -> tuple[str, int] | None:
    """The state letter and start time (/proc/PID/stat fields 3 and 22) of ``pid``;
    None when no process has it. Readable while a process exits, unlike its exe."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return fields[0], int(fields[19])
    except (OSError, IndexError, ValueError):
        return None


def _exited(ident: ProcessIdentity) -> bool:
    """Whether ``ident`` is gone or about to be waited for: no longer under its pid (the
    pid is free or another process's), or still there but exiting or exited. The full
    identity cannot tell: the exe link goes early in the exit, while the kernel frees
    the memory, before it closes the files (a listening socket among them)."""
    now = ProcessIdentity.of(ident.pid)
    if now is not None:
        return now != ident  # another program, user or start: not the recorded process
    stat = _stat(ident.pid)
    return stat is None or stat[1] != ident.start


def _exited_by_proc(pid: int) -> bool:
    """Whether the process with ``pid`` (checked to be the recorded one) has exited, by
    /proc alone: a zombie (Z) or dead (X) thread group leader whose other threads are
    gone too. A leader can be a zombie while other threads still run and hold its
    files (its main thread ended early)."""
    stat = _stat(pid)
    if stat is None:
        return True
    if stat[0] not in ("Z", "X"):
        return False
    try:
        return len(os.listdir(f"/proc/{pid}/task")) <= 1
    except OSError:
        return True


def wait_gone(ident: ProcessIdentity, timeout: float = 10.0) -> bool:
    """Wait until ``ident`` has exited, its files closed, so that its port is free again
    (reaping it when it is our child); whether it has. A zombie counts as exited."""
    deadline = time.monotonic() + timeout
    try:
        fd: int | None = os.pidfd_open(ident.pid)
    except ProcessLookupError:
        return True  # no process has the pid now: it was reaped
    except (AttributeError, OSError):
        fd = None  # no pidfd (not Linux >= 5.3, or refused): read /proc below
    try:
        if _exited(ident):  # checked after the pidfd pins the process it names
            return True
        if fd is not None:
            # readable once the whole thread group has exited (zombie or reaped)
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            gone = bool(poller.poll(max(0.0, deadline - time.monotonic()) * 1000))
            if gone:  # waitid on the pidfd reaps this process, never a later one
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitid(os.P_PIDFD, fd, os.WEXITED | os.WNOHANG)
            return gone
        while not _exited_by_proc(ident.pid):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(ident.pid, os.WNOHANG)  # unreaped, the pid cannot be reused yet
        return True
    finally:
        if fd is not None:
            os.close(fd)


def kill(ident: ProcessIdentity, timeout: float = 10.0) -> bool:
    """SIGKILL ``ident`` (when it still runs) and wait until it has exited (see
    :func:`wait_gone`); whether it has (False: it outlived ``timeout``, or it runs and
    could not be signalled)."""
    if not send_signal(ident, signal.SIGKILL) and ident.is_running():
        return False  # not ours to signal
    # also when the signal was not sent because the process is exiting already
    return wait_gone(ident, timeout)


def server_env() -> dict[str, str]:
    """The environment to start a server in: this one, less the trial's marker and
    hand-over file (the server is no trial's, and must not write there)."""
    return {k: v for k, v in os.environ.items() if k not in (MARKER, HANDOVER)}


def hand_over(ident: ProcessIdentity) -> bool | None:
    """Hand the server ``ident`` over to Assay's study when a trial (re)started it, so
    that the trial's end spares it; None outside a trial of an Assay that knows the
    protocol (nothing to do), else whether it was told."""
    if not os.environ.get(HANDOVER):
        return None
    return _hand_over(ident.pid, ident.start)


def restart_note(ident: ProcessIdentity, knobs: list[str], handed: bool | None) -> dict[str, Any]:
    """What a state file keeps of a restart during a run (for :func:`gone_after_restart`)."""
    return {"pid": ident.pid, "knobs": sorted(knobs), "handed_over": handed}


def gone_after_restart(server: str, note: object) -> str | None:
    """Why the server a run restarted (``note``: :func:`restart_note`) no longer runs,
    and what to do; None without a note."""
    if not isinstance(note, Mapping):
        return None
    knobs = ", ".join(str(k) for k in note.get("knobs") or []) or "a knob"
    handed = note.get("handed_over")
    if handed is True:
        why = "it was handed over to Assay, so something else stopped it (its log tells)"
    elif handed is False:
        why = "handing it over through ASSAY_HANDOVER failed, so the trial's end killed it"
    else:
        why = (
            "that run could not hand it over (no ASSAY_HANDOVER: an older Assay, or another "
            "harness), so the end of its trial may have killed it as a leftover"
        )
    return (
        f"the {server} server that an earlier run restarted for {knobs} (pid "
        f"{note.get('pid')}) no longer runs: {why}. Run teardown, then setup; run the "
        "trials with this Assay, or put the knobs that need a restart in setup's --knob "
        "baseline"
    )
