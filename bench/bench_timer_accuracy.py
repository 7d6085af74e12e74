"""How close Assay's timer is to a minimal fork/exec/wait4 timer, and hyperfine's (#45).

Run from the repository root (needs ``cc``; hyperfine is used when on PATH)::

    python bench/bench_timer_accuracy.py [--runs 60] [--batches 5] [--busy 0 2]

Three timers measure the same commands, interleaved batch by batch (the tools' order
shuffled in each batch):

* ``assay``: ``assay run --runs N -- CMD`` as a user types it (the bottleneck watch
  and the launch-overhead probe on, as by default); each trial's ``duration`` is read
  from its store;
* ``hyperfine``: ``hyperfine -N --runs N --export-json``, each run's time;
* ``minimal``: a 25-line C program compiled here (``fork``, ``execvp``, ``wait4``,
  ``CLOCK_MONOTONIC`` from before the fork to after the reap), each run's time.

Commands: ``true``, ``sleep 0.01`` and ``sleep 0.05``; conditions: quiet, and with
``--busy K`` busy loops (``sh -c 'while :; do :; done'``) beside them.  Prints a
Markdown table of each tool's median and 90th percentile per command and condition,
and Assay's difference to the minimal timer (the goal: median within 0.2 ms, p90
within 1 ms), with the machine, date and load.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import machine_line

COMMANDS = (["true"], ["sleep", "0.01"], ["sleep", "0.05"])

MINIMAL_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
/* minimal RUNS CMD ARGS...: each run's wall time in seconds, one per line */
int main(int argc, char **argv) {
    int runs = atoi(argv[1]);
    for (int i = 0; i < runs; i++) {
        struct timespec a, b;
        struct rusage ru;
        int status;
        clock_gettime(CLOCK_MONOTONIC, &a);
        pid_t pid = fork();
        if (pid == 0) { execvp(argv[2], argv + 2); _exit(127); }
        wait4(pid, &status, 0, &ru);
        clock_gettime(CLOCK_MONOTONIC, &b);
        printf("%.9f\n", (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9);
    }
    return 0;
}
"""


def build_minimal(tmp: Path) -> Path:
    src, exe = tmp / "minimal.c", tmp / "minimal"
    src.write_text(MINIMAL_C)
    subprocess.run(["cc", "-O2", "-o", str(exe), str(src)], check=True)
    return exe


def time_minimal(exe: Path, cmd: list[str], runs: int) -> list[float]:
    out = subprocess.run([str(exe), str(runs), *cmd], capture_output=True, check=True)
    return [float(x) for x in out.stdout.split()]


def time_hyperfine(cmd: list[str], runs: int, tmp: Path) -> list[float]:
    export = tmp / "hf.json"
    subprocess.run(
        ["hyperfine", "-N", "--runs", str(runs), "--style", "none", "--export-json",
         str(export), " ".join(cmd)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
    )  # fmt: skip
    return [float(t) for t in json.loads(export.read_text())["results"][0]["times"]]


def time_assay(cmd: list[str], runs: int, tmp: Path) -> list[float]:
    store = tmp / "assay.db"
    store.unlink(missing_ok=True)
    subprocess.run(
        [sys.executable, "-m", "assay", "run", "--runs", str(runs), "--store", str(store),
         "-q", "--json", os.devnull, "--", *cmd],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp, check=False,
    )  # fmt: skip
    with sqlite3.connect(store) as con:
        rows = con.execute("SELECT duration FROM trials WHERE status = 'ok' ORDER BY seq")
        got = [float(r[0]) for r in rows]
    con.close()
    return got


@contextmanager
def busy_loops(k: int) -> Iterator[None]:
    procs = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(k)]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=60, help="runs per tool per batch")
    parser.add_argument("--batches", type=int, default=5)
    parser.add_argument("--busy", type=int, nargs="+", default=[0, 2], help="busy loops")
    args = parser.parse_args()
    tools = ["assay", "minimal"] + (["hyperfine"] if shutil.which("hyperfine") else [])
    load = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        exe = build_minimal(tmp)
        timers = {
            "assay": lambda c: time_assay(c, args.runs, tmp),
            "hyperfine": lambda c: time_hyperfine(c, args.runs, tmp),
            "minimal": lambda c: time_minimal(exe, c, args.runs),
        }
        for k in args.busy:
            with busy_loops(k):
                got: dict[tuple[str, str], list[float]] = {}
                for _ in range(args.batches):
                    for cmd in COMMANDS:
                        order = random.sample(tools, len(tools))
                        for tool in order:
                            got.setdefault((" ".join(cmd), tool), []).extend(timers[tool](cmd))
                for cmd in COMMANDS:
                    c = " ".join(cmd)
                    ref = got[(c, "minimal")]
                    for tool in tools:
                        x = np.array(got[(c, tool)]) * 1e3
                        med, p90 = np.median(x), np.percentile(x, 90)
                        dm = med - np.median(ref) * 1e3
                        dp = p90 - np.percentile(ref, 90) * 1e3
                        rows.append((k, c, tool, len(x), med, p90, dm, dp))
    what = f"{args.batches} batches of {args.runs} runs per tool, interleaved"
    print(machine_line(load, what) + "\n")
    print(
        "| busy loops | command | tool | runs | median | p90 | median − minimal | p90 − minimal |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for k, c, tool, n, med, p90, dm, dp in rows:
        print(
            f"| {k} | `{c}` | {tool} | {n} | {med:.2f} ms | {p90:.2f} ms | "
            f"{dm:+.2f} ms | {dp:+.2f} ms |"
        )


if __name__ == "__main__":
    main()
