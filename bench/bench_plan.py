"""``assay plan`` against what the studies then did (#62, part 2).

Run from the repository root::

    python bench/bench_plan.py [--repetitions 1]

For a run, a sweep, a comparison and a knob study on the embedded default (SQLite),
each in a fresh private folder: ``assay plan STUDY --json`` (no earlier store, so its
pilot runs), then the study itself (``--json``); prints the planned trials (least …
most, or the run's estimate from the pilot's spread), the trials run, the planned and
the real wall seconds a trial, and the planned time for the trials actually run ÷ the
study's real wall time (1.0: exact), and whether the trials run lie in the planned
range.  A Markdown table with the machine, date and load.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from assay.privatefs import private_temp
from machine import machine_line

REPO = Path(__file__).resolve().parents[1]

KNOBS = """
[study]
name = "sqlite-knobs"
[benchmark]
command = ["python3", "-m", "assay.targets", "sqlite", "run", "--workload", "kv",
           "--rows", "1000", "--ops", "300", "--batch", "{batch}", "--value-size", "256",
           "--knob", "journal_mode={journal_mode}", "--knob", "synchronous={synchronous}"]
[[pi]]
name = "throughput"
unit = "ops/s"
direction = "higher"
source = "json"
path = "pi.throughput"
[[knob]]
name = "journal_mode"
type = "categorical"
values = ["DELETE", "WAL", "MEMORY"]
default = "DELETE"
[[knob]]
name = "synchronous"
type = "categorical"
values = ["OFF", "NORMAL", "FULL"]
default = "FULL"
[[knob]]
name = "batch"
type = "int"
min = 1
max = 64
log = true
default = 1
[knobs]
samples = 24
top_k = 2
"""

STUDIES = [
    ("run", "examples/run-sqlite-insert.toml", "run"),
    ("sweep", "examples/sqlite-sweep.toml", "sweep"),
    ("compare", "examples/artifact/sqlite-journal-claims.toml", "compare"),
    ("knobs", None, "knobs"),
]


def assay(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "assay", *args], cwd=cwd, capture_output=True, text=True
    )


def one(kind: str, source: str | None, command: str, folder: Path) -> str:
    study = folder / "study.toml"
    if source is None:
        study.write_text(KNOBS)
    else:
        shutil.copy(REPO / source, study)
    planned = assay("plan", str(study), "--json", "plan.json", cwd=folder)
    if planned.returncode != 0:
        return f"| {kind} | plan failed: {planned.stderr.strip()[-200:]} |"
    plan = json.loads((folder / "plan.json").read_text())
    began = time.perf_counter()
    ran = assay(command, str(study), "-q", "--json", "result.json", cwd=folder)
    wall = time.perf_counter() - began  # what the user waits, the command's start included
    doc = json.loads((folder / "result.json").read_text())
    trials = int((doc.get("trials") or {}).get("total") or len(_all_trials(folder)))
    t = plan["trials"]
    per_plan = float(plan["per_trial_s"])
    est = per_plan * trials
    inside = t["least"] <= trials <= (t["most_in_budget"] or t["most"])
    typical = f", est. {t['typical']}" if t.get("typical") not in (None, t["least"]) else ""
    span = f"{t['least']}" if t["least"] == t["most"] else f"{t['least']}–{t['most_in_budget']}"
    return (
        f"| {kind} | {span}{typical} | {trials} ({'inside' if inside else 'OUTSIDE'}) | "
        f"{per_plan:.3f} | {wall / trials:.3f} | {est / wall:.2f} | exit {ran.returncode} |"
    )


def _all_trials(folder: Path) -> list[int]:
    import sqlite3

    store = next(folder.glob("*.assay.db"))
    with sqlite3.connect(store) as db:
        return [r[0] for r in db.execute("SELECT id FROM trials")]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repetitions", type=int, default=1)
    args = p.parse_args()
    start = os.getloadavg()
    print("| study | planned trials | trials run | planned s/trial | real s/trial "
          "| planned ÷ real time | |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for _ in range(args.repetitions):
        for kind, source, command in STUDIES:
            with private_temp("assay-bench-plan-") as folder:
                print(one(kind, source, command, folder), flush=True)
    print("\n" + machine_line(start, f"bench_plan.py {' '.join(sys.argv[1:])}"))


if __name__ == "__main__":
    main()
