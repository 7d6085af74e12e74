"""A stored study as one self-contained HTML page (``assay report``).

The page needs no network: inline CSS, no script, plots as inline SVG whose text stays
text (``svg.fonttype = "none"``: searchable, selectable).  Every string that comes from
a benchmark, a study file or a host goes through :func:`html.escape` (matplotlib escapes
the text it writes into SVG), and plot labels are literal (never TeX).
"""

from __future__ import annotations

import json
import math
import re
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

import numpy as np

from assay._version import __version__
from assay.report.format import format_estimate, kind_name
from assay.report.grid import Grid
from assay.stats.intervals import t_interval
from assay.store import TrialRecord
from assay.studies.base import StoredStudy
from assay.studies.faults import FaultTimeline, fault_timelines

#: The page's sections, in order (the browser tests look for each heading).
#: The page's sections, in order: the results first, the details (collapsed) last.
SECTIONS = ("Results", "Plots", "Warnings", "Failures", "What was run", "Resource usage")

_CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:72em;padding:0 1em;
color:#222;line-height:1.4}
h1{font-size:1.6em;word-break:break-word}h2{border-bottom:1px solid #ccc;margin-top:2em}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:.9em;display:block;
overflow-x:auto;max-width:100%}
th,td{border:1px solid #ddd;padding:.25em .5em;text-align:left;vertical-align:top}
th{background:#f4f4f4}td.num{text-align:right;font-variant-numeric:tabular-nums}
code,pre{font-family:ui-monospace,monospace;font-size:.9em;white-space:pre-wrap;
word-break:break-word}
pre{background:#f7f7f7;padding:.5em;border:1px solid #eee}
figure{margin:1em 0 2em}figure svg{max-width:100%;height:auto}
figcaption{font-weight:600;margin-bottom:.3em}.muted{color:#666}
.answer{font-size:1.15em;font-weight:600;border-left:4px solid #2a7;padding:.3em .7em;
background:#f3faf6}.answer.bad{border-left-color:#c33;background:#fbf0f0}
.answer.short{border-left-color:#c90;background:#fdf8ec}
td.claim-holds{color:#17723a;font-weight:600}td.claim-fails{color:#b3261e;font-weight:600}
td.claim-undecided{color:#8a5a00}
summary h2{display:inline;border:none}summary{cursor:pointer;margin-top:2em;
border-bottom:1px solid #ccc}
@media (prefers-color-scheme: dark){body{background:#121212;color:#ddd}
a{color:#8ab4f8}a:visited{color:#c58af9}
th{background:#222}th,td{border-color:#444}pre{background:#1c1c1c;border-color:#333}
.muted{color:#999}.answer{background:#16261d}.answer.bad{background:#2a1616}
.answer.short{background:#2a2413}
td.claim-holds{color:#6fd08c}td.claim-fails{color:#ff8a80}td.claim-undecided{color:#e8c26a}
figure svg{background:#fff}}
@media print{details{display:block}table{display:table;width:100%;font-size:.7rem}
th,td{overflow-wrap:break-word;padding:.2em .3em}figure,tr{break-inside:avoid}
h2,h3{break-after:avoid}}
@media (max-width:600px){table.cards{display:table;width:100%}table.cards thead{display:none}
table.cards tr{display:block;border:1px solid #ddd;margin-bottom:.7em}
table.cards td{display:block;border:none;text-align:left}
table.cards td::before{content:attr(data-label) ": ";font-weight:600}}
details.raw summary{margin-top:.5em;border:none;font-size:.9em}
"""


@dataclass(frozen=True)
class Plot:
    """One plot of the report: a file stem, a caption, inline SVG and (if asked) PNG."""

    name: str
    title: str
    svg: str
    png: bytes | None = None


# --- the page ----------------------------------------------------------------------------


def html_report(
    stored: StoredStudy,
    result: Any,
    trials: Sequence[TrialRecord],
    plots: Sequence[Plot],
    baseline: Sequence[Any] = (),
    readings: Mapping[str, tuple[Sequence[float], Sequence[float]]] | None = None,
) -> str:
    """The report page of a stored study's ``result`` (as its runner's ``stored()``
    builds it) with its ``plots`` (see :func:`study_plots`); ``baseline``: each PI
    against a baseline result (``assay run --baseline``: a
    :class:`~assay.studies.baseline.BaselineComparison` each), shown after the results."""
    doc = result.as_dict()
    parts = [
        f"<h1>{_e(stored.name)}</h1>",
        f'<p class="muted">{_e(kind_name(stored.kind))} study, reported by Assay {_e(__version__)} '
        "from its store (nothing was run for this report)</p>",
        _answer(stored.kind, doc, baseline),
        _section("Claims", _claims(doc)) if doc.get("claims") else "",
        # the answer and its evidence first; the details after, collapsed
        _section("Results", _results(stored.kind, doc, result)),
        _section("Change vs baseline", baseline_html(baseline, readings)) if baseline else "",
        _section("Plots", _plots(plots)),
        _section("Warnings", _warnings(doc, result)),
        _section("Failures", _failures(doc), collapsed=not doc.get("failures")),
        _section("What was run", _what_was_run(stored, result, doc), collapsed=True),
        _section("Resource usage", _resources(doc), collapsed=True),
    ]
    return html_document(f"{stored.name}: {kind_name(stored.kind)} study", parts)


def html_document(title: str, body: Sequence[str], css: str = "") -> str:
    """A self-contained page: ``body`` (HTML) under the report's head, with ``css``
    after the report's own; no request may leave the file (inline styles and data
    only, said by its Content-Security-Policy)."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; img-src data:\">",
        f"<title>{_e(title)}</title>",
        f"<style>{_CSS}{css}</style></head><body>",
        *body,
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def study_report(
    store_path: Path,
    study: str | None,
    *,
    png: bool = False,
    baseline: Sequence[Any] = (),
    readings: Mapping[str, tuple[Sequence[float], Sequence[float]]] | None = None,
    before_drawing: Callable[[], None] | None = None,
) -> tuple[str, list[Plot]]:
    """The report page of ``study`` as its store holds it, and its plots (``assay
    report``, and ``--report`` at the end of a study command, which passes its
    ``--baseline`` comparisons); ``before_drawing`` is called before the first plot is
    drawn (none is where the store keeps them).  Raises what
    :func:`assay.studies.stored.stored_result` raises."""
    _, _, page, plots = report_page(store_path, study, png=png, baseline=baseline,
                                    readings=readings,
                                    before_drawing=before_drawing)  # fmt: skip
    return page, plots


def report_page(
    store_path: Path,
    study: str | None,
    *,
    png: bool = False,
    baseline: Sequence[Any] = (),
    readings: Mapping[str, tuple[Sequence[float], Sequence[float]]] | None = None,
    before_drawing: Callable[[], None] | None = None,
) -> tuple[StoredStudy, Any, str, list[Plot]]:
    """The stored study, its result, its report page and plots: a sweep's from the
    result ``assay show`` keeps where the store holds one for its trials
    (:func:`~assay.studies.stored.report_result`), analysed again where the page cannot
    read that one (the store is data); the plots the store keeps for these trials
    inlined, drawn (after ``before_drawing``) where it keeps none that hold."""
    from assay.studies.stored import report_result, stored_result

    def drawn(stored: StoredStudy, result: Any, trials: list[TrialRecord]) -> list[Plot]:
        if before_drawing is not None:
            before_drawing()
        return study_plots(stored, result, trials, png=png)

    stored, result, trials, kept = report_result(store_path, study)
    try:
        plots = None if png else _kept_plots(kept)
        if plots is None:
            plots = drawn(stored, result, trials)
        page = html_report(stored, result, trials, plots, baseline, readings)
        return stored, result, page, plots
    except (KeyError, IndexError, TypeError, ValueError):
        from assay.studies.sweep import KeptSweep

        if not isinstance(result, KeptSweep):
            raise
    stored, result, trials = stored_result(store_path, study)
    plots = drawn(stored, result, trials)
    return stored, result, html_report(stored, result, trials, plots, baseline, readings), plots


def _kept_plots(kept: Sequence[tuple[str, str, str]] | None) -> list[Plot] | None:
    """The plots the store keeps for the study's trials, when every one is a plot's SVG
    (:func:`~assay.report.kept_svg.plot_svg`: a store is data); None to draw them."""
    from assay.report.kept_svg import plot_svg

    if kept is None or not all(plot_svg(svg) for _, _, svg in kept):
        return None
    return [Plot(name, title, svg) for name, title, svg in kept]


def artifact_report(store_path: Path, study: str | None) -> str:
    """The page a reviewer attaches to an artifact (``assay report --artifact``): the
    answer, the claims with their verdicts, the summary by rounds in ELECT's form (1
    round: the value; 2-4: average, min, max; more: a Student-t interval), the
    environment, and how to run the study again and judge the reproduction.  Raises
    what :func:`assay.studies.stored.stored_result` raises."""
    from assay.report.summary import summary_lines
    from assay.studies.stored import report_result

    stored, result, trials, _ = report_result(store_path, study)  # a sweep: what show keeps
    doc = result.as_dict()
    env = getattr(result, "environment", None) or doc.get("environment") or {}
    parts = [
        f"<h1>Artifact: {_e(stored.name)}</h1>",
        f'<p class="muted">{_e(kind_name(stored.kind))} study, {len(trials)} trials, from the '
        f"store {_e(store_path.name)}; page by Assay {_e(__version__)} (nothing was run for "
        "it)</p>",
        _answer(stored.kind, doc),
        _section("Claims", _claims(doc)) if doc.get("claims") else "",
        _section(
            "Summary by rounds", f"<pre>{_e(chr(10).join(summary_lines(stored, trials)))}</pre>"
        ),
        _section(
            "Environment", _dl(_readable(env)) if env else '<p class="muted">not recorded</p>'
        ),
        _section("How to run it again", _rerun(stored, store_path)),
        _section("What was run", _what_was_run(stored, result, doc), collapsed=True),
    ]
    return html_document(f"{stored.name}: artifact", parts)


def _readable(env: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """An environment's entries as people read them (the memory in KiB/MiB/GiB)."""
    from assay.report.format import format_bytes

    return [
        (k, format_bytes(v) if k == "memory_bytes" and isinstance(v, int) else v)
        for k, v in env.items()
    ]


def _rerun(stored: StoredStudy, store_path: Path) -> str:
    """The commands a reviewer runs, and the study as stored (its fields, as JSON)."""
    kind = stored.kind
    steps = [
        ("plan it (trials, time, disk; nothing stored)", f"assay plan {stored.name}.toml"),
        ("run it", f"assay {kind} {stored.name}.toml"),
        (
            "or run it again from this store and judge it against this result",
            f"assay reproduce {store_path.name}",
        ),
    ]
    items = "".join(f"<li>{_e(what)}: <code>{_e(cmd)}</code></li>" for what, cmd in steps)
    spec = json.dumps(stored.spec.model_dump(mode="json", exclude_none=True), indent=1)
    return (
        f"<ol>{items}</ol>"
        f'<p class="muted">(the study file as {_e(stored.name)}.toml: its fields as stored '
        "are below)</p>"
        f"<details><summary>the study as stored</summary><pre>{_e(spec)}</pre></details>"
    )


def baseline_html(
    comparisons: Sequence[Any],
    readings: Mapping[str, tuple[Sequence[float], Sequence[float]]] | None = None,
) -> str:
    """Each PI against the baseline: the Markdown's table (the change with its CI,
    Welch's p, the gate), a plot of each change's CI against the gate's threshold and,
    where the baseline file has its readings (``readings``: PI -> (old, new)), the two
    distributions overlaid."""
    from assay.report.markdown import baseline_rows

    header, rows = baseline_rows(comparisons)
    table = _human(header, rows, "each PI: new result vs the baseline")
    plots = [
        _render("baseline", "change vs baseline", lambda p: _baseline_plot(comparisons, p), False)
    ]
    both = {pi: pair for pi, pair in (readings or {}).items() if pair[0] and pair[1]}
    if both:
        units = {c.pi: c.unit for c in comparisons}
        plots.append(
            _render(
                "baseline-readings",
                "readings: baseline and new",
                lambda p: _overlay_plot(both, units, p),
                False,
            )
        )
    return table + _plots(plots)


def _overlay_plot(
    readings: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    units: Mapping[str, str],
    path: Path,
) -> None:
    """Each PI's baseline and new readings as overlaid histograms, their means marked."""
    shown = list(readings.items())[:4]
    fig, axes = _figure(4.2 * len(shown), 3.0, ncols=len(shown))
    for ax, (pi, (old, new)) in zip(axes, shown, strict=True):
        both = [*old, *new]
        bins = np.linspace(min(both), max(both), 30) if max(both) > min(both) else 10
        for values, label, colour in ((old, "baseline", "#888888"), (new, "new", "#2c6fbb")):
            ax.hist(values, bins=bins, alpha=0.55, color=colour, label=f"{label} (n={len(values)})")
            ax.axvline(float(np.mean(values)), color=colour, linewidth=1.5)
        ax.set_xlabel(f"{pi}{_unit(units.get(pi, ''))}", parse_math=False)
        ax.set_ylabel("readings")
        ax.legend(frameon=False, fontsize=9)
    _save(fig, path)


def _baseline_plot(comparisons: Sequence[Any], path: Path) -> None:
    """Each PI's relative change with its CI (the worse way to the right), zero, and
    the gate's threshold where there is one."""
    fig, (ax,) = _figure(6.4, 1.2 + 0.5 * len(comparisons))
    labels = _labels([c.pi for c in comparisons])
    for i, c in enumerate(comparisons):
        worse = 1.0 if c.direction == "lower" else -1.0  # a regression to the right
        x, low, high = (worse * v * 100 for v in (c.relative, c.rel_low, c.rel_high))
        low, high = min(low, high), max(low, high)
        colour = {"worse": "#c0392b", "not worse": "#1e8449"}.get(
            c.gate.verdict if c.gate is not None else "", "#2c6fbb"
        )
        if math.isfinite(low) and math.isfinite(high):
            ax.errorbar([x], [i], xerr=[[x - low], [high - x]], fmt="o", capsize=4, color=colour)
        else:
            ax.plot([x], [i], "o", color=colour)
        if c.gate is not None:
            ax.axvline(c.gate.threshold * 100, color="#c0392b", linestyle="--", linewidth=1)
    ax.axvline(0.0, color="#888888", linewidth=1)
    ax.set_yticks(range(len(comparisons)))
    ax.set_yticklabels(labels, parse_math=False)  # names are text, never math
    ax.set_ylim(-0.7, len(comparisons) - 0.3)
    ax.set_xlabel("change vs baseline, % (to the right: worse; dashed: the gate's threshold)")
    _save(fig, path)


def _e(value: Any) -> str:
    """Any value as escaped HTML text."""
    return escape(str(value), quote=True)


def _section(title: str, body: str, *, collapsed: bool = False) -> str:
    """A section of the page; ``collapsed``: its body folded under its title (details a
    reader opens when needed)."""
    anchor = _e(title.lower().replace(" ", "-"))
    if collapsed:
        return (
            f'<section id="{anchor}"><details><summary><h2>{_e(title)}</h2></summary>\n'
            f"{body}\n</details></section>"
        )
    return f'<section id="{anchor}"><h2>{_e(title)}</h2>\n{body}\n</section>'


def _answer(kind: str, doc: Mapping[str, Any], baseline: Sequence[Any] = ()) -> str:
    """The study's answer in one sentence (:mod:`assay.report.answer`), first; a
    baseline gate that found a PI worse is part of it, and turns its mark red: a green
    "the target is met" above a failed gate would tell a reader the opposite."""
    from assay.report.answer import answer

    text = answer(kind, doc)
    worse = [c for c in baseline if c.gate is not None and c.gate.verdict == "worse"]
    if text and worse:
        text += "; the baseline gate failed: " + "; ".join(
            f"{c.pi}: {c.gate.text()}" for c in worse
        )
    # `name` marks a name as written (as the Markdown shows it): code, after escaping
    shown = re.sub(r"`([^`<>]*)`", r"<code>\1</code>", _e(text))
    # a claim that fails is bad news too: never a green box above it; nor above an
    # answer that fell short of its target (a run's "± ∞, the target is not met")
    failed = any(c.get("verdict") == "fails" for c in doc.get("claims") or [])
    mark = "answer bad" if worse or failed else "answer short" if _short(kind, doc) else "answer"
    return f'<p class="{mark}" id="answer">{shown}</p>' if text else ""


def _claims(doc: Mapping[str, Any]) -> str:
    """The study's ``[[claim]]`` verdicts (#62), the Markdown's table, each verdict
    marked by its class (holds green, fails red), and how they were reached."""
    from assay.report.markdown import claim_rows, claims_note

    header, rows = claim_rows(doc["claims"])
    caption = "each claim: the ratio's interval against the claimed region"
    table = _human(header, rows, caption, classed={header.index("verdict"): "claim-"})
    return table + f'<p class="muted">{_e(claims_note(doc["claims"]))}</p>'


def _short(kind: str, doc: Mapping[str, Any]) -> bool:
    """Whether the answer fell short of what the study asked: a run's PI whose target
    was not met, a comparison left undecided (unless it stopped on its decided claims),
    a claim undecided.

    >>> _short("run", {"pis": [{"met": True}, {"met": False}]}), _short("run", {"pis": []})
    (True, False)
    """
    if any(c.get("verdict") == "undecided" for c in doc.get("claims") or []):
        return True
    if kind == "run":
        return any(not p.get("met") for p in doc.get("pis") or [])
    if kind == "compare":
        return not doc.get("decided") and not str(doc.get("reason", "")).startswith(
            "claims decided"
        )
    return False


def _dl(rows: Iterable[tuple[str, Any]]) -> str:
    """A two-column table of names and values."""
    cells = "".join(f"<tr><th>{_e(k)}</th><td>{_cell(v)}</td></tr>" for k, v in rows)
    return f"<table>{cells}</table>"


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return _e(_num(value))
    if isinstance(value, dict):
        return _dl(value.items()) if value else "—"
    if isinstance(value, list) and any(isinstance(v, dict) for v in value):
        return _records([v if isinstance(v, dict) else {"value": v} for v in value])
    if isinstance(value, list):
        return _e(", ".join(_plain(v) for v in value)) or "—"
    return _e(value)


def _plain(value: Any) -> str:
    if value is None:
        return "n/a"
    return _num(value) if isinstance(value, float) else str(value)


def _num(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x:.4g}"


def _records(rows: Sequence[Mapping[str, Any]], caption: str = "") -> str:
    """A table of records: a row each, a column per key; with many keys, transposed
    (a row per key, a column per record) so that nothing is cut off."""
    if not rows:
        return f'<p class="muted">{_e(caption or "none")}{": none" if caption else ""}</p>'
    keys: list[str] = []
    for row in rows:
        keys.extend(k for k in row if k not in keys)
    cap = f"<caption>{_e(caption)}</caption>" if caption else ""
    if len(keys) > _WIDE:
        body = "".join(
            f"<tr><th>{_e(k)}</th>" + "".join(_td(row.get(k)) for row in rows) + "</tr>"
            for k in keys
        )
        return f"<table>{cap}<tbody>{body}</tbody></table>"
    head = "".join(f"<th>{_e(k)}</th>" for k in keys)
    body = "".join("<tr>" + "".join(_td(row.get(k)) for k in keys) + "</tr>" for row in rows)
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


_WIDE = 9  # columns beyond which a table is transposed


def _cards(rows: Sequence[Mapping[str, Any]], caption: str) -> str:
    """Records as a table whose rows become cards on a narrow screen (a column per key,
    numbers to 4 significant digits)."""
    if not rows:
        return f'<p class="muted">{_e(caption)}: none</p>'
    keys: list[str] = []
    for row in rows:
        keys.extend(k for k in row if k not in keys and not _nested(row[k]))
    return _human(keys, [[_plain(row.get(k)) for k in keys] for row in rows], caption)


def _td(value: Any) -> str:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    return f'<td class="num">{_cell(value)}</td>' if number else f"<td>{_cell(value)}</td>"


def _nested(v: Any) -> bool:
    return isinstance(v, dict) or (isinstance(v, list) and any(isinstance(x, dict) for x in v))


def _what_was_run(stored: StoredStudy, result: Any, doc: Mapping[str, Any]) -> str:
    spec = stored.spec
    bench = spec.benchmark
    rows: list[tuple[str, Any]] = [
        ("study", stored.name),
        ("kind", stored.kind),
        ("command", " ".join(bench.command) if bench.shell else json.dumps(bench.command)),
        ("shell", bench.shell),
        ("reason it stopped", doc.get("reason")),
        ("sessions", len(stored.sessions)),
        ("finished", stored.ended),
        ("Assay version (this report)", __version__),
    ]
    out = [_dl(rows)]
    if spec.params:
        out.append("<h3>Parameters</h3>" + _dl(spec.params.items()))
    if spec.variants:
        variants = [{"variant": v.name, **v.model_dump(exclude={"name"})} for v in spec.variants]
        out.append("<h3>Variants</h3>" + _records(variants))
    if spec.tests:
        tests = [{"test": t.name, **t.model_dump(exclude={"name"})} for t in spec.tests]
        out.append("<h3>Tests</h3>" + _records(tests))
    settings = spec.model_dump(
        mode="json",
        exclude={"study", "benchmark", "params", "variants", "tests", "cluster"},
        by_alias=False,
        exclude_none=True,
    )
    out.append("<h3>Settings</h3>" + _dl((k, v) for k, v in settings.items() if v not in ({}, [])))
    env = getattr(result, "environment", None) or doc.get("environment") or {}
    out.append(
        "<h3>Environment</h3>" + (_dl(env.items()) if env else '<p class="muted">not recorded</p>')
    )
    return "\n".join(out)


def _resources(doc: Mapping[str, Any]) -> str:
    """ELECT's resource lines (and, on several hosts, the cluster's and each host's)."""
    from assay.report.summary import resource_block

    resources = doc.get("resources")
    if not isinstance(resources, Mapping) or not resources:
        return '<p class="muted">not monitored</p>'
    # one study's summary, or one per variant (compare)
    groups = (
        {"": resources}
        if "cpu_p95_percent" in resources
        else {k: v for k, v in resources.items() if isinstance(v, Mapping)}
    )
    out: list[str] = []
    for label, summary in groups.items():
        if label:
            out.append(f"<h3>{_e(label)}</h3>")
        if "cpu_p95_percent" not in summary:
            out.append('<p class="muted">not monitored</p>')
            continue
        out.append(f"<pre>{_e(chr(10).join(resource_block(summary)))}</pre>")
        hosts = (summary.get("cluster") or {}).get("hosts") or {}
        rows = [{**f, "host": h} for h, f in hosts.items()]
        if rows:
            out.append(_records(rows, "each host: its own figures over the trials"))
    return "\n".join(out) or '<p class="muted">not monitored</p>'


def _human(
    header: Sequence[str],
    rows: Sequence[Sequence[object]],
    caption: str,
    right: frozenset[int] = frozenset(),
    classed: Mapping[int, str] = {},
) -> str:
    """A table of values already in human units (the terminal's and the Markdown's
    wording); on a narrow screen each row is a card of ``label: value`` lines.  Numbers,
    and the columns in ``right``, are right-aligned; a column in ``classed`` gives each
    cell the class of its prefix and value (``{3: "claim-"}``: ``claim-holds``)."""
    cap = f"<caption>{_e(caption)}</caption>" if caption else ""
    head = "".join(f"<th>{_e(h)}</th>" for h in header)

    def cls(i: int, v: object) -> str:
        if i in classed:
            return f' class="{_e(classed[i] + str(v))}"'
        return _NUM if i in right else _num_class(v)

    body = "".join(
        "<tr>"
        + "".join(
            f'<td data-label="{_e(h)}"{cls(i, v)}>{_e(v)}</td>'
            for i, (h, v) in enumerate(zip(header, row, strict=True))
        )
        + "</tr>"
        for row in rows
    )
    return f'<table class="cards">{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


_NUM = ' class="num"'


def _num_class(value: object) -> str:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    return _NUM if number else ""


def _raw(rows: Sequence[Mapping[str, Any]], caption: str) -> str:
    """Every field as ``--json`` has it, folded: for the audit, not the reading."""
    if not rows:
        return ""
    return (
        f'<details class="raw"><summary>{_e(caption)}: every field, as --json has it'
        f"</summary>{_records(rows)}</details>"
    )


def _pairs(pairs: Sequence[Mapping[str, Any]]) -> str:
    """Adjacent pairs of a ranking: the verdict and its tests, p-values as the terminal
    shows them."""
    from assay.report.format import format_p

    def p(x: Any) -> str:
        return format_p(float(x)) if isinstance(x, int | float) else "—"

    rows = [
        [
            str(r.get("better")),
            str(r.get("worse")),
            str(r.get("status")),
            p(r.get("welch_p")),
            p(r.get("mann_whitney_p")),
            f"{float(r['e_value']):.3g}" if isinstance(r.get("e_value"), int | float) else "—",
            str(r.get("note") or ""),
        ]
        for r in pairs
    ]
    header = ["better", "worse", "verdict", "Welch p", "Mann-Whitney p", "e-value", "note"]
    return _human(header, rows, "adjacent pairs") if rows else ""


def _grid(grid: Grid) -> str:
    """A table the terminal shows too (:class:`~assay.report.grid.Grid`), in its words."""
    return _human(grid.header, grid.rows, grid.title, grid.right) if grid.rows else ""


def _anova_terms(terms: Sequence[Mapping[str, Any]]) -> str:
    """The final model's ANOVA terms: share of the variance, F and p, as the terminal
    words them."""
    from assay.report.format import format_p

    def num(x: Any, fmt: str) -> str:
        return format(float(x), fmt) if isinstance(x, int | float) else "—"

    rows = [
        [
            str(t.get("term", "")).replace(":", " × "),
            str(t.get("df", "")),
            f"{num(t.get('pct_var'), '.1f')}%",
            num(t.get("f"), ".3g"),
            format_p(float(t["p"])) if isinstance(t.get("p"), int | float) else "—",
        ]
        for t in terms
    ]
    header = ["term", "df", "share of variance", "F", "p"]
    table = _human(header, rows, "ANOVA terms of the final model") if rows else ""
    return table + _raw(terms, "the ANOVA terms")


def _knobs(doc: Mapping[str, Any], result: Any) -> list[str]:
    """Each PI's knob ranking, top-k curve and stability, then the validation: the
    terminal's tables; every field folded under them."""
    from assay.report.knobs import curve_grid, ranking_grid, stability_grid, validation_grid

    out: list[str] = []
    analysis = getattr(result, "analysis", None)
    if analysis is None:
        for r in doc.get("rankings", []):
            out.append(_records(r.get("knobs", []), f"knob importance: {r.get('pi')}"))
        return out
    unsafe = {k.name for k in analysis.space.knobs if k.unsafe}
    for r, raw in zip(analysis.rankings, doc.get("rankings", []), strict=False):
        top = ", ".join(f"{n} ⚠" if n in unsafe else n for n in r.top)
        out.append(f"<h3>{_e(r.pi)}</h3><p><strong>top {r.top_k} by {_e(r.by)} importance: "
                   f"{_e(top)}</strong></p>")  # fmt: skip
        out.append(_grid(ranking_grid(r, unsafe, "knob importance", None)))
        if r.disagreement:
            out.append(f"<p>{_e(r.disagreement)}</p>")
        out.append(_grid(curve_grid(r)))
        out.append(_grid(stability_grid(r)))
        out.append(f"<p>{_e(r.stability_verdict())}</p>")
        out.extend(f"<p>{_e(note)}</p>" for note in r.notes)
        out.append(_raw(raw.get("knobs", []), f"knob importance: {r.pi}"))
    if analysis.validation:
        out.append(_grid(validation_grid(analysis.validation, analysis.primary.top_k)))
    return out


def _results(kind: str, doc: Mapping[str, Any], result: Any = None) -> str:
    """Every PI's estimate with its CI, n and method, in the terminal's units and words;
    every field of the JSON folded under each table."""
    from assay.report.markdown import compare_rows, run_rows

    out: list[str] = []
    if kind == "run":
        pis = doc.get("pis", [])
        out.append(_human(*run_rows(pis), "each PI: mean with its CI, n and method"))
        from assay.report.terminal import max_rss_line

        rss = max_rss_line(doc.get("max_rss"))
        if rss:
            out.append(f"<p>{_e(rss)}</p>")
        out.append(_raw(pis, "each PI"))
    elif kind == "compare":
        for c in doc.get("comparisons", []):
            title = f"{c.get('pi')} ({c.get('unit') or 'no unit'}), {c.get('direction')} is better"
            out.append(f"<h3>{_e(title)}</h3><p>method: {_e(c.get('method'))}</p>")
            variants = [{**v, "pi": c.get("pi")} for v in c.get("variants", [])]
            header, rows = compare_rows(variants)
            out.append(_human(header[1:], [r[1:] for r in rows], "ranking, best first"))
            out.append(_pairs(c.get("pairs", [])))
            out.append(_raw(c.get("variants", []), "the ranking"))
            out.append(_raw(c.get("pairs", []), "the pairs"))
    elif kind == "order":
        from assay.report.order import order_grid

        out.append(
            f"<p>verdict: {_e(doc.get('verdict'))}</p><p>method: {_e(doc.get('method'))}</p>"
        )
        if result is not None:
            out.append(_grid(order_grid(result)))
        out.append(_raw(doc.get("tests", []), f"each test: {doc.get('pi')} fixed vs random"))
    elif kind == "sweep":
        from assay.report.sweep import steps_grid

        summary = doc.get("summary") or {}
        out.append(f"<pre>{_e(summary.get('text', ''))}</pre>")
        if result is not None and result.steps:
            title = "steps (validation R² per split in the plot)"
            out.append(_grid(steps_grid(result.steps, title, len(result.params))))
        out.append(_raw(doc.get("steps", []), "the steps"))
        analysis = doc.get("analysis") or {}
        anova = analysis.get("anova") or {}
        out.append(_anova_terms(anova.get("terms", [])))
        tests: list[Mapping[str, Any]] = [
            t for t in (anova.get("settings_test"), anova.get("lack_of_fit")) if t
        ]
        if tests:
            out.append(_cards(tests, f"against the pure error ({anova.get('pure_error_df')} df)"))
        out.append(_cards(analysis.get("important_points", []), "important settings"))
        out.append(_sweep_settings(doc))
    elif kind == "knobs":
        out.extend(_knobs(doc, result))
    trials = doc.get("trials")
    if isinstance(trials, dict):
        out.append(_dl([("trials", trials.get("total")), ("by status", trials.get("by_status"))]))
    return "\n".join(out)


#: Settings listed in a sweep's page; beyond, the JSON (``assay show --json``) has them all.
_SETTINGS_SHOWN = 500


def _sweep_settings(doc: Mapping[str, Any]) -> str:
    """Each measured setting, in the order of the parameters' values: its repetitions and
    the PI's mean ± the half-width of its t interval."""
    pi = doc.get("pi") or {}
    name, unit = str(pi.get("name", "")), str(pi.get("unit") or "")
    params = [str(p) for p in doc.get("params") or []]
    settings = list(doc.get("settings") or [])
    conf = float((settings[0].get(f"{name}_confidence") or 0.95) if settings else 0.95)
    rows = []
    for r in settings[:_SETTINGS_SHOWN]:
        mean, half = r.get(name), r.get(f"{name}_half_width")
        shown = (
            "n/a"
            if mean is None
            else format_estimate(float(mean), math.inf if half is None else float(half), unit)
        )
        rows.append({**{p: r.get(p) for p in params}, "n": r.get(f"{name}_n"),
                     f"{name} mean ± {conf:.0%} CI": shown})  # fmt: skip
    more = len(settings) - len(rows)
    caption = f"each setting: {name} mean ± {conf:.0%} CI over its repetitions (t interval)"
    caption += f"; the first {len(rows)} of {len(settings)}" if more > 0 else ""
    return _cards(rows, caption)


def _warnings(doc: Mapping[str, Any], result: Any) -> str:
    warnings = list(doc.get("warnings") or getattr(result, "warnings", None) or [])
    if not warnings:
        return '<p class="muted">none</p>'
    return "<ul>" + "".join(f"<li>{_e(w)}</li>" for w in warnings) + "</ul>"


def _failures(doc: Mapping[str, Any]) -> str:
    failures = doc.get("failures") or []
    if not failures:
        return '<p class="muted">none</p>'
    out = []
    for f in failures:
        head = f"trial {f.get('seq')}: {f.get('status')}"
        out.append(
            f"<h3>{_e(head)}</h3>" + _dl([("error", f.get("error")), ("setting", f.get("setting"))])
        )
        for label in ("stderr_tail", "stdout_tail"):
            if f.get(label):
                out.append(
                    f"<p>{_e(label.replace('_', ' '))}:</p><pre>{_e(chr(10).join(f[label]))}</pre>"
                )
    return "\n".join(out)


def _plots(plots: Sequence[Plot]) -> str:
    if not plots:
        return '<p class="muted">no plot for this study</p>'
    return "\n".join(
        f'<figure id="plot-{_e(p.name)}"><figcaption>{_e(p.title)}</figcaption>{p.svg}</figure>'
        for p in plots
    )


# --- the plots -----------------------------------------------------------------------------


def study_plots(
    stored: StoredStudy, result: Any, trials: Sequence[TrialRecord], *, png: bool = False
) -> list[Plot]:
    """The plots of the study's design, as inline SVG (and PNG bytes with ``png``)."""
    kind = stored.kind
    makers: list[tuple[str, str, Callable[[Path], Any]]] = []
    if kind == "run":
        makers = _run_plots(stored, result, trials)
    elif kind == "compare":
        makers = [("ranking", "Ranking with confidence intervals",
                   lambda p: _ranking(result, trials, p)),
                  ("samples", "Each variant's readings, with its mean's CI drawn on them",
                   lambda p: _samples(result, trials, p)),
                  ("readings", "Readings in the order they were measured, one colour per "
                   "variant", lambda p: _compare_readings(result, trials, p))]  # fmt: skip
        scan = getattr(result, "scan", None)
        if scan is not None:  # variants that differ only in parameter values
            from assay.report.compare import scan_plot

            makers.append(("scan", f"Scan: {scan.pi} by {', '.join(scan.parameters)}, "
                           "each value's mean and CI, with the trend",
                           lambda p: scan_plot(scan, p)))  # fmt: skip
    elif kind == "order":
        makers = [("order", "Medians with CIs, fixed vs random order", lambda p: _order(result, p))]
    elif kind == "sweep":
        makers = _sweep_plots(result, result.as_dict())
    elif kind == "knobs":
        makers = _knobs_plots(result)
    lines = fault_timelines(trials)
    if any(line.series[0] for line in lines):
        title = "Each trial's throughput per second, its fault's time shaded (to its restore)"
        makers.append(("faults", title, lambda p: _fault_series(lines, p)))
    return [_render(name, title, draw, png) for name, title, draw in makers]


def _fault_series(lines: Sequence[FaultTimeline], path: Path) -> None:
    """The measured command's per-second series of every trial, one colour per variant
    (or faulted or not), with each faulted trial's window from its fault to its restore
    shaded and its fault's time marked."""
    fig, (ax,) = _figure(8.0, 3.8)
    colours: dict[str, str] = {}
    palette = ["tab:blue", "tab:red", "tab:green", "tab:orange", "tab:purple"]
    windows: dict[str, list[tuple[float, float]]] = {}
    for line in lines:
        xs, ys = line.series
        key = line.label or ("with a fault" if line.faults else "no fault")
        first = key not in colours  # one legend entry per variant
        colour = colours.setdefault(key, palette[len(colours) % len(palette)])
        ax.plot(xs, ys, "-", lw=1, color=colour, alpha=0.8, label=key if first else None)
        if line.faults:
            start = min(f[2] for f in line.faults)
            windows.setdefault(key, []).append(
                (start, max(line.restores, default=max(xs, default=start)))
            )
    for key, spans in windows.items():  # one shade per variant: its trials' median window
        start = float(np.median([a for a, _ in spans]))
        end = float(np.median([b for _, b in spans]))
        ax.axvspan(start, end, color=colours[key], alpha=0.12)
        ax.axvline(start, color=colours[key], lw=0.8, ls="--")
    actions = sorted({f[0] for line in lines for f in line.faults})
    ax.set_title(f"per-second throughput; dashed: the fault ({', '.join(actions)}), shaded: "
                 "until its restore", parse_math=False, fontsize=10)  # fmt: skip
    ax.set_xlabel("seconds after the measured command started")
    ax.set_ylabel("operations per second")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize="small")
    _save(fig, path)


def _render(name: str, title: str, draw: Callable[[Path], Any], png: bool) -> Plot:
    """Draw into a scratch directory (the reused plotters write files) and read back."""
    import matplotlib

    # text as <text> (searchable); the salt keeps clip-path ids apart between plots
    with (
        tempfile.TemporaryDirectory() as tmp,
        matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": name}),
    ):
        svg_path = Path(tmp) / f"{name}.svg"
        draw(svg_path)
        svg = svg_path.read_text(encoding="utf-8")
        data = None
        if png:
            png_path = Path(tmp) / f"{name}.png"
            draw(png_path)
            data = png_path.read_bytes()
    # inline: no XML prolog; no metadata (a date, namespace URLs): the same store gives
    # the same page
    svg = re.sub(r"\s*<metadata>.*?</metadata>", "", svg[svg.index("<svg") :], flags=re.S)
    return Plot(name, title, svg, data)


def _save(fig: Any, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, format=path.suffix.lstrip("."), dpi=110)


def _figure(width: float, height: float, ncols: int = 1) -> tuple[Any, list[Any]]:
    """A figure (no pyplot: no global state) with ``ncols`` axes side by side."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    return fig, list(fig.subplots(1, ncols, squeeze=False)[0])


def _unit(unit: str) -> str:
    return f" ({unit})" if unit else " (no unit)"


def _run_plots(
    stored: StoredStudy, result: Any, trials: Sequence[TrialRecord]
) -> list[tuple[str, str, Callable[[Path], Any]]]:
    from matplotlib.ticker import MaxNLocator

    ok = [t for t in trials if t.ok]
    series = []
    for r in result.results:
        pts = [(t.seq, t.readings[r.name]) for t in ok if r.name in t.readings]
        series.append((r, [p[0] for p in pts], [p[1] for p in pts]))
    target = stored.spec.stop.ci_width

    def readings(path: Path) -> None:
        fig, axes = _figure(6.5 * min(len(series), 2), 3.6, max(len(series), 1))
        for ax, (r, xs, ys) in zip(axes, series, strict=False):
            ax.plot(xs, ys, "o-", ms=3, lw=0.8, label="reading per round")
            if math.isfinite(r.low) and math.isfinite(r.high):
                ax.axhspan(r.low, r.high, color="tab:green", alpha=0.2,
                           label=f"final {r.confidence:.0%} CI")  # fmt: skip
            else:  # too few usable samples for a bounded interval
                ax.plot([], [], " ", label="final CI: unbounded")
            if math.isfinite(r.mean):
                ax.axhline(r.mean, color="tab:green", lw=1, label="final mean")
            one_per_round = r.n_raw + r.warmup_removed == len(ys)
            if r.warmup_removed and one_per_round and len(xs) > r.warmup_removed:
                cut = xs[r.warmup_removed] - 0.5
                ax.axvline(cut, color="tab:red", ls="--",
                           label=f"warm-up cut ({r.warmup_removed} removed)")  # fmt: skip
            ax.set_xlabel("round (trial number)")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.set_ylabel(f"{r.name}{_unit(r.unit)}", parse_math=False)
            ax.set_title(f"{r.name}: readings and the final CI", parse_math=False)
            ax.legend(fontsize="small")
        _save(fig, path)

    def narrowing(path: Path) -> None:
        fig, axes = _figure(6.5 * min(len(series), 2), 3.6, max(len(series), 1))
        for ax, (r, xs, ys) in zip(axes, series, strict=False):
            rel = []
            for n in range(2, len(ys) + 1):
                ci = t_interval(ys[:n], r.confidence)
                rel.append(100 * ci.half_width / abs(ci.mean) if ci.mean else math.nan)
            ax.plot(xs[1:], rel, "o-", ms=3, lw=0.8, label="first n readings (t-interval)")
            final = 100 * r.relative_half_width
            if xs and math.isfinite(final):  # the CI printed, with its corrections (#60)
                ax.plot([xs[-1]], [final], "*", ms=11, color="tab:green",
                        label=f"the final CI as reported: ±{final:.1f}%")  # fmt: skip
            ax.axhline(100 * target, color="tab:red", ls="--", label=f"target ±{target:.1%}")
            ax.set_xlabel("round (trial number)")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.set_ylabel("CI half-width (% of the mean)")
            ax.set_title(f"{r.name}: {r.confidence:.0%} CI narrowing over rounds",
                         parse_math=False)  # fmt: skip
            ax.legend(fontsize="small")
        _save(fig, path)

    def histogram(path: Path) -> None:
        fig, axes = _figure(6.5 * min(len(series), 2), 3.6, max(len(series), 1))
        for ax, (r, _, ys) in zip(axes, series, strict=False):
            ax.hist(ys, bins=min(40, max(5, len(ys) // 3)), color="tab:blue", alpha=0.7,
                    label=f"{len(ys)} readings")  # fmt: skip
            if math.isfinite(r.low) and math.isfinite(r.high):
                ax.axvspan(r.low, r.high, color="tab:green", alpha=0.25,
                           label=f"the mean's {r.confidence:.0%} CI")  # fmt: skip
            if math.isfinite(r.mean):
                ax.axvline(r.mean, color="tab:green", lw=1.2, label="mean")
            ax.set_xlabel(f"{r.name}{_unit(r.unit)}", parse_math=False)
            ax.set_ylabel("readings")
            ax.set_title(f"{r.name}: distribution of the readings", parse_math=False)
            ax.legend(fontsize="small")
        _save(fig, path)

    makers: list[tuple[str, str, Callable[[Path], Any]]] = []
    if any(ys for _, _, ys in series):
        makers += [
            ("readings", "Readings per round, the final CI and the warm-up cut", readings),
            ("histogram", "Distribution of the readings, with the mean and its CI", histogram),
            ("ci-narrowing", "CI half-width narrowing over rounds, and the final CI", narrowing),
        ]
    from assay.designs.run_until_ci import WPS_PI  # here: a sweep's page need not load it

    wps = next((r for r in result.results if r.name == WPS_PI), None)
    pairs = [(t.work, t.duration) for t in ok if t.work is not None and t.duration is not None]
    if wps is not None and pairs:
        makers.append(("work-fit", "Work per second: duration against work, t = α + w/v",
                       lambda p: _work_fit(wps, pairs, p)))  # fmt: skip
    return makers


def _work_fit(r: Any, pairs: Sequence[tuple[float, float]], path: Path) -> None:
    """Each round's duration against its work amount, and the fitted line ``t = alpha +
    w / v`` with the lines of the CI's two ends of ``v`` (Pilot's eq. 4)."""
    import numpy as np

    fig, (ax,) = _figure(6.5, 3.8)
    w = np.array([p[0] for p in pairs], dtype=float)
    t = np.array([p[1] for p in pairs], dtype=float)
    ax.plot(w, t, "o", ms=3, alpha=0.7, label="round")
    alpha = float(r.extra.get("alpha_s", math.nan))
    grid = np.linspace(0.0, float(w.max()), 50)
    unit = r.unit.split("/")[0] if r.unit else "work"
    if math.isfinite(r.mean) and r.mean > 0 and math.isfinite(alpha):
        ax.plot(grid, alpha + grid / r.mean, color="tab:green",
                label=f"fit: v = {r.mean:.4g} {r.unit}")  # fmt: skip
        for end, name in ((r.low, "low"), (r.high, "high")):
            if math.isfinite(end) and end > 0:
                ax.plot(grid, alpha + grid / end, color="tab:green", ls=":", lw=0.8,
                        label=f"CI {name} end: v = {end:.4g}")  # fmt: skip
    else:
        ax.plot([], [], " ", label="no fit")
    ax.set_xlabel(f"work per round ({unit})", parse_math=False)
    ax.set_ylabel("duration (s)")
    ax.set_title(f"{r.name}: duration against work", parse_math=False)
    ax.legend(fontsize="small")
    _save(fig, path)


def _ranking(result: Any, trials: Sequence[TrialRecord], path: Path) -> None:
    """Each PI's variants, best on top, with their CIs (medians with their order-statistic
    CIs where the PI is compared on the median); a variant the comparison could not
    estimate is drawn hollow, with the plain t-interval of its raw readings."""
    comps = result.as_dict()["comparisons"]
    most = max((len(c["variants"]) for c in comps), default=1)
    fig, axes = _figure(6.5 * min(len(comps), 2), 0.45 * most + 2, max(len(comps), 1))
    for ax, c in zip(axes, comps, strict=False):
        rows = c["variants"][::-1]  # the best on top
        ys = range(len(rows))
        raw = False
        stat = "median" if c.get("statistic") == "median" else "mean"
        for y, v in zip(ys, rows, strict=True):
            if stat == "median" and v.get("median") is not None:
                mean, low, high = v["median"], v.get("median_low"), v.get("median_high")
            else:
                mean, low, high = v.get("mean"), v.get("low"), v.get("high")
            face = "tab:blue"
            if mean is None:
                values = [
                    t.readings[c["pi"]]
                    for t in trials
                    if t.ok
                    and t.setting.get("variant") == v.get("variant")
                    and c["pi"] in t.readings
                ]
                if len(values) < 2:
                    continue
                ci = t_interval(values, c["confidence"])
                mean, low, high, face, raw = ci.mean, ci.low, ci.high, "none", True
            bounded = low is not None and high is not None and math.isfinite(high - low)
            err = [[mean - low], [high - mean]] if bounded else None
            ax.errorbar([mean], [y], xerr=err, fmt="o", capsize=5, color="tab:blue", mfc=face)
        ax.set_yticks(list(ys))
        ax.set_yticklabels(_labels([v.get("variant") for v in rows]), parse_math=False)
        ax.set_ylim(-0.7, len(rows) - 0.3)
        ax.set_xlabel(f"{c['pi']}{_unit(c['unit'])}, {stat} with {c['confidence']:.0%} CI",
                      parse_math=False)  # fmt: skip
        note = "\n(hollow: no estimate; t-interval of the raw readings)" if raw else ""
        ax.set_title(f"{c['pi']}: {c['direction']} is better, best on top{note}",
                     parse_math=False, fontsize=10)  # fmt: skip
    _save(fig, path)


#: Characters of a variant's name a plot shows (a long command line is cut in its middle:
#: the axis would crowd out the plot; the tables above have the whole name).
LABEL_CHARS = 40


def _label(name: object, width: int = LABEL_CHARS) -> str:
    """A name as a plot's label: whole when short, else its start and end around "…".

    >>> _label("sqlite3 db 'PRAGMA synchronous=FULL; INSERT INTO t VALUES (1, 1000);'", 24)
    "sqlite3 db … (1, 1000);'"
    """
    text = str(name)
    if len(text) <= width:
        return text
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


def _shared_start(texts: Sequence[str]) -> str:
    """The characters every text starts with (the lowest and highest share them all)."""
    first, last = min(texts), max(texts)
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    return first[:n]


def _labels(names: Sequence[object], width: int = LABEL_CHARS) -> list[str]:
    """Plot labels for names that may be long and alike (command lines that differ in
    one word): what they share at the start and the end is left out ("…"), at word
    boundaries, so that the labels keep what tells them apart.

    >>> _labels(["sqlite3 /tmp/b.db 'PRAGMA synchronous=OFF; SELECT count(*) FROM t;'",
    ...          "sqlite3 /tmp/b.db 'PRAGMA synchronous=FULL; SELECT count(*) FROM t;'"])
    ['…synchronous=OFF;…', '…synchronous=FULL;…']
    >>> _labels(["a", "b"])
    ['a', 'b']
    """
    texts = [str(n) for n in names]
    if len(texts) < 2 or all(len(t) <= width for t in texts):
        return [_label(t, width) for t in texts]
    pre = _shared_start(texts)
    pre = pre[: pre.rfind(" ") + 1] if " " in pre else ""  # whole words only
    suf = _shared_start([t[::-1] for t in texts])[::-1]
    suf = suf[suf.find(" ") :] if " " in suf else ""
    out = []
    for t in texts:
        mid = t[len(pre) : len(t) - len(suf)] if len(pre) + len(suf) < len(t) else t
        out.append(("…" if pre and mid != t else "") + mid + ("…" if suf and mid != t else ""))
    return [_label(o, width) for o in out]


def _variant_readings(
    trials: Sequence[TrialRecord], pi: str, variant: Any
) -> list[tuple[int, float]]:
    """(trial number, reading) of ``pi`` for each ok trial of ``variant``."""
    return [
        (t.seq, float(t.readings[pi]))
        for t in trials
        if t.ok and t.setting.get("variant") == variant and pi in t.readings
    ]


def _samples(result: Any, trials: Sequence[TrialRecord], path: Path) -> None:
    """Per variant (best on top), every reading as a point, jittered apart, and the
    estimate with its CI drawn on them: the data the interval rests on."""
    comps = result.as_dict()["comparisons"]
    most = max((len(c["variants"]) for c in comps), default=1)
    fig, axes = _figure(6.5 * min(len(comps), 2), 0.6 * most + 2, max(len(comps), 1))
    for ax, c in zip(axes, comps, strict=False):
        rows = c["variants"][::-1]
        median = c.get("statistic") == "median"
        for y, v in enumerate(rows):
            xs = [x for _, x in _variant_readings(trials, c["pi"], v.get("variant"))]
            # an even spread, not random: the same page from the same store
            jitter = [((i * 0.618) % 1.0 - 0.5) * 0.5 for i in range(len(xs))]
            ax.scatter(xs, [y + j for j in jitter], s=9, alpha=0.45, color="tab:gray",
                       linewidths=0, label="reading" if y == 0 else None)  # fmt: skip
            est = v.get("median") if median else v.get("mean")
            low, high = (v.get("median_low"), v.get("median_high")) if median else (
                v.get("low"), v.get("high"))  # fmt: skip
            if est is None:
                continue
            bounded = low is not None and high is not None and math.isfinite(high - low)
            err = [[est - low], [high - est]] if bounded else None
            shown = f"{'median' if median else 'mean'} and CI" if y == 0 else None
            ax.errorbar([est], [y], xerr=err, fmt="D", ms=6, capsize=6, color="black",
                        label=shown)  # fmt: skip
        ax.set_yticks(list(range(len(rows))))
        ax.set_yticklabels(_labels([v.get("variant") for v in rows]), parse_math=False)
        ax.set_ylim(-0.7, len(rows) - 0.3)
        ax.set_xlabel(f"{c['pi']}{_unit(c['unit'])}", parse_math=False)
        ax.set_title(f"{c['pi']}: readings per variant, best on top", parse_math=False,
                     fontsize=10)  # fmt: skip
        ax.legend(fontsize="small")
    _save(fig, path)


def _compare_readings(result: Any, trials: Sequence[TrialRecord], path: Path) -> None:
    """Each reading against its trial number, one colour per variant: drift over the
    study shows, and interleaving makes it hit every variant alike."""
    comps = result.as_dict()["comparisons"]
    fig, axes = _figure(6.5 * min(len(comps), 2), 3.6, max(len(comps), 1))
    for ax, c in zip(axes, comps, strict=False):
        names = [v.get("variant") for v in c["variants"]]
        for name, shown in zip(names, _labels(names), strict=True):
            pts = _variant_readings(trials, c["pi"], name)
            ax.plot([s for s, _ in pts], [x for _, x in pts], "o", ms=3, label=shown)
        ax.set_xlabel("trial number (time order)")
        ax.set_ylabel(f"{c['pi']}{_unit(c['unit'])}", parse_math=False)
        ax.set_title(f"{c['pi']}: readings as measured", parse_math=False, fontsize=10)
        ax.legend(fontsize="small")
    _save(fig, path)


def _order(result: Any, path: Path) -> None:
    from assay.report.order import plot_order

    plot_order(result, path)


_R2_FLOOR = -1.0


def _sweep_plots(
    result: Any, doc: Mapping[str, Any]
) -> list[tuple[str, str, Callable[[Path], Any]]]:
    """A sweep's plots, of its result (a :class:`~assay.studies.sweep.SweepResult` or
    :class:`~assay.studies.sweep.KeptSweep`) and its JSON ``doc``: the analysis is
    drawn from the JSON, which a kept page has without computing it again."""
    out: list[tuple[str, str, Callable[[Path], Any]]] = []
    analysis: Mapping[str, Any] | None = doc.get("analysis")

    def r2(path: Path) -> None:
        fig, (ax,) = _figure(6.5, 3.6)
        steps = doc["steps"]
        drawn = False
        for d in steps:
            for key, color, dx in (("r2", "tab:blue", -0.08), ("r2_main", "tab:green", 0.08)):
                # a hopeless split (R² of -400) would squash the rest: drawn at the floor
                splits = [max(x, _R2_FLOOR) for x in d.get(key) or [] if x is not None]
                ax.plot([d["step"] + dx] * len(splits), splits, "o", ms=3, color=color, alpha=0.6)
                drawn = drawn or bool(splits)
        for th in {d.get("threshold") for d in steps} - {None}:
            ax.axhline(th, color="tab:red", ls="--", label=f"threshold R² = {th:g}")
        form = steps[-1].get("form", "model") if steps else "model"
        ax.plot([], [], "o", color="tab:blue", label=f"{form}: R² per validation split")
        ax.plot([], [], "o", color="tab:green", label="main effects only")
        whole = bool(steps) and steps[-1].get("reason") == "grid"
        if not drawn:
            why = ("the whole grid measured at once: no held-out R²\n(analysed as a designed "
                   "experiment)" if whole else "validation R² undefined at every step\n"
                   "(too few settings)")  # fmt: skip
            ax.text(0.5, 0.5, why, transform=ax.transAxes, ha="center", va="center",
                    color="#666")  # fmt: skip
        ax.set_ylim(_R2_FLOOR - 0.05, 1.05)
        ax.set_xlim(-0.5, len(steps) - 0.5)
        # at most ~12 labels, turned, so that many steps' labels do not overlap
        every = max(1, -(-len(steps) // 12))
        shown = [d for i, d in enumerate(steps) if i % every == 0 or i == len(steps) - 1]
        ax.set_xticks([d["step"] for d in shown],
                      [f"{d['step']} ({d['n_measured']})" for d in shown],
                      rotation=45, ha="right")  # fmt: skip
        ax.set_xlabel("step (settings measured)")
        ax.set_ylabel("validation R² (unitless)")
        ax.set_title(f"Model accuracy per step (R² below {_R2_FLOOR:g} drawn at {_R2_FLOOR:g})")
        ax.legend(fontsize="small", loc="lower right")
        _save(fig, path)

    def terms(path: Path) -> None:
        assert analysis is not None  # drawn only then
        rows = (analysis.get("anova") or {}).get("terms") or []
        alpha = analysis.get("alpha", 0.05)
        fig, (ax,) = _figure(6.5, 0.35 * max(len(rows), 1) + 1.6)
        names = [str(r["term"]) for r in rows][::-1]
        pct = [r.get("pct_var") or 0.0 for r in rows][::-1]
        sig = [r.get("p") is not None and r["p"] < alpha for r in rows][::-1]
        ax.barh(range(len(names)), pct, color=["tab:blue" if s else "#bbb" for s in sig])
        ax.set_yticks(list(range(len(names))))
        ax.set_yticklabels(names, parse_math=False)
        ax.set_xlabel("share of the variance explained (%)")
        ax.set_title(f"ANOVA terms (blue: significant at p < {alpha:g})")
        _save(fig, path)

    def tiles(path: Path) -> None:
        from assay.report.tile import tile_plot

        pi = result.pi
        # the colours on the scale the analysis used: on log(PI) a linear scale made
        # most tiles one colour (issue #44)
        tile_plot(result.measured, pi.name, path, result.params[:6], unit=pi.unit,
                  log=result.transform == "log",
                  title=f"{pi.name}{_unit(pi.unit)} per measured setting")  # fmt: skip

    if result.steps:
        out.append(("r2-per-step", "Validation R² per step", r2))
    if analysis is not None:
        out.append(("terms", "Significant terms", terms))
    if len(result.measured) and len(result.params) >= 2:
        out.append(("tiles", "Measured settings (tile plot)", tiles))
    elif len(result.settings):  # one parameter: no tiles, each setting's mean and CI

        def per_setting(path: Path) -> None:
            from assay.report.sweep import settings_plot

            settings_plot(result, path)

        out.append(("settings", "Each setting: mean with its CI", per_setting))
    points = list(analysis.get("important_points") or [])[:4] if analysis is not None else []
    if points and len(result.measured):
        out.append(("important-points", "Important points: the PI along each one's parameter",
                    lambda p: _important_points(result, points, p)))  # fmt: skip
    return out


def _important_points(result: Any, points: Sequence[Mapping[str, Any]], path: Path) -> None:
    """One panel per important point (as the result's JSON has it): the PI's mean over
    the measured settings at each value of the point's parameter (within its fixed
    value, if any), with a 95% t-interval, and the knee or turning point marked where
    the analysis found it."""
    import numpy as np

    pi = result.pi
    frame = result.measured
    fig, axes = _figure(4.2 * min(len(points), 3), 3.6, len(points))
    for ax, pt in zip(axes, points, strict=False):
        fixed, param, kind = pt.get("fixed"), str(pt["param"]), str(pt["kind"])
        value, support = float(pt["value"]), pt.get("support")
        rows = frame
        if fixed is not None and fixed[0] in frame.columns:
            rows = frame[frame[fixed[0]].astype(str) == str(fixed[1])]
        xs, means, lows, highs = [], [], [], []
        for value, group in rows.groupby(param, sort=True):
            ys = group[pi.name].to_numpy(dtype=float)
            ys = ys[np.isfinite(ys)]
            if ys.size == 0:
                continue
            xs.append(float(value))  # points are on numeric params
            means.append(float(ys.mean()))
            ci = t_interval(ys, 0.95) if ys.size > 1 else None
            ok = ci is not None and math.isfinite(ci.low) and math.isfinite(ci.high)
            lows.append(ci.low if ok and ci is not None else means[-1])
            highs.append(ci.high if ok and ci is not None else means[-1])
        m = np.array(means)
        ax.errorbar(xs, m, yerr=[m - np.array(lows), np.array(highs) - m], fmt="o-", ms=3,
                    lw=0.8, capsize=2, label="mean over settings, 95% CI")  # fmt: skip
        ax.axvline(value, color="tab:red", ls="--", label=f"{kind} at {value:g}")
        if xs and min(xs) > 0 and max(xs) / min(xs) >= 16:  # e.g. 1, 2, 4, ... 64
            ax.set_xscale("log", base=2)
            ax.set_xticks(xs, [f"{x:g}" for x in xs])
            ax.minorticks_off()
        ax.set_xlabel(param, parse_math=False)
        ax.set_ylabel(f"{pi.name}{_unit(pi.unit)}", parse_math=False)
        where = f", {fixed[0]} = {fixed[1]}" if fixed is not None else ""
        term = " × ".join(str(pt.get("term", param)).split(":"))
        found = "" if support is None else f" (found again in {float(support):.0%} of resamples)"
        ax.set_title(f"{term}{where}{found}", fontsize="medium", parse_math=False)
        ax.legend(fontsize="small")
    _save(fig, path)


def _knobs_plots(result: Any) -> list[tuple[str, str, Callable[[Path], Any]]]:
    from matplotlib.ticker import MaxNLocator

    analysis = result.analysis

    def importance(path: Path) -> None:
        from assay.report.knobs import plot_importance

        plot_importance(analysis, path)

    def curve(path: Path) -> None:
        rankings = analysis.as_dict()["rankings"]
        fig, axes = _figure(6.5 * min(len(rankings), 2), 3.6, max(len(rankings), 1))
        for ax, r in zip(axes, rankings, strict=False):
            pts = [(p["k"], p["r2"]) for p in r["r2_curve"] if p.get("r2") is not None]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-")
            if r.get("suggested_k"):
                ax.axvline(r["suggested_k"], color="tab:red", ls="--",
                           label=f"suggested k = {r['suggested_k']}")  # fmt: skip
                ax.legend(fontsize="small")
            ax.set_xlabel("k (the top-k knobs, by importance)")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.set_ylabel("out-of-bag R² (unitless)")
            ax.set_title(f"{r['pi']}: R² of the top-k knobs", parse_math=False)
        _save(fig, path)

    def stability(path: Path) -> None:
        rankings = [r for r in analysis.rankings if r.stability]
        fig, axes = _figure(6.5 * min(len(rankings), 2), 3.6, max(len(rankings), 1))
        for ax, r in zip(axes, rankings, strict=False):
            sizes = [row.size for row in r.stability]
            ax.plot(sizes, [row.iou_mean for row in r.stability], "o-", label="mean IoU")
            ax.plot(sizes, [row.iou_min for row in r.stability], "v--", label="lowest IoU")
            ax.set_ylim(-0.05, 1.05)
            ax.set_xlabel("subset size (samples)")
            ax.set_ylabel("IoU with the full-sample top-k (unitless)")
            ax.set_title(f"{r.pi}: stability of the top {r.top_k}", parse_math=False)
            ax.legend(fontsize="small", loc="lower right")
        _save(fig, path)

    if not analysis.rankings:
        return []
    out: list[tuple[str, str, Callable[[Path], Any]]] = [
        ("importance", "Knob importance", importance),
        ("top-k-r2", "Top-k R² curve", curve),
    ]
    if any(r.stability for r in analysis.rankings):
        # how far the top-k holds on subsets of the samples (Kanellis et al.'s check)
        out.append(("stability", "Top-k stability on subsets (IoU)", stability))
    return out
