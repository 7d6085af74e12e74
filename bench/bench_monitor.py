"""Overhead of the bottleneck watch on a benchmark's wall time (Pilot §III-C).

A CPU-bound command (a ~0.2 s Python loop) runs N times through Assay's executor
(``run_command``), alternating with and without the resource monitor around it, as
``Runner._trial`` does. Printed: the mean wall time of each, their difference with
Welch's confidence interval, the monitor's own CPU time per second of trial, the
sampling interval it chose, and the machine and date.

    python bench/bench_monitor.py --reps 40
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import numpy as np
import psutil
from scipy import stats

from assay.execute.command import run_command
from assay.execute.monitor import ResourceMonitor

LOOP = "import time\nt = time.perf_counter()\nwhile time.perf_counter() - t < {s}: pass"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=40, help="trials with and without (each)")
    ap.add_argument("--seconds", type=float, default=0.2, help="length of the CPU-bound loop")
    ap.add_argument("--confidence", type=float, default=0.95)
    a = ap.parse_args()

    argv = [sys.executable, "-c", LOOP.format(s=a.seconds)]
    mon = ResourceMonitor()
    start_interval = mon.calibrate()
    start_cost = mon.cost_per_sample or 0.0
    with_s: list[float] = []
    without_s: list[float] = []
    cpu_per_s: list[float] = []
    intervals: list[float] = []
    samples: list[int] = []
    run_command(argv, timeout=60)  # warm the page cache and the interpreter
    for i in range(a.reps):
        for monitored in (i % 2 == 0, i % 2 == 1):  # alternate which goes first
            if monitored:
                mon.start()
                res = run_command(argv, timeout=60)
                got = mon.stop()
                with_s.append(res.duration)
                cpu_per_s.append(got.summary.monitor_cpu_per_s)
                intervals.append(got.summary.interval_s)
                samples.append(got.summary.samples)
            else:
                without_s.append(run_command(argv, timeout=60).duration)

    w = np.asarray(with_s)
    wo = np.asarray(without_s)
    t = stats.ttest_ind(w, wo, equal_var=False)
    ci = t.confidence_interval(a.confidence)
    diff = w.mean() - wo.mean()
    load = os.getloadavg()
    print(f"# bench_monitor: {time.strftime('%Y-%m-%d %H:%M %Z')}")
    print(
        f"# machine: {platform.node()} {platform.machine()}, {psutil.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, psutil {psutil.__version__}, "
        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    print(f"# command: {a.seconds:g} s CPU-bound Python loop, {a.reps} trials each, alternating")
    print()
    print("| quantity | value |")
    print("|---|---|")
    sd_w, sd_wo = w.std(ddof=1) * 1e3, wo.std(ddof=1) * 1e3
    print(f"| mean wall time with monitor | {w.mean() * 1e3:.2f} ms (sd {sd_w:.2f}) |")
    print(f"| mean wall time without | {wo.mean() * 1e3:.2f} ms (sd {sd_wo:.2f}) |")
    print(
        f"| difference (with - without) | {diff * 1e3:+.2f} ms "
        f"[{ci.low * 1e3:+.2f}, {ci.high * 1e3:+.2f}] at {a.confidence:.0%}, Welch p = "
        f"{t.pvalue:.3g} ({diff / wo.mean():+.2%}) |"
    )
    print(
        f"| monitor CPU time per second of trial | mean {np.mean(cpu_per_s):.3%}, "
        f"max {np.max(cpu_per_s):.3%} (budget 1%) |"
    )
    print(f"| cost per sample at start-up | {start_cost * 1e3:.3f} ms |")
    print(
        f"| interval | start-up {start_interval * 1e3:.0f} ms; during trials "
        f"{min(intervals) * 1e3:.0f}-{max(intervals) * 1e3:.0f} ms, last "
        f"{mon.interval * 1e3:.0f} ms |"
    )
    print(f"| samples per trial | mean {np.mean(samples):.1f} |")


if __name__ == "__main__":
    main()
