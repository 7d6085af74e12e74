"""A step in a short series (#37): `level_step` and what `assay run`'s analysis does
with one (no valid CI below SHIFT_ALPHA, a note on which level the interval is of below
STEP_NOTE_ALPHA)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from assay.designs.run_until_ci import (
    EARLY_STEP_ALPHA,
    SHIFT_ALPHA,
    STEP_NOTE_ALPHA,
    RoundData,
    analyze_pi,
)
from assay.spec import PISpec, StopSpec
from assay.stats.validity import level_step
from test_autocorr import ar1  # an AR(1) series, seeded

PI = PISpec(name="t", unit="s")


def _units(levels: list[float], seed: int, sd: float = 1.0, n: int = 200) -> list[RoundData]:
    rng = np.random.default_rng(seed)
    return [
        RoundData(units=lv + rng.normal(0, sd, n), duration=1.0, segment=(0, n)) for lv in levels
    ]


# --- level_step ------------------------------------------------------------------------


def test_a_step_after_four_of_eleven_values_is_found_where_it_is() -> None:
    rng = np.random.default_rng(0)
    x = np.r_[np.zeros(4), np.full(7, 4.0)] + rng.normal(0, 1, 11)
    s = level_step(x, z=None)
    assert s is not None and s.index == 4 and s.p_value < 0.002
    assert s.mean_after - s.mean_before == pytest.approx(x[4:].mean() - x[:4].mean())
    # E-Divisive's permutation test cannot go below 1 / C(11, 4) here; this one can
    assert 1 / math.comb(11, 4) > 0.002


def test_unwidened_it_holds_its_level_on_iid_normal_series() -> None:
    # the null is simulated with its own seed; these series are drawn apart from it
    rng = np.random.default_rng(7)
    for n in (8, 11, 30, 200):
        ps = [level_step(rng.normal(3.0, 2.0, n), z=None).p_value for _ in range(1500)]
        low, high = stats.binom.interval(0.999, 1500, 0.01)
        assert low <= sum(p < 0.01 for p in ps) <= high, n


def test_widened_it_is_conservative_on_iid_and_bounded_on_ar_series() -> None:
    for phi, most in ((0.0, 0.01), (0.5, 0.03)):
        for n in (11, 30, 60):
            # stationary: past a burn-in of 50 (the scale does not matter)
            ps = [level_step(ar1(phi, n + 50, 8000 + k)[50:]).p_value for k in range(600)]
            assert np.mean(np.array(ps) < 0.01) <= most + 3 * math.sqrt(most / 600), (phi, n)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(-1e3, 1e3), min_size=8, max_size=40).filter(
        lambda v: float(np.ptp(v)) > 1e-3
    ),
    st.floats(-1e4, 1e4),
    st.floats(0.01, 100.0),
)
def test_a_step_does_not_depend_on_the_units_or_the_direction(
    values: list[float], shift: float, scale: float
) -> None:
    x = np.array(values)
    s = level_step(x)
    assert s is not None
    moved = level_step(x * scale + shift)
    assert moved is not None and moved.index == s.index
    assert moved.p_value == pytest.approx(s.p_value, abs=1e-9)
    back = level_step(x[::-1])
    assert back is not None and back.p_value == pytest.approx(s.p_value, abs=1e-9)
    u = level_step(x, z=None)
    um = level_step(x * scale + shift, z=None)
    assert u is not None and um is not None
    assert um.index == u.index and um.p_value == pytest.approx(u.p_value, abs=1e-9)


def test_too_few_or_constant_values_have_no_step() -> None:
    assert level_step([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]) is None
    assert level_step([2.0] * 20) is None


def test_a_long_series_is_read_as_block_means_and_keeps_the_index() -> None:
    rng = np.random.default_rng(2)
    x = np.r_[np.zeros(100), np.ones(140)] + rng.normal(0, 1, 240)
    s = level_step(x, z=None, max_samples=60)
    assert s is not None and s.p_value < 0.001 and abs(s.index - 100) <= 8


# --- in the analysis -------------------------------------------------------------------


def _stepped_rounds(n: int, step: float, seed: int) -> list[RoundData]:
    """``n`` rounds of 200 unit readings whose rounds differ (a round-level sd of 1%),
    ``step`` added from round 5 on: the interval rests on the round means."""
    rng = np.random.default_rng(1000 + seed)
    levels = 10.0 + rng.normal(0, 0.1, n) + np.r_[np.zeros(4), np.full(n - 4, step)]
    return _units(list(levels), seed, sd=0.5)


def test_a_step_the_round_means_show_gives_no_valid_ci() -> None:
    res = analyze_pi(PI, _stepped_rounds(30, 0.2, seed=22), StopSpec(ci_width=0.01))
    assert not res.met and math.isinf(res.half_width)
    assert "the mean moved during the study" in res.note
    assert "at round 5 of 30" in res.note and "the round means split, max-t" in res.note


def test_a_possible_step_keeps_the_interval_and_says_which_rounds_it_covers() -> None:
    res = analyze_pi(PI, _stepped_rounds(30, 0.25, seed=12), StopSpec(ci_width=0.01))
    assert res.met and math.isfinite(res.half_width)
    assert SHIFT_ALPHA <= res.extra["step_p"] < STEP_NOTE_ALPHA
    at = int(res.extra["step_round"])
    assert at in (5, 6)  # from round 5 on; noise may move the best split by one
    assert f"the level may have stepped at round {at}: from" in res.note
    assert "the interval is of the mean over rounds 1–30, both levels" in res.note


def test_steady_rounds_get_no_step_note() -> None:
    noted = 0
    for seed in range(40):
        res = analyze_pi(PI, _stepped_rounds(30, 0.0, seed), StopSpec(ci_width=0.01))
        noted += "step_round" in res.extra or "max-t" in res.note
    assert noted <= 3  # about 1% per study: 40 studies, 3 or more has p < 0.01


def test_a_step_that_explains_why_the_rounds_differ_is_tested_on_the_unit_noise() -> None:
    # 30 rounds of i.i.d. unit readings, +1.5% from round 5 and nothing else: the rounds
    # differ more than their units explain, and around the step's two means they do not
    res = analyze_pi(PI, _units([10.0] * 4 + [10.15] * 26, seed=16), StopSpec(ci_width=0.01))
    assert not res.met and math.isinf(res.half_width)
    assert "the round means split against their unit readings' noise, max-z" in res.note
    # seed 4, +1.2%: the same test, not below SHIFT_ALPHA: the interval stands, said
    res = analyze_pi(PI, _units([10.0] * 4 + [10.12] * 26, seed=4), StopSpec(ci_width=0.01))
    assert res.met and SHIFT_ALPHA <= res.extra["step_p"] < STEP_NOTE_ALPHA
    assert "max-z" in res.note and "the interval is of the mean over rounds 1–30" in res.note


def test_the_known_variance_step_holds_its_level_and_sees_other_spread() -> None:
    rng = np.random.default_rng(9)
    ps, spread = [], []
    for _ in range(1500):
        s = level_step(rng.normal(5.0, 2.0, 30), variance=4.0, variance_df=1000.0)
        assert s is not None
        ps.append(s.p_value)
        spread.append(s.residual_p)
    low, high = stats.binom.interval(0.999, 1500, 0.01)
    assert low <= sum(p < 0.01 for p in ps) <= high
    # the residual F test with the right variance: below 0.25 in at most about a quarter
    # (the best split leaves less than a fixed one would: 15% here)
    assert 0.1 <= np.mean(np.array(spread) < 0.25) <= 0.27
    # and rejects when the values vary more than said (round effects beside the noise)
    s = level_step(rng.normal(5.0, 4.0, 30), variance=4.0, variance_df=1000.0)
    assert s is not None and s.residual_p < 0.01


# --- the first rounds apart (#59: an early step unsaid among every split) -------------


def test_the_first_values_apart_show_among_the_first_splits_alone() -> None:
    # four low values, then 60: among every split (and read as block means) the step
    # is not below 1%; among the first ten splits it is, and where it is
    rng = np.random.default_rng(5)
    x = np.r_[np.full(4, 10.0), np.full(60, 10.25)] + rng.normal(0, 0.12, 64)
    every = level_step(x, max_samples=60)
    first = level_step(x, max_samples=64, head=10)
    assert every is not None and every.p_value >= 0.01
    assert first is not None and first.p_value < 0.01 and first.index == 4


def test_among_the_first_splits_it_holds_its_level_on_iid_normal_series() -> None:
    rng = np.random.default_rng(8)
    for n in (30, 60, 200):
        ps = [
            level_step(rng.normal(3.0, 2.0, n), z=None, max_samples=n, head=10).p_value
            for _ in range(1500)
        ]
        low, high = stats.binom.interval(0.999, 1500, 0.01)
        assert low <= sum(p < 0.01 for p in ps) <= high, n


def test_among_the_first_splits_the_known_variance_test_holds_its_level() -> None:
    rng = np.random.default_rng(11)
    for n in (11, 13, 30, 60):
        head = min(10, n // 3)
        ps = []
        for _ in range(1500):
            s = level_step(rng.normal(3.0, 2.0, n), max_samples=n, variance=4.0,
                           variance_df=2000.0, head=head)  # fmt: skip
            assert s is not None and s.index <= head
            ps.append(s.p_value)
        low, high = stats.binom.interval(0.999, 1500, 0.01)
        assert low <= sum(p < 0.01 for p in ps) <= high, n


def test_an_early_step_is_said_on_its_unit_readings_noise() -> None:
    # 40 rounds, the last 36 higher by 1.1%: the round means vary as their unit readings
    # say, the interval rests on the unit readings and meets ±1%. Among the first
    # splits on the unit readings' noise the step is below the note's level; neither
    # the round means' own spread among the first splits (max-t) nor every split on
    # that noise says it
    rounds = _units([10.0] * 4 + [10.11] * 36, seed=45)
    res = analyze_pi(PI, rounds, StopSpec(ci_width=0.01))
    assert res.met and "rounds_level" not in res.extra
    assert res.extra["step_p"] < EARLY_STEP_ALPHA and int(res.extra["step_round"]) in (4, 5)
    assert "the first rounds against the rest, against their unit readings' noise" in res.note
    means = np.array([r.units.mean() for r in rounds if r.units is not None])
    by_t = level_step(means, max_samples=40, head=10)
    every = level_step(means, variance=res.extra["unit_round_variance"],
                       variance_df=res.extra["unit_df"])  # fmt: skip
    assert by_t is not None and by_t.p_value >= STEP_NOTE_ALPHA
    assert every is not None and every.p_value >= STEP_NOTE_ALPHA


def test_a_head_too_short_for_two_parts_finds_nothing() -> None:
    assert level_step(np.arange(20.0), head=2) is None


def test_an_early_step_the_splits_of_every_round_miss_is_said_in_the_note() -> None:
    # a +3% step after round 4 of 60 whose round means the interval merges: the
    # largest step among every split is p > 1%; the first rounds against the rest are
    # not, and the note says so (the interval stands: a note only)
    res = analyze_pi(PI, _stepped_rounds(60, 0.3, seed=0), StopSpec(ci_width=0.01))
    assert res.met and math.isfinite(res.half_width)
    assert "the first rounds against the rest, max-t" in res.note
    assert res.extra["step_p"] < STEP_NOTE_ALPHA and int(res.extra["step_round"]) in (4, 5, 6)
    assert "the interval is of the mean over rounds 1–60, both levels" in res.note


def test_steady_long_studies_get_no_early_step_note() -> None:
    noted = 0
    for seed in range(40):
        res = analyze_pi(PI, _stepped_rounds(60, 0.0, seed), StopSpec(ci_width=0.01))
        noted += "step_round" in res.extra
    assert noted <= 3  # about 1% per study, each test: 40 studies, 3 or more is p < 0.01
