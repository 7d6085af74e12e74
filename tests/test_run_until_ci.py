"""The pure run-until-CI design: known-truth checks of analyze_pi, analyze_wps and decide."""

from __future__ import annotations

import numpy as np
import pytest

from assay.designs.run_until_ci import (
    WPS_PI,
    RoundData,
    analyze_pi,
    analyze_wps,
    decide,
)
from assay.spec import PISpec, StopSpec, WorkSpec


def wps_rounds(
    rng: np.random.Generator, works: list[float], v: float, alpha: float
) -> list[RoundData]:
    return [RoundData(work=w, duration=alpha + w / v + rng.normal(0, 0.002)) for w in works]


def test_wps_recovers_speed_and_setup_time() -> None:
    rng = np.random.default_rng(4)
    works = list(rng.permutation(np.linspace(50, 1000, 40)))
    r = analyze_wps(
        wps_rounds(rng, works, v=2000.0, alpha=0.05),
        StopSpec(),
        WorkSpec(min=10, max=1000, short_round=0.01),
    )
    assert r.name == WPS_PI and r.met
    assert r.low < 2000.0 < r.high
    assert r.extra["alpha_s"] == pytest.approx(0.05, abs=0.005)


def test_wps_ignores_short_rounds() -> None:
    rng = np.random.default_rng(5)
    good = wps_rounds(rng, list(rng.permutation(np.linspace(200, 1000, 30))), 2000.0, 0.05)
    # short rounds that follow another law must not pull the estimate
    short = [RoundData(work=w, duration=0.01) for w in (10.0, 20.0, 40.0)]
    r = analyze_wps(short + good, StopSpec(), WorkSpec(min=10, max=1000, short_round=0.1))
    assert r.n_raw == 30
    assert r.low < 2000.0 < r.high


def test_readings_path_drops_warmup_rounds() -> None:
    rounds = [RoundData(reading=100.0)] * 3 + [
        RoundData(reading=10.0 + 0.01 * (i % 5)) for i in range(40)
    ]
    r = analyze_pi(PISpec(name="t"), rounds, StopSpec(warmup_rounds=3))
    assert r.warmup_removed == 3 and r.n_raw == 40
    assert 10.0 <= r.mean <= 10.05


def test_unit_readings_rounds_without_stable_segment_are_rejected() -> None:
    rng = np.random.default_rng(2)
    plateaus = np.repeat([5.0, 0.0, 10.0], 100) + rng.normal(0, 0.1, 300)
    stable = 10.0 + rng.normal(0, 0.1, 300)
    r = analyze_pi(
        PISpec(name="t"),
        [RoundData(units=plateaus), RoundData(units=stable)],
        StopSpec(warmup_removal="edm-pilot"),
    )
    assert r.rounds_rejected == 1
    assert 150 < r.n_raw <= 300  # Pilot's EDM also trims some of the clean round


def test_decide_reasons() -> None:
    pi = PISpec(name="t")
    stop = StopSpec(max_rounds=50, max_time=100.0)
    rng = np.random.default_rng(0)
    good = analyze_pi(pi, [RoundData(reading=float(x)) for x in rng.normal(10, 0.1, 30)], stop)
    wide = analyze_pi(pi, [RoundData(reading=float(x)) for x in rng.normal(10, 5, 60)], stop)
    first = decide([good], [pi], stop, rounds_done=30, rounds_failed=0, elapsed=1)
    assert not first.done and first.target_met and first.rounds_left == 1  # to confirm
    confirmed = decide([good], [pi], stop, rounds_done=31, rounds_failed=0, elapsed=1, met_streak=1)
    assert confirmed.done and confirmed.reason.startswith("target reached")
    once = StopSpec(max_rounds=50, max_time=100.0, confirm_rounds=1)
    assert decide([good], [pi], once, rounds_done=30, rounds_failed=0, elapsed=1).done
    d = decide([wide], [pi], stop, rounds_done=3, rounds_failed=0, elapsed=1)
    assert not d.done and d.rounds_left is not None and d.rounds_left > 0
    assert (
        "max_rounds"
        in decide([wide], [pi], stop, rounds_done=50, rounds_failed=0, elapsed=1).reason
    )
    assert (
        "max_time" in decide([wide], [pi], stop, rounds_done=3, rounds_failed=0, elapsed=100).reason
    )
    assert "failed" in decide([wide], [pi], stop, rounds_done=10, rounds_failed=6, elapsed=1).reason


def test_common_cut_removes_the_same_warmup_from_every_round() -> None:
    rng = np.random.default_rng(8)
    rounds = []
    for _ in range(7):
        x = rng.normal(10.0, 1.0, 300)
        x[:40] += 4.0  # the workload's warm-up: in every round
        rounds.append(RoundData(units=x))
    r = analyze_pi(PISpec(name="t"), rounds, StopSpec())
    assert r.rounds_rejected == 0
    per_round = r.warmup_removed / 7
    assert 35 <= per_round <= 50
    assert r.n_raw == 7 * 300 - r.warmup_removed
    assert abs(r.mean - 10.0) < 0.15
