"""Reports of a comparison: the ranked table, its JSON/CSV form and the live progress line.

Every mean comes with its CI half-width and sample count; every verdict names the
test behind it (CI separation, or Welch's p below the threshold); the decision line
names the sequential rule that stopped the study.  A PI compared on the median
(``statistic = "median"``) shows medians with their order-statistic CIs and the
Hodges–Lehmann shift against the best, and Mann–Whitney's p decides.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from assay.report.answer import answer
from assay.report.export import save_figure
from assay.report.fit import fitted
from assay.report.format import (
    format_duration,
    format_estimate,
    format_p,
    format_percent,
    trial_counts,
)
from assay.report.safe import plain
from assay.report.terminal import LiveLine, TimeLeft, footer_lines
from assay.studies.compare import variant_rows

if TYPE_CHECKING:
    from assay.designs.compare import PIComparison
    from assay.spec import StopSpec
    from assay.studies.compare import CompareProgress, CompareResult
    from assay.studies.scan import ScanSummary

CSV_FIELDS = [
    "study",
    "pi",
    "rank",
    "variant",
    "unit",
    "direction",
    "mean",
    "low",
    "high",
    "half_width",
    "relative_half_width",
    "confidence",
    "n_samples",
    "subsession_size",
    "n_raw",
    "relative_to_best",
    "relative_to_best_low",
    "relative_to_best_high",
    "vs_previous_welch_p",
    "vs_previous_mann_whitney_p",
    "vs_previous_hedges_g",
    "statistic",
    "median",
    "median_low",
    "median_high",
    "effect",
    "shift_to_best",
    "shift_to_best_low",
    "shift_to_best_high",
    "verdict",
]


def format_relative(rel: float, low: float, high: float) -> str:
    """``+12.3% [+10.1%, +14.6%]``."""
    if not math.isfinite(rel):
        return "n/a"

    def pct(x: float) -> str:
        return f"{x * 100:+.1f}%" if math.isfinite(x) else ("-∞" if x < 0 else "+∞")

    return f"{pct(rel)} [{pct(low)}, {pct(high)}]"


def csv_rows(res: CompareResult) -> list[dict[str, Any]]:
    """One CSV row per variant and PI."""
    return [
        {"study": res.study, "pi": c.name, **row}
        for c in res.comparisons
        for row in variant_rows(c)
    ]


_VERDICT_STYLE = {
    "best": "bold green",
    "separated": "green",
    "significant": "green",
    "bounded": "green",
    "undecided": "yellow",
}


# the columns a narrow terminal leaves out, least important first
COMPARE_DROP_ORDER = ("MW p", "Hedges g", "n × subsession", "Welch p", "#")
# on the median Mann-Whitney decides: its p goes last but the rank
MEDIAN_DROP_ORDER = ("n × subsession", "HL shift vs best [CI]", "MW p", "#")


def format_interval(value: float, low: float, high: float, unit: str) -> str:
    """``12.3 ms [11.9 ms, 12.8 ms]``: an estimate with an asymmetric interval, to the
    digits its width supports."""
    if not math.isfinite(value):
        return "n/a"
    half = (high - low) / 2 if math.isfinite(low) and math.isfinite(high) else math.inf

    def one(x: float) -> str:
        if not math.isfinite(x):
            return "-∞" if x < 0 else "+∞"
        return format_estimate(x, half, unit).split(" ± ")[0]

    return f"{one(value)} [{one(low)}, {one(high)}]"


_TIME_SCALES = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))


def format_shift(value: float, low: float, high: float, unit: str) -> str:
    """``+1.2 [-0.3, +2.5] ms``: a signed shift and its interval in one scale, to the
    digits the interval's width supports."""
    if not math.isfinite(value):
        return "n/a"
    factor, shown = 1.0, unit
    if unit == "s":  # one scale for all three numbers: the largest one's
        big = max(abs(x) for x in (value, low, high) if math.isfinite(x))
        factor, shown = next(((f, n) for f, n in _TIME_SCALES if big >= f), _TIME_SCALES[-1])
    half = (high - low) / 2 / factor if math.isfinite(high - low) else math.inf
    digits = 3 if not math.isfinite(half) or half <= 0 else max(0, 1 - math.floor(math.log10(half)))

    def one(x: float) -> str:
        if not math.isfinite(x):
            return "-∞" if x < 0 else "+∞"
        return f"{x / factor:+.{digits}f}"

    sep = f" {shown}" if shown else ""
    return f"{one(value)} [{one(low)}, {one(high)}]{sep}"


def _ranked_table(c: PIComparison, title: str, estimate: str, tests: Sequence[str]) -> Table:
    """A ranked table's columns: rank, variant, the estimate, the merged sample counts,
    then ``tests`` and the verdict (see :func:`_add_ranked_row`)."""
    arrow = "↓" if c.direction == "lower" else "↑"
    table = Table(title=Text(plain(title)), title_justify="left", show_edge=False)
    table.add_column("#", justify="right")
    table.add_column("variant", overflow="fold")
    table.add_column(f"{c.name} {arrow} {estimate}", justify="right")
    table.add_column("n × subsession", justify="right")
    for name in tests:
        table.add_column(name, justify="right")
    table.add_column("verdict")
    return table


def _add_ranked_row(table: Table, row: Mapping[str, Any], est: str, cells: Sequence[str]) -> None:
    """One variant's row of a :func:`_ranked_table`."""
    nq = f"{row['n_samples']} × {row['subsession_size']}" if "n_samples" in row else "-"
    table.add_row(
        str(row["rank"]),
        Text(plain(row["variant"])),  # a name is text, never markup
        est,
        nq,
        *cells,
        Text(row["verdict"], style=_VERDICT_STYLE.get(row["verdict"], "")),
    )


def _p_cell(row: Mapping[str, Any], key: str) -> str:
    return format_p(row[key]) if key in row else ""


def _no_interval(row: Mapping[str, Any], unit: str) -> str:
    """The estimate cell of a variant without an interval: ``n/a``, with its raw
    median when there is one (issue #40)."""
    med = row.get("raw_median")
    if med is None or not math.isfinite(med):
        return "n/a"
    return f"n/a (median {format_estimate(med, math.inf, unit).split(' ± ')[0]})"


def _median_table(c: PIComparison, title: str) -> Table:
    """The ranked table of a PI compared on the median."""
    tests = ("HL shift vs best [CI]", "relative [CI]", "MW p")
    table = _ranked_table(c, title, "median [CI]", tests)
    for row in variant_rows(c):
        est = (
            format_interval(row["median"], row["median_low"], row["median_high"], c.unit)
            if "median" in row
            else _no_interval(row, c.unit)
        )
        shift = rel = ""
        if "shift_to_best" in row:
            shift = format_shift(
                row["shift_to_best"], row["shift_to_best_low"], row["shift_to_best_high"], c.unit
            )
            rel = format_relative(
                row["relative_to_best"], row["relative_to_best_low"], row["relative_to_best_high"]
            )
        _add_ranked_row(table, row, est, (shift, rel, _p_cell(row, "vs_previous_mann_whitney_p")))
    return table


def _method_line(c: PIComparison) -> str:
    """What the table's columns and verdicts rest on."""
    conf = f"{c.ranking.confidence:.0%}"
    if c.statistic == "median":
        return (
            f"method: {c.method}; CIs at {conf}; HL shift: the Hodges-Lehmann shift of "
            "location (median of the pairwise differences of the merged samples) against "
            "the best, and relative to the best's median, with its distribution-free CI; MW p "
            "against the variant ranked just above; verdict: significant (Mann-Whitney p "
            "below the look's level: the study stops at the looks, alpha "
            f"{c.ranking.alpha:g} spread over them; see the decision)"
        )
    return (
        f"method: {c.method}; CIs at {conf}; Welch p and Mann-Whitney p and Hedges g "
        "against the variant ranked just above; verdict: separated (CIs do not "
        f"overlap) or significant (Welch p < {c.ranking.alpha:g}), as one test"
        + (
            ", or bounded (no valid CI, or CIs a drift widened: even the ranges of the "
            "two variants' block means are apart; vs best is then that range)"
            if any(p.status == "bounded" for p in c.ranking.pairs)
            else ""
        )
        + "; the study stops by its sequential rule (see the decision: by default every "
        f"pair's always-valid e-value at least {1.0 / c.ranking.alpha:g})"
    )


def _table(c: PIComparison, title: str) -> Table:
    if c.statistic == "median":
        return _median_table(c, title)
    tests = ("vs best [CI]", "Welch p", "MW p", "Hedges g")
    table = _ranked_table(c, title, "mean ± CI", tests)
    for row in variant_rows(c):
        est = (
            format_estimate(row["mean"], row["half_width"], c.unit)
            if "mean" in row
            else _no_interval(row, c.unit)
        )
        rel = (
            format_relative(
                row["relative_to_best"], row["relative_to_best_low"], row["relative_to_best_high"]
            )
            if "relative_to_best" in row
            else ""
        )
        g = row.get("vs_previous_hedges_g")
        cells = (
            rel,
            _p_cell(row, "vs_previous_welch_p"),
            _p_cell(row, "vs_previous_mann_whitney_p"),
            f"{g:.2f}" if g is not None and math.isfinite(g) else "",
        )
        _add_ranked_row(table, row, est, cells)
    return table


def render_comparison(res: CompareResult, console: Console) -> None:
    """The ranked table per PI (the deciding PI first), the decision and the footer."""
    lines: list[RenderableType] = []
    if res.claims:  # what the study set out to show comes first (#62)
        lines.extend(claims_lines([c.as_dict() for c in res.claims], console))
    for i, c in enumerate(res.comparisons):
        title = res.study if i == 0 else f"{res.study}: {c.name} (not deciding)"
        drop = MEDIAN_DROP_ORDER if c.statistic == "median" else COMPARE_DROP_ORDER
        lines.extend(fitted(_table(c, title), console, drop, label="variant"))
        lines.append(Text(_method_line(c), style="dim"))
    if res.scan is not None:
        lines.extend(scan_lines(res.scan))
    said = answer("compare", res.as_dict())
    if said:
        lines.append(Text(plain(f"answer: {said}"), style="bold"))
    by = trial_counts(res.trials_by_status)
    if res.sources:
        lines.append(Text(f"{res.decision.reason} · from {', '.join(res.sources)}"))
    else:
        order = "fixed order" if res.fixed_order else f"random order per cycle, seed {res.seed}"
        lines.append(
            Text(
                f"{res.decision.reason} · {res.cycles} cycles ({order}) · {res.trials_total} "
                f"trials ({by}) · measured {format_duration(res.elapsed_s)}"
                + (f" · {res.resumed_trials} resumed from the store" if res.resumed_trials else "")
            )
        )
    for g in res.gates:  # --fail-if-worse
        style = {"worse": "bold red", "not worse": "bold green"}.get(g.verdict, "yellow")
        lines.append(Text(f"gate: {g.text()}", style=style))
    lines.extend(
        footer_lines(
            res.bookkeeping_s_per_trial,
            res.launch_overhead,
            res.warnings,
            res.failures,
            res.store,
            resources=res.resources,
            environment=res.environment,
            bookkeeping_s_median=res.bookkeeping_s_median,
        )
    )
    console.print(Group(*lines))


#: Claim verdicts' colours in the terminal.
CLAIM_STYLES = {"holds": "bold green", "fails": "bold red", "undecided": "yellow"}


def claims_lines(claims: Sequence[Mapping[str, Any]], console: Console) -> list[RenderableType]:
    """The claims table (:func:`assay.report.markdown.claim_rows`), each verdict coloured,
    and how the verdicts were reached."""
    from assay.report.markdown import claim_rows, claims_note

    header, rows = claim_rows(claims)
    table = Table(title="claims", title_justify="left")
    for i, h in enumerate(header):
        table.add_column(h, justify="right" if i == 2 else "left")
    for row, c in zip(rows, claims, strict=True):
        cells = [plain(str(v)) for v in row]
        verdict = Text(cells[-1], style=CLAIM_STYLES.get(str(c.get("verdict")), ""))
        table.add_row(*cells[:-1], verdict)
    out: list[RenderableType] = list(fitted(table, console, (), label="claim"))
    out.append(Text(plain(claims_note(claims)), style="dim"))
    return out


def scan_lines(scan: ScanSummary) -> list[RenderableType]:
    """The scan in its own order: each value's mean [CI] and its ratio to the best; then
    the fitted trend of a numeric parameter (its slope's CI, whether the line fits)
    and its knee."""
    table = Table(title=f"scan: {scan.pi} by {', '.join(scan.parameters)}", title_justify="left")
    for name in scan.parameters:
        table.add_column(plain(name), justify="right")
    table.add_column(f"{scan.pi} [CI]", justify="right")
    table.add_column("× best", justify="right")
    for r in scan.rows:
        est = "n/a"
        if r.mean is not None and r.low is not None and r.high is not None:
            est = format_interval(r.mean, r.low, r.high, scan.unit)
        ratio = "n/a" if r.ratio is None else f"{r.ratio:.2f}×"
        table.add_row(*(plain(str(r.params[n])) for n in scan.parameters), est, ratio)
    lines: list[RenderableType] = [table]
    t = scan.trend
    if t is not None:
        slope, low, high = t.step
        what = f"{t.per} of {scan.trend_parameter}"
        shift = format_shift(slope, low, high, scan.unit)
        fit = (
            "the line fits the means within their CIs"
            if t.fits
            else f"the means depart from a line (p = {format_p(t.lack_of_fit_p)}): the CI is "
            "widened by their scatter"
        )
        lines.append(
            Text(
                f"trend ({t.model}): {shift} {what} ({t.confidence:.0%} CI; weighted R² "
                f"{t.r2:.3f}); {fit}"
            )
        )
        if t.knee is not None:
            lines.append(Text(f"{t.knee[0]} at {scan.trend_parameter} = {t.knee[1]:g}"))
    lines.extend(Text(note, style="dim") for note in scan.notes)
    return lines


def scan_plot(scan: ScanSummary, path: str | Path) -> Path:
    """``--plot`` of a scan: each value's mean with its CI against the parameter (its
    values in scan order, evenly spaced when they are not numbers, or for a grid), and
    the fitted trend when there is one; PNG or SVG by the file's suffix."""
    from matplotlib.figure import Figure

    from assay.report.tile import _LITERAL

    out = Path(path)
    rows = [r for r in scan.rows if r.mean is not None and r.low is not None and r.high is not None]
    numeric = scan.trend_parameter is not None
    labels = [", ".join(f"{n}={r.params[n]}" for n in scan.parameters) for r in rows]
    xs = [float(r.params[scan.parameters[0]]) if numeric else float(i) for i, r in enumerate(rows)]
    means = [float(r.mean or 0.0) for r in rows]
    below = [m - float(r.low or m) for m, r in zip(means, rows, strict=True)]
    above = [float(r.high or m) - m for m, r in zip(means, rows, strict=True)]
    fig = Figure(figsize=(6.4, 4.0))
    ax = fig.add_subplot()
    ax.errorbar(xs, means, yerr=[below, above], fmt="o", capsize=3, label="mean and CI")
    t = scan.trend
    if t is not None and len(xs) >= 2:
        grid = [min(xs) + (max(xs) - min(xs)) * i / 100 for i in range(101)]
        fx = [math.log(x) if t.model == "log" else x for x in grid]
        ax.plot(grid, [t.intercept + t.slope * f for f in fx], "--", label=f"trend ({t.model})")
        ax.legend(frameon=False)
    if not numeric:
        ax.set_xticks(xs, labels, rotation=30, ha="right", **_LITERAL)
    ax.set_xlabel(", ".join(scan.parameters), **_LITERAL)
    ax.set_ylabel(f"{scan.pi} ({scan.unit})" if scan.unit else scan.pi, **_LITERAL)
    ax.set_title(f"scan: {scan.pi} by {', '.join(scan.parameters)}", **_LITERAL)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, out, dpi=120)
    return out


class CompareProgressView(LiveLine):
    """Cycles done, the current ranking and what is still undecided; the last line
    says what the study decided (not "decided" over a result it left undecided)."""

    def __init__(self, console: Console, stop: StopSpec | None = None) -> None:
        super().__init__(console)
        self.stop = stop
        self.left = TimeLeft(None if stop is None else stop.max_time)

    def update(self, p: CompareProgress) -> None:
        parts = [f"cycle {p.cycles} · {p.trials} trials"]
        if p.failed:
            parts.append(f"{p.failed} failed")
        c = p.comparison
        if c is not None:
            ranked = []
            for name in c.ranking.order:
                v = c.ranking.variants.get(name)
                ci = (
                    ""
                    if v is None or c.statistic == "median"
                    else (f" {format_percent(v.ci.relative_half_width)}")
                )
                ranked.append(f"{name}{ci}")
            parts.append(" < ".join(ranked) if c.direction == "lower" else " > ".join(ranked))
            undecided = len(c.ranking.undecided)
            if p.decision.done or p.decision.reason != "running":
                parts.append(p.decision.reason)  # the verdict; or collecting, waiting
            else:
                parts.append(f"{undecided} pair(s) undecided" if undecided else "apart so far")
        elif p.decision.done:
            parts.append(p.decision.reason)
        left = p.decision.rounds_left
        if left and not p.decision.done:
            cap = None
            if self.stop is not None:  # the cycles the budget leaves
                cap = max(0, self.stop.max_rounds - p.cycles) * p.mean_cycle_s
            eta = self.left.update(left * p.mean_cycle_s, elapsed=p.elapsed, cap_s=cap)
            parts.append(f"~{left} cycles left (~{format_duration(eta)})")
        self.show(" · ".join(parts), p.decision.done)
