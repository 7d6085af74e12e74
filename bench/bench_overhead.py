"""Assay's own cost per trial and its timer, side by side with hyperfine (issue #17).

Run from the repository root (needs ``hyperfine``, Debian package)::

    python bench/bench_overhead.py [--reps 3] [--runs 300] [--before OLD_SRC]

For each command (a no-op, ``sleep 0.05``, a 50 ms Python loop) and each repetition,
interleaved: ``hyperfine -N --runs RUNS`` and ``assay run -r RUNS --ci-width 1e-9``
(so every run does exactly RUNS trials and analyses them as a user's study does before
it meets its target; until 2026-11-24 22:10 UTC ``--min-samples RUNS``, whose analyses
returned at once for want of samples, so the figures before that leave the analysis
out), with and without the bottleneck watch, and
without a cgroup (``ASSAY_PROCESS_TREE=scan``).  ``--before OLD_SRC`` adds the same
runs of another copy of Assay's ``src`` (``PYTHONPATH``): before/after on one machine,
interleaved.  Reported, medians over the repetitions:

- the mean each tool measured (Assay's timer against hyperfine's);
- Assay's own cost per trial between trials (from one command's reap to the next one's
  spawn): the median of the stored trials' ``bookkeeping_s`` (the steady state) and
  their mean (``overhead.bookkeeping_s_per_trial``: one-time costs included, as the
  first analysis's imports);
- Assay's whole own cost per trial: the process's wall time less the commands' (start-up,
  imports, store, analysis, report included), divided by the trials;
- the wall time of the whole command against hyperfine's, for the same number of runs.

``--compare``: ``assay compare -r RUNS/2 -- CMD -- CMD`` (an A/A comparison: it runs
its whole budget unless its always-valid test errs, at most 1% of the time) beside
``hyperfine -N --runs RUNS/2 CMD CMD``; the same columns, the mean being the first
variant's.

Prints a Markdown table with the machine, date and load.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine import machine_line

LOOP = "import time\nt = time.perf_counter()\nwhile time.perf_counter() - t < 0.05:\n    pass\n"

#: (key, label, watch on, ASSAY_PROCESS_TREE, use --before's src)
VARIANTS = [
    ("a", "assay --no-monitor", False, None, False),
    ("aw", "assay (watch on)", True, None, False),
    ("as", "assay --no-monitor, ASSAY_PROCESS_TREE=scan", False, "scan", False),
    ("b", "before: assay --no-monitor", False, None, True),
    ("bw", "before: assay (watch on)", True, None, True),
]


def commands(tmp: Path) -> dict[str, list[str]]:
    """The benchmarked commands; the Python loop is a script file, so that both tools
    run the same argv with no shell."""
    loop = tmp / "loop50ms.py"
    loop.write_text(LOOP)
    return {
        "no-op (true)": ["true"],
        "sleep 0.05": ["sleep", "0.05"],
        "python 50 ms loop": [sys.executable, str(loop)],
    }


def assay(
    argv: list[str],
    runs: int,
    watch: bool,
    store: Path,
    tree: str | None,
    src: str | None,
    compare: bool = False,
) -> tuple[float, float, float, float, float]:
    """(measured mean, own cost between trials: median and mean per trial, whole own
    cost per trial, wall seconds) of one ``assay run`` (or ``assay compare`` of the
    command against itself, ``runs`` trials in all)."""
    args = [sys.executable, "-m", "assay", "compare" if compare else "run", "-q", "--json",
            "-", "--no-overhead", "--store", str(store), "--fresh"]  # fmt: skip
    # a target it never meets: every trial is analysed as in a study before its target
    # (with --min-samples RUNS, as before, the analysis returned at once: too cheap)
    args += ["-r", str(runs // 2)] if compare else ["-r", str(runs), "--ci-width", "1e-9"]
    if not watch:
        args.append("--no-monitor")
    env = dict(os.environ)
    if tree:
        env["ASSAY_PROCESS_TREE"] = tree
    if src:
        env["PYTHONPATH"] = src
    t0 = time.perf_counter()
    tail = ["--", *argv, "--", *argv] if compare else ["--", *argv]
    done = subprocess.run([*args, *tail], capture_output=True, text=True, check=False, env=env)
    wall = time.perf_counter() - t0
    data = json.loads(done.stdout)
    measured = float(data["session"]["measured_s"])
    runs = int(data["trials"]["total"]) if compare else runs
    mean = data["comparisons"][0]["variants"][0]["mean"] if compare else data["pis"][0]["mean"]
    db = sqlite3.connect(store)
    try:
        gaps = [r[0] for r in db.execute("SELECT bookkeeping_s FROM trials") if r[0] is not None]
    finally:
        db.close()
    return (
        float(mean),
        statistics.median(gaps),
        float(data["overhead"]["bookkeeping_s_per_trial"]),
        (wall - measured) / runs,
        wall,
    )


def hyperfine(argv: list[str], runs: int, out: Path, compare: bool = False) -> tuple[float, float]:
    """(mean, wall seconds) of ``hyperfine -N --runs RUNS`` (no shell, no warm-up); with
    ``compare`` the command twice, ``RUNS / 2`` runs each."""
    t0 = time.perf_counter()
    cmds = [" ".join(argv)] * (2 if compare else 1)
    each = runs // 2 if compare else runs
    subprocess.run(
        ["hyperfine", "-N", "--runs", str(each), "--export-json", str(out), "--", *cmds],
        capture_output=True,
        check=True,
    )
    wall = time.perf_counter() - t0
    return float(json.loads(out.read_text())["results"][0]["mean"]), wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--before", help="another Assay src folder to run beside this one")
    ap.add_argument("--src", help="the Assay src folder to run (default: the installed one)")
    ap.add_argument("--compare", action="store_true", help="assay compare -- CMD -- CMD")
    args = ap.parse_args()
    if shutil.which("hyperfine") is None:
        sys.exit("needs hyperfine (apt-get install hyperfine)")
    variants = [v for v in VARIANTS if args.before or not v[4]]
    rows = []
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        for name, argv in commands(d).items():
            runs = args.runs if name.startswith("no-op") else max(args.runs // 10, 20)
            got: dict[str, list[tuple[float, ...]]] = {"hf": []} | {v[0]: [] for v in variants}
            for rep in range(args.reps):
                got["hf"].append(hyperfine(argv, runs, d / "hf.json", args.compare))
                for key, _, watch, tree, before in variants:
                    src = args.before if before else args.src
                    store = d / f"{key}{rep}-{len(rows)}.db"  # one per command
                    got[key].append(assay(argv, runs, watch, store, tree, src, args.compare))
            hf_mean = statistics.median(x[0] for x in got["hf"])
            hf_wall = statistics.median(x[1] for x in got["hf"])
            for key, label, *_ in variants:
                mean, own_med, own_mean, whole, wall = (
                    statistics.median(x[i] for x in got[key]) for i in range(5)
                )
                rows.append(
                    f"| {name} | {runs} | {label} | {mean * 1e3:.3f} ms | {hf_mean * 1e3:.3f} ms "
                    f"| {(mean - hf_mean) * 1e3:+.3f} ms | {own_med * 1e3:.2f} ms "
                    f"| {own_mean * 1e3:.2f} ms | {whole * 1e3:.2f} ms | {wall:.2f} s "
                    f"| {hf_wall:.2f} s | {wall / hf_wall:.2f} |"
                )
    print(machine_line(load0, f"{args.reps} repetitions, medians") + "\n")
    print(
        "| command | runs | tool | Assay's mean | hyperfine's mean | difference "
        "| own cost between trials, median | same, mean | whole own cost/trial | Assay wall "
        "| hyperfine wall | wall ratio |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
