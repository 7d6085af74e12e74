"""One Redis server of a primary + replica pair, on one address (the multi-host example's
setup and teardown steps), and the benchmark client that logs in to it.

    python3 redis_pair.py start ADDRESS PORT [--replicaof PRIMARY] [--appendfsync POLICY]
                                [--config NAME VALUE]...
    python3 redis_pair.py bench ADDRESS PORT [REDIS-BENCHMARK OPTIONS...]
    python3 redis_pair.py stop ADDRESS PORT

Its files lie in a private directory, under the rules of Assay's targets
(:mod:`assay.targets.private`: mode 700, of this user, never a link, in directories no
other user can change): ``$REDIS_PAIR_STATE``, else ``$XDG_RUNTIME_DIR/assay/targets/
redis-pair`` or ``~/.cache/assay/targets/redis-pair``.  Its file ``password`` (mode 600)
is the password of every server: a primary's ``start`` makes it when there is none; on
real machines copy it to the same place on the replica's and the client's hosts.

``start`` writes the server's settings (bound to ADDRESS only, no persistence, the
password; a replica's primary and the password it logs in with) to a mode 600 file in
the folder ADDRESS-PORT of that directory, where the server also keeps its pid file,
log and temporary files; runs ``redis-server`` on it; and returns once the server
answers (a replica: once its link to the primary is up).  ``stop`` shuts it down and
removes its folder.  ``bench`` runs ``redis-benchmark`` against it as a user made for
the run, with the rights of the benchmark's data commands only, deleted afterwards:
redis-benchmark takes a password only on its command line, which every local user can
read, so it never gets the servers'.  redis-cli gets the password in REDISCLI_AUTH.
No password is on a command line, and no shell is involved.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from assay.targets.base import TargetError
from assay.targets.private import StateDir, default_state_dir, new_secret
from assay.targets.redis import bench_acl, bench_errors

STATE_ENV = "REDIS_PAIR_STATE"  # the private directory, when not the default one
PASSWORD = "password"  # in the private directory, mode 600
CONFIG, LOG, PID = "redis.conf", "redis.log", "redis.pid"  # in a server's folder
_ADDRESS = re.compile(r"[A-Za-z0-9][A-Za-z0-9.:_-]*")  # an IP address or a host name


def _state() -> StateDir:
    return StateDir(os.environ.get(STATE_ENV) or default_state_dir("redis-pair"))


def _password(state: StateDir, make: bool) -> str:
    """The servers' password; made (a primary's start) when there is none."""
    text = (state.read(PASSWORD) or "").strip()
    if text:
        return text
    if not make:
        raise TargetError(
            f"no Redis password in {state.file(PASSWORD)}: the primary's start makes it; "
            "on another machine than the primary's, copy that file here (mode 600)"
        )
    text = new_secret()
    if not state.write(PASSWORD, text + "\n", exclusive=True):  # another start's came first
        return (state.read(PASSWORD) or "").strip()
    return text


def _server(state: StateDir, address: str, port: int) -> StateDir:
    """The private folder of the server on ``address``:``port``."""
    if not _ADDRESS.fullmatch(address):
        raise TargetError(f"address {address!r}: expected an IP address or a host name")
    state.create()  # the folder's parent: private before anything is made in it
    return StateDir(state.path / f"{address}-{port}")


def _quoted(text: str) -> str:
    """``text`` as one argument of a redis.conf line (a path may hold spaces)."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


#: --appendfsync: "off" keeps no append-only file; the others are Redis's own policies.
FSYNC = ("off", "no", "everysec", "always")


def _config(
    server: StateDir,
    address: str,
    port: int,
    password: str,
    primary: str | None,
    appendfsync: str = "off",
    config: Sequence[tuple[str, str]] = (),
) -> str:
    durable = ["appendonly yes", f"appendfsync {appendfsync}"]
    lines = [
        f"bind {address}",
        f"port {port}",
        "protected-mode yes",
        "daemonize yes",
        'save ""',
        *(["appendonly no"] if appendfsync == "off" else durable),
        f"dir {_quoted(str(server.path))}",
        f"pidfile {_quoted(str(server.file(PID)))}",
        f"logfile {_quoted(str(server.file(LOG)))}",
        f"requirepass {password}",
        # a replica's first sync starts at once: by default the primary waits 5 s for
        # more replicas to share it, and every replica's setup took 5 s (#61: 31 of a
        # sweep's 52 s were its roles set up again, mostly that wait)
        "repl-diskless-sync-delay 0",
    ]
    if primary is not None:
        lines += [f"replicaof {primary} {port}", f"masterauth {password}"]
    lines += [f"{name} {value}" for name, value in config]  # checked by _settings
    return "\n".join(lines) + "\n"


#: --config: a setting's name, and a value of one word (a number, yes/no, a policy).
_NAME = re.compile(r"[a-z][a-z0-9-]{0,63}")
_VALUE = re.compile(r"[A-Za-z0-9._-]{1,64}")
#: What --config may not change: the settings start writes itself (binding, password,
#: files, persistence, replication) and the commands that could run or write anything.
_OURS = {
    "bind", "port", "protected-mode", "daemonize", "save", "appendonly", "appendfsync",
    "dir", "pidfile", "logfile", "requirepass", "replicaof", "slaveof", "masterauth",
    "masteruser", "include", "loadmodule", "rename-command", "unixsocket", "dbfilename",
    "appendfilename", "appenddirname", "aclfile", "tls-port", "enable-debug-command",
    "enable-module-command", "enable-protected-configs",
}  # fmt: skip


def _settings(pairs: Sequence[Sequence[str]]) -> list[tuple[str, str]]:
    """``--config NAME VALUE`` pairs, each a setting of one word (``hz 100``), none of
    those start writes itself; TargetError naming the first that is not."""
    out = []
    for name, value in pairs:
        if not _NAME.fullmatch(name) or name in _OURS:
            raise TargetError(
                f"--config {name!r}: expected the name of a Redis setting other than those "
                "start writes itself (bind, port, dir, password, persistence, replication)"
            )
        if not _VALUE.fullmatch(value):
            raise TargetError(
                f"--config {name} {value!r}: expected one word (letters, digits, ._-)"
            )
        out.append((name, value))
    return out


def _cli(
    address: str, port: int, password: str, *words: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """redis-cli, logged in with ``password`` (in its environment); a command on
    ``stdin`` keeps what it says off the command line too."""
    argv = ["redis-cli", "-h", address, "-p", str(port), *words]
    env = {**os.environ, "REDISCLI_AUTH": password}
    return subprocess.run(
        argv, input=stdin, capture_output=True, text=True, timeout=10, check=False, env=env
    )


def start(
    address: str,
    port: int,
    primary: str | None,
    appendfsync: str = "off",
    config: Sequence[tuple[str, str]] = (),
) -> int:
    state = _state()
    if primary is not None and not _ADDRESS.fullmatch(primary):
        raise TargetError(f"--replicaof {primary!r}: expected an IP address or a host name")
    password = _password(state, make=primary is None)
    server = _server(state, address, port)
    # a server left by an earlier session (its driver killed before its teardown) would
    # answer for the new one, which cannot bind the port (#41)
    if _answers(address, port, password):
        print(
            f"a server already answers on {address}:{port}: an earlier session's, left "
            f"running? 'python3 redis_pair.py stop {address} {port}' stops one of ours (the "
            "study's teardown runs it); else choose another port",
            file=sys.stderr,
        )
        return 1
    server.write(CONFIG, _config(server, address, port, password, primary, appendfsync, config))
    server.file(PID).unlink(missing_ok=True)  # the new server writes its own
    subprocess.run(["redis-server", str(server.file(CONFIG))], check=True, timeout=30)
    shown = "".join(f", {name} {value}" for name, value in config)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if primary is None and _cli(address, port, password, "ping").stdout.strip() == "PONG":
            up = f"primary up on {address}:{port} (appendfsync {appendfsync}{shown})"
            return _ours(server, address, port, password, up)
        if (
            primary is not None
            and "master_link_status:up"
            in _cli(address, port, password, "info", "replication").stdout
        ):
            up = f"replica of {primary} up on {address}:{port} (appendfsync {appendfsync}{shown})"
            return _ours(server, address, port, password, up)
        time.sleep(0.1)
    print((server.read(LOG) or "no log")[-2000:], file=sys.stderr)
    print(f"redis on {address}:{port} did not come up in 30 s", file=sys.stderr)
    if primary is not None:
        print(f"(does {primary} have the password of {state.file(PASSWORD)}?)", file=sys.stderr)
    return 1


def _answers(address: str, port: int, password: str) -> bool:
    """Whether any server answers on ``address``:``port`` (ours, or another's that asks
    another password)."""
    said = _cli(address, port, password, "ping")
    return said.returncode == 0 and "Could not connect" not in said.stdout + said.stderr


def _ours(server: StateDir, address: str, port: int, password: str, up: str) -> int:
    """0 when the server answering is the one this start ran (its pid file's pid)."""
    info = _cli(address, port, password, "info", "server").stdout
    answering = re.search(r"^process_id:([0-9]+)", info, re.M)
    started = (server.read(PID) or "").strip()
    if answering is None or answering.group(1) != started:
        print(
            f"the server answering on {address}:{port} (pid "
            f"{answering.group(1) if answering else 'unknown'}) is not the one started "
            f"(pid file: {started or 'none'})",
            file=sys.stderr,
        )
        return 1
    print(up)
    return 0


def bench(address: str, port: int, options: list[str]) -> int:
    password = _password(_state(), make=False)
    user, secret = f"assay-bench-{secrets.token_hex(4)}", new_secret()
    made = _cli(
        address, port, password, stdin=f"ACL SETUSER {user} {' '.join(bench_acl(secret))}\n"
    )
    if made.stdout.strip() != "OK":
        raise TargetError(
            f"{address}:{port} refused the benchmark's user: {made.stdout}{made.stderr}"
        )
    try:
        argv = ["redis-benchmark", "-h", address, "-p", str(port), *options]
        # stdout (the readings) passes through; stderr without the warnings every run
        # as this user prints (a trial that writes to stderr is warned about)
        done = subprocess.run(
            [*argv, "--user", user, "-a", secret], check=False, stderr=subprocess.PIPE, text=True
        )
        said = bench_errors(done.stderr)
        if said:
            print(said, file=sys.stderr)
        return done.returncode
    finally:
        _cli(address, port, password, stdin=f"ACL DELUSER {user}\n")


#: How long stop waits for its server to stop answering before it kills it.
STOP_S = 3.0


def stop(address: str, port: int) -> int:
    state = _state()
    server = _server(state, address, port)
    password = _password(state, make=False)
    # NOW: no wait for replicas to catch up (one cut off held the teardown 10 s, #61)
    said = _cli(address, port, password, "shutdown", "nosave", "now")
    # gone before the next start on this port asks whether one answers (#61: in 3 of 7
    # runs of the fsync sweep a replica still answered, and its next setup failed);
    # asked again after a second
    began = time.monotonic()
    asked_again = False
    while _answers(address, port, password) and time.monotonic() < began + STOP_S:
        if not asked_again and time.monotonic() > began + 1.0:
            said = _cli(address, port, password, "shutdown", "nosave", "now")
            asked_again = True
        time.sleep(0.05)
    if _answers(address, port, password):
        reply = (said.stdout + said.stderr).strip() or "nothing"
        print(
            f"{address}:{port} still answered {STOP_S:g} s after SHUTDOWN (it said "
            f"{reply!r}): killed",
            file=sys.stderr,
        )
        # ours: the pid file in this user's private folder, a redis-server's pid still
        pid = (server.read(PID) or "").strip() if server.exists() else ""
        with contextlib.suppress(OSError):
            if pid.isdigit() and Path(f"/proc/{pid}/comm").read_text().startswith("redis"):
                os.kill(int(pid), signal.SIGKILL)
    if server.exists():  # refused (TargetError) when not a private folder of this user
        shutil.rmtree(server.path, ignore_errors=True)
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    actions = p.add_subparsers(dest="action", required=True)
    for name in ("start", "stop", "bench"):
        action = actions.add_parser(name)
        action.add_argument("address")
        action.add_argument("port", type=int)
    actions.choices["start"].add_argument("--replicaof", metavar="PRIMARY")
    actions.choices["start"].add_argument(
        "--appendfsync", choices=FSYNC, default="off", help="the append-only file's fsync policy"
    )
    actions.choices["start"].add_argument(
        "--config",
        nargs=2,
        action="append",
        default=[],
        metavar=("NAME", "VALUE"),
        help="a Redis setting of one word (hz 100); repeat for more",
    )
    actions.choices["bench"].add_argument("options", nargs=argparse.REMAINDER)
    a = p.parse_args()
    try:
        if a.action == "start":
            return start(a.address, a.port, a.replicaof, a.appendfsync, _settings(a.config))
        if a.action == "bench":
            return bench(a.address, a.port, a.options)
        return stop(a.address, a.port)
    except TargetError as exc:
        print(f"redis_pair.py {a.action}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
