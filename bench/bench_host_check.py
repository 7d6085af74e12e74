"""False alarms and power of the per-host check of `run`/`compare`/`order` (issue #41's
follow-up): host as a factor by the F test of ``y ~ host`` on the log scale
(`assay.studies.base.host_warnings`), against the Kruskal–Wallis test of the raw
readings it replaced (`assay.stats.hosts.host_effect`).

Each study: ``n`` trials of one setting spread over three alike hosts drawn with
probabilities 45/45/10% (dynamic dispatch: a slow host runs few trials), log-normal
readings (sd 0.1) with a share of 3x outliers; "slow": the third host's readings
multiplied by a factor. A warning at alpha 0.01 counts.

Run: python bench/bench_host_check.py [--studies 2000]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys

import numpy as np
from scipy import stats

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

from assay.execute.environment import cpu_model
from assay.spec import PISpec, parse_spec_data
from assay.stats.hosts import host_effect
from assay.store import TrialRecord
from assay.studies.base import HOST_ALPHA, host_warnings

SPEC = parse_spec_data(
    {"study": {"name": "b"}, "benchmark": {"command": ["true"]}, "pi": [{"name": "t"}]},
    source="bench",
)
PI: PISpec = SPEC.pis[0]


def one(rng: np.random.Generator, n: int, outliers: float, slow: float) -> tuple[bool, bool]:
    """(the F test warned, Kruskal-Wallis warned) for one study."""
    hosts = rng.choice(["a", "b", "c"], size=n, p=[0.45, 0.45, 0.1])
    y = rng.lognormal(0.0, 0.1, n) * np.where(rng.random(n) < outliers, 3.0, 1.0)
    y = y * np.where(hosts == "c", slow, 1.0)
    trials = [
        TrialRecord(seq=i, status="ok", host=str(h), readings={"t": float(v)})
        for i, (h, v) in enumerate(zip(hosts, y, strict=True))
    ]
    f_test = bool(host_warnings(SPEC, trials))
    groups = {h: [float(v) for g, v in zip(hosts, y, strict=True) if g == h] for h in set(hosts)}
    kw = host_effect(groups)
    return f_test, kw is not None and kw.p_value < HOST_ALPHA


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--studies", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=20261129)
    args = ap.parse_args()
    print(
        f"machine: {cpu_model()}, {os.cpu_count()} cores, {platform.system()} "
        f"{platform.release()}; date {datetime.date.today()}; load {os.getloadavg()[0]:.1f}"
    )
    print(f"{args.studies} studies per row, alpha {HOST_ALPHA}")
    print()
    print("| trials | 3x outliers | third host | F test of host (log) | Kruskal–Wallis |")
    print("|---|---|---|---|---|")
    rng = np.random.default_rng(args.seed)
    for n, outliers, slow in [
        (16, 0.0, 1.0), (16, 0.05, 1.0), (16, 0.1, 1.0), (40, 0.05, 1.0), (40, 0.1, 1.0),
        (16, 0.0, 14.0), (16, 0.05, 14.0), (40, 0.05, 14.0), (16, 0.0, 1.5), (40, 0.0, 1.5),
    ]:  # fmt: skip
        got = np.array([one(rng, n, outliers, slow) for _ in range(args.studies)])
        cells = []
        for k in (0, 1):
            hits = int(got[:, k].sum())
            ci = stats.binomtest(hits, args.studies).proportion_ci(0.95)
            cells.append(f"{hits / args.studies:.1%} [{ci.low:.1%}, {ci.high:.1%}]")
        what = "alike" if slow == 1.0 else f"×{slow:g}"
        print(f"| {n} | {outliers:.0%} | {what} | {cells[0]} | {cells[1]} |", flush=True)


if __name__ == "__main__":
    main()
