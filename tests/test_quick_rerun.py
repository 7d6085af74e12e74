"""Issue #35: a quick study run again measures again, as hyperfine and pyperf do; only
an interrupted one is resumed, and only when its folder and files are unchanged."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from assay.studies.fingerprint import changes, fingerprint, resumption


def _assay(cwd: Path, cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    return subprocess.run(
        [sys.executable, "-m", "assay", *args], cwd=cwd, env=env, capture_output=True,
        text=True, timeout=300, check=False,
    )  # fmt: skip


def _script(path: Path, pause: str) -> None:
    path.write_text(f"#!/bin/sh\nsleep {pause}\n")
    path.chmod(0o755)


def _studies(cache: Path) -> dict[str, int]:
    """Every study of the quick store (archived ones too) and its trial count."""
    with sqlite3.connect(f"file:{cache / 'assay' / 'quick.assay.db'}?mode=ro", uri=True) as db:
        rows = db.execute(
            "SELECT s.name, COUNT(t.id) FROM studies s LEFT JOIN trials t ON t.study_id = s.id"
            " GROUP BY s.id"
        ).fetchall()
    return {str(n): int(c) for n, c in rows}


QUICK = ("-q", "--no-overhead", "--no-monitor", "-r", "6")


def test_a_finished_quick_study_run_again_measures_again(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _script(tmp_path / "b.sh", "0.01")
    first = _assay(tmp_path, cache, "run", *QUICK, "--", "./b.sh")
    assert first.returncode in (0, 5), first.stderr
    _script(tmp_path / "b.sh", "0.03")  # edited, as a user does between two runs
    again = _assay(tmp_path, cache, "run", *QUICK, "--", "./b.sh")
    assert again.returncode in (0, 5), again.stderr
    assert "note: measuring again: the result of" in again.stderr
    counts = _studies(cache)
    assert sorted(counts.values()) == [6, 6]  # the old result kept, archived; 6 new trials
    assert sum("@archived-" in name for name in counts) == 1
    shown = _assay(tmp_path, cache, "run", *QUICK, "--resume", "--", "./b.sh")
    assert "note: reporting the study of" in shown.stderr
    assert sum(_studies(cache).values()) == 12  # reported, nothing measured


def _interrupted(cwd: Path, cache: Path) -> None:
    """A quick study of ./b.sh killed once it has stored 2 trials (the store says when)."""
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "assay", "run", "-q", "--no-overhead", "--no-monitor",
         "--min-rounds", "400", "-r", "500", "--", "./b.sh"],  # it cannot end by itself
        cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 300  # a hang guard only
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            if sum(_studies(cache).values()) >= 2:
                break
        except sqlite3.Error:
            pass
        time.sleep(0.02)
    assert proc.poll() is None, "the study ended before it could be interrupted"
    proc.send_signal(signal.SIGKILL)
    proc.wait()


@pytest.mark.parametrize("change", ["none", "script", "folder"])
def test_an_interrupted_quick_study_resumes_only_when_nothing_changed(
    tmp_path: Path, change: str
) -> None:
    cache = tmp_path / "cache"
    here = tmp_path / "a"
    here.mkdir()
    _script(here / "b.sh", "0.05")
    _interrupted(here, cache)
    if change == "script":
        _script(here / "b.sh", "0.06")
    elif change == "folder":  # the same ./b.sh, in another folder
        (tmp_path / "b").mkdir()
        _script(tmp_path / "b" / "b.sh", "0.05")
        here = tmp_path / "b"
    res = _assay(here, cache, "run", *QUICK, "--", "./b.sh")
    assert res.returncode in (0, 5), res.stderr
    archived = sum("@archived-" in name for name in _studies(cache))
    if change == "none":
        assert "note: resuming the interrupted run of" in res.stderr
        assert archived == 0
    else:
        assert "note: starting afresh, not resuming the interrupted run" in res.stderr
        assert ("b.sh changed" if change == "script" else "the working directory") in res.stderr
        assert archived == 1


def test_fresh_and_resume_together_are_a_usage_error(tmp_path: Path) -> None:
    res = _assay(tmp_path, tmp_path / "c", "run", "--fresh", "--resume", "--", "true")
    assert res.returncode == 2 and "give one" in res.stderr


def test_fingerprint_sees_the_executable_and_file_arguments(tmp_path: Path) -> None:
    data = tmp_path / "in.txt"
    data.write_text("a")
    before = fingerprint([["sort", "in.txt"]], shell=False, cwd=str(tmp_path))
    assert str(data) in before["files"] and len(before["files"]) == 2  # sort, in.txt
    data.write_text("b")
    after = fingerprint([["sort", "in.txt"]], shell=False, cwd=str(tmp_path))
    assert changes(before, after) == [f"{data} changed"]
    shell = fingerprint([["sort in.txt | uniq"]], shell=True, cwd=str(tmp_path))
    assert str(data) in shell["files"]


def test_resumption_rules() -> None:
    fp = {"cwd": "/x", "files": {}}
    kw = {"last_started": 0.0, "trials": 5, "fresh": False, "resume": False}
    assert resumption(fp, fp, last_ended=None, **kw).fresh is False  # type: ignore[arg-type]
    assert resumption(fp, fp, last_ended=1.0, **kw).fresh is True  # type: ignore[arg-type]
    moved = {"cwd": "/y", "files": {}}
    assert resumption(fp, moved, last_ended=None, **kw).fresh is True  # type: ignore[arg-type]
    forced = {**kw, "resume": True}
    assert resumption(fp, moved, last_ended=1.0, **forced).fresh is False  # type: ignore[arg-type]
    nothing = {**kw, "trials": 0}
    assert resumption(None, fp, last_ended=None, **nothing).note is None  # type: ignore[arg-type]


def test_rm_and_gc_keep_the_quick_store_from_only_growing(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    for _ in range(2):  # a result and its archived predecessor
        assert _assay(tmp_path, cache, "run", *QUICK, "--", "true").returncode in (0, 5)
    names = sorted(_studies(cache))
    assert len(names) == 2
    missing = _assay(tmp_path, cache, "rm", "no such study")
    assert missing.returncode == 2 and "nothing removed" in missing.stderr
    assert sorted(_studies(cache)) == names
    removed = _assay(tmp_path, cache, "rm", names[0])
    assert removed.returncode == 0 and f"removed {names[0]}" in removed.stderr
    assert sorted(_studies(cache)) == names[1:]
    kept = _assay(tmp_path, cache, "gc", "--older-than", "30d")
    assert kept.returncode == 0 and "no study older than 30d" in kept.stderr
    assert _assay(tmp_path, cache, "gc", "--older-than", "soon").returncode == 2
    dry = _assay(tmp_path, cache, "gc", "--older-than", "0m", "--dry-run")
    assert f"would remove {names[1]}" in dry.stderr and len(_studies(cache)) == 1
    gone = _assay(tmp_path, cache, "gc", "--older-than", "0m")
    assert gone.returncode == 0 and _studies(cache) == {}
    with sqlite3.connect(cache / "assay" / "quick.assay.db") as db:  # nothing left behind
        for table in ("trials", "readings", "sessions", "study_values", "resource_samples"):
            assert db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] == 0, table


def test_gc_keeps_a_running_study_and_removes_the_others(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from assay.cli import main
    from assay.store import Store

    db = tmp_path / "s.db"
    with Store(db) as st:
        for name in ("idle", "running"):
            st.open_study(name, "h", {})
    with Store(db) as running:
        running.lock_study("running")  # as a study's own process holds it
        res = CliRunner().invoke(main, ["gc", "--older-than", "0m", "--store", str(db)])
        assert res.exit_code == 0, res.output
        assert "removed idle" in res.output and "kept (running now) running" in res.output
    with Store(db) as st:
        assert st.find_study("idle") is None and st.find_study("running") is not None
