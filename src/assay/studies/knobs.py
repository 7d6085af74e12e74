"""Knob pre-selection (Kanellis et al., HotStorage 2020): which few knobs matter.

Live (:class:`KnobsRunner`, ``assay knobs STUDY.toml``):

1. Latin Hypercube samples of every knob (:func:`~assay.designs.knobs.latin_hypercube`),
   each measured once (the paper's design) through the study's store with
   :class:`~assay.studies.settings.SettingsRunner`, so an interrupted study resumes
   without measuring a sample twice.
2. Random-forest ranking per PI (and the objective), top-k R² curve, stability.
3. Validation: a second LHS that varies only the top-k knobs (others at defaults);
   how close its best comes to the best of the all-knob samples, per PI.
4. ``tune=N``: Optuna on the top-k knobs, each configuration measured; the best one
   measured 10 times more for its CI; the tuning cost against all knobs estimated on
   the forest model of the samples (no measurement).

Offline (:func:`samples_from_csv` then :func:`rank_samples`, ``assay knobs --from``):
the same ranking of settings measured elsewhere; tuning runs on the forest model.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from typing_extensions import Unpack

from assay.designs.knobs import (
    CategoricalKnob,
    KnobAnalysis,
    KnobSpace,
    analyze_knobs,
    infer_space,
    latin_hypercube,
    space_from_spec,
    validation_sample,
)
from assay.extras import require_extra
from assay.spec import KnobsSpec, Spec
from assay.stats.claims import JudgedClaim
from assay.stats.importance import KNOB_FORESTS, PIRanking
from assay.stats.objective import Objective, composite_score, parse_objective
from assay.store import Store, TrialRecord
from assay.studies.base import (
    CONFIG_KEY,
    StudyError,
    StudyOptions,
    failure_summary,
    open_stored,
    result_header,
    trial_failures,
    watch_report,
)
from assay.studies.kept import Kept, kept_or_made
from assay.studies.settings import (
    SettingsProgress,
    SettingsRunner,
    SettingsSession,
    judge_setting_claims,
    setting_key,
    trial_value,
)

if TYPE_CHECKING:
    from assay.designs.tune import TuneResult, TuningCost
    from assay.importers.csvdata import Measurements

Direction = Literal["higher", "lower"]

#: Trials of the tuner's best configuration measured again for its CI.
CONFIRM_TRIALS = 10


class KnobsInputError(ValueError):
    """Bad input for a knob study (a CSV, a metric, a knob name): one clear message."""


@dataclass
class KnobsProgress:
    """What the live display shows: a stage, and how far a batch of samples is."""

    stage: str
    done: int = 0
    total: int = 0
    failed: int = 0
    measuring: bool = False  # a batch of samples (done/total), else a stage line


@dataclass
class KnobsResult:
    """A knob study's ranking, and the tuning that followed it (if asked)."""

    analysis: KnobAnalysis
    tune: TuneResult | None = None
    cost: TuningCost | None = None
    tuned_on_model: bool = True  # --from: the tuner ran on the forest model, not the system
    warnings: list[str] = field(default_factory=list)
    not_measured: int = 0  # assay show: planned samples with no stored trial
    reading: Measurements | None = None  # --from: how the file was read
    study: str = ""  # the study's name ("" with --from: the file names the input)
    store: str = ""
    # a measured study's: where its trials ran (a cluster's hosts and roles) and what
    # the bottleneck watch saw (per host on a cluster); none with --from
    environment: dict[str, Any] = field(default_factory=dict)
    resources: dict[str, Any] | None = None
    # a measured study's trials: how many ended how, and the failed ones (as run's)
    trials_by_status: dict[str, int] = field(default_factory=dict)
    failures: list[dict[str, Any]] = field(default_factory=list)
    claims: list[JudgedClaim] = field(default_factory=list)  # [[claim]]: verdicts (#62)

    def as_dict(self) -> dict[str, Any]:
        """Everything, as plain data for ``--json``."""
        data = {
            **result_header("knobs"),
            "study": self.study,
            "store": self.store,
            **self.analysis.as_dict(),
        }
        if self.reading is not None:
            data["input"] = self.reading.as_dict()
        if self.environment or self.resources:
            data["environment"] = self.environment
            data["resources"] = self.resources
        if self.trials_by_status:
            data["trials"] = {
                "total": sum(self.trials_by_status.values()),
                "by_status": self.trials_by_status,
            }
            data["failures"] = self.failures
        data["warnings"] = list(self.warnings)
        data["claims"] = [c.as_dict() for c in self.claims]
        data["tune"] = None if self.tune is None else self.tune.as_dict()
        data["tuning_cost"] = None if self.cost is None else self.cost.as_dict()
        return data


def n_jobs(jobs: int | None) -> int:
    """CPU cores for the models: ``jobs`` when positive, else all."""
    return jobs if jobs is not None and jobs > 0 else (os.cpu_count() or 1)


@dataclass(frozen=True)
class KnobSamples:
    """Measured settings read from a CSV: the knob space, one setting per row and each
    metric's values (see :func:`samples_from_csv`)."""

    space: KnobSpace
    settings: list[dict[str, Any]]
    values: dict[str, np.ndarray]
    directions: dict[str, Direction]
    objective: Objective | None
    source: str
    reading: Measurements | None = None  # how the file was read: notes, left-out columns


def samples_from_csv(
    path: str,
    metrics: Sequence[str],
    *,
    knob_columns: Sequence[str] = (),
    unsafe: Sequence[str] = (),
    objective: str | None = None,
    repetitions: str | None = None,
    one_hot: str = "auto",
    drop_values: Sequence[float] = (),
) -> KnobSamples:
    """Read measured settings: ``metrics`` are ``PI[:higher|lower]`` columns; the knob
    columns are ``knob_columns``, or every column that is not a metric, an objective PI,
    nor a column that looks like a PI or a row id (see
    :func:`~assay.importers.knobs.read_samples_csv`).  :class:`KnobsInputError` (or the
    reader's ValueError) names what is wrong."""
    from assay.importers.knobs import metric_direction, read_samples_csv

    goal = parse_objective(objective) if objective else None
    if not metrics and goal is None:
        raise KnobsInputError(
            "--from needs at least one --metric NAME (a PI column of the CSV) or an --objective"
        )
    directions: dict[str, Direction] = {}
    for m in metrics:
        name, direction = metric_direction(m)
        directions[name] = "lower" if direction == "lower" else "higher"
    extra = list(goal.pis) if goal else []
    frame, values, reading = read_samples_csv(
        path,
        list(directions),
        knobs=knob_columns,
        extra=extra,
        repetitions=repetitions,
        one_hot=one_hot,
        drop_values=drop_values,
    )
    space = infer_space(frame, list(frame.columns))
    unknown = [u for u in unsafe if u not in space.names]
    if unknown:
        raise KnobsInputError(
            f"--unsafe {', '.join(unknown)}: not a knob column of {path} "
            f"(knobs: {', '.join(space.names)})"
        )
    if unsafe:
        space = KnobSpace(
            tuple(replace(k, unsafe=True) if k.name in unsafe else k for k in space.knobs)
        )
    settings = frame.to_dict("records")
    # categorical knobs were inferred from the text of the cells
    for s in settings:
        for k in space.knobs:
            if isinstance(k, CategoricalKnob):
                s[k.name] = str(s[k.name])
    return KnobSamples(space, settings, values, directions, goal, path, reading)


def _require_extras(tune: int | None) -> None:
    """scikit-learn (the forests) and, with ``tune``, Optuna: a
    :class:`~assay.extras.MissingExtra` naming the extra before anything is measured."""
    require_extra("sklearn", "models", KNOB_FORESTS)
    if tune:
        from assay.designs.tune import TUNING

        require_extra("optuna", "tune", TUNING)


def rank_samples(
    samples: KnobSamples,
    *,
    top_k: int = 5,
    trees: int = 300,
    seed: int = 0,
    rank_by: Literal["impurity", "permutation"] = "impurity",
    jobs: int | None = None,
    tune: int | None = None,
    allow_unsafe: bool = False,
    declared_knobs: Sequence[str] = (),
) -> KnobsResult:
    """Rank the knobs of measured settings; ``tune=N`` tunes the top-k (and all knobs,
    for the cost comparison) on a forest model of the samples, without measuring.

    A knob that alone explains more than 90% of the importance, and was not declared a
    knob (``declared_knobs``), is likely a measured PI: a warning says so.
    """
    _require_extras(tune)
    analysis = analyze_knobs(
        samples.space,
        samples.settings,
        {k: samples.values[k] for k in samples.directions},
        samples.directions,
        objective=samples.objective,
        top_k=top_k,
        n_trees=trees,
        seed=seed,
        by=rank_by,
        n_jobs=n_jobs(jobs),
        sources=(samples.source,),
    )
    warnings = [] if samples.reading is None else list(samples.reading.warnings)
    warnings += _outlier_warnings(samples)
    warnings += [
        f"{r.knobs[0].knob} alone explains {r.knobs[0].impurity:.0%} of the importance for "
        f"{r.pi}: if it is a measured PI rather than a knob, name it with --metric, or list "
        "the knob columns with --knob"
        for r in analysis.rankings
        if r.knobs[0].impurity > 0.9 and r.knobs[0].knob not in declared_knobs
    ]
    result = KnobsResult(
        analysis, warnings=warnings, reading=samples.reading, study=f"knobs --from {samples.source}"
    )
    if tune:
        y = (
            composite_score(analysis.objective, samples.values)
            if analysis.objective is not None
            else samples.values[analysis.primary.pi]
        )
        result.tune, result.cost = _tuning_cost(
            analysis,
            samples.settings,
            y,
            tune,
            trees=trees,
            seed=seed,
            allow_unsafe=allow_unsafe,
            tune_on_model=True,
        )
    return result


#: The study values keeping the forests' rankings and the settings of the designs
#: (see :mod:`assay.studies.kept`).
RANKINGS_KEY, SAMPLES_KEY, VALIDATION_KEY = "knob_rankings", "knob_samples", "knob_validation"


def _settings(value: Any) -> list[dict[str, Any]]:
    """Kept settings, checked: a list of settings (the store is data)."""
    if not isinstance(value, list) or not all(isinstance(s, dict) for s in value):
        raise ValueError("not a list of settings")
    return value


def _outlier_warnings(samples: KnobSamples) -> list[str]:
    """A warning for each numeric knob with values far outside the rest (see
    :func:`~assay.stats.importance.extreme_values`)."""
    from assay.stats.importance import extreme_values

    out: list[str] = []
    for k in samples.space.knobs:
        if isinstance(k, CategoricalKnob):
            continue
        a = np.array([float(s[k.name]) for s in samples.settings])
        count, worst = extreme_values(a)
        if count:
            q1, q3 = np.percentile(a, [25, 75])
            out.append(
                f"{k.name}: {count} value(s) ({count / a.size:.1%}) lie far outside the rest "
                f"(up to {worst:.4g}; the middle half is {q1:.4g}..{q3:.4g}): sentinel or "
                "wrong values? The forest ranks values by order, so they do not distort the "
                "ranking, but check them"
            )
    return out


def _tuning_cost(
    analysis: KnobAnalysis,
    settings: Sequence[Mapping[str, Any]],
    y: np.ndarray,
    trials: int,
    *,
    trees: int,
    seed: int,
    allow_unsafe: bool,
    tune_on_model: bool = False,
) -> tuple[TuneResult | None, TuningCost]:
    """How many trials tuning the top-k and all knobs each need, estimated on a forest
    model of the samples; with ``tune_on_model``, the top-k tuned on that model too."""
    from assay.designs.tune import compare_tuning_cost, surrogate_objective, tune

    primary = analysis.primary
    model = surrogate_objective(analysis.space, settings, y, n_trees=trees, seed=seed)
    result = None
    if tune_on_model:
        result = tune(
            analysis.space,
            model,
            trials,
            knobs=list(primary.top),
            direction=primary.direction,
            allow_unsafe=allow_unsafe,
            seed=seed,
        )
    cost = compare_tuning_cost(
        analysis.space,
        model,
        list(primary.top),
        trials,
        seeds=[seed, seed + 1, seed + 2],
        direction=primary.direction,
        allow_unsafe=allow_unsafe,
    )
    return result, cost


class KnobsRunner:
    """Runs a study's ``[[knob]]`` pre-selection (see the module docstring)."""

    def __init__(
        self,
        spec: Spec,
        store_path: Path,
        config: KnobsSpec,
        *,
        tune: int | None = None,
        jobs: int | None = None,
        on_progress: Callable[[KnobsProgress], None] | None = None,
        **options: Unpack[StudyOptions],
    ) -> None:
        if not spec.knob_specs:
            raise ValueError(f"{spec.source_path}: the study file has no [[knob]] entries")
        if tune:
            _require_extras(tune)  # before anything is measured
        self.spec = spec
        self.store_path = store_path
        self.config = config
        self.objective = parse_objective(config.objective) if config.objective else None
        self.space = space_from_spec(spec)
        self.tune = tune
        self.jobs = jobs
        self.directions: dict[str, Direction] = {p.name: p.direction for p in spec.pis}
        self.runner = SettingsRunner(spec, store_path, seed=config.seed, **options)
        self.on_progress = on_progress

    def _stage(self, line: str) -> None:
        if self.on_progress is not None:
            self.on_progress(KnobsProgress(line))

    def run(self) -> KnobsResult:
        _require_extras(self.tune)  # before anything is measured
        result = self.runner.session(self._body)
        result.tuned_on_model = False
        leftover = [self.runner.leftover] if self.runner.leftover else []
        result.warnings[:0] = [*leftover, *self.runner.step_notes]
        return result

    def _measured(
        self, session: SettingsSession, settings: list[dict[str, Any]], what: str
    ) -> tuple[list[dict[str, Any]], dict[str, np.ndarray]]:
        """Measure each setting once; the settings that succeeded and their PI values."""

        def progress(p: SettingsProgress) -> None:
            if self.on_progress is not None:
                self.on_progress(KnobsProgress(what, p.done, p.total, p.failed, measuring=True))

        session.measure(settings, 1, on_progress=progress)
        return self._values(session, settings)

    def _values(
        self, session: SettingsSession, settings: list[dict[str, Any]]
    ) -> tuple[list[dict[str, Any]], dict[str, np.ndarray]]:
        """The settings whose stored trial succeeded, and their PI values."""
        by_key = {setting_key(t.setting): t for t in session.trials}
        ok = [s for s in settings if (t := by_key.get(session.key(s))) is not None and t.ok]
        values = {
            pi.name: np.array([trial_value(pi, by_key[session.key(s)]) for s in ok])
            for pi in self.spec.pis
        }
        return ok, values

    def _samples(self, kept: Kept) -> list[dict[str, Any]]:
        """The all-knob Latin Hypercube samples (as the store keeps them: see
        :func:`_kept_design`)."""
        n, seed = self.config.samples, self.config.seed
        return kept_or_made(
            kept, SAMPLES_KEY, [repr(self.space), n, seed],
            lambda: latin_hypercube(self.space, n, seed=seed), list, _settings,
        )  # fmt: skip

    def _rank(
        self,
        samples: list[dict[str, Any]],
        ok: list[dict[str, Any]],
        metrics: dict[str, Any],
        kept: Kept,
        trials: Sequence[TrialRecord] = (),
    ) -> KnobAnalysis:
        """The random-forest ranking of the successful samples (at least 10); ``trials``
        (the stored ones) say why the others failed.  The rankings the study's store
        keeps for these samples (``kept``: the store and the study's id) are read, not
        fitted again; rankings fitted in a store opened for writing are kept in it."""
        if len(ok) < 10:
            why = failure_summary(trials)
            raise StudyError(
                f"only {len(ok)} of {len(samples)} samples succeeded; the ranking needs at "
                f"least 10{'; ' + why if why else ''} ('assay export' lists every trial "
                "with its error)"
            )
        rankings = kept_or_made(
            kept, RANKINGS_KEY, self._fitted_on(ok, metrics),
            lambda: self._fit(ok, metrics).rankings,
            lambda rs: [r.as_dict() for r in rs],
            lambda rows: tuple(PIRanking.from_dict(r) for r in rows),
        )  # fmt: skip
        return KnobAnalysis(
            self.space, len(ok), rankings, self.objective, (), (str(self.store_path),)
        )

    def _fit(self, ok: list[dict[str, Any]], metrics: dict[str, Any]) -> KnobAnalysis:
        """The random forests' ranking of the samples ``ok``."""
        cfg = self.config
        _require_extras(None)
        # the forests take a while (a minute for 100 samples on 2 cores)
        self._stage(f"ranking the knobs: random forests on {len(ok)} samples…")
        return analyze_knobs(
            self.space,
            ok,
            metrics,
            self.directions,
            objective=self.objective,
            top_k=cfg.top_k,
            n_trees=cfg.trees,
            seed=cfg.seed,
            by=cfg.rank_by,
            n_jobs=n_jobs(self.jobs),
            sources=(str(self.store_path),),
        )

    def _fitted_on(self, ok: list[dict[str, Any]], metrics: dict[str, Any]) -> list[Any]:
        """Everything the rankings depend on: the knobs, the samples, their values and
        the ranking's options; not the number of jobs (a seeded forest is the same on
        any number)."""
        cfg = self.config
        values = {pi: [float(x) for x in np.asarray(v, dtype=float)] for pi, v in metrics.items()}
        return [
            repr(self.space), ok, values, self.directions, str(self.objective),
            cfg.top_k, cfg.trees, cfg.seed, cfg.rank_by,
        ]  # fmt: skip

    def _validation(self, analysis: KnobAnalysis, kept: Kept) -> list[dict[str, Any]]:
        """The validation samples: only the top-k knobs varied."""
        cfg = self.config
        n_val = cfg.validation_samples or max(10, cfg.samples // 4)
        top, seed = list(analysis.primary.top), cfg.seed + 1
        return kept_or_made(
            kept, VALIDATION_KEY, [repr(self.space), top, n_val, seed],
            lambda: validation_sample(self.space, top, n_val, seed=seed), list, _settings,
        )  # fmt: skip

    def _validated(
        self,
        analysis: KnobAnalysis,
        metrics: dict[str, Any],
        val: tuple[list[dict[str, Any]], dict[str, np.ndarray]],
    ) -> KnobAnalysis:
        if not val[0]:
            return analysis
        from assay.stats.importance import validation_summary

        return analysis.with_validation(validation_summary(metrics, val[1], self.directions))

    def _body(self, session: SettingsSession) -> KnobsResult:
        st = session.open_study
        # what the ranking ran with (options may override the study file): for assay show
        st.store.set_study_value(st.study_id, CONFIG_KEY, self.config.model_dump(mode="json"))
        samples = self._samples((st.store, st.study_id))
        ok, metrics = self._measured(session, samples, "all-knob LHS samples")
        analysis = self._rank(samples, ok, metrics, (st.store, st.study_id), session.trials)
        val_settings = self._validation(analysis, (st.store, st.study_id))
        val = self._measured(session, val_settings, "top-k validation samples")
        analysis = self._validated(analysis, metrics, val)
        if self.spec.claims:  # each named setting measured claim_repetitions times
            self._measure_claimed(session)
        result = KnobsResult(
            analysis,
            tuned_on_model=False,
            study=self.spec.study.name,
            store=str(self.store_path),
            claims=self._judge_claims(session, session.trials),
        )
        if self.tune:
            result.tune, result.cost = self._tune_live(session, analysis, ok, metrics)
        self._where(result, session.trials, st.environment)
        return result

    def _where(
        self, result: KnobsResult, trials: list[TrialRecord], environment: dict[str, Any]
    ) -> None:
        """Where the samples ran and what the bottleneck watch saw, with its warnings."""
        watch, result.resources = watch_report(self.spec, trials)
        result.warnings.extend(watch)
        result.environment = environment
        result.trials_by_status = dict(sorted(Counter(t.status for t in trials).items()))
        result.failures = trial_failures(trials)

    def stored(self) -> KnobsResult:
        """The ranking and validation of the stored samples, as at the end of :meth:`run`
        (no tuning, no measurement, nothing written to the store)."""
        with Store(self.store_path, read_only=True) as store:
            st = open_stored(store, self.spec.study.name)
            session = SettingsSession(self.runner, st, self.config.seed)
            samples = self._samples((store, st.study_id))
            ok, metrics = self._values(session, samples)
            analysis = self._rank(samples, ok, metrics, (store, st.study_id), st.trials)
            val_settings = self._validation(analysis, (store, st.study_id))
            analysis = self._validated(analysis, metrics, self._values(session, val_settings))
            keys = {setting_key(t.setting) for t in st.trials}
            missing = [s for s in [*samples, *val_settings] if session.key(s) not in keys]
            result = KnobsResult(
                analysis,
                tuned_on_model=False,
                not_measured=len(missing),
                study=self.spec.study.name,
                store=str(self.store_path),
                claims=self._judge_claims(session, st.trials),
            )
            self._where(result, st.trials, st.environment)
            return result

    def _claimed(self) -> list[dict[str, Any]]:
        """The settings the claims name, each once: the knobs a claim gives at its values,
        the others at their defaults."""
        out: dict[str, dict[str, Any]] = {}
        for claim in self.spec.claims:
            for side in claim.ratio:
                if isinstance(side, dict):
                    full = {**self.space.defaults(), **side}
                    out.setdefault(setting_key(full), full)
        return list(out.values())

    def _measure_claimed(self, session: SettingsSession) -> None:
        def progress(p: SettingsProgress) -> None:
            if self.on_progress is not None:
                what = "the settings the claims name"
                self.on_progress(KnobsProgress(what, p.done, p.total, p.failed, measuring=True))

        session.measure(self._claimed(), self.config.claim_repetitions, on_progress=progress)

    def _judge_claims(
        self, session: SettingsSession, trials: Sequence[TrialRecord]
    ) -> list[JudgedClaim]:
        """Each claim on the readings of its two settings' repetitions."""
        defaults = self.space.defaults()
        return judge_setting_claims(
            self.spec.claims,
            trials,
            lambda setting: session.key({**defaults, **setting}),
            self.spec.pis[0].name,
            self.spec.stop.confidence,
            "not measured (the study stopped before the settings the claims name)",
        )

    def _tune_live(
        self,
        session: SettingsSession,
        analysis: KnobAnalysis,
        samples: list[dict[str, Any]],
        metrics: Mapping[str, np.ndarray],
    ) -> tuple[TuneResult, TuningCost]:
        """Optuna on the top-k knobs, every configuration measured in the study's store."""
        from assay.stats.intervals import t_interval

        cfg = self.config
        primary = analysis.primary
        pis = {p.name: p for p in self.spec.pis}
        trials = self.tune or 1
        n_tuned = 0

        def readings(setting: dict[str, Any], reps: int) -> list[dict[str, float]]:
            got = session.measure([setting], reps)
            return [{n: trial_value(p, t) for n, p in pis.items()} for t in got]

        def measure_one(setting: dict[str, Any]) -> Any:
            nonlocal n_tuned
            r = readings(setting, 1)[0]
            n_tuned += 1
            self._stage(f"tuning the top-k: trial {n_tuned}/{trials}")
            if self.objective is not None:
                return r
            v = r[primary.pi]
            return None if math.isnan(v) else v

        from assay.designs.tune import tune

        result = tune(
            self.space,
            measure_one,
            trials,
            knobs=list(primary.top),
            goal=self.objective,
            direction=primary.direction,
            allow_unsafe=cfg.allow_unsafe,
            seed=cfg.seed,
        )
        if result.best is not None:
            self._stage(f"measuring the tuner's best configuration {CONFIRM_TRIALS} more times…")
            # the tuner's best is one reading, the maximum of many noisy ones: measure it again
            again = [
                r[primary.pi] for r in readings(dict(result.best.setting), CONFIRM_TRIALS + 1)[1:]
            ]
            finite = [v for v in again if math.isfinite(v)]
            if len(finite) >= 2:
                ci = t_interval(finite)
                confirmed = {
                    "pi": primary.pi,
                    "unit": pis[primary.pi].unit,
                    "n": len(finite),
                    "mean": ci.mean,
                    "half_width": ci.half_width,
                    "confidence": ci.confidence,
                }
                result = replace(result, confirmed=confirmed)
        self._stage("estimating the tuning cost (top-k vs all knobs) on the forest model…")
        y = (
            composite_score(self.objective, metrics)
            if self.objective is not None
            else metrics[primary.pi]
        )
        _, cost = _tuning_cost(
            analysis,
            samples,
            y,
            trials,
            trees=cfg.trees,
            seed=cfg.seed,
            allow_unsafe=cfg.allow_unsafe,
        )
        return result, cost
