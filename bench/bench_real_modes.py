"""A real benchmark whose rounds land in different modes: old rule vs new (issue #21).

The benchmark (``bench/data/hash_modes.py``) times lookups of absent keys in a small
dict; where the string hashes land, and so how long the probe sequences are, is decided
per process by Python's hash randomisation (``PYTHONHASHSEED``). Unit readings inside a
process agree; processes differ. Each round is one process with a fresh random seed.

We run ``--rounds`` processes, then replay the stopping rule of ``assay run`` after each
round with the old analysis (a subsession t-interval on all unit readings, Pilot's
merging rule, no round level, no minimum of rounds) and the new one (``analyze_pi``),
for a ±``--ci-width`` target, and report where each would have stopped and whether its
interval covers the "truth": the mean of all round means of the whole run (a proxy,
resting on ``--rounds`` processes; its own 95% CI is printed beside it).

Run: python bench/bench_real_modes.py [--rounds 60] [--ci-width 0.02]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

from assay.designs.run_until_ci import RoundData, analyze_pi, decide, round_segment
from assay.execute.environment import cpu_model
from assay.spec import PISpec, StopSpec
from assay.stats.autocorr import subsession_interval
from assay.stats.intervals import t_interval

HERE = os.path.dirname(os.path.abspath(__file__))


def one_round() -> np.ndarray:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONHASHSEED"}  # random per process
    out = subprocess.run(
        [sys.executable, os.path.join(HERE, "data", "hash_modes.py")],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stdout
    return np.array([float(line.split()[1]) for line in out.splitlines()])


def old_stop(rounds: list[np.ndarray], stop: StopSpec) -> tuple[int, float, float]:
    """Pilot's rule as Assay had it: subsession t-interval over all unit readings."""
    streak = 0
    for k in range(1, len(rounds) + 1):
        x = np.concatenate(rounds[:k])
        got = subsession_interval(x, stop.confidence, correct_residual=True)
        if got is None:
            streak = 0
            continue
        ci, _ = got
        met = ci.n >= stop.min_samples and ci.relative_half_width <= stop.ci_width
        streak = streak + 1 if met else 0
        if streak >= stop.confirm_rounds:
            return k, ci.low, ci.high
    return len(rounds), float("nan"), float("nan")


def new_stop(rounds: list[np.ndarray], stop: StopSpec) -> tuple[int, float, float, str]:
    pi = PISpec(name="t", unit="ms")
    data: list[RoundData] = []
    streak = 0
    res = None
    for units in rounds:
        data.append(RoundData(units=units, duration=1.0, segment=round_segment(units)))
        res = analyze_pi(pi, data, stop)
        d = decide(
            [res],
            [pi],
            stop,
            rounds_done=len(data),
            rounds_failed=0,
            elapsed=0.0,
            met_streak=streak,
        )
        if d.done:
            return len(data), res.low, res.high, res.note
        streak = streak + 1 if d.target_met else 0
    assert res is not None
    return len(rounds), res.low, res.high, res.note


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--ci-width", type=float, default=0.02)
    ap.add_argument("--replays", type=int, default=20, help="random orders of the rounds")
    args = ap.parse_args()
    print(
        f"machine: {cpu_model()}, {os.cpu_count()} cores, {platform.system()} "
        f"{platform.release()}; date {datetime.datetime.now():%Y-%m-%d %H:%M}; "
        f"load {os.getloadavg()[0]:.1f}"
    )
    rounds = [one_round() for _ in range(args.rounds)]
    means = np.array([r.mean() for r in rounds])
    truth = t_interval(means)
    print(
        f"{args.rounds} processes x {rounds[0].size} unit readings; round means "
        f"{means.min():.3f}..{means.max():.3f} ms; all-rounds mean {truth.mean:.4f} ms "
        f"[{truth.low:.4f}, {truth.high:.4f}]; within-round sd "
        f"{np.mean([r.std(ddof=1) for r in rounds]):.4f} ms"
    )
    stop = StopSpec(ci_width=args.ci_width, max_rounds=args.rounds)
    rng = np.random.default_rng(1)
    rows = []
    for _ in range(args.replays):
        order = [rounds[i] for i in rng.permutation(len(rounds))]
        ko, lo_o, hi_o = old_stop(order, stop)
        kn, lo_n, hi_n, _note = new_stop(order, stop)
        rows.append((ko, lo_o <= truth.mean <= hi_o, kn, lo_n <= truth.mean <= hi_n))
    print()
    print(
        f"{args.replays} replays of the {args.rounds} rounds in random orders, target "
        f"±{args.ci_width:.0%}:"
    )
    print()
    print("| rule | rounds at stop (median) | CI covers the all-rounds mean |")
    print("|---|---|---|")
    for name, k, c in (("old (unit readings)", 0, 1), ("new (analyze_pi)", 2, 3)):
        print(
            f"| {name} | {np.median([r[k] for r in rows]):.0f} | "
            f"{sum(r[c] for r in rows)} of {len(rows)} |"
        )


if __name__ == "__main__":
    main()
