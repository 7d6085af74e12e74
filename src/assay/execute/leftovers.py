"""The running-benchmark note: a benchmark left running by a killed Assay is stopped.

Before each trial the executor writes the benchmark's command line, its own pid and a
random marker to a per-study file beside the store, and starts the benchmark with the
marker in its environment (``ASSAY_TRIAL``); after the trial it removes the file.  When
the next session of the study finds the file and its writer is gone (SIGKILL, power
cut), it kills every process that carries that marker, and all below them: the
benchmark and the children it put in sessions of their own, never another study's
benchmark that happens to run the same command.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Sequence
from pathlib import Path

import psutil

from assay.errors import StudyError
from assay.execute.command import exec_argv
from assay.execute.proctree import kill_marked
from assay.store import os_error_hint


def _alive(pid: object) -> bool:
    """Whether ``pid`` (another process's) is running; a zombie does not count."""
    if isinstance(pid, bool) or not isinstance(pid, int) or pid == os.getpid():
        return False
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def note_running(path: Path, argv: Sequence[str], shell: bool, marker: str) -> None:
    """Note the benchmark about to run (started with ``ASSAY_TRIAL=marker``), so a later
    session can stop it if we are killed.

    Written before the launch (atomically): nothing is added to the measured wall time.
    """
    tmp = path.with_name(path.name + ".tmp")
    note = {"cmdline": exec_argv(argv, shell), "pid": os.getpid(), "marker": marker}
    try:
        tmp.write_text(json.dumps(note))
        os.replace(tmp, path)
    except OSError as exc:  # a full disk, a read-only folder: no benchmark unaccounted for
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise StudyError(
            f"{path}: cannot note the benchmark about to run: {exc.strerror or exc}"
            f"{os_error_hint(exc, path.parent)}"
        ) from None


def clear_running(path: Path) -> None:
    """The benchmark ended: forget it.  A note that cannot be removed (the folder went
    read-only) stays for the next session, which finds its writer gone and its
    benchmark ended: it must not hide how the trial ended."""
    with contextlib.suppress(OSError):
        path.unlink(missing_ok=True)


def stop_leftover(path: Path) -> str | None:
    """Kill the benchmark a killed session left running; a warning saying so, or None."""
    try:
        info = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict) or _alive(info.get("pid")):
        # its session still runs (the study's lock will refuse us): not a leftover
        return None
    clear_running(path)
    marker = info.get("marker")
    if not isinstance(marker, str) or not marker:
        return None  # a note without a marker: argv alone could name another's benchmark
    killed = kill_marked(marker)
    if killed:
        return (
            "stopped a benchmark left running by an interrupted session "
            f"(pid {', '.join(map(str, killed))})"
        )
    return None
