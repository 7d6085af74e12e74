"""Algorithms 2 and 3 on curves with a known knee or turning point."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import spearmanr

from assay.stats.trends import (
    TermEffects,
    find_important_point,
    important_points,
    near_monotone,
    rank_points,
    spearman,
)


def test_spearman_matches_scipy() -> None:
    rng = np.random.default_rng(0)
    for _ in range(20):
        x, y = rng.normal(size=8), rng.normal(size=8)
        assert spearman(x, y) == pytest.approx(spearmanr(x, y).statistic)
    assert math.isnan(spearman([1], [2]))
    assert math.isnan(spearman([1, 2, 3], [4, 4, 4]))


def test_knee_of_a_saturating_curve() -> None:
    x = np.array([1, 2, 4, 8, 16, 32, 64], dtype=float)
    y = np.minimum(x, 8) + 0.01 * x
    kind, val, ratio = find_important_point(x, y)  # type: ignore[misc]
    assert (kind, val) == ("knee", 8.0)
    # slope before ~1, after ~0.01: the turn ratio is close to 1
    assert 0.9 < ratio < 1.0


def test_knee_of_a_decreasing_convex_curve() -> None:
    x = np.arange(1, 11, dtype=float)
    y = np.where(x <= 4, 100 - 20 * x, 20 - 0.5 * (x - 4))
    found = find_important_point(x, y)
    assert found is not None and found[:2] == ("knee", 4.0)


@pytest.mark.parametrize("peak", [3, 4, 5])
def test_turning_point_of_a_peak(peak: int) -> None:
    x = np.arange(1, 9, dtype=float)
    y = -np.abs(x - peak)
    found = find_important_point(x, y)
    assert found is not None
    assert found[:2] == ("turning", float(peak))


def test_turning_point_of_a_valley_and_turn_ratio() -> None:
    x = np.array([1, 2, 3, 4, 5, 6, 7], dtype=float)
    y = np.array([5.0, 3.0, 1.0, 0.0, 2.0, 4.0, 6.0])
    kind, val, ratio = find_important_point(x, y)  # type: ignore[misc]
    assert (kind, val) == ("turning", 4.0)
    ka = np.polyfit(x[:4], y[:4], 1)[0]
    kb = np.polyfit(x[3:], y[3:], 1)[0]
    assert ratio == pytest.approx(abs((kb - ka) / ka))


def test_no_point_on_short_or_flat_or_weakly_nonmonotone_curves() -> None:
    assert find_important_point([1, 2], [1, 2]) is None
    assert find_important_point([1, 2, 3, 4], [1, 1, 1, 1]) is None
    # not monotone, but no split has |ΔSpearman| >= 1
    assert find_important_point([1, 2, 3, 4, 5, 6], [1, 3, 2, 4, 3, 5]) is None


def test_algorithm2_filters_by_variance_and_slices_interactions() -> None:
    main = pd.Series([0.0, 1.0, 2.0, 4.0, 4.1, 4.2], index=[1, 2, 4, 8, 16, 32])
    small = pd.Series([0.0, 1.0, 2.0, 4.0, 4.1, 4.2], index=[1, 2, 4, 8, 16, 32])
    cat = pd.Series([0.0, 3.0, 1.0], index=["a", "b", "c"])
    q = np.array([1, 2, 3, 4, 5, 6, 7], dtype=float)
    inter = pd.DataFrame(
        [-np.abs(q - 4), np.abs(q - 4) - 1.5],
        index=pd.Index(["x", "y"], name="k"),
        columns=pd.Index(q, name="q"),
    )
    pts = important_points(
        [
            TermEffects(("w",), 50.0, main),
            TermEffects(("v",), 5.0, small),  # below 10%: ignored
            TermEffects(("c",), 30.0, cat),  # categorical: ignored
            TermEffects(("k", "q"), 20.0, inter),
        ]
    )
    got = {(p.param, p.fixed, p.kind, p.value) for p in pts}
    assert got == {
        ("w", None, "knee", 8.0),
        ("q", ("k", "x"), "turning", 4.0),
        ("q", ("k", "y"), "turning", 4.0),
    }
    scores = [p.score for p in pts]
    assert scores == sorted(scores, reverse=True)


def test_rank_puts_infinite_first_and_nan_last() -> None:
    from assay.stats.trends import ImportantPoint

    a = ImportantPoint(("a",), "a", "knee", 1.0, math.nan, 50.0)
    b = ImportantPoint(("b",), "b", "knee", 1.0, math.inf, 20.0)
    c = ImportantPoint(("c",), "c", "knee", 1.0, 2.0, 20.0)
    assert [p.term for p in rank_points([a, c, b])] == [("b",), ("c",), ("a",)]
    assert a.to_dict()["turn_ratio"] is None


@settings(max_examples=40, deadline=None)
@given(st.integers(3, 12), st.floats(0.1, 10), st.floats(-5, 5))
def test_monotone_curves_never_give_turning_points(n: int, scale: float, shift: float) -> None:
    x = np.arange(1, n + 1, dtype=float)
    y = shift + scale * np.log(x)
    found = find_important_point(x, y)
    assert found is None or found[0] == "knee"
    found_dec = find_important_point(x, -y)
    assert found_dec is None or found_dec[0] == "knee"


@settings(max_examples=40, deadline=None)
@given(st.integers(5, 12), st.data())
def test_a_strict_peak_is_found_exactly(n: int, data: st.DataObject) -> None:
    peak = data.draw(st.integers(2, n - 1))  # 0-based index of an interior peak
    x = np.arange(n, dtype=float)
    y = -np.abs(x - peak) * data.draw(st.floats(0.5, 3))
    found = find_important_point(x, y)
    # a peak at the second or second-to-last value has a one-point side (no Spearman)
    if 2 <= peak <= n - 3:
        assert found is not None and found[:2] == ("turning", float(peak))


def test_a_saturating_curve_with_noise_on_its_plateau_is_a_knee() -> None:
    """Issue #21: the published rule runs Kneedle only on a strictly monotone curve, so
    the plateau's noise made this a turning point; within the tolerance it is a knee."""
    x = np.array([1, 2, 4, 8, 16, 32, 64], dtype=float)
    y = np.array([0.0, 0.33, 0.67, 1.0, 1.02, 0.99, 1.01])
    assert abs(spearman(x, y)) < 1  # not strictly monotone
    found = find_important_point(x, y)
    assert found is not None and found[:2] == ("knee", 8.0)
    flat = np.array([0.0, 0.33, 0.67, 1.0, 1.0, 1.0, 1.0])  # ties: Spearman < 1 too
    found = find_important_point(x, flat)
    assert found is not None and found[:2] == ("knee", 8.0)


def test_a_real_fall_after_the_peak_stays_a_turning_point() -> None:
    x = np.array([1, 2, 4, 8, 16, 32, 64], dtype=float)
    y = np.array([0.0, 0.33, 0.67, 1.0, 0.8, 0.65, 0.5])  # falls by half after 8
    assert near_monotone(x, y) is None
    found = find_important_point(x, y)
    assert found is not None and found[:2] == ("turning", 8.0)


@given(st.lists(st.floats(-100, 100), min_size=3, max_size=12), st.booleans())
def test_a_monotone_curve_is_its_own_monotone_fit(ys: list[float], up: bool) -> None:
    y = np.sort(np.asarray(ys))
    if not up:
        y = y[::-1]
    x = np.arange(y.size, dtype=float)
    got = near_monotone(x, y)
    if np.ptp(y) == 0:
        assert got is None
    else:
        assert got is not None and np.allclose(got[1], y)
        assert got[0] == (1.0 if up else -1.0)
