"""Reports of a knob pre-selection study: terminal tables, an importance chart, exports.

>>> from assay.stats.importance import KnobImportance
>>> k = KnobImportance("fsync", 0.4, 0.31, 0.05, 1, 1, 2)
>>> importance_cells(k, unsafe=True)
['1', 'fsync ⚠', '40.0%', '1', '0.310 ± 0.050', '1', '2']
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from assay.report.export import save_figure
from assay.report.fit import fitted
from assay.report.format import format_duration, format_estimate, trial_counts
from assay.report.grid import Grid
from assay.report.safe import plain
from assay.report.terminal import LiveLine, TrialPace
from assay.stats.importance import KnobImportance, PIRanking, ValidationRow

if TYPE_CHECKING:
    from assay.designs.knobs import KnobAnalysis
    from assay.designs.tune import TuneResult, TuningCost
    from assay.importers.csvdata import Measurements
    from assay.studies.knobs import KnobsProgress

__all__ = [
    "CSV_FIELDS",
    "KnobsProgressView",
    "csv_rows",
    "importance_cells",
    "input_lines",
    "plot_importance",
    "render_knobs",
]

#: Columns of ``assay knobs --csv``: one row per PI and knob.
CSV_FIELDS = [
    "pi",
    "direction",
    "knob",
    "type",
    "unsafe",
    "impurity",
    "impurity_rank",
    "permutation",
    "permutation_sd",
    "permutation_rank",
    "distinct",
    "in_top_k",
    "r2_all_knobs_oob",
    "n_samples",
]


def render_knobs_result(result: Any, console: Console) -> None:
    """A knob study's report (``assay knobs``, ``assay show``): the ranking, where its
    samples came from, and what the tuning cost and tuning ran on."""
    claims = getattr(result, "claims", None)
    if claims:  # what the study set out to show comes first (#62)
        from assay.report.compare import claims_lines

        for line in claims_lines([c.as_dict() for c in claims], console):
            console.print(line)
    render_knobs(result.analysis, console, tune=result.tune, cost=result.cost)
    if getattr(result, "reading", None) is not None:
        for line in input_lines(result.reading):
            console.print(line, style="dim")
    if result.cost is not None and not result.tuned_on_model:
        console.print(
            "the tuning cost (top-k vs all knobs) is estimated on the random-forest "
            "model of the samples, without measuring",
            style="dim",
        )
    if result.tune is not None and result.tuned_on_model:
        console.print(
            "tuning ran on the random-forest model of the samples, not on the system: "
            "measure the best configuration before trusting it",
            style="dim",
        )
    by_status = getattr(result, "trials_by_status", None) or {}
    if by_status:  # a measured study: how its trials ended, as run and sweep say
        by = trial_counts(by_status)
        failed = sum(n for s, n in by_status.items() if s != "ok")
        console.print(
            f"{sum(by_status.values())} trials ({by})", style="bold red" if failed else None
        )
    environment = getattr(result, "environment", None)
    resources = getattr(result, "resources", None)
    if environment or resources:  # a measured study: where it ran, what the watch saw
        from assay.report.terminal import footer_lines

        for shown in footer_lines(
            None,
            None,
            list(result.warnings),  # a measured study's (--from prints its own first)
            list(getattr(result, "failures", None) or []),
            "",
            resources={"": resources} if resources else None,
            environment=environment,
        ):
            console.print(shown)


def input_lines(reading: Measurements) -> list[str]:
    """What ``--from`` used as knobs and what it left out, and why (plain text)."""
    lines = [
        f"knobs: {', '.join(reading.params)} ({reading.rows_read} rows read, "
        f"{len(reading.frame)} trials used)"
    ]
    if reading.excluded:
        lines.append("not knobs: " + "; ".join(f"{plain(c)} ({r})" for c, r in reading.excluded))
    return [plain(line) for line in lines]


def _num(x: float, digits: int = 3) -> str:
    return "n/a" if not math.isfinite(x) else f"{x:.{digits}f}"


def importance_cells(k: KnobImportance, *, unsafe: bool = False) -> list[str]:
    """One table row: rank, knob (⚠ when unsafe), impurity share and rank, permutation
    importance ± sd and rank, distinct values."""
    return [
        str(k.impurity_rank),
        f"{k.knob} ⚠" if unsafe else k.knob,
        f"{k.impurity * 100:.1f}%",
        str(k.impurity_rank),
        f"{_num(k.permutation)} ± {_num(k.permutation_sd)}",
        str(k.permutation_rank),
        str(k.distinct),
    ]


def ranking_grid(r: PIRanking, unsafe: set[str], title: str, limit: int | None) -> Grid:
    """The knobs of one PI by importance, as the terminal and the HTML report show them."""
    arrow = "↑" if r.direction == "higher" else "↓"
    header = ["#", "knob", "impurity", "rank", "permutation ΔR² ± sd", "rank", "distinct"]
    rows = [importance_cells(k, unsafe=k.knob in unsafe) for k in r.knobs[: limit or len(r.knobs)]]
    return Grid(f"{title}: {r.pi} {arrow}", header, rows, right=frozenset({0, 2, 3, 4, 5, 6}))


def _ranking_table(r: PIRanking, unsafe: set[str], title: str, limit: int | None) -> Table:
    top = set(r.top)  # the top-k knobs in bold
    return ranking_grid(r, unsafe, title, limit).table(
        lambda row, c, text: "bold" if r.knobs[row].knob in top else None
    )


def curve_grid(r: PIRanking) -> Grid:
    """The out-of-bag R² of the models of the top k knobs, k = 1, 2, ..."""
    rows = []
    for p in r.curve:
        share = (
            p.r2 / r.r2_oob if r.r2_oob and math.isfinite(r.r2_oob) and r.r2_oob > 0 else math.nan
        )
        rows.append(
            [str(p.k), p.knob, _num(p.r2), "n/a" if not math.isfinite(share) else f"{share:.0%}"]
        )
    title = f"top-k models: {r.pi} (out-of-bag R²; all {len(r.knobs)} knobs: {_num(r.r2_oob)})"
    header = ["k", "knob added", "OOB R²", "of all-knobs R²"]
    return Grid(title, header, rows, right=frozenset({0, 2, 3}))


def _curve_table(r: PIRanking) -> Table:
    return curve_grid(r).table()


def stability_grid(r: PIRanking) -> Grid:
    """How often random subsets of the samples give the same top k."""
    rows = [
        [
            str(s.size), str(s.repeats), f"{s.iou_mean:.2f}", f"{s.iou_min:.2f}",
            f"{s.identical:.0%}", _num(s.r2_mean),
        ]
        for s in r.stability
    ]  # fmt: skip
    title = f"stability of the top {r.top_k}: {r.pi} (random subsets vs all {r.n_samples} samples)"
    header = ["subset size", "repeats", "IoU mean", "IoU min", "same top-k", "OOB R²"]
    return Grid(title, header, rows, right=frozenset(range(6)))


def _stability_table(r: PIRanking) -> Table:
    return stability_grid(r).table()


def validation_grid(rows: Sequence[ValidationRow], k: int) -> Grid:
    """The best reading with only the top k knobs varied against the best of all."""
    cells = [
        [
            f"{v.pi} {'↑' if v.direction == 'higher' else '↓'}",
            f"{v.best_full:.4g} ({v.n_full})",
            f"{v.best_top:.4g} ({v.n_top})",
            _num(v.ratio, 3),
        ]
        for v in rows
    ]
    title = f"validation: best with only the top {k} knobs varied vs best of all-knob samples"
    header = ["PI", "best, all knobs (n)", f"best, top {k} (n)", "top-k ÷ all (1 = as good)"]
    return Grid(title, header, cells, right=frozenset({1, 2, 3}))


def _validation_table(rows: Sequence[ValidationRow], k: int) -> Table:
    return validation_grid(rows, k).table()


def _tune_lines(tune: TuneResult) -> list[Text | Table]:
    out: list[Text | Table] = []
    n_ok = sum(t.value is not None for t in tune.trials)
    n_feasible = sum(t.value is not None and t.feasible for t in tune.trials)
    head = (
        f"tuner: Optuna {tune.sampler.upper()} on {', '.join(tune.tuned)} "
        f"({len(tune.trials)} trials, {n_ok} succeeded, {n_feasible} feasible)"
    )
    if tune.excluded_unsafe:
        head += f"; left at defaults as unsafe: {', '.join(tune.excluded_unsafe)}"
    out.append(Text(head))
    best = tune.best
    if best is None:
        out.append(Text("no trial succeeded with every bound satisfied", style="yellow"))
        return out
    # a headline, not a table title: rich wraps a title to the (narrow) table's width
    out.append(Text(f"best configuration (trial {best.number}: {best.value:.6g})"))
    table = Table(show_edge=False)
    table.add_column("knob")
    table.add_column("value", justify="right")
    for name in tune.tuned:
        table.add_row(name, str(best.setting[name]))
    out.append(table)
    c = tune.confirmed
    if c is not None:
        est = format_estimate(c["mean"], c["half_width"], c.get("unit", ""))
        out.append(
            Text(
                f"best configuration measured {c['n']} more times: {c['pi']} = {est} "
                f"({c['confidence']:.0%} t-interval)"
            )
        )
    else:
        out.append(
            Text(
                "the best value is a single reading: measure this configuration until its CI "
                "is narrow ('assay run') before relying on it",
                style="dim",
            )
        )
    return out


def _cost_lines(cost: TuningCost) -> list[Text | Table]:
    head = Text(
        f"tuning cost: trials to within {cost.tolerance:.0%} of the best found "
        f"({cost.reference:.6g}), {cost.n_trials} trials per run"
    )
    table = Table(show_edge=False)
    table.add_column("knobs tuned")
    table.add_column("trials per run", justify="right")
    table.add_column("median", justify="right")
    for label, arm in (("top-k", cost.top), ("all", cost.all)):
        needed = ", ".join("never" if t is None else str(t) for t in arm.trials_needed)
        med = "n/a" if arm.median_trials is None else f"{arm.median_trials:.0f}"
        table.add_row(f"{label} ({len(arm.knobs)})", needed, med)
    sp = cost.speedup
    text = "speed-up: n/a" if sp is None else f"speed-up (median trials all ÷ top-k): {sp:.1f}×"
    return [head, table, Text(text)]


def render_knobs(
    analysis: KnobAnalysis,
    console: Console,
    *,
    tune: TuneResult | None = None,
    cost: TuningCost | None = None,
    title: str = "knob importance",
    limit: int | None = 20,
) -> None:
    """Every ranking (impurity and permutation importance side by side), the top-k R²
    curve, the stability table, the validation result and the tuner's result."""
    unsafe = {k.name for k in analysis.space.knobs if k.unsafe}
    lines: list[RenderableType] = []
    for r in analysis.rankings:
        ranking = _ranking_table(r, unsafe, title, limit)
        lines.extend(fitted(ranking, console, ("distinct", "rank", "rank"), label="knob"))
        top = ", ".join(f"{n} ⚠" if n in unsafe else n for n in r.top)
        lines.append(Text(f"top {r.top_k} by {r.by} importance: {top}", style="bold"))
        if r.disagreement:
            lines.append(Text(r.disagreement, style="yellow"))
        if r.curve:
            lines.append(_curve_table(r))
            if r.suggested_k is not None:
                lines.append(
                    Text(
                        f"{r.suggested_k} knob(s) reach 95% of the all-knobs out-of-bag R²",
                        style="dim",
                    )
                )
        if r.stability:
            lines.append(_stability_table(r))
        lines.append(Text(r.stability_verdict()))
        for note in r.notes:
            lines.append(Text(note, style="yellow"))
        lines.append(Text(""))
    if analysis.validation:
        lines.append(_validation_table(analysis.validation, analysis.primary.top_k))
        lines.append(
            Text(
                "best values are single readings of one sample each (no CI): a ratio near 1 "
                "says the top-k knobs reach about the same performance",
                style="dim",
            )
        )
    if tune is not None:
        lines.extend(_tune_lines(tune))
    if cost is not None:
        lines.extend(_cost_lines(cost))
    if unsafe:
        lines.append(
            Text("⚠ unsafe: trades safety for speed; not tuned unless allowed", style="dim")
        )
    method = (
        f"method: random forest ({analysis.primary.n_trees} trees, seed "
        f"{analysis.primary.seed}) on {analysis.n_samples} samples, categorical knobs "
        "dummy-encoded, numeric knobs by rank (the paper standardises: the same splits, "
        "but outliers squash standardised values); impurity importance = share of the "
        "variance reduction (Kanellis et al.); permutation importance = drop in held-out R² "
        "when the knob is shuffled (5-fold cross-fitting); R² out-of-bag"
    )
    lines.append(Text(method, style="dim"))
    console.print(Group(*lines))


def csv_rows(analysis: KnobAnalysis) -> list[dict[str, Any]]:
    """One row per PI and knob (see :data:`CSV_FIELDS`)."""
    rows: list[dict[str, Any]] = []
    for r in analysis.rankings:
        top = set(r.top)
        for k in r.knobs:
            knob = analysis.space[k.knob]
            rows.append(
                {
                    "pi": r.pi,
                    "direction": r.direction,
                    "knob": k.knob,
                    "type": knob.kind,
                    "unsafe": knob.unsafe,
                    "impurity": k.impurity,
                    "impurity_rank": k.impurity_rank,
                    "permutation": k.permutation,
                    "permutation_sd": k.permutation_sd,
                    "permutation_rank": k.permutation_rank,
                    "distinct": k.distinct,
                    "in_top_k": k.knob in top,
                    "r2_all_knobs_oob": r.r2_oob,
                    "n_samples": r.n_samples,
                }
            )
    return rows


def plot_importance(analysis: KnobAnalysis, path: str | Path, *, limit: int = 15) -> Path:
    """A horizontal bar chart per PI: impurity importance beside permutation importance
    (± sd), the top-k highlighted.  The format follows the suffix (.png, .svg, .pdf)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(path)
    rankings = analysis.rankings
    n = min(limit, len(analysis.space.knobs))
    fig, axes = plt.subplots(
        1, len(rankings), figsize=(6.5 * len(rankings), 0.35 * n + 1.6), squeeze=False
    )
    for ax, r in zip(axes[0], rankings, strict=True):
        shown = list(r.knobs[:n])[::-1]
        ys = range(len(shown))
        top = set(r.top)
        perm_total = sum(max(k.permutation, 0.0) for k in r.knobs) or 1.0
        ax.barh(
            [y + 0.2 for y in ys],
            [k.impurity for k in shown],
            height=0.4,
            color=["#1f77b4" if k.knob in top else "#9ecae1" for k in shown],
            label="impurity (share)",
        )
        ax.barh(
            [y - 0.2 for y in ys],
            [max(k.permutation, 0.0) / perm_total for k in shown],
            xerr=[k.permutation_sd / perm_total for k in shown],
            height=0.4,
            color=["#ff7f0e" if k.knob in top else "#fdd0a2" for k in shown],
            label="permutation (share of total ΔR²)",
        )
        ax.set_yticks(list(ys))
        ax.set_yticklabels(  # names are literal text, never TeX ($...$)
            [f"{k.knob} ⚠" if analysis.space[k.knob].unsafe else k.knob for k in shown],
            parse_math=False,
        )
        ax.set_xlabel("relative importance")
        ax.set_title(f"{r.pi} (n={r.n_samples}, OOB R²={_num(r.r2_oob, 2)})", parse_math=False)
        ax.legend(loc="lower right", fontsize="small")
    fig.tight_layout()
    save_figure(fig, out)
    plt.close(fig)
    return out


class KnobsProgressView(LiveLine):
    """Which samples are being measured and how far along, or the stage of the study."""

    def __init__(self, console: Console) -> None:
        super().__init__(console)
        self.pace = TrialPace()

    def update(self, p: KnobsProgress) -> None:
        if not p.measuring:
            self.show(p.stage, True)
            return
        self.pace.update(p.done)
        failed = f" · {p.failed} failed" if p.failed else ""
        left = self.pace.seconds(p.total - p.done)
        eta = "" if left is None else f" · ~{format_duration(left)} left"
        self.show(f"measuring {p.stage}: {p.done}/{p.total}{eta}{failed}", p.done == p.total)
