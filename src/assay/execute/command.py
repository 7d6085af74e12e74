"""Running one command: argv templating, a timeout that kills every process it started,
streamed output and the child's resource usage.

Parameter values are substituted into each argv element separately, so they reach
the program as literal arguments; with ``shell = true`` the shell reads them only as
quoted variable assignments Assay writes (:func:`render_argv`), never inside the
user's own quotes.

>>> render_argv(["echo", "{word}"], {"word": "$(touch pwned)"})
['echo', '$(touch pwned)']
>>> r = run_command(["echo", "hi"], timeout=10)
>>> (r.status, r.stdout.strip())
('ok', b'hi')
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import gc
import io
import os
import resource
import selectors
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TextIO

from assay.errors import StudyError
from assay.execute.interrupts import deferred, terminate_as_interrupt
from assay.execute.output import Spool
from assay.execute.peak import forget_spawner, parse_report, spawner
from assay.execute.proctree import ProcessTree, new_marker
from assay.handover import HANDOVER, MARKER
from assay.template import parts, render, value_text

TrialStatus = Literal["ok", "failed", "timeout", "parse_error", "launch_error", "invalid"]

_READ = 256 * 1024  # bytes per read of a pipe
_DRAIN_S = 2.0  # after the kill, how long a pipe may stay open (a writer out of reach)
_POLL_S = 0.01  # without pidfd_open (Linux < 5.3): how often to look for the exit
_UNTIL_S = 0.05  # how often run_command's ``until`` is asked
UNTIL_STOP = "until"  # _follow's ``stopped`` for a command its ``until`` ended
#: How often a running trial's first process is checked for a stop by job control (it
#: read or wrote the terminal from its own process group: SIGTTIN stops the whole group)
_STOP_CHECK_S = 1.0
#: What a trial stopped by job control says (it would otherwise wait for its timeout)
STOPPED_ERROR = (
    "stopped by job control ({why}): the command runs in a process group of its own, "
    "away from the terminal, and reading or writing the terminal stops it; give it its "
    "input another way (a file, --prepare, an environment variable)"
)
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
    # the command's peak (wait4): its own when the peak spawner started it
    # (assay.execute.peak); launched directly, None when it is not above Assay's own peak
    # at the spawn (the kernel records the launching address space's peak at the exec,
    # so a smaller command read as Assay's size: 55 MB for every 'sleep 0.01')
    max_rss_kib: int | None = 0
    extra: dict[str, float] = field(default_factory=dict)
    # perf_counter() at the spawn and at the reap: what lies between two trials' stamps
    # is Assay's own cost (see LocalExecutor); None when the command never started
    spawned: float | None = None
    reaped: float | None = None
    # the whole of stdout (memory, then a temporary file): for the readers
    output: Spool | None = field(default=None, repr=False, compare=False)
    # what the peak spawner added to the launch (s): from Assay's spawn to its clone of
    # the command; None when the command was launched directly
    spawner_cost: float | None = None

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

    With ``shell=True`` (the words are joined and read by ``/bin/sh``) no value enters
    the user's script: each is assigned, quoted, to a shell variable in words put
    before it, and its placeholder becomes a reference to that variable written for
    the quotes around it, so the value is one literal string whether its placeholder
    stands bare, in ``"…"`` or in ``'…'`` (a variable, not ``$1``: a function's own
    arguments would hide ``$1``).  The stored argv shows each value in its assignment.

    >>> print(*render_argv(["echo", "{v}", "'{v}'", "|", "wc"], {"v": "a; b"}, shell=True))
    assay_v='a; b'; echo "${assay_v}" ''"${assay_v}"'' | wc
    """
    if not shell:
        return [render(a, values) for a in argv]
    words, variables = _shell_script(tuple(argv))
    if not variables:
        return list(words)
    assign = [f"{var}={shlex.quote(value_text(values, name))}" for name, var in variables]
    assign[-1] += ";"
    return assign + list(words)


@functools.lru_cache(maxsize=64)
def _shell_script(argv: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """The words of a shell command with its placeholders made variable references, and
    the (placeholder, variable) pairs; kept, as every trial renders the same command."""
    cut = [parts(a) for a in argv]
    variables: dict[str, str] = {}  # placeholder -> shell variable, in order of use
    for name in (name for pieces in cut for _, name in pieces if name):
        if name not in variables:
            var = "assay_" + name.replace(".", "_")
            # {host.index} and a [params] host_index would share a name
            variables[name] = f"{var}_{len(variables)}" if var in variables.values() else var
    # the script as /bin/sh reads it (words joined by spaces), a NUL where a value goes;
    # a NUL of the user's own cannot reach the shell (the launch refuses it)
    script = " ".join(
        "".join(t.replace("\0", " ") + ("\0" if n else "") for t, n in pieces) for pieces in cut
    )
    quoting = iter(_quoting(script))
    command = " ".join(argv)
    words = tuple(
        "".join(t + (_reference(variables[n], next(quoting), n, command) if n else "")
                for t, n in pieces)
        for pieces in cut
    )  # fmt: skip
    return words, tuple(variables.items())


# the quoting around a placeholder in a shell script, as _quoting finds it
_Quoting = Literal["bare", "double", "single", "comment", "arithmetic", "backslash", "dollar"]
# what each open construct makes of a placeholder in it ("": none open)
_IN: dict[str, _Quoting] = {
    "": "bare", "$(": "bare", "`": "bare", '"': "double", "'": "single",
    "#": "comment", "$((": "arithmetic",
}  # fmt: skip
_WORD_START = " \t\n;&|()<>"  # after these a '#' starts a comment


def _quoting(script: str) -> list[_Quoting]:
    """The quoting around each NUL of ``script`` (POSIX sh; here-documents and case
    patterns inside ``$(…)`` are not followed).  A wrong guess cannot run a value: it
    is never in the script's text, only its quoting would be wrong."""
    found: list[_Quoting] = []
    stack = [("", 0)]  # the constructs open at i, innermost last, with their open "("s
    i = 0
    while i < len(script):
        c, nxt = script[i], script[i + 1 : i + 2]
        kind, parens = stack[-1]
        if c == "\0":
            found.append(_IN[kind])
        elif kind in ("'", "#"):
            if c == ("'" if kind == "'" else "\n"):
                stack.pop()
        elif c in "\\$" and nxt == "\0":
            found.append("backslash" if c == "\\" else "dollar")
            i += 1
        elif c == "\\":
            i += 1  # the next character is quoted (in "…" perhaps this one is literal)
        elif c == "$" and nxt in ("(", "$"):
            opened = "$((" if script.startswith("((", i + 1) else "$(" if nxt == "(" else ""
            if opened:
                stack.append((opened, 0))
            i += len(opened) - 1 if opened else 1  # past $( or $((, or $$ (the pid)
        elif (c == "`" and kind == "`") or (c == '"' and kind == '"'):
            stack.pop()
        elif c == "`" or (c in "'\"" and kind != '"'):
            stack.append((c, 0))
        elif c == "(" and kind in ("$(", "$(("):
            stack[-1] = (kind, parens + 1)
        elif c == ")" and kind in ("$(", "$((") and parens:
            stack[-1] = (kind, parens - 1)
        elif c == ")" and (kind == "$(" or (kind == "$((" and nxt == ")")):
            stack.pop()
            i += kind == "$(("
        elif c == "#" and kind in ("", "$(", "`") and (i == 0 or script[i - 1] in _WORD_START):
            stack.append(("#", 0))
        i += 1
    return found


def _reference(var: str, quoting: _Quoting, name: str, command: str) -> str:
    """The text that stands for variable ``var`` where its placeholder was: always one
    literal string (double-quoted; in '…' the quotes are closed around it)."""
    if quoting in ("bare", "comment"):
        return f'"${{{var}}}"'
    if quoting == "double":
        return f"${{{var}}}"
    if quoting == "single":
        return f"'\"${{{var}}}\"'"
    where = f"placeholder '{{{name}}}' in the shell command {command!r}"
    if quoting == "arithmetic":
        raise StudyError(
            f"{where} is inside $((…)): the shell would evaluate the value as arithmetic, "
            "and bash runs commands named there; give the computed number as the value, "
            "or do the arithmetic in the program"
        )
    if quoting == "backslash":
        raise StudyError(
            f"{where} follows a backslash, which would escape the quote Assay puts around "
            "the value; remove it (the value arrives as literal text), or write '\\\\' "
            "for a backslash before the value"
        )
    raise StudyError(
        f"{where} follows a '$', which would read the quote Assay puts around the value; "
        f"write '${{{{{name}}}}}' for the shell's own variable {name}, or '\\$' for a "
        "'$' before the value"
    )


def run_command(
    argv: Sequence[str],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    shell: bool = False,
    keep_descendants: bool = False,
    peak: bool = False,
    until: Callable[[], bool] | None = None,
    on_start: Callable[[], None] | None = None,
    on_stdout: Callable[[bytes], None] | None = None,
) -> CommandResult:
    """Run ``argv`` until it exits or ``timeout`` seconds pass, then kill every process
    it started.

    ``on_start`` is called once the command's process runs, ``on_stdout`` with each
    piece of its standard output as it is read (a role's command says it is ready).

    ``until`` (asked every :data:`_UNTIL_S`): a command that runs beside something else
    (a role's ``command`` beside the measured one) is stopped, its process group killed,
    once it says True; that is its normal end (status ok, said in ``error``), not a
    timeout.

    The command runs in a process group of its own (not a session: see
    :meth:`_Launch.spawn`), its processes held by a cgroup or found
    by a scan (:mod:`assay.execute.proctree`), and carries ``ASSAY_TRIAL`` in its
    environment (``env``'s value if given, else a fresh one).  The command is its first
    process: ``duration`` runs from the spawn to its reap, and nothing else is in it
    (the pipes, the executable's lookup and the environment are made before; reading
    the output while it runs is all).  When it exits, whatever it left running is
    killed (a trial is over when its command is), but what it handed over through the
    file ``ASSAY_HANDOVER`` names (a server it restarted), unless ``keep_descendants``
    (a setup step starting a server); then its output is read to the end, within the
    timeout.
    At the timeout, or when Assay is interrupted (Ctrl-C, SIGTERM, SIGHUP: see
    :mod:`assay.execute.interrupts`), all are killed.

    Output is streamed, so memory does not grow with it: ``stdout``/``stderr`` are
    capped heads and tails, the whole of stdout is in ``output`` (call ``close()``).

    With ``shell=True`` the argv elements are joined with spaces and run by ``/bin/sh -c``:
    only for users who ask for shell syntax. The launch is ``posix_spawn`` (vfork and
    exec, as hyperfine's), or ``subprocess.Popen`` with a working directory; never a
    ``preexec_fn``: it disables the vfork fast path and added 17 ms to every measured
    launch here (bench/RESULTS.md).

    With ``peak`` the peak spawner (:mod:`assay.execute.peak`) starts the command, where
    one could be built: a child of Assay's all the same, whose peak memory is its own,
    not Assay's; ``duration`` runs from the spawner's clone of it.
    """
    args = list(argv)
    # bytes, as the kernel takes them: no decoding of Assay's environment per trial
    full_env = dict(os.environb)
    for key, value in (env or {}).items():
        full_env[os.fsencode(key)] = os.fsencode(value)
    marker = env[MARKER] if env and MARKER in env else new_marker()
    full_env[os.fsencode(MARKER)] = os.fsencode(marker)
    out, err = Spool(keep_all=True), Spool()
    with terminate_as_interrupt():
        tree = ProcessTree(marker, hold=not keep_descendants)
        if tree.handover is not None:  # what the trial hands over outlives it
            full_env[os.fsencode(HANDOVER)] = os.fsencode(tree.handover)
        launch: _Launch | None = None
        cost: float | None = None
        started, t0 = time.time(), time.perf_counter()
        gc_on = gc.isenabled()
        gc.disable()  # no collection in the timed region
        try:
            try:
                launch = _Launch(exec_argv(args, shell), full_env, cwd, spawner() if peak else None)
                tree.enter()  # the command is born where the tree holds it
                started = time.time()
                t0 = time.perf_counter()
                child = launch.spawn()
                # Assay's peak once the command has exec'd: no less than what the
                # kernel recorded for a command launched directly (it grows)
                own_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                if child.t0 is not None:  # the peak spawner's, just before its clone
                    cost, t0 = child.t0 - t0, child.t0
            except (OSError, ValueError) as exc:
                why = str(exc)
                if isinstance(exc, FileNotFoundError) and cwd and exc.filename == cwd:
                    # a cluster's host without the study's folder (it must be at the same
                    # path on every host)
                    why = f"its working directory {cwd!r} does not exist on this host"
                return CommandResult(
                    argv=args,
                    status="launch_error",
                    exit_code=None,
                    started=started,
                    duration=time.perf_counter() - t0,
                    stdout=b"",
                    stderr=b"",
                    error=f"cannot start {args[0]!r}: {why}",
                )
            finally:
                if launch is not None:
                    launch.close_child_ends()
            tree.attach(child.pid)
            try:
                if on_start is not None:
                    on_start()
                end, timed_out, usage, stopped = _follow(
                    child,
                    launch,
                    tree,
                    out,
                    err,
                    t0 + timeout,
                    keep_descendants,
                    until,
                    on_stdout,
                )
            except BaseException:
                # Ctrl-C, SIGTERM: never leave the benchmark running behind us; a second
                # signal waits for the clean-up
                with deferred():
                    tree.kill()
                    _kill_group(child)
                    child.reap()
                    tree.close()
                    out.close()
                raise
        finally:
            if launch is not None:
                launch.close()
            tree.close()
            if gc_on:
                gc.enable()
    code = child.code
    assert code is not None  # reaped by _follow
    # through the spawner the command's peak is its own, whatever its size
    max_rss = (
        int(usage.ru_maxrss) if cost is not None else _own_peak(int(usage.ru_maxrss), own_peak)
    )
    if stopped == UNTIL_STOP:
        status: TrialStatus = "ok"
        error = "stopped when what it ran beside ended (its process group was killed)"
    elif stopped is not None:
        status = "failed"
        error = STOPPED_ERROR.format(why=stopped) + "; every process it started was killed"
    elif timed_out:
        status = "timeout"
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
        cpu_user=usage.ru_utime,
        cpu_system=usage.ru_stime,
        max_rss_kib=max_rss,
        spawned=t0,
        reaped=end,
        output=out,
        spawner_cost=cost,
    )


def _own_peak(child_kib: int, assay_kib: int) -> int | None:
    """The command's peak RSS from wait4, or None when it is Assay's (see
    :attr:`CommandResult.max_rss_kib`).

    >>> _own_peak(120_000, 55_000), _own_peak(55_000, 55_000)
    (120000, None)
    """
    return child_kib if child_kib > assay_kib else None


# Popen's restore_signals: what Python ignores must not stay ignored in the command
_SIGDEF = tuple(getattr(signal, n) for n in ("SIGPIPE", "SIGXFZ", "SIGXFSZ") if hasattr(signal, n))


@dataclass
class _Child:
    """The command's first process, reaped by ``os.wait4`` (its own resource usage)."""

    pid: int
    popen: subprocess.Popen[bytes] | None = None
    code: int | None = None
    t0: float | None = None  # perf_counter() at the peak spawner's clone of it

    def reap(self, block: bool = True) -> resource.struct_rusage | None:
        """Wait for the exit; its resource usage, or None when ``block`` is false and it
        still runs."""
        if self.code is not None:
            return None
        try:
            pid, status, usage = os.wait4(self.pid, 0 if block else os.WNOHANG)
        except ChildProcessError:  # reaped by someone else: no status nor usage to tell
            pid, status, usage = self.pid, 255 << 8, resource.struct_rusage((0,) * 16)
        if pid == 0:
            return None
        self.code = os.waitstatus_to_exitcode(status)
        if self.popen is not None:
            self.popen.returncode = self.code  # reaped: Popen must not wait for it again
        return usage


class _Launch:
    """Everything the spawn needs, made before the clock starts: the pipes (read ends
    in ``out``/``err``), the executable's path and the spawn's file actions."""

    def __init__(
        self, argv: list[str], env: dict[bytes, bytes], cwd: str | None, peak: str | None
    ) -> None:
        self.argv, self.env, self.cwd, self.peak = argv, env, cwd, peak
        self.fds: list[int] = []
        self.out, w_out = self._pipe()
        self.err, w_err = self._pipe()
        self.writers = [w_out, w_err]
        self.report: int | None = None  # the peak spawner's report, read end
        if peak is not None:
            self.report, w_report = self._pipe()
            if w_report == _REPORT_FD:  # the spawn's dup2 onto itself would not clear CLOEXEC
                w_report = fcntl.fcntl(w_report, fcntl.F_DUPFD_CLOEXEC, _REPORT_FD + 1)
                self._close(_REPORT_FD)
                self.fds.append(w_report)
            self.writers.append(w_report)
        self.spawns = cwd is None  # else Popen: posix_spawn cannot change directory
        name = argv[0]
        # the program as the spawn finds it (the peak spawner execs it by this path; a
        # relative one is the working directory's, as Popen's)
        self.path: str | None = name if os.path.dirname(name) else _lookup(name, env)
        if self.spawns:
            self.actions: list[tuple[Any, ...]] = [
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDWR, 0),
                (os.POSIX_SPAWN_DUP2, w_out, 1),
                (os.POSIX_SPAWN_DUP2, w_err, 2),
                *((os.POSIX_SPAWN_CLOSE, fd) for fd in _inherited_fds()),
            ]

    def _pipe(self) -> tuple[int, int]:
        r, w = os.pipe()
        # above stdio, so that the dup2s onto 0-2 cannot overwrite them
        r, w = _above_stdio(r), _above_stdio(w)
        self.fds += [r, w]
        return r, w

    def spawn(self) -> _Child:
        """Start the command in a process group of its own (its leader; Ctrl-C at the
        terminal reaches Assay, which kills it).  Not a session of its own, as before:
        where the kernel groups tasks by session for the scheduler (autogroup, on by
        default in Debian's and Ubuntu's kernels), each trial's new session was a new
        task group, which on a busy machine took a scheduler tick (4 ms) more from the
        spawn to the reap than hyperfine's launch or a bare fork/exec/wait4 (issue #45:
        ``sleep 0.01`` read 19.7 ms against their 15.9 ms beside two busy loops)."""
        if self.path is None:  # as Popen: never a file of that name in the cwd
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), self.argv[0])
        if self.peak is not None:
            try:
                pid, popen = self._start(self.peak, [self.peak, "", self.path, *self.argv])
            except OSError:
                self.peak = None
                self._close(self.writers.pop())
                pid, popen = self._start(self.path, self.argv)  # a missing cwd raises again
                forget_spawner()  # launched directly: the spawner could not run (noexec)
                return _Child(pid, popen)
            return self._cloned(pid, popen)
        pid, popen = self._start(self.path, self.argv)
        return _Child(pid, popen)

    def _start(self, path: str, argv: list[str]) -> tuple[int, subprocess.Popen[bytes] | None]:
        """Spawn ``argv`` (the peak spawner's: its report descriptor's number in
        ``argv[1]`` is filled in here)."""
        report = self.writers[2] if self.peak is not None and path == self.peak else None
        if self.spawns:
            actions = self.actions
            if report is not None:  # on descriptor 3, after the closes
                actions = [*actions, (os.POSIX_SPAWN_DUP2, report, _REPORT_FD)]
                argv = [argv[0], str(_REPORT_FD), *argv[2:]]
            pid = os.posix_spawn(
                path, argv, self.env, file_actions=actions, setpgroup=0, setsigdef=_SIGDEF
            )
            return pid, None
        if report is not None:
            argv = [argv[0], str(report), *argv[2:]]
        proc = subprocess.Popen(
            argv,
            pass_fds=() if report is None else (report,),
            stdin=subprocess.DEVNULL,
            stdout=self.writers[0],
            stderr=self.writers[1],
            env=self.env,
            cwd=self.cwd,
            process_group=0,
        )
        return proc.pid, proc

    def _cloned(self, pid: int, popen: subprocess.Popen[bytes] | None) -> _Child:
        """The command the peak spawner ``pid`` cloned (a child of Assay's), once the
        spawner has exited and the command has exec'd: its report ends there."""
        assert self.report is not None
        self._close(self.writers.pop())  # the report's write end: the spawner's alone
        chunks = []
        while chunk := os.read(self.report, 4096):
            chunks.append(chunk)
        if popen is not None:
            popen.wait()
        else:
            os.waitpid(pid, 0)
        report = parse_report(b"".join(chunks))
        if report.pid is not None and report.exec_errno is not None:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(report.pid, 0)  # it exited (127) when its exec failed
        if report.exec_errno is not None:
            code = report.exec_errno
            raise OSError(code, os.strerror(code), self.argv[0])
        if report.pid is None:
            raise OSError(errno.EIO, "the peak spawner started nothing", self.peak)
        return _Child(report.pid, t0=report.t0)

    def close_child_ends(self) -> None:
        """After the spawn: the command holds the write ends; the reader sees their end."""
        for fd in self.writers:
            self._close(fd)
        self.writers = []

    def close(self) -> None:
        for fd in list(self.fds):
            self._close(fd)

    def _close(self, fd: int) -> None:
        if fd in self.fds:
            self.fds.remove(fd)
            with contextlib.suppress(OSError):
                os.close(fd)


_REPORT_FD = 3  # where the peak spawner reports (posix_spawn's file actions put it there)
_found: dict[tuple[str, bytes], str] = {}  # (program, PATH) -> its path


def _lookup(name: str, env: Mapping[bytes, bytes]) -> str | None:
    """``name`` on the command's PATH, as Popen finds it (the first executable file);
    remembered while it stays executable (a lookup costs ~0.1 ms with a long PATH)."""
    key = (name, env.get(b"PATH", b""))
    hit = _found.get(key)
    if hit is not None and os.access(hit, os.X_OK):
        return hit
    found = None
    with contextlib.suppress(ValueError):  # a NUL in it: the spawn says so
        found = shutil.which(name, path=os.pathsep.join(os.get_exec_path(env)))  # type: ignore[arg-type]
    if found is not None:
        _found[key] = found
    return found


def _above_stdio(fd: int) -> int:
    if fd > 2:
        return fd
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    os.close(fd)
    return high


def _inherited_fds() -> list[int]:
    """This process's inheritable descriptors above stdio (Popen's close_fds closes them
    in the child; posix_spawn would pass them on)."""
    fds: list[int] = []
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc/self/fd"):
            fd = int(name)
            with contextlib.suppress(OSError):
                if fd > 2 and os.get_inheritable(fd):
                    fds.append(fd)
    return fds


def _follow(
    child: _Child,
    launch: _Launch,
    tree: ProcessTree,
    out: Spool,
    err: Spool,
    deadline: float,
    keep: bool,
    until: Callable[[], bool] | None = None,
    on_stdout: Callable[[bytes], None] | None = None,
) -> tuple[float, bool, resource.struct_rusage, str | None]:
    """Read the pipes until the command ends, or the deadline; kill its tree when the
    trial is over; the reap's time, whether it timed out, the command's usage and, for a
    command stopped by job control (it read the terminal from its own process group:
    SIGTTIN), why (else None): killed at once, not left stopped until its timeout."""
    sel = _Selector()
    sel.register(launch.out, selectors.EVENT_READ, out)
    sel.register(launch.err, selectors.EVENT_READ, err)
    pidfd = _pidfd(child.pid)
    if pidfd is not None:
        sel.register(pidfd, selectors.EVENT_READ, None)  # readable when the command exits
    pipes = 2
    end: float | None = None
    usage: resource.struct_rusage | None = None
    timed_out = False
    drain_until = deadline
    stopped: str | None = None
    watch = _StopWatch(child.pid)
    asked = time.perf_counter()
    try:
        while end is None or pipes:
            now = time.perf_counter()
            if until is not None and end is None and stopped is None and now >= asked:
                asked = now + _UNTIL_S
                if until():  # its companion ended: so does it (not a timeout)
                    stopped = UNTIL_STOP
                    tree.kill()
                    _kill_group(child)
            if end is None and now >= deadline:
                timed_out = True
                tree.kill()
                _kill_group(child)
            elif end is not None and now >= drain_until:
                if not keep or timed_out:
                    break  # a writer out of reach holds a pipe: stop reading it
                timed_out = True  # a kept process still writes at the deadline
                tree.kill()
                drain_until = time.perf_counter() + _DRAIN_S
                continue
            exited = False
            if end is None and pidfd is None and not timed_out:
                usage = child.reap(block=False)
                exited = usage is not None
            if end is None and not timed_out and stopped is None:
                stopped = watch.check(now)
                if stopped is not None:
                    timed_out = True  # ended as a timeout ends: everything killed
                    tree.kill()
                    _kill_group(child)
            if end is None and (timed_out or exited):
                exited = True
            else:
                limit = (deadline if end is None else drain_until) - now
                if end is None and pidfd is None:
                    limit = min(limit, _POLL_S)
                elif end is None:
                    limit = min(limit, max(watch.due - now, 0.0))
                if end is None and until is not None:
                    limit = min(limit, max(asked - now, 0.0))
                for key, _ in sel.select(max(limit, 0.0)):
                    if key.data is None:
                        exited = True
                        continue
                    chunk = os.read(key.fd, _READ)
                    if chunk:
                        key.data.write(chunk)
                        if on_stdout is not None and key.data is out:
                            on_stdout(chunk)
                    else:
                        sel.unregister(key.fileobj)
                        pipes -= 1
            if exited and end is None:
                if usage is None:
                    usage = child.reap()
                end = time.perf_counter()
                if pidfd is not None:
                    sel.unregister(pidfd)
                if not keep:
                    tree.kill()  # the trial is over: nothing it started goes on
                drain_until = deadline if keep and not timed_out else end + _DRAIN_S
    finally:
        sel.close()
        if pidfd is not None:
            os.close(pidfd)
    assert usage is not None
    return end, timed_out, usage, stopped


class _StopWatch:
    """Looks, every :data:`_STOP_CHECK_S` of a trial, whether its first process was
    stopped by SIGTTIN or SIGTTOU (``waitid``: cheap, and the signal is known).  A read
    of the terminal by any process of the group stops them all, the first one with
    them; a process that left the group, or stops for another reason (SIGSTOP), is left
    alone."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.due = time.perf_counter() + _STOP_CHECK_S

    def check(self, now: float) -> str | None:
        if now < self.due:
            return None
        self.due = now + _STOP_CHECK_S
        signo = _leader_stop(self.pid)
        if signo in _TERMINAL_STOPS:
            return f"{signal.Signals(signo).name}: it read or wrote the terminal"
        return None


_TERMINAL_STOPS = (signal.SIGTTIN, signal.SIGTTOU)


def _leader_stop(pid: int) -> int | None:
    """The signal that stopped the command's first process, if it is stopped (left
    waitable: the reap still sees its exit)."""
    try:
        info = os.waitid(os.P_PID, pid, os.WSTOPPED | os.WNOHANG | os.WNOWAIT)
    except (ChildProcessError, OSError):
        return None
    if info is None or info.si_code != os.CLD_STOPPED:
        return None
    return int(info.si_status)


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


def _kill_group(child: _Child) -> None:
    if child.code is not None:
        return  # reaped: its pid (and group id) may be another's now
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError):
            os.kill(child.pid, signal.SIGKILL)


def exec_argv(argv: Sequence[str], shell: bool = False) -> list[str]:
    """The argv the started program sees (what /proc/PID/cmdline will show)."""
    return ["/bin/sh", "-c", " ".join(argv)] if shell else list(argv)
