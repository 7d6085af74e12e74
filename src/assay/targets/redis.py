"""Redis with ``redis-benchmark``: a private server on a free loopback port.

``setup`` starts ``redis-server`` bound to 127.0.0.1 on a free port (``--port`` to
choose one), with persistence off (``save ""``, ``appendonly no``) unless a knob asks
for it (``--knob appendonly=yes``, ``--knob "save=60 1000"``); the ``--knob``s given
to setup are its baseline, passed on the server's command line. ``run`` lays its
``--knob``s over the baseline with ``CONFIG SET`` (knobs a run no longer names go
back to their baseline value; a knob Redis cannot change at run time restarts the
server with it), runs ``redis-benchmark`` and parses its report: per-command
throughput (requests/s) and latency (avg, min, p50, p95, p99, max in ms).
``reset`` empties the database (FLUSHALL); ``teardown`` stops the server and removes
its files. The state directory (``--state``) holds the pid, port and knobs.

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
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from assay.targets.base import (
    RunResult,
    StateDir,
    Target,
    TargetError,
    check_port_free,
    free_port,
    missing_binary,
    pid_alive,
)

HOST = "127.0.0.1"
_SECTION = re.compile(r"^====== (.+?) ======\s*$", re.MULTILINE)
_PROGRESS = re.compile(
    r"(?P<test>[^\r\n:]+): rps=(?P<rps>[0-9.]+|-?nan) \(overall: [^)]*\) "
    r"avg_msec=(?P<avg>[0-9.]+|-?nan)"
)
_THROUGHPUT = re.compile(r"throughput summary:\s*([0-9.]+)\s*requests per second")
_LAT_HEAD = re.compile(r"latency summary \(msec\):[ \t]*\n[ \t]*([a-z0-9 \t]+)\n[ \t]*([0-9. \t]+)")


class RedisReplyError(RuntimeError):
    """Redis answered a command with an error reply."""


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


def redis_command(port: int, *args: str, timeout: float = 10.0) -> Any:
    """Send one command to the Redis server on ``127.0.0.1:port`` and return its reply."""
    with socket.create_connection((HOST, port), timeout=timeout) as s:
        s.sendall(_encode(args))
        with s.makefile("rb") as f:
            return _read_reply(f)


def _binary(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise missing_binary(name, "redis-server" if name == "redis-server" else "redis-tools")
    return path


class RedisTarget(Target):
    """Redis with redis-benchmark: a private server on a free loopback port."""

    name = "redis"

    def __init__(self, state: str, port: int | None = None) -> None:
        self.state = StateDir(state)
        self.port = port

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        g = parser.add_argument_group("redis")
        g.add_argument("--state", default="/tmp/assay-redis", help="state directory")
        g.add_argument("--port", type=int, help="setup: the port (default: a free one)")
        g.add_argument("--tests", default="set,get", help="redis-benchmark -t (commands)")
        g.add_argument("--requests", type=int, default=100_000, help="requests per command")
        g.add_argument("--clients", type=int, default=50, help="parallel connections")
        g.add_argument("--data-size", type=int, default=3, help="value size in bytes")
        g.add_argument("--pipeline", type=int, default=1, help="requests per pipeline")
        g.add_argument("--keyspace", type=int, default=0, help="random keys (-r; 0: one)")
        g.add_argument("--threads", type=int, default=0, help="benchmark threads (0: one)")

    @classmethod
    def from_options(cls, opts: argparse.Namespace) -> RedisTarget:
        return cls(opts.state, opts.port)

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
    def _spawn(self, port: int, knobs: Mapping[str, str]) -> int:
        server = _binary("redis-server")
        self.state.path.mkdir(parents=True, exist_ok=True)
        log = self.state.path / "redis.log"
        argv = [
            server,
            "--port", str(port),
            "--bind", HOST,
            "--save", "",
            "--appendonly", "no",
            "--protected-mode", "no",
            "--daemonize", "no",
            "--dir", str(self.state.path),
        ]  # fmt: skip
        for k, v in knobs.items():
            argv += [f"--{k}", *(v.split() if k == "save" and v else [v])]
        with open(log, "ab") as logf:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=logf,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # not in the process group of the trial
                cwd=self.state.path,
            )
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise TargetError(self._start_failure(log, knobs))
            with contextlib.suppress(OSError, RedisReplyError, ConnectionError):
                if redis_command(port, "PING", timeout=1) == "PONG":
                    return proc.pid
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        raise TargetError(f"redis-server did not answer PING within 15 s; its log: {log}")

    def _start_failure(self, log: Path, knobs: Mapping[str, str]) -> str:
        text = log.read_text(errors="replace") if log.exists() else ""
        tail = " ".join(text.strip().splitlines()[-4:])[-400:]
        bad = [k for k in knobs if f"'{k}'" in text or f"{k}" in text.split("FATAL")[-1]]
        if "FATAL CONFIG" in text or "Bad directive" in text or "argument" in text:
            which = f"knob {bad[0]}={knobs[bad[0]]}" if bad else "a knob"
            return f"redis-server rejected {which}: {tail}"
        if "Address already in use" in text:
            return f"redis-server could not listen: the port is taken: {tail}"
        return f"redis-server exited at start: {tail or 'no output'} (log: {log})"

    def _stop_leftover(self) -> None:
        st = self.state.load()
        if st and pid_alive(int(st.get("pid", 0))):
            with contextlib.suppress(OSError):
                os.kill(int(st["pid"]), signal.SIGKILL)
            _wait_gone(int(st["pid"]))
        self.state.clear()

    def start(self, knobs: Mapping[str, str], workload: Mapping[str, Any] | None = None) -> None:
        _binary("redis-server")
        _binary("redis-benchmark")
        self._stop_leftover()
        if self.port is not None:
            check_port_free(self.port)
        port = self.port or free_port()
        pid = self._spawn(port, knobs)
        self.state.save(
            {"pid": pid, "port": port, "baseline": dict(knobs), "applied": dict(knobs),
             "original": {}}
        )  # fmt: skip

    def _running(self) -> dict[str, Any]:
        return self.state.running("Redis", "redis")

    def apply(self, knobs: Mapping[str, str]) -> dict[str, str]:
        st = self._running()
        port = int(st["port"])
        baseline: dict[str, str] = st["baseline"]
        applied: dict[str, str] = st["applied"]
        original: dict[str, str] = st["original"]
        want = {**baseline, **knobs}
        changes: dict[str, str] = {k: v for k, v in want.items() if applied.get(k) != v}
        for k in applied:
            if k not in want:
                changes[k] = original.get(k, "")
        restart = False
        for k, v in changes.items():
            if k not in original and k not in baseline:
                with contextlib.suppress(RedisReplyError):
                    got = redis_command(port, "CONFIG", "GET", k)
                    if isinstance(got, list) and len(got) == 2:
                        original[k] = str(got[1])
            try:
                redis_command(port, "CONFIG", "SET", k, v)
            except RedisReplyError as exc:
                msg = str(exc)
                if "immutable" in msg or "protected" in msg:
                    restart = True
                    continue
                raise TargetError(f"Redis rejected knob {k}={v}: {msg}") from None
            applied[k] = v
        if restart:
            with contextlib.suppress(OSError):
                os.kill(int(st["pid"]), signal.SIGKILL)
            _wait_gone(int(st["pid"]))
            st["pid"] = self._spawn(port, want)
            applied = dict(want)
        applied = {k: v for k, v in applied.items() if k in want}
        st.update(applied=applied, original=original)
        self.state.save(st)
        return applied

    def reset(self, workload: Mapping[str, Any] | None = None) -> None:
        st = self._running()
        redis_command(int(st["port"]), "FLUSHALL")

    def stop(self) -> None:
        st = self.state.load()
        if st and pid_alive(int(st.get("pid", 0))):
            with contextlib.suppress(OSError, RedisReplyError, ConnectionError):
                redis_command(int(st["port"]), "SHUTDOWN", "NOSAVE", timeout=2)
            _wait_gone(int(st["pid"]), 5)
            if pid_alive(int(st["pid"])):
                os.kill(int(st["pid"]), signal.SIGKILL)
        for name in ("state.json", "redis.log", "dump.rdb", "appendonly.aof"):
            p = self.state.path / name
            if p.is_dir():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)
        shutil.rmtree(self.state.path / "appendonlydir", ignore_errors=True)
        with contextlib.suppress(OSError):
            self.state.path.rmdir()

    def describe(self) -> dict[str, Any]:
        st = self._running()
        port = int(st["port"])
        info = str(redis_command(port, "INFO", "server"))
        version = re.search(r"redis_version:(\S+)", info)
        config: dict[str, str] = {}
        names = ["save", "appendonly", "maxmemory", "io-threads", *st["applied"], *st["original"]]
        for k in dict.fromkeys(names):
            got = redis_command(port, "CONFIG", "GET", k)
            if isinstance(got, list) and len(got) == 2:
                config[k] = str(got[1])
        return {
            "target": self.name,
            "version": version.group(1) if version else "",
            "port": port,
            "pid": st["pid"],
            "config": config,
        }

    # -- the workload ----------------------------------------------------------------
    def run(self, workload: Mapping[str, Any]) -> RunResult:
        w = dict(workload)
        knobs = dict(w.pop("knobs", {}) or {})
        applied = self.apply(knobs)
        st = self._running()
        argv = [
            _binary("redis-benchmark"),
            "-h", HOST, "-p", str(st["port"]),
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
        proc = subprocess.run(argv, capture_output=True, stdin=subprocess.DEVNULL, check=False)
        out = proc.stdout.decode(errors="replace")
        if proc.returncode != 0:
            err = (proc.stderr.decode(errors="replace") or out).strip()[-400:]
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


def _version() -> str:
    try:
        out = subprocess.run(
            [_binary("redis-server"), "--version"], capture_output=True, check=False
        ).stdout.decode()
    except TargetError:
        return ""
    m = re.search(r"v=(\S+)", out)
    return m.group(1) if m else out.strip()


def _wait_gone(pid: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while pid_alive(pid) and time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)
        time.sleep(0.02)
