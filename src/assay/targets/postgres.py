"""PostgreSQL with ``pgbench``: a private cluster on a Unix socket only its user reaches.

``setup`` runs ``initdb`` for a new cluster in a fresh private directory (mode 700;
``--cluster-dir`` names its parent, default the temporary directory; either must be a
directory no other user can change), starts it
listening on a Unix socket in that directory only (``--tcp`` adds 127.0.0.1 on a free
port, ``--port`` chooses the port) and loads pgbench's tables (``pgbench -i -s
SCALE``). Every connection needs the superuser's password (``scram-sha-256``), which
setup generates and keeps in the state directory (``pgpass``, mode 600); the clients
read it from there (``PGPASSFILE``), so it never appears on a command line. Other
local users can neither reach the socket nor log in over TCP. PostgreSQL refuses to
run as root: when Assay runs as root, the server programs run as the ``postgres`` user
that the Debian package creates, and the cluster directory belongs to it. The
``--knob``s given to setup are the baseline, written into ``postgresql.conf`` before
the first start.

``run`` lays its ``--knob``s over the baseline with ``ALTER SYSTEM`` (so the server
checks every value and names a bad one), reloads the configuration, restarts the
server when a knob needs it (context ``postmaster``, e.g. shared_buffers,
wal_buffers), and puts knobs that a run no longer names back to the baseline
(``ALTER SYSTEM RESET``). Any server parameter works, ``--knob name=value``, but
those that would open the cluster up (listeners, authentication, files outside the
cluster, programs and libraries: see ``PROTECTED``) and values that could start
another line (a control character, a word starting with ``--``) or end an SQL statement
(``;`` followed by ``--``) are refused, as are standard_conforming_strings and
backslash_quote. Values reach ``ALTER SYSTEM`` as escape strings (``E'...'``), whose
meaning no server setting changes.
It then runs pgbench (``--builtin tpcb-like | simple-update | select-only`` or
``--script FILE``) for ``--duration`` seconds (or ``--transactions`` per client) and
parses its report. ``reset`` reloads the tables; ``teardown`` stops the server and
removes the cluster. The state directory (``--state``, default per user; see
:mod:`assay.targets.private`) holds the cluster path, port, the postmaster's identity
(signalled only while the kernel still shows it) and knobs.

PIs (``pi.*``): ``throughput`` (tps, without the initial connection time),
``latency_ms_mean``, ``latency_ms_stddev``, ``transactions``, ``failed``,
``connection_ms``; with ``--latency-log`` also ``latency_ms_p50``/``p95``/``p99``.
Unit readings (``units.*``): ``throughput`` and ``latency_ms_interval``, one per
``--progress`` interval (pgbench's progress lines); with ``--latency-log``,
``latency_ms``: one per transaction (pgbench ``-l``).

>>> rep = parse_pgbench('''tps = 491.303862 (without initial connection time)
... latency average = 8.116 ms
... number of transactions actually processed: 2461
... ''', "progress: 1.0 s, 491.9 tps, lat 7.968 ms stddev 4.647, 0 failed")
>>> rep["tps"], rep["latency_ms_mean"], rep["transactions"], rep["interval_tps"]
(491.303862, 8.116, 2461.0, [491.9])
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import os
import pwd
import re
import shutil
import stat
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
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
    percentile,
)
from assay.targets.private import (
    STATE_FILE,
    StateDir,
    check_trusted_dir,
    default_state_dir,
    make_private_dir,
    new_secret,
    owned_private_dir,
    read_nofollow,
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
DB = "postgres"
SUPERUSER = "postgres"
PGPASS = "pgpass"  # in the state directory, mode 600: the clients' password (libpq)
SOCKET_PORT = 5432  # without TCP the port only names the socket file (.s.PGSQL.5432)
#: Parameters no knob may name, by why. A knob reaches postgresql.conf (setup) or ALTER
#: SYSTEM as the superuser, so each of these would undo what keeps the cluster private.
PROTECTED: dict[str, frozenset[str]] = {
    # where it listens: a Unix socket in the 700 cluster directory, 127.0.0.1 only with
    # --tcp; Bonjour advertises the server on the network
    "it opens or changes a listener": frozenset({
        "port", "listen_addresses", "unix_socket_directories", "unix_socket_permissions",
        "unix_socket_group", "bonjour", "bonjour_name",
    }),
    # who may log in and how: pg_hba.conf demands the generated scram-sha-256 password
    # of every connection; Kerberos and SSL (by prefix) bring their own key files
    "it changes who may log in or how": frozenset({
        "hba_file", "ident_file", "password_encryption", "db_user_namespace",
    }),
    # files outside the cluster's data directory: read as configuration (include, read
    # even as a name = value line), written (pid file, logs: log_directory may be any
    # path, log_filename may climb out of it, log_file_mode may open the logs up)
    "it reads or writes files outside the private cluster directory": frozenset({
        "config_file", "data_directory", "external_pid_file", "include", "include_dir",
        "include_if_exists", "log_directory", "log_filename", "log_file_mode",
        "stats_temp_directory", "promote_trigger_file",
    }),
    # programs the server runs (shell commands) and libraries it loads run as the
    # server's user; a standby logs in to, and takes its data from, another server
    "it runs a program, loads a library or connects to another server": frozenset({
        "archive_command", "archive_library", "archive_cleanup_command", "restore_command",
        "recovery_end_command", "shared_preload_libraries", "local_preload_libraries",
        "session_preload_libraries", "dynamic_library_path", "jit_provider",
        "primary_conninfo",
    }),
}  # fmt: skip
#: name prefixes protected as a whole: SSL (key files, a passphrase command, client
#: authentication) and Kerberos (a key file, how user names match)
PROTECTED_PREFIXES = {
    "ssl": "it configures SSL: key files, a passphrase command and client authentication",
    "krb_": "it configures Kerberos authentication and its key file",
}
BUILTINS = ("tpcb-like", "simple-update", "select-only")
_PG_KNOB = re.compile(r"^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?$")

_SUMMARY: dict[str, re.Pattern[str]] = {
    "tps": re.compile(r"^tps = ([0-9.]+) \(without initial connection time\)", re.M),
    "latency_ms_mean": re.compile(r"^latency average = ([0-9.]+) ms", re.M),
    "latency_ms_stddev": re.compile(r"^latency stddev = ([0-9.]+) ms", re.M),
    "connection_ms": re.compile(r"^initial connection time = ([0-9.]+) ms", re.M),
    "transactions": re.compile(r"^number of transactions actually processed: (\d+)", re.M),
    "failed": re.compile(r"^number of failed transactions: (\d+)", re.M),
    "scale": re.compile(r"^scaling factor: (\d+)", re.M),
    "clients": re.compile(r"^number of clients: (\d+)", re.M),
}
_PROGRESS = re.compile(
    r"^progress: ([0-9.]+) s, ([0-9.]+) tps, lat ([0-9.]+) ms stddev ([0-9.]+|NaN)", re.M
)
_TYPE = re.compile(r"^transaction type: (.+)$", re.M)


def parse_pgbench(stdout: str, stderr: str = "") -> dict[str, Any]:
    """Parse pgbench's report (stdout) and progress lines (stderr, ``-P``).

    Returns ``tps``, ``latency_ms_mean`` (and ``_stddev``), ``connection_ms``,
    ``transactions``, ``failed`` and the per-interval ``interval_tps`` and
    ``interval_latency_ms`` lists (with ``interval_end_s``).
    """
    out: dict[str, Any] = {}
    for key, pat in _SUMMARY.items():
        m = pat.search(stdout)
        if m is not None:
            out[key] = float(m.group(1))
    if "tps" not in out:
        tail = (stderr.strip() or stdout.strip())[-400:]
        raise TargetError(f"pgbench printed no 'tps = ...' line: {tail or 'no output'}")
    m = _TYPE.search(stdout)
    out["transaction_type"] = m.group(1).strip() if m else ""
    ends, tps, lat = [], [], []
    for p in _PROGRESS.finditer(stderr + "\n" + stdout):
        ends.append(float(p.group(1)))
        tps.append(float(p.group(2)))
        lat.append(float(p.group(3)))
    out["interval_end_s"] = ends
    out["interval_tps"] = tps
    out["interval_latency_ms"] = lat
    return out


def parse_pgbench_log(text: str) -> list[float]:
    """Per-transaction latencies (ms) from a pgbench ``-l`` log, in the order written.

    Lines are ``client_id transaction_no time script_no time_epoch time_us [...]`` with
    ``time`` the latency in µs; failed or skipped transactions are left out.

    >>> parse_pgbench_log("0 1 820 0 1795384592 562241\\n0 2 skipped 0 1795384592 564520\\n")
    [0.82]
    """
    out: list[float] = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 6 and parts[2].isdigit():
            out.append(int(parts[2]) / 1000.0)
    return out


def _escaped(value: str) -> str:
    """``value`` with each backslash and single quote doubled: the body of a quoted
    string that both PostgreSQL's escape strings and its configuration files read
    back as ``value``. NUL ends a C string early, so it is refused."""
    if "\x00" in value:
        raise TargetError(f"a PostgreSQL string cannot hold the character NUL: {value!r}")
    return value.replace("\\", "\\\\").replace("'", "''")


def _literal(value: str) -> str:
    r"""``value`` as an SQL escape string ``E'...'``: unlike a plain ``'...'``, its
    meaning does not depend on standard_conforming_strings (whether ``\`` escapes) or
    backslash_quote (no ``\'`` is written), so no server setting can end it early.

    >>> print(_literal(r"it's C:\tmp"))
    E'it''s C:\\tmp'
    """
    return "E'" + _escaped(value) + "'"


def _conf_value(value: str) -> str:
    r"""``value`` quoted for postgresql.conf, whose reader takes ``\`` as an escape
    (``\n`` is a newline there) and ``''`` as a quote. A line break would end the
    setting's line, so a control character is refused (a knob's value has none)."""
    bad = next((c for c in value if ord(c) < 32 or ord(c) == 127), None)
    if bad is not None:
        raise TargetError(
            f"{value!r} cannot be written into postgresql.conf: it contains the control "
            f"character {bad!r}"
        )
    return "'" + _escaped(value) + "'"


def _ident(name: str) -> str:
    """A parameter name (``work_mem``, ``ext.name``) as quoted SQL identifiers, so that
    a name that is also a keyword stays a name."""
    return ".".join('"' + part.replace('"', '""') + '"' for part in name.split("."))


def find_bindir() -> Path:
    """The directory of the newest installed PostgreSQL server programs (absolute)."""
    found = []
    for d in glob.glob("/usr/lib/postgresql/*/bin"):
        p = Path(d)
        if all((p / x).exists() for x in ("initdb", "pg_ctl", "postgres")):
            with contextlib.suppress(ValueError):
                found.append((float(p.parent.name), p))
    if found:
        return max(found)[1]
    pg_ctl = shutil.which("pg_ctl")
    if pg_ctl and (Path(pg_ctl).parent / "initdb").exists():
        return Path(pg_ctl).absolute().parent
    raise missing_binary("PostgreSQL (initdb, pg_ctl, postgres)", "postgresql")


def _client(bindir: Path, name: str) -> str:
    if (bindir / name).exists():
        return str(bindir / name)
    path = shutil.which(name)
    if path is None:
        raise missing_binary(name, "postgresql-client")
    return os.path.abspath(path)


def _server_user() -> pwd.struct_passwd | None:
    """The user the server programs run as: ``postgres`` when we are root, else None
    (they run as we do)."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam("postgres")
    except KeyError:
        raise TargetError(
            "PostgreSQL refuses to run as root and there is no 'postgres' user to run "
            "it as; install the Debian package postgresql (bash "
            "scripts/install-targets.sh), which creates it, or run Assay as another user"
        ) from None


def _server_uid() -> int:
    pw = _server_user()
    return pw.pw_uid if pw else os.geteuid()


#: A knob's rules: no value that could start another line of postgresql.conf, no
#: protected parameter (:data:`PROTECTED`).
_KNOBS = KnobRules(
    server="a PostgreSQL parameter",
    name=_PG_KNOB,
    names="lowercase letters, digits and '_' (e.g. work_mem, or ext.name for an "
    "extension's parameter)",
    value_example="--knob shared_buffers=256MB",
    protected=PROTECTED,
    prefixes=PROTECTED_PREFIXES,
    allowed="shared_buffers, work_mem, fsync",
)
#: Parameters that change how the server reads a string literal. Assay's ``E'...'``
#: literals mean the same under any of their values, but a benchmark's own SQL would
#: not, and no knob needs them to be tuned.
_QUOTING = {
    "standard_conforming_strings": "it decides whether a backslash in a plain '...' "
    "string is an escape",
    "backslash_quote": "it decides whether \\' may stand for a quote in a string",
}
#: ';' then '--': how a value that leaves its literal ends the statement and comments
#: out the closing quote.
_STATEMENT_END = re.compile(r";.*--")


def _check_knobs(knobs: Mapping[str, str]) -> None:
    """Refuse what :data:`_KNOBS` refuses, a parameter of :data:`_QUOTING`, and a value
    with ``;`` followed by ``--`` (:class:`TargetError`, naming the knob and why)."""
    _KNOBS.check(knobs)
    for k, v in knobs.items():
        why = _QUOTING.get(k)
        if why is not None:
            raise TargetError(
                f"knob {k}: refused, {why}; a benchmark's SQL would change meaning with "
                f"it. Other parameters are allowed, e.g. {_KNOBS.allowed}"
            )
        if _STATEMENT_END.search(v):
            raise TargetError(
                f"knob {k}={v!r}: refused, it has ';' followed by '--' (the shape of a "
                f"value that ends an SQL statement); expected a plain value, e.g. "
                f"{_KNOBS.value_example}"
            )


def _open_server_file(path: Path, flags: int) -> int:
    """Open a file of the server (in its data directory) without following a link,
    and only when it belongs to the server's user: as root, a link the server's user
    planted there must not lead to another file."""
    fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != _server_uid():
        os.close(fd)
        raise TargetError(f"{path} is not a file of the PostgreSQL server's user")
    return fd


def _cluster_postmaster(cluster: Path, program: str, uid: int) -> ProcessIdentity | None:
    """The postmaster that ``cluster/data/postmaster.pid`` names, when that process is
    ``program`` run by ``uid`` and works in that data directory; else None."""
    text = read_nofollow(cluster / "data" / "postmaster.pid", uid)
    first = text.split()[0] if text.split() else ""
    ident = ProcessIdentity.of(int(first)) if first.isdigit() else None
    if ident is None or not ident.matches(program, uid):
        return None
    try:
        cwd = os.readlink(f"/proc/{ident.pid}/cwd")
    except OSError:
        return None
    return ident if cwd == os.path.realpath(cluster / "data") else None


class PostgresTarget(Target):
    """PostgreSQL with pgbench: a private cluster on a Unix socket only its user reaches."""

    name = "postgres"

    def __init__(
        self, state: str | None = None, port: int | None = None,
        cluster_dir: str | None = None, scale: int = 5, tcp: bool = False,
    ) -> None:  # fmt: skip
        self.state = StateDir(state or default_state_dir(self.name))
        self.port = port
        self.cluster_dir = cluster_dir
        self.scale = scale
        self.tcp = tcp or port is not None

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        g = parser.add_argument_group("postgres")
        g.add_argument(
            "--state",
            help=f"private state directory (mode 700; default: {default_state_dir(cls.name)})",
        )
        g.add_argument(
            "--tcp", action="store_true",
            help="setup: also listen on 127.0.0.1, and the clients use it (default: only a "
            "Unix socket in the private cluster directory)",
        )  # fmt: skip
        g.add_argument("--port", type=int, help="setup: TCP port (implies --tcp; default: free)")
        g.add_argument("--cluster-dir", help="setup: parent of the cluster (default: temp)")
        g.add_argument("--scale", type=int, default=5, help="pgbench -i scale (100k rows each)")
        g.add_argument("--builtin", default="tpcb-like", choices=BUILTINS, help="pgbench -b")
        g.add_argument("--script", action="append", default=[], help="pgbench -f FILE[@W]")
        g.add_argument("--clients", type=int, default=2, help="pgbench -c")
        g.add_argument("--jobs", type=int, default=2, help="pgbench -j (threads)")
        g.add_argument("--duration", type=int, default=5, help="pgbench -T seconds")
        g.add_argument("--transactions", type=int, default=0, help="pgbench -t (not -T)")
        g.add_argument("--progress", type=int, default=1, help="pgbench -P seconds (units)")
        g.add_argument("--protocol", default="simple", choices=("simple", "extended", "prepared"))
        g.add_argument("--no-vacuum", action="store_true", help="pgbench -n")
        g.add_argument("--latency-log", action="store_true", help="per-transaction latencies")
        g.add_argument("--sampling-rate", type=float, default=1.0, help="of --latency-log")

    @classmethod
    def from_options(cls, opts: argparse.Namespace) -> PostgresTarget:
        return cls(opts.state, opts.port, opts.cluster_dir, opts.scale, opts.tcp)

    @staticmethod
    def workload_from_options(opts: argparse.Namespace) -> dict[str, Any]:
        return {
            "scale": opts.scale,
            "builtin": opts.builtin,
            "script": list(opts.script),
            "clients": opts.clients,
            "jobs": opts.jobs,
            "duration": opts.duration,
            "transactions": opts.transactions,
            "progress": opts.progress,
            "protocol": opts.protocol,
            "no_vacuum": opts.no_vacuum,
            "latency_log": opts.latency_log,
            "sampling_rate": opts.sampling_rate,
        }

    # -- running programs: found here, never named by the state file --------------------
    def _server_cmd(
        self, argv: Sequence[str], what: str, *, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess[bytes]:
        owner = _server_user()
        env = server_env()
        if owner:
            env["HOME"] = owner.pw_dir
        try:
            proc = subprocess.run(
                list(argv),
                capture_output=True,
                stdin=subprocess.DEVNULL,
                user=owner.pw_uid if owner else None,
                group=owner.pw_gid if owner else None,
                extra_groups=[] if owner else None,
                env=env,
                cwd="/",
                timeout=timeout,
                start_new_session=True,  # the server must not live in the trial's group
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise TargetError(f"{what} did not finish within {timeout:g} s") from None
        if check and proc.returncode != 0:
            msg = (proc.stderr or proc.stdout).decode(errors="replace").strip()[-600:]
            raise TargetError(f"{what} failed (exit status {proc.returncode}): {msg}")
        return proc

    def _client_env(self) -> dict[str, str]:
        """The clients' environment: the password comes from the private pgpass file
        (libpq reads it; it is never on a command line), no inherited PG* setting."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env["PGPASSFILE"] = str(self.state.file(PGPASS))
        return env

    @staticmethod
    def _connection(st: Mapping[str, Any]) -> list[str]:
        host = HOST if st.get("tcp") else str(st["cluster"])  # a path: the socket directory
        return ["-h", host, "-p", str(int(st["port"])), "-U", SUPERUSER]

    def _psql(self, st: Mapping[str, Any], *sql: str, db: str = DB) -> str:
        argv = [
            _client(find_bindir(), "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
            *self._connection(st), "-d", db,
        ]  # fmt: skip
        for s in sql:
            argv += ["-c", s]  # argv, no shell; -c sends it as it is (no psql variables)
        # The literals are escaped for UTF-8: a knob client_encoding = SJIS must not make
        # the server read a byte of a character and the backslash after it as one.
        env = {**self._client_env(), "PGCLIENTENCODING": "UTF8"}
        proc = subprocess.run(
            argv, capture_output=True, stdin=subprocess.DEVNULL, env=env, check=False
        )
        if proc.returncode != 0:
            raise _PsqlError(proc.stderr.decode(errors="replace").strip())
        return proc.stdout.decode(errors="replace")

    def _log_since(self, st: Mapping[str, Any], offset: int) -> str:
        """The server log's FATAL/ERROR/HINT lines written after byte ``offset``."""
        text = read_nofollow(Path(st["cluster"]) / "server.log", _server_uid(), offset)
        keep = [
            re.sub(r"^.*?\b(FATAL|ERROR|HINT|PANIC|LOG):\s+", r"\1: ", ln)
            for ln in text.splitlines()
            if re.search(r"\b(FATAL|ERROR|HINT|PANIC):", ln)
            or re.search(
                r"invalid value for parameter|unrecognized configuration|could not bind", ln
            )
        ]
        return " ".join(keep[-3:])[-700:]

    def _log_size(self, st: Mapping[str, Any]) -> int:
        try:
            return os.stat(Path(st["cluster"]) / "server.log", follow_symlinks=False).st_size
        except OSError:
            return 0

    def _pg_ctl(self, st: Mapping[str, Any], action: str, *extra: str) -> None:
        data = str(Path(st["cluster"]) / "data")
        argv = [str(find_bindir() / "pg_ctl"), "-D", data, "-w", "-t", "60"]
        if action in ("start", "restart"):
            argv += ["-l", str(Path(st["cluster"]) / "server.log")]
        argv += [*extra, action]
        offset = self._log_size(st)
        proc = self._server_cmd(argv, f"pg_ctl {action}", check=False)
        if proc.returncode != 0 and action != "stop":
            raise TargetError(self._start_failure(st, proc, self._log_since(st, offset)))

    def _start_failure(
        self, st: Mapping[str, Any], proc: subprocess.CompletedProcess[bytes], log: str
    ) -> str:
        m = re.search(r'invalid value for parameter "([^"]+)": "([^"]*)"', log)
        if m:
            return f"PostgreSQL rejected knob {m.group(1)}={m.group(2)}: {log}"
        m = re.search(r'unrecognized configuration parameter "([^"]+)"', log)
        if m:
            return f"PostgreSQL does not know the knob {m.group(1)}: {log}"
        if "could not bind" in log and "Permission denied" in log:
            return (
                f"PostgreSQL may not listen on port {st['port']} (ports below 1024 need "
                f"privileges); leave out --port to let Assay pick a free port: {log}"
            )
        if "Address already in use" in log or "could not bind" in log:
            return f"PostgreSQL could not listen on port {st['port']}: it is taken: {log}"
        out = (proc.stderr or proc.stdout).decode(errors="replace").strip()
        out = out.splitlines()[0] if out else ""
        return f"the PostgreSQL server did not start ({out}): {log or 'no message in its log'}"

    # -- life cycle ---------------------------------------------------------------------
    def _stop_leftover(self) -> None:
        """Stop and remove what the state directory records, trusting none of it: the
        server is signalled only when the kernel still shows the recorded postmaster
        (start time, the postgres program found here, the server's user), the cluster
        is removed only when it carries the marker naming this state directory."""
        st = self.state.load()
        if st:
            uid = _server_uid()
            cluster = owned_private_dir(st.get("cluster"), uid, self.state)
            server = None
            with contextlib.suppress(TargetError):  # PostgreSQL uninstalled: nothing runs
                program = str(find_bindir() / "postgres")
                server = verified(st.get("server"), program, uid)
                if server is None and cluster is not None:  # setup failed before saving it
                    server = _cluster_postmaster(cluster, program, uid)
            if server is not None:
                if cluster is not None:
                    self._pg_ctl({**st, "cluster": str(cluster)}, "stop", "-m", "immediate")
                    wait_gone(server, 10)
                kill(server)
            if cluster is not None:
                remove_private_dir(str(cluster), uid, self.state)
        self.state.remove(STATE_FILE, PGPASS)

    def start(self, knobs: Mapping[str, str], workload: Mapping[str, Any] | None = None) -> None:
        if self.cluster_dir is not None:  # the cluster is made in it: checked before all else
            check_trusted_dir(
                Path(self.cluster_dir), "--cluster-dir",
                "name a directory that only you or root can change, or leave out "
                "--cluster-dir (the default is the temporary directory)",
            )  # fmt: skip
        bindir = find_bindir()
        _client(bindir, "pgbench")
        _client(bindir, "psql")
        owner = _server_user()
        _check_knobs(knobs)
        self._stop_leftover()
        if self.port is not None:
            check_port_free(self.port)
        port = (self.port or free_port()) if self.tcp else SOCKET_PORT
        # Ownership: the state directory (state.json, the pgpass file) belongs to the
        # user running Assay, mode 700. The server cannot live in it when Assay runs as
        # root: the postgres user could not enter a 700 root directory. So the cluster
        # has its own private directory (mkdtemp: 700, a fresh name), handed to the
        # server's user; it holds the data directory, the log and the Unix socket, so
        # only that user and root (or, without root, the user running Assay) reach the
        # socket. Root's clients enter it anyway; every other user is kept out.
        password = new_secret()
        self.state.write(PGPASS, f"*:*:*:{SUPERUSER}:{password}\n")
        cluster = make_private_dir("assay-pg-", self.cluster_dir, self.state, owner)
        st: dict[str, Any] = {
            "cluster": str(cluster), "port": port, "tcp": self.tcp, "server": None,
            "baseline": dict(knobs), "applied": {}, "scale": self.scale,
        }  # fmt: skip
        self.state.save(st)  # before initdb: a failed setup is cleaned up by teardown
        pwfile = cluster / "initdb.pw"  # read by initdb as the server's user, then removed
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        with os.fdopen(os.open(pwfile, flags, 0o600), "w", encoding="utf-8") as f:
            f.write(password + "\n")
            if owner:
                os.fchown(f.fileno(), owner.pw_uid, owner.pw_gid)
        try:
            self._server_cmd(
                [str(bindir / "initdb"), "-D", str(cluster / "data"), "-U", SUPERUSER,
                 "--auth=scram-sha-256", f"--pwfile={pwfile}", "--no-sync", "-E", "UTF8",
                 "--locale=C"],
                "initdb",
            )  # fmt: skip
        finally:
            pwfile.unlink(missing_ok=True)
        conf = [
            "# written by assay.targets.postgres: private unless setup --tcp",
            f"port = {port}",
            f"listen_addresses = {_conf_value(HOST if self.tcp else '')}",
            f"unix_socket_directories = {_conf_value(str(cluster))}",
            "unix_socket_permissions = 0700",
            "password_encryption = 'scram-sha-256'",
            "# baseline knobs (setup --knob)",
            *(f"{k} = {_conf_value(v)}" for k, v in knobs.items()),
        ]
        fd = _open_server_file(cluster / "data" / "postgresql.conf", os.O_WRONLY | os.O_APPEND)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write("\n" + "\n".join(conf) + "\n")
        self._pg_ctl(st, "start")
        st["server"] = self._postmaster(st).to_json()
        scale = int((workload or {}).get("scale", self.scale))
        st["scale"] = scale
        self.state.save(st)
        self._init_tables(st)

    def _postmaster(self, st: Mapping[str, Any]) -> ProcessIdentity:
        """The running postmaster of the cluster, checked to be the postgres program
        found here run by the server's user."""
        text = read_nofollow(Path(st["cluster"]) / "data" / "postmaster.pid", _server_uid())
        pid = int(text.split()[0]) if text.split() and text.split()[0].isdigit() else 0
        ident = ProcessIdentity.of(pid)
        if ident is None or not ident.matches(str(find_bindir() / "postgres"), _server_uid()):
            raise TargetError(
                f"the PostgreSQL server of {st['cluster']} is not running as expected "
                f"(postmaster.pid names pid {pid}); run teardown, then setup"
            )
        return ident

    def _init_tables(self, st: Mapping[str, Any]) -> None:
        argv = [
            _client(find_bindir(), "pgbench"), "-i", "-q", "-s", str(st["scale"]),
            *self._connection(st), DB,
        ]  # fmt: skip
        proc = subprocess.run(
            argv, capture_output=True, stdin=subprocess.DEVNULL, env=self._client_env(),
            check=False,
        )  # fmt: skip
        if proc.returncode != 0:
            msg = proc.stderr.decode(errors="replace").strip()[-500:]
            raise TargetError(f"pgbench -i (loading the tables) failed: {msg}")

    def _running(self) -> dict[str, Any]:
        """The saved state of a server that still runs (the recorded postmaster, in the
        cluster directory made for this state directory)."""
        st = self.state.load()
        uid = _server_uid()
        if st:
            cluster = owned_private_dir(st.get("cluster"), uid, self.state)
            server = verified(st.get("server"), str(find_bindir() / "postgres"), uid)
            if cluster is not None and server is not None:
                return st
            gone = gone_after_restart("PostgreSQL", st.get("restart"))
            if cluster is not None and gone is not None:
                raise TargetError(gone)
        raise self.state.not_running("PostgreSQL", "postgres")

    def apply(self, knobs: Mapping[str, str]) -> dict[str, str]:
        st = self._running()
        _check_knobs(knobs)
        applied: dict[str, str] = st["applied"]  # the ALTER SYSTEM layer over the baseline
        want = {k: v for k, v in knobs.items() if st["baseline"].get(k) != v}
        sets = {k: v for k, v in want.items() if applied.get(k) != v}
        resets = [k for k in applied if k not in want]
        if not sets and not resets:
            return {**st["baseline"], **applied}
        stmts = [f"ALTER SYSTEM SET {_ident(k)} = {_literal(v)}" for k, v in sets.items()]
        stmts += [f"ALTER SYSTEM RESET {_ident(k)}" for k in resets]
        changed = [*sets, *resets]
        for stmt, k in zip(stmts, changed, strict=True):
            try:
                self._psql(st, stmt)
            except _PsqlError as exc:
                v = sets.get(k, "(baseline)")
                raise TargetError(f"PostgreSQL rejected knob {k}={v}: {exc}") from None
            if k in sets:
                applied[k] = sets[k]
            else:
                applied.pop(k, None)
            st["applied"] = applied
            self.state.save(st)
        names = ",".join(_literal(k) for k in changed)
        ctx = self._psql(st, f"SELECT name FROM pg_settings WHERE name IN ({names}) "
                             "AND context = 'postmaster'")  # fmt: skip
        if ctx.strip():
            try:
                self._pg_ctl(st, "restart", "-m", "fast")
            except TargetError as exc:
                # put back what ran before, so the next trial finds a working server
                self._psql_offline_reset(st, list(sets))
                asked = ", ".join(f"{k}={v}" for k, v in sets.items())
                raise TargetError(
                    f"PostgreSQL did not restart with knob {asked}: {exc} (it runs again "
                    "without it)"
                ) from None
            self._restarted(st, ctx.split())
        else:
            self._psql(st, "SELECT pg_reload_conf()")
            time.sleep(0.2)  # the postmaster handles SIGHUP before sessions started after it
        return {**st["baseline"], **applied}

    def _psql_offline_reset(self, st: dict[str, Any], knobs: list[str]) -> None:
        auto = Path(st["cluster"]) / "data" / "postgresql.auto.conf"
        with contextlib.suppress(OSError, TargetError):
            fd = _open_server_file(auto, os.O_RDWR)
            with os.fdopen(fd, "r+", encoding="utf-8") as f:
                keep = [ln for ln in f.read().splitlines() if ln.split("=")[0].strip() not in knobs]
                f.seek(0)
                f.truncate()
                f.write("\n".join(keep) + "\n")
        for k in knobs:
            st["applied"].pop(k, None)
        self.state.save(st)
        with contextlib.suppress(TargetError):
            self._pg_ctl(st, "start")
        with contextlib.suppress(TargetError):
            self._restarted(st, knobs)

    def _restarted(self, st: dict[str, Any], knobs: list[str]) -> None:
        """Record the postmaster a run restarted (for ``knobs``) and hand it over to
        Assay: the trial running this must not kill it as its leftover."""
        server = self._postmaster(st)
        st["server"] = server.to_json()
        st["restart"] = restart_note(server, knobs, hand_over(server))
        self.state.save(st)

    def reset(self, workload: Mapping[str, Any] | None = None) -> None:
        st = self._running()
        if workload and "scale" in workload:
            st["scale"] = int(workload["scale"])
            self.state.save(st)
        self._init_tables(st)

    def stop(self) -> None:
        self._stop_leftover()
        self.state.remove_dir()

    def describe(self) -> dict[str, Any]:
        st = self._running()
        version = self._psql(st, "SHOW server_version").strip()
        names = ["shared_buffers", "work_mem", "synchronous_commit", "fsync",
                 *st["baseline"], *st["applied"]]  # fmt: skip
        rows = self._psql(
            st,
            "SELECT name, setting, unit FROM pg_settings WHERE name IN ("
            + ",".join(_literal(n) for n in dict.fromkeys(names))
            + ")",
        )
        config = {}
        for line in rows.strip().splitlines():
            name, setting, unit = [*line.split("|"), "", ""][:3]
            config[name] = setting + (f" ({unit})" if unit else "")
        return {
            "target": self.name,
            "version": version,
            "port": st["port"],
            "tcp": bool(st.get("tcp")),
            "socket_dir": st["cluster"],
            "cluster": st["cluster"],
            "state": str(self.state.path),
            "pid": int(st["server"]["pid"]),
            "scale": st["scale"],
            "config": config,
        }

    # -- the workload ---------------------------------------------------------------------
    def run(self, workload: Mapping[str, Any]) -> RunResult:
        w = dict(workload)
        knobs = dict(w.pop("knobs", {}) or {})
        applied = self.apply(knobs)
        st = self._running()
        argv = [
            _client(find_bindir(), "pgbench"), *self._connection(st),
            "-c", str(int(w.get("clients", 2))), "-j", str(int(w.get("jobs", 2))),
            "-M", str(w.get("protocol", "simple")),
        ]  # fmt: skip
        if int(w.get("transactions", 0)) > 0:
            argv += ["-t", str(int(w["transactions"]))]
        else:
            argv += ["-T", str(int(w.get("duration", 5)))]
        if int(w.get("progress", 1)) > 0:
            argv += ["-P", str(int(w.get("progress", 1)))]
        scripts = list(w.get("script") or [])
        if scripts:
            for s in scripts:
                argv += ["-f", s]
        else:
            argv += ["-b", str(w.get("builtin", "tpcb-like"))]
        if w.get("no_vacuum"):
            argv.append("-n")
        with tempfile.TemporaryDirectory(prefix="assay-pgbench-") as logdir:
            if w.get("latency_log"):
                argv += ["-l", f"--log-prefix={logdir}/pgbench_log"]
                if float(w.get("sampling_rate", 1.0)) < 1.0:
                    argv += [f"--sampling-rate={float(w['sampling_rate'])}"]
            argv.append(DB)
            proc = subprocess.run(
                argv, capture_output=True, stdin=subprocess.DEVNULL, env=self._client_env(),
                check=False,
            )  # fmt: skip
            out = proc.stdout.decode(errors="replace")
            err = proc.stderr.decode(errors="replace")
            if proc.returncode != 0 and "tps = " not in out:
                raise TargetError(
                    f"pgbench exited with status {proc.returncode}: {err.strip()[-500:]}"
                )
            per_txn: list[float] = []
            for f in sorted(Path(logdir).glob("pgbench_log*")):
                per_txn += parse_pgbench_log(f.read_text(errors="replace"))
        rep = parse_pgbench(out, err)
        pi = {
            "throughput": rep["tps"],
            "latency_ms_mean": rep.get("latency_ms_mean", 0.0),
            "transactions": rep.get("transactions", 0.0),
            "failed": rep.get("failed", 0.0),
        }
        for key in ("latency_ms_stddev", "connection_ms"):
            if key in rep:
                pi[key] = rep[key]
        units: dict[str, list[float]] = {
            "throughput": rep["interval_tps"],
            "latency_ms_interval": rep["interval_latency_ms"],
        }
        if per_txn:
            units["latency_ms"] = per_txn
            for q in (50, 95, 99):
                pi[f"latency_ms_p{q}"] = percentile(per_txn, q)
        version = re.search(r"^pgbench \((.+)\)\s*$", out, re.M)
        return RunResult(
            self.name,
            str(w.get("builtin")) if not scripts else "script:" + ",".join(scripts),
            pi=pi,
            units=units,
            report={**rep, "throughput_unit": "tps", "argv": argv, "stdout": out},
            knobs=applied,
            version=version.group(1) if version else "",
            params=w,
        )


class _PsqlError(RuntimeError):
    """psql reported an error (the server's message)."""
