"""Bad news in the headline (#58 item 6): a sweep that lost settings to failed trials
says so before its analysis, names each failed trial's setting and exits 6."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from assay.cli import main

STUDY = """
[study]
name = "failing-setting"
[benchmark]
command = ["sh", "-c", "test {x} != 2 || { echo boom >&2; exit 3; }"]
[sweep]
repetitions = 2
sampler = "grid"
[sweep.params]
x = [1, 2, 3]
y = [1, 2]
"""


def test_a_sweep_that_lost_settings_says_so_first_and_exits_6(tmp_path: Path) -> None:
    study = tmp_path / "s.toml"
    study.write_text(STUDY)
    out = tmp_path / "r.json"
    res = CliRunner().invoke(main, ["sweep", str(study), "--json", str(out)])
    assert res.exit_code == 6, res.output
    text = res.output
    headline = "4 of 12 trials failed: 2 settings have no valid trial"
    assert headline in text and "(x=2, y=1; x=2, y=2)" in text
    assert text.index(headline) < text.index("ANOVA")  # before the analysis
    named = r"trial \d+ \(x=2, y=[12], repetition [01]\): failed: exited with status 3"
    assert re.search(named, text)
    doc = json.loads(out.read_text())
    assert doc["settings_lost"] == [{"x": 2, "y": 1}, {"x": 2, "y": 2}]


def test_a_sweep_whose_settings_all_kept_a_valid_trial_exits_0(tmp_path: Path) -> None:
    study = tmp_path / "s.toml"
    # only the first repetition of x = 2 fails: every setting keeps one valid trial
    marker = tmp_path / "failed-once"
    study.write_text(
        STUDY.replace(
            "test {x} != 2 || { echo boom >&2; exit 3; }",
            f"test {{x}} != 2 || test -e {marker}{{y}} || {{ touch {marker}{{y}}; exit 3; }}",
        )
    )
    res = CliRunner().invoke(main, ["sweep", str(study)])
    assert res.exit_code == 0, res.output
    assert "2 of 12 trials failed (every setting kept a valid trial)" in res.output


def test_a_report_whose_baseline_gate_failed_shows_no_green_answer() -> None:
    from types import SimpleNamespace as NS

    from assay.report.html import _answer

    doc = {
        "pis": [{"name": "wall_time", "unit": "s", "mean": 0.004, "low": 0.0039,
                 "high": 0.0041, "half_width": 0.0001, "relative_half_width": 0.025,
                 "confidence": 0.95, "rounds_used": 30, "met": True}],
    }  # fmt: skip
    gate = NS(verdict="worse", text=lambda: "this run is worse than the baseline: +106% slower")
    bad = _answer("run", doc, [NS(pi="wall_time", gate=gate)])
    assert 'class="answer bad"' in bad and "the target is met" in bad
    assert "the baseline gate failed: wall_time: this run is worse" in bad
    fine = NS(verdict="not worse", text=lambda: "")
    assert 'class="answer"' in _answer("run", doc, [NS(pi="wall_time", gate=fine)])
    # a run short of its target (± ∞, "the target is not met") is never a green box
    short = {"pis": [{**doc["pis"][0], "met": False, "half_width": None}]}
    assert 'class="answer short"' in _answer("run", short)


def test_a_command_that_cannot_start_says_so_in_one_line_first(tmp_path: Path) -> None:
    """#60: one error line on stderr before the report (it was only under a table of
    n/a), exit 4 (no valid result)."""
    res = CliRunner().invoke(
        main,
        ["run", "-q", "--store", str(tmp_path / "s.db"), "--", str(tmp_path / "no-such-bin")],
    )
    assert res.exit_code == 4, res.output
    first = res.stderr.splitlines()[0]
    assert first.startswith("error: cannot start") and "No such file or directory" in first
    assert "nothing was measured" in first
