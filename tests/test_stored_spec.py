"""A stored study file this version cannot read is a one-line store error (#39), not a
pydantic traceback."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from assay.cli import main
from assay.errors import StoreError
from assay.spec import parse_spec_data
from assay.studies.base import stored_spec


def test_a_stored_spec_that_does_not_validate_names_the_study_and_fields() -> None:
    good = parse_spec_data({"study": {"name": "s"}, "benchmark": {"command": ["true"]}}).model_dump(
        mode="json"
    )
    assert stored_spec(good, "renamed").study.name == "renamed"
    bad = {**good, "stop": {**good["stop"], "ci_width": "wide", "bogus": 1}}
    with pytest.raises(StoreError) as err:
        stored_spec(bad, "s")
    text = str(err.value)
    assert text.startswith("study 's': the study file stored with it")
    assert "stop.ci_width" in text and "stop.bogus" in text and "\n" not in text


def test_show_and_report_of_such_a_store_exit_3_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "t.assay.db"
    ran = CliRunner().invoke(
        main, ["run", "-q", "--runs", "3", "--no-overhead", "--no-monitor", "--store",
               str(store), "--", "true"],
    )  # fmt: skip
    assert ran.exit_code in (0, 5), ran.output
    with sqlite3.connect(store) as db:
        rows = db.execute(
            "select rowid, value_json from study_values where key = 'session_spec'"
        ).fetchall()
        assert rows
        for rowid, value in rows:
            spec = json.loads(json.loads(value))
            spec["stop"]["ci_width"] = "wide"
            db.execute(
                "update study_values set value_json = ? where rowid = ?",
                (json.dumps(json.dumps(spec)), rowid),
            )
    for args in (["show", str(store)], ["report", str(store), "-o", str(tmp_path / "r.html")]):
        res = CliRunner().invoke(main, args)
        assert res.exit_code == 3, res.output
        assert "not one this version of Assay reads" in res.output
        assert "Traceback" not in res.output and "ValidationError" not in res.output
