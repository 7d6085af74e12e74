"""Issue #62 part 3: ``assay reproduce`` runs a stored study again and judges it against
the original, PI by PI, variant by variant and claim by claim."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema
import pytest

from assay.cli import exits
from assay.errors import SpecError
from assay.studies.reproduce import check_kind
from test_gate import QUICK, invoke
from test_report_html import _result_schema
from test_show import KNOBS as SHOW_KNOBS

# A benchmark whose k-th run prints FACTOR x base x (1, 1.01, 1.01, 1)[k % 4], FACTOR read
# from a file: exact readings with a small spread, and a result that changes on purpose
BENCH = (
    "import pathlib, sys\n"
    "p = pathlib.Path(sys.argv[1]); k = len(p.read_text()) if p.exists() else 0\n"
    "p.write_text('x' * (k + 1))\n"
    "f = float(pathlib.Path(sys.argv[3]).read_text())\n"
    "print(f'value={f * float(sys.argv[2]) * (1 + 0.01 * (0, 1, 1, 0)[k % 4]):.6f}')\n"
)


def command(tmp_path: Path, name: str, base: float) -> str:
    argv = [sys.executable, "-c", BENCH, str(tmp_path / f"{name}.n"), str(base)]
    return json.dumps([*argv, str(tmp_path / "factor")])


PI = '[[pi]]\nname = "v"\nsource = "regex"\npattern = \'value=([0-9.]+)\'\n'


def run_study(tmp_path: Path) -> Path:
    study = tmp_path / "r.toml"
    study.write_text(
        f'[study]\nname = "r"\n[benchmark]\ncommand = {command(tmp_path, "r", 1.0)}\n{PI}'
        "[stop]\nmax_rounds = 12\nmin_rounds = 10\nci_width = 0.05\n"
    )
    return study


def compare_study(tmp_path: Path) -> Path:
    study = tmp_path / "c.toml"
    study.write_text(
        f'[study]\nname = "c"\n[benchmark]\ncommand = {command(tmp_path, "old", 1.0)}\n{PI}'
        f'[[variant]]\nname = "old"\n[[variant]]\nname = "new"\n'
        f"command = {command(tmp_path, 'new', 2.0)}\n"
        '[[claim]]\nsays = "new is at least 1.5x old"\nratio = ["new", "old"]\n'
        "at_least = 1.5\n[stop]\nmax_rounds = 12\n"
    )
    return study


def test_a_run_reproduced_on_the_same_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "factor").write_text("1.0")
    res = invoke(tmp_path, "run", *QUICK, str(run_study(tmp_path)), "--json", "orig.json")
    assert res.exit_code == exits.OK, res.output
    res = invoke(tmp_path, "reproduce", "r.assay.db", *QUICK, "--json", "-")
    assert res.exit_code == exits.OK, res.output
    doc = json.loads(res.stdout)
    jsonschema.validate(doc, _result_schema(), cls=jsonschema.Draft202012Validator)
    assert doc["kind"] == "reproduce" and doc["reproduced_kind"] == "run"
    assert doc["verdict"] == "reproduced" and doc["tolerance"] == 0.1
    (pi,) = doc["pis"]
    assert pi["pi"] == "v" and pi["verdict"] == "reproduced"
    assert pi["low"] > 0.9 and pi["high"] < 1.1
    assert doc["store"].endswith("r.reproduced.assay.db")
    assert (tmp_path / "r.reproduced.assay.db").exists()
    env = {e["key"]: e for e in doc["environment"]}
    assert env["cpu_count"]["differs"] is False
    # a --json result names its store: the same study, judged again (resumed: done)
    res = invoke(tmp_path, "reproduce", "orig.json", *QUICK, "--store", "again.assay.db")
    assert res.exit_code == exits.OK, res.output
    assert res.stdout.startswith("reproduced: r (run) from")


def test_a_changed_result_is_not_reproduced_and_its_claim_neither(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "factor").write_text("1.0")
    res = invoke(tmp_path, "compare", *QUICK, str(compare_study(tmp_path)))
    assert res.exit_code == exits.OK, res.output
    (tmp_path / "factor").write_text("0.5")  # the system got twice as slow
    md = tmp_path / "rep.md"
    res = invoke(tmp_path, "reproduce", "c.assay.db", *QUICK, "--json", "-", "--markdown", str(md))
    assert res.exit_code == exits.WORSE, res.output
    doc = json.loads(res.stdout)
    assert doc["verdict"] == "not reproduced"
    rows = {p["variant"]: p for p in doc["pis"]}
    assert set(rows) == {"old", "new"}
    assert all(p["verdict"] == "not reproduced" for p in rows.values())
    assert rows["new"]["ratio"] == pytest.approx(0.5, rel=0.02)
    (claim,) = doc["claims"]  # the ratio new / old is 2 in both: the claim holds again
    assert claim["original"] == claim["reproduced"] == "holds"
    assert claim["verdict"] == "reproduced"
    text = md.read_text()
    assert "❌ not reproduced" in text and "| claim |" in text


def test_what_cannot_be_reproduced_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    bad = tmp_path / "x.json"
    bad.write_text('{"kind": "run"}')
    res = invoke(tmp_path, "reproduce", str(bad))
    assert res.exit_code == exits.USAGE
    assert 'no "store"' in res.output
    gone = tmp_path / "y.json"
    gone.write_text('{"kind": "run", "store": "nowhere.assay.db", "study": "s"}')
    res = invoke(tmp_path, "reproduce", str(gone))
    assert res.exit_code == exits.USAGE and "is not here" in res.output
    (tmp_path / "factor").write_text("1.0")
    invoke(tmp_path, "run", *QUICK, str(run_study(tmp_path)))
    res = invoke(tmp_path, "reproduce", "r.assay.db", "--store", "r.assay.db")
    assert res.exit_code == exits.USAGE and "the original's store" in res.output


def test_an_unknown_kind_is_refused_naming_the_kinds_run_again() -> None:
    class Scan:
        name, kind = "x", "scan"

    with pytest.raises(SpecError, match=r"a scan study; assay reproduce runs again run, "
                       r"compare, order, sweep and knobs studies"):  # fmt: skip
        check_kind(Scan())  # type: ignore[arg-type]


def order_study(tmp_path: Path) -> Path:
    code = (
        "import pathlib, sys\n"
        "f = float(pathlib.Path(sys.argv[2]).read_text())\n"
        "base = {'a': 10.0, 'b': 20.0}[sys.argv[1]]\n"
        "p = pathlib.Path(sys.argv[3]); k = len(p.read_text()) if p.exists() else 0\n"
        "p.write_text('x' * (k + 1))\n"
        "print('value=%.6f' % (f * base * (1 + 0.01 * (k % 3))))\n"
    )
    argv = [sys.executable, "-c", code, "{op}", str(tmp_path / "factor"), str(tmp_path / "o.n")]
    study = tmp_path / "o.toml"
    study.write_text(
        f'[study]\nname = "o"\n[benchmark]\ncommand = {json.dumps(argv)}\n{PI}'
        '[params]\nop = "a"\n[[test]]\nname = "a"\n[[test]]\nname = "b"\n'
        'params = { op = "b" }\n[order]\nruns = 3\nrepetitions = 2\nseed = 3\n'
    )
    return study


def test_an_order_study_is_run_again_on_its_schedule_and_judged_test_by_test(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "factor").write_text("1.0")
    res = invoke(tmp_path, "order", str(order_study(tmp_path)), *QUICK, "--runs", "4")
    assert res.exit_code == exits.OK, res.output
    (tmp_path / "factor").write_text("2.0")
    res = invoke(tmp_path, "reproduce", "o.assay.db", *QUICK, "--json", "-")
    assert res.exit_code == exits.WORSE, res.output
    doc = json.loads(res.stdout)
    jsonschema.validate(doc, _result_schema(), cls=jsonschema.Draft202012Validator)
    assert doc["reproduced_kind"] == "order" and doc["verdict"] == "not reproduced"
    rows = {p["variant"]: p for p in doc["pis"]}
    assert set(rows) == {"a", "b"}
    assert all(p["ratio"] == pytest.approx(2.0, rel=0.02) for p in rows.values())
    # the original's schedule: --runs 4 and seed 3, not the study file's 3 runs
    assert doc["reproduction"]["schedule"]["seed"] == 3
    assert doc["reproduction"]["trials_planned"] == (4 + 4) * 2 * 2
    (found,) = doc["findings"]
    assert found["what"] == "tests order matters for"


# A setting's k-th run prints FACTOR x (10 w + len(c)) x (1, 1.01)[k % 2]: a sweep whose
# repetitions differ a little and whose whole result moves with FACTOR
SWEEP_BENCH = (
    "import pathlib, sys\n"
    "p = pathlib.Path(sys.argv[1]); k = len(p.read_text()) if p.exists() else 0\n"
    "p.write_text('x' * (k + 1))\n"
    "f = float(pathlib.Path(sys.argv[4]).read_text())\n"
    "v = f * (10 * int(sys.argv[2]) + len(sys.argv[3])) * (1 + 0.01 * (k % 2))\n"
    "print(f'value={v:.6f}')\n"
)


def sweep_study(tmp_path: Path) -> Path:
    argv = [sys.executable, "-c", SWEEP_BENCH, str(tmp_path / "s.n"), "{w}", "{c}",
            str(tmp_path / "factor")]  # fmt: skip
    study = tmp_path / "s.toml"
    study.write_text(
        f'[study]\nname = "s"\n[benchmark]\ncommand = {json.dumps(argv)}\n{PI}'
        "[sweep]\nrepetitions = 2\nstart = 0.5\nstep = 0.25\n"
        '[sweep.params]\nw = [1, 2, 3, 4]\nc = ["x", "yy"]\n'
    )
    return study


@pytest.mark.parametrize(("factor", "verdict"), [("1.0", "reproduced"), ("1.5", "not reproduced")])
def test_a_sweep_is_judged_over_the_settings_both_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, factor: str, verdict: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "factor").write_text("1.0")
    res = invoke(tmp_path, "sweep", str(sweep_study(tmp_path)), "--no-monitor", "-q")
    assert res.exit_code == exits.OK, res.output
    (tmp_path / "factor").write_text(factor)
    md = tmp_path / "r.md"
    res = invoke(tmp_path, "reproduce", "s.assay.db", *QUICK, "--json", "-",
                 "--markdown", str(md))  # fmt: skip
    assert res.exit_code == (exits.OK if verdict == "reproduced" else exits.WORSE), res.output
    doc = json.loads(res.stdout)
    jsonschema.validate(doc, _result_schema(), cls=jsonschema.Draft202012Validator)
    assert doc["reproduced_kind"] == "sweep" and doc["verdict"] == verdict
    (pi,) = doc["pis"]
    assert pi["pi"] == "v" and pi["verdict"] == verdict
    assert pi["variant"].startswith("geometric mean over ")
    assert pi["ratio"] == pytest.approx(float(factor), rel=0.02)
    assert pi["low"] <= pi["ratio"] <= pi["high"]
    # every setting measured twice in both, judged on its own; the findings side by side
    assert doc["settings"] and all(s["variant"].startswith("w=") for s in doc["settings"])
    assert {s["verdict"] for s in doc["settings"]} <= {"reproduced", "not reproduced",
                                                       "undecided"}  # fmt: skip
    found = {f["what"].split(" (")[0]: f for f in doc["findings"]}
    assert found["significant parameters"]["same"] is True
    assert "w" in found["significant parameters"]["original"]
    assert "found" in md.read_text() and "geometric mean" in md.read_text()


# test_show's knob space and options, with a command whose values move with FACTOR
KNOBS = """
[study]
name = "k"
[benchmark]
command = [{py}, "-c", {code}, "{{a}}", "{{b}}", {factor}]
[[pi]]
name = "v"
direction = "higher"
source = "regex"
pattern = 'value=([-0-9.]+)'
""" + SHOW_KNOBS[SHOW_KNOBS.index("[[knob]]") :]


def test_a_knob_study_is_judged_sample_by_sample_and_its_top_knobs_compared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "factor").write_text("1.0")
    study = tmp_path / "k.toml"
    code = (
        "import sys, math; f = float(open(sys.argv[3]).read())\n"
        "print('value=%.4f' % (f * (20 * math.log(int(sys.argv[1])) + float(sys.argv[2]) + 1)))"
    )
    study.write_text(KNOBS.format(
        py=json.dumps(sys.executable), code=json.dumps(code),
        factor=json.dumps(str(tmp_path / "factor")),
    ))  # fmt: skip
    res = invoke(tmp_path, "knobs", str(study), "--jobs", "1", "-q", "--trees", "30")
    assert res.exit_code == exits.OK, res.output
    (tmp_path / "factor").write_text("0.7")
    res = invoke(tmp_path, "reproduce", "k.assay.db", *QUICK, "--json", "-")
    assert res.exit_code == exits.WORSE, res.output
    doc = json.loads(res.stdout)
    jsonschema.validate(doc, _result_schema(), cls=jsonschema.Draft202012Validator)
    (pi,) = doc["pis"]
    # the same 22 samples (the same seed), each 0.7 times its original
    assert pi["variant"] == "geometric mean over 22 settings"
    assert pi["ratio"] == pytest.approx(0.7, rel=1e-3) and pi["verdict"] == "not reproduced"
    assert doc["settings"] == []  # each sample measured once: no interval of its own
    (top,) = doc["findings"]
    assert top["what"] == "top-1 knobs for v" and top["original"] == "a" and top["same"]
    # the options it ranked with (--trees 30) are the reproduction's too
    assert doc["reproduction"]["rankings"][0]["n_trees"] == 30
