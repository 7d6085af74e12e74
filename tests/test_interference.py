"""The interference watch (issue #36): per watched trial, the cores other processes kept
busy (the machine's busy cores less the trial's own CPU time and the watch's); the
report says how many trials they disturbed, and a CPU bottleneck they caused is put
down to them, not to the benchmark."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from assay.cli import main
from assay.execute.monitor import (
    DISTURBED_CORES,
    ResourceSummary,
    Stat,
    bottleneck_warnings,
    interference_dict,
    others_cores,
    series_from_counters,
    summarize,
)


def _series(
    busy0: float, busy1: float, seconds: float = 0.2, steps: int = 4
) -> dict[str, np.ndarray]:
    """Two cores busy ``busy0`` and ``busy1`` of the time, read ``steps + 1`` times."""
    t = np.linspace(0.0, seconds, steps + 1)
    busy = np.column_stack([busy0 * t, busy1 * t])
    total = np.column_stack([t, t])
    return series_from_counters(t, busy, total, np.full(steps + 1, 10.0))


def test_the_busy_cores_are_the_machines_cpu_over_the_trial() -> None:
    assert summarize(_series(1.0, 0.5)).busy_cores == pytest.approx(1.5)
    assert summarize(_series(0.0, 0.0)).busy_cores == pytest.approx(0.0)
    # a trial shorter than a core's 40 ms window: not known
    assert math.isnan(summarize(_series(1.0, 1.0, seconds=0.02, steps=1)).busy_cores)


def test_others_are_the_busy_cores_less_the_trial_and_the_watch() -> None:
    s = summarize(_series(1.0, 1.0))  # 2 cores busy over 0.2 s
    assert others_cores(s, trial_cpu_s=0.2) == pytest.approx(1.0)  # the trial: 1 core
    assert others_cores(s, trial_cpu_s=0.5) == 0.0  # never below 0 (10 ms ticks)
    assert math.isnan(others_cores(s, trial_cpu_s=None))


def test_the_summary_counts_the_disturbed_trials() -> None:
    got = interference_dict([0.0, 0.2, DISTURBED_CORES, 1.7, math.nan])
    assert got == {
        "trials": 4,
        "disturbed": 2,
        "threshold_cores": DISTURBED_CORES,
        "median_cores": pytest.approx(0.35),
        "max_cores": 1.7,
        "not_told": 1,
    }
    assert interference_dict([math.nan]) is None


def _saturated() -> ResourceSummary:
    stats = {c: Stat.of(np.array([100.0 if c in ("cpu", "cpu_mean") else 5.0])) for c in (
        "cpu", "cpu_mean", "memory", "disk", "network")}  # fmt: skip
    return ResourceSummary(1, 0.05, 0.2, 0.0, stats, 0.0, 0.0, 0.0, busy_cores=2.0)


def test_a_cpu_the_others_saturated_is_put_down_to_them() -> None:
    """The sweep of #36 warned 'cpu above 80% ... if cpu is what this benchmark
    measures, declare it' at every trial: the CPU was other processes'."""
    summaries = [_saturated()] * 4
    theirs = bottleneck_warnings(summaries, None, others=[1.5, 1.6, 1.4, 0.1])
    assert len(theirs) == 1 and "busy with them, not only with this benchmark" in theirs[0]
    assert "in 3 of them while other processes used 0.5 core or more" in theirs[0]
    ours = bottleneck_warnings(summaries, None, others=[0.0, 0.1, 0.0, 0.0])
    assert "declare it" in ours[0]
    assert "declare it" in bottleneck_warnings(summaries, None)[0]  # not known: as before


def test_a_neighbour_that_spins_is_seen_in_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A busy loop beside ``sleep 0.3`` (which uses no CPU): every watched trial is
    disturbed by about a core or more, whatever else the machine runs."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        res = CliRunner().invoke(
            main,
            ["run", "--runs", "3", "--no-overhead", "--json", "-", "--", "sleep", "0.3"],
            catch_exceptions=False,
        )
    finally:
        spin.kill()
        spin.wait()
    assert res.exit_code in (0, 5), res.output
    seen = json.loads(res.stdout)["resources"]["interference"]
    assert seen["trials"] >= 1 and seen["disturbed"] >= 1, seen
    assert seen["max_cores"] >= DISTURBED_CORES


def test_a_run_reports_each_pi_again_without_the_disturbed_trials() -> None:
    """#36: "the PI's CI with and without those trials".  Forty trials read 10 ms; the
    five watched while other processes kept 1.5 cores busy read 30 ms.  Without them
    the mean is 10 ms; an unwatched trial stays in (its interference is not known)."""
    from assay.spec import parse_spec_data
    from assay.store import TrialRecord
    from assay.studies.run import without_disturbed

    spec = parse_spec_data({"study": {"name": "s"}, "benchmark": {"command": ["true"]}})
    quiet, busy = _series(0.1, 0.0), _series(1.0, 1.0)  # busy: 2 cores, the trial 0.5
    jitter = np.random.default_rng(1).normal(0.0, 1e-4, 40)
    trials = []
    for i in range(40):
        hit = i % 8 == 3  # trials 3, 11, 19, 27, 35
        took = (0.03 if hit else 0.01) + jitter[i]
        trials.append(
            TrialRecord(
                seq=i, status="ok", duration=took, readings={"wall_time": took},
                cpu_user=0.1 if hit else 0.02, cpu_system=0.0,
                resources=busy if hit else (quiet if i % 2 == 0 else {}),
            )
        )  # fmt: skip
    got = without_disturbed(spec, trials)
    assert got is not None and got["left_out"] == 5 and got["watched"] == 5 + 20
    (pi,) = got["pis"]
    assert pi["name"] == "wall_time" and pi["mean"] == pytest.approx(0.01, rel=0.01)
    clean = [t for t in trials if (t.duration or 0) < 0.02]
    assert without_disturbed(spec, clean) is None  # none disturbed: nothing to say
