"""``assay show``: a stored study's result, analysed again from its store alone.

Nothing runs and nothing is written: the store is opened read-only, the study file is
rebuilt from the store, and the result is built by the same code as at the end of
the study's run, so the report and ``--json`` read as they did then.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click
from rich.console import Console
from rich.style import Style

from assay.cli import exits
from assay.cli.common import err_console, fail, stored_study_errors, write_outputs
from assay.cli.outputs import check_outputs, report_console
from assay.cli.sections import SectionedCommand
from assay.errors import SpecError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from assay.store import Store, TrialRecord
    from assay.studies.base import StoredStudy

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
    with the same JSON (a sweep or knob study keeps its report in the store at its
    end, shown again while its trials and sessions are unchanged); a study whose
    last session did not end, or whose stopping rule is not met, is reported as far
    as it got and said to be not finished.
    """
    err = err_console()
    try:
        check_outputs(opts)
    except SpecError as exc:
        fail(err, exc)
    path = Path(store)
    if not opts["summary"]:
        from assay.studies.stored import recall_shown

        with stored_study_errors(err, path):
            kept = recall_shown(path, study)
        if kept is not None:
            console = report_console(opts, _width(kept["kind"]))
            text = kept["texts"].get(str(console.width))
            named = _renamed(kept, text, path) if isinstance(text, str) else None
            if named is not None:
                _replay(console, *named, kept, opts)
    from assay.studies.stored import stored_result  # lazy: --help stays fast

    with stored_study_errors(err, path):
        stored, result, trials = stored_result(path, study)
        console = report_console(opts, _width(stored.kind))  # as its command
    if opts["summary"]:
        from assay.report.summary import summary_lines

        for line in summary_lines(stored, trials):
            console.print(line, soft_wrap=True)
    else:
        _render(stored.kind, result, console)
    from assay.report.export import to_json

    write_outputs(opts, {"json_out": lambda: to_json(result.as_dict())})
    note = unfinished(stored, result)
    _end(console, note, _STATUS[stored.kind](result))


def _width(kind: str) -> int:
    """The report's width in pipes, as the study's own command prints it."""
    return 110 if kind == "run" else 130


def _end(console: Console, note: str | None, status: int) -> NoReturn:
    if note is not None:
        console.print(note, style="yellow", soft_wrap=True)
        status = exits.SHORT if status == exits.OK else status
    sys.exit(status)


def remember_shown(path: Path, study: str, widths: Iterable[int] = ()) -> None:
    """Keep in the store what ``assay show`` prints for ``study`` (its report at the
    default width and at each of ``widths``, its JSON, exit status and note), with
    what it was built from; ``assay show`` prints it while the study's trials and
    sessions are unchanged (a copy of the store too).  The report page's plots are
    kept beside it (``assay report`` inlines them instead of drawing them again).  A
    cache: a store that cannot be written keeps none."""
    from assay.errors import StudyError
    from assay.report.export import to_json
    from assay.store import Store, StoreError
    from assay.studies.stored import (
        SHOWN_FORMAT,
        SHOWN_KEY,
        read_stored,
        stored_mark,
        stored_runner_result,
    )

    if not path.is_file():
        return
    try:
        with Store(path) as db:
            stored, trials, config = read_stored(db, study)
            mark = stored_mark(db, stored)
            result = stored_runner_result(stored, path, config)
            texts = {
                str(w): _rendered(stored.kind, result, w) for w in {_width(stored.kind), *widths}
            }
            db.set_study_value(stored.study_id, SHOWN_KEY, {
                "format": SHOWN_FORMAT,
                "fingerprint": mark,
                "kind": stored.kind,
                "store": str(path),  # the report names it as given: see _renamed
                "texts": texts,
                "json": to_json(result.as_dict()),
                "status": _STATUS[stored.kind](result),
                "note": unfinished(stored, result),
            })  # fmt: skip
            _keep_plots(db, stored, result, trials)
    except (StudyError, StoreError, SpecError, ValueError, OSError):
        return


def _keep_plots(db: Store, stored: StoredStudy, result: Any, trials: Sequence[TrialRecord]) -> None:
    """Draw the report page's plots of the study and keep them in the store (drawing
    them was most of a sweep's or knob study's report: #60).  A plot that cannot be
    drawn leaves none kept: the report draws them (and says why)."""
    from assay.cli.common import plots_without_3d
    from assay.report.html import study_plots
    from assay.studies.stored import keep_plots

    plots_without_3d()
    try:
        plots = study_plots(stored, result, trials)
    except Exception:  # a cache, at the study's end: whatever Matplotlib raises, none kept
        return
    keep_plots(db, stored, [(p.name, p.title, p.svg) for p in plots])


def _renamed(kept: dict[str, Any], text: str, path: Path) -> tuple[str, str] | None:
    """The kept report and JSON naming the store as ``path`` does (they name it as the
    study's command did), or None when the report names it on more than one line (a
    knob study's report names it on none: only its JSON does)."""
    import json

    from assay.report.export import to_json

    old, new = str(kept["store"]), str(path)
    if old == new:
        return text, str(kept["json"])
    lines = text.split("\n")
    at = [i for i, line in enumerate(lines) if _SGR.sub("", line) == f"store: {old}"]
    doc = json.loads(str(kept["json"]))
    if len(at) > 1 or not isinstance(doc, dict) or doc.get("store") != old:
        return None
    for i in at:
        lines[i] = lines[i].replace(old, new)
    return "\n".join(lines), to_json({**doc, "store": new})


_SGR = re.compile(r"\x1b\[[0-9;]*m")  # the styles rich writes


def _rendered(kind: str, result: Any, width: int) -> str:
    """The report as ``assay show`` prints it ``width`` columns wide, with its styles as
    ANSI codes (a terminal's or a pipe's console drops or keeps them on replay)."""
    import io

    from assay.report.safe import SafeConsole

    out = io.StringIO()
    console = SafeConsole(file=out, width=width, force_terminal=True, color_system="256")
    _render(kind, result, console)
    return out.getvalue()


def _unlinked(style: object) -> str | Style:
    """The colours and attributes of a kept style, never its link (the store is data)."""
    if not isinstance(style, Style):
        return ""
    plain = Style(
        bold=style.bold, dim=style.dim, italic=style.italic, underline=style.underline,
        strike=style.strike, reverse=style.reverse,
    )  # fmt: skip
    return Style.from_color(style.color, style.bgcolor) + plain


def _replay(
    console: Console, text: str, doc: str, kept: dict[str, Any], opts: dict[str, Any]
) -> NoReturn:
    """Print a kept report (its styles, never a link), write its JSON, end as it did."""
    from rich.text import Span, Text

    shown = Text.from_ansi(text.removesuffix("\n"))
    shown.spans = [Span(s.start, s.end, _unlinked(s.style)) for s in shown.spans]
    console.print(shown, soft_wrap=True)
    write_outputs(opts, {"json_out": lambda: doc})
    _end(console, kept["note"], kept["status"])


def _render(kind: str, result: Any, console: Console) -> None:
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
        from assay.report.knobs import render_knobs_result

        render_knobs_result(result, console)
    else:
        from assay.report.terminal import render_result

        render_result(result, console)


_STATUS: dict[str, Any] = {
    "run": exits.run_status,
    # the claims' verdicts laid over the study's status, as its own command ends
    "compare": lambda r: exits.with_claims(exits.compare_status(r), r),
    "order": exits.order_status,
    "sweep": lambda r: exits.with_claims(exits.sweep_status(r), r),
    "knobs": lambda r: exits.with_claims(exits.knobs_status(r), r),
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
