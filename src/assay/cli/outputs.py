"""Where a command's outputs go: the files it writes, checked before the first trial, and
the human report, which leaves stdout to ``--json -`` / ``--csv -`` so they pipe.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, cast

from assay.errors import SpecError

if TYPE_CHECKING:
    from rich.console import Console

# option key -> the option's name, for every command's file outputs ('-' = stdout)
OUTPUTS = {
    "json_out": "--json",
    "csv_out": "--csv",
    "trials_out": "--trials-csv",
    "markdown_out": "--markdown",
    "plot": "--plot",
    "html_out": "--output",
    "report_out": "--report",
    "hyperfine_json": "--export-json",
    "hyperfine_csv": "--export-csv",
}
NOT_TO_STDOUT = {"plot", "report_out"}  # binary or several files: a name is needed


def to_stdout(opts: Mapping[str, Any]) -> str | None:
    """The option whose output goes to stdout (``-``), if any."""
    return next((flag for k, flag in OUTPUTS.items() if opts.get(k) == "-"), None)


def check_outputs(opts: Mapping[str, Any], plot_suffixes: tuple[str, ...] = ()) -> None:
    """Refuse, before any trial runs, an output that could not be written at the end.

    >>> check_outputs({"json_out": "-", "csv_out": "-"})
    Traceback (most recent call last):
    ...
    assay.errors.SpecError: --json and --csv both write to stdout ('-'): give one of them a file

    A file name that looks like the next option (``--json --store``) is refused while
    parsing, as every option's value is: :mod:`assay.cli.option_values`.
    """
    dashes = [flag for k, flag in OUTPUTS.items() if opts.get(k) == "-"]
    if len(dashes) > 1:
        raise SpecError(
            f"{' and '.join(dashes)} both write to stdout ('-'): give one of them a file"
        )
    for key, flag in OUTPUTS.items():
        value = opts.get(key)
        if not value or (value == "-" and key not in NOT_TO_STDOUT):
            continue
        if key == "plot" and plot_suffixes and Path(value).suffix.lower() not in plot_suffixes:
            raise SpecError(
                f"{flag} {value}: expected a file name ending in {' or '.join(plot_suffixes)}"
            )
        problem = unwritable(Path(value))
        if problem:
            raise SpecError(f"{flag} {value}: {problem}")


def unwritable(path: Path) -> str | None:
    """Why ``path`` cannot be created or replaced, or None."""
    if path.is_dir():
        return "is a directory; give a file name"
    parent = path.parent
    if not parent.is_dir():
        return f"the directory {parent} does not exist"
    # the file is replaced through a temporary file beside it: the directory must be writable
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"cannot write in {parent} (permission denied)"
    if path.exists() and not os.access(path, os.W_OK):
        return "exists and is not writable"
    return None


def report_console(opts: Mapping[str, Any], width: int) -> Console:
    """The console of the human report: stdout, or stderr when an output takes stdout
    (nowhere with ``-q``).  Pipes get ``COLUMNS`` columns, else ``width``, and lines
    without the trailing blanks rich pads tables with."""
    stream = sys.stderr if to_stdout(opts) is not None else sys.stdout
    terminal = stream.isatty()
    from assay.report.safe import SafeConsole  # rich: not for --help (start-up, #60)

    return SafeConsole(
        file=stream if terminal else cast(TextIO, _RStripped(stream)),
        quiet=stream is sys.stderr and bool(opts.get("quiet")),
        width=_width(width, terminal),
    )


class _RStripped(io.TextIOBase):
    """Writes whole lines to ``out`` without trailing blanks (for files and pipes)."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.pending = ""

    def write(self, text: str) -> int:
        *lines, self.pending = (self.pending + text).split("\n")
        for line in lines:
            self.out.write(line.rstrip(" ") + "\n")
        return len(text)

    def flush(self) -> None:
        self.out.flush()


def _width(default: int, terminal: bool) -> int | None:
    """None (rich asks the terminal, or reads COLUMNS) for a terminal or when COLUMNS is
    set; else ``default`` columns instead of rich's 80 for pipes and CI logs."""
    if terminal or os.environ.get("COLUMNS", "").isdigit():
        return None
    return default
