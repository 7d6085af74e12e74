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
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from assay.stats.anova import AnovaTable, CategoricalAnova, Encoder, TermRow, term_name
from assay.stats.models import MODELS, make_model, r2_score, split_indices, validation_r2
from assay.stats.trends import ImportantPoint, TermEffects, important_points
from assay.values import finite_or_none as _f
from assay.values import plain as _jsonable
from assay.values import short as _fmt

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
    "simulate",
    "summarise",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
Form = Literal["main", "main+2way"]


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
        }


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
        m = CategoricalAnova(interactions=interactions, alpha=alpha)
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
    _enc: Encoder = field(init=False, repr=False)
    _key: dict[Any, int] = field(init=False, repr=False)
    _cache: tuple[bytes, StepResult] | None = field(init=False, repr=False, default=None)

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

    @property
    def params(self) -> list[str]:
        return [str(c) for c in self.candidates.columns]

    @property
    def n_candidates(self) -> int:
        return len(self.candidates)

    @property
    def max_settings(self) -> int:
        return self.n_candidates if self.budget is None else min(self.budget, self.n_candidates)

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
        if _all_reach(r2, self.threshold):
            done, reason = True, "r2"
        elif n_taken >= self.n_candidates:
            done, reason = True, "exhausted"
        elif n_taken >= self.max_settings:
            done, reason = True, "budget"
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
        )
        self._cache = (fp, res)
        return res

    def _first(self) -> int:
        return min(max(1, math.ceil(self.start * self.n_candidates - 1e-9)), self.max_settings)

    def _delta(self) -> int:
        return max(1, math.ceil(self.step * self.n_candidates - 1e-9))

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
            k = min(self._delta(), self.max_settings - n_taken)
        if k <= 0:
            return np.zeros(0, dtype=np.int64)
        pos = self.sampler.pick(self.candidates, taken, k, self._rng(n_taken, 0), y=y)
        return np.asarray(pos, dtype=np.int64)

    def analysis(self, measured: pd.DataFrame) -> Analysis:
        """The analysis of the measured settings with the form the last step chose."""
        step = self.evaluate(measured)
        taken, y = self.state(measured)
        ok = taken & np.isfinite(y)
        data = self.candidates.iloc[np.flatnonzero(ok)].assign(**{self.metric: y[ok]})
        form = step.form if step.form in ("main", "main+2way") else "auto"
        return analyse(
            data,
            self.params,
            self.metric,
            form=form,
            threshold=self.threshold,
            splits=self.splits,
            seed=self.seed,
            levels={c: list(self.candidates[c].unique()) for c in self.params},
            alpha=self.alpha,
            step=step,
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

    @property
    def significant_terms(self) -> frozenset[str]:
        return frozenset(r.name for r in self.significant)

    def to_dict(self) -> dict[str, Any]:
        return {
            "params": list(self.params),
            "metric": self.metric,
            "form": self.form,
            "n": self.n,
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
) -> tuple[Analysis, CategoricalAnova]:
    d = _prepare(data, params, metric)
    if len(d) < 2:
        raise ValueError(f"the analysis needs at least 2 settings with a finite {metric!r}")
    X, y = d[list(params)], d[metric].to_numpy(float)
    enc = Encoder.from_frame(X, levels)
    r2: FloatArray = np.zeros(0)
    if form == "auto":
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
        raise ValueError(f"form must be 'auto', 'main' or 'main+2way', got {form!r}")
    model = CategoricalAnova(interactions=form == "main+2way", alpha=alpha, levels=levels)
    model.fit(X, y)
    sig = sorted(
        (r for r in model.table_.rows if math.isfinite(r.p) and r.p <= alpha),
        key=lambda r: -r.pct_var,
    )
    effects = [TermEffects(r.term, r.pct_var, model.effects(r.term)) for r in sig]
    pts = important_points(effects)
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
    )
    return a, model


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
) -> Analysis:
    """Categorical ANOVA of ``data`` and the important points of its significant terms.

    ``form="auto"`` uses main effects alone when they reach ``threshold`` on all
    ``splits`` validation splits, main effects + two-way interactions otherwise.

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
    )[0]


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

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "recommendation": self.recommendation,
            "report_both_sides_of": [{"param": p, "value": _jsonable(v)} for p, v in self.points],
        }


def _p_text(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


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
    form_text = "main effects" if analysis.form == "main" else "main effects + two-way interactions"
    if st is not None:
        r2 = np.asarray(st.r2, dtype=float)
        lo = f"{np.nanmin(r2):.2f}" if np.any(np.isfinite(r2)) else "n/a"
        reach = "reached" if _all_reach(r2, st.threshold) else "did not reach"
        lines.append(
            f"Measured {st.n_measured} of {st.n_candidates} settings "
            f"({100 * st.sampling_rate:.0f}%); validation R² {reach} {st.threshold:g} on all "
            f"{len(r2)} splits (lowest {lo}) with {form_text}."
        )
        if not _all_reach(r2, st.threshold):
            lines.append(
                "The model is not accurate enough yet: the system may be hard to predict. "
                "Check that the finished settings match expectations and look for "
                "implementation issues before adding many more samples (§3.4)."
            )
    else:
        lines.append(f"Analysed {analysis.n} settings with {form_text}.")
    if analysis.significant:
        lines.append(
            f"Significant parameters (type-II ANOVA, p ≤ {analysis.alpha:g}), by share of variance:"
        )
        width = max(len(r.name) for r in analysis.significant)
        for r in analysis.significant:
            lines.append(
                f"  {r.name.replace(':', ' × '):<{width + 2}} {r.pct_var:5.1f}%   {_p_text(r.p)}"
            )
    else:
        lines.append("No parameter has a significant effect.")
    pts = analysis.points
    if pts:
        lines.append("Important points (ranked by turn ratio × % variance):")
        for i, p in enumerate(pts[:max_points], 1):
            lines.append(f"  {i}. {p.describe()} (turn ratio {p.turn_ratio:.2g})")
        if len(pts) > max_points:
            lines.append(f"  ... and {len(pts) - max_points} more")
    where: list[tuple[str, Any]] = []
    for p in sorted(pts, key=lambda q: (q.fixed is not None, pts.index(q))):
        key = (p.param, _jsonable(p.value))
        if key not in where:
            where.append(key)
        if len(where) >= max_points:
            break
    if where:
        rec = (
            "Report results on both sides of "
            + ", ".join(f"{k} = {_fmt(v)}" for k, v in where[:-1])
            + (" and of " if len(where) > 1 else "")
            + f"{where[-1][0]} = {_fmt(where[-1][1])}."
        )
    elif analysis.significant:
        rec = "No knee or turning point was found: cover each significant parameter's range."
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
) -> Simulation:
    """Run Algorithm 1 by sampling from ``full_data`` instead of measuring (Figures 1–2).

    The space is the distinct settings in ``full_data`` (a full or partial data set;
    repetitions are averaged).  With ``stop_at_threshold=False`` the loop goes on up to
    ``max_rate`` of the settings, recording R² at every step (Figure 2).  ``reference``
    is the analysis to compare with: ``"full"`` (default) analyses all of ``full_data``
    (Figure 1), ``None`` skips the comparison; the mismatch is computed for the paper's
    significant terms and for those that explain at least ``min_share`` of the variance.

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
    )
    ref: Analysis | None
    if isinstance(reference, str):
        ref = analyse(data, params, metric, threshold=threshold, splits=splits, seed=seed)
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
