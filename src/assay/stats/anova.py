"""Categorical ANOVA as Hui et al. use it (§3.1): every parameter is a categorical factor.

The model is main effects, optionally with every two-way interaction.  After a first
fit, terms whose p-value exceeds ``alpha`` (0.05) are dropped and the model is fitted
again, once, as the paper does ("we may find TP is insignificant and then rerun ANOVA
with only T and P").

Sums of squares are **type II** by default: each term is tested after every term that
does not contain it (a main effect after the other main effects and the interactions
without it; an interaction after everything else).  On a full grid (balanced) this is
the same as type I, the ``statsmodels.anova_lm`` default; on a random sample (unbalanced)
type I depends on the order the parameters are listed in, which would make the set of
significant parameters depend on the study file's column order.  ``typ=1`` is available.
F statistics use the mean square error of the model being tabled.  ``pct_var`` is a
term's sum of squares over the total sum of squares (× 100), the paper's "percentage
of variance explained".

The fit does not go through statsmodels' formula path (too slow for the incremental
loop: 10 refits per step on up to 25,000 settings): the design is a sparse 0/1 indicator
matrix; its Gram matrix is formed once per fit and every sub-model's residual sum of
squares comes from a rank-revealing (pivoted) Cholesky factorisation of a block of it.
Empty cells and aliased columns (constraints between parameters) only lower the rank;
degrees of freedom are rank differences.  The tests check F, p and SS against
statsmodels ``anova_lm`` on balanced and unbalanced data.

**Repetitions** (several rows of one setting) give the *pure error*: the spread of the
rows around their own setting's mean, with ``n − settings`` degrees of freedom, an
estimate of the noise that does not depend on the model.  Fitted to the rows (not to
the setting means), the model's residual is lack of fit + pure error, exactly what
``statsmodels.ols`` on the rows gives; when the model has as many parameters as there
are settings (saturated: one parameter, or two with their interaction on a full grid)
the lack of fit is empty and every term is tested against the pure error alone.  The
table also carries the two tests against pure error that need no model:
:attr:`AnovaTable.settings_test` (one mean per setting: do the settings differ at all?
for one parameter, SciPy's ``f_oneway``) and :attr:`AnovaTable.lack_of_fit` (is the
model's residual larger than the noise?).

Prediction uses the minimum-norm least-squares solution over the over-parameterised
indicator design (one column per level and per cell): the fitted values are the same
as any least-squares solution, and a level or cell never seen in training gets a zero
coefficient, i.e. it falls back to the other terms.  For an ordered numeric parameter,
an unseen level's main-effect coefficient is interpolated linearly between the nearest
seen levels (held constant beyond the ends).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Self

import numpy as np
import numpy.typing as npt
import pandas as pd

from assay.values import finite_or_none as _num

__all__ = [
    "AnovaTable",
    "CategoricalAnova",
    "Encoder",
    "FTest",
    "Factor",
    "Term",
    "TermRow",
    "term_name",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: A model term: ``("a",)`` for a main effect, ``("a", "b")`` for a two-way interaction.
Term = tuple[str, ...]

#: Relative tolerance of the pivoted Cholesky: pivots below it times the largest count
#: are treated as zero (exact dependencies of 0/1 columns leave pivots near 1e-12).
_RANK_TOL = 1e-9


def term_name(term: Term) -> str:
    """``"a"`` or ``"a:b"``.

    >>> term_name(("workers", "warehouses"))
    'workers:warehouses'
    """
    return ":".join(term)


# --------------------------------------------------------------------------- encoding


@dataclass(frozen=True)
class Factor:
    """One parameter treated as a categorical factor; ``levels`` in their order."""

    name: str
    levels: tuple[Any, ...]
    numeric: bool

    @property
    def values(self) -> FloatArray:
        """The levels as floats (numeric factors only)."""
        return np.asarray(self.levels, dtype=float)


def _is_numeric(s: pd.Series) -> bool:
    return bool(pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s))


@dataclass(frozen=True)
class Encoder:
    """Maps parameter values to integer level codes (``-1`` for a value not in the levels).

    Numeric parameters are ordered by value; other parameters keep the order of their
    categories (a pandas Categorical) or of first appearance.

    >>> enc = Encoder.from_frame(pd.DataFrame({"n": [4, 1, 4], "c": ["b", "a", "b"]}))
    >>> enc.codes(pd.DataFrame({"n": [1, 4, 2], "c": ["a", "b", "a"]})).tolist()
    [[0, 1], [1, 0], [-1, 1]]
    """

    factors: tuple[Factor, ...]

    @classmethod
    def from_frame(
        cls, X: pd.DataFrame, levels: Mapping[str, Sequence[Any]] | None = None
    ) -> Encoder:
        """Levels from ``X`` (and from ``levels`` where given: e.g. the whole space)."""
        if X.shape[1] == 0:
            raise ValueError("the settings have no parameter columns")
        out: list[Factor] = []
        for col in X.columns:
            s = X[col]
            numeric = _is_numeric(s)
            given = list(levels[col]) if levels is not None and col in levels else []
            if numeric:
                vals = np.unique(
                    np.concatenate([s.to_numpy(dtype=float), np.asarray(given, float)])
                )
                lv: tuple[Any, ...] = tuple(v.item() for v in vals)
            else:
                if isinstance(s.dtype, pd.CategoricalDtype):
                    seen = list(s.cat.categories)
                else:
                    seen = list(pd.unique(s.astype(object)))
                lv = tuple(dict.fromkeys([*given, *seen]))
            out.append(Factor(str(col), lv, numeric))
        return cls(tuple(out))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.factors)

    @property
    def cards(self) -> tuple[int, ...]:
        return tuple(len(f.levels) for f in self.factors)

    def factor(self, name: str) -> Factor:
        for f in self.factors:
            if f.name == name:
                return f
        raise KeyError(name)

    def codes(self, X: pd.DataFrame) -> IntArray:
        """``(n, k)`` level codes of the rows of ``X``."""
        missing = [f.name for f in self.factors if f.name not in X.columns]
        if missing:
            raise ValueError(f"the settings lack parameter column(s): {', '.join(missing)}")
        out = np.empty((len(X), len(self.factors)), dtype=np.int64)
        for j, f in enumerate(self.factors):
            s = X[f.name]
            if f.numeric:
                idx = pd.Index(np.asarray(f.levels, dtype=float))
                out[:, j] = idx.get_indexer(pd.to_numeric(s, errors="coerce").to_numpy(float))
            else:
                out[:, j] = pd.Index(list(f.levels), dtype=object).get_indexer(s.astype(object))
        return out


# --------------------------------------------------------------------------- design


#: The largest normal-equation matrix (p x p float64) a categorical ANOVA builds.
MAX_GRAM_BYTES = 2 * 1024**3


def check_model_size(
    cards: Sequence[int], terms: Sequence[tuple[int, ...]], names: Sequence[str]
) -> None:
    """``ValueError`` naming the model's size and its largest terms when its p x p normal
    equations would take more than :data:`MAX_GRAM_BYTES` (#40: 17 parameters with up to
    611 values each asked for 51.3 TiB and died in NumPy).

    >>> check_model_size([3, 4], [(0,), (1,), (0, 1)], ["a", "b"]) is None
    True
    >>> check_model_size([600, 600, 500], [(0,), (1,), (2,), (0, 1), (0, 2), (1, 2)],
    ...                  ["x", "y", "z"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: the model has 961,701 columns (its normal equations: 6.7 TiB; at most 2 GiB): ...
    """
    widths = {t: math.prod(cards[i] for i in t) for t in terms}
    p = 1 + sum(widths.values())
    need = 8 * p * p
    if need <= MAX_GRAM_BYTES:
        return
    largest = sorted(widths.items(), key=lambda kv: -kv[1])[:3]
    said = ", ".join(f"{' × '.join(names[i] for i in t)} ({w:,} columns)" for t, w in largest)
    many = sorted((c, names[i]) for i, c in enumerate(cards))[::-1][:3]
    raise ValueError(
        f"the model has {p:,} columns (its normal equations: {_bytes(need)}; at most "
        f"{_bytes(MAX_GRAM_BYTES)}): {said}; the parameters with the most values are "
        + ", ".join(f"{n} ({c:,})" for c, n in many)
        + ": bin them into fewer values (ranges of a numeric parameter) in the data, or "
        "rank the parameters with 'assay knobs --from' (a random forest takes any number "
        "of values)"
    )


def _bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}".replace(".0 ", " ")
        n /= 1024
    return f"{n:.1f} PiB"


class _Design:
    """Over-parameterised 0/1 design: intercept, one column per level, one per cell."""

    def __init__(self, codes: IntArray, cards: Sequence[int], terms: Sequence[tuple[int, ...]]):
        self.cards = tuple(cards)
        self.terms = tuple(terms)
        self._treat: dict[tuple[Any, ...], IntArray] = {}
        self.offset: dict[tuple[int, ...], int] = {}
        self.size: dict[tuple[int, ...], int] = {}
        n = codes.shape[0]
        pos = 1
        rows = [np.arange(n)]
        cols = [np.zeros(n, dtype=np.int64)]
        for t in self.terms:
            width = math.prod(self.cards[i] for i in t)
            self.offset[t] = pos
            self.size[t] = width
            code = np.zeros(n, dtype=np.int64)
            ok = np.ones(n, dtype=bool)
            for i in t:
                code = code * self.cards[i] + codes[:, i]
                ok &= codes[:, i] >= 0
            rows.append(np.flatnonzero(ok))
            cols.append(pos + code[ok])
            pos += width
        self.p = pos
        r = np.concatenate(rows)
        c = np.concatenate(cols)
        import scipy.sparse as sp  # SciPy where it computes: a kept report imports none

        self.X = sp.csr_matrix((np.ones(len(r)), (r, c)), shape=(n, self.p))

    def block(self, t: tuple[int, ...]) -> IntArray:
        return np.arange(self.offset[t], self.offset[t] + self.size[t], dtype=np.int64)

    def treatment(self, t: tuple[int, ...], present: frozenset[tuple[int, ...]]) -> IntArray:
        """Columns of ``t`` in treatment coding (level 0 of each factor as baseline).

        An interaction whose main effect is absent from the model also carries that main
        effect's columns, so that its span is the space of its cell means (as patsy does).
        """
        key = (t, *(((m,) in present) for m in t))
        hit = self._treat.get(key)
        if hit is not None:
            return hit
        if len(t) == 1:
            out = self.block(t)[1:]
        else:
            a, b = t
            lb = self.cards[b]
            i, j = np.meshgrid(np.arange(1, self.cards[a]), np.arange(1, lb), indexing="ij")
            cols = [self.offset[t] + (i * lb + j).ravel()]
            for m in (a, b):
                if (m,) not in present:
                    cols.append(np.arange(self.offset[(m,)] + 1, self.offset[(m,)] + self.cards[m]))
            out = np.concatenate(cols).astype(np.int64)
        self._treat[key] = out
        return out


def _trsv(U: FloatArray, b: FloatArray, trans: int = 0) -> FloatArray:
    """Solve ``U x = b`` (``trans=1``: ``U' x = b``) for upper-triangular U (LAPACK dtrtrs)."""
    from scipy.linalg import lapack

    x, info = lapack.dtrtrs(U, b, lower=0, trans=trans)
    if info != 0:  # pragma: no cover - a zero pivot cannot pass the rank test
        raise np.linalg.LinAlgError(f"dtrtrs failed (info={info})")
    return np.asarray(x, dtype=float)


def _pivoted(G: FloatArray, tol: float) -> tuple[FloatArray, IntArray, int]:
    """Pivoted Cholesky ``P' G P = U' U``: (U, 0-based pivots, rank)."""
    if G.shape[0] == 0:
        return G, np.zeros(0, dtype=np.int64), 0
    from scipy.linalg import lapack

    u, piv, rank, info = lapack.dpstrf(G, tol=tol, lower=0)
    if info < 0:  # pragma: no cover - LAPACK argument error
        raise RuntimeError(f"dpstrf failed (info={info})")
    return np.triu(u), piv.astype(np.int64) - 1, int(rank)


@dataclass
class _Gram:
    """Sufficient statistics of a least-squares fit: G = X'X, c = X'y, y'y (y centred)."""

    G: FloatArray
    c: FloatArray
    yy: float
    n: int
    tol: float = field(init=False)
    _cache: dict[bytes, tuple[float, int]] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self.tol = _RANK_TOL * max(float(np.max(np.diag(self.G), initial=1.0)), 1.0)

    def rss(self, cols: IntArray) -> tuple[float, int]:
        """Residual sum of squares and rank of the model spanned by ``cols``."""
        key = np.sort(cols).tobytes()
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        U, piv, r = _pivoted(self.G[np.ix_(cols, cols)], self.tol)
        if r == 0:
            out = (self.yy, 0)
        else:
            z = _trsv(U[:r, :r], self.c[cols][piv[:r]], trans=1)
            out = (max(self.yy - float(z @ z), 0.0), r)
        self._cache[key] = out
        return out

    def min_norm(self, cols: IntArray) -> FloatArray:
        """Minimum-norm least-squares coefficients on ``cols``."""
        U, piv, r = _pivoted(self.G[np.ix_(cols, cols)], self.tol)
        p = len(cols)
        b = np.zeros(p)
        if r == 0:
            return b
        from scipy.linalg import solve_triangular

        z = solve_triangular(U[:r, :r], self.c[cols][piv[:r]], trans="T")
        b_perm = np.zeros(p)
        b_perm[:r] = solve_triangular(U[:r, :r], z)
        if r < p:
            # null space of G in pivoted order: [-U11^-1 U12; I]; remove b's part in it
            N = np.vstack([-solve_triangular(U[:r, :r], U[:r, r:]), np.eye(p - r)])
            b_perm -= N @ np.linalg.solve(N.T @ N, N.T @ b_perm)
        b[piv] = b_perm
        return b


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class TermRow:
    """One line of an ANOVA table."""

    term: Term
    df: int
    sum_sq: float
    f: float
    p: float
    pct_var: float

    @property
    def name(self) -> str:
        return term_name(self.term)

    @property
    def mean_sq(self) -> float:
        return self.sum_sq / self.df if self.df > 0 else math.nan

    def to_dict(self) -> dict[str, Any]:
        return {
            "term": self.name,
            "params": list(self.term),
            "df": self.df,
            "sum_sq": _num(self.sum_sq),
            "f": _num(self.f),
            "p": _num(self.p),
            "pct_var": _num(self.pct_var),
        }


@dataclass(frozen=True)
class FTest:
    """One F test against the pure error: ``(ss / df) / (pure-error ss / resid_df)``."""

    name: str
    df: int
    sum_sq: float
    resid_df: int
    f: float
    p: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "test": self.name,
            "df": self.df,
            "sum_sq": _num(self.sum_sq),
            "resid_df": self.resid_df,
            "f": _num(self.f),
            "p": _num(self.p),
        }


def _f_test(ss: float, df: int, resid_ss: float, resid_df: int) -> tuple[float, float]:
    """(F, p) of ``ss`` on ``df`` degrees of freedom against a residual; NaN when
    either has no degree of freedom; a zero residual makes any real effect significant."""
    if df <= 0 or resid_df <= 0:
        return math.nan, math.nan
    ss = max(ss, 0.0)
    if resid_ss > 0:
        f = (ss / df) / (resid_ss / resid_df)
        from scipy import special

        return f, float(special.fdtrc(df, resid_df, f))
    return (math.inf, 0.0) if ss > 0 else (math.nan, math.nan)


@dataclass(frozen=True)
class AnovaTable:
    """An ANOVA table: the terms, the residual, and the fit's in-sample R².

    ``cells`` is the number of distinct settings among the ``n`` rows; with repetitions
    (``cells < n``) ``pure_error_ss`` on ``pure_error_df = n − cells`` degrees of
    freedom is the rows' spread around their own setting's mean (NaN and 0 without).
    """

    rows: tuple[TermRow, ...]
    resid_df: int
    resid_ss: float
    total_ss: float
    n: int
    typ: int
    cells: int = 0
    pure_error_ss: float = math.nan
    pure_error_df: int = 0

    @property
    def replicated(self) -> bool:
        """Whether some setting has repetitions: the pure error can be estimated."""
        return self.pure_error_df > 0

    @property
    def residual_is_pure_error(self) -> bool:
        """The model is saturated in the settings: its residual is the pure error alone."""
        return self.replicated and self.resid_df == self.pure_error_df

    @property
    def lack_of_fit(self) -> FTest | None:
        """The model's lack of fit (its residual less the pure error) against the pure
        error; ``None`` without repetitions or when the model is saturated."""
        df = self.resid_df - self.pure_error_df
        if not self.replicated or df <= 0:
            return None
        ss = max(self.resid_ss - self.pure_error_ss, 0.0)
        f, p = _f_test(ss, df, self.pure_error_ss, self.pure_error_df)
        return FTest("lack of fit", df, ss, self.pure_error_df, f, p)

    @property
    def settings_test(self) -> FTest | None:
        """The full model (one mean per setting) against the pure error: whether the
        settings differ at all (one-way ANOVA over the settings); ``None`` without
        repetitions or with a single setting."""
        df = self.cells - 1
        if not self.replicated or df <= 0:
            return None
        ss = max(self.total_ss - self.pure_error_ss, 0.0)
        f, p = _f_test(ss, df, self.pure_error_ss, self.pure_error_df)
        return FTest("settings", df, ss, self.pure_error_df, f, p)

    @property
    def r2(self) -> float:
        return 1.0 - self.resid_ss / self.total_ss if self.total_ss > 0 else math.nan

    def row(self, term: Term) -> TermRow:
        for r in self.rows:
            if r.term == term:
                return r
        raise KeyError(term_name(term))

    def significant(self, alpha: float = 0.05) -> tuple[Term, ...]:
        return tuple(r.term for r in self.rows if math.isfinite(r.p) and r.p <= alpha)

    def to_frame(self) -> pd.DataFrame:
        """The table as statsmodels prints it (plus ``pct_var``), residual last."""
        idx = [r.name for r in self.rows] + ["Residual"]
        return pd.DataFrame(
            {
                "df": [r.df for r in self.rows] + [self.resid_df],
                "sum_sq": [r.sum_sq for r in self.rows] + [self.resid_ss],
                "F": [r.f for r in self.rows] + [math.nan],
                "PR(>F)": [r.p for r in self.rows] + [math.nan],
                "pct_var": [r.pct_var for r in self.rows]
                + [100 * self.resid_ss / self.total_ss if self.total_ss > 0 else math.nan],
            },
            index=idx,
        )

    def to_dict(self) -> dict[str, Any]:
        lof, cells = self.lack_of_fit, self.settings_test
        return {
            "typ": self.typ,
            "n": self.n,
            "settings": self.cells,
            "terms": [r.to_dict() for r in self.rows],
            "resid_df": self.resid_df,
            "resid_ss": _num(self.resid_ss),
            "total_ss": _num(self.total_ss),
            "r2": _num(self.r2),
            "pure_error_df": self.pure_error_df,
            "pure_error_ss": _num(self.pure_error_ss),
            "residual": self.residual_name,
            "lack_of_fit": None if lof is None else lof.to_dict(),
            "settings_test": None if cells is None else cells.to_dict(),
        }

    @property
    def residual_name(self) -> str:
        """What the terms are tested against, in words."""
        if self.resid_df <= 0:
            return "none"
        if self.residual_is_pure_error:
            return "pure error"
        return "lack of fit + pure error" if self.replicated else "lack of fit"


@dataclass(frozen=True)
class _PureError:
    cells: int
    ss: float
    df: int


def _pure_error(codes: IntArray, y: FloatArray) -> _PureError:
    """The spread of the rows around their own setting's mean (settings: equal codes)."""
    if len(y) == 0:
        return _PureError(0, math.nan, 0)
    _, inv, counts = np.unique(codes, axis=0, return_inverse=True, return_counts=True)
    inv = inv.reshape(-1)
    means = np.bincount(inv, weights=y) / counts
    df = len(y) - len(counts)
    ss = float(np.sum((y - means[inv]) ** 2)) if df > 0 else math.nan
    return _PureError(len(counts), ss, df)


def _table(
    gram: _Gram,
    design: _Design,
    terms: Sequence[tuple[int, ...]],
    names: Sequence[str],
    typ: int,
    pure: _PureError | None = None,
) -> AnovaTable:

    def cols(ts: Iterable[tuple[int, ...]]) -> IntArray:
        sel = frozenset(ts)
        parts = [np.zeros(1, dtype=np.int64)] + [design.treatment(t, sel) for t in sel]
        return np.unique(np.concatenate(parts))

    rss_full, rank_full = gram.rss(cols(terms))
    resid_df = gram.n - rank_full
    if pure is not None and pure.df > 0 and resid_df == pure.df:
        rss_full = pure.ss  # saturated: the residual is the pure error (exact, not yy − z'z)
    mse = rss_full / resid_df if resid_df > 0 else math.nan
    rows: list[TermRow] = []
    for k, t in enumerate(terms):
        if typ == 1:
            base = list(terms[:k])
        else:
            base = [o for o in terms if o != t and not set(t) <= set(o)]
        rss0, r0 = gram.rss(cols(base))
        rss1, r1 = gram.rss(cols([*base, t]))
        df = r1 - r0
        ss = max(rss0 - rss1, 0.0) if df > 0 else 0.0
        if df > 0 and resid_df > 0 and mse > 0:
            f = (ss / df) / mse
            from scipy import special

            p = float(special.fdtrc(df, resid_df, f))
        elif df > 0 and resid_df > 0:  # a perfect fit: every real effect is significant
            f = math.inf if ss > 0 else math.nan
            p = 0.0 if ss > 0 else math.nan
        else:
            f, p = math.nan, math.nan
        pct = 100.0 * ss / gram.yy if gram.yy > 0 else math.nan
        rows.append(TermRow(tuple(names[i] for i in t), df, ss, f, p, pct))
    if pure is None:
        return AnovaTable(tuple(rows), resid_df, rss_full, gram.yy, gram.n, typ)
    return AnovaTable(
        tuple(rows), resid_df, rss_full, gram.yy, gram.n, typ, pure.cells, pure.ss, pure.df
    )


# --------------------------------------------------------------------------- the model


def _all_terms(k: int, interactions: bool) -> list[tuple[int, ...]]:
    terms: list[tuple[int, ...]] = [(i,) for i in range(k)]
    if interactions:
        terms += list(itertools.combinations(range(k), 2))
    return terms


@dataclass
class CategoricalAnova:
    """Categorical ANOVA with main effects (and two-way interactions), p > alpha dropped.

    Scikit-learn-like: ``fit(X, y)`` then ``predict(X)``; after ``fit``,
    ``initial_table_`` is the first fit's table and ``table_`` the refit's (only the
    kept terms), ``terms_`` the kept terms, and :meth:`effects` the coefficients of a
    term as sum-to-zero effects (what Algorithms 2–3 read).  ``levels`` fixes the level
    list of some parameters (e.g. every value of the space), which keeps the encoding
    the same across refits.

    Rows that repeat a setting are its repetitions: the fit is to the rows, and the
    tables carry the pure error (``pure_error=False`` skips computing it, for fits
    known to have one row per setting).

    >>> X = pd.DataFrame({"a": [1, 1, 2, 2, 3, 3] * 2, "b": ["x", "y"] * 6})
    >>> y = X["a"].map({1: 0.0, 2: 5.0, 3: 6.0}) + np.tile([0.1, -0.1, 0.0, 0.05], 3)
    >>> m = CategoricalAnova().fit(X, y)
    >>> [r.name for r in m.table_.rows], round(m.table_.rows[0].pct_var, 1)
    (['a'], 99.9)
    >>> m.predict(pd.DataFrame({"a": [2], "b": ["y"]})).round(2).tolist()
    [5.01]
    """

    interactions: bool = False
    alpha: float = 0.05
    drop_insignificant: bool = True
    typ: Literal[1, 2] = 2
    levels: Mapping[str, Sequence[Any]] | None = None
    pure_error: bool = True

    encoder_: Encoder = field(init=False, repr=False)
    initial_table_: AnovaTable = field(init=False, repr=False)
    table_: AnovaTable = field(init=False, repr=False)
    terms_: tuple[Term, ...] = field(init=False, repr=False)
    insufficient_: bool = field(init=False, repr=False, default=False)
    _coef: dict[tuple[int, ...], FloatArray] = field(init=False, repr=False)
    _seen: dict[tuple[int, ...], npt.NDArray[np.bool_]] = field(init=False, repr=False)
    _mean: float = field(init=False, repr=False, default=0.0)

    def fit(self, X: pd.DataFrame, y: npt.ArrayLike) -> Self:
        """Fit on the settings ``X`` (one column per parameter) and their metric ``y``."""
        yv = np.asarray(y, dtype=float).reshape(-1)
        if len(yv) != len(X):
            raise ValueError(f"y has {len(yv)} values, X has {len(X)} rows")
        if not np.all(np.isfinite(yv)):
            raise ValueError("y must be finite (drop failed settings before fitting)")
        if len(yv) < 2:
            raise ValueError("ANOVA needs at least 2 settings")
        self.encoder_ = Encoder.from_frame(X, self.levels)
        return self.fit_codes(self.encoder_.codes(X), yv)

    def fit_codes(self, codes: IntArray, y: FloatArray) -> Self:
        """Fit on level codes from ``self.encoder_`` (set it first); skips re-encoding.
        A model whose normal equations would not fit in memory is refused with its size
        (:func:`check_model_size`) before anything is allocated."""
        enc = self.encoder_
        names = enc.names
        terms = _all_terms(len(names), self.interactions)
        check_model_size(enc.cards, terms, names)
        design = _Design(codes, enc.cards, terms)
        self._mean = float(np.mean(y))
        yc = y - self._mean
        gram = _Gram(
            np.asarray((design.X.T @ design.X).toarray(), dtype=float),
            np.asarray(design.X.T @ yc, dtype=float).reshape(-1),
            float(yc @ yc),
            len(y),
        )
        pure = _pure_error(codes, y) if self.pure_error else None
        self.initial_table_ = _table(gram, design, terms, names, self.typ, pure)
        self.insufficient_ = self.initial_table_.resid_df <= 0
        kept = terms
        if self.drop_insignificant and not self.insufficient_:
            sig = set(self.initial_table_.significant(self.alpha))
            kept = [t for t in terms if tuple(names[i] for i in t) in sig]
        self.table_ = (
            self.initial_table_
            if kept == terms
            else _table(gram, design, kept, names, self.typ, pure)
        )
        self.terms_ = tuple(tuple(names[i] for i in t) for t in kept)
        cols = np.concatenate([np.zeros(1, dtype=np.int64)] + [design.block(t) for t in kept])
        b = gram.min_norm(cols)
        counts = np.diag(gram.G)
        self._coef, self._seen = {}, {}
        for t in kept:
            sl = np.searchsorted(cols, design.block(t))
            self._coef[t] = b[sl]
            self._seen[t] = counts[design.block(t)] > 0
        self._mean += float(b[0])
        self._interpolate_unseen()
        return self

    def _interpolate_unseen(self) -> None:
        for t, coef in self._coef.items():
            if len(t) != 1:
                continue
            f = self.encoder_.factors[t[0]]
            seen = self._seen[t]
            if f.numeric and seen.any() and not seen.all():
                x = f.values
                coef[~seen] = np.interp(x[~seen], x[seen], coef[seen])

    def _index(self, term: Term) -> tuple[int, ...]:
        names = self.encoder_.names
        try:
            return tuple(names.index(p) for p in term)
        except ValueError:
            raise KeyError(term_name(term)) from None

    def predict(self, X: pd.DataFrame) -> FloatArray:
        """Predicted metric for the settings ``X``."""
        return self.predict_codes(self.encoder_.codes(X), X)

    def predict_codes(self, codes: IntArray, X: pd.DataFrame | None = None) -> FloatArray:
        """Predictions from level codes (``X`` is read only for unknown numeric values)."""
        out = np.full(codes.shape[0], self._mean)
        cards = self.encoder_.cards
        for t, coef in self._coef.items():
            code = np.zeros(codes.shape[0], dtype=np.int64)
            ok = np.ones(codes.shape[0], dtype=bool)
            for i in t:
                code = code * cards[i] + codes[:, i]
                ok &= codes[:, i] >= 0
            out[ok] += coef[code[ok]]
            f = self.encoder_.factors[t[0]]
            if len(t) == 1 and f.numeric and X is not None and not ok.all():
                seen = self._seen[t]
                raw = pd.to_numeric(X[f.name], errors="coerce").to_numpy(float)[~ok]
                good = np.isfinite(raw)
                add = np.zeros(len(raw))
                add[good] = np.interp(raw[good], f.values[seen], coef[seen])
                out[~ok] += add
        return out

    def effects(self, term: Term) -> pd.Series | pd.DataFrame:
        """Sum-to-zero effects of a kept term (main: per level; pair: levels × levels).

        Effects are the functional-ANOVA decomposition of the fitted model over the
        grid of levels with equal weights: a main effect is the mean prediction at
        each level minus the grand mean; an interaction is the double-centred cell
        table.  Unlike treatment-coded coefficients (statsmodels' default), a main
        effect then describes the average over the other parameters, not the curve at
        their first level.
        """
        idx = self._index(term)
        if idx not in self._coef:
            raise KeyError(f"{term_name(term)} is not a term of the fitted model")
        facs = [self.encoder_.factors[i] for i in idx]
        if len(idx) == 1:
            (i,) = idx
            a = self._coef[idx].copy()
            for t, coef in self._coef.items():
                if len(t) == 2 and i in t:
                    tab = coef.reshape(self.encoder_.cards[t[0]], self.encoder_.cards[t[1]])
                    a += tab.mean(axis=1 if t[0] == i else 0)
            return pd.Series(a - a.mean(), index=pd.Index(facs[0].levels, name=facs[0].name))
        tab = self._coef[idx].reshape(len(facs[0].levels), len(facs[1].levels))
        g = tab - tab.mean(axis=0, keepdims=True) - tab.mean(axis=1, keepdims=True) + tab.mean()
        return pd.DataFrame(
            g,
            index=pd.Index(facs[0].levels, name=facs[0].name),
            columns=pd.Index(facs[1].levels, name=facs[1].name),
        )

    def seen(self, term: Term) -> npt.NDArray[np.bool_]:
        """Which levels (cells) of a kept term occurred in the training data."""
        idx = self._index(term)
        s = self._seen[idx]
        if len(idx) == 2:
            return s.reshape(self.encoder_.cards[idx[0]], self.encoder_.cards[idx[1]])
        return s
