from __future__ import annotations

import json
import os
import signal
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


def test_a_benchmark_left_by_a_killed_assay_is_stopped_on_resume(
    write_study,
    py: str,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    import signal
    import subprocess
    import sys

    pidfile = tmp_path / "bench.pid"
    quick = tmp_path / "quick"  # once it exists, the benchmark no longer sleeps
    code = (
        "import os, sys, time\n"
        "open(sys.argv[1], 'w').write(str(os.getpid()))\n"
        "time.sleep(0 if os.path.exists(sys.argv[2]) else 60)\n"
    )
    study = write_study(f"""
[study]
name = "orphan"
[benchmark]
command = ["{py}", "-c", {json.dumps(code)}, "{{pidfile}}", "{{quick}}"]
[params]
pidfile = "{pidfile}"
quick = "{quick}"
[stop]
max_rounds = 1
""")
    assay = subprocess.Popen(
        [sys.executable, "-m", "assay", "run", str(study), "-q", "--no-overhead"]
    )
    deadline = time.monotonic() + 30
    while not pidfile.exists() or not pidfile.read_text():
        assert time.monotonic() < deadline, "the benchmark never started"
        time.sleep(0.05)
    bench = int(pidfile.read_text())
    assay.send_signal(signal.SIGKILL)
    assay.wait()
    assert _alive(bench)  # SIGKILL cannot be caught: the benchmark outlives assay...
    quick.touch()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "assay",
            "run",
            str(study),
            "-q",
            "--no-overhead",
            "--max-rounds",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    time.sleep(0.2)
    assert not _alive(bench)  # ...until the study resumes
    assert "left running by an interrupted session" in proc.stdout


def test_a_resume_never_stops_another_studys_benchmark(
    write_study,
    py: str,
    tmp_path: Path,  # type: ignore[no-untyped-def]
    sigint: None,
) -> None:
    """Issue #13, item 4: a leftover was found by its command line alone, so resuming
    study B killed study A's running trial when both ran the same command."""
    import signal
    import subprocess
    import sys

    from assay.store import study_file

    pidfile = tmp_path / "a.pid"
    code = (
        "import os, sys, time\n"
        f"open({str(pidfile)!r}, 'w').write(str(os.getpid()))\n"
        "time.sleep(60)\n"
    )
    a = write_study(
        f'[study]\nname = "a"\n[benchmark]\ncommand = ["{py}", "-c", {json.dumps(code)}]\n'
        "timeout = 120\n[stop]\nmax_rounds = 1\n",
        "a.toml",
    )
    b = write_study(
        '[study]\nname = "b"\n[benchmark]\ncommand = ["true"]\n[stop]\nmax_rounds = 1\n',
        "b.toml",
    )
    # B was killed while running the very command A runs now: its note names that
    # command line, a writer that is gone, and B's own marker
    note = study_file(tmp_path / "b.assay.db", "b", ".running")
    dead = subprocess.Popen(["true"])
    dead.wait()
    note.write_text(
        json.dumps({"cmdline": [py, "-c", code], "pid": dead.pid, "marker": "b0b0b0b0"})
    )
    runner_a = subprocess.Popen([sys.executable, "-m", "assay", "run", str(a), "-q"])
    try:
        deadline = time.monotonic() + 30
        while not pidfile.exists() or not pidfile.read_text():
            assert time.monotonic() < deadline, "A's benchmark never started"
            time.sleep(0.05)
        bench = int(pidfile.read_text())
        proc = subprocess.run(
            [sys.executable, "-m", "assay", "run", str(b), "-q", "--no-overhead"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        # 5: B's one round ran out before its CI target (exit statuses, issue #14)
        assert proc.returncode in (0, 5), proc.stderr
        time.sleep(0.2)
        assert _alive(bench), "resuming B killed A's benchmark"
        assert "left running" not in proc.stdout
    finally:
        runner_a.send_signal(signal.SIGINT)
        runner_a.wait(timeout=60)


# --- the launch (issue #17: posix_spawn, everything made before the clock starts) ------


def test_the_command_inherits_no_descriptor_of_assay() -> None:
    """An inheritable descriptor of Assay's (one its own parent passed on) is closed in
    the command, as Popen's close_fds did: posix_spawn alone would pass it on."""
    r, w = os.pipe()
    high = os.dup2(w, 200, inheritable=True)
    try:
        res = run_command(["ls", "/proc/self/fd"], timeout=10)
    finally:
        for fd in (r, w, high):
            os.close(fd)
    assert res.status == "ok", res.error
    fds = {int(x) for x in res.stdout.split()}
    assert 200 not in fds
    assert {0, 1, 2} <= fds


def test_signals_python_ignores_are_default_in_the_command() -> None:
    """Python ignores SIGPIPE and SIGXFSZ; a command must not inherit that (``yes |
    head`` would print 'Broken pipe' errors and go on)."""
    res = run_command(["grep", "SigIgn", "/proc/self/status"], timeout=10)
    assert res.status == "ok", res.error
    ignored = int(res.stdout.split()[1], 16)
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        assert not ignored & (1 << (sig - 1)), f"{sig.name} ignored in the command"


def test_max_rss_is_the_commands_own(py: str) -> None:
    """The peak memory is the command's (wait4), not the largest of every command Assay
    ran so far (getrusage(RUSAGE_CHILDREN) keeps that maximum).  (A vfork'd command's
    peak is at least Assay's own at the spawn: the kernel records the shared address
    space's peak at the exec, so the big command allocates 300 MB above this process's
    own peak: in a long test session that peak passed 300 MB.)"""
    import resource

    own_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    size_mib = own_mib + 300
    big = run_command([py, "-c", f"x = b'x' * ({size_mib} << 20)"], timeout=60)
    small = run_command(["true"], timeout=10)
    assert big.status == small.status == "ok"
    assert big.max_rss_kib is not None and big.max_rss_kib > (size_mib - 50) * 1024
    # a command smaller than Assay: unknown (NULL), never Assay's own size (#35)
    assert small.max_rss_kib is None


def test_the_program_is_found_on_the_commands_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command's PATH (its ``env``) finds the program, as Popen's lookup did; a bare
    name is never a file of the working directory's."""
    (tmp_path / "mybench").write_text("#!/bin/sh\necho found\n")
    (tmp_path / "mybench").chmod(0o755)
    res = run_command(["mybench"], timeout=10, env={"PATH": f"{tmp_path}:/usr/bin:/bin"})
    assert (res.status, res.stdout) == ("ok", b"found\n")
    monkeypatch.chdir(tmp_path)
    res = run_command(["mybench"], timeout=10)
    assert res.status == "launch_error" and "mybench" in res.error
    assert run_command(["./mybench"], timeout=10).stdout == b"found\n"


def test_a_working_directory_that_does_not_exist_is_a_launch_error(tmp_path: Path) -> None:
    res = run_command(["pwd"], timeout=10, cwd=str(tmp_path))
    assert (res.status, res.stdout) == ("ok", f"{tmp_path}\n".encode())
    res = run_command(["pwd"], timeout=10, cwd=str(tmp_path / "gone"))
    assert res.status == "launch_error" and "gone" in res.error


def test_the_timed_region_is_the_commands_life() -> None:
    """``duration`` is the span between the spawn and reap stamps (Assay's own cost is
    what lies between two trials' stamps)."""
    res = run_command(["true"], timeout=10)
    assert res.spawned is not None and res.reaped is not None
    assert res.duration == res.reaped - res.spawned > 0


def test_the_command_leads_a_process_group_of_its_own_in_assays_session() -> None:
    """Issue #45: each trial in a session of its own was, with the scheduler's autogroup
    (on in Debian's and Ubuntu's kernels), a new task group per trial, and a busy
    machine's trials took a scheduler tick (4 ms) longer than hyperfine's.  The command
    leads its own process group (what the kill and Ctrl-C rely on), in Assay's session."""
    res = run_command(["cat", "/proc/self/stat"], timeout=10)
    assert res.status == "ok", res.error
    fields = res.stdout.decode().rsplit(")", 1)[1].split()
    pid = int(res.stdout.decode().split()[0])
    pgrp, session = int(fields[2]), int(fields[3])
    assert pgrp == pid
    assert session == os.getsid(0)


_IN_A_TERMINAL = """
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:  # a session with the pty as its terminal, as an interactive shell's
    from assay.execute.command import run_command
    r = run_command(sys.argv[2:], timeout=120, peak=sys.argv[1] == "peak")
    print("RESULT", r.status, round(r.duration), r.error, flush=True)
    os._exit(0)
out = b""
while True:
    try:
        chunk = os.read(fd, 4096)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors="replace"))
"""


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["python3", "-c", "open('/dev/tty').read()"], "SIGTTIN: it read or wrote the terminal"),
        (
            # a descendant's read stops the whole process group, the leader with it
            ["sh", "-c", "python3 -c 'open(\"/dev/tty\").read()'; true"],
            "SIGTTIN: it read or wrote the terminal",
        ),
    ],
    ids=["leader", "descendant"],
)
@pytest.mark.parametrize("launch", ["direct", "peak"])
def test_a_command_that_reads_the_terminal_fails_at_once_instead_of_waiting_stopped(
    argv: list[str], said: str, launch: str
) -> None:
    """In its own process group (#45), a command that reads the terminal of an
    interactive Assay is stopped by SIGTTIN; it would sit stopped until its timeout
    (600 s by default).  The trial ends within seconds, saying why."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _IN_A_TERMINAL, launch, *argv],
        capture_output=True,
        text=True,
        timeout=100,
    )
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT")), done.stdout)
    assert line.startswith("RESULT failed"), line
    assert said in line and "stopped by job control" in line, line
    assert int(line.split()[2]) < 60  # seconds, against the 120 s timeout


@pytest.mark.parametrize("peak", [False, True])
def test_a_working_directory_that_does_not_exist_is_named(tmp_path: Path, peak: bool) -> None:
    """A cluster host without the study's folder: the error names the folder, not a
    missing program."""
    gone = str(tmp_path / "not-here")
    res = run_command(["true"], timeout=10, cwd=gone, peak=peak)
    assert res.status == "launch_error"
    assert (
        res.error
        == f"cannot start 'true': its working directory {gone!r} does not exist on this host"
    )
