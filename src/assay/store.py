"""The results store: one SQLite database per study file, every trial committed as it ends.

A trial, its readings, its unit readings and its resource samples go in one
transaction, so a crash or a kill leaves either the whole trial or none of it. Opening
the same study again returns its finished trials, which is how a study resumes.

Durability: a commit is in SQLite's write-ahead log (the OS's page cache) when
:meth:`Store.add_trial` returns, so a killed Assay (SIGKILL, a crash) loses no
committed trial.  The log is flushed to the disk (fsync) at most
:data:`DURABLE_WINDOW_S` after a commit, by the next commit or a timer, and when the
store closes: a power loss can lose the trials committed in the last second.  An fsync
per commit (``synchronous=FULL``) cost 3.6 ms per trial here; this costs 0.06 ms.

A running study's trials go through :meth:`Store.queue_trial`: a trial that ends
within :data:`COMMIT_WINDOW_S` of the study's last commit is written to the study's
journal (``<store>.<key>.pending``, :mod:`assay.journal`: one ``write(2)``, in the
page cache when it returns, so a SIGKILL still loses nothing) and committed with the
next ones once the window has passed, before the store is read or written otherwise,
and when it closes.  A killed session's journal is committed by the next process that
claims the study (:meth:`Store.lock_study`: a resume), and read with the store by a
read-only view meanwhile (:meth:`Store.trials`).  The journal is fsynced as the log
is: a power loss can lose the trials of the last :data:`DURABLE_WINDOW_S`, as before.

>>> import tempfile, os
>>> d = tempfile.mkdtemp()
>>> with Store(os.path.join(d, "s.db")) as st:
...     sid = st.open_study("demo", "h1", {"x": 1})
...     tid = st.add_trial(sid, TrialRecord(seq=0, status="ok", readings={"t": 1.0}))
...     [t.readings for t in st.trials(sid)]
[{'t': 1.0}]
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import errno
import fcntl
import hashlib
import json
import math
import os
import re
import signal
import sqlite3
import stat
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from assay.errors import NotAStoreError as NotAStoreError  # re-exported
from assay.errors import StoreError as StoreError  # re-exported
from assay.journal import Journal, read_lines
from assay.privatefs import UnsafePathError, check_own_folder, open_private, trusted_owners

SCHEMA_VERSION = 1
#: Longest time (seconds) a committed trial waits to be flushed to the disk: what a power
#: loss can lose (a killed process loses nothing committed).
DURABLE_WINDOW_S = 1.0
#: Longest time (seconds) between a study's commits while trials end sooner than that:
#: those in between wait in its journal (one write each instead of a transaction).
COMMIT_WINDOW_S = 1.0
#: ... or once the trials waiting there take this many bytes of journal (their outputs).
COMMIT_BYTES = 16 * 1024 * 1024
#: How long opening or writing the store waits for another process's write.
OPEN_TIMEOUT_S = 30.0
OUTPUT_CAP = 64 * 1024  # bytes of stdout/stderr kept per trial: head and tail

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS studies (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    spec_hash TEXT NOT NULL,
    spec_json TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS sessions (
    id INTEGER PRIMARY KEY,
    study_id INTEGER NOT NULL REFERENCES studies(id),
    started REAL NOT NULL,
    ended REAL,
    environment_json TEXT NOT NULL,
    result_json TEXT
);
CREATE TABLE IF NOT EXISTS trials (
    id INTEGER PRIMARY KEY,
    study_id INTEGER NOT NULL REFERENCES studies(id),
    session_id INTEGER REFERENCES sessions(id),
    run INTEGER NOT NULL DEFAULT 0,
    seq INTEGER NOT NULL,
    setting_json TEXT NOT NULL DEFAULT '{}',
    argv_json TEXT NOT NULL DEFAULT '[]',
    work REAL,
    started REAL,
    duration REAL,
    exit_code INTEGER,
    status TEXT NOT NULL,
    error TEXT NOT NULL DEFAULT '',
    stdout BLOB,
    stderr BLOB,
    cpu_user REAL,
    cpu_system REAL,
    max_rss_kib INTEGER,
    bookkeeping_s REAL,
    host TEXT NOT NULL DEFAULT '',
    UNIQUE (study_id, run, seq)
);
CREATE TABLE IF NOT EXISTS readings (
    trial_id INTEGER NOT NULL REFERENCES trials(id),
    pi TEXT NOT NULL,
    value REAL NOT NULL,
    PRIMARY KEY (trial_id, pi)
);
CREATE TABLE IF NOT EXISTS study_values (
    study_id INTEGER NOT NULL REFERENCES studies(id),
    key TEXT NOT NULL,
    value_json TEXT NOT NULL,
    PRIMARY KEY (study_id, key)
);
CREATE TABLE IF NOT EXISTS unit_readings (
    trial_id INTEGER NOT NULL REFERENCES trials(id),
    pi TEXT NOT NULL,
    n INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (trial_id, pi)
);
-- the bottleneck watch's samples (assay.execute.monitor): one float64 series per
-- component per trial; created on open, so stores made before it keep working
CREATE TABLE IF NOT EXISTS resource_samples (
    trial_id INTEGER NOT NULL REFERENCES trials(id),
    series TEXT NOT NULL,
    n INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (trial_id, series)
);
-- a multi-host study (assay.execute.roles): each host's part of a trial (trial_id set)
-- or of a study step (setup, reset, teardown: trial_id NULL), with its exit status,
-- output and bottleneck-watch samples; created on open, as resource_samples
CREATE TABLE IF NOT EXISTS host_runs (
    id INTEGER PRIMARY KEY,
    study_id INTEGER NOT NULL REFERENCES studies(id),
    session_id INTEGER REFERENCES sessions(id),
    trial_id INTEGER REFERENCES trials(id),
    what TEXT NOT NULL,
    role TEXT NOT NULL,
    host TEXT NOT NULL,
    host_index INTEGER NOT NULL,
    status TEXT NOT NULL,
    exit_code INTEGER,
    error TEXT NOT NULL DEFAULT '',
    stdout BLOB,
    stderr BLOB,
    started REAL,
    duration REAL,
    info_json TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS host_runs_trial ON host_runs(trial_id);
CREATE TABLE IF NOT EXISTS host_samples (
    host_run_id INTEGER NOT NULL REFERENCES host_runs(id),
    series TEXT NOT NULL,
    n INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (host_run_id, series)
);
"""


class StudyBusyError(StoreError):
    """Another assay process is running the study in this store (see :meth:`Store.lock_study`).

    ``pid`` is the other process's id when it could be read, else ``None``.
    """

    def __init__(self, message: str, pid: int | None = None) -> None:
        super().__init__(message)
        self.pid = pid


def study_key(name: str) -> str:
    """A short, file-name-safe key of a study name (for files kept beside the store).

    >>> study_key("demo")
    '2a97516c354b'
    """
    return hashlib.sha256(name.encode()).hexdigest()[:12]


#: Bytes in one file name (Linux filesystems); a study's files must fit with ``.tmp``.
NAME_MAX = 255
_TMP = ".tmp"  # what assay.execute.leftovers adds while it writes the running note


def study_file(store: str | Path, name: str, suffix: str) -> Path:
    """A file beside the store that belongs to one study: ``<store>.<key><suffix>``.

    Where that name would be too long for the filesystem (a store named with 240
    characters), the store's name is shortened to its head and a hash of the whole:
    the lock and the running note must exist, or two sessions would run one study
    unguarded.

    >>> study_file("/data/s.assay.db", "demo", ".lock").name
    's.assay.db.2a97516c354b.lock'
    >>> study_file("/data/" + "s" * 240 + ".db", "demo", ".lock").name
    'ssssssssssssssssssssssssssssssss~72c4e4960e7b.2a97516c354b.lock'
    """
    p = Path(store)
    if p.name in ("", ".", ".."):
        raise StoreError(f"{store}: not the name of a results store file")
    full = f"{p.name}.{study_key(name)}{suffix}"
    if len(os.fsencode(full + _TMP)) <= NAME_MAX:
        return p.with_name(full)
    short = hashlib.sha256(os.fsencode(p.name)).hexdigest()[:12]
    return p.with_name(f"{p.name[:32]}~{short}.{study_key(name)}{suffix}")


class _StudyLock:
    """An advisory ``flock`` on ``<store>.<key>.lock``, held while one process runs a study.

    The kernel drops the lock when its holder exits, SIGKILL included, so a killed
    session never blocks the next one; nothing has to judge whether a pid is still
    alive. The file carries the holder's pid and argv for the refusal message, and is
    removed on release (a holder killed with SIGKILL leaves it; the next one reuses it).
    """

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd = fd

    @classmethod
    def acquire(cls, store: Path, name: str) -> _StudyLock | None:
        path = study_file(store, name, ".lock")
        for _ in range(100):
            try:
                # O_NOFOLLOW and this user's file only: a lock planted as a link would
                # have root truncate and overwrite what it names
                fd = open_private(path, os.O_RDWR | os.O_CREAT, 0o600)
            except UnsafePathError as exc:
                raise StoreError(f"the lock file of study '{name}': {exc}") from None
            except OSError as exc:
                # never run unlocked: a second session could add trials to the study
                raise StoreError(
                    f"{path}: cannot create the lock file of study '{name}': "
                    f"{exc.strerror or exc}{os_error_hint(exc, path.parent)}"
                ) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _lock_holder(fd)
                os.close(fd)
                raise StudyBusyError(_busy_text(store, name, holder), holder.get("pid")) from None
            except OSError:  # a filesystem without flock: run unguarded, as before
                os.close(fd)
                return None
            # the previous holder may have removed the file between our open and our
            # flock: then we hold a lock on a file nobody else will see; open it again
            try:
                st, now = os.fstat(fd), os.stat(path)
                same = (st.st_dev, st.st_ino) == (now.st_dev, now.st_ino)
            except FileNotFoundError:
                same = False
            if not same:
                os.close(fd)
                continue
            info = {"pid": os.getpid(), "study": name, "argv": sys.argv, "started": time.time()}
            with contextlib.suppress(OSError):  # where to run it again (assay status)
                info["cwd"] = os.getcwd()
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
                os.pwrite(fd, json.dumps(info).encode(), 0)
            return cls(path, fd)
        raise StoreError(f"{path}: cannot take the study's lock file (it keeps being replaced)")

    def release(self) -> None:
        with contextlib.suppress(OSError):
            self.path.unlink()  # before the unlock: a waiter then sees a new file
        with contextlib.suppress(OSError):
            os.close(self._fd)


def study_lock_state(store: Path, name: str) -> tuple[bool, dict[str, Any]]:
    """Whether a process runs study ``name`` of ``store`` now (it holds the study's lock),
    and what its lock file says (``pid``, ``argv``, ``started``; a holder killed with
    SIGKILL leaves them behind, unlocked).  ``(False, {})`` when there is no lock file;
    the file is only read (``O_NOFOLLOW``, this user's), never created."""
    path = study_file(store, name, ".lock")
    try:
        fd = open_private(path, os.O_RDONLY)
    except (OSError, UnsafePathError):
        return False, {}
    try:
        info = _lock_holder(fd)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True, info
        except OSError:  # a filesystem without flock: nothing can be told
            return False, info
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False, info
    finally:
        os.close(fd)


def _lock_holder(fd: int) -> dict[str, Any]:
    try:
        info = json.loads(os.pread(fd, 65536, 0) or b"{}")
    except (OSError, ValueError):
        return {}
    if not isinstance(info, dict):
        return {}
    pid = info.get("pid")
    info["pid"] = pid if isinstance(pid, int) and not isinstance(pid, bool) else None
    return info


def _busy_text(store: Path, name: str, holder: Mapping[str, Any]) -> str:
    pid = holder.get("pid")
    argv = holder.get("argv")
    started = holder.get("started")
    who = "another assay process"
    details = []
    if pid is not None:
        details.append(f"pid {pid}")
    if isinstance(argv, list) and argv:
        # the program's name, not its path: "assay run study.toml"
        words = [Path(str(argv[0])).name, *(str(a) for a in argv[1:])]
        details.append(" ".join(words)[:200])
    if isinstance(started, int | float):
        details.append(f"started {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(started))}")
    if details:
        who += f" ({'; '.join(details)})"
    stop = f"stop it (Ctrl-C there, or kill {pid})" if pid is not None else "stop it"
    return (
        f"{store}: study '{name}' is being run by {who}; two processes cannot add trials "
        f"to one study. Wait for it to finish, or {stop}, then run the same command again: "
        "it resumes from the trials already stored. Other studies can use this store "
        "at the same time."
    )


@dataclass
class HostRun:
    """One host's part of a multi-host trial or study step (:mod:`assay.execute.roles`).

    ``what``: ``setup``, ``reset``, ``teardown``, or ``trial`` (the host's part of a
    trial: its role's command if any, and the watch); ``status`` as a trial's (``ok``,
    ``failed``, ``timeout``, ``launch_error``) or ``lost`` (its Dask worker died).
    ``started`` is the epoch second the host's watch began (its ``resources`` series'
    ``time_s`` count from it); ``info`` the host's ``cpu_count`` and ``memory_bytes``.
    """

    what: str
    role: str
    host: str
    index: int
    status: str
    exit_code: int | None = None
    error: str = ""
    stdout: bytes = b""
    stderr: bytes = b""
    started: float | None = None
    duration: float | None = None
    info: dict[str, Any] = field(default_factory=dict)
    resources: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def where(self) -> str:
        """The host as messages name it: ``10.0.0.2 (server[1])``."""
        return f"{self.host} ({self.role}[{self.index}])"


#: The status of a trial ``interference = "repeat"`` set aside and measured again: kept
#: in the store, left out of :meth:`Store.trials` (and so of every analysis) unless asked.
DISTURBED = "disturbed"


@dataclass
class TrialRecord:
    """One trial as stored."""

    seq: int
    status: str
    run: int = 0
    setting: dict[str, Any] = field(default_factory=dict)
    argv: list[str] = field(default_factory=list)
    work: float | None = None
    started: float | None = None
    duration: float | None = None
    exit_code: int | None = None
    error: str = ""
    stdout: bytes = b""
    stderr: bytes = b""
    cpu_user: float | None = None
    cpu_system: float | None = None
    max_rss_kib: int | None = None
    bookkeeping_s: float | None = None
    host: str = ""  # the machine that ran it ("" in stores made before hosts were kept)
    readings: dict[str, float] = field(default_factory=dict)
    unit_readings: dict[str, np.ndarray] = field(default_factory=dict)
    # the bottleneck watch's series, by name (see assay.execute.monitor)
    resources: dict[str, np.ndarray] = field(default_factory=dict)
    # a multi-host trial: every host's part (its exit status, output and samples)
    host_runs: list[HostRun] = field(default_factory=list)
    id: int | None = None
    # this process's perf_counter() at the command's spawn and reap (not stored): the
    # executor measures its own cost between trials with them
    spawned: float | None = field(default=None, repr=False, compare=False)
    reaped: float | None = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True)
class StudyOverview:
    """One study as :meth:`Store.overview` reads it (times are Unix seconds)."""

    id: int
    name: str
    spec: dict[str, Any]  # the study file as stored (Spec.model_dump)
    created: float
    trials_by_status: dict[str, int]
    first_trial: float | None  # the earliest trial's start; None: no trial yet
    last_trial: float | None  # the latest trial's start
    sessions: int
    last_ended: float | None  # when the newest session ended; None: running or killed
    last_result: dict[str, Any] | None  # what the newest session stored when it ended


#: What :meth:`Store.archive_study` puts between a study's name and its archive stamp
#: (``NAME@archived-YYYYMMDDTHHMMSS-ID``).
ARCHIVED = "@archived-"


def is_archived(name: str) -> bool:
    """Was the study of this name set aside by ``--fresh`` (:meth:`Store.archive_study`)?

    >>> is_archived("demo@archived-20260101T120000-3"), is_archived("demo")
    (True, False)
    """
    return re.search(re.escape(ARCHIVED) + r"\d{8}T\d{6}-\d+\Z", name) is not None


def _json_object(text: str) -> dict[str, Any]:
    """A stored JSON object; anything else (a store edited by hand) reads as empty."""
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def cap_output(data: bytes, cap: int = OUTPUT_CAP) -> bytes:
    """Keep the head and tail of long output, with a marker of what was cut."""
    if len(data) <= cap:
        return data
    half = cap // 2
    cut = len(data) - 2 * half
    return data[:half] + f"\n[... {cut} bytes cut by assay ...]\n".encode() + data[-half:]


_STORE_HINT = (
    "give --store a path in a folder of your own (e.g. ~/assay/NAME.assay.db), or move "
    "the study file there"
)


def _create_private(path: Path) -> None:
    """Check the store's folder and the store file before SQLite opens them.

    SQLite opens the store and its own files beside it (``-wal``, ``-shm``,
    ``-journal``) following links, so a store in a folder others can write (/tmp, a
    group-writable project folder) is refused: a link planted at any of those names
    would have Assay, often root, write its pages into the file it names.  A new store
    is created mode 0600 (it may hold benchmark output and environments); an existing
    one must be a regular file, not a link, of root, this user or the user who ran sudo.
    """
    try:
        check_own_folder(path.parent, f"results store {path}", _STORE_HINT)
        real = Path(os.path.realpath(path))
        if real != path.absolute():  # the user's own link: its target's folder counts
            check_own_folder(real.parent, f"results store {path} (a link to {real})", _STORE_HINT)
        fd = open_private(real, os.O_RDONLY | os.O_CREAT, 0o600, owners=trusted_owners())
    except UnsafePathError as exc:
        raise StoreError(str(exc)) from None
    os.close(fd)


class Store:
    """A SQLite results store. Use as a context manager."""

    def __init__(self, path: str | Path, *, read_only: bool = False) -> None:
        """Open (creating and migrating) the store at ``path``; with ``read_only`` open
        an existing store to read it, changing nothing (no schema, no migration), which
        works beside a study that is running."""
        self.path = Path(path)
        self._locks: dict[str, _StudyLock | None] = {}
        self._batches: dict[int, _Batch | None] = {}  # by study id; None: commit each trial
        self.read_only = read_only
        if "\x00" in str(self.path):  # no file has such a name; os calls raise ValueError
            raise StoreError(f"{str(self.path)!r}: a results store's path cannot hold a NUL")
        if read_only:
            self._open_read_only()
            return
        try:
            if str(self.path) != ":memory:":
                self.path.parent.mkdir(parents=True, exist_ok=True)
                _create_private(self.path)
            self._db = sqlite3.connect(str(self.path), timeout=OPEN_TIMEOUT_S, isolation_level=None)
            _set_wal(self._db)
            # commits are written, not fsynced; _flush_soon fsyncs the log within the
            # window (see the module docstring)
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._flush_timer: threading.Timer | None = None
            self._flush_lock = threading.Lock()  # the timer's state: held for no I/O
            # one flush at a time, and no journal closed under one: held while fsyncing,
            # never by the trial loop (which once waited there for an fsync: ~20 ms)
            self._sync_lock = threading.Lock()
            self._db.execute("PRAGMA foreign_keys=ON")
            self._db.executescript(_SCHEMA)
            self._add_missing_columns()
            self._db.execute(
                "INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', ?)",
                (str(SCHEMA_VERSION),),
            )
        except (sqlite3.Error, OSError) as exc:
            hint = _hint(exc) if isinstance(exc, sqlite3.Error) else ""
            folder = self.path.parent
            if not hint and folder.is_dir() and not os.access(folder, os.W_OK):
                hint = " (its folder is read-only: fix the permissions or name another --store)"
            elif not hint and _read_only_fs(folder):
                hint = " (it is on a read-only filesystem: name another --store)"
            elif not hint and _no_space(folder):  # SQLite says "disk I/O error" then
                hint = " (the disk is full: free space and run the same command again)"
            raise StoreError(f"{self.path}: cannot open the results store: {exc}{hint}") from None

    def _open_read_only(self) -> None:
        try:
            info = self.path.stat()
        except (FileNotFoundError, NotADirectoryError):
            raise NotAStoreError(f"{self.path}: no such results store") from None
        except OSError as exc:  # a folder on the way we may not search
            raise StoreError(f"{self.path}: cannot read the results store: {exc}") from None
        if not stat.S_ISREG(info.st_mode):  # a folder, a FIFO (opening one would block)
            raise NotAStoreError(f"{self.path}: not a results store: not a regular file")
        if info.st_size == 0:  # SQLite would read it as a new, empty database
            raise NotAStoreError(f"{self.path}: not a results store: the file is empty")
        uri = self.path.resolve().as_uri()
        try:
            self._db = _connect_read_only(uri + "?mode=ro")
        except sqlite3.Error as exc:
            if _errorcode(exc) != sqlite3.SQLITE_CANTOPEN or not _wal_index_unwritable(self.path):
                raise _read_error(self.path, exc) from None
            wal = Path(f"{self.path}-wal")
            if wal.is_file() and wal.stat().st_size > 0:
                raise StoreError(
                    f"{self.path}: cannot read the store: its write-ahead log {wal} holds "
                    "commits, and SQLite reads them only through a -shm file it cannot create "
                    "in this read-only folder; copy the store with its -wal file to a "
                    "writable folder and read the copy"
                ) from None
            # A WAL-mode store opened with mode=ro needs its -shm file, which SQLite cannot
            # create here.  immutable=1 reads the file without it (and without locks): safe
            # only because nobody can write this file where we cannot even create one, and
            # no log holds commits that immutable would skip (checked above).
            try:
                self._db = _connect_read_only(uri + "?immutable=1")
            except sqlite3.Error as again:
                raise _read_error(self.path, again) from None

    def _add_missing_columns(self) -> None:
        """Columns added since a store was made (its trials keep their default)."""
        have = {row[1] for row in self._db.execute("PRAGMA table_info(trials)")}
        if "host" not in have:  # stores made before trials ran on a cluster
            self._db.execute("ALTER TABLE trials ADD COLUMN host TEXT NOT NULL DEFAULT ''")

    def close(self) -> None:
        """Flush the log to the disk, close the database and release every study lock
        this store holds."""
        try:
            if not self.read_only:
                self.commit_queued()
        finally:
            self._close()

    def _close(self) -> None:
        if not self.read_only:
            with self._flush_lock:
                if self._flush_timer is not None:
                    self._flush_timer.cancel()
                    self._flush_timer = None
            with self._sync_lock:
                for batch in self._batches.values():
                    if batch is not None and batch.journal is not None and not batch.trials:
                        batch.journal.close()  # all committed; else the next session commits it
                        batch.journal = None
            self._flush()
        self._db.close()
        for lock in self._locks.values():
            if lock is not None:
                lock.release()
        self._locks.clear()

    def lock_study(self, name: str) -> None:
        """Claim study ``name`` for this process until :meth:`close`.

        Raises :class:`StudyBusyError` (naming the store, the other process's pid and
        what to do) when another process holds it. A study is claimed before it is
        opened or archived, so neither a second run nor a ``--fresh`` can interleave
        trials with, or rename the study under, a running session; other studies in
        the same store are not affected (SQLite serialises their commits).

        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "s.db")
        >>> with Store(path) as a, Store(path) as b:
        ...     a.lock_study("x")
        ...     b.lock_study("y")  # another study: fine
        ...     try:
        ...         b.lock_study("x")
        ...     except StudyBusyError as exc:
        ...         print(exc.pid == os.getpid())
        True
        """
        if name in self._locks or str(self.path) == ":memory:":
            return
        self._locks[name] = _StudyLock.acquire(self.path, name)
        if self._locks[name] is not None:
            self._commit_journal(name)

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _flush(self) -> None:
        """fsync the write-ahead log (and so every commit in it) and the journals."""
        if str(self.path) == ":memory:":
            return
        with self._sync_lock:
            for batch in list(self._batches.values()):  # (the loop may add one meanwhile)
                journal = None if batch is None else batch.journal
                if journal is not None:
                    with contextlib.suppress(OSError):
                        journal.sync()
            with contextlib.suppress(OSError):  # no log (nothing written): nothing to flush
                fd = os.open(f"{self.path}-wal", os.O_RDONLY | os.O_CLOEXEC)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)

    def _flush_soon(self) -> None:
        """After a commit: make sure the log is flushed within the window."""
        with self._flush_lock:
            if self._flush_timer is not None:
                return  # a flush is already due within the window

            def due() -> None:
                with self._flush_lock:
                    self._flush_timer = None
                self._flush()

            self._flush_timer = threading.Timer(DURABLE_WINDOW_S, due)
            self._flush_timer.daemon = True
            self._flush_timer.start()

    @contextlib.contextmanager
    def _transaction(self, what: str) -> Iterator[sqlite3.Connection]:
        """One write transaction; sqlite errors become StoreError with the likely cause.

        Ctrl-C is held until the transaction has committed or rolled back, then raised:
        a SIGINT during COMMIT's fsync would otherwise surface just after the commit, try
        to roll back a finished transaction and report a bogus store error.
        """
        with _sigint_held():
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    yield self._db
                    self._db.execute("COMMIT")
                    self._flush_soon()
                except BaseException:
                    if self._db.in_transaction:
                        self._db.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise StoreError(f"{self.path}: cannot {what}: {exc}{_hint(exc)}") from None

    def _write(self, sql: str, params: tuple[Any, ...], what: str) -> int:
        self.commit_queued()  # in the order they came: trials before a session's end
        with self._transaction(what) as db:
            return int(db.execute(sql, params).lastrowid or 0)

    # studies -----------------------------------------------------------------
    def find_study(self, name: str) -> tuple[int, str] | None:
        row = self._db.execute(
            "SELECT id, spec_hash FROM studies WHERE name = ?", (name,)
        ).fetchone()
        return (int(row[0]), str(row[1])) if row else None

    def open_study(self, name: str, spec_hash: str, spec: Mapping[str, Any]) -> int:
        """Return the id of the study ``name``, creating it if needed.

        Raises StoreError if it exists with a different measurement hash.
        """
        found = self.find_study(name)
        if found is not None:
            sid, old = found
            if old != spec_hash:
                raise StoreError(
                    f"{self.path}: study '{name}' was measured with a different benchmark, "
                    "parameters or PIs; its trials cannot be mixed with this study file's. "
                    "Give the study a new [study].name, or pass --fresh to archive the old "
                    "trials and start again."
                )
            return sid
        return self._write(
            "INSERT INTO studies(name, spec_hash, spec_json, created) VALUES (?,?,?,?)",
            (name, spec_hash, json.dumps(spec, sort_keys=True, default=str), time.time()),
            "create the study",
        )

    def archive_study(self, name: str) -> str | None:
        """Rename study ``name`` out of the way; return the new name."""
        found = self.find_study(name)
        if found is None:
            return None
        new = f"{name}@archived-{time.strftime('%Y%m%dT%H%M%S')}-{found[0]}"
        self._write("UPDATE studies SET name = ? WHERE id = ?", (new, found[0]), "archive")
        return new

    def delete_study(self, name: str) -> bool:
        """Remove study ``name`` and everything stored with it; False when there is none.
        Claims it first (:meth:`lock_study`): a running study is not removed.

        >>> import tempfile, os
        >>> with Store(os.path.join(tempfile.mkdtemp(), "s.db")) as st:
        ...     sid = st.open_study("x", "h", {})
        ...     _ = st.add_trial(sid, TrialRecord(seq=0, status="ok", readings={"t": 1.0}))
        ...     st.delete_study("x"), st.find_study("x"), st.delete_study("x")
        (True, None, False)
        """
        self.lock_study(name)
        found = self.find_study(name)
        if found is None:
            return False
        sid = (found[0],)
        trials = "SELECT id FROM trials WHERE study_id = ?"
        runs = "SELECT id FROM host_runs WHERE study_id = ?"
        self.commit_queued()
        with self._transaction("remove the study") as db:
            for table in ("readings", "unit_readings", "resource_samples"):
                db.execute(f"DELETE FROM {table} WHERE trial_id IN ({trials})", sid)
            db.execute(f"DELETE FROM host_samples WHERE host_run_id IN ({runs})", sid)
            for table in ("host_runs", "trials", "study_values", "sessions"):
                db.execute(f"DELETE FROM {table} WHERE study_id = ?", sid)
            db.execute("DELETE FROM studies WHERE id = ?", sid)
        return True

    def overview(self) -> list[StudyOverview]:
        """Every study of the store with its trial counts, trial times and sessions: what
        ``assay ls`` lists. Reads only (it works on a store opened ``read_only``); the
        trials waiting in the journal of a running or killed session are counted."""
        self.commit_queued()
        with self.reading("list the studies"):
            studies = self._db.execute(
                "SELECT id, name, spec_json, created FROM studies ORDER BY id"
            ).fetchall()
            counts: dict[int, dict[str, int]] = {}
            for sid, status, n in self._db.execute(
                "SELECT study_id, status, COUNT(*) FROM trials GROUP BY study_id, status"
                " ORDER BY study_id, status"
            ):
                counts.setdefault(int(sid), {})[str(status)] = int(n)
            times = {
                int(r[0]): (r[1], r[2])
                for r in self._db.execute(
                    "SELECT study_id, MIN(started), MAX(started) FROM trials GROUP BY study_id"
                )
            }
            sessions = {
                int(r[0]): int(r[1])
                for r in self._db.execute(
                    "SELECT study_id, COUNT(*) FROM sessions GROUP BY study_id"
                )
            }
            last = {  # the newest session of each study: did it end, and with what result
                int(r[0]): (r[1], r[2])
                for r in self._db.execute(
                    "SELECT study_id, ended, result_json FROM sessions WHERE id IN"
                    " (SELECT MAX(id) FROM sessions GROUP BY study_id)"
                )
            }
        out = []
        for sid, name, spec_json, created in studies:
            ended, result = last.get(int(sid), (None, None))
            first, latest = times.get(int(sid), (None, None))
            waiting = self._waiting(int(sid))
            if waiting:
                by_status = counts.setdefault(int(sid), {})
                for t in waiting:
                    by_status[t.status] = by_status.get(t.status, 0) + 1
                started = [t.started for t in waiting if t.started is not None]
                if started:
                    first = min(started) if first is None else min(first, *started)
                    latest = max(started) if latest is None else max(latest, *started)
            out.append(
                StudyOverview(
                    id=int(sid),
                    name=str(name),
                    spec=_json_object(spec_json),
                    created=float(created),
                    trials_by_status=counts.get(int(sid), {}),
                    first_trial=first,
                    last_trial=latest,
                    sessions=sessions.get(int(sid), 0),
                    last_ended=ended,
                    last_result=None if result is None else _json_object(result),
                )
            )
        return out

    @contextlib.contextmanager
    def reading(self, what: str) -> Iterator[None]:
        """Queries (this store's reads) whose sqlite errors become a StoreError naming the
        store and ``what`` could not be done: a damaged or much older store."""
        try:
            yield
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot {what}: {exc}{_hint(exc)}") from None

    def study_value(self, study_id: int, key: str) -> Any:
        """A value recorded for the study (e.g. a comparison's seed); ``None`` if absent."""
        row = self._db.execute(
            "SELECT value_json FROM study_values WHERE study_id = ? AND key = ?", (study_id, key)
        ).fetchone()
        return None if row is None else json.loads(row[0])

    def set_study_value(self, study_id: int, key: str, value: Any) -> None:
        """Record a JSON value for the study (replacing an earlier one)."""
        self._write(
            "INSERT OR REPLACE INTO study_values(study_id, key, value_json) VALUES (?,?,?)",
            (study_id, key, json.dumps(value, sort_keys=True, default=str)),
            "record a study value",
        )

    # sessions ----------------------------------------------------------------
    def start_session(self, study_id: int, environment: Mapping[str, Any]) -> int:
        return self._write(
            "INSERT INTO sessions(study_id, started, environment_json) VALUES (?,?,?)",
            (study_id, time.time(), json.dumps(environment, sort_keys=True, default=str)),
            "start a session",
        )

    def end_session(self, session_id: int, result: Mapping[str, Any]) -> None:
        self._write(
            "UPDATE sessions SET ended = ?, result_json = ? WHERE id = ?",
            (time.time(), json.dumps(result, sort_keys=True, default=str), session_id),
            "end the session",
        )

    def environments(self, study_id: int) -> list[dict[str, Any]]:
        rows = self._db.execute(
            "SELECT environment_json FROM sessions WHERE study_id = ? ORDER BY id", (study_id,)
        ).fetchall()
        return [json.loads(r[0]) for r in rows]

    def study_names(self) -> list[str]:
        """Every study's name, oldest first (archived ones included: ``NAME@archived-...``)."""
        return [str(r[0]) for r in self._db.execute("SELECT name FROM studies ORDER BY id")]

    def study_spec(self, study_id: int) -> dict[str, Any]:
        """The study file as stored when the study was created (``Spec.model_dump``)."""
        row = self._db.execute("SELECT spec_json FROM studies WHERE id = ?", (study_id,)).fetchone()
        return {} if row is None else dict(json.loads(row[0]))

    def study_sessions(self, study_id: int) -> list[dict[str, Any]]:
        """The study's sessions, oldest first: ``id``, ``started``, ``ended`` (None: it
        did not end: interrupted, or still running) and ``result`` (its result's JSON)."""
        rows = self._db.execute(
            "SELECT id, started, ended, result_json FROM sessions WHERE study_id = ? ORDER BY id",
            (study_id,),
        ).fetchall()
        return [
            {"id": int(r[0]), "started": r[1], "ended": r[2], "result": json.loads(r[3] or "null")}
            for r in rows
        ]

    def trials_by_session(self, study_id: int) -> dict[int | None, int]:
        """How many of the study's trials each session stored (None: no session)."""
        self.commit_queued()
        rows = self._db.execute(
            "SELECT session_id, COUNT(*) FROM trials WHERE study_id = ? GROUP BY session_id",
            (study_id,),
        ).fetchall()
        return {None if r[0] is None else int(r[0]): int(r[1]) for r in rows}

    def trial_span(self, study_id: int) -> tuple[int, int]:
        """How many trials the study holds and the newest one's id (0 when none): a
        trial added or removed changes one of them."""
        self.commit_queued()
        row = self._db.execute(
            "SELECT COUNT(*), COALESCE(MAX(id), 0) FROM trials WHERE study_id = ?", (study_id,)
        ).fetchone()
        return int(row[0]), int(row[1])

    # trials ------------------------------------------------------------------
    def next_seq(self, study_id: int, run: int = 0) -> int:
        self.commit_queued()
        row = self._db.execute(
            "SELECT COALESCE(MAX(seq) + 1, 0) FROM trials WHERE study_id = ? AND run = ?",
            (study_id, run),
        ).fetchone()
        return int(row[0])

    def add_trial(self, study_id: int, t: TrialRecord, session_id: int | None = None) -> int:
        """Commit one trial with all its readings atomically; return its id."""
        self.commit_queued()
        with self._transaction("save a trial") as db:
            return _insert_trial(db, study_id, t, session_id)

    def queue_trial(self, study_id: int, t: TrialRecord, session_id: int | None = None) -> None:
        """Keep one trial as :meth:`add_trial` does, its commit batched: within
        :data:`COMMIT_WINDOW_S` of the study's last commit it goes to the study's journal
        and is committed with the next ones (see the module's docstring); else, or
        where this process does not hold the study's lock, it is committed now.

        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "s.db")
        >>> with Store(path) as st:
        ...     st.lock_study("demo")
        ...     sid = st.open_study("demo", "h1", {})
        ...     for seq in range(3):
        ...         st.queue_trial(sid, TrialRecord(seq=seq, status="ok"))
        ...     [t.seq for t in st.trials(sid)]  # reading commits what is queued
        [0, 1, 2]
        """
        batch = self._batch(study_id)
        now = time.monotonic()
        if batch is None or t.host_runs or now - batch.committed >= COMMIT_WINDOW_S:
            self._commit_batch(batch, [(study_id, session_id, t)], "save a trial")
            return
        # kept before it is written: a Ctrl-C from here on still commits it (close)
        batch.trials.append((study_id, session_id, t))
        try:
            if batch.journal is None:
                batch.journal = Journal.create(batch.path)
            batch.size += batch.journal.append(_trial_line(study_id, session_id, t))
        except OSError:  # no journal (a full disk): commit them all now
            self._commit_batch(batch, [], "save a trial")
            return
        if batch.size >= COMMIT_BYTES:
            self._commit_batch(batch, [], "save the queued trials")
            return
        self._flush_soon()

    def commit_queued(self) -> None:
        """Commit the trials :meth:`queue_trial` keeps in journals (stores made
        read-only hold none)."""
        for batch in self._batches.values():
            if batch is not None and batch.trials:
                self._commit_batch(batch, [], "save the queued trials")

    def _batch(self, study_id: int) -> _Batch | None:
        if study_id not in self._batches:
            name = self._study_name(study_id)
            held = name is not None and self._locks.get(name) is not None
            self._batches[study_id] = (
                _Batch(study_file(self.path, name, ".pending"))
                if name is not None and held
                else None
            )
        return self._batches[study_id]

    def _study_name(self, study_id: int) -> str | None:
        row = self._db.execute("SELECT name FROM studies WHERE id = ?", (study_id,)).fetchone()
        return None if row is None else str(row[0])

    def _commit_batch(
        self, batch: _Batch | None, more: list[tuple[int, int | None, TrialRecord]], what: str
    ) -> None:
        """Commit the batch's trials and ``more`` in one transaction, then empty the
        journal (a kill before that leaves lines the next session finds committed)."""
        items = (batch.trials if batch is not None else []) + more
        with _sigint_held():  # a Ctrl-C after the commit must not leave them queued
            with self._transaction(what) as db:
                for study_id, session_id, t in items:
                    _insert_trial(db, study_id, t, session_id)
            if batch is None:
                return
            batch.trials = []
            batch.size = 0
            batch.committed = time.monotonic()
            if batch.journal is not None:
                with contextlib.suppress(OSError):
                    batch.journal.clear()

    def _commit_journal(self, name: str) -> None:
        """Commit the trials a killed session of study ``name`` left in its journal
        (those not committed yet), then remove it."""
        path = study_file(self.path, name, ".pending")
        items = [item for item in map(_trial_from_line, read_lines(path)) if item is not None]
        if items:
            with self._transaction("save the trials of a killed session") as db:
                for study_id, session_id, t in items:
                    if _stored(db, study_id, t) or not _exists(db, "studies", study_id):
                        continue
                    if session_id is not None and not _exists(db, "sessions", session_id):
                        session_id = None
                    _insert_trial(db, study_id, t, session_id)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)

    def add_host_runs(
        self, study_id: int, runs: list[HostRun], session_id: int | None = None
    ) -> None:
        """Commit the hosts' parts of a study step (setup, reset, teardown) at once."""
        if runs:
            self.commit_queued()
            with self._transaction("save the hosts' steps") as db:
                _insert_host_runs(db, study_id, session_id, None, runs)

    def host_runs(self, study_id: int, *, steps: bool = False) -> dict[int | None, list[HostRun]]:
        """The study's host runs by trial id (``None``: the study's steps, with
        ``steps``); empty for a store made before hosts were kept, opened read-only."""
        if not self._has_table("host_runs"):
            return {}
        q = (
            "SELECT id, trial_id, what, role, host, host_index, status, exit_code, error,"
            " stdout, stderr, started, duration, info_json FROM host_runs WHERE study_id = ?"
            + ("" if steps else " AND trial_id IS NOT NULL")
            + " ORDER BY id"
        )
        samples: dict[int, dict[str, np.ndarray]] = {}
        for rid, name, data in self._db.execute(
            "SELECT s.host_run_id, s.series, s.data FROM host_samples s JOIN host_runs h"
            " ON h.id = s.host_run_id WHERE h.study_id = ?",
            (study_id,),
        ):
            samples.setdefault(int(rid), {})[str(name)] = np.frombuffer(data, dtype="<f8").copy()
        out: dict[int | None, list[HostRun]] = {}
        for r in self._db.execute(q, (study_id,)):
            out.setdefault(None if r[1] is None else int(r[1]), []).append(
                HostRun(
                    what=str(r[2]),
                    role=str(r[3]),
                    host=str(r[4]),
                    index=int(r[5]),
                    status=str(r[6]),
                    exit_code=r[7],
                    error=str(r[8]),
                    stdout=bytes(r[9] or b""),
                    stderr=bytes(r[10] or b""),
                    started=r[11],
                    duration=r[12],
                    info=_json_object(r[13]),
                    resources=samples.get(int(r[0]), {}),
                )
            )
        return out

    def _has_table(self, name: str) -> bool:
        row = self._db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
        ).fetchone()
        return row is not None

    def trials(
        self, study_id: int, run: int | None = None, *, disturbed: bool = False
    ) -> list[TrialRecord]:
        """All trials of a study in execution order, with readings and unit readings:
        those committed, and those waiting in the journal of a session that runs in
        another process or was killed (see the module's docstring; they have no id
        yet).  Trials set aside as :data:`DISTURBED` only with ``disturbed``."""
        self.commit_queued()
        # the journal before the database: a trial committed in between is read twice
        # (and kept once), not missed
        waiting = [] if self._batches.get(study_id) else self._journal_trials(study_id)
        out = list(self._iter_trials(study_id, run))
        extra = _not_in(
            [t for t in waiting if run is None or t.run == run], {(t.run, t.seq) for t in out}
        )
        if extra:
            out = sorted([*out, *extra], key=lambda t: (t.run, t.seq))
        return out if disturbed else [t for t in out if t.status != DISTURBED]

    def _waiting(self, study_id: int) -> list[TrialRecord]:
        """The trials in the study's journal that are not committed yet (none for a
        study whose journal this store keeps: it commits before it reads)."""
        if self._batches.get(study_id):
            return []
        waiting = self._journal_trials(study_id)
        if not waiting:
            return []
        have = set(self._db.execute("SELECT run, seq FROM trials WHERE study_id = ?", (study_id,)))
        return _not_in(waiting, have)

    def _journal_trials(self, study_id: int) -> list[TrialRecord]:
        name = self._study_name(study_id)
        if name is None:
            return []
        lines = read_lines(study_file(self.path, name, ".pending"))
        items = (_trial_from_line(line) for line in lines)
        return [item[2] for item in items if item is not None and item[0] == study_id]

    def _iter_trials(self, study_id: int, run: int | None) -> Iterator[TrialRecord]:
        q = (
            "SELECT id, run, seq, setting_json, argv_json, work, started, duration, exit_code,"
            " status, error, stdout, stderr, cpu_user, cpu_system, max_rss_kib, bookkeeping_s,"
            " host FROM trials WHERE study_id = ?"
        )
        params: tuple[Any, ...] = (study_id,)
        if run is not None:
            q += " AND run = ?"
            params = (study_id, run)
        rows = self._db.execute(q + " ORDER BY run, seq", params).fetchall()
        readings: dict[int, dict[str, float]] = {}
        for tid, pi, value in self._db.execute(
            "SELECT r.trial_id, r.pi, r.value FROM readings r JOIN trials t ON t.id = r.trial_id"
            " WHERE t.study_id = ?",
            (study_id,),
        ):
            readings.setdefault(int(tid), {})[str(pi)] = float(value)
        units: dict[int, dict[str, np.ndarray]] = {}
        for tid, pi, data in self._db.execute(
            "SELECT u.trial_id, u.pi, u.data FROM unit_readings u JOIN trials t"
            " ON t.id = u.trial_id WHERE t.study_id = ?",
            (study_id,),
        ):
            units.setdefault(int(tid), {})[str(pi)] = np.frombuffer(data, dtype="<f8").copy()
        resources: dict[int, dict[str, np.ndarray]] = {}
        for tid, name, data in self._db.execute(
            "SELECT r.trial_id, r.series, r.data FROM resource_samples r JOIN trials t"
            " ON t.id = r.trial_id WHERE t.study_id = ?",
            (study_id,),
        ):
            resources.setdefault(int(tid), {})[str(name)] = np.frombuffer(data, dtype="<f8").copy()
        hosts = self.host_runs(study_id)
        for r in rows:
            tid = int(r[0])
            yield TrialRecord(
                id=tid,
                run=int(r[1]),
                seq=int(r[2]),
                setting=json.loads(r[3]),
                argv=json.loads(r[4]),
                work=r[5],
                started=r[6],
                duration=r[7],
                exit_code=r[8],
                status=str(r[9]),
                error=str(r[10]),
                stdout=bytes(r[11] or b""),
                stderr=bytes(r[12] or b""),
                cpu_user=r[13],
                cpu_system=r[14],
                max_rss_kib=r[15],
                bookkeeping_s=r[16],
                host=str(r[17]),
                readings=readings.get(tid, {}),
                unit_readings=units.get(tid, {}),
                resources=resources.get(tid, {}),
                host_runs=hosts.get(tid, []),
            )


@dataclass
class _Batch:
    """A study's trials waiting in its journal for one commit (:meth:`Store.queue_trial`)."""

    path: Path
    journal: Journal | None = None
    trials: list[tuple[int, int | None, TrialRecord]] = field(default_factory=list)
    committed: float = -math.inf  # time.monotonic() of the last commit
    size: int = 0  # bytes of journal the waiting trials take


def _not_in(waiting: list[TrialRecord], have: set[tuple[int, int]]) -> list[TrialRecord]:
    """The journal's trials whose (run, seq) is not among ``have`` (committed), once each."""
    return list({(t.run, t.seq): t for t in waiting if (t.run, t.seq) not in have}.values())


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _f8(values: np.ndarray) -> bytes:
    return np.ascontiguousarray(values, dtype="<f8").tobytes()


def _floats(text: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text, validate=True), dtype="<f8").copy()


def _trial_line(study_id: int, session_id: int | None, t: TrialRecord) -> dict[str, Any]:
    """A trial as its journal line holds it: what :func:`_insert_trial` stores."""
    return {
        "study": study_id,
        "session": session_id,
        "run": t.run,
        "seq": t.seq,
        "setting": json.dumps(t.setting, sort_keys=True, default=str),
        "argv": t.argv,
        "work": t.work,
        "started": t.started,
        "duration": t.duration,
        "exit_code": t.exit_code,
        "status": t.status,
        "error": t.error,
        "stdout": _b64(cap_output(t.stdout)),
        "stderr": _b64(cap_output(t.stderr)),
        "cpu_user": t.cpu_user,
        "cpu_system": t.cpu_system,
        "max_rss_kib": t.max_rss_kib,
        "bookkeeping_s": t.bookkeeping_s,
        "host": t.host,
        "readings": {pi: float(v) for pi, v in t.readings.items()},
        "units": {pi: _b64(_f8(a)) for pi, a in t.unit_readings.items()},
        "resources": {k: _b64(_f8(a)) for k, a in t.resources.items()},
    }


def _number(value: Any) -> float | None:
    return None if value is None else float(value)


def _trial_from_line(d: dict[str, Any]) -> tuple[int, int | None, TrialRecord] | None:
    """(study id, session id, trial) of a journal line; None for a line that is not one."""
    try:
        setting = json.loads(d["setting"])
        trial = TrialRecord(
            run=int(d["run"]),
            seq=int(d["seq"]),
            setting=dict(setting),
            argv=[str(a) for a in d["argv"]],
            work=_number(d["work"]),
            started=_number(d["started"]),
            duration=_number(d["duration"]),
            exit_code=None if d["exit_code"] is None else int(d["exit_code"]),
            status=str(d["status"]),
            error=str(d["error"]),
            stdout=base64.b64decode(d["stdout"], validate=True),
            stderr=base64.b64decode(d["stderr"], validate=True),
            cpu_user=_number(d["cpu_user"]),
            cpu_system=_number(d["cpu_system"]),
            max_rss_kib=None if d["max_rss_kib"] is None else int(d["max_rss_kib"]),
            bookkeeping_s=_number(d["bookkeeping_s"]),
            host=str(d["host"]),
            readings={str(k): float(v) for k, v in dict(d["readings"]).items()},
            unit_readings={str(k): _floats(v) for k, v in dict(d["units"]).items()},
            resources={str(k): _floats(v) for k, v in dict(d["resources"]).items()},
        )
        session = d["session"]
        return int(d["study"]), None if session is None else int(session), trial
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError, binascii.Error):
        return None


def _insert_trial(
    db: sqlite3.Connection, study_id: int, t: TrialRecord, session_id: int | None
) -> int:
    """Insert one trial with its readings, samples and host runs (inside the caller's
    transaction); its id."""
    cur = db.execute(
        "INSERT INTO trials(study_id, session_id, run, seq, setting_json, argv_json, work,"
        " started, duration, exit_code, status, error, stdout, stderr, cpu_user,"
        " cpu_system, max_rss_kib, bookkeeping_s, host)"
        " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            study_id,
            session_id,
            t.run,
            t.seq,
            json.dumps(t.setting, sort_keys=True, default=str),
            json.dumps(t.argv),
            t.work,
            t.started,
            t.duration,
            t.exit_code,
            t.status,
            t.error,
            cap_output(t.stdout),
            cap_output(t.stderr),
            t.cpu_user,
            t.cpu_system,
            t.max_rss_kib,
            t.bookkeeping_s,
            t.host,
        ),
    )
    tid = int(cur.lastrowid or 0)
    db.executemany(
        "INSERT INTO readings(trial_id, pi, value) VALUES (?, ?, ?)",
        [(tid, pi, float(v)) for pi, v in t.readings.items()],
    )
    db.executemany(
        "INSERT INTO unit_readings(trial_id, pi, n, data) VALUES (?,?,?,?)",
        [(tid, pi, int(np.size(a)), _f8(a)) for pi, a in t.unit_readings.items()],
    )
    # a trial deleted by hand (without its samples) leaves its id free for reuse
    db.execute("DELETE FROM resource_samples WHERE trial_id = ?", (tid,))
    db.executemany(
        "INSERT INTO resource_samples(trial_id, series, n, data) VALUES (?,?,?,?)",
        [(tid, name, int(np.size(a)), _f8(a)) for name, a in t.resources.items()],
    )
    _insert_host_runs(db, study_id, session_id, tid, t.host_runs)
    return tid


def _stored(db: sqlite3.Connection, study_id: int, t: TrialRecord) -> bool:
    row = db.execute(
        "SELECT 1 FROM trials WHERE study_id = ? AND run = ? AND seq = ?", (study_id, t.run, t.seq)
    ).fetchone()
    return row is not None


def _exists(db: sqlite3.Connection, table: str, row_id: int) -> bool:
    return db.execute(f"SELECT 1 FROM {table} WHERE id = ?", (row_id,)).fetchone() is not None


def _insert_host_runs(
    db: sqlite3.Connection,
    study_id: int,
    session_id: int | None,
    trial_id: int | None,
    runs: list[HostRun],
) -> None:
    """Insert host runs and their samples (inside the caller's transaction)."""
    for h in runs:
        cur = db.execute(
            "INSERT INTO host_runs(study_id, session_id, trial_id, what, role, host, host_index,"
            " status, exit_code, error, stdout, stderr, started, duration, info_json)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                study_id,
                session_id,
                trial_id,
                h.what,
                h.role,
                h.host,
                h.index,
                h.status,
                h.exit_code,
                h.error,
                cap_output(h.stdout),
                cap_output(h.stderr),
                h.started,
                h.duration,
                json.dumps(h.info, sort_keys=True, default=str),
            ),
        )
        rid = int(cur.lastrowid or 0)
        db.executemany(
            "INSERT INTO host_samples(host_run_id, series, n, data) VALUES (?,?,?,?)",
            [(rid, name, int(np.size(a)), _f8(a)) for name, a in h.resources.items()],
        )


@contextlib.contextmanager
def _sigint_held() -> Iterator[None]:
    """Hold SIGINT for the duration of the block, then deliver it as it would have been."""
    if threading.current_thread() is not threading.main_thread():
        yield  # Python runs signal handlers in the main thread only
        return
    pending: list[int] = []

    def hold(signum: int, _frame: object) -> None:
        pending.append(signum)

    try:
        previous = signal.signal(signal.SIGINT, hold)
    except ValueError:  # not the main interpreter
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_DFL if previous is None else previous)
        if pending:
            if callable(previous):
                previous(signal.SIGINT, None)  # default_int_handler: KeyboardInterrupt
            elif previous == signal.SIG_DFL:
                signal.raise_signal(signal.SIGINT)


def os_error_hint(exc: OSError, folder: Path) -> str:
    """What to do about an OSError on a file beside the store, or ''."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return " (the disk is full: free space and run the same command again to resume)"
    if exc.errno == errno.EROFS or _read_only_fs(folder):
        return " (it is on a read-only filesystem: name another --store)"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return " (its folder is not writable: fix the permissions or name another --store)"
    return ""


def _no_space(folder: Path) -> bool:
    try:
        st = os.statvfs(folder)
    except OSError:
        return False
    return st.f_bavail == 0 or (st.f_files > 0 and st.f_favail == 0)


def _set_wal(db: sqlite3.Connection, timeout: float = OPEN_TIMEOUT_S) -> None:
    """``PRAGMA journal_mode=WAL``, retried while another process switches the same new
    store: SQLite answers that race "database is locked" at once, without its busy
    timeout (two ``assay run`` started together on a new store failed 7 times in 40)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.005)


def _connect_read_only(uri: str) -> sqlite3.Connection:
    """A connection that only reads, checked by reading the store's schema version."""
    db = sqlite3.connect(uri, uri=True, timeout=OPEN_TIMEOUT_S, isolation_level=None)
    try:
        db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    except sqlite3.Error:
        db.close()
        raise
    return db


def _errorcode(exc: sqlite3.Error) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return None if code is None else int(code) & 0xFF  # the primary code of an extended one


def _wal_index_unwritable(path: Path) -> bool:
    """Whether SQLite cannot create ``path``'s -shm file: its folder is read-only to us
    (permissions, or a read-only filesystem, which ``access`` reports even to root)."""
    return not Path(f"{path}-shm").exists() and not os.access(path.parent, os.W_OK)


def _read_error(path: Path, exc: sqlite3.Error) -> StoreError:
    """Why a store opened to be read cannot be: not a store (bad input) or not now."""
    code = _errorcode(exc)
    if code == sqlite3.SQLITE_NOTADB:
        return NotAStoreError(f"{path}: not a results store: not an SQLite database")
    if code == sqlite3.SQLITE_CORRUPT:
        return NotAStoreError(f"{path}: not a results store Assay can read: damaged ({exc})")
    if code == sqlite3.SQLITE_ERROR and "no such table" in str(exc):
        return NotAStoreError(
            f"{path}: not a results store: an SQLite database without Assay's tables"
        )
    return StoreError(f"{path}: cannot read the results store: {exc}{_hint(exc)}")


def _read_only_fs(folder: Path) -> bool:
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _hint(exc: sqlite3.Error) -> str:
    text = str(exc).lower()
    if "full" in text:
        return " (the disk is full: free space and run the same command again to resume)"
    if "readonly" in text or "read-only" in text:
        return " (the store is read-only: fix its permissions or name another --store)"
    if "locked" in text or "busy" in text:
        return " (another assay process is writing this store)"
    if "unique" in text:
        return " (this trial is already stored: is another assay process running this study?)"
    return ""
