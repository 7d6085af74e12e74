"""The one interface through which every study runs its trials.

A study loop hands the executor a batch of :class:`~assay.execute.trial.TrialRequest`
(a run-until-CI round, a comparison cycle, an order run, a sweep step, the LHS
samples) and takes each trial's :class:`~assay.store.TrialRecord` back as it
finishes, to commit it to the store at once: the loop stays the store's only writer.
A loop that has seen enough (a deadline, too many failures) stops iterating, and the
trials not yet started are not run.

:class:`LocalExecutor` runs the trials on this machine, one after the other, in the
order given (the reset step before each).  Another executor (a cluster of machines)
implements the same three methods; the loops do not change.

>>> from assay.execute.trial import TrialJob, TrialRequest
>>> from assay.spec import PISpec
>>> job = TrialJob(pis=(PISpec(name="wall_time"),), timeout=10)
>>> ex = LocalExecutor(monitor=False)
>>> ex.start()
>>> [r.seq for r in ex.run_trials(job, [TrialRequest(0, ["true"]), TrialRequest(1, ["true"])])]
[0, 1]
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from assay.errors import StudyError
from assay.execute.interference import QuietGate
from assay.execute.monitor import ResourceMonitor
from assay.execute.trial import Step, TrialJob, TrialRequest, run_step, run_trial
from assay.store import HostRun, TrialRecord

if TYPE_CHECKING:
    from assay.spec import Spec


@dataclass(frozen=True)
class ExecutorStatus:
    """A cluster's state during a batch, for the live display."""

    workers: int
    busy: int
    in_flight: int  # trials handed over and not yet returned
    left_s: float | None  # estimated time to the end of the batch (None: not known yet)


class Executor(ABC):
    """Runs a study's steps and trials; see the module docstring."""

    def describe(self) -> dict[str, Any]:
        """Where trials run, for the study's recorded environment."""
        return {"kind": "local", "workers": 1}

    def slots(self) -> int:
        """How many trials run at once (a loop hands over that many when it can)."""
        return 1

    def status(self) -> ExecutorStatus | None:
        """Workers and trials in flight, for a live display (None: one trial at a time)."""
        return None

    def prepare(self, spec: Spec) -> None:
        """Take what the executor needs of the study file (a multi-host executor: the
        roles' steps); nothing here."""
        del spec

    def run_phase(self, job: TrialJob, what: str, step: Step | None) -> None:
        """The study's ``setup`` or ``teardown``: ``step`` (``[benchmark]``'s) on every
        host that runs trials; a multi-host executor adds its roles' steps."""
        if step is not None:
            self.run_step(job, step)

    def drain_host_runs(self) -> list[HostRun]:
        """The hosts' outcomes of the study's steps since the last call, for the store
        (a multi-host executor's; none here)."""
        return []

    def quiet_waits(self) -> dict[str, float] | None:
        """What ``interference = "wait"`` did this session (see
        :meth:`~assay.execute.interference.QuietGate.summary`); None: it never waited."""
        return None

    @abstractmethod
    def start(self) -> None:
        """A study session begins: calibrate what needs it, restart the clocks."""

    @abstractmethod
    def run_step(self, job: TrialJob, step: Step) -> None:
        """Run a setup or teardown step on every host that runs trials;
        :class:`~assay.errors.StudyError` when it fails."""

    @abstractmethod
    def run_trials(
        self, job: TrialJob, requests: Sequence[TrialRequest]
    ) -> Generator[TrialRecord, None, None]:
        """Run the requests (the job's reset before each); yield each trial's record as
        it finishes.  A failed reset raises :class:`~assay.errors.StudyError`; trials
        yielded before it are the caller's to keep.  Closing the generator early stops
        the batch: trials not yet started are not run."""


class LocalExecutor(Executor):
    """Trials on this machine, one at a time, in the order given.

    ``monitor``: the bottleneck watch samples CPU, memory, disk and network during
    trials, as many as it can watch for 1% of the study's time (every trial of 0.1 s
    or more; its series are stored with the trial; see
    :class:`~assay.execute.monitor.ResourceMonitor`).  Each record's
    ``bookkeeping_s`` is Assay's whole own cost before it: the time from the previous
    trial's command's reap to this one's spawn, less the reset (reading the output, the
    watch's stop and start, the store's commit, the analysis).
    """

    def __init__(self, *, monitor: bool = True) -> None:
        self.monitor = monitor
        self._monitor: ResourceMonitor | None = None
        self._prev_end: float | None = None  # the previous trial's command's reap
        self._gate: QuietGate | None = None  # interference = "wait"

    def start(self) -> None:
        self._prev_end = None
        if self.monitor and self._monitor is None:
            self._monitor = ResourceMonitor(paced=True)
            self._monitor.calibrate()

    def run_step(self, job: TrialJob, step: Step) -> None:
        run_step(job, step)

    def quiet_waits(self) -> dict[str, float] | None:
        return None if self._gate is None else self._gate.summary()

    def run_trials(
        self, job: TrialJob, requests: Sequence[TrialRequest]
    ) -> Generator[TrialRecord, None, None]:
        for request in requests:
            attempt, again = 0, True
            while again:
                reset_s = 0.0
                if job.reset is not None:
                    r0 = time.perf_counter()
                    run_step(job, job.reset)
                    reset_s = time.perf_counter() - r0
                gate = None
                if job.quiet_wait:
                    gate = self._gate = self._gate or QuietGate()
                    reset_s += gate.before_trial()  # not Assay's own cost
                mark = gate.mark() if gate is not None and job.repeat_disturbed else None
                before = time.perf_counter()
                prev = self._prev_end
                record = run_trial(job, request, self._monitor)
                start = record.spawned if record.spawned is not None else before
                record.bookkeeping_s = None if prev is None else max(start - prev - reset_s, 0.0)
                self._prev_end = record.reaped if record.reaped is not None else time.perf_counter()
                # interference = "repeat": a disturbed trial is set aside, measured again
                again = gate is not None and gate.repeat_if_disturbed(record, mark, attempt)
                attempt += 1
                if job.conclude is not None:
                    try:
                        run_step(job, job.conclude)
                    except StudyError:
                        yield record  # measured before its conclude failed: kept
                        raise
                    self._prev_end = time.perf_counter()  # not Assay's own cost either
                yield record
