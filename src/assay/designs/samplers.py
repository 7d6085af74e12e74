"""Samplers for incremental sampling of a parameter space (Hui et al., §3.2 and §4.1).

A sampler chooses which settings to measure next.  It sees the valid settings as a
data frame (one row per setting, one column per parameter), a mask of the rows already
measured, and how many more are wanted; it returns positions of rows not yet measured.
Every sampler is incremental (call it again with a grown mask), deterministic for a
given ``numpy.random.Generator`` state, and never returns a taken or repeated row.

- ``random`` (the paper's default and recommendation): uniform without replacement.
- ``balanced``: each value of each parameter about equally often (§4.1).
- ``stratified``: each value of each parameter as often in the sample as in the space (§4.1).
- ``distribution``: distribution-aware, weighted towards regions where the measured
  metric changes abruptly (§4.1); it needs the metric of the measured rows (``y``).
- ``lhs``: a Latin Hypercube over the parameters' value indices, snapped to the
  nearest valid untaken setting.
- ``grid``: the settings in their given (grid) order.

>>> import pandas as pd
>>> space = pd.DataFrame({"a": [1, 1, 2, 2], "b": ["x", "y", "x", "y"]})
>>> taken = np.zeros(4, dtype=bool)
>>> pos = make_sampler("random").pick(space, taken, 2, np.random.default_rng(0))
>>> len(pos), len(set(pos.tolist()))
(2, 2)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt
import pandas as pd

__all__ = [
    "SAMPLERS",
    "BalancedSampler",
    "DistributionSampler",
    "GridSampler",
    "LHSSampler",
    "RandomSampler",
    "Sampler",
    "StratifiedSampler",
    "encode",
    "make_sampler",
]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]


@runtime_checkable
class Sampler(Protocol):
    """Chooses the next settings to measure."""

    name: str

    def pick(
        self,
        candidates: pd.DataFrame,
        taken: np.ndarray,
        k: int,
        rng: np.random.Generator,
        *,
        y: np.ndarray | None = None,
    ) -> np.ndarray:
        """Positions (ints, 0-based, into candidates) of up to k rows not yet taken.

        candidates: one row per valid setting, one column per parameter (numeric
        columns for ordered numeric parameters, object/category for categorical
        ones); taken: bool mask, len(candidates), rows already measured; y: optional
        metric per row (mean over repetitions; NaN where not measured or failed), used
        only by samplers that adapt to the results (``distribution``). Returns fewer
        than k positions only when fewer remain.
        """
        ...


# --------------------------------------------------------------------------- helpers


@dataclass(frozen=True)
class Encoded:
    """Candidates as integer value codes: ``codes[i, j]`` indexes parameter j's values."""

    codes: IntArray
    cards: tuple[int, ...]
    numeric: tuple[bool, ...]
    columns: tuple[str, ...] = field(default=())


def encode(candidates: pd.DataFrame) -> Encoded:
    """Integer codes of each parameter's values (numeric: sorted; others: first appearance).

    >>> e = encode(pd.DataFrame({"n": [4, 1, 4], "c": ["b", "a", "a"]}))
    >>> e.codes.tolist(), e.cards, e.numeric
    ([[1, 0], [0, 1], [1, 1]], (2, 2), (True, False))
    """
    n = len(candidates)
    d = candidates.shape[1]
    codes = np.zeros((n, d), dtype=np.int64)
    cards: list[int] = []
    numeric: list[bool] = []
    for j, col in enumerate(candidates.columns):
        s = candidates[col]
        is_num = pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)
        if is_num:
            uniq, inv = np.unique(s.to_numpy(dtype=float), return_inverse=True)
            codes[:, j] = inv.reshape(-1)
            cards.append(len(uniq))
        else:
            fcodes, uniques = pd.factorize(s.astype(object), sort=False)
            codes[:, j] = fcodes
            cards.append(len(uniques))
        numeric.append(bool(is_num))
    return Encoded(codes, tuple(cards), tuple(numeric), tuple(str(c) for c in candidates.columns))


def coordinates(enc: Encoded) -> FloatArray:
    """Points in a unit-scaled space for distances between settings.

    An ordered parameter becomes its value index scaled to [0, 1]; a categorical one
    becomes a one-hot block scaled so that two different categories are 1 apart.
    """
    blocks: list[FloatArray] = []
    for j, (card, is_num) in enumerate(zip(enc.cards, enc.numeric, strict=True)):
        c = enc.codes[:, j]
        if is_num or card <= 1:
            blocks.append((c / max(card - 1, 1)).astype(float)[:, None])
        else:
            onehot = np.zeros((len(c), card))
            onehot[np.arange(len(c)), c] = 1.0 / math.sqrt(2.0)
            blocks.append(onehot)
    if not blocks:
        return np.zeros((enc.codes.shape[0], 0))
    return np.hstack(blocks)


def _check(candidates: pd.DataFrame, taken: np.ndarray, k: int) -> tuple[BoolArray, IntArray, int]:
    mask = np.asarray(taken)
    if mask.dtype != np.bool_:
        raise ValueError("taken must be a boolean mask")
    if mask.shape != (len(candidates),):
        raise ValueError(
            f"taken has length {mask.shape[0] if mask.ndim else 0}, "
            f"candidates has {len(candidates)} rows"
        )
    if int(k) != k or k < 0:
        raise ValueError(f"k must be a non-negative integer, got {k!r}")
    free = np.flatnonzero(~mask).astype(np.int64)
    return mask, free, min(int(k), len(free))


def _as_positions(x: npt.ArrayLike) -> IntArray:
    return np.asarray(x, dtype=np.int64).reshape(-1)


# --------------------------------------------------------------------------- samplers


@dataclass
class RandomSampler:
    """Uniform random sampling without replacement (the paper's choice).

    >>> RandomSampler().pick(pd.DataFrame({"a": [1, 2, 3]}), np.array([True, False, True]),
    ...                      5, np.random.default_rng(1)).tolist()
    [1]
    """

    name: str = field(default="random", init=False)

    def pick(
        self,
        candidates: pd.DataFrame,
        taken: np.ndarray,
        k: int,
        rng: np.random.Generator,
        *,
        y: np.ndarray | None = None,
    ) -> np.ndarray:
        _, free, m = _check(candidates, taken, k)
        if m == 0:
            return np.zeros(0, dtype=np.int64)
        return _as_positions(rng.choice(free, size=m, replace=False))


def balanced_order(cards: tuple[int, ...], rng: np.random.Generator) -> IntArray:
    """An ordering of the full grid whose every prefix is balanced in every parameter.

    Returns ``rank`` with ``rank[i]`` the position of grid point ``i`` (mixed-radix
    index, last parameter fastest) in the order.  In every prefix of the order, the
    counts of the values of each parameter differ by at most one.  It is built one
    parameter at a time: with the order S of the first parameters (length N) and a new
    parameter of n values, step t visits ``(S[t mod N], (t + t // lcm(N, n)) mod n)``.
    Each aligned block of n steps then holds every new value once, and the g = gcd(N, n)
    shifted passes cover disjoint residue classes, so no point repeats.  Values and
    the parameters' construction order are shuffled with ``rng``.

    >>> rank = balanced_order((2, 3), np.random.default_rng(0))
    >>> sorted(rank.tolist())
    [0, 1, 2, 3, 4, 5]
    """
    d = len(cards)
    if d == 0:
        return np.zeros(1, dtype=np.int64)
    perm_params = rng.permutation(d)
    seq = np.arange(cards[perm_params[0]], dtype=np.int64)[:, None]
    for j in perm_params[1:]:
        n_prev, n = seq.shape[0], cards[j]
        lcm = n_prev * n // math.gcd(n_prev, n)
        t = np.arange(n_prev * n, dtype=np.int64)
        seq = np.hstack([seq[t % n_prev], ((t + t // lcm) % n)[:, None]])
    codes = np.empty_like(seq)
    for col, j in enumerate(perm_params):
        codes[:, j] = rng.permutation(cards[j])[seq[:, col]]
    rank = np.empty(seq.shape[0], dtype=np.int64)
    rank[_grid_index(codes, cards)] = np.arange(seq.shape[0], dtype=np.int64)
    return rank


def _grid_index(codes: IntArray, cards: tuple[int, ...]) -> IntArray:
    idx = np.zeros(codes.shape[0], dtype=np.int64)
    for j, c in enumerate(cards):
        idx = idx * c + codes[:, j]
    return idx


#: Above this many grid points per valid setting, the balanced plan is not built.
_PLAN_MAX_GRID = 20_000_000


@dataclass
class _MarginalSampler:
    """Greedy marginal matching: each pick lowers the gap to per-value target shares.

    Adding a row whose value of parameter j is v changes the squared gap
    ``sum_jv (count_jv - share_jv * n)^2`` by ``2 * (count_jv - share_jv * (n + 1)) + 1``
    summed over j (the other terms are the same for every candidate), so the best next
    row minimises ``sum_j count_{j,v_j} - (n + 1) * sum_j share_{j,v_j}``.  Counts are
    kept per row and updated through an inverted index, so a pick costs O(rows).

    Ties are broken by a plan, :func:`balanced_order`, drawn when a sampling starts
    (nothing taken) and kept for the following calls: a plain greedy choice can
    paint itself into a corner where no setting made only of least-used values is
    left, while following the plan keeps every prefix balanced on a full grid.
    """

    name: str = field(default="marginal", init=False)
    random_start: bool = False
    start_fraction: float = 0.05
    _plan: tuple[tuple[int, tuple[int, ...]], FloatArray] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def _shares(self, enc: Encoded) -> list[FloatArray]:
        raise NotImplementedError

    def _tiebreak(self, enc: Encoded, fresh: bool, rng: np.random.Generator) -> FloatArray:
        n_rows = enc.codes.shape[0]
        key = (n_rows, enc.cards)
        if not fresh and self._plan is not None and self._plan[0] == key:
            return self._plan[1]
        grid = math.prod(enc.cards)
        if grid <= _PLAN_MAX_GRID and grid <= 50 * max(n_rows, 1):
            rank = balanced_order(enc.cards, rng)[_grid_index(enc.codes, enc.cards)]
            order = np.argsort(rank, kind="stable")
            tie: FloatArray = np.empty(n_rows)
            tie[order] = np.arange(n_rows, dtype=float)
        else:
            tie = np.asarray(rng.random(size=n_rows), dtype=float)
        self._plan = (key, tie)
        return tie

    def pick(
        self,
        candidates: pd.DataFrame,
        taken: np.ndarray,
        k: int,
        rng: np.random.Generator,
        *,
        y: np.ndarray | None = None,
    ) -> np.ndarray:
        mask, free, m = _check(candidates, taken, k)
        if m == 0:
            return np.zeros(0, dtype=np.int64)
        fresh = not mask.any()
        out: list[int] = []
        if self.random_start and fresh:
            # the paper starts balanced sampling from a random 5% of the space
            n0 = min(m, max(1, math.ceil(self.start_fraction * len(candidates))))
            first = _as_positions(rng.choice(free, size=n0, replace=False))
            out.extend(first.tolist())
            mask = mask.copy()
            mask[first] = True
            m -= n0
            if m == 0:
                self._plan = None
                return first
        enc = encode(candidates)
        n_rows, d = enc.codes.shape
        shares = self._shares(enc)
        counts = [np.bincount(enc.codes[mask, j], minlength=enc.cards[j]) for j in range(d)]
        row_count = np.zeros(n_rows)
        row_share = np.zeros(n_rows)
        for j in range(d):
            row_count += counts[j][enc.codes[:, j]]
            row_share += shares[j][enc.codes[:, j]]
        # rows of each (parameter, value), to update row_count after a pick
        order = [np.argsort(enc.codes[:, j], kind="stable") for j in range(d)]
        starts = [
            np.searchsorted(enc.codes[order[j], j], np.arange(enc.cards[j] + 1)) for j in range(d)
        ]
        tie = self._tiebreak(enc, fresh, rng)
        n = int(mask.sum())
        blocked = np.where(mask, np.inf, 0.0)
        for _ in range(m):
            score = row_count - (n + 1) * row_share + blocked
            best = np.flatnonzero(score <= score.min() + 1e-9)
            r = int(best[np.argmin(tie[best])])
            out.append(r)
            blocked[r] = np.inf
            n += 1
            for j in range(d):
                v = enc.codes[r, j]
                row_count[order[j][starts[j][v] : starts[j][v + 1]]] += 1.0
        return _as_positions(out)


@dataclass
class BalancedSampler(_MarginalSampler):
    """Balanced sampling (§4.1): every value of every parameter about equally often.

    Each pick takes a setting made of the least frequent values so far (ties broken at
    random).  On a full grid the per-value counts of every parameter then differ by at
    most one.  ``random_start=True`` starts, as the paper does, from a random 5% of
    the space when nothing is measured yet.

    >>> import itertools
    >>> grid = pd.DataFrame(list(itertools.product([1, 2, 3], ["a", "b"])), columns=["n", "c"])
    >>> pos = BalancedSampler().pick(grid, np.zeros(6, bool), 4, np.random.default_rng(0))
    >>> sorted(grid.iloc[pos]["c"].value_counts().tolist())
    [2, 2]
    """

    name: str = field(default="balanced", init=False)

    def _shares(self, enc: Encoded) -> list[FloatArray]:
        return [np.full(c, 1.0 / c) for c in enc.cards]


@dataclass
class StratifiedSampler(_MarginalSampler):
    """Stratified sampling (§4.1): each value's share in the sample matches the space.

    For a parameter value v, ``N_v,sample / N_sample = N_v,rest / N_rest`` is sought,
    which is the same as matching v's share among all valid settings.  On a full grid
    this equals balanced sampling; under constraints, frequent values get more picks.

    >>> space = pd.DataFrame({"a": [1, 1, 1, 2], "b": [1, 2, 3, 3]})
    >>> pos = StratifiedSampler().pick(space, np.zeros(4, bool), 2, np.random.default_rng(0))
    >>> sorted(space.iloc[pos]["a"].tolist())
    [1, 1]
    """

    name: str = field(default="stratified", init=False)

    def _shares(self, enc: Encoded) -> list[FloatArray]:
        n = enc.codes.shape[0]
        return [
            np.bincount(enc.codes[:, j], minlength=c) / max(n, 1) for j, c in enumerate(enc.cards)
        ]


@dataclass
class DistributionSampler:
    """Distribution-aware sampling (§4.1): sample more where the metric changes abruptly.

    With nothing measured it picks at random.  Otherwise, for every unmeasured setting
    it takes the ``2**d`` nearest measured settings (d parameters; ``neighbors``
    overrides), computes their neighbourhood variability score
    ``mean(|y_m - y_n| / dist(x_m, x_n))`` over all pairs (m, n) of that neighbour
    set, and draws the new settings by weighted random selection with those scores as
    weights.  Distances are in value-index space (ordered parameters scaled to [0, 1],
    categories 1 apart).  Measured rows whose ``y`` is NaN (failed) are not used as
    neighbours.  ``floor`` (a fraction of the mean score) keeps every setting
    possible, so flat regions are not starved completely.

    >>> space = pd.DataFrame({"a": [0, 1, 2, 3, 4, 5]})
    >>> taken = np.array([True, False, True, False, True, False])
    >>> y = np.array([0.0, np.nan, 0.0, np.nan, 5.0, np.nan])
    >>> len(DistributionSampler().pick(space, taken, 2, np.random.default_rng(0), y=y))
    2
    """

    name: str = field(default="distribution", init=False)
    neighbors: int | None = None
    floor: float = 1e-3
    max_neighbors: int = 64

    def pick(
        self,
        candidates: pd.DataFrame,
        taken: np.ndarray,
        k: int,
        rng: np.random.Generator,
        *,
        y: np.ndarray | None = None,
    ) -> np.ndarray:
        mask, free, m = _check(candidates, taken, k)
        if m == 0:
            return np.zeros(0, dtype=np.int64)
        if not mask.any():
            return _as_positions(rng.choice(free, size=m, replace=False))
        if y is None:
            raise ValueError(
                "the distribution-aware sampler needs the measured metric: pass y= "
                "(one value per candidate row, NaN where not measured)"
            )
        yv = np.asarray(y, dtype=float).reshape(-1)
        if yv.shape[0] != len(candidates):
            raise ValueError(f"y has {yv.shape[0]} values, candidates has {len(candidates)} rows")
        known = np.flatnonzero(mask & np.isfinite(yv))
        if len(known) < 2:
            return _as_positions(rng.choice(free, size=m, replace=False))
        weights = self.scores(candidates, known, yv[known], free)
        mean = float(np.mean(weights)) if np.any(weights > 0) else 1.0
        w = weights + self.floor * mean
        return _as_positions(rng.choice(free, size=m, replace=False, p=w / w.sum()))

    def scores(
        self,
        candidates: pd.DataFrame,
        known: IntArray,
        y_known: FloatArray,
        query: IntArray,
    ) -> FloatArray:
        """Neighbourhood variability score of each ``query`` row (positions into candidates)."""
        enc = encode(candidates)
        xy = coordinates(enc)
        d = len(enc.cards)
        nb = self.neighbors if self.neighbors is not None else min(2**d, self.max_neighbors)
        nb = max(2, min(nb, len(known)))
        from scipy.spatial import cKDTree  # here: a stored study need not load it

        tree = cKDTree(xy[known])
        out = np.zeros(len(query))
        xk = xy[known]
        sq = np.einsum("ij,ij->i", xk, xk)
        n_pairs = nb * (nb - 1)  # ordered pairs: the full matrix counts each pair twice
        chunk = max(1, 1_000_000 // (nb * nb))
        _, idx_all = tree.query(xy[query], k=nb)
        idx_all = np.asarray(idx_all).reshape(len(query), nb)
        for s in range(0, len(query), chunk):
            idx = idx_all[s : s + chunk]
            pts = xk[idx]  # (q, nb, dims)
            gram = pts @ pts.transpose(0, 2, 1)
            d2 = sq[idx][:, :, None] + sq[idx][:, None, :] - 2.0 * gram
            dist = np.sqrt(np.maximum(d2, 0.0))
            yy = y_known[idx]
            dy = np.abs(yy[:, :, None] - yy[:, None, :])
            # distinct settings are at least ~0.01 apart; the diagonal and rounding are not
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(dist > 1e-9, dy / dist, 0.0)
            out[s : s + chunk] = ratio.sum(axis=(1, 2)) / n_pairs
        return out


@dataclass
class LHSSampler:
    """Latin Hypercube sampling over the parameters' value indices.

    ``k`` points of a Latin Hypercube in ``[0, 1)^d`` (scipy.stats.qmc) map to value
    indices ``floor(u * cardinality)``; each is snapped to the nearest valid, untaken,
    not yet chosen setting (distance in value-index space).  Each call draws a fresh
    hypercube of size ``k``, so the picks of one call are spread over every parameter.

    >>> space = pd.DataFrame({"a": list(range(10))})
    >>> pos = LHSSampler().pick(space, np.zeros(10, bool), 5, np.random.default_rng(0))
    >>> sorted(space.iloc[pos]["a"] // 2)
    [0, 1, 2, 3, 4]
    """

    name: str = field(default="lhs", init=False)
    scramble: bool = True

    def pick(
        self,
        candidates: pd.DataFrame,
        taken: np.ndarray,
        k: int,
        rng: np.random.Generator,
        *,
        y: np.ndarray | None = None,
    ) -> np.ndarray:
        _, free, m = _check(candidates, taken, k)
        if m == 0:
            return np.zeros(0, dtype=np.int64)
        if m == len(free):
            return _as_positions(free[rng.permutation(len(free))])
        enc = encode(candidates)
        cards = np.asarray(enc.cards, dtype=float)
        d = len(cards)
        if d == 0:
            return _as_positions(free[:m])
        # cell centres of the chosen value indices, in the same space as the settings
        from scipy.stats import qmc  # here: scipy.stats costs a stored report ~0.5 s

        u = qmc.LatinHypercube(d=d, scramble=self.scramble, rng=rng).random(m)
        target = (np.floor(u * cards) + 0.5) / cards
        pts = (enc.codes[free] + 0.5) / cards
        from scipy.spatial import cKDTree  # here: a stored study need not load it

        tree = cKDTree(pts)
        chosen = np.zeros(len(free), dtype=bool)
        out: list[int] = []
        for t in target:
            kk = 8
            while True:
                kq = min(kk, len(free))
                _, idx = tree.query(t, k=kq)
                idx = np.atleast_1d(idx)
                ok = idx[~chosen[idx]]
                if len(ok):
                    i = int(ok[0])
                    break
                if kq == len(free):  # unreachable: m < len(free) leaves one free
                    raise AssertionError("no free setting left")
                kk *= 4
            chosen[i] = True
            out.append(int(free[i]))
        return _as_positions(out)


@dataclass
class GridSampler:
    """The full grid in a fixed order: the first untaken rows in the candidates' order.

    >>> GridSampler().pick(pd.DataFrame({"a": [1, 2, 3]}), np.array([True, False, False]),
    ...                    1, np.random.default_rng(0)).tolist()
    [1]
    """

    name: str = field(default="grid", init=False)

    def pick(
        self,
        candidates: pd.DataFrame,
        taken: np.ndarray,
        k: int,
        rng: np.random.Generator,
        *,
        y: np.ndarray | None = None,
    ) -> np.ndarray:
        _, free, m = _check(candidates, taken, k)
        return _as_positions(free[:m])


_FACTORIES: dict[str, Callable[..., Sampler]] = {
    "random": RandomSampler,
    "balanced": BalancedSampler,
    "stratified": StratifiedSampler,
    "distribution": DistributionSampler,
    "lhs": LHSSampler,
    "grid": GridSampler,
}

#: Names accepted by :func:`make_sampler` (the first is the default).
SAMPLERS: tuple[str, ...] = tuple(_FACTORIES)


def make_sampler(name: str = "random", **options: Any) -> Sampler:
    """The sampler called ``name``, configured with ``options``.

    >>> make_sampler("balanced", random_start=True).name
    'balanced'
    >>> make_sampler("sobol")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: unknown sampler 'sobol'; choose one of: random, balanced, stratified, ...
    """
    try:
        factory = _FACTORIES[name]
    except KeyError:
        raise ValueError(
            f"unknown sampler {name!r}; choose one of: {', '.join(SAMPLERS)}"
        ) from None
    try:
        return factory(**options)
    except TypeError as exc:
        raise ValueError(f"sampler {name!r}: bad option: {exc}") from None
