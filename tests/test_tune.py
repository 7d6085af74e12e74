"""Hand-off to the tuner: Optuna on the top-k knobs, unsafe knobs, composite goals, cost."""

from __future__ import annotations

import itertools
import sys
from typing import Any

import numpy as np
import pytest

from assay.designs.knobs import CategoricalKnob, KnobSpace, NumericKnob, latin_hypercube
from assay.designs.tune import (
    TuneUnavailable,
    compare_tuning_cost,
    surrogate_objective,
    trials_to_reach,
    tune,
    tuning_knobs,
)
from assay.stats.objective import parse_objective


def _space(n_extra: int = 4) -> KnobSpace:
    knobs: list[Any] = [
        NumericKnob("x", 0.0, 1.0, 0.5),
        NumericKnob("n", 1, 64, 4, integer=True, log=True),
        CategoricalKnob("fsync", ("on", "off"), "on", unsafe=True),
    ]
    knobs += [NumericKnob(f"z{i}", 0.0, 1.0, 0.0) for i in range(n_extra)]
    return KnobSpace(tuple(knobs))


def _perf(s: dict[str, Any]) -> float:
    return (
        -((s["x"] - 0.3) ** 2) - 0.01 * abs(np.log2(s["n"]) - 3) + (1 if s["fsync"] == "off" else 0)
    )


def test_tune_top_k_only_others_at_defaults() -> None:
    space = _space()
    seen: list[dict[str, Any]] = []

    def objective(s: dict[str, Any]) -> float:
        seen.append(s)
        return _perf(s)

    res = tune(space, objective, 40, knobs=["x", "n", "fsync"], seed=0)
    assert res.tuned == ("x", "n") and res.excluded_unsafe == ("fsync",)
    assert len(res.trials) == 40 == len(seen)
    for s in seen:
        assert s["fsync"] == "on" and all(s[f"z{i}"] == 0.0 for i in range(4))
        assert isinstance(s["n"], int) and 1 <= s["n"] <= 64
    assert abs(res.best_setting["x"] - 0.3) < 0.1
    assert res.best_value == max(t.value for t in res.trials if t.value is not None)
    run = res.best_so_far()
    assert all(b >= a for a, b in itertools.pairwise(run))
    assert res.as_dict()["best_setting"]["fsync"] == "on"


def test_unsafe_knob_tuned_only_when_allowed() -> None:
    res = tune(_space(), _perf, 25, knobs=["x", "fsync"], allow_unsafe=True, seed=1)
    assert res.tuned == ("x", "fsync") and res.excluded_unsafe == ()
    assert res.best_setting["fsync"] == "off"
    with pytest.raises(ValueError, match="unsafe"):
        tune(_space(), _perf, 5, knobs=["fsync"])
    assert tuning_knobs(_space(), ["x", "fsync"]) == (("x",), ("fsync",))
    with pytest.raises(ValueError, match="unknown knob"):
        tuning_knobs(_space(), ["nope"])


def test_failed_trials_are_recorded_not_fatal() -> None:
    calls = {"n": 0}

    def flaky(s: dict[str, Any]) -> float | None:
        calls["n"] += 1
        return None if calls["n"] % 3 == 0 else float("nan") if calls["n"] % 5 == 0 else s["x"]

    res = tune(_space(), flaky, 15, knobs=["x"], seed=2)
    assert len(res.trials) == 15
    assert sum(t.value is None for t in res.trials) >= 5
    assert res.best is not None and res.best.value is not None


def test_composite_goal_never_picks_an_infeasible_best() -> None:
    goal = parse_objective("max tps s.t. p99 <= 10")

    def measure(s: dict[str, Any]) -> dict[str, float]:
        # throughput grows with x, but p99 passes 10 once x > 0.6
        return {"tps": 100 * s["x"], "p99": 2 + 15 * s["x"]}

    res = tune(_space(), measure, 40, knobs=["x"], goal=goal, seed=3)
    assert res.direction == "higher" and res.objective == str(goal)
    assert any(not t.feasible for t in res.trials)
    best = res.best
    assert best is not None and best.feasible and best.pis is not None
    assert best.pis["p99"] <= 10 and best.setting["x"] <= 8 / 15 + 1e-9
    assert best.setting["x"] > 0.4  # it found the edge, not just any feasible point
    with pytest.raises(TypeError, match="return the PIs"):
        tune(_space(), _perf, 2, knobs=["x"], goal=goal)


def test_trials_to_reach() -> None:
    assert trials_to_reach([1, 2, 3], 2, "higher") == 2
    assert trials_to_reach([5, 4, 3], 3.5, "lower") == 3
    assert trials_to_reach([None, float("nan"), 1.0], 1.0, "higher") == 3
    assert trials_to_reach([1, 2], 9, "higher") is None


def test_top_k_tunes_faster_than_all_knobs() -> None:
    """Two of twelve knobs matter: tuning those two reaches the optimum in fewer trials."""
    space = KnobSpace(tuple(NumericKnob(f"k{i}", 0.0, 1.0, 0.0) for i in range(12)))

    def f(s: dict[str, Any]) -> float:
        return 10 - 5 * (s["k0"] - 0.7) ** 2 - 5 * (s["k1"] - 0.2) ** 2

    cost = compare_tuning_cost(space, f, ["k0", "k1"], 60, seeds=[0, 1, 2], tolerance=0.005)
    assert cost.top.reached == 3
    assert cost.top.median_trials is not None
    assert cost.speedup is not None and cost.speedup > 1
    d = cost.as_dict()
    assert d["top"]["knobs"] == ["k0", "k1"] and len(d["all"]["knobs"]) == 12


def test_surrogate_objective_follows_the_samples() -> None:
    space = _space(1)
    s = latin_hypercube(space, 80, seed=0)
    f = surrogate_objective(space, s, [_perf(x) for x in s], n_trees=30)
    good = {**space.defaults(), "x": 0.3, "n": 8}
    bad = {**space.defaults(), "x": 0.95, "n": 8}
    assert f(good) > f(bad)


def test_missing_optuna_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "optuna", None)
    with pytest.raises(TuneUnavailable, match=r"pip install -e '\.\[tune\]' in Assay's folder"):
        tune(_space(), _perf, 3, knobs=["x"])
