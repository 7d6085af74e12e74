"""Peak memory of a trial against the size of its output, and what holding the process
tree costs per trial (issue #13, items 11 and 5).

Memory: each trial runs in a fresh Python process that calls ``run_trial`` (a regex PI
read from the end of stdout, as a user's study would) on ``yes ... | head -c N``
followed by ``tps = 42.5``; that process then reports its own peak RSS
(``VmHWM`` in ``/proc/self/status``: ``ru_maxrss`` would carry the parent's peak
across ``exec``).  ``--src`` measures another checkout, e.g. the
previous version (``git archive HEAD src | tar -x -C /tmp/old``).

Cost: the wall time of ``run_command(["true"])`` (the whole call, and the measured
spawn-to-reap duration) with the cgroup and with the subreaper + /proc scan, vs a bare
``subprocess.run``, alternating.

Run: python bench/bench_output_rss.py [--sizes 1M,100M,1G] [--src DIR] [--launches 300]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = textwrap.dedent(
    """
    import sys, time
    from assay.execute.trial import TrialJob, TrialRequest, run_trial
    from assay.spec import PISpec
    n = int(sys.argv[1])
    script = f"yes 'lat=1.5 some filler on every line' | head -c {n}; echo; echo 'tps = 42.5'"
    job = TrialJob(pis=(PISpec(name="tps", source="regex", pattern=r"tps = ([0-9.]+)"),),
                   timeout=600)
    t0 = time.perf_counter()
    rec = run_trial(job, TrialRequest(seq=0, argv=["sh", "-c", script]))
    wall = time.perf_counter() - t0
    # VmHWM: this process's own peak (ru_maxrss keeps the parent's peak across exec)
    hwm = next(l.split()[1] for l in open("/proc/self/status") if l.startswith("VmHWM"))
    print(rec.status, rec.readings.get("tps"), hwm, f"{wall:.2f}", len(rec.stdout))
    """
)

COST = textwrap.dedent(
    """
    import statistics, subprocess, sys, time
    from assay.execute.command import run_command
    n = int(sys.argv[1])
    call, dur, bare = [], [], []
    for _ in range(n):
        t0 = time.perf_counter()
        r = run_command(["true"], timeout=30)
        call.append(time.perf_counter() - t0)
        dur.append(r.duration)
        t0 = time.perf_counter()
        subprocess.run(["true"], check=False)
        bare.append(time.perf_counter() - t0)
    med = statistics.median
    print(f"{med(call)*1e3:.3f} {med(dur)*1e3:.3f} {med(bare)*1e3:.3f}")
    """
)


def _size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def _run(code: str, arg: str, src: Path, env: dict[str, str] | None = None) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code, arg],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(src), **(env or {})},
        check=True,
    )
    return out.stdout.strip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1M,100M,1G")
    ap.add_argument("--src", type=Path, default=ROOT / "src")
    ap.add_argument("--launches", type=int, default=300)
    ap.add_argument("--no-cost", action="store_true")
    args = ap.parse_args()
    up = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.system()} "
        f"{platform.release()}, Python {platform.python_version()}; "
        f"date {datetime.datetime.now():%Y-%m-%d %H:%M}; uptime: {up}; src {args.src}"
    )
    print("\n| stdout | status | tps read | peak RSS of the trial's process | trial wall s |")
    print("|---|---|---|---|---|")
    for text in filter(None, args.sizes.split(",")):
        status, tps, rss_kib, wall, _kept = _run(CHILD, str(_size(text)), args.src).split()
        print(f"| {text}B | {status} | {tps} | {int(rss_kib) / 1024:.0f} MiB | {wall} |")
    if args.no_cost:
        return 0
    print(f"\n`true`, {args.launches} launches each, medians:\n")
    print("| holding | run_command call, ms | measured duration, ms | bare subprocess.run, ms |")
    print("|---|---|---|---|")
    for mech, env in (("cgroup", {}), ("subreaper + scan", {"ASSAY_PROCESS_TREE": "scan"})):
        call, dur, bare = _run(COST, str(args.launches), args.src, env).split()
        print(f"| {mech} | {call} | {dur} | {bare} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
