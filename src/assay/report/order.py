"""Reports of an order experiment: the per-test table and verdict, JSON/CSV, the plot of
medians with their CIs, the live progress line, and the ``--from`` CSV reader.

Every median comes with its distribution-free CI and sample count; every verdict names
the test behind it and its p-value against the Bonferroni threshold.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from assay.report.compare import format_p
from assay.report.export import rows_to_csv
from assay.report.format import _decimals, _scale_time, format_duration
from assay.report.terminal import LiveLine, footer_lines
from assay.stats.order import ORDER_COLUMNS, MedianCI, TestOrderResult

if TYPE_CHECKING:
    from assay.order_runner import OrderProgress, OrderResult

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
]


class OrderDataError(ValueError):
    """A ``--from`` trials file is unusable; the message names the file, the line or
    column, and what was expected."""


_EXPECTED = (
    "expected columns test (name), order (fixed or random), run (run id), position "
    "(integer position of the trial in its run) and value (a number)"
)


def read_trials_csv(path: str | Path) -> pd.DataFrame:
    """Read a trials CSV (columns ``test, order, run, position, value``; others ignored).

    Raises :class:`OrderDataError` naming the file, the line and column, and what was
    expected, on the first problem; every run must hold one kind of order, every
    ``(run, position)`` one trial, and both kinds must be present.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "t.csv")
    >>> _ = open(p, "w").write("test,order,run,position,value\\na,fixed,0,0,1.5\\n"
    ...                        "a,random,1,0,1.7\\n")
    >>> read_trials_csv(p)["value"].tolist()
    [1.5, 1.7]
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise OrderDataError(f"{p}: no such file") from None
    except UnicodeDecodeError:
        raise OrderDataError(f"{p}: not a UTF-8 text file: {_EXPECTED}") from None
    except OSError as exc:
        raise OrderDataError(f"{p}: cannot read the file: {exc}") from None
    try:
        return _parse_trials(p, text)
    except csv.Error as exc:
        raise OrderDataError(f"{p}: not a readable CSV file ({exc}): {_EXPECTED}") from None


def _parse_trials(p: Path, text: str) -> pd.DataFrame:
    if "\x00" in text:
        raise OrderDataError(f"{p}: contains NUL bytes; not a CSV text file: {_EXPECTED}")
    reader = csv.reader(text.splitlines())
    header = next(reader, None)
    while header is not None and not any(h.strip() for h in header):
        header = next(reader, None)
    if header is None:
        raise OrderDataError(f"{p}: empty file: {_EXPECTED}")
    names = [h.strip().lower() for h in header]
    dup = sorted({n for n in names if n and names.count(n) > 1})
    if dup:
        raise OrderDataError(f"{p}: column {dup[0]!r} appears twice in the header: {_EXPECTED}")
    missing = [c for c in ORDER_COLUMNS if c not in names]
    if missing:
        found = ", ".join(h for h in names if h) or "none"
        raise OrderDataError(
            f"{p}: missing column{'s' if len(missing) > 1 else ''} "
            f"{', '.join(repr(m) for m in missing)}: {_EXPECTED} (found: {found})"
        )
    at = {c: names.index(c) for c in ORDER_COLUMNS}
    rows: list[tuple[str, str, str, int, float]] = []
    slots: dict[tuple[str, int], int] = {}
    kinds: dict[str, tuple[str, int]] = {}
    for fields in reader:
        line = reader.line_num
        if not any(f.strip() for f in fields):
            continue  # blank line
        if len(fields) != len(names):
            raise OrderDataError(
                f"{p}: line {line}: expected {len(names)} fields like the header, found "
                f"{len(fields)}"
            )
        test = fields[at["test"]].strip()
        if not test:
            raise OrderDataError(f"{p}: line {line}: column 'test': empty; expected a test name")
        order = fields[at["order"]].strip().lower()
        if order not in ("fixed", "random"):
            raise OrderDataError(
                f"{p}: line {line}: column 'order': expected 'fixed' or 'random' "
                f"(got {fields[at['order']]!r})"
            )
        run = fields[at["run"]].strip()
        if not run:
            raise OrderDataError(f"{p}: line {line}: column 'run': empty; expected a run id")
        position = _int(fields[at["position"]])
        if position is None:
            raise OrderDataError(
                f"{p}: line {line}: column 'position': expected an integer >= 0 (the trial's "
                f"position in its run), got {fields[at['position']]!r}"
            )
        value = _float(fields[at["value"]])
        if value is None:
            raise OrderDataError(
                f"{p}: line {line}: column 'value': expected a finite number, got "
                f"{fields[at['value']]!r}"
            )
        first = kinds.setdefault(run, (order, line))
        if first[0] != order:
            raise OrderDataError(
                f"{p}: line {line}: column 'order': run {run!r} is {first[0]} at line "
                f"{first[1]} but {order} here; every run has one kind of order"
            )
        other = slots.setdefault((run, position), line)
        if other != line:
            raise OrderDataError(
                f"{p}: line {line}: run {run!r} already has a trial at position {position} "
                f"(line {other}); every position of a run holds one trial"
            )
        rows.append((test, order, run, position, value))
    if not rows:
        raise OrderDataError(f"{p}: no trials after the header: {_EXPECTED}")
    present = {r[1] for r in rows}
    for kind in ("fixed", "random"):
        if kind not in present:
            raise OrderDataError(
                f"{p}: column 'order': no {kind}-order trials; the ordering trap compares "
                "fixed-order runs with random-order runs, so both are needed"
            )
    return pd.DataFrame(rows, columns=list(ORDER_COLUMNS))


def _int(text: str) -> int | None:
    t = text.strip()
    if not t.isascii() or not t.isdigit():
        return None
    return int(t)


def _float(text: str) -> float | None:
    try:
        x = float(text.strip())
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def trials_csv(table: pd.DataFrame) -> str:
    """The trials table in the ``--from`` format (one row per successful trial)."""
    return rows_to_csv(list(ORDER_COLUMNS), table.to_dict("records"))


def _ci(ci: MedianCI | None, prefix: str) -> dict[str, Any]:
    if ci is None:
        return {}
    return {prefix: ci.median, f"{prefix}_low": ci.low, f"{prefix}_high": ci.high}


def order_row(r: TestOrderResult, threshold: float) -> dict[str, Any]:
    """One test's figures, as JSON and CSV give them."""
    row: dict[str, Any] = {"test": r.test}
    c = r.comparison
    if c is not None:
        row.update(
            n_fixed=c.n_fixed,
            n_random=c.n_random,
            mean_fixed=c.mean_fixed,
            mean_random=c.mean_random,
            delta_percent=c.delta_percent,
            **_ci(c.median_fixed, "median_fixed"),
            **_ci(c.median_random, "median_random"),
            confidence=c.median_fixed.confidence,
            median_fixed_coverage=c.median_fixed.coverage,
            median_random_coverage=c.median_random.coverage,
            kruskal_h=c.kruskal_h,
            kruskal_p=c.kruskal_p,
            mann_whitney_u=c.mann_whitney_u,
            mann_whitney_p=c.mann_whitney_p,
        )
    row.update(
        p_value=r.p_value,
        threshold=threshold,
        order_matters=r.significant,
        drift_rho=r.drift_random.rho,
        drift_p=r.drift_random.p_value,
        drift_n=r.drift_random.n,
        drift_fixed_rho=r.drift_fixed.rho,
        drift_fixed_p=r.drift_fixed.p_value,
        drift_fixed_n=r.drift_fixed.n,
        note=r.note,
    )
    return row


_TEST_NAMES = {"kruskal": "Kruskal-Wallis H", "mann-whitney": "Mann-Whitney U"}


def method_text(res: OrderResult) -> str:
    a = res.analysis
    conf = f"{a.confidence:.0%}"
    other = "Mann-Whitney U" if a.test == "kruskal" else "Kruskal-Wallis H"
    return (
        f"per test, fixed-order vs random-order trials of {res.pi}: {_TEST_NAMES[a.test]} "
        f"(decides) and {other}, two-sided; Bonferroni over the {a.tested} tests at alpha "
        f"{a.alpha:g}; Δ% = (mean fixed - mean random) / mean fixed; medians with "
        f"distribution-free order-statistic CIs at {conf} (binomial); n (f/r): fixed/random "
        f"trials; drift: {a.drift_method} correlation of the result with its position in the "
        "random-order runs"
    )


def order_dict(res: OrderResult) -> dict[str, Any]:
    """The JSON form of the analysis (the execution part is added by the result)."""
    a = res.analysis
    return {
        "pi": res.pi,
        "unit": res.unit,
        "direction": res.direction,
        "method": method_text(res),
        "verdict": a.verdict(),
        "order_matters": a.order_matters,
        "flagged": a.flagged,
        "drifting": a.drifting,
        "alpha": a.alpha,
        "threshold": a.threshold,
        "tested": a.tested,
        "test": a.test,
        "confidence": a.confidence,
        "drift_method": a.drift_method,
        "tests": [order_row(r, a.threshold) for r in a.results],
    }


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


def _table(res: OrderResult) -> Table:
    a = res.analysis
    arrow = "↓" if res.direction == "lower" else "↑"
    conf = f"{a.confidence:.0%}"
    title = f"{res.study}: {res.pi} {arrow}" + (f" ({res.unit})" if res.unit else "")
    table = Table(title=title, title_justify="left", show_edge=False)
    table.add_column("test", no_wrap=True)
    table.add_column("n (f/r)", justify="right", no_wrap=True)
    table.add_column(f"fixed median [{conf} CI]", justify="right", no_wrap=True)
    table.add_column(f"random median [{conf} CI]", justify="right", no_wrap=True)
    table.add_column("Δ% means", justify="right", no_wrap=True)
    table.add_column("KW p", justify="right", no_wrap=True)
    table.add_column("MWU p", justify="right", no_wrap=True)
    table.add_column("drift ρ (p)", justify="right", no_wrap=True)
    table.add_column("order", no_wrap=True)
    for r in a.results:
        c = r.comparison
        d = r.drift_random
        drift = "n/a" if not math.isfinite(d.rho) else f"{d.rho:+.2f} ({format_p(d.p_value)})"
        if c is None:
            table.add_row(r.test, "", "", "", "", "", "", drift, "[yellow]not tested[/]")
            continue
        delta = f"{c.delta_percent:+.1f}%" if math.isfinite(c.delta_percent) else "n/a"
        verdict = "[bold red]matters[/]" if r.significant else "[green]same[/]"
        table.add_row(
            r.test,
            f"{c.n_fixed}/{c.n_random}",
            format_median(c.median_fixed, res.unit),
            format_median(c.median_random, res.unit),
            delta,
            format_p(c.kruskal_p),
            format_p(c.mann_whitney_p),
            drift,
            verdict,
        )
    return table


def schedule_text(res: OrderResult) -> str:
    """How the trials were run: the runs, the seed, the reset and the trial counts."""
    by = ", ".join(f"{n} {s}" for s, n in sorted(res.trials_by_status.items()))
    if res.plan is None:
        return f"from {', '.join(res.sources)}: {len(res.table)} trials"
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
    lines: list[Text | Table] = [_table(res), Text(f"method: {method_text(res)}", style="dim")]
    lines.append(Text(a.verdict(), style="bold red" if a.order_matters else "bold green"))
    drift = a.drift_line()
    if drift:
        lines.append(Text(drift, style="yellow"))
    lines.append(Text(schedule_text(res)))
    lines.extend(
        footer_lines(
            res.bookkeeping_s_per_trial,
            res.launch_overhead,
            res.warnings,
            res.failures,
            res.store,
            resources=res.resources,
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
            ax.set_title(f"{r.test}\n(not tested)", fontsize=9)
            continue
        for x, ci, color in ((0, c.median_fixed, "tab:blue"), (1, c.median_random, "tab:orange")):
            if ci.available:
                err = [[ci.median - ci.low], [ci.high - ci.median]]
                ax.errorbar([x], [ci.median], yerr=err, fmt="o", color=color, capsize=6)
            else:
                ax.plot([x], [ci.median], "o", color=color, mfc="none")
        flag = "order matters" if r.significant else "same"
        ax.set_title(f"{r.test}\n{flag}, p = {format_p(r.p_value)}", fontsize=9)
        ax.tick_params(labelsize=8)
    for ax in list(axes.flat)[len(results) :]:
        ax.axis("off")
    axes[0][0].set_ylabel(f"{res.pi}{unit}", fontsize=9)
    fig.suptitle(f"{res.study}: medians with {conf} order-statistic CIs", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, format=fmt, dpi=120)
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
