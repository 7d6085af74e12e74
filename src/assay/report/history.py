"""The terminal report of ``assay history``: one line per commit, then the change points.

Revisions and build output are outside text: they reach the console as plain strings
(the console is a :class:`~assay.report.safe.SafeConsole`, which never reads markup).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from assay.report.format import format_estimate
from assay.studies.history import CommitOutcome, CommitPoint, HistoryChange, HistoryResult

__all__ = ["change_lines", "render_history", "render_outcomes"]

SHORT = 10


def _estimate(p: CommitPoint, unit: str) -> str:
    if not p.has_result:
        return "n/a"
    half = (p.high - p.low) / 2 if math.isfinite(p.high - p.low) else math.inf
    if half <= 1e-9 * abs(p.mean):  # identical readings: rounding, not uncertainty
        half = 0.0
    return format_estimate(p.mean, half, unit, p.low, p.high)


def _state(p: CommitPoint) -> str:
    if p.build is not None and not p.build.get("ok", True):
        return "build failed"
    if not p.trials:
        return "not measured"
    if not p.has_result:
        return "no result"
    return "dirty" if p.dirty else ""


def _signed(value: float, unit: str) -> str:
    text = format_estimate(value, 0.0, unit).split(" ± ")[0]
    return text if value < 0 else "+" + text


def change_lines(c: HistoryChange, unit: str, confidence: float) -> list[str]:
    """The words of one change point (also used for the summary of ``--fail-on-change``)."""
    pct = f"{c.relative * 100:+.1f}%" if math.isfinite(c.relative) else "n/a"
    rel = (
        f"[{c.rel_low * 100:+.1f}%, {c.rel_high * 100:+.1f}%]"
        if math.isfinite(c.rel_low) and math.isfinite(c.rel_high)
        else "[unbounded]"
    )
    ci = f"[{_signed(c.diff_low, unit)}, {_signed(c.diff_high, unit)}]"
    # worse / better only when the step's CI excludes 0: E-Divisive's p says the
    # commits' means moved, not that the step is sure (issue #36)
    way = {
        "worse": "worse",
        "better": "better",
        "possible": f"possible change, {confidence:.0%} CI of the step includes 0 "
        "(not a regression)",
    }[c.verdict]
    suspects = " ".join(s[:SHORT] for s in c.suspects[:8])
    more = f" (+{len(c.suspects) - 8} more)" if len(c.suspects) > 8 else ""
    return [
        f"change at {c.revision[:SHORT]} (first commit after it; last before: "
        f"{c.previous[:SHORT]}): {way}",
        f"  step {_signed(c.difference, unit)} ({pct}), {confidence:.0%} CI {ci}, "
        f"relative {rel}; {c.commits_before} commit(s) before, {c.commits_after} after; "
        f"change point p = {c.p_value:.3g}",
        f"  commits that may have made it ({len(c.suspects)}): {suspects}{more}",
    ]


def render_history(h: HistoryResult, console: Console) -> None:
    """Every commit's mean and CI in order, change points marked, then each change."""
    order = "git history" if h.order == "git" else "time of first trial"
    console.print(
        Text.assemble(
            ("history ", "bold"),
            f"of {h.study}: {h.pi}"
            + (f" ({h.unit}, {h.direction} is better)" if h.unit else f" ({h.direction} is better)")
            + f", {len(h.measured)} of {len(h.points)} commit(s) with a result, in order of "
            + order,
        ),
        soft_wrap=True,
    )
    starts = {c.revision: "▶" if c.significant else "?" for c in h.changes}
    table = Table(box=None, pad_edge=False, show_edge=False)
    for name, justify in (("", "left"), ("commit", "left"), (h.pi, "right"), ("trials", "right")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    table.add_column("", justify="left")
    for p in h.points:
        mark = Text(starts[p.revision], style="yellow bold") if p.revision in starts else Text(" ")
        table.add_row(
            mark, p.revision[:SHORT], _estimate(p, h.unit), f"{p.ok_trials}/{p.trials}", _state(p)
        )
    console.print(table)
    for note in h.notes:
        console.print(f"note: {note}", style="dim", soft_wrap=True)
    if not h.changes:
        console.print(
            f"no change point (E-Divisive means, permutation test at alpha = {h.alpha:g})",
            soft_wrap=True,
        )
        return
    for c in h.changes:
        lines = change_lines(c, h.unit, h.confidence)
        style = {"worse": "red", "better": "green"}.get(c.verdict, "yellow")
        console.print(lines[0], style=style, soft_wrap=True)
        for line in lines[1:]:
            console.print(line, soft_wrap=True)


def render_outcomes(outcomes: Sequence[CommitOutcome], console: Console) -> None:
    """What ``--run-commits`` did at each commit (failed builds with their output)."""
    for o in outcomes:
        style = {"build failed": "red", "no result": "yellow", "skipped": "dim"}.get(o.status, "")
        detail = f": {o.detail}" if o.detail else ""
        console.print(Text(f"{o.revision[:SHORT]} {o.status}{detail}", style=style), soft_wrap=True)
