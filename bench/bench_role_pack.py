"""A host pool packed by each trial's need (#42): one sweep over a server count on one
pool of hosts, with ``[cluster] pack = true`` against fixed ``[cluster] groups`` sized
for the largest count, and the span against the ideal of each.

The pool is C clients and S servers (workers of a LocalCluster, ``--workers``, as the
tests use them); a trial is the client's ``sleep`` beside its servers' ``sleep`` (no
CPU: what is measured is the executor's packing, not the machine).  ``nodes`` (the
servers a trial takes, ``[cluster] counts``) and ``v`` (written by the servers' setup)
are swept.  Fixed groups of the largest ``nodes`` leave the clients beyond them and the
servers beyond a trial's count idle; packed, trials of fewer servers run more at once.
The ideal span is each need's trials over the groups of that need, in rounds of one
trial's time; the span is from the first trial's start to the last trial's end, from
the store (the cluster's start-up aside).

Run from the repository root::

    python bench/bench_role_pack.py [--clients 4] [--servers 8] [--nodes 1 2 4] [--sleep 1]

Prints a Markdown table with the machine, date and load.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_role_groups import sweep_span
from machine import machine_line

STUDY = """
[study]
name = "pack-bench"
[benchmark]
command = ["sleep", "{sleep}"]
timeout = 60
[benchmark.roles.server]
setup = ["sh", "-c", "echo $1 > {dir}/conf-$2", "sh", "{{v}}", "{{host.name}}"]
command = ["sleep", "{sleep}"]
[cluster]
{layout}
counts = {{ server = "nodes" }}
[cluster.roles]
client = {clients}
server = {servers}
[sweep]
repetitions = {reps}
[sweep.params]
nodes = {nodes}
v = [0, 1]
"""


def span(layout: str, clients: int, args: argparse.Namespace, folder: Path) -> tuple[float, float]:
    """The sweep's trials' span (s) under ``layout``, and the whole command's wall time."""
    work = folder / layout.split()[0]
    work.mkdir()
    names = [f"c{i}" for i in range(clients)], [f"s{i}" for i in range(args.servers)]
    text = STUDY.format(
        sleep=args.sleep, dir=work, layout=layout, clients=names[0], servers=names[1],
        reps=args.reps, nodes=args.nodes,
    )  # fmt: skip
    trials = len(args.nodes) * 2 * args.reps
    return sweep_span(work, text, "pack-bench", clients + args.servers, trials)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--servers", type=int, default=8)
    ap.add_argument("--nodes", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--sleep", type=float, default=1.0)
    args = ap.parse_args()
    per_need = 2 * args.reps  # trials of each nodes value
    most = max(args.nodes)
    fixed = min(args.clients, args.servers // most)  # groups of one client, `most` servers
    ideal_pack = sum(math.ceil(per_need / min(args.clients, args.servers // n)) for n in args.nodes)
    ideal_fixed = math.ceil(per_need * len(args.nodes) / fixed)
    load = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for layout, clients, ideal in (
            (f"groups = {fixed}", fixed, ideal_fixed),
            ("pack = true", args.clients, ideal_pack),
        ):
            t, wall = span(layout, clients, args, Path(d))
            rows.append((layout, clients, t, wall, ideal * args.sleep))
    trials = per_need * len(args.nodes)
    print(
        machine_line(
            load,
            f"{trials} trials of sleep {args.sleep} s on a pool of {args.clients} clients and "
            f"{args.servers} servers, nodes = {args.nodes}",
        )
    )
    print()
    print(
        "| layout | clients used | trials' span | command's wall time | ideal span | of the ideal |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for layout, clients, t, wall, ideal in rows:
        share = ideal / t
        print(
            f"| `{layout}` | {clients} | {t:.1f} s | {wall:.1f} s | {ideal:.1f} s | {share:.0%} |"
        )
    print()
    print(f"packed against fixed groups: {rows[0][2] / rows[1][2]:.2f}× faster (trials' span)")


if __name__ == "__main__":
    main()
