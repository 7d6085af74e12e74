"""Assay's own cost per trial and its timer, side by side with hyperfine (issue #17).

Run from the repository root (needs ``hyperfine``, Debian package)::

    python bench/bench_overhead.py [--reps 3] [--runs 300]

For each command (a no-op, ``sleep 0.05``, a 50 ms Python loop) and each repetition,
interleaved: ``assay run -r RUNS --ci-width 0.0001`` (so every run does RUNS trials;
with and without the bottleneck watch, and without a cgroup per trial) and
``hyperfine -N --runs RUNS``.  Reported:
the mean measured by each (Assay's timer against hyperfine's), Assay's own cost per
trial (``overhead.bookkeeping_s_per_trial``: from one command's reap to the next one's
spawn) and the wall time of the whole command against hyperfine's.

Prints a Markdown table with the machine, date and load.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LOOP = "import time\nt = time.perf_counter()\nwhile time.perf_counter() - t < 0.05:\n    pass\n"


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
    argv: list[str], runs: int, watch: bool, store: Path, tree: str | None = None
) -> tuple[float, float, float]:
    """(measured mean, own cost per trial, wall seconds) of one ``assay run``; ``tree``
    sets ASSAY_PROCESS_TREE (``scan``: no cgroup per trial)."""
    args = [sys.executable, "-m", "assay", "run", "-q", "--json", "-", "--no-overhead",
            "-r", str(runs), "--ci-width", "0.0001", "--store", str(store), "--fresh"]  # fmt: skip
    if not watch:
        args.append("--no-monitor")
    t0 = time.perf_counter()
    env = dict(os.environ) | ({"ASSAY_PROCESS_TREE": tree} if tree else {})
    done = subprocess.run(
        [*args, "--", *argv], capture_output=True, text=True, check=False, env=env
    )
    wall = time.perf_counter() - t0
    data = json.loads(done.stdout)
    own = data["overhead"]["bookkeeping_s_per_trial"]
    return float(data["pis"][0]["mean"]), float(own), wall


def hyperfine(argv: list[str], runs: int, out: Path) -> tuple[float, float]:
    """(mean, wall seconds) of ``hyperfine -N --runs RUNS`` (no shell, no warm-up)."""
    t0 = time.perf_counter()
    subprocess.run(
        ["hyperfine", "-N", "--runs", str(runs), "--export-json", str(out), "--", " ".join(argv)],
        capture_output=True,
        check=True,
    )
    wall = time.perf_counter() - t0
    return float(json.loads(out.read_text())["results"][0]["mean"]), wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--runs", type=int, default=300)
    args = ap.parse_args()
    if shutil.which("hyperfine") is None:
        sys.exit("needs hyperfine (apt-get install hyperfine)")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        for name, argv in commands(d).items():
            runs = args.runs if name.startswith("no-op") else max(args.runs // 10, 20)
            got: dict[str, list[tuple[float, ...]]] = {"hf": [], "a": [], "aw": [], "as": []}
            for rep in range(args.reps):
                got["hf"].append(hyperfine(argv, runs, d / "hf.json"))
                got["a"].append(assay(argv, runs, False, d / f"a{rep}.db"))
                got["aw"].append(assay(argv, runs, True, d / f"aw{rep}.db"))
                got["as"].append(assay(argv, runs, False, d / f"as{rep}.db", "scan"))
            hf_mean = statistics.median(x[0] for x in got["hf"])
            hf_wall = statistics.median(x[1] for x in got["hf"])
            for key, label in (
                ("a", "assay --no-monitor"),
                ("aw", "assay (watch on)"),
                ("as", "assay --no-monitor, no cgroup (ASSAY_PROCESS_TREE=scan)"),
            ):
                mean = statistics.median(x[0] for x in got[key])
                own = statistics.median(x[1] for x in got[key])
                wall = statistics.median(x[2] for x in got[key])
                rows.append(
                    f"| {name} | {runs} | {label} | {mean * 1e3:.3f} ms | {hf_mean * 1e3:.3f} ms "
                    f"| {(mean - hf_mean) * 1e3:+.3f} ms | {own * 1e3:.2f} ms | {wall:.2f} s "
                    f"| {hf_wall:.2f} s | {wall / hf_wall:.2f} |"
                )
    load = os.getloadavg()
    print(f"Machine: {platform.node()}, {os.cpu_count()} cores, {platform.platform()}; "
          f"{dt.datetime.now().isoformat(timespec='minutes')}; load {load[0]:.2f} "
          f"{load[1]:.2f} {load[2]:.2f}; {args.reps} repetitions, medians\n")  # fmt: skip
    print(
        "| command | runs | tool | Assay's mean | hyperfine's mean | difference "
        "| Assay's own cost/trial | Assay wall | hyperfine wall | wall ratio |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
