"""Wall time to an answer, side by side with hyperfine and pyperf (issue #17).

Run from the repository root (needs ``hyperfine``, Debian package; ``pyperf`` is
included when importable: ``pip install pyperf``)::

    python bench/bench_time_to_answer.py [--reps 3]

For each command (a no-op, ``sleep 0.05``, a 50 ms Python loop, a SQLite insert of
2,000 rows in one transaction) and each repetition, interleaved, each tool as a user
runs it, with its defaults:

- ``assay run -- CMD``: until the mean's 95% CI is within ±5% (the bottleneck watch on,
  the launch probe as cached);
- ``hyperfine -N CMD``: at least 10 runs and 3 s, a mean and a standard deviation (no
  interval, no stopping rule);
- ``python -m pyperf command -- CMD``: 20 worker processes, each a warm-up and 3 values
  of as many runs as make 0.1 s, a mean and a standard deviation;
- ``hyperfine -N --runs R CMD`` with R the runs ``assay run`` used in that repetition:
  the same runs without a stopping rule, for the ratio the issue asks for.

Reported, medians over the repetitions: the runs of the command each tool made, its
wall time (start-up and report included), its mean with its uncertainty as it gives
it, and the wall times against hyperfine's.  Pilot is not included: it is not packaged
here and this machine reaches no source forge.  Prints a Markdown table with the
machine, date and load.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_overhead import commands
from machine import machine_line

SQLITE_INSERT = """\
import os, sqlite3, tempfile
with tempfile.TemporaryDirectory() as d:
    db = sqlite3.connect(os.path.join(d, "b.db"), isolation_level=None)
    db.execute("CREATE TABLE kv (k INTEGER PRIMARY KEY, v BLOB)")
    db.execute("BEGIN")
    db.executemany("INSERT INTO kv VALUES (?, ?)", ((k, b"x" * 100) for k in range(2000)))
    db.execute("COMMIT")
"""


def _timed(argv: list[str]) -> tuple[subprocess.CompletedProcess[str], float]:
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    return done, time.perf_counter() - t0


def assay(argv: list[str], store: Path) -> dict[str, Any]:
    run = [sys.executable, "-m", "assay", "run", "-q", "--json", "-"]
    done, wall = _timed([*run, "--store", str(store), "--fresh", "--", *argv])
    data = json.loads(done.stdout)
    pi = data["pis"][0]
    return {
        "runs": int(data["trials"]["total"]),
        "wall": wall,
        # no valid CI (the mean moved, or the budget ran out): counted in the last column
        "mean": math.nan if pi["mean"] is None else float(pi["mean"]),
        "spread": math.nan if pi["half_width"] is None else float(pi["half_width"]),
        "status": done.returncode,
    }


def hyperfine(argv: list[str], out: Path, runs: int | None = None) -> dict[str, Any]:
    fixed = ["--runs", str(runs)] if runs else []
    done, wall = _timed(
        ["hyperfine", "-N", *fixed, "--export-json", str(out), "--", " ".join(argv)]
    )
    res = json.loads(out.read_text())["results"][0]
    return {
        "runs": len(res["times"]),
        "wall": wall,
        "mean": float(res["mean"]),
        "spread": float(res["stddev"] or 0.0),
        "status": done.returncode,
    }


def pyperf(argv: list[str], out: Path) -> dict[str, Any]:
    out.unlink(missing_ok=True)
    done, wall = _timed(
        [sys.executable, "-m", "pyperf", "command", "-q", "-o", str(out), "--", *argv]
    )
    bench = json.loads(out.read_text())["benchmarks"][0]
    loops_default = bench.get("metadata", {}).get("loops", 1)
    runs, values = 0, []
    for run in bench["runs"]:
        loops = run.get("metadata", {}).get("loops", loops_default)
        warmups = run.get("warmups", [])
        # a calibration run's warm-ups carry their own loop counts
        runs += sum(int(w[0]) for w in warmups) if warmups else 0
        runs += len(run.get("values", [])) * int(loops)
        values += run.get("values", [])
    return {
        "runs": runs,
        "wall": wall,
        "mean": statistics.fmean(values),
        "spread": statistics.stdev(values),
        "status": done.returncode,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    if shutil.which("hyperfine") is None:
        sys.exit("needs hyperfine (apt-get install hyperfine)")
    with_pyperf = importlib.util.find_spec("pyperf") is not None
    rows = []
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        cmds = commands(d)
        (d / "sqlite_insert.py").write_text(SQLITE_INSERT)
        cmds["SQLite insert, 2,000 rows"] = [sys.executable, str(d / "sqlite_insert.py")]
        for name, argv in cmds.items():
            got: dict[str, list[dict[str, Any]]] = {"assay": [], "hf": [], "hf_same": []}
            got["pyperf"] = []
            for rep in range(args.reps):
                a = assay(argv, d / f"a{rep}-{len(rows)}.db")
                got["assay"].append(a)
                got["hf"].append(hyperfine(argv, d / "hf.json"))
                got["hf_same"].append(hyperfine(argv, d / "hf.json", a["runs"]))
                if with_pyperf:
                    got["pyperf"].append(pyperf(argv, d / "pyperf.json"))
            hf_wall = statistics.median(x["wall"] for x in got["hf"])
            labels = {
                "assay": "assay run (±5% @ 95%)",
                "hf": "hyperfine (defaults)",
                "pyperf": "pyperf command (defaults)",
                "hf_same": "hyperfine, assay's runs",
            }
            for key, label in labels.items():
                if not got[key]:
                    continue
                med = {k: statistics.median(x[k] for x in got[key]) for k in ("runs", "wall")}
                mean = statistics.median(x["mean"] for x in got[key])
                spread = statistics.median(x["spread"] for x in got[key])
                what = "CI ±" if key == "assay" else "sd"
                failed = sum(1 for x in got[key] if x["status"] != 0)
                rows.append(
                    f"| {name} | {label} | {med['runs']:.0f} | {med['wall']:.2f} s "
                    f"| {mean * 1e3:.3f} ms ({what} {spread * 1e3:.3f} ms) "
                    f"| {med['wall'] / hf_wall:.2f} | {failed} |"
                )
            pairs = zip(got["assay"], got["hf_same"], strict=True)
            same = [a["wall"] / h["wall"] for a, h in pairs]
            rows.append(
                f"| {name} | assay run / hyperfine with the same runs | | | "
                f"| {statistics.median(same):.2f} | |"
            )
    what = f"{args.reps} repetitions, medians" + ("" if with_pyperf else "; pyperf not installed")
    print(machine_line(load0, what) + "\n")
    print(
        "| command | tool | runs | wall time | mean (uncertainty) "
        "| wall / hyperfine's default | non-zero exits |"
    )
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
