"""``assay sweep`` end to end: real commands, the store, resume, --from and bad input."""

from __future__ import annotations

import itertools
import json
import sqlite3
import sys
from pathlib import Path

import numpy as np
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
import os, sys, random
w, c, v = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
base = min(w, 8) * 10 + 0.1 * w + {{"x": 0, "y": 5, "z": 12}}[c]
# the same noise in every run of the test: seeded by the setting and its repetition
count = os.path.join(sys.argv[4], "runs-%d-%s-%d" % (w, c, v))
n = os.path.getsize(count) if os.path.exists(count) else 0
with open(count, "a") as f:
    f.write(".")
random.seed("%d %s %d %d" % (w, c, v, n))
print(f"tps={{base + random.gauss(0, 0.3):.4f}}")
''', "{{w}}", "{{c}}", "{{v}}", "{dir}"]

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
    p.write_text(STUDY.format(py=sys.executable, extra=extra, dir=tmp_path))
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
    # an R² no model reaches, and no stop for the R² ceiling: the budget ends it
    study = _study(tmp_path, "r2 = 0.999999\nsplits = 2\nstop_at_ceiling = false")
    first = CliRunner().invoke(
        main, ["sweep", str(study), "-q", "--no-monitor", "--max-settings", "8"]
    )
    assert first.exit_code == 5, first.output
    assert "budget spent: 8 of 72 settings" in first.output
    assert len(_stored_trials(tmp_path / "sweep.assay.db")) == 16
    second = CliRunner().invoke(
        main, ["sweep", str(study), "-q", "--no-monitor", "--max-settings", "16"]
    )
    assert second.exit_code == 5, second.output
    trials = _stored_trials(tmp_path / "sweep.assay.db")
    assert len(trials) == 32
    keys = [(t["w"], t["c"], t["v"], t["repetition"]) for t in trials]
    assert len(set(keys)) == 32
    assert "16 resumed from the store" in second.output


def test_a_resumed_sweep_reports_the_steps_of_every_session(tmp_path: Path) -> None:
    """Issue #13, item 2: the report of a resumed sweep showed only its own session's
    steps (and every resume stored its first step again)."""
    study = _study(tmp_path)
    out1, out2 = tmp_path / "1.json", tmp_path / "2.json"
    first = CliRunner().invoke(
        main, ["sweep", str(study), "-q", "--no-monitor", "--json", str(out1)]
    )
    assert first.exit_code == 0, first.output
    steps = json.loads(out1.read_text())["steps"]
    assert len(steps) >= 2
    again = CliRunner().invoke(
        main, ["sweep", str(study), "-q", "--no-monitor", "--json", str(out2)]
    )
    assert again.exit_code == 0, again.output
    assert json.loads(out2.read_text())["steps"] == steps


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
        ("w,tps\n1,2\n", [], "--from needs --metric"),
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


def _multiplicative_csv(path: Path, zero: bool = False) -> Path:
    # tps = f(w) * g(c): additive only on the log scale
    rng = np.random.default_rng(3)
    rows = [
        {
            "w": w,
            "c": c,
            "v": v,
            "tps": min(w, 8) * {"x": 1.0, "y": 3.0, "z": 10.0}[c] * np.exp(rng.normal(0, 0.01)),
        }
        for w, c, v in itertools.product([1, 2, 4, 8, 16, 32], ["x", "y", "z"], [1, 2, 3, 4])
    ]
    if zero:
        rows[0]["tps"] = 0.0
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _from_args(data: Path, out: Path, *extra: str) -> list[str]:
    return [
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
        *extra,
    ]


def test_from_csv_log_makes_multiplicative_effects_additive(tmp_path: Path) -> None:
    data = _multiplicative_csv(tmp_path / "mult.csv")
    raw_out, log_out = tmp_path / "raw.json", tmp_path / "log.json"
    raw = CliRunner().invoke(main, _from_args(data, raw_out))
    logged = CliRunner().invoke(main, _from_args(data, log_out, "--log"))
    assert raw.exit_code == 0 and logged.exit_code == 0, raw.output + logged.output
    raw_doc, log_doc = json.loads(raw_out.read_text()), json.loads(log_out.read_text())
    raw_terms = {r["term"] for r in raw_doc["analysis"]["significant"]}
    log_terms = {r["term"] for r in log_doc["analysis"]["significant"]}
    # on the raw scale the product shows up as an interaction; on the log scale it is gone
    assert any(":" in t for t in raw_terms)
    assert log_terms == {"w", "c"}
    assert log_doc["transform"] == "log" and raw_doc["transform"] == "none"
    assert log_doc["steps"][-1]["reason"] == "r2"
    assert log_doc["steps"][-1]["r2"] and min(log_doc["steps"][-1]["r2"]) >= 0.9
    assert "analysed on log(tps)" in logged.output
    assert "analysed on log" not in raw.output


def test_from_csv_log_refuses_non_positive_values(tmp_path: Path) -> None:
    data = _multiplicative_csv(tmp_path / "zero.csv", zero=True)
    res = CliRunner().invoke(main, _from_args(data, tmp_path / "r.json", "--log"))
    assert res.exit_code == 2
    assert "tps must be positive, but 1 value is <= 0" in res.output
    assert "Traceback" not in res.output


def test_study_transform_log_is_used_and_recorded(tmp_path: Path) -> None:
    study = _study(tmp_path, 'transform = "log"')
    out = tmp_path / "r.json"
    res = CliRunner().invoke(main, ["sweep", str(study), "-q", "--no-monitor", "--json", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert doc["transform"] == "log"
    assert "analysed on log(tps)" in res.output
    assert doc["steps"][-1]["reason"] == "r2"
    assert "w = 8" in doc["summary"]["recommendation"]


def test_unknown_transform_names_the_field(tmp_path: Path) -> None:
    study = _study(tmp_path, 'transform = "sqrt"')
    res = CliRunner().invoke(main, ["sweep", str(study), "-q", "--no-monitor"])
    assert res.exit_code == 2
    assert "transform" in res.output and "Traceback" not in res.output


def test_assay_run_on_a_sweep_study_points_to_assay_sweep(tmp_path: Path) -> None:
    study = _study(tmp_path)
    res = CliRunner().invoke(main, ["run", str(study)])
    assert res.exit_code == 2, res.output
    assert "run it with 'assay sweep" in res.stderr and "Traceback" not in res.stderr


EXACT_STUDY = """
[study]
name = "exact-sweep"

[benchmark]
command = ["{py}", "-c", '''
import sys, time
time.sleep(0.1)
w, c, v = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
wobble = ((w * 7 + len(c) * 3 + v * 5) % 5) * 0.05
print(f"tps={{min(w, 8) * 10 + {{'x': 0, 'y': 5}}[c] + wobble:.4f}}")
''', "{{w}}", "{{c}}", "{{v}}"]

[[pi]]
name = "tps"
direction = "higher"
source = "regex"
pattern = 'tps=([0-9.]+)'

[sweep]
repetitions = 3
start = 0.2
step = 0.2
r2 = 0.999999
splits = 3
seed = 5

[sweep.params]
w = [1, 2, 4, 8, 16]
c = ["x", "y"]
v = [1, 2, 3]
"""


def _exact_study(folder: Path) -> Path:
    folder.mkdir()
    p = folder / "sweep.toml"
    p.write_text(EXACT_STUDY.format(py=sys.executable))
    return p


def _trial_keys(db: Path) -> list[tuple[object, ...]]:
    with Store(db) as store:
        found = store.find_study("exact-sweep")
        assert found is not None
        return sorted(
            (t.setting["w"], t.setting["c"], t.setting["v"], t.setting["repetition"])
            for t in store.trials(found[0])
        )


def test_a_killed_sweep_ends_with_the_trials_and_analysis_of_an_uninterrupted_one(
    tmp_path: Path,
) -> None:
    """Issue #13, item 1: a batch left part-measured by a kill is finished first, so
    the steps, the later draws and the trials are those of an uninterrupted sweep."""
    import random
    import signal
    import subprocess
    import time

    ref = _exact_study(tmp_path / "ref")
    args = ["-q", "--no-monitor", "--json"]
    res = CliRunner().invoke(main, ["sweep", str(ref), *args, str(tmp_path / "ref.json")])
    assert res.exit_code == 0, res.output
    want = json.loads((tmp_path / "ref.json").read_text())

    killed = _exact_study(tmp_path / "killed")
    cmd = [sys.executable, "-m", "assay", "sweep", str(killed), "-q", "--no-monitor"]
    rng = random.Random(11)
    mid_sweep = 0  # kills that landed with some, not all, trials stored
    db = tmp_path / "killed" / "sweep.assay.db"
    total = len(_trial_keys(ref.parent / "sweep.assay.db"))

    def stored() -> int:  # what the store holds now (read-only; the sweep writes on)
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
                return int(conn.execute("SELECT count(*) FROM trials").fetchone()[0])
        except sqlite3.Error:  # not made yet
            return 0

    for _ in range(8):
        # the kill waits for the store, not the clock: start-up takes 1.5 s on a quiet
        # machine and 4 s at load 7 (issue #44)
        before = stored()
        if before >= total:
            break
        want_more = rng.randint(1, 3)
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 300  # a hang guard only
        while proc.poll() is None and time.monotonic() < deadline:
            if stored() >= before + want_more:
                break
            time.sleep(0.02)
        if proc.poll() is not None:
            break
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        mid_sweep += 0 < stored() < total
    assert mid_sweep >= 2, "no kill landed in the middle of the sweep"
    res = CliRunner().invoke(main, ["sweep", str(killed), *args, str(tmp_path / "k.json")])
    assert res.exit_code == 0, res.output
    got = json.loads((tmp_path / "k.json").read_text())
    assert _trial_keys(tmp_path / "killed" / "sweep.assay.db") == _trial_keys(
        tmp_path / "ref" / "sweep.assay.db"
    )
    assert got["steps"] == want["steps"]
    assert got["analysis"] == want["analysis"]
    assert got["reason"] == want["reason"]


@pytest.mark.parametrize("layout", ["rows", "round columns"])
def test_from_csv_uses_the_rounds_as_repetitions(tmp_path: Path, layout: str) -> None:
    """#58: 3 rounds per setting, as rows or as tput_1..tput_3 columns, are the
    setting's repetitions: the ANOVA tests against their pure error (it said "one
    repetition per setting: no pure error" and tested nothing)."""
    rng = np.random.default_rng(3)
    grid = list(itertools.product([1, 2, 4, 8], ["wal", "delete"]))
    rounds = [
        [w * 10 * (1.2 if j == "wal" else 1) + rng.normal(0, 1) for _ in range(3)] for w, j in grid
    ]
    path = tmp_path / "rounds.csv"
    if layout == "rows":
        rows = [(w, j, y) for (w, j), ys in zip(grid, rounds, strict=True) for y in ys]
        pd.DataFrame(rows, columns=["workers", "journal", "tput"]).to_csv(path, index=False)
        extra: list[str] = []
    else:
        frame = pd.DataFrame(grid, columns=["workers", "journal"])
        for k in range(3):
            frame[f"tput_{k + 1}"] = [ys[k] for ys in rounds]
        frame.to_csv(path, index=False)
        extra = ["--repetitions", "tput_*"]
    out = tmp_path / "r.json"
    res = CliRunner().invoke(
        main, ["sweep", "--from", str(path), "--metric", "tput", *extra, "--json", str(out)]
    )
    assert res.exit_code == 0, res.output
    assert "no pure error" not in res.output
    assert "24 trials" in res.output and "tested against the pure error" in res.output
    analysis = json.loads(out.read_text())["analysis"]
    assert analysis["replicates"] and analysis["trials"] == 24
    assert {t["term"] for t in analysis["significant"]} >= {"workers", "journal"}
