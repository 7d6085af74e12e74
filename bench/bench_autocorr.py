"""Benchmark autocorrelation and subsession analysis on 10 million samples.

Run from the repository root::

    python bench/bench_autocorr.py [--n 10000000] [--repeat 3]

Prints a Markdown table: for AR(1) series with phi = 0.5 and 0.9 and an i.i.d.
series, the best-of-``repeat`` wall time of :func:`autocorrelation`,
:func:`optimal_subsession` and :func:`subsession_interval`, the subsession
size found, and the theoretical one.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TypeVar

import numpy as np
import numpy.typing as npt
from scipy.signal import lfilter

try:
    from assay.stats.autocorr import autocorrelation, optimal_subsession, subsession_interval
except ModuleNotFoundError:  # a checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from assay.stats.autocorr import autocorrelation, optimal_subsession, subsession_interval
from assay.execute.environment import cpu_model, usable_cores

T = TypeVar("T")


def ar1(phi: float, n: int, seed: int) -> npt.NDArray[np.float64]:
    e = np.random.default_rng(seed).standard_normal(n)
    if phi == 0.0:
        return e
    return np.asarray(lfilter([1.0], [1.0, -phi], e), dtype=np.float64)


def theory_q(phi: float, limit: float = 0.1) -> int:
    """Smallest q with r1 of AR(1) block means <= limit (see tests/test_autocorr.py)."""
    q = 1
    while True:
        r = phi * (1 - phi**q) ** 2 / (q * (1 - phi**2) - 2 * phi * (1 - phi**q)) if phi else 0.0
        if r <= limit:
            return q
        q += 1


def best_time(fn: Callable[[], T], repeat: int) -> tuple[float, T]:
    best = float("inf")
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--n", type=int, default=10_000_000, help="samples per series")
    parser.add_argument("--repeat", type=int, default=3, help="timings per cell (best kept)")
    args = parser.parse_args(argv)
    n: int = args.n
    repeat: int = args.repeat

    rows = []
    for label, phi in (("i.i.d. normal", 0.0), ("AR(1) phi=0.5", 0.5), ("AR(1) phi=0.9", 0.9)):
        x = ar1(phi, n, seed=12345)
        t_acf, r1 = best_time(partial(autocorrelation, x), repeat)
        t_opt, sub = best_time(partial(optimal_subsession, x), repeat)
        t_int, got = best_time(partial(subsession_interval, x), repeat)
        q = sub.size if sub is not None else None
        r1_merged = sub.autocorrelation if sub is not None else float("nan")
        ci = got[0] if got is not None else None
        rows.append(
            (
                label,
                f"{r1:.4f}",
                f"{t_acf:.3f}",
                f"{t_opt:.3f}",
                f"{t_int:.3f}",
                str(q),
                str(theory_q(phi)),
                f"{r1_merged:.4f}",
                f"{ci.mean:+.5f} ± {ci.half_width:.5f}" if ci is not None else "-",
            )
        )

    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(f"# bench_autocorr: n = {n:,} samples per series, best of {repeat}")
    print()
    print(f"- machine: {cpu_model()}, {usable_cores()} usable cores ({os.cpu_count()} online)")
    print(f"- date: {now}")
    print(f"- python {platform.python_version()}, numpy {np.__version__}")
    print()
    header = (
        "series",
        "r1",
        "autocorrelation s",
        "optimal_subsession s",
        "subsession_interval s",
        "q found",
        "q theory",
        "r1 merged",
        "95% CI of mean",
    )
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
