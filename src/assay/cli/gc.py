"""``assay gc``: remove the studies of a store that nobody has run for a while."""

from __future__ import annotations

import re
import time
from pathlib import Path

import click

from assay.cli import exits
from assay.cli.common import err_console, fail, quick_store_path
from assay.cli.option_values import AssayCommand
from assay.errors import NotAStoreError, StoreError
from assay.report.safe import plain

_UNITS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_age(text: str) -> float:
    """Seconds in an age such as ``30d``, ``12h``, ``2w`` or ``90m``.

    >>> parse_age("30d"), parse_age("1.5h")
    (2592000.0, 5400.0)
    """
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([mhdw])\s*", text)
    if m is None:
        raise click.BadParameter(f"{text!r}: expected a number and m, h, d or w, e.g. 30d")
    return float(m.group(1)) * _UNITS[m.group(2)]


@click.command(cls=AssayCommand, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--older-than",
    "age",
    required=True,
    metavar="AGE",
    help="Remove studies whose newest trial (or, without trials, creation) is older than "
    "AGE: 90m, 12h, 30d, 2w.",
)
@click.option(
    "--store",
    type=click.Path(dir_okay=False),
    help="The store (default: the quick-mode store, ~/.cache/assay/quick.assay.db).",
)
@click.option("--dry-run", is_flag=True, help="Say what would be removed; remove nothing.")
def gc(age: str, store: str | None, dry_run: bool) -> None:
    """Remove old studies from a store (archived ones included), so it does not only grow.

    \b
      assay gc --older-than 30d            (the quick-mode store)
      assay gc --older-than 2w --store study.assay.db --dry-run

    A running study is kept.  Exit status: 0 done (even nothing to remove), 2 no such
    store, 3 the store cannot be written now.
    """
    err = err_console()
    try:
        seconds = parse_age(age)
    except click.BadParameter as exc:
        fail(err, f"--older-than {exc.message}", exits.USAGE)
    path = Path(store) if store else quick_store_path()
    if not path.is_file():
        fail(err, f"{path}: no such store", exits.USAGE)
    cutoff = time.time() - seconds
    try:
        from assay.store import Store, StudyBusyError  # NumPy: not for --help

        with Store(path) as st:
            old = [o.name for o in st.overview() if (o.last_trial or o.created) < cutoff]
            for name in old:
                done = "would remove"
                if not dry_run:
                    try:
                        st.delete_study(name)
                        done = "removed"
                    except StudyBusyError:  # running now: kept, and the others go on
                        done = "kept (running now)"
                err.print(f"{done} {plain(name)}", markup=False, highlight=False)
    except NotAStoreError as exc:
        fail(err, exc, exits.USAGE)
    except StoreError as exc:
        fail(err, exc, exits.STUDY)
    if not old:
        err.print(f"{path}: no study older than {age}", markup=False, highlight=False)
