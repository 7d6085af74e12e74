"""``assay report``: a stored study as one self-contained HTML page (and its plots).

Nothing runs: the result is rebuilt from the store as ``assay show`` rebuilds it
(:mod:`assay.studies.stored`) and rendered by :mod:`assay.report.html`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from assay.cli.common import err_console, fail, stored_study_errors, write_outputs
from assay.cli.outputs import check_outputs, unwritable
from assay.cli.sections import SectionedCommand
from assay.errors import SpecError

REPORT_HELP = """
The page: what was run (command, parameters, settings, environment), every PI with
its CI, n and method, the warnings, the failed trials (with the end of their stderr)
and the plots of the study's design, as inline SVG.  It needs no network: open it
anywhere, attach it to a ticket.

\b
Exit status (not the study's: use assay show for that):
  0  written   2  usage error, no such store or study   3  the store cannot be read
  4  the stored data cannot be analysed
"""


@click.command(cls=SectionedCommand, epilog=REPORT_HELP)
@click.argument("store", type=click.Path(dir_okay=False))
@click.argument("study", required=False)
@click.option("-o", "--output", "html_out", metavar="PATH", required=True,
              help="The HTML file to write ('-' = stdout).")  # fmt: skip
@click.option("--plots", "plots_dir", metavar="DIR",
              help="Also write each plot as DIR/NAME.png and DIR/NAME.svg.")  # fmt: skip
def report(store: str, study: str | None, **opts: Any) -> None:
    """Write a stored study's report as one self-contained HTML file.

    \b
      assay report results.assay.db -o report.html
      assay report results.assay.db "my study" -o report.html --plots plots/
    """
    err = err_console()
    plots_dir = opts["plots_dir"]
    try:
        check_outputs(opts)
        if plots_dir is not None:
            problem = _unusable_dir(Path(plots_dir))
            if problem:
                raise SpecError(f"--plots {plots_dir}: {problem}")
    except SpecError as exc:
        fail(err, exc)
    from assay.report.html import study_report  # lazy: --help stays fast

    path = Path(store)
    with stored_study_errors(err, path):
        page, plots = study_report(path, study, png=plots_dir is not None)
    write_outputs(opts, {"html_out": lambda: page})
    if plots_dir is not None:
        out = Path(plots_dir)
        out.mkdir(exist_ok=True)
        for p in plots:
            (out / f"{p.name}.svg").write_text(p.svg, encoding="utf-8")
            if p.png is not None:
                (out / f"{p.name}.png").write_bytes(p.png)
    if opts["html_out"] != "-":
        err.print(f"wrote {opts['html_out']} ({len(plots)} plots)", soft_wrap=True, markup=False)


def _unusable_dir(path: Path) -> str | None:
    """Why ``path`` cannot be (made) a directory to write plots in, or None."""
    if path.is_dir():
        return unwritable(path / "plot.svg")
    if path.exists():
        return "is not a directory"
    return unwritable(path)
