"""A killed Dask scheduler (#61, item 4): how long the driver takes to exit after the
kill, what it says, and what is left on every host 10 s after it exits.

Three network-namespace hosts with their own addresses and sshd (tests/netns_hosts.py:
needs root, Redis from scripts/install-targets.sh), the distributed example
``redis-replica-compare.toml`` as tests/test_netns_cluster.py adapts it; the scheduler
process is SIGKILLed once two trials are stored.

Run from the repository root::

    python bench/bench_scheduler_kill.py [--runs 3]

Prints a Markdown table with the machine, date and load.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
from assay.privatefs import private_temp  # noqa: E402
from machine import machine_line  # noqa: E402
from netns_hosts import netns_hosts  # noqa: E402
from test_netns_cluster import _example, _until_stored, kill_scheduler  # noqa: E402


def _pipe_holders(proc: subprocess.Popen[str]) -> list[str]:
    """The processes (command lines) that still hold the driver's stderr pipe open."""
    assert proc.stderr is not None
    mine = os.readlink(f"/proc/self/fd/{proc.stderr.fileno()}")
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if any(os.readlink(fd) == mine for fd in (d / "fd").iterdir()):
                found.append((d / "cmdline").read_bytes().replace(b"\0", b" ").decode()[:120])
    return found


def one_run(tmp: Path) -> dict[str, object]:
    with netns_hosts(3, tmp) as hosts:
        work = _example(tmp, hosts, rounds=10)  # the example's own max_rounds
        proc = subprocess.Popen(
            [sys.executable, "-m", "assay", "compare", "redis-replica-compare.toml", "-q"],
            cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        _until_stored(work / "redis-replica-compare.assay.db", proc, 2)
        killed_at = time.monotonic()
        kill_scheduler(hosts)
        while proc.poll() is None and time.monotonic() < killed_at + 300:
            time.sleep(0.05)
        exit_s = time.monotonic() - killed_at  # the driver's exit: a shell's prompt back
        holders = _pipe_holders(proc)
        _, err = proc.communicate(timeout=300)
        eof_s = time.monotonic() - killed_at  # its output's end: a pipe's reader done
        time.sleep(10)
        left = {n: c for n in hosts.names if (c := hosts.commands(n))}
        # what the message says was left is torn down by the same command run again
        again = subprocess.run(
            [sys.executable, "-m", "assay", "compare", "redis-replica-compare.toml", "-q",
             "--max-rounds", "2"],
            cwd=work, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        after = hosts.left(timeout=30)
    servers = sum("redis-server" in c for cs in left.values() for c in cs)
    return {
        "exit": proc.returncode,
        "exit_s": exit_s,
        "eof_s": eof_s,
        "holders": holders,
        "first": err.strip().splitlines()[0] if err.strip() else "",
        "servers_left_10s": servers,
        "dask_left_10s": sum("dask" in c for cs in left.values() for c in cs),
        "again_exit": again.returncode,
        "left_after_again": sum(len(cs) for cs in after.values()),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    load = os.getloadavg()
    rows = [
        "| run | exit | time to exit after the kill | redis-servers left at +10 s "
        "| Dask processes left at +10 s | the same command again: exit, processes left "
        "| its output's end |"
    ]
    rows.append("|---|---|---|---|---|---|---|")
    firsts = []
    for n in range(args.runs):
        with private_temp("assay-schedkill-") as d:
            r = one_run(Path(d))
        firsts.append(str(r["first"]))
        held = f" (held by {r['holders']})" if r["holders"] else ""
        cells = [n + 1, r["exit"], f"{r['exit_s']:.1f} s", r["servers_left_10s"],
                 r["dask_left_10s"], f"{r['again_exit']}, {r['left_after_again']}",
                 f"{r['eof_s']:.1f} s{held}"]  # fmt: skip
        rows.append("| " + " | ".join(map(str, cells)) + " |")
        print(rows[-1], file=sys.stderr, flush=True)
    print(
        machine_line(load, f"{args.runs} scheduler kills, redis-replica-compare on 3 netns hosts")
    )
    print()
    print("\n".join(rows))
    print()
    for f in sorted(set(firsts)):
        print(f"> {f}")


if __name__ == "__main__":
    main()
