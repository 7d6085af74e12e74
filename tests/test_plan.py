"""Issue #62 part 2: ``assay plan`` says what a study will do before it runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.cli import exits
from assay.spec import parse_spec_text
from assay.studies.plan import plan_study, rounds_for_width, trial_counts
from test_gate import QUICK, invoke

HEAD = '[study]\nname = "p"\n[benchmark]\ncommand = ["true", "{a}"]\n[params]\na = 1\n'


def spec(extra: str):  # type: ignore[no-untyped-def]
    return parse_spec_text(HEAD + extra, "p.toml")


def test_the_designs_trial_counts() -> None:
    run = trial_counts(spec("[stop]\nmin_rounds = 20\nmax_rounds = 200\n"))
    assert (run.least, run.most, run.typical) == (20, 200, None)
    compare = trial_counts(
        spec('[[variant]]\nname = "x"\n[[variant]]\nname = "y"\nparams = { a = 2 }\n'
             "[stop]\nmax_rounds = 50\n")
    )  # fmt: skip
    assert (compare.least, compare.most) == (2 * 3, 2 * 50)  # 3 samples a side at least
    sweep = trial_counts(
        spec("[sweep]\nrepetitions = 2\n[sweep.params]\nb = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n"
             "c = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n")
    )  # fmt: skip
    # 5% of 100 settings first (5), but a main-effects model has 19 terms, and a split
    # trains on 80% of the settings with one more than the terms: 25 settings
    assert (sweep.least, sweep.most) == (25 * 2, 100 * 2)
    assert "the splits judge a model from 25 settings" in sweep.how
    small = trial_counts(spec("[sweep]\nrepetitions = 3\n[sweep.params]\nb = [1, 2]\n"))
    assert small.least == small.most == 6 and "measured whole" in small.how
    knobs = trial_counts(
        parse_spec_text(
            '[study]\nname = "p"\n[benchmark]\ncommand = ["true", "{k}", "{m}"]\n'
            '[[knob]]\nname = "k"\ntype = "int"\nmin = 1\nmax = 9\ndefault = 1\n'
            '[[knob]]\nname = "m"\ntype = "categorical"\nvalues = ["u", "v"]\ndefault = "u"\n'
            "[knobs]\nsamples = 40\n",
            "k.toml",
        )
    )
    assert (knobs.least, knobs.most) == (40, 40 + 10)  # validation: max(10, samples / 4)
    claimed = trial_counts(
        parse_spec_text(
            '[study]\nname = "p"\n[benchmark]\ncommand = ["true", "{k}", "{m}"]\n'
            '[[knob]]\nname = "k"\ntype = "int"\nmin = 1\nmax = 9\ndefault = 1\n'
            '[[knob]]\nname = "m"\ntype = "categorical"\nvalues = ["u", "v"]\ndefault = "u"\n'
            "[knobs]\nsamples = 40\nclaim_repetitions = 3\n"
            '[[claim]]\nsays = "x"\nratio = [{ m = "v" }, { m = "u", k = 1 }]\nat_least = 2\n',
            "k.toml",
        )
    )  # the claim's second setting is the defaults: one of the two each time
    assert (claimed.least, claimed.most) == (40 + 2 * 3, 40 + 10 + 2 * 3)
    assert "then the 2 settings the claims name, each 3 times" in claimed.how


def test_a_plan_names_the_extras_a_study_needs_and_this_python_lacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    found = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "sklearn" else found(name, *a)
    )
    knobs = parse_spec_text(
        '[study]\nname = "p"\n[benchmark]\ncommand = ["true", "{k}"]\n'
        '[[knob]]\nname = "k"\ntype = "int"\nmin = 1\nmax = 9\ndefault = 1\n',
        "k.toml",
    )
    p = plan_study(knobs, tmp_path / "k.assay.db", pilot_trials=0)
    assert p.notes == [
        "ranking knobs with random forests needs scikit-learn: pip install -e '.[models]' in "
        "Assay's folder (the study would stop with this before its first trial)"
    ]
    assert plan_study(spec(""), tmp_path / "p.assay.db", pilot_trials=0).notes == []


def test_the_rounds_a_width_needs() -> None:
    assert rounds_for_width(0.2, 0.05, 0.95, 10, 1000) == 62  # (1.96 * 0.2 / 0.05)^2
    assert rounds_for_width(0.01, 0.05, 0.95, 10, 1000) == 10
    assert rounds_for_width(3.0, 0.05, 0.95, 10, 1000) == 1000


def test_without_a_pilot_the_plan_says_why(tmp_path: Path) -> None:
    p = plan_study(spec(""), tmp_path / "p.assay.db", pilot_trials=0)
    assert p.per_trial_s is None and p.seconds(10) is None
    assert p.timing_from == "no pilot (--pilot 0), and no earlier store of this study"
    assert p.hosts == ["this machine, one trial at a time"]


def test_a_plan_pilots_then_reads_the_earlier_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    study = tmp_path / "p.toml"
    study.write_text(HEAD + "[stop]\nmax_rounds = 12\nci_width = 0.5\n")
    res = invoke(tmp_path, "plan", str(study), "--json", "-")
    assert res.exit_code == exits.OK, res.output
    doc = json.loads(res.stdout)
    assert doc["planned_kind"] == "run" and doc["trials"]["least"] == 10
    assert doc["timing_from"] == "a pilot of 3 trials on this machine"
    assert doc["per_trial_s"] > 0 and doc["store_bytes"]["least"] > 0
    assert not (tmp_path / "p.assay.db").exists()  # the pilot wrote nothing of the study's
    res = invoke(tmp_path, "run", *QUICK, str(study))
    assert res.exit_code in (exits.OK, exits.SHORT), res.output
    res = invoke(tmp_path, "plan", str(study))
    assert res.exit_code == exits.OK, res.output
    assert "from its earlier store" in res.stdout and "p.assay.db" in res.stdout
    assert res.stdout.startswith("plan: p (run) from")


def test_a_bad_study_file_is_a_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[study]\n")
    res = invoke(tmp_path, "plan", str(bad))
    assert res.exit_code == exits.USAGE and "bad.toml" in res.output
