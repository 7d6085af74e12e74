"""A stopped server counts as gone only once it has exited, its files (and so its listening
socket) closed; a restart that finds the port still taken tries again, and a failed
restart leaves a server running or says that none does (issue #57, item 5).

The kernel drops a process's program (``/proc/PID/exe``) before it closes its files:
while it frees a large memory after SIGKILL, or while its main thread has ended and
another still runs. Both are made here: a child with 512 MB, and a child whose main
thread ends (``pthread_exit``) while a second thread holds its socket until told.

The Redis tests run against a stand-in ``redis-server`` (the running Python under that
name, serving the few commands the target sends; see ``FAKE_REDIS``) and against the
real one where it is installed.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from assay.targets import process, redis
from assay.targets.base import TargetError, free_port
from assay.targets.process import ProcessIdentity, kill, verified, wait_gone
from assay.targets.redis import LOG, RedisTarget

HOST = "127.0.0.1"
#: an upper bound for what a loaded machine takes; never what a test expects
PATIENCE = 60.0

#: a child holding a listening socket (its port on stdout) and ``sys.argv[1]`` MB
BIG = """
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
blob = bytearray(b"\\x01") * (int(sys.argv[1]) << 20)
print(s.getsockname()[1], flush=True)
sys.stdin.readline()
"""

#: a child holding a listening socket: its main thread ends at the first line on stdin,
#: a second thread closes the socket and exits half a second after the second line
HALF_EXITED = """
import ctypes, os, socket, sys, threading, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
print(s.getsockname()[1], flush=True)
sys.stdin.readline()
def hold():
    sys.stdin.readline()
    time.sleep(0.5)
    s.close()
    os._exit(0)
threading.Thread(target=hold).start()
ctypes.CDLL(None).pthread_exit(None)
"""


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((HOST, port))
        except OSError:
            return False
        return True


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def _until(cond: Callable[[], bool], what: str) -> None:
    """Wait for ``cond`` (set-up, not a check: ``PATIENCE`` is only an upper bound)."""
    deadline = time.monotonic() + PATIENCE
    while not cond():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.01)


@pytest.fixture(params=["pidfd", "proc"])
def how(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test with a pidfd and without one (reading /proc, as before Linux 5.3)."""
    if request.param == "proc":
        monkeypatch.delattr(os, "pidfd_open")
    elif not hasattr(os, "pidfd_open"):
        pytest.skip("no os.pidfd_open here")
    return str(request.param)


@pytest.fixture
def child() -> Iterator[Callable[..., tuple[subprocess.Popen[bytes], int]]]:
    """Start a Python child (source and arguments); it and its port (first line)."""
    procs: list[subprocess.Popen[bytes]] = []

    def start(source: str, *args: str) -> tuple[subprocess.Popen[bytes], int]:
        p = subprocess.Popen(
            [sys.executable, "-c", source, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        procs.append(p)
        assert p.stdout is not None
        return p, int(p.stdout.readline() or b"0")

    yield start
    for p in procs:
        p.kill()
        p.wait()


def _say(p: subprocess.Popen[bytes]) -> None:
    assert p.stdin is not None
    p.stdin.write(b"\n")
    p.stdin.flush()


def _identity(p: subprocess.Popen[bytes]) -> ProcessIdentity:
    ident = ProcessIdentity.of(p.pid)
    assert ident is not None
    return ident


def test_kill_returns_once_the_port_of_a_large_process_is_free(
    how: str, child: Callable[..., tuple[subprocess.Popen[bytes], int]]
) -> None:
    # freeing 512 MB at exit keeps the socket open after the exe link is gone
    p, port = child(BIG, "512")
    assert not _port_free(port)
    assert kill(_identity(p), PATIENCE)
    assert _port_free(port)


def test_a_process_whose_main_thread_ended_is_not_gone_while_another_runs(
    how: str, child: Callable[..., tuple[subprocess.Popen[bytes], int]]
) -> None:
    p, port = child(HALF_EXITED)
    ident = _identity(p)
    _say(p)  # the main thread ends: a zombie leader, no exe, the socket held
    _until(lambda: _state(p.pid) == "Z", "the main thread to end")
    assert ProcessIdentity.of(p.pid) is None
    assert not ident.is_running()
    assert not wait_gone(ident, 0.2)  # it cannot exit before the second line
    assert not _port_free(port)
    _say(p)
    assert wait_gone(ident, PATIENCE)
    assert _port_free(port)


def test_kill_waits_for_a_process_that_is_exiting(
    how: str, child: Callable[..., tuple[subprocess.Popen[bytes], int]]
) -> None:
    # no signal reaches it (it no longer shows its identity), but kill still waits
    p, port = child(HALF_EXITED)
    ident = _identity(p)
    _say(p)
    _until(lambda: _state(p.pid) == "Z", "the main thread to end")
    _say(p)
    assert kill(ident, PATIENCE)
    assert _port_free(port)


def test_a_zombie_is_gone_and_reaped(
    how: str, child: Callable[..., tuple[subprocess.Popen[bytes], int]]
) -> None:
    p, _ = child(BIG, "0")
    ident = _identity(p)
    _say(p)  # it exits; unreaped, it stays a zombie
    _until(lambda: _state(p.pid) == "Z", "the child to exit")
    assert wait_gone(ident, 0)  # no waiting: a zombie has closed its files
    with pytest.raises(ChildProcessError):
        os.waitpid(p.pid, os.WNOHANG)  # reaped by wait_gone
    assert wait_gone(ident, 0)  # and gone for good


def test_a_live_process_is_not_gone(
    how: str, child: Callable[..., tuple[subprocess.Popen[bytes], int]]
) -> None:
    p, port = child(BIG, "0")
    assert not wait_gone(_identity(p), 0.1)
    assert p.poll() is None and not _port_free(port)


@pytest.mark.parametrize("other", [{"start": 1}, {"exe": "/usr/bin/other"}, {"uid": 12345}])
def test_another_process_under_the_pid_is_neither_waited_for_nor_signalled(
    how: str, child: Callable[..., tuple[subprocess.Popen[bytes], int]], other: dict[str, object]
) -> None:
    p, port = child(BIG, "0")
    ident = _identity(p)
    recorded = dataclasses.replace(ident, **other)  # type: ignore[arg-type]
    assert wait_gone(recorded, 0)  # the recorded process is gone: its pid was reused
    kill(recorded, 0)
    assert p.poll() is None and ProcessIdentity.of(p.pid) == ident and not _port_free(port)


# -- Redis: a restart that finds the port still taken ---------------------------------

#: ``redis-server`` for the tests: the running Python, which runs this before its
#: ``-`` program (stdin) when started under that name. It reads the password from
#: stdin, refuses a non-numeric ``--databases`` (as Redis does), exits when its TCP port
#: is taken (with Redis's words), and answers AUTH, PING, CONFIG (``databases`` and
#: ``io-threads`` are immutable), SHUTDOWN on its Unix socket.
FAKE_REDIS = r"""
import os, socket, sys
if os.path.basename(sys.orig_argv[0]) == "redis-server":
    args, opts, key = sys.orig_argv[2:], {}, None
    for a in args:
        if a.startswith("--"):
            key = a[2:]
            opts[key] = ""
        elif key is not None:
            opts[key] = (opts[key] + " " + a).strip()
    password = sys.stdin.readline().split()[1]
    if not opts.get("databases", "16").isdigit():
        print("*** FATAL CONFIG FILE ERROR (Redis 7.0.0) ***", flush=True)
        print(">>> 'databases \"%s\"'" % opts["databases"], flush=True)
        print("argument couldn't be parsed into an integer", flush=True)
        os._exit(1)
    port = int(opts.get("port", "0"))
    if port:
        tcp = socket.socket()
        tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            tcp.bind(("127.0.0.1", port))
        except OSError:
            print("Warning: Could not create server TCP listening socket 127.0.0.1:%d: "
                  "bind: Address already in use" % port, flush=True)
            print("Failed listening on port %d (tcp), aborting." % port, flush=True)
            os._exit(1)
        tcp.listen()
    path = opts["unixsocket"]
    if os.path.exists(path):
        os.unlink(path)
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(path)
    unix.listen()
    print("Ready to accept connections", flush=True)
    config = {"databases": opts.get("databases", "16"), "io-threads": "1"}
    while True:
        conn, _ = unix.accept()
        f = conn.makefile("rwb")
        try:
            while True:
                head = f.readline()
                if not head:
                    break
                cmd = []
                for _ in range(int(head[1:])):
                    f.readline()
                    cmd.append(f.readline()[:-2].decode())
                name = cmd[0].upper()
                if name == "AUTH":
                    f.write(b"+OK\r\n" if cmd[1] == password else b"-WRONGPASS\r\n")
                elif name == "PING":
                    f.write(b"+PONG\r\n")
                elif name == "SHUTDOWN":
                    os._exit(0)
                elif name == "CONFIG" and cmd[1].upper() == "GET":
                    v = config.get(cmd[2], "").encode()
                    k = cmd[2].encode()
                    f.write(b"*2\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v))
                elif name == "CONFIG" and cmd[2] in ("databases", "io-threads"):
                    f.write(b"-ERR CONFIG SET failed (possibly related to argument '%s') - "
                            b"can't set immutable config\r\n" % cmd[2].encode())
                else:
                    f.write(b"+OK\r\n")
                f.flush()
        except (OSError, ValueError, IndexError):
            pass
        conn.close()
"""


@pytest.fixture(params=["stand-in", "real"])
def redis_server(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> str:
    """The stand-in ``redis-server`` (first on PATH) or the real one (when installed)."""
    if request.param == "real":
        if not (shutil.which("redis-server") and shutil.which("redis-benchmark")):
            pytest.skip("Redis not installed")
        return "real"
    bindir, site = tmp_path / "bin", tmp_path / "site"
    bindir.mkdir()
    site.mkdir()
    for name in ("redis-server", "redis-benchmark"):
        (bindir / name).symlink_to(os.path.realpath(sys.executable))
    (site / "sitecustomize.py").write_text(FAKE_REDIS, encoding="utf-8")
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("PYTHONPATH", str(site))
    # as root, as the user running the tests: the redis user may not reach this Python
    monkeypatch.setattr(redis, "_server_user", lambda: None)
    return "stand-in"


@pytest.fixture
def target(redis_server: str, tmp_path: Path) -> Iterator[RedisTarget]:
    """A Redis target set up on a TCP port of its own."""
    t = RedisTarget(str(tmp_path / "state"), port=free_port())
    t.start({})
    yield t
    t.stop()


def _saved(t: RedisTarget) -> dict[str, Any]:
    st = t.state.load()
    assert st is not None
    return st


def _server(t: RedisTarget) -> ProcessIdentity | None:
    return verified(_saved(t)["server"], shutil.which("redis-server") or "", redis._server_uid())


def _hold_port_after_kill(
    monkeypatch: pytest.MonkeyPatch, port: int, release: bool, t: RedisTarget
) -> list[socket.socket]:
    """Make the restart's kill leave ``port`` taken by a plain socket: released (when
    ``release``) once the new server has logged that it found the port taken."""
    held: list[socket.socket] = []
    real_kill = process.kill

    def kill_then_hold(ident: ProcessIdentity, timeout: float = 10.0) -> bool:
        gone = real_kill(ident, timeout)
        s = socket.socket()
        s.bind((HOST, port))  # fails if kill returned before the old server's port was free
        s.listen()
        held.append(s)
        if release:
            logged = len(t.state.read(LOG) or "")

            def release_when_refused() -> None:
                deadline = time.monotonic() + PATIENCE
                while time.monotonic() < deadline:
                    if "Address already in use" in (t.state.read(LOG) or "")[logged:]:
                        break
                    time.sleep(0.01)
                s.close()

            threading.Thread(target=release_when_refused, daemon=True).start()
        return gone

    monkeypatch.setattr(redis, "kill", kill_then_hold)
    return held


def test_a_restart_tries_again_while_the_old_port_is_taken(
    target: RedisTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(redis, "BIND_RETRY_S", PATIENCE)
    old = _server(target)
    assert old is not None and target.port is not None
    _hold_port_after_kill(monkeypatch, target.port, True, target)
    applied = target.apply({"databases": "32"})  # immutable: a restart
    assert applied["databases"] == "32"
    new = _server(target)
    assert new is not None and new != old
    log = target.state.read(LOG) or ""
    assert "Address already in use" in log  # the first start found the port taken
    assert log.count("Ready to accept connections") >= 2


def test_a_restart_that_cannot_listen_names_the_port_and_leaves_no_stale_server(
    target: RedisTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(redis, "BIND_RETRY_S", 0.3)  # the port stays taken: shorten the test
    assert target.port is not None
    held = _hold_port_after_kill(monkeypatch, target.port, False, target)
    try:
        with pytest.raises(TargetError) as err:
            target.apply({"databases": "32"})
    finally:
        for s in held:
            s.close()
    msg = str(err.value)
    assert f"{HOST}:{target.port}" in msg and "taken" in msg and "databases=32" in msg
    assert "No Redis server runs now" in msg
    with pytest.raises(TargetError, match="no Redis server runs"):
        target.apply({})


def test_a_restart_with_a_rejected_knob_brings_the_server_back(target: RedisTarget) -> None:
    old = _server(target)
    with pytest.raises(TargetError) as err:
        target.apply({"databases": "many"})
    assert "databases=many" in str(err.value) and "runs again without it" in str(err.value)
    new = _server(target)
    assert new is not None and new != old
    assert _saved(target)["applied"] == {}
    assert target.apply({}) == {}  # the next trial finds the server
