"""Terminal output: the live progress line and the final summary."""

from __future__ import annotations

import math
import time

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from assay.report.format import format_duration, format_estimate, format_percent
from assay.runner import Progress, StudyResult


class ProgressView:
    """Shows rounds done, the current CI width per PI and the estimated time left.

    On a terminal it is a live line; elsewhere (CI logs, pipes) one line every 10 s.
    """

    def __init__(self, console: Console, target: float) -> None:
        self.console = console
        self.target = target
        self.live: Live | None = None
        self.last_plain = 0.0

    def __enter__(self) -> ProgressView:
        if self.console.is_terminal:
            self.live = Live(
                Text("starting…"), console=self.console, transient=True, refresh_per_second=8
            )
            self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.__exit__(None, None, None)

    def update(self, p: Progress) -> None:
        widths = (
            ", ".join(f"{r.name} {format_percent(r.relative_half_width)}" for r in p.results)
            or "collecting samples"
        )
        left = ""
        if p.decision.rounds_left is not None and not p.decision.done:
            eta = p.decision.rounds_left * (
                p.mean_round_s if math.isfinite(p.mean_round_s) else 0.0
            )
            left = f" · ~{p.decision.rounds_left} rounds left (~{format_duration(eta)})"
        failed = f" · {p.failed} failed" if p.failed else ""
        line = (
            f"round {p.rounds}{failed} · CI {widths} (target {format_percent(self.target)}){left}"
        )
        if self.live is not None:
            self.live.update(Text(line))
        elif time.monotonic() - self.last_plain >= 10 or p.decision.done:
            self.last_plain = time.monotonic()
            self.console.print(line, highlight=False)


def render_result(res: StudyResult, console: Console) -> None:
    """The final summary a reader can trust: every number with its CI, n and method."""
    table = Table(title=f"{res.study}", title_justify="left", show_edge=False)
    table.add_column("PI")
    table.add_column("mean ± CI half-width", justify="right")
    table.add_column("CI", justify="right")
    table.add_column("n (subsession)", justify="right")
    table.add_column("warm-up removed", justify="right")
    table.add_column("met", justify="center")
    for r in res.results:
        better = "↓" if r.direction == "lower" else "↑"
        table.add_row(
            f"{r.name} {better}",
            format_estimate(r.mean, r.half_width, r.unit),
            f"{format_percent(r.relative_half_width)} @ {r.confidence:.0%}",
            f"{r.n_samples} × {r.subsession_size}" if r.subsession_size else str(r.n_samples),
            str(r.warmup_removed),
            "[green]yes[/]" if r.met else "[yellow]no[/]",
        )
    lines: list[Text | Table] = [table]
    methods = sorted({f"{r.name}: {r.method}" for r in res.results})
    lines.append(Text("method: " + "; ".join(methods), style="dim"))
    by = ", ".join(f"{n} {s}" for s, n in sorted(res.trials_by_status.items()))
    lines.append(
        Text(
            f"{res.decision.reason} · {res.trials_total} trials ({by}) · measured "
            f"{format_duration(res.elapsed_s)}"
            + (f" · {res.resumed_trials} resumed from the store" if res.resumed_trials else "")
        )
    )
    over = []
    if res.bookkeeping_s_per_trial is not None:
        over.append(
            f"assay bookkeeping {format_duration(res.bookkeeping_s_per_trial)}/trial "
            "between trials (not in the measured time)"
        )
    if res.launch_overhead is not None:
        lo = res.launch_overhead
        over.append(
            f"executor vs bare launch: {lo.difference_s * 1e3:+.2f} ms "
            f"[{lo.difference_low_s * 1e3:+.2f}, {lo.difference_high_s * 1e3:+.2f}] per trial"
        )
    if over:
        lines.append(Text("overhead: " + "; ".join(over), style="dim"))
    for w in res.warnings:
        lines.append(Text(f"warning: {w}", style="yellow"))
    for f in res.failures[:5]:
        lines.append(Text(f"trial {f['seq']}: {f['status']}: {f['error']}", style="red"))
    if len(res.failures) > 5:
        lines.append(
            Text(f"… and {len(res.failures) - 5} more failed trials (see --json)", style="red")
        )
    lines.append(Text(f"store: {res.store}", style="dim"))
    console.print(Group(*lines))
