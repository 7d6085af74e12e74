"""``assay show``: a stored study's result, analysed again from its store alone.

Nothing runs and nothing is written: the store is opened read-only, the study file is
rebuilt from the store, and the result is built by the same code as at the end of
the study's run, so the report and ``--json`` read as they did then.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from assay.cli import exits
from assay.cli.common import err_console, fail, stored_study_errors
from assay.cli.outputs import check_outputs, report_console
from assay.cli.sections import SectionedCommand
from assay.spec import SpecError
from assay.store import TrialRecord

SHOW_HELP = """
\b
--summary (ELECT's artifact summaries), per PI (per variant or test and PI), by the
number of rounds (trials with a reading):
  1     Only one round: X
  2-4   Average: X, Min: Y, Max: Z
  >= 5  Average: X; The 95% confidence interval: (lo, hi)   (Student t)
then the bottleneck watch's 95th-percentile CPU and memory, disk I/O and network
traffic per round, summarised the same way.
"""


@click.command(cls=SectionedCommand, epilog=SHOW_HELP + exits.HELP)
@click.argument("store", type=click.Path(dir_okay=False))
@click.argument("study", required=False)
@click.option("--json", "json_out", metavar="PATH", help="Write the result as JSON ('-' = stdout).")
@click.option("--summary", is_flag=True, help="ELECT-style per-round summaries, not the report.")
@click.option("-q", "--quiet", is_flag=True, help="No report on stderr (with --json -).")
def show(store: str, study: str | None, **opts: Any) -> None:
    """Show a stored study's result without running anything.

    \b
      assay show results.assay.db                 (the store's only study)
      assay show results.assay.db "my study" --json -
      assay show results.assay.db --summary

    The study is analysed again from the trials in STORE (opened read-only, the study
    file not needed) and reported as at the end of its run, in the same words and
    with the same JSON; a study whose last session did not end, or whose stopping
    rule is not met, is reported as far as it got and said to be not finished.
    """
    err = err_console()
    try:
        check_outputs(opts)
    except SpecError as exc:
        fail(err, exc)
    from assay.studies.stored import stored_result  # lazy: --help stays fast

    path = Path(store)
    with stored_study_errors(err, path):
        stored, result, trials = stored_result(path, study)
        console = report_console(opts, 110 if stored.kind == "run" else 130)  # as its command
    if opts["summary"]:
        for line in summary_lines(stored, trials):
            console.print(line, soft_wrap=True)
    else:
        _render(stored.kind, result, console, opts)
    if stored.kind != "knobs":  # the knobs report writes its own
        from assay.cli.common import write_outputs
        from assay.report.export import to_json

        write_outputs(opts, {"json_out": lambda: to_json(result.as_dict())})
    note = unfinished(stored, result)
    status = _STATUS[stored.kind](result)
    if note is not None:
        console.print(note, style="yellow", soft_wrap=True)
        status = exits.SHORT if status == exits.OK else status
    sys.exit(status)


def _render(kind: str, result: Any, console: Console, opts: dict[str, Any]) -> None:
    """The report of the study's own command."""
    if kind == "compare":
        from assay.report.compare import render_comparison

        render_comparison(result, console)
    elif kind == "order":
        from assay.report.order import render_order

        render_order(result, console)
    elif kind == "sweep":
        from assay.report.sweep import render_sweep

        render_sweep(result, console)
    elif kind == "knobs":
        from assay.cli.knobs import _report

        _report(result, console, {"json_out": opts["json_out"], "csv_out": None, "plot": None})
    else:
        from assay.report.terminal import render_result

        render_result(result, console)


_STATUS = {
    "run": exits.run_status,
    "compare": exits.compare_status,
    "order": exits.order_status,
    "sweep": exits.sweep_status,
    "knobs": exits.knobs_status,
}


def unfinished(stored: Any, result: Any) -> str | None:
    """Why the study is not finished ("not finished: ..."), or None when it is: its
    last session did not end, or its stopping rule is not met."""
    short = _short(stored, result)
    if stored.ended:
        return None if short is None else f"not finished: {short}"
    ended = "its last session did not end (interrupted, or still running)"
    return f"not finished: {ended}" + ("" if short is None else f"; {short}")


def _short(stored: Any, result: Any) -> str | None:
    """How far a study whose stopping rule is not met got; None when it is met."""
    kind = stored.kind
    if kind == "run" and not result.decision.done:
        planned = stored.spec.stop.max_rounds
        return f"{result.trials_total} of {planned} planned trials ({result.decision.reason})"
    if kind == "compare" and not result.decision.done:
        return str(result.decision.reason)
    if kind == "order" and result.reason.startswith("not finished: "):
        return str(result.reason).removeprefix("not finished: ")
    undecided = kind == "sweep" and (not result.steps or result.steps[-1].reason == "")
    if undecided and not result.reason.startswith("time budget"):
        return str(result.reason)
    if kind == "knobs" and result.not_measured:
        return f"{result.not_measured} planned samples not measured"
    return None


def summary_lines(stored: Any, trials: list[TrialRecord]) -> list[str]:
    """ELECT's summaries of a study: per PI, per variant (compare) or test (order)."""
    from assay.report.summary import pi_block, resource_block
    from assay.studies.base import watch_report

    spec = stored.spec
    if stored.kind in ("sweep", "knobs"):
        # one round per setting: its readings are not rounds of one measurement
        return [
            f"--summary: per-round summaries are for run, compare and order studies, "
            f"not {stored.kind} studies"
        ]
    groups: dict[str, list[TrialRecord]] = {"": trials}
    if stored.kind == "compare":
        groups = {f"variant: {v.name}": _of(trials, "variant", v.name) for v in spec.variants}
    elif stored.kind == "order":
        groups = {f"test: {t.name}": _of(trials, "test", t.name) for t in spec.tests}
    lines: list[str] = []
    for label, mine in groups.items():
        where = f"study: {stored.name}" + (f", {label}" if label else "")
        lines.append(f"[Exp info] {where}, kind: {stored.kind}, trials: {len(mine)}")
        for pi in spec.pis:
            values = [t.readings[pi.name] for t in mine if t.ok and pi.name in t.readings]
            lines.extend(pi_block(pi.name, pi.unit, values))
        lines.append(f"[Resource usage] {where}")
        # watch_report: a study on several hosts adds its cluster summary
        lines.extend(resource_block(watch_report(spec, mine)[1]))
        lines.append("")
    return lines[:-1]


def _of(trials: list[TrialRecord], key: str, name: str) -> list[TrialRecord]:
    return [t for t in trials if t.setting.get(key) == name]
