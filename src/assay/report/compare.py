"""Reports of a comparison: the ranked table, its JSON/CSV form and the live progress line.

Every mean comes with its CI half-width and sample count; every verdict names the
test behind it (CI separation, or Welch's p below the threshold); the decision line
names the sequential rule that stopped the study.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from assay.report.fit import fitted
from assay.report.format import format_duration, format_estimate, format_percent
from assay.report.safe import plain
from assay.report.terminal import LiveLine, footer_lines
from assay.studies.compare import variant_rows

if TYPE_CHECKING:
    from assay.designs.compare import PIComparison
    from assay.studies.compare import CompareProgress, CompareResult

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
    "verdict",
]


def format_p(p: float) -> str:
    """A p-value to two significant digits (``<1e-12`` below that)."""
    if not math.isfinite(p):
        return "n/a"
    if p < 1e-12:
        return "<1e-12"
    return f"{p:.2g}"


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
    "undecided": "yellow",
}


# the columns a narrow terminal leaves out, least important first
COMPARE_DROP_ORDER = ("MW p", "Hedges g", "n × subsession", "Welch p", "#")


def _table(c: PIComparison, title: str) -> Table:
    arrow = "↓" if c.direction == "lower" else "↑"
    table = Table(title=Text(plain(title)), title_justify="left", show_edge=False)
    table.add_column("#", justify="right")
    table.add_column("variant", overflow="fold")
    table.add_column(f"{c.name} {arrow} mean ± CI", justify="right")
    table.add_column("n × subsession", justify="right")
    table.add_column("vs best [CI]", justify="right")
    table.add_column("Welch p", justify="right")
    table.add_column("MW p", justify="right")
    table.add_column("Hedges g", justify="right")
    table.add_column("verdict")
    for row in variant_rows(c):
        if "mean" in row:
            est = format_estimate(row["mean"], row["half_width"], c.unit)
            nq = f"{row['n_samples']} × {row['subsession_size']}"
        else:
            est, nq = "n/a", "-"
        rel = (
            format_relative(
                row["relative_to_best"], row["relative_to_best_low"], row["relative_to_best_high"]
            )
            if "relative_to_best" in row
            else ""
        )
        g = row.get("vs_previous_hedges_g")
        table.add_row(
            str(row["rank"]),
            Text(plain(row["variant"])),  # a name is text, never markup
            est,
            nq,
            rel,
            format_p(row["vs_previous_welch_p"]) if "vs_previous_welch_p" in row else "",
            format_p(row["vs_previous_mann_whitney_p"])
            if "vs_previous_mann_whitney_p" in row
            else "",
            f"{g:.2f}" if g is not None and math.isfinite(g) else "",
            Text(row["verdict"], style=_VERDICT_STYLE.get(row["verdict"], "")),
        )
    return table


def render_comparison(res: CompareResult, console: Console) -> None:
    """The ranked table per PI (the deciding PI first), the decision and the footer."""
    lines: list[RenderableType] = []
    for i, c in enumerate(res.comparisons):
        title = res.study if i == 0 else f"{res.study}: {c.name} (not deciding)"
        lines.extend(fitted(_table(c, title), console, COMPARE_DROP_ORDER, label="variant"))
        conf = f"{c.ranking.confidence:.0%}"
        lines.append(
            Text(
                f"method: {c.method}; CIs at {conf}; Welch p and Mann-Whitney p and Hedges g "
                "against the variant ranked just above; verdict: separated (CIs do not "
                f"overlap) or significant (Welch p < {c.ranking.alpha:g}), as one test; the "
                "study stops by its sequential rule (see the decision: by default every "
                f"pair's always-valid e-value at least {1.0 / c.ranking.alpha:g})",
                style="dim",
            )
        )
    by = ", ".join(f"{n} {s}" for s, n in sorted(res.trials_by_status.items()))
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
        )
    )
    console.print(Group(*lines))


class CompareProgressView(LiveLine):
    """Cycles done, the current ranking and what is still undecided."""

    def update(self, p: CompareProgress) -> None:
        parts = [f"cycle {p.cycles} · {p.trials} trials"]
        if p.failed:
            parts.append(f"{p.failed} failed")
        c = p.comparison
        if c is not None:
            ranked = []
            for name in c.ranking.order:
                v = c.ranking.variants.get(name)
                ci = "" if v is None else f" {format_percent(v.ci.relative_half_width)}"
                ranked.append(f"{name}{ci}")
            parts.append(" < ".join(ranked) if c.direction == "lower" else " > ".join(ranked))
            undecided = len(c.ranking.undecided)
            if not p.decision.done and p.decision.reason != "running":
                parts.append(p.decision.reason)  # collecting, or waiting for CI widths
            else:
                parts.append(f"{undecided} pair(s) undecided" if undecided else "decided")
        left = p.decision.rounds_left
        if left and not p.decision.done:
            parts.append(f"~{left} cycles left (~{format_duration(left * p.mean_cycle_s)})")
        self.show(" · ".join(parts), p.decision.done)
