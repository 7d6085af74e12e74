"""Reading a file someone names (a study file, a CSV for ``--from``, a PI's file) with
bounds: a regular file of at most a given size, read at once or refused.

A FIFO would block the read for ever (the open waits for a writer that never comes),
``/dev/zero`` or a sparse file of a terabyte would fill the memory: the open does not
block (``O_NONBLOCK``), ``fstat`` on the opened descriptor must say "regular file" (so
no name can be swapped between a look and the read), and more than ``cap`` bytes is
an error, not the first ``cap`` of them.  A link to a regular file is followed.

>>> import tempfile, os
>>> p = os.path.join(tempfile.mkdtemp(), "a.txt")
>>> _ = open(p, "w").write("hi")
>>> read_bounded(p, 10)
b'hi'
>>> read_bounded("/dev/null", 10)
Traceback (most recent call last):
assay.inputfile.InputFileError: is a character device; expected a regular file
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

_KINDS = {
    stat.S_IFDIR: "a folder",
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


class InputFileError(OSError):
    """Why a named file cannot be read, in words that follow its name: "is a folder;
    expected a regular file", "is larger than 16 MiB", "cannot be read: no such file"."""


def read_bounded(path: str | Path, cap: int) -> bytes:
    """The bytes of the regular file at ``path``, at most ``cap`` of them, or an
    :class:`InputFileError` saying why not."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise InputFileError(f"cannot be read: {(exc.strerror or str(exc)).lower()}") from None
    except ValueError as exc:  # a NUL in the name
        raise InputFileError(f"cannot be read: {exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = _KINDS.get(stat.S_IFMT(st.st_mode), "not a regular file")
            raise InputFileError(f"is {kind}; expected a regular file")
        data = b""
        if st.st_size <= cap:
            with open(fd, "rb", closefd=False) as f:
                data = f.read(cap + 1)  # one byte past the cap: it may have grown
    except InputFileError:
        raise
    except OSError as exc:
        raise InputFileError(f"cannot be read: {(exc.strerror or str(exc)).lower()}") from None
    finally:
        os.close(fd)
    if st.st_size > cap or len(data) > cap:
        size = f"{cap >> 20} MiB" if cap >= 1 << 20 else f"{cap} bytes"
        raise InputFileError(f"is larger than {size}, the most read from such a file")
    return data


_KERNEL_DIRS = ("/proc", "/sys")  # not /dev: /dev/shm holds benchmarks' files


def is_kernel_path(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` (absolute) lies under /proc or /sys: the kernel's files,
    never a benchmark's result (a PI read from /proc/self/environ would store Assay's
    environment).

    >>> is_kernel_path("/proc/self/environ"), is_kernel_path("/tmp/proc/x")
    (True, False)
    """
    text = os.path.normpath(os.fspath(path))
    return any(text == d or text.startswith(d + "/") for d in _KERNEL_DIRS)
