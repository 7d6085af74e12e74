"""``assay plan``: what a study will do, before it does it (issue #62, part 2).  Parses
and prints; the counting and the pilot are :mod:`assay.studies.plan`'s."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from assay.cli import exits
from assay.cli.common import checked_err_console, fail, labelled
from assay.cli.outputs import report_console
from assay.cli.sections import SectionedCommand
from assay.errors import SpecError, StoreError, StudyError

PLAN_HELP = """
\b
The counts are the design's: exact for knob and order studies; for the designs
that stop on their own, the least and the most (a run between min_rounds and
max_rounds; a comparison between its first possible stop and max_rounds cycles;
a sweep between its first step and the whole space), bounded by the budget.
The time per trial comes from the study's store when it holds trials of this
study, else from a pilot of a few trials run here in a private temporary store
(said so; --pilot 0: none). A study on a cluster is not piloted.

\b
Exit status: 0 planned  2 usage error or bad study file  3 the store cannot be read
  4 the pilot's trials failed (the plan is printed without times)
"""


@click.command(cls=SectionedCommand, epilog=PLAN_HELP)
@click.argument("study_file", type=click.Path(dir_okay=False))
@click.option(
    "--pilot",
    "pilot_trials",
    type=click.IntRange(min=0),
    default=3,
    show_default=True,
    help="Trials of the pilot (per variant of a comparison, per setting of a sweep); 0: none.",
)
@click.option("--store", type=click.Path(dir_okay=False), help="The study's store, if not its own.")
@click.option("--json", "json_out", metavar="PATH", help="Write the plan as JSON ('-' = stdout).")
def plan(study_file: str, **opts: Any) -> None:
    """Say what a study will do before it runs: trials, hosts, time and disk.

    \b
      assay plan examples/sqlite-sweep.toml
      assay plan study.toml --pilot 0 --json plan.json

    Nothing is written to the study's store; the pilot (when there is no earlier
    store of the study) runs a few trials here, in a private temporary store.
    """
    err = checked_err_console(opts)
    from assay.spec import load_spec

    try:
        spec = load_spec(study_file)
        store = Path(opts["store"]) if opts["store"] else spec.store_path()
    except SpecError as exc:
        fail(err, exc)
    from assay.studies.plan import plan_study

    status = exits.OK
    try:
        result = plan_study(spec, store, pilot_trials=opts["pilot_trials"])
    except (StoreError, StudyError) as exc:
        fail(err, exc, exits.STUDY)
    except ValueError as exc:  # the pilot measured nothing
        err.print(labelled("error:", "red", f"the pilot: {exc}"))
        status = exits.NO_RESULT
        result = plan_study(spec, store, pilot_trials=0)
    console = report_console(opts, 100)
    for line in plan_lines(result):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    if opts["json_out"]:
        from assay.report.export import to_json, write_text

        write_text(opts["json_out"], to_json(result.as_dict()))
    sys.exit(status)


def plan_lines(p: Any) -> list[str]:
    """The plan in words."""
    from assay.report.format import format_bytes, format_duration
    from assay.report.safe import plain

    c = p.counts

    def when(n: int | None) -> str:
        s = p.seconds(n)
        return "?" if s is None else format_duration(s)

    def disk(n: int | None) -> str:
        return (
            "?" if n is None or p.bytes_per_trial is None else format_bytes(n * p.bytes_per_trial)
        )

    typical = (
        f"; typically {c.typical} ({when(c.typical)}, store {disk(c.typical)})"
        if c.typical is not None and c.typical not in (c.least, c.most)
        else ""
    )
    most = p.within_budget(c.most)
    capped = f" in its time budget (at most {c.most} without it)" if most != c.most else ""
    if p.per_trial_s is None:  # counts only: the time line says why
        span = f"{c.least} trials" if c.least == c.most else f"{c.least} to {c.most} trials"
    elif c.least == c.most:
        span = f"{c.least} trials: {when(c.least)}, store {disk(c.least)}"
    else:
        span = (
            f"{c.least} to {most} trials{capped}: {when(c.least)} to {when(most)}, store "
            f"{disk(c.least)} to {disk(most)}{typical}"
        )
    per = "unknown" if p.per_trial_s is None else f"{format_duration(p.per_trial_s)} a trial"
    lines = [
        f"plan: {p.study} ({p.kind}){' from ' + p.source if p.source else ''}",
        f"  trials: {span}",
        f"  how: {c.how}",
        (
            f"  time: {per}, from {p.timing_from}"
            if p.per_trial_s
            else f"  time: unknown: {p.timing_from}"
        )
        + (
            ""
            if p.max_time_s is None
            else f"; its budget is {format_duration(p.max_time_s)} of measured time"
        ),
        "  hosts: " + "; ".join(p.hosts),
        *(f"  note: {n}" for n in p.notes),
    ]
    return [plain(x) for x in lines]
