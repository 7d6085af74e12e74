"""End-to-end: ``assay order`` with real commands, the store, kill-and-resume, Ctrl-C,
exports, and ``--from`` on good and bad CSVs."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assay.cli import main
from assay.importers.order import OrderDataError, read_trials_csv
from assay.spec import SpecError, parse_spec_text
from assay.store import study_file
from assay.studies.order import SCHEDULE_KEY, OrderPlan

DATA = Path(__file__).parent / "data"

# Each test remembers which test ran last (a state file) and counts its own trials, so
# its readings are a fixed function of (its trial count, its predecessor): `target`
# reads 3 lower right after `warm` (a cache-warming predecessor), the others never
# depend on the order. The outcome is the same on every machine.
PREDECESSOR = """
[study]
name = "{name}"
[benchmark]
command = ["{py}", "-c", '''
import pathlib, sys
state, me = pathlib.Path(sys.argv[1]), sys.argv[2]
last = state.read_text() if state.exists() else ""
state.write_text(me)
count = pathlib.Path(sys.argv[1] + "." + me)
k = int(count.read_text()) if count.exists() else 0
count.write_text(str(k + 1))
v = 10.0 + (k * 7919 % 13) / 100
if me == "target" and last == "warm":
    v -= 3.0
print("v=%.4f" % v)
''', "{tmp}/state", "{{op}}"]
[params]
op = "other"
[[test]]
name = "warm"
params = {{ op = "warm" }}
[[test]]
name = "target"
params = {{ op = "target" }}
[[test]]
name = "other"
[[pi]]
name = "v"
source = "regex"
pattern = 'v=([0-9.]+)'
[order]
runs = 5
repetitions = 4
seed = {seed}
baseline = "cycled"
"""
# 5 runs of each kind: the decision compares run means, and 5 against 5 is the fewest
# whose Kruskal-Wallis p can go below the Bonferroni threshold 0.05/3


def _study(write_study, py: str, tmp: Path, *, seed: int = 1, name: str = "pred"):  # type: ignore[no-untyped-def]
    return write_study(PREDECESSOR.format(py=py, tmp=tmp, seed=seed, name=name), f"{name}.toml")


def _invoke(args: list[str]):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, ["order", *args], catch_exceptions=False)


# --- the study file --------------------------------------------------------------------


def _spec(body: str) -> str:
    return (
        '[study]\nname = "s"\n[benchmark]\ncommand = ["echo", "{op}"]\n[params]\nop = "x"\n' + body
    )


def test_spec_reads_tests_and_order_section() -> None:
    spec = parse_spec_text(
        _spec(
            '[[test]]\nname = "a"\nparams = { op = "a" }\n[[test]]\nname = "b"\n'
            '[order]\nruns = 2\nrepetitions = 4\nseed = 3\nbaseline = "cycled"\n'
        ),
        "o.toml",
    )
    assert [t.name for t in spec.tests] == ["a", "b"]
    assert spec.order is not None and spec.order.runs == 2 and spec.order.seed == 3
    base = parse_spec_text(_spec('[[test]]\nname = "a"\n[[test]]\nname = "b"\n'), "o.toml")
    assert base.measurement_hash() != spec.measurement_hash()  # the tests' params differ


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('[[test]]\nname = "a"\n', "o.toml: invalid study file:\n  test: an order experiment"),
        ("[order]\nruns = 2\n", "needs at least two [[test]]"),
        ('[[test]]\nname = "a"\n[[test]]\nname = "a"\n', "test: names must be unique"),
        (
            '[[test]]\nname = "a"\nparams = { opp = 1 }\n[[test]]\nname = "b"\n',
            "test[0] ('a').params.opp: not a parameter",
        ),
        (
            '[[test]]\nname = "a"\n[[test]]\nname = "b"\n[order]\nruns = 0\n',
            "order.runs: Input should be greater than or equal to 1 (got 0)",
        ),
        (
            '[[test]]\nname = "a"\n[[test]]\nname = "b"\n[order]\nbaseline = "x"\n',
            "order.baseline: Input should be 'blocked' or 'cycled'",
        ),
        (
            '[[test]]\nname = "a"\n[[test]]\nname = "b"\n[[variant]]\nname = "v"\n'
            '[[variant]]\nname = "w"\n',
            "either [[variant]]s or [[test]]s",
        ),
    ],
)
def test_spec_errors_name_the_file_and_field(body: str, message: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_spec_text(_spec(body), "o.toml")
    assert message in str(info.value)
    assert str(info.value).startswith("o.toml: invalid study file:")


def test_reserved_param_names_are_refused() -> None:
    text = (
        '[study]\nname = "s"\n[benchmark]\ncommand = ["echo", "{test}"]\n[params]\ntest = "x"\n'
        '[[test]]\nname = "a"\n[[test]]\nname = "b"\n'
    )
    with pytest.raises(SpecError, match="params: test is reserved"):
        parse_spec_text(text, "o.toml")


def test_run_and_compare_point_to_assay_order(write_study) -> None:  # type: ignore[no-untyped-def]
    p = write_study(_spec('[[test]]\nname = "a"\n[[test]]\nname = "b"\n'), "o.toml")
    res = CliRunner().invoke(main, ["run", str(p)])
    assert res.exit_code == 2 and "assay order" in res.output


# --- running ---------------------------------------------------------------------------


def test_order_flags_the_test_with_a_cache_warming_predecessor(
    write_study, py: str, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    study = _study(write_study, py, tmp_path)
    out = tmp_path / "r.json"
    res = _invoke(
        [
            str(study),
            "--no-overhead",
            "--no-monitor",
            "-q",
            "--json",
            str(out),
            "--csv",
            str(tmp_path / "r.csv"),
            "--trials-csv",
            str(tmp_path / "trials.csv"),
            "--plot",
            str(tmp_path / "o.svg"),
        ]
    )
    assert res.exit_code == 0, res.output
    assert "order matters for test target (Kruskal-Wallis p = " in res.output
    assert "pooled trials (not used for the decision)" in res.output
    data = json.loads(out.read_text())
    assert data["flagged"] == ["target"] and data["order_matters"] is True
    assert data["pooled_flagged"] == ["target"] and data["decision"] == "run means"
    assert data["trials"]["total"] == 5 * 4 * 6 == data["trials_planned"]
    assert data["schedule"] == {
        "tests": ["warm", "target", "other"],
        "fixed_runs": 5,
        "random_runs": 5,
        "repetitions": 4,
        "seed": 1,
        "baseline": "cycled",
    }
    target = next(t for t in data["tests"] if t["test"] == "target")
    assert target["median_fixed"] < 7.2 < 9.9 < target["median_random"]
    assert target["delta_percent"] < -10
    assert target["p_value"] < data["threshold"] == pytest.approx(0.05 / 3)
    assert target["p_value"] == target["run_kruskal_p"] and target["runs_fixed"] == 5
    assert target["pooled_p"] == target["kruskal_p"] < target["p_value"]  # trials: n = 20
    rows = (tmp_path / "r.csv").read_text().splitlines()
    assert rows[0].startswith("study,pi,unit,test,n_fixed") and len(rows) == 4
    assert (tmp_path / "o.svg").read_text().lstrip().startswith("<?xml")

    # the store: every trial with its run, position, test and kind of order
    with contextlib.closing(sqlite3.connect(tmp_path / "pred.assay.db")) as db:
        got = db.execute("SELECT run, seq, setting_json FROM trials ORDER BY run, seq").fetchall()
    plan = OrderPlan(("warm", "target", "other"), 5, 5, 4, 1, "cycled")
    want = [(t.run, t.position, t.test, t.kind) for t in plan.flat()]
    assert [(r, s, json.loads(j)["test"], json.loads(j)["order"]) for r, s, j in got] == want

    # offline: the exported trials give the same analysis
    again = _invoke(["--from", str(tmp_path / "trials.csv"), "--json", str(tmp_path / "f.json")])
    assert again.exit_code == 0, again.output
    offline = json.loads((tmp_path / "f.json").read_text())
    assert offline["flagged"] == ["target"]
    for a, b in zip(offline["tests"], data["tests"], strict=True):
        assert a["kruskal_p"] == pytest.approx(b["kruskal_p"])
        assert a["median_random_low"] == pytest.approx(b["median_random_low"])

    # running it again resumes a finished schedule: nothing new runs
    third = _invoke([str(study), "--no-overhead", "--no-monitor", "-q"])
    assert third.exit_code == 0 and "120 resumed from the store" in third.output


def test_resume_refuses_another_seed_and_extends_runs(write_study, py: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    study = _study(write_study, py, tmp_path, name="ext")
    args = [str(study), "--no-overhead", "--no-monitor", "-q"]
    assert _invoke([*args, "--runs", "1", "--repetitions", "1"]).exit_code == 0
    clash = CliRunner().invoke(main, ["order", *args, "--runs", "1", "--seed", "5"])
    assert clash.exit_code == 3 and "was started with seed 1" in clash.output
    more = _invoke([*args, "--runs", "2", "--repetitions", "1", "--json", str(tmp_path / "x.json")])
    assert more.exit_code == 0, more.output
    data = json.loads((tmp_path / "x.json").read_text())
    assert data["trials"]["total"] == 12 and data["trials"]["resumed"] == 6
    with contextlib.closing(sqlite3.connect(tmp_path / "ext.assay.db")) as db:
        (value,) = db.execute(
            "SELECT value_json FROM study_values WHERE key = ?", (SCHEDULE_KEY,)
        ).fetchone()
    assert json.loads(value)["fixed_runs"] == 2


def test_bad_plot_name_and_pi_are_input_errors(write_study, py: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    study = _study(write_study, py, tmp_path)
    res = CliRunner().invoke(main, ["order", str(study), "--plot", "x.pdf"])
    assert res.exit_code == 2 and "expected a file name ending in .png or .svg" in res.output
    res = CliRunner().invoke(main, ["order", str(study), "--pi", "nope"])
    assert res.exit_code == 2 and "--pi 'nope': no such PI" in res.output


# --- kill and resume -------------------------------------------------------------------

# The benchmark counts the trials committed to the store: that is its own index in the
# schedule when the runner is correct, and its reading is a fixed function of it, so a
# trial lost, run twice or stored in the wrong slot shows up as a wrong reading.
KILL_BENCH = """
import contextlib, os, sqlite3, sys, time
store, pid_file, journal = sys.argv[1], sys.argv[2], sys.argv[3]
with open(pid_file + ".tmp", "w") as f:
    f.write(str(os.getpid()))
os.replace(pid_file + ".tmp", pid_file)
db = sqlite3.connect(store, timeout=30)
n = db.execute("SELECT COUNT(*) FROM trials").fetchone()[0]
db.close()
# and those waiting in the study's journal (Store.queue_trial), a line each
with contextlib.suppress(FileNotFoundError), open(journal, "rb") as f:
    n += f.read().count(b"\\n")
time.sleep(0.02)
print("v=%.4f" % (10 + n * 7919 % 101 / 100))
"""

KILL_JOURNAL = study_file("k.assay.db", "kill", ".pending").name
KILL_STUDY = """
[study]
name = "kill"
store = "k.assay.db"
[benchmark]
command = ["{py}", "bench.py", "k.assay.db", "bench.pid", "{journal}", "{{op}}"]
cwd = "."
[params]
op = "a"
[[test]]
name = "a"
[[test]]
name = "b"
params = {{ op = "b" }}
[[test]]
name = "c"
params = {{ op = "c" }}
[[pi]]
name = "v"
source = "regex"
pattern = 'v=([0-9.]+)'
[order]
runs = 2
repetitions = 2
"""


def _assay_order(directory: Path, *extra: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "assay.cli",
            "order",
            "study.toml",
            "-q",
            "--no-overhead",
            "--no-monitor",
            *extra,
        ],
        cwd=directory,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
        # a shell's background job ignores SIGINT and its children inherit that: give
        # assay the disposition a terminal gives it
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _bench_pid(directory: Path) -> int | None:
    try:
        return int((directory / "bench.pid").read_text())
    except (OSError, ValueError):
        return None


def _wait_for_benchmark(proc: subprocess.Popen[bytes], directory: Path, k: int) -> bool:
    """Wait until the k-th benchmark of this session started; False if assay ended first."""
    seen: list[int] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        pid = _bench_pid(directory)
        if pid is not None and pid not in seen:
            seen.append(pid)
        if len(seen) >= k:
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.002)
    raise TimeoutError("no benchmark started")


def _stored(directory: Path) -> list[tuple[int, int, str, str, float]]:
    with contextlib.closing(sqlite3.connect(directory / "k.assay.db", timeout=30)) as db:
        rows = db.execute(
            "SELECT t.run, t.seq, t.setting_json, r.value FROM trials t JOIN readings r"
            " ON r.trial_id = t.id ORDER BY t.run, t.seq"
        ).fetchall()
    return [
        (int(r), int(s), json.loads(j)["test"], json.loads(j)["order"], float(v))
        for r, s, j, v in rows
    ]


def test_sigkill_then_resume_loses_and_repeats_nothing(tmp_path: Path) -> None:
    (tmp_path / "bench.py").write_text(KILL_BENCH)
    (tmp_path / "study.toml").write_text(KILL_STUDY.format(py=sys.executable, journal=KILL_JOURNAL))
    rng = random.Random(4)
    kills = 0
    seen: list[tuple[int, int, str, str, float]] = []
    for _ in range(3):
        proc = _assay_order(tmp_path)
        if _wait_for_benchmark(proc, tmp_path, rng.randint(1, 5)):
            time.sleep(rng.uniform(0, 0.05))  # mid-trial, or just after it, at random
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait(timeout=60)
        assert proc.stderr is not None
        proc.stderr.close()
        stored = _stored(tmp_path)
        assert stored[: len(seen)] == seen  # what was committed stays, unchanged
        seen = stored
    assert kills >= 2
    done = _assay_order(tmp_path, "--json", "result.json")
    _, err = done.communicate(timeout=120)
    assert done.returncode == 0, err.decode()
    result = json.loads((tmp_path / "result.json").read_text())
    plan = OrderPlan(("a", "b", "c"), 2, 2, 2, result["schedule"]["seed"], "blocked")
    want = [(t.run, t.position, t.test, t.kind) for t in plan.flat()]
    final = _stored(tmp_path)
    assert [row[:4] for row in final] == want  # the same schedule, every slot once
    assert [row[4] for row in final] == [10 + i * 7919 % 101 / 100 for i in range(len(want))]
    assert result["trials"]["total"] == len(want) == 24


def test_ctrl_c_stops_cleanly_and_resumes(tmp_path: Path) -> None:
    (tmp_path / "bench.py").write_text(KILL_BENCH)
    (tmp_path / "study.toml").write_text(KILL_STUDY.format(py=sys.executable, journal=KILL_JOURNAL))
    proc = _assay_order(tmp_path)
    assert _wait_for_benchmark(proc, tmp_path, 3)
    os.killpg(proc.pid, signal.SIGINT)  # a terminal's Ctrl-C reaches assay's process group
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err.decode()
    assert "interrupted." in err.decode() and "resume the same schedule" in err.decode()
    kept = len(_stored(tmp_path))
    assert kept >= 2
    done = _assay_order(tmp_path)
    _, err = done.communicate(timeout=120)
    assert done.returncode == 0, err.decode()
    assert len(_stored(tmp_path)) == 24


# --- --from ------------------------------------------------------------------------------


def test_from_csv_fixture_run_means_find_the_known_effect(tmp_path: Path) -> None:
    """tests/data/order_trials.csv: a real schedule (seed 7, cycled a, c, b, 5 runs of
    each kind, 5 repetitions) with test c 30% faster right after a.  In random orders
    about a third of c's trials follow a: the run medians of random-order runs mostly miss
    them (p = 0.076, not decided before #37), the run means do not (p = 0.009, the
    floor of 5 runs a side: every fixed-order run apart)."""
    res = _invoke(
        ["--from", str(DATA / "order_trials.csv"), "--csv", "-", "--plot", str(tmp_path / "p.png")]
    )
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())  # the report wraps its long lines
    assert (
        "order matters for test c (Kruskal-Wallis p = 0.009 on run means; Bonferroni "
        "threshold 0.05/3 = 0.017)" in text
    )
    assert (
        "pooled trials (not used for the decision): Kruskal-Wallis on every trial would flag "
        "c p = 0.00071" in text
    )
    assert "one value per run (the mean of its trials of value)" in text
    assert "from " in res.output and "150 trials" in res.output
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


BAD_CSVS = [
    ("test,order,run,value\na,fixed,1,2.0\n", "missing column 'position'"),
    ("test,order,run,position,value\na,fixed,1,0,fast\n", "line 2: column 'value': expected"),
    ("test,order,run,position,value\na,sorted,1,0,1.0\n", "line 2: column 'order': expected"),
    ("test,order,run,position,value\na,fixed,1,-1,1.0\n", "line 2: column 'position'"),
    ("test,order,run,position,value\na,fixed,1,0,1.0\na,random,1,1,1.0\n", "run '1' is fixed"),
    ("test,order,run,position,value\na,fixed,1,0,1.0\na,fixed,1,0,2.0\n", "already has a trial"),
    ("test,order,run,position,value\na,fixed,1,0,1.0\n", "no random-order trials"),
    ("test,order,run,position,value\na,fixed,1,0\n", "line 2: expected 5 fields"),
    ("", "empty file"),
    ("test,order,run,position,value\n", "no trials after the header"),
    ("test,order,run,position,value\na,fixed,1,0,nan\n", "column 'value': expected a finite"),
]


@pytest.mark.parametrize(("text", "message"), BAD_CSVS)
def test_from_bad_csv_is_one_clear_error_exit_2(tmp_path: Path, text: str, message: str) -> None:
    p = tmp_path / "trials.csv"
    p.write_text(text)
    res = CliRunner().invoke(main, ["order", "--from", str(p)])
    assert res.exit_code == 2
    assert res.output.startswith(f"error: {p}: ")
    assert message in res.output
    assert "Traceback" not in res.output


def test_from_refuses_run_options(tmp_path: Path) -> None:
    res = CliRunner().invoke(
        main, ["order", "--from", str(DATA / "order_trials.csv"), "--runs", "3"]
    )
    assert res.exit_code == 2 and "--runs: not used with --from" in res.output


def test_from_missing_file(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["order", "--from", str(tmp_path / "nope.csv")])
    assert res.exit_code == 2 and "nope.csv: no such file" in res.output


VALID = "test,order,run,position,value\na,fixed,r1,0,1.5\nb,fixed,r1,1,2.5\na,random,r2,0,1.7\n"


@st.composite
def mangled_csv(draw: st.DrawFn) -> str:
    """A valid file with random edits, or arbitrary text."""
    if draw(st.booleans()):
        return draw(st.text(max_size=200))
    lines = VALID.splitlines()
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(lines) - 1))
        fields = lines[i].split(",")
        j = draw(st.integers(0, len(fields) - 1))
        choice = draw(st.integers(0, 3))
        if choice == 0:
            fields[j] = draw(st.text(max_size=8))
        elif choice == 1:
            del fields[j]
        elif choice == 2:
            fields.insert(j, draw(st.sampled_from(["", "x", "1e999", "-0", '"', "\x00"])))
        else:
            lines.insert(i, lines[i])
        lines[i] = ",".join(fields)
    return "\n".join(lines) + draw(st.sampled_from(["", "\n", "\r\n"]))


@given(text=mangled_csv())
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_reader_either_reads_or_raises_one_clear_error(tmp_path_factory, text: str) -> None:  # type: ignore[no-untyped-def]
    p = tmp_path_factory.mktemp("csv") / "t.csv"
    p.write_text(text, encoding="utf-8")
    try:
        table = read_trials_csv(p)
    except OrderDataError as exc:
        assert str(exc).startswith(f"{p}: ")
        assert "\n" not in str(exc)
        return
    assert list(table.columns) == ["test", "order", "run", "position", "value"]
    assert set(table["order"]) == {"fixed", "random"}
    assert (table["position"] >= 0).all()
    assert table["value"].map(lambda v: v == v and abs(v) != float("inf")).all()
    assert not table.duplicated(["run", "position", "test"]).any()


def test_an_order_json_is_read_back_by_order_from_with_the_same_analysis(
    write_study, py: str, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """#40: Assay's own order --json was not read back ("not a readable CSV file"); its
    trials (``samples``, schema 1) now are, and give the study's own analysis."""
    study = _study(write_study, py, tmp_path, name="round")
    out = tmp_path / "r.json"
    ran = _invoke([str(study), "--no-overhead", "--no-monitor", "-q", "--json", str(out)])
    assert ran.exit_code == 0, ran.output
    back = _invoke(["--from", str(out), "--json", "-", "-q"])
    assert back.exit_code == 0, back.output
    first, again = json.loads(out.read_text()), json.loads(back.stdout)
    assert again["verdict"] == first["verdict"] and again["order_matters"]
    # the PI as the study named it (a CSV's is "value")
    assert [again[k] for k in ("pi", "unit", "direction")] == [
        first[k] for k in ("pi", "unit", "direction")
    ]
    assert [(t["test"], t["p_value"]) for t in again["tests"]] == [
        (t["test"], t["p_value"]) for t in first["tests"]
    ]
    # a result of another design, and one from before the trials were kept, are refused
    doc = {**first, "kind": "compare"}
    (tmp_path / "c.json").write_text(json.dumps(doc))
    refused = _invoke(["--from", str(tmp_path / "c.json")])
    assert refused.exit_code == 2 and "kind 'order'" in refused.output
    old = {k: v for k, v in first.items() if k != "samples"}
    (tmp_path / "old.json").write_text(json.dumps(old))
    refused = _invoke(["--from", str(tmp_path / "old.json")])
    assert refused.exit_code == 2 and "no 'samples' list" in refused.output
