"""Decisions that survive drift and small samples (#58): error rates and power.

Run from the repository root::

    python bench/bench_drift_decision.py sim  [--pairs 2000] [--power 500]
    python bench/bench_drift_decision.py from [--pairs 300]
    python bench/bench_drift_decision.py real [--repetitions 20] [--busy 2]

``sim``: the drift-surviving decision (:mod:`assay.stats.drift_bound`: two runs apart
when even their block ranges are, 10 blocks each) on simulated runs.  A/A pairs (any
decision is false, threshold 0, both directions) whose readings are lognormal (CV ~20%),
AR(1) with phi 0.5, 0.8 or 0.9 along the run, and drift up 30% over the run (the same
drift in both: a machine that warms up); and the slow-downs a gate must catch, 2x and
4x, under a drift of 1.6x in each run (the issue's busy machine) and CV ~30%, judged
at a 5% threshold.  And the rate a comparison that asks after every cycle would have
(A/A, 300 samples each): asked at every sample from 30, or only at ``look_prefix``'s
looks (60, 90, 135, ...: what ``assay compare`` does).

``from``: ``assay compare --from``'s analysis of two variants' raw samples
(``compare_pi``): Pilot's merging (the rule before #58) against the live comparison's
small-sample rule (``independence_alpha``), on i.i.d. normal samples (CV 10%) with a
2x gap and A/A at alpha 0.01 (i.i.d., AR(1) 0.5 and 0.8), at 10 and 20 samples.

``real``: the pytest plugin's gate at a busy machine (``--busy`` loops of ``sh``
beside it): each repetition stores a run of a CPU-bound function in a fresh project,
then runs it 2x and 4x slower with ``--assay-compare --assay-fail-if-worse 5%``
(each against the stored run), and an unchanged run; counts exit 1, and how many
verdicts rested on the drift bound.

Prints Markdown tables with the machine, date and load; proportions carry
Clopper-Pearson 95% intervals.
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from scipy.stats import beta

sys.path.insert(0, str(Path(__file__).resolve().parent))
from assay.privatefs import private_temp
from assay.stats.drift_bound import block_means, block_ratio_bound, look_prefix
from machine import machine_line


def rate(k: int, n: int) -> str:
    low = beta.ppf(0.025, k, n - k + 1) if k > 0 else 0.0
    high = beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    return f"{k}/{n} = {k / n:.2%} [{low:.2%}, {high:.2%}]"


def ar1(rng: np.random.Generator, n: int, phi: float) -> np.ndarray:
    e = rng.normal(size=n) * math.sqrt(1 - phi * phi)
    x = np.empty(n)
    x[0] = rng.normal()
    for i in range(1, n):
        x[i] = phi * x[i - 1] + e[i]
    return x


def run(rng: np.random.Generator, n: int, phi: float, cv: float, drift: float) -> np.ndarray:
    return (1 + np.linspace(0, drift, n)) * np.exp(cv * ar1(rng, n, phi))


def decided(a: np.ndarray, b: np.ndarray, threshold: float) -> bool:
    ca, cb = block_means(a), block_means(b)
    if ca is None or cb is None:
        return False
    r = block_ratio_bound(ca, cb)
    return r is not None and (r.low > threshold or r.high < -threshold)


def sim(pairs: int, power: int) -> None:
    rng = np.random.default_rng(58)
    print("| readings | n a run | A/A decided (threshold 0, two-sided) |")
    print("|---|---|---|")
    for phi in (0.5, 0.8, 0.9):
        for n in (30, 52, 100):
            k = sum(
                decided(run(rng, n, phi, 0.2, 0.3), run(rng, n, phi, 0.2, 0.3), 0.0)
                for _ in range(pairs)
            )
            print(f"| AR(1) {phi}, drift +30%, CV 20% | {n} | {rate(k, pairs)} |")
    print()
    print("| readings | asked | A/A decided at any look, 300 samples (two-sided) |")
    print("|---|---|---|")
    for phi in (0.5, 0.8, 0.9):
        for how in ("every sample from 30", "at the looks (look_prefix)"):
            k = 0
            for _ in range(pairs // 4):
                a, b = run(rng, 300, phi, 0.2, 0.3), run(rng, 300, phi, 0.2, 0.3)
                if how.startswith("every"):
                    sizes = sorted(set(range(30, 301)))
                else:
                    sizes = sorted({look_prefix(n) for n in range(60, 301)})
                k += any(decided(a[:m], b[:m], 0.0) for m in sizes)
            print(f"| AR(1) {phi}, drift +30%, CV 20% | {how} | {rate(k, pairs // 4)} |")
    print()
    print("| slow-down | readings | n a run | decided worse beyond 5% |")
    print("|---|---|---|---|")
    for ratio in (2.0, 4.0):
        for phi in (0.5, 0.8):
            for n in (30, 52, 100):
                k = sum(
                    decided(ratio * run(rng, n, phi, 0.3, 0.6), run(rng, n, phi, 0.3, 0.6), 0.05)
                    for _ in range(power)
                )
                print(f"| {ratio:g}x | AR(1) {phi}, drift 1.6x, CV 30% | {n} | {rate(k, power)} |")


def from_rules(pairs: int) -> None:
    from assay.designs.compare import compare_pi
    from assay.designs.run_until_ci import INDEPENDENCE_ALPHA

    rng = np.random.default_rng(10)

    def decides(a: np.ndarray, b: np.ndarray, rule: float | None) -> bool:
        c = compare_pi("t", "s", "lower", {"a": a, "b": b}, alpha=0.01, independence_alpha=rule)
        return c.ranking.decided

    print("| samples | n | Pilot's merging (before) | the live rule (now) |")
    print("|---|---|---|---|")
    cases = [
        ("2x, i.i.d. CV 10%", lambda n: (rng.normal(2, 0.2, n), rng.normal(1, 0.1, n))),
        ("A/A i.i.d. CV 10%", lambda n: (rng.normal(1, 0.1, n), rng.normal(1, 0.1, n))),
        ("A/A AR(1) 0.5", lambda n: (1 + 0.1 * ar1(rng, n, 0.5), 1 + 0.1 * ar1(rng, n, 0.5))),
        ("A/A AR(1) 0.8", lambda n: (1 + 0.1 * ar1(rng, n, 0.8), 1 + 0.1 * ar1(rng, n, 0.8))),
    ]
    for name, make in cases:
        for n in (10, 20):
            data = [make(n) for _ in range(pairs)]
            before = sum(decides(a, b, None) for a, b in data)
            now = sum(decides(a, b, INDEPENDENCE_ALPHA) for a, b in data)
            print(f"| {name} | {n} | {rate(before, pairs)} | {rate(now, pairs)} |")


PROJECT = """
import os

N = int(20000 * float(os.environ.get("BENCH_SLOWDOWN", "1")))


def work():
    return sum(i * i for i in range(N))


def test_work(assay_benchmark):
    assay_benchmark(work)
"""


def pytest_run(folder: Path, slowdown: float, gate: bool) -> tuple[int, str]:
    env = {**os.environ, "BENCH_SLOWDOWN": str(slowdown), "PYTHONDONTWRITEBYTECODE": "1"}
    args = ["--assay-max-time", "10", "-p", "no:cacheprovider"]
    if gate:
        args += ["--assay-compare", "--assay-fail-if-worse", "5%", "--assay-reference", "base"]
    else:
        args += ["--assay-save", "base"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *args],
        cwd=folder, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    return done.returncode, done.stdout


def real(repetitions: int, busy: int) -> None:
    loops = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(busy)]
    counts = {s: [0, 0, 0] for s in (1.0, 2.0, 4.0)}  # exit 1, drift bound, runs
    try:
        for i in range(repetitions):
            with private_temp("assay-bench-drift-") as folder:
                (folder / "test_b.py").write_text(PROJECT)
                pytest_run(folder, 1.0, gate=False)
                for s in (2.0, 4.0, 1.0):
                    rc, out = pytest_run(folder, s, gate=True)
                    c = counts[s]
                    c[0] += rc == 1
                    c[1] += "block means of each run" in out
                    c[2] += 1
                    verdict = [x for x in out.splitlines() if "test_work:" in x]
                    print(f"rep {i} x{s:g}: rc {rc}: {verdict[:1]}", file=sys.stderr)
    finally:
        for p in loops:
            p.kill()
    print(f"| code | gate failed (exit 1) | of which by the drift bound | ({busy} busy loops) |")
    print("|---|---|---|---|")
    for s, (k, bound, n) in counts.items():
        what = "unchanged" if s == 1.0 else f"{s:g}x slower"
        print(f"| {what} | {rate(k, n)} | {bound} | |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("part", choices=["sim", "from", "real"])
    ap.add_argument("--pairs", type=int, default=0, help="A/A pairs (sim 2000, from 300)")
    ap.add_argument("--power", type=int, default=500, help="pairs per slow-down case (sim)")
    ap.add_argument("--repetitions", type=int, default=20, help="real: repetitions")
    ap.add_argument("--busy", type=int, default=2, help="real: busy loops beside it")
    a = ap.parse_args()
    start = os.getloadavg()
    if a.part == "sim":
        sim(a.pairs or 2000, a.power)
    elif a.part == "from":
        from_rules(a.pairs or 300)
    else:
        real(a.repetitions, a.busy)
    print()
    print(machine_line(start, f"bench_drift_decision.py {' '.join(sys.argv[1:])}"))


if __name__ == "__main__":
    main()
