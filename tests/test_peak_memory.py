"""A command's peak memory is its own, as ``/usr/bin/time -v`` reports it (issue #35),
through the peak spawner (:mod:`assay.execute.peak`); and the spawner's cost stays
within its budget."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay.execute import peak
from assay.execute.command import run_command
from assay.execute.peak import PeakPace, spawner
from assay.execute.trial import TrialJob, TrialRequest, run_trial
from assay.spec import PISpec

needs_spawner = pytest.mark.skipif(
    spawner() is None, reason="no C compiler: scripts/install-targets.sh installs gcc"
)


def _time_v(argv: list[str]) -> int:
    done = subprocess.run(["/usr/bin/time", "-f", "%M", *argv], capture_output=True, text=True)
    return int(done.stderr.split()[-1])


@needs_spawner
@pytest.mark.skipif(not os.access("/usr/bin/time", os.X_OK), reason="no /usr/bin/time")
@pytest.mark.parametrize(
    "argv",
    [["sleep", "0.01"], ["true"], ["python3", "-c", "b = bytearray(40_000_000)"]],
    ids=["sleep", "true", "python-40MB"],
)
def test_the_peak_is_the_commands_own_within_ten_percent_of_time_v(argv: list[str]) -> None:
    """Before: every small command read Assay's own peak (55 MB for 'sleep 0.01', 1.7 MB
    by 'time -v'), or nothing at all."""
    ours = [run_command(argv, timeout=30, peak=True) for _ in range(9)]
    assert all(r.status == "ok" and r.spawner_cost is not None for r in ours)
    theirs = statistics.median(_time_v(argv) for _ in range(9))
    mine = statistics.median(r.max_rss_kib or 0 for r in ours)
    assert abs(mine - theirs) <= 0.1 * theirs, (mine, theirs)


@needs_spawner
def test_through_the_spawner_a_command_keeps_its_status_output_and_times() -> None:
    res = run_command(["sh", "-c", "echo out; echo err >&2; exit 3"], timeout=30, peak=True)
    assert (res.status, res.exit_code, res.error) == ("failed", 3, "exited with status 3")
    assert (res.stdout, res.stderr) == (b"out\n", b"err\n")
    assert res.spawned is not None and res.reaped is not None
    assert res.duration == pytest.approx(res.reaped - res.spawned)
    assert res.spawner_cost is not None and res.spawner_cost >= 0
    killed = run_command(["sh", "-c", "kill -9 $$"], timeout=30, peak=True)
    assert (killed.exit_code, killed.error) == (-9, "killed by SIGKILL")
    cpu = run_command(["python3", "-c", "sum(range(3_000_000))"], timeout=30, peak=True)
    assert cpu.cpu_user > 0.01  # the command's, from the spawner's wait4


@needs_spawner
def test_through_the_spawner_a_command_runs_in_its_directory_with_its_environment(
    tmp_path: Path,
) -> None:
    script = tmp_path / "b.sh"
    script.write_text('#!/bin/sh\npwd; echo "$X"\n')
    script.chmod(0o755)
    res = run_command(["./b.sh"], timeout=30, cwd=str(tmp_path), env={"X": "y z"}, peak=True)
    assert res.status == "ok", res.error
    assert res.stdout.decode().split("\n")[:2] == [str(tmp_path), "y z"]
    assert res.spawner_cost is not None


@needs_spawner
def test_through_the_spawner_a_command_that_cannot_start_is_a_launch_error(
    tmp_path: Path,
) -> None:
    plain = tmp_path / "data.txt"
    plain.write_text("not a program")
    res = run_command([str(plain)], timeout=30, peak=True)
    assert res.status == "launch_error"
    assert res.error == f"cannot start {str(plain)!r}: [Errno 13] Permission denied: {str(plain)!r}"
    gone = run_command(["no-such-program-here"], timeout=30, peak=True)
    assert gone.status == "launch_error" and "No such file or directory" in gone.error


@needs_spawner
def test_through_the_spawner_a_timeout_kills_the_command() -> None:
    res = run_command(["sleep", "30"], timeout=0.5, peak=True)
    assert res.status == "timeout" and res.duration < 20
    assert res.max_rss_kib is None or res.max_rss_kib < 50_000


@needs_spawner
def test_the_spawners_report_never_reaches_the_command() -> None:
    probe = "if [ -e /proc/$$/fd/3 ]; then echo open; else echo closed; fi"
    res = run_command(["sh", "-c", probe], timeout=30, peak=True)
    assert res.spawner_cost is not None and res.stdout == b"closed\n"


def test_a_trial_measures_the_first_run_of_each_command_through_the_spawner() -> None:
    job = TrialJob(pis=(PISpec(name="wall_time"),), timeout=30)
    rec = run_trial(job, TrialRequest(seq=0, argv=["sleep", "0.0123456"]))
    assert rec.status == "ok"
    if spawner() is not None:
        assert rec.max_rss_kib is not None and rec.max_rss_kib < 20_000


def test_the_spawners_whole_cost_stays_within_its_budget() -> None:
    pace = PeakPace(budget=0.01)
    spawned = 0
    for _ in range(2000):  # 'true': 1 ms trials, the spawner 0.5 ms
        wanted = pace.wants(("true",))
        spawned += wanted
        pace.record(0.001, 0.0005 if wanted else None)
    assert pace.spent <= 0.01 * pace.commands + 0.0005
    assert 35 <= spawned <= 42  # 1 + 1% of 2 s / 0.5 ms


@given(
    st.lists(
        st.tuples(st.integers(0, 5), st.floats(1e-4, 1.0), st.floats(1e-5, 2e-3)),
        min_size=1,
        max_size=200,
    )
)
def test_beyond_each_commands_first_trial_the_spawner_spends_at_most_its_budget(
    trials: list[tuple[int, float, float]],
) -> None:
    pace = PeakPace(budget=0.01)
    firsts, seen = 0.0, set()
    for key, duration, cost in trials:
        wanted = pace.wants(key)
        if key not in seen:
            assert wanted  # every command's first trial: its peak is known
            seen.add(key)
            firsts += cost
        pace.record(duration, cost if wanted else None)
        # what the later trials spent is within the budget, give or take one trial's
        # cost (the estimate is the last one's)
        assert pace.spent - firsts <= 0.01 * pace.commands + 2e-3


@pytest.fixture
def own_spawner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A spawner built for the test in its own cache (``XDG_CACHE_HOME``)."""
    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(peak, "_built", {})
    built = spawner()
    assert built is not None and Path(built).parent == tmp_path / "assay" / "bin"
    return built


def test_a_spawner_others_may_change_is_not_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, own_spawner: str
) -> None:
    built = own_spawner
    assert Path(built).stat().st_mode & 0o777 == 0o700
    os.chmod(built, 0o722)  # others could write it
    monkeypatch.setattr(peak, "_built", {})
    rebuilt = spawner()  # replaced by a fresh one of this user's
    assert rebuilt == built and Path(built).stat().st_mode & 0o777 == 0o700
    os.chmod(tmp_path / "assay" / "bin", 0o777)  # others could swap it
    monkeypatch.setattr(peak, "_built", {})
    assert spawner() is None


def test_without_a_compiler_a_command_is_launched_directly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("CC", str(tmp_path / "no-compiler"))
    monkeypatch.setattr(peak, "_built", {})
    assert spawner() is None
    res = run_command(["sleep", "0.01"], timeout=30, peak=True)
    assert res.status == "ok" and res.spawner_cost is None
    assert res.max_rss_kib is None  # not above Assay's own: not measured, never Assay's


def test_a_spawner_that_cannot_run_here_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, own_spawner: str
) -> None:
    """A home mounted noexec: every first trial would have failed to launch."""
    os.chmod(own_spawner, 0o600)  # as on a noexec mount: it cannot be executed
    monkeypatch.setattr(peak, "_built", {})
    res = run_command(["true"], timeout=30, peak=True)
    assert res.status == "ok" and res.spawner_cost is None  # launched directly
    assert spawner() is None  # and so from now on
    monkeypatch.setattr(peak, "_built", {})
    cwd = run_command(["true"], timeout=30, peak=True, cwd=str(tmp_path))  # the Popen path
    assert cwd.status == "ok" and cwd.spawner_cost is None


def test_a_failure_that_is_not_the_spawners_keeps_it(tmp_path: Path) -> None:
    """A missing working directory fails the launch through the spawner and directly
    alike: it must not turn the spawner off for the rest of the process."""
    if spawner() is None:
        pytest.skip("no C compiler")
    res = run_command(["true"], timeout=30, cwd=str(tmp_path / "gone"), peak=True)
    assert res.status == "launch_error" and "does not exist on this host" in res.error
    assert spawner() is not None
    assert run_command(["true"], timeout=30, peak=True).spawner_cost is not None
