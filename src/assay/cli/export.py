"""``assay export``: a store's trials as CSV, JSON or Parquet, for pandas, R or a
spreadsheet (the tables: :mod:`assay.studies.export`)."""

from __future__ import annotations

import csv
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import click

from assay.cli import exits
from assay.cli.common import err_console, fail
from assay.cli.option_values import AssayCommand
from assay.cli.outputs import unwritable
from assay.errors import StoreError
from assay.extras import require_extra

if TYPE_CHECKING:
    from assay.studies.export import Table

FORMATS = ("csv", "json", "parquet")

EXPORT_HELP = """
\b
Tables:
  trials         study, seq, run, status, setting.KEY (one column per setting key),
                 reading.PI (one column per PI), started (local ISO 8601), duration_s,
                 work, exit_code, error, stderr_tail (its last 3 lines), host,
                 cpu_user, cpu_system, max_rss_kib
  unit readings  study, run, seq, pi, index, value (one row per value; run and seq
                 name the trial)
\b
Where they go:
  csv      the trials to PATH, the unit readings to PATH with .units.csv in place of
           .csv (trials.csv -> trials.units.csv); with '-o -' only the trials (stdout)
  json     one object {"trials": [...], "unit_readings": [...]} to PATH or stdout
  parquet  as csv, with .units.parquet; needs pyarrow (pip install pyarrow)
\b
Read back: pandas.read_csv("trials.csv"); from JSON, pandas.DataFrame(data["trials"]).
\b
Exit status: 0 written   2 usage error, no such store or study   3 pyarrow missing
"""


def units_path(path: Path, fmt: str) -> Path:
    """Where the unit readings go beside the trials file ``path``.

    >>> units_path(Path("out/trials.csv"), "csv").as_posix()
    'out/trials.units.csv'
    >>> units_path(Path("trials"), "parquet").as_posix()
    'trials.units.parquet'
    """
    ext = "." + fmt
    if path.suffix.lower() == ext:
        return path.with_name(path.stem + ".units" + path.suffix)
    return path.with_name(path.name + ".units" + ext)


def _format(fmt: str | None, output: str) -> str:
    """``--format``, else the output file's suffix, else CSV."""
    if fmt is not None:
        return fmt
    suffix = Path(output).suffix.lower().lstrip(".")
    return suffix if output != "-" and suffix in FORMATS else "csv"


def _refusal(fmt: str, path: Path | None) -> str | None:
    """Why the export cannot be written as asked, checked before the store is read (a
    large export would be wasted); None when it can."""
    if fmt == "parquet":
        if path is None:
            return "--format parquet writes two files: give -o PATH, not '-'"
        # pandas writes Parquet through pyarrow: a missing extra, exit status 3 as for
        # every other (assay.extras.MissingExtra, caught by the command group)
        require_extra("pyarrow", "export", "--format parquet (or use --format csv)")
    if path is None:
        return None
    files = [(path, "-o")]
    if fmt != "json":
        files.append((units_path(path, fmt), "-o (unit readings)"))
    for p, flag in files:
        problem = unwritable(p)
        if problem:
            return f"{flag} {p}: {problem}"
    return None


def _write_csv(out: TextIO, table: Table) -> None:
    w = csv.writer(out)
    w.writerow(table.fields)
    w.writerows(table.rows)


def _frame(table: Table) -> Any:
    """A DataFrame of ``table`` that Parquet can hold: a column mixing types (a setting
    that is a number in one study and text in another) is written as text."""
    import pandas as pd

    df = pd.DataFrame(table.rows, columns=table.fields)
    for name in df.columns:
        kinds = {type(v) for v in df[name] if v is not None and v == v}
        if len(kinds) > 1 and not kinds <= {int, float}:
            df[name] = [None if v is None else str(v) for v in df[name]]
    return df


@click.command(
    cls=AssayCommand, epilog=EXPORT_HELP, context_settings={"help_option_names": ["-h", "--help"]}
)
@click.argument("store", type=click.Path(dir_okay=False))
@click.argument("study", required=False)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    help="Output format (default: from -o's suffix, else csv).",
)
@click.option(
    "-o",
    "--output",
    default="-",
    show_default=True,
    metavar="PATH",
    help="The trials file; CSV and Parquet put the unit readings beside it in "
    "PATH.units.csv / .units.parquet ('-' = stdout: CSV trials or JSON).",
)
@click.option(
    "--all", "show_all", is_flag=True, help="Without STUDY: archived studies (--fresh) too."
)
def export(store: str, study: str | None, fmt: str | None, output: str, show_all: bool) -> None:
    """Write every trial of STUDY in STORE (default: of every study) as flat tables.

    \b
      assay export study.assay.db -o trials.csv        (and trials.units.csv)
      assay export study.assay.db "my study" --format json -o - | jq '.trials[0]'
      assay export study.assay.db -o trials.parquet    (needs pyarrow)

    Reads the store without changing it, so it works while a study is running.
    """
    from assay.report.export import replacing, to_json, write_text
    from assay.studies.export import UnknownStudyError, export_store

    err = err_console()
    fmt = _format(fmt, output)
    path = None if output == "-" else Path(output)
    refusal = _refusal(fmt, path)
    if refusal:
        fail(err, refusal)
    try:
        data = export_store(Path(store), study, archived=show_all)
    except (StoreError, UnknownStudyError) as exc:
        fail(err, exc, exits.USAGE)
    trials, units = data.trials, data.unit_readings
    if fmt == "json":
        write_text(output, to_json({"trials": trials.records(), "unit_readings": units.records()}))
        where = "stdout" if path is None else output
        err.print(f"{len(trials.rows)} trials, {len(units.rows)} unit readings -> {where}")
    elif path is None:
        _write_csv(sys.stdout, trials)
        if units.rows:
            err.print(
                f"note: {len(units.rows)} unit readings not written: give -o PATH to get "
                "them in PATH.units.csv"
            )
    else:
        upath = units_path(path, fmt)
        for table, p in ((trials, path), (units, upath)):
            with replacing(p) as tmp:
                if fmt == "csv":
                    with tmp.open("w", newline="", encoding="utf-8") as f:
                        _write_csv(f, table)
                else:
                    _frame(table).to_parquet(tmp, index=False)
        err.print(
            f"{len(trials.rows)} trials -> {path}; {len(units.rows)} unit readings -> {upath}"
        )
