"""Tests for assay.stats.workamount (Pilot §III-A(b), §III-E)."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.stats.workamount import WorkAmountPlanner, bisection_sequence, slice_increment

# --------------------------------------------------------------------------- bisection


def test_bisection_sequence_fig3() -> None:
    assert bisection_sequence(0, 16, 8) == [8, 4, 12, 2, 6, 10, 14, 1]
    assert bisection_sequence(0, 16, 0) == []


def test_bisection_sequence_offset_range() -> None:
    a, b = 100.0, 900.0
    seq = bisection_sequence(a, b, 15)
    assert seq[0] == a + (b - a) / 2
    assert seq[1] == (a + seq[0]) / 2  # Rd.2: midpoint of a and Rd.1
    assert seq[2] == (seq[0] + b) / 2  # Rd.3: midpoint of Rd.1 and b
    assert seq[3] == a + (b - a) / 8
    assert seq[7] == a + (b - a) / 16  # Rd.8: midpoint of a and Rd.4
    assert seq[7] == (a + seq[3]) / 2
    assert seq[14] == a + 15 * (b - a) / 16


@settings(max_examples=50, deadline=None)
@given(
    st.floats(min_value=-1e6, max_value=1e6),
    st.floats(min_value=1e-3, max_value=1e6),
    st.integers(min_value=0, max_value=200),
)
def test_bisection_sequence_properties(a: float, width: float, count: int) -> None:
    b = a + width
    seq = bisection_sequence(a, b, count)
    assert len(seq) == count
    assert all(a < x < b for x in seq)
    # level L contains the odd multiples of (b - a) / 2^L, left to right
    i = 0
    level = 1
    while i < count:
        for j in range(2 ** (level - 1)):
            if i >= count:
                break
            assert seq[i] == pytest.approx(a + (2 * j + 1) * (b - a) / 2**level)
            i += 1
        level += 1


def test_bisection_sequence_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="a < b"):
        bisection_sequence(5, 5, 3)
    with pytest.raises(ValueError, match="finite"):
        bisection_sequence(0, math.inf, 3)
    with pytest.raises(ValueError, match="count"):
        bisection_sequence(0, 1, -1)


# --------------------------------------------------------------------------- eq. 5


def test_slice_increment_hand_computed() -> None:
    # t = 60 s, s = 1 s, n = 50: k = (120 - 100) / (2500 - 50) = 20 / 2450
    assert slice_increment(60, 1, 50) == pytest.approx(20 / 2450)
    # t = 10, s = 1, n = 4: rounds 1, 1+k, 1+2k, 1+3k sum to 4 + 6k = 10 -> k = 1
    assert slice_increment(10, 1, 4) == pytest.approx(1.0)
    # n rounds of s already exceed t: negative increment
    assert slice_increment(10, 5, 4) == pytest.approx((20 - 40) / 12)


@settings(max_examples=50, deadline=None)
@given(
    st.floats(min_value=1.0, max_value=1e4),
    st.floats(min_value=0.0, max_value=10.0),
    st.integers(min_value=2, max_value=200),
)
def test_slice_increment_sums_to_budget(t: float, s: float, n: int) -> None:
    k = slice_increment(t, s, n)
    assert sum(s + i * k for i in range(n)) == pytest.approx(t, rel=1e-9)


def test_slice_increment_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="rounds"):
        slice_increment(60, 1, 1)
    with pytest.raises(ValueError, match="total_seconds"):
        slice_increment(0, 1, 50)
    with pytest.raises(ValueError, match="first_round_seconds"):
        slice_increment(60, -1, 50)


# --------------------------------------------------------------------------- planner


def simulate(
    planner: WorkAmountPlanner, rounds: int, v: float, alpha: float = 0.0
) -> list[tuple[float, float]]:
    """Run a noiseless workload t = alpha + w / v for a number of rounds."""
    history: list[tuple[float, float]] = []
    for _ in range(rounds):
        w = planner.next_work_amount(history)
        history.append((w, alpha + w / v))
    return history


def test_planner_first_round() -> None:
    assert WorkAmountPlanner(0, 1e6).next_work_amount([]) == 1
    assert WorkAmountPlanner(250, 1e6).next_work_amount([]) == 250
    assert WorkAmountPlanner(0.5, 1e6).next_work_amount([]) == 1
    assert WorkAmountPlanner(0, 1e6, start_work=64).next_work_amount([]) == 64
    with pytest.raises(ValueError, match="start_work"):
        WorkAmountPlanner(10, 100, start_work=5)


def test_planner_doubles_short_rounds_and_raises_a() -> None:
    p = WorkAmountPlanner(0, 1e9, short_round=1.0)
    history = simulate(p, 12, v=1000.0)
    works = [w for w, _ in history]
    assert works[:11] == [2**i for i in range(11)]  # 1, 2, ..., 1024 (1.024 s)
    assert p.is_short(history[9][1]) and not p.is_short(history[10][1])
    assert p.a == 1024.0  # first work amount that met the threshold
    assert works[11] > 1024


def test_planner_doubling_capped_at_b() -> None:
    p = WorkAmountPlanner(0, 100, short_round=1.0)
    history = simulate(p, 12, v=1e6)  # every round is short
    works = [w for w, _ in history]
    assert works[:8] == [1, 2, 4, 8, 16, 32, 64, 100]
    assert all(w == 100 for w in works[7:])


def test_planner_linear_growth_meets_budget() -> None:
    # v = 1000 units/s, no overhead: after doubling, round 1 is 1024 units = 1.024 s and the
    # next 49 rounds grow by k = (2*60 - 2*1.024*50) / (50^2 - 50) seconds each.
    p = WorkAmountPlanner(0, 1e9, short_round=1.0, budget_seconds=60.0, initial_rounds=50)
    history = simulate(p, 11 + 49 + 3, v=1000.0)
    usable = history[10:60]
    assert usable[0] == (1024, 1.024)
    k = slice_increment(60.0, 1.024, 50)
    durations = [s for _, s in usable]
    for i, s in enumerate(durations):
        assert s == pytest.approx(1.024 + i * k, abs=1e-3)  # integer work: +-0.5 ms
    assert sum(durations) == pytest.approx(60.0, abs=0.05)
    # Then the bisection sequence of [a, b] = [1024, 1e9], unused entries in order.
    rest = [w for w, _ in history[60:]]
    want = [round(x) for x in bisection_sequence(1024, 1e9, 3)]
    assert rest == want


def test_planner_linear_growth_with_overhead_stays_within_budget() -> None:
    # With a per-round overhead the observed rate w/t underestimates v, so rounds come out
    # a little shorter than planned: the budget is respected (and nearly used).
    p = WorkAmountPlanner(0, 1e9, short_round=1.0, budget_seconds=120.0, initial_rounds=50)
    history = simulate(p, 80, v=1000.0, alpha=0.3)
    first = next(i for i, (_, s) in enumerate(history) if not p.is_short(s))
    assert history[first] == (1024, 0.3 + 1.024)
    usable = history[first : first + 50]
    works = [w for w, _ in usable]
    assert works == sorted(works) and len(set(works)) == 50
    assert 0.8 * 120.0 <= sum(s for _, s in usable) <= 120.0


def test_planner_long_first_round_still_varies_work() -> None:
    # Round 1 takes 5 s: 50 rounds of it exceed the 60 s budget (k < 0), so k = s / (n - 1).
    p = WorkAmountPlanner(5000, 1e9, short_round=1.0)
    history = simulate(p, 50, v=1000.0)
    works = [w for w, _ in history]
    assert works[0] == 5000
    assert len(set(works)) == 50
    assert works[-1] == pytest.approx(10_000, abs=1)


def test_planner_bisection_skips_used_and_respects_raised_a() -> None:
    p = WorkAmountPlanner(0, 1600, short_round=0.0, initial_rounds=2)
    history = [(800.0, 8.0), (400.0, 4.0)]  # two usable rounds: linear phase over
    assert p.next_work_amount(history) == 1200  # 800 and 400 already used
    history.append((1200.0, 12.0))
    assert p.next_work_amount(history) == 200
    p.raise_lower_bound(1000)
    assert p.a == 1000
    # new range [1000, 1600]: midpoint 1300, then 1150, 1450, ...
    assert p.next_work_amount(history) == 1300
    p.raise_lower_bound(10)  # never lowers
    assert p.a == 1000
    with pytest.raises(ValueError, match="above b"):
        p.raise_lower_bound(2000)


def test_planner_small_range_exhausted_repeats() -> None:
    p = WorkAmountPlanner(1, 4, short_round=0.0, initial_rounds=2)
    history: list[tuple[float, float]] = [(1.0, 1.0), (2.0, 2.0)]
    for _ in range(10):
        w = p.next_work_amount(history)
        assert 1 <= w <= 4
        history.append((float(w), float(w)))
    works = [int(w) for w, _ in history]
    # every integer of the range is used before any repeats beyond the fewest-used
    assert set(works) == {1, 2, 3, 4}
    counts = [works.count(i) for i in (1, 2, 3, 4)]
    assert max(counts) - min(counts) <= 2


@settings(max_examples=60, deadline=None)
@given(
    st.floats(min_value=0, max_value=1e4),
    st.floats(min_value=1, max_value=1e7),
    st.lists(
        st.tuples(st.floats(min_value=0, max_value=1e7), st.floats(min_value=0, max_value=100)),
        max_size=60,
    ),
    st.floats(min_value=0.0, max_value=5.0),
    st.integers(min_value=2, max_value=60),
)
def test_planner_never_leaves_the_range(
    a: float, width: float, history: list[tuple[float, float]], thr: float, n: int
) -> None:
    b = a + width
    if math.floor(b) < max(1, math.ceil(a)):
        return
    p = WorkAmountPlanner(a, b, short_round=thr, initial_rounds=n)
    w = p.next_work_amount(history)
    assert isinstance(w, int)
    assert max(1, math.ceil(a)) <= w <= math.floor(b)
    assert max(1, math.ceil(p.a)) <= w or p.a > math.floor(b)
    assert p.a >= a


def test_planner_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="a < b"):
        WorkAmountPlanner(10, 10)
    with pytest.raises(ValueError, match=">= 0"):
        WorkAmountPlanner(-1, 10)
    with pytest.raises(ValueError, match="no positive integer"):
        WorkAmountPlanner(0.2, 0.8)
    with pytest.raises(ValueError, match="initial_rounds"):
        WorkAmountPlanner(0, 10, initial_rounds=1)
    with pytest.raises(ValueError, match="budget_seconds"):
        WorkAmountPlanner(0, 10, budget_seconds=0)
    with pytest.raises(ValueError, match="history"):
        WorkAmountPlanner(0, 10).next_work_amount([(1.0, float("nan"))])


def test_linear_phase_hands_over_to_bisection_at_the_upper_bound() -> None:
    p = WorkAmountPlanner(20, 400, short_round=0.01, budget_seconds=60.0, initial_rounds=50)
    history: list[tuple[float, float]] = []
    for _ in range(40):
        w = p.next_work_amount(history)
        history.append((w, 0.05 + w / 2000))
    works = [w for w, _ in history]
    # never two rounds in a row at the upper bound
    assert all(not (a == b == 400) for a, b in itertools.pairwise(works))
    assert len(set(works)) >= 30
