"""PostgreSQL with ``pgbench``: a private cluster on a free loopback port.

``setup`` runs ``initdb`` for a new cluster in a temporary directory (``--cluster-dir``
names its parent), starts it on 127.0.0.1 and a free port (``--port`` to choose one)
and loads pgbench's tables (``pgbench -i -s SCALE``). PostgreSQL refuses to run as
root: when Assay runs as root, the server programs run as the ``postgres`` user that
the Debian package creates, and the cluster belongs to it. The ``--knob``s given to
setup are the baseline, written into ``postgresql.conf`` before the first start.

``run`` lays its ``--knob``s over the baseline with ``ALTER SYSTEM`` (so the server
checks every value and names a bad one), reloads the configuration, restarts the
server when a knob needs it (context ``postmaster``, e.g. shared_buffers,
wal_buffers), and puts knobs that a run no longer names back to the baseline
(``ALTER SYSTEM RESET``). Any server parameter works: ``--knob name=value``.
It then runs pgbench (``--builtin tpcb-like | simple-update | select-only`` or
``--script FILE``) for ``--duration`` seconds (or ``--transactions`` per client) and
parses its report. ``reset`` reloads the tables; ``teardown`` stops the server and
removes the cluster. The state directory (``--state``) holds the cluster path, port
and knobs.

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
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
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
    percentile,
    pid_alive,
)

HOST = "127.0.0.1"
DB = "postgres"
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


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def find_bindir() -> Path:
    """The directory of the newest installed PostgreSQL server programs."""
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
        return Path(pg_ctl).parent
    raise missing_binary("PostgreSQL (initdb, pg_ctl, postgres)", "postgresql")


def _client(bindir: Path, name: str) -> str:
    if (bindir / name).exists():
        return str(bindir / name)
    path = shutil.which(name)
    if path is None:
        raise missing_binary(name, "postgresql-client")
    return path


class PostgresTarget(Target):
    """PostgreSQL with pgbench: a private cluster on a free loopback port."""

    name = "postgres"

    def __init__(
        self, state: str, port: int | None = None, cluster_dir: str | None = None,
        scale: int = 5,
    ) -> None:  # fmt: skip
        self.state = StateDir(state)
        self.port = port
        self.cluster_dir = cluster_dir
        self.scale = scale

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        g = parser.add_argument_group("postgres")
        g.add_argument("--state", default="/tmp/assay-postgres", help="state directory")
        g.add_argument("--port", type=int, help="setup: the port (default: a free one)")
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
        return cls(opts.state, opts.port, opts.cluster_dir, opts.scale)

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

    # -- running server programs ------------------------------------------------------
    @staticmethod
    def _owner() -> str | None:
        """The user the server programs run as: ``postgres`` when we are root."""
        if os.geteuid() != 0:
            return None
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            raise TargetError(
                "PostgreSQL refuses to run as root and there is no 'postgres' user to run "
                "it as; install the Debian package postgresql (bash "
                "scripts/install-targets.sh), which creates it, or run Assay as another user"
            ) from None
        return "postgres"

    def _server_cmd(
        self, argv: Sequence[str], what: str, *, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess[bytes]:
        owner = self._owner()
        env = dict(os.environ)
        if owner:
            env["HOME"] = pwd.getpwnam(owner).pw_dir
        try:
            proc = subprocess.run(
                list(argv),
                capture_output=True,
                stdin=subprocess.DEVNULL,
                user=owner,
                group=owner,
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

    def _psql(self, st: Mapping[str, Any], *sql: str, db: str = DB) -> str:
        argv = [
            _client(Path(st["bindir"]), "psql"),
            "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
            "-h", HOST, "-p", str(st["port"]), "-U", "postgres", "-d", db,
        ]  # fmt: skip
        for s in sql:
            argv += ["-c", s]
        proc = subprocess.run(argv, capture_output=True, stdin=subprocess.DEVNULL, check=False)
        if proc.returncode != 0:
            raise _PsqlError(proc.stderr.decode(errors="replace").strip())
        return proc.stdout.decode(errors="replace")

    def _log_since(self, st: Mapping[str, Any], offset: int) -> str:
        """The server log's FATAL/ERROR/HINT lines written after byte ``offset``."""
        log = Path(st["cluster"]) / "server.log"
        try:
            with open(log, "rb") as f:
                f.seek(offset)
                text = f.read().decode(errors="replace")
        except OSError:
            return ""
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
            return (Path(st["cluster"]) / "server.log").stat().st_size
        except OSError:
            return 0

    def _pg_ctl(self, st: Mapping[str, Any], action: str, *extra: str) -> None:
        bindir = Path(st["bindir"])
        data = str(Path(st["cluster"]) / "data")
        argv = [str(bindir / "pg_ctl"), "-D", data, "-w", "-t", "60"]
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
        st = self.state.load()
        if not st:
            return
        data = Path(st.get("cluster", "")) / "data"
        if (data / "postmaster.pid").exists():
            self._pg_ctl(st, "stop", "-m", "immediate")
        pid = int(st.get("pid", 0))
        if pid and pid_alive(pid):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if st.get("cluster"):
            shutil.rmtree(st["cluster"], ignore_errors=True)
        self.state.clear()

    def start(self, knobs: Mapping[str, str], workload: Mapping[str, Any] | None = None) -> None:
        bindir = find_bindir()
        _client(bindir, "pgbench")
        _client(bindir, "psql")
        owner = self._owner()
        for k in knobs:
            if not _PG_KNOB.match(k):
                raise TargetError(f"knob {k}: not a PostgreSQL parameter name")
        self._stop_leftover()
        if self.port is not None:
            check_port_free(self.port)
        port = self.port or free_port()
        cluster = Path(tempfile.mkdtemp(prefix="assay-pg-", dir=self.cluster_dir))
        cluster.chmod(0o755)
        if owner:
            pw = pwd.getpwnam(owner)
            os.chown(cluster, pw.pw_uid, pw.pw_gid)
        st: dict[str, Any] = {
            "bindir": str(bindir), "cluster": str(cluster), "port": port, "pid": 0,
            "baseline": dict(knobs), "applied": {}, "scale": self.scale,
        }  # fmt: skip
        self.state.save(st)  # before initdb: a failed setup is cleaned up by teardown
        self._server_cmd(
            [str(bindir / "initdb"), "-D", str(cluster / "data"), "-U", "postgres",
             "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"],
            "initdb",
        )  # fmt: skip
        conf = [
            "# written by assay.targets.postgres",
            f"port = {port}",
            f"listen_addresses = '{HOST}'",
            f"unix_socket_directories = {_quote(str(cluster))}",
            "# baseline knobs (setup --knob)",
            *(f"{k} = {_quote(v)}" for k, v in knobs.items()),
        ]
        with open(cluster / "data" / "postgresql.conf", "a", encoding="utf-8") as f:
            f.write("\n" + "\n".join(conf) + "\n")
        self._pg_ctl(st, "start")
        st["pid"] = self._postmaster_pid(st)
        self.state.save(st)
        scale = int((workload or {}).get("scale", self.scale))
        st["scale"] = scale
        self.state.save(st)
        self._init_tables(st)

    def _postmaster_pid(self, st: Mapping[str, Any]) -> int:
        try:
            return int((Path(st["cluster"]) / "data" / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return 0

    def _init_tables(self, st: Mapping[str, Any]) -> None:
        argv = [
            _client(Path(st["bindir"]), "pgbench"), "-i", "-q", "-s", str(st["scale"]),
            "-h", HOST, "-p", str(st["port"]), "-U", "postgres", DB,
        ]  # fmt: skip
        proc = subprocess.run(argv, capture_output=True, stdin=subprocess.DEVNULL, check=False)
        if proc.returncode != 0:
            msg = proc.stderr.decode(errors="replace").strip()[-500:]
            raise TargetError(f"pgbench -i (loading the tables) failed: {msg}")

    def _running(self) -> dict[str, Any]:
        return self.state.running("PostgreSQL", "postgres")

    def apply(self, knobs: Mapping[str, str]) -> dict[str, str]:
        st = self._running()
        for k in knobs:
            if not _PG_KNOB.match(k):
                raise TargetError(f"knob {k}: not a PostgreSQL parameter name")
        applied: dict[str, str] = st["applied"]  # the ALTER SYSTEM layer over the baseline
        want = {k: v for k, v in knobs.items() if st["baseline"].get(k) != v}
        sets = {k: v for k, v in want.items() if applied.get(k) != v}
        resets = [k for k in applied if k not in want]
        if not sets and not resets:
            return {**st["baseline"], **applied}
        stmts = [f"ALTER SYSTEM SET {k} = {_quote(v)}" for k, v in sets.items()]
        stmts += [f"ALTER SYSTEM RESET {k}" for k in resets]
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
        names = ",".join(_quote(k) for k in changed)
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
            st["pid"] = self._postmaster_pid(st)
            self.state.save(st)
        else:
            self._psql(st, "SELECT pg_reload_conf()")
            time.sleep(0.2)  # the postmaster handles SIGHUP before sessions started after it
        return {**st["baseline"], **applied}

    def _psql_offline_reset(self, st: dict[str, Any], knobs: list[str]) -> None:
        auto = Path(st["cluster"]) / "data" / "postgresql.auto.conf"
        with contextlib.suppress(OSError):
            keep = [
                ln for ln in auto.read_text().splitlines()
                if ln.split("=")[0].strip() not in knobs
            ]  # fmt: skip
            auto.write_text("\n".join(keep) + "\n")
        for k in knobs:
            st["applied"].pop(k, None)
        with contextlib.suppress(TargetError):
            self._pg_ctl(st, "start")
        st["pid"] = self._postmaster_pid(st)
        self.state.save(st)

    def reset(self, workload: Mapping[str, Any] | None = None) -> None:
        st = self._running()
        if workload and "scale" in workload:
            st["scale"] = int(workload["scale"])
            self.state.save(st)
        self._init_tables(st)

    def stop(self) -> None:
        self._stop_leftover()
        with contextlib.suppress(OSError):
            self.state.path.rmdir()

    def describe(self) -> dict[str, Any]:
        st = self._running()
        version = self._psql(st, "SHOW server_version").strip()
        names = ["shared_buffers", "work_mem", "synchronous_commit", "fsync",
                 *st["baseline"], *st["applied"]]  # fmt: skip
        rows = self._psql(
            st,
            "SELECT name, setting, unit FROM pg_settings WHERE name IN ("
            + ",".join(_quote(n) for n in dict.fromkeys(names))
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
            "cluster": st["cluster"],
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
            _client(Path(st["bindir"]), "pgbench"),
            "-h", HOST, "-p", str(st["port"]), "-U", "postgres",
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
            proc = subprocess.run(argv, capture_output=True, stdin=subprocess.DEVNULL, check=False)
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
