"""End-to-end: ``assay compare`` with real commands, the store, resume and ``--from``."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from assay.cli import main
from assay.designs.compare import interleaved_schedule
from assay.spec import SpecError, load_spec, parse_spec_text
from assay.store import Store
from assay.studies.compare import SCHEDULE_KEY, CompareRunner

DATA = Path(__file__).parent / "data"

# Each variant prints a value drawn from its own seeded stream: the k-th trial of a
# variant reads a counter file, so the readings do not depend on the interleaving and
# the outcome is the same on every machine. Both variants are N(10, 1).
COUNTED = """
[study]
name = "{name}"
[benchmark]
command = ["{py}", "-c", '''
import pathlib, random, sys
p = pathlib.Path(sys.argv[1])
k = int(p.read_text()) if p.exists() else 0
p.write_text(str(k + 1))
random.seed(1000 * k + int(sys.argv[2]))
print(f"v={{random.gauss(float(sys.argv[3]), 1.0):.6f}}")
''', "{{counter}}", "{{stream}}", "{{mu}}"]
[params]
counter = "x"
stream = 0
mu = 10.0
[[variant]]
name = "A"
params = {{ counter = "{tmp}/a.count", stream = 1 }}
[[variant]]
name = "B"
params = {{ counter = "{tmp}/b.count", stream = 2, mu = {mu_b} }}
[[pi]]
name = "v"
source = "regex"
pattern = 'v=([0-9.-]+)'
[stop]
max_rounds = {rounds}
"""


def _counted(write_study, py: str, tmp: Path, *, mu_b: float, rounds: int, name: str = "c"):  # type: ignore[no-untyped-def]
    text = COUNTED.format(py=py, tmp=tmp, mu_b=mu_b, rounds=rounds, name=name)
    return write_study(text, f"{name}.toml")


def _invoke(args: list[str]):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, ["compare", *args], catch_exceptions=False)


def test_quick_mode_decides_a_real_200ms_difference(tmp_path: Path, py: str) -> None:
    out = tmp_path / "r.json"
    res = _invoke(
        [
            "--store",
            str(tmp_path / "q.db"),
            "--no-overhead",
            "-q",
            "--max-time",
            "60",
            "--json",
            str(out),
            "--name",
            "slow",
            "--name",
            "fast",
            "--",
            py,
            "-c",
            "import time; time.sleep(0.22)",
            "--",
            py,
            "-c",
            "import time; time.sleep(0.02)",
        ]
    )
    assert res.exit_code == 0, res.output
    assert "decided: every adjacent pair" in res.output
    data = json.loads(out.read_text())
    assert data["decided"] is True and data["done"] is True
    (comp,) = data["comparisons"]
    assert comp["order"] == ["fast", "slow"]
    fast, slow = comp["variants"]
    assert slow["verdict"] in ("separated", "significant")
    # 200 ms more sleep: clearly slower, with a CI, even when a busy machine makes the
    # interpreter's start vary by hundreds of ms (a 40 ms difference then took > 60 s)
    assert slow["relative_to_best_low"] > 0
    assert slow["mean"] - fast["mean"] == pytest.approx(0.200, abs=0.06)
    # the always-valid rule may stop after 3 cycles (min_samples 10 applies only if set)
    assert fast["n_samples"] * fast["subsession_size"] >= 3


def test_identical_variants_stay_undecided_and_say_how_many_more_rounds(
    write_study,
    py: str,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    # 18 cycles: enough merged samples for Welch's estimate (the readings are fixed)
    path = _counted(write_study, py, tmp_path, mu_b=10.0, rounds=18)
    out = tmp_path / "r.json"
    res = _invoke([str(path), "--no-overhead", "-q", "--json", str(out), "--seed", "3"])
    assert res.exit_code == 5, res.output  # undecided: the budget ran out
    data = json.loads(out.read_text())
    assert data["done"] is True and data["decided"] is False
    assert data["reason"].startswith("budget spent: 18 rounds (max_rounds)")
    # the default rule: an always-valid e-value of 1/alpha (issue #17)
    assert "the sequential test asks for" in data["reason"]
    assert "e-value >= 100 needed" in data["reason"]
    assert "more rounds needed" in data["reason"]
    assert data["undecided"] == [list(data["comparisons"][0]["order"])]
    assert data["rounds_left"] > 100
    assert data["trials"]["total"] == 36
    (pair,) = data["comparisons"][0]["pairs"]
    assert 0.0 < pair["e_value"] < 100.0
    assert "undecided" in res.output
    # the rule before issue #17 stays selectable, from the command line as from the file
    looks_args = ["--sequential", "looks", "--json", str(out)]
    res = _invoke([str(path), "--no-overhead", "-q", "--seed", "3", *looks_args])
    assert res.exit_code == 5, res.output
    looks = json.loads(out.read_text())
    assert "Welch p <" in looks["reason"] and "Welch asks for" in looks["reason"]


def test_two_identical_commands_are_undecided_at_a_small_budget(tmp_path: Path, py: str) -> None:
    cmd = [py, "-c", "pass"]
    res = _invoke(
        [
            *("--store", str(tmp_path / "q.db"), "--no-overhead", "-q", "--max-rounds", "10"),
            *("--", *cmd, "--", *cmd),
        ]
    )
    assert res.exit_code == 5, res.output  # undecided: the budget ran out
    assert "budget spent: 10 rounds (max_rounds); undecided:" in res.output
    assert f"{cmd[-1]} #2" in res.output  # the same command twice: named apart


def test_interleaving_is_recorded_and_replays_from_the_seed(
    write_study,
    py: str,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    path = _counted(write_study, py, tmp_path, mu_b=10.0, rounds=6)
    spec = load_spec(path)
    res = CompareRunner(spec, spec.store_path(), seed=42, measure_overhead=False).run()
    assert res.seed == 42 and res.cycles == 6
    with Store(spec.store_path()) as st:
        sid = st.find_study("c")
        assert sid is not None
        trials = st.trials(sid[0])
        assert st.study_value(sid[0], SCHEDULE_KEY)["seed"] == 42
    got = [(t.setting["cycle"], t.setting["variant"]) for t in trials]
    assert got == interleaved_schedule(["A", "B"], cycles=6, seed=42)
    assert [t.seq for t in trials] == list(range(12)) and {t.run for t in trials} == {0}
    # every cycle holds each variant once; the order is random per cycle, not fixed
    orders = {tuple(v for c, v in got if c == k) for k in range(6)}
    assert orders == {("A", "B"), ("B", "A")}
    # the variant's params reached the command
    assert trials[0].setting["counter"].endswith(f"{trials[0].setting['variant'].lower()}.count")


def test_fixed_order(write_study, py: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = _counted(write_study, py, tmp_path, mu_b=10.0, rounds=3)
    spec = load_spec(path)
    CompareRunner(spec, spec.store_path(), fixed_order=True, measure_overhead=False).run()
    con = sqlite3.connect(spec.store_path())
    rows = [json.loads(r[0])["variant"] for r in con.execute("SELECT setting_json FROM trials")]
    assert rows == ["A", "B"] * 3


def test_resume_continues_the_schedule_without_repeating_trials(
    write_study,
    py: str,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    path = _counted(write_study, py, tmp_path, mu_b=10.0, rounds=4)
    spec = load_spec(path)
    first = CompareRunner(spec, spec.store_path(), seed=9, measure_overhead=False).run()
    assert first.trials_total == 8
    # a kill in the middle of a cycle: drop the last trial from the store
    con = sqlite3.connect(spec.store_path())
    con.execute("DELETE FROM readings WHERE trial_id = (SELECT MAX(id) FROM trials)")
    con.execute("DELETE FROM trials WHERE id = (SELECT MAX(id) FROM trials)")
    con.commit()
    con.close()
    spec7 = spec.model_copy(update={"stop": spec.stop.model_copy(update={"max_rounds": 7})})
    second = CompareRunner(spec7, spec.store_path(), measure_overhead=False).run()  # seed stored
    assert second.resumed_trials == 7 and second.trials_total == 14 and second.seed == 9
    con = sqlite3.connect(spec.store_path())
    rows = con.execute("SELECT seq, setting_json FROM trials ORDER BY seq").fetchall()
    assert [r[0] for r in rows] == list(range(14))
    got = [(json.loads(r[1])["cycle"], json.loads(r[1])["variant"]) for r in rows]
    assert got == interleaved_schedule(["A", "B"], cycles=7, seed=9)
    # each variant's counter shows how often it really ran: once per trial, no repeats
    # (the deleted trial ran once before and is run again)
    runs = int((tmp_path / "a.count").read_text()) + int((tmp_path / "b.count").read_text())
    assert runs == 15
    # a different seed on resume is refused, with the way out
    res = _invoke([str(path), "--seed", "10", "--no-overhead", "-q"])
    assert res.exit_code == 3 and "--fresh" in res.output


def test_study_file_decides_a_known_difference(write_study, py: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = _counted(write_study, py, tmp_path, mu_b=13.0, rounds=100)
    out = tmp_path / "r.csv"
    res = _invoke([str(path), "--no-overhead", "-q", "--seed", "1", "--csv", str(out)])
    assert res.exit_code == 0, res.output
    assert "decided" in res.output
    lines = out.read_text().splitlines()
    assert lines[0].startswith("study,pi,rank,variant")
    assert lines[1].split(",")[3] == "A" and lines[2].split(",")[3] == "B"
    assert lines[2].split(",")[-1] in ("separated", "significant")


def test_from_existing_results() -> None:
    res = _invoke(
        [
            "--from",
            "--pi",
            "wall_time",
            str(DATA / "hyperfine_sqlite_sync.json"),
            str(DATA / "assay_sqlite_sync_off.json"),
            "--json",
            "-",
        ]
    )
    # one pair is not decided from these files (5), and stdout holds only the JSON
    assert res.exit_code == 5, res.output
    data = json.loads(res.stdout)
    assert not data["decided"]
    (comp,) = data["comparisons"]
    assert len(comp["order"]) == 3
    assert "synchronous=FULL" in comp["order"][-1]
    assert comp["variants"][-1]["verdict"] == "separated"
    assert data["sources"] and data["store"] == ""


def test_from_needs_matching_units(tmp_path: Path) -> None:
    res = _invoke(
        ["--from", str(DATA / "assay_sqlite_sync_off.json"), str(DATA / "pyperf_sort.json")]
    )
    assert res.exit_code == 2
    assert "differ in unit" in res.output and "Traceback" not in res.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["python3", "-c", "pass"], "at least two commands"),
        (["--", "python3", "-c", "pass"], "at least two commands"),
        (["--pi", "nope", "--", "true", "--", "false"], "--pi 'nope': no such PI"),
        (["--name", "a", "--", "true", "--", "false"], "--name given 1 times"),
        (["--", "true", "--", "--", "false"], "empty command"),
        (["--from", "no-such-file.json", "x.json"], "no-such-file.json"),
    ],
)
def test_bad_input_is_one_clear_error(args: list[str], message: str) -> None:
    res = CliRunner().invoke(main, ["compare", *args])
    assert res.exit_code == 2, res.output
    assert message in res.output
    assert "Traceback" not in res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)
    assert res.output.count("error:") == 1


def test_study_without_variants_is_refused_and_run_refuses_variants(
    write_study,
    py: str,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    plain = write_study('[study]\nname = "p"\n[benchmark]\ncommand = ["true"]\n', "p.toml")
    res = CliRunner().invoke(main, ["compare", str(plain)])
    assert res.exit_code == 2 and "at least two [[variant]]" in res.output
    path = _counted(write_study, py, tmp_path, mu_b=10.0, rounds=2)
    res = CliRunner().invoke(main, ["run", str(path)])
    assert res.exit_code == 2 and "assay compare" in res.output


def test_variant_spec_validation() -> None:
    base = '[study]\nname = "s"\n[benchmark]\ncommand = ["echo", "{x}"]\n[params]\nx = 1\n'
    spec = parse_spec_text(
        base + '[[variant]]\nname = "a"\n[[variant]]\nname = "b"\nparams = {x = 2}\n'
        '[[variant]]\nname = "c"\ncommand = ["echo", "{y}"]\nparams = {y = 3}\nenv = {K = "v"}\n',
        "v.toml",
    )
    assert [spec.variant_params(v) for v in spec.variants] == [{"x": 1}, {"x": 2}, {"x": 1, "y": 3}]
    assert spec.stop.alpha == 0.01 and spec.stop.require_ci_width is False
    plain = parse_spec_text(base, "p.toml")
    assert plain.variants == [] and plain.measurement_hash() != spec.measurement_hash()
    bad = [
        ('[[variant]]\nname = "a"\n', "at least two"),
        ('[[variant]]\nname = "a"\n[[variant]]\nname = "a"\n', "repeated: a"),
        (
            '[[variant]]\nname = "a"\nparams = {xx = 1}\n[[variant]]\nname = "b"\n',
            "variant[0] ('a').params.xx: not a parameter",
        ),
        (
            '[[variant]]\nname = "a"\ncommand = ["e", "{z}"]\n[[variant]]\nname = "b"\n',
            "variant[0] ('a'): placeholder '{z}'",
        ),
        ('[[variant]]\nname = "a"\ncomand = ["x"]\n[[variant]]\nname = "b"\n', "comand"),
        ('[[variant]]\nname = ""\n[[variant]]\nname = "b"\n', "variant[0].name"),
    ]
    for extra, message in bad:
        with pytest.raises(SpecError) as e:
            parse_spec_text(base + extra, "bad.toml")
        assert "bad.toml" in str(e.value) and message in str(e.value), str(e.value)
    with pytest.raises(SpecError, match=r"stop\.alpha"):
        parse_spec_text(base + "[stop]\nalpha = 2\n", "bad.toml")


def test_a_resume_mid_cycle_neither_overruns_the_budget_nor_skips_a_decision(
    tmp_path: Path,
) -> None:
    """Kill campaign (issue #13): a study killed in the middle of a cycle ran that cycle
    and a new one in one batch on resume, so it skipped the decision after the
    unfinished cycle and, killed in its last cycle, measured one cycle past max_rounds
    (45 trials for a 14-cycle budget of 3 variants)."""
    store = tmp_path / "q.db"
    args = ["--store", str(store), "--no-overhead", "--no-monitor", "-q", "--max-rounds", "3"]
    args += ["--seed", "1", "--study", "mid", "--", "true", "--", "true"]
    res = _invoke(args)
    assert res.exit_code in (0, 5), res.output
    with contextlib.closing(sqlite3.connect(store)) as db, db:
        db.execute("PRAGMA foreign_keys=ON")
        (last,) = db.execute("SELECT id FROM trials ORDER BY seq DESC LIMIT 1").fetchone()
        db.execute("DELETE FROM readings WHERE trial_id = ?", (last,))
        db.execute("DELETE FROM trials WHERE id = ?", (last,))  # as if killed mid-cycle 2
    res = _invoke(["--resume", *args])  # (its session ended: without it, measured again)
    assert res.exit_code in (0, 5), res.output
    with contextlib.closing(sqlite3.connect(store)) as db:
        seqs = [s for (s,) in db.execute("SELECT seq FROM trials ORDER BY seq")]
    assert seqs == list(range(6))  # cycle 2 finished, no cycle 3


@pytest.mark.parametrize("rule", ["always-valid", "every-cycle"])
def test_the_always_valid_rule_paces_its_analyses_on_quick_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rule: str
) -> None:
    """Issue #17: an always-valid comparison may skip looks, so on commands much shorter
    than its analysis it analyses once the commands have run ANALYSIS_PACE times as long
    as an analysis takes, and still stops on its budget; the other rules look at every
    cycle."""
    import time

    import assay.studies.compare as compare_study

    real = compare_study.compare_trials
    calls: list[int] = []

    def slow(*args: object, **kwargs: object) -> object:
        calls.append(1)
        time.sleep(0.03)  # an analysis far longer than a cycle of `true`
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(compare_study, "compare_trials", slow)
    out = tmp_path / "c.json"
    res = _invoke(
        [
            *("--store", str(tmp_path / "q.db"), "--no-overhead", "--no-monitor", "-q"),
            *("--max-rounds", "30", "--sequential", rule, "--json", str(out)),
            *("--", "true", "--", "true"),
        ]
    )
    data = json.loads(out.read_text())
    if rule == "always-valid":
        assert res.exit_code == 5, res.output  # two identical commands: the budget ends it
        assert data["reason"].startswith("budget spent: 30 rounds (max_rounds)")
        assert data["trials"]["total"] == 60
        # cycles 1 and 2 (the pace starts from the second analysis), the last one, and
        # the result's own ranking; a cycle of `true` takes a few ms, the pace 120 ms
        assert len(calls) < 10
    else:
        # Pilot's rule at every cycle does not hold alpha over its looks: after each
        # 30 ms analysis the first `true` of a cycle runs cold, and an A/A comparison
        # can end "decided" (seen once in a full suite); either way it looked every cycle
        assert res.exit_code in (0, 5), res.output
        assert len(calls) >= data["trials"]["total"] // 2


def test_a_variant_that_never_starts_ends_the_comparison_after_five_cycles(
    tmp_path: Path,
) -> None:
    """Issue #35: a variant that could not launch ran 1,000 cycles of launch errors
    (28 s, exit 4); the comparison now stops once it failed its first 5 trials, with
    its error."""
    store = tmp_path / "q.db"
    res = _invoke(
        ["--store", str(store), "--no-overhead", "--no-monitor", "-q",
         "--", "true", "--", "no-such-command-here", "1"]
    )  # fmt: skip
    assert res.exit_code == 4, res.output
    assert "variant no-such-command-here 1 failed all of its 5 trials" in res.output
    assert "cannot start 'no-such-command-here'" in res.output
    with contextlib.closing(sqlite3.connect(store)) as db:
        (n,) = db.execute("SELECT COUNT(*) FROM trials").fetchone()
    assert n == 10  # 5 cycles of 2 variants


def test_options_after_one_string_commands_are_assays_and_in_argv_form_refused(
    tmp_path: Path,
) -> None:
    """Issue #35: ``-- 'sleep 0.01' -- 'sleep 0.012' --report r.html`` ran the second
    variant as ['sleep 0.012', '--report', 'r.html'] 1,000 times, with no report."""
    store = ["--store", str(tmp_path / "q.db"), "--no-overhead", "--no-monitor", "-q"]
    report = tmp_path / "r.html"
    res = _invoke(
        [*store, "-r", "3", "--", "true 1", "--", "true 2", "--report", str(report),
         "--json", str(tmp_path / "r.json")]
    )  # fmt: skip
    assert res.exit_code in (0, 5), res.output
    assert report.exists() and (tmp_path / "r.json").exists()
    (comp,) = json.loads((tmp_path / "r.json").read_text())["comparisons"]
    assert sorted(comp["order"]) == ["true 1", "true 2"]
    res = CliRunner().invoke(main, ["compare", *store, "--", "true", "--", "true", "--report", "x"])
    assert res.exit_code == 2
    assert "'--report' after '--' would be passed to the command" in res.output
    assert "-- 'true --report x'" in res.output  # the fix, for a program that takes it
    assert not (tmp_path / "x").exists()
