"""``assay history --run-commits`` beside a noisy neighbour: interleaved vs sequential (#36).

A scratch git repository of 12 commits whose benchmark hashes a file (CPU-bound, so
a neighbour on the CPU slows it): in the "same" history every commit after the first
only adds a comment; in the "step" history the file hashed grows by 5% from the 7th
commit on. Each history is measured ``--reps`` times interleaved (the default) and as
many times ``--sequential``, each time in a fresh store, beside the seeded neighbour of
``bench_noisy_neighbour.py`` (busy loops on every core for U(1, 4) s, then a pause of
U(1, 4) s) that runs for the whole benchmark. Reported per order and history: the
repetitions with a step called worse or better (its CI excludes 0: a false regression
in "same"), with a possible change only, and in "step" those that found the step
(worse, at the 7th commit or next to it); wall time per history.

Run: python bench/bench_history_neighbour.py [--reps 20] [--step-reps 5] [--seed 1]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_noisy_neighbour import neighbour

COMMITS = 12
STEP_AT = 7  # the first commit with the bigger file (1-based)
SIZE = 6_000_000  # bytes hashed per trial (~15 ms of sha256 on the development VM)
POLICIES = ("warn", "wait")  # [stop] interference

STUDY = """\
[study]
name = "hash"

[benchmark]
command = ["sh", "bench.sh"]
git_repo = "."

[stop]
ci_width = 0.03
min_rounds = 10
max_rounds = {max_rounds}
max_time = {max_time}
interference = "{interference}"
"""


def git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@example.invalid",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    }
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout.strip()


def make_repo(
    folder: Path, step: bool, max_rounds: int = 60, max_time: float = 20.0
) -> tuple[Path, str, str]:
    """The repository, its base commit (the data, not measured) and its last commit."""
    repo = folder / ("step" if step else "same")
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "data").write_bytes(os.urandom(SIZE * 2))
    for policy in POLICIES:
        text = STUDY.replace("{interference}", policy).replace("{max_rounds}", str(max_rounds))
        text = text.replace("{max_time}", f"{max_time:g}")
        (repo / f"study-{policy}.toml").write_text(text, encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    base = git(repo, "rev-parse", "HEAD")
    for i in range(1, COMMITS + 1):
        size = int(SIZE * 1.05) if step and i >= STEP_AT else SIZE
        comments = "".join(f"# comment {k}\n" for k in range(i))
        (repo / "bench.sh").write_text(
            f"{comments}head -c {size} data | sha256sum > /dev/null\n", encoding="utf-8"
        )
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"commit {i}")
    return repo, base, git(repo, "rev-parse", "HEAD")


def one_history(
    repo: Path,
    base: str,
    last: str,
    store: Path,
    sequential: bool,
    seed: int,
    policy: str,
    block: int | None = None,
) -> dict[str, Any]:
    """One ``assay history --run-commits base..last`` in a fresh store."""
    cmd = [
        "assay", "history", "--run-commits", f"{base}..{last}", "--store", str(store),
        "--json", "-", "-q", "--no-overhead",
    ]  # fmt: skip
    cmd += ["--sequential"] if sequential else ["--order-seed", str(seed)]
    cmd += [] if block is None or sequential else ["--block", str(block)]
    cmd += ["--", str(repo / f"study-{policy}.toml")]
    t0 = time.monotonic()
    done = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, check=False)
    wall = time.monotonic() - t0
    try:
        out = json.loads(done.stdout)
    except json.JSONDecodeError:
        return {"exit": done.returncode, "wall": wall, "changes": [], "error": done.stderr[-400:]}
    return {
        "exit": done.returncode,
        "wall": wall,
        "changes": out["changes"],
        "points": out["points"],
    }


def found_step(changes: list[dict[str, Any]], points: list[dict[str, Any]]) -> bool:
    """A change called worse at the step's commit or next to it."""
    order = [p["revision"] for p in points]
    for c in changes:
        at = order.index(c["revision"]) + 1 if c["revision"] in order else -9
        if c["verdict"] == "worse" and abs(at - STEP_AT) <= 1:
            return True
    return False


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--step-reps", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--orders",
        default="interleaved:warn,sequential:warn,interleaved:wait,sequential:wait",
        help="order:interference pairs",
    )
    ap.add_argument("--quiet", action="store_true", help="no neighbour")
    ap.add_argument("--block", type=int, help="--block of the interleaved runs")
    ap.add_argument("--max-rounds", type=int, default=60, help="[stop] max_rounds per commit")
    ap.add_argument("--max-time", type=float, default=20.0, help="[stop] max_time per commit")
    args = ap.parse_args()
    load = os.getloadavg()[0]
    started = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    noisy = None
    if not args.quiet:
        noisy = multiprocessing.Process(target=neighbour, args=(args.seed,))
        noisy.start()
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            for kind, reps in (("same", args.reps), ("step", args.step_reps)):
                if not reps:
                    continue
                repo, base, last = make_repo(work, kind == "step", args.max_rounds, args.max_time)
                for pair in args.orders.split(","):
                    order, policy = pair.split(":")
                    got = []
                    for r in range(reps):
                        store = work / f"{kind}-{order}-{policy}-{r}.assay.db"
                        sequential = order == "sequential"
                        h = one_history(repo, base, last, store, sequential, r, policy, args.block)
                        got.append(h)
                        flagged = [c["verdict"] for c in h["changes"]]
                        print(f"{kind} {pair} {r}: exit {h['exit']} {h['wall']:.0f} s "
                              f"{flagged} {h.get('error', '')}", flush=True)  # fmt: skip
                    rows.append((kind, pair, got))
    finally:
        if noisy is not None:
            noisy.terminate()
            noisy.join()
    print(f"\n{started}, load {load:.2f} before, neighbour {'off' if args.quiet else 'on'}")
    print("| history | order : interference | repetitions | step called worse/better "
          "| possible change only | step found | commits with a valid CI (median of 12) "
          "| wall time per history (median) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for kind, order, got in rows:
        called = sum(any(c["verdict"] != "possible" for c in h["changes"]) for h in got)
        possible = sum(
            bool(h["changes"]) and all(c["verdict"] == "possible" for c in h["changes"])
            for h in got
        )
        found = (
            str(sum(found_step(h["changes"], h.get("points", [])) for h in got))
            if kind == "step"
            else "—"
        )
        walls = sorted(h["wall"] for h in got)
        valid = sorted(sum(p.get("low") is not None for p in h.get("points", [])) for h in got)
        print(f"| {kind} | {order} | {len(got)} | {called} | {possible} | {found} | "
              f"{valid[len(valid) // 2]} | {walls[len(walls) // 2]:.0f} s |")  # fmt: skip


if __name__ == "__main__":
    main()
