"""Benchmark EDM-percent change-point detection and Pilot's dominant segment.

Run as ``python bench/bench_changepoint.py``. Prints the machine, the date and
a Markdown table: for each series length and method, the wall-clock seconds
of one call, the change points found and the dominant segment, against the
truth (a linear warm-up ramp of ``W`` readings from 0 to 10, then stable
N(10, 1) readings, so the stable phase starts at ``W``).
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

try:
    from assay.stats.changepoint import detect_change_points, dominant_segment, edm_percent
except ImportError:  # not installed: use the checkout's src/
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from assay.stats.changepoint import detect_change_points, dominant_segment, edm_percent
from assay.execute.environment import cpu_model


def warm_up_series(n: int, seed: int = 0, kind: str = "ramp") -> tuple[np.ndarray, int]:
    """Warm-up over 5% of the readings (at least 100), then N(10, 1).

    ``kind="ramp"``: the warm-up mean rises linearly from 0 to 10;
    ``kind="step"``: the warm-up mean is 7.
    """
    rng = np.random.default_rng(seed)
    w = max(100, n // 20)
    warm = np.linspace(0.0, 10.0, w, endpoint=False) if kind == "ramp" else np.full(w, 7.0)
    mean = np.concatenate([warm, np.full(n - w, 10.0)])
    return mean + rng.normal(0.0, 1.0, n), w


def timed(func: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = func()
    return time.perf_counter() - start, result


def fmt_points(points: list[int] | tuple[int, ...], limit: int = 6) -> str:
    shown = ", ".join(str(p) for p in points[:limit])
    more = f", ... ({len(points)} in all)" if len(points) > limit else ""
    return f"[{shown}{more}]"


def main() -> None:
    print("# EDM-percent change-point detection benchmark\n")
    print(f"- date: {dt.datetime.now().astimezone().isoformat(timespec='seconds')}")
    print(f"- CPU: {cpu_model()}, {os.cpu_count()} logical cores")
    print(f"- Python {platform.python_version()}, numpy {np.__version__}, pandas {pd.__version__}")
    print(
        "- series: warm-up of W = max(100, n/20) readings, then N(10, 1); truth = W;"
        " warm-up 'ramp': mean 0 -> 10 linearly, 'step': mean 7"
    )
    print("- parameters: min_size=30, percent=0.25, degree=1 (Pilot's)\n")

    rows: list[tuple[str, ...]] = []

    def add(
        n: int,
        method: str,
        max_exact: str,
        seconds: float,
        points: Any,
        seg: Any,
        w: int,
        kind: str = "ramp",
        have_seg: bool = True,
    ) -> None:
        if not have_seg:
            seg_txt = "-"
        else:
            seg_txt = "none" if seg is None else f"[{seg.begin:,}, {seg.end:,})"
        rows.append(
            (
                f"{n:,}",
                kind,
                method,
                max_exact,
                f"{seconds:.3f}",
                fmt_points(points),
                seg_txt,
                f"{w:,}",
            )
        )
        print(" | ".join(rows[-1]), file=sys.stderr, flush=True)

    for n in (1000, 2000, 4000):
        x, w = warm_up_series(n)
        seconds, points = timed(lambda x=x: edm_percent(x))
        seg = dominant_segment(x)
        add(n, "edm_percent (exact)", "-", seconds, points, seg, w)

    for n in (10_000, 100_000, 1_000_000):
        x, w = warm_up_series(n)
        seconds, points = timed(lambda x=x: detect_change_points(x))
        add(n, "detect_change_points", "4000", seconds, points, None, w, have_seg=False)
        seconds, seg = timed(lambda x=x: dominant_segment(x))
        add(n, "dominant_segment", "4000", seconds, seg.change_points if seg else [], seg, w)

    for n in (10_000, 100_000, 1_000_000):
        x, w = warm_up_series(n, kind="step")
        seconds, seg = timed(lambda x=x: dominant_segment(x))
        points = seg.change_points if seg else []
        add(n, "dominant_segment", "4000", seconds, points, seg, w, kind="step")

    x, w = warm_up_series(1_000_000)
    for max_exact in (1000, 2000):
        seconds, seg = timed(lambda me=max_exact: dominant_segment(x, max_exact=me))
        points = seg.change_points if seg else []
        add(1_000_000, "dominant_segment", str(max_exact), seconds, points, seg, w)

    header = (
        "n",
        "warm-up",
        "method",
        "max_exact",
        "seconds",
        "change points found",
        "dominant segment",
        "truth W",
    )
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
