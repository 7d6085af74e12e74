"""The R² ceiling of a sweep (issue #36): the share of the setting means' variance that
is not noise between repetitions (ICC(1,k)); a sweep whose ceiling is surely below its
R² target says so and stops instead of measuring the whole grid."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from assay.designs.sweep import IncrementalSampling
from assay.stats.reliability import mean_reliability

# Shrout & Fleiss (1979), Table 2: 6 targets rated by 4 judges; ICC(1,4) = 0.44
RATINGS = [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]]


def test_the_published_icc_1k() -> None:
    groups = [i for i, row in enumerate(RATINGS) for _ in row]
    values = [float(x) for row in RATINGS for x in row]
    r = mean_reliability(groups, values)
    assert r is not None
    assert round(r.estimate, 2) == 0.44
    assert (r.df_between, r.df_within) == (5, 18)
    assert r.low < r.estimate < r.high


def test_its_interval_covers_the_true_reliability_at_its_level() -> None:
    """One-way random effects, 30 settings x 3 repetitions, tau² 1 and sigma² 3: the
    reliability of a mean of 3 is 1 / (1 + 3/3) = 0.5; 400 simulated sweeps."""
    rng = np.random.default_rng(3)
    groups = np.repeat(np.arange(30), 3)
    covered = 0
    for _ in range(400):
        y = np.repeat(rng.normal(0, 1, 30), 3) + rng.normal(0, np.sqrt(3), 90)
        r = mean_reliability(groups, y)
        assert r is not None
        covered += r.low <= 0.5 <= r.high
    assert 0.92 <= covered / 400 <= 0.98


def test_without_repetitions_or_spread_there_is_none() -> None:
    assert mean_reliability([0, 1, 2], [1.0, 2.0, 3.0]) is None
    assert mean_reliability([0, 0, 1, 1], [1.0, 1.0, 1.0, 1.0]) is None
    exact = mean_reliability([0, 0, 1, 1], [1.0, 1.0, 2.0, 2.0])
    assert exact is not None and exact.estimate == 1.0


def _space() -> pd.DataFrame:
    return pd.DataFrame(list(itertools.product(range(6), range(5), range(3))), columns=list("abc"))


def _trials(design: IncrementalSampling, noise: float, seed: int, reps: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    measured = design.candidates.iloc[:0].assign(metric=[])
    while True:
        batch = design.next_batch(measured)
        if len(batch) == 0:
            return measured
        for _, setting in design.candidates.iloc[batch].iterrows():
            truth = 2.0 * setting["a"] + setting["b"]
            rows += [
                {**setting.to_dict(), "metric": truth + rng.normal(0, noise)} for _ in range(reps)
            ]
        measured = pd.DataFrame(rows)


def test_a_noisy_sweep_stops_for_its_ceiling_a_quiet_one_for_its_r2() -> None:
    noisy = IncrementalSampling(_space(), seed=1)
    measured = _trials(noisy, noise=12.0, seed=1)
    step = noisy.evaluate(measured)
    assert step.reason == "ceiling", step
    assert step.ceiling[2] < 0.9 and step.n_measured < len(_space()) / 2
    quiet = IncrementalSampling(_space(), seed=1)
    step = quiet.evaluate(_trials(quiet, noise=0.2, seed=1))
    assert step.reason == "r2" and step.ceiling[0] > 0.95


def test_the_ceiling_stop_can_be_turned_off_and_needs_repetitions() -> None:
    off = IncrementalSampling(_space(), seed=1, stop_at_ceiling=False)
    assert off.evaluate(_trials(off, noise=12.0, seed=1)).reason != "ceiling"
    single = IncrementalSampling(_space(), seed=1)
    step = single.evaluate(_trials(single, noise=12.0, seed=1, reps=1))
    assert step.reason != "ceiling" and np.isnan(step.ceiling[0])


@pytest.mark.parametrize("reason", ["ceiling"])
def test_a_stored_step_keeps_its_ceiling(reason: str) -> None:
    from assay.designs.sweep import StepResult

    s = StepResult(1, 4, 4, 10, (0.5,), "main", "anova", 0.9, True, reason, (), (0.6, 0.4, 0.8))
    back = StepResult.from_dict(s.to_dict())
    assert back.ceiling == (0.6, 0.4, 0.8) and back.reason == reason
    old = {k: v for k, v in s.to_dict().items() if k != "r2_ceiling"}  # a step from before
    assert all(np.isnan(StepResult.from_dict(old).ceiling))
