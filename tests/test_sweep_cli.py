"""``assay sweep`` end to end: real commands, the store, resume, --from and bad input."""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from assay.cli import main
from assay.store import Store

STUDY = """
[study]
name = "synthetic-sweep"

[benchmark]
command = ["{py}", "-c", '''
import sys, random
w, c, v = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
base = min(w, 8) * 10 + 0.1 * w + {{"x": 0, "y": 5, "z": 12}}[c]
print(f"tps={{base + random.gauss(0, 0.3):.4f}}")
''', "{{w}}", "{{c}}", "{{v}}"]

[[pi]]
name = "tps"
unit = "tx/s"
direction = "higher"
source = "regex"
pattern = 'tps=([0-9.]+)'

[sweep]
repetitions = 2
start = 0.1
step = 0.1
{extra}
[sweep.params]
w = [1, 2, 4, 8, 16, 32]
c = ["x", "y", "z"]
v = [1, 2, 3, 4]
"""


def _study(tmp_path: Path, extra: str = "") -> Path:
    p = tmp_path / "sweep.toml"
    p.write_text(STUDY.format(py=sys.executable, extra=extra))
    return p


def _stored_trials(path: Path) -> list[dict[str, object]]:
    with Store(path) as store:
        found = store.find_study("synthetic-sweep")
        assert found is not None
        return [t.setting for t in store.trials(found[0])]


def test_sweep_finds_the_knee_and_stops_early(tmp_path: Path) -> None:
    study = _study(tmp_path)
    out = tmp_path / "r.json"
    res = CliRunner().invoke(main, ["sweep", str(study), "-q", "--no-monitor", "--json", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert doc["steps"][-1]["reason"] == "r2"
    assert doc["settings_measured"] < 72  # stopped before the full grid
    sig = {r["term"]: r["pct_var"] for r in doc["analysis"]["significant"]}
    assert sig["w"] > 80 and "c" in sig
    assert "w = 8" in doc["summary"]["recommendation"]
    assert "Report results on both sides of w = 8" in res.output
    # every trial stored with its setting and repetition; the steps stored too
    trials = _stored_trials(tmp_path / "sweep.assay.db")
    assert len(trials) == 2 * doc["settings_measured"]
    keys = [(t["w"], t["c"], t["v"], t["repetition"]) for t in trials]
    assert len(set(keys)) == len(keys)


def test_a_budget_then_a_larger_one_resumes_without_repeating(tmp_path: Path) -> None:
    study = _study(tmp_path, "r2 = 0.999999\nsplits = 2")
    first = CliRunner().invoke(
        main, ["sweep", str(study), "-q", "--no-monitor", "--max-settings", "8"]
    )
    assert first.exit_code == 0, first.output
    assert "budget spent: 8 of 72 settings" in first.output
    assert len(_stored_trials(tmp_path / "sweep.assay.db")) == 16
    second = CliRunner().invoke(
        main, ["sweep", str(study), "-q", "--no-monitor", "--max-settings", "16"]
    )
    assert second.exit_code == 0, second.output
    trials = _stored_trials(tmp_path / "sweep.assay.db")
    assert len(trials) == 32
    keys = [(t["w"], t["c"], t["v"], t["repetition"]) for t in trials]
    assert len(set(keys)) == 32
    assert "16 resumed from the store" in second.output


def _grid_csv(path: Path, shift: float = 0.0, slope: float = 10.0) -> Path:
    rows = [
        {"w": w, "c": c, "v": v, "tps": min(w, 8) * slope + 0.1 * w + {"x": 0, "y": 5}[c] + shift}
        for w, c, v in itertools.product([1, 2, 4, 8, 16, 32], ["x", "y"], [1, 2, 3])
    ]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_from_csv_simulates_and_reports_the_mismatch(tmp_path: Path) -> None:
    data = _grid_csv(tmp_path / "full.csv")
    out = tmp_path / "r.json"
    res = CliRunner().invoke(
        main,
        [
            "sweep",
            "--from",
            str(data),
            "--params",
            "w,c,v",
            "--metric",
            "tps",
            "--start",
            "0.3",
            "--step",
            "0.1",
            "--json",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert doc["mismatch"]["params_rate"] == 0.0
    assert "against the analysis of all the data" in res.output


def test_from_csv_against_a_second_system(tmp_path: Path) -> None:
    a = _grid_csv(tmp_path / "a.csv")
    b = _grid_csv(tmp_path / "b.csv", shift=40.0, slope=1.0)
    out = tmp_path / "r.json"
    res = CliRunner().invoke(
        main,
        [
            "sweep",
            "--from",
            str(a),
            "--params",
            "w,c,v",
            "--metric",
            "tps",
            "--against",
            str(b),
            "--json",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    regions = json.loads(out.read_text())["comparison"]["regions"]
    assert regions  # b wins at small w, a at large w: the winner changes


@pytest.mark.parametrize(
    ("content", "args", "expect"),
    [
        ("w,tps\n1,2\n", ["--params", "w,c", "--metric", "tps"], "no column 'c'"),
        ("w,c,tps\n1,x,2\n2,y,fast\n", ["--params", "w,c", "--metric", "tps"], "line 3"),
        ("w,c,tps\n1,x,2\n1,y,3\n", ["--params", "w,c", "--metric", "tps"], "single value"),
        ("", ["--params", "w", "--metric", "tps"], "cannot read it as CSV"),
        ("w,tps\n1,2\n", [], "--from needs --params"),
    ],
)
def test_bad_csv_gives_one_clear_error(
    tmp_path: Path, content: str, args: list[str], expect: str
) -> None:
    p = tmp_path / "bad.csv"
    p.write_text(content)
    res = CliRunner().invoke(main, ["sweep", "--from", str(p), *args])
    assert res.exit_code == 2, res.output
    assert expect in res.stderr and "Traceback" not in res.stderr, res.stderr


def test_study_without_sweep_section_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "plain.toml"
    p.write_text('[study]\nname = "x"\n[benchmark]\ncommand = ["true"]\n')
    res = CliRunner().invoke(main, ["sweep", str(p)])
    assert res.exit_code == 2
    assert "needs a [sweep] section" in res.stderr


def test_bad_constraint_names_the_field(tmp_path: Path) -> None:
    study = _study(tmp_path, "constraints = [\"__import__('os').system('touch pwned')\"]")
    res = CliRunner().invoke(main, ["sweep", str(study), "-q"])
    assert res.exit_code == 2
    assert "sweep.constraints[0]" in res.stderr
    assert not (tmp_path / "pwned").exists() and not Path("pwned").exists()
