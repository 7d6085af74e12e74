"""Running one command: argv templating, a timeout that kills every process it started,
streamed output and the child's resource usage.

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

import io
import os
import resource
import selectors
import shlex
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, TextIO

from assay.execute.interrupts import deferred, terminate_as_interrupt
from assay.execute.output import Spool
from assay.execute.proctree import MARKER, ProcessTree, new_marker
from assay.template import render

TrialStatus = Literal["ok", "failed", "timeout", "parse_error", "launch_error", "invalid"]

_READ = 256 * 1024  # bytes per read of a pipe
_DRAIN_S = 2.0  # after the kill, how long a pipe may stay open (a writer out of reach)
_POLL_S = 0.01  # without pidfd_open (Linux < 5.3): how often to look for the exit
# poll(2), as subprocess uses: fewer system calls in the timed region than epoll
_Selector = getattr(selectors, "PollSelector", selectors.SelectSelector)


@dataclass(frozen=True)
class CommandResult:
    """What one execution of a command produced.

    ``stdout`` and ``stderr`` are the head and tail the store keeps (at most
    :data:`~assay.store.OUTPUT_CAP` bytes each, with a marker of what was cut);
    :meth:`stdout_stream` reads the whole of stdout, kept in ``output``.
    """

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
    # perf_counter() at the spawn and at the reap: what lies between two trials' stamps
    # is Assay's own cost (see LocalExecutor); None when the command never started
    spawned: float | None = None
    reaped: float | None = None
    # the whole of stdout (memory, then a temporary file): for the readers
    output: Spool | None = field(default=None, repr=False, compare=False)

    def stdout_stream(self) -> TextIO:
        """The whole of stdout as text (UTF-8, bad bytes replaced, line ends as written);
        ``OSError`` when it could not be kept (a full disk)."""
        if self.output is not None:
            return self.output.open_text()
        return io.TextIOWrapper(
            io.BytesIO(self.stdout), encoding="utf-8", errors="replace", newline=""
        )

    def close(self) -> None:
        """Drop the kept stdout (its temporary file); ``stdout`` stays."""
        if self.output is not None:
            self.output.close()


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
    keep_descendants: bool = False,
) -> CommandResult:
    """Run ``argv`` until it exits or ``timeout`` seconds pass, then kill every process
    it started.

    The command runs in a session of its own, its processes held by a cgroup or found
    by a scan (:mod:`assay.execute.proctree`), and carries ``ASSAY_TRIAL`` in its
    environment (``env``'s value if given, else a fresh one).  The command is its first
    process: ``duration`` runs from the spawn to its reap.  When it exits, whatever it
    left running is killed (a trial is over when its command is), unless
    ``keep_descendants`` (a setup step starting a server); then its output is read to
    the end, within the timeout.  At the timeout, or when Assay is interrupted
    (Ctrl-C, SIGTERM, SIGHUP: see :mod:`assay.execute.interrupts`), all are killed.

    Output is streamed, so memory does not grow with it: ``stdout``/``stderr`` are
    capped heads and tails, the whole of stdout is in ``output`` (call ``close()``).

    With ``shell=True`` the argv elements are joined with spaces and run by ``/bin/sh -c``:
    only for users who ask for shell syntax. No ``preexec_fn`` is used: it disables the
    vfork fast path and added 17 ms to every measured launch here (bench/RESULTS.md).
    """
    args = list(argv)
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    full_env[MARKER] = env[MARKER] if env and MARKER in env else new_marker()
    out, err = Spool(keep_all=True), Spool()
    with terminate_as_interrupt():
        tree = ProcessTree(full_env[MARKER], hold=not keep_descendants)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        tree.enter()  # the cgroup, if any: the command is born in it
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
            tree.close()
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
        tree.attach(proc.pid)
        try:
            end, timed_out, after = _follow(proc, tree, out, err, t0 + timeout, keep_descendants)
        except BaseException:
            # Ctrl-C, SIGTERM: never leave the benchmark running behind us; a second
            # signal waits for the clean-up
            with deferred():
                tree.kill()
                _kill_group(proc)
                proc.wait()
                tree.close()
                out.close()
            raise
        finally:
            for pipe in (proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
        tree.close()
    code = proc.returncode
    if timed_out:
        status: TrialStatus = "timeout"
        error = f"timed out after {timeout:g} s; every process it started was killed"
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
        duration=end - t0,
        stdout=out.kept(),
        stderr=err.kept(),
        error=error,
        cpu_user=after.ru_utime - before.ru_utime,
        cpu_system=after.ru_stime - before.ru_stime,
        max_rss_kib=int(after.ru_maxrss),
        spawned=t0,
        reaped=end,
        output=out,
    )


def _follow(
    proc: subprocess.Popen[bytes],
    tree: ProcessTree,
    out: Spool,
    err: Spool,
    deadline: float,
    keep: bool,
) -> tuple[float, bool, resource.struct_rusage]:
    """Read the pipes until the command ends, or the deadline; kill its tree when the
    trial is over; the reap's time, whether it timed out and the children's usage."""
    assert proc.stdout is not None and proc.stderr is not None
    sel = _Selector()
    sel.register(proc.stdout, selectors.EVENT_READ, out)
    sel.register(proc.stderr, selectors.EVENT_READ, err)
    pidfd = _pidfd(proc.pid)
    if pidfd is not None:
        sel.register(pidfd, selectors.EVENT_READ, None)  # readable when the command exits
    pipes = 2
    end: float | None = None
    after: resource.struct_rusage | None = None
    timed_out = False
    drain_until = deadline
    try:
        while end is None or pipes:
            now = time.perf_counter()
            if end is None and now >= deadline:
                timed_out = True
                tree.kill()
                _kill_group(proc)
            elif end is not None and now >= drain_until:
                if not keep or timed_out:
                    break  # a writer out of reach holds a pipe: stop reading it
                timed_out = True  # a kept process still writes at the deadline
                tree.kill()
                drain_until = time.perf_counter() + _DRAIN_S
                continue
            if end is None and (timed_out or (pidfd is None and proc.poll() is not None)):
                exited = True
            else:
                limit = (deadline if end is None else drain_until) - now
                if end is None and pidfd is None:
                    limit = min(limit, _POLL_S)
                exited = False
                for key, _ in sel.select(max(limit, 0.0)):
                    if key.data is None:
                        exited = True
                        continue
                    chunk = os.read(key.fd, _READ)
                    if chunk:
                        key.data.write(chunk)
                    else:
                        sel.unregister(key.fileobj)
                        pipes -= 1
            if exited and end is None:
                proc.wait()
                end = time.perf_counter()
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                if pidfd is not None:
                    sel.unregister(pidfd)
                if not keep:
                    tree.kill()  # the trial is over: nothing it started goes on
                drain_until = deadline if keep and not timed_out else end + _DRAIN_S
    finally:
        sel.close()
        if pidfd is not None:
            os.close(pidfd)
    assert after is not None
    return end, timed_out, after


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _exit_text(code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"killed by {name}"
    return f"exited with status {code}"


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    if proc.returncode is not None:
        return  # reaped: its pid (and group id) may be another's now
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def exec_argv(argv: Sequence[str], shell: bool = False) -> list[str]:
    """The argv the started program sees (what /proc/PID/cmdline will show)."""
    return ["/bin/sh", "-c", " ".join(argv)] if shell else list(argv)
