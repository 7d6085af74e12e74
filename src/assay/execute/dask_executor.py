"""Trials on a Dask cluster: every trial a task on a worker, one trial per host at a time.

Each worker advertises the resource ``bench=1`` and every task asks for it, so two
trials never share a worker and disturb each other (run one worker per host).  A task
runs its trials with the same code as :class:`~assay.execute.executor.LocalExecutor`
(:func:`~assay.execute.trial.run_trial`: timeout, process-group kill, capped output,
readers, the bottleneck watch of that host); the driver takes the records back with
``as_completed`` and commits them: it stays the store's only writer.

Trials of one block (``TrialRequest.block``, an order study's run) are one task: they
run in order on one host.  When a worker dies, Dask runs its task again elsewhere; the
records of a task arrive once, so nothing is committed twice.
"""

from __future__ import annotations

import contextlib
import hashlib
import platform
import queue
import threading
import time
from collections.abc import Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.errors import StudyError
from assay.execute.executor import Executor, ExecutorStatus
from assay.execute.interference import QuietGate
from assay.execute.leftovers import end_running, stop_leftover
from assay.execute.monitor import ResourceMonitor
from assay.execute.trial import Step, TrialJob, TrialRequest, run_step, run_trial
from assay.store import DISTURBED, TrialRecord

if TYPE_CHECKING:
    from distributed import Client, Future

#: The resource every worker offers once and every trial takes: one trial per worker.
RESOURCE = "bench"

#: How often a wait for tasks looks whether they still can finish (a worker that left).
_CHECK_S = 2.0

_MONITOR: ResourceMonitor | None = None  # the worker process's bottleneck watch
_GATE: QuietGate | None = None  # the worker's interference = "wait"


def _worker_gate() -> QuietGate:
    global _GATE
    if _GATE is None:
        _GATE = QuietGate()
    return _GATE


def _worker_monitor() -> ResourceMonitor:
    global _MONITOR
    if _MONITOR is None:
        _MONITOR = ResourceMonitor()
        _MONITOR.calibrate()
    return _MONITOR


def worker_running_file(worker: Any = None) -> Path | None:
    """The note of the benchmark this Dask worker runs (see :mod:`assay.execute.leftovers`):
    a private file of this host named by the scheduler's address and the worker's name,
    so a worker its nanny restarted after a death reads its predecessor's; None outside
    a worker or without a home to keep it in."""
    from assay.execute.overhead import cache_path

    if worker is None:
        try:
            from distributed import get_worker

            worker = get_worker()
        except (ImportError, ValueError):
            return None
    base = cache_path()
    if base is None:
        return None
    address = getattr(getattr(worker, "scheduler", None), "address", "")
    key = hashlib.sha256(f"{address}\0{worker.name}".encode()).hexdigest()[:24]
    folder = base.parent / "workers"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        return None
    return folder / f"{key}.running"


def stop_predecessors_benchmark(worker: Any) -> str | None:
    """On a worker's start: kill the benchmark a dead worker of the same name left
    running on this host (#41: it ran on for ~8 s beside the restarted worker's next
    trial). Registered as a worker plugin by :class:`DaskExecutor`; a warning, or None."""
    path = worker_running_file(worker)
    return None if path is None else stop_leftover(path)


def _leftover_guard() -> Any:
    """The worker plugin of :func:`stop_predecessors_benchmark` (built here: Dask is the
    cluster extra's, not imported with this module); its teardown removes the worker's
    note when the worker closes."""
    from distributed.diagnostics.plugin import WorkerPlugin

    class LeftoverGuard(WorkerPlugin):
        name = "assay-leftover-guard"

        def setup(self, worker: Any) -> None:
            stop_predecessors_benchmark(worker)

        def teardown(self, worker: Any) -> None:
            path = worker_running_file(worker)
            if path is not None:
                end_running(path)

    return LeftoverGuard()


@dataclass(frozen=True)
class BlockResult:
    """What a worker sends back for one block: its trials, and why it stopped early."""

    records: list[TrialRecord]
    error: str | None = None


def worker_host() -> str:
    """This host as trials record it on a Dask worker: its name and the worker's address
    (``vm (10.0.0.2)``): clones of one image share a hostname, and their trials must not
    collapse into one host (#41). The name alone outside a worker.

    >>> worker_host() == platform.node()  # not in a Dask worker
    True
    """

    try:
        from distributed import get_worker

        address = get_worker().address
    except (ImportError, ValueError):
        return platform.node()
    return host_label(platform.node(), address)


def host_label(name: str, address: str) -> str:
    """A worker's host as reports name it: its hostname and the worker's address, as
    :func:`worker_host` makes it on the worker (clones of one image share a hostname).

    >>> host_label("vm", "tls://10.0.0.3:40123"), host_label("vm (10.0.0.3)", "tls://10.0.0.3:1")
    ('vm (10.0.0.3)', 'vm (10.0.0.3)')
    """
    from urllib.parse import urlsplit

    ip = urlsplit(address).hostname
    if not ip or f"({ip})" in name:
        return name or address
    return f"{name} ({ip})" if name else ip


def run_block(job: TrialJob, requests: Sequence[TrialRequest], monitor: bool) -> BlockResult:
    """Run trials in order on this worker (each after the job's reset, and before its
    conclude).  A failed reset or conclude ends the block; the trials before it (and
    the one a conclude followed) are kept."""
    watch = _worker_monitor() if monitor else None
    host = worker_host()
    if job.running_file is None:  # each trial's benchmark noted on this host (leftovers)
        job = replace(job, running_file=worker_running_file())
    records: list[TrialRecord] = []
    for request in requests:
        attempt, again = 0, True
        while again:
            try:
                if job.reset is not None:
                    run_step(job, job.reset)
                gate = _worker_gate() if job.quiet_wait else None
                if gate is not None:
                    gate.before_trial()
                mark = gate.mark() if gate is not None and job.repeat_disturbed else None
                record = run_trial(job, request, watch)
                record.host = host
                # interference = "repeat": a disturbed trial is set aside, measured again
                again = gate is not None and gate.repeat_if_disturbed(record, mark, attempt)
                attempt += 1
                records.append(record)
                if job.conclude is not None:
                    run_step(job, job.conclude)
            except StudyError as exc:
                return BlockResult(records, f"{platform.node()}: {exc}")
    return BlockResult(records)


def _worker_environment() -> dict[str, Any]:
    import os

    from assay.execute.environment import collect_environment

    # the host by name and address: clones of one image share a hostname (#41)
    return {**collect_environment(), "host": worker_host(), "load_1min": os.getloadavg()[0]}


def _step_on_worker(job: TrialJob, step: Step) -> str | None:
    try:
        run_step(job, step)
    except StudyError as exc:
        return str(exc)
    return None


#: What must agree between hosts for ``require_identical``.
HARDWARE = ("cpu_model", "cpu_count", "memory_bytes", "kernel", "machine")


def hardware_differences(workers: dict[str, dict[str, Any]]) -> list[str]:
    """What differs between the workers' machines, one line per property.

    >>> hardware_differences({"a": {"cpu_count": 4}, "b": {"cpu_count": 8}})
    ['cpu_count: 4 (a), 8 (b)']
    """
    out = []
    for key in HARDWARE:
        values: dict[str, list[str]] = {}
        for worker, env in sorted(workers.items()):
            values.setdefault(str(env.get(key)), []).append(worker)
        if len(values) > 1:
            out.append(f"{key}: " + ", ".join(f"{v} ({', '.join(w)})" for v, w in values.items()))
    return out


def blocks(requests: Sequence[TrialRequest]) -> list[list[TrialRequest]]:
    """The tasks of a batch: each block's trials together, in order; any other trial alone.

    >>> rs = [TrialRequest(i, ["true"], block=b) for i, b in enumerate([None, 1, 1, None, 2])]
    >>> [[r.seq for r in b] for b in blocks(rs)]
    [[0], [1, 2], [3], [4]]
    """
    out: list[list[TrialRequest]] = []
    where: dict[int, list[TrialRequest]] = {}
    for r in requests:
        if r.block is None:
            out.append([r])
        elif r.block in where:
            where[r.block].append(r)
        else:
            where[r.block] = [r]
            out.append(where[r.block])
    return out


class DaskExecutor(Executor):
    """Trials as tasks of a Dask cluster reached through ``client``.

    Setup and teardown steps run on every worker.  The workers must offer the
    :data:`RESOURCE` (``dask worker ... --nthreads 1 --resources bench=1``);
    :meth:`start` refuses a cluster where none does, instead of waiting forever.
    """

    def __init__(
        self,
        client: Client,
        *,
        monitor: bool = True,
        require_identical: bool = False,
        expected_workers: int = 1,
        wait_s: float = 60.0,
    ) -> None:
        self.client = client
        self.monitor = monitor
        self.require_identical = require_identical
        self.expected_workers = expected_workers  # a cluster we start: all of its workers
        self.wait_s = wait_s
        self._n_workers = 0
        # the batch being run: trials handed over, returned, and when it began
        self._batch = (0, 0, time.monotonic())
        # workers seen (address: host) and those lost during the study, as describe()
        # reports them (the same list: a result made later shows losses seen since)
        self._known: dict[str, str] = {}
        self._lost: list[dict[str, Any]] = []
        self._described: dict[str, Any] | None = None
        # each worker's address by its name as last seen, and the workers that came back
        # at a new address without a revive (a nanny restarted the one that died)
        self._worker_at: dict[str, str] = {}
        self._restarted: list[dict[str, str]] = []
        self._reviving: set[str] = set()  # revived: its next address is no restart
        self._workers_lock = threading.Lock()  # the three above

    def workers(self) -> dict[str, dict[str, Any]]:
        """The cluster's workers that can run trials, by address."""
        info = self._scheduler_workers()
        return {a: w for a, w in info.items() if w.get("resources", {}).get(RESOURCE, 0) >= 1}

    def _scheduler_workers(self) -> dict[str, Any]:
        """The scheduler's workers now; :class:`StudyError` in one line when the
        scheduler itself is gone (#41: a killed scheduler ended the study after 70 s of
        tracebacks, a KeyError among them: ``scheduler_info()`` then has no workers)."""
        # the status first: asking a scheduler that is gone blocks while the client
        # reconnects (30 s)
        lost = ConnectionError("scheduler-connection-lost")
        if self.client.status not in ("running", "newly-created"):
            raise StudyError(self._failure("the cluster cannot be asked", lost))
        info = self.client.scheduler_info()
        if "workers" not in info:
            raise StudyError(self._failure("the cluster cannot be asked", lost))
        return dict(info["workers"])

    def describe(self) -> dict[str, Any]:
        """The scheduler and every worker's host, load and environment."""
        envs = self.client.run(_worker_environment, workers=list(self.workers()))
        for address, env in envs.items():  # client.run is no task: no get_worker() there
            env["host"] = host_label(str(env.get("host", "")), address)
        self._known |= {a: str(e.get("host", a)) for a, e in envs.items()}
        # kept: the losses and re-runs seen later are added to it (the study's result
        # shows them)
        self._described = {
            "kind": "dask",
            "scheduler": self.client.scheduler_info()["address"],
            "workers": envs,
            "lost": self._lost,
            "restarted": self._restarted,
            "trials_run_again": 0,
        }
        return self._described

    def _note_worker(self, name: str, where: str, address: str) -> None:
        """Remember worker ``name``'s address (``where``: its host, as said); a new one
        that no revive started is the worker its nanny restarted after it died (#61: used
        again without a word in the report)."""
        with self._workers_lock:
            before = self._worker_at.get(name)
            self._worker_at[name] = address
            if before is None or before == address:
                return
            if name in self._reviving:
                self._reviving.discard(name)
                return
            at = time.strftime("%H:%M:%S")
            self._restarted.append({"host": where, "worker": address, "at": at})

    def _note_lost(self, alive: set[str] | None = None) -> None:
        """Record the workers that left since the last look (#41: a killed host was
        still listed as one of the study's), with when each was seen gone; Dask runs a
        lost worker's trials again on the others (:meth:`_count_run_again`)."""
        alive = self._alive_workers() if alive is None else alive
        info = self.client.scheduler_info().get("workers", {})  # none: the scheduler is gone
        for a in alive - set(self._known):  # a worker a nanny restarted, one that joined
            self._known[a] = str(info.get(a, {}).get("name", a))
        for a in alive:
            name = str(info.get(a, {}).get("name", a))
            before = self._worker_at.get(name, a)  # said as its earlier address was
            self._note_worker(name, self._known.get(before, self._known[a]), a)
        gone = {w["worker"] for w in self._lost}
        for a in sorted(set(self._known) - alive - gone):
            self._lost.append({"worker": a, "host": self._known[a], "seen_at": time.time()})

    def _count_run_again(self, futures: Sequence[Future[Any]], sizes: Sequence[int]) -> None:
        """Add the trials of blocks Dask ran again (their worker died under them: the
        scheduler's ``suspicious`` count) to the description's ``trials_run_again``."""

        def suspicious(dask_scheduler: Any, keys: list[str]) -> list[int]:
            # on the scheduler (a local function: pickled by value)
            tasks = dask_scheduler.tasks
            return [getattr(tasks.get(k), "suspicious", 0) or 0 for k in keys]

        try:
            counts = self.client.run_on_scheduler(suspicious, keys=[f.key for f in futures])
        except Exception:  # the scheduler is gone: the study says so
            return
        again = sum(n for n, c in zip(sizes, counts, strict=False) if c)
        if again and self._described is not None:
            self._described["trials_run_again"] += again

    def slots(self) -> int:
        self._n_workers = len(self.workers())
        return max(self._n_workers, 1)

    def status(self) -> ExecutorStatus:
        total, done, began = self._batch
        in_flight = total - done
        left = in_flight * (time.monotonic() - began) / done if done and in_flight else None
        return ExecutorStatus(self._n_workers, min(in_flight, self._n_workers), in_flight, left)

    def start(self) -> None:
        try:
            self.client.wait_for_workers(self.expected_workers, timeout=self.wait_s)
        except TimeoutError:
            have = len(self.client.scheduler_info().get("workers", {}))
            raise StudyError(
                f"the Dask cluster has {have} of its {self.expected_workers} workers after "
                f"{self.wait_s:g} s; see the workers' logs (a host that cannot start one)"
            ) from None
        # a worker that dies mid-trial leaves its benchmark running: its successor kills
        # it as it starts (and so does every worker that joins)
        self.client.register_plugin(_leftover_guard())
        if not self.workers():
            where = self.client.scheduler_info()["address"]
            raise StudyError(
                f"the Dask cluster at {where} has no worker offering the resource '{RESOURCE}': "
                "start each worker with 'dask worker ADDRESS --nthreads 1 --resources "
                f"{RESOURCE}=1'"
            )
        if self.require_identical:
            differ = hardware_differences(self.describe()["workers"])
            if differ:
                raise StudyError(
                    "[cluster] require_identical: the workers' machines differ: "
                    + "; ".join(differ)
                )

    def run_step(self, job: TrialJob, step: Step) -> None:
        # a task pinned to each worker (not Client.run, which blocks the worker's event
        # loop): a long setup does not look like a dead worker, and takes the resource
        remote = replace(job, running_file=None)
        futures = {
            w: self.client.submit(
                _step_on_worker,
                remote,
                step,
                workers=[w],
                allow_other_workers=False,
                resources={RESOURCE: 1},
                pure=False,
            )
            for w in self.workers()
        }
        # a task pinned to a worker that dies never runs anywhere else: wait, but say so
        pinned = {f.key: w for w, f in futures.items()}
        try:
            for _ in self._as_done(list(futures.values()), pinned):
                pass
            errors = {w: f.result() for w, f in futures.items()}
        except Exception as exc:  # the worker or the scheduler gone under the task
            if isinstance(exc, StudyError):
                raise
            raise StudyError(self._failure("a setup or teardown step could not run", exc)) from None
        finally:
            self.client.cancel([f for f in futures.values() if not f.done()])
        failed = {w: e for w, e in errors.items() if e is not None}
        if failed:
            worker, error = sorted(failed.items())[0]
            more = f" (and on {len(failed) - 1} other worker(s))" if len(failed) > 1 else ""
            raise StudyError(f"on worker {worker}: {error}{more}")

    def run_trials(
        self, job: TrialJob, requests: Sequence[TrialRequest]
    ) -> Generator[TrialRecord, None, None]:
        # a path beside the store means nothing on another host, and one per study
        # cannot serve several trials at once
        remote = replace(job, running_file=None)
        self._n_workers = len(self.workers())
        self._batch = (len(requests), 0, time.monotonic())
        todo = blocks(requests)
        futures = [
            self.client.submit(
                run_block, remote, block, self.monitor, resources={RESOURCE: 1}, pure=False
            )
            for block in todo
        ]
        try:
            for future in self._as_done(futures):
                try:
                    result: BlockResult = future.result()
                except Exception as exc:  # KilledWorker: the task killed worker after worker
                    raise StudyError(self._failure("a trial could not run", exc)) from None
                total, done, began = self._batch
                kept = sum(r.status != DISTURBED for r in result.records)  # not repeats
                self._batch = (total, done + kept, began)
                yield from result.records
                if result.error is not None:
                    raise StudyError(result.error)
        finally:
            pending = [f for f in futures if not f.done()]
            if pending:
                self.client.cancel(pending)
            # the report's, never the study's end: a lost scheduler is reported above
            with contextlib.suppress(Exception):
                self._note_lost()
                if self._lost:
                    self._count_run_again(futures, [len(b) for b in todo])

    def _as_done(
        self, futures: Sequence[Future[Any]], pinned: Mapping[Any, str] | None = None
    ) -> Iterator[Future[Any]]:
        """The futures as they finish, in that order.  A :class:`StudyError` instead of
        waiting forever when one never can: the worker a task is ``pinned`` to (task key
        to worker address) has left, or the cluster has had no worker for ``wait_s``
        seconds (every worker of an external cluster died)."""
        finished: queue.SimpleQueue[Future[Any]] = queue.SimpleQueue()
        for future in futures:
            future.add_done_callback(finished.put)
        left = {f.key for f in futures}
        without_workers: float | None = None
        while left:
            try:
                future = finished.get(timeout=_CHECK_S)
            except queue.Empty:
                alive = self._alive_workers()
                self._note_lost(alive)
                gone = sorted({w for k, w in (pinned or {}).items() if k in left} - alive)
                if gone:
                    raise StudyError(
                        f"worker {gone[0]} left the Dask cluster during the setup or teardown "
                        "step it had to run; nothing else was run there: run the same "
                        "command again"
                    ) from None
                now = time.monotonic()
                without_workers = (without_workers or now) if not alive else None
                if without_workers is not None and now - without_workers >= self.wait_s:
                    raise StudyError(
                        f"the Dask cluster has had no worker for {self.wait_s:g} s; the "
                        "trials that finished are kept: start workers and run the same "
                        "command again"
                    ) from None
                continue
            if future.key in left:
                left.discard(future.key)
                yield future

    def _alive_workers(self) -> set[str]:
        try:
            return set(self.workers())
        except Exception as exc:  # the scheduler itself is gone
            raise StudyError(self._failure("the cluster cannot be asked", exc)) from None

    def _failure(self, what: str, exc: BaseException) -> str:
        """What went wrong on the cluster, in Assay's words where Dask's are about itself."""
        text = str(exc)
        if "scheduler-connection-lost" in text or self.client.status not in (
            "running",
            "newly-created",
        ):
            where = getattr(self.client.scheduler, "address", "")
            return (
                f"{what}: the connection to the Dask scheduler {where} was lost; the trials "
                "that finished are kept: run the same command again"
            )
        return f"{what} on the cluster: {text[:500]}"
