from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from assay.execute.command import render_argv, run_command

HOSTILE = ["; rm -rf ~", "$(touch pwned)", "`touch pwned2`", "a b  c", "'\"", "line1\nline2", "*"]


@pytest.mark.parametrize("value", HOSTILE)
def test_values_reach_the_program_as_one_literal_argument(
    value: str, py: str, tmp_path: Path
) -> None:
    argv = render_argv([py, "-c", "import sys; print(repr(sys.argv[1:]))", "{v}"], {"v": value})
    res = run_command(argv, timeout=30, cwd=str(tmp_path))
    assert res.status == "ok"
    assert res.stdout.decode().strip() == repr([value])
    assert not list(tmp_path.iterdir()), "a shell interpreted the value"


def test_nonzero_exit_is_failed_with_cause(py: str) -> None:
    res = run_command([py, "-c", "import sys; sys.exit(3)"], timeout=30)
    assert res.status == "failed"
    assert res.exit_code == 3
    assert "status 3" in res.error


def test_timeout_kills_the_whole_process_group(py: str, tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    script = (
        "import subprocess, sys, time\n"
        f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pidfile)!r}, 'w').write(str(p.pid))\n"
        "time.sleep(60)\n"
    )
    t0 = time.monotonic()
    res = run_command([py, "-c", script], timeout=1.5)
    assert res.status == "timeout"
    assert time.monotonic() - t0 < 20
    child = int(pidfile.read_text())
    time.sleep(0.2)
    assert not _alive(child), "the grandchild survived the timeout"


def _alive(pid: int) -> bool:
    """Running, as opposed to gone or a zombie waiting for a reaper."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def test_missing_program_is_a_launch_error() -> None:
    res = run_command(["/nonexistent/program-xyz"], timeout=5)
    assert res.status == "launch_error"
    assert "program-xyz" in res.error


def test_shell_only_when_asked() -> None:
    res = run_command(["echo", "$((1+2))"], timeout=5, shell=True)
    assert res.stdout.strip() == b"3"
    res = run_command(["echo", "$((1+2))"], timeout=5)
    assert res.stdout.strip() == b"$((1+2))"


def test_env_and_wall_time(py: str) -> None:
    res = run_command(
        [py, "-c", "import os,time; time.sleep(0.2); print(os.environ['X'])"],
        timeout=10,
        env={"X": "42"},
    )
    assert res.stdout.strip() == b"42"
    assert 0.2 <= res.duration < 5


def test_benchmark_dies_with_a_killed_assay(py: str, tmp_path: Path) -> None:
    import signal
    import subprocess

    pidfile = tmp_path / "bench.pid"
    bench = f"import os, time; open({str(pidfile)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    parent = subprocess.Popen(
        [
            py,
            "-c",
            f"from assay.execute.command import run_command; "
            f"run_command([{py!r}, '-c', {bench!r}], timeout=120)",
        ]
    )
    deadline = time.monotonic() + 20
    while not pidfile.exists() or not pidfile.read_text():
        assert time.monotonic() < deadline, "the benchmark never started"
        time.sleep(0.05)
    child = int(pidfile.read_text())
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child), "the benchmark outlived the killed assay process"
