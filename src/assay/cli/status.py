"""``assay status``: where the studies of a store stand, from another terminal or after
a detach or a reboot (issue #62, part 2).  Parses and prints; the reading is
:mod:`assay.studies.status`'s."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from assay.cli import exits
from assay.cli.common import checked_err_console, stored_study_errors
from assay.cli.outputs import report_console
from assay.cli.sections import SectionedCommand

STATUS_HELP = """
\b
States: running (a process holds the study's lock: its pid and command are shown),
interrupted (its last session never ended and nothing runs it: killed, or the
machine restarted; the line says how to resume), finished (with the reason its last
session ended), not started.

\b
Exit status: 0 every study shown is running or finished  2 usage error
  3 the store cannot be read  5 a study is interrupted (resume it)
"""


@click.command(cls=SectionedCommand, epilog=STATUS_HELP)
@click.argument("store", type=click.Path(dir_okay=False))
@click.argument("study", required=False)
@click.option("--json", "json_out", metavar="PATH", help="Write the states as JSON ('-' = stdout).")
def status(store: str, study: str | None, **opts: Any) -> None:
    """Say where the studies of STORE stand: running, interrupted or finished.

    \b
      assay status study.assay.db
      assay status study.assay.db "my study" --json -

    Nothing is written: the store is read, and each study's lock file only read. For a
    running study: its process, the trials done of those its design runs, the last
    trial's outcome and the time left at most at its pace.
    """
    err = checked_err_console(opts)
    from assay.report.status import status_lines
    from assay.studies.status import study_statuses

    path = Path(store)
    with stored_study_errors(err, path):
        found = study_statuses(path, study)
    console = report_console(opts, 100)
    for s in found:
        for line in status_lines(s):
            console.print(line, markup=False, highlight=False, soft_wrap=True)
    if not found:
        console.print(f"{path}: no study", markup=False, highlight=False)
    if opts["json_out"]:
        from assay.report.export import to_json, write_text

        write_text(
            opts["json_out"], to_json({"store": str(path), "studies": [s.as_dict() for s in found]})
        )
    sys.exit(exits.SHORT if any(s.state == "interrupted" for s in found) else exits.OK)
