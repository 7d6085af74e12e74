"""End-to-end: real commands through the runner, the store and the CLI."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from assay.cli import main
from assay.spec import load_spec
from assay.studies.run import Runner

UNIT_STUDY = """
[study]
name = "units"

[benchmark]
command = ["{py}", "-c", '''
import os, random, sys
# a new seed per trial, the same sequence every test run (readings are random: the
# test asserts on a study, not on luck)
seeds = {seeds!r}
count = int(open(seeds).read()) if os.path.exists(seeds) else 0
open(seeds, "w").write(str(count + 1))
random.seed(int(sys.argv[1]) if len(sys.argv) > 1 else count)
for i in range(300):
    warm = 5.0 if i < 40 else 0.0
    print(f"op={{10.0 + warm + random.gauss(0, 0.5):.6f}}")
print("total=1.0")
''']

[[pi]]
name = "op_time"
unit = "ms"
source = "regex"
pattern = 'total=([0-9.]+)'
units = {{ source = "regex", pattern = 'op=([0-9.]+)' }}

[stop]
ci_width = 0.01
max_rounds = 20
"""


def test_unit_readings_study_removes_warmup_and_meets_target(
    write_study,
    py: str,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    path = write_study(UNIT_STUDY.format(py=py, seeds=str(tmp_path / "seeds")))
    spec = load_spec(path)
    res = Runner(spec, spec.store_path(), measure_overhead=False).run()
    (r,) = res.results
    assert r.met, r
    # without warm-up removal the mean would be ~10.67; the CI half-width is ~0.1
    assert abs(r.mean - 10.0) < 0.15, r
    # 40 of 300 unit readings per round are warm-up; EDM must take most of them away
    assert r.warmup_removed >= 30 * r.rounds_used
    assert r.method.startswith("unit readings, EDM")
    assert res.decision.reason.startswith("target reached")


def test_resume_does_not_repeat_finished_trials(write_study, py: str) -> None:  # type: ignore[no-untyped-def]
    text = f"""
[study]
name = "resume"
[benchmark]
command = ["{py}", "-c", "print(1)"]
[stop]
max_rounds = 4
ci_width = 0.000001
"""
    path = write_study(text)
    spec = load_spec(path)
    first = Runner(spec, spec.store_path(), measure_overhead=False).run()
    assert first.trials_total == 4
    assert first.decision.reason.startswith("budget spent")
    spec2 = spec.model_copy(update={"stop": spec.stop.model_copy(update={"max_rounds": 6})})
    second = Runner(spec2, spec.store_path(), measure_overhead=False).run()
    assert second.resumed_trials == 4
    assert second.trials_total == 6
    con = sqlite3.connect(spec.store_path())
    seqs = [r[0] for r in con.execute("SELECT seq FROM trials ORDER BY seq")]
    assert seqs == list(range(6))


def test_failing_trials_are_stored_and_reported(write_study, py: str) -> None:  # type: ignore[no-untyped-def]
    text = f"""
[study]
name = "flaky"
[benchmark]
command = ["{py}", "-c", '''import os, sys
n = os.path.getsize(sys.argv[1]) if os.path.exists(sys.argv[1]) else 0
open(sys.argv[1], 'a').write('x')
print('v=' + str((n * 37 % 100) / 100 + 1))
sys.exit(1 if n % 5 == 2 else 0)''', "{{counter}}"]
timeout = 30
cwd = "."
[params]
counter = "counter.txt"
[[pi]]
name = "v"
source = "regex"
pattern = 'v=([0-9.]+)'
[stop]
max_rounds = 30
ci_width = 0.0001
"""
    path = write_study(text)
    spec = load_spec(path)
    res = Runner(spec, spec.store_path(), measure_overhead=False).run()
    assert res.trials_total == 30
    failed = res.trials_by_status.get("failed", 0)
    assert failed == 6  # every fifth trial, deterministically
    assert failed == len(res.failures)
    assert all("status 1" in f["error"] for f in res.failures)
    assert res.results[0].n_raw == 30 - failed


def test_mostly_failing_study_stops_early(write_study, py: str) -> None:  # type: ignore[no-untyped-def]
    text = f"""
[study]
name = "broken"
[benchmark]
command = ["{py}", "-c", "import sys; sys.exit(2)"]
[stop]
max_rounds = 100
"""
    spec = load_spec(write_study(text))
    res = Runner(spec, spec.store_path(), measure_overhead=False).run()
    assert res.trials_total == 5
    assert "failed" in res.decision.reason


def test_parse_errors_are_recorded_not_fatal(write_study, py: str) -> None:  # type: ignore[no-untyped-def]
    text = f"""
[study]
name = "noparse"
[benchmark]
command = ["{py}", "-c", "print('nothing here')"]
[[pi]]
name = "tps"
source = "regex"
pattern = 'tps=([0-9.]+)'
[stop]
max_rounds = 6
"""
    spec = load_spec(write_study(text))
    res = Runner(spec, spec.store_path(), measure_overhead=False).run()
    assert res.trials_by_status == {"parse_error": 5}
    assert "matched nothing" in res.failures[0]["error"]


def test_cli_quick_mode_json(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    result = CliRunner().invoke(
        main,
        [
            "run",
            "--store",
            str(tmp_path / "q.db"),
            "--max-rounds",
            "15",
            "--ci-width",
            "50%",
            "--no-overhead",
            "-q",
            "--json",
            str(out),
            "--",
            sys.executable,
            "-c",
            "pass",
        ],
    )
    # 0: the target met; 5: 15 rounds were not enough (under load)
    assert result.exit_code in (0, 5), result.output
    data = json.loads(out.read_text())
    (pi,) = data["pis"]
    assert pi["name"] == "wall_time" and pi["mean"] > 0
    # under heavy load 15 launches may not decorrelate: the CI is then unbounded (null)
    assert pi["low"] is None or pi["low"] < pi["mean"] < pi["high"]
    assert data["trials"]["total"] >= 10
    assert "wall_time" in result.output and "±" in result.output


def test_cli_bad_study_file_is_one_clear_error(write_study) -> None:  # type: ignore[no-untyped-def]
    path = write_study('[study]\nname = "x"\n[benchmark]\ncommand = []\n')
    proc = subprocess.run(
        [sys.executable, "-m", "assay.cli", "run", str(path)], capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert str(path) in proc.stderr and "benchmark.command" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_cli_csv_export(write_study, py: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = write_study(
        f'[study]\nname="c"\n[benchmark]\ncommand=["{py}","-c","pass"]\n'
        "[stop]\nmax_rounds=12\nci_width=0.5\n"
    )
    out = tmp_path / "r.csv"
    res = CliRunner().invoke(main, ["run", str(path), "-q", "--no-overhead", "--csv", str(out)])
    assert res.exit_code in (0, 5), res.output  # 5: the budget ran out first
    lines = out.read_text().splitlines()
    assert lines[0].startswith("study,pi,unit")
    assert lines[1].startswith("c,wall_time,")


@pytest.mark.parametrize("value", ["; touch pwned", "$(touch pwned)", "`touch pwned`"])
def test_param_values_are_never_seen_by_a_shell(
    write_study,
    py: str,
    tmp_path: Path,
    value: str,  # type: ignore[no-untyped-def]
) -> None:
    text = f"""
[study]
name = "inj"
[benchmark]
command = ["{py}", "-c", "import sys; assert sys.argv[1] == {value!r}", "{{v}}"]
cwd = "."
[params]
v = {json.dumps(value)}
[stop]
max_rounds = 2
"""
    spec = load_spec(write_study(text))
    res = Runner(spec, spec.store_path(), measure_overhead=False).run()
    assert res.trials_by_status == {"ok": 2}
    assert not (tmp_path / "pwned").exists()


def test_wps_study_runs_the_planned_work_amounts(write_study, py: str) -> None:  # type: ignore[no-untyped-def]
    text = f"""
[study]
name = "wps"
[benchmark]
command = ["{py}", "-c", "import sys, time; time.sleep(0.01 + int(sys.argv[1]) / 4000)",
           "{{work}}"]
[benchmark.work]
min = 20
max = 400
short_round = 0.001
[stop]
max_rounds = 12
ci_width = 0.0001
"""
    spec = load_spec(write_study(text))
    res = Runner(spec, spec.store_path(), measure_overhead=False).run()
    (r,) = res.results
    assert r.name == "work_per_second" and r.unit == "units/s"
    # a target it cannot meet: all 12 rounds run (with the default ±5% a quick, clean
    # fit met it at round 11 about one time in 12)
    assert r.n_raw == 12  # the fit itself may fail on a loaded machine: not what this tests
    con = sqlite3.connect(spec.store_path())
    rows = con.execute("SELECT work, argv_json FROM trials ORDER BY seq").fetchall()
    assert len({w for w, _ in rows}) >= 10  # work amounts vary, as the regression needs
    assert all(json.loads(a)[-1] == str(int(w)) for w, a in rows)


@pytest.mark.parametrize(
    ("args", "unknown", "suggested"),
    [
        (["run", "--max-round", "3", "--", "true"], "--max-round", "--max-rounds"),
        (["run", "--plott", "x.png", "--", "true"], "--plott", "--plot"),
        (
            ["compare", "--export-md", "x.md", "--", "true", "--", "true"],
            "--export-md",
            "--export-markdown",
        ),
        (["compare", "--seeed=3", "--", "true", "--", "true"], "--seeed", "--seed"),
    ],
)
def test_a_mistyped_option_is_a_usage_error_not_a_command(
    args: list[str], unknown: str, suggested: str | None
) -> None:
    """Issue #14: an unknown option before the command was measured as the command."""
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 2, res.output
    assert "No such option" in res.output and unknown in res.output
    if suggested is not None:  # click names the close options (in its order)
        said = res.output.replace("'", "")
        assert "Did you mean" in said and suggested in said.split("Did you mean", 1)[1], said


def test_trials_that_exit_0_but_write_to_stderr_are_warned_of_once(tmp_path: Path) -> None:
    """Issue #44: ``sort big.txt | uniq`` without big.txt "succeeds" 1,000 times; the
    study now says that its trials wrote errors, with the first one's lines."""
    from click.testing import CliRunner

    from assay.cli import main

    out = tmp_path / "r.json"
    res = CliRunner().invoke(
        main,
        ["run", "--shell", "-r", "12", "--store", str(tmp_path / "s.db"), "--json", str(out),
         "--no-overhead", "--no-monitor", "--", "sort nosuchfile.txt | uniq"],
    )  # fmt: skip
    assert res.exit_code in (0, 5), res.output
    warnings = json.loads(out.read_text())["warnings"]
    loud = [w for w in warnings if "exited 0 but wrote to stderr" in w]
    assert len(loud) == 1 and "nosuchfile.txt" in loud[0], warnings
    assert loud[0].startswith("12 of 12 trials")


def test_measure_shows_progress_and_warns_when_the_target_is_not_met() -> None:
    """Issue #35: ``assay.measure(fn)`` blocked 60 s in silence and returned met=False."""
    import io
    import warnings

    from assay.api import TargetNotMetWarning, measure

    shown = io.StringIO()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        r = measure(
            lambda: None, calls_per_round=20, ci_width=1e-9, max_time=1.5, progress=shown
        )  # fmt: skip
    assert not r.met
    assert [w.category for w in seen] == [TargetNotMetWarning]
    assert "was not met" in str(seen[0].message)
    assert "assay.measure: round " in shown.getvalue() and "target ±0.0%" in shown.getvalue()
