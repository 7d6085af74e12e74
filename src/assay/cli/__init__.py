"""The ``assay`` command line: one module per subcommand, each parsing, calling a study
(:mod:`assay.studies`) and printing its report (:mod:`assay.report`).

Heavy imports (NumPy, SciPy, pandas) happen inside the commands, so ``--help`` and
``--version`` stay fast.  Shared options and exit statuses: :mod:`assay.cli.common`.
"""

from __future__ import annotations

import click

from assay import __version__
from assay.cli.compare import compare
from assay.cli.knobs import knobs
from assay.cli.order import order
from assay.cli.run import run
from assay.cli.sweep import sweep

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="assay")
def main() -> None:
    """Assay runs performance experiments the right way and says what the numbers mean.

    Every number comes with its confidence interval, sample count and method.
    """


for command in (run, compare, order, sweep, knobs):
    main.add_command(command)
