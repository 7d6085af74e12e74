"""Issue #21: ``assay order`` decides on one value per run (its median), not on pooled
trials.  Known answers (hand-computed run means through SciPy, the smallest p a design
can give), a deterministic case where run offsets fool the pooled test and not the
per-run one, and properties of the per-run analysis."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from assay.designs.order import flat_schedule, order_schedule
from assay.stats.order import (
    ORDER_COLUMNS,
    analyse_order,
    p_floor,
    run_medians,
    runs_needed,
)


def offsets_experiment(seed: int, offset_sd: float, runs: int = 8, reps: int = 5) -> pd.DataFrame:
    """Three tests, no order effect at all: a trial reads 10 + N(0, 1) plus its run's
    offset, drawn once per run from N(0, offset_sd²) and shared by all its trials."""
    rng = np.random.default_rng([seed, 7])
    flat = flat_schedule(
        order_schedule(("a", "c", "b"), fixed_runs=runs, random_runs=runs, repetitions=reps,
                       seed=seed, baseline="cycled")
    )  # fmt: skip
    offset = rng.normal(0.0, offset_sd, 2 * runs)
    rows = [(t.test, t.kind, t.run, t.position, 10.0 + offset[t.run] + rng.normal()) for t in flat]
    return pd.DataFrame(rows, columns=list(ORDER_COLUMNS))


# --- run means -----------------------------------------------------------------------


def test_run_medians_are_each_runs_median_keyed_by_kind_and_run() -> None:
    # run ids restart for each kind (as OrderSage numbers them): fixed 0 and random 0
    # are two runs
    t = pd.DataFrame(
        [
            ("a", "fixed", 0, 0, 1.0),
            ("a", "fixed", 0, 2, 5.0),
            ("a", "fixed", 0, 4, 2.0),
            ("a", "random", 0, 1, 7.0),
            ("a", "random", 0, 3, 9.0),
            ("b", "fixed", 0, 1, 4.0),
        ],
        columns=list(ORDER_COLUMNS),
    )
    got = run_medians(t)
    assert got[["test", "order", "run", "value", "trials"]].values.tolist() == [
        ["a", "fixed", 0, 2.0, 3],
        ["a", "random", 0, 8.0, 2],
        ["b", "fixed", 0, 4.0, 1],
    ]


def test_the_decision_is_scipys_tests_on_hand_computed_run_means() -> None:
    t = offsets_experiment(3, 0.5)
    a = analyse_order(t)
    for r in a.results:
        rows = t[t["test"] == r.test]
        med = {
            kind: [
                float(np.mean(rows[(rows["order"] == kind) & (rows["run"] == run)]["value"]))
                for run in sorted(set(rows[rows["order"] == kind]["run"]))
            ]
            for kind in ("fixed", "random")
        }
        kw = stats.kruskal(med["fixed"], med["random"])
        mw = stats.mannwhitneyu(med["fixed"], med["random"], alternative="two-sided")
        assert r.per_run is not None and r.comparison is not None
        assert (r.per_run.n_fixed, r.per_run.n_random) == (8, 8)
        assert r.p_value == pytest.approx(kw.pvalue) == pytest.approx(r.per_run.kruskal_p)
        assert r.per_run.mann_whitney_p == pytest.approx(mw.pvalue)
        # the pooled test: every trial, kept beside and not deciding
        pooled = stats.kruskal(
            rows[rows["order"] == "fixed"]["value"], rows[rows["order"] == "random"]["value"]
        )
        assert r.pooled_p == pytest.approx(pooled.pvalue) == pytest.approx(r.comparison.kruskal_p)
        assert (r.comparison.n_fixed, r.comparison.n_random) == (40, 40)
        assert r.significant == (r.p_value < 0.05 / 3)


# --- run offsets -----------------------------------------------------------------------


def test_run_offsets_fool_the_pooled_test_but_not_the_per_run_decision() -> None:
    """No order effect; every run shifted by its own offset (1 trial sd).  With seed 7 the
    offsets happen to set the fixed-order runs apart from the random-order ones: pooled,
    40 trials a side count as 40 independent samples and every test is flagged; the 8
    run means a side do not reach the threshold for any."""
    a = analyse_order(offsets_experiment(7, 1.0))
    assert a.pooled_flagged == ["a", "c", "b"]  # before: a false positive, three times
    assert a.flagged == [] and not a.order_matters  # after: no order effect decided
    assert a.verdict().startswith("order likely does not matter")
    line = a.pooled_line()
    assert line is not None and line.startswith("pooled trials (not used for the decision)")
    assert "would flag" in line and "not " in line


def test_run_offsets_false_positives_pooled_vs_per_run_over_40_seeds() -> None:
    pooled = per_run = 0
    for seed in range(40):
        a = analyse_order(offsets_experiment(seed, 1.0))
        pooled += bool(a.pooled_flagged)
        per_run += a.order_matters
    assert per_run <= 5  # alpha = 5%: 2 expected; 5 is beyond the 95th percentile
    assert pooled >= per_run + 3  # pooling reads the run offsets as order effects


# --- too few runs ----------------------------------------------------------------------


def test_p_floor_known_answers() -> None:
    # 3 against 3 entirely apart: H = 12/(6·7)·(6²/3 + 15²/3) − 3·7 = 27/7
    assert p_floor(3, 3) == pytest.approx(stats.chi2.sf(27 / 7, 1))
    assert p_floor(5, 5, "mann-whitney") == pytest.approx(2 / math.comb(10, 5))
    assert p_floor(1, 1, "mann-whitney") == 1.0
    assert runs_needed(0.05 / 3) == 5 and runs_needed(0.05 / 3, "mann-whitney") == 5
    assert runs_needed(1e-6) == 17 and runs_needed(1e-6, most=10) is None
    for thr in (0.05, 0.01, 0.05 / 7, 1e-4):  # the fewest: one run less cannot reach it
        k = runs_needed(thr)
        assert k is not None and p_floor(k, k) < thr <= p_floor(k - 1, k - 1)


def test_too_few_runs_is_not_decided_and_says_how_many_are_needed() -> None:
    t = offsets_experiment(1, 0.0, runs=3)
    t.loc[(t["test"] == "c") & (t["order"] == "fixed"), "value"] += 5.0  # a huge effect
    a = analyse_order(t)
    c = next(r for r in a.results if r.test == "c")
    assert c.pooled_significant and not c.significant  # 3 runs a side: p >= 0.0495
    assert c.p_floor == pytest.approx(p_floor(3, 3)) and c.p_value == pytest.approx(c.p_floor)
    text = a.verdict()
    assert text.startswith("order not decided: with 3 fixed-order and 3 random-order runs")
    assert "at least 5 runs of each kind are needed" in text
    assert "Kruskal-Wallis on run means cannot give p below" in text  # what decides (#37)
    assert "the per-run test cannot give p below 0.05" in c.note


# --- properties ------------------------------------------------------------------------


@given(
    st.lists(st.floats(0.1, 1e3, allow_nan=False), min_size=4, max_size=30),
    st.integers(0, 2**31 - 1),
)
@settings(max_examples=60, deadline=None)
def test_one_trial_per_run_makes_per_run_and_pooled_the_same(
    values: list[float], seed: int
) -> None:
    rng = np.random.default_rng(seed)
    kinds = ["fixed", "random"] * (len(values) // 2) + ["fixed"] * (len(values) % 2)
    rng.shuffle(kinds)
    t = pd.DataFrame(
        [("x", k, i, 0, v) for i, (k, v) in enumerate(zip(kinds, values, strict=True))],
        columns=list(ORDER_COLUMNS),
    )
    r = analyse_order(t).results[0]
    assert r.p_value == pytest.approx(r.pooled_p, nan_ok=True)
    assert r.significant == r.pooled_significant


@given(st.integers(0, 10_000))
@settings(max_examples=25, deadline=None)
def test_per_run_decision_ignores_where_in_its_run_a_reading_lies(seed: int) -> None:
    """Run medians do not change when a run's readings trade places (the pooled test does
    not either; drift does)."""
    t = offsets_experiment(seed % 50, 0.5, runs=5, reps=3)
    rng = np.random.default_rng(seed)
    shuffled = t.copy()
    for _, idx in shuffled.groupby(["test", "order", "run"]).groups.items():
        shuffled.loc[idx, "value"] = rng.permutation(shuffled.loc[idx, "value"].to_numpy())
    a, b = analyse_order(t), analyse_order(shuffled)
    for x, y in zip(a.results, b.results, strict=True):
        assert x.p_value == pytest.approx(y.p_value) and x.pooled_p == pytest.approx(y.pooled_p)
    assert a.flagged == b.flagged
