"""Groups of hosts in parallel (#42): the wall time of one sweep on G groups of hosts at
once against the same sweep on one group, and the speed-up against the ideal G.

Each group is a server and a client (workers of a LocalCluster, ``--workers``, as the
tests use them); a trial is the client's ``sleep`` beside the server's ``sleep`` (no
CPU, so a 2-core machine can run several groups at once: what is measured is the
executor's parallelism, not the machine's).  The server's setup writes the swept value,
so each group sets its roles up for the settings it runs.  The span is from the first
trial's start to the last trial's end, from the store (the cluster's start-up aside).

Run from the repository root::

    python bench/bench_role_groups.py [--groups 2 3] [--settings 6] [--reps 2] [--sleep 0.5]

Prints a Markdown table with the machine, date and load.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from assay.store import Store
from machine import machine_line

STUDY = """
[study]
name = "groups-bench"
[benchmark]
command = ["sleep", "{sleep}"]
timeout = 60
[benchmark.roles.server]
setup = ["sh", "-c", "echo $1 > {dir}/conf-$2", "sh", "{{v}}", "{{host.name}}"]
command = ["sleep", "{sleep}"]
[cluster]
groups = {groups}
[cluster.roles]
server = {servers}
client = {clients}
[sweep]
repetitions = {reps}
[sweep.params]
v = {values}
"""


def sweep_span(work: Path, text: str, name: str, workers: int, trials: int) -> tuple[float, float]:
    """Run the sweep of study ``text`` (study ``name``) in ``work`` on ``workers``
    LocalCluster workers: its trials' span (s) and the whole command's wall time."""
    (work / "s.toml").write_text(text.replace("{{", "{").replace("}}", "}").replace("'", '"'))
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "assay", "sweep", "s.toml", "-q", "--workers", str(workers)],
        cwd=work, capture_output=True, text=True,
    )  # fmt: skip
    wall = time.monotonic() - began
    if done.returncode not in (0, 5):
        raise SystemExit(done.stderr)
    with Store(work / "s.assay.db") as st:
        found = st.find_study(name)
        assert found is not None
        stored = st.trials(found[0])
    assert len(stored) == trials and all(t.ok for t in stored)
    first = min(t.started or 0.0 for t in stored)
    last = max((t.started or 0.0) + (t.duration or 0.0) for t in stored)
    return last - first, wall


def span(groups: int, args: argparse.Namespace, folder: Path) -> tuple[float, float]:
    """The sweep's trials' span (s) on ``groups`` groups, and the whole command's wall time."""
    work = folder / f"g{groups}"
    work.mkdir()
    servers = [f"s{i}" for i in range(groups)]
    clients = [f"c{i}" for i in range(groups)]
    text = STUDY.format(
        sleep=args.sleep, dir=work, groups=groups, servers=servers, clients=clients,
        reps=args.reps, values=list(range(args.settings)),
    )  # fmt: skip
    return sweep_span(work, text, "groups-bench", 2 * groups, args.settings * args.reps)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, nargs="+", default=[2, 3])
    ap.add_argument("--settings", type=int, default=6)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--sleep", type=float, default=0.5)
    args = ap.parse_args()
    load = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory() as d:
        one, one_wall = span(1, args, Path(d))
        rows.append((1, one, one_wall, 1.0, 1.0))
        for g in args.groups:
            t, wall = span(g, args, Path(d))
            rows.append((g, t, wall, one / t, one / t / g))
    trials = args.settings * args.reps
    print(machine_line(load, f"{trials} trials of sleep {args.sleep} s (client and server)"))
    print()
    print("| groups | trials' span | command's wall time | speed-up | of the ideal |")
    print("|---:|---:|---:|---:|---:|")
    for g, t, wall, up, share in rows:
        print(f"| {g} | {t:.1f} s | {wall:.1f} s | {up:.2f}× | {share:.0%} |")


if __name__ == "__main__":
    main()
