"""``assay show``: a stored study's result from its store alone, as its run reported it,
without adding a trial or a session or changing the store's bytes; ``--summary`` in
ELECT's formats."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from assay.cli import main
from assay.report.summary import number
from assay.stats.intervals import t_interval
from assay.store import Store

PY = sys.executable


def _invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _state(db: Path) -> tuple[int, int, str]:
    """Trials, sessions and a hash of the main database file's bytes."""
    with sqlite3.connect(db) as con:
        trials = con.execute("SELECT COUNT(*) FROM trials").fetchone()[0]
        sessions = con.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]
    con.close()
    return trials, sessions, hashlib.sha256(db.read_bytes()).hexdigest()


def _shown(db: Path, *args: str) -> tuple[Result, dict[str, Any]]:
    """``assay show DB ARGS --json -``, checked to change nothing in the store."""
    before = _state(db)
    res = _invoke("show", str(db), *args, "--json", "-")
    assert _state(db) == before  # no trial, no session, not one byte written
    return res, json.loads(res.stdout)


def _readings(db: Path, pi: str = "wall_time") -> list[float]:
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT value FROM readings WHERE pi = ? ORDER BY trial_id", (pi,))
        values = [float(r[0]) for r in rows]
    con.close()
    return values


# --- run -------------------------------------------------------------------------------


def test_show_reports_a_run_as_its_run_did_and_writes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    ran = _invoke("run", "--store", str(db), "-r", "3", "--no-overhead", "-q", "--", "true")
    assert ran.exit_code == 5, ran.output  # the budget ran out before the CI target
    ran_json = tmp_path / "run.json"
    again = _invoke("run", "--store", str(db), "-r", "3", "--no-overhead", "-q", "--resume",
                    "--json", str(ran_json), "--", "true")  # fmt: skip
    assert again.exit_code == 5
    trials, sessions, _ = _state(db)
    assert (trials, sessions) == (3, 2)  # a finished study resumed adds no trial

    shown = _invoke("show", str(db))
    assert shown.exit_code == 5, shown.output  # the same status as the run's
    assert shown.stdout == again.stdout  # the same report, line for line
    assert "wall_time" in shown.stdout and "budget spent: 3 rounds (max_rounds)" in shown.stdout

    res, doc = _shown(db)
    assert res.exit_code == 5
    want = json.loads(ran_json.read_text())
    for key in ("study", "store", "done", "reason", "pis", "trials", "failures", "resources"):
        assert doc[key] == want[key], key
    assert "wall_time" in res.stderr  # the report moved to stderr for the JSON


def test_summary_formats_follow_elect_by_the_number_of_rounds(tmp_path: Path) -> None:
    num = r"(-?\d+\.\d+)"
    shapes = {
        1: rf"Only one round: {num}",
        3: rf"Average: {num}, Min: {num}, Max: {num}",
        10: rf"Average: {num}; The 95% confidence interval: \({num}, {num}\)",
    }
    for rounds, shape in shapes.items():
        db = tmp_path / f"r{rounds}.db"
        ran = _invoke("run", "--store", str(db), "-r", str(rounds), "--no-overhead", "-q",
                      "--", "sleep", "0.05")  # fmt: skip
        assert ran.exit_code in (0, 5), ran.output
        before = _state(db)
        res = _invoke("show", str(db), "--summary")
        assert _state(db) == before
        lines = res.stdout.splitlines()
        assert re.fullmatch(r"\[Exp info\] study: quick sleep-0-05 \w+, kind: run, trials: \d+",
                            lines[0]), lines  # fmt: skip
        assert lines[1] == "wall_time (unit: s):"
        got = re.fullmatch(shape, lines[2])
        assert got, lines[2]
        titles = [
            "95%-percentile CPU Usage (%):",
            "95%-percentile RAM Usage (%):",
            "Total Disk I/O (GiB):",
            "Total Network traffic (GiB):",
        ]
        assert lines[3].startswith("[Resource usage] study: quick sleep-0-05")
        assert lines[4::2] == titles, lines
        for line in lines[5::2]:  # each resource line in one of the three shapes, or
            # none where no round had a value (CI, loaded: no trial's CPU share known)
            known = [*shapes.values(), "No round measured"]
            assert any(re.fullmatch(s, line) for s in known), line
        if rounds == 10:  # the Student-t interval of the stored readings
            ci = t_interval(_readings(db))
            assert list(got.groups()) == [number(ci.mean), number(ci.low), number(ci.high)]
            assert ci.low < ci.mean < ci.high


def test_a_reached_target_is_decided_again_from_the_stored_trials(tmp_path: Path) -> None:
    # exact readings (test_gate's benchmark), not timings: `sleep 0.02` under a loaded
    # suite once missed ±30% in 60 rounds
    import json

    from test_gate import BENCH

    db = tmp_path / "s.db"
    study = tmp_path / "r.toml"
    command = json.dumps([PY, "-c", BENCH, str(tmp_path / "n"), "1.0"])
    study.write_text(
        f'[study]\nname = "r"\n[benchmark]\ncommand = {command}\n[[pi]]\nname = "v"\n'
        "source = \"regex\"\npattern = 'value=([0-9.]+)'\n",
        encoding="utf-8",
    )
    ran = _invoke("run", str(study), "--store", str(db), "-r", "60", "--ci-width", "30%",
                  "--no-overhead", "-q")  # fmt: skip
    assert ran.exit_code == 0, ran.output  # confirmed: two analyses in a row met it
    res, doc = _shown(db)
    assert res.exit_code == 0, res.output  # the confirmation streak replayed, not "confirming"
    assert doc["done"] and doc["reason"].startswith("target reached")
    assert doc["trials"]["total"] < 60
    assert "not finished" not in res.stderr


def test_an_interrupted_run_is_shown_as_far_as_it_got(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    _invoke("run", "--store", str(db), "-r", "5", "--no-overhead", "-q", "--", "true")
    with Store(db) as store:  # a second session, killed after its first trial
        found = store.find_study(store.study_names()[0])
        assert found is not None
        store.start_session(found[0], {})
    with sqlite3.connect(db) as con:  # ... and the last two trials never ran
        con.execute("DELETE FROM readings WHERE trial_id IN (SELECT id FROM trials WHERE seq >= 3)")
        con.execute("DELETE FROM resource_samples WHERE trial_id IN "
                    "(SELECT id FROM trials WHERE seq >= 3)")  # fmt: skip
        con.execute("DELETE FROM trials WHERE seq >= 3")
    con.close()
    res, doc = _shown(db)
    assert res.exit_code == 5
    assert not doc["done"] and doc["trials"]["total"] == 3
    line = "not finished: its last session did not end (interrupted, or still running); "
    assert line + "3 of 5 planned trials (running)" in res.stderr


# --- choosing the study ----------------------------------------------------------------


def test_unknown_study_and_several_studies_exit_2_naming_them(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    for cmd in ("true", "false"):
        _invoke("run", "--store", str(db), "-r", "1", "--no-overhead", "-q", "--", cmd)
    several = _invoke("show", str(db))
    assert several.exit_code == 2
    assert "holds 2 studies" in several.output
    assert "'quick true " in several.output and "'quick false " in several.output
    unknown = _invoke("show", str(db), "nope")
    assert unknown.exit_code == 2
    assert "no study named 'nope'" in unknown.output and "'quick true " in unknown.output
    missing = _invoke("show", str(tmp_path / "none.db"))
    assert missing.exit_code == 2 and "no such results store" in missing.output
    assert not (tmp_path / "none.db").exists()


# --- the other kinds of study ------------------------------------------------------------


def _key_lines(text: str) -> list[str]:
    """The report without the lines that say how long things took."""
    return [ln for ln in text.splitlines() if "measured" not in ln and "overhead" not in ln]


def test_show_compare(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    out = tmp_path / "c.json"
    ran = _invoke("compare", "--store", str(db), "-r", "4", "--no-overhead", "-q",
                  "--json", str(out), "--", "true", "--", "sleep", "0.02")  # fmt: skip
    res, doc = _shown(db)
    assert res.exit_code == ran.exit_code
    want = json.loads(out.read_text())
    for key in ("study", "reason", "decided", "pi", "comparisons", "schedule", "trials"):
        assert doc[key] == want[key], key
    shown = _invoke("show", str(db))
    assert _key_lines(shown.stdout) == _key_lines(ran.stdout)
    summary = _invoke("show", str(db), "--summary").stdout.splitlines()
    heads = [ln.split(", ")[1] for ln in summary if ln.startswith("[Exp info]")]
    assert heads == ["variant: true", "variant: sleep 0.02"]
    shape = r"Average: \S+, Min: \S+, Max: \S+"  # 4 rounds of each variant
    blocks = [summary[i + 1] for i, ln in enumerate(summary) if ln == "wall_time (unit: s):"]
    assert len(blocks) == 2 and all(re.fullmatch(shape, b) for b in blocks), summary


ORDER = """
[study]
name = "order-show"
[benchmark]
command = ["{py}", "-c", "import random; print('v=%.3f' % random.uniform(10, 11))", "{{op}}"]
[params]
op = "a"
[[test]]
name = "a"
[[test]]
name = "b"
params = {{ op = "b" }}
[[pi]]
name = "v"
source = "regex"
pattern = 'v=([0-9.]+)'
[order]
runs = 2
repetitions = 2
seed = 3
"""


def _study_shown(
    tmp_path: Path, kind: str, text: str, *args: str
) -> tuple[Result, dict[str, Any], Result, dict[str, Any]]:
    """``assay KIND FILE ARGS --json``, then ``assay show`` of its store: both outputs
    and both JSON documents."""
    study = tmp_path / f"{kind}.toml"
    study.write_text(text.format(py=PY), encoding="utf-8")
    out = tmp_path / f"{kind}.json"
    ran = _invoke(kind, str(study), "-q", *args, "--json", str(out))
    db = tmp_path / f"{kind}.assay.db"
    res, doc = _shown(db)
    assert res.exit_code == ran.exit_code, (ran.output, res.output)
    return ran, json.loads(out.read_text()), _invoke("show", str(db)), doc


def test_show_order(tmp_path: Path) -> None:
    ran, want, shown, doc = _study_shown(tmp_path, "order", ORDER, "--no-overhead", "--no-monitor")
    assert ran.exit_code == 0, ran.output
    for key in ("study", "reason", "done", "tests", "verdict", "schedule", "trials_planned"):
        assert doc[key] == want[key], key
    assert _key_lines(shown.stdout) == _key_lines(ran.stdout)


SWEEP = """
[study]
name = "sweep-show"
[benchmark]
command = [
    "{py}", "-c", "import sys; print('y=%.3f' % (10 * int(sys.argv[1]) + len(sys.argv[2])))",
    "{{w}}", "{{c}}",
]
[[pi]]
name = "y"
source = "regex"
pattern = 'y=([0-9.]+)'
[sweep]
repetitions = 1
start = 0.5
step = 0.25
[sweep.params]
w = [1, 2, 3, 4]
c = ["x", "yy"]
"""


def test_show_sweep(tmp_path: Path) -> None:
    ran, want, shown, doc = _study_shown(tmp_path, "sweep", SWEEP, "--no-monitor")
    for key in ("study", "space", "params", "reason", "steps", "analysis", "summary"):
        assert doc[key] == want[key], key
    assert shown.stdout == ran.stdout


KNOBS = """
[study]
name = "knobs-show"
[benchmark]
command = [
    "{py}", "-c",
    "import sys,math;print('tps=%.3f'%(20*math.log(int(sys.argv[1]))+float(sys.argv[2])))",
    "{{a}}", "{{b}}",
]
[[pi]]
name = "tps"
direction = "higher"
source = "regex"
pattern = 'tps=([-0-9.]+)'
[[knob]]
name = "a"
type = "int"
min = 1
max = 100
default = 10
[[knob]]
name = "b"
type = "float"
min = 0
max = 1
default = 0.5
[knobs]
samples = 12
validation_samples = 10
trees = 20
top_k = 1
"""


def _assert_close(got: Any, want: Any, where: str = "") -> None:
    """``got == want``, floats within a relative 1e-9."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), where
        for k in want:
            _assert_close(got[k], want[k], f"{where}.{k}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            _assert_close(g, w, f"{where}[{i}]")
    elif isinstance(want, float):
        assert got == pytest.approx(want, rel=1e-9, nan_ok=True), where
    else:
        assert got == want, where


def test_show_knobs(tmp_path: Path) -> None:
    ran, want, shown, doc = _study_shown(tmp_path, "knobs", KNOBS, "--jobs", "1")
    assert ran.exit_code == 0, ran.output
    # no tuning asked: nothing volatile; the forests' sums may round differently on
    # another number of cores (show uses them all, the run was given --jobs 1)
    _assert_close(doc, want)
    assert shown.stdout == ran.stdout


@pytest.mark.parametrize("kind", ["sweep", "knobs"])
def test_summary_is_for_rounds_of_one_measurement(
    write_study,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    kind: str,
) -> None:
    text = (SWEEP if kind == "sweep" else KNOBS).format(py=PY)
    study = write_study(text, f"{kind}.toml")
    _invoke(kind, str(study), "-q", *(["--no-monitor"] if kind == "sweep" else ["--jobs", "1"]))
    res = _invoke("show", str(tmp_path / f"{kind}.assay.db"), "--summary")
    assert f"not {'knob' if kind == 'knobs' else kind} studies" in res.stdout


def test_a_run_says_what_its_session_cost_and_show_does_not(tmp_path: Path) -> None:
    """Issue #17: every result has this session's wall time against the time its
    commands ran (JSON ``session``; a line on stderr); a stored result shown again has
    no session of its own."""
    db = tmp_path / "s.db"
    ran = _invoke("run", "--store", str(db), "-r", "4", "--no-overhead", "--json", "-",
                  "--", "sleep", "0.01")  # fmt: skip
    session = json.loads(ran.stdout)["session"]
    assert 0.04 <= session["measured_s"] <= session["wall_s"]
    assert "this session: " in ran.stderr and "of which the commands ran" in ran.stderr
    res, doc = _shown(db)
    assert doc["session"] == {"wall_s": None, "measured_s": None}
    assert "this session" not in res.stderr


# --- the report kept in the store (issue #44: show in under a second) ------------------


def _kept(db: Path) -> dict[str, Any]:
    with sqlite3.connect(db) as con:
        row = con.execute("SELECT value_json FROM study_values WHERE key = 'shown'").fetchone()
    con.close()
    assert row is not None, "no report kept"
    value: dict[str, Any] = json.loads(row[0])
    return value


def _keep(db: Path, value: dict[str, Any] | None) -> None:
    with sqlite3.connect(db) as con:
        if value is None:
            con.execute("DELETE FROM study_values WHERE key = 'shown'")
        else:
            con.execute(
                "UPDATE study_values SET value_json = ? WHERE key = 'shown'", (json.dumps(value),)
            )
    con.close()


@pytest.mark.parametrize("kind", ["sweep", "knobs"])
def test_a_long_study_keeps_its_report_and_show_prints_it_as_if_analysed_again(
    tmp_path: Path, kind: str
) -> None:
    text, args = (SWEEP, ["--no-monitor"]) if kind == "sweep" else (KNOBS, ["--jobs", "1"])
    ran, _, shown, doc = _study_shown(tmp_path, kind, text, *args)
    db = tmp_path / f"{kind}.assay.db"
    kept = _kept(db)
    assert kept["status"] == ran.exit_code and kept["kind"] == kind
    assert "130" in kept["texts"]  # the width of a pipe's report
    # the kept report is what is printed: a marked one shows its mark ...
    _keep(db, {**kept, "texts": {"130": "\x1b[1mkept mark\x1b[0m\n"}})
    marked = _invoke("show", str(db))
    assert marked.stdout == "kept mark\n" and marked.exit_code == ran.exit_code
    # ... and without it, the study is analysed again to the same words and JSON
    _keep(db, None)
    _, doc_again = _shown(db)
    assert _invoke("show", str(db)).stdout == shown.stdout
    _assert_close(doc_again, doc)


def test_a_kept_report_holds_only_while_the_trials_and_sessions_do(tmp_path: Path) -> None:
    _study_shown(tmp_path, "sweep", SWEEP, "--no-monitor")
    db = tmp_path / "sweep.assay.db"
    kept = _kept(db)
    mark = {**kept, "texts": {"130": f"kept mark\n\x1b[2mstore: {db}\x1b[0m\n"}}
    _keep(db, mark)
    assert _invoke("show", str(db)).stdout == f"kept mark\nstore: {db}\n"
    # named otherwise, it names the store as the command does, in its report and JSON
    other = os.path.relpath(db)
    assert _invoke("show", other).stdout == f"kept mark\nstore: {other}\n"
    assert json.loads(_invoke("show", other, "--json", "-", "-q").stdout)["store"] == other
    # a copy holds the same trials: the same report, naming the copy
    shutil.copy(db, tmp_path / "copy.db")
    copied = _invoke("show", str(tmp_path / "copy.db")).stdout
    assert copied == f"kept mark\nstore: {tmp_path / 'copy.db'}\n"
    # a trial less, a session more, another version: analysed again
    with sqlite3.connect(db) as con:
        newest = con.execute("SELECT MAX(id) FROM trials").fetchone()[0]
        con.execute("DELETE FROM readings WHERE trial_id = ?", (newest,))
        con.execute("DELETE FROM trials WHERE id = ?", (newest,))
    con.close()
    assert "kept mark" not in _invoke("show", str(db)).stdout
    for changed in ({"format": 0}, {"fingerprint": ["0.0.0", *kept["fingerprint"][1:]]}):
        _keep(db, {**mark, **changed})
        assert "kept mark" not in _invoke("show", str(db)).stdout


def test_a_kept_report_prints_no_link_and_no_control_character(tmp_path: Path) -> None:
    """The store is data: a kept report replayed on a terminal keeps its colours but
    never forms a link or passes a control sequence."""
    from rich.console import Console

    from assay.cli.show import _replay
    from assay.report.safe import SafeConsole

    out = io.StringIO()
    console = SafeConsole(file=out, width=80, force_terminal=True, color_system="256")
    hostile = (
        "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\ \x1b[31mred\x1b[0m\x1b[2J\x07\n"
    )
    kept = {"json": "{}", "note": None, "status": 0}
    with pytest.raises(SystemExit) as ended:
        _replay(console, hostile, "{}", kept, {"json_out": None})
    assert ended.value.code == 0
    printed = out.getvalue()
    assert "evil.example" not in printed and "\x1b]8" not in printed
    assert "\x1b[2J" not in printed and "\x07" not in printed
    assert "click" in printed and "\x1b[31mred" in printed  # the colour stays
    assert isinstance(console, Console)


def test_a_store_that_cannot_be_written_keeps_no_report_and_says_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from assay.cli.show import remember_shown
    from assay.store import StoreError

    _study_shown(tmp_path, "sweep", SWEEP, "--no-monitor")
    db = tmp_path / "sweep.assay.db"
    _keep(db, None)

    def full(*_: Any) -> None:
        raise StoreError(f"{db}: cannot record a study value: database or disk is full")

    with monkeypatch.context() as m:
        m.setattr(Store, "set_study_value", full)
        remember_shown(db, "sweep-show")  # a cache: no error
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT COUNT(*) FROM study_values WHERE key='shown'").fetchone()[0] == 0
    con.close()
    remember_shown(tmp_path / "none.db", "sweep-show")  # no store: nothing made, no error
    assert not (tmp_path / "none.db").exists()


# --- the analysis kept in the store (issue #60: reports as fast as show) ---------------

_ANALYSES = {
    "sweep": ("sweep_points",),
    "knobs": ("knob_rankings", "knob_samples", "knob_validation"),
}


def _values(db: Path, keys: tuple[str, ...]) -> dict[str, Any]:
    with sqlite3.connect(db) as con:
        rows = con.execute(
            f"SELECT key, value_json FROM study_values WHERE key IN ({','.join('?' * len(keys))})",
            keys,
        ).fetchall()
    con.close()
    return {k: json.loads(v) for k, v in rows}


def _set_value(db: Path, key: str, value: Any) -> None:
    with sqlite3.connect(db) as con:
        if value is None:
            con.execute("DELETE FROM study_values WHERE key = ?", (key,))
        else:
            con.execute("UPDATE study_values SET value_json = ? WHERE key = ?",
                        (json.dumps(value), key))  # fmt: skip
    con.close()


def test_a_sweeps_report_reads_what_show_kept_to_the_page_of_its_analysis(
    tmp_path: Path,
) -> None:
    """``assay report`` of a sweep reads the result ``assay show`` kept for the same
    trials instead of fitting its models again (#60), to the very page the analysis
    gives; the kept JSON is data (escaped on the page), and one the page cannot read is
    analysed again."""
    from assay.studies.stored import report_result
    from assay.studies.sweep import KeptSweep

    _study_shown(tmp_path, "sweep", SWEEP, "--no-monitor")
    db = tmp_path / "sweep.assay.db"
    kept = _kept(db)

    def page(name: str, *args: str) -> str:
        out = tmp_path / name
        res = _invoke("report", str(db), "-o", str(out), *args)
        assert res.exit_code == 0, res.output
        return out.read_text(encoding="utf-8")

    assert isinstance(report_result(db)[1], KeptSweep)
    read = page("kept.html")
    # what is kept is what is read, as data: a marked summary shows, escaped
    doc = json.loads(kept["json"])
    doc["summary"]["text"] = "kept <script>alert(1)</script> mark"
    _keep(db, {**kept, "json": json.dumps(doc)})
    marked = page("marked.html")
    assert "kept &lt;script&gt;alert(1)&lt;/script&gt; mark" in marked
    assert "<script>" not in marked
    # a kept result the page cannot read: the page of the analysis again
    doc = json.loads(kept["json"])
    doc["analysis"]["important_points"] = [{"nonsense": 1}]
    _keep(db, {**kept, "json": json.dumps(doc)})
    assert page("unreadable.html") == read
    # the artifact pages (HTML, Markdown) read it too
    _keep(db, kept)
    artifacts = [page("kept-a.html", "--artifact"), page("kept-a.md", "--artifact")]
    # nothing kept: analysed again, to the very pages the kept result gave
    _keep(db, None)
    assert not isinstance(report_result(db)[1], KeptSweep)
    assert page("analysed.html") == read
    assert [page("analysed-a.html", "--artifact"), page("analysed-a.md", "--artifact")] == (
        artifacts
    )


def _plots_value(db: Path) -> dict[str, Any] | None:
    with sqlite3.connect(db) as con:
        row = con.execute(
            "SELECT value_json FROM study_values WHERE key = 'report plots'"
        ).fetchone()
    con.close()
    return None if row is None else dict(json.loads(row[0]))


def _set_plots(db: Path, value: dict[str, Any] | None) -> None:
    with sqlite3.connect(db) as con:
        con.execute("DELETE FROM study_values WHERE key = 'report plots'")
        if value is not None:
            con.execute(
                "INSERT INTO study_values(study_id, key, value_json) "
                "SELECT id, 'report plots', ? FROM studies",
                (json.dumps(value),),
            )
    con.close()


_POINT = {"param": "w", "kind": "knee", "value": 1}
_READABLE = {
    "steps": [{"step": 0, "n_measured": 8, "r2": [None, 0.5], "r2_main": [-2.0]}],
    "analysis": {
        "alpha": 0.05,
        "anova": {"terms": [{"term": "w", "p": 0.01}, {"term": "c", "p": None}]},
        "important_points": [
            {"param": "w", "kind": "knee", "value": 3, "fixed": None, "support": 0.7},
            {"param": "c", "kind": "turning point", "value": 2.5, "fixed": ["w", 1]},
        ],
    },
}


@pytest.mark.parametrize(
    ("change", "readable"),
    [
        ({}, True),
        ({"analysis": None}, True),
        ({"steps": None}, False),
        ({"steps": [["step", 0]]}, False),
        ({"steps": [{"step": "0", "n_measured": 8}]}, False),
        ({"steps": [{"step": 0, "n_measured": 8, "r2": ["x"]}]}, False),
        ({"analysis": []}, False),
        ({"analysis": {"alpha": "5%"}}, False),
        ({"analysis": {"anova": {"terms": [{"p": 0.1}]}}}, False),
        ({"analysis": {"anova": {"terms": "w"}}}, False),
        ({"analysis": {"important_points": [{"nonsense": 1}]}}, False),
        ({"analysis": {"important_points": [_POINT | {"value": None}]}}, False),
        ({"analysis": {"important_points": [_POINT | {"fixed": "w=1"}]}}, False),
    ],
)
def test_a_kept_sweep_json_is_read_only_in_the_shape_its_page_reads(
    change: dict[str, Any], readable: bool
) -> None:
    from assay.studies.sweep import kept_doc_readable

    assert kept_doc_readable({**_READABLE, **change}) is readable


def test_a_site_of_a_study_that_kept_its_plots_imports_no_matplotlib(tmp_path: Path) -> None:
    # as one page does (#60): the site drew nothing either, but imported Matplotlib first
    import subprocess

    _study_shown(tmp_path, "sweep", SWEEP, "--no-monitor")
    db = tmp_path / "sweep.assay.db"
    kept = _plots_value(db)
    assert kept is not None
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "assay", "report", str(db), "-o", f"{site}/"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert " matplotlib" not in done.stderr  # -X importtime: one line per module imported
    pages = [p for p in site.glob("*.html") if p.name != "index.html"]
    assert len(pages) == 1
    text = pages[0].read_text(encoding="utf-8")
    assert all(svg in text for _, _, svg in kept["plots"])


@pytest.mark.parametrize("kind", ["sweep", "knobs"])
def test_a_report_inlines_the_plots_the_study_kept_and_draws_them_when_they_do_not_hold(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sweep or knob study keeps its report's plots at its end (drawing them was most
    of a report's time, #60); ``assay report`` inlines them, to the very page drawing
    them gives, and draws them again when they were kept for other trials, are not
    well formed, or hold anything a plot's SVG does not (the store is data)."""
    import assay.report.html as html_mod

    text, args = (SWEEP, ["--no-monitor"]) if kind == "sweep" else (KNOBS, ["--jobs", "1"])
    _study_shown(tmp_path, kind, text, *args)
    db = tmp_path / f"{kind}.assay.db"
    kept = _plots_value(db)
    assert kept is not None and kept["kind"] == kind and len(kept["plots"]) >= 2
    drawn: list[str] = []
    draw = html_mod.study_plots

    def counted(*a: Any, **k: Any) -> Any:
        drawn.append("x")
        return draw(*a, **k)

    monkeypatch.setattr(html_mod, "study_plots", counted)

    def page(name: str) -> str:
        out = tmp_path / name
        res = _invoke("report", str(db), "-o", str(out))
        assert res.exit_code == 0, res.output
        return out.read_text(encoding="utf-8")

    read = page("kept.html")
    assert drawn == []  # inlined, not drawn
    assert all(svg in read for _, _, svg in kept["plots"])
    _set_plots(db, None)
    assert page("drawn.html") == read and drawn == ["x"]
    plots = kept["plots"]
    planted = [
        "<script>alert(1)</script>",
        '<a href="https://evil.example/"><text>click</text></a>',
        "<style>body{display:none}</style>",
        '<image xlink:href="https://evil.example/t.png" width="1" height="1"/>',
        '<path d="M 0 0" style="fill: url(https://evil.example/p)"/>',
        '<path d="M 0 0" onload="alert(1)"/>',
    ]
    for i, bad in enumerate(
        [
            {**kept, "fingerprint": ["0", 1, 2, 3, True]},  # other trials
            {**kept, "plots": [[1, 2]]},  # not well formed
            *(
                {**kept, "plots": [[n, t, s.replace("</svg>", f"{m}</svg>")] for n, t, s in plots]}
                for m in planted
            ),
        ]
    ):
        _set_plots(db, bad)
        got = page(f"bad{i}.html")
        assert got == read, bad
        assert "evil.example" not in got and "alert(1)" not in got
    assert len(drawn) == 1 + 2 + len(planted)
    # show and the study's own --report keep them again, for these trials
    _set_plots(db, None)
    from assay.cli.show import remember_shown

    remember_shown(db, f"{kind}-show")
    assert _plots_value(db) == kept
    # a plot that cannot be drawn at the study's end: none kept, the end unharmed

    def broken(*_: Any, **__: Any) -> Any:
        raise RuntimeError("a layout Matplotlib cannot solve")

    _set_plots(db, None)
    monkeypatch.setattr(html_mod, "study_plots", broken)
    remember_shown(db, f"{kind}-show")
    assert _plots_value(db) is None and _kept(db)["kind"] == kind


@pytest.mark.parametrize("kind", ["sweep", "knobs"])
def test_a_study_keeps_its_analysis_and_show_reads_it_rather_than_computing_it_again(
    tmp_path: Path, kind: str
) -> None:
    """A sweep's important points and a knob study's forests and designs are kept at the
    end of its run under a digest of what they came from; show (and report) read them,
    and compute them again (to the same result) when they are gone, were made from
    something else, or do not parse."""
    text, args = (SWEEP, ["--no-monitor"]) if kind == "sweep" else (KNOBS, ["--jobs", "1"])
    _, _, _, doc = _study_shown(tmp_path, kind, text, *args)
    db = tmp_path / f"{kind}.assay.db"
    _keep(db, None)  # the kept report aside: the analysis is built again
    kept = _values(db, _ANALYSES[kind])
    assert set(kept) == set(_ANALYSES[kind])
    assert all(set(v) == {"made_from", "value"} for v in kept.values())
    # what is kept is what is read: a marked value shows its mark
    key = _ANALYSES[kind][0]
    if kind == "sweep":
        mark = [[["w"], "w", "knee", 3.0, 9.0, 99.0, None, None, 0.5, 50]]
    else:
        mark = json.loads(json.dumps(kept[key]["value"]))
        mark[0]["top"], mark[0]["seed"] = ["b"], 12345
    _set_value(db, key, {**kept[key], "value": mark})
    _, marked = _shown(db)
    if kind == "sweep":
        assert marked["analysis"]["important_points"][0]["value"] == 3
    else:
        assert marked["rankings"][0]["seed"] == 12345
    # made from something else, not parseable, or gone: the analysis of the trials again
    for value in (
        {**kept[key], "value": mark, "made_from": "0" * 64},
        {**kept[key], "value": [["nonsense"]]},
        None,
    ):
        for k, v in kept.items():
            _set_value(db, k, v)
        _set_value(db, key, value)
        _, again = _shown(db)
        _assert_close(again, doc)
    # a store opened read-only (show's) keeps nothing new
    assert key not in _values(db, (key,))


def test_kept_or_made_reads_a_value_made_from_the_same_things_and_keeps_a_new_one(
    tmp_path: Path,
) -> None:
    from assay.studies.kept import kept_or_made

    made: list[int] = []

    def make() -> int:
        made.append(1)
        return 41 + len(made)

    with Store(tmp_path / "s.db") as db:
        sid = db.open_study("s", "h", {})
        both = (db, sid)
        assert kept_or_made(both, "v", [1], make, int, int) == 42
        assert kept_or_made(both, "v", [1], make, int, int) == 42  # read, not made
        assert kept_or_made(both, "v", [2], make, int, int) == 43  # other inputs: made
        assert db.study_value(sid, "v")["value"] == 43  # replacing the one before
        assert kept_or_made(both, "v", [1], make, int, int) == 44
    with Store(tmp_path / "s.db", read_only=True) as db:
        assert kept_or_made((db, sid), "v", [9], make, int, int) == 45
        assert db.study_value(sid, "v")["value"] == 44  # nothing written
    assert len(made) == 4


def test_a_kept_report_that_names_no_store_is_replayed_under_any_name(tmp_path: Path) -> None:
    """A knob study's report names its store only in its JSON: shown as another path,
    the kept report is still printed (it was analysed again, seconds of forests)."""
    _study_shown(tmp_path, "knobs", KNOBS, "--jobs", "1")
    db = tmp_path / "knobs.assay.db"
    kept = _kept(db)
    assert not any(str(db.name) in t for t in kept["texts"].values())
    _keep(db, {**kept, "texts": {"130": "kept mark\n"}})
    other = os.path.relpath(db)
    assert _invoke("show", other).stdout == "kept mark\n"
    assert json.loads(_invoke("show", other, "--json", "-", "-q").stdout)["store"] == other
