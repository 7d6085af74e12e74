"""The command's own peak memory: a small spawner, built once per user, and its pace.

A command started from Python reads Python's peak as its own: at the exec the kernel
keeps the old address space's high-water mark (``exec_mmap``), and with vfork that
space is Assay's (55 MB for every ``sleep 0.01``; ``/usr/bin/time -v`` says 1.7 MB).
:file:`peak_spawner.c` starts the command as ``time`` does, from a small static process,
but as a child of Assay's (``CLONE_PARENT``): Assay reaps it, with the usage and peak
that are its own (issue #35).

The spawner is compiled with the system's C compiler the first time it is needed and
kept in ``$XDG_CACHE_HOME/assay/bin`` (mode 0700; a file of this user that no one else
can change, else it is not run).  Without a compiler the command is launched directly,
and its peak is reported only when it is above Assay's own (``None`` otherwise).

Its launch costs ~0.4 ms more than a direct one, so a command's trials go through it
within a budget: the first trial of each command, then any trial that keeps the
spawner's whole cost within :data:`BUDGET` of the commands' time (every trial of a
50 ms command; one in ~60 of ``true``).

>>> pace = PeakPace()
>>> pace.wants(("true",))  # a command's first trial
True
>>> pace.record(duration=0.001, cost=0.0005)  # 1 ms, and the spawner's 0.5 ms
>>> pace.wants(("true",)), pace.wants(("sleep", "1"))  # over 1%; a new command
(False, True)
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform
import shutil
import stat
import subprocess
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from assay.privatefs import UnsafePathError, check_trusted_dir

#: The spawner's cost kept within this share of the commands' time.
BUDGET = 0.01
_SOURCE = "peak_spawner.c"
_KEYS = 4096  # commands paced at once (a sweep's settings are each a command)
_COMPILE_S = 60.0


@dataclass(frozen=True)
class SpawnReport:
    """What the spawner reported: the command's pid and its ``perf_counter`` time
    just before the clone, and ``exec_errno`` when its exec failed."""

    pid: int | None = None
    t0: float = 0.0
    exec_errno: int | None = None


def parse_report(data: bytes) -> SpawnReport:
    """The spawner's report (empty when it had none: killed before it wrote one).

    >>> parse_report(b"P 4242 5 250000000\\n")
    SpawnReport(pid=4242, t0=5.25, exec_errno=None)
    >>> parse_report(b"P 4242 5 250000000\\nE 13\\n").exec_errno, parse_report(b"")
    (13, SpawnReport(pid=None, t0=0.0, exec_errno=None))
    """
    pid, t0, errno = None, 0.0, None
    for line in data.decode("ascii", "replace").splitlines():
        words = line.split()
        with contextlib.suppress(ValueError):
            if words[:1] == ["E"] and len(words) == 2:
                errno = int(words[1])
            elif words[:1] == ["P"] and len(words) == 4:
                pid, t0 = int(words[1]), int(words[2]) + int(words[3]) * 1e-9
    return SpawnReport(pid, t0, errno)


class PeakPace:
    """Which trials go through the spawner: the first of each command, then those that
    keep the spawner's whole cost within :data:`BUDGET` of the commands' time."""

    def __init__(self, budget: float = BUDGET) -> None:
        self.budget = budget
        self.seen: dict[object, None] = {}  # commands met, oldest first
        self.spent = 0.0  # the spawner's cost so far (s)
        self.commands = 0.0  # the commands' time so far (s)
        self.cost = 0.5e-3  # the last spawned trial's cost (s; here, ~0.4 ms)

    def wants(self, key: object) -> bool:
        """Whether the next trial of command ``key`` goes through the spawner."""
        if key not in self.seen:
            self.seen[key] = None
            if len(self.seen) > _KEYS:
                del self.seen[next(iter(self.seen))]
            return True
        return self.spent + self.cost <= self.budget * self.commands

    def record(self, duration: float, cost: float | None) -> None:
        """A trial's ``duration`` and, when it went through the spawner, the spawner's
        ``cost`` (the launch's wall time less the command's)."""
        self.commands += max(duration, 0.0)
        if cost is not None:
            self.cost = max(cost, 0.0)
            self.spent += self.cost


#: The process's pace (a Dask worker's trials share theirs).
PACE = PeakPace()

_built: dict[str, str | None] = {}


def spawner() -> str | None:
    """The spawner's path, built on the first call; None when it cannot be (no C
    compiler, no home, a directory others may change) or could not be run."""
    if "path" not in _built:
        _built["path"] = _build()
    return _built["path"]


def forget_spawner() -> None:
    """Launch directly from now on: the spawner could not be run (a noexec home)."""
    _built["path"] = None


def _cache_dir() -> Path | None:
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    try:
        base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache"
    except RuntimeError:  # no HOME and no password entry
        return None
    return base / "assay" / "bin"


def _build() -> str | None:
    folder = _cache_dir()
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    try:
        source = resources.files("assay.execute").joinpath(_SOURCE).read_bytes()
    except OSError:
        return None
    if folder is None:
        return None
    digest = hashlib.sha256(source + platform.machine().encode()).hexdigest()[:16]
    path = folder / f"assay-peak-{digest}"
    if _trusted(path):
        return str(path)
    if cc is None:
        return None
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _trusted_dir(folder):
            return None
        with tempfile.TemporaryDirectory(dir=folder) as work:
            src = Path(work) / _SOURCE
            src.write_bytes(source)
            out = Path(work) / "assay-peak"
            for flags in (["-static"], []):  # static: its own pages only, a faster exec
                done = subprocess.run(
                    [cc, "-O2", *flags, "-o", str(out), str(src)],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    timeout=_COMPILE_S,
                    check=False,
                )
                if done.returncode == 0:
                    break
            else:
                return None
            out.chmod(0o700)
            os.replace(out, path)
    except (OSError, subprocess.SubprocessError):
        return None
    return str(path) if _trusted(path) else None


def _trusted(path: Path) -> bool:
    """Whether ``path`` is a regular file of this user that no one else may change, in
    a directory of this user's that no one else may enter, under directories no other
    user may rename entries in."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    mine = st.st_uid == os.geteuid() and not st.st_mode & 0o022
    return stat.S_ISREG(st.st_mode) and mine and _trusted_dir(path.parent)


def _trusted_dir(folder: Path) -> bool:
    try:
        st = os.lstat(folder)
        check_trusted_dir(folder, "the spawner's directory", "")
    except (OSError, UnsafePathError):
        return False
    return st.st_uid == os.geteuid() and not st.st_mode & 0o077
