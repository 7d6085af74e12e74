"""``assay report``: a stored study as one self-contained HTML page (and its plots).

Nothing runs: the result is rebuilt from the store as ``assay show`` rebuilds it
(:mod:`assay.studies.stored`) and rendered by :mod:`assay.report.html`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from assay.cli.common import (
    err_console,
    fail,
    plots_without_3d,
    stored_study_errors,
    write_outputs,
)
from assay.cli.outputs import check_outputs, unwritable
from assay.cli.sections import SectionedCommand
from assay.errors import SpecError

REPORT_HELP = """
The page: what was run (command, parameters, settings, environment), every PI with
its CI, n and method, the warnings, the failed trials (with the end of their stderr)
and the plots of the study's design, as inline SVG (a sweep or knob study keeps
them in its store at its end: inlined while its trials are unchanged, not drawn
again).  It needs no network: open it anywhere, attach it to a ticket.

A site (-o DIR/, or -o naming a folder, or several stores): every argument is a store;
DIR/index.html lists every study of every store (kind, PI, answer, when it last ran,
host), newest first, with the benchmarks measured across commits (assay history data)
and their regressions first; each study gets its page (the single-study page), each
benchmark across commits a page plotting each commit's mean and CI with the change
points marked.  No script, no network.  A study that cannot be analysed is listed
without a page.  Running it again updates the site: it removes only the pages it wrote
before (DIR/.assay-site.json lists them), nothing else in DIR.

\b
Exit status (not the study's: use assay show for that):
  0  written   2  usage error, no such store or study   3  the store cannot be read
  4  the stored data cannot be analysed (one page; a site lists the study instead)
"""


@click.command(cls=SectionedCommand, epilog=REPORT_HELP)
@click.argument("args", nargs=-1, required=True, metavar="STORE [STUDY] | STORE...")
@click.option("-o", "--output", "html_out", metavar="PATH", required=True,
              help="The HTML file to write ('-' = stdout); a folder (ending in '/', or one "
              "that exists): a site of every study of every STORE.")  # fmt: skip
@click.option("--plots", "plots_dir", metavar="DIR",
              help="Also write each plot as DIR/NAME.png and DIR/NAME.svg (one page "
              "only).")  # fmt: skip
@click.option("--artifact", is_flag=True,
              help="The page a reviewer attaches (one study): the claims and their "
              "verdicts, ELECT's summary by rounds, the environment, how to run it "
              "again (assay reproduce); Markdown when -o ends in .md.")  # fmt: skip
def report(args: tuple[str, ...], **opts: Any) -> None:
    """Write a stored study's report as one self-contained HTML file.

    Or, with -o DIR/ (or several stores), a static site of every study of the stores:
    an index (regressions across commits first) and one page per study.

    \b
      assay report results.assay.db -o report.html
      assay report results.assay.db "my study" -o report.html --plots plots/
      assay report results.assay.db ci.assay.db -o site/
      assay report results.assay.db --artifact -o artifact.html
    """
    err = err_console()
    if _site_mode(args, opts["html_out"]):
        _site(args, opts, err)
        return
    store, study = args[0], (args[1] if len(args) == 2 else None)
    if Path(store).is_dir():  # as click's Path(dir_okay=False) said it before sites
        raise click.BadParameter(f"File {store!r} is a directory.", param_hint="'STORE'")
    plots_dir = opts["plots_dir"]
    try:
        check_outputs(opts)
        if plots_dir is not None:
            problem = _unusable_dir(Path(plots_dir))
            if problem:
                raise SpecError(f"--plots {plots_dir}: {problem}")
    except SpecError as exc:
        fail(err, exc)
    from assay.report.html import artifact_report, study_report  # lazy: --help stays fast

    path = Path(store)
    plots: list[Any]
    with stored_study_errors(err, path):
        if opts["artifact"] and str(opts["html_out"]).endswith(".md"):
            from assay.report.markdown import artifact_markdown

            page, plots = artifact_markdown(path, study), []
        elif opts["artifact"]:
            page, plots = artifact_report(path, study), []
        else:
            page, plots = study_report(path, study, png=plots_dir is not None,
                                       before_drawing=plots_without_3d)  # fmt: skip
    write_outputs(opts, {"html_out": lambda: page})
    if plots_dir is not None:
        out = Path(plots_dir)
        out.mkdir(exist_ok=True)
        from assay.report.export import replacing, write_text

        for p in plots:  # each a fresh file renamed into place: no planted link followed
            write_text(str(out / f"{p.name}.svg"), p.svg)
            if p.png is not None:
                with replacing(out / f"{p.name}.png") as tmp:
                    tmp.write_bytes(p.png)
    if opts["html_out"] != "-":
        what = "the artifact page" if opts["artifact"] else f"{len(plots)} plots"
        err.print(f"wrote {opts['html_out']} ({what})", soft_wrap=True, markup=False)


def _unusable_dir(path: Path) -> str | None:
    """Why ``path`` cannot be (made) a directory to write plots in, or None."""
    if path.is_dir():
        return unwritable(path / "plot.svg")
    if path.exists():
        return "is not a directory"
    return unwritable(path)


def _site_mode(args: tuple[str, ...], out: str) -> bool:
    """A site: -o ends with '/' or names a folder, or more than one store is given (a
    third argument, or a second that names a file and no study of the first store)."""
    if out.endswith(("/", os.sep)) or (out != "-" and Path(out).is_dir()):
        return True
    if len(args) > 2:
        return True
    return len(args) == 2 and Path(args[1]).is_file() and not _has_study(args[0], args[1])


def _has_study(store: str, name: str) -> bool:
    """Whether ``store`` is a store holding a study ``name`` (False if it cannot say)."""
    from assay.store import Store, StoreError

    try:
        with Store(Path(store), read_only=True) as db:
            return db.find_study(name) is not None
    except (StoreError, OSError):
        return False


def _site(args: tuple[str, ...], opts: dict[str, Any], err: Any) -> None:
    """``-o DIR/``: every study of every store ``args`` as a static site in DIR."""
    out = opts["html_out"]
    if out == "-":
        fail(err, "-o -: a site of several stores is written to a folder (-o DIR/)")
    if opts["plots_dir"] is not None:
        fail(err, "--plots: one study's report only, not with a site (-o DIR/)")
    folder = Path(out)
    problem = _unusable_dir(folder) if folder.exists() else unwritable(folder)
    if problem:
        fail(err, f"--output {out}: {problem}")
    from assay.report.site import INDEX, build_site, write_site
    from assay.studies.catalog import list_studies

    stores = [Path(a) for a in args]
    for path in stores:  # every store checked before any page is made
        with stored_study_errors(err, path):
            list_studies(path)
    with stored_study_errors(err, stores[0]):
        site = build_site(stores, before_drawing=plots_without_3d)
    folder.mkdir(exist_ok=True)
    write_site(site, folder)
    for row in site.rows:
        if row.problem:
            err.print(f"note: {row.store}: {row.study}: {row.problem}", soft_wrap=True,
                      markup=False, style="yellow")  # fmt: skip
    index = folder / INDEX
    err.print(f"wrote {index} and {site.studies} pages", soft_wrap=True, markup=False)
