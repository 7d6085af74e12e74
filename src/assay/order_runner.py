"""Running an ordering-trap experiment (``assay order``): fixed and random orders, analysed.

The schedule (:func:`assay.designs.order.order_schedule`) alternates fixed-order runs
(the tests in their declared, baseline order) with random-order runs (a fresh seeded
permutation each), every test repeated ``repetitions`` times per run, and the reset
command before every trial when the study has one. Each trial is committed to the
store as it ends with its run (``trials.run``), its position in the run
(``trials.seq``) and ``setting`` naming its test and kind of order; the seed and the
shape of the schedule are recorded in the store, so running the same study again
continues the same schedule where it stopped (mid-run included), and nothing is run
twice or skipped.

When the schedule is done, every test's fixed-order and random-order readings of the
chosen PI are compared (:func:`assay.stats.order.analyse_order`).
"""

from __future__ import annotations

import secrets
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from assay.designs.order import PlannedTrial, flat_schedule, order_schedule
from assay.execute.overhead import LaunchOverhead
from assay.runner import (
    OpenStudy,
    Runner,
    StudyError,
    bookkeeping_per_trial,
    execution_dict,
    trial_failures,
    watch_report,
)
from assay.spec import OrderSpec, PISpec, Spec
from assay.stats.order import ORDER_COLUMNS, OrderAnalysis, analyse_order
from assay.store import Store, TrialRecord

#: The key under which an order experiment's schedule is stored.
SCHEDULE_KEY = "order_schedule"


@dataclass(frozen=True)
class OrderPlan:
    """The shape of the schedule: what is recorded in the store and replayed."""

    tests: tuple[str, ...]
    fixed_runs: int
    random_runs: int
    repetitions: int
    seed: int
    baseline: str

    def flat(self) -> list[PlannedTrial]:
        runs = order_schedule(
            self.tests,
            fixed_runs=self.fixed_runs,
            random_runs=self.random_runs,
            repetitions=self.repetitions,
            seed=self.seed,
            baseline="cycled" if self.baseline == "cycled" else "blocked",
        )
        return flat_schedule(runs)

    def as_dict(self) -> dict[str, Any]:
        return {
            "tests": list(self.tests),
            "fixed_runs": self.fixed_runs,
            "random_runs": self.random_runs,
            "repetitions": self.repetitions,
            "seed": self.seed,
            "baseline": self.baseline,
        }


@dataclass
class OrderProgress:
    """What the live display shows after each trial."""

    trials: int
    planned: int
    run: int
    runs: int
    kind: str
    failed: int
    elapsed: float
    mean_trial_s: float


@dataclass
class OrderResult:
    """Everything a report needs about an order experiment (run here, or read with --from)."""

    study: str
    store: str
    pi: str
    unit: str
    direction: str
    analysis: OrderAnalysis
    plan: OrderPlan | None
    reason: str
    table: pd.DataFrame  # one row per successful trial: ORDER_COLUMNS
    reset: list[str] | None = None
    trials_planned: int = 0
    trials_total: int = 0
    trials_by_status: dict[str, int] = field(default_factory=dict)
    failures: list[dict[str, Any]] = field(default_factory=list)
    elapsed_s: float = 0.0
    bookkeeping_s_per_trial: float | None = None
    launch_overhead: LaunchOverhead | None = None
    environment: dict[str, Any] = field(default_factory=dict)
    resumed_trials: int = 0
    warnings: list[str] = field(default_factory=list)
    resources: dict[str, Any] | None = None  # the bottleneck watch, by test
    sources: list[str] = field(default_factory=list)  # --from: the files read

    def as_dict(self) -> dict[str, Any]:
        from assay.report.order import order_dict

        return {
            "study": self.study,
            "store": self.store,
            "done": self.trials_total >= self.trials_planned,
            "reason": self.reason,
            **order_dict(self),
            "schedule": None if self.plan is None else self.plan.as_dict(),
            "reset": self.reset,
            "trials_planned": self.trials_planned,
            **execution_dict(self),
            "sources": self.sources,
        }


def trials_table(trials: Sequence[TrialRecord], pi: str) -> pd.DataFrame:
    """The long table of successful trials (``test, order, run, position, value``) that
    :func:`assay.stats.order.analyse_order` and ``assay order --from`` read."""
    rows = [
        (str(t.setting.get("test")), str(t.setting.get("order")), t.run, t.seq, t.readings[pi])
        for t in trials
        if t.ok and pi in t.readings and "test" in t.setting
    ]
    return pd.DataFrame(rows, columns=list(ORDER_COLUMNS))


def analyse_table(table: pd.DataFrame, order: OrderSpec, tests: Sequence[str]) -> OrderAnalysis:
    """The study's [order] analysis settings applied to a trials table."""
    return analyse_order(
        table,
        alpha=order.alpha,
        test=order.test,
        confidence=order.confidence,
        drift=order.drift,
        tests=tests,
    )


class OrderRunner(Runner):
    """Runs an order experiment's schedule to its end: trial execution, store, setup,
    reset and teardown are :class:`~assay.runner.Runner`'s; the schedule and the
    analysis are the ordering trap's."""

    def __init__(
        self,
        spec: Spec,
        store_path: Path,
        *,
        pi: str | None = None,
        runs: int | None = None,
        repetitions: int | None = None,
        seed: int | None = None,
        alpha: float | None = None,
        fresh: bool = False,
        measure_overhead: bool = True,
        monitor: bool = True,
        on_order_progress: Callable[[OrderProgress], None] | None = None,
    ) -> None:
        super().__init__(
            spec, store_path, fresh=fresh, measure_overhead=measure_overhead, monitor=monitor
        )
        if len(spec.tests) < 2:
            raise ValueError(f"{spec.source_path}: an order experiment needs at least two tests")
        self.pi: PISpec = spec.pi_named(pi)
        order = spec.order or OrderSpec()
        if alpha is not None:
            order = order.model_copy(update={"alpha": alpha})
        self.order = order
        self.runs = runs
        self.repetitions = repetitions
        self.seed = seed
        self.on_order_progress = on_order_progress
        self._run = 0  # the run of the trial being executed (see _trial)

    def _requested(self, seed: int) -> OrderPlan:
        o = self.order
        return OrderPlan(
            tests=tuple(t.name for t in self.spec.tests),
            fixed_runs=self.runs or o.fixed_runs or o.runs,
            random_runs=self.runs or o.random_runs or o.runs,
            repetitions=self.repetitions or o.repetitions,
            seed=seed,
            baseline=o.baseline,
        )

    def _plan(self, st: OpenStudy) -> OrderPlan:
        """The schedule recorded in the store (a resumed study keeps its seed and shape).

        More or fewer runs than recorded are allowed as long as the trials already
        stored are a prefix of the new schedule (see :meth:`_check_stored`).
        """
        stored = st.store.study_value(st.study_id, SCHEDULE_KEY)
        asked_seed = self.seed if self.seed is not None else self.order.seed
        if stored is None:
            seed = asked_seed if asked_seed is not None else secrets.randbelow(2**31)
            plan = self._requested(seed)
            st.store.set_study_value(st.study_id, SCHEDULE_KEY, plan.as_dict())
            return plan
        old = OrderPlan(
            tests=tuple(stored["tests"]),
            fixed_runs=int(stored["fixed_runs"]),
            random_runs=int(stored["random_runs"]),
            repetitions=int(stored["repetitions"]),
            seed=int(stored["seed"]),
            baseline=str(stored["baseline"]),
        )
        plan = self._requested(old.seed)
        clash = []
        if asked_seed is not None and asked_seed != old.seed:
            clash.append(f"seed {old.seed}")
        if plan.repetitions != old.repetitions:
            clash.append(f"{old.repetitions} repetitions")
        if plan.baseline != old.baseline:
            clash.append(f"the {old.baseline} baseline")
        if plan.tests != old.tests:
            clash.append(f"the tests {', '.join(old.tests)}")
        if clash:
            raise StudyError(
                f"study '{self.spec.study.name}' was started with {' and '.join(clash)}; "
                "resume it with the same schedule, or pass --fresh to start again"
            )
        if plan != old:
            st.store.set_study_value(st.study_id, SCHEDULE_KEY, plan.as_dict())
        return plan

    def _check_stored(self, trials: list[TrialRecord], flat: list[PlannedTrial]) -> None:
        if len(trials) > len(flat):
            raise StudyError(
                f"{self.store_path}: {len(trials)} trials are stored but this schedule has "
                f"only {len(flat)}; ask for at least as many runs as were done, or pass "
                "--fresh to start again"
            )
        for t, want in zip(trials, flat, strict=False):
            got = (t.run, t.seq, t.setting.get("test"), t.setting.get("order"))
            if got != (want.run, want.position, want.test, want.kind):
                raise StudyError(
                    f"{self.store_path}: stored trial (run {t.run}, position {t.seq}, "
                    f"{t.setting.get('test')!r}) does not follow this experiment's schedule "
                    f"(expected {want.test!r}, {want.kind} order, at run {want.run} "
                    f"position {want.position}); pass --fresh to start again"
                )

    def run(self) -> OrderResult:  # type: ignore[override]
        leftover = self._kill_leftover()
        with Store(self.store_path) as store:
            st = self._open(store)
            plan = self._plan(st)
            flat = plan.flat()
            self._check_stored(st.trials, flat)
            reason = self._with_setup(lambda: self._loop_schedule(st, plan, flat))
            result = self._order_result(st, plan, len(flat), reason)
            if leftover:
                result.warnings.insert(0, leftover)
            store.end_session(st.session, result.as_dict())
            return result

    def _trial(
        self,
        seq: int,
        values: dict[str, object],
        work: float | None,
        *,
        command: list[str] | None = None,
        env: dict[str, str] | None = None,
        setting: dict[str, object] | None = None,
    ) -> TrialRecord:
        rec = super()._trial(seq, values, work, command=command, env=env, setting=setting)
        rec.run = self._run
        return rec

    def _loop_schedule(self, st: OpenStudy, plan: OrderPlan, flat: list[PlannedTrial]) -> str:
        spec = self.spec
        by_name = {t.name: t for t in spec.tests}
        runs = plan.fixed_runs + plan.random_runs
        self._prev_end = None
        max_failures = spec.stop.max_failures
        for i in range(len(st.trials), len(flat)):
            failed = sum(1 for t in st.trials if not t.ok)
            if i >= 5 and failed / i > max_failures:
                return f"stopped early: {failed} of {i} trials failed"
            pt = flat[i]
            test = by_name[pt.test]
            values: dict[str, object] = {**spec.params, **test.params}
            self._run = pt.run
            self._execute(
                st,
                pt.position,
                values,
                command=test.command,
                env=test.env,
                setting={**values, "test": pt.test, "order": pt.kind},
            )
            if self.on_order_progress is not None:
                done = [t.duration or 0.0 for t in st.trials]
                self.on_order_progress(
                    OrderProgress(
                        trials=i + 1,
                        planned=len(flat),
                        run=pt.run + 1,
                        runs=runs,
                        kind=pt.kind,
                        failed=failed + (0 if st.trials[-1].ok else 1),
                        elapsed=sum(done),
                        mean_trial_s=sum(done) / len(done),
                    )
                )
        return f"done: {runs} runs ({plan.fixed_runs} fixed, {plan.random_runs} random)"

    def _order_result(
        self, st: OpenStudy, plan: OrderPlan, planned: int, reason: str
    ) -> OrderResult:
        trials = st.trials
        table = trials_table(trials, self.pi.name)
        analysis = analyse_table(table, self.order, plan.tests)
        warnings = [f"{r.test}: {r.note}" for r in analysis.results if r.note]
        if self.pi.units is not None:
            warnings.append(
                f"{self.pi.name}: the order analysis uses one reading per trial; its unit "
                "readings are stored but not analysed"
            )
        by_test: dict[str, Any] = {}
        for name in plan.tests:
            mine = [t for t in trials if t.setting.get("test") == name]
            watch, res = watch_report(self.spec, mine, label=f"{name}: ")
            warnings.extend(watch)
            if res is not None:
                by_test[name] = res
        return OrderResult(
            study=self.spec.study.name,
            store=str(self.store_path),
            pi=self.pi.name,
            unit=self.pi.unit,
            direction=self.pi.direction,
            analysis=analysis,
            plan=plan,
            reason=reason,
            table=table,
            reset=self.spec.benchmark.reset,
            trials_planned=planned,
            trials_total=len(trials),
            trials_by_status=dict(Counter(t.status for t in trials)),
            failures=trial_failures(trials),
            elapsed_s=sum(t.duration or 0.0 for t in trials),
            bookkeeping_s_per_trial=bookkeeping_per_trial(trials),
            launch_overhead=st.overhead,
            environment=st.environment,
            resumed_trials=st.resumed,
            warnings=warnings,
            resources=by_test or None,
        )
