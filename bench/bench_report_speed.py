"""How long ``assay report STORE`` takes beside ``assay show STORE`` (#60: reports as fast
as show, goal at most 3×).

Run from the repository root::

    python bench/bench_report_speed.py STORE [STORE ...] [--launches 7] [--src DIR ...]

Each launch is ``python -m assay show STORE`` (its output thrown away) and ``python -m
assay report STORE -o PAGE.html`` in a fresh private temporary folder, interleaved; ``--src DIR``
(repeatable) also runs each with ``PYTHONPATH=DIR`` (an older revision's ``src``, from
``git archive REV src | tar -x -C /tmp/old``), interleaved with the installed tree.
Prints a Markdown table (median and min of the wall times, the ratio of the medians)
with the machine, date and load.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from assay.privatefs import private_temp


def _launch(argv: list[str], src: str | None) -> float:
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src
    start = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True)  # fmt: skip
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stores", nargs="+", type=Path)
    ap.add_argument("--launches", type=int, default=7)
    ap.add_argument("--src", action="append", default=[])
    opts = ap.parse_args()
    trees: list[str | None] = [None, *opts.src]
    print(f"machine: {platform.node()}, {os.cpu_count()} cores; "
          f"{time.strftime('%Y-%m-%d %H:%M')}; load {os.getloadavg()[0]:.2f}")  # fmt: skip
    print("\n| store | tree | show (median, min) | report (median, min) | report / show |")
    print("|---|---|---|---|---|")
    for store in opts.stores:
        times: dict[tuple[str | None, str], list[float]] = {}
        for _ in range(opts.launches):
            for tree in trees:
                with private_temp("assay-bench-report-") as tmp:
                    show = [sys.executable, "-m", "assay", "show", str(store.resolve())]
                    page = str(Path(tmp) / "page.html")
                    report = [sys.executable, "-m", "assay", "report", str(store.resolve()),
                              "-o", page]  # fmt: skip
                    times.setdefault((tree, "show"), []).append(_launch(show, tree))
                    times.setdefault((tree, "report"), []).append(_launch(report, tree))
        for tree in trees:
            s, r = times[(tree, "show")], times[(tree, "report")]
            ratio = statistics.median(r) / statistics.median(s)
            print(f"| {store.name} | {tree or 'installed'} | {statistics.median(s):.2f} s, "
                  f"{min(s):.2f} s | {statistics.median(r):.2f} s, {min(r):.2f} s | "
                  f"{ratio:.1f}× |")  # fmt: skip
    print(f"\nload after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
