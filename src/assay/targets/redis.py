"""Redis with ``redis-benchmark``: a private server on a Unix socket, with a password.

``setup`` starts ``redis-server`` listening on a Unix socket in a fresh private
directory (mode 700; ``--tcp`` adds 127.0.0.1 on a free port, ``--port`` chooses it),
with a generated password (``requirepass``, kept in the state directory, mode 600,
given to the server on stdin), as the ``redis`` user when Assay runs as root, and
with persistence off (``save ""``, ``appendonly no``) unless a knob asks for it
(``--knob appendonly=yes``, ``--knob "save=60 1000"``); the ``--knob``s given to
setup are its baseline, passed on the server's command line. Knobs that would open
the server up (where it listens, who logs in, files elsewhere: see ``PROTECTED``) or
smuggle in another setting (a word starting with ``--``, a control character) are
refused. ``run`` lays its ``--knob``s over the baseline with ``CONFIG SET`` (knobs a
run no longer names go back to their baseline value; a knob Redis cannot change at
run time restarts the server with it), runs ``redis-benchmark`` (as an ACL user made
for the run, never with the server's password: :func:`bench_acl`) and parses its
report: per-command throughput (requests/s) and latency (avg, min, p50, p95, p99, max
in ms).
``reset`` empties the database (FLUSHALL); ``teardown`` stops the server and removes
its files. The state directory (``--state``, default per user; see
:mod:`assay.targets.private`) holds the server's identity (signalled only while the
kernel still shows it), port, password, log and knobs.

PIs (``pi.*``): ``throughput`` and ``latency_ms_*`` of the first command of
``--tests``, and ``<command>_rps``, ``<command>_p50_ms``, ``<command>_p99_ms`` ... of
each. Unit readings (``units.*``): the throughput of every 250 ms interval that
redis-benchmark reports while it runs, or its overall throughput when the test is
shorter than one interval (``units.throughput`` for the first command,
``units.<command>_rps`` for each).

>>> rep = parse_redis_benchmark('''====== SET ======
...   1000 requests completed in 0.05 seconds
... SET: rps=20000.0 (overall: 20000.0) avg_msec=1.000 (overall: 1.000)\\r
... Summary:
...   throughput summary: 20408.16 requests per second
...   latency summary (msec):
...           avg       min       p50       p95       p99       max
...         1.037     0.168     0.623     6.191     7.431     9.383
... ''')
>>> rep["SET"]["rps"], rep["SET"]["p99_ms"], rep["SET"]["interval_rps"]
(20408.16, 7.431, [20000.0])
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pwd
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.targets.base import (
    KnobRules,
    RunResult,
    Target,
    TargetError,
    check_port_free,
    free_port,
    missing_binary,
)
from assay.targets.private import (
    STATE_FILE,
    StateDir,
    default_state_dir,
    make_private_dir,
    new_secret,
    owned_private_dir,
    remove_private_dir,
)
from assay.targets.process import (
    ProcessIdentity,
    gone_after_restart,
    hand_over,
    kill,
    restart_note,
    server_env,
    verified,
    wait_gone,
)

HOST = "127.0.0.1"
SOCKET = "redis.sock"  # in the private data directory (mode 700)
PASSWORD = "redis.pass"  # in the state directory, mode 600: the requirepass value
LOG = "redis.log"  # in the state directory
BENCH_USER = "assay-bench"  # the ACL user redis-benchmark logs in as, one run at a time
#: how long a start tries again while its TCP port is taken: the server stopped just
#: before (a restart, a leftover) may hold it a moment after it is gone
BIND_RETRY_S = 10.0
#: Settings no knob may name, by why. A knob reaches the server's command line (setup,
#: a restart) or CONFIG SET, so each of these would undo what keeps the server private.
PROTECTED: dict[str, frozenset[str]] = {
    # where it listens: a Unix socket in a 700 directory, 127.0.0.1 only with --tcp;
    # cluster mode opens a second port (the cluster bus)
    "it opens or changes a listener": frozenset({
        "port", "bind", "unixsocket", "unixsocketperm", "unixsocketgroup",
        "protected-mode", "tls-port", "cluster-enabled", "cluster-port",
    }),
    # who may log in and what they may do: the generated password, the benchmark's
    # ACL user, commands that are off (DEBUG, MODULE) or renamed
    "it changes who may log in or what they may do": frozenset({
        "requirepass", "user", "aclfile", "acl-pubsub-default", "rename-command",
        "enable-protected-configs", "enable-debug-command", "enable-module-command",
    }),
    # modules run code as the server's user; include reads another config file; a
    # replica takes its data from, and logs in to, another server
    "it loads code, settings or data from elsewhere": frozenset({
        "loadmodule", "include", "replicaof", "slaveof", "masterauth", "masteruser",
    }),
    # the server writes only in its private data directory and to the log descriptor
    # the target opened in the state directory
    "it writes files outside the private directories": frozenset({
        "dir", "dbfilename", "appendfilename", "appenddirname", "logfile", "pidfile",
        "cluster-config-file",
    }),
    # the target watches the process it started: a daemon would leave it
    "the target supervises the server process itself": frozenset({"daemonize"}),
}  # fmt: skip
#: name prefixes protected as a whole: TLS (listener, certificates and keys read from
#: files, client authentication) and cluster mode (a second listener, a state file)
PROTECTED_PREFIXES = {
    "tls-": "it configures TLS: a listener, key files and client authentication",
    "cluster-": "it configures cluster mode: a second listener and a state file",
}
_NAME = re.compile(r"^[a-z][a-z0-9-]*$", re.IGNORECASE)
_SECTION = re.compile(r"^====== (.+?) ======\s*$", re.MULTILINE)
_PROGRESS = re.compile(
    r"(?P<test>[^\r\n:]+): rps=(?P<rps>[0-9.]+|-?nan) \(overall: [^)]*\) "
    r"avg_msec=(?P<avg>[0-9.]+|-?nan)"
)
_THROUGHPUT = re.compile(r"throughput summary:\s*([0-9.]+)\s*requests per second")
_LAT_HEAD = re.compile(r"latency summary \(msec\):[ \t]*\n[ \t]*([a-z0-9 \t]+)\n[ \t]*([0-9. \t]+)")


class RedisReplyError(RuntimeError):
    """Redis answered a command with an error reply."""


class _PortTaken(TargetError):
    """redis-server exited at start because its TCP port was taken (its log's tail)."""


def slug(test: str) -> str:
    """A JSON-path-safe name for a redis-benchmark test ("MSET (10 keys)" -> "mset_10_keys").

    >>> slug("LPUSH (needed to benchmark LPOP)")
    'lpush_needed_to_benchmark_lpop'
    """
    return re.sub(r"[^a-z0-9]+", "_", test.lower()).strip("_")


def parse_redis_benchmark(text: str) -> dict[str, dict[str, Any]]:
    """Parse redis-benchmark's full (not ``-q``, not ``--csv``) output, per test.

    Each test gives ``rps`` (its throughput summary), ``avg_ms``, ``min_ms``,
    ``p50_ms``, ``p95_ms``, ``p99_ms``, ``max_ms`` and ``interval_rps`` (the 250 ms
    progress lines, those with a finite latency). Progress lines come before the
    test's ``======`` header in the output stream; they are matched by the test name.
    A test that ends within its first interval prints no progress line: its one
    interval is the whole test, so ``interval_rps`` is its throughput summary.

    >>> parse_redis_benchmark("====== GET ======\\n"
    ...     "  throughput summary: 180000.00 requests per second\\n")["GET"]["interval_rps"]
    [180000.0]
    """
    text = text.replace("\r", "\n")
    progress: dict[str, list[float]] = {}
    for m in _PROGRESS.finditer(text):
        rps, avg = m.group("rps"), m.group("avg")
        if "nan" in rps or "nan" in avg:
            continue  # the first line, before any request completed
        progress.setdefault(m.group("test").strip(), []).append(float(rps))
    out: dict[str, dict[str, Any]] = {}
    heads = list(_SECTION.finditer(text))
    for i, h in enumerate(heads):
        name = h.group(1).strip()
        body = text[h.end() : heads[i + 1].start() if i + 1 < len(heads) else len(text)]
        tp = _THROUGHPUT.search(body)
        if tp is None:
            continue
        entry: dict[str, Any] = {"rps": float(tp.group(1))}
        lat = _LAT_HEAD.search(body)
        if lat is not None:
            cols = lat.group(1).split()
            vals = lat.group(2).split()
            for col, val in zip(cols, vals, strict=False):
                entry[f"{col}_ms"] = float(val)
        entry["interval_rps"] = progress.get(name) or [entry["rps"]]
        out[name] = entry
    if not out:
        raise TargetError(
            "redis-benchmark printed no 'throughput summary': "
            + (text.strip()[-300:] or "no output")
        )
    return out


def _encode(args: tuple[str, ...]) -> bytes:
    parts = [f"*{len(args)}\r\n".encode()]
    for a in args:
        b = a.encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(parts)


def _read_reply(f: Any) -> Any:
    line = f.readline()
    if not line:
        raise ConnectionError("redis closed the connection")
    kind, rest = line[:1], line[1:].rstrip(b"\r\n")
    if kind == b"+":
        return rest.decode()
    if kind == b"-":
        raise RedisReplyError(rest.decode())
    if kind == b":":
        return int(rest)
    if kind == b"$":
        n = int(rest)
        if n < 0:
            return None
        data = f.read(n + 2)
        return data[:-2].decode(errors="replace")
    if kind == b"*":
        n = int(rest)
        return None if n < 0 else [_read_reply(f) for _ in range(n)]
    raise ConnectionError(f"unexpected reply from redis: {line[:60]!r}")


@dataclass(frozen=True)
class Endpoint:
    """Where and how the target's own client reaches its server: the Unix socket in the
    private data directory, and the password."""

    socket: str
    password: str


def redis_command(endpoint: Endpoint, *args: str, timeout: float = 10.0) -> Any:
    """Send one command to the Redis server at ``endpoint`` (after AUTH) and return its
    reply."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(endpoint.socket)
        s.sendall(_encode(("AUTH", endpoint.password)) + _encode(args))
        with s.makefile("rb") as f:
            _read_reply(f)
            return _read_reply(f)


def _binary(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise missing_binary(name, "redis-server" if name == "redis-server" else "redis-tools")
    return os.path.abspath(path)


def _server_user() -> pwd.struct_passwd | None:
    """The user redis-server runs as: the ``redis`` user (made by the Debian package)
    when Assay runs as root, else the user running Assay. Root only when there is no
    ``redis`` user; the server is private even then (socket directory, password)."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam("redis")
    except KeyError:
        return None


def _server_uid() -> int:
    pw = _server_user()
    return pw.pw_uid if pw else os.geteuid()


#: A knob's rules: setup passes knobs on the server's command line (``save`` split into
#: words), so no value may carry another option; no protected setting (:data:`PROTECTED`).
_KNOBS = KnobRules(
    server="a Redis setting",
    name=_NAME,
    names="letters, digits and '-' (e.g. maxmemory, io-threads)",
    value_example='--knob maxmemory=64mb or --knob "save=60 1000"',
    protected=PROTECTED,
    prefixes=PROTECTED_PREFIXES,
    allowed="maxmemory, appendonly, save, io-threads",
)
_check_knobs = _KNOBS.check


def bench_acl(password: str) -> list[str]:
    """The ``ACL SETUSER`` rules of the user redis-benchmark logs in as.

    redis-benchmark (7.0) takes a password only on its command line (``-a``, ``-u``;
    it ignores REDISCLI_AUTH), where every local user can read it in /proc. So it never
    gets the server's password: each run makes this user with a fresh password and
    deletes it afterwards (which also closes its connections). Its rights are the data
    commands the benchmark's tests use, on any key (the database holds only benchmark
    data; unrestricted keys keep ACL checks as cheap as the default user's); no admin,
    dangerous (CONFIG, FLUSHALL, KEYS, DEBUG ...) or scripting command, no channels.

    >>> bench_acl("pw")[:3]
    ['reset', 'on', '>pw']
    """
    return [
        "reset", "on", f">{password}", "~*", "-@all",
        "+@read", "+@write", "+@connection", "-@dangerous", "-@admin", "-@scripting",
    ]  # fmt: skip


class RedisTarget(Target):
    """Redis with redis-benchmark: a private server on a Unix socket, with a password."""

    name = "redis"

    def __init__(
        self, state: str | None = None, port: int | None = None, tcp: bool = False
    ) -> None:
        self.state = StateDir(state or default_state_dir(self.name))
        self.port = port
        self.tcp = tcp or port is not None

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        g = parser.add_argument_group("redis")
        g.add_argument(
            "--state",
            help=f"private state directory (mode 700; default: {default_state_dir(cls.name)})",
        )
        g.add_argument(
            "--tcp", action="store_true",
            help="setup: also listen on 127.0.0.1, and redis-benchmark uses it (default: "
            "only a Unix socket in a private directory)",
        )  # fmt: skip
        g.add_argument("--port", type=int, help="setup: TCP port (implies --tcp; default: free)")
        g.add_argument("--tests", default="set,get", help="redis-benchmark -t (commands)")
        g.add_argument("--requests", type=int, default=100_000, help="requests per command")
        g.add_argument("--clients", type=int, default=50, help="parallel connections")
        g.add_argument("--data-size", type=int, default=3, help="value size in bytes")
        g.add_argument("--pipeline", type=int, default=1, help="requests per pipeline")
        g.add_argument("--keyspace", type=int, default=0, help="random keys (-r; 0: one)")
        g.add_argument("--threads", type=int, default=0, help="benchmark threads (0: one)")

    @classmethod
    def from_options(cls, opts: argparse.Namespace) -> RedisTarget:
        return cls(opts.state, opts.port, opts.tcp)

    @staticmethod
    def workload_from_options(opts: argparse.Namespace) -> dict[str, Any]:
        return {
            "tests": opts.tests,
            "requests": opts.requests,
            "clients": opts.clients,
            "data_size": opts.data_size,
            "pipeline": opts.pipeline,
            "keyspace": opts.keyspace,
            "threads": opts.threads,
        }

    # -- server life cycle ----------------------------------------------------------
    def _endpoint(self, st: Mapping[str, Any]) -> Endpoint:
        return Endpoint(str(Path(st["data"]) / SOCKET), self.state.read(PASSWORD) or "")

    def _spawn(self, st: Mapping[str, Any], knobs: Mapping[str, str]) -> ProcessIdentity:
        """Start redis-server for ``st`` (its data directory, port) with ``knobs``; again
        while its port is taken, for up to :data:`BIND_RETRY_S` s."""
        deadline = time.monotonic() + BIND_RETRY_S
        while True:
            try:
                return self._spawn_once(st, knobs)
            except _PortTaken as exc:
                if time.monotonic() >= deadline:
                    raise TargetError(
                        f"redis-server could not listen on {HOST}:{st['port']}: the port is "
                        f"still taken after {BIND_RETRY_S:g} s (another program listens "
                        f"there?): {exc}"
                    ) from None
            time.sleep(0.1)

    def _spawn_once(self, st: Mapping[str, Any], knobs: Mapping[str, str]) -> ProcessIdentity:
        server = _binary("redis-server")
        data = Path(st["data"])
        # Ownership: the state directory (state.json, the password, the log) belongs
        # to the user running Assay, mode 700; the server gets its own private data
        # directory (mkdtemp, 700, handed to the redis user when Assay runs as root:
        # that user could not enter root's state directory). The Unix socket lies in
        # it (mode 700), the log is a descriptor opened here, and the password comes
        # on stdin ("-": config from stdin), never on the command line.
        argv = [
            server, "-",
            "--port", str(int(st["port"]) if st.get("tcp") else 0),
            "--bind", HOST,
            "--protected-mode", "yes",
            "--unixsocket", str(data / SOCKET),
            "--unixsocketperm", "700",
            "--save", "",
            "--appendonly", "no",
            "--daemonize", "no",
            "--dir", str(data),
        ]  # fmt: skip
        for k, v in knobs.items():
            argv += [f"--{k}", *(v.split() if k == "save" and v else [v])]
        owner = _server_user()
        endpoint = self._endpoint(st)
        logged = len(self.state.read(LOG) or "")  # the log is appended to: read only this start's
        logfd = self.state.open_log(LOG)
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=logfd,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # not in the process group of the trial
                env=server_env(),
                cwd=data,
                user=owner.pw_uid if owner else None,
                group=owner.pw_gid if owner else None,
                extra_groups=[] if owner else None,
            )
        finally:
            os.close(logfd)
        assert proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.write(f"requirepass {endpoint.password}\n".encode())
            proc.stdin.close()
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                text = (self.state.read(LOG) or "")[logged:]
                if "Address already in use" in text:
                    raise _PortTaken(" ".join(text.strip().splitlines()[-2:])[-300:])
                raise TargetError(self._start_failure(knobs, text))
            with contextlib.suppress(OSError, RedisReplyError, ConnectionError):
                if redis_command(endpoint, "PING", timeout=1) == "PONG":
                    ident = ProcessIdentity.of(proc.pid)
                    if ident is not None and ident.matches(server, _server_uid()):
                        return ident
            time.sleep(0.05)
        proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(10)  # gone before a caller starts another on its port
        raise TargetError(
            f"redis-server did not answer PING within 15 s; its log: {self.state.file(LOG)}"
        )

    def _start_failure(self, knobs: Mapping[str, str], text: str) -> str:
        """Why redis-server exited at start, from what it logged then (``text``)."""
        tail = " ".join(text.strip().splitlines()[-4:])[-400:]
        bad = [k for k in knobs if f"'{k}'" in text or f"{k}" in text.split("FATAL")[-1]]
        if "FATAL CONFIG" in text or "Bad directive" in text or "argument" in text:
            which = f"knob {bad[0]}={knobs[bad[0]]}" if bad else "a knob"
            return f"redis-server rejected {which}: {tail}"
        return f"redis-server exited at start: {tail or 'no output'} (log: {self.state.file(LOG)})"

    def _stop_leftover(self, graceful: bool = False) -> None:
        """Stop and remove what the state directory records, trusting none of it: the
        server is signalled only when the kernel still shows the recorded process
        (start time, the redis-server found here, the server's user), the data
        directory is removed only when it carries the marker naming this state
        directory, files in the state directory are unlinked, never followed."""
        st = self.state.load()
        if st:
            uid = _server_uid()
            server = None
            with contextlib.suppress(TargetError):  # Redis uninstalled: nothing runs
                server = verified(st.get("server"), _binary("redis-server"), uid)
            data = owned_private_dir(st.get("data"), uid, self.state)
            if server is not None:
                if graceful and data is not None:
                    with contextlib.suppress(OSError, RedisReplyError, ConnectionError):
                        redis_command(self._endpoint(st), "SHUTDOWN", "NOSAVE", timeout=2)
                    wait_gone(server, 5)
                kill(server)
            if data is not None:
                remove_private_dir(str(data), uid, self.state)
        self.state.remove(STATE_FILE, LOG, PASSWORD)

    def start(self, knobs: Mapping[str, str], workload: Mapping[str, Any] | None = None) -> None:
        _binary("redis-server")
        _binary("redis-benchmark")
        _check_knobs(knobs)
        self._stop_leftover()
        if self.port is not None:
            check_port_free(self.port)
        port = (self.port or free_port()) if self.tcp else 0
        self.state.write(PASSWORD, new_secret())
        data = make_private_dir("assay-redis-", None, self.state, _server_user())
        st: dict[str, Any] = {
            "data": str(data), "port": port, "tcp": self.tcp, "server": None,
            "baseline": dict(knobs), "applied": dict(knobs), "original": {},
        }  # fmt: skip
        self.state.save(st)  # before the start: a failed setup is cleaned up by teardown
        st["server"] = self._spawn(st, knobs).to_json()
        self.state.save(st)

    def _running(self) -> tuple[dict[str, Any], ProcessIdentity]:
        """The saved state of a server that still runs, and its process."""
        st = self.state.load()
        if st and owned_private_dir(st.get("data"), _server_uid(), self.state) is not None:
            server = verified(st.get("server"), _binary("redis-server"), _server_uid())
            if server is not None:
                return st, server
            gone = gone_after_restart("Redis", st.get("restart"))
            if gone is not None:
                raise TargetError(gone)
        raise self.state.not_running("Redis", "redis")

    def apply(self, knobs: Mapping[str, str]) -> dict[str, str]:
        st, server = self._running()
        _check_knobs(knobs)
        endpoint = self._endpoint(st)
        baseline: dict[str, str] = st["baseline"]
        applied: dict[str, str] = st["applied"]
        previous = dict(applied)  # what the server runs with: for a failed restart
        original: dict[str, str] = st["original"]
        want = {**baseline, **knobs}
        changes: dict[str, str] = {k: v for k, v in want.items() if applied.get(k) != v}
        for k in applied:
            if k not in want:
                changes[k] = original.get(k, "")
        restart: list[str] = []  # the immutable knobs: set by a restart
        for k, v in changes.items():
            if k not in original and k not in baseline:
                with contextlib.suppress(RedisReplyError):
                    got = redis_command(endpoint, "CONFIG", "GET", k)
                    if isinstance(got, list) and len(got) == 2:
                        original[k] = str(got[1])
            try:
                redis_command(endpoint, "CONFIG", "SET", k, v)
            except RedisReplyError as exc:
                msg = str(exc)
                if "immutable" in msg or "protected" in msg:
                    restart.append(k)
                    continue
                raise TargetError(f"Redis rejected knob {k}={v}: {msg}") from None
            applied[k] = v
        if restart:
            if not kill(server):  # it still runs: starting another would find its port taken
                raise TargetError(
                    f"Redis needs a restart for {', '.join(restart)}, but its server (pid "
                    f"{server.pid}) did not exit after SIGKILL"
                )
            try:
                new = self._spawn(st, want)
            except TargetError as exc:
                asked = ", ".join(f"{k}={changes[k]}" for k in restart)
                raise self._restore(st, previous, restart, f"knob {asked}: {exc}") from None
            st["server"] = new.to_json()
            # the trial running this must not kill it as its leftover
            st["restart"] = restart_note(new, restart, hand_over(new))
            applied = dict(want)
        applied = {k: v for k, v in applied.items() if k in want}
        st.update(applied=applied, original=original)
        self.state.save(st)
        return applied

    def _restore(
        self, st: dict[str, Any], knobs: dict[str, str], restart: list[str], why: str
    ) -> TargetError:
        """Start the server again with ``knobs`` (those it ran with) after a restart for
        ``restart`` failed (``why``), so that the next trial finds one; the error to
        raise, saying whether a server runs."""
        try:
            new = self._spawn(st, knobs)
        except TargetError as exc:
            st.update(server=None, restart=None)
            self.state.save(st)
            return TargetError(
                f"Redis did not restart with {why}; nor with its previous knobs: {exc}. "
                "No Redis server runs now: run teardown, then setup"
            )
        st.update(server=new.to_json(), applied=knobs)
        st["restart"] = restart_note(new, restart, hand_over(new))  # as for any restart
        self.state.save(st)
        return TargetError(f"Redis did not restart with {why} (it runs again without it)")

    def reset(self, workload: Mapping[str, Any] | None = None) -> None:
        st, _ = self._running()
        redis_command(self._endpoint(st), "FLUSHALL")

    def stop(self) -> None:
        self._stop_leftover(graceful=True)
        self.state.remove_dir()

    def describe(self) -> dict[str, Any]:
        st, server = self._running()
        endpoint = self._endpoint(st)
        info = str(redis_command(endpoint, "INFO", "server"))
        version = re.search(r"redis_version:(\S+)", info)
        config: dict[str, str] = {}
        names = ["save", "appendonly", "maxmemory", "io-threads", *st["applied"], *st["original"]]
        for k in dict.fromkeys(names):
            got = redis_command(endpoint, "CONFIG", "GET", k)
            if isinstance(got, list) and len(got) == 2:
                config[k] = str(got[1])
        return {
            "target": self.name,
            "version": version.group(1) if version else "",
            "port": st["port"],
            "tcp": bool(st.get("tcp")),
            "socket": endpoint.socket,
            "state": str(self.state.path),
            "pid": server.pid,
            "config": config,
        }

    # -- the workload ----------------------------------------------------------------
    def run(self, workload: Mapping[str, Any]) -> RunResult:
        w = dict(workload)
        knobs = dict(w.pop("knobs", {}) or {})
        applied = self.apply(knobs)
        st, _ = self._running()
        endpoint = self._endpoint(st)
        where = ["-h", HOST, "-p", str(st["port"])] if st.get("tcp") else ["-s", endpoint.socket]
        argv = [
            _binary("redis-benchmark"), *where,
            "-t", str(w.get("tests", "set,get")),
            "-n", str(int(w.get("requests", 100_000))),
            "-c", str(int(w.get("clients", 50))),
            "-d", str(int(w.get("data_size", 3))),
            "-P", str(int(w.get("pipeline", 1))),
        ]  # fmt: skip
        if int(w.get("keyspace", 0)) > 0:
            argv += ["-r", str(int(w["keyspace"]))]
        if int(w.get("threads", 0)) > 0:
            argv += ["--threads", str(int(w["threads"]))]
        proc = self._benchmark(endpoint, argv)
        out = proc.stdout.decode(errors="replace")
        if proc.returncode != 0:
            err = (bench_errors(proc.stderr.decode(errors="replace")) or out).strip()[-400:]
            raise TargetError(f"redis-benchmark exited with status {proc.returncode}: {err}")
        tests = parse_redis_benchmark(out)
        pi: dict[str, float] = {}
        units: dict[str, list[float]] = {}
        for i, (test, rep) in enumerate(tests.items()):
            s = slug(test)
            pi[f"{s}_rps"] = rep["rps"]
            for key in ("avg", "min", "p50", "p95", "p99", "max"):
                if f"{key}_ms" in rep:
                    pi[f"{s}_{key}_ms"] = rep[f"{key}_ms"]
            units[f"{s}_rps"] = rep["interval_rps"]
            if i == 0:
                pi["throughput"] = rep["rps"]
                for key in ("avg", "p50", "p95", "p99", "max"):
                    if f"{key}_ms" in rep:
                        name = "mean" if key == "avg" else key
                        pi[f"latency_ms_{name}"] = rep[f"{key}_ms"]
                units["throughput"] = rep["interval_rps"]
        version = _version()
        return RunResult(
            self.name,
            str(w.get("tests", "set,get")),
            pi=pi,
            units=units,
            report={"tests": tests, "argv": argv, "throughput_unit": "requests/s"},
            knobs=applied,
            version=version,
            params=w,
        )

    @staticmethod
    def _benchmark(endpoint: Endpoint, argv: list[str]) -> subprocess.CompletedProcess[bytes]:
        """Run redis-benchmark (``argv``) as the run's own ACL user (see
        :func:`bench_acl`): only that user's one-run password is on its command line,
        never the server's. The report's argv leaves it out."""
        with run_user(endpoint, BENCH_USER) as password:
            return subprocess.run(
                [*argv, "--user", BENCH_USER, "-a", password],
                capture_output=True, stdin=subprocess.DEVNULL, check=False,
            )  # fmt: skip


@contextlib.contextmanager
def run_user(endpoint: Endpoint, name: str) -> Iterator[str]:
    """An ACL user ``name`` made for one run with the rights of :func:`bench_acl` and a
    fresh password (yielded), deleted after it (which also closes its connections)."""
    password = new_secret()
    redis_command(endpoint, "ACL", "SETUSER", name, *bench_acl(password))
    try:
        yield password
    finally:
        with contextlib.suppress(OSError, RedisReplyError, ConnectionError):
            redis_command(endpoint, "ACL", "DELUSER", name)


#: what redis-benchmark says on every run as the benchmark user: the user may not read
#: the server's config (CONFIG GET would show the password), and -a is on its argv
_EXPECTED_WARNINGS = ("WARNING: Could not fetch server CONFIG", "Warning: Using a password")


def bench_errors(stderr: str) -> str:
    """redis-benchmark's stderr without the warnings every run as the benchmark user
    prints (its CONFIG GET refused, ``-a`` on its argv).

    >>> bench_errors("WARNING: Could not fetch server CONFIG\\nERR wrong\\n")
    'ERR wrong'
    """
    keep = [ln for ln in stderr.splitlines() if not ln.startswith(_EXPECTED_WARNINGS)]
    return "\n".join(keep)


def _version() -> str:
    try:
        out = subprocess.run(
            [_binary("redis-server"), "--version"], capture_output=True, check=False
        ).stdout.decode()
    except TargetError:
        return ""
    m = re.search(r"v=(\S+)", out)
    return m.group(1) if m else out.strip()
