"""Terminal, JSON and CSV output of ``assay sweep``."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from assay.report.format import format_duration
from assay.report.terminal import LiveLine, footer_lines

if TYPE_CHECKING:
    from assay.designs.sweep import Mismatch, StepResult
    from assay.studies.sweep import SweepProgress, SweepResult


def _r2(x: float) -> str:
    return f"{x:.3f}" if math.isfinite(x) else "n/a"


def steps_table(steps: list[StepResult], title: str) -> Table:
    """One row per step of Algorithm 1: settings measured, rate, R² over the splits."""
    table = Table(title=Text(title), title_justify="left", show_edge=False)
    for name in ("step", "settings", "rate", "R² min", "R² median", "model", "done"):
        table.add_column(name, justify="left" if name in ("model", "done") else "right")
    for s in steps:
        finite = sorted(v for v in s.r2 if math.isfinite(v))
        median = finite[len(finite) // 2] if finite else math.nan
        table.add_row(
            str(s.step),
            f"{s.n_measured}/{s.n_candidates}",
            f"{s.sampling_rate:.1%}",
            _r2(s.r2_min),
            _r2(median),
            f"{s.model} ({s.form})" if s.model == "anova" else s.model,
            s.reason or "",
        )
    return table


def mismatch_lines(m: Mismatch) -> list[str]:
    """The paper's mismatch metric against the full-data analysis."""
    d = m.to_dict()
    return [
        "against the analysis of all the data: "
        f"{d['params_rate']:.0%} of significant parameters mismatched"
        + (f" ({', '.join(d['params_mismatched'])})" if d["params_mismatched"] else "")
        + f", {d['points_rate']:.0%} of important points mismatched"
        + (f" ({', '.join(d['points_mismatched'])})" if d["points_mismatched"] else "")
    ]


def render_sweep(res: SweepResult, console: Console) -> None:
    """The steps, the summary (significant parameters, important points, the
    recommendation), the stopping reason and the footer."""
    mismatch, comparison = res.mismatch, res.comparison
    parts: list[Text | Table] = [Text(res.space, style="dim")]
    if res.steps:
        parts.append(steps_table(res.steps, f"{res.study}: {res.pi.name} ({res.pi.unit})"))
    if res.transform == "log":
        parts.append(
            Text(
                f"analysed on log({res.pi.name}): R², shares of variance and important "
                f"points are those of log({res.pi.name}) (effects that multiply)"
            )
        )
    if res.summary is not None:
        parts.append(Text(res.summary.text))
    if mismatch is not None:
        parts.extend(Text(line) for line in mismatch_lines(mismatch))
    if comparison is not None:
        parts.append(Text(comparison.text))
    by = ", ".join(f"{n} {s}" for s, n in sorted(res.trials_by_status.items()))
    tail = f"{res.reason}"
    if res.sources:
        tail += f" · from {', '.join(res.sources)}"
    else:
        tail += (
            f" · {res.trials_total} trials ({by}) · measured {format_duration(res.elapsed_s)}"
            + (f" · {res.resumed_trials} resumed from the store" if res.resumed_trials else "")
        )
    parts.append(Text(tail))
    parts.extend(
        footer_lines(
            res.bookkeeping_s_per_trial,
            None,
            res.warnings,
            res.failures,
            res.store,
            resources=None if res.resources is None else {"": res.resources},
            environment=res.environment,
        )
    )
    console.print(Group(*parts))


def measured_csv_rows(res: SweepResult) -> tuple[list[str], list[dict[str, Any]]]:
    """The measured settings with the PI's mean: one CSV row each."""
    fields = [*res.params, res.pi.name]
    rows = [{k: r.get(k) for k in fields} for r in res.measured.to_dict("records")]
    return fields, rows


class SweepProgressView(LiveLine):
    """Step, sampling rate, the lowest validation R², and the batch being measured."""

    def update(self, p: SweepProgress) -> None:
        parts: list[str] = []
        if p.steps:
            s = p.steps[-1]
            parts.append(
                f"step {s.step} · {s.n_measured}/{p.n_candidates} settings "
                f"({s.sampling_rate:.1%}) · R² min {_r2(s.r2_min)} (target {s.threshold:g})"
            )
        else:
            parts.append(f"first batch ({p.n_candidates} valid settings in the space)")
        if p.batch_total:
            parts.append(f"trial {p.batch_done}/{p.batch_total} of this batch")
        if p.failed:
            parts.append(f"{p.failed} failed")
        self.show(" · ".join(parts))
