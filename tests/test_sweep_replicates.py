"""Sweeps with repetitions (issue #35, "Small sweeps see the obvious"): the ANOVA tests
against the pure error, a small grid is measured whole and analysed as a designed
experiment, one parameter never gets a two-way term, and every setting's mean comes
with its t interval, sorted by setting.

The truth is known: synthetic trials (a known effect and known noise) are fed to the
pure design and analysis functions; statsmodels and SciPy are the references.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from assay.cli import main
from assay.designs.sweep import (
    LACK_OF_FIT,
    IncrementalSampling,
    analyse,
    setting_intervals,
    summarise,
)
from assay.stats.intervals import t_interval

SLEEP = {"t": [0.01, 0.02, 0.03, 0.04]}


def _grid(levels: dict[str, list[Any]]) -> pd.DataFrame:
    return pd.DataFrame(list(itertools.product(*levels.values())), columns=list(levels))


def _trials(
    grid: pd.DataFrame,
    reps: int,
    truth: Callable[[pd.DataFrame], np.ndarray],
    sigma: float,
    seed: int,
) -> pd.DataFrame:
    """``reps`` rows per setting: the truth plus normal noise of sd ``sigma``."""
    rows = pd.concat([grid] * reps, ignore_index=True)
    noise = np.random.default_rng(seed).normal(0.0, sigma, len(rows))
    return rows.assign(y=truth(rows) + noise)


def _spread(param: str, levels: Sequence[Any]) -> Callable[[pd.DataFrame], np.ndarray]:
    """A big effect of ``param``: its levels evenly from 1 to 4 (the last is 4× the first)."""
    value = {v: 1.0 + 3.0 * i / (len(levels) - 1) for i, v in enumerate(levels)}
    return lambda d: d[param].map(value).to_numpy(float)


def _q(name: str) -> str:
    return f"C({name})"


def _formula(terms: Sequence[tuple[str, ...]]) -> str:
    return "y ~ " + (" + ".join(":".join(_q(p) for p in t) for t in terms) or "1")


def _sm_name(term: tuple[str, ...]) -> str:
    return ":".join(_q(p) for p in term)


# --------------------------------------------------------------------------- the sleep grid


def test_the_sleep_grid_is_measured_whole_and_its_4x_effect_found() -> None:
    grid = _grid(SLEEP)
    design = IncrementalSampling(grid)  # the defaults: start 5%, R² 0.9
    assert design.min_settings is None  # one parameter: no split can judge the model
    assert design.whole_grid
    assert sorted(design.next_batch(grid.iloc[:0]).tolist()) == [0, 1, 2, 3]  # all at once
    # sleep t plus a launch cost and a jitter of 0.1 ms: 3 repetitions of each setting
    rows = _trials(grid, 3, lambda d: d["t"].to_numpy(float) + 0.0015, 1e-4, seed=7)
    rows = rows.rename(columns={"y": "metric"})
    step = design.evaluate(rows)
    assert (step.done, step.reason, step.r2, step.n_measured) == (True, "grid", (), 4)
    assert len(design.next_batch(rows)) == 0
    a = design.analysis(rows)
    assert a.trials == 12 and a.n == 4 and a.form == "main"
    assert a.table.residual_is_pure_error and a.table.resid_df == 8
    assert [r.term for r in a.significant] == [("t",)]
    assert a.significant[0].p < 1e-6
    groups = [g["metric"].to_numpy() for _, g in rows.groupby("t")]
    ref = stats.f_oneway(*groups)
    assert a.significant[0].f == pytest.approx(ref.statistic, rel=1e-9)
    assert a.significant[0].p == pytest.approx(ref.pvalue, rel=1e-6)
    cells = a.table.settings_test
    assert cells is not None and cells.f == pytest.approx(ref.statistic, rel=1e-9)
    text = summarise(a).text
    assert "Measured the whole grid at once" in text and "pure error (8 df)" in text
    assert "No parameter" not in text and "two-way" not in text


# --------------------------------------------------------------------------- known truth


@settings(max_examples=30, deadline=None)
@given(
    k=st.integers(1, 3),
    cards=st.tuples(st.integers(2, 5), st.integers(2, 5), st.integers(2, 5)),
    reps=st.integers(3, 4),
    seed=st.integers(0, 2**32 - 1),
)
def test_a_big_effect_is_found_and_the_tests_match_statsmodels(
    k: int, cards: tuple[int, int, int], reps: int, seed: int
) -> None:
    """1–3 parameters of 2–5 values, the first with a 4× effect (noise 1% of its lowest
    level), the others with none: the whole grid, its repetitions as replicates."""
    all_levels: dict[str, list[Any]] = {
        "a": [2**i for i in range(cards[0])],
        "b": ["xyzuv"[i] for i in range(cards[1])],
        "c": [10 * i for i in range(cards[2])],
    }
    levels = dict(list(all_levels.items())[:k])
    params = list(levels)
    grid = _grid(levels)
    rows = _trials(grid, reps, _spread("a", levels["a"]), 0.01, seed).rename(
        columns={"y": "metric"}
    )
    design = IncrementalSampling(grid, start=1.0)  # the first batch is the whole grid
    assert design.whole_grid and len(design.next_batch(grid.iloc[:0])) == len(grid)
    assert design.evaluate(rows).reason == "grid"
    a = design.analysis(rows)
    found = {r.name: r.p for r in a.significant}
    assert "a" in found and found["a"] < 1e-6
    if k == 1:
        assert a.form == "main" and a.table.residual_is_pure_error
    assert all(len(r.term) <= (2 if k > 1 else 1) for r in a.table.rows)

    data = rows.rename(columns={"metric": "y"})
    # the pure error and the settings test: statsmodels' full cell-means model
    full = smf.ols(_formula([tuple(params)]).replace(":", "*"), data=data).fit()
    tab = a.table
    assert tab.pure_error_df == int(full.df_resid)
    assert tab.pure_error_ss == pytest.approx(full.ssr, rel=1e-7, abs=1e-12)
    cells = tab.settings_test
    assert cells is not None
    assert cells.f == pytest.approx(full.fvalue, rel=1e-6)
    assert cells.p == pytest.approx(full.f_pvalue, rel=1e-5, abs=1e-300)
    # the terms reported: statsmodels on the trials with the same terms, type II
    terms = [r.term for r in tab.rows]
    kept = {t for t in terms if len(t) == 1}
    if any(len(t) == 2 and not {(t[0],), (t[1],)} <= kept for t in terms):
        # an interaction kept without its main effects (the final model drops
        # insignificant terms one by one, not by marginality): statsmodels codes such
        # a formula with other columns, so there is no like-for-like reference
        return
    fit = smf.ols(_formula(terms), data=data).fit()
    ref = sm.stats.anova_lm(fit, typ=2)
    assert tab.resid_df == int(fit.df_resid)
    for r in tab.rows:
        assert r.f == pytest.approx(ref.loc[_sm_name(r.term), "F"], rel=1e-6)
        assert r.p == pytest.approx(ref.loc[_sm_name(r.term), "PR(>F)"], rel=1e-5, abs=1e-300)
    lof = tab.lack_of_fit
    if tab.resid_df > tab.pure_error_df:  # the model is not saturated: its lack of fit
        cmp = sm.stats.anova_lm(fit, full)
        assert lof is not None
        assert lof.f == pytest.approx(cmp["F"].iloc[1], rel=1e-6)
        assert lof.p == pytest.approx(cmp["Pr(>F)"].iloc[1], rel=1e-5)
    else:
        assert lof is None


NULL_DESIGNS = {
    "1 parameter, no effect": ({"t": [1, 2, 3, 4]}, None),
    "2 parameters, b null": ({"a": [1, 2, 4], "b": ["x", "y", "z", "w"]}, "a"),
    "3 parameters, b and c null": ({"a": [1, 2], "b": ["x", "y", "z"], "c": [0, 1]}, "a"),
}


@pytest.mark.parametrize("name", list(NULL_DESIGNS))
def test_a_null_parameter_is_significant_about_5_percent_of_the_time(name: str) -> None:
    """Over 200 seeds, a parameter without effect is found significant (p ≤ 0.05) at
    about the nominal rate: the count is within the binomial(200, 0.05) central range
    of probability 1 − 2e-4 (seeds are fixed: the test is deterministic)."""
    levels, big = NULL_DESIGNS[name]
    grid = _grid(levels)
    nulls = [p for p in levels if p != big]
    truth = _spread(big, levels[big]) if big else (lambda d: np.full(len(d), 5.0))
    n = 200
    hits = dict.fromkeys(nulls, 0)
    for seed in range(n):
        rows = _trials(grid, 3, truth, 0.5, seed)
        a = analyse(rows, list(levels), "y", form=LACK_OF_FIT, replicates=True)
        for p in nulls:
            hits[p] += p in a.significant_terms
        if big:
            assert big in a.significant_terms
    lo, hi = stats.binom.ppf(1e-4, n, 0.05), stats.binom.isf(1e-4, n, 0.05)
    for p, count in hits.items():
        assert lo <= count <= hi, (p, count, lo, hi)


def test_lack_of_fit_adds_the_interaction_only_when_there_is_one() -> None:
    levels = {"a": [1, 2, 3], "b": ["x", "y", "z"]}
    grid = _grid(levels)
    additive = _spread("a", levels["a"])

    def crossed(d: pd.DataFrame) -> np.ndarray:
        return additive(d) + 1.5 * ((d["a"] == 3) & (d["b"] == "z")).to_numpy(float)

    for truth, form in ((additive, "main"), (crossed, "main+2way")):
        rows = _trials(grid, 3, truth, 0.05, seed=0)
        a = analyse(rows, ["a", "b"], "y", form=LACK_OF_FIT, replicates=True)
        assert a.form == form
        main = smf.ols("y ~ C(a) + C(b)", data=rows).fit()
        full = smf.ols("y ~ C(a) * C(b)", data=rows).fit()
        ref = sm.stats.anova_lm(main, full)
        assert (ref["Pr(>F)"].iloc[1] <= 0.05) == (form == "main+2way")
    assert ("a", "b") in {r.term for r in a.significant}
    assert a.table.residual_is_pure_error  # two parameters with their interaction: saturated


# --------------------------------------------------------------------------- one parameter


def test_one_parameter_never_gets_a_two_way_term() -> None:
    levels = {"n": list(range(1, 13))}
    grid = _grid(levels)
    rows = _trials(grid, 1, lambda d: np.log(d["n"].to_numpy(float)), 0.3, seed=1)
    for form in ("auto", "main", "main+2way"):
        a = analyse(rows, ["n"], "y", form=form)
        assert a.form == "main"
        assert all(len(r.term) == 1 for r in a.table.rows)
        assert "two-way" not in summarise(a).text
    # a budget below the grid: the loop runs, unable to reach R², and stays main effects
    design = IncrementalSampling(grid, budget=8, start=0.25, step=0.25, threshold=0.999)
    assert not design.whole_grid
    taken: list[int] = []
    while True:
        measured = grid.iloc[taken].assign(metric=rows["y"].to_numpy()[taken])
        batch = design.next_batch(measured)
        if taken:
            assert design.evaluate(measured).form == "main"
        if len(batch) == 0:
            break
        taken += batch.tolist()
    assert design.evaluate(measured).reason == "budget"


def test_a_saturated_grid_without_repetitions_says_nothing_can_be_tested() -> None:
    rows = _trials(_grid(SLEEP), 1, lambda d: d["t"].to_numpy(float), 1e-4, seed=0)
    design = IncrementalSampling(_grid(SLEEP))
    a = design.analysis(rows.rename(columns={"y": "metric"}))
    assert not a.testable and a.trials == 0 and not a.significant
    s = summarise(a)
    assert "no residual degree of freedom" in s.text and "repetitions ≥ 2" in s.text
    assert "any setting is representative" not in s.text
    assert s.recommendation.startswith("Nothing could be tested")


# --------------------------------------------------------------------------- whole grids


def test_which_grids_are_measured_whole() -> None:
    two_by_two = _grid({"a": [1, 2], "b": ["x", "y"]})
    assert IncrementalSampling(two_by_two).whole_grid
    wide = _grid({"a": list(range(6)), "b": list(range(5))})
    assert IncrementalSampling(wide).min_settings == 14
    assert not IncrementalSampling(wide).whole_grid  # the paper's loop, from 5%
    assert IncrementalSampling(wide, start=1.0).whole_grid  # the first batch is the grid
    assert not IncrementalSampling(two_by_two, budget=3).whole_grid  # the budget is less
    # an interrupted whole grid: the rest is asked for at once, and no step is done
    design = IncrementalSampling(_grid(SLEEP))
    half = _grid(SLEEP).iloc[[0, 2]].assign(metric=[1.0, 3.0])
    assert design.evaluate(half).reason == "" and not design.evaluate(half).done
    assert sorted(design.next_batch(half).tolist()) == [1, 3]


def test_each_setting_has_its_mean_and_t_interval_in_the_listed_order() -> None:
    rows = pd.DataFrame(
        {
            "w": [8, 1, 8, 1, 2, 8, 1, 4],
            "c": ["y", "x", "y", "x", "x", "y", "x", "x"],
            "v": [5.0, 1.0, 7.0, 2.0, np.nan, 6.0, 1.5, np.nan],
        }
    )
    order = {"w": [8, 1, 2, 4], "c": ["y", "x"]}
    s = setting_intervals(rows, ["w", "c"], "v", order)
    assert s[["w", "c"]].values.tolist() == [[8, "y"], [1, "x"], [2, "x"], [4, "x"]]
    ci = t_interval([5.0, 7.0, 6.0])
    first = s.iloc[0]
    assert first["v"] == pytest.approx(ci.mean) and first["v_n"] == 3
    assert (first["v_low"], first["v_high"]) == pytest.approx((ci.low, ci.high))
    assert first["v_confidence"] == 0.95
    failed = s.iloc[2]  # every repetition of (2, x) failed
    assert failed["v_n"] == 0 and np.isnan(failed["v"])


# --------------------------------------------------------------------------- the command


STUDY = """
[study]
name = "tiny-sweep"

[benchmark]
command = ["{py}", "-c", '''
import os, sys
w = int(sys.argv[1])
# each repetition of a setting prints its own known value: 10 w, then 10 w + 0.2, 10 w - 0.1
count = os.path.join(sys.argv[2], "runs-%d" % w)
n = os.path.getsize(count) if os.path.exists(count) else 0
with open(count, "a") as f:
    f.write(".")
print("y=%.3f" % (10 * w + (0.0, 0.2, -0.1)[n % 3]))
''', "{{w}}", "{dir}"]

[[pi]]
name = "y"
unit = "ops"
source = "regex"
pattern = 'y=([0-9.]+)'

[sweep]
repetitions = 3

[sweep.params]
w = [3, 1, 4, 2]
"""


def test_a_tiny_sweep_names_its_parameter_significant(tmp_path: Path) -> None:
    study = tmp_path / "tiny.toml"
    study.write_text(STUDY.format(py=sys.executable, dir=tmp_path))
    out, table = tmp_path / "r.json", tmp_path / "r.csv"
    args = ["sweep", str(study), "-q", "--no-monitor", "--json", str(out), "--csv", str(table)]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output  # a finished study
    doc = json.loads(out.read_text())
    assert doc["steps"][-1]["reason"] == "grid" and len(doc["steps"]) == 1
    assert doc["analysis"]["trials"] == 12 and doc["analysis"]["form"] == "main"
    assert doc["analysis"]["anova"]["residual"] == "pure error"
    sig = doc["analysis"]["significant"]
    assert [r["term"] for r in sig] == ["w"] and sig[0]["p"] < 1e-6
    text = " ".join(res.output.split())
    assert "Measured the whole grid at once" in text
    assert "Significant parameters" in text and " w " in text
    assert "No parameter has a significant effect" not in text and "main+2way" not in text
    assert "done: the whole grid of 4 settings measured at once" in text
    # each setting's mean ± CI, in the order [sweep.params] lists the values
    rows = list(csv.DictReader(io.StringIO(table.read_text())))
    assert [r["w"] for r in rows] == ["3", "1", "4", "2"]
    for r in rows:
        ci = t_interval([10 * int(r["w"]) + d for d in (0.0, 0.2, -0.1)])
        assert float(r["y"]) == pytest.approx(ci.mean) and r["y_n"] == "3"
        assert float(r["y_half_width"]) == pytest.approx(ci.half_width)
    assert [s["w"] for s in doc["settings"]] == [3, 1, 4, 2]
    assert "each setting: y mean ± 95% CI" in res.output
    # the HTML report has them too
    page = tmp_path / "r.html"
    rep = CliRunner().invoke(main, ["report", str(tmp_path / "tiny.assay.db"), "-o", str(page)])
    assert rep.exit_code == 0, rep.output
    html = page.read_text(encoding="utf-8")
    assert "each setting: y mean ± 95% CI" in html and "against the pure error" in html


def test_a_sweep_whose_model_could_never_be_judged_says_so_not_hard_to_predict() -> None:
    # a 3 x 3 grid (more than its first batch: sampled one setting at a time) whose
    # two-way model has 9 parameters: no training part of 9 settings fits it and leaves
    # two to validate on, so every step's R² is n/a (#42's distributed sweep)
    grid = pd.DataFrame(list(itertools.product(["off", "ev", "al"], [0, 1, 2])), columns=["a", "r"])
    design = IncrementalSampling(grid, seed=0, metric="y")
    rng = np.random.default_rng(0)
    effect = {"off": 60.0, "ev": 55.0, "al": 30.0}

    def trials(rows: pd.DataFrame) -> pd.DataFrame:
        reps = pd.concat([rows] * 3, ignore_index=True)
        y = [
            effect[a] - 5.0 * r + rng.normal(0, 1)
            for a, r in zip(reps["a"], reps["r"], strict=True)
        ]
        return reps.assign(y=y)

    taken: list[int] = []
    while len(batch := design.next_batch(trials(grid.iloc[taken]))):
        taken.extend(int(i) for i in batch)
    measured = trials(grid.iloc[taken])
    analysis = design.analysis(measured)
    assert analysis.step is not None and not np.any(np.isfinite(analysis.step.r2))
    text = "\n".join(summarise(analysis).lines)
    assert "No held-out R² could be computed" in text and "repetitions (pure error)" in text
    assert "hard to predict" not in text
    assert {("a",), ("r",)} <= {row.term for row in analysis.significant}
