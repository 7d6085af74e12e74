"""Running a sweep (extensive evaluation, Hui et al. §3): incremental sampling until the
model predicts held-out settings.

:class:`~assay.designs.sweep.IncrementalSampling` decides which settings to measure
next and when to stop; :class:`~assay.studies.settings.SettingsRunner` measures each
setting ``repetitions`` times and commits every trial as it ends.  The loop starts
from what the store holds, so running the same study again continues it; the steps
(sampling rate and the validation R² of each split) are recorded in the store.

The design is given one row per trial (:func:`measured_trials`, with ``transform``
applied to each trial): it averages a setting's repetitions to sample and evaluate,
and its analysis uses them as replicates (the pure error).  A grid no bigger than the
first batch is measured whole at once and analysed as a designed experiment
(:attr:`~assay.designs.sweep.IncrementalSampling.whole_grid`).
"""

from __future__ import annotations

import dataclasses
import math
import os
import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from typing_extensions import Unpack

from assay.designs.space import ParameterSpace, SpaceError
from assay.designs.sweep import (
    Analysis,
    IncrementalSampling,
    Mismatch,
    PointsMemo,
    StepResult,
    Summary,
    SystemComparison,
    compare_systems,
    setting_intervals,
    simulate,
    summarise,
)
from assay.execute.executor import LocalExecutor
from assay.execute.monitor import DISTURBED_CORES
from assay.spec import PISpec, Spec, SweepSpec
from assay.stats.claims import JudgedClaim
from assay.stats.trends import ImportantPoint
from assay.store import Store, TrialRecord
from assay.studies.base import (
    StudyOptions,
    bookkeeping_median,
    bookkeeping_per_trial,
    open_stored,
    others_during,
    result_header,
    setting_host_warnings,
    trial_failures,
    watch_report,
    with_quiet_waits,
)
from assay.studies.kept import Kept, kept_or_made
from assay.studies.settings import (
    SettingsProgress,
    SettingsRunner,
    SettingsSession,
    judge_setting_claims,
    setting_key,
    trials_table,
)
from assay.values import plain

#: The key under which a sweep's steps are stored.
STEPS_KEY = "sweep_steps"
#: The key under which every batch a sweep asked for is stored, before it is measured.
BATCHES_KEY = "sweep_batches"
#: The key under which a sweep stopped on a busy machine keeps what it saw (BusyMachine).
BUSY_KEY = "sweep_busy"

#: A sweep on a busy machine stops within this share of its settings (issue #58).
BUSY_WITHIN = 0.25
#: Runnable tasks per core (the 1-minute load average) from which the machine is busy:
#: a CPU-bound benchmark then gets at most half the CPU it would have alone.
BUSY_LOAD_PER_CORE = 2.0
#: ... and the share of the watched trials other processes disturbed (used
#: DISTURBED_CORES or more of the CPU during them): the load is not the benchmark's own.
BUSY_DISTURBED = 0.5


@dataclass(frozen=True)
class BusyMachine:
    """What a sweep saw of a busy machine within the first quarter of its settings."""

    load: float  # the 1-minute load average when it was judged
    cores: int
    disturbed: int  # watched trials during which other processes used DISTURBED_CORES+
    watched: int
    others_cores: float  # the median of the cores other processes used during a trial

    @property
    def load_per_core(self) -> float:
        return self.load / self.cores

    @property
    def busy(self) -> bool:
        return (
            self.load_per_core >= BUSY_LOAD_PER_CORE
            and self.watched > 0
            and self.disturbed >= BUSY_DISTURBED * self.watched
        )

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @staticmethod
    def from_dict(d: dict[str, Any]) -> BusyMachine:
        return BusyMachine(
            float(d["load"]),
            int(d["cores"]),
            int(d["disturbed"]),
            int(d["watched"]),
            float(d["others_cores"]),
        )


def busy_machine(load: float, cores: int, others: Sequence[float]) -> BusyMachine:
    """What the load average and the watched trials' others' cores say of the machine.

    Both must say busy: a load of twice the cores or more (a CPU-bound benchmark gets at
    most half a core's time for each second it wants one) and other processes using
    half a core or more in at least half the watched trials (so that a benchmark with
    many threads of its own, which raises the load alone, is not taken for a busy
    machine).

    >>> busy_machine(5.2, 2, [1.6, 1.5, 0.2, 1.7]).busy
    True
    >>> busy_machine(3.1, 2, [1.3, 1.2]).busy  # two busy loops beside it: on
    False
    >>> busy_machine(8.0, 2, [0.0, 0.1]).busy  # its own threads: not others'
    False
    """
    known = [x for x in others if math.isfinite(x)]
    return BusyMachine(
        load=load,
        cores=max(1, cores),
        disturbed=sum(1 for x in known if x >= DISTURBED_CORES),
        watched=len(known),
        others_cores=statistics.median(known) if known else math.nan,
    )


def busy_advice(b: BusyMachine, where: str, threshold: float) -> str:
    """The reason a sweep gives when it stops on a busy machine: what it saw, what
    measuring on would cost, and what would help."""
    share = min(100.0, 100.0 / b.load_per_core)
    return (
        f"stopped after {where}, within the first quarter: the machine is busy (a load of "
        f"{b.load:.1f} on {b.cores} core{'s' if b.cores != 1 else ''}: a CPU-bound benchmark "
        f"gets about {share:.0f}% of the CPU it would have alone; other processes used "
        f"{DISTURBED_CORES:g} core or more in {b.disturbed} of {b.watched} watched trials, "
        f"median {b.others_cores:.1f} cores). Reaching R² {threshold:g} here would take "
        "over three times as long as on a quiet machine (each trial slower, and more "
        "settings for the noise), so the answer below is provisional. What would help: a "
        "quieter machine (run when the other jobs are done); '--busy continue' to measure "
        "on anyway (it resumes from the settings measured); '--interference wait' when "
        "the load comes and goes"
    )


def space_from_spec(spec: Spec) -> ParameterSpace:
    """The parameter space of a study file's ``[sweep]`` section.

    Constraint errors name the field (``sweep.constraints[1]``).

    >>> from assay.spec import parse_spec_text
    >>> spec = parse_spec_text('''
    ... [study]
    ... name = "s"
    ... [benchmark]
    ... command = ["echo", "{workers}", "{locks}"]
    ... [sweep]
    ... constraints = ["locks < workers"]
    ... [sweep.params]
    ... workers = [1, 2, 4]
    ... locks = [1, 2]
    ... ''')
    >>> space_from_spec(spec).size
    3
    """
    if spec.sweep is None:
        raise SpaceError(f"{spec.source_path or 'the study file'}: has no [sweep] section")
    return spec.sweep.space()


def measured_settings(
    trials: Sequence[TrialRecord],
    params: Sequence[str],
    pi: PISpec,
    inside: AbstractSet[str],
) -> pd.DataFrame:
    """The settings measured so far whose :func:`setting_key` is in ``inside`` (the
    space's), one row each, with ``pi``'s mean over their successful repetitions (NaN
    when every repetition failed).

    Trials of settings outside the space (the space was changed) are left out.
    """
    table = trials_table(trials, params, [pi])
    if table.empty:
        return pd.DataFrame(columns=[*params, pi.name])
    means = table.groupby(list(params), sort=False, dropna=False)[pi.name].mean().reset_index()
    keep = [setting_key(r) in inside for r in means[list(params)].to_dict("records")]
    return means[keep].reset_index(drop=True)


def measured_trials(
    trials: Sequence[TrialRecord],
    params: Sequence[str],
    pi: PISpec,
    inside: AbstractSet[str],
) -> pd.DataFrame:
    """One row per trial of the settings whose :func:`setting_key` is in ``inside``:
    the parameters and ``pi``'s value (NaN for a failed trial), in the order run.

    Trials of settings outside the space (the space was changed) are left out.
    """
    table = trials_table(trials, params, [pi])
    if table.empty:
        return pd.DataFrame(columns=[*params, pi.name])
    keep = [setting_key(r) in inside for r in table[list(params)].to_dict("records")]
    return table.loc[keep, [*params, pi.name]].reset_index(drop=True)


def transformed(frame: pd.DataFrame, metric: str, transform: str) -> pd.DataFrame:
    """``frame`` with ``metric`` as the models see it: unchanged, or its natural log
    (``transform="log"``: effects that multiply, such as a knob that doubles throughput
    at every other setting, become additive, as ANOVA assumes).

    >>> f = pd.DataFrame({"w": [1, 2], "tps": [10.0, 100.0]})
    >>> transformed(f, "tps", "log")["tps"].round(3).tolist()
    [2.303, 4.605]
    >>> try:
    ...     transformed(pd.DataFrame({"tps": [1.0, 0.0]}), "tps", "log")
    ... except ValueError as exc:
    ...     print(str(exc)[:61])
    transform = "log": tps must be positive, but 1 value is <= 0;
    """
    if transform == "none" or metric not in frame.columns:
        return frame
    if transform != "log":
        raise ValueError(f'transform = "{transform}": expected "none" or "log"')
    values = pd.to_numeric(frame[metric], errors="coerce").to_numpy(float)
    bad = int(np.sum(values <= 0))
    if bad:
        raise ValueError(
            f'transform = "log": {metric} must be positive, but {bad} value'
            f"{' is' if bad == 1 else 's are'} <= 0; analyse it without the transform"
        )
    with np.errstate(invalid="ignore"):
        logged = np.log(values)
    return frame.assign(**{metric: logged})


def analysed_name(metric: str, transform: str) -> str:
    """How the analysed quantity is named in reports: ``tps`` or ``log(tps)``.

    >>> analysed_name("tps", "log")
    'log(tps)'
    """
    return f"log({metric})" if transform == "log" else metric


@dataclass
class SweepProgress:
    """What the live display shows: the last step and the batch being measured."""

    steps: list[StepResult]
    n_candidates: int
    batch_done: int = 0
    batch_total: int = 0
    failed: int = 0
    # trials the rest of the space (up to max_settings) would take, this batch's included:
    # the most the loop can still run
    trials_left_max: int = 0


def lost_settings(
    failures: list[dict[str, Any]], measured: pd.DataFrame, params: list[str], pi: str
) -> list[dict[str, Any]]:
    """The settings (their parameters' values) that have failed trials and no valid
    one (no finite mean of ``pi`` in ``measured``), in the order their first failure
    came.

    >>> f = [{"setting": {"x": 2, "repetition": r}} for r in (0, 1)]
    >>> m = pd.DataFrame({"x": [1, 2, 3], "t": [1.0, float("nan"), 3.0]})
    >>> lost_settings(f + [{"setting": {"x": 3, "repetition": 0}}], m, ["x"], "t")
    [{'x': 2}]
    """
    have: set[tuple[str, ...]] = set()
    if len(measured) and {*params, pi} <= set(measured.columns):
        valid = measured[np.isfinite(measured[pi].astype(float))]
        have = {tuple(str(v) for v in row) for row in valid[params].itertuples(index=False)}
    lost: dict[tuple[str, ...], dict[str, Any]] = {}
    for f in failures:
        setting = f.get("setting") or {}
        if not all(p in setting for p in params):
            continue
        key = tuple(str(setting[p]) for p in params)
        if key not in have:
            lost.setdefault(key, {p: setting[p] for p in params})
    return list(lost.values())


@dataclass
class SweepResult:
    """Everything a report needs about a finished (or stopped) sweep."""

    study: str
    store: str
    space: str  # the space described: parameters, grid and constrained sizes
    params: list[str]
    pi: PISpec
    steps: list[StepResult]
    reason: str
    measured: pd.DataFrame  # one row per measured setting: parameters and the PI's mean
    analysis: Analysis | None
    summary: Summary | None
    trials_total: int
    trials_by_status: dict[str, int] = field(default_factory=dict)
    failures: list[dict[str, Any]] = field(default_factory=list)
    elapsed_s: float = 0.0
    bookkeeping_s_per_trial: float | None = None
    bookkeeping_s_median: float | None = None  # the typical own cost between trials
    environment: dict[str, Any] = field(default_factory=dict)
    resumed_trials: int = 0
    warnings: list[str] = field(default_factory=list)
    resources: dict[str, Any] | None = None
    sources: list[str] = field(default_factory=list)  # --from: the files read
    levels: dict[str, list[Any]] = field(default_factory=dict)  # each parameter's values, in order
    transform: str = "none"  # "log": the models were fitted to log(PI)
    # --from: where the simulated sampling and the analysis of all the data disagree
    mismatch: Mismatch | None = None
    comparison: SystemComparison | None = None  # --from --against: a second system
    # significant terms explaining at least this share of the variance are "material"
    min_share: float = 0.01
    mismatch_material: Mismatch | None = None  # --from: the mismatch over material terms
    notes: list[str] = field(default_factory=list)  # --from: what was done to the data
    reading: dict[str, Any] | None = None  # --from: how the file was read
    # one row per measured setting, sorted by setting in the order of the parameters'
    # values: the PI's mean and its t interval over the repetitions (setting_intervals)
    settings: pd.DataFrame = field(default_factory=pd.DataFrame)
    busy: BusyMachine | None = None  # what a sweep stopped on a busy machine saw
    claims: list[JudgedClaim] = field(default_factory=list)  # [[claim]]: verdicts (#62)

    @property
    def lost_settings(self) -> list[dict[str, Any]]:
        """The settings whose every trial failed: left out of the analysis."""
        return lost_settings(self.failures, self.measured, self.params, self.pi.name)

    @property
    def material(self) -> list[str]:
        """The significant terms that explain at least ``min_share`` of the variance."""
        if self.analysis is None:
            return []
        return [r.name for r in self.analysis.significant if r.pct_var >= 100 * self.min_share]

    def as_dict(self) -> dict[str, Any]:
        return (
            {
                **result_header("sweep"),
                "study": self.study,
                "store": self.store,
                "space": self.space,
                "params": self.params,
                "pi": {"name": self.pi.name, "unit": self.pi.unit, "direction": self.pi.direction},
                "reason": self.reason,
                "steps": [s.to_dict() for s in self.steps],
                "analysis": None if self.analysis is None else self.analysis.to_dict(),
                "summary": None if self.summary is None else self.summary.to_dict(),
                "settings_measured": len(self.measured),
                "settings_lost": self.lost_settings,
                "settings": [
                    {str(k): _json_value(v) for k, v in r.items()}
                    for r in self.settings.to_dict("records")
                ],
                "trials": {
                    "total": self.trials_total,
                    "by_status": self.trials_by_status,
                    "resumed": self.resumed_trials,
                },
                "failures": self.failures,
                "measured_time_s": self.elapsed_s,
                "bookkeeping_s_per_trial": self.bookkeeping_s_per_trial,
                "bookkeeping_s_median": self.bookkeeping_s_median,
                "environment": self.environment,
                "warnings": self.warnings,
                "resources": self.resources,
                "sources": self.sources,
                "transform": self.transform,
                "busy": None if self.busy is None else self.busy.as_dict(),
                "claims": [c.as_dict() for c in self.claims],
            }
            | {"min_share": self.min_share, "significant_material": self.material}
            | ({} if self.mismatch is None else {"mismatch": self.mismatch.to_dict()})
            | (
                {}
                if self.mismatch_material is None
                else {"mismatch_material": self.mismatch_material.to_dict()}
            )
            | ({} if self.reading is None else {"input": self.reading, "notes": self.notes})
            | ({} if self.comparison is None else {"comparison": self.comparison.to_dict()})
        )


@dataclass(frozen=True)
class KeptSweep:
    """A stored sweep as its report page reads it where the store keeps what ``assay
    show`` prints for these very trials (:func:`assay.studies.stored.kept_shown`): the
    result's JSON as kept, and the tables its plots draw, made again from the trials.
    The ANOVA, its held-out R², its important points and the watch's summaries are not
    computed again: they are in the JSON (a sweep's page cost 3.6 times its ``assay
    show``, #60).  The page reads its attributes as a :class:`SweepResult`'s."""

    study: str
    params: list[str]
    pi: PISpec
    steps: list[StepResult]
    measured: pd.DataFrame
    settings: pd.DataFrame
    levels: dict[str, list[Any]]
    transform: str
    environment: dict[str, Any]
    doc: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        """The result's JSON as the store keeps it."""
        return self.doc


def kept_doc_readable(doc: dict[str, Any]) -> bool:
    """Whether a kept sweep result's JSON has the shape its report page reads (the
    steps, the ANOVA's terms, the important points): the store is data, and a page of
    a JSON that has not is made from the analysis of the trials again."""

    def num(x: Any) -> bool:
        return isinstance(x, int | float) and not isinstance(x, bool)

    def of(x: Any, kind: type) -> list[Any]:
        return x if isinstance(x, list) and all(isinstance(v, kind) for v in x) else []

    steps = doc.get("steps")
    if not isinstance(steps, list) or len(of(steps, dict)) != len(steps):
        return False
    for d in steps:
        r2 = [x for k in ("r2", "r2_main") for x in (d.get(k) or [])]
        if not (num(d.get("step")) and num(d.get("n_measured"))):
            return False
        if not all(x is None or num(x) for x in r2):
            return False
    analysis = doc.get("analysis")
    if analysis is None:
        return True
    if not isinstance(analysis, dict) or not num(analysis.get("alpha", 0.05)):
        return False
    anova = analysis.get("anova") or {}
    terms = anova.get("terms") or [] if isinstance(anova, dict) else None
    points = analysis.get("important_points") or []
    if not isinstance(terms, list) or len(of(terms, dict)) != len(terms):
        return False
    if not isinstance(points, list) or len(of(points, dict)) != len(points):
        return False
    return all(
        "term" in t and (t.get("p") is None or num(t["p"])) for t in terms
    ) and all(
        isinstance(p.get("param"), str) and isinstance(p.get("kind"), str)
        and num(p.get("value")) and (p.get("support") is None or num(p["support"]))
        and (p.get("fixed") is None or (isinstance(p["fixed"], list) and len(p["fixed"]) == 2))
        for p in points
    )  # fmt: skip


def _json_value(v: Any) -> Any:
    """A value as JSON has it: NumPy scalars as Python ones, NaN and ±inf as ``None``."""
    v = plain(v)
    return None if isinstance(v, float) and not math.isfinite(v) else v


def stop_reason(
    step: StepResult | None,
    threshold: float,
    timed_out: bool,
    busy: BusyMachine | None = None,
) -> str:
    """The sentence that says why the sweep ended (``busy``: what a sweep stopped on a
    busy machine saw)."""
    if step is None:
        return "stopped before the first step" + (" (time budget spent)" if timed_out else "")
    r2 = f"min validation R² {step.r2_min:.3f}" if math.isfinite(step.r2_min) else "no R²"
    where = f"{step.n_measured} of {step.n_candidates} settings ({step.sampling_rate:.1%})"
    if step.reason == "r2":
        return f"done: all {len(step.r2)} validation R² ≥ {threshold:g} after {where}"
    if step.reason == "grid":
        return (
            f"done: the whole grid of {step.n_candidates} settings measured at once and "
            "analysed as a designed experiment (a grid this small has no meaningful "
            "held-out R²)"
        )
    if step.reason == "exhausted":
        return f"every setting measured ({where}); {r2} < {threshold:g}"
    if step.reason == "budget":
        return f"budget spent: {where}; {r2} < {threshold:g}"
    if step.reason == "ceiling":
        est, low, high = step.ceiling
        return (
            f"stopped after {where}: the repetitions disagree too much for any model to "
            f"reach R² {threshold:g}: the noise between them caps it at {est:.2f} "
            f"[{low:.2f}, {high:.2f}] (the share of the setting means' variance that is "
            "not noise); measure on a quieter machine, with more repetitions, or with a "
            "lower [sweep] r2"
        )
    if step.reason == "busy" and busy is not None:
        return busy_advice(busy, where, threshold)
    if timed_out:
        return f"time budget spent: {where}; {r2} < {threshold:g}"
    return f"stopped: {where}; {r2}"


def _load_average() -> float:
    """The machine's 1-minute load average (NaN where the system has none)."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return math.nan


#: The study value keeping the important points of the sweep's analysis with their
#: support (see :mod:`assay.studies.kept`): the resamples, and kneed's and SciPy's
#: imports, would cost a stored report a second or more.
POINTS_KEY = "sweep_points"


def _kept_points(kept: Kept) -> PointsMemo:
    """The memo :func:`~assay.designs.sweep.analyse` takes: the important points read
    from the study's store when it keeps them for the same effects and data."""

    def memo(
        made_from: Sequence[Any], make: Callable[[], list[ImportantPoint]]
    ) -> list[ImportantPoint]:
        return kept_or_made(
            kept, POINTS_KEY, made_from, make,
            lambda found: [p.as_record() for p in found],
            lambda rows: [ImportantPoint.from_record(r) for r in rows],
        )  # fmt: skip

    return memo


def stored_steps(store: Store, study_id: int) -> list[StepResult]:
    """The steps a sweep recorded in the store, every session's."""
    return [StepResult.from_dict(dict(s)) for s in store.study_value(study_id, STEPS_KEY) or []]


class SweepRunner:
    """Runs a study's ``[sweep]`` to its stopping rule (see the module docstring)."""

    def __init__(
        self,
        spec: Spec,
        store_path: Path,
        *,
        on_progress: Callable[[SweepProgress], None] | None = None,
        **options: Unpack[StudyOptions],
    ) -> None:
        if spec.sweep is None:
            raise ValueError(f"{spec.source_path}: the study file has no [sweep] section")
        self.spec = spec
        self.sweep: SweepSpec = spec.sweep
        self.store_path = store_path
        self.space: ParameterSpace = space_from_spec(spec)
        self.pi = spec.pi_named(self.sweep.metric)
        # a fixed default seed: the same study file samples the same settings
        self.seed = self.sweep.seed or 0
        self.candidates = self.space.settings()
        self.params = [str(c) for c in self.candidates.columns]
        # computed once: every step checks the measured settings against the space
        self.keys = frozenset(setting_key(r) for r in self.candidates.to_dict("records"))
        self.design = IncrementalSampling(
            self.candidates,
            sampler=self.sweep.sampler,
            start=self.sweep.start,
            step=self.sweep.step,
            threshold=self.sweep.r2,
            stop_at_ceiling=self.sweep.stop_at_ceiling,
            splits=self.sweep.splits,
            model=self.sweep.model,
            budget=self.sweep.max_settings,
            seed=self.seed,
            metric=self.pi.name,
        )
        self.runner = SettingsRunner(spec, store_path, seed=self.seed, **options)
        self.on_progress = on_progress
        self.transform = self.sweep.transform

    def _model_view(self, measured: pd.DataFrame) -> pd.DataFrame:
        return transformed(measured, self.pi.name, self.transform)

    def run(self) -> SweepResult:
        started_with = 0

        def body(session: SettingsSession) -> SweepResult:
            nonlocal started_with
            started_with = len(session.trials)
            return self._loop(session)

        result = self.runner.session(body, lambda r: r.as_dict())
        result.resumed_trials = started_with
        leftover = [self.runner.leftover] if self.runner.leftover else []
        result.warnings[:0] = [*leftover, *self.runner.step_notes]
        return result

    def _loop(self, session: SettingsSession) -> SweepResult:
        st = session.open_study
        # the steps of earlier sessions too: the report shows the whole sweep
        steps = stored_steps(st.store, st.study_id)
        recorded = [s.to_dict() for s in steps]
        elapsed = sum(t.duration or 0.0 for t in session.trials)
        budget = math.inf if self.sweep.max_time is None else self.sweep.max_time
        deadline = time.monotonic() + max(0.0, budget - elapsed)
        timed_out = False
        reps = self.sweep.repetitions

        def progress(p: SettingsProgress) -> None:
            self._show(steps, p)

        # An interrupted session leaves a batch part-measured: finish it before anything
        # is evaluated, so that the steps, the next draws and the trials are those of an
        # uninterrupted sweep.  Batches are recorded before they are measured; settings
        # of a store made before that are finished when they lack repetitions.
        batches: list[list[dict[str, Any]]] = [
            [dict(s) for s in b] for b in st.store.study_value(st.study_id, BATCHES_KEY) or []
        ]
        # batch by batch, as they were first measured: the same trials in the same order
        for unfinished in [*batches, self._short_of_repetitions(session)]:
            if unfinished and time.monotonic() < deadline:
                session.measure(unfinished, reps, deadline=deadline, on_progress=progress)
        # the settings a [[claim]] names are measured first (Algorithm 1 may never draw
        # them), recorded as a batch of their own, as the loop's are
        claimed = self._claimed_unmeasured(session)
        if claimed and time.monotonic() < deadline:
            batches.append(claimed)
            st.store.set_study_value(st.study_id, BATCHES_KEY, batches)
            session.measure(claimed, reps, deadline=deadline, on_progress=progress)
        rows = measured_trials(session.trials, self.params, self.pi, self.keys)
        busy: BusyMachine | None = None
        while True:
            if len(rows):
                step = self.design.evaluate(self._model_view(rows))
                busy = self._busy(step, session.trials)
                if busy is not None:
                    step = dataclasses.replace(step, done=True, reason="busy")
                    st.store.set_study_value(st.study_id, BUSY_KEY, busy.as_dict())
                if not steps or step.to_dict() != recorded[-1]:
                    steps.append(step)
                    recorded.append(step.to_dict())
                    st.store.set_study_value(st.study_id, STEPS_KEY, recorded)
                    self._show(steps)
                if busy is not None:
                    break
            batch = self.design.next_batch(self._model_view(rows))
            if len(batch) == 0:
                break
            if time.monotonic() >= deadline:
                timed_out = True
                break
            settings = [
                {k: plain(v) for k, v in row.items()}
                for row in self.candidates.iloc[batch].to_dict("records")
            ]
            batches.append(settings)
            st.store.set_study_value(st.study_id, BATCHES_KEY, batches)
            session.measure(settings, reps, deadline=deadline, on_progress=progress)
            rows = measured_trials(session.trials, self.params, self.pi, self.keys)
        kept = (st.store, st.study_id)
        return self._result(session.trials, steps, timed_out, st.environment, kept, busy)

    def _busy(self, step: StepResult, trials: list[TrialRecord]) -> BusyMachine | None:
        """The busy machine that stops the sweep at ``step``, or None to measure on.

        Judged once, at the last step within the first quarter of the settings (the
        next batch would pass it), for trials run here one at a time and watched: a
        load average on a cluster's driver says nothing of its hosts."""
        d = self.design
        executor = self.runner.executor
        here = isinstance(executor, LocalExecutor) and executor.monitor
        if self.sweep.busy != "stop" or step.done or d.whole_grid or not here:
            return None
        quarter = BUSY_WITHIN * d.max_settings
        if not step.n_measured <= quarter < step.n_measured + d.settings_per_step:
            return None
        others = [cores for _, cores in others_during(trials)]
        # the load average now: a minute's, over the last batches (a machine that became
        # busy during the first batches is busy now)
        seen = busy_machine(_load_average(), os.cpu_count() or 1, others)
        return seen if seen.busy else None

    def stored(self) -> SweepResult:
        """The sweep as stored: its recorded steps and the analysis of its measured
        settings, as at the end of :meth:`run`, without running anything or writing to
        the store."""
        with Store(self.store_path, read_only=True) as store:
            st = open_stored(store, self.spec.study.name)
            steps = stored_steps(store, st.study_id)
            elapsed = sum(t.duration or 0.0 for t in st.trials)
            limit = self.sweep.max_time
            undecided = not steps or steps[-1].reason == ""
            timed_out = undecided and limit is not None and elapsed >= limit
            seen = store.study_value(st.study_id, BUSY_KEY)
            stopped_busy = bool(seen) and bool(steps) and steps[-1].reason == "busy"
            busy = BusyMachine.from_dict(dict(seen)) if stopped_busy else None
            kept = (store, st.study_id)
            result = self._result(st.trials, steps, timed_out, st.environment, kept, busy)
            result.resumed_trials = st.resumed
            return result

    def kept(
        self, doc: dict[str, Any], trials: list[TrialRecord], steps: list[StepResult]
    ) -> KeptSweep:
        """The sweep as stored, for its report page: ``doc`` (its result's JSON as
        ``assay show`` kept it for the store's ``trials`` now) in place of its
        analysis, and the ``steps`` the store recorded."""
        rows = measured_trials(trials, self.params, self.pi, self.keys)
        environment = doc.get("environment")
        return KeptSweep(
            study=self.spec.study.name,
            params=self.params,
            pi=self.pi,
            steps=steps,
            measured=measured_settings(trials, self.params, self.pi, self.keys),
            settings=setting_intervals(rows, self.params, self.pi.name, self.sweep.params),
            levels={p.name: list(p.values) for p in self.space.parameters},
            transform=self.transform,
            environment=environment if isinstance(environment, dict) else {},
            doc={**doc, "store": str(self.store_path)},  # named as this reader names it
        )

    def _key(self, trial: TrialRecord) -> str:
        """The :func:`setting_key` of the swept parameters' values ``trial`` ran with."""
        return setting_key({p: trial.setting.get(p) for p in self.params})

    def _claimed_unmeasured(self, session: SettingsSession) -> list[dict[str, Any]]:
        """The settings the claims name that have no trial yet, each once, in order."""
        have = {self._key(t) for t in session.trials}
        out: dict[str, dict[str, Any]] = {}
        for claim in self.spec.claims:
            for side in claim.ratio:
                if isinstance(side, dict):
                    key = setting_key(side)
                    if key not in have:
                        out.setdefault(key, {p: side[p] for p in self.params})
        return list(out.values())

    def _judge_claims(self, trials: list[TrialRecord]) -> list[JudgedClaim]:
        """Each claim on the readings of its two settings (their repetitions)."""
        return judge_setting_claims(
            self.spec.claims,
            trials,
            lambda setting: setting_key({p: setting.get(p) for p in self.params}),
            self.pi.name,
            self.spec.stop.confidence,
            "not measured (the sweep's budget ended first)",
        )

    def _short_of_repetitions(self, session: SettingsSession) -> list[dict[str, Any]]:
        """The space's settings with some but not all of their repetitions stored."""
        count: dict[str, int] = {}
        first: dict[str, dict[str, Any]] = {}
        for t in session.trials:
            row = {p: t.setting.get(p) for p in self.params}
            key = setting_key(row)
            count[key] = count.get(key, 0) + 1
            first.setdefault(key, row)
        reps = self.sweep.repetitions
        return [first[k] for k, n in count.items() if n < reps and k in self.keys]

    def _show(self, steps: list[StepResult], p: SettingsProgress | None = None) -> None:
        if self.on_progress is None:
            return
        done, total = (0, 0) if p is None else (p.done, p.total)
        reps = self.sweep.repetitions
        measured = steps[-1].n_measured if steps else 0
        unmeasured = max(0, self.design.max_settings - measured - total // max(reps, 1))
        self.on_progress(
            SweepProgress(
                steps,
                len(self.candidates),
                done,
                total,
                0 if p is None else p.failed,
                trials_left_max=(total - done) + unmeasured * reps,
            )
        )

    def _result(
        self,
        trials: list[TrialRecord],
        steps: list[StepResult],
        timed_out: bool,
        environment: dict[str, Any],
        kept: Kept,
        busy: BusyMachine | None = None,
    ) -> SweepResult:
        warnings: list[str] = []
        last = steps[-1] if steps else None
        early = last is not None and last.reason == "busy"
        analysis: Analysis | None = None
        summary: Summary | None = None
        measured = measured_settings(trials, self.params, self.pi, self.keys)
        rows = measured_trials(trials, self.params, self.pi, self.keys)
        if len(rows):
            try:
                view, memo = self._model_view(rows), _kept_points(kept)
                analysis = self.design.analysis(view, early=early, memo=memo)
                summary = summarise(analysis)
            except ValueError as exc:
                warnings.append(f"no analysis: {exc}")
        levels = {p.name: list(p.values) for p in self.space.parameters}
        if early:
            warnings.append(
                "provisional: the significant parameters and important points come from "
                f"the {last.n_valid if last else 0} settings measured on a busy machine "
                "within the first quarter of the space (their repetitions as replicates); "
                "the held-out R² has not judged them"
            )
        elif last is not None and last.reason == "exhausted":
            warnings.append(
                f"the model did not reach R² ≥ {self.sweep.r2:g} on every validation split: "
                "every setting was measured, so the ANOVA is that of the whole grid, but the "
                "model does not predict settings it was not fitted to (§3.4)"
            )
        elif last is not None and last.reason == "ceiling":
            warnings.append(
                f"the noise between repetitions caps R² at {last.ceiling[0]:.2f} (upper "
                f"bound {last.ceiling[2]:.2f}), below the target {self.sweep.r2:g}: the "
                "significant parameters and important points come from the settings "
                "measured so far, and are not reliable"
            )
        elif last is not None and last.reason not in ("r2", "grid"):
            warnings.append(
                f"the model did not reach R² ≥ {self.sweep.r2:g} on every validation split: "
                "its significant parameters and important points are not reliable"
            )
        by_host = setting_host_warnings(self.spec, trials, self.params)
        warnings.extend(by_host)
        if summary is not None and any(w.startswith(f"{self.pi.name}: ") for w in by_host):
            summary = summary.withheld(
                "No conclusion: the hosts give different results for the same settings "
                "(see the warning), so what this sweep found may be the hosts' doing; sweep "
                "on identical hosts, or on each host apart."
            )
        watch, resources = watch_report(self.spec, trials)
        warnings.extend(watch)
        resources = with_quiet_waits(resources, self.runner.executor.quiet_waits())
        return SweepResult(
            study=self.spec.study.name,
            store=str(self.store_path),
            space=self.space.describe(),
            params=self.params,
            pi=self.pi,
            steps=steps,
            reason=stop_reason(last, self.sweep.r2, timed_out, busy),
            measured=measured,
            analysis=analysis,
            summary=summary,
            trials_total=len(trials),
            trials_by_status=dict(Counter(t.status for t in trials)),
            failures=trial_failures(trials),
            elapsed_s=sum(t.duration or 0.0 for t in trials),
            bookkeeping_s_per_trial=bookkeeping_per_trial(trials),
            bookkeeping_s_median=bookkeeping_median(trials),
            environment=environment,
            warnings=warnings,
            resources=resources,
            transform=self.transform,
            levels=levels,
            # in the order [sweep.params] lists the values (the space sorts numbers)
            settings=setting_intervals(rows, self.params, self.pi.name, self.sweep.params),
            busy=busy,
            claims=self._judge_claims(trials) if self.spec.claims else [],
        )


def sweep_from_csv(
    path: str,
    params: list[str] | None,
    metric: str,
    *,
    unit: str = "",
    lower_is_better: bool = False,
    against: str | None = None,
    sampler: str = "random",
    start: float = 0.05,
    step: float = 0.05,
    r2: float = 0.9,
    model: str = "anova",
    max_settings: int | None = None,
    seed: int = 0,
    transform: str = "none",
    repetitions: str | None = None,
    one_hot: str = "auto",
    drop_values: Sequence[float] = (),
    min_share: float = 0.01,
) -> SweepResult:
    """``assay sweep --from``: Algorithm 1 simulated on results measured elsewhere
    (Figures 1–2 of the paper), compared with the analysis of all of them; ``against``
    adds a second system's results over the same space.  ``params=None``: every column
    that is not the metric nor looks like a PI or a row id (see
    :func:`~assay.importers.csvdata.read_measurements`).  The readers' errors
    (:class:`~assay.importers.sweep.SweepDataError`) name the file and line."""
    from assay.importers.sweep import read_results_csv

    options: dict[str, Any] = {
        "repetitions": repetitions,
        "one_hot": one_hot,
        "drop_values": drop_values,
    }
    reading = read_results_csv(path, params, metric, **options)
    data, names = reading.frame, reading.params
    sim = simulate(
        transformed(data, metric, transform),
        names,
        metric,
        sampler=sampler,
        start=start,
        step=step,
        threshold=r2,
        model=model,
        budget=max_settings,
        seed=seed,
        min_share=min_share,
        # rows (or round columns) that repeat a setting are its repetitions: the
        # analysis tests against their pure error, as a measured sweep's does (#58)
        replicates=bool(data.duplicated(subset=list(names)).any()),
    )
    last = sim.steps[-1] if sim.steps else None
    direction: Literal["lower", "higher"] = "lower" if lower_is_better else "higher"
    comparison = None
    notes = [f"{Path(path).name}: {n}" for n in reading.notes]
    warnings = [f"{Path(path).name}: {w}" for w in reading.warnings]
    if against:
        other = read_results_csv(against, params, metric, **options)
        if other.params != names:
            from assay.importers.sweep import SweepDataError

            raise SweepDataError(
                f"{against}: its parameters ({', '.join(other.params)}) are not those of "
                f"{path} ({', '.join(names)}); name them with --params"
            )
        notes += [f"{Path(against).name}: {n}" for n in other.notes]
        warnings += [f"{Path(against).name}: {w}" for w in other.warnings]
        comparison = compare_systems(
            transformed(data, metric, transform),
            transformed(other.frame, metric, transform),
            names,
            metric,
            names=(Path(path).stem, Path(against).stem),
            higher_is_better=direction == "higher",
            threshold=r2,
            seed=seed,
        )
    measured = sampled_means(data, sim.settings[names], names, metric)
    levels = {c: list(sim.space[c].unique()) for c in names}
    sampled = data.merge(sim.settings[names].drop_duplicates(), on=names, how="inner")
    return SweepResult(
        study=f"sweep --from {Path(path).name}",
        store="",
        space=(
            f"{len(names)} parameters ({', '.join(names)}); {len(sim.space)} distinct "
            f"settings in {len(data)} rows from {path}"
        ),
        params=names,
        pi=PISpec(name=metric, unit=unit, direction=direction),
        steps=list(sim.steps),
        reason=stop_reason(last, r2, False),
        measured=measured.drop(columns="trials"),
        analysis=sim.analysis,
        summary=summarise(sim.analysis),
        trials_total=int(measured["trials"].sum()),
        warnings=warnings,
        sources=[path],
        levels=levels,
        transform=transform,
        mismatch=sim.mismatch,
        comparison=comparison,
        min_share=min_share,
        mismatch_material=sim.mismatch_material,
        notes=notes,
        reading=reading.as_dict(),
        settings=setting_intervals(sampled, names, metric, levels),
    )


def sampled_means(
    trials: pd.DataFrame, settings: pd.DataFrame, params: Sequence[str], metric: str
) -> pd.DataFrame:
    """Each of ``settings`` (in their order) with the mean ``metric`` of its rows in
    ``trials`` and how many rows (``trials``) it has: what the simulation measured.

    >>> t = pd.DataFrame({"w": [1, 2, 1, 2, 1], "tps": [1.0, 5.0, 3.0, 7.0, 5.0]})
    >>> sampled_means(t, pd.DataFrame({"w": [2, 1]}), ["w"], "tps").values.tolist()
    [[2.0, 6.0, 2.0], [1.0, 3.0, 3.0]]
    """
    per = (
        trials.groupby(list(params), sort=False, dropna=False, observed=True)[metric]
        .agg(["mean", "size"])
        .reset_index()
        .rename(columns={"mean": metric, "size": "trials"})
    )
    return settings[list(params)].merge(per, on=list(params), how="left", sort=False)
