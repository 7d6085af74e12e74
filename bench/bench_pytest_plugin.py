"""Assay's pytest plugin beside pytest-benchmark on the same functions (#39).

Run from the repository root, with pytest-benchmark (5.x: 4.0 fails on pytest 9)
installed where Assay is (a separate virtual environment is best: ``python3 -m venv
--system-site-packages V && V/bin/pip install pytest-benchmark``)::

    V/bin/python bench/bench_pytest_plugin.py [--repetitions 50] [--threshold 1%]
        [--ci-width 5%]

(``--ci-width``: the plugin's ``--assay-ci-width``, its target for each run.)

Each repetition, for each tool, in a fresh project folder: a saved run of a CPU-bound
function (a sum over ``range(5000)``), then a run of the same function compared with it,
and a run of it made 5% slower (``range(5250)``) compared with it.  The comparison
flags a regression with the same threshold for both tools: Assay's gate
(``--assay-compare --assay-fail-if-worse T``: worse by more than T with the CI's
confidence) and pytest-benchmark's (``--benchmark-compare --benchmark-compare-fail
mean:T``: the mean worse by more than T, no interval).  A run is flagged when pytest
exits 1.  Prints a Markdown table: how often an unchanged function and a 5% slowdown
were flagged (with Clopper-Pearson 95% intervals), the median wall time of a run, and
the uncertainty each tool reports with its estimate (Assay: the CI's relative
half-width; pytest-benchmark: the standard deviation over the mean, the only spread it
shows), with the machine, date and load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scipy.stats import beta

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import machine_line

PROJECT = """
import os

N = int(5000 * float(os.environ.get("BENCH_SLOWDOWN", "1")))


def work():
    return sum(i * i for i in range(N))


def test_work({fixture}):
    {fixture}(work)
"""


def _pytest(folder: Path, args: list[str], slowdown: float) -> tuple[int, float, str]:
    env = {**os.environ, "BENCH_SLOWDOWN": str(slowdown), "PYTHONDONTWRITEBYTECODE": "1"}
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=folder, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    return done.returncode, time.perf_counter() - t0, done.stdout


def assay_round(folder: Path, threshold: str, ci_width: str) -> dict[str, object]:
    (folder / "test_b.py").write_text(PROJECT.format(fixture="assay_benchmark"))
    plain = ["-p", "no:benchmark", "--assay-max-time", "10", "--assay-ci-width", ci_width]
    gate = [*plain, "--assay-compare", "--assay-fail-if-worse", threshold]
    _, saved_s, out = _pytest(folder, plain, 1.0)
    rc_same, same_s, _ = _pytest(folder, gate, 1.0)
    rc_slow, slow_s, _ = _pytest(folder, gate, 1.05)
    spread = _assay_spread(out)
    return {"same": rc_same == 1, "slow": rc_slow == 1, "wall": [saved_s, same_s, slow_s],
            "spread": spread}  # fmt: skip


def _assay_spread(out: str) -> float:
    """The CI's relative half-width from the plugin's table (``123 µs ± 1.2%``)."""
    for line in out.splitlines():
        if "test_b.py::test_work" in line and "±" in line:
            return float(line.split("±")[1].split("%")[0]) / 100
    return float("nan")


def pytest_benchmark_round(folder: Path, threshold: str, ci_width: str) -> dict[str, object]:
    del ci_width  # (the plugin's own target: pytest-benchmark has none)
    (folder / "test_b.py").write_text(PROJECT.format(fixture="benchmark"))
    plain = ["-p", "no:assay", "--benchmark-storage", str(folder / ".benchmarks")]
    _, saved_s, _ = _pytest(folder, [*plain, "--benchmark-save", "base",
                                     "--benchmark-json", str(folder / "b.json")], 1.0)  # fmt: skip
    gate = [*plain, "--benchmark-compare", "0001", "--benchmark-compare-fail",
            f"mean:{threshold}"]  # fmt: skip
    rc_same, same_s, _ = _pytest(folder, gate, 1.0)
    rc_slow, slow_s, _ = _pytest(folder, gate, 1.05)
    stats = json.loads((folder / "b.json").read_text())["benchmarks"][0]["stats"]
    return {"same": rc_same == 1, "slow": rc_slow == 1, "wall": [saved_s, same_s, slow_s],
            "spread": stats["stddev"] / stats["mean"]}  # fmt: skip


def _rate(k: int, n: int) -> str:
    low = beta.ppf(0.025, k, n - k + 1) if k > 0 else 0.0
    high = beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    return f"{k}/{n} = {k / n:.0%} [{low:.0%}, {high:.0%}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repetitions", type=int, default=50)
    ap.add_argument("--threshold", default="1%")
    ap.add_argument("--ci-width", default="5%")
    args = ap.parse_args()
    load = os.getloadavg()
    tools = {"assay": assay_round, "pytest-benchmark": pytest_benchmark_round}
    got: dict[str, list[dict[str, object]]] = {t: [] for t in tools}
    for i in range(args.repetitions):
        for name, run in tools.items() if i % 2 == 0 else reversed(tools.items()):
            with tempfile.TemporaryDirectory() as tmp:
                got[name].append(run(Path(tmp), args.threshold, args.ci_width))
        print(f"repetition {i + 1}/{args.repetitions}", file=sys.stderr)
    what = (
        f"{args.repetitions} repetitions, threshold {args.threshold}, "
        f"--assay-ci-width {args.ci_width}"
    )
    print(machine_line(load, what) + "\n")
    print("| tool | unchanged flagged | 5% slower flagged | wall time per run (median) "
          "| reported uncertainty (median) |")  # fmt: skip
    print("|---|---|---|---|---|")
    for name, rows in got.items():
        n = len(rows)
        same = sum(bool(r["same"]) for r in rows)
        slow = sum(bool(r["slow"]) for r in rows)
        wall = statistics.median(w for r in rows for w in r["wall"])  # type: ignore[attr-defined]
        spread = statistics.median(float(r["spread"]) for r in rows)  # type: ignore[arg-type]
        what = "CI ±" if name == "assay" else "stddev/mean "
        print(f"| {name} | {_rate(same, n)} | {_rate(slow, n)} | {wall:.2f} s "
              f"| {what}{spread:.1%} |")  # fmt: skip


if __name__ == "__main__":
    main()
