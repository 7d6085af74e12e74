"""Running one command: argv templating, a timeout that kills the whole process group,
captured output and the child's resource usage.

Parameter values are substituted into each argv element separately, so they reach
the program as literal arguments; no shell sees them unless the user set
``shell = true``.

>>> render_argv(["echo", "{word}"], {"word": "$(touch pwned)"})
['echo', '$(touch pwned)']
>>> r = run_command(["echo", "hi"], timeout=10)
>>> (r.status, r.stdout.strip())
('ok', b'hi')
"""

from __future__ import annotations

import os
import resource
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from assay.template import render

TrialStatus = Literal["ok", "failed", "timeout", "parse_error", "launch_error", "invalid"]


@dataclass(frozen=True)
class CommandResult:
    """What one execution of a command produced."""

    argv: list[str]
    status: TrialStatus
    exit_code: int | None
    started: float  # epoch seconds
    duration: float  # wall seconds, monotonic clock, spawn to reap
    stdout: bytes
    stderr: bytes
    error: str = ""
    cpu_user: float = 0.0
    cpu_system: float = 0.0
    max_rss_kib: int = 0
    extra: dict[str, float] = field(default_factory=dict)


def render_argv(
    argv: Sequence[str], values: Mapping[str, object], *, shell: bool = False
) -> list[str]:
    """Template each argument on its own: a value never splits into several arguments.

    With ``shell=True`` (the words are joined and read by ``/bin/sh``) each value is
    substituted as one quoted word: the user's command is shell syntax, values are data.

    >>> render_argv(["echo", "{v}", "|", "wc"], {"v": "a; rm -rf ~"}, shell=True)
    ['echo', "'a; rm -rf ~'", '|', 'wc']
    """
    quote = shlex.quote if shell else None
    return [render(a, values, quote) for a in argv]


def run_command(
    argv: Sequence[str],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    shell: bool = False,
) -> CommandResult:
    """Run ``argv`` to completion or until ``timeout`` seconds, then kill its process group.

    With ``shell=True`` the argv elements are joined with spaces and run by ``/bin/sh -c``:
    only for users who ask for shell syntax. No ``preexec_fn`` is used: it disables the
    vfork fast path and added 17 ms to every measured launch here (bench/RESULTS.md).
    """
    args = list(argv)
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    # The timeout is a timer thread that kills the process group, started before the
    # clock: communicate(timeout=...) polls waitpid with sleeps from 0.5 ms upwards,
    # which added 1-1.5 ms to every measured launch here (bench/RESULTS.md).
    launched: list[subprocess.Popen[bytes]] = []
    fired = threading.Event()

    def expire() -> None:
        fired.set()
        if launched:
            _kill_group(launched[0])

    timer = threading.Timer(timeout, expire)
    timer.daemon = True
    timer.start()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.time()
    t0 = time.perf_counter()
    try:
        proc = subprocess.Popen(
            " ".join(args) if shell else args,
            shell=shell,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=full_env,
            cwd=cwd,
            start_new_session=True,
        )
    except (OSError, ValueError) as exc:
        timer.cancel()
        return CommandResult(
            argv=args,
            status="launch_error",
            exit_code=None,
            started=started,
            duration=time.perf_counter() - t0,
            stdout=b"",
            stderr=b"",
            error=f"cannot start {args[0]!r}: {exc}",
        )
    launched.append(proc)
    if fired.is_set():  # the timeout passed while the process was being started
        _kill_group(proc)
    try:
        out, err = proc.communicate()
        duration = time.perf_counter() - t0
    except BaseException:
        # KeyboardInterrupt and friends: never leave the benchmark running behind us.
        _kill_group(proc)
        proc.wait()
        raise
    finally:
        timer.cancel()
    timed_out = fired.is_set()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    code = proc.returncode
    if timed_out:
        status: TrialStatus = "timeout"
        error = f"timed out after {timeout:g} s; its process group was killed"
    elif code != 0:
        status = "failed"
        error = _exit_text(code)
    else:
        status = "ok"
        error = ""
    return CommandResult(
        argv=args,
        status=status,
        exit_code=code,
        started=started,
        duration=duration,
        stdout=out,
        stderr=err,
        error=error,
        cpu_user=after.ru_utime - before.ru_utime,
        cpu_system=after.ru_stime - before.ru_stime,
        max_rss_kib=int(after.ru_maxrss),
    )


def _exit_text(code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"killed by {name}"
    return f"exited with status {code}"


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def exec_argv(argv: Sequence[str], shell: bool = False) -> list[str]:
    """The argv the started program sees (what /proc/PID/cmdline will show)."""
    return ["/bin/sh", "-c", " ".join(argv)] if shell else list(argv)


def kill_leftovers(cmdline: Sequence[str], marker: str) -> list[int]:
    """Kill benchmarks left running by a killed Assay: process-group leaders running
    exactly ``cmdline``, whose parent is gone (they were re-parented) and whose
    environment holds ``marker`` (``NAME=value``; the trial's own). Linux only.
    """
    want = [a.encode() for a in cmdline]
    mark = marker.encode()
    killed: list[int] = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = [a for a in f.read().split(b"\0") if a]
            if args != want or os.getpgid(pid) != pid or os.getppid() == _parent_of(pid):
                continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                if mark not in f.read().split(b"\0"):
                    continue
            os.killpg(pid, signal.SIGKILL)
            killed.append(pid)
        except (OSError, ValueError):
            continue
    return killed


def _parent_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])
