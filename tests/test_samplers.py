"""Samplers for incremental sampling: validity, determinism, balance, snapping."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.designs.samplers import (
    SAMPLERS,
    DistributionSampler,
    Sampler,
    balanced_order,
    encode,
    make_sampler,
)


def grid(cards: list[int], categorical: int = 0) -> pd.DataFrame:
    """A full grid; the last ``categorical`` parameters take string values."""
    cols = {}
    values = []
    for j, c in enumerate(cards):
        if j >= len(cards) - categorical:
            values.append([f"v{i}" for i in range(c)])
        else:
            values.append([2**i for i in range(c)])
        cols[j] = f"p{j}"
    return pd.DataFrame(list(itertools.product(*values)), columns=list(cols.values()))


def metric(df: pd.DataFrame) -> np.ndarray:
    return np.asarray(df.index.to_numpy() % 7, dtype=float)


def drain(
    sampler: Sampler, df: pd.DataFrame, ks: list[int], seed: int
) -> tuple[list[np.ndarray], np.ndarray]:
    rng = np.random.default_rng(seed)
    taken = np.zeros(len(df), dtype=bool)
    y = np.full(len(df), np.nan)
    truth = metric(df)
    picks = []
    for k in ks:
        pos = sampler.pick(df, taken, k, rng, y=y)
        picks.append(pos)
        assert pos.dtype.kind == "i"
        assert not taken[pos].any(), "returned a taken row"
        assert len(set(pos.tolist())) == len(pos), "returned a row twice"
        assert len(pos) == min(k, int((~taken).sum()))
        taken[pos] = True
        y[pos] = truth[pos]
    return picks, taken


cards_st = st.lists(st.integers(2, 5), min_size=1, max_size=4)
ks_st = st.lists(st.integers(0, 12), min_size=1, max_size=8)


@pytest.mark.parametrize("name", SAMPLERS)
@settings(max_examples=25, deadline=None)
@given(cards=cards_st, ks=ks_st, seed=st.integers(0, 2**16), cat=st.integers(0, 2))
def test_valid_incremental_picks(
    name: str, cards: list[int], ks: list[int], seed: int, cat: int
) -> None:
    df = grid(cards, categorical=min(cat, len(cards)))
    drain(make_sampler(name), df, ks, seed)


@pytest.mark.parametrize("name", SAMPLERS)
@settings(max_examples=10, deadline=None)
@given(cards=cards_st, seed=st.integers(0, 2**16), drop=st.integers(0, 2**16))
def test_drains_a_constrained_space_completely(
    name: str, cards: list[int], seed: int, drop: int
) -> None:
    df = grid(cards)
    keep = np.random.default_rng(drop).random(len(df)) < 0.7
    df = df[keep].reset_index(drop=True)
    _, taken = drain(make_sampler(name), df, [3] * (len(df) // 3 + 2), seed)
    assert taken.all()


@pytest.mark.parametrize("name", SAMPLERS)
def test_deterministic_for_a_seed(name: str) -> None:
    df = grid([4, 3, 5], categorical=1)
    a, _ = drain(make_sampler(name), df, [6, 6, 6], 42)
    b, _ = drain(make_sampler(name), df, [6, 6, 6], 42)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("name", [n for n in SAMPLERS if n != "grid"])
def test_different_seeds_differ(name: str) -> None:
    df = grid([5, 5, 4])
    a, _ = drain(make_sampler(name), df, [10, 10], 1)
    b, _ = drain(make_sampler(name), df, [10, 10], 2)
    assert not all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


def spread(df: pd.DataFrame, taken: np.ndarray) -> int:
    """The largest difference between per-value counts of any parameter."""
    worst = 0
    for col in df.columns:
        counts = df[col][taken].value_counts().reindex(df[col].unique(), fill_value=0)
        worst = max(worst, int(counts.max() - counts.min()))
    return worst


@pytest.mark.parametrize("name", ["balanced", "stratified"])
@settings(max_examples=40, deadline=None)
@given(
    cards=st.lists(st.integers(2, 6), min_size=1, max_size=4), ks=ks_st, seed=st.integers(0, 9999)
)
def test_balanced_counts_differ_by_at_most_one_on_a_full_grid(
    name: str, cards: list[int], ks: list[int], seed: int
) -> None:
    df = grid(cards, categorical=1)
    rng = np.random.default_rng(seed)
    sampler = make_sampler(name)
    taken = np.zeros(len(df), dtype=bool)
    for k in [*ks, len(df)]:
        taken[sampler.pick(df, taken, k, rng)] = True
        assert spread(df, taken) <= 1


def test_balanced_beats_random_on_evenness() -> None:
    df = grid([6, 5, 4, 3])
    k = 36
    rng = np.random.default_rng(0)
    bal = np.zeros(len(df), dtype=bool)
    bal[make_sampler("balanced").pick(df, bal, k, rng)] = True
    rnd_spreads = []
    for seed in range(20):
        t = np.zeros(len(df), dtype=bool)
        t[make_sampler("random").pick(df, t, k, np.random.default_rng(seed))] = True
        rnd_spreads.append(spread(df, t))
    assert spread(df, bal) <= 1 < min(rnd_spreads)


def test_balanced_random_start_follows_the_paper() -> None:
    df = grid([4, 5, 5])  # 100 settings: the paper's start is a random 5%
    s = make_sampler("balanced", random_start=True)
    rng = np.random.default_rng(3)
    taken = np.zeros(len(df), dtype=bool)
    first = s.pick(df, taken, 5, rng)
    same = make_sampler("random").pick(df, taken, 5, np.random.default_rng(3))
    assert np.array_equal(first, same)


def test_stratified_matches_value_shares_under_constraints() -> None:
    df = grid([4, 4])
    df = df[df.p0 >= df.p1].reset_index(drop=True)  # p0 = 8 appears 4x, p0 = 1 once
    share = df.p0.value_counts(normalize=True)
    taken = np.zeros(len(df), dtype=bool)
    taken[make_sampler("stratified").pick(df, taken, 5, np.random.default_rng(0))] = True
    got = df.p0[taken].value_counts(normalize=True).reindex(share.index, fill_value=0)
    assert np.max(np.abs(got - share)) <= 1 / 5 + 1e-9
    # balanced instead spreads evenly over values
    taken = np.zeros(len(df), dtype=bool)
    taken[make_sampler("balanced").pick(df, taken, 6, np.random.default_rng(0))] = True
    assert sorted(df.p0[taken].tolist()) == [1, 2, 4, 4, 8, 8]


@settings(max_examples=30, deadline=None)
@given(cards=st.lists(st.integers(1, 7), min_size=1, max_size=5), seed=st.integers(0, 9999))
def test_balanced_order_is_a_permutation_with_balanced_prefixes(
    cards: list[int], seed: int
) -> None:
    rank = balanced_order(tuple(cards), np.random.default_rng(seed))
    n = int(np.prod(cards))
    assert sorted(rank.tolist()) == list(range(n))
    points = np.array(list(itertools.product(*[range(c) for c in cards])))
    seq = points[np.argsort(rank)]
    for j, c in enumerate(cards):
        counts = np.zeros(c, dtype=int)
        for v in seq[:, j]:
            counts[v] += 1
            assert counts.max() - counts.min() <= 1


def test_lhs_spreads_over_every_parameter() -> None:
    df = grid([10, 10])
    taken = np.zeros(len(df), dtype=bool)
    pos = make_sampler("lhs").pick(df, taken, 10, np.random.default_rng(5))
    enc = encode(df.iloc[pos])
    for j in range(2):
        # one point per value of each parameter: the Latin property survives snapping
        assert sorted(enc.codes[:, j].tolist()) == list(range(10))


def test_lhs_snaps_to_valid_settings() -> None:
    df = grid([8, 8])
    df = df[df.p0 < df.p1].reset_index(drop=True)  # like locks < workers
    taken = np.zeros(len(df), dtype=bool)
    for _ in range(4):
        pos = make_sampler("lhs").pick(df, taken, 5, np.random.default_rng(7))
        assert not taken[pos].any()
        taken[pos] = True
    assert (df.p0[taken] < df.p1[taken]).all()


def test_grid_is_the_given_order_and_ignores_the_seed() -> None:
    df = grid([3, 3])
    taken = np.zeros(9, dtype=bool)
    taken[[0, 4]] = True
    pos = make_sampler("grid").pick(df, taken, 4, np.random.default_rng(0))
    assert pos.tolist() == [1, 2, 3, 5]


def test_distribution_prefers_abrupt_regions() -> None:
    # y jumps between a = 4 and a = 5; flat elsewhere
    df = pd.DataFrame({"a": np.arange(40)})
    y_true = np.where(df.a.to_numpy() < 20, 0.0, 100.0)
    taken = np.zeros(40, dtype=bool)
    taken[::4] = True
    y = np.where(taken, y_true, np.nan)
    s = DistributionSampler(neighbors=2)
    near = 0
    for seed in range(30):
        pos = s.pick(df, taken, 1, np.random.default_rng(seed), y=y)
        near += int(abs(int(df.a[pos[0]]) - 18) <= 2)
    assert near >= 20  # 3 of 30 candidates are next to the jump


def test_distribution_needs_y_after_the_start() -> None:
    df = grid([3, 3])
    taken = np.zeros(9, dtype=bool)
    s = make_sampler("distribution")
    first = s.pick(df, taken, 3, np.random.default_rng(0))  # random start: no y needed
    taken[first] = True
    with pytest.raises(ValueError, match="pass y="):
        s.pick(df, taken, 3, np.random.default_rng(0))


def test_distribution_score_definition() -> None:
    # two known points, one query: score = |y_m - y_n| / dist(x_m, x_n)
    df = pd.DataFrame({"a": [0, 1, 2]})
    s = DistributionSampler(neighbors=2)
    score = s.scores(df, np.array([0, 2]), np.array([0.0, 10.0]), np.array([1]))
    assert score[0] == pytest.approx(10.0)  # value indices scaled to [0, 1]: dist = 1


def test_bad_inputs() -> None:
    df = grid([2, 2])
    s = make_sampler("random")
    with pytest.raises(ValueError, match="length"):
        s.pick(df, np.zeros(3, dtype=bool), 1, np.random.default_rng(0))
    with pytest.raises(ValueError, match="boolean"):
        s.pick(df, np.zeros(4, dtype=int), 1, np.random.default_rng(0))
    with pytest.raises(ValueError, match="non-negative"):
        s.pick(df, np.zeros(4, dtype=bool), -1, np.random.default_rng(0))
    with pytest.raises(ValueError, match="random, balanced"):
        make_sampler("sobol")
    with pytest.raises(ValueError, match="bad option"):
        make_sampler("random", nope=1)


def test_all_samplers_satisfy_the_protocol() -> None:
    for name in SAMPLERS:
        s = make_sampler(name)
        assert isinstance(s, Sampler)
        assert s.name == name
