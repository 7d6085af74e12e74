"""Reports of an order experiment: the per-test table and verdict, JSON/CSV, the plot of
medians with their CIs, the live progress line, and the ``--from`` CSV reader.

Every median comes with its distribution-free CI and sample count; every verdict names
the test behind it and its p-value against the Bonferroni threshold.  The deciding
p-values are on run means; the pooled trials' p sits beside them, labelled as not
deciding.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from assay.report.export import rows_to_csv, save_figure
from assay.report.fit import fitted
from assay.report.format import _decimals, _scale_time, format_duration, format_p, trial_counts
from assay.report.grid import Grid, columns
from assay.report.safe import plain
from assay.report.terminal import LiveLine, footer_lines
from assay.stats.order import HOST_COLUMN, ORDER_COLUMNS, MedianCI
from assay.studies.order import method_text, order_row

if TYPE_CHECKING:
    import pandas as pd

    from assay.studies.order import OrderProgress, OrderResult

CSV_FIELDS = [
    "study",
    "pi",
    "unit",
    "test",
    "n_fixed",
    "n_random",
    "mean_fixed",
    "mean_random",
    "delta_percent",
    "median_fixed",
    "median_fixed_low",
    "median_fixed_high",
    "median_random",
    "median_random_low",
    "median_random_high",
    "confidence",
    "kruskal_h",
    "kruskal_p",
    "mann_whitney_u",
    "mann_whitney_p",
    "p_value",
    "threshold",
    "order_matters",
    "drift_rho",
    "drift_p",
    "drift_fixed_rho",
    "drift_fixed_p",
    "note",
    # one value per run (its median): these decide (added after the columns above)
    "runs_fixed",
    "runs_random",
    "run_kruskal_p",
    "run_mann_whitney_p",
    "p_floor",
    "pooled_p",
    "pooled_order_matters",
]


def trials_csv(table: pd.DataFrame) -> str:
    """The trials table in the ``--from`` format (one row per successful trial; ``host``
    too when the trials name their hosts)."""
    columns = [*ORDER_COLUMNS, *([HOST_COLUMN] if HOST_COLUMN in table.columns else [])]
    return rows_to_csv(columns, table[columns].to_dict("records"))


def csv_rows(res: OrderResult) -> list[dict[str, Any]]:
    """One CSV row per test."""
    return [
        {"study": res.study, "pi": res.pi, "unit": res.unit, **order_row(r, res.analysis.threshold)}
        for r in res.analysis.results
    ]


def _value(x: float, unit: str, decimals: int) -> str:
    if not math.isfinite(x):
        return "n/a"
    if unit == "s":
        scale, shown = _scale_time(x)
        return f"{x / scale:.{decimals}f} {shown}"
    return f"{x:.{decimals}f}{f' {unit}' if unit else ''}"


def format_median(ci: MedianCI, unit: str) -> str:
    """``12.3 ms [11.9, 12.8]``: the median and its order-statistic CI, same digits.

    >>> from assay.stats.order import median_ci
    >>> format_median(median_ci([0.0101, 0.0102, 0.0105, 0.0099, 0.0100, 0.0103]), "s")
    '10.15 ms [9.90, 10.50]'
    """
    if not math.isfinite(ci.median):
        return "n/a"
    scale = _scale_time(ci.median)[0] if unit == "s" else 1.0
    width = (ci.high - ci.low) / 2 / scale if ci.available else math.nan
    d = _decimals(width) if math.isfinite(width) and width > 0 else 3
    d = min(d, 6)
    med = _value(ci.median, unit, d)
    if not ci.available:
        return f"{med} [CI n/a]"
    return f"{med} [{ci.low / scale:.{d}f}, {ci.high / scale:.{d}f}]"


# the columns a narrow terminal leaves out, least important first
ORDER_DROP_ORDER = ("drift ρ (p)", "pooled p", "MWU p", "n (f/r)", "Δ% means")


_VERDICT_STYLE = {"matters": "bold red", "same": "green", "not tested": "yellow"}


def _table(res: OrderResult) -> Table:
    """The per-test table of the terminal (:func:`order_grid`, verdicts in colour)."""
    grid = order_grid(res)
    last = len(grid.header) - 1
    return grid.table(lambda r, c, text: _VERDICT_STYLE.get(text) if c == last else None)


def order_grid(res: OrderResult) -> Grid:
    """Each test: runs and trials fixed/random, the medians with their CIs, the change
    of the means, the p-values and the verdict, as the terminal and the HTML report
    show them."""
    a = res.analysis
    arrow = "↓" if res.direction == "lower" else "↑"
    conf = f"{a.confidence:.0%}"
    title = f"{res.study}: {res.pi} {arrow}" + (f" ({res.unit})" if res.unit else "")
    header = [
        "test", "runs (f/r)", "n (f/r)", f"fixed median [{conf} CI]",
        f"random median [{conf} CI]", "Δ% means",
        # p-values on run means (they decide), then the pooled trials' (they do not)
        "KW p", "MWU p", "pooled p", "drift ρ (p)", "order",
    ]  # fmt: skip
    rows: list[list[str]] = []
    for r in a.results:
        c = r.comparison
        d = r.drift_random
        drift = "n/a" if not math.isfinite(d.rho) else f"{d.rho:+.2f} ({format_p(d.p_value)})"
        if c is None:
            rows.append([r.test, *([""] * 8), drift, "not tested"])
            continue
        runs = "" if r.per_run is None else f"{r.per_run.n_fixed}/{r.per_run.n_random}"
        kw = format_p(r.per_run.kruskal_p) if r.per_run is not None else "n/a"
        mwu = format_p(r.per_run.mann_whitney_p) if r.per_run is not None else "n/a"
        delta = f"{c.delta_percent:+.1f}%" if math.isfinite(c.delta_percent) else "n/a"
        rows.append([
            r.test, runs, f"{c.n_fixed}/{c.n_random}",
            format_median(c.median_fixed, res.unit), format_median(c.median_random, res.unit),
            delta, kw, mwu, format_p(r.pooled_p), drift,
            "matters" if r.significant else "same",
        ])  # fmt: skip
    everything = frozenset(range(len(header)))
    return Grid(
        title,
        header,
        rows,
        right=columns(header, left=["test", "order"]),
        no_wrap=everything - {0},
    )


def schedule_text(res: OrderResult) -> str:
    """How the trials were run: the runs, the seed, the reset and the trial counts."""
    by = trial_counts(res.trials_by_status)
    if res.plan is None:
        failed = res.trials_by_status.get("failed", 0)
        return (
            f"from {', '.join(res.sources)}: {len(res.table)} "
            + ("readings (one per trial and metric)" if res.metrics else "trials")
            + (f" ({failed} failed, not analysed)" if failed else "")
            + (f" · {res.metrics_text}" if res.metrics_text else "")
        )
    p = res.plan
    reset = (
        f"reset before every trial: {' '.join(res.reset)}"
        if res.reset
        else "no reset between trials"
    )
    left = res.trials_planned - res.trials_total
    return (
        f"{res.reason} · {p.fixed_runs} fixed-order runs ({p.baseline} baseline) and "
        f"{p.random_runs} random-order runs (seed {p.seed}) × {len(p.tests)} tests × "
        f"{p.repetitions} repetitions · {reset} · {res.trials_total} trials ({by})"
        + (f", {left} not run" if left > 0 else "")
        + f" · measured {format_duration(res.elapsed_s)}"
        + (f" · {res.resumed_trials} resumed from the store" if res.resumed_trials else "")
    )


def render_order(res: OrderResult, console: Console) -> None:
    """The per-test table, the method, the verdict, drift, the schedule and the footer."""
    a = res.analysis
    table = _table(res)
    lines: list[RenderableType] = fitted(table, console, ORDER_DROP_ORDER, label="test")
    lines.append(Text(f"method: {method_text(res)}", style="dim"))
    verdict = a.verdict()
    style = "bold red" if a.order_matters else "bold green"
    if verdict.startswith("order not"):
        style = "bold yellow"  # too few runs, or nothing to compare: no conclusion
    lines.append(Text(plain(verdict), style=style))
    pooled = a.pooled_line()
    if pooled:
        lines.append(Text(plain(pooled), style="dim"))
    drift = a.drift_line()
    if drift:
        lines.append(Text(plain(drift), style="yellow"))
    for line in a.host_lines(res.unit):
        lines.append(Text(plain(line), style="yellow" if "differ" in line else ""))
    lines.append(Text(schedule_text(res)))
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


def plot_order(res: OrderResult, path: str | Path) -> None:
    """Medians with their CIs, fixed vs random, one panel per test (PNG or SVG by suffix).

    Panels are separate because tests differ in scale; a flagged test's title says so.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(path)
    fmt = out.suffix.lower().lstrip(".")
    if fmt not in ("png", "svg"):
        raise ValueError(f"{out}: the plot must be a .png or .svg file")
    results = res.analysis.results
    ncols = min(len(results), 4) or 1
    nrows = math.ceil(len(results) / ncols) or 1
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(2.6 * ncols + 0.6, 2.8 * nrows + 0.6), squeeze=False
    )
    unit = f" ({res.unit})" if res.unit else ""
    conf = f"{res.analysis.confidence:.0%}"
    for ax, r in zip(axes.flat, results, strict=False):
        c = r.comparison
        ax.set_xlim(-0.6, 1.6)
        ax.set_xticks([0, 1], ["fixed", "random"])
        if c is None:
            ax.set_title(f"{r.test}\n(not tested)", fontsize=9, parse_math=False)
            continue
        for x, ci, color in ((0, c.median_fixed, "tab:blue"), (1, c.median_random, "tab:orange")):
            if ci.available:
                err = [[ci.median - ci.low], [ci.high - ci.median]]
                ax.errorbar([x], [ci.median], yerr=err, fmt="o", color=color, capsize=6)
            else:
                ax.plot([x], [ci.median], "o", color=color, mfc="none")
        flag = "order matters" if r.significant else "same"
        # names are literal text, never TeX ($...$)
        ax.set_title(f"{r.test}\n{flag}, p = {format_p(r.p_value)}", fontsize=9, parse_math=False)
        ax.tick_params(labelsize=8)
    for ax in list(axes.flat)[len(results) :]:
        ax.axis("off")
    axes[0][0].set_ylabel(f"{res.pi}{unit}", fontsize=9, parse_math=False)
    title = f"{res.study}: medians with {conf} order-statistic CIs"
    fig.suptitle(title, fontsize=10, parse_math=False)
    fig.tight_layout()
    save_figure(fig, out, format=fmt, dpi=120)
    plt.close(fig)


class OrderProgressView(LiveLine):
    """Trials done, the current run and its kind, and the time left."""

    def update(self, p: OrderProgress) -> None:
        parts = [f"trial {p.trials}/{p.planned}", f"run {p.run}/{p.runs} ({p.kind} order)"]
        if p.failed:
            parts.append(f"{p.failed} failed")
        left = p.planned - p.trials
        if left and math.isfinite(p.mean_trial_s):
            parts.append(f"~{format_duration(left * p.mean_trial_s)} of trials left")
        self.show(" · ".join(parts), left == 0)
