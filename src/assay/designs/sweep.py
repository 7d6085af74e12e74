"""Extensive evaluation by incremental sampling (Hui et al., Algorithm 1) and its analysis.

:class:`IncrementalSampling` is the design, pure and resumable: it is given the valid
settings (one row each) and, at any point, the settings measured so far with their
metric (mean over repetitions; NaN for a failed setting); :meth:`~IncrementalSampling.
next_batch` says which settings to measure next (nothing when done) and
:meth:`~IncrementalSampling.evaluate` reports the step: sampling rate, the R² of each
of the 10 validation splits, done or not and why.

Algorithm 1 as published: measure s% (5%) of the settings, then repeat: on 10 random
train/validation splits of the measured settings fit categorical ANOVA on the training
part and compute R² on the validation part; stop when all 10 are ≥ the threshold (0.9),
otherwise measure δ% (5%) more.  ANOVA uses main effects alone when they reach the
threshold on all 10 splits, otherwise main effects + two-way interactions (§3.1); in
each fit terms with p > 0.05 are dropped and the model refitted.  A budget (settings)
also ends the loop.  The train share of a split is not given in the paper; 80% is used.
With one parameter there is no two-way interaction: the model is main effects alone.

A grid no bigger than the first batch, or than the fewest settings whose splits can
judge the model at all (:attr:`IncrementalSampling.min_settings`: a training part
with more settings than the main-effects model has parameters and a validation part of
two settings, R² of one being undefined), is **measured whole at once** and analysed as
a designed experiment (:attr:`IncrementalSampling.whole_grid`, step reason ``"grid"``):
the held-out R² rule is not meaningful there, every setting is measured, and the ANOVA
uses each setting's repetitions as replicates (the pure error, see
:mod:`assay.stats.anova`).  Its form is main effects, or main effects + two-way
interactions when their lack of fit against the pure error is significant.

:func:`analyse` fits the chosen model on all measured settings and reports the
significant terms with their share of variance and their important points (Algorithms
2–3, :mod:`assay.stats.trends`); :func:`summarise` turns it into plain language with the
paper's recommendation made concrete; :func:`mismatch` is the paper's Figure 1 metric;
:func:`simulate` runs the loop offline on an existing data set (Figures 1–2);
:func:`compare_systems` compares two systems over the same space (§5.3).
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from assay.stats.anova import AnovaTable, CategoricalAnova, Encoder, FTest, TermRow, term_name
from assay.stats.intervals import t_interval
from assay.stats.models import (
    MODELS,
    make_model,
    r2_score,
    require_model,
    split_indices,
    validation_r2,
)
from assay.stats.trends import ImportantPoint, TermEffects, important_points
from assay.values import finite_or_none as _f
from assay.values import plain as _jsonable
from assay.values import short as _fmt

#: How a study keeps what takes long to compute: ``memo(made_from, make)`` is
#: ``make()``, or what the study kept for the same ``made_from`` (a sweep's important
#: points with their support: see :mod:`assay.studies.kept`).
PointsMemo = Callable[[Sequence[Any], Callable[[], list[ImportantPoint]]], list[ImportantPoint]]


def no_memo(
    made_from: Sequence[Any], make: Callable[[], list[ImportantPoint]]
) -> list[ImportantPoint]:
    """The :data:`PointsMemo` that keeps nothing: ``make()``."""
    return make()


#: Residual-bootstrap data sets behind each important point's support...
SUPPORT_RESAMPLES = 50
#: ...fewer on large data, so that their fits hold at most about this many rows in all
#: (10 resamples of 50,000 rows; 50 of a sweep's few thousand trials).
SUPPORT_ROWS = 500_000
SUPPORT_MIN_RESAMPLES = 10

__all__ = [
    "Analysis",
    "IncrementalSampling",
    "Mismatch",
    "Region",
    "Simulation",
    "StepResult",
    "Summary",
    "SystemComparison",
    "analyse",
    "compare_systems",
    "material_terms",
    "mismatch",
    "setting_intervals",
    "simulate",
    "summarise",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
Form = Literal["main", "main+2way"]
#: The confidence of the R² ceiling's interval: a sweep stops for its ceiling only when
#: even the upper bound is below the target.
CEILING_CONFIDENCE = 0.95
#: The form of a whole grid's step: no held-out R², analysed as a designed experiment.
DESIGNED = "designed"
#: :func:`analyse`'s form for a designed experiment: main effects, plus the two-way
#: interactions when the lack of fit of main effects against the pure error is significant.
LACK_OF_FIT = "lack-of-fit"


# --------------------------------------------------------------------------- step


@dataclass(frozen=True)
class StepResult:
    """One evaluation of Algorithm 1 (lines 4–12)."""

    step: int
    n_measured: int
    n_valid: int
    n_candidates: int
    r2: tuple[float, ...]
    form: str
    model: str
    threshold: float
    done: bool
    reason: str
    r2_main: tuple[float, ...] = ()
    # the R² no model can exceed for the noise between repetitions: the reliability of
    # the setting means (stats/reliability.py) with its interval; NaN without repetitions
    ceiling: tuple[float, float, float] = (math.nan, math.nan, math.nan)

    @property
    def sampling_rate(self) -> float:
        return self.n_measured / self.n_candidates if self.n_candidates else math.nan

    @property
    def r2_min(self) -> float:
        """The lowest R² over the splits (NaN if any split could not be fitted)."""
        a = np.asarray(self.r2, dtype=float)
        return float(a.min()) if len(a) and np.all(np.isfinite(a)) else math.nan

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StepResult:
        """The step :meth:`to_dict` gave (a stored step; ``None`` R² back to NaN).

        >>> s = StepResult(1, 4, 4, 10, (0.5, float("nan")), "main", "anova", 0.9, False, "")
        >>> StepResult.from_dict(s.to_dict()).to_dict() == s.to_dict()
        True
        """

        def r2(xs: Any) -> tuple[float, ...]:
            return tuple(math.nan if x is None else float(x) for x in xs or ())

        return cls(
            step=int(d["step"]),
            n_measured=int(d["n_measured"]),
            n_valid=int(d["n_valid"]),
            n_candidates=int(d["n_candidates"]),
            r2=r2(d.get("r2")),
            form=str(d["form"]),
            model=str(d["model"]),
            threshold=float(d["threshold"]),
            done=bool(d["done"]),
            reason=str(d["reason"]),
            r2_main=r2(d.get("r2_main")),
            ceiling=_triple(r2(d.get("r2_ceiling"))),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "n_measured": self.n_measured,
            "n_valid": self.n_valid,
            "n_candidates": self.n_candidates,
            "sampling_rate": _f(self.sampling_rate),
            "r2": [_f(x) for x in self.r2],
            "r2_min": _f(self.r2_min),
            "r2_main": [_f(x) for x in self.r2_main],
            "form": self.form,
            "model": self.model,
            "threshold": self.threshold,
            "done": self.done,
            "reason": self.reason,
            "r2_ceiling": [_f(x) for x in self.ceiling],
        }


def _triple(xs: tuple[float, ...]) -> tuple[float, float, float]:
    """A stored R² ceiling (estimate, low, high); NaNs for a step stored before it."""
    return (xs[0], xs[1], xs[2]) if len(xs) == 3 else (math.nan, math.nan, math.nan)


def _all_reach(r2: FloatArray, threshold: float) -> bool:
    return bool(len(r2) > 0 and np.all(np.isfinite(r2)) and np.all(r2 >= threshold))


def _anova_split_r2(
    enc: Encoder,
    codes: IntArray,
    y: FloatArray,
    splits: Sequence[tuple[IntArray, IntArray]],
    interactions: bool,
    alpha: float,
) -> FloatArray:
    out = np.full(len(splits), np.nan)
    for k, (tr, va) in enumerate(splits):
        m = CategoricalAnova(interactions=interactions, alpha=alpha, pure_error=False)
        m.encoder_ = enc
        m.fit_codes(codes[tr], y[tr])
        if m.insufficient_:  # saturated: the paper's "not enough samples"
            continue
        out[k] = r2_score(y[va], m.predict_codes(codes[va]))
    return out


def _form_r2(
    X: pd.DataFrame,
    y: FloatArray,
    *,
    enc: Encoder,
    model: str,
    threshold: float,
    splits: int,
    train_fraction: float,
    rng: np.random.Generator,
    alpha: float,
    form: str = "auto",
) -> tuple[str, FloatArray, FloatArray]:
    """(form, R² per split, main-only R² per split) for the measured settings."""
    if len(enc.names) < 2 and form in ("auto", "main+2way"):
        form = "main"  # one parameter: no two-way interaction to add
    if len(y) < 3:
        return ("main" if form == "auto" else form), np.full(splits, np.nan), np.zeros(0)
    if model != "anova":
        r2 = validation_r2(
            lambda: make_model(model, seed=int(rng.integers(2**31))),
            X,
            y,
            splits,
            train_fraction,
            rng,
        )
        return model, r2, np.zeros(0)
    codes = enc.codes(X)
    parts = split_indices(len(y), splits, train_fraction, rng)
    r2_main = np.zeros(0)
    if form in ("auto", "main"):
        r2_main = _anova_split_r2(enc, codes, y, parts, False, alpha)
        if form == "main" or _all_reach(r2_main, threshold):
            return "main", r2_main, r2_main
    r2 = _anova_split_r2(enc, codes, y, parts, True, alpha)
    return "main+2way", r2, r2_main


# --------------------------------------------------------------------------- design


@dataclass
class IncrementalSampling:
    """Algorithm 1 (incremental sampling) as a resumable design.

    ``measured`` (for :meth:`next_batch` / :meth:`evaluate`) is a data frame with the
    parameter columns of ``candidates`` and a ``metric`` column: the settings measured
    so far, NaN where a setting failed (it is not measured again and not analysed).

    >>> import itertools
    >>> space = pd.DataFrame(list(itertools.product(range(6), range(5))), columns=["a", "b"])
    >>> truth = lambda d: (2.0 * d["a"] + d["b"] ** 2).to_numpy()
    >>> design = IncrementalSampling(space, start=0.2, step=0.2, seed=1)
    >>> measured = space.iloc[design.next_batch(space.iloc[:0])].assign(metric=lambda d: truth(d))
    >>> len(measured), design.evaluate(measured).done
    (6, False)
    """

    candidates: pd.DataFrame
    sampler: Any = "random"
    start: float = 0.05
    step: float = 0.05
    threshold: float = 0.9
    splits: int = 10
    model: str = "anova"
    budget: int | None = None
    seed: int = 0
    metric: str = "metric"
    train_fraction: float = 0.8
    alpha: float = 0.05
    # stop when even the upper bound of the R² ceiling (the noise between repetitions)
    # is below the target: no model could reach it (step reason "ceiling")
    stop_at_ceiling: bool = True
    _enc: Encoder = field(init=False, repr=False)
    _key: dict[Any, int] = field(init=False, repr=False)
    _cache: tuple[bytes, StepResult] | None = field(init=False, repr=False, default=None)
    _least: int | None = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        if len(self.candidates) == 0:
            raise ValueError("the parameter space has no valid setting")
        for name, v in (("start", self.start), ("step", self.step)):
            if not 0 < v <= 1:
                raise ValueError(f"{name} must be a fraction in (0, 1], got {v}")
        if self.splits < 1:
            raise ValueError(f"splits must be >= 1, got {self.splits}")
        if self.model not in MODELS:
            raise ValueError(f"unknown model {self.model!r}; choose one of: {', '.join(MODELS)}")
        require_model(self.model)  # scikit-learn's, before a setting is measured
        if self.budget is not None and self.budget < 1:
            raise ValueError(f"budget must be >= 1 setting, got {self.budget}")
        if isinstance(self.sampler, str):
            from assay.designs.samplers import make_sampler

            self.sampler = make_sampler(self.sampler)
        self.candidates = self.candidates.reset_index(drop=True)
        self._enc = Encoder.from_frame(self.candidates)
        keys = self._keys(self._enc.codes(self.candidates))
        if len(set(keys)) != len(keys):
            raise ValueError("the candidate settings contain duplicate rows")
        self._key = {k: i for i, k in enumerate(keys)}
        self._least = self._fewest()

    @property
    def params(self) -> list[str]:
        return [str(c) for c in self.candidates.columns]

    @property
    def n_candidates(self) -> int:
        return len(self.candidates)

    @property
    def max_settings(self) -> int:
        return self.n_candidates if self.budget is None else min(self.budget, self.n_candidates)

    @property
    def min_settings(self) -> int | None:
        """The fewest settings whose train/validation splits can judge the model: a
        training part with more settings than the main-effects ANOVA has parameters
        (one more for the other models), and at least 2 validation settings (the R² of
        one is undefined); ``None`` when no number up to the grid's size can (one
        parameter: each setting is a level of its own, so the ANOVA is saturated on
        any training part).

        >>> grid = pd.DataFrame({"t": [0.01, 0.02, 0.03, 0.04]})
        >>> IncrementalSampling(grid).min_settings is None
        True
        >>> IncrementalSampling(pd.DataFrame(list(itertools.product(range(6), range(5))),
        ...                                  columns=["a", "b"])).min_settings
        14
        """
        return self._least

    def _fewest(self) -> int | None:
        p = 1 + sum(c - 1 for c in self._enc.cards) if self.model == "anova" else 1
        for n in range(2, self.n_candidates + 1):
            n_train = min(max(1, round(self.train_fraction * n)), n - 1)
            if n_train >= p + 1 and n - n_train >= 2:
                return n
        return None

    @property
    def whole_grid(self) -> bool:
        """The grid is small: no bigger than the first batch of Algorithm 1 or than
        :attr:`min_settings`, and within the budget.  It is measured whole at once and
        analysed as a designed experiment (no held-out R²)."""
        if self.max_settings < self.n_candidates:
            return False
        least = self.min_settings
        first = min(max(1, math.ceil(self.start * self.n_candidates - 1e-9)), self.max_settings)
        return least is None or self.n_candidates <= max(first, least)

    @staticmethod
    def _keys(codes: IntArray) -> list[tuple[int, ...]]:
        return [tuple(r) for r in codes.tolist()]

    def state(self, measured: pd.DataFrame) -> tuple[npt.NDArray[np.bool_], FloatArray]:
        """(taken mask, mean metric per candidate with NaN where not measured or failed)."""
        n = self.n_candidates
        taken = np.zeros(n, dtype=bool)
        y = np.full(n, np.nan)
        if len(measured) == 0:
            return taken, y
        missing = [c for c in [*self.params, self.metric] if c not in measured.columns]
        if missing:
            raise ValueError(f"the measured settings lack column(s): {', '.join(missing)}")
        codes = self._enc.codes(measured[self.params])
        pos = np.array([self._key.get(k, -1) for k in self._keys(codes)], dtype=np.int64)
        if np.any(pos < 0):
            bad = measured.iloc[int(np.flatnonzero(pos < 0)[0])][self.params].to_dict()
            raise ValueError(f"a measured setting is not in the parameter space: {bad}")
        taken[pos] = True
        vals = pd.to_numeric(measured[self.metric], errors="coerce").to_numpy(float)
        ok = np.isfinite(vals)
        sums = np.bincount(pos[ok], weights=vals[ok], minlength=n)
        cnt = np.bincount(pos[ok], minlength=n)
        with np.errstate(invalid="ignore", divide="ignore"):
            y = np.where(cnt > 0, sums / np.maximum(cnt, 1), np.nan)
        return taken, y

    def _rng(self, n_taken: int, salt: int) -> np.random.Generator:
        return np.random.default_rng([self.seed, n_taken, salt])

    def evaluate(self, measured: pd.DataFrame, form: str = "auto") -> StepResult:
        """Fit on 10 splits of the measured settings and say whether Algorithm 1 stops."""
        taken, y = self.state(measured)
        fp = hashlib.sha1(taken.tobytes() + y.tobytes() + form.encode()).digest()
        if self._cache is not None and self._cache[0] == fp:
            return self._cache[1]
        n_taken = int(taken.sum())
        ok = taken & np.isfinite(y)
        if self.whole_grid:  # measured whole, analysed as a designed experiment: no R²
            whole = n_taken >= self.n_candidates
            res = StepResult(
                0,
                n_taken,
                int(ok.sum()),
                self.n_candidates,
                (),
                DESIGNED,
                self.model,
                self.threshold,
                whole,
                "grid" if whole else "",
            )
            self._cache = (fp, res)
            return res
        X = self.candidates.iloc[np.flatnonzero(ok)]
        chosen, r2, r2_main = _form_r2(
            X,
            y[ok],
            enc=self._enc,
            model=self.model,
            threshold=self.threshold,
            splits=self.splits,
            train_fraction=self.train_fraction,
            rng=self._rng(n_taken, 1),
            alpha=self.alpha,
            form=form,
        )
        step_no = self._step_of(n_taken)
        ceiling = self.ceiling(measured)
        if _all_reach(r2, self.threshold):
            done, reason = True, "r2"
        elif n_taken >= self.n_candidates:
            done, reason = True, "exhausted"
        elif n_taken >= self.max_settings:
            done, reason = True, "budget"
        elif self.stop_at_ceiling and ceiling[2] < self.threshold:
            done, reason = True, "ceiling"  # even its upper bound is below the target
        else:
            done, reason = False, ""
        res = StepResult(
            step_no,
            n_taken,
            int(ok.sum()),
            self.n_candidates,
            tuple(float(v) for v in r2),
            chosen,
            self.model,
            self.threshold,
            done,
            reason,
            tuple(float(v) for v in r2_main),
            ceiling,
        )
        self._cache = (fp, res)
        return res

    def ceiling(self, measured: pd.DataFrame) -> tuple[float, float, float]:
        """The R² ceiling of the measured settings (estimate, low, high): the
        reliability of their means over their repetitions (one row per trial); NaN
        without repetitions."""
        from assay.stats.reliability import mean_reliability

        if len(measured) == 0:
            return (math.nan, math.nan, math.nan)
        codes = self._enc.codes(measured[self.params])
        pos = np.array([self._key.get(k, -1) for k in self._keys(codes)], dtype=np.int64)
        vals = pd.to_numeric(measured[self.metric], errors="coerce").to_numpy(float)
        got = mean_reliability(pos, vals, CEILING_CONFIDENCE)
        return (math.nan,) * 3 if got is None else (got.estimate, got.low, got.high)

    def _first(self) -> int:
        if self.whole_grid:
            return self.n_candidates
        return min(max(1, math.ceil(self.start * self.n_candidates - 1e-9)), self.max_settings)

    def _delta(self) -> int:
        return max(1, math.ceil(self.step * self.n_candidates - 1e-9))

    @property
    def settings_per_step(self) -> int:
        """How many settings each step after the first adds (δ% of the space)."""
        return self._delta()

    def _step_of(self, n_taken: int) -> int:
        return max(0, math.ceil((n_taken - self._first()) / self._delta()))

    def next_batch(self, measured: pd.DataFrame) -> IntArray:
        """Positions (into ``candidates``) to measure next; empty when the loop has ended."""
        taken, y = self.state(measured)
        n_taken = int(taken.sum())
        if n_taken == 0:
            k = self._first()
        else:
            if self.evaluate(measured).done:
                return np.zeros(0, dtype=np.int64)
            left = self.max_settings - n_taken
            k = left if self.whole_grid else min(self._delta(), left)
        if k <= 0:
            return np.zeros(0, dtype=np.int64)
        pos = self.sampler.pick(self.candidates, taken, k, self._rng(n_taken, 0), y=y)
        return np.asarray(pos, dtype=np.int64)

    def analysis(
        self, measured: pd.DataFrame, *, early: bool = False, memo: PointsMemo = no_memo
    ) -> Analysis:
        """The analysis of the measured settings with the form the last step chose.

        ``measured`` may have a row per repetition (a trial): once every setting is
        measured (a whole grid, or an exhausted one) and some setting has more than one
        finite row, the ANOVA is fitted to the rows and tests against the pure error
        (:func:`analyse` with ``replicates=True``), and a whole grid's form is chosen by
        the lack of fit of main effects against the pure error; a sweep stopped by its
        R² is analysed on its setting means, as published.  ``early``: the sweep was
        stopped before its R² could judge a form (a busy machine, see
        :mod:`assay.studies.sweep`): the repetitions are replicates and the form is
        chosen by the lack of fit, as for a whole grid (the two-way model is often
        saturated on so few setting means).  ``memo``: as :func:`analyse` takes it.
        """
        step = self.evaluate(measured)
        taken, y = self.state(measured)
        ok = taken & np.isfinite(y)
        levels = {c: list(self.candidates[c].unique()) for c in self.params}
        rows = measured[[*self.params, self.metric]].copy()
        rows[self.metric] = pd.to_numeric(rows[self.metric], errors="coerce")
        rows = rows[np.isfinite(rows[self.metric].to_numpy(float))]
        # the repetitions as replicates once every setting is measured (the whole grid,
        # or the sampling exhausted it): a designed experiment. A sweep stopped by its
        # R² keeps the paper's analysis of the setting means.
        whole = early or step.reason in ("grid", "exhausted")
        replicated = whole and len(rows) > int(ok.sum())
        if step.reason == "grid" or (early and replicated):
            form = LACK_OF_FIT
        else:
            form = step.form if step.form in ("main", "main+2way") else "auto"
        if replicated:
            data = rows.reset_index(drop=True)
        else:
            data = self.candidates.iloc[np.flatnonzero(ok)].assign(**{self.metric: y[ok]})
        return analyse(
            data,
            self.params,
            self.metric,
            form=form,
            threshold=self.threshold,
            splits=self.splits,
            seed=self.seed,
            levels=levels,
            alpha=self.alpha,
            step=step,
            replicates=replicated,
            memo=memo,
        )


# --------------------------------------------------------------------------- analysis


@dataclass(frozen=True)
class Analysis:
    """Significant terms (share of variance, p) and important points of one data set."""

    params: tuple[str, ...]
    metric: str
    form: str
    n: int
    table: AnovaTable
    significant: tuple[TermRow, ...]
    points: tuple[ImportantPoint, ...]
    r2: tuple[float, ...] = ()
    step: StepResult | None = None
    alpha: float = 0.05
    # the rows (trials) fitted when repetitions were used as replicates; 0: setting means
    trials: int = 0

    @property
    def significant_terms(self) -> frozenset[str]:
        return frozenset(r.name for r in self.significant)

    @property
    def testable(self) -> bool:
        """Whether the ANOVA has a residual to test its terms against."""
        return self.table.resid_df > 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "params": list(self.params),
            "metric": self.metric,
            "form": self.form,
            "n": self.n,
            "trials": self.trials,
            "replicates": self.trials > 0,
            "alpha": self.alpha,
            "anova": self.table.to_dict(),
            "significant": [r.to_dict() for r in self.significant],
            "important_points": [p.to_dict() for p in self.points],
            "validation_r2": [_f(x) for x in self.r2],
            "step": None if self.step is None else self.step.to_dict(),
        }


def _prepare(data: pd.DataFrame, params: Sequence[str], metric: str) -> pd.DataFrame:
    missing = [c for c in [*params, metric] if c not in data.columns]
    if missing:
        raise ValueError(
            f"the data lack column(s) {', '.join(missing)}; "
            f"columns are: {', '.join(map(str, data.columns))}"
        )
    d = data[[*params, metric]].copy()
    d[metric] = pd.to_numeric(d[metric], errors="coerce")
    d = d[np.isfinite(d[metric].to_numpy(float))]
    # one row per setting: the mean over repetitions
    return (
        d.groupby(list(params), sort=False, dropna=False, observed=True)[metric]
        .mean()
        .reset_index()
    )


def _finite_rows(data: pd.DataFrame, params: Sequence[str], metric: str) -> pd.DataFrame:
    d = data[[*params, metric]].copy()
    d[metric] = pd.to_numeric(d[metric], errors="coerce")
    return d[np.isfinite(d[metric].to_numpy(float))].reset_index(drop=True)


def _by_lack_of_fit(
    X: pd.DataFrame, y: FloatArray, levels: dict[str, list[Any]] | None, alpha: float
) -> str:
    """Main effects, unless their lack of fit against the pure error is significant
    (and there are two parameters or more): then main effects + two-way interactions."""
    if X.shape[1] < 2:
        return "main"
    main = CategoricalAnova(alpha=alpha, drop_insignificant=False, levels=levels).fit(X, y)
    lof = main.initial_table_.lack_of_fit
    return "main+2way" if lof is not None and math.isfinite(lof.p) and lof.p <= alpha else "main"


def _fit(
    data: pd.DataFrame,
    params: Sequence[str],
    metric: str,
    *,
    form: str,
    threshold: float,
    splits: int,
    seed: int,
    levels: dict[str, list[Any]] | None,
    alpha: float,
    step: StepResult | None,
    replicates: bool = False,
    memo: PointsMemo = no_memo,
) -> tuple[Analysis, CategoricalAnova]:
    d = _prepare(data, params, metric)
    if len(d) < 2:
        raise ValueError(f"the analysis needs at least 2 settings with a finite {metric!r}")
    X, y = d[list(params)], d[metric].to_numpy(float)
    rows = _finite_rows(data, params, metric) if replicates else d
    Xr, yr = rows[list(params)], rows[metric].to_numpy(float)
    enc = Encoder.from_frame(X, levels)
    r2: FloatArray = np.zeros(0)
    if len(params) < 2 and form == "main+2way":
        form = "main"  # one parameter: no two-way interaction
    if form == LACK_OF_FIT:
        form = _by_lack_of_fit(Xr, yr, levels, alpha)
    elif form == "auto":
        form, r2, _ = _form_r2(
            X,
            y,
            enc=enc,
            model="anova",
            threshold=threshold,
            splits=splits,
            train_fraction=0.8,
            rng=np.random.default_rng([seed, len(y), 2]),
            alpha=alpha,
        )
    elif step is not None:
        r2 = np.asarray(step.r2, dtype=float)
    if form not in ("main", "main+2way"):
        raise ValueError(
            f"form must be 'auto', 'main', 'main+2way' or '{LACK_OF_FIT}', got {form!r}"
        )
    model = CategoricalAnova(interactions=form == "main+2way", alpha=alpha, levels=levels)
    model.fit(Xr, yr)
    sig = sorted(
        (r for r in model.table_.rows if math.isfinite(r.p) and r.p <= alpha),
        key=lambda r: -r.pct_var,
    )
    effects = [TermEffects(r.term, r.pct_var, model.effects(r.term)) for r in sig]
    made_from = [
        [[list(t.term), t.pct_var, t.effects.index.tolist(),
          t.effects.columns.tolist() if isinstance(t.effects, pd.DataFrame) else None,
          t.effects.to_numpy(dtype=float).tolist()] for t in effects],
        Xr.to_numpy().tolist(), yr.tolist(), form, alpha, seed, SUPPORT_RESAMPLES,
    ]  # fmt: skip
    pts = memo(
        made_from, lambda: point_support(important_points(effects), model, Xr, yr, seed=seed)
    )
    a = Analysis(
        tuple(params),
        metric,
        form,
        len(y),
        model.table_,
        tuple(sig),
        tuple(pts),
        tuple(float(v) for v in r2),
        step,
        alpha,
        len(yr) if replicates else 0,
    )
    return a, model


def point_support(
    found: Sequence[ImportantPoint],
    model: CategoricalAnova,
    X: pd.DataFrame,
    y: npt.ArrayLike,
    *,
    resamples: int = SUPPORT_RESAMPLES,
    seed: int = 0,
) -> list[ImportantPoint]:
    """``found`` (the important points of ``model``, fitted to ``X`` and ``y``), each
    with its support: the share of ``resamples`` bootstrap data sets (the rows drawn
    with replacement: another sample of the same settings and repetitions; fewer sets on
    large data, :data:`SUPPORT_ROWS`) whose ANOVA, of the same form, levels and alpha,
    finds it again: the same term, parameter, fixed value, kind and value.  A point that
    hangs on a few noisy settings comes and goes; one the data carry is found in
    (nearly) every set.  The points are returned as found, without support, when the
    model leaves no residual (as many parameters as rows: nothing says how noisy the
    data are).  Rows, not residuals around the fit: another sample of the settings is
    what an early-stopped sweep's points are judged against (#59).

    >>> import itertools
    >>> d = pd.DataFrame(list(itertools.product([1, 2, 4, 8, 16, 32], ["x", "y", "z"])),
    ...                  columns=["w", "c"])
    >>> noise = np.random.default_rng(1).normal(0, 0.3, len(d))
    >>> d["t"] = d["w"].clip(upper=8) * 10 + d["c"].map({"x": 0, "y": 1, "z": 3}) + noise
    >>> a = analyse(d, ["w", "c"], "t", form="main")
    >>> [(p.describe(), p.support) for p in a.points]
    [('w: knee at 8', 0.98)]
    """
    from dataclasses import replace

    if not found:
        return []
    target = np.asarray(y, dtype=float)
    resid = target - model.predict(X)
    scale = max(1.0, float(np.max(np.abs(target))))
    if resid.size < 2 or not np.any(np.abs(resid) > 1e-9 * scale):
        return list(found)
    n = min(resamples, max(SUPPORT_MIN_RESAMPLES, SUPPORT_ROWS // resid.size))
    rng = np.random.default_rng([seed, resid.size, 3])
    codes = model.encoder_.codes(X)  # the design is the same in every resample
    keys = [p.key() for p in found]
    hits = np.zeros(len(found))
    for _ in range(n):
        rows = rng.integers(0, resid.size, resid.size)
        m = CategoricalAnova(
            interactions=model.interactions, alpha=model.alpha, levels=model.levels
        )
        m.encoder_ = model.encoder_
        try:
            m.fit_codes(codes[rows], target[rows])
        except ValueError:  # a resample the ANOVA cannot fit finds nothing
            continue
        sig = [r for r in m.table_.rows if math.isfinite(r.p) and r.p <= model.alpha]
        seen = {q.key() for q in important_points(
            TermEffects(r.term, r.pct_var, m.effects(r.term)) for r in sig)}  # fmt: skip
        hits += [k in seen for k in keys]
    return [replace(p, support=float(h) / n, resamples=n) for p, h in zip(found, hits, strict=True)]


def analyse(
    data: pd.DataFrame,
    params: Sequence[str],
    metric: str,
    *,
    form: str = "auto",
    threshold: float = 0.9,
    splits: int = 10,
    seed: int = 0,
    levels: dict[str, list[Any]] | None = None,
    alpha: float = 0.05,
    step: StepResult | None = None,
    replicates: bool = False,
    memo: PointsMemo = no_memo,
) -> Analysis:
    """Categorical ANOVA of ``data`` and the important points of its significant terms.

    ``form="auto"`` uses main effects alone when they reach ``threshold`` on all
    ``splits`` validation splits, main effects + two-way interactions otherwise;
    ``form="lack-of-fit"`` uses main effects unless their lack of fit against the pure
    error is significant.  With one parameter the form is always main effects.

    Rows of ``data`` that repeat a setting are averaged, unless ``replicates``: then
    they are its repetitions, the ANOVA is fitted to the rows and its residual includes
    the pure error (the residual *is* the pure error when the model is saturated);
    the validation R² of ``form="auto"`` stays that of the setting means.

    Each important point carries its support: the share of bootstrap data sets in which
    it is found again (:func:`point_support`).  ``memo`` keeps the points with
    their support (a study passes one that reads those its store keeps: see
    :mod:`assay.studies.kept`).

    >>> import itertools
    >>> d = pd.DataFrame(list(itertools.product([1, 2, 4, 8, 16, 32], ["x", "y", "z"])),
    ...                  columns=["w", "c"])
    >>> d["tput"] = d["w"].clip(upper=8) * 10 + 0.1 * d["w"] + d["c"].map({"x": 0, "y": 1, "z": 3})
    >>> a = analyse(d, ["w", "c"], "tput")
    >>> a.form, [(r.name, round(r.pct_var, 1)) for r in a.significant]
    ('main', [('w', 99.8), ('c', 0.2)])
    >>> [p.describe() for p in a.points]
    ['w: knee at 8']
    """
    return _fit(
        data,
        params,
        metric,
        form=form,
        threshold=threshold,
        splits=splits,
        seed=seed,
        levels=levels,
        alpha=alpha,
        step=step,
        replicates=replicates,
        memo=memo,
    )[0]


def _level_rank(values: pd.Series, order: Sequence[Any]) -> npt.NDArray[np.int64]:
    """Each value's position in ``order`` (numbers compared as numbers, anything else by
    its text); a value not in ``order`` after all of them."""

    def key(v: Any) -> Any:
        if isinstance(v, bool | np.bool_):
            return ("b", bool(v))
        if isinstance(v, int | float | np.integer | np.floating):
            return ("n", float(v))
        return ("s", str(v))

    pos = {key(v): i for i, v in reversed(list(enumerate(order)))}
    return np.array([pos.get(key(v), len(order)) for v in values], dtype=np.int64)


def setting_intervals(
    rows: pd.DataFrame,
    params: Sequence[str],
    metric: str,
    order: Mapping[str, Sequence[Any]] | None = None,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """One row per setting of ``rows`` (one row per repetition; NaN for a failed one):
    the mean of ``metric`` over its finite repetitions and Student's t interval
    (:func:`assay.stats.intervals.t_interval`), sorted by setting: by the first
    parameter's value in the order ``order`` lists them (a study's ``[sweep.params]``),
    then the second's, and so on.

    Columns: the parameters, ``metric`` (the mean), ``{metric}_n`` (finite
    repetitions), ``{metric}_sd``, ``{metric}_low``, ``{metric}_high``,
    ``{metric}_half_width`` (infinite with one repetition, NaN with none) and
    ``{metric}_confidence``.

    >>> r = pd.DataFrame({"t": [2, 1, 2, 1, 2], "y": [4.0, 1.0, 6.0, 3.0, float("nan")]})
    >>> s = setting_intervals(r, ["t"], "y", {"t": [2, 1]})
    >>> s[["t", "y", "y_n", "y_low"]].round(2).values.tolist()
    [[2.0, 5.0, 2.0, -7.71], [1.0, 2.0, 2.0, -10.71]]
    """
    cols = [*params, metric]
    names = [f"{metric}_{k}" for k in ("n", "sd", "low", "high", "half_width", "confidence")]
    if rows.empty:
        return pd.DataFrame(columns=[*cols, *names])
    d = rows[list(params)].copy()
    d[metric] = pd.to_numeric(rows[metric], errors="coerce")
    out: list[dict[str, Any]] = []
    for key, group in d.groupby(list(params), sort=False, dropna=False):
        setting = dict(zip(params, key if isinstance(key, tuple) else (key,), strict=True))
        vals = group[metric].to_numpy(float)
        vals = vals[np.isfinite(vals)]
        if len(vals):
            ci = t_interval(vals, confidence)
            stats = [len(vals), ci.std, ci.low, ci.high, ci.half_width]
            mean = ci.mean
        else:
            stats, mean = [0, math.nan, math.nan, math.nan, math.nan], math.nan
        out.append({**setting, metric: mean, **dict(zip(names, [*stats, confidence], strict=True))})
    frame = pd.DataFrame(out, columns=[*cols, *names])
    if order is not None and len(frame):
        ranks = [_level_rank(frame[p], list(order.get(p, []))) for p in params]
        frame = frame.iloc[np.lexsort(ranks[::-1])].reset_index(drop=True)
    return frame


# --------------------------------------------------------------------------- summary


@dataclass(frozen=True)
class Summary:
    """Plain-language summary of an analysis."""

    lines: tuple[str, ...]
    recommendation: str
    points: tuple[tuple[str, Any], ...]

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def withheld(self, why: str) -> Summary:
        """The summary with its recommendation replaced by ``why`` no conclusion is drawn
        (the analysis lines kept): e.g. hosts that differ for the same settings.

        >>> s = Summary(("No parameter has a significant effect.", "Any."), "Any.", ())
        >>> s.withheld("No conclusion: the hosts differ.").text.splitlines()[-1]
        'No conclusion: the hosts differ.'
        """
        return Summary((*self.lines[:-1], why), why, ())

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "recommendation": self.recommendation,
            "report_both_sides_of": [{"param": p, "value": _jsonable(v)} for p, v in self.points],
        }


def _p_text(p: float, f: float) -> str:
    """``p = 0.012``; below 0.001 in two significant digits (``p = 3.1e-12``), so that a
    p of 1e-3 and one of 1e-15 do not read alike; a p of 0 is ``p < 1e-300`` (it
    underflowed) unless ``f`` is infinite: the residuals have no spread at all (no
    spread between repetitions, or no repetitions and a model that fits exactly).

    >>> _p_text(0.0123, 5.0), _p_text(3.14e-12, 70.3), _p_text(0.0, 70.3)
    ('p = 0.012', 'p = 3.1e-12', 'p < 1e-300')
    >>> _p_text(0.0, math.inf)
    'p = 0 (no residual spread: the model fits exactly)'
    """
    if not math.isfinite(p):
        return "p n/a"
    if p == 0 and math.isinf(f):
        return "p = 0 (no residual spread: the model fits exactly)"
    if p == 0:
        return "p < 1e-300"
    return f"p = {p:.2g}" if p < 0.001 else f"p = {p:.3f}"


def _f_text(t: FTest) -> str:
    f = "∞" if math.isinf(t.f) else f"{t.f:.3g}"
    return f"F({t.df}, {t.resid_df}) = {f}, {_p_text(t.p, t.f)}"


def _form_text(form: str) -> str:
    return "main effects" if form == "main" else "main effects + two-way interactions"


def _replicate_lines(analysis: Analysis) -> list[str]:
    """What a replicated ANOVA was tested against, and the two tests against pure error."""
    tab = analysis.table
    lines = [
        f"ANOVA of the {analysis.trials} trials ({analysis.n} settings × their repetitions, "
        f"{_form_text(analysis.form)}): terms tested against the {tab.residual_name} "
        f"({tab.resid_df} df)"
        + (
            "; the model has a parameter per setting, so that is the spread between "
            "repetitions of one setting."
            if tab.residual_is_pure_error
            else "."
        )
    ]
    cells = tab.settings_test
    if cells is not None:
        differ = math.isfinite(cells.p) and cells.p <= analysis.alpha
        lines.append(
            f"The settings {'differ' if differ else 'do not differ significantly'}: "
            f"{_f_text(cells)} (one mean per setting against the pure error)."
        )
    lof = tab.lack_of_fit
    if lof is not None:
        bad = math.isfinite(lof.p) and lof.p <= analysis.alpha
        lines.append(
            f"Lack of fit of {_form_text(analysis.form)} against the pure error: {_f_text(lof)}"
            + (
                ": the model misses a real effect (a higher-order interaction), which the "
                "residual includes."
                if bad
                else "."
            )
        )
    return lines


def summarise(analysis: Analysis, max_points: int = 5) -> Summary:
    """Significant parameters, important points, and where to report results.

    >>> import itertools
    >>> d = pd.DataFrame({"w": [1, 2, 4, 8, 16, 32] * 2, "c": ["x"] * 6 + ["y"] * 6})
    >>> d["tput"] = d["w"].clip(upper=8) * 10.0 + (d["c"] == "y")
    >>> print(summarise(analyse(d, ["w", "c"], "tput", form="main")).recommendation)
    Report results on both sides of w = 8.
    """
    lines: list[str] = []
    st = analysis.step
    form_text = _form_text(analysis.form)
    if st is not None and st.reason == "grid":
        lines.append(
            f"Measured the whole grid at once: {st.n_measured} settings"
            + (f", {analysis.trials} trials" if analysis.trials else "")
            + ". With this few settings a held-out R² is not meaningful (a training part "
            "could not fit the main effects and leave settings to validate on), so the grid "
            "was analysed as a designed experiment"
            + (
                ", each setting's repetitions as replicates."
                if analysis.trials
                else " (one repetition per setting: no pure error)."
            )
        )
    elif st is not None:
        r2 = np.asarray(st.r2, dtype=float)
        lo = f"{np.nanmin(r2):.2f}" if np.any(np.isfinite(r2)) else "n/a"
        reach = "reached" if _all_reach(r2, st.threshold) else "did not reach"
        lines.append(
            f"Measured {st.n_measured} of {st.n_candidates} settings "
            f"({100 * st.sampling_rate:.0f}%); validation R² {reach} {st.threshold:g} on all "
            f"{len(r2)} splits (lowest {lo}) with {form_text}."
        )
        if not np.any(np.isfinite(r2)):
            # never judged: not a sign of a hard system (#42: a 3 x 3 grid with two-way
            # terms said "hard to predict" at 9 of 9 settings)
            lines.append(
                f"No held-out R² could be computed: a training part of these settings "
                f"cannot fit {form_text} and leave two settings to validate on. The "
                "analysis below rests on "
                + (
                    "the repetitions (pure error) instead."
                    if analysis.trials
                    else "the settings alone; repetitions ≥ 2 give it a pure error."
                )
            )
        elif not _all_reach(r2, st.threshold):
            lines.append(
                "The model is not accurate enough yet: the system may be hard to predict. "
                "Check that the finished settings match expectations and look for "
                "implementation issues before adding many more samples (§3.4)."
            )
    else:
        lines.append(f"Analysed {analysis.n} settings with {form_text}.")
    if analysis.trials:
        lines.extend(_replicate_lines(analysis))
    elif st is not None and st.reason == "grid" and analysis.testable:
        lines.append(
            f"ANOVA of the {analysis.n} settings ({form_text}): terms tested against what "
            f"the model leaves unexplained ({analysis.table.resid_df} df; without repetitions "
            "there is no pure error)."
        )
    if not analysis.testable:
        lines.append(
            f"The ANOVA ({form_text}) has no residual degree of freedom: as many settings as "
            "model parameters and no repetitions, so no effect can be tested. Measure each "
            "setting at least twice (repetitions ≥ 2)."
        )
    elif analysis.significant:
        lines.append(
            f"Significant parameters (type-II ANOVA, p ≤ {analysis.alpha:g}), by share of variance:"
        )
        width = max(len(r.name) for r in analysis.significant)
        for r in analysis.significant:
            name = r.name.replace(":", " × ")
            lines.append(f"  {name:<{width + 2}} {r.pct_var:5.1f}%   {_p_text(r.p, r.f)}")
    else:
        lines.append("No parameter has a significant effect.")
    pts = analysis.points
    if pts:
        lines.append("Important points (ranked by turn ratio × % variance):")
        for i, p in enumerate(pts[:max_points], 1):
            ratio = f"turn ratio {p.turn_ratio:.2g}"
            if p.kind == "step":  # a step's ratio is the share of the range it holds
                ratio += f": {p.turn_ratio:.0%} of the change in one step"
            if p.support is not None:
                ratio += f"; found again in {p.support:.0%} of {p.resamples} resamples"
            lines.append(f"  {i}. {p.describe()} ({ratio})")
        if len(pts) > max_points:
            lines.append(f"  ... and {len(pts) - max_points} more")
    where: list[tuple[str, Any]] = []
    said: list[str] = []  # how each of where is said: "w = 8", "the block step between 4 and 5"
    for p in sorted(pts, key=lambda q: (q.fixed is not None, pts.index(q))):
        key = (p.param, _jsonable(p.value))
        if key not in where:
            where.append(key)
            is_step = p.kind == "step" and p.before is not None
            said.append(
                f"the {p.param} step between {_fmt(_jsonable(p.before))} and {_fmt(key[1])}"
                if is_step
                else f"{p.param} = {_fmt(key[1])}"
            )
        if len(where) >= max_points:
            break
    if where:
        rec = (
            "Report results on both sides of "
            + ", ".join(said[:-1])
            + (" and of " if len(where) > 1 else "")
            + f"{said[-1]}."
        )
    elif analysis.significant:
        rec = "No knee or turning point was found: cover each significant parameter's range."
    elif not analysis.testable:
        rec = "Nothing could be tested: set repetitions ≥ 2 and measure again."
    else:
        rec = "No parameter matters at this precision: any setting is representative."
    lines.append(rec)
    return Summary(tuple(lines), rec, tuple(where))


# --------------------------------------------------------------------------- mismatch


@dataclass(frozen=True)
class Mismatch:
    """The paper's mismatch (§3.4): symmetric differences, over the full analysis' count.

    The rate can exceed 100%: a sample that finds points the full data does not have
    adds them to the count but not to the denominator; ``*_missed`` (in the full
    analysis only) and ``*_extra`` (in the sample only) say which.  ``min_share``: only
    significant terms explaining at least that share of the variance were compared
    (0: the paper's list, every term with p ≤ alpha).
    """

    params_full: int
    params_mismatched: tuple[str, ...]
    points_full: int
    points_mismatched: tuple[str, ...]
    params_missed: tuple[str, ...] = ()
    params_extra: tuple[str, ...] = ()
    points_missed: tuple[str, ...] = ()
    points_extra: tuple[str, ...] = ()
    min_share: float = 0.0

    @property
    def params_rate(self) -> float:
        return len(self.params_mismatched) / max(self.params_full, 1)

    @property
    def points_rate(self) -> float:
        return len(self.points_mismatched) / max(self.points_full, 1)

    def to_dict(self) -> dict[str, Any]:
        return {
            "params_full": self.params_full,
            "params_mismatched": list(self.params_mismatched),
            "params_missed": list(self.params_missed),
            "params_extra": list(self.params_extra),
            "params_rate": self.params_rate,
            "points_full": self.points_full,
            "points_mismatched": list(self.points_mismatched),
            "points_missed": list(self.points_missed),
            "points_extra": list(self.points_extra),
            "points_rate": self.points_rate,
            "min_share": self.min_share,
        }


def _point_label(k: tuple[Any, ...]) -> str:
    term, param, fixed, kind, value = k
    where = f" ({fixed[0]} = {_fmt(fixed[1])})" if fixed else ""
    return f"{term_name(term)}: {param}{where} {kind} at {_fmt(value)}"


def material_terms(analysis: Analysis, min_share: float) -> frozenset[str]:
    """The significant terms that explain at least ``min_share`` (a fraction) of the
    variance: significance alone says an effect exists, not that it matters.

    >>> d = pd.DataFrame({"w": [1, 2, 4, 8, 16, 32] * 2, "c": ["x"] * 6 + ["y"] * 6})
    >>> d["t"] = d["w"].clip(upper=8) * 10.0 + 0.1 * (d["c"] == "y")
    >>> sorted(analyse(d, ["w", "c"], "t", form="main").significant_terms)
    ['c', 'w']
    >>> sorted(material_terms(analyse(d, ["w", "c"], "t", form="main"), 0.01))
    ['w']
    """
    return frozenset(r.name for r in analysis.significant if r.pct_var >= 100 * min_share)


def mismatch(full: Analysis, sample: Analysis, min_share: float = 0.0) -> Mismatch:
    """``(Y_full − Y_sample) ∪ (Y_sample − Y_full)`` for significant terms and for points.

    Rates are normalised by the number found in the full analysis.  A point matches
    only with the same term, parameter, fixed value, type (knee/turning) and value.
    ``min_share > 0`` compares only the terms that explain at least that share of the
    variance (:func:`material_terms`), and their points.

    >>> d = pd.DataFrame({"w": [1, 2, 4, 8, 16, 32] * 2, "c": ["x"] * 6 + ["y"] * 6})
    >>> d["t"] = d["w"].clip(upper=8) * 10.0 + (d["c"] == "y")
    >>> a = analyse(d, ["w", "c"], "t", form="main")
    >>> mismatch(a, a).params_rate, mismatch(a, a).points_rate
    (0.0, 0.0)
    """
    pa, pb = material_terms(full, min_share), material_terms(sample, min_share)
    ka = {p.key() for p in full.points if term_name(p.term) in pa}
    kb = {p.key() for p in sample.points if term_name(p.term) in pb}
    return Mismatch(
        len(pa),
        tuple(sorted(pa ^ pb)),
        len(ka),
        tuple(sorted(_point_label(k) for k in ka ^ kb)),
        params_missed=tuple(sorted(pa - pb)),
        params_extra=tuple(sorted(pb - pa)),
        points_missed=tuple(sorted(_point_label(k) for k in ka - kb)),
        points_extra=tuple(sorted(_point_label(k) for k in kb - ka)),
        min_share=min_share,
    )


# --------------------------------------------------------------------------- simulate


@dataclass(frozen=True)
class Simulation:
    """An offline run of Algorithm 1 on an existing data set."""

    steps: tuple[StepResult, ...]
    analysis: Analysis
    reference: Analysis | None
    mismatch: Mismatch | None
    positions: tuple[int, ...]  # rows of ``space`` in sampling order
    # the space: one row per distinct setting (canonical order), its mean metric
    space: pd.DataFrame = field(default_factory=pd.DataFrame)
    # the mismatch over the terms that explain at least ``min_share`` of the variance
    mismatch_material: Mismatch | None = None

    @property
    def settings(self) -> pd.DataFrame:
        """The sampled settings, in sampling order, with the mean of their trials."""
        return self.space.iloc[list(self.positions)].reset_index(drop=True)

    @property
    def sampling_rate(self) -> float:
        return self.steps[-1].sampling_rate if self.steps else math.nan

    def to_dict(self) -> dict[str, Any]:
        return {
            "sampling_rate": _f(self.sampling_rate),
            "steps": [s.to_dict() for s in self.steps],
            "analysis": self.analysis.to_dict(),
            "reference": None if self.reference is None else self.reference.to_dict(),
            "mismatch": None if self.mismatch is None else self.mismatch.to_dict(),
            "mismatch_material": (
                None if self.mismatch_material is None else self.mismatch_material.to_dict()
            ),
        }


def simulate(
    full_data: pd.DataFrame,
    params: Sequence[str],
    metric: str,
    *,
    sampler: Any = "random",
    start: float = 0.05,
    step: float = 0.05,
    threshold: float = 0.9,
    splits: int = 10,
    model: str = "anova",
    budget: int | None = None,
    seed: int = 0,
    stop_at_threshold: bool = True,
    max_rate: float = 1.0,
    reference: Analysis | Literal["full"] | None = "full",
    min_share: float = 0.01,
    replicates: bool = False,
) -> Simulation:
    """Run Algorithm 1 by sampling from ``full_data`` instead of measuring (Figures 1–2).

    The space is the distinct settings in ``full_data`` (a full or partial data set;
    repetitions are averaged).  With ``stop_at_threshold=False`` the loop goes on up to
    ``max_rate`` of the settings, recording R² at every step (Figure 2).  ``reference``
    is the analysis to compare with: ``"full"`` (default) analyses all of ``full_data``
    (Figure 1), ``None`` skips the comparison; the mismatch is computed for the paper's
    significant terms and for those that explain at least ``min_share`` of the variance.
    ``replicates``: the final analyses (of the sampled settings and of all) fit the rows
    of ``full_data`` that repeat a setting as its repetitions, the pure error
    (:func:`analyse`); the sampling itself rests on the setting means either way.

    The result does not depend on the order of the rows: the settings are put in a
    canonical order (sorted by parameter values) before anything is sampled.

    >>> import itertools
    >>> d = pd.DataFrame(list(itertools.product([1, 2, 4, 8, 16, 32], range(5), range(4))),
    ...                  columns=["w", "b", "c"])
    >>> d["t"] = d["w"].clip(upper=8) * 10.0 + d["b"] + 0.1 * np.sin(d.index.to_numpy())
    >>> sim = simulate(d, ["w", "b", "c"], "t", start=0.2, step=0.1, seed=0)
    >>> sim.steps[-1].reason, sim.mismatch.params_rate
    ('r2', 0.0)
    """
    data = _prepare(_canonical(full_data, [*params, metric]), params, metric)
    space = data[list(params)].reset_index(drop=True)
    y_all = data[metric].to_numpy(float)
    limit = max(1, math.ceil(max_rate * len(space) - 1e-9))
    design = IncrementalSampling(
        space,
        sampler=sampler,
        start=start,
        step=step,
        threshold=threshold if stop_at_threshold else math.inf,
        splits=splits,
        model=model,
        budget=limit if budget is None else min(budget, limit),
        seed=seed,
        metric=metric,
    )
    taken: list[int] = []
    steps: list[StepResult] = []
    while True:
        measured = space.iloc[taken].assign(**{metric: y_all[taken]})
        batch = design.next_batch(measured)
        if len(taken):
            steps.append(design.evaluate(measured))
        if len(batch) == 0:
            break
        taken.extend(int(i) for i in batch)
    measured = space.iloc[taken].assign(**{metric: y_all[taken]})
    last = steps[-1]
    if not stop_at_threshold:
        last = StepResult(
            last.step,
            last.n_measured,
            last.n_valid,
            last.n_candidates,
            last.r2,
            last.form,
            last.model,
            threshold,
            _all_reach(np.asarray(last.r2), threshold),
            last.reason,
            last.r2_main,
        )
    levels = {c: list(space[c].unique()) for c in params}
    form = last.form if last.form in ("main", "main+2way") else "auto"
    rows = full_data[[*params, metric]]
    if replicates:  # every row of the sampled settings: their repetitions
        measured = rows.merge(measured[list(params)], on=list(params), how="inner")
    result = analyse(
        measured,
        params,
        metric,
        form=form,
        threshold=threshold,
        splits=splits,
        seed=seed,
        levels=levels,
        step=last,
        replicates=replicates,
    )
    ref: Analysis | None
    if isinstance(reference, str):
        ref = analyse(
            rows if replicates else data,
            params,
            metric,
            threshold=threshold,
            splits=splits,
            seed=seed,
            replicates=replicates,
        )
    else:
        ref = reference
    mm = None if ref is None else mismatch(ref, result)
    material = None if ref is None else mismatch(ref, result, min_share)
    return Simulation(tuple(steps), result, ref, mm, tuple(taken), data, material)


def _canonical(frame: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """``frame``'s rows sorted by ``columns`` (numbers by value, anything else by its
    text), so that sampling, the splits and the level order of categorical parameters
    do not depend on the order of the rows in a file (issue #20)."""

    def key(col: pd.Series) -> pd.Series:
        if pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col):
            return col
        return col.map(lambda v: (type(v).__name__, str(v)))

    cols = [c for c in columns if c in frame.columns]
    return frame.sort_values(cols, key=key, kind="mergesort").reset_index(drop=True)


# --------------------------------------------------------------------------- compare


@dataclass(frozen=True)
class Region:
    """A range of one parameter between important points, and who wins there."""

    param: str
    low: Any
    high: Any
    n_settings: int
    mean_a: float
    mean_b: float
    share_a_wins: float
    winner: str
    changes: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "param": self.param,
            "low": _jsonable(self.low),
            "high": _jsonable(self.high),
            "n_settings": self.n_settings,
            "mean_a": _f(self.mean_a),
            "mean_b": _f(self.mean_b),
            "share_a_wins": _f(self.share_a_wins),
            "winner": self.winner,
            "winner_changes": self.changes,
        }


@dataclass(frozen=True)
class SystemComparison:
    """Two systems over one space: their analyses, and where the winner changes (§5.3)."""

    names: tuple[str, str]
    a: Analysis
    b: Analysis
    n_settings: int
    share_a_wins: float
    regions: tuple[Region, ...]
    lines: tuple[str, ...]

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "names": list(self.names),
            "n_settings": self.n_settings,
            "share_a_wins": _f(self.share_a_wins),
            "regions": [r.to_dict() for r in self.regions],
            "a": self.a.to_dict(),
            "b": self.b.to_dict(),
            "text": self.text,
        }


def compare_systems(
    data_a: pd.DataFrame,
    data_b: pd.DataFrame,
    params: Sequence[str],
    metric: str,
    *,
    candidates: pd.DataFrame | None = None,
    names: tuple[str, str] = ("A", "B"),
    higher_is_better: bool = True,
    threshold: float = 0.9,
    splits: int = 10,
    seed: int = 0,
) -> SystemComparison:
    """Analyse two systems, predict both over the space, and find where the winner changes.

    For every ordered parameter with important points (of either system), the range is
    cut at those points — (min, P_A), (P_A, P_B), (P_B, max) as in §5.3 — and each
    region reports both systems' mean prediction and the share of settings each wins.
    A region's lower bound is included, its upper bound is not (the last includes max).

    >>> import itertools
    >>> d = pd.DataFrame(list(itertools.product([1, 2, 4, 8, 16, 32], ["x", "y", "z"])),
    ...                  columns=["w", "c"])
    >>> a = d.assign(t=d["w"].clip(upper=8) * 10.0 + 0.1 * d["w"] + (d["c"] == "y"))
    >>> b = d.assign(t=40.0 + d["w"] + (d["c"] == "y"))
    >>> cmp = compare_systems(a, b, ["w", "c"], "t")
    >>> [(r.low, r.high, r.winner) for r in cmp.regions if r.param == "w"]
    [(1, 8, 'B'), (8, 32, 'A')]
    """
    if candidates is None:
        space = pd.concat([data_a[list(params)], data_b[list(params)]], ignore_index=True)
        space = space.drop_duplicates().reset_index(drop=True)
    else:
        space = candidates[list(params)].reset_index(drop=True)
    levels = {c: list(space[c].unique()) for c in params}
    kw: dict[str, Any] = {
        "form": "auto",
        "threshold": threshold,
        "splits": splits,
        "seed": seed,
        "levels": levels,
        "alpha": 0.05,
        "step": None,
    }
    an_a, m_a = _fit(data_a, params, metric, **kw)
    an_b, m_b = _fit(data_b, params, metric, **kw)
    pa, pb = m_a.predict(space), m_b.predict(space)
    sign = 1.0 if higher_is_better else -1.0
    a_wins = sign * (pa - pb) > 0
    share = float(a_wins.mean())
    regions: list[Region] = []
    lines = [
        f"Over all {len(space)} settings, {names[0]} is predicted better in "
        f"{100 * share:.0f}% and {names[1]} in {100 * (1 - share):.0f}%."
    ]
    for param in params:
        col = space[param]
        if not (pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col)):
            continue
        cuts = sorted({float(p.value) for p in (*an_a.points, *an_b.points) if p.param == param})
        if not cuts:
            continue
        vals = col.to_numpy(float)
        levels_sorted = np.unique(vals)
        bounds = [float(levels_sorted[0]), *cuts, math.inf]
        prev: str | None = None
        param_regions: list[Region] = []
        for lo, hi in itertools.pairwise(bounds):
            sel = (vals >= lo) & (vals < hi)
            if not sel.any():
                continue
            mean_a, mean_b = float(pa[sel].mean()), float(pb[sel].mean())
            sh = float(a_wins[sel].mean())
            winner = names[0] if sh > 0.5 else names[1] if sh < 0.5 else "tie"
            top = float(levels_sorted[-1]) if math.isinf(hi) else hi
            param_regions.append(
                Region(
                    param,
                    _jsonable(lo),
                    _jsonable(top),
                    int(sel.sum()),
                    mean_a,
                    mean_b,
                    sh,
                    winner,
                    prev is not None and winner != prev,
                )
            )
            prev = winner
        regions.extend(param_regions)
        if any(r.changes for r in param_regions):
            parts = [
                f"{r.winner} wins for {param} in [{_fmt(r.low)}, {_fmt(r.high)}"
                f"{']' if r is param_regions[-1] else ')'} ({100 * r.share_a_wins:.0f}% "
                f"{names[0]})"
                for r in param_regions
            ]
            lines.append(f"The winner changes with {param}: " + "; ".join(parts) + ".")
    cut_txt = sorted(
        {(p.param, float(p.value)) for p in (*an_a.points, *an_b.points) if p.fixed is None}
    )
    if cut_txt:
        lines.append(
            "Compare on both sides of every important point of both systems: "
            + ", ".join(f"{k} = {_fmt(v)}" for k, v in cut_txt)
            + "."
        )
    return SystemComparison(names, an_a, an_b, len(space), share, tuple(regions), tuple(lines))
