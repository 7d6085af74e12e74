"""``assay knobs``: find the few knobs that matter (Latin Hypercube samples +
random-forest importance, Kanellis et al.), from a study file or measured settings."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from assay.cli import exits
from assay.cli.common import (
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
from assay.cli.outputs import check_outputs, report_console
from assay.cli.sections import SectionedCommand
from assay.errors import SpecError

KNOBS_FILE_HELP = """
\b
Offline, from measured settings (one row each; knob columns and PI columns):
  assay knobs --from samples.csv --metric throughput --metric p99:lower \\
      --objective "max throughput s.t. p99<=20" --top 5 --plot importance.png
  Knob columns: every column that is not a --metric or objective PI, nor looks like
  one (latency, tps, p99, ...) or a row id (Unnamed: 0, 0..n-1), nor is constant (or
  --knob NAME ...); numeric columns are numeric knobs, others categorical; 0/1 columns
  of which one is 1 per row are one categorical knob (--one-hot off: not).  Round
  columns tput_1, tput_2, ... are repetitions (--repetitions 'tput_*'); rows that repeat
  a setting are averaged; rows with an empty metric are dropped (with a note).  --tune N tunes the
  top-k and all knobs on the random-forest model of the samples (no measurement)
  and compares the trials each needs.
\b
Study file: as for 'assay run', plus the knobs (their values fill {name} placeholders):
  [[knob]]  name = "shared_buffers"  type = "int"  min = 16  max = 4096  log = true
            default = 128  unit = "MB"  unsafe = false
  [[knob]]  name = "synchronous_commit"  type = "categorical"  values = ["on", "off"]
            default = "on"  unsafe = true  (trades safety for speed: not tuned unless
            allowed)
  [knobs]   samples = 100  validation_samples = 25  trees = 300  top_k = 5  seed = 0
            allow_unsafe = false  rank_by = "impurity" | "permutation"
            objective = "max tps s.t. p99<=20"
"""


@click.command(cls=SectionedCommand, epilog=KNOBS_FILE_HELP + exits.HELP)
@click.argument("study", required=False)
@click.option("--from", "from_csv", metavar="CSV", help="Rank knobs of measured settings.")
@click.option(
    "--metric",
    "metrics",
    multiple=True,
    metavar="PI[:higher|lower]",
    help="A PI column to rank the knobs for (repeat for several; each gets its own ranking).",
)
@click.option(
    "--knob",
    "knob_columns",
    multiple=True,
    help="--from: only these knob columns (default: every column but the PIs and those that "
    "look like PIs or row ids).",
)
@click.option(
    "--repetitions",
    metavar="COLUMNS",
    help="--from: the metric's round columns, e.g. 'tput_*' or tput_1,tput_2 (default: "
    "detected when the metric is not a column).",
)
@table_data_options("knob")
@click.option("--unsafe", multiple=True, help="--from: mark a knob unsafe (not tuned).")
@click.option("--top", type=click.IntRange(min=1), help="Knobs to hand on (default 5).")
@click.option("--trees", type=click.IntRange(min=1), help="Random-forest trees (default 300).")
@click.option("--seed", type=click.IntRange(min=0), help="Seed of sampling and models (0).")
@click.option("--objective", help="Composite objective, e.g. 'max tps s.t. p99<=20'.")
@click.option(
    "--rank-by",
    type=click.Choice(["impurity", "permutation"]),
    help="Importance whose top-k is handed on (default impurity, as in the paper).",
)
@click.option("--samples", type=click.IntRange(min=10), help="Study: LHS samples to measure.")
@click.option("--tune", type=click.IntRange(min=1), metavar="TRIALS", help="Tune the top-k.")
@click.option("--allow-unsafe", is_flag=True, help="Let the tuner change unsafe knobs.")
@click.option("--jobs", type=int, help="CPU cores for the models (default: all).")
@click.option("--json", "json_out", metavar="PATH", help="Write the result as JSON ('-' = stdout).")
@click.option(
    "--csv", "csv_out", metavar="PATH", help="One CSV row per PI and knob ('-' = stdout)."
)
@click.option("--plot", metavar="PATH", help="Importance bar chart (.png, .svg, .pdf).")
@click.option("--store", type=click.Path(dir_okay=False), help="Study: SQLite store to use.")
@click.option("--fresh", is_flag=True, help="Study: archive stored trials and start again.")
@click.option("-q", "--quiet", is_flag=True, help="No progress display.")
@REPORT_OPTION
@cluster_options
def knobs(study: str | None, **opts: Any) -> None:
    """Find the few knobs that matter (Latin Hypercube samples + random-forest importance).

    \b
    From measured settings:  assay knobs --from samples.csv --metric throughput
    From a study file:       assay knobs STUDY.toml --samples 100 [--tune 50]

    Knobs are ranked by impurity importance (Kanellis et al.) beside held-out permutation
    importance; the top-k models' out-of-bag R², the stability of the top-k on subsets of
    the samples, the validation (only the top-k varied) and tuning (Optuna) follow.
    """
    console = report_console(opts, 130)
    err = err_console()
    try:
        check_outputs(opts, plot_suffixes=(".png", ".svg", ".pdf"))
    except SpecError as exc:
        fail(err, exc)
    if (study is None) == (opts["from_csv"] is None):
        fail(
            err,
            "give a study file (assay knobs STUDY.toml) or measured settings "
            "(assay knobs --from samples.csv --metric PI), not both or neither",
        )
    given = [f"--{k.replace('_', '-')}" for k in ("repetitions", "drop_values") if opts[k]] + (
        ["--one-hot"] if opts["one_hot"] != "auto" else []
    )
    if study is not None and given:
        fail(err, f"{', '.join(given)}: only used with --from")
    if study is None:
        result = _offline(opts, err)
        _report(result, console, opts)
    else:
        result, store_path, name = _live(study, opts, err)
        _report(result, console, opts)
        from assay.cli.show import remember_shown

        remember_shown(store_path, name, (console.width,))  # first: --report reads its plots
        write_study_report(opts, store_path, name, err)
    sys.exit(exits.with_claims(exits.knobs_status(result), result))


def _offline(opts: dict[str, Any], err: Console) -> Any:
    """``--from CSV``: rank (and, with --tune, tune on the forest model) measured settings."""
    from assay.importers.knobs import SamplesError
    from assay.studies.knobs import KnobsInputError, n_jobs, rank_samples, samples_from_csv

    refuse_cluster_with_from(opts, err)
    path = opts["from_csv"]
    try:
        samples = samples_from_csv(
            path,
            opts["metrics"],
            knob_columns=opts["knob_columns"],
            unsafe=opts["unsafe"],
            objective=opts["objective"],
            repetitions=opts["repetitions"],
            one_hot=opts["one_hot"],
            drop_values=opts["drop_values"],
        )
    except (SamplesError, KnobsInputError, ValueError) as exc:
        fail(err, exc)
    trees = opts["trees"] or 300
    for note in samples.reading.notes if samples.reading is not None else ():
        err.print(f"note: {note}", style="dim")
    if not opts["quiet"]:
        err.print(
            f"{len(samples.settings)} settings · knobs: "
            f"{', '.join(samples.space.names)} · {trees} trees · {n_jobs(opts['jobs'])} job(s)",
            style="dim",
        )
    try:
        result = rank_samples(
            samples,
            top_k=opts["top"] or 5,
            trees=trees,
            seed=opts["seed"] or 0,
            rank_by=opts["rank_by"] or "impurity",
            jobs=opts["jobs"],
            tune=opts["tune"],
            allow_unsafe=opts["allow_unsafe"],
            declared_knobs=opts["knob_columns"],
        )
    except ValueError as exc:
        fail(err, f"{path}: {exc}")
    for warning in result.warnings:
        err.print(f"warning: {warning}", style="yellow")
    return result


def _live(study: str, opts: dict[str, Any], err: Console) -> tuple[Any, Path, str]:
    """``STUDY.toml``: sample, measure, rank, validate, tune (see assay.studies.knobs)."""
    from assay.report.knobs import KnobsProgressView
    from assay.spec import load_spec
    from assay.studies.knobs import KnobsRunner

    try:
        spec = load_spec(study)
        if not spec.knob_specs:
            raise SpecError(
                f"{study}: no [[knob]] entries; 'assay knobs' needs the knobs to sample "
                "(see 'assay knobs --help')"
            )
        overrides = {
            "samples": opts["samples"],
            "top_k": opts["top"],
            "trees": opts["trees"],
            "seed": opts["seed"],
            "objective": opts["objective"],
            "rank_by": opts["rank_by"],
        }
        config = spec.knobs_config.model_copy(
            update={k: v for k, v in overrides.items() if v is not None}
            | ({"allow_unsafe": True} if opts["allow_unsafe"] else {})
        )
        store_path = Path(opts["store"]) if opts["store"] else spec.store_path()
        view = KnobsProgressView(err)
    except (SpecError, ValueError) as exc:
        fail(err, exc)
    resume = "Run the same command again to resume: measured samples are not measured again."
    with running_study(err, store_path, resume, opts, spec, view) as executor:
        runner = KnobsRunner(
            spec,
            store_path,
            config,
            tune=opts["tune"],
            jobs=opts["jobs"],
            fresh=opts["fresh"],
            executor=executor,
            on_progress=None if opts["quiet"] else view.update,
        )
        return runner.run(), store_path, spec.study.name


def _report(result: Any, console: Console, opts: dict[str, Any]) -> None:
    from assay.report.export import rows_to_csv, to_json
    from assay.report.knobs import CSV_FIELDS, csv_rows, plot_importance, render_knobs_result

    render_knobs_result(result, console)
    write_outputs(
        opts,
        {
            "json_out": lambda: to_json(result.as_dict()),
            "csv_out": lambda: rows_to_csv(CSV_FIELDS, csv_rows(result.analysis)),
        },
    )
    if opts["plot"]:
        plot_importance(result.analysis, opts["plot"])
