"""A sweep on a busy machine stops within the first quarter of its settings (#58 item 4).

The machine's load and the others' cores are given to the study (monkeypatched): the
rule, not this machine's load, is under test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import assay.studies.sweep as sweep_study
from assay.cli import main
from assay.studies.sweep import BUSY_LOAD_PER_CORE, BusyMachine, busy_machine
from test_sweep_cli import _study

# an R² no model reaches, and no stop for the R² ceiling: only the busy rule or the
# budget (40 settings; its quarter is 10) ends it
HARD = "r2 = 0.999999\nsplits = 2\nstop_at_ceiling = false\nmax_settings = 40\n"


def _machine(monkeypatch: pytest.MonkeyPatch, load: float, others: float) -> None:
    cores = 2
    monkeypatch.setattr(sweep_study.os, "cpu_count", lambda: cores)
    monkeypatch.setattr(sweep_study, "_load_average", lambda: load)
    # every trial watched, the others using ``others`` cores during it
    monkeypatch.setattr(sweep_study, "others_during", lambda trials: [(t, others) for t in trials])


def _sweep(tmp_path: Path, *args: str) -> tuple[Any, dict[str, Any]]:
    out = tmp_path / "r.json"
    res = CliRunner().invoke(
        main, ["sweep", str(tmp_path / "sweep.toml"), "-q", "--json", str(out), *args]
    )
    return res, json.loads(out.read_text()) if out.exists() else {}


def test_a_busy_machine_stops_the_sweep_within_its_first_quarter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _study(tmp_path, HARD)
    _machine(monkeypatch, load=5.2, others=1.6)
    res, doc = _sweep(tmp_path)
    assert res.exit_code == 5, res.output
    last = doc["steps"][-1]
    assert last["reason"] == "busy"
    # 8 settings a step: the last step within the quarter of 40 is the first
    assert last["n_measured"] == 8 and doc["settings_measured"] == 8
    assert doc["busy"] == {
        "load": 5.2,
        "cores": 2,
        "disturbed": 16,
        "watched": 16,
        "others_cores": 1.6,
    }
    text = " ".join(res.output.split())
    assert "the machine is busy (a load of 5.2 on 2 cores" in text
    assert "about 38% of the CPU" in text
    assert "--busy continue" in text and "provisional" in text
    # an answer all the same: the analysis of the 8 settings, repetitions as replicates
    assert doc["analysis"]["trials"] == 16
    assert "w" in {r["term"] for r in doc["analysis"]["significant"]}
    assert any(w.startswith("provisional:") for w in doc["warnings"])

    # as stored: what it saw, and why it stopped
    shown = CliRunner().invoke(main, ["show", str(tmp_path / "sweep.assay.db"), "--json", "-"])
    assert shown.exit_code == 5, shown.output  # the study's status, as it ended
    stored = json.loads(shown.stdout)
    assert stored["busy"]["load"] == 5.2 and "the machine is busy" in stored["reason"]

    # measured on from where it stopped: nothing measured again, the budget ends it
    again, doc2 = _sweep(tmp_path, "--busy", "continue")
    assert again.exit_code == 5, again.output
    reasons = [s["reason"] for s in doc2["steps"]]
    assert "busy" in reasons and reasons[-1] == "budget" and doc2["settings_measured"] == 40
    assert doc2["trials"]["resumed"] == 16 and doc2["busy"] is None


@pytest.mark.parametrize(
    ("load", "others", "args"),
    [
        (1.0, 0.0, ()),  # quiet
        (3.0, 1.3, ()),  # two busy loops beside it on 2 cores: load 1.5 a core
        (8.0, 0.1, ()),  # a load of its own (a benchmark's threads), not others'
        (5.2, 1.6, ("--busy", "continue")),
        (5.2, 1.6, ("--no-monitor",)),  # nothing watched: the others are not known
    ],
)
def test_otherwise_the_sweep_measures_on_past_the_quarter(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    load: float,
    others: float,
    args: tuple[str, ...],
) -> None:
    _study(tmp_path, HARD)
    _machine(monkeypatch, load=load, others=others)
    res, doc = _sweep(tmp_path, *args)
    assert res.exit_code == 5, res.output
    assert doc["steps"][-1]["reason"] == "budget" and doc["busy"] is None
    assert doc["settings_measured"] == 40


def test_busy_in_the_study_file_and_refused_with_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _study(tmp_path, HARD + 'busy = "continue"')
    _machine(monkeypatch, load=5.2, others=1.6)
    res, doc = _sweep(tmp_path)
    assert res.exit_code == 5 and doc["steps"][-1]["reason"] == "budget", res.output
    bad = CliRunner().invoke(main, ["sweep", "--from", "x.csv", "--metric", "m", "--busy", "stop"])
    assert bad.exit_code == 2 and "--busy: not with --from" in bad.output


def test_the_rule_at_its_edges() -> None:
    edge = busy_machine(2 * BUSY_LOAD_PER_CORE, 2, [0.5, 0.0])
    assert edge.busy  # a load of twice the cores, half the trials disturbed
    assert not busy_machine(3.99, 2, [0.5, 0.5]).busy
    assert not busy_machine(4.0, 2, [0.5, 0.0, 0.0]).busy
    assert not busy_machine(4.0, 2, []).busy  # no trial watched
    assert not busy_machine(float("nan"), 2, [1.0]).busy  # no load average
    assert BusyMachine.from_dict(edge.as_dict()) == edge
