"""Kill safety: SIGKILL ``assay run`` at random moments N times, resume each time, then
check that every committed trial is in the store exactly once and that the result
equals an uninterrupted run's.

The harness is the one in tests/test_kill_safety.py (see its docstring for the study
and the kill phases). Prints the figures for bench/RESULTS.md.

Run: python bench/bench_kill_safety.py [--kills 50] [--seed 2] [--verbose]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

from assay.execute.environment import cpu_model  # noqa: E402
from test_kill_safety import MAX_ROUNDS, kill_harness, reference_run  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=50)
    ap.add_argument("--seed", type=int, default=2)
    ap.add_argument("--max-rounds", type=int, default=MAX_ROUNDS)
    ap.add_argument("--verbose", action="store_true", help="one line per kill")
    args = ap.parse_args()

    print(
        f"machine: {cpu_model()}, {os.cpu_count()} cores, {platform.system()} "
        f"{platform.release()}, Python {platform.python_version()}; "
        f"date {datetime.date.today()}"
    )
    with tempfile.TemporaryDirectory(prefix="assay-kill-") as tmp:
        ref = reference_run(Path(tmp) / "uninterrupted", args.max_rounds)
        print(f"uninterrupted run: {ref.trials} trials in {ref.wall_s:.1f} s")
        t0 = time.perf_counter()
        rep = kill_harness(
            Path(tmp) / "killed",
            ref,
            kills=args.kills,
            seed=args.seed,
            max_rounds=args.max_rounds,
            log=print if args.verbose else None,
        )
        wall = time.perf_counter() - t0
    problems = rep.problems()
    phases = ", ".join(f"{p} {rep.phases[p]}" for p in ("startup", "trial", "commit"))
    print(
        f"""
| figure | value |
|---|---|
| SIGKILLs survived (resumed after each) | {rep.kills} of {rep.kills_planned} \
(+{rep.finished_early} runs that ended before the chosen moment) |
| kill phases | {phases} |
| 'commit' kills: trial not yet stored / already stored | \
{rep.killed_before_commit} / {rep.killed_after_commit} |
| benchmarks left running by a SIGKILLed assay (reaped by the harness) | \
{rep.benchmarks_orphaned} |
| trials committed per killed session (min / mean / max) | \
{min(rep.trials_per_kill)} / {sum(rep.trials_per_kill) / len(rep.trials_per_kill):.2f} / \
{max(rep.trials_per_kill)} |
| final run exit code | {rep.final_returncode} |
| trials expected / found | {rep.trials_expected} / {rep.trials_found} |
| duplicates | {rep.duplicates} |
| lost (missing seqs, or committed then gone/changed) | \
{len(rep.seqs_missing) + rep.lost} |
| trials whose output does not belong to their seq | {rep.wrong_readings} |
| PRAGMA integrity_check | {rep.integrity} |
| analysis equals the uninterrupted run's (analyse / --json pis) | \
{rep.analysis_equal} / {rep.result_equal} |
| wall time (kills + final run) | {wall:.1f} s |
"""
    )
    if problems:
        print("PROBLEMS:\n  " + "\n  ".join(problems))
        return 1
    print("OK: every finished trial stored exactly once; result identical.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
