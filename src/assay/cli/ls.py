"""``assay ls``: the studies a results store holds, and how far each got."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.table import Table
from rich.text import Text

from assay.cli import exits
from assay.cli.common import err_console, fail, quick_store_path
from assay.cli.option_values import AssayCommand
from assay.cli.outputs import report_console
from assay.errors import StoreError
from assay.report.safe import plain

LS_HELP = """
\b
Columns: the study's name and kind (run, compare, order, sweep, knobs), its trials
by status, when the first and the last trial started (local time), its sessions
(one per command that ran it) and its state, from its newest session:
  done        it ended and said the study was done (target met or budget spent)
  stopped     it ended short of done (e.g. its time budget ran out first)
  failed      it ended and not one of its trials succeeded ('assay export' says why)
  unfinished  it never ended: running now, or killed (run it again to resume)
  new         no session yet
--json: a list of objects with these fields (times in ISO 8601 with the offset).
\b
Exit status: 0 listed (even none)   2 no such store, or not a results store
"""


def _when(iso: str | None) -> str:
    # the table shows local time to the second; --json keeps the offset
    return "-" if iso is None else iso[:19].replace("T", " ")


def _counts(by_status: dict[str, int]) -> str:
    order = sorted(by_status, key=lambda s: (s != "ok", s))  # ok first
    return ", ".join(f"{by_status[s]} {s}" for s in order) or "0"


@click.command(
    cls=AssayCommand, epilog=LS_HELP, context_settings={"help_option_names": ["-h", "--help"]}
)
@click.argument("store", required=False, type=click.Path(dir_okay=False))
@click.option("--all", "show_all", is_flag=True, help="List archived studies too (--fresh).")
@click.option("--json", "json_out", is_flag=True, help="Print a JSON list of objects instead.")
def ls(store: str | None, show_all: bool, json_out: bool) -> None:
    """List the studies in STORE (default: the quick-mode store).

    \b
      assay ls                      (quick mode: ~/.cache/assay/quick.assay.db)
      assay ls examples/run-sqlite-insert.assay.db --all
      assay ls study.assay.db --json | jq '.[].name'

    Reads the store without changing it, so it works while a study is running.
    """
    from assay.studies.catalog import list_studies

    err = err_console()
    path = Path(store) if store else quick_store_path()
    try:
        entries = list_studies(path, archived=show_all)
    except StoreError as exc:
        fail(err, exc, exits.USAGE)
    if json_out:
        click.echo(json.dumps([e.as_dict() for e in entries], indent=2))
        return
    if not entries:
        err.print(f"{path}: no studies" + ("" if show_all else " (archived ones: --all)"))
        return
    table = Table(title=Text(plain(str(path))), title_justify="left")
    for name in ("study", "kind", "trials", "first trial", "last trial", "sessions", "state"):
        table.add_column(name, justify="right" if name == "sessions" else "left")
    for e in entries:
        row = e.as_dict()
        table.add_row(
            # plain before Text: Text drops BEL itself and would leave half an escape
            Text(plain(e.name)),
            e.kind,
            _counts(e.trials_by_status),
            _when(row["first_trial"]),
            _when(row["last_trial"]),
            str(e.sessions),
            Text(e.state, style="green" if e.done else "yellow"),
        )
    report_console({}, 160).print(table)
