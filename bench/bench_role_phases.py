"""Where a multi-host Redis sweep's time goes (#61, item 6): the phase breakdown the
result gives (``environment.executor.phases``: the roles' first setup, their setting up
again for a trial's setting, resets, trials, teardown), with ``[cluster] groups`` 1
and 2, against the command's wall time.

Network-namespace hosts with their own addresses and sshd (tests/netns_hosts.py: needs
root, Redis from scripts/install-targets.sh): a Redis primary and a client per group
(the hosts of group 1 idle with ``groups = 1``), the example's ``redis_pair.py``; the
sweep is ``appendfsync`` (a server setting: the primary is set up again when it
changes) × ``--reps`` repetitions, each trial ``redis-benchmark -t set -n 30000``.

``--example``: the distributed example ``redis-fsync-sweep.toml`` instead (a primary,
0-2 replicas, two clients; 5 hosts), as tests/test_netns_distributed.py adapts it;
``--delay 5`` gives its primary ``repl-diskless-sync-delay 5``, Redis's default, which
the example's ``redis_pair.py`` set to 0 (#61: every replica's setup waited 5 s).

Run from the repository root::

    python bench/bench_role_phases.py [--reps 2] [--runs 1] [--example [--delay 5]]

Prints a Markdown table with the machine, date and load.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
from assay.privatefs import private_temp  # noqa: E402
from machine import machine_line  # noqa: E402
from netns_hosts import Hosts, netns_hosts  # noqa: E402
from test_netns_distributed import GROUPS, _example  # noqa: E402


def one_run(tmp: Path, hosts: Hosts, groups: int, reps: int) -> dict[str, object]:
    work = tmp / f"g{groups}-{time.monotonic_ns()}"
    work.mkdir()
    shutil.copy(ROOT / "examples" / "distributed" / "redis_pair.py", work)
    n = groups
    study = GROUPS.format(
        state=json.dumps(str(tmp / "redis-state")),
        keys=hosts.cluster_toml(),
        primaries=json.dumps(hosts.addresses[:n]),
        clients=json.dumps(hosts.addresses[2 : 2 + n]),
    )
    for old, new in [("groups = 2\n", f"groups = {groups}\n"),
                     ("repetitions = 2\n", f"repetitions = {reps}\n")]:  # fmt: skip
        assert old in study, old
        study = study.replace(old, new)
    (work / "s.toml").write_text(study)
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "assay", "sweep", "s.toml", "-q", "--json", "r.json"],
        cwd=work, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    wall = time.monotonic() - began
    if done.returncode not in (0, 5):
        raise SystemExit(done.stderr)
    doc = json.loads((work / "r.json").read_text())
    executor = doc["environment"]["executor"]
    return {
        "wall": wall,
        "phases": executor["phases"],
        "reconf": executor.get("reconfigurations", {}).get("count", 0),
    }


def example_run(tmp: Path, hosts: Hosts, delay: int | None) -> dict[str, object]:
    work = _example(tmp, hosts)
    study = work / "redis-fsync-sweep.toml"
    if delay is not None:  # the primary's own setting, after those redis_pair.py writes
        old = '"--appendfsync", "{appendfsync}"]\nteardown'
        assert old in study.read_text()
        study.write_text(study.read_text().replace(old, old.replace(
            "]", f', "--config", "repl-diskless-sync-delay", "{delay}"]', 1)))  # fmt: skip
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "assay", "sweep", study.name, "-q", "--json", "r.json"],
        cwd=work, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    wall = time.monotonic() - began
    if done.returncode not in (0, 5):
        raise SystemExit(done.stderr)
    executor = json.loads((work / "r.json").read_text())["environment"]["executor"]
    shutil.rmtree(work)
    return {
        "wall": wall,
        "phases": executor["phases"],
        "reconf": executor.get("reconfigurations", {}).get("count", 0),
    }


def _row(label: object, run: int, r: dict[str, object]) -> str:
    ph = r["phases"]
    assert isinstance(ph, dict)
    cells = [
        label, run + 1, f"{r['wall']:.1f} s", f"{ph['setup']:.1f} s",
        f"{ph['reconfiguration']:.1f} s ({r['reconf']})", f"{ph['reset']:.1f} s",
        f"{ph['trial']:.1f} s", f"{ph['teardown']:.1f} s", f"{sum(ph.values()):.1f} s",
    ]  # fmt: skip
    return "| " + " | ".join(map(str, cells)) + " |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--example", action="store_true")
    ap.add_argument("--delay", type=int, default=None)
    args = ap.parse_args()
    load = os.getloadavg()
    rows = [
        f"| {'primary' if args.example else 'groups'} | run | wall time | setup "
        "| set up again (times) | resets | trials | teardown | phases' sum |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    if args.example:
        label = f"repl-diskless-sync-delay {args.delay if args.delay is not None else 0}"
        with private_temp("assay-phases-") as d:
            for run in range(args.runs):
                (Path(d) / str(run)).mkdir()
                with netns_hosts(5, Path(d) / str(run)) as hosts:
                    rows.append(
                        _row(label, run, example_run(Path(d) / str(run), hosts, args.delay))
                    )
                print(rows[-1], file=sys.stderr, flush=True)
        what = "the 18-trial redis-fsync-sweep example on 5 netns hosts"
    else:
        with (
            private_temp("assay-phases-") as d,
            netns_hosts(4, Path(d)) as hosts,
        ):
            for groups in (1, 2):
                for run in range(args.runs):
                    rows.append(_row(groups, run, one_run(Path(d), hosts, groups, args.reps)))
                    print(rows[-1], file=sys.stderr, flush=True)
        what = f"{3 * args.reps}-trial Redis sweep on netns hosts, groups 1 and 2"
    print(machine_line(load, what))
    print()
    print("\n".join(rows))


if __name__ == "__main__":
    main()
