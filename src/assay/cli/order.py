"""``assay order``: the ordering trap: do the tests' results depend on their order?"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from assay.cli import exits
from assay.cli.common import (
    REPORT_OPTION,
    cluster_options,
    err_console,
    fail,
    refuse_cluster_with_from,
    running_study,
    write_outputs,
    write_study_report,
)
from assay.cli.fractions import SHARE
from assay.cli.outputs import check_outputs, report_console
from assay.cli.sections import SectionedCommand
from assay.errors import SpecError

ORDER_FILE_HELP = """
\b
Study file: as for 'assay run' (see 'assay run --help'), plus two or more tests:
  [[test]]     name = "read"  params = {op = "read"}   (laid over [params])
  [[test]]     name = "warm"  command = ["cat", "data.bin"]  env = {K = "v"}
               (a test without command runs [benchmark].command)
  [benchmark]  reset = [argv]  (run before every trial: the clean state)
  [order]      runs = 5 (runs of each kind)  fixed_runs / random_runs (override)
               repetitions = 3 (trials of each test per run)  seed = 1 (default: random)
               baseline = "blocked" (A A B B) | "cycled" (A B A B)
               alpha = 0.05  test = "kruskal" | "mann-whitney"
               drift = "spearman" | "kendall"  confidence = 0.95 (median CIs)
\b
--from CSV: columns test, order (fixed or random), run, position, value
  (optionally host); or OrderSage's results file as it is (run_num,
  exp_command, order_number, order_type, completion_status, result,
  hostname): runs keyed by host, kind and run_num, failed trials counted;
  a quoted result "1.2,3.4,5.6,7.8" is split into metrics (named by
  --metrics, else value[1]..value[k]), each analysed as a test; rows of
  different tests may share a position; long format: a 'metric' column,
  or value columns (value_copy, ...) also give one test per metric
"""


@click.command(cls=SectionedCommand, epilog=ORDER_FILE_HELP + exits.HELP)
@click.argument("target")
@click.option(
    "--from",
    "from_file",
    is_flag=True,
    help="Analyse existing trials: TARGET is a CSV with columns test, order, run, position, "
    "value, or OrderSage's results file.",
)
@click.option(
    "--runs", type=click.IntRange(min=1), help="Runs of each kind (default [order].runs, 5)."
)
@click.option(
    "--repetitions",
    type=click.IntRange(min=1),
    help="Trials of each test per run (default [order].repetitions, 3).",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    help="Seed of the random orders (default: random, recorded in the store).",
)
@click.option(
    "--alpha",
    type=SHARE,
    help="Experiment-wide significance level, Bonferroni-corrected, e.g. 5% or 0.05 (default 5%).",
)
@click.option("--pi", help="The PI analysed (default: the study's first).")
@click.option("--unit", help="--from: the unit of the values (e.g. s, ms, MB/s).")
@click.option(
    "--metrics",
    metavar="NAMES",
    help="--from: names of the values of a multi-valued result, comma-separated (e.g. "
    "copy,scale,add,triad; default value[1]...value[k]); each metric is analysed as a test.",
)
@click.option("--json", "json_out", metavar="PATH", help="Write the result as JSON ('-' = stdout).")
@click.option("--csv", "csv_out", metavar="PATH", help="Write one CSV row per test ('-' = stdout).")
@click.option(
    "--trials-csv",
    "trials_out",
    metavar="PATH",
    help="Write every successful trial in the --from format ('-' = stdout).",
)
@click.option("--plot", metavar="PATH", help="Plot medians with CIs, fixed vs random (.png/.svg).")
@click.option("--store", type=click.Path(dir_okay=False), help="SQLite store to use.")
@click.option("--fresh", is_flag=True, help="Archive this study's stored trials and start again.")
@click.option("--no-overhead", is_flag=True, help="Skip the launch-overhead measurement.")
@click.option("--no-monitor", is_flag=True, help="Turn off the bottleneck watch.")
@click.option("-q", "--quiet", is_flag=True, help="No progress display.")
@REPORT_OPTION
@cluster_options
def order(target: str, **opts: Any) -> None:
    """Detect the ordering trap: do the tests' results depend on their order?

    \b
      assay order examples/order-file-cache.toml --plot order.png
      assay order --from trials.csv

    Runs the tests in one baseline (fixed) order and in seeded random orders, N runs
    of each kind, each test repeated R times per run, calling the reset command before
    every trial. Per test, fixed-order and random-order results are compared with the
    Kruskal-Wallis and Mann-Whitney U tests on one value per run (its median; the
    pooled trials' p is shown beside, not deciding); order matters when any test's
    p-value is below the Bonferroni threshold alpha / (number of tests). Also: the relative
    difference of the means, the medians with distribution-free CIs, and the drift of
    each test's result with its position in the run. Resumes if interrupted.
    """
    from assay.importers.order import OrderDataError
    from assay.report.export import rows_to_csv, to_json
    from assay.report.order import (
        CSV_FIELDS,
        OrderProgressView,
        csv_rows,
        plot_order,
        render_order,
        trials_csv,
    )
    from assay.report.terminal import print_session_line
    from assay.studies.order import OrderResult, OrderRunner, order_from_csv

    console = report_console(opts, 130)
    err = err_console()
    plot = opts["plot"]
    result: OrderResult
    try:
        check_outputs(opts, plot_suffixes=(".png", ".svg"))
        if opts["from_file"]:
            refuse_cluster_with_from(opts, err)
            given = [f"--{k}" for k in ("runs", "repetitions", "seed", "pi", "store") if opts[k]]
            if opts["fresh"]:
                given.append("--fresh")
            if given:
                raise SpecError(
                    f"{', '.join(given)}: not used with --from (the trials are read from {target})"
                )
            metrics = None
            if opts["metrics"] is not None:
                from assay.importers.columns import metric_names

                try:
                    metrics = metric_names(opts["metrics"])
                except ValueError as exc:
                    raise SpecError(f"--metrics: {exc}") from None
            result = order_from_csv(
                target, alpha=opts["alpha"] or 0.05, unit=opts["unit"] or "", metrics=metrics
            )
        else:
            if opts["metrics"] is not None:
                raise SpecError(
                    "--metrics: only with --from (it names the values of a results file)"
                )
            from assay.spec import load_spec

            spec = load_spec(target)
            if len(spec.tests) < 2:
                raise SpecError(
                    f"{spec.source_path}: assay order needs a study file with at least two "
                    "[[test]] entries (see 'assay order --help')"
                )
            pis = [p.name for p in spec.pis]
            if opts["pi"] is not None and opts["pi"] not in pis:
                raise SpecError(
                    f"--pi {opts['pi']!r}: no such PI; the study's PIs: {', '.join(pis)}"
                )
    except (SpecError, OrderDataError) as exc:
        fail(err, exc)
    if not opts["from_file"]:
        store_path = Path(opts["store"]) if opts["store"] else spec.store_path()
        progress = OrderProgressView(err)
        resume = "Run the same command again to resume the same schedule."
        with running_study(err, store_path, resume, opts, spec, progress) as executor:
            runner = OrderRunner(
                spec,
                store_path,
                pi=opts["pi"],
                runs=opts["runs"],
                repetitions=opts["repetitions"],
                seed=opts["seed"],
                alpha=opts["alpha"],
                fresh=opts["fresh"],
                measure_overhead=not opts["no_overhead"],
                executor=executor,
                on_order_progress=None if opts["quiet"] else progress.update,
            )
            result = runner.run()
    render_order(result, console)
    if not opts["quiet"]:
        print_session_line(result, err)
    write_outputs(
        opts,
        {
            "json_out": lambda: to_json(result.as_dict()),
            "csv_out": lambda: rows_to_csv(CSV_FIELDS, csv_rows(result)),
            "trials_out": lambda: trials_csv(result.table),
        },
    )
    if plot is not None:
        plot_order(result, plot)
    if not opts["from_file"]:
        write_study_report(opts, store_path, spec.study.name, err)
    sys.exit(exits.order_status(result))
