"""``assay report STORE... -o DIR/``: every study of the stores as a static site (#38).

Real tiny studies (a run, a compare, a history measured in a temporary git repository
whose benchmark sleeps twice as long from its sixth commit on, studies with hostile
names, one whose stored data cannot be read): the index links every study to its page,
the history page plots every commit and lists the regression first, names stay text and
file names stay safe, a re-run updates the site and removes only its own stale pages,
nothing leaves the files, and the single-page mode is as before.  The browser test
skips where /usr/bin/chromium or Playwright is missing.
"""

from __future__ import annotations

import html
import importlib.util
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from assay.cli import main
from assay.report.site import INDEX, MANIFEST, page_name
from assay.store import Store
from assay.studies.catalog import list_studies

CHROMIUM = Path("/usr/bin/chromium")
HAVE_BROWSER = CHROMIUM.exists() and importlib.util.find_spec("playwright") is not None
needs_browser = pytest.mark.skipif(
    not HAVE_BROWSER, reason="needs /usr/bin/chromium and playwright (install-targets.sh)"
)

HOSTILE = ["<script>alert(1)</script>", "../x", "</svg>"]
STEP = 5  # the benchmark sleeps twice as long from this commit on
DELAYS = [0.02] * STEP + [0.04] * 5
SAFE_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]*\.html\Z")


def _invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def _history_store(root: Path) -> tuple[Path, list[str]]:
    """A repository of len(DELAYS) commits whose benchmark sleeps DELAYS[i] seconds,
    measured commit by commit (``assay history --run-commits``) into one store."""
    repo = root / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "t")
    _git(repo, "config", "commit.gpgsign", "false")
    for i, delay in enumerate(DELAYS):
        (repo / "delay.sh").write_text(f"# commit {i}\nsleep {delay}\n")
        _git(repo, "add", ".")
        _git(repo, "commit", "-q", "-m", f"commit {i}")
    study = root / "hist.toml"
    study.write_text(
        '[study]\nname = "hist"\n[benchmark]\ncommand = ["sh", "delay.sh"]\ncwd = "repo"\n'
        'git_repo = "repo"\n[stop]\nmin_samples = 3\nmax_rounds = 4\n'
    )
    res = _invoke("history", "--run-commits", "HEAD", "--no-overhead", "--no-monitor",
                  "-q", "--", str(study))  # fmt: skip
    assert res.exit_code == 0, res.output
    return root / "hist.assay.db", _git(repo, "rev-list", "--reverse", "HEAD").split()


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A run, a compare, a history, hostile names and an unreadable study (made once)."""
    d = tmp_path_factory.mktemp("stores")
    quick = ["--no-overhead", "--no-monitor", "-q"]
    out: dict[str, Any] = {"run": d / "run.assay.db", "compare": d / "compare.assay.db"}
    compare = ["--", "sleep", "0.01", "--", "sleep", "0.02"]
    for args in (
        ["run", "--store", str(out["run"]), "-r", "4", *quick, "--", "sleep", "0.01"],
        ["compare", "--store", str(out["compare"]), "-r", "4", *quick, *compare],
    ):
        assert _invoke(*args).exit_code in (0, 5)  # 5: the budget ran out (tiny studies)
    out["hostile"] = d / "hostile.assay.db"
    for name in [*HOSTILE, "broken"]:
        res = _invoke("run", "--store", str(out["hostile"]), "--name", name, "-r", "3", *quick,
                      "--", "sleep", "0.01")  # fmt: skip
        assert res.exit_code in (0, 5), res.output
    with Store(out["hostile"]) as db:  # its stored study file, garbled: no result
        found = db.find_study("broken")
        assert found is not None
        db.set_study_value(found[0], "session_spec", "{not json")
    out["history"], out["revs"] = _history_store(d)
    return out


def _site(out: Path, *stores: Path, code: int = 0) -> Result:
    res = _invoke("report", *map(str, stores), "-o", f"{out}/")
    assert res.exit_code == code, res.output
    return res


def _links(page: str) -> list[tuple[str, str]]:
    """(href, text) of every link of a page, unescaped."""
    return [
        (html.unescape(h), html.unescape(re.sub(r"<[^>]+>", "", t)))
        for h, t in re.findall(r'<a href="([^"]*)">(.*?)</a>', page, flags=re.S)
    ]


def _section(page: str, anchor: str) -> str:
    found = re.search(rf'<section id="{anchor}">(.*?)</section>', page, flags=re.S)
    assert found is not None, anchor
    return found.group(1)


@pytest.fixture(scope="module")
def site(stores: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site") / "site"
    res = _site(out, stores["run"], stores["compare"], stores["hostile"], stores["history"])
    pages = len(json.loads((out / MANIFEST).read_text())["pages"]) - 1
    assert f"wrote {out}/index.html and {pages} pages" in res.stderr
    return out


# --- without a browser ---------------------------------------------------------------------


def test_index_lists_every_study_with_a_working_link(stores: dict[str, Any], site: Path) -> None:
    index = (site / INDEX).read_text(encoding="utf-8")
    linked = {text: href for href, text in _links(index)}
    for key in ("run", "compare", "hostile", "history"):
        for entry in list_studies(stores[key]):
            if entry.name == "broken":
                continue
            assert entry.name in linked, entry.name
            page = site / linked[entry.name]
            assert page.parent == site and page.is_file()
            text = page.read_text(encoding="utf-8")
            assert f"<h1>{html.escape(entry.name)}</h1>" in text  # the study's own page
            assert '<nav><a href="index.html">all studies</a></nav>' in text
            # green, amber (short of its target) or red (a gate or claim failed)
            assert re.search(r'<p class="answer( short| bad)?" id="answer">', text)
    # every study (the 8 commits' too) and the history: each with its page
    manifest = json.loads((site / MANIFEST).read_text())["pages"]
    assert sorted(manifest) == sorted(p.name for p in site.glob("*.html"))
    assert len(manifest) == 1 + 1 + 1 + len(HOSTILE) + len(DELAYS) + 1
    # answers, kinds and hosts in the rows; newest first in the studies table
    studies = _section(index, "studies")
    assert "the target is" in studies and ">compare<" in studies and ">run<" in studies
    assert os.uname().nodename in studies
    shown = [t for _, t in _links(studies)]
    newest = [e.name for e in sorted(
        (e for k in ("run", "compare", "hostile", "history") for e in list_studies(stores[k])
         if e.name != "broken"),
        key=lambda e: -(e.last_trial or 0.0))]  # fmt: skip
    assert shown == newest


def test_a_study_that_cannot_be_analysed_is_listed_without_a_page(
    stores: dict[str, Any], site: Path
) -> None:
    index = (site / INDEX).read_text(encoding="utf-8")
    row = re.search(
        r"<tr><td data-label=\"study\" class=\"path\">broken</td>.*?</tr>", index, flags=re.S
    )
    assert row is not None and "cannot be analysed" in row.group(0)
    assert not (site / page_name(stores["hostile"], "broken")).exists()


def test_the_history_page_plots_each_commit_and_lists_the_regression_first(
    stores: dict[str, Any], site: Path
) -> None:
    revs: list[str] = stores["revs"]
    index = (site / INDEX).read_text(encoding="utf-8")
    # the regressions first, then the benchmarks across commits, then every study
    anchors = re.findall(r'<section id="([^"]+)">', index)
    assert anchors == ["regressions", "across-commits", "studies"]
    regressions = _section(index, "regressions")
    assert f"<code>{revs[STEP][:10]}</code>" in regressions
    assert f"<code>{revs[STEP - 1][:10]}</code>" in regressions
    (href, text), *_ = _links(regressions)
    assert text == "hist" and href == page_name(stores["history"], "hist", prefix="history-")
    page = (site / href).read_text(encoding="utf-8")
    assert page.count("<svg") == page.count("</svg>") == 1 and "<text" in page
    svg = page[page.index("<svg") : page.index("</svg>")]
    texts = [html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]
    assert "commit (git order, oldest first)" in texts and "wall_time (s)" in texts
    assert all(r[:7] in texts for r in revs)  # each commit on the x axis
    assert any(f"{revs[STEP - 1][:7]} → {revs[STEP][:7]}" in t for t in texts)  # the change marked
    changes = _section(page, "changes")
    first = re.search(r"<tbody><tr>(.*?)</tr>", changes, flags=re.S)
    assert first is not None
    cells = re.findall(r"<td[^>]*>(.*?)</td>", first.group(1))
    assert cells[:3] == ["regression", revs[STEP][:10], revs[STEP - 1][:10]]
    assert cells[3].startswith("+")  # twice as long: worse, and the CI excludes zero
    # every commit in a row, linked to its own study's page
    commits = dict(_links(_section(page, "commits")))
    assert sorted(commits.values()) == sorted(r[:10] for r in revs)
    assert all((site / h).is_file() for h in commits)


def test_hostile_names_are_escaped_and_give_safe_file_names(
    stores: dict[str, Any], site: Path
) -> None:
    index = (site / INDEX).read_text(encoding="utf-8")
    assert "<script" not in index and "</svg>" not in index
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in index and "&lt;/svg&gt;" in index
    for name in HOSTILE:
        page = page_name(stores["hostile"], name)
        assert SAFE_NAME.match(page) and "/" not in page and not page.startswith(".")
        text = (site / page).read_text(encoding="utf-8")
        assert "<script" not in text
        assert f"<h1>{html.escape(name)}</h1>" in text
    # nothing written outside the folder; every file there is one the site wrote
    assert sorted(p.name for p in site.parent.iterdir()) == ["site"]
    files = sorted(p.name for p in site.iterdir())
    assert files == sorted([MANIFEST, *json.loads((site / MANIFEST).read_text())["pages"]])
    # the same names on every run, different for every study
    assert page_name(stores["hostile"], "../x") == page_name(stores["hostile"], "../x")
    assert len({page_name(stores["hostile"], n) for n in [*HOSTILE, "x", "-x"]}) == 5


def test_every_page_is_self_contained(site: Path) -> None:
    pages = set(json.loads((site / MANIFEST).read_text())["pages"])
    for path in site.glob("*.html"):
        page = path.read_text(encoding="utf-8")
        assert "<script" not in page, path.name
        # nothing to fetch: the only references are anchors and the site's own pages
        for ref in re.findall(r"""(?:src|href)\s*=\s*["']?([^"'\s>]*)""", page):
            assert ref.startswith(("#", "data:")) or html.unescape(ref) in pages, ref
        assert "http://" not in page.replace("http://www.w3.org/", "")
        assert "https://" not in page
        assert "default-src 'none'" in page


def test_a_rerun_updates_the_site_and_removes_only_its_stale_pages(
    stores: dict[str, Any], tmp_path: Path
) -> None:
    run = tmp_path / "run.assay.db"
    quick = ["-r", "3", "--no-overhead", "--no-monitor", "-q", "--", "sleep", "0.01"]
    assert _invoke("run", "--store", str(run), *quick).exit_code in (0, 5)
    out = tmp_path / "site"
    _site(out, run, stores["compare"])
    first = set(json.loads((out / MANIFEST).read_text())["pages"])
    compare_pages = {page_name(stores["compare"], e.name) for e in list_studies(stores["compare"])}
    assert compare_pages <= first
    (out / "notes.txt").write_text("mine")
    (out / "mine.html").write_text("mine")
    res = _invoke("run", "--store", str(run), "--name", "newer", *quick)
    assert res.exit_code in (0, 5)
    # a folder that exists is a site without the trailing slash, even with one store
    res = _invoke("report", str(run), "-o", str(out))
    assert res.exit_code == 0, res.output
    second = set(json.loads((out / MANIFEST).read_text())["pages"])
    assert not (compare_pages & second)
    assert not any((out / p).exists() for p in compare_pages)  # stale pages removed
    assert (out / "notes.txt").read_text() == "mine" and (out / "mine.html").exists()
    assert page_name(run, "newer") in second  # the new study's page
    assert (first - compare_pages) <= second  # the same names as before
    index = (out / INDEX).read_text(encoding="utf-8")
    assert ">newer</a>" in index and "compare" not in _section(index, "studies")
    assert sorted(p.name for p in out.iterdir()) == sorted([*second, MANIFEST, "notes.txt",
                                                            "mine.html"])  # fmt: skip


def test_bad_input_names_the_store(stores: dict[str, Any], tmp_path: Path) -> None:
    missing = tmp_path / "none.assay.db"
    res = _invoke("report", str(stores["run"]), str(missing), "-o", f"{tmp_path}/site/")
    assert res.exit_code == 2 and str(missing) in res.stderr
    bad = tmp_path / "bad.assay.db"
    bad.write_bytes(b"not a database" * 100)
    res = _invoke("report", str(bad), "-o", f"{tmp_path}/site/")
    assert res.exit_code == 2 and str(bad) in res.stderr and "not a results store" in res.stderr
    res = _invoke("report", str(tmp_path), "-o", f"{tmp_path}/site/")
    assert res.exit_code == 2 and "not a results store" in res.stderr
    assert not (tmp_path / "site").exists()  # checked before any page is made
    res = _invoke("report", str(stores["run"]), "-o", f"{tmp_path}/site/", "--plots", "p")
    assert res.exit_code == 2 and "--plots" in res.stderr
    res = _invoke("report", str(stores["run"]), "-o", f"{tmp_path}/no/such/")
    assert res.exit_code == 2 and "does not exist" in res.stderr
    res = _invoke("report", str(stores["run"]), str(stores["compare"]), str(bad), "-o", "-")
    assert res.exit_code == 2 and "folder" in res.stderr


def test_the_single_file_mode_is_unchanged(
    stores: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "r.html"
    res = _invoke("report", str(stores["run"]), "-o", str(out))
    # readings, their histogram and the CI narrowing
    assert res.exit_code == 0 and res.stderr.startswith(f"wrote {out} (3 plots)")
    page = out.read_text(encoding="utf-8")
    assert "<nav>" not in page and 'href="index.html"' not in page
    res = _invoke("report", str(stores["hostile"]), "</svg>", "-o", str(out))
    assert res.exit_code == 0 and "<h1>&lt;/svg&gt;</h1>" in out.read_text(encoding="utf-8")
    # STORE STUDY: the study's page, even when the study's name is also a file's
    (tmp_path / "sub").mkdir()
    (tmp_path / "x").write_text("a file")
    monkeypatch.chdir(tmp_path / "sub")
    res = _invoke("report", str(stores["hostile"]), "../x", "-o", str(out))
    assert res.exit_code == 0 and "<h1>../x</h1>" in out.read_text(encoding="utf-8")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.html", "sub", "x"]
    res = _invoke("report", str(stores["hostile"]), "-o", str(out))
    assert res.exit_code == 2 and "name one" in res.stderr
    res = _invoke("report", str(stores["hostile"]), "broken", "-o", str(out))
    assert res.exit_code == 4
    res = _invoke("report", str(tmp_path), "-o", str(out))
    assert res.exit_code == 2 and "is a directory" in res.output
    res = _invoke("report", str(stores["run"]), "-o", "-")
    assert res.exit_code == 0 and res.stdout.startswith("<!DOCTYPE html>")


# --- in the browser ------------------------------------------------------------------------


#: What in the page's tables is cut at its right edge (or makes the page scroll sideways).
_CLIPPED = """() => {
  const width = document.documentElement.clientWidth, out = [];
  if (document.documentElement.scrollWidth > width + 1) out.push('page scrolls sideways');
  for (const el of document.querySelectorAll('table, table *')) {
    const box = el.getBoundingClientRect();
    if (box.width && box.right > width + 1) out.push(el.tagName + ': right ' + box.right);
  }
  return out;
}"""


@needs_browser
@pytest.mark.parametrize("width", [390, 1280])
def test_the_index_fits_the_screen_in_the_browser(
    browser: Any, site: Path, tmp_path: Path, width: int
) -> None:
    requests: list[str] = []
    errors: list[str] = []
    page = browser.new_page(viewport={"width": width, "height": 900})
    own = (site / INDEX).resolve().as_uri()

    def route(r: Any) -> None:
        if r.request.url == own:
            r.continue_()
        else:
            requests.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.goto(own)
    page.wait_for_load_state("load")
    shot = tmp_path / f"index-{width}.png"
    page.screenshot(path=str(shot), full_page=True)
    artifacts = os.environ.get("ASSAY_ARTIFACTS")
    if artifacts:
        Path(artifacts).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(artifacts) / shot.name)
    assert page.evaluate(_CLIPPED) == []
    assert requests == [] and errors == []
    assert page.locator("script").count() == 0
    body = page.inner_text("body")
    for name in HOSTILE:
        assert name in body  # text, not markup
    cell = page.locator("#studies table.cards tbody tr").first.locator("td").first
    display = cell.evaluate("e => getComputedStyle(e).display")
    assert display == ("block" if width < 600 else "table-cell")
    # a study's link opens its page (a file beside the index)
    href = page.locator("#studies a").first.get_attribute("href")
    assert href is not None and (site / href).is_file()
    page.close()
