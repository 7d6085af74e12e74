"""The ``assay`` command ends without the interpreter's tear-down (issue #17: ~60 ms
a run), as a normal exit otherwise: its status, its flushed output, its exit handlers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from assay.execute import proctree


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(("code", "status"), [("None", 0), ("3", 3), ("256 + 4", 4)])
def test_the_status_the_output_and_the_exit_handlers_are_a_normal_exits(
    code: str, status: int
) -> None:
    done = _python(
        "import atexit, sys\n"
        "from assay.__main__ import exit_now\n"
        "atexit.register(lambda: print('handler ran'))\n"
        "print('out', end='')\n"
        "sys.stderr.write('err')\n"
        f"exit_now({code})\n"
    )
    assert done.returncode == status
    assert done.stdout == "outhandler ran\n"
    assert done.stderr == "err"


def test_a_message_goes_to_stderr_with_status_1() -> None:
    done = _python("from assay.__main__ import exit_now\nexit_now('no such study')\n")
    assert (done.returncode, done.stderr) == (1, "no such study\n")


def test_a_thread_to_wait_for_gets_the_normal_exit() -> None:
    done = _python(
        "import threading, time\n"
        "from assay.__main__ import exit_now\n"
        "threading.Thread(target=lambda: (time.sleep(0.2), print('thread done'))).start()\n"
        "exit_now(2)\n"
    )
    assert (done.returncode, done.stdout) == (2, "thread done\n")


def test_the_command_pipes_its_json_and_removes_its_session_cgroup(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    argv = ["run", "-q", "--no-overhead", "-r", "12", "--json", "-", "--", "true"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "assay", *argv],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = proc.communicate(timeout=120)
    assert proc.returncode in (0, 5), err  # met, or the budget spent first
    assert json.loads(out)["pis"][0]["name"] == "wall_time"
    base = proctree._find_base()
    if base is not None:  # the exit handler removed the session cgroup
        assert not (base / f"assay-{proc.pid}").exists()
