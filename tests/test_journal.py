"""A running study's trials through the journal (``Store.queue_trial``): committed in
batches, read back whole, and never lost or doubled when Assay is killed."""

from __future__ import annotations

import errno
import json
import os
import signal
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import assay.store as store_module
from assay.journal import Journal, read_lines
from assay.store import Store, TrialRecord, study_file

STUDY = "demo"


def committed(db: Path) -> list[int]:
    """The seqs in the database itself (what another process's reader sees there)."""
    with sqlite3.connect(db) as con:
        return [int(r[0]) for r in con.execute("SELECT seq FROM trials ORDER BY seq")]


def full_trial(seq: int) -> TrialRecord:
    return TrialRecord(
        seq=seq,
        status="ok",
        run=1,
        setting={"x": 3, "path": Path("/tmp/a b"), "none": None},
        argv=["bench", "--n", "é\x1b[31m"],
        work=12.5,
        started=1.7e9 + seq,
        duration=0.05,
        exit_code=0,
        error="",
        stdout=b"\xff\x00time=1.5\n" * 3,
        stderr=b"warn",
        cpu_user=0.01,
        cpu_system=0.002,
        max_rss_kib=2048,
        bookkeeping_s=0.0007,
        host="node-1",
        readings={"time": 1.5, "inf": float("inf")},
        unit_readings={"op": np.linspace(0.0, 1.0, 7)},
        resources={"time_s": np.arange(3.0), "cpu": np.array([0.5, 1.0, np.nan])},
    )


def as_line(t: TrialRecord) -> str:
    """What the store keeps of a trial, as comparable text (NaN equals NaN here)."""
    return json.dumps(store_module._trial_line(0, None, t), sort_keys=True)


@pytest.fixture
def long_window(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_module, "COMMIT_WINDOW_S", 3600.0)


def open_locked(path: Path) -> tuple[Store, int, int]:
    s = Store(path)
    s.lock_study(STUDY)
    sid = s.open_study(STUDY, "h", {})
    return s, sid, s.start_session(sid, {})


def test_queued_trials_read_back_as_committed_ones(tmp_path: Path, long_window: None) -> None:
    db = tmp_path / "s.db"
    s, sid, session = open_locked(db)
    with s:
        for seq in range(3):
            s.queue_trial(sid, full_trial(seq), session)
        assert committed(db) == [0]  # the first commits; the others wait in the journal
        assert len(read_lines(study_file(db, STUDY, ".pending"))) == 2
        with Store(db, read_only=True) as view:  # another process sees all three
            assert [as_line(t) for t in view.trials(sid)] == [
                as_line(full_trial(i)) for i in range(3)
            ]
        other = s.open_study("direct", "h", {})
        s.add_trial(other, full_trial(0))
        (direct,) = s.trials(other)
        queued = s.trials(sid)  # reading commits what waits
        assert committed(db) == [0, 0, 1, 2]
    assert as_line(queued[0]) == as_line(direct)
    assert [t.id is not None for t in queued] == [True] * 3
    assert not study_file(db, STUDY, ".pending").exists()  # removed at the close


def test_a_trial_is_queued_without_waiting_for_an_fsync_in_progress(
    tmp_path: Path, long_window: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The timer's flush fsyncs the journal and the log (~20 ms on this VM's disk, more
    on a slow one): the trial loop, which asks for the next flush after each trial,
    must not wait for it (it did: a 15-25 ms gap between two trials)."""
    import threading
    import time

    db = tmp_path / "s.db"
    s, sid, session = open_locked(db)
    syncing, release = threading.Event(), threading.Event()
    real_fsync = os.fsync

    def slow_fsync(fd: int) -> None:
        syncing.set()
        release.wait(5.0)
        real_fsync(fd)

    with s:
        s.queue_trial(sid, full_trial(0), session)  # committed: the window starts
        s.queue_trial(sid, full_trial(1), session)  # journaled
        monkeypatch.setattr(os, "fsync", slow_fsync)
        flush = threading.Thread(target=s._flush)
        flush.start()
        assert syncing.wait(5.0)
        started = time.monotonic()
        s.queue_trial(sid, full_trial(2), session)
        took = time.monotonic() - started
        release.set()
        flush.join()
        monkeypatch.setattr(os, "fsync", real_fsync)
        assert took < 1.0, took  # not the 5 s the fsync is held
        assert [t.seq for t in s.trials(sid)] == [0, 1, 2]


def test_trials_commit_once_the_window_has_passed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "s.db"
    now = [100.0]
    monkeypatch.setattr(store_module.time, "monotonic", lambda: now[0])
    s, sid, session = open_locked(db)
    with s:
        for seq in range(5):
            s.queue_trial(sid, TrialRecord(seq=seq, status="ok"), session)
            now[0] += 0.3
        # 0 commits at once; 1-3 wait; 4 comes 1.2 s after the commit: 1-4 commit together
        assert committed(db) == [0, 1, 2, 3, 4]
        assert read_lines(study_file(db, STUDY, ".pending")) == []
        s.queue_trial(sid, TrialRecord(seq=5, status="ok"), session)
        assert committed(db) == [0, 1, 2, 3, 4]


def test_trials_commit_once_their_journal_grows_large(
    tmp_path: Path, long_window: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "COMMIT_BYTES", 3000)
    db = tmp_path / "s.db"
    s, sid, session = open_locked(db)
    with s:
        for seq in range(4):  # ~1.4 kB of journal each (their output, in base64)
            s.queue_trial(sid, TrialRecord(seq=seq, status="ok", stdout=b"x" * 1000), session)
        # 0 commits at once; 1 waits; 2 makes the journal hold > 3000 bytes: 1-2 commit
        assert committed(db) == [0, 1, 2]


def test_without_the_studys_lock_every_trial_commits_at_once(
    tmp_path: Path, long_window: None
) -> None:
    db = tmp_path / "s.db"
    with Store(db) as s:
        sid = s.open_study(STUDY, "h", {})
        for seq in range(3):
            s.queue_trial(sid, TrialRecord(seq=seq, status="ok"))
        assert committed(db) == [0, 1, 2]
        assert not study_file(db, STUDY, ".pending").exists()


KILLED_SESSION = """
import os, signal, sys
import assay.store as m
m.COMMIT_WINDOW_S = 3600.0
s = m.Store(sys.argv[1])
s.lock_study("demo")
sid = s.open_study("demo", "h", {})
session = s.start_session(sid, {})
for seq in range(6):
    s.queue_trial(sid, m.TrialRecord(seq=seq, status="ok", readings={"t": seq / 4}), session)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_killed_session_loses_no_trial_and_the_next_commits_them_once(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    done = subprocess.run([sys.executable, "-c", KILLED_SESSION, str(db)], check=False)
    assert done.returncode == -signal.SIGKILL
    journal = study_file(db, STUDY, ".pending")
    assert committed(db) == [0] and len(read_lines(journal)) == 5
    assert stat.S_IMODE(journal.stat().st_mode) == 0o600
    with Store(db, read_only=True) as view:  # a report before the resume sees them all
        sid = view.find_study(STUDY)
        assert sid is not None
        assert [t.readings["t"] for t in view.trials(sid[0])] == [i / 4 for i in range(6)]
        (listed,) = view.overview()  # assay ls counts them too
        assert listed.trials_by_status == {"ok": 6}
    for _ in range(2):  # the resume commits them; the one after finds nothing to do
        with Store(db) as s:
            s.lock_study(STUDY)
            assert committed(db) == list(range(6))
            assert not journal.exists()
            trials = s.trials(sid[0])
        assert [t.readings["t"] for t in trials] == [i / 4 for i in range(6)]
    with sqlite3.connect(db) as con:  # in the session that ran them
        assert {r[0] for r in con.execute("SELECT session_id FROM trials")} == {1}


def test_lines_committed_before_a_kill_are_not_committed_twice(
    tmp_path: Path, long_window: None
) -> None:
    db = tmp_path / "s.db"
    s, sid, session = open_locked(db)
    with s:
        for seq in range(3):
            s.queue_trial(sid, TrialRecord(seq=seq, status="ok"), session)
        lines = read_lines(study_file(db, STUDY, ".pending"))
        s.commit_queued()
    # a kill between the commit and the journal's clearing leaves these lines
    j = Journal.create(study_file(db, STUDY, ".pending"))
    for line in lines:
        j.append(line)
    j.append({"study": sid, "seq": "not a trial"})
    os.write(j.fd, b'{"study": 1, "se')  # cut short by the kill
    os.close(j.fd)
    with Store(db) as s:
        s.lock_study(STUDY)
        assert committed(db) == [0, 1, 2]
        assert not study_file(db, STUDY, ".pending").exists()


def test_a_full_disk_commits_the_queued_trials_instead(
    tmp_path: Path, long_window: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "s.db"
    s, sid, session = open_locked(db)
    with s:
        s.queue_trial(sid, TrialRecord(seq=0, status="ok"), session)
        s.queue_trial(sid, TrialRecord(seq=1, status="ok"), session)

        def full(self: Journal, record: dict[str, Any]) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(Journal, "append", full)
        s.queue_trial(sid, TrialRecord(seq=2, status="ok"), session)
        assert committed(db) == [0, 1, 2]


def test_the_journal_never_follows_a_link(tmp_path: Path, long_window: None) -> None:
    db = tmp_path / "s.db"
    target = tmp_path / "elsewhere"
    target.write_text("keep\n")
    s, sid, session = open_locked(db)
    study_file(db, STUDY, ".pending").symlink_to(target)
    with s:
        for seq in range(3):
            s.queue_trial(sid, TrialRecord(seq=seq, status="ok"), session)
        assert committed(db) == [0, 1, 2]  # no journal of its own: each commits
    assert target.read_text() == "keep\n"
    assert read_lines(study_file(db, STUDY, ".pending")) == []


# SQLite keeps a NaN REAL as NULL and -0.0 as 0: no reading or field of a trial is NaN
# (the readers refuse one), and the sign of a zero is not kept; within the samples'
# arrays (bytes) both are kept
number = st.floats(allow_nan=False, allow_infinity=True).map(lambda x: x + 0.0)
text = st.text(max_size=20)


@settings(max_examples=60, deadline=None)
@given(
    setting=st.dictionaries(text, st.none() | st.booleans() | st.integers() | number | text),
    argv=st.lists(text, max_size=4),
    output=st.binary(max_size=300),
    numbers=st.lists(st.none() | number, min_size=6, max_size=6),
    readings=st.dictionaries(text, number, max_size=3),
    units=st.lists(st.floats(), max_size=20),
    error=text,
)
def test_a_journal_line_holds_what_the_database_would(
    setting: dict[str, Any],
    argv: list[str],
    output: bytes,
    numbers: list[float | None],
    readings: dict[str, float],
    units: list[float],
    error: str,
) -> None:
    t = TrialRecord(
        seq=3,
        status="failed",
        setting=setting,
        argv=argv,
        work=numbers[0],
        started=numbers[1],
        duration=numbers[2],
        exit_code=None if numbers[3] is None else 7,
        error=error,
        stdout=output,
        stderr=output[::-1],
        cpu_user=numbers[4],
        cpu_system=numbers[5],
        max_rss_kib=None,
        readings=readings,
        unit_readings={"u": np.array(units)},
    )
    line = json.loads(json.dumps(store_module._trial_line(4, 9, t)))
    decoded = store_module._trial_from_line(line)
    assert decoded is not None
    assert decoded[:2] == (4, 9)
    assert as_line(decoded[2]) == as_line(t)
    with Store(":memory:") as s:
        sid = s.open_study("x", "h", {})
        s.add_trial(sid, t)
        (back,) = s.trials(sid)
    assert as_line(back) == as_line(t)


def test_read_lines_skips_what_is_not_a_whole_line(tmp_path: Path) -> None:
    path = tmp_path / "j.pending"
    path.write_bytes(b'{"a": 1}\n[1, 2]\nnot json\n{"b": 2}\n{"c": ')
    assert read_lines(path) == [{"a": 1}, {"b": 2}]
    assert read_lines(tmp_path / "missing") == []
