"""Issue #62 part 2: ``assay status`` says where a store's studies stand: running (its
process and pace), interrupted (and how to resume), finished."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from assay.cli import exits
from test_gate import QUICK, invoke

SLOW = (
    '[study]\nname = "slow"\n[benchmark]\ncommand = ["sleep", "0.05"]\n'
    "[stop]\nmax_rounds = 4000\nmin_rounds = 4000\nci_width = 0.0001\n"
)


def test_running_then_killed_then_resumable(tmp_path: Path) -> None:
    study = tmp_path / "slow.toml"
    study.write_text(SLOW)
    store = tmp_path / "slow.assay.db"
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "assay", "run", *QUICK, "slow.toml"], cwd=tmp_path, env=env
    )
    try:
        for _ in range(600):  # until the study has stored a few trials (no timing asserted)
            time.sleep(0.1)
            res = invoke(tmp_path, "status", str(store), "--json", "-")
            if res.exit_code == exits.OK and '"state": "running"' in res.stdout:
                doc = json.loads(res.stdout)
                if doc["studies"][0]["trials"]["ok"] >= 2:
                    break
        else:
            pytest.fail(f"never seen running: {res.output}")
        (s,) = doc["studies"]
        assert s["pid"] == proc.pid and "run" in s["command"] and "slow.toml" in s["command"]
        assert s["planned"] == {"least": 4000, "most": 4000}
        assert s["per_trial_s"] > 0 and s["left_most_s"] > 0
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    res = invoke(tmp_path, "status", str(store))
    assert res.exit_code == exits.SHORT, res.output
    assert "slow (run): interrupted" in res.stdout
    assert f"in {tmp_path}: it resumes from the" in res.stdout
    assert "run `" in res.stdout and "slow.toml" in res.stdout


def finished(tmp_path: Path) -> Path:
    """The store of a run study that ran its 10 rounds."""
    study = tmp_path / "s.toml"
    study.write_text(
        '[study]\nname = "s"\n[benchmark]\ncommand = ["true"]\n[stop]\nmax_rounds = 10\n'
    )
    invoke(tmp_path, "run", *QUICK, str(study))
    return tmp_path / "s.assay.db"


def test_a_finished_study_says_why_it_ended(tmp_path: Path) -> None:
    res = invoke(tmp_path, "status", str(finished(tmp_path)))
    assert res.exit_code == exits.OK, res.output
    assert res.stdout.startswith("s (run): finished\n")
    assert "  ended: " in res.stdout and "10 done (10 ok, 0 failed)" in res.stdout


def test_an_unknown_study_names_the_stores_studies(tmp_path: Path) -> None:
    res = invoke(tmp_path, "status", str(finished(tmp_path)), "nope")
    assert res.exit_code != exits.OK and "'s'" in res.output


def test_a_lock_file_planted_as_a_link_is_not_followed(tmp_path: Path) -> None:
    """The status only reads a study's lock file, and never through a link another user
    planted in the store's folder: it is taken for no lock, and its target is untouched."""
    from assay.store import study_file, study_lock_state

    store = finished(tmp_path)
    target = tmp_path / "victim"
    target.write_text('{"pid": 1, "argv": ["rm", "-rf", "/"]}')
    lock = study_file(store, "s", ".lock")
    lock.symlink_to(target)
    assert study_lock_state(store, "s") == (False, {})
    assert target.read_text() == '{"pid": 1, "argv": ["rm", "-rf", "/"]}'
    res = invoke(tmp_path, "status", str(store))
    assert res.exit_code == exits.OK and "rm -rf" not in res.output
