"""Issue #62 part 3: ``assay report --artifact``, the page a reviewer attaches: the
claims with their verdicts, ELECT's summary by rounds, the environment and how to run
the study again; looked at in the browser at 1280 and 390 px."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from assay.cli import exits
from test_claims import _claims_study
from test_gate import QUICK, invoke
from test_report_html import Opened, needs_browser

SECTIONS = ["Claims", "Summary by rounds", "Environment", "How to run it again", "What was run"]


@pytest.fixture
def page_path(tmp_path: Path) -> Path:
    claims = (
        '[[claim]]\nsays = "new is at least 1.2x old"\nratio = ["new", "old"]\nat_least = 1.2\n'
        '[[claim]]\nsays = "new is old within 5%"\nratio = ["new", "old"]\nwithin = "5%"\n'
    )
    study = _claims_study(tmp_path, 1.0, 1.3, claims)
    res = invoke(tmp_path, "compare", *QUICK, str(study))
    assert res.exit_code == exits.WORSE, res.output  # the second claim fails
    out = tmp_path / "artifact.html"
    res = invoke(tmp_path, "report", str(tmp_path / "g.assay.db"), "--artifact", "-o", str(out))
    assert res.exit_code == exits.OK, res.output
    assert "wrote" in res.output and "the artifact page" in res.output
    return out


def test_the_page_holds_what_a_reviewer_reads(page_path: Path) -> None:
    html = page_path.read_text()
    assert "<h1>Artifact: g</h1>" in html
    assert '<p class="answer bad" id="answer">claims: 1 holds, 1 fails' in html  # red
    for title in SECTIONS:
        assert f"<h2>{title}</h2>" in html
    assert 'class="claim-holds">holds<' in html and 'class="claim-fails">fails<' in html
    assert "[Exp info] study: g, variant: old" in html  # ELECT's summary, per variant
    assert "assay reproduce g.assay.db" in html and "assay plan g.toml" in html


def test_the_page_in_markdown(page_path: Path, tmp_path: Path) -> None:
    out = tmp_path / "artifact.md"
    res = invoke(tmp_path, "report", str(tmp_path / "g.assay.db"), "--artifact", "-o", str(out))
    assert res.exit_code == exits.OK, res.output
    text = out.read_text()
    assert text.startswith("## Artifact: g\n")
    assert "**claims: 1 holds, 1 fails" in text
    assert text.index("### Claims") < text.index("### Summary by rounds")
    assert "❌ fails" in text and "```text\n[Exp info] study: g, variant: old" in text
    assert "`assay reproduce g.assay.db`" in text


@needs_browser
@pytest.mark.parametrize("width", [1280, 390])
def test_the_page_in_the_browser(browser: Any, page_path: Path, tmp_path: Path, width: int) -> None:
    opened = Opened(browser, page_path, tmp_path / f"artifact-{width}.png", width=width)
    page = opened.page
    assert opened.errors == [] and opened.requests == [] and opened.dialogs == []
    assert page.locator("h2").all_inner_texts() == SECTIONS
    answer = page.locator("#answer")
    assert answer.count() == 1 and answer.inner_text().startswith("claims: 1 holds, 1 fails")
    assert page.locator("td.claim-fails").count() == 1
    # nothing of the page wider than the screen (the tables become cards at 390 px)
    wide = page.evaluate(
        "() => [...document.querySelectorAll('section:not(#what-was-run) *')]"
        ".filter(e => !e.closest('pre, details')"
        " && e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)"
        ".map(e => e.tagName)"
    )
    assert wide == []
    page.close()
