"""An SSH cluster's own costs (#41, item 12): how long it takes to start, and the dispatch
cost per trial on a host reached over SSH, with and without a slow link.

The hosts are network namespaces on a private bridge, each with its own address and
sshd (tests/netns_hosts.py: needs root), started here and removed at the end.  Every
trial goes through the sweep's own path (:class:`assay.studies.settings.SettingsRunner`,
each trial committed to a SQLite store), as in bench/bench_cluster.py.

Run from the repository root::

    python bench/bench_cluster_ssh.py [--trials 200] [--hosts 3] [--rate-mbit 1] [--reps 3]

* Start-up: from opening the study file's ``[cluster]`` (an SSH cluster of ``--hosts``
  hosts: scheduler, one worker per host, TLS) to the first trial's dispatch, and the
  close; ``--reps`` times.
* Dispatch: ``--trials`` trials of ``true`` on one SSH host (nothing overlaps);
  overhead per trial = (wall time - the trials' own measured durations) / trials, as
  bench/bench_cluster.py counts it for ``--workers 1``; then the same with that host's
  link limited to ``--rate-mbit`` (``tc`` token bucket, ``tbf``: a slow link; this
  machine's kernel has no ``netem`` to add a delay).

Prints Markdown tables with the machine, date and load.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from assay.execute.cluster import open_executor
from assay.execute.environment import cpu_model, usable_cores
from assay.spec import Spec, parse_spec_data
from assay.studies.settings import SettingsRunner, SettingsSession

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from netns_hosts import Hosts, netns_hosts, why_not


def _spec(folder: Path, hosts: Hosts, count: int) -> Spec:
    return parse_spec_data(
        {
            "study": {"name": "bench-ssh", "store": str(folder / "b.assay.db")},
            "benchmark": {"command": [shutil.which("true") or "/bin/true", "{i}"]},
            "params": {"i": 0},
            "cluster": {
                "hosts": hosts.addresses[:count],
                "port": hosts.port,
                "key": str(hosts.dir / "client_key"),
                "known_hosts": str(hosts.dir / "known_hosts"),
            },
        },
        str(folder / "b.toml"),
    )


def start_up(hosts: Hosts, count: int) -> tuple[float, float, float]:
    """Seconds to open the cluster, to run its first trial, and to close it."""
    folder = Path(tempfile.mkdtemp(prefix="bench-ssh-"))
    try:
        spec = _spec(folder, hosts, count)
        assert spec.cluster is not None
        t0 = time.perf_counter()
        with open_executor(ssh=spec.cluster, monitor=False) as executor:
            opened = time.perf_counter() - t0
            runner = SettingsRunner(spec, spec.store_path(), executor=executor)
            runner.session(lambda s: s.measure([{"i": 1}], 1))
            first = time.perf_counter() - t0
            t1 = time.perf_counter()
        return opened, first, time.perf_counter() - t1
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def dispatch(hosts: Hosts, n: int) -> tuple[float, float]:
    """Wall time of ``n`` trials of ``true`` on one SSH host, and their own durations."""
    folder = Path(tempfile.mkdtemp(prefix="bench-ssh-"))
    try:
        spec = _spec(folder, hosts, 1)
        assert spec.cluster is not None
        with open_executor(ssh=spec.cluster, monitor=False) as executor:
            runner = SettingsRunner(spec, spec.store_path(), executor=executor)
            runner.session(lambda s: s.measure([{"i": -1}], 1))  # warm the worker up

            def body(s: SettingsSession) -> tuple[float, float]:
                t0 = time.perf_counter()
                got = s.measure([{"i": k} for k in range(n)], 1)
                return time.perf_counter() - t0, sum(t.duration or 0.0 for t in got)

            return runner.session(body)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _slow(hosts: Hosts, index: int, rate_mbit: float | None) -> None:
    """Host ``index``'s outgoing link limited to ``rate_mbit`` (None: as it was)."""
    argv = ["ip", "netns", "exec", hosts.names[index], "tc", "qdisc"]
    if rate_mbit is None:
        subprocess.run([*argv, "del", "dev", "eth0", "root"], check=False, capture_output=True)
    else:
        tbf = ["tbf", "rate", f"{rate_mbit:g}mbit", "burst", "32kbit", "latency", "400ms"]
        subprocess.run([*argv, "add", "dev", "eth0", "root", *tbf], check=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=200, help="dispatch: trials of 'true'")
    ap.add_argument("--hosts", type=int, default=3, help="start-up: hosts of the cluster")
    ap.add_argument("--rate-mbit", type=float, default=1.0, help="the slow link's rate")
    ap.add_argument("--reps", type=int, default=3, help="start-ups measured")
    args = ap.parse_args()
    reason = why_not()
    if reason is not None:
        sys.exit(f"bench_cluster_ssh: {reason}")
    print(
        f"machine: {cpu_model()}, {usable_cores()} cores, Python {platform.python_version()}; "
        f"{dt.date.today()}; load {os.getloadavg()[0]:.2f} at start"
    )
    with tempfile.TemporaryDirectory() as tmp, netns_hosts(args.hosts, Path(tmp)) as hosts:
        print(f"\n| SSH cluster of | open s | first trial done s | close s | (of {args.reps})")
        print("|---:|---:|---:|---:|")
        for count in sorted({1, args.hosts}):
            got = [start_up(hosts, count) for _ in range(args.reps)]
            med = [statistics.median(x[i] for x in got) for i in range(3)]
            span = [f"{min(x[i] for x in got):.1f}–{max(x[i] for x in got):.1f}" for i in range(3)]
            print(
                f"| {count} host{'s' if count > 1 else ''} | {med[0]:.1f} ({span[0]}) | "
                f"{med[1]:.1f} ({span[1]}) | {med[2]:.1f} ({span[2]}) |"
            )
        print("\n| one SSH host | trials | wall s | trials' own s | overhead ms/trial |")
        print("|---|---:|---:|---:|---:|")
        for label, rate in (("direct link", None), (f"link at {args.rate_mbit:g} Mbit/s", 1)):
            if rate is not None:
                _slow(hosts, 0, args.rate_mbit)
            try:
                wall, own = dispatch(hosts, args.trials)
            finally:
                _slow(hosts, 0, None)
            over = (wall - own) / args.trials * 1e3
            print(f"| {label} | {args.trials} | {wall:.2f} | {own:.2f} | {over:.1f} |")
    print(f"\nload {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
