"""``assay ls`` and ``assay export`` on stores made by running real studies through the
command line: what is listed, what is exported, and that reading changes nothing."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from click.testing import CliRunner, Result

from assay.cli import main
from assay.spec import load_spec
from assay.store import Store, TrialRecord
from assay.studies.catalog import study_kind

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
HOSTILE = "[/]\x1b]0;x\x07evil"
QUIET = ["--no-overhead", "--no-monitor", "-q"]

# fails every other trial: a study with both ok and failed trials
FLAKY = "import pathlib, sys; p = pathlib.Path(sys.argv[1]); k = int(p.read_text()) if p.exists() else 0; p.write_text(str(k + 1)); sys.exit(k % 2)"  # noqa: E501

UNITS = """
[study]
name = "units"
store = "{store}"
[benchmark]
command = ["{py}", "-c", "print('op=1.5'); print('op=2.25'); print('op=0.125'); print('t=7')"]
[[pi]]
name = "t"
source = "regex"
pattern = 't=([0-9.]+)'
units = {{ source = "regex", pattern = 'op=([0-9.]+)' }}
[stop]
max_rounds = 2
"""


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One store with a run (later archived by --fresh), a flaky run, a comparison, a
    study with unit readings and a study with a hostile name."""
    tmp = tmp_path_factory.mktemp("ls")
    db = tmp / "s.assay.db"
    s = str(db)
    py = sys.executable
    flaky = [py, "-c", FLAKY, str(tmp / "count")]
    both = ["--", "true", "--", "sleep 0.001"]
    runs = [
        ["run", "--store", s, "-r", "3", *QUIET, "--name", "plain", "--", "true"],
        ["run", "--store", s, "-r", "2", *QUIET, "--name", "plain", "--fresh", "--", "true"],
        ["run", "--store", s, "-r", "4", *QUIET, "--name", "flaky", "--", *flaky],
        ["compare", "--store", s, "--max-rounds", "3", *QUIET, "--study", "cmp", *both],
        ["run", "--store", s, "-r", "2", *QUIET, "--name", HOSTILE, "--", "true"],
    ]
    for args in runs:
        res = invoke(*args)
        assert res.exit_code in (0, 4, 5), res.output
    study = tmp / "units.toml"
    study.write_text(UNITS.format(store=s, py=py), encoding="utf-8")
    assert invoke("run", str(study), *QUIET).exit_code in (0, 5)
    return db


def stored(db: Path) -> dict[str, list[TrialRecord]]:
    with Store(db, read_only=True) as st:
        return {o.name: st.trials(o.id) for o in st.overview()}


def listed(*args: str) -> dict[str, dict[str, Any]]:
    res = invoke("ls", *args, "--json")
    assert res.exit_code == 0, res.output
    assert "\x1b" not in res.stdout  # a hostile name is written as JSON escapes
    return {row["name"]: row for row in json.loads(res.stdout)}


# ls -------------------------------------------------------------------------------------
def test_ls_lists_every_study_with_its_kind_trials_sessions_and_state(store: Path) -> None:
    rows = listed(str(store))
    assert set(rows) == {"plain", "flaky", "cmp", "units", HOSTILE}  # not the archived one
    assert rows["plain"]["trials_by_status"] == {"ok": 2}
    assert rows["flaky"]["trials_by_status"] == {"ok": 2, "failed": 2}
    assert rows["flaky"]["trials"] == 4
    assert rows["cmp"]["kind"] == "compare"
    assert rows["cmp"]["trials_by_status"] == {"ok": 6}  # 3 rounds of 2 variants
    for name in ("plain", "flaky", "units", HOSTILE):
        assert rows[name]["kind"] == "run"
        assert rows[name]["reason"].startswith("budget spent")  # -r / max_rounds
    for row in rows.values():
        assert row["sessions"] == 1
        assert row["done"] is True and row["state"] == "done"
        assert row["reason"]  # as the session stored it
        assert row["archived"] is False
        first, last = pd.Timestamp(row["first_trial"]), pd.Timestamp(row["last_trial"])
        assert first.tzinfo is not None and first <= last


def test_ls_all_adds_the_archived_study_with_its_own_trials(store: Path) -> None:
    rows = listed(str(store), "--all")
    archived = [r for n, r in rows.items() if n.startswith("plain@archived-")]
    assert len(archived) == 1 and len(rows) == 6
    assert archived[0]["archived"] is True
    assert archived[0]["trials_by_status"] == {"ok": 3}


def test_ls_table_prints_counts_and_a_hostile_name_safely(store: Path) -> None:
    res = invoke("ls", str(store))
    assert res.exit_code == 0
    out = res.stdout
    assert "\x1b" not in out and "\x07" not in out
    assert "[/]evil" in out  # not read as markup, the escape sequence removed
    assert "2 ok, 2 failed" in out
    assert "compare" in out and "@archived" not in out
    assert "@archived" in invoke("ls", str(store), "--all").stdout


def test_ls_states_unfinished_stopped_and_new(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with Store(db) as st:
        new = st.open_study("new", "h", {})
        killed = st.open_study("killed", "h", {"sweep": {"params": {"a": [1]}}})
        st.start_session(killed, {})
        short = st.open_study("short", "h", {"tests": [{"name": "a"}]})
        st.end_session(st.start_session(short, {}), {"done": False, "reason": "max_time"})
        sweep = st.open_study("sw", "h", {"sweep": {"params": {"a": [1]}}})
        st.end_session(st.start_session(sweep, {}), {"steps": [{"done": False}]})
        early = st.open_study("sw0", "h", {"sweep": {"params": {"a": [1]}}})
        st.end_session(st.start_session(early, {}), {"steps": [], "reason": "stopped before"})
        full = st.open_study("sw1", "h", {"sweep": {"params": {"a": [1]}}})
        st.end_session(st.start_session(full, {}), {"steps": [{"done": True}]})
        knobs = st.open_study("kn", "h", {"knob_specs": [{"name": "k"}]})
        st.end_session(st.start_session(knobs, {}), {})
        assert new
    rows = listed(str(db))
    assert rows["new"]["state"] == "new" and rows["new"]["first_trial"] is None
    assert rows["killed"]["state"] == "unfinished" and rows["killed"]["kind"] == "sweep"
    assert rows["short"]["state"] == "stopped" and rows["short"]["reason"] == "max_time"
    assert rows["short"]["kind"] == "order"
    assert rows["sw"]["state"] == rows["sw0"]["state"] == "stopped"
    assert rows["sw1"]["state"] == "done"
    assert rows["kn"]["state"] == "done" and rows["kn"]["kind"] == "knobs"
    assert not any(r["done"] for n, r in rows.items() if n not in ("kn", "sw1"))


def test_ls_missing_store_is_a_usage_error_and_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "none" / "x.assay.db"
    res = invoke("ls", str(missing))
    assert res.exit_code == 2
    assert res.stderr.strip().count("\n") == 0 and str(missing) in res.stderr
    assert not missing.parent.exists()


def test_ls_without_store_reads_the_quick_store(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    quick = tmp_path / "cache" / "assay" / "quick.assay.db"
    res = invoke("ls")
    assert res.exit_code == 2 and str(quick) in res.stderr
    assert not quick.exists()
    quick.parent.mkdir(parents=True)
    shutil.copy(store, quick)
    assert "flaky" in invoke("ls").stdout


def _fingerprint(db: Path) -> tuple[str, int, int, Any]:
    with sqlite3.connect(db) as c:
        trials = c.execute("SELECT COUNT(*) FROM trials").fetchone()[0]
        sessions = c.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]
        meta = c.execute("SELECT * FROM meta").fetchall()
    c.close()
    return hashlib.sha256(db.read_bytes()).hexdigest(), trials, sessions, meta


def test_ls_and_export_leave_the_store_as_it_was(store: Path, tmp_path: Path) -> None:
    db = tmp_path / "copy.db"
    shutil.copy(store, db)
    # a store without the row a writable open adds: any write would change its bytes
    with sqlite3.connect(db) as c:
        c.execute("DELETE FROM meta")
    c.close()
    before = _fingerprint(db)
    assert before[3] == []
    assert invoke("ls", str(db), "--all").exit_code == 0
    assert invoke("export", str(db), "-o", str(tmp_path / "t.csv")).exit_code == 0
    assert invoke("export", str(db), "--format", "json", "-o", "-").exit_code == 0
    assert _fingerprint(db) == before


# export ---------------------------------------------------------------------------------
def test_export_csv_reads_back_with_pandas_as_stored(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "trials.csv"
    res = invoke("export", str(store), "-o", str(out))
    assert res.exit_code == 0, res.output
    df = pd.read_csv(out)
    trials = {n: t for n, t in stored(store).items() if "@archived" not in n}
    assert len(df) == sum(len(t) for t in trials.values()) == 2 + 4 + 6 + 2 + 2
    assert list(df.columns[:4]) == ["study", "seq", "run", "status"]
    assert {"setting.variant", "setting.cycle", "reading.wall_time", "reading.t"} <= set(df)
    by_key = {(r["study"], r["run"], r["seq"]): r for r in df.to_dict("records")}
    for name, records in trials.items():
        for t in records:
            row = by_key[(name, t.run, t.seq)]
            assert row["status"] == t.status
            for pi, value in t.readings.items():
                assert row[f"reading.{pi}"] == value  # exact: floats written in full
            for pi in {"wall_time", "t"} - set(t.readings):
                assert pd.isna(row[f"reading.{pi}"])
            for key, value in t.setting.items():
                assert row[f"setting.{key}"] == value
            assert row["duration_s"] == t.duration
            assert row["exit_code"] == t.exit_code
            assert (row["error"] if isinstance(row["error"], str) else "") == t.error
            assert row["host"] == t.host
            rss = row["max_rss_kib"]  # NULL (NaN in pandas) for a command smaller than Assay
            assert (pd.isna(rss) and t.max_rss_kib is None) or rss == t.max_rss_kib
            assert row["cpu_user"] == t.cpu_user and row["cpu_system"] == t.cpu_system
            assert t.started is not None
            started = pd.Timestamp(row["started"])
            assert started.tzinfo is not None
            assert abs(started.timestamp() - t.started) < 1e-6
    flaky = df[df["study"] == "flaky"]
    assert sorted(flaky["status"]) == ["failed", "failed", "ok", "ok"]
    assert set(flaky[flaky["status"] == "failed"]["exit_code"]) == {1}


def test_export_writes_unit_readings_in_long_format_beside_the_trials(
    store: Path, tmp_path: Path
) -> None:
    out = tmp_path / "trials.csv"
    assert invoke("export", str(store), "units", "-o", str(out)).exit_code == 0
    units = pd.read_csv(tmp_path / "trials.units.csv")
    assert list(units.columns) == ["study", "run", "seq", "pi", "index", "value"]
    (records,) = [t for n, t in stored(store).items() if n == "units"]
    assert len(units) == 2 * 3
    for t in records:
        got = units[(units["seq"] == t.seq) & (units["run"] == t.run)].sort_values("index")
        assert list(got["index"]) == [0, 1, 2]
        assert list(got["value"]) == t.unit_readings["t"].tolist() == [1.5, 2.25, 0.125]
    assert set(pd.read_csv(out)["study"]) == {"units"}


def test_export_json_is_one_object_of_two_tables(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "x.json"
    res = invoke("export", str(store), "units", "-o", str(out))  # format from the suffix
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    assert set(data) == {"trials", "unit_readings"}
    trials = pd.DataFrame(data["trials"])
    assert list(trials["seq"]) == [0, 1] and set(trials["reading.t"]) == {7.0}
    units = pd.DataFrame(data["unit_readings"])
    assert list(units.columns) == ["study", "run", "seq", "pi", "index", "value"]
    assert sorted(units["value"]) == [0.125, 0.125, 1.5, 1.5, 2.25, 2.25]


def test_export_to_stdout(store: Path) -> None:
    res = invoke("export", str(store), "units", "--format", "csv", "-o", "-")
    assert res.exit_code == 0
    assert res.stdout.splitlines()[0].startswith("study,seq,run,status")
    assert len(res.stdout.splitlines()) == 3
    assert "6 unit readings not written" in res.stderr
    res = invoke("export", str(store), "flaky", "--format", "json")
    assert [t["status"] for t in json.loads(res.stdout)["trials"]] == ["ok", "failed"] * 2


def test_export_names_an_archived_study_or_takes_all(store: Path, tmp_path: Path) -> None:
    archived = next(n for n in stored(store) if n.startswith("plain@archived-"))
    res = invoke("export", str(store), archived, "--format", "json", "-o", "-")
    assert len(json.loads(res.stdout)["trials"]) == 3
    res = invoke("export", str(store), "--all", "--format", "json", "-o", "-")
    assert len(json.loads(res.stdout)["trials"]) == 3 + 16


def test_export_unknown_study_lists_the_studies(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "t.csv"
    res = invoke("export", str(store), "nope", "-o", str(out))
    assert res.exit_code == 2
    assert "no study named 'nope'" in res.stderr
    assert "flaky" in res.stderr and "cmp" in res.stderr and "@archived" not in res.stderr
    assert "\x1b" not in res.stderr
    assert not out.exists()


def test_export_refuses_an_unwritable_output_before_reading(tmp_path: Path) -> None:
    # the store does not exist either: the output is checked first
    res = invoke("export", str(tmp_path / "none.db"), "-o", str(tmp_path / "no" / "t.csv"))
    assert res.exit_code == 2 and "does not exist" in res.stderr and "-o" in res.stderr
    res = invoke("export", str(tmp_path / "none.db"), "-o", str(tmp_path / "t.csv"))
    assert res.exit_code == 2 and "no such results store" in res.stderr
    assert not (tmp_path / "none.db").exists()


def test_export_checks_the_unit_readings_file_too(store: Path, tmp_path: Path) -> None:
    (tmp_path / "t.units.csv").mkdir()
    res = invoke("export", str(store), "-o", str(tmp_path / "t.csv"))
    assert res.exit_code == 2 and "t.units.csv: is a directory" in res.stderr
    assert not (tmp_path / "t.csv").exists()  # nothing written


def test_export_parquet_without_pyarrow_says_how_to_get_it(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow now fails
    out = tmp_path / "t.parquet"
    res = invoke("export", str(store), "-o", str(out))
    assert res.exit_code == 3  # a missing extra, as for every other (#60: it was 2)
    assert "pip install -e '.[export]'" in res.stderr
    assert not out.exists()
    res = invoke("export", str(store), "--format", "parquet", "-o", "-")
    assert res.exit_code == 2


def test_export_parquet_reads_back(store: Path, tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    out = tmp_path / "t.parquet"
    assert invoke("export", str(store), "-o", str(out)).exit_code == 0
    csv_out = tmp_path / "t.csv"
    assert invoke("export", str(store), "-o", str(csv_out)).exit_code == 0
    df = pd.read_parquet(out)
    assert len(df) == len(pd.read_csv(csv_out)) == 16
    units = pd.read_parquet(tmp_path / "t.units.parquet")
    assert sorted(units["value"].unique()) == [0.125, 1.5, 2.25]


def test_export_parquet_writes_a_setting_of_mixed_types_as_text(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    db = tmp_path / "s.db"
    with Store(db) as st:
        for name, value in (("a", 1), ("b", "big")):
            sid = st.open_study(name, "h", {})
            st.add_trial(sid, TrialRecord(seq=0, status="ok", setting={"x": value, "n": 2}))
    out = tmp_path / "t.parquet"
    assert invoke("export", str(db), "-o", str(out)).exit_code == 0
    df = pd.read_parquet(out)
    assert list(df["setting.x"]) == ["1", "big"]  # one column, one type
    assert list(df["setting.n"]) == [2, 2]  # a column of one type keeps it


@pytest.mark.parametrize(
    ("example", "kind"),
    [
        ("run-sqlite-insert.toml", "run"),
        ("sqlite-tpcb-compare.toml", "compare"),
        ("order-file-cache.toml", "order"),
        ("sqlite-sweep.toml", "sweep"),
        ("postgres-knobs.toml", "knobs"),
    ],
)
def test_the_kind_is_told_from_the_stored_study_file(example: str, kind: str) -> None:
    spec = load_spec(EXAMPLES / example)
    assert study_kind(spec.model_dump(mode="json")) == kind


def test_why_trials_failed_is_in_every_view(tmp_path: Path) -> None:
    """Issue #44: a knobs study whose trials all failed said "see the failed trials in
    the store", and ``assay export`` only "exited with status 2": the error, with the
    last lines of its stderr, is in the study's message, ``show`` and the export."""
    import json as _json

    from click.testing import CliRunner

    from assay.cli import main

    study = tmp_path / "k.toml"
    study.write_text(
        '[study]\nname = "kf"\n[benchmark]\ncommand = ["sh", "-c", '
        '"echo \'FATAL: cannot connect\' >&2; exit 2", "{a}"]\n'
        '[[pi]]\nname = "t"\nsource = "regex"\npattern = "t=([0-9.]+)"\n'
        '[[knob]]\nname = "a"\ntype = "int"\nmin = 1\nmax = 10\ndefault = 5\n'
        "[knobs]\nsamples = 12\n"
    )
    db = str(tmp_path / "k.db")
    runner = CliRunner()
    for args in (["knobs", str(study), "-q", "--store", db], ["show", db, "kf"]):
        res = runner.invoke(main, args)
        assert res.exit_code == 3, res.output
        assert "trial 0: exited with status 2: FATAL: cannot connect" in res.output
        assert "(and 11 more alike)" in res.output
    res = runner.invoke(main, ["export", db, "kf", "--format", "json", "-o", "-"])
    assert res.exit_code == 0, res.output
    rows = _json.loads(res.stdout)["trials"]
    assert len(rows) == 12 and {r["stderr_tail"] for r in rows} == {"FATAL: cannot connect"}


def test_a_study_whose_trials_all_failed_is_listed_as_failed(tmp_path: Path) -> None:
    """Issue #35: ``assay ls`` said ``done`` for a study without one working trial."""
    import json as _json

    from click.testing import CliRunner

    from assay.cli import main

    db = str(tmp_path / "f.db")
    ran = CliRunner().invoke(
        main, ["run", "--store", db, "-q", "--no-overhead", "--no-monitor", "--", "false"]
    )
    assert ran.exit_code != 0
    listed = CliRunner().invoke(main, ["ls", db, "--json"])
    assert listed.exit_code == 0, listed.output
    (entry,) = _json.loads(listed.stdout)
    assert entry["state"] == "failed" and entry["done"] is False
