"""``assay run``: measure until every CI is as narrow as asked (Pilot's method)."""

from __future__ import annotations

from typing import Any

import click

from assay.cli.common import (
    cluster_options,
    err_console,
    fail,
    out_console,
    refuse_unknown_option,
    running_study,
    spec_from_target,
    stop_options,
    with_under_test,
)
from assay.spec import SpecError

STUDY_FILE_HELP = """
\b
Study file (TOML):
  [study]      name = "..."  store = "x.assay.db" (default: beside the file)
  [benchmark]  command = ["prog", "--rows", "{rows}"]  shell = false
               setup / reset / teardown = [argv]  timeout = 600  env = {K = "{p}"}
               work = {min = 1000, max = 100000}  (adjustable work: {work} placeholder,
               enables the work-per-second regression)
  [params]     rows = 1000
  [[pi]]       name = "tps"  unit = "tx/s"  direction = "higher"
               source = "wall_time" | "regex" (pattern) | "json" (path) | "file" (file)
               units = {source = "regex", pattern = 'lat=([0-9.]+)'}  (unit readings)
  [stop]       ci_width = 0.05  confidence = 0.95  max_rounds = 1000  max_time = 600
               min_samples = 10  warmup_rounds = 0  max_autocorrelation = 0.1
               warmup_removal = "edm" | "edm-pilot" (as published) | "none"
               residual_correction = true  (false: Pilot's plain subsession t-interval)
               max_failures = 0.5  (stop early when more than this share of trials fail)
  [benchmark]  under_test = "cpu" | "disk" | "network" | "memory"  (bottleneck watch:
               warn when another component passes 80% utilisation; default: any)
  [cluster]    hosts = ["10.0.0.1", "10.0.0.2"]  user = "bench"  key = "~/.ssh/id_ed25519"
               port = 22  known_hosts = "~/.ssh/known_hosts"  remote_python = "python3"
               scheduler = "10.0.0.1"  require_identical = false  (trials on a Dask
               cluster over SSH, one worker per host; or --workers N / --cluster ADDRESS)
"""


@click.command(
    context_settings={"ignore_unknown_options": True},
    epilog=STUDY_FILE_HELP,
)
@click.argument("target", nargs=-1, type=click.UNPROCESSED, required=True)
@click.option("--max-rounds", type=click.IntRange(min=1), help="Stop after this many trials.")
@click.option("--name", help="Quick mode: the study name (default: from the command and time).")
@click.option("--csv", "csv_out", metavar="PATH", help="Write one CSV row per PI ('-' = stdout).")
@stop_options
@cluster_options
def run(target: tuple[str, ...], **opts: Any) -> None:
    """Measure until every CI is as narrow as asked (Pilot's method).

    \b
    Quick mode, like hyperfine but with a stopping rule:
      assay run -- python -c "sum(range(10**6))"
    Study mode, from a study file (resumes if interrupted):
      assay run examples/run-sqlite-insert.toml

    Each PI is reported as mean ± CI half-width with the number of samples, the
    subsession size (adjacent samples merged until |lag-1 autocorrelation| <= 0.1),
    the warm-up removed (E-Divisive with Medians on unit readings) and the method.
    """
    refuse_unknown_option(target)
    # pipes and CI logs get a readable width instead of rich's 80-column default
    # heavy imports (NumPy, SciPy, pandas) only once a command runs: --help stays fast
    from assay.report.export import to_csv, to_json, write_text
    from assay.report.terminal import ProgressView, render_result
    from assay.studies.run import Runner

    console = out_console(110)
    err = err_console()
    try:
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
    except SpecError as exc:
        fail(err, exc)
    spec = with_under_test(spec, opts)
    progress = ProgressView(err, spec.stop.ci_width)
    resume = (
        "Run the same command again to resume."
        if spec.source_path and spec.source_path.endswith(".toml")
        else f"Resume with: assay run --store {store_path} --name '{spec.study.name}' -- …"
    )
    with running_study(err, store_path, resume, opts, spec, progress) as executor:
        runner = Runner(
            spec,
            store_path,
            fresh=opts["fresh"],
            measure_overhead=not opts["no_overhead"],
            executor=executor,
            on_progress=None if opts["quiet"] else progress.update,
        )
        result = runner.run()
    render_result(result, console)
    data = result.as_dict()
    if opts["json_out"]:
        write_text(opts["json_out"], to_json(data))
    if opts["csv_out"]:
        write_text(opts["csv_out"], to_csv(result.study, data["pis"]))
