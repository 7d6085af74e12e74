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


def test_only_runs_and_comparisons_are_run_again() -> None:
    class Sweep:
        name, kind = "s", "sweep"

    with pytest.raises(SpecError, match="a sweep study; assay reproduce runs again run and"):
        check_kind(Sweep())  # type: ignore[arg-type]
