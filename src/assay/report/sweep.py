"""Terminal, JSON and CSV output of ``assay sweep``."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from assay.report.export import save_figure
from assay.report.format import format_duration, format_estimate, trial_counts
from assay.report.grid import Grid, columns
from assay.report.safe import plain
from assay.report.terminal import LiveLine, TrialPace, footer_lines

if TYPE_CHECKING:
    from assay.designs.sweep import Mismatch, StepResult
    from assay.studies.sweep import SweepProgress, SweepResult


def _r2(x: float) -> str:
    return f"{x:.3f}" if math.isfinite(x) else "n/a"


def steps_grid(steps: list[StepResult], title: str, n_params: int = 2) -> Grid:
    """One row per step of Algorithm 1: settings measured, rate, R² over the splits
    (a step stored as main+2way with one parameter, before that form was refused for
    one parameter, is shown as what it was: main effects); the terminal's and the HTML
    report's."""
    ceilings = any(math.isfinite(s.ceiling[0]) for s in steps)
    names = ["step", "settings", "rate", "R² min", "R² median"]
    names += ["R² ceiling"] if ceilings else []  # the noise between repetitions allows
    names += ["model", "done"]
    rows = []
    for s in steps:
        finite = sorted(v for v in s.r2 if math.isfinite(v))
        median = finite[len(finite) // 2] if finite else math.nan
        form = "main" if n_params < 2 and s.form == "main+2way" else s.form
        rows.append([
            str(s.step), f"{s.n_measured}/{s.n_candidates}", f"{s.sampling_rate:.1%}",
            _r2(s.r2_min), _r2(median), *([_r2(s.ceiling[0])] if ceilings else []),
            f"{s.model} ({form})" if s.model == "anova" else s.model, s.reason or "",
        ])  # fmt: skip
    return Grid(title, names, rows, right=columns(names, left=["model", "done"]))


def steps_table(steps: list[StepResult], title: str, n_params: int = 2) -> Table:
    """:func:`steps_grid` as the terminal shows it."""
    return steps_grid(steps, title, n_params).table()


def _counted(what: str, full: int, missed: tuple[str, ...], extra: tuple[str, ...]) -> str:
    wrong = len(missed) + len(extra)
    text = f"  {what}: {full} in all the data; sample found {full - len(missed)}"
    text += f", missed {len(missed)}" + (f" ({', '.join(missed)})" if missed else "")
    text += f", added {len(extra)}" + (f" ({', '.join(extra)})" if extra else "")
    return text + f": {wrong}/{max(full, 1)} = {wrong / max(full, 1):.0%}"


def mismatch_lines(m: Mismatch, material: Mismatch | None = None) -> list[str]:
    """The paper's mismatch metric against the full-data analysis, with its counts:
    (missed + added) / found in all the data, which exceeds 100% when the sample adds
    more than the full data has; then the same for the terms that explain a material
    share of the variance."""
    lines = [
        "against the analysis of all the data (mismatch = (missed + added) / number in all "
        "the data, as in the paper):"
    ]
    blocks = [("significant terms", "important points", m)]
    if material is not None:
        share = f"{material.min_share:.0%}"
        blocks.append((f"terms ≥ {share} of variance", f"points of terms ≥ {share}", material))
    for terms, points, mm in blocks:
        lines.append(_counted(terms, mm.params_full, mm.params_missed, mm.params_extra))
        lines.append(_counted(points, mm.points_full, mm.points_missed, mm.points_extra))
    return lines


def material_line(res: SweepResult) -> str | None:
    """Which significant terms explain at least ``min_share`` of the variance."""
    if res.analysis is None or not res.analysis.significant:
        return None
    big = res.material
    small = [r for r in res.analysis.significant if r.name not in big]
    text = f"Significant and explaining ≥ {res.min_share:.0%} of the variance: " + (
        ", ".join(n.replace(":", " × ") for n in big) if big else "none"
    )
    if small:
        text += f"; significant but below {res.min_share:.0%}: " + ", ".join(
            f"{r.name.replace(':', ' × ')} ({r.pct_var:.2g}%)" for r in small
        )
    return text + "."


def failed_line(res: SweepResult) -> str:
    """What failed trials cost the answer, for the top of the report; "" when none did.

    >>> from types import SimpleNamespace as NS
    >>> f = [{"setting": {"x": 2, "y": 1, "repetition": r}} for r in (0, 1)]
    >>> line = failed_line(NS(failures=f, trials_total=6, lost_settings=[{"x": 2, "y": 1}]))
    >>> line.startswith("2 of 6 trials failed: 1 setting has no valid trial"), "(x=2, y=1)" in line
    (True, True)
    """
    if not res.failures:
        return ""
    head = f"{len(res.failures)} of {res.trials_total} trials failed"
    lost = res.lost_settings
    if not lost:
        return f"{head} (every setting kept a valid trial); the failures are listed below"
    shown = "; ".join(", ".join(f"{k}={v}" for k, v in s.items()) for s in lost[:5])
    more = f"; and {len(lost) - 5} more (see --json: settings_lost)" if len(lost) > 5 else ""
    has = "has" if len(lost) == 1 else "have"
    what = "setting" if len(lost) == 1 else "settings"
    return (
        f"{head}: {len(lost)} {what} {has} no valid trial and {'is' if len(lost) == 1 else 'are'} "
        f"left out of the analysis ({shown}{more}); exit status 6; the failures are listed below"
    )


def render_sweep(res: SweepResult, console: Console) -> None:
    """The steps, the summary (significant parameters, important points, the
    recommendation), the stopping reason and the footer."""
    mismatch, comparison = res.mismatch, res.comparison
    parts: list[Any] = [Text(res.space, style="dim")]
    if res.claims:  # what the study set out to show comes first (#62)
        from assay.report.compare import claims_lines

        parts.extend(claims_lines([c.as_dict() for c in res.claims], console))
    if res.steps:
        title = f"{res.study}: {res.pi.name} ({res.pi.unit})"
        parts.append(steps_table(res.steps, title, len(res.params)))
    failed = failed_line(res)
    if failed:  # bad news first: the analysis below leaves these settings out
        parts.append(Text(plain(failed), style="bold red"))
    if res.busy is not None:  # and before an answer that is provisional
        b = res.busy
        parts.append(
            Text(
                f"stopped early: the machine is busy (a load of {b.load:.1f} on {b.cores} "
                f"cores, other processes disturbing {b.disturbed} of {b.watched} watched "
                "trials): the answer below is provisional; why and what would help at "
                "the end",
                style="bold yellow",
            )
        )
    if res.transform == "log":
        parts.append(
            Text(
                f"analysed on log({res.pi.name}): R², shares of variance and important "
                f"points are those of log({res.pi.name}) (effects that multiply)"
            )
        )
    parts.extend(Text(f"note: {n}", style="dim") for n in res.notes)
    if len(res.settings):
        parts.append(settings_table(res))
    if res.summary is not None:
        parts.append(Text(res.summary.text))
        material = material_line(res)
        if material is not None:
            parts.append(Text(material))
    if mismatch is not None:
        parts.extend(Text(line) for line in mismatch_lines(mismatch, res.mismatch_material))
    if comparison is not None:
        parts.append(Text(comparison.text))
    by = trial_counts(res.trials_by_status)
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
            bookkeeping_s_median=res.bookkeeping_s_median,
        )
    )
    console.print(Group(*parts))


#: Settings listed in the terminal; beyond, one line says the CSV and JSON have them all.
SETTINGS_SHOWN = 40


def settings_table(res: SweepResult, limit: int = SETTINGS_SHOWN) -> Group | Text:
    """Each measured setting (in the order of the parameters' values): its repetitions
    and the PI's mean ± the half-width of its t interval (a title line, then the table:
    a table's own title wraps at the table's width).  Beyond ``limit`` settings, one
    line that says where they all are."""
    pi = res.pi.name
    frame = res.settings
    conf = frame[f"{pi}_confidence"].iloc[0] if len(frame) else 0.95
    title = f"each setting: {pi} mean ± {conf:.0%} CI over its repetitions (t interval)"
    if len(frame) > limit:
        return Text(f"{title}: {len(frame)} settings, in --csv, --json and 'assay report'")
    table = Table(show_edge=False)
    for name in res.params:
        table.add_column(name, justify="right")
    table.add_column("n", justify="right")
    table.add_column(f"{pi} ({res.pi.unit})" if res.pi.unit else pi, justify="right")
    for r in frame.to_dict("records"):
        table.add_row(
            *(Text(str(r[p])) for p in res.params),
            str(int(r[f"{pi}_n"])),
            Text(format_estimate(float(r[pi]), float(r[f"{pi}_half_width"]), res.pi.unit)),
        )
    return Group(Text(title), table)


def settings_plot(res: SweepResult, path: str | Path) -> Path:
    """Each measured setting's mean with its t interval (error bars), in the order of the
    parameters' values: the plot of a sweep of one parameter, where tiles need two.

    >>> import tempfile, pandas as pd
    >>> from types import SimpleNamespace
    >>> from assay.spec import PISpec
    >>> res = SimpleNamespace(params=["t"], pi=PISpec(name="y", unit="s"), study="s",
    ...     settings=pd.DataFrame({"t": [1, 2], "y": [1.0, 2.0], "y_n": [3, 3],
    ...                            "y_half_width": [0.1, float("inf")],
    ...                            "y_confidence": [0.95, 0.95]}))
    >>> with tempfile.TemporaryDirectory() as d:
    ...     settings_plot(res, f"{d}/s.svg").read_text()[:5]
    '<?xml'
    """
    from matplotlib.figure import Figure

    out = Path(path)
    pi, frame = res.pi.name, res.settings
    labels = [", ".join(f"{p}={r[p]}" for p in res.params) for r in frame.to_dict("records")]
    mean = frame[pi].to_numpy(float) if len(frame) else []
    half = frame[f"{pi}_half_width"].to_numpy(float) if len(frame) else []
    conf = float(frame[f"{pi}_confidence"].iloc[0]) if len(frame) else 0.95
    fig = Figure(figsize=(max(6.0, 0.5 * len(labels) + 2.0), 3.8))
    ax = fig.subplots()
    x = list(range(len(labels)))
    finite = [h if math.isfinite(h) else 0.0 for h in half]
    ax.errorbar(x, mean, yerr=finite, fmt="o", capsize=4, color="tab:blue")
    ax.set_xticks(
        x,
        labels,
        rotation=45 if len(labels) > 6 else 0,
        ha="right" if len(labels) > 6 else "center",
    )
    unit = f" ({res.pi.unit})" if res.pi.unit else ""
    ax.set_ylabel(f"{pi}{unit}", parse_math=False)
    ax.set_title(
        f"{res.study}: {pi} per setting\nmean ± {conf:.0%} CI over its repetitions (t interval)",
        parse_math=False,
        fontsize=10,
    )
    fig.tight_layout()
    save_figure(fig, out, format=out.suffix.lstrip("."), dpi=110)
    return out


def measured_csv_rows(res: SweepResult) -> tuple[list[str], list[dict[str, Any]]]:
    """The measured settings, sorted by setting in the order of the parameters' values:
    the PI's mean, its finite repetitions (``{pi}_n``), their standard deviation and the
    t interval of the mean (``{pi}_low``, ``{pi}_high``, ``{pi}_half_width`` at
    ``{pi}_confidence``): one CSV row each."""
    pi = res.pi.name
    stats = ("n", "sd", "low", "high", "half_width", "confidence")
    fields = [*res.params, pi, *(f"{pi}_{k}" for k in stats)]
    frame = res.settings if len(res.settings) else res.measured
    rows = [{k: _cell(r.get(k)) for k in fields} for r in frame.to_dict("records")]
    return fields, rows


def _cell(v: Any) -> Any:
    """NaN and ±inf as empty cells (one repetition has no interval)."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


class SweepProgressView(LiveLine):
    """Step, sampling rate, the lowest validation R², and the batch being measured."""

    def __init__(self, console: Console) -> None:
        super().__init__(console)
        self.pace = TrialPace()

    def update(self, p: SweepProgress) -> None:
        self.pace.update(p.batch_done)
        parts: list[str] = []
        if p.steps:
            s = p.steps[-1]
            parts.append(
                f"step {s.step} · {s.n_measured}/{p.n_candidates} settings "
                f"({s.sampling_rate:.1%}) · R² min {_r2(s.r2_min)} (target {s.threshold:g})"
                + (f", ceiling {_r2(s.ceiling[0])}" if math.isfinite(s.ceiling[0]) else "")
            )
        else:
            parts.append(f"first batch ({p.n_candidates} valid settings in the space)")
        if p.batch_total:
            line = f"trial {p.batch_done}/{p.batch_total} of this batch"
            batch = self.pace.seconds(p.batch_total - p.batch_done)
            if batch is not None:
                line += f", ~{format_duration(batch)} left in it"
                rest = self.pace.seconds(p.trials_left_max)
                if rest is not None and p.trials_left_max > p.batch_total - p.batch_done:
                    line += f" (at most ~{format_duration(rest)} to the end of the space)"
            parts.append(line)
        if p.failed:
            parts.append(f"{p.failed} failed")
        self.show(" · ".join(parts))
