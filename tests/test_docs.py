"""The documentation site (issue #43): docs that cannot rot.

- ``mkdocs build --strict`` succeeds (a broken link between pages, a page left out of
  the nav, a bad mkdocstrings reference or a missing snippet fails it) and writes every
  page of the nav;
- docs/cli.md is what ``scripts/gen_cli_docs.py`` generates from the click commands
  today;
- the built site fetches nothing from elsewhere: no script, stylesheet, font or image
  from another host (Material's web fonts are off), checked in the HTML and CSS and, where
  Debian's chromium is installed, in a browser that records every request;
- docs/getting-started.md's commands are checked as the README's are
  (tests/test_readme.py's machinery: every Assay command parses, names files that
  exist and is classified; the quick ones run in a sandbox).
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from test_readme import (
    assay_argvs,
    check_pip_install_lines,
    readme_commands,
    template,  # noqa: F401  (the sandbox fixture the commands run in)
)

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
GETTING_STARTED = DOCS / "getting-started.md"
CHROMIUM = Path("/usr/bin/chromium")

#: Tags whose ``src``/``href`` a browser fetches by itself (an ``<a href>`` it does not).
FETCHED = re.compile(
    r"<(?:script|link|img|iframe|source|video|audio|embed|object|image|use)\b[^>]*?"
    r"\b(?:src|href|data|srcset|xlink:href)\s*=\s*[\"']?\s*((?:https?:)?//[^\"'\s>]+)",
    re.IGNORECASE,
)
CSS_FETCHED = re.compile(
    r"(?:url\(\s*[\"']?|@import\s+[\"'])\s*((?:https?:)?//[^\"')\s]+)", re.IGNORECASE
)


# -- the build ---------------------------------------------------------------------------


def _nav_pages(nav: list[Any]) -> list[str]:
    pages: list[str] = []
    for item in nav:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        pages += _nav_pages(value) if isinstance(value, list) else [value]
    return pages


def nav_pages() -> list[str]:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    return _nav_pages(config["nav"])


def built_path(site: Path, page: str) -> Path:
    """Where mkdocs writes a page (directory URLs: ``run.md`` -> ``run/index.html``)."""
    stem = page.removesuffix(".md")
    return site / "index.html" if stem == "index" else site / stem / "index.html"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built once for the module with ``mkdocs build --strict``."""
    out = tmp_path_factory.mktemp("site") / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    res = subprocess.run(
        # not --quiet: with it, mkdocs 1.6 exits 0 on a strict-mode warning
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    said = f"mkdocs build --strict failed:\n{res.stdout}\n{res.stderr}"
    assert res.returncode == 0, said
    assert "WARNING" not in res.stdout + res.stderr, said
    return out


def test_the_site_builds_with_every_page_of_the_nav(site: Path) -> None:
    assert (site / "index.html").is_file()
    pages = nav_pages()
    missing = [p for p in pages if not built_path(site, p).is_file()]
    assert not missing, missing
    # every page in docs/ is in the nav (mkdocs would build it, but no one would find it)
    unlisted = sorted({p.name for p in DOCS.glob("*.md")} - set(pages))
    assert not unlisted, f"pages not in mkdocs.yml's nav: {unlisted}"


def test_the_nav_has_a_page_per_design(site: Path) -> None:
    pages = set(nav_pages())
    for page in (
        "index.md",
        "getting-started.md",
        "run.md",
        "compare.md",
        "order.md",
        "sweep.md",
        "knobs.md",
        "history.md",
        "reports.md",
        "existing-data.md",
        "clusters.md",
        "targets.md",
        "study-file.md",
        "python-api.md",
        "cli.md",
        "exit-statuses.md",
        "methods.md",
        "changelog.md",
    ):
        assert page in pages, page


def test_the_changelog_page_is_the_changelog(site: Path) -> None:
    """docs/changelog.md includes CHANGELOG.md (a snippet), so it cannot drift."""
    html = built_path(site, "changelog.md").read_text(encoding="utf-8")
    headings = re.findall(r"^##+ (.+)$", (ROOT / "CHANGELOG.md").read_text(encoding="utf-8"), re.M)
    assert headings
    for heading in headings:
        words = re.sub(r"[\[\]`]", "", heading).split()[0]
        assert words in html, heading


def test_the_api_reference_documents_the_public_functions(site: Path) -> None:
    html = built_path(site, "python-api.md").read_text(encoding="utf-8")
    for name in ("run", "compare", "sweep", "order", "knobs", "load", "Result"):
        assert f'id="assay.public.{name}"' in html, name
    assert 'id="assay.api.measure"' in html


# -- the generated CLI reference ---------------------------------------------------------


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("gen_cli_docs", ROOT / "scripts/gen_cli_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_cli_reference_is_generated_from_the_commands() -> None:
    fresh = _generator().render()
    committed = (DOCS / "cli.md").read_text(encoding="utf-8")
    assert committed == fresh, "docs/cli.md is stale: run python3 scripts/gen_cli_docs.py"
    from assay.cli import COMMANDS

    for name in COMMANDS:
        assert f"## assay {name}\n" in committed, name
        assert f"Usage: assay {name} " in committed, name


# -- nothing fetched from elsewhere ------------------------------------------------------


def test_nothing_is_fetched_from_another_host(site: Path) -> None:
    """Scripts, stylesheets, fonts and images are the site's own (links in the text to
    other sites are fine: a browser does not fetch them)."""
    found = []
    for path in sorted(site.rglob("*")):
        if path.suffix == ".html":
            found += [f"{path.relative_to(site)}: {u}" for u in FETCHED.findall(path.read_text())]
            for style in re.findall(r"<style\b[^>]*>(.*?)</style>", path.read_text(), re.S):
                found += [f"{path.relative_to(site)}: {u}" for u in CSS_FETCHED.findall(style)]
        elif path.suffix == ".css":
            found += [
                f"{path.relative_to(site)}: {u}" for u in CSS_FETCHED.findall(path.read_text())
            ]
    assert not found, found
    index = (site / "index.html").read_text(encoding="utf-8")
    assert "fonts.googleapis" not in index and "fonts.gstatic" not in index


def test_the_fetch_check_finds_what_it_should() -> None:
    html = (
        '<script src="https://cdn.example/x.js"></script><link rel="stylesheet" '
        'href="//fonts.example/f.css"><img src="a.png"><a href="https://example.org">x</a>'
    )
    assert FETCHED.findall(html) == ["https://cdn.example/x.js", "//fonts.example/f.css"]
    css = "@import 'https://x.example/a.css'; b{background:url(\"http://y.example/i.png\")}"
    assert CSS_FETCHED.findall(css) == ["https://x.example/a.css", "http://y.example/i.png"]
    assert CSS_FETCHED.findall("a{background:url(../img/i.png)}") == []


def _have_browser() -> bool:
    return CHROMIUM.exists() and importlib.util.find_spec("playwright") is not None


@pytest.mark.skipif(not _have_browser(), reason="needs /usr/bin/chromium and playwright")
@pytest.mark.parametrize("page", ["index.md", "run.md", "python-api.md"])
def test_a_browser_fetches_nothing_from_another_host(site: Path, browser: Any, page: str) -> None:
    """The pages opened from disk: every request a page makes (scripts run) stays on disk."""
    requests: list[str] = []
    tab = browser.new_page()
    try:
        tab.on("request", lambda r: requests.append(r.url))
        tab.goto(built_path(site, page).as_uri(), wait_until="load")
        tab.wait_for_timeout(300)
        assert tab.title().endswith("Assay")
    finally:
        tab.close()
    assert requests
    elsewhere = [u for u in requests if not u.startswith(("file:", "data:", "blob:"))]
    assert not elsewhere, elsewhere


# -- the commands of Getting started -----------------------------------------------------

COMMANDS = readme_commands(path=GETTING_STARTED)
ASSAY_COMMANDS = [c for c in COMMANDS if assay_argvs(c.text)]


def test_getting_started_has_commands() -> None:
    texts = {c.text for c in ASSAY_COMMANDS}
    assert "assay run examples/run-sqlite-insert.toml" in texts
    assert 'assay run "sleep 0.01"' in texts
    assert any(t.startswith("assay compare ") for t in texts)
    assert any(t.startswith("assay report ") for t in texts)
    assert any(c.output for c in ASSAY_COMMANDS)


def test_every_pip_install_line_works_in_a_clone() -> None:
    check_pip_install_lines(GETTING_STARTED.read_text(encoding="utf-8"))


# The pages' commands (parsed, their files, run on the embedded default where quick) are
# checked with the README's in tests/test_readme.py, which reads every page of docs/.


def test_the_figures_are_the_projects_own_and_present() -> None:
    """#43: the docs' figures are made by scripts/gen_docs_figures.py from data in the
    repository; every one it makes is used by a page, and every one used exists."""
    import re

    made = set(
        subprocess.run(
            [sys.executable, str(ROOT / "scripts" / "gen_docs_figures.py"), "--check"],
            capture_output=True, text=True, check=True, cwd=ROOT,
        ).stdout.split()[-1:]
    )  # fmt: skip
    assert made == {"present"}
    used = {
        m for page in DOCS.glob("*.md") for m in re.findall(r"\]\((img/[^)]+)\)", page.read_text())
    }
    on_disk = {f"img/{p.name}" for p in (DOCS / "img").iterdir()}
    assert used == on_disk and used
