"""Issue #18 (part): ``assay run --baseline RESULT.json [--fail-if-worse PCT]``, a new
measurement held against an earlier one (Pilot's comparison with old results), with
the gate's exit statuses: 1 worse, 0 not worse, 5 undecided."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from assay.cli import exits
from assay.stats.compare import SummaryStats
from assay.studies.baseline import compare_summaries
from test_gate import BENCH, QUICK, gate_study, invoke


def run_study(tmp_path: Path, base: float, name: str) -> Path:
    """A run study whose k-th trial prints base × (1, 1.01, 1.01, 1)[k % 4] exactly, and
    stops after 12 (whatever rounds its paced analyses look at: the same means)."""
    import sys

    command = json.dumps([sys.executable, "-c", BENCH, str(tmp_path / f"{name}.n"), str(base)])
    study = tmp_path / f"{name}.toml"
    study.write_text(
        f'[study]\nname = "r"\nstore = "{name}.assay.db"\n[benchmark]\ncommand = {command}\n'
        '[[pi]]\nname = "v"\nsource = "regex"\npattern = \'value=([0-9.]+)\'\n'
        "[stop]\nmax_rounds = 12\nmin_rounds = 12\nconfirm_rounds = 1\n",
        encoding="utf-8",
    )
    return study


@pytest.fixture
def old_result(tmp_path: Path) -> Path:
    out = tmp_path / "old.json"
    res = invoke(tmp_path, "run", *QUICK, str(run_study(tmp_path, 1.0, "old")), "--json", str(out))
    assert res.exit_code == exits.OK, res.output
    return out


# --- the statistics ------------------------------------------------------------------------


def test_welch_against_scipy() -> None:
    new, old = SummaryStats(10.5, 0.8, 25), SummaryStats(10.0, 0.5, 30)
    c = compare_summaries("t", "s", "lower", new, old, source="old.json")
    ref = stats.ttest_ind_from_stats(10.5, math.sqrt(0.8), 25, 10.0, math.sqrt(0.5), 30, False)
    assert c.p_value == pytest.approx(ref.pvalue, rel=1e-9)
    assert c.relative == pytest.approx(0.05) and c.rel_low < 0.05 < c.rel_high
    assert c.gate is None and "Welch p" in c.text()


@given(ratio=st.floats(0.5, 2.0), threshold=st.floats(0.01, 0.5))
def test_the_gate_follows_the_relative_interval(ratio: float, threshold: float) -> None:
    old = SummaryStats(1.0, 1e-4, 30)
    new = SummaryStats(ratio, 1e-4 * ratio**2, 30)
    c = compare_summaries("t", "s", "lower", new, old, source="o", threshold=threshold)
    assert c.gate is not None
    if c.rel_low > threshold:
        assert c.gate.verdict == "worse"
    elif c.rel_high < threshold:
        assert c.gate.verdict == "not worse"
    else:
        assert c.gate.verdict == "undecided"


def test_no_new_interval_is_undecided() -> None:
    c = compare_summaries("t", "s", "higher", None, SummaryStats(1.0, 0.1, 9), source="o",
                          threshold=0.05)  # fmt: skip
    assert c.gate is not None and c.gate.verdict == "undecided" and "no interval" in c.text()


# --- the command ---------------------------------------------------------------------------


def test_a_30_percent_slower_run_fails_the_gate(tmp_path: Path, old_result: Path) -> None:
    study = run_study(tmp_path, 1.3, "new")
    res = invoke(tmp_path, "run", *QUICK, str(study), "--baseline", str(old_result),
                 "--fail-if-worse", "5%", "--json", "-")  # fmt: skip
    assert res.exit_code == exits.WORSE, res.output
    (c,) = json.loads(res.stdout)["baseline"]
    assert c["pi"] == "v" and c["relative"] == pytest.approx(0.30, abs=0.01)
    assert c["gate"]["verdict"] == "worse" and c["source"] == "old.json"
    assert "worse than the baseline beyond 5%" in c["text"]


def test_the_same_speed_passes_and_the_markdown_says_so(tmp_path: Path, old_result: Path) -> None:
    study = run_study(tmp_path, 1.0, "same")
    res = invoke(tmp_path, "run", *QUICK, str(study), "--baseline", str(old_result),
                 "--fail-if-worse", "5%", "--markdown", "-")  # fmt: skip
    assert res.exit_code == exits.OK, res.output
    assert "| PI | change vs baseline [CI] | Welch p | gate | baseline |" in res.stdout
    assert "| not worse (threshold 5%) | old.json |" in res.stdout


def test_a_change_at_the_threshold_is_undecided(tmp_path: Path, old_result: Path) -> None:
    study = run_study(tmp_path, 1.05, "edge")  # 5% slower against a 5% threshold
    res = invoke(tmp_path, "run", *QUICK, str(study), "--baseline", str(old_result),
                 "--fail-if-worse", "5%")  # fmt: skip
    assert res.exit_code == exits.SHORT, res.output
    assert "undecided at 5%" in res.stdout


def test_without_a_threshold_the_change_is_reported_and_the_status_is_run_s(
    tmp_path: Path, old_result: Path
) -> None:
    study = run_study(tmp_path, 1.3, "report")
    res = invoke(tmp_path, "run", *QUICK, str(study), "--baseline", str(old_result))
    assert res.exit_code == exits.OK, res.output  # no gate asked: a 30% change is news only
    assert "v vs baseline old.json: +30.0%" in res.stdout


def test_a_hyperfine_export_is_a_wall_time_baseline(tmp_path: Path) -> None:
    baseline = tmp_path / "hf.json"
    times = [0.010 + 0.0001 * (i % 3) for i in range(20)]
    baseline.write_text(json.dumps({"results": [{"command": "sleep", "times": times}]}))
    res = invoke(tmp_path, "run", *QUICK, "-r", "8", "--baseline", str(baseline), "--json",
                 "-", "--", "sleep", "0.01")  # fmt: skip
    assert res.exit_code in (exits.OK, exits.SHORT), res.output
    (c,) = json.loads(res.stdout)["baseline"]
    assert c["pi"] == "wall_time" and c["old_mean"] == pytest.approx(0.0101, rel=0.01)


OTHER_PI = {"name": "other", "mean": 1.0, "half_width": 0.1, "n_samples": 10, "confidence": 0.95}
TWO_BENCHMARKS = {"results": [{"command": c, "times": [1, 2]} for c in ("a", "b")]}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        ("not json", "hf.json"),
        (json.dumps({"study": "x", "pis": [OTHER_PI]}), "has no PI of this study"),
        (json.dumps(TWO_BENCHMARKS), "holds 2 benchmarks"),
    ],
)
def test_a_bad_baseline_is_refused_before_any_trial(
    tmp_path: Path, content: str | None, message: str
) -> None:
    baseline = tmp_path / "hf.json"
    if content is not None:
        baseline.write_text(content)
    marker = tmp_path / "ran"
    res = invoke(tmp_path, "run", *QUICK, "--baseline", str(baseline), "--", "touch", str(marker))
    assert res.exit_code == exits.USAGE, res.output
    assert message in res.stderr and str(baseline) in res.stderr
    assert not marker.exists()


def test_fail_if_worse_needs_a_baseline(tmp_path: Path) -> None:
    res = invoke(tmp_path, "run", *QUICK, "--fail-if-worse", "5%", "--", "true")
    assert res.exit_code == exits.USAGE and "needs --baseline" in res.stderr


def test_compare_markdown_carries_the_gate(tmp_path: Path) -> None:
    study = gate_study(tmp_path, 1.0, 1.3)
    res = invoke(tmp_path, "compare", *QUICK, str(study), "--fail-if-worse", "5%",
                 "--markdown", "-")  # fmt: skip
    assert res.exit_code == exits.WORSE, res.output
    assert "| PI | rank | variant |" in res.stdout
    assert "- ❌ **worse**: new is worse than old: +30.0%" in res.stdout
