"""The hand-over protocol between a trial and the Assay that runs it (both sides).

A trial's processes are killed when it ends (:mod:`assay.execute.proctree`); one it
hands to a long-lived service (a server it restarted) is spared: the trial writes its
pid, and its start time, as a line in the file ``ASSAY_HANDOVER`` names.  Targets run
as separate programs and import only this module, not Assay's executor.
"""

from __future__ import annotations

import os

#: The environment variable that marks a command's processes as its own.
MARKER = "ASSAY_TRIAL"
#: The environment variable that names a trial's hand-over file (module docstring).
HANDOVER = "ASSAY_HANDOVER"
#: How much of a hand-over file is read: the pids of a few servers fit many times over.
HANDOVER_CAP = 64 * 1024


def hand_over(pid: int, start: int | None = None) -> bool:
    """Hand process ``pid`` (started at ``start``, in clock ticks after boot) over to a
    long-lived service: the trial running this must not kill it at its end (see the
    module docstring).  Whether it could be told: False outside a trial of an Assay
    that knows the protocol (``ASSAY_HANDOVER`` unset), or when its file cannot be
    written."""
    path = os.environ.get(HANDOVER)
    if not path:
        return False
    line = f"{pid}\n" if start is None else f"{pid} {start}\n"
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o600)
        try:
            os.write(fd, line.encode())  # one write of one line: never interleaved
        finally:
            os.close(fd)
    except OSError:
        return False
    return True


def parse_handover(data: bytes) -> dict[int, int | None]:
    """pid -> start time (None where the line has none) from a hand-over file's lines;
    a line that is not one or two positive numbers, or has no end (cut), is ignored.

    >>> parse_handover(b"12 345\\n67\\nx\\n-1\\n8 9 10\\n11")
    {12: 345, 67: None}
    """
    named: dict[int, int | None] = {}
    for line in data.split(b"\n")[:-1]:
        fields = line.split()
        if 1 <= len(fields) <= 2 and all(f.isdigit() and int(f) > 0 for f in fields):
            named[int(fields[0])] = int(fields[1]) if len(fields) == 2 else None
    return named
