"""How much Assay's own instrumentation adds to a measured wall time (Pilot §III-C).

Pilot measures overhead by running the same work with and without its instrumentation.
Here the "work" is a no-op program: it is launched through Assay's executor (process
group, output capture, resource accounting) and through a bare ``subprocess.run``,
alternating, and the difference of the mean wall times is reported with its Welch
confidence interval.

>>> o = measure_launch_overhead(repetitions=5)
>>> o.repetitions
5
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from assay.execute.command import run_command


@dataclass(frozen=True)
class LaunchOverhead:
    """Extra wall time per trial from Assay's executor vs a bare subprocess launch."""

    with_assay_s: float
    without_assay_s: float
    difference_s: float
    difference_low_s: float
    difference_high_s: float
    repetitions: int
    probe: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _noop_argv() -> list[str]:
    true = shutil.which("true")
    return [true] if true else [sys.executable, "-c", ""]


def measure_launch_overhead(repetitions: int = 20, confidence: float = 0.95) -> LaunchOverhead:
    """Alternate executor and bare launches of a no-op program; compare mean wall times."""
    argv = _noop_argv()
    with_s: list[float] = []
    without_s: list[float] = []
    for _ in range(repetitions):
        with_s.append(run_command(argv, timeout=30).duration)
        t0 = time.perf_counter()
        subprocess.run(argv, check=False)
        without_s.append(time.perf_counter() - t0)
    a = np.asarray(with_s)
    b = np.asarray(without_s)
    diff = float(a.mean() - b.mean())
    if repetitions >= 2:
        from scipy import stats  # here: SciPy takes ~1 s to import, before the first trial

        res = stats.ttest_ind(a, b, equal_var=False)
        ci = res.confidence_interval(confidence)
        low, high = float(ci.low), float(ci.high)
    else:
        low, high = -np.inf, np.inf
    return LaunchOverhead(
        with_assay_s=float(a.mean()),
        without_assay_s=float(b.mean()),
        difference_s=diff,
        difference_low_s=low,
        difference_high_s=high,
        repetitions=repetitions,
        probe=" ".join(argv),
    )
