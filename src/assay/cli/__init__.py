"""The ``assay`` command line: one module per subcommand, each parsing, calling a study
(:mod:`assay.studies`) and printing its report (:mod:`assay.report`).

Heavy imports (NumPy, SciPy, pandas) happen inside the commands, so ``--help`` and
``--version`` stay fast.  Shared options and exit statuses: :mod:`assay.cli.common`.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from assay import __version__
from assay.cli import exits
from assay.extras import MissingExtra

__all__ = ["main"]

#: Each subcommand: its module (``assay.cli.NAME``), its function and the one line
#: ``assay --help`` shows.  Loaded when it is run, so that ``assay --version``,
#: ``assay --help`` and shell completion import no subcommand (and so no pydantic,
#: NumPy or SciPy: issue #35); test_cli_unix checks the lines against the commands'.
COMMANDS: dict[str, tuple[str, str]] = {
    "compare": ("compare", "Decide which of several commands is best, in the least time."),
    "export": ("export", "Write every trial of STUDY in STORE as flat tables."),
    "gc": ("gc", "Remove old studies from a store, so that it does not only grow."),
    "history": ("history", "A run study's result at each commit, and where it changed."),
    "knobs": ("knobs", "Find the few knobs that matter (LHS samples + random forests)."),
    "ls": ("ls", "List the studies in STORE (default: the quick-mode store)."),
    "order": ("order", "Detect the ordering trap: do results depend on test order?"),
    "plan": ("plan", "Say what a study will do before it runs: trials, hosts, time, disk."),
    "report": ("report", "Write a stored study's report as one self-contained HTML file."),
    "reproduce": (
        "reproduce",
        "Run a stored study again and say whether it reproduces the original.",
    ),
    "rm": ("rm", "Remove STUDIES (their trials, sessions and readings) from a store."),
    "run": ("run", "Measure until every CI is as narrow as asked (Pilot's method)."),
    "show": ("show", "Show a stored study's result without running anything."),
    "status": ("status", "Say where the studies of STORE stand: running, interrupted, finished."),
    "sweep": ("sweep", "Sweep a parameter space and say which parameters matter."),
}


class AssayGroup(click.Group):
    """The command group; a Ctrl-C before a study is under way (while parsing, importing
    or opening the store) ends like one during it: "interrupted", exit 130, not click's
    "Aborted!" with exit 1.  Subcommands are imported when they are run."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module = importlib.import_module(f"assay.cli.{COMMANDS[cmd_name][0]}")
        command: click.Command = getattr(module, cmd_name)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][1]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            click.echo("\ninterrupted", err=True)
            sys.exit(130)
        except MissingExtra as exc:  # an optional dependency, where no study runs (--from)
            click.echo(f"error: {exc}", err=True)
            sys.exit(exits.STUDY)


@click.group(cls=AssayGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="assay")
def main() -> None:
    """Assay runs performance experiments the right way and says what the numbers mean.

    Every number comes with its confidence interval, sample count and method.
    """
