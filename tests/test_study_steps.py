"""A study's steps across sessions and hosts: a killed driver's teardown runs before the
next session's setup (#41, item 6: a resumed setup met the old session's server still
answering), a failed one is said and run again, and the steps' working directory is one
every host can use (#41, item 11)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

STUDY = """\
[study]
name = "left-behind"

[benchmark]
command = ["sleep", "0.2"]
setup = ["sh", "-c", 'echo up >> "$0"', {log}]
teardown = ["sh", "-c", 'echo down >> "$0"; [ ! -e "$0.fail" ] || exit 7', {log}]

[stop]
max_rounds = 6
min_rounds = 6
"""


def _assay(tmp_path: Path, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "assay", "run", str(tmp_path / "s.toml"), "-q", "--no-overhead",
         *args],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=open(tmp_path / "stderr.log", "ab"),
        start_new_session=True,
    )  # fmt: skip


def _wait_for(path: Path, text: str, limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text():
            return
        time.sleep(0.05)
    raise AssertionError(f"{text!r} never appeared in {path}")


def _cut_off(tmp_path: Path, sig: signal.Signals) -> None:
    """Start the study and send its process group ``sig`` once its setup has run."""
    log = tmp_path / "steps.log"
    proc = _assay(tmp_path)
    _wait_for(log, "up")
    time.sleep(0.5)  # a trial or two
    os.killpg(proc.pid, sig)
    proc.wait(timeout=60)


def _resume(tmp_path: Path) -> dict[str, object]:
    out = tmp_path / "r.json"
    proc = _assay(tmp_path, "--json", str(out))
    assert proc.wait(timeout=120) in (0, 5), (tmp_path / "stderr.log").read_text()
    return dict(json.loads(out.read_text()))


def test_a_killed_sessions_teardown_runs_before_the_next_setup(tmp_path: Path) -> None:
    log = tmp_path / "steps.log"
    (tmp_path / "s.toml").write_text(STUDY.format(log=json.dumps(str(log))))
    _cut_off(tmp_path, signal.SIGKILL)
    assert log.read_text().split() == ["up"]  # killed: its teardown never ran
    result = _resume(tmp_path)
    assert log.read_text().split() == ["up", "down", "up", "down"]
    warnings = " ".join(result["warnings"])  # type: ignore[arg-type]
    assert "was cut off after its setup began, before its teardown" in warnings
    assert "its teardown ran before this session's setup" in warnings


def test_a_session_that_ran_its_teardown_leaves_none_due(tmp_path: Path) -> None:
    log = tmp_path / "steps.log"
    (tmp_path / "s.toml").write_text(STUDY.format(log=json.dumps(str(log))))
    _cut_off(tmp_path, signal.SIGINT)  # Ctrl-C: the teardown runs on the way out
    assert log.read_text().split() == ["up", "down"]
    result = _resume(tmp_path)
    assert log.read_text().split() == ["up", "down", "up", "down"]
    assert not any("cut off" in w for w in result["warnings"])  # type: ignore[attr-defined]


def test_a_failed_teardown_is_said_and_run_again_by_the_next_session(tmp_path: Path) -> None:
    log = tmp_path / "steps.log"
    (tmp_path / "s.toml").write_text(STUDY.format(log=json.dumps(str(log))))
    fail = tmp_path / "steps.log.fail"
    fail.touch()
    result = _resume(tmp_path)  # a whole session whose teardown fails
    said = " ".join(result["warnings"])  # type: ignore[arg-type]
    assert "the teardown failed" in said and "status 7" in said, said
    fail.unlink()  # mended
    again = _resume(tmp_path)
    warnings = " ".join(again["warnings"])  # type: ignore[arg-type]
    assert "'s teardown failed: its teardown ran before this session's setup" in warnings
    assert log.read_text().split() == ["up", "down", "down", "up", "down"]


def test_a_relative_working_directory_is_the_study_folders_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#41, item 11: started as 'assay compare study.toml', the example's cwd = "." was
    sent to the hosts as ".", which each host's worker took in its home directory
    ('/root/redis_pair.py')."""
    from assay.spec import parse_spec_text
    from assay.studies.run import Runner

    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    text = '[study]\nname = "c"\n[benchmark]\ncommand = ["true"]\ncwd = "."\n'
    spec = parse_spec_text(text, source="sub/s.toml")
    study = Runner(spec, tmp_path / "s.db", measure_overhead=False, monitor=False)
    assert study.job.cwd == str(tmp_path / "sub")
