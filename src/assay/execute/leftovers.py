"""The running-benchmark note: a benchmark left running by a killed Assay is stopped.

Before each trial the executor writes the benchmark's command line and its own pid to
a per-study file beside the store; after the trial it removes it.  When the next
session of the study finds the file and its writer is gone (SIGKILL, power cut), it
kills the process groups that still run exactly that command line.
"""

from __future__ import annotations

import json
import os
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


def note_running(path: Path, argv: Sequence[str], shell: bool) -> None:
    """Note the benchmark about to run, so a later session can stop it if we are killed.

    Written before the launch (atomically): nothing is added to the measured wall time.
    """
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"cmdline": exec_argv(argv, shell), "pid": os.getpid()}))
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
    killed = kill_leftovers(list(info["cmdline"]))
    if killed:
        return (
            "stopped a benchmark left running by an interrupted session "
            f"(pid {', '.join(map(str, killed))})"
        )
    return None
