"""``assay run``: measure until every CI is as narrow as asked (Pilot's method)."""

from __future__ import annotations

import sys
from typing import Any

import click

from assay.cli import exits
from assay.cli.common import (
    cluster_options,
    err_console,
    fail,
    hoist_options,
    labelled,
    prepare_local_session,
    quick_resumption,
    refuse_quick_only,
    refuse_unknown_option,
    running_study,
    spec_from_target,
    split_notes,
    stop_options,
    trial_output_printer,
    with_under_test,
    write_outputs,
    write_study_report,
)
from assay.cli.fractions import WIDTH
from assay.cli.hyperfine import hyperfine_options, write_hyperfine_exports
from assay.cli.outputs import check_outputs, report_console
from assay.cli.sections import SectionedCommand
from assay.errors import SpecError

STUDY_FILE_HELP = """
\b
Study file (TOML):
  [study]      name = "..."  store = "x.assay.db" (default: beside the file)
  [benchmark]  command = ["prog", "--rows", "{rows}"]  shell = false
               setup / reset / conclude / teardown = [argv]  timeout = 600  env = {K = "{p}"}
               ignore_failure = false  (true: a non-zero exit is measured too)
               work = {min = 1000, max = 100000}  (adjustable work: {work} placeholder,
               enables the work-per-second regression)
               git_repo = "."  (each session records its revision: assay history)
               build = ["make"]  (assay history --run-commits: built at each commit)
  [params]     rows = 1000
  [[pi]]       name = "tps"  unit = "tx/s"  direction = "higher"
               source = "wall_time" | "regex" (pattern) | "json" (path) | "file" (file)
               units = {source = "regex", pattern = 'lat=([0-9.]+)'}  (unit readings)
               statistic = "mean" | "median" (heavy tails: a distribution-free CI)
  [stop]       ci_width = 0.05  confidence = 0.95  max_rounds = 1000  max_time = 600
               min_samples = 10  min_rounds = 10  warmup_rounds = "auto" (MSER) | N
               max_autocorrelation = 0.1
               warmup_removal = "edm" | "edm-pilot" (as published) | "none"
               residual_correction = true  (false: Pilot's plain subsession t-interval)
               max_failures = 0.5  (stop early when more than this share of trials fail)
  [benchmark]  under_test = "cpu" | "disk" | "network" | "memory"  (bottleneck watch:
               warn when another component passes 80% utilisation; default: any)
  [cluster]    hosts = ["10.0.0.1", "10.0.0.2"]  user = "bench"  key = "~/.ssh/id_ed25519"
               port = 22  known_hosts = "~/.ssh/known_hosts"  remote_python = "python3"
               scheduler = "10.0.0.1"  require_identical = false  (trials on a Dask
               cluster over SSH, one worker per host; or --workers N / --cluster ADDRESS)
               idle_timeout = 60  (seconds the cluster outlives its driver)
"""


@click.command(
    cls=SectionedCommand,
    context_settings={"ignore_unknown_options": True},
    epilog=STUDY_FILE_HELP + exits.HELP,
)
@click.argument("target", nargs=-1, type=click.UNPROCESSED, required=True)
@click.option("-r", "--max-rounds", type=click.IntRange(min=1), help="Stop after this many trials.")
@click.option("--name", help="Quick mode: the study name (default: from the command).")
@click.option(
    "--median",
    is_flag=True,
    help="Quick mode: the median wall time with a distribution-free CI (heavy tails, "
    'outliers) instead of the mean; in a study file: statistic = "median" in a [[pi]].',
)
@click.option("--csv", "csv_out", metavar="PATH", help="Write one CSV row per PI ('-' = stdout).")
@click.option(
    "--baseline",
    "baseline_file",
    metavar="RESULT.json",
    type=click.Path(dir_okay=False),
    help="Compare each PI with an earlier result: an 'assay run --json' file (or a hyperfine "
    "or pyperf JSON export, for wall_time): Welch's test and the relative difference's CI.",
)
@click.option(
    "--fail-if-worse",
    type=WIDTH,
    metavar="PCT",
    help="With --baseline, a CI gate: exit 1 when a PI is worse than the baseline by more "
    "than PCT (e.g. 5%) with the study's confidence, 5 when that cannot be told, else 0.",
)
@stop_options
@hyperfine_options
@cluster_options
def run(target: tuple[str, ...], **opts: Any) -> None:
    """Measure until every CI is as narrow as asked (Pilot's method).

    \b
    Quick mode, like hyperfine but with a stopping rule:
      assay run -- python3 -c "sum(range(10**6))"
      assay run "sleep 0.01"     (one string is split into words; --shell for pipes etc.)
    Study mode, from a study file (resumes if interrupted):
      assay run examples/run-sqlite-insert.toml
    Pipes: assay run --json - -- true | jq .   (the report goes to stderr)
    Against an earlier result, failing CI on a regression of more than 5%:
      assay run --json new.json --baseline old.json --fail-if-worse 5% -- ./bench

    Each PI is reported as mean ± CI half-width with the number of samples, the
    subsession size (adjacent samples merged until |lag-1 autocorrelation| <= 0.1),
    the warm-up removed (E-Divisive with Medians on unit readings) and the method.
    A quick command line run again measures again (the old result is kept); an
    interrupted one resumes if its folder and files are unchanged (--resume forces it).
    """
    refuse_unknown_option(target)
    target = hoist_options(target, opts)
    if opts["scan"] or opts["scan_lists"] or opts["scan_step"]:
        from assay.cli.compare import scan_from_run

        scan_from_run(target, opts)
    prepare_local_session(opts)
    # heavy imports (NumPy, SciPy, pandas) only once a command runs: --help stays fast
    from assay.report.answer import answer
    from assay.report.export import to_csv, to_json
    from assay.report.markdown import run_markdown
    from assay.report.terminal import (
        ProgressView,
        fixed_count_summaries,
        print_session_line,
        render_baseline,
        render_result,
    )
    from assay.studies.run import Runner

    console = report_console(opts, 110)
    err = err_console()
    try:
        check_outputs(opts, plot_suffixes=(".png", ".svg"))
        if opts["plot"]:
            raise SpecError(
                "--plot: a scan's plot; give -P or -L (assay run -P t 1 4 --plot p.png -- CMD)"
            )
        refuse_quick_only(target, opts)
        spec, store_path = spec_from_target(target, opts)
        if spec.variants:
            raise SpecError(
                f"{spec.source_path}: this study compares [[variant]]s; run it with "
                f"'assay compare {spec.source_path}'"
            )
        if spec.tests:
            raise SpecError(
                f"{spec.source_path}: this study lists [[test]]s for the ordering trap; run "
                f"it with 'assay order {spec.source_path}'"
            )
        if spec.sweep is not None:
            raise SpecError(
                f"{spec.source_path}: this study sweeps a parameter space ([sweep]); run it "
                f"with 'assay sweep {spec.source_path}'"
            )
        if spec.knob_specs:
            raise SpecError(
                f"{spec.source_path}: this study samples [[knob]]s; run it with "
                f"'assay knobs {spec.source_path}'"
            )
        if opts["fail_if_worse"] is not None and not opts["baseline_file"]:
            fail(err, "--fail-if-worse needs --baseline RESULT.json to compare with")
    except SpecError as exc:
        fail(err, exc)
    baseline = None
    if opts["baseline_file"]:  # read and checked before any trial runs
        from assay.importers.results import ResultFileError  # SciPy: only when asked
        from assay.studies.baseline import read_baseline

        try:
            baseline = read_baseline(opts["baseline_file"], spec.pis, spec.stop.confidence)
        except ResultFileError as exc:
            fail(err, exc)
    for note in split_notes(target, opts):
        err.print(note, markup=False)
    spec = with_under_test(spec, opts)
    progress = ProgressView(err, spec.stop.ci_width, spec.stop)
    resume = "Run the same command again to resume."
    fresh, fingerprint = quick_resumption(spec, store_path, opts, err)
    with running_study(err, store_path, resume, opts, spec, progress) as executor:
        runner = Runner(
            spec,
            store_path,
            fresh=fresh,
            fingerprint=fingerprint,
            measure_overhead=not opts["no_overhead"],
            executor=executor,
            on_progress=None if opts["quiet"] else progress.update,
        )
        if opts["show_output"]:
            runner.on_trial = trial_output_printer(err)
        result = runner.run()
    cannot_start = _cannot_start(result)
    if cannot_start:  # one line first, on stderr: what a shell would have said
        err.print(labelled("error:", "red", cannot_start), soft_wrap=True)
    data = result.as_dict()
    if opts.get("runs") is not None:  # what a fixed count was asked for: hyperfine's summary
        warmup = spec.stop.warmup_rounds  # hyperfine's summary is of the measured runs
        skip = warmup if isinstance(warmup, int) else 0
        data["runs_summary"] = fixed_count_summaries(data["samples"], skip)
    render_result(result, console, data.get("runs_summary", ()))
    if not opts["quiet"]:
        print_session_line(result, err)
    comparisons = []
    readings: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = {}
    if baseline is not None:
        from assay.studies.baseline import compare_with_baseline

        comparisons = compare_with_baseline(
            result.results,
            baseline,
            threshold=spec.stop.fail_if_worse,
            harmonic={p.name for p in spec.pis if p.mean == "harmonic"},
        )
        render_baseline(comparisons, console)
        data["baseline"] = [c.as_dict() for c in comparisons]
        new = {str(x["pi"]): tuple(x["values"]) for x in data["samples"] if x.get("values")}
        readings = {c.pi: (baseline[c.pi].readings, new.get(c.pi, ())) for c in comparisons}
    write_outputs(
        opts,
        {
            "json_out": lambda: to_json(data),
            "csv_out": lambda: to_csv(result.study, data["pis"]),
            "markdown_out": lambda: run_markdown(
                result.study, data["pis"], comparisons, answer("run", data)
            ),
        },
    )
    write_hyperfine_exports(opts, store_path, spec)
    write_study_report(opts, store_path, spec.study.name, err, comparisons, readings)
    if baseline is not None and spec.stop.fail_if_worse is not None:
        sys.exit(exits.baseline_status(result, comparisons))
    if opts.get("runs") is not None:
        sys.exit(exits.fixed_count_status(result, target_asked=opts["ci_width"] is not None))
    sys.exit(exits.run_status(result))


def _cannot_start(result: Any) -> str:
    """Why the command never started, when no trial did (every one a launch error),
    for one line above the report; "" otherwise."""
    by = result.trials_by_status
    if not by or set(by) != {"launch_error"} or not result.failures:
        return ""
    why = str(result.failures[0].get("error") or "the command cannot start")
    return f"{why} (in all {sum(by.values())} trials: nothing was measured)"
