"""The ``assay`` command line: one module per subcommand, each parsing, calling a study
(:mod:`assay.studies`) and printing its report (:mod:`assay.report`).

Heavy imports (NumPy, SciPy, pandas) happen inside the commands, so ``--help`` and
``--version`` stay fast.  Shared options and exit statuses: :mod:`assay.cli.common`.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from assay import __version__
from assay.cli.compare import compare
from assay.cli.export import export
from assay.cli.gc import gc
from assay.cli.history import history
from assay.cli.knobs import knobs
from assay.cli.ls import ls
from assay.cli.order import order
from assay.cli.report import report
from assay.cli.rm import rm
from assay.cli.run import run
from assay.cli.show import show
from assay.cli.sweep import sweep

__all__ = ["main"]


class AssayGroup(click.Group):
    """The command group; a Ctrl-C before a study is under way (while parsing, importing
    or opening the store) ends like one during it: "interrupted", exit 130, not click's
    "Aborted!" with exit 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            click.echo("\ninterrupted", err=True)
            sys.exit(130)


@click.group(cls=AssayGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="assay")
def main() -> None:
    """Assay runs performance experiments the right way and says what the numbers mean.

    Every number comes with its confidence interval, sample count and method.
    """


for command in (run, compare, order, sweep, knobs, ls, export, rm, gc, history):
    main.add_command(command)
main.add_command(show)
main.add_command(report)
