"""Reading the kernel's files (/proc, cgroupfs) whole, cheaply.

>>> read_bytes("/proc/self/stat").split()[0].isdigit()
True
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """The whole content of a /proc or cgroup file (``OSError`` when it cannot be read).

    ``os.read`` on a raw descriptor costs half of ``open().read()`` on these, and a
    third of ``Path.read_text``: the bottleneck watch and the process tree read some
    around every trial (issue #17).  Read until the end: a file the kernel makes record
    by record (``cgroup.procs``) comes a page at a time.
    """
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _read_from_start(fd: int) -> bytes:
    """The whole file through ``fd``, from its start: the kernel makes the file anew
    at offset 0, and the reads after it continue where the last one ended, so that the
    pieces are of one making."""
    chunks = []
    pos = 0
    while chunk := os.pread(fd, 1 << 20, pos):
        chunks.append(chunk)
        pos += len(chunk)
    return b"".join(chunks)


class KeptFiles:
    """Kernel files read whole again and again, each through a descriptor kept open.

    An open and a close are half the cost of reading a small /proc or cgroup file
    (~80 -> ~40 us for ``/proc/stat``, ~60 -> ~30 us for ``cgroup.procs``, with the
    caches cold): the bottleneck watch and the process tree read the same few files
    around every trial (issue #17).  Only for a few fixed paths (each keeps a
    descriptor).  A path is read by one thread at a time, and a forked child opens
    its own (a shared descriptor's file position is the parent's too).  A descriptor
    that fails (a cgroup removed) is closed and the path opened once more.

    >>> files = KeptFiles()
    >>> files.read("/proc/meminfo").startswith(b"MemTotal:")
    True
    >>> files.read("/proc/meminfo").startswith(b"MemTotal:")  # read again, from its start
    True
    >>> files.close()
    """

    def __init__(self) -> None:
        self._fds: dict[str, int] = {}
        self._pid = os.getpid()
        self._lock = threading.Lock()
        _all_kept.add(self)

    def _after_fork(self) -> None:
        self._lock = threading.Lock()  # a thread of the parent's may have held it

    def read(self, path: str) -> bytes:
        """The whole content of ``path`` (``OSError`` when it cannot be read)."""
        with self._lock:
            if self._pid != os.getpid():  # forked: the descriptors are the parent's
                self._close_all()
                self._pid = os.getpid()
            fd = self._fds.get(path)
            if fd is not None:
                try:
                    return _read_from_start(fd)
                except OSError:
                    self._close(path)
            fd = self._fds[path] = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                return _read_from_start(fd)
            except OSError:
                self._close(path)
                raise

    def forget(self, prefix: str) -> None:
        """Close the descriptors of the paths in the folder ``prefix`` and below it
        (a cgroup to remove)."""
        folder = prefix.rstrip("/") + "/"
        with self._lock:
            for path in [p for p in self._fds if p.startswith(folder)]:
                self._close(path)

    def close(self) -> None:
        with self._lock:
            self._close_all()

    def _close(self, path: str) -> None:
        fd = self._fds.pop(path, None)
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)

    def _close_all(self) -> None:
        for path in list(self._fds):
            self._close(path)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self._close_all()


_all_kept: weakref.WeakSet[KeptFiles] = weakref.WeakSet()


def _locks_after_fork() -> None:
    for kept in list(_all_kept):
        kept._after_fork()


os.register_at_fork(after_in_child=_locks_after_fork)
