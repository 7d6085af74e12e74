"""Every study of one or more stores as a small static site (``assay report STORE...
-o DIR/``).

The site is an ``index.html`` of every study (its kind, PI, answer, when it last ran,
its host and a link to its page), newest first, with the benchmarks measured across
commits (``assay history`` data) and their regressions first, as asv's regressions
page does, offline; one page per study (the page ``assay report`` writes for it, see
:func:`assay.report.html.html_report`); and one page per benchmark across commits:
each commit's mean and CI in commit order, the change points marked with the commits
around them, the regressions (worse steps whose CI excludes zero) listed first.

Every page follows the rules of the single-study page: no script, no network (inline
CSS, inline SVG whose text stays text), every outside string escaped.  The pages link
to each other by relative file names only.

Rendering (:func:`build_site`) reads the stores and writes nothing; :func:`write_site`
writes the pages (atomically, with the umask's mode) and removes the pages a previous
run wrote that this one did not, as listed in ``DIR/.assay-site.json``; nothing else in
``DIR`` is touched.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay._version import __version__
from assay.errors import SpecError, StudyError
from assay.report.html import _e, _figure, _human, _render, _save, _section, _unit, html_document
from assay.store import ARCHIVED, Store, StoreError, is_archived
from assay.studies.history import HistoryChange, HistoryResult

__all__ = [
    "INDEX",
    "MANIFEST",
    "IndexRow",
    "Page",
    "Site",
    "build_site",
    "history_page",
    "index_page",
    "is_regression",
    "page_name",
    "write_site",
]

#: The site's front page.
INDEX = "index.html"
#: The pages the last run wrote (a re-run removes those it does not write again).
MANIFEST = ".assay-site.json"

#: A per-commit study's name: ``STUDY@<7 to 40 hex digits>`` (see
#: :func:`assay.studies.history.commit_study_name`).
_COMMIT_STUDY = re.compile(r"(?P<base>.+)@[0-9a-f]{7,40}\Z", re.S)
#: A page name this module writes (and so may remove): no separator, no leading dot.
_PAGE = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]*\.html\Z")
_WORD = re.compile(r"[^A-Za-z0-9_]+")

_SITE_CSS = """
td{overflow-wrap:break-word}td.path{overflow-wrap:anywhere}td.answer-cell{min-width:16em}
nav{font-size:.9em;margin-bottom:1em}
.regression{border-left:4px solid #c33;padding-left:.5em}
@media (max-width:600px){td.answer-cell{min-width:0}}
"""
_SHORT = 10  # hex digits of a commit shown


@dataclass(frozen=True)
class Page:
    """One file of the site: its name in ``DIR`` and its HTML."""

    name: str
    html: str


@dataclass
class IndexRow:
    """One line of the index: a study, or a benchmark across commits (kind
    ``"history"``)."""

    store: str
    study: str
    kind: str
    pi: str
    answer: str
    last_run: float | None  # Unix seconds of its newest trial
    host: str
    page: str | None  # the page's file name; None: it has none (see ``problem``)
    problem: str = ""
    regressions: list[HistoryChange] = field(default_factory=list)
    unit: str = ""
    confidence: float = 0.95


@dataclass
class Site:
    """The pages of a site (the index first) and the rows of its index."""

    pages: list[Page]
    rows: list[IndexRow]

    @property
    def studies(self) -> int:
        """How many pages besides the index."""
        return len(self.pages) - 1


# --- names ---------------------------------------------------------------------------------


def page_name(store: Path, study: str, *, prefix: str = "") -> str:
    """The file name of a study's page: the store's and study's names reduced to
    ``[A-Za-z0-9_-]`` (no separator, no dot, so no leading dot) and a digest of the
    store's absolute path and the study's whole name, so that two studies never share a
    page and a re-run gives each study the same page.

    >>> name = page_name(Path("/x/a.assay.db"), "../etc/<script>")
    >>> name.startswith("a-etc-script-"), name.endswith(".html"), len(name)
    (True, True, 30)
    """
    key = "\0".join((prefix, str(store.expanduser().resolve()), study))
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    stem = store.name.split(".", 1)[0]
    words = _WORD.sub("-", f"{stem}-{study}").strip("-_")[:60].strip("-_") or "study"
    return f"{prefix}{words}-{digest}.html"


# --- reading the stores --------------------------------------------------------------------


@dataclass
class _StoreView:
    """What the index needs of a store's studies, read once."""

    path: Path
    entries: list[Any]  # StudyEntry, oldest first (archived ones left out)
    hosts: dict[str, str]
    histories: list[str]  # base names with a history (per-commit studies or revisions)


def _read_store(path: Path) -> _StoreView:
    from assay.studies.catalog import list_studies

    entries = list_studies(path)
    hosts: dict[str, str] = {}
    bases: list[str] = []
    with Store(path, read_only=True) as db:
        for name in db.study_names():
            found = db.find_study(name)
            if found is None:
                continue
            envs = db.environments(found[0])
            host = next((str(e["host"]) for e in reversed(envs) if e.get("host")), "")
            hosts[name] = host
            commit = _commit_base(name)
            base = name.split(ARCHIVED, 1)[0] if is_archived(name) else commit or name
            revisions = {e.get("git_revision") for e in envs} - {None, ""}
            if (commit is not None or revisions) and base not in bases:
                bases.append(base)
    return _StoreView(path, entries, hosts, bases)


def _commit_base(name: str) -> str | None:
    """The study a per-commit study (``STUDY@<sha>``) belongs to, or None."""
    found = _COMMIT_STUDY.match(name)
    return found.group("base") if found is not None else None


def _pis(stored: Any) -> str:
    asked = stored.last_result.get("pi")
    if isinstance(asked, str) and asked:
        return asked
    return ", ".join(p.name for p in stored.spec.pis)


def build_site(
    stores: Sequence[Path],
    *,
    on_study: Callable[[str, str], None] | None = None,
    before_drawing: Callable[[], None] | None = None,
) -> Site:
    """Every study of ``stores`` rendered: the index, a page per study that can be
    analysed, and a page per benchmark across commits.  Reads the stores, writes
    nothing.  A study that cannot be analysed gets an index row saying why and no
    page; a store that cannot be read raises (:class:`~assay.store.NotAStoreError`,
    :class:`~assay.store.StoreError`).  ``on_study(store, study)`` is called before
    each study is rendered (progress), ``before_drawing()`` before a plot is drawn (a
    page whose study kept its plots draws none)."""
    from assay.report.answer import answer
    from assay.report.html import report_page

    views = [_read_store(p) for p in _unique(stores)]
    rows: list[IndexRow] = []
    pages: list[Page] = []
    taken: set[str] = {INDEX}
    study_pages: dict[tuple[str, str], str] = {}
    for view in views:
        for entry in view.entries:
            if on_study is not None:
                on_study(str(view.path), entry.name)
            row = IndexRow(
                store=str(view.path),
                study=entry.name,
                kind=entry.kind,
                pi="",
                answer="",
                last_run=entry.last_trial,
                host=view.hosts.get(entry.name, ""),
                page=None,
            )
            rows.append(row)
            try:
                stored, result, html, _ = report_page(
                    view.path, entry.name, before_drawing=before_drawing
                )
                row.pi = _pis(stored)
                row.answer = answer(stored.kind, result.as_dict())
            except (StudyError, SpecError, StoreError, ValueError) as exc:
                row.problem = f"cannot be analysed: {exc}"
                continue
            name = _claim(page_name(view.path, entry.name), taken)
            row.page = name
            study_pages[(str(view.path), entry.name)] = name
            pages.append(Page(name, _with_nav(html)))
    for view in views:
        for base in view.histories:
            if on_study is not None:
                on_study(str(view.path), f"{base} (across commits)")
            found, page = _history(view, base, study_pages, taken, before_drawing)
            if found is not None:
                rows.append(found)
            if page is not None:
                pages.append(page)
    index = Page(INDEX, index_page(rows, [str(v.path) for v in views]))
    return Site([index, *pages], rows)


def _unique(stores: Sequence[Path]) -> list[Path]:
    seen: set[Path] = set()
    out: list[Path] = []
    for p in stores:
        key = p.expanduser().resolve()
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


def _claim(name: str, taken: set[str]) -> str:
    """``name``, or (on the rare digest collision) ``name`` with a number: unique."""
    stem, n = name.removesuffix(".html"), 2
    while name in taken:
        name, n = f"{stem}-{n}.html", n + 1
    taken.add(name)
    return name


def _history(
    view: _StoreView,
    base: str,
    study_pages: Mapping[tuple[str, str], str],
    taken: set[str],
    before_drawing: Callable[[], None] | None = None,
) -> tuple[IndexRow | None, Page | None]:
    """The index row and page of ``base``'s history in the store (none when it has a
    single revision: no history to show); ``before_drawing()`` before its plot."""
    from assay.studies.history import load_history

    members = [e for e in view.entries if e.name == base or _commit_base(e.name) == base]
    last = max((e.last_trial for e in members if e.last_trial is not None), default=None)
    host = next((view.hosts[e.name] for e in reversed(members) if view.hosts.get(e.name)), "")
    row = IndexRow(str(view.path), base, "history", "", "", last, host, None)
    try:
        h = load_history(view.path, base)
    except (StudyError, SpecError, StoreError, ValueError) as exc:
        row.problem = f"its history cannot be read: {exc}"
        return row, None
    if len(h.points) < 2:
        return None, None
    row.pi, row.unit, row.confidence = h.pi, h.unit, h.confidence
    row.regressions = [c for c in h.changes if is_regression(c)]
    row.answer = history_answer(h)
    commit_pages = {
        p.revision: study_pages[(str(view.path), s)]
        for p in h.points
        for s in p.studies
        if (str(view.path), s) in study_pages
    }
    name = _claim(page_name(view.path, base, prefix="history-"), taken)
    row.page = name
    if before_drawing is not None:
        before_drawing()
    return row, Page(name, history_page(h, commit_pages))


# --- the history page ----------------------------------------------------------------------


def is_regression(c: HistoryChange) -> bool:
    """A step the PI's worse way whose CI (Welch's, of the difference) excludes zero:
    the history's own verdict (:class:`~assay.studies.history.HistoryChange`)."""
    return c.worse and c.significant


def _changes_in_order(h: HistoryResult) -> list[HistoryChange]:
    """The regressions first (newest first), then the other changes (newest first)."""
    newest = list(reversed(h.changes))
    return [c for c in newest if is_regression(c)] + [c for c in newest if not is_regression(c)]


def _pct(x: float) -> str:
    return f"{x * 100:+.1f}%" if math.isfinite(x) else ("-∞" if x < 0 else "+∞")


def _step(c: HistoryChange, unit: str) -> str:
    from assay.report.history import _signed

    return f"{_signed(c.difference, unit)} ({_pct(c.relative)})"


def _step_ci(c: HistoryChange, unit: str) -> str:
    from assay.report.history import _signed

    return (
        f"{_signed(c.diff_low, unit)} … {_signed(c.diff_high, unit)} "
        f"({_pct(c.rel_low)} … {_pct(c.rel_high)})"
    )


def history_answer(h: HistoryResult) -> str:
    """The history in one sentence: how many commits, and its newest regression."""
    regressions = [c for c in h.changes if is_regression(c)]
    counted = f"{len(h.measured)} of {len(h.points)} commits with a result"
    if regressions:
        c = regressions[-1]
        return (
            f"{h.pi}: {len(regressions)} regression(s); the newest at "
            f"{c.revision[:_SHORT]} (after {c.previous[:_SHORT]}): {_step(c, h.unit)}, "
            f"{h.confidence:.0%} CI {_step_ci(c, h.unit)}; {counted}"
        )
    if h.changes:
        return f"{h.pi}: {len(h.changes)} change point(s), no regression; {counted}"
    return f"{h.pi}: no change point; {counted}"


def _change_rows(h: HistoryResult, changes: Iterable[HistoryChange]) -> list[list[object]]:
    rows: list[list[object]] = []
    for c in changes:
        kind = "regression" if is_regression(c) else ("worse" if c.worse else "better")
        if c.worse and not is_regression(c):
            kind = "worse (CI includes 0)"
        suspects = " ".join(s[:_SHORT] for s in c.suspects[:8])
        if len(c.suspects) > 8:
            suspects += f" (+{len(c.suspects) - 8} more)"
        rows.append(
            [
                kind,
                c.revision[:_SHORT],
                c.previous[:_SHORT],
                _step(c, h.unit),
                _step_ci(c, h.unit),
                suspects,
                f"{c.p_value:.3g}",
            ]
        )
    return rows


_CHANGE_HEADER = [
    "change",
    "first commit after",
    "last commit before",
    "step",
    "CI of the step",
    "commits that may have made it",
    "p",
]


def history_page(h: HistoryResult, commit_pages: Mapping[str, str] | None = None) -> str:
    """The page of a benchmark across commits: its answer, the changes (regressions
    first), the plot of each commit's mean and CI with the change points marked, and a
    row per commit (linked to its study's page where ``commit_pages`` has one)."""
    from assay.report.history import _estimate, _state

    pages = commit_pages or {}
    title = f"{h.study}: {h.pi} across commits"
    order = "git order, oldest first" if h.order == "git" else "order of first trial"
    changes = _changes_in_order(h)
    if changes:
        cap = f"change points, regressions first ({h.confidence:.0%} CIs, Welch)"
        change_html = _human(_CHANGE_HEADER, _change_rows(h, changes), cap)
    else:
        change_html = (
            f'<p class="muted">no change point (E-Divisive means, permutation test at '
            f"alpha = {_e(f'{h.alpha:g}')})</p>"
        )
    plot = _render("history", title, lambda p: _history_plot(h, p), False)
    figure = (
        f'<figure id="plot-history"><figcaption>{_e(plot.title)}</figcaption>{plot.svg}</figure>'
    )
    starts = {c.revision for c in h.changes}
    commit_rows = []
    for i, p in enumerate(h.points):
        link = pages.get(p.revision)
        sha = _e(p.revision[:_SHORT])
        cell = f'<a href="{_e(link)}">{sha}</a>' if link else sha
        mark = "change point" if p.revision in starts else ""
        commit_rows.append(
            "<tr>"
            f'<td data-label="#" class="num">{i + 1}</td>'
            f'<td data-label="commit"><code>{cell}</code></td>'
            f'<td data-label="{_e(h.pi)}" class="num">{_e(_estimate(p, h.unit))}</td>'
            f'<td data-label="trials" class="num">{p.ok_trials}/{p.trials}</td>'
            f'<td data-label="state">{_e(" ".join(filter(None, [_state(p), mark])))}</td>'
            "</tr>"
        )
    head = "".join(f"<th>{_e(x)}</th>" for x in ("#", "commit", h.pi, "trials", "state"))
    commits = (
        f'<table class="cards"><caption>{_e(f"each commit ({order})")}</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(commit_rows)}</tbody></table>"
    )
    notes = "".join(f"<li>{_e(n)}</li>" for n in h.notes)
    method = (
        f"<p>Each commit's {_e(h.pi)} is the mean with its {h.confidence:.0%} CI as "
        "<code>assay run</code> reports it; change points by E-Divisive means with a "
        f"permutation test of each candidate (alpha = {_e(f'{h.alpha:g}')}, "
        f"{h.permutations} permutations, at least {h.min_size} commits on each side); each "
        "step with Welch's CI of the difference between the segment means.  A regression "
        "is a step the worse way whose CI excludes zero.</p>"
        + (f"<ul>{notes}</ul>" if notes else "")
        + f'<p class="muted">store: {_e(h.store)}; repository: {_e(h.repo or "none")}</p>'
    )
    body = [
        f'<nav><a href="{INDEX}">all studies</a></nav>',
        f"<h1>{_e(title)}</h1>",
        f'<p class="muted">{_e(h.direction)} is better; reported by Assay {_e(__version__)} '
        "from its store (nothing was run for this report)</p>",
        f'<p class="answer" id="answer">{_e(history_answer(h))}</p>',
        _section("Changes", change_html),
        _section("Plot", figure),
        _section("Commits", commits),
        _section("Method", method, collapsed=True),
    ]
    return _document(title, body)


def _history_plot(h: HistoryResult, path: Path) -> None:
    """Each commit's mean and CI in order; commits without a result as crosses at the
    bottom; each change point a vertical line between the commits around it, labelled
    with them; the segments' means as dashed steps."""
    n = len(h.points)
    fig, (ax,) = _figure(max(6.5, min(14.0, 0.28 * n + 3.0)) + 2.5, 4.4)
    done = [(i, p) for i, p in enumerate(h.points) if p.has_result]
    bounded = [(i, p) for i, p in done if math.isfinite(p.low) and math.isfinite(p.high)]
    ax.errorbar([i for i, _ in bounded], [p.mean for _, p in bounded],
                yerr=[[p.mean - p.low for _, p in bounded], [p.high - p.mean for _, p in bounded]],
                fmt="o", ms=4, capsize=3, color="tab:blue",
                label=f"mean with its {h.confidence:.0%} CI")  # fmt: skip
    drawn = {i for i, _ in bounded}
    unbounded = [(i, p) for i, p in done if i not in drawn]
    if unbounded:  # too few samples for a bounded interval: the mean alone, hollow
        ax.plot([i for i, _ in unbounded], [p.mean for _, p in unbounded], "o", ms=5,
                mfc="none", color="tab:blue",
                label="mean (CI unbounded: too few samples)")  # fmt: skip
    missing = [i for i, p in enumerate(h.points) if not p.has_result]
    if missing and done:
        floor = min(p.low if math.isfinite(p.low) else p.mean for _, p in done)
        ax.plot(missing, [floor] * len(missing), "x", color="tab:red", ms=7,
                label="no result (build failed or no trial)")  # fmt: skip
    index = {p.revision: i for i, p in enumerate(h.points)}
    cuts = [0]
    for c in h.changes:
        at, before = index.get(c.revision), index.get(c.previous)
        if at is None or before is None:
            continue
        cuts.append(at)
        x = (at + before) / 2
        color = "tab:red" if is_regression(c) else ("tab:orange" if c.worse else "tab:green")
        ax.axvline(x, color=color, ls="--", lw=1.2)
        ax.annotate(f"{c.previous[:7]} → {c.revision[:7]} ({_pct(c.relative)})",
                    (x, 1.0), xycoords=("data", "axes fraction"), xytext=(3, -3),
                    textcoords="offset points", rotation=90, va="top", ha="left",
                    fontsize="small", color=color)  # fmt: skip
    cuts = [*sorted(set(cuts)), n]
    for lo, hi in itertools.pairwise(cuts):
        seg = [p.mean for i, p in done if lo <= i < hi]
        if seg:
            ax.hlines(sum(seg) / len(seg), lo - 0.4, hi - 0.6, colors="#555", linestyles=":",
                      lw=1)  # fmt: skip
    ax.plot([], [], ":", color="#555", label="segment mean")
    if h.changes:
        ax.plot([], [], "--", color="tab:red", label="change point (red: regression)")
    every = max(1, -(-n // 40))
    ticks = [i for i in range(n) if i % every == 0 or i == n - 1]
    ax.set_xticks(ticks, [h.points[i].revision[:7] for i in ticks], rotation=90,
                  fontsize="small")  # fmt: skip
    ax.set_xlim(-0.7, n - 0.3)
    order = "git order" if h.order == "git" else "order of first trial"
    ax.set_xlabel(f"commit ({order}, oldest first)")
    ax.set_ylabel(f"{h.pi}{_unit(h.unit)}", parse_math=False)
    ax.set_title(f"{h.study}: {h.pi}, {h.direction} is better", parse_math=False,
                 fontsize=10)  # fmt: skip
    # beside the plot: never over a point or a change point's label
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    _save(fig, path)


# --- the index -----------------------------------------------------------------------------


def _when(t: float | None) -> str:
    from assay.studies.catalog import iso_time

    shown = iso_time(t, "minutes")
    return shown.replace("T", " ") if shown else "never"


def _newest_first(rows: Iterable[IndexRow]) -> list[IndexRow]:
    return sorted(rows, key=lambda r: (r.last_run is None, -(r.last_run or 0.0), r.study))


def _link(row: IndexRow) -> str:
    if row.page is None:
        return _e(row.study)
    return f'<a href="{_e(row.page)}">{_e(row.study)}</a>'


def _answer_cell(row: IndexRow) -> str:
    if row.problem:
        return f'<td data-label="answer" class="answer-cell muted">{_e(row.problem)}</td>'
    shown = re.sub(r"`([^`<>]*)`", r"<code>\1</code>", _e(row.answer)) or "—"
    return f'<td data-label="answer" class="answer-cell">{shown}</td>'


def _cards(header: Sequence[str], rows: Sequence[Sequence[str]], caption: str) -> str:
    """A table whose cells are HTML already (each with its ``data-label``): on a narrow
    screen each row is a card, as in :func:`assay.report.html._human`."""
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(r) + "</tr>" for r in rows)
    return (
        f'<table class="cards"><caption>{_e(caption)}</caption><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table>"
    )


def _td(label: str, html: str, cls: str = "") -> str:
    extra = f' class="{cls}"' if cls else ""
    return f'<td data-label="{_e(label)}"{extra}>{html}</td>'


def index_page(rows: Sequence[IndexRow], stores: Sequence[str]) -> str:
    """The index: the regressions of every benchmark across commits, those benchmarks,
    then every study, newest first, each linked to its page."""
    histories = _newest_first(r for r in rows if r.kind == "history")
    studies = _newest_first(r for r in rows if r.kind != "history")
    body = [
        "<h1>Benchmarks</h1>",
        f'<p class="muted">{len(studies)} studies and {len(histories)} benchmark(s) across '
        f"commits in {len(stores)} store(s): {_e(', '.join(stores))}; reported by Assay "
        f"{_e(__version__)} from the stores (nothing was run for this report)</p>",
    ]
    if histories:
        regressions = [
            [
                _td("benchmark", _link(r), "path"),
                _td("PI", _e(r.pi)),
                _td("first commit after", f"<code>{_e(c.revision[:_SHORT])}</code>"),
                _td("last commit before", f"<code>{_e(c.previous[:_SHORT])}</code>"),
                _td("step", _e(_step(c, r.unit))),
                _td("CI of the step", _e(_step_ci(c, r.unit))),
                _td("store", _e(r.store), "path"),
            ]
            for r in histories
            for c in reversed(r.regressions)
        ]
        header = ["benchmark", "PI", "first commit after", "last commit before", "step",
                  "CI of the step", "store"]  # fmt: skip
        body.append(
            _section(
                "Regressions",
                _cards(header, regressions, "worse steps whose CI excludes zero, newest first")
                if regressions
                else '<p class="muted">none: no step the worse way with a CI that excludes '
                "zero</p>",
            )
        )
        across = [
            [
                _td("benchmark", _link(r), "path"),
                _td("regressions", str(len(r.regressions)), "num"),
                _answer_cell(r),
                _td("last run", _e(_when(r.last_run))),
                _td("host", _e(r.host or "—")),
                _td("store", _e(r.store), "path"),
            ]
            for r in histories
        ]
        header = ["benchmark", "regressions", "answer", "last run", "host", "store"]
        body.append(
            _section(
                "Across commits", _cards(header, across, "each benchmark's history, newest first")
            )
        )
    listed = [
        [
            _td("study", _link(r), "path"),
            _td("kind", _e(r.kind)),
            _td("PI", _e(r.pi or "—")),
            _answer_cell(r),
            _td("last run", _e(_when(r.last_run))),
            _td("host", _e(r.host or "—")),
            _td("store", _e(r.store), "path"),
        ]
        for r in studies
    ]
    header = ["study", "kind", "PI", "answer", "last run", "host", "store"]
    body.append(
        _section(
            "Studies",
            _cards(header, listed, "every study, newest first")
            if listed
            else '<p class="muted">no study in these stores</p>',
        )
    )
    return _document("Assay: every study", body)


# --- pages and files -----------------------------------------------------------------------


def _document(title: str, body: Sequence[str]) -> str:
    """A page with the single-study page's head (:func:`html_document`)."""
    return html_document(title, body, _SITE_CSS)


def _with_nav(page: str) -> str:
    """A study's page with a link back to the index (after its own head)."""
    head_end = "</style></head><body>"
    at = page.find(head_end)
    if at < 0:
        return page
    at += len(head_end)
    return f'{page[:at]}\n<nav><a href="{INDEX}">all studies</a></nav>{page[at:]}'


def _previous_pages(out: Path) -> list[str]:
    """The pages the manifest of a previous run lists (safe names only)."""
    try:
        data = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    pages = data.get("pages") if isinstance(data, dict) else None
    if not isinstance(pages, list):
        return []
    return [p for p in pages if isinstance(p, str) and _PAGE.match(p)]


def write_site(site: Site, out: Path) -> list[Path]:
    """Write the site's pages into the folder ``out`` (which must exist), each replaced
    atomically with the umask's mode; then remove the pages a previous run wrote (as
    its manifest lists them) that this one did not, and record this run's pages.
    Nothing else in ``out`` is touched.  Returns the files written."""
    from assay.report.export import write_text

    old = _previous_pages(out)
    written: list[Path] = []
    for page in site.pages:
        assert _PAGE.match(page.name), page.name
        write_text(str(out / page.name), page.html)
        written.append(out / page.name)
    names = [p.name for p in site.pages]
    manifest = {"generator": f"assay {__version__}", "pages": names}
    write_text(str(out / MANIFEST), json.dumps(manifest, indent=1) + "\n")
    for stale in sorted(set(old) - set(names)):
        path = out / stale
        if path.is_file() and not path.is_symlink():
            path.unlink()
    return written
