"""``assay reproduce``: run a stored study again and judge it against the original
(issue #62, part 3).  Parses and prints; the judging is :mod:`assay.studies.reproduce`'s.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from assay.cli import exits
from assay.cli.common import (
    checked_err_console,
    cluster_options,
    fail,
    running_study,
    stored_study_errors,
    write_outputs,
)
from assay.cli.fractions import WIDTH
from assay.cli.outputs import report_console
from assay.cli.sections import SectionedCommand
from assay.errors import SpecError

REPRODUCE_HELP = """
\b
Verdicts, PI by PI (variant by variant in a comparison): the ratio reproduced /
original of the means with its 90% interval (two one-sided tests at alpha 0.05):
  reproduced       the interval lies within the tolerance of 1 (default 10%)
  not reproduced   it lies entirely outside
  undecided        it straddles the tolerance (more rounds would tell)
A [[claim]] is reproduced when the reproduction reaches the original's verdict again.
A sweep's or knob study's PI: over the settings both measured, the geometric mean of
the ratios with the paired t interval of their logs; a sweep's settings measured more
than once in both are also judged one by one (shown, not in the verdict). An order
study's tests: each test's mean over its runs (one mean a run), with the original's
schedule. What each found (significant parameters, important points, top knobs, the
tests order matters for) is set side by side (not in the verdict).

\b
Exit status:
  0    reproduced          1  not reproduced (a PI or a claim)
  2    usage error
  3    the store or study cannot go on     4  no valid result
  5    undecided           130  interrupted (run the same command again to resume)
"""


@click.command(cls=SectionedCommand, epilog=REPRODUCE_HELP)
@click.argument("original", type=click.Path(dir_okay=False))
@click.argument("study", required=False)
@click.option(
    "--store",
    type=click.Path(dir_okay=False),
    help="The reproduction's store (default: ORIGINAL's name with .reproduced.assay.db, "
    "in the current folder).",
)
@click.option(
    "--tolerance",
    type=WIDTH,
    default="10%",
    show_default=True,
    help="How far from the original's mean a reproduced one may be and still be the same result.",
)
@click.option("--json", "json_out", metavar="PATH", help="Write the result as JSON ('-' = stdout).")
@click.option(
    "--markdown",
    "markdown_out",
    metavar="PATH",
    help="Write the result as Markdown ('-' = stdout).",
)
@click.option("--no-overhead", is_flag=True, help="Skip the launch-overhead measurement.")
@click.option("--no-monitor", is_flag=True, help="Turn off the bottleneck watch.")
@click.option("-q", "--quiet", is_flag=True, help="No progress display.")
@cluster_options
def reproduce(original: str, study: str | None, **opts: Any) -> None:
    """Run a stored study again and say whether it reproduces the original.

    \b
      assay reproduce results.assay.db              (the store's only study)
      assay reproduce result.json                   (a --json result: its store)
      assay reproduce results.assay.db "my study" --tolerance 5% --json r.json

    ORIGINAL is a store, or an Assay --json result whose store is beside it. The
    study runs again exactly as stored (its study file and command lines, its
    stopping rule) into a store of its own, on this machine or the cluster given,
    and each PI, each variant and each [[claim]] is judged against the original;
    the two environments (CPU, kernel, Python, Assay) are shown side by side, the
    differences marked. Every kind of study: run, compare, order, sweep and knobs.
    """
    err = checked_err_console(opts)
    from assay.studies.reproduce import (
        PAIRED_KINDS,
        check_kind,
        judge_reproduction,
        original_store,
    )
    from assay.studies.stored import stored_result, stored_trials

    try:
        path, study = original_store(original, study)
    except SpecError as exc:
        fail(err, exc)
    with stored_study_errors(err, path):
        stored, before, before_trials = stored_result(path, study)
    try:
        check_kind(stored)
    except SpecError as exc:
        fail(err, exc)
    store = Path(opts["store"]) if opts["store"] else _default_store(path)
    if store.resolve() == path.resolve():
        fail(err, f"--store {store}: that is the original's store; give the reproduction its own")
    after = _run_again(stored, path, store, opts, err)
    trials: tuple[list[Any], list[Any]] = ([], [])
    if stored.kind in PAIRED_KINDS:  # judged setting by setting: the trials of both
        with stored_study_errors(err, store):
            trials = (before_trials, stored_trials(store, stored.name))
    result = judge_reproduction(
        stored, before, after, original_path=path, tolerance=opts["tolerance"], trials=trials
    )
    from assay.report.export import to_json
    from assay.report.reproduce import render_reproduction, reproduction_markdown

    console = report_console(opts, 120)
    render_reproduction(result, console)
    write_outputs(
        opts,
        {
            "json_out": lambda: to_json(result.as_dict()),
            "markdown_out": lambda: reproduction_markdown(result),
        },
    )
    sys.exit(_status(result))


def _default_store(original: Path) -> Path:
    name = original.name
    stem = name[: -len(".assay.db")] if name.endswith(".assay.db") else original.stem
    return Path.cwd() / f"{stem}.reproduced.assay.db"


def _run_again(stored: Any, original: Path, store: Path, opts: dict[str, Any], err: Any) -> Any:
    """The study run again from its stored spec into ``store`` (resumed when that store
    already holds it), with the live line of its kind."""
    view, make = _runner(stored, original, store, opts, err)
    how = "Run the same command again to resume."
    with running_study(err, store, how, opts, stored.spec, view) as executor:
        return make(executor, None if opts["quiet"] else view.update).run()


def _runner(
    stored: Any, original: Path, store: Path, opts: dict[str, Any], err: Any
) -> tuple[Any, Callable[[Any, Any], Any]]:
    """The live line of the study's kind, and its runner for an executor and a
    progress callback, as the study's own command makes them."""
    spec, overhead = stored.spec, not opts["no_overhead"]
    if stored.kind == "compare":
        from assay.report.compare import CompareProgressView
        from assay.studies.compare import CompareRunner

        return CompareProgressView(err, spec.stop), lambda ex, on: CompareRunner(
            spec, store, measure_overhead=overhead, executor=ex, on_compare_progress=on
        )
    if stored.kind == "sweep":
        from assay.report.sweep import SweepProgressView
        from assay.studies.sweep import SweepRunner

        return SweepProgressView(err), lambda ex, on: SweepRunner(
            spec, store, executor=ex, on_progress=on
        )
    if stored.kind == "knobs":
        from assay.report.knobs import KnobsProgressView
        from assay.spec import KnobsSpec
        from assay.studies.knobs import KnobsRunner
        from assay.studies.stored import stored_value

        kept = stored_value(original, stored)  # the options the original ranked with
        config = spec.knobs_config if kept is None else KnobsSpec.model_validate(kept)
        return KnobsProgressView(err), lambda ex, on: KnobsRunner(
            spec, store, config, executor=ex, on_progress=on
        )
    if stored.kind == "order":
        return _order_runner(stored, original, store, overhead, err)
    from assay.report.terminal import ProgressView
    from assay.studies.run import Runner

    return ProgressView(err, spec.stop.ci_width, spec.stop), lambda ex, on: Runner(
        spec, store, measure_overhead=overhead, executor=ex, on_progress=on
    )


def _order_runner(
    stored: Any, original: Path, store: Path, overhead: bool, err: Any
) -> tuple[Any, Callable[[Any, Any], Any]]:
    """An order study's runner with the original's schedule (its seed, runs and
    repetitions: the same orders) and the PI and alpha its result was asked for."""
    from assay.report.order import OrderProgressView
    from assay.studies.order import SCHEDULE_KEY, OrderPlan, OrderRunner
    from assay.studies.stored import stored_value

    kept = stored_value(original, stored, SCHEDULE_KEY)
    plan = OrderPlan.from_dict(kept) if isinstance(kept, dict) else None
    same = plan is not None and plan.fixed_runs == plan.random_runs
    last = stored.last_result
    pi, alpha = last.get("pi"), last.get("alpha")
    return OrderProgressView(err), lambda ex, on: OrderRunner(
        stored.spec,
        store,
        pi=pi if isinstance(pi, str) and pi in {p.name for p in stored.spec.pis} else None,
        runs=plan.fixed_runs if same and plan is not None else None,
        repetitions=None if plan is None else plan.repetitions,
        seed=None if plan is None else plan.seed,
        alpha=alpha if isinstance(alpha, float) else None,
        measure_overhead=overhead,
        executor=ex,
        on_order_progress=on,
    )


_OWN_STATUS = {
    "run": exits.run_status,
    "compare": exits.compare_status,
    "sweep": exits.sweep_status,
    "knobs": exits.knobs_status,
    "order": exits.order_status,
}


def _status(result: Any) -> int:
    if _OWN_STATUS[result.kind](result.reproduction) == exits.NO_RESULT:
        return exits.NO_RESULT
    return {"reproduced": exits.OK, "not reproduced": exits.WORSE}.get(result.verdict, exits.SHORT)
