"""A command's peak memory as Assay records it, against ``/usr/bin/time -v`` (issue #35).

For each command, ``assay run --runs RUNS --store DB -- CMD`` then ``assay export DB``:
the trials' ``max_rss_kib`` (median, and how many trials have one), beside the median
of RUNS runs of ``/usr/bin/time -f %M CMD``.  ``--before OLD_SRC`` runs another copy of
Assay's ``src`` the same way (``PYTHONPATH``; e.g. ``git archive 769c337 src | tar -x -C
/tmp/old``).

Run: python bench/bench_peak_memory.py [--runs 30] [--before OLD_SRC/src]
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import machine_line

COMMANDS: list[tuple[str, list[str]]] = [
    ("true", ["true"]),
    ("sleep 0.01", ["sleep", "0.01"]),
    ("sh -c 'sleep 0.05'", ["sh", "-c", "sleep 0.05"]),
    ("python3 -c pass", ["python3", "-c", "pass"]),
    ("python3, 40 MB array", ["python3", "-c", "b = bytearray(40_000_000)"]),
]


def assay_peaks(argv: list[str], runs: int, src: str | None) -> list[int | None]:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = src
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "s.assay.db")
        base = [sys.executable, "-m", "assay"]
        run = [*base, "run", "-q", "--no-overhead", "--runs", str(runs), "--store", db, "--"]
        subprocess.run([*run, *argv], env=env, check=False, capture_output=True, cwd=tmp)
        out = subprocess.run(
            [*base, "export", db], env=env, check=True, capture_output=True, text=True, cwd=tmp
        ).stdout
    rows = [r for r in csv.DictReader(io.StringIO(out)) if r["status"] == "ok"]
    return [int(r["max_rss_kib"]) if r["max_rss_kib"] else None for r in rows]


def time_v(argv: list[str], runs: int) -> float:
    peaks = []
    for _ in range(runs):
        done = subprocess.run(["/usr/bin/time", "-f", "%M", *argv], capture_output=True, text=True)
        peaks.append(int(done.stderr.split()[-1]))
    return statistics.median(peaks)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--before", help="another Assay src folder to run beside this one")
    args = ap.parse_args()
    load = os.getloadavg()
    rows = []
    for label, argv in COMMANDS:
        reference = time_v(argv, args.runs)
        for tool, src in [("assay", None)] + ([("before", args.before)] if args.before else []):
            peaks = assay_peaks(argv, args.runs, src)
            known = [p for p in peaks if p is not None]
            median = statistics.median(known) if known else None
            off = f"{100 * (median - reference) / reference:+.1f}%" if median else "n/a"
            shown = f"{median / 1024:.2f} MB" if median else "not recorded"
            rows.append(
                f"| {label} | {tool} | {len(known)} of {len(peaks)} | {shown} | "
                f"{reference / 1024:.2f} MB | {off} |"
            )
    print(machine_line(load, f"{args.runs} runs a command"))
    print()
    print("| command | tool | trials with a peak | median peak | time -v median | difference |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
