"""Issue #37: steps, and knees and turning points that are never at an end of the range.

A PostgreSQL dataset with a numeric ``block`` (0-21) whose means fall from ~95k to ~57k
between blocks 4 and 5 was reported as "block: knee at 0 (turn ratio nan)" and
"Report results on both sides of block = 0".  These curves have a known truth.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.designs.sweep import analyse, summarise
from assay.stats.trends import (
    STEP_SHARE,
    TermEffects,
    find_important_point,
    important_points,
    step_of,
)

BLOCKS = np.arange(22, dtype=float)


def _block_curve(noise: float = 0.0, seed: int = 0, drift: float = 0.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y = np.where(BLOCKS <= 4, 95_000.0, 57_000.0 - drift * (BLOCKS - 5) / 16)
    return y + rng.normal(0.0, noise, BLOCKS.size)


# ----------------------------------------------------------------------------- steps


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("noise", [0.0, 1_500.0])
@pytest.mark.parametrize("drift", [0.0, 5_000.0])
def test_the_block_curve_is_a_step_between_4_and_5(seed: int, noise: float, drift: float) -> None:
    y = _block_curve(noise, seed, drift)
    assert find_important_point(BLOCKS, y - y.mean())[:2] == ("step", 5.0)  # type: ignore[index]
    got = step_of(BLOCKS, y)
    assert got is not None and got[:2] == (4.0, 5.0)
    assert STEP_SHARE <= got[2] <= 1.0


def test_a_step_as_an_important_point_says_between_which_levels() -> None:
    eff = pd.Series(_block_curve(1_500.0), index=BLOCKS.astype(int))
    (pt,) = important_points([TermEffects(("block",), 60.0, eff - eff.mean())])
    assert (pt.kind, pt.value, pt.before) == ("step", 5.0, 4.0)
    assert pt.describe() == "block: step between 4 and 5"
    assert math.isfinite(pt.turn_ratio) and STEP_SHARE <= pt.turn_ratio <= 1.0
    d = pt.to_dict()
    assert (d["kind"], d["value"], d["before"]) == ("step", 5, 4)


def test_a_step_in_an_interaction_slice_is_a_step_too() -> None:
    """'the same for fsync = 0/1': the block curve with fsync fixed at each value."""
    fall = _block_curve(1_000.0, seed=1) - 76_000.0
    eff = pd.DataFrame(
        [fall, 0.5 * fall], index=pd.Index([0, 1], name="fsync"), columns=BLOCKS.astype(int)
    )
    pts = important_points([TermEffects(("fsync", "block"), 30.0, eff)])
    assert {(p.param, p.fixed, p.kind, p.before, p.value) for p in pts} == {
        ("block", ("fsync", 0), "step", 4.0, 5.0),
        ("block", ("fsync", 1), "step", 4.0, 5.0),
    }  # and nothing along fsync: two values


@pytest.mark.parametrize("j", range(6))
def test_a_step_anywhere_between_two_adjacent_levels(j: int) -> None:
    x = np.array([1, 2, 4, 8, 16, 32, 64], dtype=float)
    y = np.where(np.arange(x.size) <= j, 10.0, 3.0) + 0.05 * np.sin(np.arange(x.size))
    found = find_important_point(x, y)
    assert found is not None and found[:2] == ("step", x[j + 1])
    got = step_of(x, y)
    assert got is not None and got[:2] == (x[j], x[j + 1])
    assert got[2] == pytest.approx(found[2])


def test_knees_of_the_existing_curves_are_not_steps() -> None:
    """The published behaviour stays on knees whose side climbs towards the bend."""
    x = np.array([1, 2, 4, 8, 16, 32], dtype=float)
    assert step_of(x, [1, 2, 4, 8, 8.2, 8.3]) is None
    assert find_important_point(x, [1, 2, 4, 8, 8.2, 8.3])[:2] == ("knee", 8.0)  # type: ignore[index]
    x7 = np.array([1, 2, 4, 8, 16, 32, 64], dtype=float)
    y7 = np.minimum(x7, 8) + 0.01 * x7
    assert find_important_point(x7, y7)[:2] == ("knee", 8.0)  # type: ignore[index]


# ----------------------------------------------------------------- two values, ends


@given(st.floats(-1e6, 1e6), st.floats(-1e6, 1e6), st.floats(-1e3, 1e3), st.floats(0.1, 1e3))
def test_a_two_valued_parameter_has_no_point(a: float, b: float, lo: float, gap: float) -> None:
    assert find_important_point([lo, lo + gap], [a, b]) is None
    assert step_of([lo, lo + gap], [a, b]) is None
    eff = pd.Series([a, b], index=[0, 1])
    assert important_points([TermEffects(("fsync",), 50.0, eff)]) == []


def test_the_block_curve_is_never_a_knee_at_0() -> None:
    for seed in range(20):
        found = find_important_point(BLOCKS, _block_curve(3_000.0, seed, 10_000.0))
        if found is not None:
            assert found[1] != 0.0 and math.isfinite(found[2])
            if found[0] != "step":
                assert 0.0 < found[1] < 21.0


def test_a_flat_start_gives_a_large_but_finite_turn_ratio() -> None:
    x = np.arange(1, 9, dtype=float)
    y = np.array([0, 0, 0, 0, 1, 2, 3, 4], dtype=float)  # slope 0, then 1: a knee at 4
    found = find_important_point(x, y)
    assert found is not None and found[:2] == ("knee", 4.0)
    assert math.isfinite(found[2]) and found[2] > 10


# ------------------------------------------------------------------------ properties

_curves = st.integers(3, 14).flatmap(
    lambda n: st.tuples(
        st.lists(st.floats(-1e4, 1e4, allow_subnormal=False), min_size=n, max_size=n, unique=True),
        st.lists(st.floats(-1e6, 1e6, allow_subnormal=False), min_size=n, max_size=n),
    )
)


@settings(max_examples=300, deadline=None)
@given(_curves)
def test_any_curve_a_point_is_inside_the_range_with_a_finite_ratio(
    curve: tuple[list[float], list[float]],
) -> None:
    xs, ys = curve
    found = find_important_point(xs, ys)
    if found is None:
        return
    kind, value, ratio = found
    p = np.sort(np.asarray(xs))
    assert math.isfinite(ratio) and ratio >= 0
    if kind == "step":
        st_ = step_of(xs, ys)
        assert st_ is not None
        before, after, share = st_
        k = int(np.searchsorted(p, after))
        assert after == value and k >= 1 and p[k - 1] == before  # adjacent levels
        assert STEP_SHARE <= share <= 1.0 and share == pytest.approx(ratio)
    else:
        assert p[0] < value < p[-1]
        assert value in p


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.floats(-1e3, 1e3, allow_subnormal=False), min_size=3, max_size=12),
    st.booleans(),
)
def test_a_monotone_curve_never_has_a_knee_at_an_end(ys: list[float], up: bool) -> None:
    y = np.sort(np.asarray(ys))
    y = y if up else y[::-1]
    x = np.arange(y.size, dtype=float)
    found = find_important_point(x, y)
    if found is not None:
        assert found[0] in ("knee", "step")
        assert math.isfinite(found[2])
        if found[0] == "knee":
            assert 0 < found[1] < x[-1]


@settings(max_examples=100, deadline=None)
@given(
    st.integers(4, 14).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n - 2))),
    st.floats(1.0, 1e5),
    st.floats(0.0, 0.05),
    st.integers(0, 2**32 - 1),
)
def test_a_step_with_little_noise_is_found_between_its_levels(
    nj: tuple[int, int], height: float, noise: float, seed: int
) -> None:
    n, j = nj
    rng = np.random.default_rng(seed)
    x = np.cumsum(rng.uniform(0.5, 3.0, n))
    y = np.where(np.arange(n) <= j, 0.0, height) + rng.normal(0.0, noise * height, n)
    found = find_important_point(x, y)
    assert found is not None and found[:2] == ("step", x[j + 1])


# ------------------------------------------------------------------- what is printed


def test_the_sweep_summary_says_step_between_4_and_5() -> None:
    rows = list(itertools.product(range(22), [0, 1], [1, 2, 3]))
    d = pd.DataFrame(rows, columns=["block", "fsync", "rep"])
    rng = np.random.default_rng(0)
    d["tps"] = (
        np.where(d["block"] <= 4, 95_000.0, 57_000.0)
        - 5_000.0 * d["fsync"]
        + rng.normal(0.0, 300.0, len(d))
    )
    s = summarise(analyse(d.drop(columns="rep"), ["block", "fsync"], "tps", form="main"))
    assert "block: step between 4 and 5" in s.text
    assert "knee at 0" not in s.text and "nan" not in s.text
    assert "fsync:" not in s.text  # two values: no point
    assert "Report results on both sides of the block step between 4 and 5." in s.text
    assert s.points == (("block", 5),)
