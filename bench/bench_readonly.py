"""``assay show`` and ``assay report`` on a stored study: the read-only commands (#44).

Run from the repository root, on a store a study wrote (e.g. the README's main command's
``examples/sqlite-sweep.assay.db`` after a full sweep)::

    python bench/bench_readonly.py STORE [--launches 7]

The store is copied twice into a fresh directory: once as it is (with the report a
sweep or knob study keeps at its end, see ``assay.cli.show.remember_shown``) and once
with that report removed (analysed again, as before the report was kept).  Each
command is launched as ``python -m assay ...`` with its output to ``/dev/null``, the
variants interleaved.  Prints a Markdown table of the wall times (median, min and max)
with the machine, date and load.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import machine_line


def _without_kept_report(db: Path) -> None:
    with sqlite3.connect(db) as con:
        con.execute("DELETE FROM study_values WHERE key = 'shown'")
    con.close()


def _launch(args: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "assay", *args],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("--launches", type=int, default=7)
    args = parser.parse_args()
    load = os.getloadavg()
    with sqlite3.connect(args.store) as con:
        trials = con.execute("SELECT COUNT(*) FROM trials").fetchone()[0]
    con.close()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        shutil.copy(args.store, work / "kept.db")
        shutil.copy(args.store, work / "none.db")
        _without_kept_report(work / "none.db")
        variants = {
            "show, report kept": ["show", "kept.db"],
            "show, analysed again": ["show", "none.db"],
            "report (HTML)": ["report", "none.db", "-o", "page.html"],
        }
        times: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(args.launches):
            for name, argv in variants.items():
                times[name].append(_launch(argv, work))
    print(machine_line(load, f"{args.store.name}, {trials} trials, {args.launches} launches"))
    print()
    print("| command | median | min | max |")
    print("|---|---|---|---|")
    for name, got in times.items():
        med, lo, hi = statistics.median(got), min(got), max(got)
        print(f"| {name} | {med:.2f} s | {lo:.2f} s | {hi:.2f} s |")


if __name__ == "__main__":
    main()
