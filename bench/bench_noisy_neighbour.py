"""The README's main command beside a reproducible noisy neighbour (#36).

Runs ``assay sweep examples/sqlite-sweep.toml`` (in a scratch folder, its own store)
quiet, then with a neighbour that keeps every core busy for a random half of the time
in bursts of seconds, under ``interference = "warn"`` (the default), ``"wait"`` and
``"repeat"``;
prints, per run, the settings measured, wall time, the stop reason, the significant
parameters and the interference line, as a Markdown table for bench/RESULTS.md.

The neighbour is seeded: bursts and pauses are drawn from U(1, 4) s, one busy loop per
core during a burst. Run: python bench/bench_noisy_neighbour.py [--modes quiet,warn,wait,repeat]
[--seed 1] [--study examples/sqlite-sweep.toml]
"""

from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing
import os
import platform
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _burn(stop_at: float) -> None:
    while time.monotonic() < stop_at:
        pass


def neighbour(seed: int) -> None:
    """Busy loops on every core for a random half of the time, until killed."""
    rng = random.Random(seed)
    cores = os.cpu_count() or 1
    while True:
        burst = rng.uniform(1.0, 4.0)
        procs = [
            multiprocessing.Process(target=_burn, args=(time.monotonic() + burst,))
            for _ in range(cores)
        ]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
        time.sleep(rng.uniform(1.0, 4.0))


def one_run(study: Path, mode: str, seed: int, work: Path) -> dict[str, Any]:
    folder = work / mode
    folder.mkdir()
    text = study.read_text(encoding="utf-8")
    if mode in ("wait", "repeat"):
        text += f'\n[stop]\ninterference = "{mode}"\n'
    target = folder / study.name
    target.write_text(text, encoding="utf-8")
    out = folder / "result.json"
    noisy = None
    if mode != "quiet":
        noisy = multiprocessing.Process(target=neighbour, args=(seed,))  # has children
        noisy.start()
    t0 = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "assay", "sweep", str(target), "--json", str(out)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        wall = time.monotonic() - t0
        if noisy is not None:
            noisy.kill()
            time.sleep(4.5)  # its last burst's loops end by themselves within 4 s
    doc = json.loads(out.read_text()) if out.exists() else {}
    lines = done.stdout.splitlines() + done.stderr.splitlines()
    seen = [ln for ln in lines if ln.startswith("interference")]
    return {
        "mode": mode,
        "exit": done.returncode,
        "wall_s": wall,
        "doc": doc,
        "interference": " ".join(seen)[:240],
        "gate": _gate((doc.get("resources") or {}).get("interference", {}).get("waits")),
        "tail": "\n".join(lines[-5:]),
    }


def _summary(doc: dict[str, Any]) -> tuple[str, str, str, str]:
    """Settings measured, stop reason, significant terms, last step's min R² / ceiling."""
    steps = doc.get("steps") or []
    last = steps[-1] if steps else {}
    measured = str(doc.get("settings_measured", "?"))
    reason = str(doc.get("reason") or "?")
    analysis = doc.get("analysis") or {}
    sig = ", ".join(str(r.get("term", r.get("name", r))) for r in analysis.get("significant", []))
    ceiling = (last.get("r2_ceiling") or [None])[0]
    r2 = f"{_g(last.get('r2_min'))} / {_g(ceiling)}"
    return measured, reason[:60], sig[:110], r2


def _gate(waits: dict[str, float] | None) -> str:
    """What ``wait`` / ``repeat`` did: trials held (seconds), trials measured again."""
    if not waits:
        return "—"
    return (
        f"held {int(waits['waits'])} ({waits['waited_s']:.0f} s), "
        f"repeated {int(waits.get('repeated', 0))} (kept {int(waits.get('kept_disturbed', 0))})"
    )


def _g(x: Any) -> str:
    return f"{x:.3f}" if isinstance(x, int | float) else "n/a"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--modes", default="quiet,warn,wait,repeat")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--study", type=Path, default=ROOT / "examples" / "sqlite-sweep.toml")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    print(
        f"machine: {platform.node()}, {os.cpu_count()} cores, {platform.system()} "
        f"{platform.release()}; {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; "
        f"load {os.getloadavg()[0]:.1f}; study {args.study.name}; neighbour seed {args.seed}"
    )
    print()
    print(
        "| run | exit | wall time | settings measured | stop reason | min R² / ceiling | "
        "significant | interference | wait / repeat |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    work = Path(tempfile.mkdtemp(prefix="assay-noisy-"))
    try:
        for mode in args.modes.split(","):
            r = one_run(args.study, mode, args.seed, work)
            measured, reason, sig, r2 = _summary(r["doc"])
            print(
                f"| {mode} | {r['exit']} | {r['wall_s']:.0f} s | {measured} | {reason} | "
                f"{r2} | {sig} | {r['interference']} | {r['gate']} |",
                flush=True,
            )
            if not r["doc"]:
                print(r["tail"], file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
