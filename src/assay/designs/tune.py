"""Hand the important knobs to a tuner: the paper's two-level design (§5).

After pre-selection has found the top-k knobs, a tuner searches values for those
knobs only, the others staying at their defaults.  Assay uses Optuna (an optional
dependency: ``pip install -e '.[tune]'`` in Assay's folder) with its TPE sampler; the
caller supplies the objective, a function from a setting (every knob) to a measured value, so the
same code tunes a live system (the runner measures each configuration), a model of
the samples (:func:`surrogate_objective`) or a synthetic function.

Knobs marked ``unsafe`` (they trade safety for speed, e.g. ``fsync``) stay at their
defaults unless ``allow_unsafe`` is set: the paper's reliability-aware tuning point.

:func:`compare_tuning_cost` measures what pre-selection saves: trials needed to come
within ``tolerance`` of the best value found, tuning the top-k knobs vs all knobs (the
paper reports 5x fewer BestConfig iterations with the top 5 of 30 Cassandra knobs).

>>> from assay.designs.knobs import KnobSpace, NumericKnob
>>> space = KnobSpace((NumericKnob("x", 0.0, 1.0, 0.5), NumericKnob("y", 0.0, 1.0, 0.5)))
>>> res = tune(space, lambda s: -(s["x"] - 0.2) ** 2, 30, knobs=["x"], seed=1)
>>> res.tuned, round(res.best_setting["x"], 1), res.best_setting["y"]
(('x',), 0.2, 0.5)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from assay.designs.knobs import CategoricalKnob, KnobSpace, Value, knob_matrix
from assay.extras import MissingExtra, require_extra
from assay.stats.objective import Objective

__all__ = [
    "TuneResult",
    "TuneTrial",
    "TuneUnavailable",
    "TuningCost",
    "compare_tuning_cost",
    "surrogate_objective",
    "trials_to_reach",
    "tune",
    "tuning_knobs",
]

Direction = Literal["higher", "lower"]
Measure = Callable[[dict[str, Any]], "float | Mapping[str, float] | None"]

INSTALL_HINT = "pip install -e '.[tune]' in Assay's folder"
#: What needs Optuna, as :class:`~assay.extras.MissingExtra` says it.
TUNING = "tuning (--tune)"


class TuneUnavailable(MissingExtra):
    """Optuna, the optional tuning dependency, is not installed."""


def _optuna() -> Any:
    try:
        return require_extra("optuna", "tune", TUNING)
    except MissingExtra as exc:
        raise TuneUnavailable(str(exc), extra=exc.extra) from None


def tuning_knobs(
    space: KnobSpace, knobs: Sequence[str] | None = None, *, allow_unsafe: bool = False
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The knobs a tuner may change and the unsafe ones it must leave at their defaults.

    >>> from assay.designs.knobs import KnobSpace, NumericKnob
    >>> fsync = NumericKnob("fsync", 0, 1, 1, integer=True, unsafe=True)
    >>> s = KnobSpace((NumericKnob("a", 0, 1, 0), fsync))
    >>> tuning_knobs(s)
    (('a',), ('fsync',))
    """
    wanted = list(space.names if knobs is None else knobs)
    unknown = [k for k in wanted if k not in space.names]
    if unknown:
        raise ValueError(f"unknown knob(s) {', '.join(unknown)} (knobs: {', '.join(space.names)})")
    excluded = tuple(k for k in wanted if space[k].unsafe and not allow_unsafe)
    return tuple(k for k in wanted if k not in excluded), excluded


@dataclass(frozen=True)
class TuneTrial:
    """One configuration the tuner tried."""

    number: int
    setting: dict[str, Value]  # every knob
    value: float | None  # None: the objective failed (returned None or NaN)
    feasible: bool = True  # False: it broke a bound of the composite objective
    pis: Mapping[str, float] | None = None  # the measured PIs, when the objective gave them


@dataclass(frozen=True)
class TuneResult:
    """The tuner's history and its best configuration."""

    tuned: tuple[str, ...]
    excluded_unsafe: tuple[str, ...]
    direction: Direction
    trials: tuple[TuneTrial, ...]
    sampler: str
    seed: int | None
    objective: str | None = None
    # the best configuration measured again: pi, n, mean, half_width, confidence
    confirmed: Mapping[str, Any] | None = None

    def _better(self, a: float, b: float) -> bool:
        return a > b if self.direction == "higher" else a < b

    @property
    def best(self) -> TuneTrial | None:
        """The best feasible trial (``None`` when none succeeded and was feasible)."""
        best: TuneTrial | None = None
        for t in self.trials:
            if t.value is None or not t.feasible:
                continue
            if best is None or self._better(t.value, best.value):  # type: ignore[arg-type]
                best = t
        return best

    @property
    def best_setting(self) -> dict[str, Value]:
        """The best configuration (every knob); raises ValueError when no trial counts."""
        if self.best is None:
            raise ValueError("no trial succeeded with every bound satisfied")
        return dict(self.best.setting)

    @property
    def best_value(self) -> float:
        """The best value found (``nan`` when no trial counts)."""
        return math.nan if self.best is None else float(self.best.value)  # type: ignore[arg-type]

    def best_so_far(self) -> list[float]:
        """Running best value after each trial (``nan`` until one counts)."""
        out: list[float] = []
        cur = math.nan
        for t in self.trials:
            if (
                t.value is not None
                and t.feasible
                and (math.isnan(cur) or self._better(t.value, cur))
            ):
                cur = t.value
            out.append(cur)
        return out

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON export."""
        return {
            "tuned": list(self.tuned),
            "excluded_unsafe": list(self.excluded_unsafe),
            "direction": self.direction,
            "sampler": self.sampler,
            "seed": self.seed,
            "objective": self.objective,
            "best_value": self.best_value,
            "best_setting": None if self.best is None else dict(self.best.setting),
            "confirmed": None if self.confirmed is None else dict(self.confirmed),
            "trials": [
                {
                    "number": t.number,
                    "value": t.value,
                    "feasible": t.feasible,
                    "setting": t.setting,
                    "pis": dict(t.pis) if t.pis is not None else None,
                }
                for t in self.trials
            ],
        }


def _suggest(trial: Any, space: KnobSpace, name: str) -> Value:
    knob = space[name]
    if isinstance(knob, CategoricalKnob):
        return trial.suggest_categorical(name, list(knob.values))  # type: ignore[no-any-return]
    if knob.integer:
        return int(trial.suggest_int(name, int(knob.low), int(knob.high), log=knob.log))
    return float(trial.suggest_float(name, float(knob.low), float(knob.high), log=knob.log))


def _native_constraints(optuna: Any) -> bool:
    """Optuna >= 5 takes constraints through ``Trial.set_constraint``."""
    return hasattr(optuna.trial.Trial, "set_constraint")


def _make_sampler(optuna: Any, sampler: str, seed: int | None, constrained: bool) -> Any:
    if sampler == "tpe":
        if not constrained or _native_constraints(optuna):
            return optuna.samplers.TPESampler(seed=seed)
        # Optuna < 5: the constraints reach TPE through constraints_func
        return optuna.samplers.TPESampler(
            seed=seed, constraints_func=lambda t: t.user_attrs.get("constraints", (0.0,))
        )
    if sampler == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    raise ValueError(f"sampler {sampler!r}: expected 'tpe' or 'random'")


def tune(
    space: KnobSpace,
    objective: Measure,
    n_trials: int,
    *,
    knobs: Sequence[str] | None = None,
    direction: Direction = "higher",
    goal: Objective | None = None,
    allow_unsafe: bool = False,
    seed: int | None = 0,
    sampler: Literal["tpe", "random"] = "tpe",
    base: Mapping[str, Value] | None = None,
    on_trial: Callable[[TuneTrial], None] | None = None,
) -> TuneResult:
    """Tune ``knobs`` (default: all) with Optuna for ``n_trials`` trials.

    ``objective(setting)`` gets every knob (the untuned ones at their defaults, or at
    ``base``) and returns the value to optimise in ``direction``, or ``None``/NaN when
    the configuration failed (recorded, not fatal).  With ``goal`` (a composite
    objective), it returns the measured PIs as a mapping instead: the value is
    ``goal.pi`` in ``goal.direction`` and the bounds go to TPE as constraints (a trial
    breaking one never counts as the best).  Unsafe knobs are left out unless
    ``allow_unsafe``.  ``on_trial`` sees each trial as it ends (progress, storing).
    """
    optuna = _optuna()
    if n_trials < 1:
        raise ValueError(f"tune: n_trials must be >= 1, got {n_trials}")
    tuned, excluded = tuning_knobs(space, knobs, allow_unsafe=allow_unsafe)
    if not tuned:
        raise ValueError(
            "tune: no knob left to tune"
            + (f" ({', '.join(excluded)} are unsafe; allow them to tune them)" if excluded else "")
        )
    if goal is not None:
        direction = goal.direction
    fixed = {**space.defaults(), **dict(base or {})}
    previous = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # one line per trial otherwise
    try:
        study = optuna.create_study(
            direction="maximize" if direction == "higher" else "minimize",
            sampler=_make_sampler(
                optuna, sampler, seed, goal is not None and bool(goal.constraints)
            ),
        )
        trials: list[TuneTrial] = []
        for number in range(n_trials):
            trial = study.ask()
            setting = dict(fixed)
            for name in tuned:
                setting[name] = _suggest(trial, space, name)
            raw = objective(dict(setting))
            pis: Mapping[str, float] | None = None
            feasible = True
            if goal is not None:
                if raw is None:
                    value = None
                else:
                    if not isinstance(raw, Mapping):
                        raise TypeError("tune: with a goal, the objective must return the PIs")
                    pis = {k: float(v) for k, v in raw.items()}
                    value = pis.get(goal.pi)
                    violations = [c.violation(pis[c.pi]) for c in goal.constraints]
                    if _native_constraints(optuna):
                        for i, v in enumerate(violations):
                            trial.set_constraint(f"bound{i}", v)
                    else:
                        trial.set_user_attr("constraints", violations or [0.0])
                    feasible = not any(v > 0 for v in violations)
            else:
                if isinstance(raw, Mapping):
                    raise TypeError("tune: the objective returned PIs; pass goal= to score them")
                value = None if raw is None else float(raw)
            if value is not None and not math.isfinite(value):
                value = None
            if value is None:
                study.tell(trial, state=optuna.trial.TrialState.FAIL)
            else:
                study.tell(trial, value)
            done = TuneTrial(number, setting, value, feasible, pis)
            trials.append(done)
            if on_trial is not None:
                on_trial(done)
    finally:
        optuna.logging.set_verbosity(previous)
    return TuneResult(
        tuned, excluded, direction, tuple(trials), sampler, seed, str(goal) if goal else None
    )


def trials_to_reach(
    values: Sequence[float | None], target: float, direction: Direction
) -> int | None:
    """How many trials until the first value at or beyond ``target`` (``None``: never).

    >>> trials_to_reach([1.0, 3.0, 5.0], 2.5, "higher")
    2
    >>> trials_to_reach([1.0, None, 5.0], 0.5, "lower") is None
    True
    """
    for i, v in enumerate(values, start=1):
        if v is None or not math.isfinite(v):
            continue
        if (v >= target) if direction == "higher" else (v <= target):
            return i
    return None


@dataclass(frozen=True)
class ArmCost:
    """Tuning runs over one knob set, one per seed."""

    knobs: tuple[str, ...]
    trials_needed: tuple[int | None, ...]  # per seed; None: never within tolerance
    best: tuple[float, ...]  # best value per seed

    @property
    def median_trials(self) -> float | None:
        """Median trials needed, a run that never got there counting as infinitely many
        (``None`` when at least half never got there)."""
        x = sorted(math.inf if t is None else float(t) for t in self.trials_needed)
        m = float(np.median(x))
        return None if math.isinf(m) else m

    @property
    def reached(self) -> int:
        """Runs that came within tolerance."""
        return sum(t is not None for t in self.trials_needed)


@dataclass(frozen=True)
class TuningCost:
    """Top-k vs all-knob tuning: trials to come within ``tolerance`` of the best found."""

    top: ArmCost
    all: ArmCost
    reference: float  # best value over every run of both arms
    target: float
    tolerance: float
    n_trials: int
    direction: Direction
    sampler: str

    @property
    def speedup(self) -> float | None:
        """Median trials with all knobs / median trials with the top-k (None if undefined)."""
        a, t = self.all.median_trials, self.top.median_trials
        if t is None:
            return None
        if a is None:
            return math.inf
        return a / t

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON export."""
        return {
            "reference": self.reference,
            "target": self.target,
            "tolerance": self.tolerance,
            "n_trials": self.n_trials,
            "direction": self.direction,
            "sampler": self.sampler,
            "top": _arm_dict(self.top),
            "all": _arm_dict(self.all),
            "speedup": self.speedup,
        }


def _arm_dict(a: ArmCost) -> dict[str, Any]:
    return {
        "knobs": list(a.knobs),
        "trials_needed": list(a.trials_needed),
        "median_trials": a.median_trials,
        "reached": a.reached,
        "best": list(a.best),
    }


def compare_tuning_cost(
    space: KnobSpace,
    objective: Callable[[dict[str, Any]], float | None],
    top: Sequence[str],
    n_trials: int,
    *,
    seeds: Sequence[int] = (0, 1, 2),
    tolerance: float = 0.01,
    direction: Direction = "higher",
    allow_unsafe: bool = False,
    sampler: Literal["tpe", "random"] = "tpe",
) -> TuningCost:
    """Tune the ``top`` knobs and all knobs, once per seed, on the same ``objective``.

    The reference is the best value of any run; a run's cost is the number of trials
    until it first comes within ``tolerance`` (relative, of ``|reference|``) of it.

    >>> from assay.designs.knobs import KnobSpace, NumericKnob
    >>> space = KnobSpace(tuple(NumericKnob(f"k{i}", 0.0, 1.0, 0.0) for i in range(6)))
    >>> cost = compare_tuning_cost(space, lambda s: s["k0"], ["k0"], 25, seeds=[0], tolerance=0.05)
    >>> cost.top.reached
    1
    """
    if not 0 <= tolerance < 1:
        raise ValueError(f"tolerance must be in [0, 1), got {tolerance}")
    runs: dict[str, list[TuneResult]] = {"top": [], "all": []}
    for seed in seeds:
        for which, knobs in (("top", list(top)), ("all", None)):
            runs[which].append(
                tune(
                    space,
                    objective,
                    n_trials,
                    knobs=knobs,
                    direction=direction,
                    allow_unsafe=allow_unsafe,
                    seed=seed,
                    sampler=sampler,
                )
            )
    bests = [r.best_value for rs in runs.values() for r in rs if not math.isnan(r.best_value)]
    if not bests:
        raise ValueError("compare_tuning_cost: no tuning trial succeeded")
    reference = max(bests) if direction == "higher" else min(bests)
    slack = tolerance * abs(reference)
    target = reference - slack if direction == "higher" else reference + slack

    def cost(rs: list[TuneResult]) -> ArmCost:
        return ArmCost(
            knobs=rs[0].tuned,
            trials_needed=tuple(
                trials_to_reach([t.value for t in r.trials], target, direction) for r in rs
            ),
            best=tuple(r.best_value for r in rs),
        )

    return TuningCost(
        cost(runs["top"]),
        cost(runs["all"]),
        reference,
        target,
        tolerance,
        n_trials,
        direction,
        sampler,
    )


def surrogate_objective(
    space: KnobSpace,
    settings: Sequence[Mapping[str, Any]],
    y: npt.ArrayLike,
    *,
    n_trees: int = 300,
    seed: int = 0,
) -> Callable[[dict[str, Any]], float]:
    """A random forest of all knobs fitted on measured settings, as a tuning objective.

    Tuning it costs no measurement: use it to compare tuning top-k vs all knobs before
    spending live trials (its optimum is only as good as the samples behind it).

    >>> from assay.designs.knobs import KnobSpace, NumericKnob, latin_hypercube
    >>> space = KnobSpace((NumericKnob("x", 0.0, 1.0, 0.5),))
    >>> s = latin_hypercube(space, 40, seed=0)
    >>> f = surrogate_objective(space, s, [v["x"] for v in s], n_trees=20)
    >>> f({"x": 0.9}) > f({"x": 0.1})
    True
    """
    from assay.stats.importance import forest_model

    matrix = knob_matrix(space, settings)
    model = forest_model(matrix, n_trees=n_trees, seed=seed, oob=False)
    model.fit(matrix.values, np.asarray(y, dtype=np.float64))

    def predict(setting: dict[str, Any]) -> float:
        return float(model.predict(knob_matrix(space, [setting]).values)[0])

    return predict
