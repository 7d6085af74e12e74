"""One trial on the host that runs it: what to run, running it, reading its PIs.

A :class:`TrialJob` is what every trial of a study shares (the PIs to read, timeout,
shell, working directory, the reset step); a :class:`TrialRequest` is one trial (its
rendered argv and environment, the setting the store records).  Both are plain
picklable values, so an executor can hand them to another process or machine;
:func:`run_trial` turns them into a :class:`~assay.store.TrialRecord` with its readings.

>>> from assay.spec import PISpec
>>> job = TrialJob(pis=(PISpec(name="wall_time"),), timeout=10)
>>> rec = run_trial(job, TrialRequest(seq=0, argv=["true"], setting={"n": 1}))
>>> rec.status, rec.setting, rec.readings["wall_time"] > 0
('ok', {'n': 1}, True)
"""

from __future__ import annotations

import platform
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from assay.errors import StudyError
from assay.execute.command import run_command
from assay.execute.leftovers import trial_marker
from assay.execute.monitor import ResourceMonitor
from assay.execute.peak import PACE
from assay.execute.readers import ReadError, read_reading, read_unit_readings
from assay.handover import MARKER
from assay.spec import PISpec
from assay.store import TrialRecord


@dataclass(frozen=True)
class Step:
    """A setup, reset or teardown command, rendered; ``shown`` is how the study file
    wrote it (error messages quote it)."""

    what: str  # "setup", "reset" or "teardown"
    argv: tuple[str, ...]
    shown: str
    env: Mapping[str, str] = field(default_factory=dict)
    # [cluster] groups: group g's (g >= 1) argv and env, its own hosts in the
    # placeholders (``argv``/``env`` are group 0's)
    groups: Mapping[int, tuple[tuple[str, ...], Mapping[str, str]]] = field(default_factory=dict)
    # a role's command: the regular expression its output matches once it is ready for
    # the benchmark ("": ready once started)
    ready: str = ""

    def in_group(self, group: int) -> Step:
        """The step as group ``group`` of hosts runs it (``[cluster] groups``).

        >>> s = Step("setup", ("load", "s0"), "load", groups={1: (("load", "s1"), {})})
        >>> s.in_group(1).argv, s.in_group(0).argv, s.in_group(1).groups
        (('load', 's1'), ('load', 's0'), {})
        """
        if group == 0 or group not in self.groups:
            return replace(self, groups={}) if self.groups else self
        argv, env = self.groups[group]
        return replace(self, argv=tuple(argv), env=env, groups={})


@dataclass(frozen=True)
class TrialJob:
    """What every trial of one study shares."""

    pis: tuple[PISpec, ...]
    timeout: float
    shell: bool = False
    cwd: str | None = None
    reset: Step | None = None  # run before every trial
    conclude: Step | None = None  # run after every trial
    # interference = "wait": hold each trial while other processes use the CPU
    quiet_wait: bool = False
    # interference = "repeat": also measure again a trial they disturbed (with quiet_wait)
    repeat_disturbed: bool = False
    # where the session's running benchmarks are noted (a killed session's leftover is
    # stopped); the study removes it at the session's end (leftovers.end_running)
    running_file: Path | None = None
    ignore_failure: bool = False  # a non-zero exit status is not a failure (hyperfine's -i)


@dataclass(frozen=True)
class TrialRequest:
    """One trial: the rendered command, its environment (laid over the host's) and the
    setting the store records; ``seq`` and ``run`` place it in the study."""

    seq: int
    argv: list[str]
    setting: dict[str, object] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    run: int = 0
    work: float | None = None
    # trials of one block run in order on one host (an order study's run); None: any host
    block: int | None = None
    # a measured role of several hosts: host i's (i >= 1) argv and env, rendered with its
    # own host placeholders ({host.index}); host 0's are argv and env
    hosts: Mapping[int, tuple[list[str], Mapping[str, str]]] = field(default_factory=dict)
    # [cluster] groups: group g's (g >= 1) argv and env on each of its measured hosts,
    # rendered with that group's hosts ({hosts.server}); group 0's are argv/env and hosts
    groups: Mapping[int, Sequence[tuple[list[str], Mapping[str, str]]]] = field(
        default_factory=dict
    )

    def in_group(self, group: int) -> TrialRequest:
        """The request as group ``group`` of hosts runs it (``[cluster] groups``).

        >>> r = TrialRequest(0, ["ping", "s0"], groups={1: [(["ping", "s1"], {})]})
        >>> r.in_group(1).argv, r.in_group(0).argv
        (['ping', 's1'], ['ping', 's0'])
        """
        if group == 0 or group not in self.groups:
            return self
        (argv, env), *others = self.groups[group]
        return replace(
            self, argv=list(argv), env=env, hosts=dict(enumerate(others, start=1)), groups={}
        )

    def on_host(self, index: int) -> TrialRequest:
        """The request as host ``index`` of the measured role runs it."""
        if index == 0 or index not in self.hosts:
            return self
        argv, env = self.hosts[index]
        return replace(self, argv=list(argv), env=env, hosts={})


def run_step(job: TrialJob, step: Step) -> None:
    """Run a setup, reset or teardown step; :class:`StudyError` (with the tail of its
    stderr) when it fails: the study cannot go on without it."""
    # a setup step may start a server that must outlive it
    res = run_command(
        list(step.argv),
        timeout=job.timeout,
        env=step.env,
        cwd=job.cwd,
        shell=job.shell,
        keep_descendants=True,
    )
    res.close()
    if res.status != "ok":
        tail = res.stderr.decode(errors="replace").strip()[-500:]
        raise StudyError(
            f"the {step.what} command {step.shown!r} failed: {res.error}"
            + (f"\n{tail}" if tail else "")
        )


def run_trial(
    job: TrialJob, request: TrialRequest, monitor: ResourceMonitor | None = None
) -> TrialRecord:
    """Run one trial (no reset: see :func:`run_step`) and read its PIs.

    A failing benchmark, a timeout or output the readers cannot parse is a trial with
    that status, not an exception: a failing trial is data.
    """
    env = request.env
    if job.running_file is not None:
        # the session's note names this marker (written before its first trial)
        env = {**env, MARKER: trial_marker(job.running_file, request.argv, job.shell)}
    if monitor is not None:
        # its first read is taken as run_command starts the command; a paced watch
        # paces each command (argv and environment) on its own (the setting has a
        # comparison's cycle or a sweep's repetition: new in every trial)
        monitor.start((tuple(request.argv), tuple(sorted(request.env.items()))))
    # its own peak memory through the spawner, within the spawner's budget
    peak = PACE.wants((tuple(request.argv), job.shell, job.cwd))
    try:
        res = run_command(
            request.argv, timeout=job.timeout, env=env, cwd=job.cwd, shell=job.shell, peak=peak
        )
    finally:
        resources = monitor.stop().series if monitor is not None else {}
    PACE.record(res.duration, res.spawner_cost)
    # with ignore_failure a non-zero exit is still measured (its readings are read)
    status = "ok" if job.ignore_failure and res.status == "failed" else res.status
    rec = TrialRecord(
        seq=request.seq,
        status=status,
        run=request.run,
        setting=dict(request.setting),
        argv=list(request.argv),
        work=request.work,
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
        host=platform.node(),
        spawned=res.spawned,
        reaped=res.reaped,
    )
    if status != "ok":
        res.close()
        return rec
    try:
        for pi in job.pis:
            rec.readings[pi.name] = read_reading(pi, res, job.cwd)
            if pi.units is not None:
                rec.unit_readings[pi.name] = read_unit_readings(pi.units, pi.name, res, job.cwd)
    except ReadError as exc:
        rec.status = "parse_error"
        rec.error = str(exc)
        rec.readings.clear()
        rec.unit_readings.clear()
    finally:
        res.close()  # the whole stdout, spooled for the readers
    return rec
