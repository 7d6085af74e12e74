"""Algorithm 1 as a design, the analysis, mismatch, offline simulation and comparison."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pandas as pd
import pytest

from assay.designs.sweep import (
    IncrementalSampling,
    analyse,
    compare_systems,
    mismatch,
    simulate,
    summarise,
)

PARAMS = ["w", "h", "c"]


def _space() -> pd.DataFrame:
    return pd.DataFrame(
        list(itertools.product([1, 2, 4, 8, 16, 32], [1, 2, 4, 8, 16, 32, 64], ["a", "b", "c"])),
        columns=PARAMS,
    )


def _truth(d: pd.DataFrame) -> np.ndarray:
    w = d["w"].to_numpy(float)
    lh = np.log2(d["h"].to_numpy(float))
    return (
        10 * np.minimum(w, 8) / 8
        + 0.3 * np.log2(w)
        - 0.5 * (lh - 4) ** 2
        + d["c"].map({"a": 0.0, "b": 1.0, "c": 0.5}).to_numpy(float)
    )


def _data(noise: float = 0.2, seed: int = 0) -> pd.DataFrame:
    s = _space()
    rng = np.random.default_rng(seed)
    return s.assign(tput=_truth(s) + rng.normal(0, noise, len(s)))


def _measure(space: pd.DataFrame, pos: list[int], y: np.ndarray) -> pd.DataFrame:
    return space.iloc[pos].assign(metric=y[pos])


def test_first_batch_and_resumability() -> None:
    space = _space()
    d1 = IncrementalSampling(space, seed=3)
    d2 = IncrementalSampling(space, seed=3)
    b1 = d1.next_batch(space.iloc[:0])
    assert len(b1) == math.ceil(0.05 * len(space))
    assert len(set(b1.tolist())) == len(b1)
    np.testing.assert_array_equal(b1, d2.next_batch(space.iloc[:0]))


def test_loop_adds_delta_until_r2_reached() -> None:
    space = _space()
    y = _truth(space) + np.random.default_rng(1).normal(0, 0.1, len(space))
    design = IncrementalSampling(space, seed=0, splits=5)
    taken: list[int] = []
    steps = []
    while True:
        measured = _measure(space, taken, y)
        batch = design.next_batch(measured)
        if taken:
            steps.append(design.evaluate(measured))
        if len(batch) == 0:
            break
        assert not set(batch.tolist()) & set(taken)
        if taken:
            assert len(batch) == math.ceil(0.05 * len(space))
        taken += batch.tolist()
    last = steps[-1]
    assert last.done and last.reason == "r2"
    assert all(r >= 0.9 for r in last.r2) and len(last.r2) == 5
    assert not any(s.done for s in steps[:-1])
    assert last.sampling_rate <= 0.5
    json.dumps(last.to_dict())


def test_failed_settings_are_not_repicked_nor_analysed() -> None:
    space = _space()
    y = _truth(space)
    design = IncrementalSampling(space, seed=0, threshold=1.01)  # never reached
    first = design.next_batch(space.iloc[:0]).tolist()
    measured = _measure(space, first, y)
    measured.iloc[:3, measured.columns.get_loc("metric")] = np.nan
    step = design.evaluate(measured)
    assert step.n_measured == len(first) and step.n_valid == len(first) - 3
    nxt = design.next_batch(measured)
    assert not set(nxt.tolist()) & set(first)


def test_budget_ends_the_loop() -> None:
    space = _space()
    y = _truth(space)
    design = IncrementalSampling(space, seed=0, threshold=1.01, budget=30, splits=2)
    taken: list[int] = []
    while len(batch := design.next_batch(_measure(space, taken, y))):
        taken += batch.tolist()
    assert len(taken) == 30
    assert design.evaluate(_measure(space, taken, y)).reason == "budget"


def test_measured_setting_outside_space_is_an_error() -> None:
    design = IncrementalSampling(_space())
    bad = pd.DataFrame({"w": [3], "h": [1], "c": ["a"], "metric": [1.0]})
    with pytest.raises(ValueError, match="not in the parameter space"):
        design.evaluate(bad)


def test_analysis_finds_knee_and_turning_point() -> None:
    a = analyse(_data(), PARAMS, "tput", splits=5)
    names = [r.name for r in a.significant]
    assert names[:2] == ["w", "h"]
    pts = {(p.param, p.kind, p.value) for p in a.points}
    assert ("w", "knee", 8.0) in pts
    assert ("h", "turning", 16.0) in pts
    s = summarise(a)
    assert "both sides of w = 8" in s.recommendation and "h = 16" in s.recommendation
    json.dumps(a.to_dict())
    json.dumps(s.to_dict())


def test_simulation_matches_full_analysis() -> None:
    data = _data()
    sim = simulate(data, PARAMS, "tput", seed=2, splits=5)
    assert sim.steps[-1].reason == "r2"
    assert sim.sampling_rate <= 0.3
    assert sim.mismatch is not None
    assert sim.mismatch.params_rate == 0.0
    assert sim.mismatch.points_rate == 0.0
    json.dumps(sim.to_dict())


def test_simulation_figure2_mode_runs_to_max_rate() -> None:
    sim = simulate(
        _data(),
        PARAMS,
        "tput",
        seed=0,
        splits=3,
        stop_at_threshold=False,
        max_rate=0.2,
        reference=None,
    )
    rates = [s.sampling_rate for s in sim.steps]
    assert rates == sorted(rates) and rates[-1] == pytest.approx(0.2, abs=0.01)
    assert sim.mismatch is None


def test_mismatch_is_symmetric_difference_over_full_count() -> None:
    full = analyse(_data(), PARAMS, "tput", form="main")
    flat = _data().assign(tput=lambda d: _truth(d.assign(h=16)) + 0.2 * np.sin(np.arange(len(d))))
    other = analyse(flat, PARAMS, "tput", form="main")
    m = mismatch(full, other)
    assert "h" in m.params_mismatched
    assert m.params_rate == len(m.params_mismatched) / len(full.significant)
    assert any("turning at 16" in s for s in m.points_mismatched)
    same = mismatch(full, full)
    assert same.params_rate == 0.0 and same.points_rate == 0.0


def test_compare_systems_lists_winner_change() -> None:
    a = _data()
    b = a.assign(tput=6.0 + 0.05 * a["w"] + 0.0 * a["h"] - 0.5 * (np.log2(a["h"]) - 4) ** 2)
    cmp = compare_systems(a, b, PARAMS, "tput", names=("fast", "steady"), splits=3)
    w_regions = [r for r in cmp.regions if r.param == "w"]
    assert [r.winner for r in w_regions] == ["steady", "fast"]
    assert w_regions[1].changes and w_regions[1].low == 8
    assert "winner changes with w" in cmp.text
    json.dumps(cmp.to_dict())


@pytest.mark.slow
def test_mlp_and_linear_models_in_the_loop() -> None:
    data = _data()
    for model in ("linear", "mlp"):
        sim = simulate(
            data, PARAMS, "tput", seed=0, splits=3, model=model, max_rate=0.15, reference=None
        )
        assert all(s.model == model for s in sim.steps)
        assert len(sim.steps[-1].r2) == 3
