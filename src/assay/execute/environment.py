"""What machine and software a study ran on, stored with every session.

>>> env = collect_environment()
>>> sorted(k for k in env if k in ("host", "python", "assay"))
['assay', 'host', 'python']
"""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path
from typing import Any

from assay._version import __version__


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity), not the machine's total."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def git_revision(repo: str | Path) -> str | None:
    """The checked-out revision of the measured system, with '+dirty' if it has changes."""
    try:
        rev = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return rev + ("+dirty" if dirty else "")


def collect_environment(git_repo: str | Path | None = None) -> dict[str, Any]:
    """Host, CPU, kernel, Python and Assay versions, and the measured system's git revision."""
    uname = platform.uname()
    env: dict[str, Any] = {
        "host": uname.node,
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "kernel": f"{uname.system} {uname.release}",
        "machine": uname.machine,
        "python": platform.python_version(),
        "assay": __version__,
    }
    try:
        import psutil

        env["memory_bytes"] = int(psutil.virtual_memory().total)
        freq = psutil.cpu_freq()
        if freq is not None:
            env["cpu_freq_mhz"] = float(freq.current)
    except Exception:
        pass
    if git_repo is not None:
        env["git_repo"] = str(git_repo)
        env["git_revision"] = git_revision(git_repo)
    return env
