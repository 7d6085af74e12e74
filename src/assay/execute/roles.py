"""Trials that span several machines: roles of hosts, each host reached through its Dask worker.

A study with ``[cluster.roles]`` (see :mod:`assay.rolespec`) runs every trial on all
of its hosts at once: the measured role's one host runs ``[benchmark].command`` (the
trial's readings come from it), every other host runs its role's ``command`` if it
has one, and every host runs the bottleneck watch until the measured command ends.
Setup, reset and teardown run role by role, in the order of ``[cluster.roles]``
(teardown in reverse), on every host of a role in parallel; the measured host runs
``[benchmark]``'s own step after its role's.  A role whose steps use a value a trial's
setting gives (swept, a knob, a variant's) is set up before the trial that first needs
it and set up again (teardown with the old values, setup with the new) whenever a
trial's values differ (#42).  Each host's part (exit status, output,
samples) is a :class:`~assay.store.HostRun`, stored with its trial (or, for the
study's steps, on its own).

Host ``i`` of the cluster (``role_hosts`` order) is the Dask worker named ``i`` (the
SSH cluster and ``--workers N`` name them so; ``dask worker --name``) or named as the
host; each task is pinned to its host's worker (``client.submit(..., workers=[addr],
allow_other_workers=False)``).  A worker that leaves while its host has a task (the
process died, the machine is gone) fails the trial, naming the host: Dask would
otherwise wait for it forever.  ``[cluster] on_host_failure`` decides whether the
study then stops (the default) or goes on to the next trial.
"""

from __future__ import annotations

import contextlib
import functools
import queue
import re
import threading
import time
import uuid
from collections.abc import Callable, Collection, Generator, Mapping, Sequence
from concurrent.futures import CancelledError as futures_cancelled
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from assay.errors import StudyError
from assay.execute.command import render_argv, run_command
from assay.execute.dask_executor import RESOURCE, DaskExecutor, _worker_monitor, blocks
from assay.execute.executor import ExecutorStatus
from assay.execute.trial import Step, TrialJob, TrialRequest, run_trial
from assay.rolespec import (
    FaultSpec,
    Need,
    active_roles,
    host_values,
    measured_role,
    role_size,
    trial_need,
)
from assay.store import DISTURBED, HostRun, TrialRecord

if TYPE_CHECKING:
    from distributed import Client, Future

    from assay.spec import ClusterSpec, Spec

#: How often the driver looks at the workers while it waits for a host (s).
POLL_S = 0.1
#: Where a multi-host study's time goes, as its result breaks it down (#61): the roles'
#: first setup, their setting up again for a trial's setting (``reconfiguration``), the
#: resets, the trials (every host's part, from the first host's start to the last's
#: end), the final teardown.  Seconds summed over the groups that run at once.
PHASES = ("setup", "reconfiguration", "reset", "trial", "teardown")

#: Polls in a row a worker must be missing from the scheduler before it counts as gone:
#: a healthy cluster's scheduler_info() listed no worker in 1 of 9,907 calls (#41).
GONE_CHECKS = 5
#: How long a trial waits for a host's worker to come back (a nanny restarts a killed one;
#: over SSH, Assay starts a new one once the host answers again: see ``revive``).
REJOIN_S = 30.0
#: How often a host without its worker is tried again (its SSH port, then a new worker).
REVIVE_S = 5.0
#: Beyond the study's timeout, how long a host's part may take (start-up, the watch).
GRACE_S = 60.0
#: Why a trial failed whose hosts were not all ready within GRACE_S.
NOT_READY = (
    f"the hosts were not all ready within {GRACE_S:.0f} s (a watch that did not start, or "
    "a role's command that did not print its ready pattern)"
)


@dataclass(frozen=True)
class HostSlot:
    """One host of a role: ``index`` its place in the role as a trial has it (its
    group's: ``{host.index}``), ``place`` in the whole role (as reports name it),
    ``worker`` in the cluster's host list."""

    role: str
    host: str
    index: int
    worker: int
    place: int = 0

    def where(self) -> str:
        """``10.0.0.2 (server[1])``: by its place in the whole role."""
        return f"{self.host} ({self.role}[{self.place}])"


class RolePlan:
    """The study's roles with their steps rendered for each host (pure)."""

    def __init__(
        self,
        roles: Mapping[str, Sequence[str]],
        measure: str | None,
        steps: Mapping[str, Mapping[str, Sequence[str]]],
        params: Mapping[str, object],
        env: Mapping[str, str],
        shell: bool = False,
        per_trial: Collection[str] = (),
        counts: Mapping[str, str | int] | None = None,
        packed: bool = False,
        ready: Mapping[str, str] | None = None,
        faults: Sequence[FaultSpec] = (),
    ) -> None:
        self.roles = {r: list(h) for r, h in roles.items()}
        self.faults = list(faults)  # [[fault]]: done to a host of a role inside trials
        self.ready = dict(ready or {})  # role -> what its command prints once ready
        self.counts = dict(counts or {})  # role -> the parameter (or number) that sizes it
        self.packed = packed
        self.measured = measured_role(self.roles, measure)
        self.steps = steps
        self.params = dict(params)
        self.env = dict(env)
        self.shell = shell
        # the names whose value a trial's setting gives (swept, knobs, variants')
        self.per_trial = set(per_trial)
        # what each role's steps depend on, and the roles set up per trial: fixed for
        # the study, asked before every trial
        self._uses = {r: self._depends_on(r) for r in self.roles}
        first = next((i for i, r in enumerate(self.roles) if self._uses[r] & self.per_trial), None)
        if packed:  # a trial's group is formed for it: every role set up with its group
            first = 0
        self._per_trial_roles = [] if first is None else list(self.roles)[first:]
        slots, i = [], 0
        for role, members in self.roles.items():
            for index, host in enumerate(members):
                slots.append(HostSlot(role, host, index, i, index))
                i += 1
        self.slots: list[HostSlot] = slots

    def group(self, roles: Mapping[str, Sequence[str]]) -> RolePlan:
        """The plan of one group of hosts (``[cluster] groups`` or ``pack``: a
        :class:`~assay.rolespec.HostGroup`'s roles), its slots keeping their places in
        the whole cluster (worker ``i`` is host ``i`` of all the roles).

        >>> plan = RolePlan({"client": ["a", "b"], "server": ["c", "d"]}, None, {}, {}, {})
        >>> [(s.host, s.worker) for s in plan.group({"client": ["b"], "server": ["d"]}).slots]
        [('b', 1), ('d', 3)]
        """
        if {r: list(h) for r, h in roles.items()} == self.roles:
            return self
        sub = RolePlan(
            roles, self.measured, self.steps, self.params, self.env, self.shell,
            self.per_trial, self.counts, self.packed, self.ready, self.faults,
        )  # fmt: skip
        whole = {s.host: s for s in self.slots}
        sub.slots = [
            replace(s, worker=whole[s.host].worker, place=whole[s.host].index) for s in sub.slots
        ]
        return sub

    @classmethod
    def of(cls, spec: Spec) -> RolePlan:
        """The plan of a study file with ``[cluster.roles]``."""
        assert spec.cluster is not None and spec.cluster.roles is not None
        b = spec.benchmark
        return cls(
            spec.cluster.roles,
            spec.cluster.measure,
            {r: s.argvs() for r, s in b.roles.items()},
            spec.params,
            b.env,
            b.shell,
            spec.per_trial_names(),
            spec.cluster.counts,
            spec.cluster.pack,
            {r: s.ready for r, s in b.roles.items() if s.ready},
            spec.faults,
        )

    def fault_plan(self, slot: HostSlot, setting: Mapping[str, object]) -> FaultPlan | None:
        """The ``[[fault]]`` of ``slot``'s host in a trial of ``setting`` (its variant's,
        the host taking part), its steps rendered; None when it has none.

        >>> from assay.rolespec import FaultSpec
        >>> plan = RolePlan({"client": ["a"], "db": ["b", "c"]}, None,
        ...                 {"db": {"fault": ["kill", "{host.name}", "{fault.action}"],
        ...                         "restore": ["start", "{host.name}"]}}, {}, {},
        ...                 faults=[FaultSpec(at=5, role="db", host=1, action="stop")])
        >>> plan.fault_plan(plan.slots[2], {}).fault.argv
        ('kill', 'c', 'stop')
        >>> plan.fault_plan(plan.slots[1], {}) is None
        True
        """
        for f in self.faults:
            if f.role != slot.role or (f.host != "all" and int(f.host) != slot.index):
                continue
            if f.variants and setting.get("variant") not in f.variants:
                continue
            if not self.active(slot, setting):
                continue
            values = {**setting, **f.values()}
            fault, restore = self.step(slot, "fault", values), self.step(slot, "restore", values)
            assert fault is not None and restore is not None  # (the study file's check)
            return FaultPlan(f.action, f.at, f.duration, fault, restore)
        return None

    def uses(self, role: str) -> set[str]:
        """The parameters ``role``'s steps depend on: their placeholders and those of
        ``[benchmark] env`` (every step gets it), host placeholders aside, and the
        parameters that size the role or a role whose hosts its steps name.

        >>> plan = RolePlan({"client": ["a"], "server": ["b"], "replica": ["c", "d"]}, None,
        ...                 {"server": {"setup": ["srv", "--io={io}", "{hosts.replica}"]}},
        ...                 {"io": 1}, {"MODE": "{mode}"}, counts={"replica": "n"})
        >>> sorted(plan.uses("server")), sorted(plan.uses("client"))
        (['io', 'mode', 'n'], [])
        """
        return self._uses[role]

    def stepped(self, role: str) -> bool:
        """Whether ``role`` has a step of its own (a setup, command, reset or teardown)."""
        return any(self.steps.get(role, {}).values())

    def _depends_on(self, role: str) -> set[str]:
        from assay.template import placeholders

        steps = self.steps.get(role, {})
        if not self.stepped(role):
            return set()
        words = [w for argv in steps.values() for w in argv or ()] + list(self.env.values())
        names = {n for w in words for n in placeholders(w)}
        sized = {
            c
            for r, c in self.counts.items()
            if isinstance(c, str) and (r == role or f"hosts.{r}" in names)
        }
        host = {"host.name", "host.role", "host.index", *(f"hosts.{r}" for r in self.roles)}
        return (names - host) | sized

    def active(self, slot: HostSlot, setting: Mapping[str, object] | None) -> bool:
        """Whether ``slot``'s host takes part in a trial of ``setting``: a role sized by
        a parameter (``[cluster] counts``) uses its first that many hosts."""
        size = role_size(self.counts, slot.role, {**self.params, **(setting or {})})
        return size is None or slot.index < size

    def configuration(self, role: str, setting: Mapping[str, object]) -> Configuration:
        """The values of ``role``'s parameters in a trial of ``setting`` (laid over
        ``[params]``): when it differs from the one the role was set up with, the role
        is set up again before the trial."""
        from assay.template import value_text

        values = {**self.params, **setting}
        return tuple((n, value_text(values, n)) for n in sorted(self.uses(role)) if n in values)

    def set_up_per_trial(self) -> list[str]:
        """The roles set up before the first trial, not with the study: from the first
        role (in ``[cluster.roles]`` order) whose steps use a value a trial's setting
        gives, on; those before it are set up with the study, as without settings."""
        return list(self._per_trial_roles)

    @property
    def measured_slot(self) -> HostSlot:
        return next(s for s in self.slots if s.role == self.measured)

    @property
    def measured_slots(self) -> list[HostSlot]:
        """The hosts that run ``[benchmark].command``, each at once."""
        return [s for s in self.slots if s.role == self.measured]

    def values(self, slot: HostSlot, setting: Mapping[str, object] | None = None) -> dict[str, str]:
        """The placeholder values of ``slot``'s host (``{host.index}``, ``{hosts.server}``)
        in a trial of ``setting``."""
        roles = active_roles(self.roles, self.counts, {**self.params, **(setting or {})})
        return host_values(roles, slot.role, slot.index)  # (an active slot's)

    def step(
        self, slot: HostSlot, what: str, setting: Mapping[str, object] | None = None
    ) -> Step | None:
        """The role's ``what`` (setup, reset, teardown, command) for ``slot``, rendered
        with ``[params]``, the trial's ``setting`` over them and the host's values; None
        when the role has none; KeyError naming a placeholder without a value.

        >>> plan = RolePlan({"client": ["a"], "server": ["b", "c"]}, None,
        ...                 {"server": {"setup": ["start", "--id={host.index}", "{p}"]}},
        ...                 {"p": "x y"}, {})
        >>> plan.step(plan.slots[2], "setup").argv
        ('start', '--id=1', 'x y')
        """
        argv = self.steps.get(slot.role, {}).get(what)
        if not argv:
            return None
        values = {**self.params, **(setting or {}), **self.values(slot, setting)}
        rendered = render_argv(list(argv), values, shell=self.shell)
        env = {k: _render(v, values) for k, v in self.env.items()}
        ready = self.ready.get(slot.role, "") if what == "command" else ""
        return Step(what, tuple(rendered), f"{slot.role}: {' '.join(argv)}", env, ready=ready)

    def ordered(
        self, reverse: bool = False, only: Collection[str] | None = None
    ) -> list[list[HostSlot]]:
        """The hosts role by role (in ``[cluster.roles]`` order, or reversed), of the
        roles ``only`` names (default: all)."""
        roles = [r for r in self.roles if only is None or r in only]
        groups = [[s for s in self.slots if s.role == r] for r in roles]
        return groups[::-1] if reverse else groups


#: A role's parameters and their values, as its steps were rendered with them.
Configuration = tuple[tuple[str, str], ...]


def _render(text: str, values: Mapping[str, object]) -> str:
    from assay.template import render

    return render(text, values)


# ------------------------------------------------------------------ on a worker


def host_info() -> dict[str, Any]:
    """The host's cores and memory: the cluster summary's per-core CPU and memory need them."""
    import platform

    import psutil

    return {
        "cpu_count": psutil.cpu_count() or 1,
        "memory_bytes": int(psutil.virtual_memory().total),
        "node": platform.node(),
    }


def study_python_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with the folder of the Python this worker runs first on ``PATH``, where it
    is a virtual environment or not on ``PATH`` at all: a role step's ``python3`` is
    then the study's, the one Assay is installed in (#61: an SSH session's default
    ``python3`` had no Assay, and every example's role step failed).  A system Python
    already on ``PATH`` (``/usr/bin``) changes nothing, so the order of the other
    tools' folders stays the user's.

    >>> import os, sys
    >>> path = study_python_env({"PATH": "/nowhere"})["PATH"]
    >>> path.split(os.pathsep)[0] == os.path.dirname(sys.executable) or path == "/nowhere"
    True
    """
    import os
    import sys

    if not sys.executable:
        return dict(env)
    folder = os.path.dirname(sys.executable)
    path = env.get("PATH", os.environ.get("PATH", ""))
    parts = [p for p in path.split(os.pathsep) if p]
    in_venv = sys.prefix != sys.base_prefix
    if parts[:1] == [folder] or (folder in parts and not in_venv):
        return dict(env)
    return {**env, "PATH": os.pathsep.join([folder, *(p for p in parts if p != folder)])}


def _host_steps(job: TrialJob, slot: HostSlot, what: str, steps: list[Step]) -> HostRun:
    """Run a host's steps in order, stopping at the first that fails."""
    started = time.time()
    run = HostRun(what, slot.role, slot.host, slot.place, "ok", started=started)
    for step in steps:
        res = run_command(
            list(step.argv),
            timeout=job.timeout,
            env=study_python_env(step.env),
            cwd=job.cwd,
            shell=job.shell,
            keep_descendants=True,  # a setup step may start a server that must outlive it
        )
        res.close()
        run = replace(
            run,
            status=res.status,
            exit_code=res.exit_code,
            error="" if res.status == "ok" else f"{step_words(what)} {step.shown!r}: {res.error}",
            stdout=run.stdout + res.stdout,
            stderr=run.stderr + res.stderr,
        )
        if res.status != "ok":
            break
    return replace(run, duration=time.time() - started, info=host_info())


def _failure(step: Step, status: str, error: str) -> str:
    return "" if status == "ok" else f"{step_words(step.what)} {step.shown!r}: {error}"


def step_words(what: str) -> str:
    """How a message names a step: ``the setup command``, or ``the role's command``
    (not "the command command").

    >>> step_words("setup"), step_words("command")
    ('the setup command', "the role's command")
    """
    return "the role's command" if what == "command" else f"the {what} command"


class ReadySignal:
    r"""Says a host is ready for the measured command: once its role's command has
    started, or, with a ``pattern``, once the command's output matches it.

    >>> said = []
    >>> r = ReadySignal(lambda: said.append(1), "^ready$")
    >>> r.started(); r.output(b"loading\nrea"); r.said, said
    (False, [])
    >>> r.output(b"dy\n"); r.output(b"ready\n"); r.said, said
    (True, [1])
    """

    #: How much of the output is kept to match the pattern against (its tail).
    KEEP = 64 * 1024

    def __init__(self, say: Callable[[], object], pattern: str = "") -> None:
        self._say = say
        self.pattern = re.compile(pattern, re.MULTILINE) if pattern else None
        self.seen = ""
        self.said = False

    def say(self) -> None:
        if not self.said:
            self.said = True
            self._say()

    def started(self) -> None:
        if self.pattern is None:
            self.say()

    def output(self, chunk: bytes) -> None:
        if self.said or self.pattern is None:
            return
        self.seen = (self.seen + chunk.decode(errors="replace"))[-self.KEEP :]
        if self.pattern.search(self.seen):
            self.say()


@dataclass(frozen=True)
class FaultPlan:
    """A host's ``[[fault]]`` in one trial: its action, time and duration (s), and its
    rendered ``fault`` and ``restore`` steps."""

    action: str
    at: float
    duration: float | None
    fault: Step
    restore: Step


def _faulted(
    job: TrialJob, slot: HostSlot, plan: FaultPlan, go: Any, end: Any, wait_s: float
) -> list[HostRun]:
    """Run ``plan`` on this host: its fault step ``plan.at`` seconds after the measured
    command started (``go``), its restore step after ``plan.duration`` or once the trial
    ended (``end``), whichever comes first. Nothing when the trial ended before the
    fault's time (a run that says so). Each run's ``info`` has the action, the planned
    time and when it ran after the start (``offset_s``)."""
    deadline = time.monotonic() + wait_s
    while not go.wait(0.5):
        if end.is_set() or time.monotonic() > deadline:
            return []
    start = time.time()
    info = {"action": plan.action, "at_s": plan.at, "duration_s": plan.duration}
    if end.wait(plan.at):
        run = HostRun("fault", slot.role, slot.host, slot.place, "ok", started=start)
        return [replace(run, info={**info, "fired": False, "offset_s": None})]
    fault = _host_steps(job, slot, "fault", [plan.fault])
    fault.info.update(info, fired=True, offset_s=(fault.started or start) - start)
    if plan.duration is not None:
        end.wait(max(0.0, plan.duration - (time.time() - (fault.started or start))))
    else:
        end.wait(max(0.0, deadline - time.monotonic()))
    restore = _host_steps(job, slot, "restore", [plan.restore])
    restore.info.update(info, offset_s=(restore.started or start) - start)
    return [fault, restore]


def _host_part(
    job: TrialJob,
    slot: HostSlot,
    step: Step | None,
    tag: str,
    monitor: bool,
    wait_s: float,
    fault: FaultPlan | None = None,
) -> HostRun | list[HostRun]:
    """A host's part of a trial that it does not measure: the watch (and its role's
    command) from the moment it says it is ready until the measured command has ended;
    with ``fault``, also its fault and restore steps (:func:`_faulted`, in a thread of
    its own: a host's worker runs one task at a time), whose runs follow its own."""
    from distributed import Event

    watch = _worker_monitor() if monitor else None
    info = host_info()
    started = time.time()
    if watch is not None:
        watch.start()
    res = None
    unready = ""
    faults: list[HostRun] = []
    faulting: threading.Thread | None = None
    if fault is not None:
        from distributed import get_client

        # the worker's client, got here: the fault's thread is no task thread, where an
        # event would look for one and find none
        client = get_client()
        go = Event(f"{tag}-go", client=client)  # type: ignore[no-untyped-call]
        end = Event(tag, client=client)  # type: ignore[no-untyped-call]

        def inject() -> None:
            try:
                faults.extend(_faulted(job, slot, fault, go, end, wait_s))
            except Exception as exc:  # a fault that did not happen fails its trial
                why = f"its fault ({fault.action}) could not be done: {exc!r}"
                faults.append(
                    HostRun("fault", slot.role, slot.host, slot.place, "failed", error=why)
                )

        faulting = threading.Thread(target=inject, name=f"assay-fault-{tag}", daemon=True)
        faulting.start()
    try:
        ready = ReadySignal(
            Event(f"{tag}-ready-{slot.worker}").set,  # type: ignore[no-untyped-call]
            step.ready if step is not None else "",
        )
        if step is None:
            ready.say()
        else:
            # the role's command runs beside the measured one, which starts once it has
            # started (or printed its ``ready`` pattern), and ends with it: its process
            # group is killed then (#61: a background load ran to the timeout and failed
            # every trial; a 5 s command held its hosts 5 s a 1 s trial)
            end = Event(tag)  # type: ignore[no-untyped-call]
            res = run_command(
                list(step.argv),
                timeout=job.timeout,
                env=study_python_env(step.env),
                cwd=job.cwd,
                shell=job.shell,
                until=end.is_set,
                on_start=ready.started,
                on_stdout=ready.output,
            )
            res.close()
            if not ready.said:  # ended (or failed to start) before it was ready
                ready.say()  # the trial goes on, and fails for this host
                if res.status == "ok":
                    unready = f"it ended without printing its ready pattern {step.ready!r}"
        Event(tag).wait(wait_s)  # type: ignore[no-untyped-call]
    finally:
        series = watch.stop().series if watch is not None else {}
        if faulting is not None:  # its restore runs once the trial ended
            faulting.join(job.timeout + GRACE_S)
    status = "failed" if unready else "ok" if res is None else res.status
    own = HostRun(
        "trial",
        slot.role,
        slot.host,
        slot.place,
        status,
        exit_code=None if res is None else res.exit_code,
        error=_failure(step, status, unready or res.error) if res is not None and step else "",
        stdout=b"" if res is None else res.stdout,
        stderr=b"" if res is None else res.stderr,
        started=started,
        duration=time.time() - started,
        info=info,
        resources=series,
    )
    if fault is None:
        return own
    if faulting is not None and faulting.is_alive():
        faults.append(
            HostRun("fault", slot.role, slot.host, slot.place, "timeout",
                    error=f"its fault or restore step ({fault.action}) did not end in time")
        )  # fmt: skip
    return [own, *faults]


def _measured_part(
    job: TrialJob,
    request: TrialRequest,
    slot: HostSlot,
    monitor: bool,
    tag: str | None = None,
    wait_s: float = 0.0,
) -> TrialRecord:
    """The measured host's part: the trial itself, as on one machine.  With ``tag`` (a
    measured role of several hosts), it says it is ready and starts when the driver says
    go, so that the hosts' commands start together (a barrier)."""
    watch = _worker_monitor() if monitor else None
    info = host_info()
    if tag is not None:
        from distributed import Event

        Event(f"{tag}-ready-{slot.worker}").set()  # type: ignore[no-untyped-call]
        went = Event(f"{tag}-go").wait(wait_s)  # type: ignore[no-untyped-call]
        if not went or Event(f"{tag}-abort").is_set():  # type: ignore[no-untyped-call]
            why = "it did not start: another host of the trial was not ready"
            return _failed_record(request, slot, [_lost_run("trial", slot, why)], why)
    started = time.time()
    rec = run_trial(job, replace(request, env=study_python_env(request.env)), watch)
    # the host as the study file names it, as a failed trial records it: hostnames of
    # cloned machines are often one and the same (#41)
    rec.host = slot.host
    rec.host_runs.append(
        HostRun(
            "trial",
            slot.role,
            slot.host,
            slot.place,
            rec.status,
            exit_code=rec.exit_code,
            error=rec.error,
            stdout=rec.stdout if slot.index else b"",  # host 0's is the trial's own
            stderr=rec.stderr,
            started=started,
            duration=time.time() - started,
            info={**info, "readings": dict(rec.readings)},
            resources=rec.resources,
        )
    )
    return rec


#: How the readings of a measured role's hosts make the trial's (``[cluster] combine``).
COMBINE: dict[str, Callable[[list[float]], float]] = {
    "sum": lambda v: float(sum(v)),
    "mean": lambda v: float(sum(v)) / len(v),
    "max": lambda v: float(max(v)),
    "min": lambda v: float(min(v)),
}


def joined_record(parts: Sequence[TrialRecord], combine: Mapping[str, str]) -> TrialRecord:
    """One trial of a measured role's several hosts: each PI's readings joined by its
    rule (each host's stay in its host part's ``info["readings"]``); failed when a host
    failed, with that host's error; the longest duration (the hosts ran at once).

    >>> a = TrialRecord(seq=0, status="ok", duration=1.0, readings={"tput": 10.0}, host="c0")
    >>> b = TrialRecord(seq=0, status="ok", duration=2.0, readings={"tput": 12.0}, host="c1")
    >>> r = joined_record([a, b], {"tput": "sum"})
    >>> r.readings, r.duration, r.host
    ({'tput': 22.0}, 2.0, 'c0,c1')
    """
    first = parts[0]
    out = replace(
        first,
        host=",".join(p.host for p in parts),
        host_runs=[h for p in parts for h in p.host_runs],
        duration=max((p.duration or 0.0) for p in parts),
        started=min((p.started for p in parts if p.started is not None), default=first.started),
        max_rss_kib=max((p.max_rss_kib for p in parts if p.max_rss_kib), default=None),
        readings={},
        unit_readings={},
    )
    bad = next((p for p in parts if not p.ok), None)
    if bad is not None:
        out.status = bad.status
        out.error = f"on host {bad.host}: {bad.error or bad.status}"
        out.exit_code = bad.exit_code
        return out
    for name, rule in combine.items():
        values = [p.readings[name] for p in parts if name in p.readings]
        if len(values) == len(parts):
            out.readings[name] = COMBINE[rule](values)
    return out


# ------------------------------------------------------------------ the driver


@dataclass(frozen=True)
class _Lost:
    """A host whose part did not come back: its worker left, or it ran past the limit."""

    why: str


@dataclass
class _Group:
    """One group of hosts that runs a trial at a time (``[cluster] groups``; one group
    of every host without it): its share of each role, and what each of its roles was
    set up with."""

    index: int
    plan: RolePlan
    need: Need | None = None  # ``pack``: the trials it runs take these hosts (None: any)
    # each role set up: its configuration and the setting it was rendered with
    configured: dict[str, tuple[Configuration, Mapping[str, object]]] = field(default_factory=dict)
    extra_setup: Step | None = None  # [benchmark] setup, until its role's
    stale: bool = False  # a host left mid-trial: its per-trial roles set up again
    # ``pack``: the groups sharing its hosts whose roles it tears down before its trial
    displaces: list[_Group] = field(default_factory=list)

    @functools.cached_property
    def members(self) -> set[str]:
        """Its hosts' names (its plan is fixed for the study)."""
        return {s.host for s in self.plan.slots}

    def set_up_as(self, role: str, want: Configuration) -> bool:
        """Whether ``role`` is set up on this group's hosts with configuration ``want``."""
        have = self.configured.get(role)
        return have is not None and have[0] == want

    def role_settings(self) -> dict[str, Mapping[str, object]]:
        """Each role's setting as it was last set up (its reset and command use it)."""
        return {r: v for r, (_, v) in self.configured.items()}

    def hosts(self) -> str:
        """``10.0.0.1, 10.0.0.2``: the group's hosts, in role order."""
        return ", ".join(s.host for s in self.plan.slots)


class _Stopped(Exception):
    """The study stopped taking trials (interrupted, or another group's host failed)."""


class RoleExecutor(DaskExecutor):
    """Trials that span the hosts of ``[cluster.roles]``: a trial takes every host of
    its group, and each group (``[cluster] groups``; one of every host without it) runs
    one trial at a time, the groups at once.  :meth:`prepare` gives it the study's
    steps; the hosts' step outcomes wait in :meth:`drain_host_runs` for the study to
    store them."""

    def __init__(
        self,
        client: Client,
        cluster: ClusterSpec,
        *,
        monitor: bool = True,
        expected_workers: int = 1,
        wait_s: float = 60.0,
    ) -> None:
        super().__init__(
            client,
            monitor=monitor,
            require_identical=cluster.require_identical,
            expected_workers=expected_workers,
            wait_s=wait_s,
        )
        assert cluster.roles is not None
        self.cluster = cluster
        self.plan = RolePlan(cluster.roles, cluster.measure, {}, {}, {})
        self.groups = [_Group(0, self.plan)]
        self._pending: list[HostRun] = []
        # starts a new worker for host (its name, its address) where the cluster can (an
        # SSH cluster: over SSH again, once the host answers); True when it started
        self.revive: Callable[[int, str], bool] | None = None
        self._revived: list[str] = []  # the hosts given a new worker, in order
        self._setup_begun = False
        self._benchmark_setup = False  # [benchmark] setup ran on the measured role's hosts
        self._reconfigurations: dict[str, Any] = {"count": 0, "seconds": 0.0, "roles": {}}
        self._lock = threading.Lock()  # the counts above, from the groups' threads
        self._running: set[int] = set()  # the groups with a trial in flight
        self._turn = threading.Condition(self._lock)  # a group's hosts were given back
        self._claimed: dict[int, set[str]] = {}  # the hosts each busy group holds
        self._taken_out: list[dict[str, Any]] = []  # groups whose host left mid-trial
        self._stop = threading.Event()  # the groups' threads: take no more trials
        self._lanes: list[threading.Thread] = []  # the last batch's threads
        # where the groups' time went, by phase (seconds summed over the groups: #61)
        self._phases: dict[str, float] = dict.fromkeys(PHASES, 0.0)
        self._phases_lock = threading.Lock()

    def prepare(self, spec: Spec) -> None:
        self.plan = RolePlan.of(spec)
        self.groups = [
            _Group(i, self.plan.group(h.roles), h.need) for i, h in enumerate(spec.host_groups())
        ]

    @property
    def lanes(self) -> int:
        """How many trials can run at once: the groups (``[cluster] groups``), or under
        ``pack`` the most groups formed for one need."""
        needs = [g.need for g in self.groups]
        return max(needs.count(n) for n in needs)

    def drain_host_runs(self) -> list[HostRun]:
        out, self._pending = self._pending, []
        return out

    def _failure(self, what: str, exc: BaseException) -> str:
        """Dask's words, and where the scheduler is gone, what was left set up and where:
        its teardown cannot run without the workers (#61: servers on 4 hosts were
        still running, unsaid)."""
        text = super()._failure(what, exc)
        left = self.left_set_up()
        if "was lost" not in text or not left:
            return text
        return (
            f"{text}; left set up, their teardown not run: {left}: the same command run "
            "again tears them down before its setup (and at its end), or run each role's "
            "teardown on its hosts"
        )

    def left_set_up(self) -> str:
        """``role server on s0, s1; role primary on p0``: each role set up and not torn
        down, with its hosts; "" when none."""
        where: dict[str, list[str]] = {}
        for g in self.groups:
            for role in g.configured:
                started = g.plan.stepped(role) or (
                    role == g.plan.measured and self._benchmark_setup
                )
                if not started:
                    continue  # nothing was started there (the example's clients)
                hosts = where.setdefault(role, [])
                hosts += [s.host for s in g.plan.slots if s.role == role and s.host not in hosts]
        return "; ".join(f"role {r} on {', '.join(h)}" for r, h in where.items() if h)

    def slots(self) -> int:
        super().slots()
        return self.lanes  # a trial uses every host of its group

    def status(self) -> ExecutorStatus:
        """A trial takes every host of its group: as many in flight as groups busy
        (the batch's others wait; its line said "18 in flight" beside 4 workers)."""
        s = super().status()
        if len(self.groups) == 1:  # its trials run in the caller's thread: every host
            running = 1 if s.in_flight else 0
            return replace(s, busy=self._n_workers if running else 0, in_flight=running)
        with self._lock:
            running_groups = [g for g in self.groups if g.index in self._running]
        busy = sum(len(g.plan.slots) for g in running_groups)
        return replace(s, busy=min(busy, self._n_workers), in_flight=len(running_groups))

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        addresses = self._addresses()
        out["roles"] = {s.where(): addresses.get(s, "no worker") for s in self.plan.slots}
        out["revived"] = self._revived  # the same list: hosts revived later show too
        out["phases"] = self._phases  # the same dict: summed as the study runs
        if self.plan.set_up_per_trial():  # the same dict: counted as the study runs
            out["reconfigurations"] = self._reconfigurations
        if len(self.groups) > 1:
            out["groups"] = {
                "hosts": [[s.where() for s in g.plan.slots] for g in self.groups],
                "taken_out": self._taken_out,  # the same list: filled as the study runs
            }
            if self.plan.packed:
                out["groups"]["packed"] = self.lanes  # at most this many at once
        return out

    def start(self) -> None:
        super().start()
        addresses = self._addresses()
        missing = [s.where() for s in self.plan.slots if s not in addresses]
        if missing:
            raise StudyError(
                f"[cluster.roles]: no Dask worker for {', '.join(missing)}: host i of the roles "
                "(in order) is the worker named i, or named as the host (dask worker --name)"
            )

    def _addresses(self, slots: Sequence[HostSlot] | None = None) -> dict[HostSlot, str]:
        """Each host's worker address now (of ``slots``, default all; a host whose
        worker is gone has none)."""
        by_name: dict[str, str] = {}
        for addr, w in self._scheduler_workers().items():  # by name, else by host
            by_name.setdefault(str(w.get("name")), addr)
        out = {}
        for s in self.plan.slots if slots is None else slots:
            found = by_name.get(str(s.worker)) or by_name.get(s.host)
            if found is not None:
                out[s] = found
                self._note_worker(str(s.worker), s.where(), found)
        return out

    def _rejoined(
        self, slots: Sequence[HostSlot] | None = None, limit_s: float = REJOIN_S
    ) -> dict[HostSlot, str]:
        """The hosts' workers (of ``slots``, default all), after waiting up to
        ``limit_s`` for any that left; a host whose worker is gone for good (its
        processes ended in an outage) gets a new one where the cluster can start it
        (:attr:`revive`), once it answers."""
        wanted = list(self.plan.slots if slots is None else slots)
        deadline = time.monotonic() + limit_s
        tried: dict[HostSlot, float] = {}
        while True:
            addresses = self._addresses(wanted)
            if all(s in addresses for s in wanted) or time.monotonic() > deadline:
                return addresses
            for slot in wanted:
                due = tried.get(slot, time.monotonic() + REVIVE_S - limit_s)
                if slot not in addresses and self.revive is not None and time.monotonic() >= due:
                    tried[slot] = time.monotonic() + REVIVE_S
                    if self.revive(slot.worker, slot.host):
                        with self._lock:  # (by its place in the whole role, as "roles")
                            self._revived.append(slot.where())
                        with self._workers_lock:
                            self._reviving.add(str(slot.worker))
            time.sleep(POLL_S)

    def _submit(self, slot: HostSlot, addr: str, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        return self.client.submit(
            fn,
            *args,
            workers=[addr],
            allow_other_workers=False,
            resources={RESOURCE: 1},
            pure=False,
        )

    def _wait(
        self,
        futures: Mapping[HostSlot, Future[Any]],
        addresses: Mapping[HostSlot, str],
        limit_s: float,
        until: Callable[[float], bool] | None = None,
        *,
        stoppable: bool = False,
    ) -> dict[HostSlot, Any]:
        """Each host's result, or a :class:`_Lost` for a host whose worker left, whose
        task raised, or that ran past ``limit_s``; ``until(timeout)`` (which may wait that
        long for its condition) ends the wait early when true, or once a host is lost;
        ``stoppable``: a
        :class:`_Stopped` when the study stops taking trials (a group's thread)."""
        out: dict[HostSlot, Any] = {}
        missing: dict[HostSlot, int] = {}  # polls in a row without the slot's worker
        raised: dict[HostSlot, str] = {}  # a future that raised: what, until judged
        seen: dict[HostSlot, int] = {}  # polls since, its worker still there
        deadline = time.monotonic() + limit_s
        while len(out) < len(futures):
            if stoppable and self._stop.is_set():
                self.client.cancel([f for s, f in futures.items() if s not in out])  # type: ignore[no-untyped-call]
                raise _Stopped
            lost = any(isinstance(v, _Lost) for v in out.values())
            if until is not None and (lost or until(0.0)):
                # the others go on (a watch waits for the measured command): keep them;
                # a host lost before all were ready: the trial cannot start, the caller
                # releases the others (they would wait for the lost host's ready in vain)
                self.client.cancel([f for s, f in futures.items() if isinstance(out.get(s), _Lost)])  # type: ignore[no-untyped-call]
                return out
            present = set(self._scheduler_workers())
            for slot in [s for s in missing if addresses[s] in present]:
                del missing[slot]  # back in the next poll: it never left
            for slot, fut in futures.items():
                if slot in out:
                    continue
                if slot in raised:  # judged once its worker is seen gone, or staying
                    seen[slot] = seen.get(slot, 0) + 1
                    if addresses[slot] not in present:
                        gone = f"its Dask worker {addresses[slot]} is gone"
                        out[slot] = _Lost(f"{gone} ({raised[slot]})")
                    elif seen[slot] >= GONE_CHECKS:
                        out[slot] = _Lost(f"its task failed: {raised[slot]}")
                elif fut.done():  # type: ignore[no-untyped-call]
                    try:
                        out[slot] = fut.result()
                    except OSError as exc:  # Dask's CommClosedError: the host was cut off
                        out[slot] = _Lost(
                            f"its Dask worker {addresses[slot]} lost its connection mid-trial "
                            f"({type(exc).__name__}: {exc})"
                        )
                    except Exception as exc:
                        # our parts return their failures: what raises is Dask's, and a
                        # worker killed mid-task can end its future so (CI: a bare
                        # AssertionError from a cancelled future) before the scheduler
                        # drops it; a host failure (the trial runs on another group) if
                        # the worker leaves within GONE_CHECKS polls
                        raised[slot] = _raised(exc)
                elif addresses[slot] not in present:
                    missing[slot] = missing.get(slot, 0) + 1
                    if missing[slot] >= GONE_CHECKS:  # not one poll's blip
                        out[slot] = _Lost(f"its Dask worker {addresses[slot]} is gone")
                elif time.monotonic() > deadline:
                    out[slot] = _Lost(f"no answer after {limit_s:g} s")
            pending = [f for s, f in futures.items() if s not in out and s not in raised]
            if pending and until is not None:
                until(POLL_S)  # returns as soon as its condition holds
            elif pending:
                _first_done(pending, POLL_S)
            elif len(out) < len(futures):  # only raised ones to judge: a poll's time
                time.sleep(POLL_S)
        left = [f for s, f in futures.items() if s not in out or isinstance(out[s], _Lost)]
        if left:
            self.client.cancel(left)  # type: ignore[no-untyped-call]
        return out

    def _phase(
        self,
        job: TrialJob,
        what: str,
        extra: Step | None,
        *,
        keep_going: bool = False,
        only: Collection[str] | None = None,
        settings: Mapping[str, Mapping[str, object]] | None = None,
        group: _Group | None = None,
    ) -> list[HostRun]:
        """Run ``what`` role by role, every host of a role at once; stop at the first
        role with a failure unless ``keep_going`` (teardown).  ``only``: these roles;
        ``settings``: a role's steps rendered with its setting over ``[params]``;
        ``group``: its hosts (default every host)."""
        plan = self.plan if group is None else group.plan
        runs: list[HostRun] = []
        # a host whose worker was just lost (killed, restarting) is waited for: its
        # teardown must not be skipped, leaving its server running (#41)
        addresses = self._rejoined(plan.slots)
        remote = replace(job, running_file=None)
        for role_slots in plan.ordered(reverse=what == "teardown", only=only):
            todo: dict[HostSlot, list[Step]] = {}
            for slot in role_slots:
                setting = (settings or {}).get(slot.role)
                if not plan.active(slot, setting):
                    continue  # beyond its role's size in this setting ([cluster] counts)
                try:
                    own = plan.step(slot, what, setting)
                except KeyError as exc:  # a value only a trial's setting gives
                    why = f"its {what} step cannot be rendered: {exc.args[0]}"
                    runs.append(replace(_lost_run(what, slot, why), status="failed"))
                    continue
                steps = [own] if own is not None else []
                if slot.role == plan.measured and extra is not None:
                    # its group's hosts named
                    mine = extra.in_group(self._group_of(slot) if group is None else group.index)
                    steps = [mine, *steps] if what == "teardown" else [*steps, mine]
                if steps:
                    todo[slot] = steps
            futures = {}
            for slot, steps in todo.items():
                if slot not in addresses:
                    runs.append(_lost_run(what, slot, "it has no Dask worker"))
                    continue
                futures[slot] = self._submit(
                    slot, addresses[slot], _host_steps, remote, slot, what, steps
                )
            results = self._wait(futures, addresses, 2 * job.timeout + GRACE_S)
            for slot, res in results.items():
                runs.append(res if isinstance(res, HostRun) else _lost_run(what, slot, res.why))
            if not keep_going and any(not r.ok for r in runs):
                break
        return runs

    def _end_lanes(self) -> None:
        """Wait for the threads of a batch the study stopped reading (they end at their
        next look at the stop, or after the step they are in): the next batch, or the
        teardown, must not meet a trial or a setup still running on a group."""
        self._stop.set()
        for t in self._lanes:
            t.join()
        self._lanes = []

    def run_phase(self, job: TrialJob, what: str, step: Step | None) -> None:
        """Setup or teardown on every host, role by role; the hosts' outcomes wait in
        :meth:`drain_host_runs`; StudyError naming the first host that failed.

        A role whose steps use a value a trial's setting gives (a swept server knob, a
        variant's) is set up before the first trial, with that trial's setting, and
        again whenever a later trial's value differs (:meth:`_reconfigure`); at the
        end it is torn down with the setting it was last set up with (group by group:
        each group's hosts were set up for the trials they ran)."""
        self._end_lanes()
        with self._timed("teardown" if what == "teardown" else "setup"):
            runs = self._run_phase(job, what, step)
        self._pending.extend(runs)
        failed = [r for r in runs if not r.ok]
        if failed:
            raise StudyError(failure_text(failed))

    def _run_phase(self, job: TrialJob, what: str, step: Step | None) -> list[HostRun]:
        if what == "setup":
            self._setup_begun = True
            self._benchmark_setup = step is not None
            later = self.plan.set_up_per_trial()
            if self.plan.measured in later:  # [benchmark] setup follows its role's
                for g in self.groups:
                    g.extra_setup = step
                step = None
            runs = self._phase(job, what, step, only=[r for r in self.plan.roles if r not in later])
            for g in self.groups:
                for role in self.plan.roles:
                    if role not in later:
                        g.configured[role] = (self.plan.configuration(role, {}), {})
        elif what == "teardown" and self._setup_begun:
            runs = []
            for g in self.groups:  # the roles set up, each as it was last set up
                runs += self._phase(
                    job,
                    what,
                    step,
                    keep_going=True,
                    only=list(g.configured),
                    settings=g.role_settings(),
                    group=g,
                )
                g.configured.clear()
        else:  # an earlier session's teardown, before this one's setup: with [params]
            runs = self._phase(job, what, step, keep_going=what == "teardown")
        return runs

    def _reconfigure(
        self, g: _Group, job: TrialJob, setting: Mapping[str, object]
    ) -> list[HostRun]:
        """Set up again, before a trial, each role whose parameters differ in its
        ``setting`` from those the role was set up with on group ``g``'s hosts: its
        teardown (with the old values), then its setup (with the new), on every host of
        the role (#42: a variant's server setting was dropped; a swept one refused).
        The hosts' outcomes, to be stored with the trial; stops at the first failure."""
        runs = self._displace(g, job)
        stale, g.stale = g.stale, False
        for role in self.plan.set_up_per_trial():
            want = self.plan.configuration(role, setting)
            if g.set_up_as(role, want) and not stale:
                continue
            have = g.configured.get(role)
            started = time.monotonic()
            if have is not None:
                runs += self._phase(
                    job, "teardown", None, only=[role], settings={role: have[1]}, group=g
                )
            extra = g.extra_setup if role == self.plan.measured else None
            if not any(not r.ok for r in runs):
                g.configured[role] = ((("", "set up failed"),), dict(setting))
                runs += self._phase(
                    job, "setup", extra, only=[role], settings={role: setting}, group=g
                )
            if have is not None:  # not a role's first setup
                self._count_reconfiguration(role, time.monotonic() - started)
            else:
                self._add_phase("setup", time.monotonic() - started)
            if any(not r.ok for r in runs):
                return runs
            g.configured[role] = (want, dict(setting))
            if extra is not None:
                g.extra_setup = None
        return runs

    def _count_reconfiguration(self, role: str, seconds: float) -> None:
        with self._lock:
            self._reconfigurations["count"] += 1
            self._reconfigurations["seconds"] += seconds
            by_role = self._reconfigurations["roles"]
            by_role[role] = by_role.get(role, 0) + 1
        self._add_phase("reconfiguration", seconds)

    def _add_phase(self, phase: str, seconds: float) -> None:
        """Add ``seconds`` to ``phase``'s (one of :data:`PHASES`)."""
        with self._phases_lock:
            self._phases[phase] += seconds

    @contextlib.contextmanager
    def _timed(self, phase: str) -> Generator[None, None, None]:
        """Add the time the block takes to ``phase``'s."""
        began = time.monotonic()
        try:
            yield
        finally:
            self._add_phase(phase, time.monotonic() - began)

    def _displace(self, g: _Group, job: TrialJob) -> list[HostRun]:
        """``pack``: tear down the roles of the groups set up on some of ``g``'s hosts
        (each torn down whole, with the setting it was set up with: a role's host
        cannot serve two groups), then give back their hosts that ``g`` does not use.
        Each role torn down counts as set up again (on ``g``, by :meth:`_reconfigure`)."""
        runs: list[HostRun] = []
        for h in g.displaces:
            started = time.monotonic()
            runs += self._phase(
                job, "teardown", None, keep_going=True, only=list(h.configured),
                settings=h.role_settings(), group=h,
            )  # fmt: skip
            stepped = [r for r in h.configured if self.plan.stepped(r)]
            for role in stepped:  # (a role without steps had nothing to set up)
                self._count_reconfiguration(role, (time.monotonic() - started) / len(stepped))
            with self._turn:
                h.configured.clear()
        if g.displaces:
            with self._turn:
                self._claimed[g.index] = g.members
                self._turn.notify_all()
        g.displaces = []
        return runs

    def _group_of(self, slot: HostSlot) -> int:
        """The group (``[cluster] groups``) whose hosts include ``slot``'s."""
        return next(
            (g.index for g in self.groups if any(s.worker == slot.worker for s in g.plan.slots)),
            0,
        )

    def _fits(self, g: _Group, request: TrialRequest) -> bool:
        """Whether group ``g``'s roles are set up as a trial of ``request`` needs."""
        return all(
            g.set_up_as(role, self.plan.configuration(role, request.setting))
            for role in self.plan.set_up_per_trial()
        )

    def run_step(self, job: TrialJob, step: Step) -> None:
        self.run_phase(job, step.what, step)

    def run_trials(
        self, job: TrialJob, requests: Sequence[TrialRequest]
    ) -> Generator[TrialRecord, None, None]:
        self._n_workers = len(self.workers())
        if len(self.groups) > 1:
            yield from self._in_groups(job, requests)
            return
        (g,) = self.groups
        for done, request in enumerate(requests):
            self._batch = (len(requests), done, self._batch[2] if done else time.monotonic())
            record = self._trial(g, job, request)
            yield record
            if host_failures(record, self.plan.measured) and self.cluster.on_host_failure == "stop":
                raise StudyError(_stop_text(record))

    def _in_groups(
        self, job: TrialJob, requests: Sequence[TrialRequest]
    ) -> Generator[TrialRecord, None, None]:
        """The batch's trials on the groups at once, each group one trial (or one block,
        in order) at a time (:meth:`_dispatch` gives each free group its next block).
        A group whose host's worker left mid-trial is taken out for the rest of the
        batch (every group with that host) and the trial runs on another group (kept
        once); under ``on_host_failure = "stop"`` the others end their trials and the
        study stops."""
        self._end_lanes()
        todo = blocks(requests)
        began = time.monotonic()
        self._batch = (len(requests), 0, began)
        done = 0
        turn = self._turn
        out_now: set[str] = set()  # the hosts taken out for this batch
        results: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        self._stop.clear()
        self._claimed.clear()

        def take() -> tuple[_Group, list[TrialRequest]] | None:
            with turn:
                while not self._stop.is_set():
                    got = self._dispatch(todo, out_now) if todo else None
                    if got is not None:
                        g, pos = got
                        return g, todo.pop(pos)
                    if not self._claimed:  # none running: no block can come back
                        return None
                    turn.wait(POLL_S)  # hosts given back, or a block from a group taken out
                return None

        def run_block(g: _Group, block: list[TrialRequest]) -> bool:
            """Run ``block`` on ``g``; False when the study stops."""
            for n, request in enumerate(block):
                with turn:
                    self._running.add(g.index)
                try:
                    record = self._trial(g, job, request, stoppable=True)
                finally:
                    with turn:
                        self._running.discard(g.index)
                if left := _hosts_left(record):
                    with turn:
                        gone = out_now | {h.host for h in left}
                        others = [
                            h
                            for h in self.groups
                            if h is not g and h.need == g.need and not h.members & gone
                        ]
                        if others and self.cluster.on_host_failure == "continue":
                            out_now.update(gone)
                            todo.insert(0, block[n:])
                            g.stale = True
                            self._taken_out.append(_taken_out(g, record))
                            return True
                results.put(("record", record))
                failed = host_failures(record, self.plan.measured)
                if failed and self.cluster.on_host_failure == "stop":
                    results.put(("stop", _stop_text(record)))
                    self._stop.set()
                    return False
            return True

        def serve() -> None:
            try:
                while (got := take()) is not None:
                    g, block = got
                    try:
                        going = run_block(g, block)
                    finally:
                        with turn:
                            self._claimed.pop(g.index, None)
                            turn.notify_all()
                    if not going:
                        return
            except _Stopped:
                pass
            except BaseException as exc:  # the scheduler gone: the study says so
                results.put(("error", exc))
                self._stop.set()
            finally:
                with turn:
                    turn.notify_all()
                results.put(("done", None))

        threads = [
            threading.Thread(target=serve, name=f"assay-lane-{i}", daemon=True)
            for i in range(self.lanes)
        ]
        self._lanes = threads
        for t in threads:
            t.start()
        ended, stop_text, error = 0, None, None
        try:
            while ended < len(threads):
                kind, item = results.get()
                if kind == "record":
                    done += item.status != DISTURBED
                    self._batch = (len(requests), done, began)
                    yield item
                elif kind == "stop":
                    stop_text = stop_text or item
                elif kind == "error":
                    error = error or item
                else:
                    ended += 1
        finally:
            self._stop.set()  # interrupted: each lane's thread ends at its next look
            with turn:
                turn.notify_all()
        if error is not None:
            raise error
        if stop_text is not None:
            raise StudyError(stop_text)

    def _dispatch(self, todo: list[list[TrialRequest]], out: set[str]) -> tuple[_Group, int] | None:
        """The next block to start and the free group to run it (called with the lock
        held; claims the group's hosts), or None while each waits for hosts.

        The blocks go in order, each to a free group of its need (``pack``; any group
        under ``groups``) not using a host taken out (unless every such group does):
        first one whose roles are set up for it; else the free group that displaces
        fewest others, on a later block of the need it is set up for when there is one
        (a group takes first the trials its roles are set up for).  A block that must
        wait holds the hosts of the group it waits for, so that smaller trials behind
        it do not keep it waiting for ever."""
        busy = set().union(*self._claimed.values())
        held: set[str] = set()
        # asked once per call: nothing a group is set up with changes while it looks
        needs = [self._need(b) for b in todo]
        foot = {g.index: self._footprint(g) for g in self.groups}
        for pos, (block, need) in enumerate(zip(todo, needs, strict=True)):
            fit = [g for g in self.groups if g.need is None or g.need == need]
            if not fit:  # (the study's needs hold every block's: a bug if not)
                raise StudyError(f"no group of hosts has what trial {block[0].seq} needs: {need}")
            live = [g for g in fit if not g.members & out] or fit
            free = [
                g
                for g in live
                if g.index not in self._claimed and not foot[g.index] & (busy | held)
            ]
            if not free:
                waits = min(live, key=lambda g: (len(foot[g.index] & busy), g.index))
                held |= foot[waits.index]
                continue
            g = next((g for g in free if self._fits(g, block[0])), None)
            if g is None:
                g = min(free, key=lambda g: (len(self._displaced(g)), bool(g.configured), g.index))
                later = (
                    p
                    for p in range(pos + 1, len(todo))
                    if needs[p] == need and self._fits(g, todo[p][0])
                )
                pos = next(later, pos)
            g.displaces = self._displaced(g)
            self._claimed[g.index] = foot[g.index]
            return g, pos
        return None

    def _need(self, block: Sequence[TrialRequest]) -> Need | None:
        """The hosts per role a block's trials take (``pack``; None otherwise): each
        role's most, when a comparison's cycle holds trials of several needs (each
        trial then uses the first of them, as under ``groups``)."""
        if not self.plan.packed:
            return None
        params, counts = self.plan.params, self.plan.counts
        needs = [trial_need(self.plan.roles, counts, {**params, **r.setting}) for r in block]
        return tuple((role, max(n[i][1] for n in needs)) for i, (role, _) in enumerate(needs[0]))

    def _displaced(self, g: _Group) -> list[_Group]:
        """The other groups with roles set up on some of ``g``'s hosts (``pack``)."""
        return [h for h in self.groups if h is not g and h.configured and h.members & g.members]

    def _footprint(self, g: _Group) -> set[str]:
        """The hosts ``g``'s next trial holds: its own, and those of the groups it
        displaces until they are torn down."""
        out = set(g.members)
        for h in self._displaced(g):
            out |= h.members
        return out

    def _trial(
        self, g: _Group, job: TrialJob, request: TrialRequest, *, stoppable: bool = False
    ) -> TrialRecord:
        plan = g.plan
        request = request.in_group(g.index)  # its command names this group's hosts
        # one wait for a host without its worker, not one before the resets and one
        # after (a host down made every trial take a minute to fail: #41)
        addresses = self._rejoined(plan.slots)
        missing = [s for s in plan.slots if s not in addresses]
        if missing:
            why = f"it has no Dask worker (none came back in {REJOIN_S:g} s)"
            runs = [_lost_run("trial", s, why) for s in missing]
            return _failed_record(request, plan.measured_slot, runs, failure_text(runs))
        resets = self._reconfigure(g, job, request.setting)
        if all(r.ok for r in resets) and self._has_reset(job):
            with self._timed("reset"):
                resets += self._phase(job, "reset", job.reset, settings=g.role_settings(), group=g)
        failed = [r for r in resets if not r.ok]
        if failed:
            # a step that failed while a host of the group is gone failed for want of
            # that host (a primary's teardown waiting on its cut-off replica): a host
            # failure, whose trial runs on another group, not the trial's own (#61)
            gone = [s for s in plan.slots if s not in self._addresses(plan.slots)]
            if gone:
                left = [_lost_run("trial", s, "it has no Dask worker") for s in gone]
                why = failure_text(left)
                return _failed_record(request, plan.measured_slot, resets + left, why)
            return _failed_record(request, plan.measured_slot, resets, failure_text(failed))
        with self._timed("trial"):
            return self._trial_parts(g, job, request, resets, stoppable)

    def _trial_parts(
        self,
        g: _Group,
        job: TrialJob,
        request: TrialRequest,
        resets: list[HostRun],
        stoppable: bool,
    ) -> TrialRecord:
        """The trial itself on group ``g``, its roles set up and reset: every host's
        part, the measured command once all are ready."""
        plan = g.plan
        remote = replace(job, running_file=None, reset=None)
        addresses = self._addresses(plan.slots)
        missing = [s for s in plan.slots if s not in addresses]
        if missing:  # lost during the resets
            runs = [_lost_run("trial", s, "it has no Dask worker") for s in missing]
            return _failed_record(request, plan.measured_slot, resets + runs, failure_text(runs))
        if len(self._measured(g, request)) > 1:
            return self._joined_trial(g, job, request, remote, addresses, resets, stoppable)
        measured = plan.measured_slot
        tag = f"assay-trial-{uuid.uuid4().hex}"
        wait_s = job.timeout + GRACE_S
        watchers = self._watchers(g, remote, addresses, tag, wait_s, request.setting)
        others = list(watchers)
        ready = self._ready(tag, others)
        try:
            early = self._wait(watchers, addresses, GRACE_S, until=ready, stoppable=stoppable)
        except _Stopped:
            self._release(tag)  # the hosts' parts end now, not at the study's timeout
            raise
        runs = [_lost_run("trial", s, r.why) for s, r in early.items() if isinstance(r, _Lost)]
        if runs or not ready(0.0):
            self._release(tag)
            self._wait(watchers, addresses, GRACE_S)
            runs = runs or [_lost_run("trial", s, NOT_READY) for s in others]
            return _failed_record(request, measured, resets + runs, failure_text(runs))
        fut = self._submit(
            measured, addresses[measured], _measured_part, remote, request, measured, self.monitor
        )
        if any(g.plan.fault_plan(s, request.setting) for s in watchers):
            self._go(tag)  # a fault's clock starts with the measured command
        try:
            got = self._wait({measured: fut}, addresses, wait_s, stoppable=stoppable)[measured]
        finally:
            self._release(tag)
        hosts = _host_runs(self._wait(watchers, addresses, wait_s))
        if isinstance(got, _Lost):
            lost = _lost_run("trial", measured, got.why)
            return _failed_record(request, measured, [*resets, lost, *hosts], failure_text([lost]))
        return _with_hosts(got, resets, hosts)

    def _watchers(
        self,
        g: _Group,
        remote: TrialJob,
        addresses: Mapping[HostSlot, str],
        tag: str,
        wait_s: float,
        setting: Mapping[str, object],
    ) -> dict[HostSlot, Future[Any]]:
        """The parts of group ``g``'s hosts that do not run the measured command, of
        those that take part in a trial of ``setting``."""
        settings = g.role_settings()
        return {
            s: self._submit(
                s,
                addresses[s],
                _host_part,
                remote,
                s,
                g.plan.step(s, "command", settings.get(s.role)),
                tag,
                self.monitor,
                wait_s,
                g.plan.fault_plan(s, setting),
            )
            for s in g.plan.slots
            if s.role != self.plan.measured and g.plan.active(s, setting)
        }

    def _joined_trial(
        self,
        g: _Group,
        job: TrialJob,
        request: TrialRequest,
        remote: TrialJob,
        addresses: Mapping[HostSlot, str],
        resets: list[HostRun],
        stoppable: bool = False,
    ) -> TrialRecord:
        """A trial whose measured role has several hosts: each runs the command (with
        its own host placeholders), all started together once every host's part is
        ready; their readings joined by ``[cluster] combine`` (:func:`joined_record`)."""
        from distributed import Event

        measured = self._measured(g, request)
        tag = f"assay-trial-{uuid.uuid4().hex}"
        wait_s = job.timeout + GRACE_S
        watchers = self._watchers(g, remote, addresses, tag, wait_s, request.setting)
        parts = {
            s: self._submit(
                s,
                addresses[s],
                _measured_part,
                remote,
                request.on_host(s.index),
                s,
                self.monitor,
                tag,
                GRACE_S,
            )
            for s in measured
        }
        ready = self._ready(tag, [*watchers, *parts])
        go = Event(f"{tag}-go", client=self.client)  # type: ignore[no-untyped-call]
        try:
            early = self._wait(
                {**watchers, **parts}, addresses, GRACE_S, until=ready, stoppable=stoppable
            )
        except _Stopped:  # the hosts' parts end now, not at the study's timeout
            Event(f"{tag}-abort", client=self.client).set()  # type: ignore[no-untyped-call]
            go.set()  # type: ignore[no-untyped-call]
            self._release(tag)
            raise
        lost = [_lost_run("trial", s, r.why) for s, r in early.items() if isinstance(r, _Lost)]
        if lost or not ready(0.0):
            Event(f"{tag}-abort", client=self.client).set()  # type: ignore[no-untyped-call]
            go.set()  # type: ignore[no-untyped-call]
            self._release(tag)
            self._wait({**watchers, **parts}, addresses, GRACE_S)
            lost = lost or [_lost_run("trial", s, NOT_READY) for s in measured]
            return _failed_record(request, measured[0], resets + lost, failure_text(lost))
        go.set()  # type: ignore[no-untyped-call]
        try:
            got = self._wait(parts, addresses, wait_s, stoppable=stoppable)
        finally:
            self._release(tag)
        hosts = _host_runs(self._wait(watchers, addresses, wait_s))
        records = [
            r
            if isinstance(r, TrialRecord)
            else _failed_record(request, s, [_lost_run("trial", s, r.why)], r.why)
            for s, r in sorted(got.items(), key=lambda kv: kv[0].index)
        ]
        return _with_hosts(joined_record(records, self.cluster.combine), resets, hosts)

    def _measured(self, g: _Group, request: TrialRequest) -> list[HostSlot]:
        """The hosts of group ``g`` that run the measured command in this trial."""
        return [s for s in g.plan.measured_slots if g.plan.active(s, request.setting)]

    def _has_reset(self, job: TrialJob) -> bool:
        return job.reset is not None or any("reset" in steps for steps in self.plan.steps.values())

    def _ready(self, tag: str, slots: Sequence[HostSlot]) -> Callable[[float], bool]:
        """Whether every host's watch has started, waiting up to a timeout for it (an
        event's wait returns when it is set: no polling delay before the trial)."""
        from distributed import Event

        events = [Event(f"{tag}-ready-{s.worker}", client=self.client) for s in slots]  # type: ignore[no-untyped-call]

        def ready(timeout: float) -> bool:
            deadline = time.monotonic() + timeout
            for e in events:
                left = deadline - time.monotonic()
                try:
                    done = e.wait(left) if left > 0 else e.is_set()  # type: ignore[no-untyped-call]
                except (OSError, futures_cancelled):  # the scheduler is gone
                    # an event lives on the scheduler: its connection closed is the
                    # scheduler lost, whether or not the client has noticed yet (its
                    # status, which _failure reads, can lag: "Stream is closed")
                    lost = ConnectionError("scheduler-connection-lost")
                    raise StudyError(self._failure("the cluster cannot be asked", lost)) from None
                if not done:
                    return False
            return True

        return ready

    def _go(self, tag: str) -> None:
        """Tell trial ``tag``'s hosts that its measured command starts (a fault's clock)."""
        from distributed import Event

        with contextlib.suppress(OSError, futures_cancelled):
            Event(f"{tag}-go", client=self.client).set()  # type: ignore[no-untyped-call]

    def _release(self, tag: str) -> None:
        """End the hosts' parts of trial ``tag`` (their watch waits for it).  Nothing to
        end, and nothing raised, once the scheduler is gone: a release on the way out
        of a failed wait must not hide why it failed (it waited 30 s, then raised
        Dask's OSError over the study's one-line error)."""
        from distributed import Event

        if getattr(self.client, "status", "running") != "running":
            return
        with contextlib.suppress(OSError, futures_cancelled):
            Event(tag, client=self.client).set()  # type: ignore[no-untyped-call]


def _stop_text(record: TrialRecord) -> str:
    return (
        f"trial {record.seq}: {record.error} ([cluster] on_host_failure = "
        "'stop'; 'continue' goes on to the next trial)"
    )


def _hosts_left(record: TrialRecord) -> list[HostRun]:
    """The hosts whose worker left during the trial (or had none): the trial can run on
    another group; a step that failed, or a part past its time limit, would fail there
    too."""
    return [h for h in record.host_runs if h.status == "lost" and "Dask worker" in (h.error or "")]


def _taken_out(g: _Group, record: TrialRecord) -> dict[str, Any]:
    """What the report says of a group taken out of a batch: its hosts, which left, when."""
    return {
        "group": g.index,
        "hosts": g.hosts(),
        "trial": record.seq,
        "why": failure_text(_hosts_left(record)),
        "at": time.strftime("%H:%M:%S"),
    }


def host_failures(record: TrialRecord, measured: str) -> list[HostRun]:
    """The hosts' failures in a trial: any host part that did not end well, except the
    measured command's own failure (a failing benchmark is data, as on one machine)."""
    return [
        h
        for h in record.host_runs
        if not h.ok and not (h.what == "trial" and h.role == measured and h.status != "lost")
    ]


def _raised(exc: BaseException) -> str:
    """An exception in one line, with where it was raised when it says nothing itself.

    >>> try:
    ...     assert False
    ... except AssertionError as e:
    ...     print(_raised(e).split(" (at ")[0])
    AssertionError
    """
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None or str(exc):
        return text
    return f"{text} (at {tb.tb_frame.f_code.co_filename.rsplit('/', 1)[-1]}:{tb.tb_lineno})"


def _first_done(futures: list[Future[Any]], timeout: float) -> None:
    """Return when one of ``futures`` is done, or after ``timeout`` seconds (then the
    caller looks at the workers again)."""
    from distributed import wait

    # cancelled (the scheduler lost): the caller's next look at the workers says so
    with contextlib.suppress(TimeoutError, futures_cancelled):
        wait(futures, timeout=timeout, return_when="FIRST_COMPLETED")  # type: ignore[no-untyped-call]


def _with_hosts(record: TrialRecord, resets: list[HostRun], hosts: list[HostRun]) -> TrialRecord:
    """The measured part's record with the trial's other host parts (and the steps
    before it); failed, without readings, when another host's part failed."""
    record.host_runs = [*resets, *record.host_runs, *hosts]
    failed = [h for h in hosts if not h.ok]
    if failed and record.status == "ok":
        record.status = "failed"
        record.error = failure_text(failed)
        record.readings.clear()
        record.unit_readings.clear()
    return record


def _host_runs(parts: Mapping[HostSlot, Any]) -> list[HostRun]:
    """The hosts' parts of a trial as runs: a host with a fault gives several (its part,
    its fault's and restore's), a lost host one that says why."""
    runs: list[HostRun] = []
    for slot, got in parts.items():
        if isinstance(got, HostRun):
            runs.append(got)
        elif isinstance(got, list):
            runs.extend(got)
        else:
            runs.append(_lost_run("trial", slot, got.why))
    return runs


def _lost_run(what: str, slot: HostSlot, why: str) -> HostRun:
    return HostRun(what, slot.role, slot.host, slot.place, "lost", error=why)


def failure_text(failed: Sequence[HostRun]) -> str:
    """What failed, host by host: the host, its role, the error and its stderr's tail.

    >>> failure_text([HostRun("setup", "server", "10.0.0.2", 1, "failed",
    ...                       error="the setup command 'x' exited with status 2",
    ...                       stderr=b"no such file\\n")])
    "on host 10.0.0.2 (server[1]): the setup command 'x' exited with status 2: no such file"
    """
    out = []
    for r in failed:
        tail = r.stderr.decode("utf-8", "replace").strip()[-500:]
        out.append(f"on host {r.where()}: {r.error or r.status}" + (f": {tail}" if tail else ""))
    return "; ".join(out)


def _failed_record(
    request: TrialRequest, slot: HostSlot, runs: list[HostRun], error: str
) -> TrialRecord:
    return TrialRecord(
        seq=request.seq,
        status="failed",
        run=request.run,
        setting=dict(request.setting),
        argv=list(request.argv),
        work=request.work,
        started=time.time(),
        error=error,
        host=slot.host,
        host_runs=runs,
    )
