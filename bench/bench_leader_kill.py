"""The etcd leader-kill example on namespace hosts (#63): for every trial, its per-second
throughput, the operations that failed in each window, and those still in flight when
``--max-time`` stopped the run, by the window they started in, with the longest time
one of them had been in flight and the failed operations' longest latency.

Four network-namespace hosts with their own addresses and sshd (tests/netns_hosts.py:
needs root, etcd and go-ycsb from scripts/install-targets.sh), the example
``examples/distributed/etcd-leader-kill.toml`` as tests/test_netns_etcd.py adapts it;
``--max-time S`` replaces the example's 9 s run (16 s shows the hung updates fail).

Run from the repository root::

    python bench/bench_leader_kill.py [--cycles 6] [--max-time 9]

Prints a Markdown table with the machine, date and load.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
from assay.privatefs import private_temp  # noqa: E402
from assay.store import Store  # noqa: E402
from machine import machine_line  # noqa: E402
from netns_hosts import netns_hosts  # noqa: E402
from test_netns_etcd import _adapted  # noqa: E402

NAME = "etcd-leader-kill"


def _row(variant: str, doc: dict[str, object]) -> str:
    pi = doc["pi"]
    report = doc["report"]
    assert isinstance(pi, dict) and isinstance(report, dict)
    series = ", ".join(f"{v:.0f}" for v in report["series"]["ops_per_s"])
    failed_max = max(
        (v.get("max_us", 0.0) for k, v in report["ops"].items() if k.endswith("_ERROR")),
        default=0.0,
    )
    by_window = "/".join(f"{pi.get(f'errors_{w}', 0):.0f}" for w in ("before", "during", "after"))
    cut = "/".join(f"{pi.get(f'cut_off_{w}', 0):.0f}" for w in ("before", "during", "after"))
    return (
        f"| {variant} | {series} | {by_window} | {failed_max / 1e6:.1f} | {cut} | "
        f"{pi.get('cut_off_max_us', 0.0) / 1e6:.1f} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cycles", type=int, default=6, help="compare cycles (a trial of each)")
    ap.add_argument("--max-time", type=int, default=9, help="seconds of each YCSB run")
    args = ap.parse_args()
    load = os.getloadavg()
    with private_temp("assay-leaderkill-") as tmp, netns_hosts(4, tmp) as hosts:
        state = tmp / "etcd-state"
        more = [('"--max-time", "9"', f'"--max-time", "{args.max_time}"')]
        work = _adapted(tmp, hosts, state, f"{NAME}.toml", more)
        done = subprocess.run(
            [sys.executable, "-m", "assay", "compare", f"{NAME}.toml", "-q", "--max-rounds",
             str(args.cycles)],
            cwd=work, capture_output=True, text=True, timeout=3600, check=False,
        )  # fmt: skip
        if done.returncode not in (0, 5):
            sys.exit(f"assay compare exited {done.returncode}: {done.stderr[-2000:]}")
        with Store(work / f"{NAME}.assay.db") as st:
            found = st.find_study(NAME)
            assert found is not None
            trials = st.trials(found[0])
    rows = [_row(str(t.setting["variant"]), json.loads(t.stdout)) for t in trials if t.ok]
    print(
        machine_line(load, f"{NAME}, {args.cycles} cycles, {args.max_time} s runs, 4 netns hosts")
    )
    print()
    print(
        "| variant | ops/s, each second | failed before/during/after | failed: longest (s) | "
        "in flight at the stop, started before/during/after | in flight: longest (s) |"
    )
    print("|---|---|---|---|---|---|")
    print("\n".join(sorted(rows)))
    failed = [t for t in trials if not t.ok]
    if failed:
        print(f"\n{len(failed)} trials failed: {[t.error for t in failed]}")


if __name__ == "__main__":
    main()
