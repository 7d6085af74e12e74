"""A store on a full disk: a clear error, and no finished trial lost (issue #8).

Uses a 1 MiB tmpfs; skipped where mounting is not allowed.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from assay.store import Store, StoreError, TrialRecord


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    res = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m,mode=700", "tmpfs", str(mnt)], capture_output=True
    )
    if res.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {res.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_full_disk_gives_a_clear_error_and_keeps_finished_trials(tiny_disk: Path) -> None:
    db = tiny_disk / "s.assay.db"
    units = np.random.default_rng(0).normal(size=4000)  # 32 KB per trial
    stored = 0
    with Store(db) as st:
        sid = st.open_study("s", "h", {})
        with pytest.raises(StoreError) as err:
            for seq in range(1000):
                st.add_trial(
                    sid,
                    TrialRecord(
                        seq=seq, status="ok", readings={"t": float(seq)}, unit_readings={"t": units}
                    ),
                )
                stored += 1
        assert "disk is full" in str(err.value)
        assert str(db) in str(err.value)
    assert stored > 3
    # every trial committed before the disk filled is intact, the failed one absent
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    seqs = [r[0] for r in con.execute("SELECT seq FROM trials ORDER BY seq")]
    assert seqs == list(range(stored))
    n_units = con.execute("SELECT COUNT(*) FROM unit_readings").fetchone()[0]
    assert n_units == stored
    con.close()
    # make room (grow the filesystem) and go on: the same store takes the next trial
    subprocess.run(["mount", "-o", "remount,size=4m", str(tiny_disk)], check=True)
    with Store(db) as st:
        found = st.find_study("s")
        assert found is not None
        assert st.next_seq(found[0]) == stored
        st.add_trial(found[0], TrialRecord(seq=stored, status="ok", readings={"t": -1.0}))
        assert len(st.trials(found[0])) == stored + 1
    assert os.path.getsize(db) > 0


def test_read_only_store_gives_a_clear_error_and_loses_nothing(tiny_disk: Path) -> None:
    db = tiny_disk / "s.assay.db"
    with Store(db) as st:
        sid = st.open_study("s", "h", {})
        st.add_trial(sid, TrialRecord(seq=0, status="ok", readings={"t": 1.0}))
    subprocess.run(["mount", "-o", "remount,ro", str(tiny_disk)], check=True)
    try:
        with pytest.raises(StoreError) as err, Store(db) as st:
            st.add_trial(sid, TrialRecord(seq=1, status="ok", readings={"t": 2.0}))
        assert str(db) in str(err.value)
        assert "read-only" in str(err.value)
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(tiny_disk)], check=True)
    with Store(db) as st:
        assert [t.readings for t in st.trials(sid)] == [{"t": 1.0}]
