"""Start-up of ``assay run``: from launching the process to the first trial's spawn (#17).

Run from the repository root::

    python bench/bench_startup.py [--launches 10]

The benchmark command is ``sh -c 'date +%s%N >> STAMP; grep ... /proc/$PPID/maps'``:
each trial appends the wall-clock time it started at and how many SciPy or pandas
shared objects its parent (the ``assay`` process) has mapped.  The start-up of one
launch is the first trial's time minus ``time.time_ns()`` taken just before the
``assay`` process is started (``sh`` and ``date`` add about a millisecond).

Each launch is ``assay run -r 1`` (the installed script a user types; ``python -m
assay`` for a ``--src`` tree; the default options: launch-overhead probe and
bottleneck watch on) in a fresh directory, in two modes: a study file
(``assay run STUDY.toml``) and quick mode (``assay run -- CMD``); and with two states
of the per-user cache (``XDG_CACHE_HOME``): cold (an empty one for every launch: the
first run on a machine) and warm (one shared, filled by an unmeasured launch first).
The variants are interleaved.  Prints a Markdown table (median, min and max of the
launches; the median CPU time the ``assay`` process had used by its first trial, less
sensitive to a busy machine than the wall time) with the machine, date and load.

``--src DIR`` (repeatable) runs each variant with ``PYTHONPATH=DIR`` too, interleaved
with the installed tree: e.g. the ``src`` of an older revision unpacked with
``git archive REV src | tar -x -C /tmp/old`` (before and after, at the same load).

Each tree's ``assay`` package is compiled to bytecode first (``compileall``), as an
installed package is: with ``PYTHONDONTWRITEBYTECODE`` in the environment every launch
compiled Assay's modules again, and the figures before 2026-11-24 10:30 include that.
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

#: A trial: its start time (ns), the count of SciPy/pandas objects its parent maps
#: (``true``: grep fails when it counts none) and its parent's user and system CPU time
#: so far (clock ticks).
STAMP = (
    "date +%s%N >> stamp; grep -cE '/(scipy|pandas)(\\.libs)?/' /proc/$PPID/maps >> stamp; "
    "cut -d' ' -f14,15 /proc/$PPID/stat >> stamp; true"
)

STUDY = """\
[study]
name = "startup"
store = "startup.assay.db"

[benchmark]
command = ["sh", "-c", "{stamp}"]
"""


def launch(workdir: Path, cache: Path, quick: bool, src: str) -> tuple[float, float, int]:
    """One ``assay run``: seconds from its launch to its first trial's start, the CPU
    seconds the ``assay`` process had used by then and the SciPy/pandas objects it had
    mapped."""
    workdir.mkdir()
    stamp_cmd = STAMP.replace("stamp", str(workdir / "stamp"))
    if quick:
        target = ["--fresh", "--", "sh", "-c", stamp_cmd]
    else:
        study = workdir / "study.toml"
        study.write_text(STUDY.format(stamp=stamp_cmd.replace("\\", "\\\\")))
        target = [str(study)]
    argv = [*assay_argv(src), "run", "-r", "1", "-q", "--json", os.devnull]
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    if src:
        env["PYTHONPATH"] = os.pathsep.join([src, *filter(None, [env.get("PYTHONPATH")])])
    t0 = time.time_ns()
    done = subprocess.run([*argv, *target], cwd=workdir, env=env, capture_output=True, text=True)
    if done.returncode not in (0, 5):  # 5: one round is short of the CI target, as meant
        sys.exit(f"assay run failed ({done.returncode}): {done.stderr}")
    started, mapped, utime, stime = (workdir / "stamp").read_text().split()[:4]
    cpu = (int(utime) + int(stime)) / os.sysconf("SC_CLK_TCK")
    return (int(started) - t0) / 1e9, cpu, int(mapped)


def assay_argv(src: str = "") -> list[str]:
    """How a user's command line starts Assay: the installed ``assay`` script (its
    console entry point, issue #45: "what a user's command line sees, from exec to the
    first trial"), or ``python -m assay`` for a ``--src`` tree (or where no script is on
    PATH)."""
    script = shutil.which("assay")
    return [script] if script and not src else [sys.executable, "-m", "assay"]


def compile_bytecode(tree: str) -> None:
    """Compile a tree's ``assay`` package to bytecode, as ``pip install`` does: with
    ``PYTHONDONTWRITEBYTECODE`` set (as on the project's machine) every launch would
    compile Assay's modules again, ~30-70 ms of the start-up a user does not pay."""
    where = (
        str(Path(tree) / "assay")
        if tree
        else subprocess.run(
            [sys.executable, "-c", "import assay, os; print(os.path.dirname(assay.__file__))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", where], check=True, stdout=subprocess.DEVNULL
    )


#: ``--peers``: each tool's --version, --help and its run command's --help, timed from
#: launch to exit (hyperfine 1.15 and pyperf 2.10 where installed: ``apt-get install
#: hyperfine``, ``pip install pyperf``).
PEERS = {
    "assay": [
        [*assay_argv(), "--version"],
        [*assay_argv(), "--help"],
        [*assay_argv(), "run", "--help"],
    ],
    "hyperfine": [["hyperfine", "--version"], ["hyperfine", "--help"]],
    "pyperf": [  # (it has no --version)
        [sys.executable, "-m", "pyperf", "--help"],
        [sys.executable, "-m", "pyperf", "command", "--help"],
    ],
}


def peers(launches: int) -> None:
    """Launch-to-exit times of the tools' --version and --help, interleaved."""
    runnable = {
        tool: cmds
        for tool, cmds in PEERS.items()
        if subprocess.run(cmds[0], capture_output=True, check=False).returncode == 0
    }
    times: dict[str, list[float]] = {
        " ".join(c[-2:]): [] for cmds in runnable.values() for c in cmds
    }
    labels = {" ".join(c[-2:]): (tool, c) for tool, cmds in runnable.items() for c in cmds}
    for _ in range(launches):
        for key, (_, cmd) in labels.items():
            t0 = time.perf_counter()
            subprocess.run(cmd, capture_output=True, check=False)
            times[key].append(time.perf_counter() - t0)
    load = os.getloadavg()
    print(
        f"Machine: {platform.node()}, {os.cpu_count()} cores; "
        f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC; load {load[0]:.2f} {load[1]:.2f} "
        f"{load[2]:.2f}; {launches} launches each, interleaved\n"
    )
    print("| tool | command | median | min |")
    print("|---|---|---|---|")
    for key, (tool, cmd) in labels.items():
        shown = " ".join([tool, *cmd[3 if cmd[0] == sys.executable else 1 :]])
        ts = times[key]
        med, low = statistics.median(ts) * 1e3, min(ts) * 1e3
        print(f"| {tool} | `{shown}` | {med:.0f} ms | {low:.0f} ms |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--launches", type=int, default=10)
    ap.add_argument(
        "--peers", action="store_true", help="time --version/--help beside hyperfine and pyperf"
    )
    ap.add_argument("--src", action="append", default=[], help="also run this source tree")
    ap.add_argument("--no-installed", action="store_true", help="run only the --src trees")
    args = ap.parse_args()
    if args.peers:
        peers(args.launches)
        return
    trees = [] if args.no_installed else [""]  # "": the installed tree
    trees += [str(Path(s).resolve()) for s in args.src]
    variants = [(t, q, c) for t in trees for q in (False, True) for c in (True, False)]
    times: dict[tuple[str, bool, bool], list[float]] = {v: [] for v in variants}
    cpus: dict[tuple[str, bool, bool], list[float]] = {v: [] for v in variants}
    mapped: dict[tuple[str, bool, bool], set[int]] = {v: set() for v in variants}
    for tree in trees:  # what an installed Assay has: its bytecode compiled
        compile_bytecode(tree)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for n, tree in enumerate(trees):  # fill each tree's warm cache
            launch(root / f"prime-{n}", root / f"warm-{n}", True, tree)
        for i in range(args.launches):
            for tree, quick, cold in variants:
                n = trees.index(tree)
                name = f"{i}-{n}-{'quick' if quick else 'study'}-{'cold' if cold else 'warm'}"
                cache = root / f"cache-{name}" if cold else root / f"warm-{n}"
                s, c, m = launch(root / name, cache, quick, tree)
                times[(tree, quick, cold)].append(s)
                cpus[(tree, quick, cold)].append(c)
                mapped[(tree, quick, cold)].add(m)
    load = os.getloadavg()
    print(
        f"Machine: {platform.node()}, {os.cpu_count()} cores, {platform.platform()}; "
        f"Python {platform.python_version()}; "
        f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC; "
        f"load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {args.launches} launches each\n"
    )
    print(
        "| tree | mode | user cache | median | min | max | CPU time (median) "
        "| SciPy/pandas objects mapped |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for tree, quick, cold in variants:
        ts = times[(tree, quick, cold)]
        got = mapped[(tree, quick, cold)]
        print(
            f"| {tree or 'installed'} | {'assay run -- CMD' if quick else 'assay run STUDY.toml'} "
            f"| {'cold' if cold else 'warm'} | {statistics.median(ts) * 1e3:.0f} ms "
            f"| {min(ts) * 1e3:.0f} ms | {max(ts) * 1e3:.0f} ms "
            f"| {statistics.median(cpus[(tree, quick, cold)]) * 1e3:.0f} ms "
            f"| {', '.join(str(m) for m in sorted(got))} |"
        )


if __name__ == "__main__":
    main()
