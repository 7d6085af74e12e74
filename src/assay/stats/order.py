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
* :func:`run_means` (:func:`run_medians`): one value per run and test, the run's mean
  (median).
* :func:`analyse_order`: all of that for every test of a long table (columns ``test``,
  ``order``, ``run``, ``position``, ``value``, optionally ``host``) and the
  experiment-wide verdict with a Bonferroni correction: order matters if any test's
  p-value is below ``alpha / m``.

The decision compares **run means**, not trials: the trials of one run share its
state (a host's boot, its memory layout, its thermal state), so a run-to-run offset
makes trials of one run alike and the pooled trial test reads that clustering as an
order effect.  With each run shifted by 0.5 or 1 trial sd, pooling flagged order in
15–33% of experiments without any order effect; one value per run keeps the false
positives at alpha, exactly (i.i.d. offsets leave the run values i.i.d.), at a cost in
power with few runs (bench/bench_order_offsets.py, bench/RESULTS.md).  The pooled trial
test is still computed and reported beside it, not used for the decision.  The run's
mean, not its median (#37): an order effect that hits a minority of a run's trials (c
slower only right after a, in random orders) moves the mean and barely the median
(flagged in 17% against 11% of experiments at 5 runs a side), and the mean does as well
or better in every other case measured; the false positives are the same exact bound.

>>> import numpy as np
>>> rng = np.random.default_rng(1)
>>> r = compare_orders(rng.normal(10, 1, 30), rng.normal(12, 1, 30))
>>> r.kruskal_p < 1e-6, round(r.delta_percent)
(True, -20)
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import numpy as np
import numpy.typing as npt

from assay.stats._arrays import finite_1d

if TYPE_CHECKING:  # pandas and SciPy (via stats.hosts) are imported where used: not
    # before assay order's first trial (~0.9 s together)
    import pandas as pd

    from assay.stats.hosts import HostEffect

__all__ = [
    "HOST_COLUMN",
    "ORDER_COLUMNS",
    "Drift",
    "MedianCI",
    "OrderAnalysis",
    "OrderComparison",
    "OrderHostEffect",
    "TestOrderResult",
    "analyse_order",
    "compare_orders",
    "median_ci",
    "p_floor",
    "position_drift",
    "run_means",
    "run_medians",
    "runs_needed",
]

#: The columns of a long table of order trials (also the ``--from`` CSV format).
ORDER_COLUMNS = ("test", "order", "run", "position", "value")
#: The optional column naming the host that ran a trial (a run runs on one host).
HOST_COLUMN = "host"

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
    from scipy import stats  # here: SciPy takes ~0.6 s to import; not before the first trial

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
    from scipy import stats  # here: SciPy takes ~0.6 s to import; not before the first trial

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
    from scipy import stats  # here: SciPy takes ~0.6 s to import; not before the first trial

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
    from scipy import stats  # here: SciPy takes ~0.6 s to import; not before the first trial

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


def run_means(table: pd.DataFrame) -> pd.DataFrame:
    """One value per test and run: the mean of the test's trials in that run (what
    :func:`analyse_order` decides on); columns as :func:`run_medians`'.

    >>> import pandas as pd
    >>> t = pd.DataFrame([("a", "fixed", 0, 0, 1.0), ("a", "fixed", 0, 1, 3.0),
    ...                   ("a", "fixed", 0, 2, 8.0)], columns=list(ORDER_COLUMNS))
    >>> run_means(t)[["order", "run", "value", "trials"]].values.tolist()
    [['fixed', 0, 4.0, 3]]
    """
    return _per_run(table, "mean")


def run_medians(table: pd.DataFrame) -> pd.DataFrame:
    """One value per test and run: the median of the test's trials in that run.

    Columns ``test, order, run, value, trials`` (and ``host`` when the table has one: the
    host of the run's first trial), in order of first appearance.  A run is keyed by its
    kind of order and its id, so run ids that restart for each kind stay apart.

    >>> import pandas as pd
    >>> t = pd.DataFrame([("a", "fixed", 0, 0, 1.0), ("a", "fixed", 0, 1, 3.0),
    ...                   ("a", "random", 0, 0, 2.5)], columns=list(ORDER_COLUMNS))
    >>> run_medians(t)[["order", "run", "value", "trials"]].values.tolist()
    [['fixed', 0, 2.0, 2], ['random', 0, 2.5, 1]]
    """
    return _per_run(table, "median")


def _per_run(table: pd.DataFrame, statistic: str) -> pd.DataFrame:
    groups = table.groupby(["test", "order", "run"], sort=False)
    out = groups["value"].agg(value=statistic, trials="size").reset_index()
    if HOST_COLUMN in table.columns:
        out[HOST_COLUMN] = groups[HOST_COLUMN].first().to_numpy()
    return out


def _chosen_p(c: OrderComparison, test: OrderTest) -> float:
    return c.kruskal_p if test == "kruskal" else c.mann_whitney_p


@functools.lru_cache(maxsize=512)
def p_floor(n_fixed: int, n_random: int, test: OrderTest = "kruskal") -> float:
    """The smallest p-value ``test`` can give on samples of these sizes: that of two
    samples entirely apart.  A design whose floor is not below the threshold cannot
    find an order effect, whatever its data.

    >>> [round(p_floor(k, k), 4) for k in (3, 5)], round(p_floor(5, 5, "mann-whitney"), 4)
    ([0.0495, 0.009], 0.0079)
    """
    low = np.arange(n_fixed, dtype=np.float64)
    high = np.arange(n_fixed, n_fixed + n_random, dtype=np.float64)
    return _chosen_p(compare_orders(low, high), test)


def runs_needed(threshold: float, test: OrderTest = "kruskal", most: int = 1000) -> int | None:
    """The fewest runs of each kind whose per-run test can go below ``threshold``
    (None beyond ``most``).

    >>> runs_needed(0.05 / 3), runs_needed(0.05 / 6)
    (5, 6)
    """
    # the floor falls as runs are added: double until below, then bisect
    high = 1
    while not p_floor(high, high, test) < threshold:
        if high >= most:
            return None
        high = min(2 * high, most)
    low = high // 2  # its floor is not below (or 0)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if p_floor(mid, mid, test) < threshold else (mid, high)
    return high


@dataclass(frozen=True)
class TestOrderResult:
    """Everything about one test: both comparisons, drift, and whether it is flagged.

    ``comparison`` holds the pooled trials (their counts, means, Δ%, median CIs and the
    pooled tests: reported, not used for the decision); ``per_run`` compares the run
    medians, one per run, and decides.
    """

    __test__ = False  # not a pytest test class, whatever its name

    test: str
    comparison: OrderComparison | None  # None: a kind of order has no value for this test
    drift_random: Drift  # drift over the random-order runs (positions randomised)
    drift_fixed: Drift  # drift over the fixed-order runs
    p_value: float  # the deciding test's p on run means (NaN: not tested)
    significant: bool
    note: str = ""
    per_run: OrderComparison | None = None  # run means, fixed vs random: decides
    pooled_p: float = math.nan  # the deciding test on pooled trials: not used to decide
    pooled_significant: bool = False
    p_floor: float = math.nan  # the smallest p the per-run test can give with these runs


@dataclass(frozen=True)
class OrderHostEffect:
    """Host as a factor for one test: Kruskal–Wallis of its run means by host."""

    test: str
    effect: HostEffect
    significant: bool  # p below the Bonferroni threshold over the tests
    standout: str | None  # three or more hosts, significant: the one farthest from the rest

    def as_dict(self) -> dict[str, object]:
        e = self.effect
        return {
            "test": self.test,
            "hosts": list(e.hosts),
            "runs": list(e.n),
            "medians": list(e.medians),
            "kruskal_h": e.statistic,
            "p_value": e.p_value,
            "significant": self.significant,
            "standout": self.standout,
        }


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
    pooled_flagged: list[str] = field(default_factory=list)  # not used for the decision
    hosts: list[OrderHostEffect] = field(default_factory=list)  # empty: one host
    host_threshold: float = math.nan  # alpha / number of tests with a host effect

    @property
    def order_matters(self) -> bool:
        return bool(self.flagged)

    def _name(self) -> str:
        return "Kruskal-Wallis" if self.test == "kruskal" else "Mann-Whitney U"

    def verdict(self) -> str:
        """``order matters for tests X, Y (p = … on run means, Bonferroni threshold …)``,
        ``order not decided`` (too few runs for the threshold) or ``order likely does not
        matter …``."""
        name = self._name()
        thr = f"Bonferroni threshold {self.alpha:g}/{self.tested} = {_p(self.threshold)}"
        by = {r.test: r for r in self.results}
        if self.flagged:
            ps = ", ".join(_p(by[t].p_value) for t in self.flagged)
            return (
                f"order matters for test{'s' if len(self.flagged) > 1 else ''} "
                f"{', '.join(self.flagged)} ({name} p = {ps} on run means; {thr})"
            )
        tested = [r for r in self.results if math.isfinite(r.p_value)]
        if not tested:
            return "order not tested: no test has values from both fixed and random orders"
        blind = [r for r in tested if not r.p_floor < self.threshold]
        if blind:
            worst = max(blind, key=lambda r: r.p_floor)
            assert worst.per_run is not None  # tested
            need = runs_needed(self.threshold, self.test)
            more = f"; at least {need} runs of each kind are needed" if need else ""
            return (
                f"order not decided: with {worst.per_run.n_fixed} fixed-order and "
                f"{worst.per_run.n_random} random-order runs of {worst.test}, {name} on run "
                f"means cannot give p below {_p(worst.p_floor)} ({thr}){more}"
            )
        low = min(tested, key=lambda r: r.p_value)
        return (
            f"order likely does not matter: every test's {name} p on run means is above "
            f"the {thr} (smallest: {low.test}, p = {_p(low.p_value)})"
        )

    def pooled_line(self) -> str | None:
        """The test on pooled trials, reported beside the decision and not used for it."""
        tested = [r for r in self.results if math.isfinite(r.pooled_p)]
        if not tested:
            return None
        head = f"pooled trials (not used for the decision): {self._name()} on every trial"
        if not self.pooled_flagged:
            low = min(tested, key=lambda r: r.pooled_p)
            return f"{head} flags no test (smallest: {low.test}, p = {_p(low.pooled_p)})"
        by = {r.test: r for r in self.results}
        ps = ", ".join(f"{t} p = {_p(by[t].pooled_p)}" for t in self.pooled_flagged)
        text = f"{head} would flag {ps}"
        extra = [t for t in self.pooled_flagged if t not in self.flagged]
        if extra:
            text += (
                f"; not {', '.join(extra)} on run means (pooling counts a run's trials as "
                "independent samples, which they are not when runs differ)"
            )
        return text

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

    def host_lines(self, unit: str = "") -> list[str]:
        """Host as a factor: a line per test whose hosts differ, or one saying they agree;
        none with one host."""
        if not self.hosts:
            return []
        thr = f"Bonferroni threshold {self.alpha:g}/{len(self.hosts)} = {_p(self.host_threshold)}"
        out = []
        for h in self.hosts:
            if h.significant:
                lead = f"host {h.standout} stands out: " if h.standout else ""
                out.append(
                    f"{lead}the hosts differ for test {h.test} (run means by host, "
                    f"{h.effect.text(unit)}; {thr})"
                )
        if not out:
            low = min(self.hosts, key=lambda h: h.effect.p_value)
            hosts = len(set().union(*(h.effect.hosts for h in self.hosts)))
            out.append(
                f"the {hosts} hosts agree for every test (run means by host, Kruskal-Wallis; "
                f"smallest p = {_p(low.effect.p_value)} for {low.test}; {thr})"
            )
        return out


def _p(p: float) -> str:
    if not math.isfinite(p):
        return "n/a"
    return "<1e-12" if p < 1e-12 else f"{p:.2g}"


def _standout(groups: dict[str, list[float]]) -> str | None:
    """The host whose median is farthest from the median of the other hosts' runs
    (three or more hosts: with two, neither stands out more than the other)."""
    if len(groups) < 3:
        return None

    def distance(h: str) -> float:
        rest = [v for k, vs in groups.items() if k != h for v in vs]
        return abs(float(np.median(groups[h])) - float(np.median(rest)))

    return max(sorted(groups), key=distance)


def _host_effects(
    per_test_runs: list[tuple[str, pd.DataFrame]], alpha: float
) -> tuple[list[OrderHostEffect], float]:
    from assay.stats.hosts import host_effect  # SciPy: not before the first trial

    found: list[tuple[str, HostEffect, dict[str, list[float]]]] = []
    for name, runs in per_test_runs:
        groups: dict[str, list[float]] = {}
        for host, value in zip(runs[HOST_COLUMN].astype(str), runs["value"], strict=True):
            groups.setdefault(host, []).append(float(value))
        effect = host_effect(groups)
        if effect is not None:
            found.append((name, effect, groups))
    if not found:
        return [], math.nan
    threshold = alpha / len(found)
    out = []
    for name, effect, groups in found:
        significant = effect.p_value < threshold
        kept = {h: groups[h] for h in effect.hosts}
        standout = _standout(kept) if significant else None
        out.append(OrderHostEffect(name, effect, significant, standout))
    return out, threshold


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

    Per test, the run means (:func:`run_means`) of the fixed-order runs are compared
    with those of the random-order runs, and that decides; the same test on the pooled
    trials is computed and reported beside it.

    Parameters
    ----------
    table : pandas.DataFrame
        Columns ``test`` (name), ``order`` ("fixed" or "random"), ``run`` (run id, unique
        within its kind of order), ``position`` (the trial's position in its run) and
        ``value`` (the reading); optionally ``host``: with two hosts or more, each test's
        run means are compared across hosts too.
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
    >>> kinds = ["fixed", "random"] * 5
    >>> rows = [("a", k, r, i, 1.0 + 0.01 * ((7 * i + r) % 5))
    ...         for r, k in enumerate(kinds) for i in range(6)]
    >>> rows += [("b", k, r, 6 + i, 2.0 + (0.5 if k == "fixed" else 0) + 0.01 * i)
    ...          for r, k in enumerate(kinds) for i in range(6)]
    >>> t = pd.DataFrame(rows, columns=["test", "order", "run", "position", "value"])
    >>> a = analyse_order(t)
    >>> a.flagged, a.results[1].per_run.n_fixed, a.results[1].comparison.n_fixed
    (['b'], 5, 30)
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
    partial: list[TestOrderResult] = []
    per_test_runs: list[tuple[str, pd.DataFrame]] = []
    for name in names:
        rows = table[table["test"].astype(str) == name]
        fx = rows[rows["order"] == "fixed"]
        rd = rows[rows["order"] == "random"]
        d_rand = position_drift(rd["position"].to_numpy(float), rd["value"].to_numpy(float), drift)
        d_fix = position_drift(fx["position"].to_numpy(float), fx["value"].to_numpy(float), drift)
        if len(fx) == 0 or len(rd) == 0:
            note = f"no values from {'fixed' if len(fx) == 0 else 'random'}-order runs"
            partial.append(TestOrderResult(name, None, d_rand, d_fix, math.nan, False, note))
            continue
        runs = run_means(rows)
        per_test_runs.append((name, runs))
        pooled = compare_orders(
            fx["value"].to_numpy(float), rd["value"].to_numpy(float), confidence
        )
        per_run = compare_orders(
            runs.loc[runs["order"] == "fixed", "value"].to_numpy(float),
            runs.loc[runs["order"] == "random", "value"].to_numpy(float),
            confidence,
        )
        note = "" if min(len(fx), len(rd)) >= 5 else "fewer than 5 values in one order"
        partial.append(
            TestOrderResult(
                test=name,
                comparison=pooled,
                drift_random=d_rand,
                drift_fixed=d_fix,
                p_value=_chosen_p(per_run, test),
                significant=False,
                note=note,
                per_run=per_run,
                pooled_p=_chosen_p(pooled, test),
                p_floor=p_floor(per_run.n_fixed, per_run.n_random, test),
            )
        )
    m = sum(1 for r in partial if math.isfinite(r.p_value))
    threshold = alpha / m if m else math.nan
    results = []
    for r in partial:
        note = r.note
        if r.per_run is not None and not r.p_floor < threshold:
            runs_note = (
                f"{r.per_run.n_fixed} fixed / {r.per_run.n_random} random runs: the per-run "
                f"test cannot give p below {_p(r.p_floor)}"
            )
            note = f"{note}; {runs_note}" if note else runs_note
        results.append(
            dataclasses.replace(
                r,
                significant=bool(math.isfinite(r.p_value) and r.p_value < threshold),
                pooled_significant=bool(math.isfinite(r.pooled_p) and r.pooled_p < threshold),
                note=note,
            )
        )
    drifting = [
        r.test
        for r in results
        if math.isfinite(r.drift_random.p_value) and m and r.drift_random.p_value < threshold
    ]
    hosts: list[OrderHostEffect] = []
    host_threshold = math.nan
    if HOST_COLUMN in table.columns and table[HOST_COLUMN].astype(str).nunique() > 1:
        hosts, host_threshold = _host_effects(per_test_runs, alpha)
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
        pooled_flagged=[r.test for r in results if r.pooled_significant],
        hosts=hosts,
        host_threshold=host_threshold,
    )
