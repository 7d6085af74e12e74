"""A fixed count (``assay run --runs N``) gets what hyperfine users read (#58): mean ±
standard deviation, min … max and the count, beside Assay's interval or the reason
there is none; exit status 0 unless a CI width was asked for too."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from assay.cli import main
from assay.cli.exits import NO_RESULT, OK, SHORT, fixed_count_status
from assay.stats.spread import spread

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)


@given(st.lists(finite, min_size=2, max_size=50))
def test_the_spread_is_numpys(values: list[float]) -> None:
    s = spread(values)
    x = np.asarray(values)
    assert s.n == len(values)
    assert math.isclose(s.mean or 0.0, float(x.mean()), rel_tol=1e-9, abs_tol=1e-6)
    assert math.isclose(s.sd or 0.0, float(x.std(ddof=1)), rel_tol=1e-6, abs_tol=1e-6)
    assert s.median == float(np.median(x)) and s.low == x.min() and s.high == x.max()


def test_one_value_has_no_standard_deviation_and_nan_is_left_out() -> None:
    assert spread([2.0, math.nan]).as_dict() == {
        "n": 1, "mean": 2.0, "sd": None, "median": 2.0, "min": 2.0, "max": 2.0,
    }  # fmt: skip


def _result(met: bool, mean: float = 1.0, ok: int = 5) -> SimpleNamespace:
    return SimpleNamespace(
        decision=SimpleNamespace(reason="budget spent", target_met=met),
        trials_by_status={"ok": ok} if ok else {"failed": 5},
        results=[SimpleNamespace(mean=mean)],
    )


def test_a_fixed_count_is_an_answer_unless_a_width_was_asked_for() -> None:
    assert fixed_count_status(_result(met=False), target_asked=False) == OK
    assert fixed_count_status(_result(met=False), target_asked=True) == SHORT
    assert fixed_count_status(_result(met=True), target_asked=True) == OK
    assert fixed_count_status(_result(met=False, ok=0), target_asked=False) == NO_RESULT


def test_runs_prints_hyperfines_summary_and_exits_0(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    res = CliRunner().invoke(
        main,
        ["run", "--runs", "6", "--store", str(tmp_path / "s.db"), "--json", str(out),
         "--", "true"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "wall_time: " in res.output and "(mean ± σ), range " in res.output
    assert ", 6 runs" in res.output
    summary = json.loads(out.read_text())["runs_summary"]
    assert [s["pi"] for s in summary] == ["wall_time"] and summary[0]["n"] == 6
    assert summary[0]["min"] <= summary[0]["mean"] <= summary[0]["max"]


def test_warmups_come_before_the_runs_as_in_hyperfine(tmp_path: Path) -> None:
    """#60: --warmup 2 --runs 5 measures 2 warm-ups, then 5 runs: the analysis, the
    summary and --export-json all rest on those 5 (it analysed 3 and exported 5)."""
    out, hf = tmp_path / "r.json", tmp_path / "h.json"
    res = CliRunner().invoke(
        main,
        ["run", "--warmup", "2", "--runs", "5", "--store", str(tmp_path / "s.db"),
         "--json", str(out), "--export-json", str(hf), "--", "true"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    doc, exported = json.loads(out.read_text()), json.loads(hf.read_text())["results"][0]
    pi = doc["pis"][0]
    assert pi["rounds_used"] == 5 and pi["warmup_removed"] == 2
    assert doc["runs_summary"][0]["n"] == 5 and len(exported["times"]) == 5
    assert math.isclose(exported["mean"], pi["mean"]) and math.isclose(
        doc["runs_summary"][0]["mean"], pi["mean"]
    )
