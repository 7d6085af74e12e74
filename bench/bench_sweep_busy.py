"""The README's main sweep on a busy machine (issue #58, item 4).

Three modes:

    python3 bench/bench_sweep_busy.py grid LOOPS OUT.csv
        measure the whole grid of examples/sqlite-sweep.toml (every setting 3 times, at
        once) beside LOOPS busy ``sh`` loops; one row per trial
    python3 bench/bench_sweep_busy.py rules QUIET.csv BUSY.csv [SEEDS]
        the loop simulated on both grids, seed by seed, with the published stopping rule
        (all 10 validation R² >= 0.9) and the alternatives measured against it: the
        settings it needs and how often its answer (three leading terms, first knee)
        differs from that of the whole quiet grid
    python3 bench/bench_sweep_busy.py main LOOPS [RUNS]
        the main command as a user types it, in a fresh private folder, beside LOOPS
        busy loops started 30 s before (a busy machine has been busy a while): wall
        time, settings measured, why it stopped, leading terms and knee

The grids of 2026-12-05 are in bench/data/sqlite-grid-quiet.csv and
sqlite-grid-load4.csv.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
import assay.designs.sweep as sweep_design
from assay.designs.sweep import analyse, simulate
from assay.privatefs import private_temp
from machine import machine_line

ROOT = Path(__file__).resolve().parents[1]
STUDY = ROOT / "examples" / "sqlite-sweep.toml"
PARAMS = ["journal_mode", "synchronous", "batch", "value_size"]


@contextlib.contextmanager
def busy_loops(n: int, settle_s: float) -> Iterator[None]:
    procs = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(n)]
    try:
        if n:
            time.sleep(settle_s)
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def grid(loops: int, out: Path) -> None:
    text = STUDY.read_text().replace("start = 0.05", "start = 1.0")
    text = text.replace("max_time = 600", "max_time = 3000")
    with private_temp("assay-bench-busy-") as folder, busy_loops(loops, 30):
        study = Path(folder) / "grid.toml"
        study.write_text(text)
        subprocess.run(["assay", "sweep", str(study), "-q", "--busy", "continue"], check=False)
        trials = Path(folder) / "trials.csv"
        subprocess.run(
            ["assay", "export", str(Path(folder) / "grid.assay.db"), "-o", str(trials)], check=True
        )
        d = pd.read_csv(trials)
        d = d.rename(columns={f"setting.{p}": p for p in PARAMS})
        d["throughput"] = d["reading.throughput"]
        d[[*PARAMS, "throughput"]].to_csv(out, index=False)


def _logged(path: Path) -> pd.DataFrame:
    d = pd.read_csv(path)
    d["y"] = np.log(d["throughput"])
    return d[[*PARAMS, "y"]]


def _answer(a: Any) -> tuple[frozenset[str], str]:
    top = sorted(a.significant, key=lambda r: -r.pct_var)[:3]
    knee = next((f"{p.param} {p.kind} at {p.value:g}" for p in a.points), "none")
    return frozenset(r.name for r in top), knee


RULES: dict[str, Callable[[np.ndarray, float], bool]] = {
    "published: all 10 >= 0.9": lambda a, t: bool(a.min() >= t),
    "9 of 10 >= 0.9": lambda a, t: bool(np.sort(a)[1] >= t),
    "mean of 10 >= 0.9": lambda a, t: bool(a.mean() >= t),
    "all 10 >= 0.88 (0.9 x ceiling 0.98)": lambda a, t: bool(a.min() >= 0.88),
}


def rules(quiet: Path, busy: Path, seeds: int) -> None:
    load0 = os.getloadavg()
    truth = _answer(analyse(_logged(quiet), PARAMS, "y", replicates=True))
    print(f"whole quiet grid: {sorted(truth[0])}, {truth[1]}\n")
    print("| rule | data | settings (median [min, max]) | answer differs |")
    print("|---|---|---|---|")
    original = sweep_design._all_reach
    try:
        for name, rule in RULES.items():

            def reach(r2: Any, threshold: float, rule: Any = rule) -> bool:
                a = np.asarray(r2, dtype=float)
                return bool(len(a) and np.all(np.isfinite(a)) and rule(a, threshold))

            sweep_design._all_reach = reach
            for label, path in (("quiet", quiet), ("4 loops", busy)):
                d = _logged(path)
                used, wrong = [], 0
                for s in range(seeds):
                    sim = simulate(d, PARAMS, "y", seed=s, reference=None)
                    used.append(sim.steps[-1].n_measured)
                    wrong += _answer(sim.analysis) != truth
                print(
                    f"| {name} | {label} | {np.median(used):.0f} [{min(used)}, {max(used)}] "
                    f"| {wrong}/{seeds} |"
                )
    finally:
        sweep_design._all_reach = original
    # the busy stop: the settings of the last step within the first quarter (64 of 315),
    # analysed as the study does then (repetitions as replicates, form by lack of fit)
    for label, path in (("quiet", quiet), ("4 loops", busy)):
        d = _logged(path)
        wrong = 0
        for s in range(seeds):
            sim = simulate(
                d, PARAMS, "y", seed=s, stop_at_threshold=False, max_rate=64 / 315, reference=None
            )
            rows = d.merge(sim.settings[PARAMS], on=PARAMS)
            got = analyse(rows, PARAMS, "y", form=sweep_design.LACK_OF_FIT, replicates=True)
            wrong += _answer(got) != truth
        print(f"| busy stop (provisional) | {label} | 64 | {wrong}/{seeds} |")
    print("\n" + machine_line(load0, f"bench_sweep_busy.py rules, {seeds} seeds"))


def main_command(loops: int, runs: int) -> None:
    load0 = os.getloadavg()
    print("| beside it | wall | settings | stopped | leading three | knee |")
    print("|---|---|---|---|---|---|")
    for _ in range(runs):
        with private_temp("assay-bench-busy-") as folder, busy_loops(loops, 30):
            study = Path(folder) / STUDY.name
            shutil.copy(STUDY, study)
            t0 = time.monotonic()
            subprocess.run(
                ["assay", "sweep", str(study), "-q", "--json", str(Path(folder) / "r.json")],
                check=False,
                stdout=subprocess.DEVNULL,
            )
            wall = time.monotonic() - t0
            doc = json.loads((Path(folder) / "r.json").read_text())
        sig = sorted(doc["analysis"]["significant"], key=lambda r: -r["pct_var"])[:3]
        pts = doc["analysis"]["important_points"]
        knee = f"{pts[0]['param']} {pts[0]['kind']} at {pts[0]['value']}" if pts else "none"
        print(
            f"| {loops} loops | {wall:.0f} s | {doc['settings_measured']} of 315 | "
            f"{doc['steps'][-1]['reason']} | {', '.join(r['term'] for r in sig)} | {knee} |"
        )
    print("\n" + machine_line(load0, f"bench_sweep_busy.py main {loops} {runs}"))


if __name__ == "__main__":
    mode, *args = sys.argv[1:]
    if mode == "grid":
        grid(int(args[0]), Path(args[1]))
    elif mode == "rules":
        rules(Path(args[0]), Path(args[1]), int(args[2]) if len(args) > 2 else 20)
    elif mode == "main":
        main_command(int(args[0]), int(args[1]) if len(args) > 1 else 1)
    else:
        sys.exit(__doc__)
