"""``assay sweep``: extensive evaluation of a parameter space (Hui et al., SIGMOD 2024)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from assay.cli import exits
from assay.cli.common import (
    INTERFERENCE_OPTION,
    REPORT_OPTION,
    cluster_options,
    err_console,
    fail,
    refuse_cluster_with_from,
    running_study,
    table_data_options,
    write_outputs,
    write_study_report,
)
from assay.cli.fractions import SHARE, WIDTH
from assay.cli.outputs import check_outputs, report_console
from assay.cli.sections import SectionedCommand
from assay.errors import SpecError

SWEEP_FILE_HELP = """
\b
Study file (TOML): [study], [benchmark] and [[pi]] as for 'assay run', plus
  [sweep]         repetitions = 3  sampler = "random" | "balanced" | "stratified" |
                  "distribution" | "lhs" | "grid"   start = 0.05  step = 0.05
                  r2 = 0.9  splits = 10  model = "anova" | "mlp" | "linear"
                  max_settings = 500  max_time = 3600  seed = 0  metric = "tps"
                  transform = "none" | "log"  (fit the models to log(metric))
                  stop_at_ceiling = true  (stop once the noise between repetitions
                  caps R² below r2: its ceiling is shown at every step)
                  busy = "stop" | "continue"  (a busy machine: stop within the
                  first quarter with a provisional answer, or measure on)
                  constraints = ["locks < workers", "wh * replicas / cpus <= 25"]
  [sweep.params]  workers = [1, 2, 4, 8, 16]   journal = ["wal", "delete"]
Each parameter's value fills its {name} placeholder in the benchmark command.

From results measured elsewhere (--from CSV --metric NAME): one row per trial (rows
  repeating a setting are its repetitions: the sampling uses their mean, the ANOVA
  their spread as its pure error), or one column per round (tput_1, tput_2, ...:
  --repetitions 'tput_*', detected when NAME is not a column).
  Parameters: --params, or every column but the metric, columns that look like PIs
  (latency, p99, ...) or row ids (Unnamed: 0, 0..n-1), and constant ones; 0/1 columns
  of which one is 1 per row are one categorical parameter (--one-hot off: not).  Rows
  with an empty metric are dropped with a note; --drop-value 0 drops failed runs
  coded as 0.
"""


def _count(text: str) -> int:
    """``--repetitions`` of a study: a whole number of trials per setting."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise SpecError(
            f"--repetitions {text!r}: expected a whole number >= 1 (trials per setting); "
            "round columns such as 'tput_*' are for --from"
        )
    return n


def _naming_input(exc: ValueError, files: list[str | None]) -> str:
    """An error of ``sweep --from`` that names its input file: the readers' do (with the
    line and column); one from the analysis of the data (a log of values <= 0) gets the
    first file's name."""
    text = str(exc)
    names = {n for f in files if f for n in (f, str(Path(f)))}
    return text if any(n in text for n in names) else f"{files[0]}: {text}"


def _overrides(spec: Any, opts: dict[str, Any]) -> Any:
    changes = {
        k: opts.get(k)
        for k in (
            "sampler",
            "start",
            "step",
            "r2",
            "model",
            "max_settings",
            "max_time",
            "seed",
            "busy",
        )
        if opts.get(k) is not None
    }
    if opts.get("log"):
        changes["transform"] = "log"
    if opts["repetitions"] is not None:
        changes["repetitions"] = _count(opts["repetitions"])
    if opts.get("interference") is not None:
        stop = spec.stop.model_copy(update={"interference": opts["interference"]})
        spec = spec.model_copy(update={"stop": stop})
    if not changes:
        return spec
    sweep = spec.sweep.model_copy(update=changes)
    return spec.model_copy(update={"sweep": sweep})


@click.command(cls=SectionedCommand, epilog=SWEEP_FILE_HELP + exits.HELP)
@click.argument("target")
@click.option(
    "--from",
    "from_file",
    is_flag=True,
    help="TARGET is a CSV of results measured elsewhere: simulate the sampling on it.",
)
@click.option(
    "--params",
    help="--from: the parameter columns, comma-separated (default: every column but the "
    "metric and those that look like PIs or row ids).",
)
@click.option("--metric", help="--from: the metric column (or the name of its round columns).")
@table_data_options("parameter")
@click.option(
    "--min-share",
    type=SHARE,
    help="Significant terms that explain at least this share of the variance are listed "
    "(and, with --from, compared) apart (default 1%).",
)
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
@click.option("--start", type=WIDTH, help="Initial sampling rate, e.g. 5% or 0.05 (5%).")
@click.option("--step", type=WIDTH, help="Rate added per step, e.g. 5% or 0.05 (5%).")
@click.option("--r2", type=click.FloatRange(0, 1, min_open=True), help="R² target (0.9).")
@click.option(
    "--log",
    is_flag=True,
    help="Fit the models to log(metric): for effects that multiply (a departure from the paper).",
)
@click.option(
    "--repetitions",
    metavar="N|COLUMNS",
    help="Trials per setting (3); with --from, the metric's round columns, e.g. 'tput_*' "
    "(default: detected when the metric is not a column).",
)
@click.option("--max-settings", type=click.IntRange(min=1), help="Budget: settings measured.")
@click.option("--max-time", type=click.FloatRange(min=0, min_open=True), help="Budget: seconds.")
@click.option(
    "--busy",
    type=click.Choice(["stop", "continue"]),
    help="On a busy machine (a load of twice the cores, other processes disturbing "
    "most trials): 'stop' (the default) within the first quarter of the settings with a "
    "provisional answer and what would help (exit 5); 'continue' measures on.",
)
@click.option("--seed", type=click.IntRange(min=0), help="Sampling seed (default 0).")
@click.option("--json", "json_out", metavar="PATH", help="Write the result as JSON ('-' = stdout).")
@click.option("--csv", "csv_out", metavar="PATH", help="Write the measured settings as CSV.")
@click.option("--plot", metavar="PATH", help="Tile plot of the measured settings (.png/.svg).")
@click.option("--store", type=click.Path(dir_okay=False), help="SQLite store to use.")
@click.option("--fresh", is_flag=True, help="Archive this study's stored trials and start again.")
@click.option("--no-monitor", is_flag=True, help="Turn off the bottleneck watch.")
@INTERFERENCE_OPTION
@click.option("-q", "--quiet", is_flag=True, help="No progress display.")
@REPORT_OPTION
@cluster_options
def sweep(target: str, **opts: Any) -> None:
    """Sweep a parameter space cheaply and say which parameters matter, and where.

    \b
      assay sweep examples/sqlite-sweep.toml --plot tiles.png
      assay sweep --from results.csv --params workers,journal --metric tps
      assay sweep --from rounds.csv --metric tput --repetitions 'tput_*'

    Incremental sampling (Hui et al., Algorithm 1): measure 5% of the valid settings
    (each 3 times), then on 10 random train/validation splits fit categorical ANOVA
    (main effects, then two-way interactions; terms with p > 0.05 dropped) and add 5%
    more until every validation R² reaches 0.9, or the budget is spent. Then report
    the significant parameters with their share of variance and their knee and
    turning points, and where results should be reported. Resumes if interrupted.
    Once every setting is measured, repetitions are replicates: the ANOVA tests against
    the spread between them. A grid no bigger than the first batch (or too small for
    held-out R²: one parameter) is measured whole at once and analysed as a designed
    experiment.
    """
    from assay.report.export import rows_to_csv, to_json
    from assay.report.sweep import SweepProgressView, measured_csv_rows, render_sweep
    from assay.studies.sweep import SweepRunner, sweep_from_csv

    console = report_console(opts, 130)
    err = err_console()
    plot = opts["plot"]
    try:
        check_outputs(opts, plot_suffixes=(".png", ".svg"))
        if opts["from_file"]:
            refuse_cluster_with_from(opts, err)
            for flag in ("interference", "busy"):
                if opts[flag]:
                    raise SpecError(f"--{flag}: not with --from (nothing is measured)")
            if not opts["metric"]:
                raise SpecError("--from needs --metric NAME (and optionally --params a,b,...)")
            params = [p.strip() for p in (opts["params"] or "").split(",") if p.strip()]
            try:
                result = sweep_from_csv(
                    target,
                    params or None,
                    opts["metric"],
                    unit=opts["unit"] or "",
                    lower_is_better=opts["lower_is_better"],
                    against=opts["against"],
                    sampler=opts["sampler"] or "random",
                    start=opts["start"] or 0.05,
                    step=opts["step"] or 0.05,
                    r2=opts["r2"] or 0.9,
                    model=opts["model"] or "anova",
                    max_settings=opts["max_settings"],
                    seed=opts["seed"] or 0,
                    transform="log" if opts["log"] else "none",
                    repetitions=opts["repetitions"],
                    one_hot=opts["one_hot"],
                    drop_values=opts["drop_values"],
                    min_share=opts["min_share"] or 0.01,
                )
            except ValueError as exc:
                raise ValueError(_naming_input(exc, [target, opts["against"]])) from None
        else:
            given = [f"--{k}" for k in ("params", "metric", "unit", "against") if opts[k]]
            given += ["--drop-value"] if opts["drop_values"] else []
            given += ["--one-hot"] if opts["one_hot"] != "auto" else []
            if given:
                raise SpecError(f"{', '.join(given)}: only used with --from")
            from assay.spec import load_spec

            spec = _overrides(load_spec(target), {**opts})
            if spec.sweep is None:
                raise SpecError(
                    f"{spec.source_path}: assay sweep needs a [sweep] section with "
                    "[sweep.params] (see 'assay sweep --help')"
                )
    except (SpecError, ValueError) as exc:
        fail(err, exc)
    if not opts["from_file"]:
        store_path = Path(opts["store"]) if opts["store"] else spec.store_path()
        progress = SweepProgressView(err)
        resume = "Run the same command again to continue the sweep where it stopped."
        try:
            with running_study(err, store_path, resume, opts, spec, progress) as executor:
                runner = SweepRunner(
                    spec,
                    store_path,
                    fresh=opts["fresh"],
                    executor=executor,
                    on_progress=None if opts["quiet"] else progress.update,
                )
                result = runner.run()
        except ValueError as exc:  # the space or the data cannot be analysed as asked
            fail(err, exc)
    if opts["min_share"] is not None:
        result.min_share = opts["min_share"]
    render_sweep(result, console)
    write_outputs(
        opts,
        {
            "json_out": lambda: to_json(result.as_dict()),
            "csv_out": lambda: rows_to_csv(*measured_csv_rows(result)),
        },
    )
    if plot is not None and len(result.measured) and len(result.params) < 2:
        from assay.report.sweep import settings_plot

        settings_plot(result, plot)  # one parameter: no tiles, each setting's mean and CI
        err.print(f"plot of each setting's mean and CI written to {plot}")
    elif plot is not None and len(result.measured):
        from assay.report.tile import tile_plot

        tile_plot(
            result.measured,
            result.pi.name,
            plot,
            result.params[:6],
            values=result.levels or None,
            title=f"{result.study}: {result.pi.name}",
            unit=result.pi.unit,
            log=result.transform == "log",  # the scale the analysis used
        )
        err.print(f"tile plot written to {plot}")
    if not opts["from_file"]:
        from assay.cli.show import remember_shown

        # first: --report then reads the plots it keeps
        remember_shown(store_path, spec.study.name, (console.width,))
        write_study_report(opts, store_path, spec.study.name, err)
    sys.exit(exits.with_claims(exits.sweep_status(result), result))
