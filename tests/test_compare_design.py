"""Interleaved schedules and the comparison stopping rule (assay.designs.compare)."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.designs.compare import (
    ALWAYS_VALID_MIN_SAMPLES,
    SEQUENTIAL_RULES,
    CompareDecision,
    compare_decision,
    compare_pi,
    cycle_order,
    interleaved_schedule,
    look_cycles,
    look_level,
)
from assay.designs.run_until_ci import Decision
from assay.spec import Spec
from assay.stats.compare import (
    Ranking,
    SummaryStats,
    pair_e_value,
    rank_variants,
    ranking_by_evidence,
    welch_required_n,
)
from assay.stats.sequential import samples_to_decide
from assay.studies.compare import decide_comparison

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


# Pilot's rule as published (sequential="every-cycle"): decide at any cycle at level alpha.
EVERY = "every-cycle"
# the rule before issue #17: geometric looks at shrinking Welch levels
LOOKS = "looks"


def test_decided_ranking_is_done() -> None:
    d = compare_decision(_decided(), ci_targets_met=None, rounds_done=50, sequential=EVERY)
    assert isinstance(d, CompareDecision) and isinstance(d, Decision)
    assert d.done and d.decided and d.rounds_left == 0 and d.undecided == ()
    assert "Welch p < 0.01" in d.reason
    assert compare_decision(_decided(), ci_targets_met=True, rounds_done=50, sequential=EVERY).done


def test_decided_but_ci_targets_pending_keeps_running() -> None:
    d = compare_decision(_decided(), ci_targets_met=False, rounds_done=50, sequential=EVERY)
    assert not d.done and d.decided and "CI width" in d.reason
    spent = compare_decision(
        _decided(), ci_targets_met=False, rounds_done=50, max_rounds=50, sequential=EVERY
    )
    assert spent.done and "CI width targets not met" in spent.reason


def test_undecided_running_reports_rounds_left() -> None:
    r = _undecided()
    need = welch_required_n(10.0, 1.0, 10.2, 1.0)
    d = compare_decision(r, ci_targets_met=None, rounds_done=20, max_rounds=1000, sequential=EVERY)
    assert not d.done and d.reason == "running"
    assert d.undecided == (("a", "b"),)
    # a needs (need - 20) * 2 raw samples, b needs need - 20: one sample per round
    assert d.rounds_left == (need - 20) * 2
    per_round = compare_decision(
        r,
        ci_targets_met=None,
        rounds_done=20,
        samples_per_round={"a": 4.0, "b": 1.0},
        sequential=EVERY,
    )
    assert per_round.rounds_left == max(-(-(need - 20) * 2 // 4), need - 20)


def test_budget_spent_names_undecided_pairs() -> None:
    r = _undecided()
    d = compare_decision(r, ci_targets_met=True, rounds_done=30, max_rounds=30, sequential=LOOKS)
    assert d.done and not d.decided
    assert "budget spent: 30 rounds" in d.reason
    assert "a vs b" in d.reason and "more rounds needed" in d.reason
    t = compare_decision(
        r, ci_targets_met=None, rounds_done=3, elapsed=61.0, max_time=60.0, sequential=LOOKS
    )
    assert t.done and "61 s" in t.reason


def test_unknown_estimate_gives_none() -> None:
    r = rank_variants({"a": SummaryStats(1.0, 1.0, 10), "b": SummaryStats(1.0, 1.0, 10)})
    for rule in (LOOKS, "always-valid"):
        d = compare_decision(r, ci_targets_met=None, rounds_done=10, sequential=rule)
        assert not d.done and d.rounds_left is None
        spent = compare_decision(r, None, rounds_done=10, max_rounds=10, sequential=rule)
        assert spent.done and "no estimate" in spent.reason


def test_decision_validation() -> None:
    with pytest.raises(ValueError, match="rounds_done"):
        compare_decision(_decided(), ci_targets_met=None, rounds_done=-1)
    with pytest.raises(ValueError, match="sequential"):
        compare_decision(_decided(), None, 10, sequential="always")  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- looks


def test_look_cycles_are_geometric() -> None:
    assert look_cycles(200) == [10, 15, 23, 35, 53, 80, 120, 180]
    assert look_cycles(9) == []
    assert look_cycles(5, first=1, ratio=1.1) == [1, 2, 3, 4, 5]  # at least one cycle apart
    with pytest.raises(ValueError, match="first"):
        look_cycles(10, first=0)
    with pytest.raises(ValueError, match="ratio"):
        look_cycles(10, ratio=1.0)


def test_look_levels_spend_at_most_alpha() -> None:
    looks = look_cycles(10**6)
    levels = [look_level(0.01, c) for c in looks]
    assert [lv[0] for lv in levels if lv] == list(range(1, len(looks) + 1))
    assert sum(lv[1] for lv in levels if lv) < 0.01
    assert look_level(0.01, 10) == (1, 0.005)
    assert look_level(0.01, 11) is None and look_level(0.01, 9) is None
    # a budget ending between looks takes the next look's level, never a spent one
    assert look_level(0.01, 11, final=True) == (2, 0.01 / 6)
    assert look_level(0.01, 15, final=True) == (2, 0.01 / 6)
    assert look_level(0.01, 3, final=True) == (1, 0.005)
    with pytest.raises(ValueError, match="alpha"):
        look_level(0.0, 10)


def test_looks_decide_only_at_a_look() -> None:
    between = compare_decision(_decided(), ci_targets_met=None, rounds_done=50, sequential=LOOKS)
    assert not between.done and not between.decided
    assert between.reason == "running: the next look is at cycle 53"
    assert between.rounds_left == 3
    at = compare_decision(_decided(), ci_targets_met=None, rounds_done=53, sequential=LOOKS)
    assert at.done and at.decided and at.rounds_left == 0
    assert at.reason.startswith("decided: every adjacent pair has Welch p < 0.000333 at look 5")
    pending = compare_decision(_decided(), ci_targets_met=False, rounds_done=53, sequential=LOOKS)
    assert not pending.done and pending.decided and "CI width" in pending.reason


def _nominally_significant() -> Ranking:
    # Welch p ≈ 0.007: below alpha = 0.01, above look 1's level 0.005
    r = rank_variants({"a": SummaryStats(10.0, 1.0, 100), "b": SummaryStats(10.385, 1.0, 100)})
    assert r.decided and 0.005 < r.pairs[0].comparison.welch.p_value < 0.01  # type: ignore[union-attr]
    return r


def test_looks_need_the_look_level_not_alpha() -> None:
    r = _nominally_significant()
    assert compare_decision(r, None, 10, sequential=EVERY).done
    d = compare_decision(r, ci_targets_met=None, rounds_done=10, sequential=LOOKS)
    assert not d.done and not d.decided and d.undecided == (("a", "b"),)
    # Welch's estimate at look 1's level, rounded up to a look
    need = welch_required_n(10.0, 1.0, 10.385, 1.0, alpha=0.005)
    assert d.rounds_left is not None and 10 + d.rounds_left in look_cycles(10**4)
    assert 10 + d.rounds_left >= 10 + need - 100
    spent = compare_decision(r, None, rounds_done=12, max_rounds=12, sequential=LOOKS)
    assert spent.done and not spent.decided
    assert "at look 2 (cycle 12), Welch p < 0.00167 needed" in spent.reason
    assert "a vs b (Welch asks for" in spent.reason


def _sequential_runs(diff: float, seeds: int, budget: int, sequential: str) -> list[int | None]:
    """Cycle at which the live rule decides (None: never), i.i.d. sd 5 %, one reading a round."""
    out: list[int | None] = []
    checks = look_cycles(budget) if sequential == "looks" else range(10, budget + 1)
    for s in range(seeds):
        rng = np.random.default_rng(s)
        a = rng.normal(1.0, 0.05, budget)
        b = (1.0 + diff) * rng.normal(1.0, 0.05, budget)
        got = None
        for c in checks:
            r = rank_variants({"a": a[:c], "b": b[:c]}, alpha=0.01)
            if compare_decision(r, None, c, sequential=sequential).done:  # type: ignore[arg-type]
                got = c
                break
        out.append(got)
    return out


@pytest.mark.slow
def test_looks_keep_false_positives_under_alpha_where_every_cycle_does_not() -> None:
    """bench/bench_compare.py in small: 0 % difference, 60 cycles, alpha = 0.01
    (every-cycle: 12 of 150 seeds decide; looks: 1 of 300)."""
    looks = _sequential_runs(0.0, 300, 60, "looks")
    assert sum(c is not None for c in looks) / 300 <= 0.01
    every = _sequential_runs(0.0, 150, 60, EVERY)
    assert sum(c is not None for c in every) / 150 >= 0.04


def test_looks_keep_power_for_a_5_percent_difference() -> None:
    got = _sequential_runs(0.05, 100, 80, "looks")
    assert sum(c is not None for c in got) >= 97
    assert np.median([c for c in got if c is not None]) <= 35


# ----------------------------------------------------------------------------- always valid


def test_default_rule_is_always_valid() -> None:
    assert SEQUENTIAL_RULES[0] == "always-valid"
    d = compare_decision(_decided(), ci_targets_met=None, rounds_done=3)
    assert d.done and d.decided and d.rounds_left == 0
    assert d.reason.startswith("decided: every adjacent pair has an e-value of at least 100")
    with pytest.raises(ValueError, match="always-valid, looks, every-cycle"):
        compare_decision(_decided(), None, 10, sequential="always")  # type: ignore[arg-type]


def _two_x(rounds: int) -> Ranking:
    # A 2x difference, noise 5 % of each mean, after `rounds` rounds of each variant
    return rank_variants(
        {"a": SummaryStats(1.0, 0.05**2, rounds), "b": SummaryStats(2.0, 0.1**2, rounds)}
    )


def test_always_valid_decides_a_2x_difference_within_5_cycles() -> None:
    """Issue #17: the looks rule could not stop before cycle 10; the e-value stops at 4."""
    assert not compare_decision(_two_x(3), None, 3).done  # 3 rounds: too few for any t
    d = compare_decision(_two_x(4), None, 4)
    assert d.done and d.decided
    assert not compare_decision(_two_x(4), None, 4, sequential=LOOKS).done


def test_always_valid_ignores_a_nominal_difference() -> None:
    """Welch p ≈ 0.007 after 100 rounds: significant at alpha 0.01 once, but not the
    evidence that survives looking after every cycle."""
    r = _nominally_significant()
    assert r.decided  # the fixed-level verdict
    d = compare_decision(r, ci_targets_met=None, rounds_done=100)
    assert not d.done and not d.decided and d.undecided == (("a", "b"),)
    e = pair_e_value(r.pairs[0].comparison)  # type: ignore[arg-type]
    assert 1.0 < e < 100.0
    # the estimate of what the pair needs comes from the e-value, at 80 % power
    judged = ranking_by_evidence(r)
    comp = r.pairs[0].comparison
    assert comp is not None
    more = samples_to_decide(comp.welch.t / math.sqrt(50.0), 0.01, 100, 100)
    assert judged.pairs[0].extra_better == more and d.rounds_left == more
    spent = compare_decision(r, None, rounds_done=100, max_rounds=100)
    assert spent.done and not spent.decided
    assert "e-value >= 100 needed" in spent.reason
    assert f"the sequential test asks for {more} more samples of a" in spent.reason


def test_always_valid_waits_for_ci_targets() -> None:
    d = compare_decision(_decided(), ci_targets_met=False, rounds_done=5)
    assert not d.done and d.decided and "CI width" in d.reason


def _spec(**stop: object) -> Spec:
    return Spec.model_validate(
        {
            "study": {"name": "s"},
            "benchmark": {"command": ["true"]},
            "variant": [{"name": "a"}, {"name": "b"}],
            "stop": stop,
        }
    )


def test_min_samples_only_when_changed_with_always_valid() -> None:
    comp = compare_pi(
        "t", "s", "lower", {"a": SummaryStats(1.0, 0.0025, 4), "b": SummaryStats(2.0, 0.01, 4)}
    )
    done = decide_comparison(comp, _spec(), cycles=4, trials=8, failed=0, elapsed=1.0)
    assert done.done and "e-value" in done.reason
    for spec in (_spec(min_samples=5), _spec(sequential="looks")):
        wait = decide_comparison(comp, spec, cycles=4, trials=8, failed=0, elapsed=1.0)
        assert not wait.done and wait.reason.startswith("collecting")


def _always_valid_runs(diff: float, seeds: int, budget: int) -> list[int | None]:
    """Cycle at which the always-valid rule decides (None: never), i.i.d. sd 5 %."""
    out: list[int | None] = []
    for s in range(seeds):
        rng = np.random.default_rng(s)
        a = rng.normal(1.0, 0.05, budget)
        b = (1.0 + diff) * rng.normal(1.0, 0.05, budget)
        got = None
        for c in range(ALWAYS_VALID_MIN_SAMPLES, budget + 1):
            r = rank_variants({"a": a[:c], "b": b[:c]}, independence_alpha=0.05)
            if compare_decision(r, None, c).done:
                got = c
                break
        out.append(got)
    return out


def test_always_valid_decides_large_differences_in_a_few_cycles() -> None:
    got = _always_valid_runs(1.0, 20, 16)  # 2x, noise 5 % and 10 %
    assert all(c is not None for c in got)
    # half by 6 (Pilot's merging: 11); #17 asks 80 % by 5, which the upper bound on
    # phi that keeps AR(1) 0.8 A/A comparisons valid does not allow
    assert sum(c is not None and c <= 6 for c in got) >= 10


@pytest.mark.slow
def test_always_valid_keeps_false_positives_under_alpha_looking_every_cycle() -> None:
    """bench/bench_compare.py in small: A/A, looked at after every cycle from the 3rd."""
    got = _always_valid_runs(0.0, 200, 60)
    assert sum(c is not None for c in got) / 200 <= 0.01


def test_study_file_names_the_rule() -> None:
    assert _spec().stop.sequential == "always-valid"
    assert _spec(sequential="looks").stop.sequential == "looks"
    with pytest.raises(ValueError, match="sequential"):
        _spec(sequential="sometimes")
