"""The targets' servers and state are private to the user running Assay.

Planted state (a symbolic link for the state directory, a directory of another user, a
link for ``state.json.tmp`` or ``redis.log``, a ``state.json`` naming an unrelated pid,
a decoy directory and planted programs) is refused or ignored: nothing is signalled,
deleted or written through it, no planted program runs. The servers a study starts
accept the target's own clients and nobody else: the tests connect as the user
``nobody`` (``setpriv``; only where they run as root).
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assay.targets.__main__ import main as targets_main
from assay.targets.base import TargetError
from assay.targets.fio import FILE_NAME, FioTarget
from assay.targets.postgres import PostgresTarget
from assay.targets.postgres import _check_knobs as pg_check_knobs
from assay.targets.private import StateDir, default_state_dir, make_private_dir
from assay.targets.process import ProcessIdentity, send_signal, verified
from assay.targets.redis import BENCH_USER, RedisTarget, redis_command
from assay.targets.redis import _check_knobs as redis_check_knobs

HAVE_PG = any(Path("/usr/lib/postgresql").glob("*/bin/initdb")) and bool(shutil.which("pgbench"))
HAVE_REDIS = bool(shutil.which("redis-server") and shutil.which("redis-benchmark"))
IS_ROOT = os.geteuid() == 0
try:
    NOBODY: pwd.struct_passwd | None = pwd.getpwnam("nobody")
except KeyError:
    NOBODY = None
CAN_BE_NOBODY = IS_ROOT and NOBODY is not None and bool(shutil.which("setpriv"))
needs_root = pytest.mark.skipif(not IS_ROOT, reason="needs root (to make files of other users)")
needs_nobody = pytest.mark.skipif(not CAN_BE_NOBODY, reason="needs root, setpriv and 'nobody'")
needs_pg = pytest.mark.skipif(not HAVE_PG, reason="PostgreSQL not installed")
needs_redis = pytest.mark.skipif(not HAVE_REDIS, reason="Redis not installed")
needs_fio = pytest.mark.skipif(not shutil.which("fio"), reason="fio not installed")


def _target(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay.targets", *args],
                          capture_output=True, text=True, check=False)  # fmt: skip


def _as_nobody(*argv: str) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` as the user nobody (no groups, a bare environment)."""
    return subprocess.run(
        ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", *argv],
        capture_output=True, text=True, check=False, cwd="/",
        env={"PATH": "/usr/bin:/bin", "HOME": "/"},
    )  # fmt: skip


@pytest.fixture
def bystander() -> Iterator[subprocess.Popen[bytes]]:
    """An unrelated process whose pid a planted state file names."""
    proc = subprocess.Popen(["sleep", "60"])
    yield proc
    proc.kill()
    proc.wait()


def _decoy(tmp_path: Path) -> Path:
    """A directory that is not the target's, with files a careless teardown deletes."""
    decoy = tmp_path / "decoy"
    (decoy / "data").mkdir(parents=True)
    for name in ("keep.txt", "data/postmaster.pid", "redis.log", "dump.rdb", FILE_NAME):
        (decoy / name).write_text("precious\n")
    return decoy


def _decoy_intact(decoy: Path) -> bool:
    names = ("keep.txt", "data/postmaster.pid", "redis.log", "dump.rdb", FILE_NAME)
    return all((decoy / n).read_text() == "precious\n" for n in names)


@pytest.fixture
def planted() -> Iterator[tuple[Path, Path]]:
    """A directory of planted programs that leave a mark when run (by any user: the old
    code ran pg_ctl as the postgres user), and the mark."""
    top = Path(tempfile.mkdtemp(prefix="assay-test-planted-"))
    top.chmod(0o777)
    bindir, mark = top / "bin", top / "planted-program-ran"
    bindir.mkdir(mode=0o755)
    for prog in ("pg_ctl", "psql", "pgbench", "initdb", "postgres", "redis-server"):
        (bindir / prog).write_text(f"#!/bin/sh\necho {prog} >> {mark}\n")
        (bindir / prog).chmod(0o755)
    yield bindir, mark
    shutil.rmtree(top, ignore_errors=True)


# -- the state directory ------------------------------------------------------------------
def test_state_dir_is_made_private(tmp_path: Path) -> None:
    sd = StateDir(tmp_path / "a" / "state")
    sd.save({"port": 1})
    st = os.lstat(sd.path)
    assert stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == os.geteuid()
    assert stat.S_IMODE(os.lstat(sd.file("state.json")).st_mode) == 0o600
    assert sd.load() == {"port": 1}


def test_symlinked_state_dir_is_refused(tmp_path: Path) -> None:
    decoy = _decoy(tmp_path)
    link = tmp_path / "state"
    link.symlink_to(decoy)
    with pytest.raises(TargetError, match="symbolic link"):
        StateDir(link).save({"pid": 1})
    with pytest.raises(TargetError, match="symbolic link"):
        RedisTarget(str(link)).stop()  # used to delete redis.log, dump.rdb in the decoy
    with pytest.raises(TargetError, match="symbolic link"):
        PostgresTarget(str(link)).stop()
    assert _decoy_intact(decoy) and not (decoy / "state.json").exists()


def test_state_dir_with_another_mode_is_refused(tmp_path: Path) -> None:
    d = tmp_path / "state"
    d.mkdir(mode=0o755)
    d.chmod(0o755)
    with pytest.raises(TargetError, match="mode 755"):
        StateDir(d).save({"pid": 1})
    assert not (d / "state.json").exists()


@needs_root
def test_state_dir_of_another_user_is_refused(tmp_path: Path) -> None:
    assert NOBODY is not None
    d = tmp_path / "state"
    d.mkdir(mode=0o700)
    (d / "state.json").write_text(json.dumps({"pid": 1, "cluster": str(tmp_path)}))
    os.chown(d, NOBODY.pw_uid, NOBODY.pw_gid)
    with pytest.raises(TargetError, match=f"owner uid {NOBODY.pw_uid}"):
        StateDir(d).load()
    # nor may another user own a directory above it (they could swap the state directory)
    parent = tmp_path / "shared"
    parent.mkdir()
    os.chown(parent, NOBODY.pw_uid, NOBODY.pw_gid)
    with pytest.raises(TargetError, match="can be changed by other users"):
        StateDir(parent / "state").save({"pid": 1})
    assert not (parent / "state").exists()


def test_world_writable_parent_is_refused_unless_sticky(tmp_path: Path) -> None:
    parent = tmp_path / "open"
    parent.mkdir()
    parent.chmod(0o777)
    with pytest.raises(TargetError, match="can be changed by other users"):
        StateDir(parent / "state").save({"pid": 1})
    parent.chmod(0o1777)  # like /tmp: others cannot rename our entries
    StateDir(parent / "state").save({"pid": 1})


def test_planted_state_json_tmp_link_is_not_followed(tmp_path: Path) -> None:
    sd = StateDir(tmp_path / "state")
    sd.save({"n": 0})
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (sd.path / "state.json.tmp").symlink_to(victim)
    sd.save({"n": 1})
    assert victim.read_text() == "precious\n"
    assert sd.load() == {"n": 1} and not (sd.path / "state.json").is_symlink()


def test_planted_state_json_link_is_not_read(tmp_path: Path) -> None:
    sd = StateDir(tmp_path / "state")
    sd.save({"n": 0})
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"pid": 1}))
    (sd.path / "state.json").unlink()
    (sd.path / "state.json").symlink_to(other)
    assert sd.load() is None


def test_planted_log_link_is_refused(tmp_path: Path) -> None:
    sd = StateDir(tmp_path / "state")
    sd.create()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (sd.path / "redis.log").symlink_to(victim)
    with pytest.raises(TargetError):
        os.close(sd.open_log("redis.log"))
    assert victim.read_text() == "precious\n"


def test_default_state_dir_is_per_user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(run))
    assert default_state_dir("redis") == run / "assay" / "targets" / "redis"
    assert PostgresTarget().state.path == run / "assay" / "targets" / "postgres"
    run.chmod(0o755)  # not private: the home directory's cache instead
    home = Path(pwd.getpwuid(os.geteuid()).pw_dir)
    assert default_state_dir("redis") == home / ".cache" / "assay" / "targets" / "redis"
    assert not str(default_state_dir("redis")).startswith("/tmp")


# -- recorded processes ---------------------------------------------------------------------
def test_only_the_recorded_process_is_signalled(bystander: subprocess.Popen[bytes]) -> None:
    ident = ProcessIdentity.of(bystander.pid)
    assert ident is not None and ident.matches(shutil.which("sleep") or "", os.geteuid())
    # the same pid with another start time (a reused pid) or another program: refused
    later = ProcessIdentity(ident.pid, ident.start + 1, ident.exe, ident.uid)
    assert not send_signal(later, 9)
    assert verified(ident.to_json(), "/usr/bin/redis-server", os.geteuid()) is None
    assert verified({"pid": ident.pid}, ident.exe, os.geteuid()) is None  # bare pid
    assert bystander.poll() is None
    assert verified(ident.to_json(), ident.exe, os.geteuid()) == ident


def _plant_state(sd: StateDir, pid: int, decoy: Path, bindir: Path) -> None:
    ident = ProcessIdentity.of(pid)
    assert ident is not None
    sd.save({
        "pid": pid, "server": ident.to_json(), "cluster": str(decoy), "data": str(decoy),
        "bindir": str(bindir), "port": 1, "baseline": {}, "applied": {}, "original": {},
        "scale": 1,
    })  # fmt: skip


@pytest.mark.parametrize("target", ["postgres", "redis"])
def test_planted_state_is_ignored_by_teardown(
    tmp_path: Path, bystander: subprocess.Popen[bytes], planted: tuple[Path, Path], target: str
) -> None:
    decoy = _decoy(tmp_path)
    bindir, mark = planted
    sd = StateDir(tmp_path / "state")
    _plant_state(sd, bystander.pid, decoy, bindir)
    down = _target(target, "teardown", "--state", str(sd.path))
    assert down.returncode == 0, down.stderr
    assert bystander.poll() is None  # not signalled
    assert _decoy_intact(decoy)  # not deleted
    assert not mark.exists()  # no planted program ran
    assert not sd.path.exists()  # the state itself is gone


def test_planted_state_makes_run_refuse(
    tmp_path: Path, bystander: subprocess.Popen[bytes], planted: tuple[Path, Path]
) -> None:
    decoy = _decoy(tmp_path)
    bindir, mark = planted
    sd = StateDir(tmp_path / "state")
    _plant_state(sd, bystander.pid, decoy, bindir)
    for target in ("postgres", "redis"):
        run = _target(target, "run", "--state", str(sd.path), "--duration", "1")
        assert run.returncode == 2 and "setup" in run.stderr and "Traceback" not in run.stderr
    assert not mark.exists() and bystander.poll() is None and _decoy_intact(decoy)


def test_knobs_that_would_open_the_server_are_refused() -> None:
    for knob in ("listen_addresses", "hba_file", "unix_socket_permissions", "port"):
        with pytest.raises(TargetError, match="keep the server private"):
            pg_check_knobs({knob: "*"})
    for knob in ("requirepass", "protected-mode", "bind", "unixsocketperm", "dir"):
        with pytest.raises(TargetError, match="keep the server private"):
            redis_check_knobs({knob: ""})
    pg_check_knobs({"work_mem": "8MB"})
    redis_check_knobs({"maxmemory": "64mb"})


@pytest.mark.parametrize("how", ["other user", "world-writable", "symbolic link"])
def test_cluster_dir_others_can_change_is_refused(tmp_path: Path, how: str) -> None:
    """The cluster is made in --cluster-dir: a folder another user can change (rename
    the cluster, swap it for a link) is refused like such a --state directory."""
    if how == "other user" and not (IS_ROOT and NOBODY is not None):
        pytest.skip("needs root and the user nobody (to make a folder of another user)")
    folder = tmp_path / "folder"
    folder.mkdir(mode=0o755)
    if how == "other user":
        assert NOBODY is not None
        os.chown(folder, NOBODY.pw_uid, NOBODY.pw_gid)
        expected = "can be changed by other users"
    elif how == "world-writable":
        folder.chmod(0o777)
        expected = "can be changed by other users"
    else:
        real, folder = folder, tmp_path / "link"
        folder.symlink_to(real)
        expected = "symbolic link"
    state = tmp_path / "pg"
    up = _target("postgres", "setup", "--state", str(state), "--cluster-dir", str(folder),
                 "--scale", "1")  # fmt: skip
    try:
        assert up.returncode == 2 and expected in up.stderr, up.stderr
        assert "--cluster-dir" in up.stderr and not list(folder.glob("assay-pg-*"))
    finally:
        _target("postgres", "teardown", "--state", str(state))


def test_data_dir_parent_is_checked(tmp_path: Path) -> None:
    """The default parent (TMPDIR) of a server's data directory gets the same checks."""
    parent = tmp_path / "open"
    parent.mkdir()
    parent.chmod(0o777)
    with pytest.raises(TargetError, match="can be changed by other users"):
        make_private_dir("assay-x-", str(parent), StateDir(tmp_path / "st"), None)
    parent.chmod(0o1777)  # sticky, like /tmp
    made = make_private_dir("assay-x-", str(parent), StateDir(tmp_path / "st"), None)
    assert made.parent == parent and stat.S_IMODE(made.stat().st_mode) == 0o700


# -- fio ------------------------------------------------------------------------------------
@needs_fio
def test_fio_does_not_write_or_delete_through_a_symlinked_dir(tmp_path: Path) -> None:
    decoy = _decoy(tmp_path)
    link = tmp_path / "disk"
    link.symlink_to(decoy)
    up = _target("fio", "setup", "--dir", str(link), "--size", "1M")
    assert up.returncode == 2 and "symbolic link" in up.stderr
    down = _target("fio", "teardown", "--dir", str(link))
    assert down.returncode == 2 and "symbolic link" in down.stderr
    assert _decoy_intact(decoy)


@needs_fio
def test_fio_replaces_a_planted_data_file_link(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    disk = tmp_path / "disk"
    disk.mkdir(mode=0o700)
    (disk / FILE_NAME).symlink_to(victim)
    target = FioTarget(str(disk), "1M")
    with pytest.raises(TargetError, match="not a file of this user"):
        target.run({"runtime": 0.2, "size": "1M", "log_interval": 0, "knobs": {}})
    target.start({}, {"size": "1M"})
    assert victim.read_text() == "precious\n"
    assert (disk / FILE_NAME).stat().st_size == 1 << 20 and not (disk / FILE_NAME).is_symlink()
    target.stop()
    assert not disk.exists() and victim.read_text() == "precious\n"


# -- the servers: nobody else connects ----------------------------------------------------
def _setup(target: str, state: Path, *extra: str) -> dict[str, Any]:
    up = _target(target, "setup", "--state", str(state), *extra)
    assert up.returncode == 0, up.stderr
    doc: dict[str, Any] = json.loads(up.stdout)
    return doc


@needs_pg
@needs_nobody
@pytest.mark.slow
@pytest.mark.parametrize("tcp", [False, True])
def test_postgres_admits_its_clients_and_nobody_else(
    tmp_path: Path, bystander: subprocess.Popen[bytes], planted: tuple[Path, Path], tcp: bool
) -> None:
    state = tmp_path / "pg"
    decoy = _decoy(tmp_path)
    bindir, mark = planted
    _plant_state(StateDir(state), bystander.pid, decoy, bindir)  # setup must ignore it
    doc = _setup("postgres", state, "--scale", "1", *(["--tcp"] if tcp else []))
    try:
        assert bystander.poll() is None and _decoy_intact(decoy) and not mark.exists()
        assert doc["tcp"] is tcp
        sock = ["-h", doc["socket_dir"], "-p", str(doc["port"])]
        attack = ["-U", "postgres", "-w", "-X", "-c", "COPY (SELECT 1) TO PROGRAM 'id'"]
        denied = _as_nobody("psql", *sock, *attack)
        assert denied.returncode != 0 and "Permission denied" in denied.stderr
        if tcp:
            denied = _as_nobody("psql", "-h", "127.0.0.1", "-p", str(doc["port"]), *attack)
            assert denied.returncode != 0 and "password" in denied.stderr
        # the password file is the user's alone
        assert _as_nobody("cat", str(state / "pgpass")).returncode != 0
        assert stat.S_IMODE(os.lstat(state / "pgpass").st_mode) == 0o600
        # without the password even root is refused: the server does not trust anyone
        no_pass = subprocess.run(["psql", *sock, "-U", "postgres", "-w", "-c", "SELECT 1"],
                                 capture_output=True, text=True, check=False,
                                 env={"PATH": os.environ["PATH"]})  # fmt: skip
        assert no_pass.returncode != 0 and "password" in no_pass.stderr
        # the target's own clients get in
        run = _target("postgres", "run", "--state", str(state), "--duration", "1",
                      "--progress", "0")  # fmt: skip
        assert run.returncode == 0, run.stderr
        assert json.loads(run.stdout)["pi"]["throughput"] > 0
    finally:
        assert _target("postgres", "teardown", "--state", str(state)).returncode == 0
    assert not Path(doc["cluster"]).exists() and not state.exists()


@needs_redis
@needs_nobody
@pytest.mark.slow
@pytest.mark.parametrize("tcp", [False, True])
def test_redis_admits_its_clients_and_nobody_else(
    tmp_path: Path, bystander: subprocess.Popen[bytes], tcp: bool
) -> None:
    state = tmp_path / "redis"
    decoy = _decoy(tmp_path)
    _plant_state(StateDir(state), bystander.pid, decoy, tmp_path)  # setup must ignore it
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (state / "redis.log").symlink_to(victim)
    doc = _setup("redis", state, *(["--tcp"] if tcp else []))
    try:
        assert bystander.poll() is None and _decoy_intact(decoy)
        assert victim.read_text() == "precious\n" and not (state / "redis.log").is_symlink()
        # not root when the redis user exists
        server_uid = os.stat(f"/proc/{doc['pid']}").st_uid
        redis_user = {p.pw_name: p.pw_uid for p in pwd.getpwall()}.get("redis")
        assert server_uid == (redis_user if redis_user is not None else 0)
        target = RedisTarget(str(state))
        st, _ = target._running()
        endpoint = target._endpoint(st)
        redis_command(endpoint, "SET", "canary", "alive")
        denied = _as_nobody("redis-cli", "-s", doc["socket"], "FLUSHALL")
        assert "Permission denied" in denied.stdout + denied.stderr
        if tcp:
            for cmd in (["FLUSHALL"], ["CONFIG", "SET", "dir", "/"]):
                denied = _as_nobody("redis-cli", "-h", "127.0.0.1", "-p", str(doc["port"]), *cmd)
                assert "NOAUTH" in denied.stdout + denied.stderr
        else:
            assert doc["port"] == 0  # no TCP at all
        assert _as_nobody("cat", str(state / "redis.pass")).returncode != 0
        assert redis_command(endpoint, "GET", "canary") == "alive"
        run = _target("redis", "run", "--state", str(state), "--requests", "2000",
                      "--tests", "set")  # fmt: skip
        assert run.returncode == 0, run.stderr
        assert json.loads(run.stdout)["pi"]["throughput"] > 0
        assert endpoint.password not in run.stdout  # the report does not show it
    finally:
        assert _target("redis", "teardown", "--state", str(state)).returncode == 0
    assert not state.exists() and not Path(doc["socket"]).parent.exists()


def test_help_names_the_private_default_state(capsys: pytest.CaptureFixture[str]) -> None:
    assert targets_main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "NAME: sqlite, postgres, redis, fio" in out
    assert f"mode 700)\n  of this user, by default {default_state_dir('NAME')}" in out
    with pytest.raises(SystemExit):
        targets_main(["redis", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "private state directory (mode 700; default:" in out and "--tcp" in out


# -- the Redis password on no command line ---------------------------------------------
@needs_redis
def test_redis_password_reaches_no_argv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every program the target starts (redis-server, redis-benchmark) gets an argv
    without the server's password; redis-benchmark logs in as a user of its own run."""
    argvs: list[list[str]] = []

    class SpyPopen(subprocess.Popen):  # type: ignore[type-arg]
        def __init__(self, args: Any, *a: Any, **kw: Any) -> None:
            argvs.append([str(x) for x in args])
            super().__init__(args, *a, **kw)

    target = RedisTarget(str(tmp_path / "redis"), tcp=True)
    monkeypatch.setattr(subprocess, "Popen", SpyPopen)  # what the target module calls
    try:
        target.start({"maxmemory": "64mb"})
        target.run({"tests": "set", "requests": 500, "clients": 2, "knobs": {}})
        password = target.state.read("redis.pass")
        assert password and len(password) >= 16
        progs = [os.path.basename(a[0]) for a in argvs]
        assert "redis-server" in progs and "redis-benchmark" in progs
        assert not [a for a in argvs if any(password in x for x in a)]
        st, _ = target._running()
        assert redis_command(target._endpoint(st), "ACL", "USERS") == ["default"]
    finally:
        monkeypatch.undo()
        target.stop()


def _children_running(pid: int, program: str) -> list[int]:
    """The pids of the running children of ``pid`` whose program is ``program``."""
    found = []
    for d in Path("/proc").glob("[0-9]*"):
        try:
            stat_line = (d / "stat").read_text().rsplit(")", 1)[1].split()
            if int(stat_line[1]) == pid and os.readlink(d / "exe") == program:
                found.append(int(d.name))
        except (OSError, IndexError, ValueError):
            continue
    return found


def _nobody_reads_proc() -> str:
    """What the user nobody reads of every process's command line and environment."""
    scan = "for f in /proc/[0-9]*/cmdline /proc/[0-9]*/environ; do cat $f; done 2>/dev/null"
    return _as_nobody("sh", "-c", scan + " | tr -c '[:print:]' ' '").stdout  # ASCII only


@needs_redis
@needs_nobody
@pytest.mark.slow
def test_nobody_finds_no_redis_password_in_proc(tmp_path: Path) -> None:
    """With --tcp, while redis-benchmark runs, the user nobody scans /proc for the
    server's password: not on any command line (nor in an environment it can read). The
    benchmark's own credential, on its argv, gives no admin command and dies with the
    run."""
    state = tmp_path / "redis"
    doc = _setup("redis", state, "--tcp")
    bench = shutil.which("redis-benchmark") or ""
    marker = "987654321"  # --requests: a run that lasts until it is interrupted
    runner = (
        "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "from assay.targets.__main__ import main; sys.exit(main(sys.argv[1:]))"
    )
    run = subprocess.Popen(
        [sys.executable, "-c", runner, "redis", "run", "--state", str(state), "--tests", "set",
         "--requests", marker, "--clients", "2"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        found: list[int] = []
        hang_guard = time.monotonic() + 120  # no assertion waits on it: a stuck run fails
        while not found and run.poll() is None and time.monotonic() < hang_guard:
            found = _children_running(run.pid, os.path.realpath(bench))
            time.sleep(0.02)
        assert found, f"redis-benchmark did not run (run's status: {run.returncode})"
        password = (state / "redis.pass").read_text()
        seen = _nobody_reads_proc()
        assert marker in seen  # nobody does see the benchmark's command line
        assert password not in seen
        # the credential on the benchmark's argv: a data user, no admin command
        argv = Path(f"/proc/{found[0]}/cmdline").read_bytes().decode().split("\0")
        user, cred = argv[argv.index("--user") + 1], argv[argv.index("-a") + 1]
        assert user == BENCH_USER and cred != password
        login = ["redis-cli", "-h", "127.0.0.1", "-p", str(doc["port"]), "--user", user,
                 "--pass", cred, "--no-auth-warning"]  # fmt: skip
        for cmd in (["CONFIG", "GET", "requirepass"], ["FLUSHALL"], ["ACL", "LIST"]):
            denied = _as_nobody(*login, *cmd)
            assert "NOPERM" in denied.stdout + denied.stderr and password not in denied.stdout
        run.send_signal(signal.SIGINT)  # the run stops redis-benchmark, deletes its user
        assert run.wait(timeout=60) == 130
        target = RedisTarget(str(state))
        st, _ = target._running()
        assert redis_command(target._endpoint(st), "ACL", "USERS") == ["default"]
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        assert _target("redis", "teardown", "--state", str(state)).returncode == 0


def test_an_exclusive_write_keeps_the_first_writers_file(tmp_path: Path) -> None:
    """Two primaries started at once on one file system made a password each: the
    second's rename failed on the first's fixed temporary name (#42); now the first to
    link its file in wins and the other reads it."""
    sd = StateDir(tmp_path / "state")
    assert sd.write("password", "first\n", exclusive=True)
    assert not sd.write("password", "second\n", exclusive=True)
    assert sd.read("password") == "first\n"
    sd.write("password", "third\n")  # a plain write replaces it
    assert sd.read("password") == "third\n"
    assert sorted(p.name for p in sd.path.iterdir()) == ["password"]  # no temporary left
