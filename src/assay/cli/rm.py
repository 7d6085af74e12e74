"""``assay rm``: remove studies from a results store, for good."""

from __future__ import annotations

from pathlib import Path

import click

from assay.cli import exits
from assay.cli.common import err_console, fail, quick_store_path
from assay.cli.option_values import AssayCommand
from assay.errors import NotAStoreError, StoreError
from assay.report.safe import plain


@click.command(cls=AssayCommand, context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("studies", nargs=-1, required=True)
@click.option(
    "--store",
    type=click.Path(dir_okay=False),
    help="The store (default: the quick-mode store, ~/.cache/assay/quick.assay.db).",
)
def rm(studies: tuple[str, ...], store: str | None) -> None:
    """Remove STUDIES (their trials, sessions and readings) from a store.

    \b
      assay ls --all                                  (the names, archived ones too)
      assay rm "quick sleep-0-01 039fcda1"
      assay rm --store study.assay.db "my study@archived-20261127T101010-3"

    A study that is running is not removed.  Exit status: 0 removed, 2 no such store
    or study (nothing is removed), 3 the store cannot be written now.
    """
    err = err_console()
    path = Path(store) if store else quick_store_path()
    if not path.is_file():
        fail(err, f"{path}: no such store", exits.USAGE)
    try:
        from assay.store import Store  # NumPy: not for --help

        with Store(path) as st:
            known = {o.name for o in st.overview()}
            missing = [s for s in studies if s not in known]
            if missing:
                fail(
                    err,
                    f"{path}: no study named {plain(missing[0])!r} (assay ls --all lists them); "
                    "nothing removed",
                    exits.USAGE,
                )
            for name in studies:
                st.delete_study(name)
                err.print(f"removed {plain(name)}", markup=False, highlight=False)
    except NotAStoreError as exc:
        fail(err, exc, exits.USAGE)
    except StoreError as exc:  # busy, read-only, full: nothing half-removed (one transaction)
        fail(err, exc, exits.STUDY)
