"""Running a run-until-CI study: execute trials, commit each one, analyse, decide.

The loop is the DESIGN.md flow: the design proposes the next trial, the executor
runs it, the store commits it as soon as it ends, the analysis reads what is stored
and the design decides whether more trials are needed. Everything finished is in the
store, so running the same study again resumes where it stopped.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from dataclasses import fields as dataclass_fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from typing_extensions import Unpack

from assay.designs.run_until_ci import (
    WPS_PI,
    Decision,
    PIResult,
    RoundData,
    analyze_pi,
    analyze_wps,
    decide,
    next_look,
    planner_for,
    round_segment,
)
from assay.execute.overhead import LaunchOverhead
from assay.spec import PISpec, Spec
from assay.store import Store, TrialRecord
from assay.studies.base import (
    AnalysisPace,
    OpenStudy,
    Study,
    StudyError,
    StudyOptions,
    disturbed_trials,
    execution_dict,
    execution_fields,
    host_warnings,
    open_stored,
    peak_memory,
    result_header,
    samples_dict,
    stderr_warning,
    watch_report,
    with_quiet_waits,
)

__all__ = [
    "Progress",
    "Runner",
    "StudyError",
    "StudyResult",
    "Tally",
    "analyse",
    "decide_trials",
    "replayed_streak",
    "round_data",
    "stored_decision",
]


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
    bookkeeping_s_median: float | None = None  # the typical own cost between trials
    session_wall_s: float | None = None  # this session's wall time (None: not run now)
    session_measured_s: float | None = None  # of which its commands ran
    warnings: list[str] = field(default_factory=list)
    resources: dict[str, Any] | None = None  # the bottleneck watch (None: not monitored)
    # each PI again without the trials other processes disturbed (None: none seen)
    without_disturbed: dict[str, Any] | None = None
    samples: list[dict[str, Any]] = field(default_factory=list)  # every reading, by PI
    # the command's peak memory over its trials (base.peak_memory; None: not measured)
    max_rss: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            **result_header("run"),
            "study": self.study,
            "store": self.store,
            "done": self.decision.done,
            "reason": self.decision.reason,
            "pis": [r.as_dict() for r in self.results],
            "without_disturbed": self.without_disturbed,
            "samples": self.samples,
            "max_rss": self.max_rss,
            **execution_dict(self),
        }


def _pis_to_analyse(spec: Spec) -> list[PISpec]:
    # With an adjustable work amount the default wall-time PI is meaningless
    # (rounds differ in length by design): the WPS regression replaces it.
    if spec.benchmark.work is not None and "pis" not in spec.model_fields_set:
        return []
    return list(spec.pis)


#: Each successful round's analysis input by ``(run, seq, pi)``: a stored trial never
#: changes, so between rounds only the newest one is read (and goes through change-point
#: detection); rebuilding every round's input after each trial was the largest O(n) part
#: of a trial's own cost (issue #17).
Segments = dict[tuple[int, int, str], RoundData]


def round_data(
    pi: PISpec, ok_trials: list[TrialRecord], warmup_removal: str, cache: Segments
) -> list[RoundData]:
    """What the analysis of one PI needs from successful trials.

    ``cache`` keeps each round's input, its stable segment included, by
    ``(run, seq, pi)``, so that between rounds only the newest round is read and goes
    through change-point detection.
    """
    rounds = []
    for t in ok_trials:
        key = (t.run, t.seq, pi.name)
        got = cache.get(key)
        if got is None:
            units = t.unit_readings.get(pi.name)
            got = cache[key] = RoundData(
                reading=t.readings.get(pi.name),
                units=units,
                work=t.work,
                duration=t.duration or math.nan,
                segment="unknown" if units is None else round_segment(units, warmup_removal),
            )
        rounds.append(got)
    return rounds


def in_process_spec(name: str, command: list[str], source: str) -> Spec:
    """The study a result measured in process is stored as: a valid study (``assay ls``
    and ``assay show`` read it) of the mean time per call, whose command says where it
    ran (``["pytest", nodeid]``, ``["python", "module.function"]``)."""
    from assay.spec import parse_spec_data

    data = {
        "study": {"name": name},
        "benchmark": {"command": command},
        "pi": [{"name": "time_per_call", "unit": "s", "direction": "lower"}],
    }
    return parse_spec_data(data, source=source)


def record_in_process(
    store_path: Path, spec: Spec, result: PIResult, environment: dict[str, Any]
) -> None:
    """Store ``result`` (:func:`assay.api.measure`'s) as a new session of ``spec``'s
    study, read back by :func:`in_process_result` (the earlier ones:
    :func:`in_process_runs`)."""
    with Store(store_path) as store:
        name = spec.study.name
        study_id = store.open_study(name, spec.measurement_hash(), spec.model_dump(mode="json"))
        session = store.start_session(study_id, environment)
        store.end_session(session, result.as_dict())


def in_process_runs(store_path: Path, spec: Spec) -> list[dict[str, Any]]:
    """The stored runs of ``spec``'s study measured in process, oldest first: each
    session that ended with a result, as ``id``, ``started``, ``ended``, ``result`` and
    ``environment`` (what :func:`record_in_process` was given: the pytest plugin's gate
    verdict, saved name and git commit)."""
    with Store(store_path) as store:
        found = store.find_study(spec.study.name)
        if found is None:
            return []
        sessions = store.study_sessions(found[0])
        environments = store.environments(found[0])
    return [
        {**s, "environment": env}
        for s, env in zip(sessions, environments, strict=True)
        if s["ended"] is not None and isinstance(s["result"], dict)
    ]


def in_process_result(store: Store, st: OpenStudy) -> tuple[PIResult, Decision] | None:
    """The result a study measured in process stored (the pytest plugin's: one
    :class:`PIResult` per session, no trials), with a decision saying so; None for a
    study with trials, or whose last session stored another kind of result."""
    if st.trials:
        return None
    sessions = store.study_sessions(st.study_id)
    ended = [s for s in sessions if s["ended"] is not None and isinstance(s["result"], dict)]
    if not ended:
        return None
    last = ended[-1]["result"]
    fields = {f.name for f in dataclass_fields(PIResult)}
    if not {"name", "mean", "low", "high", "met"} <= set(last) or not set(last) <= fields:
        return None
    res = PIResult(**last)
    when = datetime.fromtimestamp(float(ended[-1]["ended"]), UTC).strftime("%Y-%m-%d %H:%M UTC")
    how = "target reached" if res.met else "target not met"
    # cli.exits.run_status reads the reason's start: no trials is no failure here
    reason = f"measured in process (assay.measure, the pytest plugin) on {when}: {how}"
    return res, Decision(True, reason, 0, res.met)


def analyse(
    spec: Spec,
    trials: list[TrialRecord],
    segments: Segments | None = None,
    *,
    locate: bool = True,
) -> list[PIResult]:
    """Per-PI results from stored trials.

    ``segments`` caches each round's input (see :func:`round_data`); ``locate=False``
    leaves out where a drifting PI's level moved (see :func:`analyze_pi`).
    """
    cache = {} if segments is None else segments
    ok = [t for t in trials if t.ok]
    results: list[PIResult] = []
    for pi in _pis_to_analyse(spec):
        rounds = round_data(pi, ok, spec.stop.warmup_removal, cache)
        results.append(analyze_pi(pi, rounds, spec.stop, locate=locate))
    if spec.benchmark.work is not None:
        wps_rounds = [RoundData(work=t.work, duration=t.duration or math.nan) for t in ok]
        results.append(analyze_wps(wps_rounds, spec.stop, spec.benchmark.work))
    return results


@dataclass
class Tally:
    """Running sums over a study's trials: the loop adds each trial once, instead of
    summing all of them after each one (O(n) Python a trial: ~0.1 ms between trials of
    a no-op at 1,000 rounds, issue #17)."""

    rounds: int = 0
    failed: int = 0
    elapsed: float = 0.0  # every trial's duration
    ok_elapsed: float = 0.0  # the successful ones'
    units: dict[str, int] = field(default_factory=dict)  # unit readings of successful trials

    @classmethod
    def of(cls, trials: list[TrialRecord]) -> Tally:
        tally = cls()
        for t in trials:
            tally.add(t)
        return tally

    def add(self, t: TrialRecord) -> None:
        self.rounds += 1
        self.elapsed += t.duration or 0.0
        if not t.ok:
            self.failed += 1
            return
        self.ok_elapsed += t.duration or 0.0
        for name, units in t.unit_readings.items():
            self.units[name] = self.units.get(name, 0) + units.size

    def raw_per_round(self, spec: Spec) -> dict[str, float]:
        """Unit readings per successful round, for each PI that has them."""
        ok = self.rounds - self.failed
        with_units = [p.name for p in spec.pis if p.units is not None and ok]
        return {name: self.units.get(name, 0) / ok for name in with_units}


def decide_trials(
    spec: Spec,
    trials: list[TrialRecord],
    results: list[PIResult],
    streak: int,
    tally: Tally | None = None,
) -> Decision:
    """The stopping rule applied to ``trials`` (analysed as ``results``), after
    ``streak`` analyses in a row that met the target (``tally``: their sums, if kept)."""
    tally = Tally.of(trials) if tally is None else tally
    return decide(
        results,
        spec.pis,
        spec.stop,
        rounds_done=tally.rounds,
        rounds_failed=tally.failed,
        elapsed=tally.elapsed,
        raw_per_round=tally.raw_per_round(spec),
        met_streak=streak,
    )


def replayed_streak(spec: Spec, trials: list[TrialRecord], segments: Segments | None = None) -> int:
    """How many of the last ``confirm_rounds - 1`` shorter prefixes of ``trials``, in a
    row up to the longest, meet the target: the streak :func:`decide_trials` needs,
    counted in rounds, also where the loop did not analyse them."""
    streak = 0
    for k in range(min(spec.stop.confirm_rounds - 1, len(trials)), 0, -1):
        prefix = trials[:-k]
        met = decide_trials(spec, prefix, analyse(spec, prefix, segments), streak).target_met
        streak = streak + 1 if met else 0
    return streak


def stored_decision(spec: Spec, trials: list[TrialRecord], results: list[PIResult]) -> Decision:
    """The decision the loop made after the last of ``trials``, from the trials alone
    (the loop's last analysis is always of all its trials; the target streak is
    replayed: :func:`replayed_streak`)."""
    return decide_trials(spec, trials, results, replayed_streak(spec, trials))


class Runner(Study):
    """Runs one run-until-CI study to its stopping rule: one trial per round, analysed
    and decided where a decision can change (Pilot's method analyses after each round;
    :func:`~assay.designs.run_until_ci.next_look` skips the rounds that cannot end the
    study, the stop coming on the same round), and at a pace where the commands are
    shorter than an analysis (:class:`~assay.studies.base.AnalysisPace`); the
    confirmation of a met target is then replayed on the rounds before
    (:func:`replayed_streak`)."""

    def __init__(
        self,
        spec: Spec,
        store_path: Path,
        *,
        on_progress: Callable[[Progress], None] | None = None,
        max_new_rounds: int | None = None,
        **options: Unpack[StudyOptions],
    ) -> None:
        super().__init__(spec, store_path, **options)
        self.on_progress = on_progress
        # at most this many rounds this session (a block of assay history's interleaved
        # commits): the session then ends 'paused', not done; a later one resumes it
        self.max_new_rounds = max_new_rounds

    def run(self) -> StudyResult:
        leftover = self._stop_leftover()
        with Store(self.store_path) as store:
            st = self._open(store)
            decision = self._with_setup(lambda: self._loop(st))
            result = self._result(st, analyse(self.spec, st.trials), decision)
            result.warnings[:0] = [*([leftover] if leftover else []), *self.step_notes]
            store.end_session(st.session, result.as_dict())
            return result

    def _loop(self, st: OpenStudy) -> Decision:
        spec = self.spec
        trials = st.trials
        planner = planner_for(spec.benchmark.work)
        seq = st.store.next_seq(st.study_id)
        segments: Segments = {}
        streak = 0  # rounds in a row, up to the last analysed, that met the target
        looked_at, look_at = -1, 0  # rounds at the last analysis; where one is next due
        pace = AnalysisPace()  # commands shorter than an analysis: not every round
        results: list[PIResult] = []
        last = Decision(False, "running")  # the last analysis's
        tally = Tally.of(trials)
        while True:
            n = len(trials)
            decision = None
            # the block's end is analysed: a study done there is known to be done
            paused = self.max_new_rounds is not None and n - st.resumed >= self.max_new_rounds
            if not paused and (n < look_at or not pace.due(st.measured_now)):
                # no analysis due (none can stop the study yet: next_look; or the pace):
                # the budget and the failures are checked (an analysis decides when they
                # end the study); the rounds left count down
                quick = decide_trials(spec, trials, results, 0, tally)
                if not quick.done:
                    left = last.rounds_left
                    decision = replace(quick, rounds_left=left and max(left - n + looked_at, 1))
            if decision is None:
                started = time.perf_counter()
                # where a drifting PI moved is said once, in the result (run() analyses again)
                results = analyse(spec, trials, segments, locate=False)
                if looked_at != n - 1:
                    streak = 0  # the round before was not analysed: its streak is unknown
                decision = decide_trials(spec, trials, results, streak, tally)
                if decision.target_met and looked_at != n - 1 and spec.stop.confirm_rounds > 1:
                    # ... so the confirmation is replayed on the rounds before
                    streak = replayed_streak(spec, trials, segments)
                    decision = decide_trials(spec, trials, results, streak, tally)
                streak = streak + 1 if decision.target_met else 0
                looked_at, look_at, last = n, next_look(decision, n, spec.stop), decision
                pace.analysed(time.perf_counter() - started, measured=st.measured_now)
            if self.on_progress is not None:
                ok = tally.rounds - tally.failed
                self.on_progress(
                    Progress(
                        rounds=tally.rounds,
                        failed=tally.failed,
                        elapsed=tally.elapsed,
                        results=results,
                        decision=decision,
                        last_status=trials[-1].status if trials else "",
                        mean_round_s=tally.ok_elapsed / ok if ok else math.nan,
                    )
                )
            if decision.done:
                return decision
            if paused:
                return replace(decision, reason=f"paused after {n - st.resumed} round(s)")
            # one round per trial slot of the executor (1 here; a cluster's workers)
            width = max(1, min(self.executor.slots(), spec.stop.max_rounds - len(trials)))
            if self.max_new_rounds is not None:
                width = min(width, self.max_new_rounds - (n - st.resumed))
            batch = []
            for i in range(width):
                values: dict[str, object] = dict(spec.params)
                work: float | None = None
                if planner is not None and spec.benchmark.work is not None:
                    history = [(t.work or 0.0, t.duration or 0.0) for t in trials if t.ok]
                    work = float(planner.next_work_amount(history))
                    values[spec.benchmark.work.placeholder] = int(work)
                batch.append(self.request(seq + i, values, work=work))
            for record in self.measure(st, batch):
                tally.add(record)
            seq += width

    def stored(self) -> StudyResult:
        """The result of the study as stored, analysed and decided as at the end of
        :meth:`run`, without running anything or writing to the store."""
        with Store(self.store_path, read_only=True) as store:
            st = open_stored(store, self.spec.study.name)
            measured = in_process_result(store, st)
            if measured is not None:  # assay.measure / the pytest plugin: no trials
                return self._result(st, [measured[0]], measured[1])
            results = analyse(self.spec, st.trials)
            return self._result(st, results, stored_decision(self.spec, st.trials, results))

    def _result(self, st: OpenStudy, results: list[PIResult], decision: Decision) -> StudyResult:
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
        warnings.extend(host_warnings(self.spec, st.trials))
        warnings.extend(stderr_warning(st.trials))
        watch, resources = watch_report(self.spec, st.trials)
        warnings.extend(watch)
        resources = with_quiet_waits(resources, self.executor.quiet_waits())
        return StudyResult(
            study=self.spec.study.name,
            store=str(self.store_path),
            results=results,
            decision=decision,
            warnings=warnings,
            resources=resources,
            without_disturbed=without_disturbed(self.spec, st.trials),
            samples=samples_dict(_pis_to_analyse(self.spec), st.trials),
            max_rss=peak_memory(st.trials),
            **execution_fields(st),
        )


def without_disturbed(spec: Spec, trials: list[TrialRecord]) -> dict[str, Any] | None:
    """Each PI analysed again without the watched trials that other processes disturbed
    (issue #36: "the PI's CI with and without those trials"), so that a reader sees
    whether the neighbours moved the answer; None when no trial was seen disturbed.
    Unwatched trials stay in: their interference is not known."""
    bad, watched = disturbed_trials(trials)
    if not bad:
        return None
    kept = [t for t in trials if (t.run, t.seq) not in bad]
    again = analyse(spec, kept, locate=False)
    pis = [
        {k: getattr(r, k) for k in ("name", "unit", "mean", "low", "high", "half_width",
                                    "relative_half_width", "confidence", "rounds_used")}
        for r in again
    ]  # fmt: skip
    return {"left_out": len(bad), "watched": watched, "pis": pis}
