from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from assay.store import OUTPUT_CAP, Store, StoreError, TrialRecord, cap_output


def test_trial_roundtrip_with_unit_readings(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    units = np.linspace(0, 1, 1001)
    with Store(db) as st:
        sid = st.open_study("s", "h", {"a": 1})
        st.add_trial(
            sid,
            TrialRecord(
                seq=0,
                status="ok",
                readings={"t": 1.25},
                unit_readings={"t": units},
                setting={"x": 1},
                argv=["a", "b"],
                stdout=b"out",
            ),
        )
        st.add_trial(sid, TrialRecord(seq=1, status="timeout", error="timed out"))
    with Store(db) as st:
        found = st.find_study("s")
        assert found is not None
        trials = st.trials(found[0])
    assert [t.status for t in trials] == ["ok", "timeout"]
    assert trials[0].readings == {"t": 1.25}
    np.testing.assert_array_equal(trials[0].unit_readings["t"], units)
    assert trials[0].argv == ["a", "b"] and trials[0].setting == {"x": 1}
    assert trials[1].error == "timed out"


def test_changed_measurement_refused_then_fresh_archives(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as st:
        sid = st.open_study("s", "h1", {})
        st.add_trial(sid, TrialRecord(seq=0, status="ok"))
        with pytest.raises(StoreError, match="different benchmark"):
            st.open_study("s", "h2", {})
        archived = st.archive_study("s")
        assert archived is not None and archived.startswith("s@archived-")
        sid2 = st.open_study("s", "h2", {})
        assert sid2 != sid and st.trials(sid2) == []
        assert len(st.trials(sid)) == 1


def test_duplicate_trial_is_refused_and_store_intact(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as st:
        sid = st.open_study("s", "h", {})
        st.add_trial(sid, TrialRecord(seq=0, status="ok", readings={"t": 1.0}))
        with pytest.raises(StoreError, match="already stored"):
            st.add_trial(sid, TrialRecord(seq=0, status="ok", readings={"t": 2.0}))
        assert [t.readings for t in st.trials(sid)] == [{"t": 1.0}]


def test_failed_insert_rolls_back_the_whole_trial(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as st:
        sid = st.open_study("s", "h", {})
        bad = TrialRecord(seq=0, status="ok", readings={"t": float("nan")})
        # NaN violates NOT NULL in sqlite (stored as NULL): the trial row must not remain
        with pytest.raises(StoreError):
            st.add_trial(sid, bad)
        assert st.trials(sid) == []
        assert st.next_seq(sid) == 0


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
def test_read_only_store_gives_clear_error(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    Store(db).close()
    db.chmod(0o444)
    tmp_path.chmod(0o555)
    try:
        with pytest.raises(StoreError, match=str(db.name)), Store(db) as st:
            st.open_study("s", "h", {})
    finally:
        tmp_path.chmod(0o755)


def test_unwritable_location_is_a_store_error() -> None:
    with pytest.raises(StoreError, match="cannot open"):
        Store("/proc/nonexistent-dir/x.db")


def test_output_is_capped_head_and_tail() -> None:
    data = b"a" * OUTPUT_CAP + b"MIDDLE" + b"z" * OUTPUT_CAP
    capped = cap_output(data)
    assert len(capped) < OUTPUT_CAP + 100
    assert capped.startswith(b"a") and capped.endswith(b"z") and b"cut by assay" in capped


def test_two_processes_share_a_store_without_corruption(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with Store(db) as a, Store(db) as b:
        sa = a.open_study("a", "h", {})
        sb = b.open_study("b", "h", {})
        for i in range(20):
            a.add_trial(sa, TrialRecord(seq=i, status="ok", readings={"t": float(i)}))
            b.add_trial(sb, TrialRecord(seq=i, status="ok", readings={"t": float(-i)}))
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert con.execute("SELECT COUNT(*) FROM trials").fetchone()[0] == 40


def test_commits_are_flushed_to_the_disk_within_the_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue #17: no fsync per commit, but the write-ahead log is fsynced at most
    DURABLE_WINDOW_S after a commit (one flush for a burst of commits), and on close."""
    import threading

    import assay.store as store_mod

    flushed: list[str] = []
    done = threading.Event()
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        flushed.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)
        done.set()

    monkeypatch.setattr(store_mod, "DURABLE_WINDOW_S", 1.0)
    monkeypatch.setattr(store_mod.os, "fsync", fsync)
    path = tmp_path / "s.db"
    with Store(path) as st:
        sid = st.open_study("s", "h", {})
        assert done.wait(5)  # the study's own commit, flushed within the window
        flushed.clear()
        done.clear()
        for i in range(20):  # a burst of commits: one flush, when the window ends
            st.add_trial(sid, TrialRecord(seq=i, status="ok", readings={"t": 1.0}))
        assert flushed == []  # no fsync in the commits themselves
        assert done.wait(5)
        assert flushed == [f"{path}-wal"]
        st.add_trial(sid, TrialRecord(seq=20, status="ok"))
    assert flushed[-1] == f"{path}-wal" and len(flushed) >= 2  # close() flushed too
    with Store(path, read_only=True) as st:
        assert len(st.trials(st.find_study("s")[0])) == 21  # type: ignore[index]
