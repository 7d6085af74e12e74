"""The answer first (issue #38): one sentence a reader can quote, with its evidence, the
same in the terminal, the Markdown and the HTML report."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from assay.cli import main
from assay.report.answer import answer

COMPARE = {
    "decided": True,
    "schedule": {"cycles": 130},
    "comparisons": [
        {
            "pi": "wall_time",
            "direction": "lower",
            "alpha": 0.01,
            "variants": [
                {"variant": "sleep 0.01", "relative_to_best": None},
                {
                    "variant": "sleep 0.012",
                    "relative_to_best": 0.107,
                    "relative_to_best_low": 0.053,
                    "relative_to_best_high": 0.165,
                },
            ],
        }
    ],
}


def test_a_decided_comparison_names_the_best_and_the_others_against_it() -> None:
    assert answer("compare", COMPARE) == (
        "`sleep 0.01` is best on wall_time (lower is better): `sleep 0.012` +10.7% "
        "[+5.3%, +16.5%] against it (decided after 130 cycles; α = 0.01)"
    )
    undecided = {**COMPARE, "decided": False}
    assert answer("compare", undecided).startswith(
        "not decided after 130 cycles: `sleep 0.01` leads on wall_time"
    )


def test_a_run_gives_each_pi_with_its_ci_and_the_target() -> None:
    doc = {
        "pis": [
            {"name": "rate", "unit": "rows/s", "mean": 894706.0, "half_width": 7733.0,
             "relative_half_width": 0.0086, "confidence": 0.95, "rounds_used": 12, "met": True},
            {"name": "t", "unit": "s", "mean": float("nan"), "met": False},
        ]
    }  # fmt: skip
    said = answer("run", doc)
    assert said.startswith("rate 894706 rows/s ± 7733 rows/s (±0.9%, 95% CI, 12 rounds)")
    assert "t: no valid CI" in said and said.endswith("the target is not met")


def test_a_sweep_names_its_significant_terms_and_points() -> None:
    doc = {
        "analysis": {
            "significant": [
                {"term": "sync", "pct_var": 30.5},
                {"term": "mode:sync", "pct_var": 4.6},
            ],
            "important_points": [{"param": "batch", "kind": "knee", "value": 16}],
        }
    }
    assert answer("sweep", doc) == (
        "significant, by share of variance: sync (30.5%), mode × sync (4.6%); batch knee at 16"
    )
    assert answer("sweep", {"analysis": {"significant": []}}) == (
        "no parameter has a significant effect"
    )


def test_the_knobs_and_the_order_study_say_theirs() -> None:
    doc = {"rankings": [{"pi": "tps", "top": ["a", "b"], "stability_verdict": "stable"}]}
    assert answer("knobs", doc) == "the 2 knobs that matter most for tps: a, b; stable"
    one = {"rankings": [{"pi": "tps", "top": ["a"], "stability_verdict": ""}]}
    assert answer("knobs", one) == "the knob that matters most for tps: a"
    assert answer("order", {"verdict": "order-dependent: c"}) == "Order-dependent: c"
    assert answer("history", {}) == ""


def test_terminal_markdown_and_html_say_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    md, doc = tmp_path / "r.md", tmp_path / "r.json"
    store = tmp_path / "s.db"
    res = CliRunner().invoke(
        main,
        ["compare", "--store", str(store), "-r", "6", "--no-overhead", "--no-monitor",
         "--markdown", str(md), "--json", str(doc), "--report", str(tmp_path / "r.html"),
         "--", sys.executable, "-c", "pass", "--", sys.executable, "-c",
         "import time; time.sleep(0.05)"],
        catch_exceptions=False,
    )  # fmt: skip
    assert res.exit_code in (0, 5), res.output
    said = answer("compare", json.loads(doc.read_text()))
    assert said and f"answer: {said}" in " ".join(res.stdout.split())
    assert md.read_text().split("\n")[2].startswith("**")  # first paragraph, bold
    page = (tmp_path / "r.html").read_text()
    assert page.index('id="answer"') < page.index("<h2>")  # before any section


def test_an_unbounded_interval_reads_the_same_from_the_json() -> None:
    """JSON keeps no infinity (null): the answer built from a result whose relative CI
    is unbounded must equal the one built from its --json (the terminal said "[-∞, +∞]",
    the document "[+∞, +∞]")."""
    import math

    doc = {
        "decided": False,
        "schedule": {"cycles": 6},
        "comparisons": [{
            "pi": "wall_time", "direction": "lower", "alpha": 0.01,
            "variants": [
                {"variant": "a", "rank": 1},
                {"variant": "b", "rank": 2, "relative_to_best": 1.087,
                 "relative_to_best_low": -math.inf, "relative_to_best_high": math.inf},
            ],
        }],
    }  # fmt: skip
    from assay.report.export import to_json

    said = answer("compare", doc)
    assert said == answer("compare", json.loads(to_json(doc)))
    assert "+108.7% (no CI)" in said
