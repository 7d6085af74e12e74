"""``assay history``: E-Divisive means with a permutation test against known answers,
and the command on a real git repository whose benchmark steps at two known commits."""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner, Result
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from assay.cli import main
from assay.stats.history import (
    _best_split,
    _most_as_extreme,
    _p_value,
    _qhat,
    _shuffled_maxima,
    e_divisive,
    energy_statistics,
    permutation_p_value,
    segment_steps,
)
from assay.store import Store, TrialRecord
from assay.studies.history import load_history

PY = sys.executable

# --------------------------------------------------------------------------- statistics


def _q_reference(x: list[float], tau: int) -> float:
    """Matteson & James' q-hat of one split, written out with loops (test oracle)."""
    left, right = x[:tau], x[tau:]
    n, m = len(x), len(right)
    between = sum(abs(a - b) for a in left for b in right)
    within_l = sum(abs(a - b) for a, b in itertools.combinations(left, 2))
    within_r = sum(abs(a - b) for a, b in itertools.combinations(right, 2))
    energy = 2 * between / (tau * m) - within_l / math.comb(tau, 2) - within_r / math.comb(m, 2)
    return tau * m / n * energy


def test_energy_statistic_known_answer() -> None:
    # [0, 0 | 1, 1]: between 4 * 1, within 0: E = 2 * 4 / 4 = 2, q = 2 * 2 / 4 * 2 = 2
    assert energy_statistics([0.0, 0.0, 1.0, 1.0], min_size=2).tolist() == [2.0]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(-1e3, 1e3), min_size=4, max_size=25),
    st.integers(2, 4),
)
def test_energy_statistics_equal_the_loop_reference(x: list[float], min_size: int) -> None:
    got = energy_statistics(x, min_size=min_size)
    taus = range(min_size, len(x) - min_size + 1)
    want = [_q_reference(x, t) for t in taus]
    assert len(got) == len(want)
    assert np.allclose(got, want, rtol=1e-9, atol=1e-9 * max(1.0, max(map(abs, x))))


def test_permutation_p_value_is_small_on_a_clear_step() -> None:
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.normal(100, 1, 10), rng.normal(110, 1, 10)])
    # no shuffle comes near the real split: p is the smallest value possible
    assert permutation_p_value(x, permutations=199, seed=1) == pytest.approx(1 / 200)


def test_permutation_p_value_is_not_small_on_noise() -> None:
    rng = np.random.default_rng(4)
    ps = np.array(
        [permutation_p_value(rng.normal(100, 1, 20), permutations=99, seed=i) for i in range(80)]
    )
    # under the null p is (close to) uniform: about 5% at or below 0.05, mean near 0.5
    assert np.mean(ps <= 0.05) <= 0.125
    assert 0.38 <= float(np.mean(ps)) <= 0.62
    assert ps.min() >= 1 / 100  # never below 1 / (permutations + 1)


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.floats(-1e3, 1e3), min_size=6, max_size=70),
    st.integers(1, 120),
    st.integers(0, 2**32 - 1),
)
def test_shuffles_done_a_few_rows_at_a_time_give_the_same_maxima(
    x: list[float], permutations: int, seed: int
) -> None:
    """Issue #17: the shuffles' statistics are computed in chunks of rows (the caches);
    the maxima are the ones all rows at once give, bit for bit."""
    z = np.asarray(x)
    got = _shuffled_maxima(z, [0, z.size], 3, permutations, np.random.default_rng(seed))
    shuffled = np.random.default_rng(seed).permuted(np.tile(z, (permutations, 1)), axis=1)
    assert np.array_equal(got, _qhat(shuffled, 3).max(axis=1))


def _e_divisive_every_shuffle(
    x: list[float], alpha: float, permutations: int, seed: int
) -> list[tuple[int, float, float]]:
    """e_divisive as it was before it stopped a test early: every shuffle, every test."""
    z = np.asarray(x, dtype=float)
    rng = np.random.default_rng(seed)
    found: list[tuple[int, float, float]] = []
    if z.size == 0 or np.all(z == z[0]):
        return found
    while True:
        bounds = [0, *sorted(c[0] for c in found), int(z.size)]
        observed, at = _best_split(z, bounds, 3)
        if at < 0 or observed <= 0.0:
            break
        maxima = _shuffled_maxima(z, bounds, 3, permutations, rng)
        assert maxima is not None
        p = _p_value(observed, maxima)
        if p > alpha:
            break
        found.append((at, observed, p))
    return sorted(found)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(-100, 100), min_size=6, max_size=40),
    st.sampled_from([0.002, 0.01, 0.05, 0.2]),
    st.sampled_from([19, 99, 999]),
    st.integers(0, 2**32 - 1),
    st.floats(0, 30),
)
def test_stopping_a_test_once_it_cannot_reject_changes_nothing(
    x: list[float], alpha: float, permutations: int, seed: int, step: float
) -> None:
    """Issue #17: a permutation test ends as soon as more shuffles are as extreme as the
    data than a rejection allows; the change points and p-values are those of the full
    test (a step added to half the cases, so that some tests reject)."""
    x = [v + (step if i >= len(x) // 2 else 0.0) for i, v in enumerate(x)]
    got = [(c.index, c.statistic, c.p_value) for c in e_divisive(x, alpha, permutations, seed=seed)]
    assert got == _e_divisive_every_shuffle(x, alpha, permutations, seed)


@pytest.mark.parametrize("alpha", [0.002, 0.01, 0.05, 0.1, 0.5])
@pytest.mark.parametrize("permutations", [1, 19, 99, 199, 999])
def test_the_most_shuffles_as_extreme_that_still_reject(alpha: float, permutations: int) -> None:
    g = _most_as_extreme(alpha, permutations)
    assert g == -1 or (1 + g) / (1 + permutations) <= alpha
    assert (2 + g) / (1 + permutations) > alpha


def test_e_divisive_finds_two_steps_and_nothing_else() -> None:
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.normal(100, 1, 10), rng.normal(106, 1, 10), rng.normal(98, 1, 10)])
    found = e_divisive(x, seed=2)
    assert [c.index for c in found] == [10, 20]
    assert all(c.p_value <= 0.05 for c in found)


def test_e_divisive_on_noise_rarely_reports_a_change() -> None:
    rng = np.random.default_rng(6)
    hits = sum(bool(e_divisive(rng.normal(0, 1, 24), seed=i)) for i in range(60))
    assert hits <= 8  # 5% expected: 3 of 60; a test that never stops would give ~60


@settings(max_examples=40, deadline=None)
@given(
    st.floats(-1e12, 1e12, allow_nan=False, allow_infinity=False),
    st.integers(0, 40),
    st.integers(2, 5),
)
def test_a_constant_series_has_no_change_point(value: float, n: int, min_size: int) -> None:
    assert e_divisive([value] * n, min_size=min_size, permutations=19) == []


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(0, 100), min_size=0, max_size=30), st.integers(2, 4))
def test_change_points_leave_min_size_on_each_side(x: list[float], min_size: int) -> None:
    found = e_divisive(x, min_size=min_size, permutations=39, alpha=0.2)
    bounds = [0, *[c.index for c in found], len(x)]
    assert bounds == sorted(bounds)
    if found:
        assert all(b - a >= min_size for a, b in itertools.pairwise(bounds))
    assert all(c.p_value <= 0.2 for c in found)


def test_segment_step_is_welchs_interval() -> None:
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.normal(10, 1, 8), rng.normal(12, 2, 9), rng.normal(5, 1, 7)])
    steps = segment_steps(x, [8, 17], confidence=0.9)
    ref = stats.ttest_ind(x[8:17], x[:8], equal_var=False)
    ci = ref.confidence_interval(0.9)
    s = steps[0]
    assert (s.before, s.after) == ((0, 8), (8, 17))
    assert s.welch.difference == pytest.approx(x[8:17].mean() - x[:8].mean())
    assert (s.welch.diff_low, s.welch.diff_high) == pytest.approx((ci.low, ci.high))
    assert s.welch.p_value == pytest.approx(ref.pvalue)
    assert steps[1].before == (8, 17) and steps[1].after == (17, 24)


# --------------------------------------------------------------------------- the build key


def test_build_keeps_old_hashes_and_is_part_of_what_is_measured() -> None:
    from assay.spec import SpecError, parse_spec_data

    def spec(**bench: Any) -> Any:
        data = {"study": {"name": "h"}, "benchmark": {"command": ["prog", "--x"], **bench}}
        return parse_spec_data(data, source="t")

    # the hash of a study file without build is the one Assay computed before build existed
    assert spec(git_repo="repo").measurement_hash() == "2c1dcbb324bf3df8"
    a = spec(git_repo="repo", build=["make"]).measurement_hash()
    b = spec(git_repo="repo", build=["make", "-O3"]).measurement_hash()
    assert len({a, b, "2c1dcbb324bf3df8"}) == 3
    with pytest.raises(SpecError, match="build"):
        spec(build=[""])


# --------------------------------------------------------------------------- the store


def _session(store: Store, sid: int, revision: str, value: float, start: float) -> None:
    session = store.start_session(sid, {"git_revision": revision})
    for k in range(2):
        seq = store.next_seq(sid)
        rec = TrialRecord(seq=seq, status="ok", started=start + k, duration=0.1)
        rec.readings = {"score": value}
        store.add_trial(sid, rec, session)
    store.end_session(session, {})


def test_history_of_one_study_reads_each_sessions_revision(tmp_path: Path) -> None:
    """A study run again at each revision (no per-commit studies, no repository): one
    point per session revision, ordered by time; a '+dirty' revision is flagged."""
    from assay.spec import parse_spec_data

    spec = parse_spec_data(
        {
            "study": {"name": "ci"},
            "benchmark": {"command": ["true"]},
            "pi": [{"name": "score", "source": "regex", "pattern": "s=(\\d+)"}],
        },
        source="test",
    )
    db = tmp_path / "ci.assay.db"
    levels = [50.0] * 6 + [60.0] * 6
    with Store(db) as store:
        sid = store.open_study("ci", spec.measurement_hash(), spec.model_dump(mode="json"))
        store.set_study_value(sid, "session_spec", spec.model_dump_json())
        for i, level in enumerate(levels):
            rev = f"{i:040x}" + ("+dirty" if i == 3 else "")
            _session(store, sid, rev, level + (i % 3) * 0.1, 1000.0 + 10 * i)
    h = load_history(db, None, alpha=0.05)
    assert h.order == "time" and h.study == "ci"
    assert any("ordered by first trial" in n for n in h.notes)
    assert [p.revision for p in h.points] == [f"{i:040x}" for i in range(12)]
    assert [p.dirty for p in h.points] == [i == 3 for i in range(12)]
    assert [p.mean for p in h.points] == pytest.approx(
        [v + (i % 3) * 0.1 for i, v in enumerate(levels)]
    )
    assert [c.revision for c in h.changes] == [f"{6:040x}"]
    assert h.changes[0].worse  # lower is better by default: 50 -> 60 is worse
    assert h.changes[0].diff_low < 10 < h.changes[0].diff_high


# --------------------------------------------------------------------------- end to end

LEVELS = [100.0] * 7 + [110.0] * 7 + [95.0] * 6  # steps at commits 7 and 14
JITTER = [0.0, 0.3, -0.2, 0.1, -0.3, 0.2, -0.1]
BROKEN = 10  # this commit's build fails


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def _make_repo(root: Path) -> tuple[Path, list[str]]:
    """20 commits of a benchmark that prints its reading (no timing involved); the
    build logs its folder and its parent's mode, and fails at commit BROKEN."""
    repo = root / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "t")
    _git(repo, "config", "commit.gpgsign", "false")
    for i, level in enumerate(LEVELS):
        (repo / "prog.py").write_text(f"print('score={level + JITTER[i % 7]:.1f}')\n")
        (repo / "build.py").write_text(
            "import os, sys\n"
            "with open(sys.argv[1], 'a') as f:\n"
            "    f.write(f\"{os.getcwd()} {os.stat('..').st_mode & 0o777:o}\\n\")\n"
            + ("raise SystemExit('compiler exploded')\n" if i == BROKEN else "")
        )
        _git(repo, "add", ".")
        _git(repo, "commit", "-q", "-m", f"commit {i}")
    return repo, _git(repo, "rev-list", "--reverse", "HEAD").split()


def _study(root: Path) -> Path:
    path = root / "study.toml"
    path.write_text(
        f"""
[study]
name = "hist"
[benchmark]
command = ["{PY}", "prog.py"]
cwd = "repo"
git_repo = "repo"
build = ["{PY}", "build.py", "{root / "build.log"}"]
[[pi]]
name = "score"
unit = "ms"
source = "regex"
pattern = 'score=([0-9.]+)'
[stop]
min_samples = 2
max_rounds = 3
"""
    )
    return path


def _invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _run_commits(study: Path, *extra: str) -> tuple[Result, dict[str, Any]]:
    res = _invoke(
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
    )
    return res, json.loads(res.stdout)


def _trial_count(db: Path) -> int:
    total = 0
    with Store(db, read_only=True) as store:
        for name in store.study_names():
            found = store.find_study(name)
            assert found is not None
            total += len(store.trials(found[0]))
    return total


def test_run_commits_finds_both_steps_resumes_and_reports_a_broken_build(tmp_path: Path) -> None:
    repo, revs = _make_repo(tmp_path)
    study = _study(tmp_path)
    res, out = _run_commits(study)
    assert res.exit_code == 0, res.output
    # both change points and no other, each at the first commit of its new level
    assert [c["revision"] for c in out["changes"]] == [revs[7], revs[14]]
    assert [c["previous"] for c in out["changes"]] == [revs[6], revs[13]]
    first, second = out["changes"]
    assert first["worse"] and not second["worse"]  # lower is better
    assert first["diff_low"] < 10 < first["diff_high"]
    assert second["diff_low"] < -15 < second["diff_high"]
    assert first["suspects"] == [revs[7]]  # every commit was measured: one suspect
    # one point per commit, in git order; the broken build is reported, not fatal
    assert out["order"] == "git"
    assert [p["revision"] for p in out["points"]] == revs
    broken = out["points"][BROKEN]
    assert not broken["has_result"] and broken["build"]["ok"] is False
    assert "compiler exploded" in " ".join(broken["build"]["output_tail"])
    assert sum(p["has_result"] for p in out["points"]) == 19
    assert "build failed" in res.stderr
    assert [p["mean"] for i, p in enumerate(out["points"]) if i != BROKEN] == pytest.approx(
        [lv + JITTER[i % 7] for i, lv in enumerate(LEVELS) if i != BROKEN]
    )
    # every build ran in its own worktree, in a private folder, removed afterwards
    log = [line.split() for line in (tmp_path / "build.log").read_text().splitlines()]
    assert len(log) == 20 and len({d for d, _ in log}) == 20
    assert {mode for _, mode in log} == {"700"}
    assert not any(Path(d).exists() for d, _ in log)
    assert len(_git(repo, "worktree", "list").splitlines()) == 1  # the main one alone

    db = tmp_path / "study.assay.db"
    trials = _trial_count(db)
    res2, out2 = _run_commits(study)
    assert res2.exit_code == 0
    assert _trial_count(db) == trials  # nothing measured again
    assert res2.stderr.count("skipped") == 19 and "build failed before" in res2.stderr
    assert out2["changes"] == out["changes"]

    # read back from the store alone; --fail-on-change: the first step is worse
    res3 = _invoke("history", str(db), "hist", "--fail-on-change")
    assert res3.exit_code == 1
    assert f"change at {revs[7][:10]}" in res3.stdout
    res4 = _invoke("history", str(db), "hist", "--git-range", f"{revs[9]}..HEAD", "--json", "-")
    assert res4.exit_code == 0
    out4 = json.loads(res4.stdout)
    assert [p["revision"] for p in out4["points"]] == revs[10:]
    assert [c["revision"] for c in out4["changes"]] == [revs[14]]


def test_history_usage_and_store_errors(tmp_path: Path) -> None:
    assert _invoke("history").exit_code == 2
    assert _invoke("history", str(tmp_path / "none.assay.db"), "x").exit_code == 2
    bad = tmp_path / "bad.assay.db"
    bad.write_bytes(b"not a database" * 100)
    # not a store: bad input (2), as for ls, show and export
    assert _invoke("history", str(bad), "x").exit_code == 2
    no_repo = tmp_path / "s.toml"
    no_repo.write_text('[study]\nname = "s"\n[benchmark]\ncommand = ["true"]\n')
    res = _invoke("history", "--run-commits", "HEAD", "--", str(no_repo))
    assert res.exit_code == 3 and "git_repo" in res.stderr
    assert _invoke("history", str(tmp_path), "x", "--alpha", "1.5").exit_code == 2


@pytest.mark.parametrize("bad", ["--output=/tmp/x", "-n1", "", "a b"])
def test_a_range_is_never_read_as_a_git_option(tmp_path: Path, bad: str) -> None:
    from assay.errors import StudyError
    from assay.studies.history import rev_list

    with pytest.raises(StudyError, match="not a revision range"):
        rev_list(tmp_path, bad)
