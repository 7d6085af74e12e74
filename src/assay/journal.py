"""A study's journal: trials written ahead of their commit, one JSON line each.

A SQLite transaction per trial cost 0.2-0.4 ms between two 50 ms commands here (the
caches are cold by then: bench/RESULTS.md), a quarter of Assay's own cost between
trials.  A journal line is one ``write(2)``: when it returns the line is in the OS's
page cache, so a killed Assay (SIGKILL, a crash) loses nothing, as with a commit.
:class:`assay.store.Store` commits the lines in batches and reads them back after a
kill; this module only keeps the file: created for its owner alone (``0600``, never
through a link), appended whole, read line by line (a line cut short by a kill or a
full disk is skipped), emptied after a commit and removed at the end.

>>> import tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "s.pending")
>>> j = Journal.create(path)
>>> j.append({"seq": 0})  # bytes written: '{"seq":0}' and a newline
10
>>> j.append({"seq": 1})
10
>>> read_lines(path)
[{'seq': 0}, {'seq': 1}]
>>> j.clear(); read_lines(path)
[]
>>> j.close(); os.path.exists(path)
False
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

#: The most of a journal read back (bytes): its writer commits what it holds long before
#: (:data:`assay.store.COMMIT_BYTES`).
READ_CAP = 256 * 1024 * 1024


class Journal:
    """An open journal file, appended to by one process (the study's lock holder)."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self.fd = fd

    @classmethod
    def create(cls, path: str | Path) -> Journal:
        """A new, empty journal at ``path``; raises OSError where one already exists
        (the caller reads and removes an old one first) or none can be made."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC
        fd = os.open(path, flags | os.O_NOFOLLOW, 0o600)
        return cls(Path(path), fd)

    def append(self, record: dict[str, Any]) -> int:
        """Write ``record`` as one line; its length in bytes.  Raises OSError (a full
        disk) having written part of it at most: the caller then commits what the
        journal holds and :meth:`clear` s it; a reader skips the partial line meanwhile."""
        data = (json.dumps(record, separators=(",", ":")) + "\n").encode()
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]
        return len(data)

    def clear(self) -> None:
        """Empty the journal (its lines are committed)."""
        os.ftruncate(self.fd, 0)

    def sync(self) -> None:
        """fsync the journal: its lines survive a power loss from now on."""
        os.fsync(self.fd)

    def close(self) -> None:
        """Close and remove the journal (call when its lines are committed)."""
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        with contextlib.suppress(OSError):
            os.close(self.fd)


def read_lines(path: str | Path) -> list[dict[str, Any]]:
    """The whole lines of the journal at ``path`` that are JSON objects, in order;
    ``[]`` when there is no journal (never follows a link)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return []
    chunks: list[bytes] = []
    size = 0
    try:
        while size < READ_CAP:
            data = os.read(fd, READ_CAP - size)
            if not data:
                break
            chunks.append(data)
            size += len(data)
    except OSError:
        return []
    finally:
        os.close(fd)
    out: list[dict[str, Any]] = []
    for line in b"".join(chunks).split(b"\n")[:-1]:  # the last piece has no newline yet
        try:
            value = json.loads(line)
        except ValueError:
            continue  # cut short by a kill or a full disk
        if isinstance(value, dict):
            out.append(value)
    return out
