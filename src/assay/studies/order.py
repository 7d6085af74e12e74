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
chosen PI are compared, one value per run (its median) deciding
(:func:`assay.stats.order.analyse_order`).
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from typing_extensions import Unpack

from assay.designs.order import PlannedTrial, flat_schedule, order_schedule
from assay.execute.overhead import LaunchOverhead
from assay.spec import OrderSpec, PISpec, Spec
from assay.stats.order import (
    ORDER_COLUMNS,
    MedianCI,
    OrderAnalysis,
    TestOrderResult,
    analyse_order,
)
from assay.store import Store, TrialRecord
from assay.studies.base import (
    OpenStudy,
    Study,
    StudyError,
    StudyOptions,
    execution_dict,
    execution_fields,
    host_warnings,
    open_stored,
    result_header,
    stderr_warning,
    watch_report,
)

if TYPE_CHECKING:  # pandas (~0.3 s) is imported where a table is made: not before the
    # first trial
    import pandas as pd

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

    def done_text(self) -> str:
        """The reason of a finished schedule."""
        runs = self.fixed_runs + self.random_runs
        return f"done: {runs} runs ({self.fixed_runs} fixed, {self.random_runs} random)"

    @staticmethod
    def from_dict(d: dict[str, Any]) -> OrderPlan:
        """The plan recorded in the store (:meth:`as_dict`)."""
        return OrderPlan(
            tests=tuple(d["tests"]),
            fixed_runs=int(d["fixed_runs"]),
            random_runs=int(d["random_runs"]),
            repetitions=int(d["repetitions"]),
            seed=int(d["seed"]),
            baseline=str(d["baseline"]),
        )

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
    bookkeeping_s_median: float | None = None  # the typical own cost between trials
    launch_overhead: LaunchOverhead | None = None
    environment: dict[str, Any] = field(default_factory=dict)
    resumed_trials: int = 0
    session_wall_s: float | None = None  # this session's wall time (None: not run now)
    session_measured_s: float | None = None  # of which its commands ran
    warnings: list[str] = field(default_factory=list)
    resources: dict[str, Any] | None = None  # the bottleneck watch, by test
    sources: list[str] = field(default_factory=list)  # --from: the files read
    # --from: the metrics each trial was split into (each analysed as a test), and how named
    metrics: list[str] = field(default_factory=list)
    metrics_text: str = ""

    def as_dict(self) -> dict[str, Any]:
        """The JSON form of the result."""
        return {
            **result_header("order"),
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
            "metrics": self.metrics,
            "metrics_note": self.metrics_text,
            # every successful trial (test, order, run, position, value[, host]): what
            # 'assay order --from' reads back, and another tool analyses again
            "samples": _records(self.table),
        }


def _ci(ci: MedianCI | None, prefix: str) -> dict[str, Any]:
    if ci is None:
        return {}
    return {prefix: ci.median, f"{prefix}_low": ci.low, f"{prefix}_high": ci.high}


def order_row(r: TestOrderResult, threshold: float) -> dict[str, Any]:
    """One test's figures, as JSON and CSV give them."""
    row: dict[str, Any] = {"test": r.test}
    c = r.comparison
    if c is not None:
        row.update(
            n_fixed=c.n_fixed,
            n_random=c.n_random,
            mean_fixed=c.mean_fixed,
            mean_random=c.mean_random,
            delta_percent=c.delta_percent,
            **_ci(c.median_fixed, "median_fixed"),
            **_ci(c.median_random, "median_random"),
            confidence=c.median_fixed.confidence,
            median_fixed_coverage=c.median_fixed.coverage,
            median_random_coverage=c.median_random.coverage,
            kruskal_h=c.kruskal_h,
            kruskal_p=c.kruskal_p,
            mann_whitney_u=c.mann_whitney_u,
            mann_whitney_p=c.mann_whitney_p,
        )
    per_run = r.per_run
    if per_run is not None:
        row.update(
            runs_fixed=per_run.n_fixed,
            runs_random=per_run.n_random,
            run_median_fixed=per_run.median_fixed.median,
            run_median_random=per_run.median_random.median,
            run_delta_percent=per_run.delta_percent,
            run_kruskal_h=per_run.kruskal_h,
            run_kruskal_p=per_run.kruskal_p,
            run_mann_whitney_u=per_run.mann_whitney_u,
            run_mann_whitney_p=per_run.mann_whitney_p,
            p_floor=r.p_floor,
        )
    row.update(
        p_value=r.p_value,
        threshold=threshold,
        order_matters=r.significant,
        pooled_p=r.pooled_p,
        pooled_order_matters=r.pooled_significant,
        drift_rho=r.drift_random.rho,
        drift_p=r.drift_random.p_value,
        drift_n=r.drift_random.n,
        drift_fixed_rho=r.drift_fixed.rho,
        drift_fixed_p=r.drift_fixed.p_value,
        drift_fixed_n=r.drift_fixed.n,
        note=r.note,
    )
    return row


_TEST_NAMES = {"kruskal": "Kruskal-Wallis H", "mann-whitney": "Mann-Whitney U"}


def method_text(res: OrderResult) -> str:
    a = res.analysis
    conf = f"{a.confidence:.0%}"
    other = "Mann-Whitney U" if a.test == "kruskal" else "Kruskal-Wallis H"
    return (
        f"per test, one value per run (the mean of its trials of {res.pi}), fixed-order "
        f"vs random-order runs: {_TEST_NAMES[a.test]} (decides) and {other}, two-sided; "
        f"Bonferroni over the {a.tested} tests{_metric_count(res)} at alpha {a.alpha:g}; "
        "pooled trials: the "
        "same test on every trial, reported, not used for the decision (trials of one run "
        "are not independent); Δ% = (mean fixed - mean random) / mean fixed, over trials; "
        f"medians of the trials with distribution-free order-statistic CIs at {conf} "
        "(binomial); runs, n (f/r): fixed/random runs and trials; drift: "
        f"{a.drift_method} correlation of the result with its position in the random-order "
        "runs"
        + (
            "; hosts: Kruskal-Wallis of each test's run means by host, Bonferroni over the tests"
            if a.hosts
            else ""
        )
    )


def _metric_count(res: OrderResult) -> str:
    """`` (every metric of a test counted: 4 metrics)`` when the trials were split."""
    k = len(res.metrics)
    if not k:
        return ""
    return f" (each of the {k} metric{'s' if k > 1 else ''} of a test counted as a test)"


def order_dict(res: OrderResult) -> dict[str, Any]:
    """The JSON form of the analysis (the execution part is added by the result)."""
    a = res.analysis
    return {
        "pi": res.pi,
        "unit": res.unit,
        "direction": res.direction,
        "method": method_text(res),
        "verdict": a.verdict(),
        "order_matters": a.order_matters,
        "flagged": a.flagged,
        "decision": "run means",
        "pooled": a.pooled_line(),
        "pooled_flagged": a.pooled_flagged,
        "hosts": [h.as_dict() for h in a.hosts],
        "host_threshold": a.host_threshold if a.hosts else None,
        "drifting": a.drifting,
        "alpha": a.alpha,
        "threshold": a.threshold,
        "tested": a.tested,
        "test": a.test,
        "confidence": a.confidence,
        "drift_method": a.drift_method,
        "tests": [order_row(r, a.threshold) for r in a.results],
    }


def trials_table(trials: Sequence[TrialRecord], pi: str) -> pd.DataFrame:
    """The long table of successful trials (``test, order, run, position, value``) that
    :func:`assay.stats.order.analyse_order` and ``assay order --from`` read."""
    rows = [
        (str(t.setting.get("test")), str(t.setting.get("order")), t.run, t.seq, t.readings[pi])
        for t in trials
        if t.ok and pi in t.readings and "test" in t.setting
    ]
    import pandas as pd  # here: pandas takes ~0.3 s to import; not before the first trial

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


def failure_stop(trials: Sequence[TrialRecord], max_failures: float) -> str | None:
    """Why an experiment stops early: more than ``max_failures`` of its (at least 5)
    trials failed; None while it may go on."""
    done = len(trials)
    failed = sum(1 for t in trials if not t.ok)
    if done >= 5 and failed / done > max_failures:
        return f"stopped early: {failed} of {done} trials failed"
    return None


class OrderRunner(Study):
    """Runs an order experiment's schedule to its end: trial execution, store, setup,
    reset and teardown are :class:`~assay.studies.base.Study`'s; the schedule (one
    batch per run) and the analysis are the ordering trap's."""

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
        on_order_progress: Callable[[OrderProgress], None] | None = None,
        **options: Unpack[StudyOptions],
    ) -> None:
        super().__init__(spec, store_path, **options)
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
        old = OrderPlan.from_dict(stored)
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
        """Every stored trial holds its place in the schedule, and each run's stored
        trials are its first ones (runs may finish out of order on a cluster)."""
        slots = {(p.run, p.position): p for p in flat}
        done: dict[int, list[int]] = {}
        for t in trials:
            want = slots.get((t.run, t.seq))
            if want is None:
                raise StudyError(
                    f"{self.store_path}: {len(trials)} trials are stored but this schedule has "
                    f"only {len(flat)} (no run {t.run} position {t.seq}); ask for at least as "
                    "many runs as were done, or pass --fresh to start again"
                )
            got = (t.setting.get("test"), t.setting.get("order"))
            if got != (want.test, want.kind):
                raise StudyError(
                    f"{self.store_path}: stored trial (run {t.run}, position {t.seq}, "
                    f"{t.setting.get('test')!r}) does not follow this experiment's schedule "
                    f"(expected {want.test!r}, {want.kind} order, at run {want.run} "
                    f"position {want.position}); pass --fresh to start again"
                )
            done.setdefault(t.run, []).append(t.seq)
        for run, positions in done.items():
            if sorted(positions) != list(range(len(positions))):
                raise StudyError(
                    f"{self.store_path}: run {run} has stored trials at positions "
                    f"{sorted(positions)}, not its first {len(positions)}; pass --fresh to "
                    "start again"
                )

    def run(self) -> OrderResult:
        leftover = self._stop_leftover()
        with Store(self.store_path) as store:
            st = self._open(store)
            plan = self._plan(st)
            flat = plan.flat()
            self._check_stored(st.trials, flat)
            reason = self._with_setup(lambda: self._loop_schedule(st, plan, flat))
            result = self._order_result(st, plan, len(flat), reason)
            result.warnings[:0] = [*([leftover] if leftover else []), *self.step_notes]
            store.end_session(st.session, result.as_dict())
            return result

    def _loop_schedule(self, st: OpenStudy, plan: OrderPlan, flat: list[PlannedTrial]) -> str:
        spec = self.spec
        by_name = {t.name: t for t in spec.tests}
        runs = plan.fixed_runs + plan.random_runs

        def too_many_failures() -> str | None:
            return failure_stop(st.trials, spec.stop.max_failures)

        stored = {(t.run, t.seq) for t in st.trials}
        todo = [pt for pt in flat if (pt.run, pt.position) not in stored]
        if (stop := too_many_failures()) is not None and todo:
            return stop
        batch = []
        for pt in todo:
            test = by_name[pt.test]
            values: dict[str, object] = {**spec.params, **test.params}
            setting = {**values, "test": pt.test, "order": pt.kind}
            batch.append(
                self.request(
                    pt.position,
                    values,
                    command=test.command,
                    env=test.env,
                    setting=setting,
                    run=pt.run,
                    block=pt.run,  # a run's trials in order on one host
                )
            )
        # one batch: every run still to do (on a cluster, several runs at once)
        with contextlib.closing(self.measure(st, batch)) as records:
            for rec in records:
                if self.on_order_progress is not None:
                    done = [t.duration or 0.0 for t in st.trials]
                    self.on_order_progress(
                        OrderProgress(
                            trials=len(st.trials),
                            planned=len(flat),
                            run=rec.run + 1,
                            runs=runs,
                            kind=str(rec.setting["order"]),
                            failed=sum(1 for t in st.trials if not t.ok),
                            elapsed=sum(done),
                            mean_trial_s=sum(done) / len(done),
                        )
                    )
                if len(st.trials) < len(flat) and (stop := too_many_failures()) is not None:
                    return stop  # the trials not yet started are not run
        return plan.done_text()

    def stored(self) -> OrderResult:
        """The experiment as stored, analysed as at the end of :meth:`run` (its schedule
        from the store), without running anything or writing to the store."""
        with Store(self.store_path, read_only=True) as store:
            st = open_stored(store, self.spec.study.name)
            recorded = store.study_value(st.study_id, SCHEDULE_KEY)
            if recorded is None:
                raise StudyError(
                    f"{self.store_path}: study '{self.spec.study.name}' has no schedule"
                )
            plan = OrderPlan.from_dict(recorded)
            planned = len(plan.flat())
            stop = failure_stop(st.trials, self.spec.stop.max_failures)
            if len(st.trials) >= planned:
                reason = plan.done_text()
            elif stop is not None:
                reason = stop
            else:
                reason = f"not finished: {len(st.trials)} of {planned} planned trials"
            return self._order_result(st, plan, planned, reason)

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
            warnings.extend(host_warnings(self.spec, mine, label=f"{name}: "))
            warnings.extend(stderr_warning(mine, label=f"{name}: "))
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
            warnings=warnings,
            resources=by_test or None,
            **execution_fields(st),
        )


def order_from_csv(
    path: str, *, alpha: float = 0.05, unit: str = "", metrics: Sequence[str] | None = None
) -> OrderResult:
    """``assay order --from FILE``: analyse trials measured elsewhere (no execution): the
    long format or OrderSage's results file, whose failed trials are counted, not
    analysed.  ``metrics``: the names of a multi-valued result's values (``--metrics``);
    each metric of a test is analysed as a test of its own, Bonferroni over them all.

    :class:`~assay.importers.order.OrderDataError` names what is wrong with the file.
    """
    from assay.importers.order import read_order_file

    read = read_order_file(path, metrics=metrics)
    table = read.table
    analysis = analyse_table(table, OrderSpec(alpha=alpha), list(dict.fromkeys(table["test"])))
    warnings = [f"{r.test}: {r.note}" for r in analysis.results if r.note]
    failed = read.failed_total
    if failed:
        by_test = ", ".join(f"{t} {n}" for t, n in read.failed.items())
        statuses = ", ".join(f"{s} {n}" for s, n in read.statuses.items())
        warnings.insert(
            0,
            f"{failed} failed trial{'s' if failed > 1 else ''} not analysed "
            f"(completion_status: {statuses}; by test: {by_test})",
        )
    by_status = {"ok": len(table), **({"failed": failed} if failed else {})}
    kind = {"ordersage": "OrderSage results", "assay": "an assay order --json result"}.get(
        read.source_format, "trials"
    )
    # an Assay result names its PI, its unit and which way is better; a CSV does not
    pi, its_unit, direction = read.pi or ("value", "", "lower")
    return OrderResult(
        study=f"order --from {Path(path).name}",
        store="",
        pi=pi,
        unit=unit or its_unit,
        direction=direction,
        analysis=analysis,
        plan=None,
        reason=f"analysed {len(table)} {'readings' if read.metrics else 'trials'} from {path} "
        f"({kind})",
        table=table,
        trials_planned=len(table) + failed,
        trials_total=len(table) + failed,
        trials_by_status=by_status,
        sources=[path],
        warnings=warnings,
        metrics=list(read.metrics),
        metrics_text=read.metrics_text(),
    )


def _records(table: pd.DataFrame) -> list[dict[str, Any]]:
    """A trial table's rows as plain JSON values (NumPy's scalars become Python's)."""
    import json

    rows: list[dict[str, Any]] = json.loads(table.to_json(orient="records"))
    return rows
