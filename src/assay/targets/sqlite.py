"""SQLite through Python's ``sqlite3``: the embedded default target (no server).

Workloads (``--workload``):

* ``insert``: insert ``--rows`` rows of ``--value-size`` random bytes into an empty
  table, ``--batch`` rows per transaction (a load phase).
* ``kv``: a key-value table of ``--rows`` rows; ``--ops`` operations, a share
  ``--read-ratio`` of them point reads (the rest updates), keys drawn with Zipf skew
  ``--zipf`` (0: uniform; YCSB uses 0.99), ``--batch`` operations per transaction.
* ``tpcb``: pgbench's TPC-B-like transaction (update an account, read its balance,
  update a teller and a branch, insert a history row) on ``--rows`` accounts
  (a branch per 100,000 accounts, ten tellers per branch); ``--ops`` transactions,
  ``--batch`` of them per commit, accounts drawn with Zipf skew ``--zipf``.

Knobs (``--knob NAME=VALUE``, any PRAGMA): journal_mode, synchronous, cache_size,
page_size, temp_store, mmap_size, locking_mode, ... Each is read back after it is set:
SQLite silently ignores values it does not accept, so a knob that did not take is an
error naming the value SQLite kept.

Without ``--db`` every run builds a fresh database in a temporary directory (the
load is not timed) and removes it: trials are independent. With ``--db PATH`` the
database persists between runs: ``setup``/``reset`` create it afresh (loaded),
``run`` works on it, ``teardown`` removes it; state then carries over between trials
(what an ordering study needs).

PIs (``pi.*``): ``throughput`` (operations, rows or transactions per second, as
``throughput_unit`` says), ``txn_per_s``, ``latency_ms_mean``/``_p50``/``_p95``/``_p99``
(per transaction), ``elapsed_s``. Unit readings (``units.latency_ms``): one per
transaction (``--units txn``, the default) or one per statement (``--units op``).

>>> import tempfile, os
>>> d = tempfile.mkdtemp()
>>> t = SqliteTarget(db=None, workdir=d)
>>> r = t.run({"workload": "kv", "rows": 1000, "ops": 200, "batch": 10, "knobs": {}})
>>> r.pi["throughput"] > 0, len(r.units["latency_ms"])
(True, 20)
"""

from __future__ import annotations

import argparse
import os
import re
import sqlite3
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from assay.targets.base import RunResult, Target, TargetError, percentile
from assay.targets.private import check_parents
from assay.targets.zipf import zipf_keys

WORKLOADS = ("insert", "kv", "tpcb")

# PRAGMA read-back values that name an enumeration by number
_ENUMS: dict[str, dict[str, str]] = {
    "synchronous": {"0": "off", "1": "normal", "2": "full", "3": "extra"},
    "temp_store": {"0": "default", "1": "file", "2": "memory"},
    "auto_vacuum": {"0": "none", "1": "full", "2": "incremental"},
    "secure_delete": {"0": "off", "1": "on", "2": "fast"},
}
_BOOL = {"1": "on", "0": "off", "true": "on", "false": "off", "yes": "on", "no": "off"}
_VALUE = re.compile(r"^-?[A-Za-z0-9_]+$")
_TPCB = (
    "UPDATE accounts SET abalance = abalance + ? WHERE aid = ?",
    "SELECT abalance FROM accounts WHERE aid = ?",
    "UPDATE tellers SET tbalance = tbalance + ? WHERE tid = ?",
    "UPDATE branches SET bbalance = bbalance + ? WHERE bid = ?",
)
# set before any table exists: page_size (and auto_vacuum) only act on an empty database
_FIRST = ("page_size", "auto_vacuum")


def _norm(name: str, value: object) -> str:
    text = str(value).strip().lower()
    enum = _ENUMS.get(name)
    if enum is not None:
        return enum.get(text, text)
    return _BOOL.get(text, text)


def apply_pragmas(db: sqlite3.Connection, knobs: Mapping[str, str]) -> dict[str, str]:
    """Set each knob with ``PRAGMA name=value`` and read it back; return the read-back values.

    >>> db = sqlite3.connect(":memory:")
    >>> apply_pragmas(db, {"synchronous": "OFF", "cache_size": "-4000"})
    {'cache_size': '-4000', 'synchronous': 'off'}
    >>> try:
    ...     apply_pragmas(db, {"synchronous": "sometimes"})
    ... except TargetError as exc:
    ...     print(str(exc)[:63])
    knob synchronous=sometimes: SQLite did not take it (the setting
    """
    applied: dict[str, str] = {}
    order = sorted(knobs, key=lambda k: (k not in _FIRST, k))
    for name in order:
        value = knobs[name]
        if not re.match(r"^[a-z_]+$", name):
            raise TargetError(f"knob {name}={value}: not a PRAGMA name (letters and _ only)")
        if not _VALUE.match(value):
            raise TargetError(
                f"knob {name}={value}: PRAGMA values are a word or an integer "
                "(e.g. WAL, OFF, -64000)"
            )
        try:
            db.execute(f"PRAGMA {name}={value}").fetchall()
            row = db.execute(f"PRAGMA {name}").fetchone()
        except sqlite3.Error as exc:
            raise TargetError(f"knob {name}={value}: SQLite refused it: {exc}") from None
        if row is None:  # a PRAGMA without a read-back value: nothing to check
            applied[name] = value
            continue
        got = _norm(name, row[0])
        if got != _norm(name, value):
            hint = ""
            if name == "synchronous":
                hint = "; valid values: OFF, NORMAL, FULL, EXTRA (0-3)"
            elif name == "journal_mode":
                hint = "; valid values: DELETE, TRUNCATE, PERSIST, MEMORY, WAL, OFF"
            elif name == "page_size":
                hint = (
                    "; a power of two from 512 to 65536, effective only on a new "
                    "database (not in WAL mode)"
                )
            elif name == "temp_store":
                hint = "; valid values: DEFAULT, FILE, MEMORY (0-2)"
            raise TargetError(
                f"knob {name}={value}: SQLite did not take it (the setting is now {got}){hint}"
            )
        applied[name] = got
    return applied


def _remove_db(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(str(path) + suffix).unlink(missing_ok=True)


def _connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)


def _load(db: sqlite3.Connection, workload: str, rows: int, value_size: int, seed: int) -> None:
    """Create and fill the tables of ``workload`` (not timed)."""
    rng = np.random.default_rng(seed)
    if workload in ("insert", "kv"):
        db.execute("CREATE TABLE IF NOT EXISTS kv (k INTEGER PRIMARY KEY, v BLOB NOT NULL)")
        if workload == "kv":
            payload = rng.bytes(value_size)
            db.execute("BEGIN")
            db.executemany(
                "INSERT OR REPLACE INTO kv VALUES (?, ?)", ((k, payload) for k in range(rows))
            )
            db.execute("COMMIT")
        return
    branches = max(1, rows // 100_000)
    db.executescript(
        """
        CREATE TABLE IF NOT EXISTS branches (bid INTEGER PRIMARY KEY, bbalance INTEGER,
                                             filler TEXT);
        CREATE TABLE IF NOT EXISTS tellers (tid INTEGER PRIMARY KEY, bid INTEGER,
                                            tbalance INTEGER, filler TEXT);
        CREATE TABLE IF NOT EXISTS accounts (aid INTEGER PRIMARY KEY, bid INTEGER,
                                             abalance INTEGER, filler TEXT);
        CREATE TABLE IF NOT EXISTS history (tid INTEGER, bid INTEGER, aid INTEGER,
                                            delta INTEGER, mtime REAL, filler TEXT);
        """
    )
    filler = " " * 84
    db.execute("BEGIN")
    db.executemany("INSERT INTO branches VALUES (?, 0, ?)", ((b, filler) for b in range(branches)))
    db.executemany(
        "INSERT INTO tellers VALUES (?, ?, 0, ?)",
        ((t, t // 10, filler) for t in range(10 * branches)),
    )
    db.executemany(
        "INSERT INTO accounts VALUES (?, ?, 0, ?)",
        ((a, a * branches // rows, filler) for a in range(rows)),
    )
    db.execute("COMMIT")


def _summary(lat_ms: list[float]) -> dict[str, float]:
    return {
        "latency_ms_mean": float(np.mean(lat_ms)),
        "latency_ms_p50": percentile(lat_ms, 50),
        "latency_ms_p95": percentile(lat_ms, 95),
        "latency_ms_p99": percentile(lat_ms, 99),
    }


class SqliteTarget(Target):
    """SQLite through Python's ``sqlite3`` (see the module docstring)."""

    name = "sqlite"

    def __init__(self, db: str | None, workdir: str | None = None) -> None:
        self.db = Path(db).expanduser().absolute() if db else None
        self.workdir = workdir

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        g = parser.add_argument_group("sqlite")
        g.add_argument("--db", help="a persistent database file (default: fresh per run)")
        g.add_argument("--dir", help="where fresh per-run databases go (default: temp dir)")
        g.add_argument("--workload", choices=WORKLOADS, default="kv")
        g.add_argument("--rows", type=int, default=10_000, help="rows (accounts for tpcb)")
        g.add_argument("--value-size", type=int, default=100, help="bytes per value")
        g.add_argument("--ops", type=int, default=5_000, help="operations (tpcb: transactions)")
        g.add_argument("--read-ratio", type=float, default=0.5, help="kv: share of reads")
        g.add_argument("--batch", type=int, default=10, help="operations per transaction")
        g.add_argument("--zipf", type=float, default=0.0, help="key skew theta (0: uniform)")
        g.add_argument("--seed", type=int, default=1, help="random seed of the key choice")
        g.add_argument("--units", choices=("txn", "op"), default="txn", help="unit readings")

    @classmethod
    def from_options(cls, opts: argparse.Namespace) -> SqliteTarget:
        return cls(db=opts.db, workdir=opts.dir)

    @staticmethod
    def workload_from_options(opts: argparse.Namespace) -> dict[str, Any]:
        """The workload parameters of a ``run`` (also the load parameters of setup/reset)."""
        return {
            "workload": opts.workload,
            "rows": opts.rows,
            "value_size": opts.value_size,
            "ops": opts.ops,
            "read_ratio": opts.read_ratio,
            "batch": opts.batch,
            "zipf": opts.zipf,
            "seed": opts.seed,
            "units": opts.units,
        }

    # -- lifecycle -------------------------------------------------------------------
    def start(self, knobs: Mapping[str, str], workload: Mapping[str, Any] | None = None) -> None:
        if self.db is None:
            return  # fresh database per run: nothing to prepare
        self._create(knobs, workload or {})

    def _check_db(self) -> Path:
        """The --db path, after checking no other user can plant a link where SQLite
        writes (the database, its -journal and -wal files): its directory must not be
        writable by others (not even a sticky /tmp), and it must not be a link."""
        assert self.db is not None
        check_parents(self.db, "--db")
        self.db.parent.mkdir(parents=True, exist_ok=True)
        st = os.stat(self.db.parent)
        if st.st_mode & 0o022 or st.st_uid not in (0, os.geteuid()):
            raise TargetError(
                f"--db {self.db}: other users can write in {self.db.parent} and plant "
                "links where SQLite writes its files; keep the database in a directory "
                "of your own"
            )
        if self.db.is_symlink():
            raise TargetError(f"--db {self.db} is a symbolic link; Assay does not follow it")
        return self.db

    def _create(self, knobs: Mapping[str, str], w: Mapping[str, Any]) -> None:
        self._check_db()
        assert self.db is not None
        _remove_db(self.db)
        db = _connect(self.db)
        try:
            apply_pragmas(db, knobs)
            _load(
                db,
                str(w.get("workload", "kv")),
                int(w.get("rows", 10_000)),
                int(w.get("value_size", 100)),
                int(w.get("seed", 1)),
            )
        finally:
            db.close()

    def apply(self, knobs: Mapping[str, str]) -> dict[str, str]:
        # pragmas are per connection: they are applied by run() on its connection
        db = _connect(self.db) if self.db else sqlite3.connect(":memory:")
        try:
            return apply_pragmas(db, knobs)
        finally:
            db.close()

    def reset(self, workload: Mapping[str, Any] | None = None) -> None:
        if self.db is not None:
            self._create({}, workload or {})

    def stop(self) -> None:
        if self.db is not None:
            _remove_db(self.db)

    def describe(self) -> dict[str, Any]:
        db = _connect(self.db) if self.db and self.db.exists() else sqlite3.connect(":memory:")
        try:
            rows = {
                name: db.execute(f"PRAGMA {name}").fetchone()
                for name in (
                    "journal_mode",
                    "synchronous",
                    "cache_size",
                    "page_size",
                    "temp_store",
                    "mmap_size",
                )
            }
            # an in-memory database answers no row for mmap_size: not configured there
            config = {name: _norm(name, row[0]) for name, row in rows.items() if row is not None}
            options = [r[0] for r in db.execute("PRAGMA compile_options")]
        finally:
            db.close()
        return {
            "target": self.name,
            "version": sqlite3.sqlite_version,
            "database": str(self.db) if self.db else "fresh per run",
            "config": config,
            "compile_options": options,
        }

    # -- the workload ----------------------------------------------------------------
    @contextmanager
    def _database(self, knobs: Mapping[str, str], w: Mapping[str, Any]) -> Iterator[Path]:
        if self.db is not None:
            if not self.db.exists():
                self._create(knobs, w)
            yield self._check_db()
            return
        with tempfile.TemporaryDirectory(prefix="assay-sqlite-", dir=self.workdir) as d:
            path = Path(d) / "bench.db"
            db = _connect(path)
            try:
                apply_pragmas(db, {k: v for k, v in knobs.items() if k in _FIRST})
                _load(db, str(w["workload"]), int(w["rows"]), int(w["value_size"]), int(w["seed"]))
            finally:
                db.close()
            yield path

    def run(self, workload: Mapping[str, Any]) -> RunResult:
        w = dict(workload)
        knobs: dict[str, str] = dict(w.pop("knobs", {}) or {})
        defaults = {
            "rows": 10_000,
            "value_size": 100,
            "ops": 5_000,
            "read_ratio": 0.5,
            "batch": 10,
            "zipf": 0.0,
            "seed": 1,
            "units": "txn",
        }
        w = {**defaults, **w}
        kind = str(w.get("workload", "kv"))
        if kind not in WORKLOADS:
            raise TargetError(f"--workload {kind!r}: expected one of {', '.join(WORKLOADS)}")
        for key in ("rows", "ops", "batch"):
            if int(w[key]) < 1:
                raise TargetError(f"--{key.replace('_', '-')} {w[key]}: must be at least 1")
        if not 0.0 <= float(w["read_ratio"]) <= 1.0:
            raise TargetError(f"--read-ratio {w['read_ratio']}: must be between 0 and 1")
        if float(w["zipf"]) < 0:
            raise TargetError(f"--zipf {w['zipf']}: the skew theta must be >= 0")
        with self._database(knobs, w) as path:
            db = _connect(path)
            try:
                applied = apply_pragmas(db, knobs)
                if kind == "insert":
                    result = self._insert(db, w)
                elif kind == "kv":
                    result = self._kv(db, w)
                else:
                    result = self._tpcb(db, w)
            finally:
                db.close()
        result.knobs = applied
        result.version = sqlite3.sqlite_version
        result.params = w
        return result

    def _finish(
        self,
        kind: str,
        unit: str,
        n_ops: int,
        n_txn: int,
        elapsed: float,
        lat_ms: list[float],
        op_ms: list[float] | None,
        extra: dict[str, float],
    ) -> RunResult:
        pi = {
            "throughput": n_ops / elapsed,
            "txn_per_s": n_txn / elapsed,
            "elapsed_s": elapsed,
            **_summary(lat_ms),
            **extra,
        }
        units = {"latency_ms": op_ms if op_ms is not None else lat_ms}
        report = {"throughput_unit": unit, "operations": n_ops, "transactions": n_txn}
        return RunResult(self.name, kind, pi=pi, units=units, report=report)

    def _insert(self, db: sqlite3.Connection, w: Mapping[str, Any]) -> RunResult:
        rows, batch = int(w["rows"]), int(w["batch"])
        payload = np.random.default_rng(int(w["seed"])).bytes(int(w["value_size"]))
        start_key = int(db.execute("SELECT coalesce(max(k) + 1, 0) FROM kv").fetchone()[0])
        per_op = w["units"] == "op"
        lat: list[float] = []
        ops: list[float] = []
        clock = time.perf_counter
        t_all = clock()
        for lo in range(start_key, start_key + rows, batch):
            hi = min(lo + batch, start_key + rows)
            t0 = clock()
            db.execute("BEGIN")
            if per_op:
                for k in range(lo, hi):
                    s = clock()
                    db.execute("INSERT INTO kv VALUES (?, ?)", (k, payload))
                    ops.append((clock() - s) * 1e3)
            else:
                db.executemany(
                    "INSERT INTO kv VALUES (?, ?)", ((k, payload) for k in range(lo, hi))
                )
            db.execute("COMMIT")
            lat.append((clock() - t0) * 1e3)
        elapsed = clock() - t_all
        return self._finish(
            "insert", "rows/s", rows, len(lat), elapsed, lat, ops if per_op else None, {}
        )

    def _kv(self, db: sqlite3.Connection, w: Mapping[str, Any]) -> RunResult:
        rows, n, batch = int(w["rows"]), int(w["ops"]), int(w["batch"])
        rng = np.random.default_rng(int(w["seed"]))
        keys = zipf_keys(rows, float(w["zipf"]), n, rng).tolist()
        reads = (rng.random(n) < float(w["read_ratio"])).tolist()
        payload = rng.bytes(int(w["value_size"]))
        per_op = w["units"] == "op"
        lat: list[float] = []
        ops: list[float] = []
        n_reads = 0
        clock = time.perf_counter
        select, update = "SELECT v FROM kv WHERE k = ?", "UPDATE kv SET v = ? WHERE k = ?"
        t_all = clock()
        for lo in range(0, n, batch):
            t0 = clock()
            db.execute("BEGIN")
            for i in range(lo, min(lo + batch, n)):
                s = clock() if per_op else 0.0
                if reads[i]:
                    db.execute(select, (keys[i],)).fetchone()
                    n_reads += 1
                else:
                    db.execute(update, (payload, keys[i]))
                if per_op:
                    ops.append((clock() - s) * 1e3)
            db.execute("COMMIT")
            lat.append((clock() - t0) * 1e3)
        elapsed = clock() - t_all
        extra = {"reads": float(n_reads), "writes": float(n - n_reads)}
        return self._finish(
            "kv", "ops/s", n, len(lat), elapsed, lat, ops if per_op else None, extra
        )

    def _tpcb(self, db: sqlite3.Connection, w: Mapping[str, Any]) -> RunResult:
        rows, n, batch = int(w["rows"]), int(w["ops"]), int(w["batch"])
        branches = max(1, rows // 100_000)
        rng = np.random.default_rng(int(w["seed"]))
        aids = zipf_keys(rows, float(w["zipf"]), n, rng).tolist()
        tids = rng.integers(0, 10 * branches, size=n).tolist()
        bids = rng.integers(0, branches, size=n).tolist()
        deltas = rng.integers(-5000, 5001, size=n).tolist()
        per_op = w["units"] == "op"
        lat: list[float] = []
        ops: list[float] = []
        clock = time.perf_counter
        t_all = clock()
        for lo in range(0, n, batch):
            t0 = clock()
            db.execute("BEGIN")
            for i in range(lo, min(lo + batch, n)):
                s = clock() if per_op else 0.0
                aid, tid, bid, delta = aids[i], tids[i], bids[i], deltas[i]
                db.execute(
                    "UPDATE accounts SET abalance = abalance + ? WHERE aid = ?", (delta, aid)
                )
                db.execute("SELECT abalance FROM accounts WHERE aid = ?", (aid,)).fetchone()
                db.execute("UPDATE tellers SET tbalance = tbalance + ? WHERE tid = ?", (delta, tid))
                db.execute(
                    "UPDATE branches SET bbalance = bbalance + ? WHERE bid = ?", (delta, bid)
                )
                db.execute(
                    "INSERT INTO history VALUES (?, ?, ?, ?, ?, '')",
                    (tid, bid, aid, delta, time.time()),
                )
                if per_op:
                    ops.append((clock() - s) * 1e3)
            db.execute("COMMIT")
            lat.append((clock() - t0) * 1e3)
        elapsed = clock() - t_all
        return self._finish("tpcb", "txn/s", n, len(lat), elapsed, lat, ops if per_op else None, {})
