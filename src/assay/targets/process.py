"""Server processes a target started, recognised before any signal is sent to them.

A pid written in a state file may since belong to another process (the server died and
the pid was reused) or may have been planted. A target therefore records a server's
:class:`ProcessIdentity` (pid, start time, program, user) and signals a pid only when
the kernel still reports that identity, with the program the target found itself (an
absolute path; never one read from the state file). On Linux the signal goes through a
pidfd, so a pid reused between the check and the signal is not hit.

>>> ident = ProcessIdentity.of(os.getpid())
>>> ident is not None and ident.pid == os.getpid() and ident.uid == os.geteuid()
True
>>> ProcessIdentity.from_json({"pid": "1; rm", "start": 1, "exe": "/x", "uid": 0}) is None
True
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


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


def wait_gone(ident: ProcessIdentity, timeout: float = 10.0) -> bool:
    """Wait until ``ident`` has exited (reaping it when it is our child); whether it has."""
    deadline = time.monotonic() + timeout
    while ident.is_running():
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(ident.pid, os.WNOHANG)
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(ident.pid, os.WNOHANG)
    return True


def kill(ident: ProcessIdentity, timeout: float = 10.0) -> None:
    """SIGKILL ``ident`` (when it still runs) and wait for it to go."""
    if send_signal(ident, signal.SIGKILL):
        wait_gone(ident, timeout)
