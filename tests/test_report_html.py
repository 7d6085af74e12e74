"""``assay report``: one self-contained HTML page per stored study, checked in a real
browser (Debian's chromium driven by Playwright): every section and plot there, no
console error, no request leaving the file, and outside text shown as text, never run.

The browser tests skip where /usr/bin/chromium or Playwright is missing
(scripts/install-targets.sh installs chromium; the ``test`` extra, Playwright); CI has
both.  Screenshots go to the test's tmp_path and, when set, to $ASSAY_ARTIFACTS.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from assay import __version__
from assay.report.html import SECTIONS
from test_show import KNOBS, ORDER, PY, SWEEP, _invoke, _state

CHROMIUM = Path("/usr/bin/chromium")
HAVE_BROWSER = CHROMIUM.exists() and importlib.util.find_spec("playwright") is not None
needs_browser = pytest.mark.skipif(
    not HAVE_BROWSER, reason="needs /usr/bin/chromium and playwright (install-targets.sh)"
)

#: The plots each design's report draws.
PLOTS = {
    "run": ["readings", "histogram", "ci-narrowing"],
    "compare": ["ranking", "samples", "readings"],
    # a compare whose variants differ only in a parameter
    "scan": ["ranking", "samples", "readings", "scan"],
    "order": ["order"],
    "sweep": ["r2-per-step", "terms", "tiles"],
    "knobs": ["importance", "top-k-r2"],
}

HOSTILE = ["<script>alert(1)</script>", "</svg>", "\"q\" 'a'", "[/]", "&amp;"]

COMPARE = """
[study]
name = "hostile </svg><script>alert(1)</script> [/] \\"q\\" 'a'"
[benchmark]
command = ["{py}", "-c", '''
import os, sys
p = sys.argv[2]
n = int(open(p).read()) if os.path.exists(p) else 0
open(p, "w").write(str(n + 1))
sys.stderr.write("err <script>alert(1)</script></svg>[/] \\"dq\\" &amp;\\n")
print("v=%d" % (10 + n % 3))
sys.exit(1 if n == 0 else 0)
''', "{{tag}}", "{counter}"]
[params]
tag = "<b>bold</b>\\"q\\"[/]"
[[variant]]
name = "<script>alert(1)</script>"
[[variant]]
name = "</svg>\\"'[/]&amp;"
params = {{ tag = "[bold]x[/] </svg>" }}
[[pi]]
name = "v"
source = "regex"
pattern = 'v=([0-9.]+)'
"""


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A tiny stored study of each design (made once for the module)."""
    d = tmp_path_factory.mktemp("stores")
    out = {"run": d / "run.assay.db", "compare": d / "compare.assay.db"}
    _invoke("run", "--store", str(out["run"]), "-r", "6", "--no-overhead", "-q", "--",
            "sleep", "0.01")  # fmt: skip
    _invoke("compare", "--store", str(out["compare"]), "-r", "4", "--no-overhead", "-q",
            "--", "sleep", "0.01", "--", "sleep", "0.03")  # fmt: skip
    out["scan"] = d / "scan.assay.db"
    _invoke("compare", "--store", str(out["scan"]), "-r", "4", "--no-overhead", "-q",
            "-P", "t", "1", "3", "--", "sleep", "0.0{t}")  # fmt: skip
    for kind, text, args in (
        ("order", ORDER, ["--no-overhead", "--no-monitor"]),
        ("sweep", SWEEP, ["--no-monitor"]),
        ("knobs", KNOBS, ["--jobs", "1"]),
    ):
        study = d / f"{kind}.toml"
        study.write_text(text.format(py=PY), encoding="utf-8")
        ran = _invoke(kind, str(study), "-q", *args)
        assert ran.exit_code == 0, ran.output
        out[kind] = d / f"{kind}.assay.db"
    hostile = d / "hostile.toml"
    hostile.write_text(COMPARE.format(py=PY, counter=d / "counter"), encoding="utf-8")
    _invoke("compare", str(hostile), "-r", "3", "--no-overhead", "--no-monitor", "-q")
    out["hostile"] = d / "hostile.assay.db"
    return out


def _report(store: Path, out: Path, *args: str) -> Path:
    """``assay report STORE -o OUT ARGS``, checked to change nothing in the store."""
    before = _state(store)
    res = _invoke("report", str(store), "-o", str(out), *args)
    assert res.exit_code == 0, res.output
    assert _state(store) == before  # no trial, no session, not one byte written
    return out


# --- without a browser ---------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(PLOTS))
def test_the_page_is_self_contained_with_every_section_and_plot(
    stores: dict[str, Path], tmp_path: Path, kind: str
) -> None:
    page = _report(stores[kind], tmp_path / "r.html").read_text(encoding="utf-8")
    assert re.findall(r"<h2>(.*?)</h2>", page) == list(SECTIONS)
    assert re.findall(r'<figure id="plot-([^"]+)"', page) == PLOTS[kind]
    assert page.count("<svg") == len(PLOTS[kind]) and "<?xml" not in page
    # text stays text (svg.fonttype none): no glyph outlines, labels searchable
    assert "<text" in page and "DejaVuSans-" not in page
    # nothing to fetch: no script, no external reference of any kind
    assert "<script" not in page
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?!#|data:)[^"'\s>]""", page), (
        "a link leaves the file"
    )
    assert "http://" not in page.replace("http://www.w3.org/", "")
    assert "https://" not in page


def test_plots_dir_gets_each_plot_as_png_and_svg(stores: dict[str, Path], tmp_path: Path) -> None:
    plots = tmp_path / "plots"
    _report(stores["sweep"], tmp_path / "r.html", "--plots", str(plots))
    names = sorted(p.name for p in plots.iterdir())
    assert names == sorted(f"{n}.{ext}" for n in PLOTS["sweep"] for ext in ("png", "svg"))
    assert (plots / "tiles.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<text" in (plots / "tiles.svg").read_text(encoding="utf-8")


def test_outputs_are_checked_before_any_work(stores: dict[str, Path], tmp_path: Path) -> None:
    res = _invoke("report", str(stores["run"]), "-o", str(tmp_path / "no" / "r.html"))
    assert res.exit_code == 2 and "--output" in res.output and "does not exist" in res.output
    (tmp_path / "f").write_text("")
    res = _invoke("report", str(stores["run"]), "-o", str(tmp_path / "r.html"),
                  "--plots", str(tmp_path / "f"))  # fmt: skip
    assert res.exit_code == 2 and "is not a directory" in res.output
    assert not (tmp_path / "r.html").exists()
    res = _invoke("report", str(stores["run"]), "nope", "-o", str(tmp_path / "r.html"))
    assert res.exit_code == 2 and "no study named 'nope'" in res.output
    res = _invoke("report", str(tmp_path / "none.db"), "-o", str(tmp_path / "r.html"))
    assert res.exit_code == 2 and "no such results store" in res.output


def test_hostile_strings_are_escaped_and_show_prints_them_as_text(
    stores: dict[str, Path], tmp_path: Path
) -> None:
    page = _report(stores["hostile"], tmp_path / "r.html").read_text(encoding="utf-8")
    plots = len(PLOTS["compare"])  # the names in every plot's labels: none cut short
    assert "<script" not in page and page.count("<svg") == page.count("</svg>") == plots
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;/svg&gt;&quot;&#x27;[/]&amp;amp;" in page  # the variant's name
    shown = _invoke("show", str(stores["hostile"]))
    for text in HOSTILE:  # rich markup ([/]) not interpreted, nothing dropped
        assert text in shown.stdout, text
    assert "</svg>\"'[/]&amp;" in shown.stdout
    assert 'err <script>alert(1)</script></svg>[/] "dq" &amp;' in shown.stdout


# --- in the browser ------------------------------------------------------------------------


class Opened:
    """A report opened in the browser, with what happened while it loaded."""

    def __init__(self, browser: Any, path: Path, shot: Path, width: int = 1280) -> None:
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.page = browser.new_page(viewport={"width": width, "height": 900})
        own = path.resolve().as_uri()

        def route(r: Any) -> None:
            if r.request.url == own:
                r.continue_()
            else:  # recorded and stopped: the page must not need it
                self.requests.append(r.request.url)
                r.abort()

        self.page.route("**/*", route)
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.goto(own)
        self.page.wait_for_load_state("load")
        self.page.screenshot(path=str(shot), full_page=True)
        artifacts = os.environ.get("ASSAY_ARTIFACTS")
        if artifacts:
            Path(artifacts).mkdir(parents=True, exist_ok=True)
            shutil.copy(shot, Path(artifacts) / shot.name)


@needs_browser
@pytest.mark.parametrize("kind", list(PLOTS))
def test_report_in_the_browser(
    browser: Any, stores: dict[str, Path], tmp_path: Path, kind: str
) -> None:
    html = _report(stores[kind], tmp_path / f"{kind}.html")
    opened = Opened(browser, html, tmp_path / f"report-{kind}.png")
    page = opened.page
    assert page.locator("h2").all_inner_texts() == list(SECTIONS)
    figures = page.locator("figure")
    assert figures.count() == len(PLOTS[kind])
    for i in range(figures.count()):  # each plot drawn, with a size, and its text as text
        svg = figures.nth(i).locator("svg")
        assert svg.count() == 1
        box = svg.bounding_box()
        assert box is not None and box["width"] > 200 and box["height"] > 100
        assert svg.locator("text").count() > 0
    assert opened.errors == [] and opened.requests == [] and opened.dialogs == []
    assert page.evaluate(_CLIPPED) == []  # nothing of the results cut at 1280 px either
    body = page.inner_text("body")
    assert f"reported by Assay {__version__}" in body
    # the answer first, in the first screen; the details folded until opened
    answer = page.locator("#answer")
    assert answer.count() == 1 and answer.inner_text()
    box = answer.bounding_box()
    assert box is not None and box["y"] < 900
    assert "Environment" not in body
    page.locator("#what-was-run summary").click()
    assert "Environment" in page.inner_text("body")
    assert (tmp_path / f"report-{kind}.png").stat().st_size > 10_000
    page.close()


#: Finds what in the results is cut at the page's right edge, or too small to read.
_CLIPPED = """() => {
  const width = document.documentElement.clientWidth, out = [];
  for (const el of document.querySelectorAll('#results *')) {
    if (el.closest('details.raw')) continue;  // every JSON field: folded, scrolls
    const box = el.getBoundingClientRect();
    if (box.width && box.right > width + 1) out.push(el.tagName + ': right ' + box.right);
    const size = parseFloat(getComputedStyle(el).fontSize);
    if (el.childNodes.length && el.innerText && size < 11) out.push(el.tagName + ': ' + size);
  }
  return out;
}"""


#: A column of each design's main table, as its card labels it (the terminal's header).
_CARD_LABEL = {
    "run": "mean ± CI half-width",
    "compare": "mean ± CI half-width",
    "scan": "mean ± CI half-width",
    "order": "fixed median [95% CI]",
    "sweep": "R² min",
    "knobs": "permutation ΔR² ± sd",
}


@needs_browser
@pytest.mark.parametrize("kind", list(_CARD_LABEL))
def test_results_fit_a_phone_as_cards(
    browser: Any, stores: dict[str, Path], tmp_path: Path, kind: str
) -> None:
    # #38: at 390 px the ranking clipped its second column, where the result is
    html = _report(stores[kind], tmp_path / f"{kind}.html")
    opened = Opened(browser, html, tmp_path / f"phone-{kind}.png", width=390)
    page = opened.page
    assert page.evaluate(_CLIPPED) == []
    first = page.locator("table.cards tbody tr").first
    assert first.locator("td").first.evaluate("e => getComputedStyle(e).display") == "block"
    labels = first.locator("td").evaluate_all(
        "cells => cells.map(c => getComputedStyle(c, '::before').content)"
    )
    # each value with its label, as a card: the terminal's words (#38: order, sweep and
    # knobs were tables of raw JSON fields, cut at the right edge at 390 px)
    assert f'"{_CARD_LABEL[kind]}: "' in labels
    dark = browser.new_page(viewport={"width": 390, "height": 900}, color_scheme="dark")
    dark.goto(html.resolve().as_uri())
    background = dark.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(18, 18, 18)"
    # #60: links readable on near-black (the default blue was not)
    link = dark.evaluate(
        "(() => { const a = document.createElement('a'); a.href = '#answer'; "
        "document.body.appendChild(a); return getComputedStyle(a).color; })()"
    )
    assert link == "rgb(138, 180, 248)"
    dark.close()
    page.close()


@needs_browser
@pytest.mark.parametrize("kind", ["compare", "order", "knobs", "hostile"])
def test_results_print_on_a4_without_cutting_a_column(
    browser: Any, stores: dict[str, Path], tmp_path: Path, kind: str
) -> None:
    """#38: printed, the results fit an A4 page (718 CSS px between Chromium's default
    margins): a table wider than that (order's eleven columns, the hostile study's long
    names) was cut at the edge, as the screen's scrolling table does not scroll on
    paper; no text under 11 px."""
    html = _report(stores[kind], tmp_path / f"{kind}.html")
    page = browser.new_page(viewport={"width": 718, "height": 1000})
    page.emulate_media(media="print")
    page.goto(html.resolve().as_uri())
    assert page.evaluate(_CLIPPED) == []
    pdf = page.pdf(format="A4")
    assert pdf.startswith(b"%PDF")
    page.close()


@needs_browser
def test_hostile_strings_stay_text_in_the_browser(
    browser: Any, stores: dict[str, Path], tmp_path: Path
) -> None:
    html = _report(stores["hostile"], tmp_path / "hostile.html")
    opened = Opened(browser, html, tmp_path / "report-hostile.png")
    page = opened.page
    for folded in page.locator("summary").all():  # the details, opened
        folded.click()
    body = page.inner_text("body")
    for text in HOSTILE:
        assert text in body, text
    assert "</svg>\"'[/]&amp;" in body  # the variant's name, whole
    assert '<b>bold</b>"q"[/]' in body  # a parameter's value
    assert 'err <script>alert(1)</script></svg>[/] "dq" &amp;' in body  # a trial's stderr
    assert page.locator("script").count() == 0 and page.locator("b").count() == 0
    # the plot's labels carry the names as text: one SVG, not cut short by </svg>
    assert page.locator("svg").count() == len(PLOTS["compare"])
    labels = page.locator("svg text").all_text_contents()
    assert any("<script>alert(1)</script>" in t for t in labels), labels
    assert opened.errors == [] and opened.requests == [] and opened.dialogs == []
    page.close()


def test_knobs_report_plots_the_stability_of_the_top_k(tmp_path: Path) -> None:
    """Issue #16: the knobs plots include the IoU stability of the top-k on subsets."""
    import csv
    from types import SimpleNamespace

    from assay.report.html import study_plots
    from assay.studies.knobs import rank_samples, samples_from_csv

    path = tmp_path / "k.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["a", "b", "c", "m"])
        for i in range(120):
            a, b, c = i % 11, (i * 7) % 13, (i * 5) % 3
            w.writerow([a, b, c, 3.0 * a + 0.5 * b + 0.01 * ((i * 31) % 17)])
    result = rank_samples(samples_from_csv(str(path), ["m"]), top_k=2, trees=30, jobs=1)
    assert any(r.stability for r in result.analysis.rankings)
    stored = SimpleNamespace(kind="knobs")
    plots = {p.name: p for p in study_plots(stored, result, [])}  # type: ignore[arg-type]
    assert list(plots) == ["importance", "top-k-r2", "stability"]
    svg = plots["stability"].svg
    assert "IoU with the full-sample top-k (unitless)" in svg and "subset size (samples)" in svg


def test_the_ranking_chart_of_a_median_study_draws_medians(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A PI compared on the median is drawn as the table shows it: each variant's median
    with its order-statistic CI, not its mean."""
    import types

    import assay.report.html as html

    saved: list[object] = []
    monkeypatch.setattr(html, "_save", lambda fig, path: saved.append(fig))
    row = {"variant": "a", "mean": 5.0, "low": 4.0, "high": 6.0}
    comp = {"pi": "t", "unit": "s", "direction": "lower", "confidence": 0.95,
            "statistic": "median",
            "variants": [row | {"median": 2.0, "median_low": 1.5, "median_high": 2.5}]}  # fmt: skip
    result = types.SimpleNamespace(as_dict=lambda: {"comparisons": [comp]})
    html._ranking(result, [], tmp_path / "r.png")
    ax = saved[0].axes[0]  # type: ignore[attr-defined]
    assert list(ax.lines[0].get_xdata()) == [2.0]
    assert "median with 95% CI" in ax.get_xlabel()
    html._ranking(types.SimpleNamespace(as_dict=lambda: {"comparisons": [comp | {
        "statistic": "mean"}]}), [], tmp_path / "r.png")  # fmt: skip
    assert list(saved[1].axes[0].lines[0].get_xdata()) == [5.0]  # type: ignore[attr-defined]


def test_a_run_against_a_baseline_reports_the_change_against_the_gate(tmp_path: Path) -> None:
    """#38: `--report` of `assay run --baseline` shows each PI's change with its CI, the
    gate's verdict, a plot of the change against the threshold and, when the baseline
    file has its readings, the two distributions overlaid."""
    import json

    old, page = tmp_path / "old.json", tmp_path / "r.html"
    pi = {"name": "wall_time", "unit": "s", "direction": "lower", "mean": 0.001,
          "half_width": 1e-5, "n_samples": 20, "confidence": 0.95}  # fmt: skip
    samples = [{"pi": "wall_time", "unit": "s", "runs": [0] * 4, "seqs": [0, 1, 2, 3],
                "values": [0.00099, 0.001, 0.00101, 0.001]}]  # fmt: skip
    doc = {"schema_version": 1, "kind": "run", "study": "old", "pis": [pi], "samples": samples}
    old.write_text(json.dumps(doc), encoding="utf-8")
    res = _invoke("run", "--store", str(tmp_path / "b.assay.db"), "-r", "60", "--no-overhead",
                  "-q", "--baseline", str(old), "--fail-if-worse", "5%", "--report", str(page),
                  "--", "sleep", "0.01")  # fmt: skip
    assert res.exit_code in (1, 5), res.output  # ten times as long (or no CI: undecided)
    html = page.read_text(encoding="utf-8")
    assert 'id="change-vs-baseline"' in html and "old.json" in html
    assert re.search(r"(worse|undecided) \(threshold 5%\)", html), html
    plot = html.split('id="plot-baseline"')[1].split("</figure>")[0]
    assert "<svg" in plot and "threshold" in plot
    # the baseline's readings (schema 1's samples) overlaid on the new ones
    overlay = html.split('id="plot-baseline-readings"')[1].split("</figure>")[0]
    assert "baseline (n=4)" in overlay and "new (n=" in overlay


def _result_schema() -> dict[str, Any]:
    import json
    from importlib.resources import files

    return dict(json.loads(files("assay").joinpath("schemas/result.schema.json").read_text()))


@pytest.mark.parametrize("kind", ["run", "compare", "scan", "order", "sweep", "knobs"])
def test_every_designs_json_follows_the_shipped_schema(stores: dict[str, Path], kind: str) -> None:
    """#40: a versioned, documented result schema, shipped in the package: every
    design's --json carries schema_version and kind and validates; run and compare
    carry every reading (with its round and position), as hyperfine's `times`."""
    import json

    import jsonschema

    schema = _result_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    res = _invoke("show", str(stores[kind]), "--json", "-", "-q")
    doc = json.loads(res.stdout)
    jsonschema.validate(doc, schema, cls=jsonschema.Draft202012Validator)
    assert doc["schema_version"] == 1
    assert doc["kind"] == ("compare" if kind == "scan" else kind)
    if kind in ("run", "compare", "scan"):
        total = sum(len(s["values"]) for s in doc["samples"] if s["pi"] == "wall_time")
        assert total == doc["trials"]["by_status"].get("ok", 0)


def test_a_document_that_breaks_the_schema_is_refused() -> None:
    """The schema can fail: a run document without its PIs, or of an unknown kind."""
    import jsonschema

    schema = _result_schema()
    bad = [
        {"schema_version": 1, "kind": "run", "study": "s", "warnings": []},
        {"schema_version": 1, "kind": "tune", "study": "s", "warnings": []},
        {"schema_version": 2, "kind": "knobs", "study": "s", "warnings": []},
    ]
    for doc in bad:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(doc, schema, cls=jsonschema.Draft202012Validator)
