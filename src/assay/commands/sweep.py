"""``assay sweep``: extensive evaluation of a parameter space (Hui et al., SIGMOD 2024)."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import click
from rich.console import Console
from rich.markup import escape

from assay.spec import SpecError, load_spec

if TYPE_CHECKING:
    import pandas as pd

    from assay.designs.sweep import Mismatch, SystemComparison
    from assay.sweep_runner import SweepResult

SWEEP_FILE_HELP = """
\b
Study file (TOML): [study], [benchmark] and [[pi]] as for 'assay run', plus
  [sweep]         repetitions = 3  sampler = "random" | "balanced" | "stratified" |
                  "distribution" | "lhs" | "grid"   start = 0.05  step = 0.05
                  r2 = 0.9  splits = 10  model = "anova" | "mlp" | "linear"
                  max_settings = 500  max_time = 3600  seed = 0  metric = "tps"
                  transform = "none" | "log"  (fit the models to log(metric))
                  constraints = ["locks < workers", "wh * replicas / cpus <= 25"]
  [sweep.params]  workers = [1, 2, 4, 8, 16]   journal = ["wal", "delete"]
Each parameter's value fills its {name} placeholder in the benchmark command.
"""


class SweepDataError(ValueError):
    """A results file for ``assay sweep --from`` is unusable; the message says why."""


def read_results_csv(path: str | Path, params: list[str], metric: str) -> pd.DataFrame:
    """Measured settings from a CSV file: the parameter columns and a numeric metric.

    Rows whose metric is empty (failed settings) are dropped; any other non-number is
    an error naming the line.
    """
    import numpy as np
    import pandas as pd

    from assay.report.csvdata import read_csv_frame

    p = Path(path)
    frame = read_csv_frame(
        p,
        SweepDataError,
        expected="a header row naming the parameters and the metric, then one row per "
        "measured trial or setting",
    )
    for name in [*params, metric]:
        if name not in frame.columns:
            role = "--metric" if name == metric else "--params"
            raise SweepDataError(
                f"{p}: no column {name!r} (named by {role}); the columns are: "
                f"{', '.join(frame.columns)}"
            )
    raw = frame[metric]
    values = pd.to_numeric(raw, errors="coerce")
    bad = (values.isna() & raw.notna()) | np.isinf(values.to_numpy(float, na_value=np.nan))
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise SweepDataError(
            f"{p}: line {row + 2}: column {metric!r}: expected a finite number "
            f"(got {raw.iloc[row]!r})"
        )
    frame[metric] = values
    frame = frame.dropna(subset=[metric])
    for name in params:
        if frame[name].isna().any():
            row = int(np.flatnonzero(frame[name].isna().to_numpy())[0])
            raise SweepDataError(f"{p}: line {row + 2}: column {name!r} is empty")
        if frame[name].nunique() < 2:
            raise SweepDataError(
                f"{p}: column {name!r} has a single value; a swept parameter needs two or more"
            )
    if len(frame) < 4:
        raise SweepDataError(f"{p}: {len(frame)} usable row(s); an analysis needs more")
    return frame[[*params, metric]].reset_index(drop=True)


def offline_sweep(
    path: str,
    params: list[str],
    metric: str,
    opts: dict[str, Any],
) -> tuple[SweepResult, Mismatch | None, SystemComparison | None]:
    """``--from``: Algorithm 1 simulated on an existing data set (Figures 1–2 of the
    paper), compared with the analysis of all of it; ``--against`` adds a second system."""
    from assay.designs.sweep import compare_systems, simulate, summarise
    from assay.spec import PISpec
    from assay.sweep_runner import SweepResult, stop_reason, transformed

    transform = "log" if opts.get("log") else "none"
    data = read_results_csv(path, params, metric)
    sim = simulate(
        transformed(data, metric, transform),
        params,
        metric,
        sampler=opts["sampler"] or "random",
        start=opts["start"] or 0.05,
        step=opts["step"] or 0.05,
        threshold=opts["r2"] or 0.9,
        model=opts["model"] or "anova",
        budget=opts["max_settings"],
        seed=opts["seed"] or 0,
    )
    last = sim.steps[-1] if sim.steps else None
    direction: Literal["lower", "higher"] = "lower" if opts["lower_is_better"] else "higher"
    result = SweepResult(
        study=f"sweep --from {Path(path).name}",
        store="",
        space=f"{len(params)} parameters; {len(data)} rows from {path}",
        params=params,
        pi=PISpec(name=metric, unit=opts["unit"] or "", direction=direction),
        steps=list(sim.steps),
        reason=stop_reason(last, opts["r2"] or 0.9, False),
        measured=data.iloc[list(sim.positions)] if sim.positions else data.iloc[:0],
        analysis=sim.analysis,
        summary=summarise(sim.analysis),
        trials_total=len(data),
        sources=[path],
        transform=transform,
    )
    comparison = None
    if opts["against"]:
        other = read_results_csv(opts["against"], params, metric)
        comparison = compare_systems(
            transformed(data, metric, transform),
            transformed(other, metric, transform),
            params,
            metric,
            names=(Path(path).stem, Path(opts["against"]).stem),
            higher_is_better=direction == "higher",
            threshold=opts["r2"] or 0.9,
            seed=opts["seed"] or 0,
        )
    return result, sim.mismatch, comparison


def _overrides(spec: Any, opts: dict[str, Any]) -> Any:
    changes = {
        k: opts[k]
        for k in ("sampler", "start", "step", "r2", "model", "max_settings", "max_time", "seed")
        if opts[k] is not None
    }
    if opts.get("log"):
        changes["transform"] = "log"
    if opts["repetitions"] is not None:
        changes["repetitions"] = opts["repetitions"]
    if not changes:
        return spec
    sweep = spec.sweep.model_copy(update=changes)
    return spec.model_copy(update={"sweep": sweep})


@click.command(epilog=SWEEP_FILE_HELP)
@click.argument("target")
@click.option(
    "--from",
    "from_file",
    is_flag=True,
    help="TARGET is a CSV of results measured elsewhere: simulate the sampling on it.",
)
@click.option("--params", help="--from: the parameter columns, comma-separated.")
@click.option("--metric", help="--from: the metric column.")
@click.option("--unit", help="--from: the metric's unit.")
@click.option("--lower-is-better", is_flag=True, help="--from: lower metric values are better.")
@click.option(
    "--against", metavar="CSV", help="--from: a second system's results over the same space."
)
@click.option(
    "--sampler",
    type=click.Choice(["random", "balanced", "stratified", "distribution", "lhs", "grid"]),
    help="How new settings are picked (default: random, as in the paper).",
)
@click.option("--model", type=click.Choice(["anova", "mlp", "linear"]), help="Default: anova.")
@click.option("--start", type=click.FloatRange(0, 1, min_open=True), help="Initial rate (0.05).")
@click.option("--step", type=click.FloatRange(0, 1, min_open=True), help="Added rate (0.05).")
@click.option("--r2", type=click.FloatRange(0, 1, min_open=True), help="R² target (0.9).")
@click.option(
    "--log",
    is_flag=True,
    help="Fit the models to log(metric): for effects that multiply (a departure from the paper).",
)
@click.option("--repetitions", type=click.IntRange(min=1), help="Trials per setting (3).")
@click.option("--max-settings", type=click.IntRange(min=1), help="Budget: settings measured.")
@click.option("--max-time", type=click.FloatRange(min=0, min_open=True), help="Budget: seconds.")
@click.option("--seed", type=click.IntRange(min=0), help="Sampling seed (default 0).")
@click.option("--json", "json_out", metavar="PATH", help="Write the result as JSON ('-' = stdout).")
@click.option("--csv", "csv_out", metavar="PATH", help="Write the measured settings as CSV.")
@click.option("--plot", metavar="PATH", help="Tile plot of the measured settings (.png/.svg).")
@click.option("--store", type=click.Path(dir_okay=False), help="SQLite store to use.")
@click.option("--fresh", is_flag=True, help="Archive this study's stored trials and start again.")
@click.option("--no-monitor", is_flag=True, help="Turn off the bottleneck watch.")
@click.option("-q", "--quiet", is_flag=True, help="No progress display.")
def sweep(target: str, **opts: Any) -> None:
    """Sweep a parameter space cheaply and say which parameters matter, and where.

    \b
      assay sweep examples/sqlite-sweep.toml --plot tiles.png
      assay sweep --from results.csv --params workers,journal --metric tps

    Incremental sampling (Hui et al., Algorithm 1): measure 5% of the valid settings
    (each 3 times), then on 10 random train/validation splits fit categorical ANOVA
    (main effects, then two-way interactions; terms with p > 0.05 dropped) and add 5%
    more until every validation R² reaches 0.9, or the budget is spent. Then report
    the significant parameters with their share of variance and their knee and
    turning points, and where results should be reported. Resumes if interrupted.
    """
    from assay.report.export import rows_to_csv, to_json, write_text
    from assay.report.sweep import SweepProgressView, measured_csv_rows, render_sweep
    from assay.report.terminal import study_errors

    console = Console(highlight=False, width=None if sys.stdout.isatty() else 130)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    mismatch = comparison = None
    plot = opts["plot"]
    try:
        if plot is not None and Path(plot).suffix.lower() not in (".png", ".svg"):
            raise SpecError(f"--plot {plot}: expected a file name ending in .png or .svg")
        if opts["from_file"]:
            if not opts["params"] or not opts["metric"]:
                raise SpecError("--from needs --params a,b,... and --metric NAME")
            params = [p.strip() for p in opts["params"].split(",") if p.strip()]
            result, mismatch, comparison = offline_sweep(target, params, opts["metric"], opts)
        else:
            given = [f"--{k}" for k in ("params", "metric", "unit", "against") if opts[k]]
            if given:
                raise SpecError(f"{', '.join(given)}: only used with --from")
            spec = _overrides(load_spec(target), {**opts})
            if spec.sweep is None:
                raise SpecError(
                    f"{spec.source_path}: assay sweep needs a [sweep] section with "
                    "[sweep.params] (see 'assay sweep --help')"
                )
    except (SpecError, ValueError) as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}")
        sys.exit(2)
    if not opts["from_file"]:
        from assay.sweep_runner import SweepRunner

        store_path = Path(opts["store"]) if opts["store"] else spec.store_path()
        progress = SweepProgressView(err)
        resume = "Run the same command again to continue the sweep where it stopped."
        try:
            with study_errors(err, store_path, resume):
                runner = SweepRunner(
                    spec,
                    store_path,
                    fresh=opts["fresh"],
                    monitor=not opts["no_monitor"],
                    on_progress=None if opts["quiet"] else progress.update,
                )
                if not opts["quiet"]:
                    err.print(escape(runner.space.describe()), style="dim")
                with progress if not opts["quiet"] else contextlib.nullcontext():
                    result = runner.run()
        except ValueError as exc:  # the space or the data cannot be analysed as asked
            err.print(f"[red]error:[/] {escape(str(exc))}")
            sys.exit(2)
    render_sweep(result, console, mismatch, comparison)
    if opts["json_out"]:
        doc = result.as_dict()
        if mismatch is not None:
            doc["mismatch"] = mismatch.to_dict()
        if comparison is not None:
            doc["comparison"] = comparison.to_dict()
        write_text(opts["json_out"], to_json(doc))
    if opts["csv_out"]:
        fields, rows = measured_csv_rows(result)
        write_text(opts["csv_out"], rows_to_csv(fields, rows))
    if plot is not None and len(result.measured):
        from assay.report.tile import tile_plot

        tile_plot(
            result.measured,
            result.pi.name,
            plot,
            result.params[:6],
            values=result.levels or None,
            title=f"{result.study}: {result.pi.name}",
            unit=result.pi.unit,
        )
        err.print(f"tile plot written to {plot}")
