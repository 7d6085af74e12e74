"""The running-benchmark note: a benchmark left running by a killed Assay is stopped.

Before each trial the executor writes the benchmark's command line, its own pid and a
random marker to a per-study file beside the store, and starts the benchmark with the
marker in its environment (``ASSAY_TRIAL``); after the trial it removes the file.  When
the next session of the study finds the file and its writer is gone (SIGKILL, power
cut), it kills the process groups that run exactly that command line AND carry that
marker: never another study's benchmark that happens to run the same command.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Sequence
from pathlib import Path

import psutil

from assay.execute.command import exec_argv, kill_leftovers


def _alive(pid: object) -> bool:
    """Whether ``pid`` (another process's) is running; a zombie does not count."""
    if isinstance(pid, bool) or not isinstance(pid, int) or pid == os.getpid():
        return False
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


#: The environment variable that marks a benchmark as this trial's.
MARKER = "ASSAY_TRIAL"


def new_marker() -> str:
    """A marker no other trial has."""
    return secrets.token_hex(12)


def note_running(path: Path, argv: Sequence[str], shell: bool, marker: str) -> None:
    """Note the benchmark about to run (started with ``ASSAY_TRIAL=marker``), so a later
    session can stop it if we are killed.

    Written before the launch (atomically): nothing is added to the measured wall time.
    """
    tmp = path.with_name(path.name + ".tmp")
    note = {"cmdline": exec_argv(argv, shell), "pid": os.getpid(), "marker": marker}
    tmp.write_text(json.dumps(note))
    os.replace(tmp, path)


def clear_running(path: Path) -> None:
    """The benchmark ended: forget it."""
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
    killed = kill_leftovers(list(info["cmdline"]), f"{MARKER}={marker}")
    if killed:
        return (
            "stopped a benchmark left running by an interrupted session "
            f"(pid {', '.join(map(str, killed))})"
        )
    return None
