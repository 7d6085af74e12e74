"""Interleaved schedules and the comparison stopping rule (assay.designs.compare)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.designs.compare import (
    CompareDecision,
    compare_decision,
    cycle_order,
    interleaved_schedule,
)
from assay.designs.run_until_ci import Decision
from assay.stats.compare import Ranking, SummaryStats, rank_variants, welch_required_n

names = st.lists(st.text("abcdefgh", min_size=1, max_size=4), min_size=1, max_size=6, unique=True)


@settings(max_examples=60, deadline=None)
@given(names, st.integers(0, 12), st.integers(0, 2**63 - 1))
def test_schedule_is_interleaved(variants: list[str], cycles: int, seed: int) -> None:
    sched = interleaved_schedule(variants, cycles, seed)
    assert len(sched) == cycles * len(variants)
    k = len(variants)
    for c in range(cycles):
        block = sched[c * k : (c + 1) * k]
        assert [cyc for cyc, _ in block] == [c] * k
        assert sorted(v for _, v in block) == sorted(variants)


@settings(max_examples=60, deadline=None)
@given(names, st.integers(0, 10), st.integers(0, 10), st.integers(0, 2**63 - 1))
def test_schedule_replays_and_extends(
    variants: list[str], short: int, more: int, seed: int
) -> None:
    a = interleaved_schedule(variants, short, seed)
    assert a == interleaved_schedule(list(variants), short, seed)
    longer = interleaved_schedule(variants, short + more, seed)
    assert longer[: len(a)] == a
    # any cycle can be regenerated on its own
    for c in range(short):
        assert [v for cyc, v in a if cyc == c] == cycle_order(variants, seed, c)


def test_fixed_order_keeps_declared_order() -> None:
    sched = interleaved_schedule(["b", "a", "c"], 3, seed=9, fixed_order=True)
    assert [v for _, v in sched] == ["b", "a", "c"] * 3
    assert [c for c, _ in sched] == [0, 0, 0, 1, 1, 1, 2, 2, 2]


def test_random_order_is_fresh_per_cycle_and_unbiased() -> None:
    variants = ["a", "b", "c"]
    cycles = 3000
    sched = interleaved_schedule(variants, cycles, seed=123)
    firsts = Counter(sched[c * 3][1] for c in range(cycles))
    for v in variants:
        assert abs(firsts[v] / cycles - 1 / 3) < 0.04
    orders = Counter(tuple(v for _, v in sched[c * 3 : c * 3 + 3]) for c in range(cycles))
    assert len(orders) == 6
    # a different seed gives a different schedule
    assert interleaved_schedule(variants, 20, seed=124) != interleaved_schedule(variants, 20, 123)


def test_schedule_accepts_numpy_integers() -> None:
    got = interleaved_schedule(["a", "b"], np.int64(2), np.int64(5))  # type: ignore[arg-type]
    assert got == interleaved_schedule(["a", "b"], 2, 5)


@pytest.mark.parametrize(
    ("variants", "cycles", "seed", "match"),
    [
        ([], 1, 0, "at least one"),
        (["a", "a"], 1, 0, "unique"),
        (["a"], -1, 0, "cycles"),
        (["a"], 1, -3, "seed"),
        (["a"], 1.5, 0, "cycles"),
        (["a"], True, 0, "cycles"),
    ],
)
def test_schedule_validation(variants: list[str], cycles: int, seed: int, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        interleaved_schedule(variants, cycles, seed)


# ----------------------------------------------------------------------------- decision


def _decided() -> Ranking:
    return rank_variants({"a": SummaryStats(1.0, 0.01, 50), "b": SummaryStats(2.0, 0.01, 50)})


def _undecided() -> Ranking:
    return rank_variants(
        {"a": SummaryStats(10.0, 1.0, 20, subsession_size=2), "b": SummaryStats(10.2, 1.0, 20)}
    )


def test_decided_ranking_is_done() -> None:
    d = compare_decision(_decided(), ci_targets_met=None, rounds_done=50)
    assert isinstance(d, CompareDecision) and isinstance(d, Decision)
    assert d.done and d.decided and d.rounds_left == 0 and d.undecided == ()
    assert "Welch p < 0.01" in d.reason
    assert compare_decision(_decided(), ci_targets_met=True, rounds_done=50).done


def test_decided_but_ci_targets_pending_keeps_running() -> None:
    d = compare_decision(_decided(), ci_targets_met=False, rounds_done=50)
    assert not d.done and d.decided and "CI width" in d.reason
    spent = compare_decision(_decided(), ci_targets_met=False, rounds_done=50, max_rounds=50)
    assert spent.done and "CI width targets not met" in spent.reason


def test_undecided_running_reports_rounds_left() -> None:
    r = _undecided()
    need = welch_required_n(10.0, 1.0, 10.2, 1.0)
    d = compare_decision(r, ci_targets_met=None, rounds_done=20, max_rounds=1000)
    assert not d.done and d.reason == "running"
    assert d.undecided == (("a", "b"),)
    # a needs (need - 20) * 2 raw samples, b needs need - 20: one sample per round
    assert d.rounds_left == (need - 20) * 2
    per_round = compare_decision(
        r, ci_targets_met=None, rounds_done=20, samples_per_round={"a": 4.0, "b": 1.0}
    )
    assert per_round.rounds_left == max(-(-(need - 20) * 2 // 4), need - 20)


def test_budget_spent_names_undecided_pairs() -> None:
    r = _undecided()
    d = compare_decision(r, ci_targets_met=True, rounds_done=30, max_rounds=30)
    assert d.done and not d.decided
    assert "budget spent: 30 rounds" in d.reason
    assert "a vs b" in d.reason and "more rounds needed" in d.reason
    t = compare_decision(r, ci_targets_met=None, rounds_done=3, elapsed=61.0, max_time=60.0)
    assert t.done and "61 s" in t.reason


def test_unknown_estimate_gives_none() -> None:
    r = rank_variants({"a": SummaryStats(1.0, 1.0, 10), "b": SummaryStats(1.0, 1.0, 10)})
    d = compare_decision(r, ci_targets_met=None, rounds_done=10)
    assert not d.done and d.rounds_left is None
    spent = compare_decision(r, ci_targets_met=None, rounds_done=10, max_rounds=10)
    assert spent.done and "no estimate" in spent.reason


def test_decision_validation() -> None:
    with pytest.raises(ValueError, match="rounds_done"):
        compare_decision(_decided(), ci_targets_met=None, rounds_done=-1)
