"""YCSB as a workload: go-ycsb against the SQLite, Redis, PostgreSQL and etcd targets.

``python3 -m assay.targets ycsb ACTION --db BINDING [options]``; ACTION is ``load``
(insert ``--records`` records), ``run`` (``--operations`` operations of a core workload;
``--load`` first loads fresh data, so one trial is self-contained) or ``teardown``
(remove what ``load`` made: the SQLite file). ``load`` and ``run`` print one JSON
object (:class:`assay.targets.base.RunResult`).

The driver is go-ycsb (``github.com/pingcap/go-ycsb``, built from the Go module proxy
by ``scripts/install-targets.sh``): one binary with the SQLite, Redis, PostgreSQL and
etcd bindings, the YCSB core workload and YCSB's own report. The core workloads A-F
are YCSB's (``--workload a`` ... ``f``; go-ycsb's sample files differ in their request
distribution, so they are spelled out here, :data:`CORE_WORKLOADS`).

Where it connects: ``sqlite``: a database file in a private directory
(``--state``, default per user); ``redis``, ``postgres``, ``etcd``: the server that
``python3 -m assay.targets NAME setup`` started (its ``--state``). Credentials go
to go-ycsb in a property file of mode 600 in a private directory, never on its command
line: Redis through an ACL user made for the run (data commands only) and deleted after
it, PostgreSQL with the cluster's password on 127.0.0.1 (go-ycsb cannot use a Unix
socket: set the target up with ``--tcp``), etcd with the cluster's client certificate.

PIs (``pi.*``): ``throughput`` (operations/s of the whole run), ``errors`` (failed
operations; with ``--windows`` not those a ``--max-time`` stop cut off: ``cut_off``,
``cut_off_max_us`` the longest one of them had been in flight),
and per operation (``read``, ``update``, ``insert``, ``scan``, ``read_modify_write``,
and ``total``): ``<op>_ops`` (its operations/s), ``<op>_count``,
``<op>_avg_us``, ``<op>_p50_us``, ``<op>_p95_us``, ``<op>_p99_us``, ``<op>_max_us``
(microseconds, as YCSB reports them); ``<op>_error_count`` where operations failed.
Unit readings (``units.throughput``): the operations of every ``--interval`` seconds
per second (from YCSB's interval reports), or the overall throughput when the run is
shorter than one interval. ``report.series`` keeps that series with its times (seconds
since the run began).

>>> line = "{} - Takes(s): {}, Count: {}, OPS: {}, Avg(us): 9, 99th(us): {}"
>>> rep = parse_ycsb("\\n".join([
...     line.format("READ ", 1.0, 90, 90.0, 40), line.format("TOTAL", 1.0, 90, 90.0, 40),
...     "Run finished, takes 2.5s",
...     line.format("READ ", 2.5, 250, 100.0, 45), line.format("TOTAL", 2.5, 250, 100.0, 45),
... ]), interval=1.0)
>>> rep.ops["READ"]["p99_us"], rep.elapsed_s, rep.interval_ops
(45.0, 2.5, [90.0])
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.privatefs import private_temp, write_private
from assay.targets.base import RunResult, TargetError
from assay.targets.private import StateDir, default_state_dir

ACTIONS = ("load", "run", "teardown")
BINDINGS = ("sqlite", "redis", "postgres", "etcd")
BINARY = "go-ycsb"
#: where scripts/install-targets.sh puts the binary when it is not on PATH
INSTALLED = (Path("/usr/local/bin/go-ycsb"), Path.home() / ".local" / "bin" / "go-ycsb")
SQLITE_FILE = "ycsb.db"  # in the sqlite binding's private state directory
PROPERTIES = "ycsb.properties"  # mode 600, in a private directory, removed after the run
#: our binding names -> go-ycsb's
GO_YCSB_DB = {"sqlite": "sqlite", "redis": "redis", "postgres": "postgresql", "etcd": "etcd"}
YCSB_USER = "assay-ycsb"  # the Redis ACL user of a run (made for it, deleted after it)

#: YCSB's core workloads (the YCSB wiki's "Core Workloads"; go-ycsb's own sample files
#: use a uniform request distribution where YCSB's use zipfian)
CORE_WORKLOADS: dict[str, dict[str, str]] = {
    "a": {"readproportion": "0.5", "updateproportion": "0.5",
          "requestdistribution": "zipfian"},
    "b": {"readproportion": "0.95", "updateproportion": "0.05",
          "requestdistribution": "zipfian"},
    "c": {"readproportion": "1", "requestdistribution": "zipfian"},
    "d": {"readproportion": "0.95", "insertproportion": "0.05",
          "requestdistribution": "latest"},
    "e": {"scanproportion": "0.95", "insertproportion": "0.05",
          "requestdistribution": "zipfian", "maxscanlength": "100",
          "scanlengthdistribution": "uniform"},
    "f": {"readproportion": "0.5", "readmodifywriteproportion": "0.5",
          "requestdistribution": "zipfian"},
}  # fmt: skip
#: (binding, workload) pairs go-ycsb cannot run, and why
UNSUPPORTED = {
    ("redis", "e"): "go-ycsb's Redis binding has no scan (workload E scans)",
    ("etcd", "e"): "go-ycsb's etcd binding fails nearly every scan (it takes the number of "
    "keys from the start key on for the number returned, which the scan limits)",
}
DISTRIBUTIONS = ("uniform", "zipfian", "latest", "hotspot", "sequential", "exponential")
#: YCSB's report fields -> the PI suffix (latencies in microseconds, as YCSB gives them)
_FIELDS = {
    "Takes(s)": "takes_s", "Count": "count", "OPS": "ops", "Avg(us)": "avg_us",
    "Min(us)": "min_us", "Max(us)": "max_us", "50th(us)": "p50_us", "90th(us)": "p90_us",
    "95th(us)": "p95_us", "99th(us)": "p99_us", "99.9th(us)": "p999_us",
    "99.99th(us)": "p9999_us",
}  # fmt: skip
_PI_FIELDS = ("ops", "count", "avg_us", "p50_us", "p95_us", "p99_us", "max_us")
_LINE = re.compile(r"^(?P<op>[A-Z][A-Z_]*)\s+- (?P<fields>Takes\(s\): .*)$")
_FINISHED = re.compile(r"^Run finished, takes (?P<took>.+)$")


@dataclass
class YcsbReport:
    """What one go-ycsb run reported: per operation its final figures, the run's time,
    and the operations per second of each whole interval."""

    ops: dict[str, dict[str, float]] = field(default_factory=dict)
    elapsed_s: float = 0.0
    interval_ops: list[float] = field(default_factory=list)
    interval_s: float = 1.0
    summary: list[str] = field(default_factory=list)  # YCSB's own final lines, as printed

    @property
    def errors(self) -> int:
        """Failed operations (YCSB counts them as ``<OP>_ERROR``)."""
        return int(sum(v["count"] for k, v in self.ops.items() if k.endswith("_ERROR")))


def _fields(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for part in text.split(", "):
        key, sep, value = part.partition(": ")
        if sep and key in _FIELDS:
            with contextlib.suppress(ValueError):
                out[_FIELDS[key]] = float(value)
    return out


def parse_ycsb(text: str, interval: float = 1.0) -> YcsbReport:
    """Parse go-ycsb's output: the report after "Run finished" and, before it, the
    cumulative reports printed every ``interval`` seconds (their TOTAL counts give the
    operations of each whole interval). Raises :class:`TargetError` when there is no
    final report."""
    report = YcsbReport(interval_s=interval)
    finished = False
    last_total = 0.0
    for raw in text.splitlines():
        line = raw.strip()
        if _FINISHED.match(line):
            finished = True
            continue
        m = _LINE.match(line)
        if m is None:
            continue
        values = _fields(m["fields"])
        if "count" not in values:
            continue
        if finished:
            report.ops[m["op"]] = values
            report.summary.append(line)
        elif m["op"] == "TOTAL":
            report.interval_ops.append((values["count"] - last_total) / interval)
            last_total = values["count"]
    if not finished or not report.ops:
        raise TargetError(
            "go-ycsb printed no final report (no 'Run finished' followed by per-operation "
            f"lines); its output ends: {_tail(text)}"
        )
    total = report.ops.get("TOTAL")
    report.elapsed_s = total["takes_s"] if total else 0.0
    return report


def report_pis(report: YcsbReport) -> dict[str, float]:
    """The run's PIs from its report (see the module's docstring)."""
    total = report.ops.get("TOTAL", {})
    pi: dict[str, float] = {
        "throughput": float(total.get("ops", 0.0)),
        "errors": float(report.errors),
    }
    for op, values in report.ops.items():
        name = op.lower()
        if op.endswith("_ERROR"):  # the failed operations of one kind: how many
            pi[f"{name}_count"] = float(values.get("count", 0.0))
            continue
        if op == "CUT_OFF":  # in flight when a stop cancelled them: how many, how long
            pi["cut_off"] = float(values.get("count", 0.0))
            pi["cut_off_max_us"] = float(values.get("max_us", 0.0))
            continue
        for key in _PI_FIELDS:
            if key in values:
                pi[f"{name}_{key}"] = float(values[key])
    return pi


def failed_operations(result: RunResult, db: str) -> str:
    """What a run's errors say, for a warning: how many failed, of which kind, in which
    window (``--windows``), and what may explain them; "" when none did.

    >>> r = RunResult("ycsb-etcd", "ycsb-c", pi={"errors": 3.0, "total_count": 97.0,
    ...               "read_error_count": 3.0})
    >>> failed_operations(r, "etcd")[:52]
    '3 of 100 operations failed (read 3): a read of a rec'
    """
    pi = result.pi
    errors = int(pi.get("errors", 0))
    if not errors and "cut_off" not in pi:  # cut_off: the run's operations were read
        return ""
    from assay.targets.oplog import WINDOWS  # numpy: already there for a windowed run

    # in flight at the stop, started in a window before the run's last: they hung
    cut = [(w, int(pi[f"cut_off_{w}"])) for w in WINDOWS if f"cut_off_{w}" in pi][:-1]
    stuck = ""
    if any(n for _, n in cut):
        held = pi.get("cut_off_max_us", 0.0) / 1e6
        stuck = (
            "still in flight when --max-time stopped go-ycsb: "
            + ", ".join(f"{n} started {w} the window" for w, n in cut if n)
            + f" (the longest for {held:.1f} s)"
        )
    if not errors:
        return stuck
    kinds = ", ".join(
        f"{k.removesuffix('_error_count')} {int(v)}" for k, v in pi.items()
        if k.endswith("_error_count") and v
    )  # fmt: skip
    total = errors + int(pi.get("total_count", 0))
    text = f"{errors} of {total} operations failed ({kinds})"
    seen = [(w, int(pi[f"errors_{w}"])) for w in WINDOWS if f"errors_{w}" in pi]
    if seen:  # where they failed (errors_before, ...) says more than a usual cause
        text += "; by window: " + ", ".join(f"{n} {w}" for w, n in seen)
        return f"{text}; {stuck}" if stuck else text
    if result.report.get("stopped_by_max_time"):
        threads = result.params.get("threadcount", "1")
        return (
            f"{text}: up to {threads} of them (one per thread) may be the operations in "
            "flight when --max-time stopped go-ycsb, which it counts as failed "
            "(--windows counts those apart)"
        )
    if db == "etcd" and pi.get("read_error_count"):
        return (
            f"{text}: a read of a record that was not loaded fails on etcd; load as many "
            "as --records (ycsb load, or run --load)"
        )
    return text


def _tail(text: str, keep: int = 400) -> str:
    """The end of go-ycsb's output without its properties block (it prints every
    property, the binding's password among them)."""
    lines = [ln for ln in text.splitlines() if not ln.startswith('"') and ln.strip()]
    return " | ".join(lines)[-keep:] or "(nothing)"


def find_binary() -> str:
    """go-ycsb's path: on PATH, else where scripts/install-targets.sh puts it."""
    found = shutil.which(BINARY)
    if found:
        return found
    for path in INSTALLED:
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    raise TargetError(
        "go-ycsb is not installed; build it with: bash scripts/install-targets.sh (as "
        "root; it builds github.com/pingcap/go-ycsb from the Go module proxy with the Go "
        "toolchain and installs /usr/local/bin/go-ycsb)"
    )


def workload_properties(opts: argparse.Namespace) -> dict[str, str]:
    """The YCSB properties of the core workload ``opts`` names."""
    props = {
        "workload": "core",
        "recordcount": str(opts.records),
        "operationcount": str(opts.operations),
        "threadcount": str(opts.threads),
        "fieldcount": str(opts.field_count),
        "fieldlength": str(opts.field_length),
        "readallfields": "true",
        "readproportion": "0", "updateproportion": "0", "insertproportion": "0",
        "scanproportion": "0", "readmodifywriteproportion": "0",
    }  # fmt: skip
    props.update(CORE_WORKLOADS[opts.workload])
    if opts.distribution:
        props["requestdistribution"] = opts.distribution
    return props


def load_properties(props: Mapping[str, str]) -> dict[str, str]:
    """The load's properties: one record more than ``recordcount``. go-ycsb's zipfian
    key chooser reaches key N when N records are loaded (keys 0 to N-1), and unlike YCSB's
    Java client it does not skip a key not yet inserted: a read of it fails on etcd
    (and finds nothing elsewhere). With key N loaded too, every read finds its record.

    >>> load_properties({"recordcount": "1000"})["recordcount"]
    '1001'
    """
    return {**props, "recordcount": str(int(props["recordcount"]) + 1)}


def property_text(props: Mapping[str, str]) -> str:
    """A Java-style property file of ``props``; a value with a line break is refused
    (it would set another property).

    >>> property_text({"a": "1", "b": "x y"})
    'a=1\\nb=x y\\n'
    """
    lines = []
    for key, value in props.items():
        if any(c in key + value for c in "\r\n\x00"):
            raise TargetError(f"YCSB property {key!r} holds a line break or a NUL byte")
        lines.append(f"{key}={value}")
    return "\n".join(lines) + "\n"


# -- bindings: where go-ycsb connects, and with what -----------------------------------
@contextlib.contextmanager
def sqlite_binding(state: StateDir, fresh: bool) -> Iterator[dict[str, str]]:
    """The SQLite file in ``state`` (a fresh one when ``fresh``)."""
    state.create()
    if fresh:
        state.remove(SQLITE_FILE, SQLITE_FILE + "-wal", SQLITE_FILE + "-shm")
    yield {"sqlite.db": str(state.file(SQLITE_FILE)), "sqlite.journalmode": "WAL"}


@contextlib.contextmanager
def redis_binding(state_path: str | None, fresh: bool) -> Iterator[dict[str, str]]:
    """The Redis target's server, through an ACL user made for this run."""
    from assay.targets.redis import RedisTarget, redis_command, run_user

    target = RedisTarget(state_path)
    st, _ = target._running()
    endpoint = target._endpoint(st)
    if fresh:
        redis_command(endpoint, "FLUSHALL")
    with run_user(endpoint, YCSB_USER) as password:
        yield {
            "redis.mode": "single", "redis.network": "unix", "redis.addr": endpoint.socket,
            "redis.username": YCSB_USER, "redis.password": password,
        }  # fmt: skip


@contextlib.contextmanager
def postgres_binding(state_path: str | None, fresh: bool) -> Iterator[dict[str, str]]:
    """The PostgreSQL target's cluster (set up with ``--tcp``): its superuser on
    127.0.0.1, the password from its private pgpass file."""
    from assay.targets.postgres import DB, HOST, PGPASS, SUPERUSER, PostgresTarget

    target = PostgresTarget(state_path)
    st = target._running()
    line = (target.state.read(PGPASS) or "").strip()
    password = line.rsplit(":", 1)[-1]
    if not st.get("tcp"):
        raise TargetError(
            "go-ycsb's PostgreSQL binding reaches a server only over TCP (it builds a URL, "
            "which cannot name a Unix socket): set the postgres target up with --tcp "
            "(127.0.0.1, the generated scram-sha-256 password)"
        )
    if fresh:
        target._psql(st, "DROP TABLE IF EXISTS usertable")
    props = {
        "pg.host": HOST, "pg.port": str(int(st["port"])), "pg.user": SUPERUSER,
        "pg.password": password, "pg.db": DB, "pg.sslmode": "disable",
    }  # fmt: skip
    yield props


@contextlib.contextmanager
def etcd_binding(
    state_path: str | None, endpoints: str | None, fresh: bool
) -> Iterator[dict[str, str]]:
    """The etcd target's members (``--endpoints``, else those its state directory
    records), with its client certificate."""
    from assay.targets.etcd_cluster import client_properties, etcdctl

    props = client_properties(state_path, endpoints)
    if fresh:
        state = StateDir(state_path or default_state_dir("etcd"))
        etcdctl(state, props["etcd.endpoints"], "del", "--prefix", "usertable:")
    yield props


def binding(name: str, opts: argparse.Namespace, fresh: bool) -> Any:
    """The context manager of binding ``name``: yields go-ycsb's connection properties."""
    if name == "sqlite":
        return sqlite_binding(StateDir(opts.state or default_state_dir("ycsb-sqlite")), fresh)
    if name == "redis":
        return redis_binding(opts.state, fresh)
    if name == "postgres":
        return postgres_binding(opts.state, fresh)
    return etcd_binding(opts.state, opts.endpoints, fresh)


# -- running go-ycsb ---------------------------------------------------------------------
RAW_FILE = "ops.csv"  # go-ycsb's raw measurements, in the run's private folder


def run_ycsb(
    phase: str,
    db: str,
    props: Mapping[str, str],
    interval: int,
    timeout: float,
    max_time: float | None = None,
) -> tuple[YcsbReport | None, str, float | None]:
    """Run ``go-ycsb PHASE DB`` with ``props`` (in a private mode-600 property file that
    is removed after it); return its parsed report, its output (with raw
    measurements, no report: the raw file's text) and when it was asked to stop (epoch
    seconds; None when it finished). After ``max_time`` seconds it is asked to stop
    (SIGTERM: it cancels what its threads have in flight, counting those as failed, and
    prints its report; go-ycsb ignores YCSB's maxexecutiontime)."""
    binary = find_binary()
    with private_temp("assay-ycsb-") as folder:  # mode 700, a fresh name
        path = folder / PROPERTIES
        write_private(path, property_text(props).encode())
        argv = [binary, phase, GO_YCSB_DB[db], "-P", str(path), "--interval", str(interval)]
        proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
            cwd=folder,
        )  # fmt: skip
        started = time.monotonic()
        stopped = None
        try:
            try:
                stdout, stderr = proc.communicate(timeout=min(max_time or timeout, timeout))
            except subprocess.TimeoutExpired:
                if max_time is None or max_time >= timeout:
                    raise
                stopped = time.time()  # before the signal: what it cancels ends after
                proc.send_signal(signal.SIGTERM)
                stdout, stderr = proc.communicate(timeout=timeout - (time.monotonic() - started))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise TargetError(f"go-ycsb {phase} did not finish within {timeout:g} s") from None
        raw = None
        if props.get("measurementtype") == "raw" and proc.returncode == 0:
            try:
                raw = (folder / RAW_FILE).read_text(encoding="utf-8")
            except OSError as exc:
                raise TargetError(f"go-ycsb wrote no raw measurements: {exc}") from None
    out = stdout.decode(errors="replace")
    if proc.returncode != 0:
        err = stderr.decode(errors="replace")
        raise TargetError(
            f"go-ycsb {phase} {db} failed (exit status {proc.returncode}): "
            f"{_tail(out + chr(10) + err)}"
        )
    if raw is not None:
        return None, raw, stopped
    return parse_ycsb(out, float(interval)), out, stopped


def run_phase(opts: argparse.Namespace, phase: str) -> RunResult:
    """``load`` or ``run``: go-ycsb against binding ``opts.db``; the run's result."""
    # SQLite: go-ycsb's one connection (its default) serves every thread; more would
    # share one cache and fail with "table is locked" instead of waiting
    props = workload_properties(opts)
    why = UNSUPPORTED.get((opts.db, opts.workload)) if phase == "run" else None
    if why:
        raise TargetError(f"workload {opts.workload.upper()} on {opts.db}: {why}")
    fresh = phase == "load" or bool(opts.load)
    windowed = phase == "run" and opts.windows is not None
    if windowed:  # one line per operation: figures of any window, per-second series
        props.update({"measurementtype": "raw", "measurement.output_file": RAW_FILE})
    with binding(opts.db, opts, fresh) as conn:
        merged = {**props, **conn}
        # where it connected, for the record: every property but the secrets
        connection = {k: v for k, v in conn.items() if "password" not in k}
        if phase == "run" and opts.load:
            run_ycsb("load", opts.db, load_properties(merged), opts.interval, opts.timeout)
        report, text, stopped = run_ycsb(
            phase, opts.db, merged if phase == "run" else load_properties(merged),
            opts.interval, opts.timeout,
            opts.max_time if phase == "run" else None,
        )  # fmt: skip
    extra: dict[str, float] = {}
    times: list[float] | None = None
    found: dict[str, dict[str, float]] = {}
    if report is None:  # raw measurements (--windows)
        report, times, extra, found = _raw_report(text, opts.windows, stopped)
    if "TOTAL" not in report.ops:
        raise TargetError(
            f"go-ycsb {phase} {opts.db}: every operation failed ({report.errors} errors); "
            "is the data loaded (ycsb load, or run --load)?"
        )
    pi = {**report_pis(report), **extra}
    units = report.interval_ops or [pi["throughput"]]
    series = {
        "t_s": times or [opts.interval * (i + 1) for i in range(len(report.interval_ops))],
        "ops_per_s": report.interval_ops,
    }
    return RunResult(
        target=f"ycsb-{opts.db}",
        workload=f"ycsb-{opts.workload}" if phase == "run" else "ycsb-load",
        pi=pi,
        units={"throughput": units},
        report={
            "ops": report.ops,
            "elapsed_s": report.elapsed_s,
            "series": series,
            "summary": report.summary,
            "connection": connection,
            **({"windows": found} if windowed else {}),
            **({"stopped_by_max_time": True} if stopped is not None else {}),
        },
        version=_version(),
        params={k: v for k, v in props.items()},
    )


def _raw_report(
    text: str, spec: tuple[float, float | None], stopped: float | None
) -> tuple[YcsbReport, list[float], dict[str, float], dict[str, dict[str, float]]]:
    """A run's report from its raw measurements: YCSB's figures, the per-second series
    (seconds since this command started), the windows' PIs and figures. The operations
    in flight when ``--max-time`` stopped it at ``stopped`` are no failures: kind
    ``CUT_OFF`` (:func:`~assay.targets.oplog.cut_off`)."""
    import psutil

    from assay.targets.oplog import (
        cut_off,
        parse_oplog,
        per_second,
        summarise,
        window_pis,
        windows,
    )

    log = parse_oplog(text)
    if stopped is not None:
        log = cut_off(log, stopped)
    t0 = psutil.Process().create_time()  # the command's start: the fault's clock
    ops = summarise(log)
    times, rates = per_second(log, t0)
    found = windows(log, t0, spec[0], spec[1])
    report = YcsbReport(ops=ops, elapsed_s=ops.get("TOTAL", {}).get("takes_s", 0.0),
                        interval_ops=rates)  # fmt: skip
    return report, times, window_pis(found), found


def _windows(text: str) -> tuple[float, float | None]:
    """``--windows AT[,UNTIL]``: seconds since the command's start."""
    parts = [p.strip() for p in text.split(",")]
    try:
        values = [float(p) for p in parts]
    except ValueError:
        values = []
    if (
        not 1 <= len(values) <= 2
        or any(v < 0 for v in values)
        or (len(values) == 2 and values[1] <= values[0])
    ):
        raise argparse.ArgumentTypeError(
            f"expected AT or AT,UNTIL in seconds since the command's start (AT < UNTIL), "
            f"got {text!r}"
        )
    return values[0], values[1] if len(values) == 2 else None


def _version() -> str:
    """go-ycsb's version: it has no --version; install-targets.sh records the module
    version it built in a file beside the binary (``go-ycsb.version``)."""
    with contextlib.suppress(TargetError, OSError):
        text = Path(find_binary() + ".version").read_text(encoding="utf-8").strip()
        if text:
            return f"go-ycsb {text}"
    return "go-ycsb"


def teardown(opts: argparse.Namespace) -> None:
    """Remove what ``load`` made: the SQLite binding's directory (a server's data goes
    with its target's teardown)."""
    if opts.db == "sqlite":
        state = StateDir(opts.state or default_state_dir("ycsb-sqlite"))
        if state.exists():
            state.remove(SQLITE_FILE, SQLITE_FILE + "-wal", SQLITE_FILE + "-shm")
            state.remove_dir()


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text}")
    return value


def add_workload_arguments(parser: argparse.ArgumentParser) -> None:
    """YCSB's workload options (this driver's and the etcd target's ``run``)."""
    g = parser.add_argument_group("YCSB workload")
    g.add_argument("--workload", choices=sorted(CORE_WORKLOADS), default="a",
                   type=str.lower, help="YCSB core workload A-F (default a)")  # fmt: skip
    g.add_argument("--records", type=_positive, default=1000, help="recordcount")
    g.add_argument("--operations", type=_positive, default=1000, help="operationcount")
    g.add_argument("--threads", type=_positive, default=1, help="client threads")
    g.add_argument("--field-count", type=_positive, default=10, help="fields per record")
    g.add_argument("--field-length", type=_positive, default=100, help="bytes per field")
    g.add_argument("--distribution", choices=DISTRIBUTIONS,
                   help="request distribution (default: the workload's)")  # fmt: skip
    g.add_argument(
        "--load", action="store_true", help="run: load fresh data first (one self-contained trial)"
    )
    g.add_argument(
        "--interval",
        type=_positive,
        default=1,
        help="seconds between YCSB's interval reports (the unit readings)",
    )
    g.add_argument(
        "--max-time",
        type=_positive,
        help="run: stop after S seconds (the operations done by then count)",
    )
    g.add_argument("--timeout", type=float, default=600.0, help="give go-ycsb at most S seconds")
    g.add_argument(
        "--windows", type=_windows, metavar="AT[,UNTIL]",
        help="run: also the figures before AT, from AT to UNTIL and after (seconds since "
        "this command started: a [[fault]]'s at and at + duration), from one record per "
        "operation: throughput_before, total_p99_us_during, errors_after, ...",
    )  # fmt: skip
    g.add_argument("--endpoints", help="etcd: the members' addresses, comma-separated "
                   "({hosts.member}; port 2379 unless ADDRESS:PORT); default: those the "
                   "state directory records")  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    """The options of ``python3 -m assay.targets ycsb``."""
    p = argparse.ArgumentParser(
        prog="python3 -m assay.targets ycsb",
        description="YCSB (go-ycsb) against a target: load records, run a core workload, "
        "print one JSON object of PIs.",
    )
    p.add_argument("action", choices=ACTIONS)
    p.add_argument("--db", choices=BINDINGS, default="sqlite",
                   help="the binding: sqlite (embedded, a private file; the default) or the "
                   "server a target's setup started")  # fmt: skip
    p.add_argument("--state", help="the target's state directory (default: its own per user)")
    p.add_argument("--output", help="also write the JSON to this file")
    add_workload_arguments(p)
    return p


def main(argv: Sequence[str]) -> int:
    """``python3 -m assay.targets ycsb ...``; returns the exit status."""
    opts = build_parser().parse_args(list(argv))
    try:
        if opts.action == "teardown":
            teardown(opts)
            return 0
        result = run_phase(opts, opts.action)
        out = result.to_json()
    except TargetError as exc:
        print(f"error: ycsb: {exc}", file=sys.stderr)
        return 2
    failed = failed_operations(result, opts.db)
    if failed:
        print(f"warning: ycsb: {failed}", file=sys.stderr)
    text = json.dumps(out, separators=(",", ":"))
    print(text, flush=True)
    if opts.output:
        Path(opts.output).write_text(text + "\n", encoding="utf-8")
    return 0
