"""The running-benchmark note: a benchmark left running by a killed Assay is stopped.

Before a session's first trial the executor writes the benchmark's command line, its
own pid and a random session marker to a per-study file beside the store; every trial
of the session starts with that marker and one of its own in its environment
(``ASSAY_TRIAL=SESSION.TRIAL``); when the session ends the study removes the file
(:func:`end_running`).  When the next session of the study finds the file and its writer
is gone (SIGKILL, power cut), it kills every process that carries the session's marker,
and all below them: the benchmark and the children it put in sessions of their own,
never another study's benchmark that happens to run the same command.  One note per
session, not per trial: writing and removing it cost ~0.2 ms between two trials of a
50 ms command (issue #17), and a killed session is found the same way.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
from collections.abc import Sequence
from pathlib import Path

import psutil

from assay.errors import StudyError
from assay.execute.command import exec_argv
from assay.execute.proctree import kill_marked, new_marker
from assay.privatefs import read_private, write_private
from assay.store import os_error_hint

#: Between a session's marker and a trial's part (markers are hex).
TRIAL_SEP = "."
#: per process and note: the marker of the session it names and its trials' numbers (a
#: forked worker has none)
_sessions: dict[tuple[int, Path], tuple[str, itertools.count[int]]] = {}


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
    note = {"cmdline": exec_argv(argv, shell), "pid": os.getpid(), "marker": marker}
    try:
        # a fresh file renamed into place: a link planted at the note's name is replaced,
        # never written through
        write_private(path, json.dumps(note).encode())
    except OSError as exc:  # a full disk, a read-only folder: no benchmark unaccounted for
        raise StudyError(
            f"{path}: cannot note the benchmark about to run: {exc.strerror or exc}"
            f"{os_error_hint(exc, path.parent)}"
        ) from None


def trial_marker(path: Path, argv: Sequence[str], shell: bool) -> str:
    """The marker of a trial of the study whose note is ``path``: its session's marker
    and a part of its own.  The session's first trial writes the note (a
    :class:`~assay.errors.StudyError` when it cannot); the note stays until
    :func:`end_running`."""
    key = (os.getpid(), path)
    got = _sessions.get(key)
    if got is None:
        session = new_marker()
        note_running(path, argv, shell, session)
        got = _sessions[key] = (session, itertools.count())
    # unique within the session is enough: the session's part cannot be guessed
    return f"{got[0]}{TRIAL_SEP}{next(got[1])}"


def end_running(path: Path) -> None:
    """The session's trials are over (or never started): remove its note."""
    _sessions.pop((os.getpid(), path), None)
    clear_running(path)


def clear_running(path: Path) -> None:
    """The benchmark ended: forget it.  A note that cannot be removed (the folder went
    read-only) stays for the next session, which finds its writer gone and its
    benchmark ended: it must not hide how the trial ended."""
    with contextlib.suppress(OSError):
        path.unlink(missing_ok=True)


def stop_leftover(path: Path) -> str | None:
    """Kill the benchmark a killed session left running; a warning saying so, or None."""
    text = read_private(path)  # this user's own note only: not a link, not another's
    try:
        info = json.loads(text) if text is not None else None
    except ValueError:
        return None
    if not isinstance(info, dict) or _alive(info.get("pid")):
        # its session still runs (the study's lock will refuse us): not a leftover
        return None
    end_running(path)
    marker = info.get("marker")
    if not isinstance(marker, str) or not marker:
        return None  # a note without a marker: argv alone could name another's benchmark
    # the session's marker, and each trial's below it (an older version's note: the
    # trial's own marker)
    killed = kill_marked(marker, below=TRIAL_SEP)
    if killed:
        return (
            "stopped a benchmark left running by an interrupted session "
            f"(pid {', '.join(map(str, killed))})"
        )
    return None
