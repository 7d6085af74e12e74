"""Statistics of the ordering trap (Duplyakin et al., ATC'23): does the order of tests matter?

Every function here is pure: samples in, results out.

* :func:`median_ci`: the sample median with a distribution-free confidence interval
  made of two order statistics (Le Boudec, *Performance Evaluation of Computer and
  Communication Systems*, Theorem 2.1 and Table A.1): the number of observations below
  the true median is Binomial(n, 1/2), so ``[x(j), x(n+1-j)]`` covers it with
  probability ``1 - 2 P(B <= j - 1)`` whatever the distribution.
* :func:`compare_orders`: one test's fixed-order and random-order samples compared with
  the Kruskal–Wallis H test (the paper's choice) and the Mann–Whitney U test (its
  two-sample alternative), the relative difference of means
  ``Δ% = (μ_fixed − μ_random) / μ_fixed × 100`` and both medians with their CIs.
* :func:`position_drift`: the rank correlation (Spearman or Kendall) of a test's results
  with its position in the run, with its p-value: drift inside a run.
* :func:`analyse_order`: all of that for every test of a long table (columns ``test``,
  ``order``, ``run``, ``position``, ``value``) and the experiment-wide verdict with a
  Bonferroni correction: order matters if any test's p-value is below ``alpha / m``.

>>> import numpy as np
>>> rng = np.random.default_rng(1)
>>> r = compare_orders(rng.normal(10, 1, 30), rng.normal(12, 1, 30))
>>> r.kruskal_p < 1e-6, round(r.delta_percent)
(True, -20)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import stats

from assay.stats._arrays import finite_1d

__all__ = [
    "ORDER_COLUMNS",
    "Drift",
    "MedianCI",
    "OrderAnalysis",
    "OrderComparison",
    "TestOrderResult",
    "analyse_order",
    "compare_orders",
    "median_ci",
    "position_drift",
]

#: The columns of a long table of order trials (also the ``--from`` CSV format).
ORDER_COLUMNS = ("test", "order", "run", "position", "value")

OrderTest = Literal["kruskal", "mann-whitney"]
DriftMethod = Literal["spearman", "kendall"]


@dataclass(frozen=True)
class MedianCI:
    """The sample median and a distribution-free CI ``[x(j), x(n+1-j)]`` (1-based ranks).

    ``coverage`` is the exact coverage of the chosen order statistics (at least
    ``confidence``); ``low``/``high`` are NaN and ``ranks`` is ``None`` when ``n`` is too
    small for any pair of order statistics to reach ``confidence`` (n < 6 at 95%).
    """

    median: float
    low: float
    high: float
    confidence: float
    coverage: float
    ranks: tuple[int, int] | None
    n: int

    @property
    def available(self) -> bool:
        return self.ranks is not None

    def as_dict(self) -> dict[str, object]:
        return {
            "median": self.median,
            "low": self.low,
            "high": self.high,
            "confidence": self.confidence,
            "coverage": self.coverage,
            "ranks": None if self.ranks is None else list(self.ranks),
            "n": self.n,
        }


def median_ci(x: npt.ArrayLike, confidence: float = 0.95) -> MedianCI:
    """The median of ``x`` with its order-statistic (binomial) confidence interval.

    The ranks are the symmetric pair ``(j, n + 1 - j)`` with the largest ``j`` whose
    exact coverage ``1 - 2 P(B <= j - 1)``, ``B ~ Binomial(n, 1/2)``, is at least
    ``confidence``: the narrowest symmetric distribution-free interval.

    Parameters
    ----------
    x : array_like
        Finite values (at least one).
    confidence : float, default 0.95
        Requested coverage, in (0, 1).

    Examples
    --------
    For n = 10 at 95% the interval is ``[x(2), x(9)]`` (coverage 1 - 2·11/1024):

    >>> ci = median_ci(range(1, 11))
    >>> ci.median, ci.low, ci.high, ci.ranks, round(ci.coverage, 4)
    (5.5, 2.0, 9.0, (2, 9), 0.9785)
    >>> median_ci([1.0, 2.0, 3.0]).available
    False
    """
    a = np.sort(finite_1d(x, "x"))
    if a.size == 0:
        raise ValueError("x must hold at least one value")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    n = int(a.size)
    med = float(np.median(a))
    # coverage of [x(j), x(n+1-j)] falls as j grows: find the largest j that still reaches it
    js = np.arange(1, n // 2 + 1)
    coverage = 1.0 - 2.0 * stats.binom.cdf(js - 1, n, 0.5)
    ok = js[coverage >= confidence]
    if ok.size == 0:
        return MedianCI(med, math.nan, math.nan, confidence, math.nan, None, n)
    j = int(ok.max())
    cov = float(coverage[j - 1])
    return MedianCI(med, float(a[j - 1]), float(a[n - j]), confidence, cov, (j, n + 1 - j), n)


@dataclass(frozen=True)
class Drift:
    """Rank correlation of results with their position in the run, and its p-value."""

    rho: float
    p_value: float
    n: int
    method: DriftMethod

    def as_dict(self) -> dict[str, object]:
        return {"rho": self.rho, "p_value": self.p_value, "n": self.n, "method": self.method}


def position_drift(
    positions: npt.ArrayLike, values: npt.ArrayLike, method: DriftMethod = "spearman"
) -> Drift:
    """Spearman's ρ (or Kendall's τ) of ``values`` against ``positions``, two-sided p.

    NaN when there are fewer than 3 pairs or either side is constant (no correlation
    is defined then).

    Examples
    --------
    >>> d = position_drift([0, 1, 2, 3, 4, 5], [1.0, 1.1, 1.3, 1.2, 1.5, 1.6])
    >>> round(d.rho, 3), d.p_value < 0.05
    (0.943, True)
    """
    p = finite_1d(positions, "positions")
    v = finite_1d(values, "values")
    if p.size != v.size:
        raise ValueError(f"positions and values differ in length ({p.size} vs {v.size})")
    n = int(v.size)
    if n < 3 or np.ptp(p) == 0 or np.ptp(v) == 0:
        return Drift(math.nan, math.nan, n, method)
    res = stats.spearmanr(p, v) if method == "spearman" else stats.kendalltau(p, v)
    return Drift(float(res.statistic), float(res.pvalue), n, method)


@dataclass(frozen=True)
class OrderComparison:
    """One test's fixed-order vs random-order samples."""

    n_fixed: int
    n_random: int
    mean_fixed: float
    mean_random: float
    delta_percent: float  # (μ_fixed − μ_random) / μ_fixed × 100
    median_fixed: MedianCI
    median_random: MedianCI
    kruskal_h: float
    kruskal_p: float
    mann_whitney_u: float
    mann_whitney_p: float


def _kruskal(a: npt.NDArray[np.float64], b: npt.NDArray[np.float64]) -> tuple[float, float]:
    if np.ptp(np.concatenate([a, b])) == 0:
        return 0.0, 1.0  # all values tied: no evidence of any difference (SciPy gives NaN)
    res = stats.kruskal(a, b)
    return float(res.statistic), float(res.pvalue)


def compare_orders(
    fixed: npt.ArrayLike, random: npt.ArrayLike, confidence: float = 0.95
) -> OrderComparison:
    """Fixed-order vs random-order samples of one test: Kruskal–Wallis H, Mann–Whitney U
    (two-sided; SciPy's exact distribution for small samples without ties), Δ% of means
    and the medians with order-statistic CIs.

    Examples
    --------
    >>> c = compare_orders([10.0, 10.2, 9.9, 10.1], [10.0, 10.3, 9.8, 10.1])
    >>> c.kruskal_p > 0.5, c.mann_whitney_p > 0.5, round(c.delta_percent, 2)
    (True, True, 0.0)
    """
    f = finite_1d(fixed, "fixed")
    r = finite_1d(random, "random")
    if f.size < 1 or r.size < 1:
        raise ValueError(f"both orders need at least one value (fixed: {f.size}, random: {r.size})")
    mf, mr = float(f.mean()), float(r.mean())
    delta = (mf - mr) / mf * 100.0 if mf != 0 else math.nan
    h, kp = _kruskal(f, r)
    mw = stats.mannwhitneyu(f, r, alternative="two-sided")
    return OrderComparison(
        n_fixed=int(f.size),
        n_random=int(r.size),
        mean_fixed=mf,
        mean_random=mr,
        delta_percent=delta,
        median_fixed=median_ci(f, confidence),
        median_random=median_ci(r, confidence),
        kruskal_h=h,
        kruskal_p=kp,
        mann_whitney_u=float(mw.statistic),
        mann_whitney_p=float(mw.pvalue),
    )


@dataclass(frozen=True)
class TestOrderResult:
    """Everything about one test: the comparison, drift, and whether it is flagged."""

    __test__ = False  # not a pytest test class, whatever its name

    test: str
    comparison: OrderComparison | None  # None: a kind of order has no value for this test
    drift_random: Drift  # drift over the random-order runs (positions randomised)
    drift_fixed: Drift  # drift over the fixed-order runs
    p_value: float  # the deciding test's p (NaN: not tested)
    significant: bool
    note: str = ""


@dataclass(frozen=True)
class OrderAnalysis:
    """The experiment: every test's result and the Bonferroni-corrected verdict."""

    results: list[TestOrderResult]
    alpha: float
    threshold: float  # alpha / m, m = number of tests with a p-value
    tested: int  # m
    test: OrderTest
    confidence: float
    drift_method: DriftMethod
    flagged: list[str] = field(default_factory=list)
    drifting: list[str] = field(default_factory=list)

    @property
    def order_matters(self) -> bool:
        return bool(self.flagged)

    def verdict(self) -> str:
        """``order matters for tests X, Y (p = …, Bonferroni threshold …)`` or
        ``order likely does not matter …``."""
        name = "Kruskal-Wallis" if self.test == "kruskal" else "Mann-Whitney U"
        thr = f"Bonferroni threshold {self.alpha:g}/{self.tested} = {_p(self.threshold)}"
        by = {r.test: r for r in self.results}
        if self.flagged:
            ps = ", ".join(_p(by[t].p_value) for t in self.flagged)
            return (
                f"order matters for test{'s' if len(self.flagged) > 1 else ''} "
                f"{', '.join(self.flagged)} ({name} p = {ps}; {thr})"
            )
        tested = [r for r in self.results if math.isfinite(r.p_value)]
        if not tested:
            return "order not tested: no test has values from both fixed and random orders"
        low = min(tested, key=lambda r: r.p_value)
        return (
            f"order likely does not matter: every test's {name} p is above the {thr} "
            f"(smallest: {low.test}, p = {_p(low.p_value)})"
        )

    def drift_line(self) -> str | None:
        """Which tests drift with their position in the run (p below the threshold)."""
        if not self.drifting:
            return None
        by = {r.test: r for r in self.results}
        parts = [
            f"{t} (ρ = {by[t].drift_random.rho:+.2f}, p = {_p(by[t].drift_random.p_value)})"
            for t in self.drifting
        ]
        return (
            f"drift inside random-order runs (result vs position, {self.drift_method}): "
            f"{', '.join(parts)}; Bonferroni threshold {_p(self.threshold)}"
        )


def _p(p: float) -> str:
    if not math.isfinite(p):
        return "n/a"
    return "<1e-12" if p < 1e-12 else f"{p:.2g}"


def analyse_order(
    table: pd.DataFrame,
    *,
    alpha: float = 0.05,
    test: OrderTest = "kruskal",
    confidence: float = 0.95,
    drift: DriftMethod = "spearman",
    tests: Sequence[str] | None = None,
) -> OrderAnalysis:
    """Analyse a long table of order trials: one row per successful trial.

    Parameters
    ----------
    table : pandas.DataFrame
        Columns ``test`` (name), ``order`` ("fixed" or "random"), ``run`` (run id),
        ``position`` (the trial's position in its run) and ``value`` (the reading).
    alpha : float, default 0.05
        Experiment-wide significance level; each test is judged at ``alpha / m``.
    test : {"kruskal", "mann-whitney"}
        The p-value that decides (both are always reported).
    confidence : float, default 0.95
        Level of the median CIs.
    drift : {"spearman", "kendall"}
        Rank correlation for drift inside runs.
    tests : sequence of str, optional
        The tests in report order (default: order of first appearance); a listed test
        without rows is reported as not tested.

    Examples
    --------
    >>> import pandas as pd
    >>> rows = [("a", k, r, i, 1.0 + 0.01 * ((7 * i + r) % 5))
    ...         for r, k in enumerate(["fixed", "random"] * 3) for i in range(6)]
    >>> rows += [("b", k, r, 6 + i, 2.0 + (0.5 if k == "fixed" else 0) + 0.01 * i)
    ...          for r, k in enumerate(["fixed", "random"] * 3) for i in range(6)]
    >>> t = pd.DataFrame(rows, columns=["test", "order", "run", "position", "value"])
    >>> analyse_order(t).flagged
    ['b']
    """
    missing = [c for c in ORDER_COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(f"the table lacks column(s) {', '.join(missing)}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    bad = sorted(set(map(str, table["order"])) - {"fixed", "random"})
    if bad:
        raise ValueError(f"order must be 'fixed' or 'random', found {', '.join(bad)}")
    names = list(tests) if tests is not None else list(dict.fromkeys(map(str, table["test"])))
    partial: list[tuple[str, OrderComparison | None, Drift, Drift, float, str]] = []
    for name in names:
        rows = table[table["test"].astype(str) == name]
        fx = rows[rows["order"] == "fixed"]
        rd = rows[rows["order"] == "random"]
        d_rand = position_drift(rd["position"].to_numpy(float), rd["value"].to_numpy(float), drift)
        d_fix = position_drift(fx["position"].to_numpy(float), fx["value"].to_numpy(float), drift)
        if len(fx) == 0 or len(rd) == 0:
            note = f"no values from {'fixed' if len(fx) == 0 else 'random'}-order runs"
            partial.append((name, None, d_rand, d_fix, math.nan, note))
            continue
        comp = compare_orders(fx["value"].to_numpy(float), rd["value"].to_numpy(float), confidence)
        p = comp.kruskal_p if test == "kruskal" else comp.mann_whitney_p
        note = "" if min(len(fx), len(rd)) >= 5 else "fewer than 5 values in one order"
        partial.append((name, comp, d_rand, d_fix, p, note))
    m = sum(1 for x in partial if math.isfinite(x[4]))
    threshold = alpha / m if m else math.nan
    results = [
        TestOrderResult(
            test=name,
            comparison=comp,
            drift_random=d_rand,
            drift_fixed=d_fix,
            p_value=p,
            significant=bool(math.isfinite(p) and p < threshold),
            note=note,
        )
        for name, comp, d_rand, d_fix, p, note in partial
    ]
    drifting = [
        r.test
        for r in results
        if math.isfinite(r.drift_random.p_value) and m and r.drift_random.p_value < threshold
    ]
    return OrderAnalysis(
        results=results,
        alpha=alpha,
        threshold=threshold,
        tested=m,
        test=test,
        confidence=confidence,
        drift_method=drift,
        flagged=[r.test for r in results if r.significant],
        drifting=drifting,
    )
