"""Kill campaigns for every design (issue #13, "Show"): SIGKILL ``assay compare``,
``order``, ``sweep`` and ``knobs`` at random moments N times each, resume, and check that
every planned trial is stored exactly once, the store's integrity, and that the final
``--json`` equals an uninterrupted run's.  (``assay run``: bench/bench_kill_safety.py.)

Deterministic readings, as in tests/test_kill_safety.py: each trial's benchmark counts
the study's committed trials in the store (its own seq when the runner is right) and
prints a reading that is a fixed function of that count and of its label (variant,
test or setting).  A trial stored twice, lost, or measured under the wrong seq changes
the readings, so the analysis differs from the reference.

The kills land uniformly between 0.2 s and 1.1 × the reference's wall time after the
start: during start-up, trials, commits and the final report.  Only ``assay`` is killed
(its benchmark is left running, as after a crash): a resume must stop it.  One launch
in each campaign adds ``--fresh`` (the study archived and started again).

With ``--workers N`` the studies run on a local Dask cluster of N workers: trials run
side by side, so the reading depends on the label alone, and after killing ``assay``
the harness kills its process group too (the cluster's processes) before resuming.

Run: python bench/bench_kill_campaigns.py [--kills 20] [--seed 1] [--designs compare,order]
     [--workers 2]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import math
import os
import platform
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STORE = "study.assay.db"
STUDY = "kc"

# The trials stored: those committed and those still in the study's journal (a trial
# that ends soon after a commit waits there for the next: assay.store.queue_trial), as
# the set of their seqs (a trial being moved from one to the other counts once).
BENCH = f"""
import glob, json, sqlite3, sys, time
store, label = sys.argv[1], " ".join(sys.argv[2:])
db = sqlite3.connect(store, timeout=30)
seqs = {{r[0] for r in db.execute(
    "SELECT t.seq FROM trials t JOIN studies s ON s.id = t.study_id WHERE s.name = ?",
    ({STUDY!r},),
)}}
db.close()
for journal in glob.glob(glob.escape(store) + ".*.pending"):
    with open(journal, encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                seqs.add(json.loads(line)["seq"])
            except (ValueError, KeyError, TypeError):
                pass  # a line cut short by a kill
n = len(seqs)
time.sleep(0.03)
base = 10.0 + sum(ord(c) for c in label) % 23 / 10
print(f"value={{base + (n * 7919 % 101) / 1000:.6f}}")
"""

# On a cluster trials run side by side, so a count of stored trials is not a trial's
# seq: there, the reading is a fixed function of the label alone.
BENCH_CLUSTER = """
import sys, time
time.sleep(0.03)
label = " ".join(sys.argv[2:])
print(f"value={10.0 + sum(ord(c) for c in label) % 23 / 10:.6f}")
"""

PI = """
[[pi]]
name = "v"
source = "regex"
pattern = 'value=([0-9.]+)'
"""


def _cmd(*label: str) -> str:
    return json.dumps([sys.executable, "bench.py", STORE, *label])


STUDIES: dict[str, str] = {
    "compare": f"""
[study]
name = "{STUDY}"
[benchmark]
command = {_cmd("A")}
cwd = "."
[[variant]]
name = "A"
[[variant]]
name = "B"
command = {_cmd("B")}
[[variant]]
name = "C"
command = {_cmd("C")}
[stop]
max_rounds = 14
ci_width = 1e-9
{PI}""",
    "order": f"""
[study]
name = "{STUDY}"
[benchmark]
command = {_cmd("A")}
cwd = "."
[[test]]
name = "A"
[[test]]
name = "B"
command = {_cmd("B")}
[order]
runs = 3
repetitions = 2
seed = 1
{PI}""",
    "sweep": f"""
[study]
name = "{STUDY}"
[benchmark]
command = {_cmd("{a}", "{b}")}
cwd = "."
[sweep]
repetitions = 2
start = 0.25
step = 0.25
r2 = 0.999
seed = 0
[sweep.params]
a = [1, 2, 3, 4]
b = ["x", "y", "z"]
{PI}""",
    "knobs": f"""
[study]
name = "{STUDY}"
[benchmark]
command = {_cmd("{k1}", "{k2}")}
cwd = "."
[[knob]]
name = "k1"
type = "int"
min = 0
max = 100
default = 50
[[knob]]
name = "k2"
type = "categorical"
values = ["p", "q", "r"]
default = "p"
[knobs]
samples = 20
validation_samples = 4
trees = 20
top_k = 1
seed = 0
{PI}""",
}

# keys whose values differ between any two runs (times, paths, resumption, machine)
VOLATILE = {
    "store",
    "elapsed_s",
    "measured_time_s",
    "overhead",
    "environment",
    "resources",
    "resumed",
    "warnings",
    "wall_s",
    "bookkeeping_s_per_trial",
    "bookkeeping_s_median",
    "sources",
    "session",  # this invocation's own time accounting (a resume's is its own)
}


def normalise(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: normalise(v) for k, v in data.items() if k not in VOLATILE}
    if isinstance(data, list):
        return [normalise(v) for v in data]
    return data


def same(a: Any, b: Any) -> bool:
    """Equal, floats to 1e-9 relative (a random forest's sums differ in the last bits
    from run to run when its trees are fitted in parallel)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return bool(a == b)


def differences(a: Any, b: Any, where: str = "") -> list[str]:
    """The paths at which ``a`` and ``b`` differ (as :func:`same` judges), for --verbose."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{where}.{k}: only in one" for k in a.keys() ^ b.keys()]
        for k in a.keys() & b.keys():
            out += differences(a[k], b[k], f"{where}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            out += differences(x, y, f"{where}[{i}]")
        return out
    return [] if same(a, b) else [f"{where}: {str(a)[:120]} != {str(b)[:120]}"]


def argv(design: str, *extra: str, workers: int = 0) -> list[str]:
    base = [sys.executable, "-m", "assay.cli", design, "study.toml", "-q"]
    if workers:
        base += ["--workers", str(workers)]
    if design != "knobs":  # knobs has no bottleneck watch option
        base.append("--no-monitor")
    if design in ("compare", "order"):
        base.append("--no-overhead")
    if design == "compare":  # the random order within each cycle (order: in the file)
        base += ["--seed", "3"]
    return [*base, "--json", "result.json", *extra]


def prepare(directory: Path, design: str, workers: int = 0) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "bench.py").write_text(BENCH_CLUSTER if workers else BENCH, encoding="utf-8")
    (directory / "study.toml").write_text(STUDIES[design], encoding="utf-8")


def finish(directory: Path, design: str, workers: int = 0) -> tuple[int, float]:
    t0 = time.perf_counter()
    done = subprocess.run(
        argv(design, workers=workers), cwd=directory, capture_output=True, timeout=900
    )
    if done.returncode not in (0, 5):
        raise RuntimeError(f"{design} exited {done.returncode}: {done.stderr[-2000:]!r}")
    return done.returncode, time.perf_counter() - t0


def stored(directory: Path) -> tuple[str, list[tuple[int, int]]]:
    with sqlite3.connect(directory / STORE) as db:
        check = db.execute("PRAGMA integrity_check").fetchone()[0]
        rows = db.execute(
            "SELECT t.run, t.seq FROM trials t JOIN studies s ON s.id = t.study_id "
            "WHERE s.name = ? ORDER BY t.run, t.seq",
            (STUDY,),
        ).fetchall()
    return str(check), [(int(r), int(s)) for r, s in rows]


@dataclass
class Campaign:
    design: str
    kills: int
    trials: int
    expected: int
    duplicates: int
    integrity: str
    equal: bool
    wall_ref_s: float
    status: int


def campaign(
    root: Path,
    design: str,
    kills: int,
    rng: random.Random,
    log: Callable[[str], None],
    workers: int = 0,
) -> Campaign:
    ref_dir = root / f"{design}-ref"
    prepare(ref_dir, design, workers)
    _, wall = finish(ref_dir, design, workers)
    reference = normalise(json.loads((ref_dir / "result.json").read_text()))
    _, ref_trials = stored(ref_dir)
    work = root / design
    prepare(work, design, workers)
    done = 0
    fresh_at = kills // 3
    while done < kills:
        extra = ("--fresh",) if done == fresh_at else ()
        proc = subprocess.Popen(
            argv(design, *extra, workers=workers),
            cwd=work,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        delay = rng.uniform(0.2, 1.1 * wall)
        try:
            proc.wait(timeout=delay)
            log(f"  {design}: launch ended before the kill at {delay:.2f} s")
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)  # assay only: its benchmark keeps running
            proc.wait()
            if workers:  # a local cluster's scheduler and workers die with their driver
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
            done += 1
            log(f"  {design}: kill {done} at {delay:.2f} s{' (--fresh)' if extra else ''}")
    status, _ = finish(work, design, workers)
    final = normalise(json.loads((work / "result.json").read_text()))
    integrity, trials = stored(work)
    for diff in differences(final, reference)[:12]:
        log(f"  {design}: final JSON differs at {diff}")
    return Campaign(
        design=design + (f" --workers {workers}" if workers else ""),
        kills=done,
        trials=len(trials),
        expected=len(ref_trials),
        duplicates=len(trials) - len(set(trials)),
        integrity=integrity,
        equal=same(final, reference),
        wall_ref_s=wall,
        status=status,
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--designs", default="compare,order,sweep,knobs")
    ap.add_argument("--workers", type=int, default=0, help="run on a local Dask cluster")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    rng = random.Random(args.seed)

    def log(line: str) -> None:
        if args.verbose:
            print(line, flush=True)

    load = os.getloadavg()
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}; {datetime.date.today()}; "
        f"load {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}"
    )
    rows = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="assay-kills-") as tmp:
        for design in args.designs.split(","):
            rows.append(campaign(Path(tmp), design, args.kills, rng, log, args.workers))
    print()
    print(
        "| design | SIGKILLs | trials stored / planned | duplicates | integrity | "
        "final JSON = uninterrupted | exit |"
    )
    print("|---|---|---|---|---|---|---|")
    for c in rows:
        print(
            f"| {c.design} | {c.kills} | {c.trials} / {c.expected} | {c.duplicates} | "
            f"{c.integrity} | {'yes' if c.equal else 'NO'} | {c.status} |"
        )
    print(f"\nwall time {time.perf_counter() - t0:.0f} s; seed {args.seed}")
    ok = all(
        c.trials == c.expected and not c.duplicates and c.integrity == "ok" and c.equal
        for c in rows
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
