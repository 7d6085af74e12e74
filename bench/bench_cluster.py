"""Running trials on a Dask cluster: dispatch overhead per trial, and the speed-up of a
batch of fixed-duration trials with 1, 2, 4 and 8 workers.

Run from the repository root::

    python bench/bench_cluster.py [--trials 200] [--sleep 0.5] [--count 32]

Both parts go through the code a sweep uses: :class:`assay.studies.settings.SettingsRunner`
measures a batch of settings (one trial each) with the executor that ``--workers N``
opens (:func:`assay.execute.cluster.open_executor`), and commits every trial to a real
SQLite store as it returns.

* Dispatch overhead: a batch of ``--trials`` trials of ``true`` on one worker (so nothing
  runs in parallel); overhead per trial = (wall time of the batch - the trials' own
  measured durations) / trials: driver -> scheduler -> worker -> driver -> store.  The
  same with the local executor (no Dask) for comparison.
* Speed-up: ``--count`` trials of ``sh -c 'sleep S'`` with 1, 2, 4 and 8 workers (sleep
  needs no CPU, so the 2 cores of this machine do not cap it); speed-up = T(1) / T(k), efficiency
  = speed-up / k.  The cluster's start-up is not counted (it is paid once per study).

Prints Markdown tables with the machine, date and load.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path

from assay.execute.cluster import open_executor
from assay.execute.environment import cpu_model, usable_cores
from assay.spec import parse_spec_data
from assay.studies.settings import SettingsRunner, SettingsSession


def _spec(folder: Path, command: list[str]) -> object:
    return parse_spec_data(
        {
            "study": {"name": "bench-cluster", "store": str(folder / "b.assay.db")},
            "benchmark": {"command": [*command, "{i}"]},
            "params": {"i": 0},
        },
        str(folder / "b.toml"),
    )


def batch(command: list[str], n: int, workers: int | None) -> tuple[float, float]:
    """Wall time of one batch of ``n`` trials, and the sum of their measured durations."""
    folder = Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    try:
        spec = _spec(folder, command)
        with open_executor(workers=workers, monitor=False) as executor:
            runner = SettingsRunner(spec, spec.store_path(), executor=executor)  # type: ignore[attr-defined]
            if workers is not None:  # warm every worker up (imports) before timing
                runner.session(lambda s: s.measure([{"i": -k} for k in range(1, workers + 1)], 1))

            def body(s: SettingsSession) -> tuple[float, float]:
                t0 = time.perf_counter()
                got = s.measure([{"i": k} for k in range(n)], 1)
                wall = time.perf_counter() - t0
                return wall, sum(t.duration or 0.0 for t in got)

            return runner.session(body)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=200, help="dispatch: trials of 'true'")
    ap.add_argument("--sleep", type=float, default=0.5, help="speed-up: seconds per trial")
    ap.add_argument("--count", type=int, default=32, help="speed-up: trials per batch")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4, 8])
    args = ap.parse_args()

    print(
        f"machine: {cpu_model()}, {usable_cores()} cores, Python {platform.python_version()}; "
        f"{dt.date.today()}; load {os.getloadavg()[0]:.2f} at start"
    )
    print("\n| executor | trials | wall s | trials' own s | overhead ms/trial |")
    print("|---|---:|---:|---:|---:|")
    true = [shutil.which("true") or "/bin/true"]
    for name, workers in (("local (sequential)", None), ("Dask, 1 worker", 1)):
        wall, own = batch(true, args.trials, workers)
        over = (wall - own) / args.trials * 1e3
        print(f"| {name} | {args.trials} | {wall:.2f} | {own:.2f} | {over:.1f} |")

    print(f"\n| workers | trials of sleep {args.sleep:g} | wall s | speed-up | efficiency |")
    print("|---:|---:|---:|---:|---:|")
    # sh (1 ms to start) rather than python (~40 ms of CPU): the trials, not their
    # interpreters, should fill the workers on a 2-core machine; "{i}" lands in $1, unused
    sleep = ["sh", "-c", f"sleep {args.sleep}", "sh"]
    t1: float | None = None  # the wall time with one worker
    for k in sorted(args.workers):
        wall, _ = batch(sleep, args.count, k)
        if t1 is None:
            t1 = wall * k  # exact when k == 1; else the ideal sequential time
        speed = t1 / wall
        print(f"| {k} | {args.count} | {wall:.2f} | {speed:.2f} | {speed / k:.2f} |")
    print(f"\nload {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
