"""Running a run-until-CI study: execute trials, commit each one, analyse, decide.

The loop is the DESIGN.md flow: the design proposes the next trial, the executor
runs it, the store commits it as soon as it ends, the analysis reads what is stored
and the design decides whether more trials are needed. Everything finished is in the
store, so running the same study again resumes where it stopped.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

import psutil

from assay.designs.run_until_ci import (
    WPS_PI,
    Decision,
    PIResult,
    RoundData,
    analyze_pi,
    analyze_wps,
    decide,
    planner_for,
    round_segment,
)
from assay.execute.command import (
    CommandResult,
    exec_argv,
    kill_leftovers,
    render_argv,
    run_command,
)
from assay.execute.environment import collect_environment
from assay.execute.monitor import (
    ResourceMonitor,
    ResourceSummary,
    bottleneck_warnings,
    resources_dict,
    summarize,
)
from assay.execute.overhead import LaunchOverhead, measure_launch_overhead
from assay.execute.readers import ReadError, read_reading, read_unit_readings
from assay.spec import PISpec, Spec
from assay.store import Store, TrialRecord, study_file
from assay.template import render


class StudyError(RuntimeError):
    """The study cannot go on (setup failed, store unusable); the message says why."""


D = TypeVar("D")


@dataclass
class OpenStudy:
    """A study opened in its store for one session: what the loop and the report need."""

    store: Store
    study_id: int
    session: int
    trials: list[TrialRecord]  # every stored trial, in order; the loop appends
    resumed: int  # trials found in the store at the start
    environment: dict[str, Any]
    overhead: LaunchOverhead | None


@dataclass
class Progress:
    """What the live display shows after each trial."""

    rounds: int
    failed: int
    elapsed: float
    results: list[PIResult]
    decision: Decision
    last_status: str
    mean_round_s: float


@dataclass
class StudyResult:
    """Everything a report needs about a finished (or stopped) run-until-CI study."""

    study: str
    store: str
    results: list[PIResult]
    decision: Decision
    trials_total: int
    trials_by_status: dict[str, int]
    failures: list[dict[str, Any]]
    elapsed_s: float
    bookkeeping_s_per_trial: float | None
    launch_overhead: LaunchOverhead | None
    environment: dict[str, Any]
    resumed_trials: int = 0
    warnings: list[str] = field(default_factory=list)
    resources: dict[str, Any] | None = None  # the bottleneck watch (None: not monitored)

    def as_dict(self) -> dict[str, Any]:
        return {
            "study": self.study,
            "store": self.store,
            "done": self.decision.done,
            "reason": self.decision.reason,
            "pis": [r.as_dict() for r in self.results],
            **execution_dict(self),
        }


class Executed(Protocol):
    """What a study result says about its execution (run-until-CI and comparisons alike)."""

    trials_total: int
    trials_by_status: dict[str, int]
    resumed_trials: int
    failures: list[dict[str, Any]]
    elapsed_s: float
    bookkeeping_s_per_trial: float | None
    launch_overhead: LaunchOverhead | None
    environment: dict[str, Any]
    warnings: list[str]
    resources: dict[str, Any] | None


def execution_dict(res: Executed) -> dict[str, Any]:
    """The JSON form of a result's trials, failures, overhead, environment and warnings."""
    return {
        "trials": {
            "total": res.trials_total,
            "by_status": res.trials_by_status,
            "resumed": res.resumed_trials,
        },
        "failures": res.failures,
        "measured_time_s": res.elapsed_s,
        "overhead": {
            "bookkeeping_s_per_trial": res.bookkeeping_s_per_trial,
            "launch": None if res.launch_overhead is None else res.launch_overhead.as_dict(),
        },
        "environment": res.environment,
        "warnings": res.warnings,
        "resources": res.resources,
    }


def resource_summaries(trials: list[TrialRecord]) -> list[ResourceSummary]:
    """The bottleneck watch's summary of every monitored trial (stored ones included)."""
    return [summarize(t.resources) for t in trials if t.resources]


def watch_report(
    spec: Spec, trials: list[TrialRecord], label: str = ""
) -> tuple[list[str], dict[str, Any] | None]:
    """Bottleneck warnings and the JSON ``resources`` summary of monitored trials."""
    summaries = resource_summaries(trials)
    if not summaries:
        return [], None
    under = spec.benchmark.under_test
    return bottleneck_warnings(summaries, under, label=label), resources_dict(summaries, under)


def trial_failures(trials: list[TrialRecord]) -> list[dict[str, Any]]:
    """The failed trials, as reports list them."""
    return [
        {"seq": t.seq, "status": t.status, "error": t.error, "setting": t.setting}
        for t in trials
        if not t.ok
    ]


def bookkeeping_per_trial(trials: list[TrialRecord]) -> float | None:
    """Mean time Assay spent between trials (``None`` before the second trial)."""
    books = [t.bookkeeping_s for t in trials if t.bookkeeping_s is not None]
    return (sum(books) / len(books)) if books else None


def _pis_to_analyse(spec: Spec) -> list[PISpec]:
    # With an adjustable work amount the default wall-time PI is meaningless
    # (rounds differ in length by design): the WPS regression replaces it.
    if spec.benchmark.work is not None and "pis" not in spec.model_fields_set:
        return []
    return list(spec.pis)


Segments = dict[tuple[int, int, str], tuple[int, int] | None]


def round_data(
    pi: PISpec, ok_trials: list[TrialRecord], warmup_removal: str, cache: Segments
) -> list[RoundData]:
    """What the analysis of one PI needs from successful trials.

    ``cache`` keeps each round's stable segment by ``(run, seq, pi)``, so that between
    rounds only the newest round goes through change-point detection.
    """
    rounds = []
    for t in ok_trials:
        units = t.unit_readings.get(pi.name)
        seg: tuple[int, int] | Literal["unknown"] | None = "unknown"
        if units is not None:
            key = (t.run, t.seq, pi.name)
            if key not in cache:
                cache[key] = round_segment(units, warmup_removal)
            seg = cache[key]
        rounds.append(
            RoundData(
                reading=t.readings.get(pi.name),
                units=units,
                work=t.work,
                duration=t.duration or math.nan,
                segment=seg,
            )
        )
    return rounds


def analyse(
    spec: Spec,
    trials: list[TrialRecord],
    segments: Segments | None = None,
) -> list[PIResult]:
    """Per-PI results from stored trials.

    ``segments`` caches each round's stable segment, so that between rounds only the
    newest round goes through change-point detection.
    """
    cache = {} if segments is None else segments
    ok = [t for t in trials if t.ok]
    results: list[PIResult] = []
    for pi in _pis_to_analyse(spec):
        rounds = round_data(pi, ok, spec.stop.warmup_removal, cache)
        results.append(analyze_pi(pi, rounds, spec.stop))
    if spec.benchmark.work is not None:
        wps_rounds = [RoundData(work=t.work, duration=t.duration or math.nan) for t in ok]
        results.append(analyze_wps(wps_rounds, spec.stop, spec.benchmark.work))
    return results


def _raw_per_round(spec: Spec, trials: list[TrialRecord]) -> dict[str, float]:
    ok = [t for t in trials if t.ok]
    out: dict[str, float] = {}
    for pi in spec.pis:
        if pi.units is not None and ok:
            out[pi.name] = sum(
                t.unit_readings[pi.name].size for t in ok if pi.name in t.unit_readings
            ) / len(ok)
    return out


def _alive(pid: object) -> bool:
    """Whether ``pid`` (another process's) is running; a zombie does not count."""
    if isinstance(pid, bool) or not isinstance(pid, int) or pid == os.getpid():
        return False
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


class Runner:
    """Runs one study to its stopping rule. Side effects live here, not in the design."""

    def __init__(
        self,
        spec: Spec,
        store_path: Path,
        *,
        fresh: bool = False,
        measure_overhead: bool = True,
        monitor: bool = True,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> None:
        self.spec = spec
        self.store_path = store_path
        self.fresh = fresh
        self.measure_overhead = measure_overhead
        self.monitor = monitor
        self._monitor: ResourceMonitor | None = None  # created (calibrated) in _open
        self.on_progress = on_progress
        self.cwd = self._cwd()
        self._prev_end: float | None = None  # when the last trial ended (bookkeeping time)

    def _cwd(self) -> str | None:
        cwd = self.spec.benchmark.cwd
        if cwd is None:
            return None
        p = Path(cwd).expanduser()
        if not p.is_absolute() and self.spec.source_path:
            p = Path(self.spec.source_path).parent / p
        return str(p)

    def _aux(self, argv: list[str], what: str) -> CommandResult:
        b = self.spec.benchmark
        res = run_command(
            render_argv(argv, self.spec.params),
            timeout=b.timeout,
            env=self._env({}),
            cwd=self.cwd,
            shell=b.shell,
        )
        if res.status != "ok":
            tail = res.stderr.decode(errors="replace").strip()[-500:]
            raise StudyError(
                f"the {what} command {' '.join(argv)!r} failed: {res.error}"
                + (f"\n{tail}" if tail else "")
            )
        return res

    def _env(
        self, values: dict[str, object], extra: dict[str, str] | None = None
    ) -> dict[str, str]:
        allv = {**self.spec.params, **values}
        env = {**self.spec.benchmark.env, **(extra or {})}
        return {k: render(v, allv) for k, v in env.items()}

    @property
    def _running_file(self) -> Path:
        # one per study: studies running side by side in one store keep their own
        return study_file(self.store_path, self.spec.study.name, ".running")

    def _record_running(self, argv: list[str]) -> None:
        """Note the benchmark about to run, so a later session can stop it if we are killed.

        Written before the launch: nothing is added to the measured wall time.
        """
        tmp = self._running_file.with_name(self._running_file.name + ".tmp")
        info = {"cmdline": exec_argv(argv, self.spec.benchmark.shell), "pid": os.getpid()}
        tmp.write_text(json.dumps(info))
        os.replace(tmp, self._running_file)

    def _clear_running(self) -> None:
        self._running_file.unlink(missing_ok=True)

    def _kill_leftover(self) -> str | None:
        try:
            info = json.loads(self._running_file.read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(info, dict) or _alive(info.get("pid")):
            # its session still runs (the study's lock will refuse us): not a leftover
            return None
        self._clear_running()
        killed = kill_leftovers(list(info["cmdline"]))
        if killed:
            return (
                "stopped a benchmark left running by an interrupted session "
                f"(pid {', '.join(map(str, killed))})"
            )
        return None

    def _open(self, store: Store) -> OpenStudy:
        """Open (or resume) the study in the store and start a session."""
        spec = self.spec
        store.lock_study(spec.study.name)  # held until the store closes
        if self.fresh:
            store.archive_study(spec.study.name)
        study_id = store.open_study(
            spec.study.name, spec.measurement_hash(), spec.model_dump(mode="json")
        )
        trials = store.trials(study_id)
        env = collect_environment(spec.benchmark.git_repo)
        session = store.start_session(study_id, env)
        overhead = measure_launch_overhead() if self.measure_overhead else None
        if self.monitor and self._monitor is None:
            self._monitor = ResourceMonitor()
            self._monitor.calibrate()
        return OpenStudy(store, study_id, session, trials, len(trials), env, overhead)

    def _with_setup(self, loop: Callable[[], D]) -> D:
        """Run ``loop`` between the study's setup and teardown commands."""
        b = self.spec.benchmark
        try:
            if b.setup:
                self._aux(b.setup, "setup")
            return loop()
        finally:
            if b.teardown:
                with contextlib.suppress(StudyError):
                    self._aux(b.teardown, "teardown")

    def run(self) -> StudyResult:
        spec = self.spec
        leftover = self._kill_leftover()
        with Store(self.store_path) as store:
            st = self._open(store)
            decision = self._with_setup(lambda: self._loop(st))
            results = analyse(spec, st.trials)
            result = self._result(
                st.trials, results, decision, st.overhead, st.environment, st.resumed
            )
            if leftover:
                result.warnings.insert(0, leftover)
            store.end_session(st.session, result.as_dict())
            return result

    def _execute(
        self,
        st: OpenStudy,
        seq: int,
        values: dict[str, object],
        work: float | None = None,
        *,
        command: list[str] | None = None,
        env: dict[str, str] | None = None,
        setting: dict[str, object] | None = None,
    ) -> TrialRecord:
        """Reset, run one trial (see :meth:`_trial`), commit it to the store and append
        it to ``st.trials``."""
        reset = self.spec.benchmark.reset
        reset_s = 0.0
        if reset:
            r0 = time.perf_counter()
            self._aux(reset, "reset")
            reset_s = time.perf_counter() - r0
        start = time.perf_counter()
        prev = self._prev_end
        bookkeeping = None if prev is None else max(start - prev - reset_s, 0.0)
        record = self._trial(seq, values, work, command=command, env=env, setting=setting)
        record.bookkeeping_s = bookkeeping
        self._prev_end = time.perf_counter()
        st.store.add_trial(st.study_id, record, st.session)
        st.trials.append(record)
        return record

    def _loop(self, st: OpenStudy) -> Decision:
        spec = self.spec
        trials = st.trials
        planner = planner_for(spec.benchmark.work)
        seq = st.store.next_seq(st.study_id)
        self._prev_end = None
        segments: Segments = {}
        streak = 0
        while True:
            results = analyse(spec, trials, segments)
            failed = sum(1 for t in trials if not t.ok)
            elapsed = sum(t.duration or 0.0 for t in trials)
            decision = decide(
                results,
                spec.pis,
                spec.stop,
                rounds_done=len(trials),
                rounds_failed=failed,
                elapsed=elapsed,
                raw_per_round=_raw_per_round(spec, trials),
                met_streak=streak,
            )
            streak = streak + 1 if decision.target_met else 0
            if self.on_progress is not None:
                ok = [t.duration or 0.0 for t in trials if t.ok]
                self.on_progress(
                    Progress(
                        rounds=len(trials),
                        failed=failed,
                        elapsed=elapsed,
                        results=results,
                        decision=decision,
                        last_status=trials[-1].status if trials else "",
                        mean_round_s=sum(ok) / len(ok) if ok else math.nan,
                    )
                )
            if decision.done:
                return decision
            values: dict[str, object] = dict(spec.params)
            work: float | None = None
            if planner is not None and spec.benchmark.work is not None:
                history = [(t.work or 0.0, t.duration or 0.0) for t in trials if t.ok]
                work = float(planner.next_work_amount(history))
                values[spec.benchmark.work.placeholder] = int(work)
            self._execute(st, seq, values, work)
            seq += 1

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
        """One trial of ``command`` (default: the benchmark's) with ``env`` laid over the
        benchmark's; ``setting`` is what the store records (default: ``values``)."""
        b = self.spec.benchmark
        try:
            argv = render_argv(b.command if command is None else command, values)
        except KeyError as exc:  # a design that left a placeholder without a value
            raise StudyError(
                f"{self.spec.source_path}: {exc.args[0]} in the benchmark command; give it a "
                "value in [params] (or run the study with the command its sections are for)"
            ) from None
        self._record_running(argv)
        monitor = self._monitor
        if monitor is not None:
            monitor.start()  # its first read happens before run_command starts the clock
        try:
            res = run_command(
                argv,
                timeout=b.timeout,
                env=self._env(values, env),
                cwd=self.cwd,
                shell=b.shell,
            )
        finally:
            resources = monitor.stop().series if monitor is not None else {}
            self._clear_running()
        rec = TrialRecord(
            seq=seq,
            status=res.status,
            setting=dict(values if setting is None else setting),
            argv=argv,
            work=work,
            started=res.started,
            duration=res.duration,
            exit_code=res.exit_code,
            error=res.error,
            stdout=res.stdout,
            stderr=res.stderr,
            cpu_user=res.cpu_user,
            cpu_system=res.cpu_system,
            max_rss_kib=res.max_rss_kib,
            resources=resources,
        )
        if res.status != "ok":
            return rec
        try:
            for pi in self.spec.pis:
                rec.readings[pi.name] = read_reading(pi, res, self.cwd)
                if pi.units is not None:
                    rec.unit_readings[pi.name] = read_unit_readings(
                        pi.units, pi.name, res, self.cwd
                    )
        except ReadError as exc:
            rec.status = "parse_error"
            rec.error = str(exc)
            rec.readings.clear()
            rec.unit_readings.clear()
        return rec

    def _result(
        self,
        trials: list[TrialRecord],
        results: list[PIResult],
        decision: Decision,
        overhead: LaunchOverhead | None,
        env: dict[str, Any],
        resumed: int,
    ) -> StudyResult:
        by_status = Counter(t.status for t in trials)
        warnings: list[str] = []
        for r in results:
            if r.subsession_size == 0 and r.note:
                warnings.append(f"{r.name}: {r.note}")
            if r.rounds_rejected:
                warnings.append(
                    f"{r.name}: {r.rounds_rejected} round(s) had no stable segment (no segment "
                    "between change points holds > 50% of the unit readings); they were not used"
                )
        if WPS_PI in {r.name for r in results}:
            wps = next(r for r in results if r.name == WPS_PI)
            r2 = wps.extra.get("r_squared")
            if r2 is not None and r2 < 0.9:
                warnings.append(
                    f"WPS regression fits poorly (R² = {r2:.2f}): is duration linear "
                    "in the work amount?"
                )
        watch, resources = watch_report(self.spec, trials)
        warnings.extend(watch)
        return StudyResult(
            study=self.spec.study.name,
            store=str(self.store_path),
            results=results,
            decision=decision,
            trials_total=len(trials),
            trials_by_status=dict(by_status),
            failures=trial_failures(trials),
            elapsed_s=sum(t.duration or 0.0 for t in trials),
            bookkeeping_s_per_trial=bookkeeping_per_trial(trials),
            launch_overhead=overhead,
            environment=env,
            resumed_trials=resumed,
            warnings=warnings,
            resources=resources,
        )
