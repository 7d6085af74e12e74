"""``assay history --run-commits`` measures commits interleaved (issue #36): every commit
is built first, then measured a block of rounds at a time, in a fresh random order each
pass, so that a change of the machine's load hits every commit alike; and a change point
whose step's CI includes 0 is never called a regression.

The benchmarks print their readings (no timing involved), except the last test's, whose
commits differ by a clear 2x in their sleep."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from rich.console import Console

from assay.cli import main
from assay.designs.compare import cycle_order
from assay.report.history import change_lines, render_history
from assay.spec import load_spec
from assay.store import Store, TrialRecord
from assay.studies.history import (
    BUILD_KEY,
    SCHEDULE_KEY,
    BlockStart,
    CommitPoint,
    HistoryResult,
    commit_study_name,
    find_changes,
    run_commits,
)

PY = sys.executable

# a commit's reading: its level, plus a jitter (so that no CI meets a tight target) or
# a load step, both read from a counter of every trial of the test run so far
PROG = """\
import sys
from pathlib import Path
counter = Path(sys.argv[1])
n = int(counter.read_text()) if counter.exists() else 0
counter.write_text(str(n + 1))
LOAD_FROM = {load_from}
jitter = [0.3, -0.2, 0.1, -0.3, 0.2][n % 5] if LOAD_FROM is None else (-0.1, 0.1)[n % 2]
load = 50.0 if LOAD_FROM is not None and n >= LOAD_FROM else 0.0
print(f"score={{{level} + jitter + load:.2f}}")
"""


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def _make_repo(
    root: Path,
    levels: list[float],
    *,
    broken: int | None = None,
    load_from: int | None = None,
    sleeps: list[float] | None = None,
) -> list[str]:
    """A repository of one commit per level (oldest first); its full revisions."""
    repo = root / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "t")
    _git(repo, "config", "commit.gpgsign", "false")
    for i, level in enumerate(levels):
        # a comment makes each commit differ from the one before, whatever its level
        prog = PROG.format(level=level, load_from=load_from) + f"# commit {i}\n"
        (repo / "prog.py").write_text(prog)
        if sleeps is not None:
            (repo / "run.sh").write_text(f"sleep {sleeps[i]}\n")
        fail = "raise SystemExit('compiler exploded')\n" if i == broken else ""
        (repo / "build.py").write_text(f"print('building')\n{fail}")
        _git(repo, "add", ".")
        _git(repo, "commit", "-q", "-m", f"commit {i}")
    return _git(repo, "rev-list", "--reverse", "HEAD").split()


def _study(root: Path, *, stop: str, command: str | None = None) -> Path:
    counter = root / "counter"
    command = command or f'["{PY}", "prog.py", "{counter}"]'
    pi = """
[[pi]]
name = "score"
unit = "ms"
source = "regex"
pattern = 'score=([0-9.]+)'
"""
    path = root / "study.toml"
    path.write_text(
        f"""
[study]
name = "hist"
[benchmark]
command = {command}
cwd = "repo"
git_repo = "repo"
build = ["{PY}", "build.py"]
{pi if command.startswith(f'["{PY}"') else ""}
[stop]
{stop}
"""
    )
    return path


# the target is never met: every commit runs to max_rounds, 2 rounds a block (min_rounds)
NEVER_MET = "min_rounds = 2\nmax_rounds = 6\nmin_samples = 2\nwarmup_rounds = 0\nci_width = 0.001"


def _run_commits(study: Path, *extra: str) -> tuple[Result, dict[str, Any]]:
    res = CliRunner().invoke(
        main,
        [
            "history",
            "--run-commits",
            "HEAD",
            "--no-overhead",
            "--no-monitor",
            "--json",
            "-",
            *extra,
            "--",
            str(study),
        ],
        catch_exceptions=False,
    )
    assert res.exit_code == 0, res.output
    return res, json.loads(res.stdout)


def _stored(db: Path, revision: str) -> tuple[list[TrialRecord], list[dict[str, Any]], Any]:
    """A commit study's trials, sessions and schedule."""
    with Store(db, read_only=True) as store:
        found = store.find_study(commit_study_name("hist", revision))
        assert found is not None
        sid = found[0]
        return store.trials(sid), store.study_sessions(sid), store.study_value(sid, SCHEDULE_KEY)


def _starts(trials: list[TrialRecord]) -> list[float]:
    starts = [t.started for t in trials]
    assert all(s is not None for s in starts)
    return [float(s) for s in starts if s is not None]


def test_commits_are_measured_interleaved_and_each_keeps_all_its_trials(tmp_path: Path) -> None:
    revs = _make_repo(tmp_path, [100.0, 200.0, 300.0])
    study = _study(tmp_path, stop=NEVER_MET)
    res, out = _run_commits(study, "--order-seed", "7")
    db = tmp_path / "study.assay.db"
    starts = {}
    for level, rev in zip([100.0, 200.0, 300.0], revs, strict=True):
        trials, sessions, schedule = _stored(db, rev)
        assert len(trials) == 6 and all(t.ok for t in trials)
        starts[rev] = _starts(trials)
        # three blocks of two rounds: three sessions, the first two paused, not done
        assert len(sessions) == 3
        assert [s["result"]["done"] for s in sessions] == [False, False, True]
        assert all(s["result"]["reason"].startswith("paused") for s in sessions[:2])
        assert [s["result"]["trials"]["total"] for s in sessions] == [2, 4, 6]
        assert schedule == {"seed": 7, "block": 2}
        # the last session's result is the analysis of all six trials
        readings = [float(t.readings["score"]) for t in trials]
        final = sessions[-1]["result"]["pis"][0]
        assert final["mean"] == pytest.approx(sum(readings) / 6)
        assert abs(final["mean"] - level) < 0.5
    # no commit's trials all come before another's: a slow hour hits every commit
    for a, b in itertools.permutations(revs, 2):
        assert max(starts[a]) > min(starts[b])
    # pass 1 visits the commits in the seeded order
    first = sorted(revs, key=lambda r: min(starts[r]))
    assert first == cycle_order(revs, 7, 0)
    assert "--order-seed 7" in res.stderr
    assert "pass 3, commit 3/3" in res.stderr and "(4 round(s) so far)" in res.stderr
    assert res.stderr.count(" measured: 6 trial(s) in 3 block(s)") == 3
    # the history reads every trial of every commit
    assert [p["ok_trials"] for p in out["points"]] == [6, 6, 6]
    assert [p["revision"] for p in out["points"]] == revs
    assert len(_git(tmp_path / "repo", "worktree", "list").splitlines()) == 1


def test_a_paused_commit_is_resumed_not_skipped(tmp_path: Path) -> None:
    """A commit whose last session paused between blocks (Ctrl-C between two blocks
    looks the same) is measured on, to its end, by the next call."""
    revs = _make_repo(tmp_path, [100.0, 200.0])
    study = _study(tmp_path, stop=NEVER_MET)
    _run_commits(study, "--order-seed", "1")
    db = tmp_path / "study.assay.db"
    # raise the budget: both commits are open again, and resumed from 6 trials
    study.write_text(study.read_text().replace("max_rounds = 6", "max_rounds = 8"))
    res, out = _run_commits(study, "--order-seed", "1")
    assert "skipped" in res.stderr  # the studies of max_rounds = 6 were done ...
    assert [p["ok_trials"] for p in out["points"]] == [6, 6]
    # ... whereas a study paused after a block goes on
    with Store(db) as store:
        found = store.find_study(commit_study_name("hist", revs[0]))
        assert found is not None
        sid = found[0]
        last = store.study_sessions(sid)[-1]
        store.end_session(last["id"], {**last["result"], "done": False, "reason": "paused"})
    res, out = _run_commits(study, "--order-seed", "1")
    assert "(6 round(s) so far)" in res.stderr
    assert [p["ok_trials"] for p in out["points"]] == [8, 6]


def test_a_failed_build_is_recorded_and_skipped(tmp_path: Path) -> None:
    revs = _make_repo(tmp_path, [100.0, 200.0, 300.0], broken=1)
    study = _study(tmp_path, stop=NEVER_MET)
    res, out = _run_commits(study)
    assert "build failed: exit status 1" in res.stderr
    assert "compiler exploded" in res.stderr
    broken = out["points"][1]
    assert not broken["has_result"] and broken["build"]["ok"] is False
    assert [p["has_result"] for p in out["points"]] == [True, False, True]
    assert [p["ok_trials"] for p in out["points"]] == [6, 0, 6]
    with Store(tmp_path / "study.assay.db", read_only=True) as store:
        found = store.find_study(commit_study_name("hist", revs[1]))
        assert found is not None
        assert store.trials(found[0]) == []
        assert store.study_value(found[0], BUILD_KEY)["ok"] is False
    visits = [line for line in res.stderr.splitlines() if line.startswith("pass ")]
    assert visits and not any(revs[1][:12] in line for line in visits)  # never visited
    assert "pass 1, commit 2/2" in res.stderr
    assert len(_git(tmp_path / "repo", "worktree", "list").splitlines()) == 1
    res2, _ = _run_commits(study)
    assert "build failed before" in res2.stderr and res2.stderr.count("skipped") == 2


def test_sequential_measures_one_commit_after_the_other(tmp_path: Path) -> None:
    revs = _make_repo(tmp_path, [100.0, 200.0, 300.0])
    study = _study(tmp_path, stop=NEVER_MET)
    res, out = _run_commits(study, "--sequential")
    db = tmp_path / "study.assay.db"
    spans = []
    for rev in revs:
        trials, sessions, schedule = _stored(db, rev)
        assert len(trials) == 6 and len(sessions) == 1 and sessions[0]["result"]["done"]
        assert schedule is None
        spans.append((min(_starts(trials)), max(_starts(trials))))
    # oldest first, each to its end before the next
    assert all(a[1] < b[0] for a, b in itertools.pairwise(spans))
    assert "pass " not in res.stderr
    assert [f"commit {i}/3" in res.stderr for i in (1, 2, 3)] == [True] * 3
    assert [p["ok_trials"] for p in out["points"]] == [6, 6, 6]
    bad = CliRunner().invoke(
        main, ["history", "--run-commits", "HEAD", "--sequential", "--block", "2", "--", str(study)]
    )
    assert bad.exit_code == 2


# --------------------------------------------------------------------------- the rule

# the case of issue #36: E-Divisive finds a change point (p = 0.015), but the step is
# Welch [-11.1, +27.4] (+82%): its CI includes 0
UNSURE = [10.0, 10.1, 9.9, 10.0, 10.1, 9.9, 26.0, 10.5, 18.0]
CLEAR = [10.0, 10.1, 9.9, 10.0, 10.1, 9.9, 20.0, 20.1, 19.9]


def _points(values: list[float]) -> list[CommitPoint]:
    return [
        CommitPoint(f"{i:x}" * 40, float(i), 5, 5, mean=v, low=v - 0.1, high=v + 0.1)
        for i, v in enumerate(values)
    ]


def test_a_step_whose_ci_includes_zero_is_not_a_regression() -> None:
    (c,) = find_changes(_points(UNSURE), "lower", 0.95, seed=0)
    assert c.p_value <= 0.05 and c.revision == "6" * 40
    assert c.diff_low < 0 < c.diff_high and c.difference > 0
    assert not c.significant and not c.worse and c.verdict == "possible"
    assert c.as_dict()["verdict"] == "possible"
    lines = change_lines(c, "ms", 0.95)
    assert "possible change, 95% CI of the step includes 0 (not a regression)" in lines[0]
    assert "worse" not in " ".join(lines) and "better" not in " ".join(lines)
    # the same for a PI where higher is better: not an improvement either
    (up,) = find_changes(_points(UNSURE), "higher", 0.95, seed=0)
    assert up.verdict == "possible"
    # a step whose CI excludes 0 is one
    (sure,) = find_changes(_points(CLEAR), "lower", 0.95, seed=0)
    assert sure.significant and sure.worse and sure.verdict == "worse"
    assert change_lines(sure, "ms", 0.95)[0].endswith(": worse")
    (gain,) = find_changes(_points(CLEAR), "higher", 0.95, seed=0)
    assert gain.verdict == "better" and not gain.worse


def test_the_report_marks_a_possible_change() -> None:
    points = _points(UNSURE)
    changes = find_changes(points, "lower", 0.95, seed=0)
    h = HistoryResult(
        study="s",
        store="s.assay.db",
        pi="score",
        unit="ms",
        direction="lower",
        confidence=0.95,
        order="time",
        repo=None,
        points=points,
        changes=changes,
        alpha=0.05,
        permutations=199,
        min_size=3,
    )
    console = Console(record=True, width=200)
    render_history(h, console)
    text = console.export_text()
    assert "possible change" in text and "change point p = 0.015" in text
    assert "?  6666666666" in text  # the table's mark of a possible change
    assert ": worse" not in text


def test_a_load_step_between_commits_is_no_change_when_interleaved(tmp_path: Path) -> None:
    """The issue's case, without timing: every trial from the 20th on reads 50 more (the
    machine got busy), the code never changed.  One commit after the other, the later
    half of the commits looks 50% worse; interleaved, every commit gets the load alike."""
    levels = [100.0] * 10
    stop = "min_rounds = 2\nmax_rounds = 4\nmin_samples = 2\nwarmup_rounds = 0\nci_width = 0.001"
    _make_repo(tmp_path, levels, load_from=20)
    study = _study(tmp_path, stop=stop)
    _, seq = _run_commits(study, "--sequential", "--store", str(tmp_path / "seq.assay.db"))
    (tmp_path / "counter").unlink()
    _, inter = _run_commits(study, "--store", str(tmp_path / "inter.assay.db"))
    assert [p["ok_trials"] for p in seq["points"]] == [4] * 10
    assert [p["ok_trials"] for p in inter["points"]] == [4] * 10
    assert [c["verdict"] for c in seq["changes"]] == ["worse"]  # the false regression
    assert seq["changes"][0]["relative"] == pytest.approx(0.5)
    assert inter["changes"] == []
    assert [p["mean"] for p in inter["points"]] == pytest.approx([125.0] * 10)


def test_a_real_2x_step_is_found(tmp_path: Path) -> None:
    """Commits 5 to 9 sleep 0.02 s a round, the ones before 0.01 s: found, interleaved."""
    sleeps = [0.01] * 5 + [0.02] * 5
    revs = _make_repo(tmp_path, [0.0] * 10, sleeps=sleeps)
    stop = "min_rounds = 3\nmax_rounds = 5\nci_width = 0.5\nwarmup_rounds = 0"
    study = _study(tmp_path, stop=stop, command='["sh", "run.sh"]')
    _, out = _run_commits(study)
    assert [c["revision"] for c in out["changes"]] == [revs[5]]
    assert out["changes"][0]["verdict"] == "worse"


def test_an_interruption_keeps_the_trials_and_removes_every_worktree(tmp_path: Path) -> None:
    revs = _make_repo(tmp_path, [100.0, 200.0, 300.0])
    spec = load_spec(_study(tmp_path, stop=NEVER_MET))
    db = tmp_path / "study.assay.db"

    def stop_in_pass_2(b: BlockStart) -> None:
        if b.pass_number == 2 and b.index == 1:
            raise KeyboardInterrupt

    options = {"measure_overhead": False, "monitor": False}
    with pytest.raises(KeyboardInterrupt):
        run_commits(spec, db, "HEAD", seed=5, on_block=stop_in_pass_2, runner_options=options)
    repo = tmp_path / "repo"
    assert len(_git(repo, "worktree", "list").splitlines()) == 1
    assert sorted(len(_stored(db, r)[0]) for r in revs) == [2, 2, 4]
    # the next call goes on where it stopped: every commit ends with its six trials
    seen: list[BlockStart] = []
    outcomes = run_commits(spec, db, "HEAD", seed=5, on_block=seen.append, runner_options=options)
    assert [o.status for o in outcomes] == ["measured"] * 3
    assert [len(_stored(db, r)[0]) for r in revs] == [6, 6, 6]
    assert sorted(b.rounds for b in seen if b.pass_number == 1) == [2, 2, 4]
    assert len(_git(repo, "worktree", "list").splitlines()) == 1
