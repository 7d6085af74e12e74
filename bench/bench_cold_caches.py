"""What Assay's work between two trials costs after the process did something else.

Run from the repository root::

    python bench/bench_cold_caches.py [--reps 30]

Times one analysis of 60 readings (``analyze_pi``, the work between two trials of
``assay run``) and one trial's store commit (``Store.add_trial``) right after the process
slept, or spun in a busy loop, for 0–50 ms: the gap between two trials of a command
that long.  If the cost grows with the pause even when the process spins, what is lost
is the caches' content (another tenant's work on a shared machine, the kernel's),
not the CPU's idle state.  Prints a Markdown table with the machine, date and load.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from assay.designs.run_until_ci import RoundData, analyze_pi
from assay.spec import PISpec, StopSpec
from assay.store import Store, TrialRecord
from machine import machine_line

PAUSES_MS = (0, 1, 2, 5, 10, 20, 50)


def _pause(ms: float, spin: bool) -> None:
    if not spin:
        time.sleep(ms / 1000)
        return
    end = time.perf_counter() + ms / 1000
    while time.perf_counter() < end:
        pass


def _median_after(work: Callable[[], object], ms: float, spin: bool, reps: int) -> float:
    took = []
    for _ in range(reps):
        _pause(ms, spin)
        t0 = time.perf_counter()
        work()
        took.append(time.perf_counter() - t0)
    return statistics.median(took)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=30)
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    rounds = [RoundData(reading=float(x), duration=0.05) for x in rng.normal(50, 1, 60)]
    pi, stop = PISpec(name="wall_time"), StopSpec(min_samples=100)

    def analysis() -> object:
        return analyze_pi(pi, rounds, stop, locate=False)

    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "cold.assay.db")
        study = store.open_study("cold", "h", {})
        seq = iter(range(10**9))

        def commit() -> object:
            rec = TrialRecord(
                seq=next(seq),
                status="ok",
                argv=["sleep", "0.05"],
                duration=0.05,
                readings={"wall_time": 0.05},
            )
            return store.add_trial(study, rec)

        load0 = os.getloadavg()
        rows = []
        for ms in PAUSES_MS:
            row = [f"{ms}"]
            for work in (analysis, commit):
                for spin in (False, True):
                    row.append(f"{_median_after(work, ms, spin, args.reps) * 1e6:.0f} µs")
            rows.append(row)
        store.close()
    print(machine_line(load0, f"medians of {args.reps}") + "\n")
    print(
        "| pause (ms) | analysis after sleep | analysis after busy loop "
        "| store commit after sleep | store commit after busy loop |"
    )
    print("|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
