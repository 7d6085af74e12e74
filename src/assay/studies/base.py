"""What every study loop shares: opening the study in its store, setup and teardown,
handing batches of trials to the executor and committing each trial as it returns.

The loop of each kind of study (:mod:`assay.studies.run`, ``compare``, ``order``,
``settings``, ``sweep``, ``knobs``) subclasses :class:`Study` and decides which trials
to ask for next; :meth:`Study.measure` runs them through the one
:class:`~assay.execute.executor.Executor` and commits each to the store as it ends, so
a crash or a kill loses nothing finished and the next session resumes.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import os
import statistics
import time
from collections import Counter
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, TypeVar

from assay.errors import StoreError, StudyError
from assay.execute.command import render_argv
from assay.execute.environment import collect_environment
from assay.execute.executor import Executor, LocalExecutor
from assay.execute.interrupts import InterruptCheck
from assay.execute.leftovers import end_running, stop_leftover
from assay.execute.monitor import (
    DISTURBED_CORES,
    ResourceSummary,
    bottleneck_warnings,
    others_cores,
    resources_dict,
    summarize,
)
from assay.execute.overhead import LaunchOverhead, measure_launch_overhead
from assay.execute.trial import Step, TrialJob, TrialRequest
from assay.rolespec import HostGroup, active_roles, host_values, measured_role, trial_need
from assay.spec import PISpec, Spec, invalid_fields
from assay.store import DISTURBED, Store, TrialRecord, study_file
from assay.template import placeholders, render

if TYPE_CHECKING:
    from assay.stats.hosts import HostBlockEffect

__all__ = [
    "CONFIG_KEY",
    "NO_SESSION",
    "SPEC_KEY",
    "Executed",
    "OpenStudy",
    "StoredStudy",
    "Study",
    "StudyError",
    "StudyOptions",
    "bookkeeping_median",
    "bookkeeping_per_trial",
    "disturbed_trials",
    "execution_dict",
    "execution_fields",
    "failure_summary",
    "find_stored",
    "host_warnings",
    "open_stored",
    "others_during",
    "setting_host_warnings",
    "stderr_warning",
    "trial_failures",
    "watch_report",
]

D = TypeVar("D")

#: The session of an :class:`OpenStudy` read from the store by ``assay show``: none was
#: started (SQLite's row ids start at 1).
NO_SESSION = 0
#: The key under which each session records the study file it ran with: the stopping
#: rule (not part of the measurement hash) can change between sessions, and the
#: ``studies`` table keeps the first session's.  Recorded as JSON text, as study values
#: are stored with their keys sorted and the order of ``[sweep.params]`` matters.
SPEC_KEY = "session_spec"
#: The key under which a knob study records the [knobs] settings it ran with.
CONFIG_KEY = "knobs_config"
#: The session whose setup began and whose teardown has not run yet (a killed driver's):
#: the next session runs the teardown before its setup, so that its setup does not meet
#: the old session's servers (#41: a resumed setup found the old Redis answering).
TEARDOWN_DUE_KEY = "teardown_due"


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
    opened: float | None = None  # perf_counter() when this session opened the study
    measured_now: float = 0.0  # seconds the commands of this session's trials ran
    interrupted: InterruptCheck = field(default_factory=InterruptCheck)


class Executed(Protocol):
    """What a study result says about its execution (every kind of study alike)."""

    trials_total: int
    trials_by_status: dict[str, int]
    resumed_trials: int
    failures: list[dict[str, Any]]
    elapsed_s: float
    bookkeeping_s_per_trial: float | None
    bookkeeping_s_median: float | None
    launch_overhead: LaunchOverhead | None
    environment: dict[str, Any]
    warnings: list[str]
    resources: dict[str, Any] | None
    session_wall_s: float | None
    session_measured_s: float | None


@contextlib.contextmanager
def _heap_frozen() -> Generator[None, None, None]:
    """What exists before a study's first trial (the imports, the study, the store) is
    left out of the garbage collector's full collections until the loop ends: one of
    them, scanning all of it, took 13-16 ms between two trials (issue #17).  Unfrozen
    after, so that a process running study after study collects as before."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


#: A loop whose rule lets it skip analyses (``compare``'s always-valid test, ``run``'s
#: stopping rule) analyses once its commands have run this many times as long as an
#: analysis takes (the quickest of the last :data:`PACE_WINDOW`: the first ones
#: import SciPy): the analyses then cost at most about a quarter of the measured time,
#: a stop comes at most that much measured time late, and commands that run longer
#: than that are each analysed (issue #17).  On commands of a few ms an analysis after
#: every trial cost more than the trials.
ANALYSIS_PACE = 4.0
#: The analyses whose quickest sets the pace (see :data:`ANALYSIS_PACE`).
PACE_WINDOW = 4


class AnalysisPace:
    """When the next analysis of a paced study loop is due (:data:`ANALYSIS_PACE`).

    >>> pace = AnalysisPace()
    >>> pace.due(0.0)
    True
    >>> pace.analysed(0.010, measured=0.0)  # the first (imports) sets no pace
    >>> pace.analysed(0.001, measured=0.002)
    >>> pace.due(0.005), pace.due(0.006)
    (False, True)
    """

    def __init__(self) -> None:
        self._costs: list[float] = []
        self._due = 0.0  # the measured seconds from which the next analysis is due

    def due(self, measured: float) -> bool:
        """Whether an analysis is due once the commands have run ``measured`` seconds."""
        return measured >= self._due

    def analysed(self, cost: float, *, measured: float) -> None:
        """An analysis took ``cost`` seconds after ``measured`` seconds of commands."""
        self._costs = [*self._costs[1 - PACE_WINDOW :], cost]
        if len(self._costs) > 1:  # the first one holds one-time imports
            self._due = measured + ANALYSIS_PACE * min(self._costs)


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
            "bookkeeping_s_median": res.bookkeeping_s_median,
            "launch": None if res.launch_overhead is None else res.launch_overhead.as_dict(),
        },
        "environment": res.environment,
        "warnings": res.warnings,
        "resources": res.resources,
        # this session's wall time against the time its commands ran: what Assay cost
        "session": {"wall_s": res.session_wall_s, "measured_s": res.session_measured_s},
    }


def trial_failures(trials: list[TrialRecord]) -> list[dict[str, Any]]:
    """The failed trials, as reports list them, with what explains each: the last lines
    of stderr of a failed command, the end of the output a reader searched in vain."""
    return [
        {
            "seq": t.seq,
            "status": t.status,
            "error": t.error,
            "setting": t.setting,
            "stderr_tail": last_lines(t.stderr),
            "stdout_tail": last_lines(t.stdout) if t.status == "parse_error" else [],
        }
        for t in trials
        if not t.ok
    ]


def failure_summary(trials: Sequence[TrialRecord]) -> str:
    """Why trials failed, in one line for an error or a reason: the first failure's
    status and the last lines of its stderr (or its reader's error), and how many more
    failed alike; "" when none failed.

    >>> from assay.store import TrialRecord
    >>> bad = TrialRecord(seq=0, status="failed", error="exited with status 2",
    ...                   stderr=b"FATAL: no server\\n")
    >>> failure_summary([bad, TrialRecord(seq=1, status="ok"), bad])
    'trial 0: exited with status 2: FATAL: no server (and 1 more alike)'
    """
    failed = [t for t in trials if not t.ok]
    if not failed:
        return ""
    first = failed[0]
    why = " / ".join(last_lines(first.stderr, 2)) or " / ".join(
        last_lines(first.stdout, 2) if first.status == "parse_error" else []
    )
    alike = sum(1 for t in failed[1:] if (t.status, t.error) == (first.status, first.error))
    text = f"trial {first.seq}: {first.error or first.status}"
    text += f": {why}" if why else ""
    return text + (f" (and {alike} more alike)" if alike else "")


def last_lines(output: bytes, lines: int = 3, width: int = 200) -> list[str]:
    """The last non-blank ``lines`` of ``output``, each cut to ``width`` characters.

    >>> last_lines(b"a\\n\\nfatal: config not found\\n")
    ['a', 'fatal: config not found']
    """
    text = output[-8192:].decode("utf-8", "replace")
    kept = [line.rstrip() for line in text.splitlines() if line.strip()][-lines:]
    return [line if len(line) <= width else line[: width - 1] + "…" for line in kept]


def _bookkeeping(trials: list[TrialRecord]) -> list[float]:
    return [t.bookkeeping_s for t in trials if t.bookkeeping_s is not None]


def bookkeeping_per_trial(trials: list[TrialRecord]) -> float | None:
    """Mean time Assay spent between trials (``None`` before the second trial)."""
    books = _bookkeeping(trials)
    return (sum(books) / len(books)) if books else None


def bookkeeping_median(trials: list[TrialRecord]) -> float | None:
    """The typical time Assay spent between trials, one-time costs (the first
    analysis's imports) left out: the median (``None`` before the second trial)."""
    books = _bookkeeping(trials)
    return statistics.median(books) if books else None


def peak_memory(trials: Sequence[TrialRecord]) -> dict[str, Any] | None:
    """The command's peak memory over the successful trials that measured it (its own
    max RSS, :attr:`~assay.store.TrialRecord.max_rss_kib`): median, highest and how
    many trials; None when none did.

    >>> from assay.store import TrialRecord
    >>> peak_memory([TrialRecord(seq=i, status="ok", max_rss_kib=k) for i, k in
    ...              enumerate((1000, 1200, 1100))])
    {'median_kib': 1100.0, 'max_kib': 1200, 'trials': 3}
    """
    got = sorted(t.max_rss_kib for t in trials if t.ok and t.max_rss_kib)
    if not got:
        return None
    n = len(got)
    median = got[n // 2] if n % 2 else (got[n // 2 - 1] + got[n // 2]) / 2
    return {"median_kib": float(median), "max_kib": got[-1], "trials": n}


def execution_fields(st: OpenStudy) -> dict[str, Any]:
    """The :class:`Executed` fields of a result, from the study's trials and session."""
    trials = st.trials
    return {
        "trials_total": len(trials),
        "trials_by_status": dict(Counter(t.status for t in trials)),
        "failures": trial_failures(trials),
        "elapsed_s": sum(t.duration or 0.0 for t in trials),
        "bookkeeping_s_per_trial": bookkeeping_per_trial(trials),
        "bookkeeping_s_median": bookkeeping_median(trials),
        "launch_overhead": session_overhead(st),
        "environment": st.environment,
        "resumed_trials": st.resumed,
        "session_wall_s": None if st.opened is None else time.perf_counter() - st.opened,
        "session_measured_s": None if st.opened is None else st.measured_now,
    }


def resource_summaries(trials: list[TrialRecord]) -> list[ResourceSummary]:
    """The bottleneck watch's summary of every monitored trial (stored ones included)."""
    return [summarize(t.resources) for t in trials if t.resources]


def trial_cpu(t: TrialRecord) -> float | None:
    """The CPU time of a trial's command (user + system, wait4's: it and the children it
    reaped); None when not recorded."""
    if t.cpu_user is None or t.cpu_system is None:
        return None
    return t.cpu_user + t.cpu_system


#: The version of the result documents ``--json`` writes (their ``schema_version``):
#: raised when a field is removed or changes meaning; new fields keep it.  The JSON
#: Schema is ``assay/schemas/result.schema.json``.
RESULT_SCHEMA_VERSION = 1


def result_header(kind: str) -> dict[str, Any]:
    """The first fields of every result document: its schema version and its design."""
    return {"schema_version": RESULT_SCHEMA_VERSION, "kind": kind}


def samples_dict(
    pis: Sequence[Any], trials: list[TrialRecord], key: str | None = None
) -> list[dict[str, Any]]:
    """Every reading of each PI (per ``key`` of the trials' settings, e.g. the variant)
    in trial order, with each trial's run and sequence number (a comparison's cycle is
    its ``setting``'s, its position in the cycle the order of the sequence numbers): what
    another tool needs to analyse the study again, as hyperfine's ``times``."""
    groups: dict[Any, list[TrialRecord]] = {}
    for t in trials:
        if t.ok:
            groups.setdefault(None if key is None else t.setting.get(key), []).append(t)
    out: list[dict[str, Any]] = []
    for name, mine in groups.items():
        for pi in pis:
            got = [t for t in mine if pi.name in t.readings]
            row: dict[str, Any] = {} if key is None else {key: name}
            row |= {
                "pi": pi.name,
                "unit": pi.unit,
                "runs": [t.run for t in got],
                "seqs": [t.seq for t in got],
                "values": [t.readings[pi.name] for t in got],
            }
            if key == "variant":
                row["cycles"] = [t.setting.get("cycle") for t in got]
            out.append(row)
    return out


#: From this share of a session's watched trials disturbed by other work, a launch
#: probe the session took from the cache (made before it) is run again at its end: the
#: cache is kept while the 1-minute load average stays near the probe's, which lags
#: work that started a few seconds before the study (#60).
REPROBE_SHARE = 0.25


def session_overhead(st: OpenStudy) -> LaunchOverhead | None:
    """The session's launch probe: the one it opened with, or, when that came from the
    cache and no longer holds, the probe run again now
    (:func:`~assay.execute.overhead.probe_again`; ``st.overhead`` becomes it).  It no
    longer holds when other processes disturbed at least :data:`REPROBE_SHARE` of this
    session's watched trials on this machine, or when a few bare launches at the
    session's end take notably longer or shorter than it said
    (:func:`~assay.execute.overhead.launch_moved`: the watch cannot tell the others'
    share during trials shorter than its sampling)."""
    o = st.overhead
    if o is None or o.measured_at is None or "executor" in st.environment:
        return o  # probed in this session, or trials on other hosts than this one
    from assay.execute.overhead import launch_moved, probe_again

    bad, watched = disturbed_trials(st.trials[st.resumed :])
    if watched and len(bad) >= REPROBE_SHARE * watched:
        why: str | None = f"other work disturbed {len(bad)} of the {watched} watched trials"
    else:
        why = launch_moved(o)
    if why is not None:
        st.overhead = probe_again(o, why)
    return st.overhead


def others_during(trials: Sequence[TrialRecord]) -> list[tuple[TrialRecord, float]]:
    """Each watched trial with the cores other processes kept busy during it
    (:func:`~assay.execute.monitor.others_cores`; NaN where not known); an unwatched
    trial's interference is not known and it is left out."""
    return [(t, others_cores(summarize(t.resources), trial_cpu(t))) for t in trials if t.resources]


def disturbed_trials(trials: list[TrialRecord]) -> tuple[set[tuple[int, int]], int]:
    """The ``(run, seq)`` of the watched trials during which other processes used
    :data:`~assay.execute.monitor.DISTURBED_CORES` or more of the CPU, and how many
    trials were watched (an unwatched trial's interference is not known)."""
    watched = others_during(trials)
    bad = {(t.run, t.seq) for t, cores in watched if cores >= DISTURBED_CORES}
    return bad, len(watched)


def watch_report(
    spec: Spec, trials: list[TrialRecord], label: str = ""
) -> tuple[list[str], dict[str, Any] | None]:
    """Bottleneck warnings and the JSON ``resources`` summary of monitored trials."""
    summaries = resource_summaries(trials)
    if not summaries:
        return [], None
    under = spec.benchmark.under_test
    # the watch paces itself on the time from trial to trial: the trials and the gaps
    loop_s = sum((t.duration or 0.0) + (t.bookkeeping_s or 0.0) for t in trials)
    watched = [t for t in trials if t.resources]
    others = [others_cores(s, trial_cpu(t)) for s, t in zip(summaries, watched, strict=True)]
    resources = resources_dict(summaries, under, elapsed_s=loop_s, others=others)
    # a paced watch leaves trials unwatched to stay in its budget (ResourceMonitor)
    resources["trials_not_watched"] = len(trials) - len(summaries)
    if not any(t.host_runs for t in trials):
        return bottleneck_warnings(summaries, under, label=label, others=others), resources
    # several hosts: the warnings name the host (the measured one's included)
    from assay.studies.cluster import cluster_report

    warnings, resources["cluster"] = cluster_report(trials, under, label)
    return warnings, resources


def with_quiet_waits(
    resources: dict[str, Any] | None, waits: dict[str, float] | None
) -> dict[str, Any] | None:
    """The watch's summary with what ``interference = "wait"`` did, under
    ``interference.waits`` (with the watch off, the waits are not reported)."""
    if waits is None or resources is None:
        return resources
    out = dict(resources)
    out["interference"] = {**(out.get("interference") or {}), "waits": waits}
    return out


class StudyOptions(TypedDict, total=False):
    """How a study of any kind runs (the keyword arguments of :class:`Study`)."""

    fresh: bool  # archive the stored trials and start again
    # a quick study's working directory and files (studies.fingerprint), kept with it
    fingerprint: dict[str, Any] | None
    measure_overhead: bool  # measure the launch overhead first
    monitor: bool  # the bottleneck watch (with the default executor)
    executor: Executor | None  # default: LocalExecutor


def stderr_warning(trials: Sequence[TrialRecord], label: str = "") -> list[str]:
    """One warning when trials that exited 0 wrote to stderr (``sort big.txt | uniq`` with
    no big.txt "succeeds"), with the first such trial's first lines; none otherwise.

    >>> from assay.store import TrialRecord
    >>> t = TrialRecord(seq=3, status="ok", stderr=b"no file")
    >>> stderr_warning([t])
    ['1 of 1 trials exited 0 but wrote to stderr (a command failing quietly?); trial 3: no file']
    """
    ok = [t for t in trials if t.ok]
    loud = [t for t in ok if t.stderr.strip()]
    if not loud:
        return []
    lines = loud[0].stderr.decode("utf-8", "replace").strip().splitlines()
    shown = " / ".join(line.strip()[:120] for line in lines[:2])
    more = " …" if len(lines) > 2 else ""
    return [
        f"{label}{len(loud)} of {len(ok)} trials exited 0 but wrote to stderr (a command "
        f"failing quietly?); trial {loud[0].seq}: {shown}{more}"
    ]


#: Below this Kruskal–Wallis p-value, a study's hosts are said to give different results.
HOST_ALPHA = 0.01


def host_warnings(spec: Spec, trials: Sequence[TrialRecord], label: str = "") -> list[str]:
    """A warning per PI whose readings differ between the hosts that ran ``trials`` of
    one setting (a run, a variant); none on one host.  Host as a factor: the F test of
    :func:`~assay.stats.hosts.host_block_effect` with the trials in one block, on the
    log scale for positive readings, hosts with fewer than 2 readings left out.  Ranks
    (Kruskal–Wallis) missed a host 14x slower that ran 2 of 16 trials (p = 0.06): the
    F test uses the size of its departure."""
    ok = [t for t in trials if t.ok]
    counts = Counter(t.host for t in ok)
    kept = [t for t in ok if counts[t.host] >= 2]
    out = []
    for pi, effect, sizes, what in _host_effects(spec, kept, ()):
        out.append(
            f"{label}{pi.name}: the hosts give different results (host as a factor: "
            f"F({effect.df[0]}, {effect.df[1]}) = {effect.statistic:.3g}, p = "
            f"{effect.p_value:.2g}; {what}: {sizes}): one sample across them mixes "
            "machines; require identical hosts or compare per host"
        )
    return out


def setting_host_warnings(
    spec: Spec, trials: Sequence[TrialRecord], params: Sequence[str]
) -> list[str]:
    """:func:`host_warnings` for a design whose trials differ by setting (a sweep): host
    as a blocking factor beside the settings (:func:`~assay.stats.hosts.host_block_effect`,
    on the log scale for positive readings), so that the settings' own differences are
    not taken for the hosts' (#41: one host 7.7x slower, and the sweep said nothing;
    a host 14x slower that ran 2 of 16 trials was missed by ranks of departures)."""
    out = []
    for pi, effect, sizes, what in _host_effects(spec, [t for t in trials if t.ok], params):
        out.append(
            f"{pi.name}: the hosts give different results for the same settings (host as "
            f"a factor beside the settings: F({effect.df[0]}, {effect.df[1]}) = "
            f"{effect.statistic:.3g}, p = {effect.p_value:.2g}; {what}: {sizes}): the "
            "sweep mixes machines, so its effects may be the hosts'; require identical "
            "hosts or sweep per host"
        )
    return out


def _host_effects(
    spec: Spec, ok: Sequence[TrialRecord], params: Sequence[str]
) -> Iterator[tuple[PISpec, HostBlockEffect, str, str]]:
    """Each PI whose hosts differ at :data:`HOST_ALPHA` (host beside the settings of
    ``params``), its effect, each host's size ("a ×1 (n=7), b ×14.4 (n=2)") and what
    the sizes are."""
    if len({t.host for t in ok}) < 2:
        return
    import math

    from assay.stats.hosts import host_block_effect  # SciPy: only where there are hosts

    for pi in spec.pis:
        kept = [t for t in ok if pi.name in t.readings and math.isfinite(t.readings[pi.name])]
        positive = all(t.readings[pi.name] > 0 for t in kept)
        effect = host_block_effect(
            [math.log(t.readings[pi.name]) if positive else t.readings[pi.name] for t in kept],
            [tuple(repr(t.setting.get(p)) for p in params) for t in kept],
            [t.host or "?" for t in kept],
        )
        if effect is None or effect.p_value >= HOST_ALPHA:
            continue
        if positive:
            sizes = [f"×{r:.3g}" for r in effect.ratios()]
            what = "each host's readings against the median host's"
        else:
            u = f" {pi.unit}" if pi.unit else ""
            sizes = [f"{e:+.3g}{u}" for e in effect.effects]
            what = "each host's departure from the median host's"
        hosts = ", ".join(
            f"{h} {size} (n={n})" for h, size, n in zip(effect.hosts, sizes, effect.n, strict=True)
        )
        yield pi, effect, hosts, what


class Study:
    """One study in its store, its trials run by an executor (local by default).

    Side effects live here and in the executor, never in the designs.  Subclasses
    hold the loop of one kind of study.
    """

    def __init__(
        self,
        spec: Spec,
        store_path: Path,
        *,
        fresh: bool = False,
        fingerprint: dict[str, Any] | None = None,
        measure_overhead: bool = True,
        monitor: bool = True,
        executor: Executor | None = None,
    ) -> None:
        self.spec = spec
        self.store_path = store_path
        self._interrupted = InterruptCheck()  # from here: a lost Ctrl-C still counts
        self.fresh = fresh
        self.fingerprint = fingerprint
        self.measure_overhead = measure_overhead
        self.executor: Executor = (
            executor if executor is not None else LocalExecutor(monitor=monitor)
        )
        self.executor.prepare(spec)
        self.cwd = self._cwd()
        # called with each trial as it is stored (e.g. to show its output)
        self.on_trial: Callable[[TrialRecord], None] | None = None
        self._opened: OpenStudy | None = None  # where the hosts' steps are stored
        # what the study's steps did that its result says (a cut-off session's teardown
        # run first; a teardown that failed)
        self.step_notes: list[str] = []

    def _active_roles(
        self, values: Mapping[str, object] | None, group: int | None = None
    ) -> dict[str, list[str]]:
        """The roles' hosts in a trial of ``values`` (all, but for roles whose size is a
        parameter: ``[cluster] counts``); of one group of hosts (``[cluster] groups``)
        when ``group`` is given."""
        cluster = self.spec.cluster
        assert cluster is not None and cluster.roles is not None
        roles = cluster.roles if group is None else self._host_groups[group].roles
        if cluster.pack and group is not None and values is None:
            return roles  # a step, not a trial: every host of its group
        return active_roles(roles, cluster.counts, {**self.spec.params, **(values or {})})

    @functools.cached_property
    def _host_groups(self) -> list[HostGroup]:
        return self.spec.host_groups()

    def _trial_groups(self, values: Mapping[str, object] | None = None) -> list[int]:
        """The groups of hosts a trial of ``values`` can run on (``[cluster] groups``:
        each; ``pack``: those with every host it needs: formed for its need, or for a
        larger one when a comparison's cycle holds trials of several); [0] without
        roles."""
        cluster = self.spec.cluster
        if cluster is None or cluster.roles is None:
            return [0]
        if not cluster.pack:
            return list(range(len(self._host_groups)))
        need = trial_need(cluster.roles, cluster.counts, {**self.spec.params, **(values or {})})
        return [
            i
            for i, g in enumerate(self._host_groups)
            if g.need is not None
            and all(n <= m for (_, n), (_, m) in zip(need, g.need, strict=True))
        ]

    def _host_values(
        self, index: int = 0, values: Mapping[str, object] | None = None, group: int | None = None
    ) -> dict[str, str]:
        """A multi-host study's placeholders on the measured role's host ``index`` (of
        ``group``, or of all the hosts) in a trial of ``values`` (``{hosts.server}``,
        ``{host.index}``): [benchmark]'s command and steps run there."""
        cluster = self.spec.cluster
        if cluster is None or cluster.roles is None:
            return {}
        roles = self._active_roles(values, group)
        return host_values(roles, measured_role(cluster.roles, cluster.measure), index)

    def _measured_hosts(self, values: Mapping[str, object] | None = None, group: int = 0) -> int:
        """How many hosts run the measured command at once in a trial of ``values`` on
        ``group`` (1 but for [cluster.roles]: the measured role's, in the group)."""
        cluster = self.spec.cluster
        if cluster is None or cluster.roles is None:
            return 1
        roles = self._active_roles(values, group)
        return len(roles[measured_role(cluster.roles, cluster.measure)])

    def _cwd(self) -> str | None:
        cwd = self.spec.benchmark.cwd
        if cwd is None:
            return None
        p = Path(cwd).expanduser()
        if not p.is_absolute() and self.spec.source_path:
            p = Path(self.spec.source_path).parent / p
        # absolute: a host of a cluster starts its steps in its own home directory, where
        # a relative study path's "." named the home (#41: '/root/redis_pair.py')
        return os.path.abspath(p)

    def _env(
        self,
        values: dict[str, object],
        extra: dict[str, str] | None = None,
        only: dict[str, str] | None = None,
        host: int = 0,
        group: int | None = None,
    ) -> dict[str, str]:
        """The environment laid over the host's: [benchmark] env (or ``only`` of it)
        and ``extra``, rendered with the study's values and ``values`` (on the measured
        role's host ``host`` of ``group``)."""
        allv = {**self._host_values(host, values, group), **self.spec.params, **values}
        env = {**(self.spec.benchmark.env if only is None else only), **(extra or {})}
        return {k: render(v, allv) for k, v in env.items()}

    def _step(self, argv: list[str] | None, what: str) -> Step | None:
        """A setup, reset or teardown command, rendered with the study's [params]; with
        ``[cluster] groups``, once per group of hosts, each with its own hosts in the
        placeholders (``{hosts.server}``: its group's servers)."""
        if not argv:
            return None
        rendered = []
        for group in range(max(1, len(self._host_groups))):  # (group 0 of 1 is every host)
            values = {**self._host_values(group=group), **self.spec.params}
            # an env entry that needs a trial's value (a swept one) is the trials' alone:
            # a step runs once, with [params] (#42: a swept {x} in env crashed)
            env = {
                k: v
                for k, v in self.spec.benchmark.env.items()
                if set(placeholders(v)) <= set(values)
            }
            rendered.append(
                (
                    tuple(render_argv(argv, values, shell=self.spec.benchmark.shell)),
                    self._env({}, only=env, group=group),
                )
            )
        (first, env), *others = rendered
        return Step(what, first, " ".join(argv), env, dict(enumerate(others, start=1)))

    @functools.cached_property
    def job(self) -> TrialJob:
        """What every trial of this study shares (see :class:`TrialJob`); made once (it
        was made for every batch: ~0.1 ms between two trials of ``assay run``)."""
        b = self.spec.benchmark
        return TrialJob(
            pis=tuple(self.spec.pis),
            timeout=b.timeout,
            shell=b.shell,
            cwd=self.cwd,
            reset=self._step(b.reset, "reset"),
            conclude=self._step(b.conclude, "conclude"),
            quiet_wait=self.spec.stop.interference in ("wait", "repeat"),
            repeat_disturbed=self.spec.stop.interference == "repeat",
            running_file=self.running_file,
            ignore_failure=b.ignore_failure,
        )

    @property
    def running_file(self) -> Path:
        # one per study: studies running side by side in one store keep their own
        return study_file(self.store_path, self.spec.study.name, ".running")

    def request(
        self,
        seq: int,
        values: dict[str, object],
        *,
        work: float | None = None,
        command: list[str] | None = None,
        env: dict[str, str] | None = None,
        setting: dict[str, object] | None = None,
        run: int = 0,
        block: int | None = None,
    ) -> TrialRequest:
        """One trial of ``command`` (default: the benchmark's) with ``values`` in its
        placeholders and ``env`` laid over the benchmark's; ``setting`` is what the store
        records (default: ``values``)."""
        b = self.spec.benchmark
        groups = {}
        for group in self._trial_groups(values):  # each group of hosts with its own {hosts.*}
            rendered = []
            for index in range(self._measured_hosts(values, group)):  # each its own {host.index}
                allv = {**self._host_values(index, values, group), **values}
                try:
                    argv = render_argv(
                        b.command if command is None else command, allv, shell=b.shell
                    )
                except KeyError as exc:  # a design that left a placeholder without a value
                    raise StudyError(
                        f"{self.spec.source_path}: {exc.args[0]} in the benchmark command; give "
                        "it a value in [params] (or run the study with the command its "
                        "sections are for)"
                    ) from None
                rendered.append((argv, self._env(values, env, host=index, group=group)))
            groups[group] = rendered
        rendered = next(iter(groups.values()))  # the first group's: the one it names
        return TrialRequest(
            seq=seq,
            argv=rendered[0][0],
            setting=dict(values if setting is None else setting),
            env=rendered[0][1],
            run=run,
            work=work,
            block=block,
            hosts=dict(enumerate(rendered[1:], start=1)),
            groups={g: r for g, r in groups.items() if g},  # group 0's: argv and hosts
        )

    def _check_executor(self) -> None:
        """A study with roles runs on a cluster only (its steps need their hosts)."""
        cluster = self.spec.cluster
        if cluster is not None and cluster.roles is not None:
            from assay.execute.roles import RoleExecutor

            if not isinstance(self.executor, RoleExecutor):
                raise StudyError(
                    f"{self.spec.source_path}: [cluster.roles] spans several hosts: run it on "
                    "a cluster (the [cluster] hosts over SSH, --workers N or --cluster ADDRESS)"
                )

    def _stop_leftover(self) -> str | None:
        return stop_leftover(self.running_file)

    def _open(self, store: Store) -> OpenStudy:
        """Open (or resume) the study in the store and start a session."""
        opened = time.perf_counter()
        spec = self.spec
        self._check_executor()
        store.lock_study(spec.study.name)  # held until the store closes
        if self.fresh:
            store.archive_study(spec.study.name)
        study_id = store.open_study(
            spec.study.name, spec.measurement_hash(), spec.model_dump(mode="json")
        )
        store.set_study_value(study_id, SPEC_KEY, spec.model_dump_json())
        if self.fingerprint is not None:  # before any trial: a kill leaves it to compare
            from assay.studies.fingerprint import FINGERPRINT_KEY

            store.set_study_value(study_id, FINGERPRINT_KEY, self.fingerprint)
        trials = store.trials(study_id)
        env = collect_environment(spec.benchmark.git_repo)
        session = store.start_session(study_id, env)
        overhead = measure_launch_overhead() if self.measure_overhead else None
        self.executor.start()
        if not isinstance(self.executor, LocalExecutor):
            env["executor"] = self.executor.describe()
        self._opened = OpenStudy(
            store,
            study_id,
            session,
            trials,
            len(trials),
            env,
            overhead,
            opened,
            interrupted=self._interrupted,
        )
        return self._opened

    def _with_setup(self, loop: Callable[[], D]) -> D:
        """Run ``loop`` between the study's setup and teardown steps."""
        b = self.spec.benchmark
        job = self.job
        setup, teardown = self._step(b.setup, "setup"), self._step(b.teardown, "teardown")
        st = self._opened
        tears_down = teardown is not None or any(r.teardown for r in b.roles.values())
        if st is not None and tears_down:
            self._teardown_left_behind(st, teardown)
            st.store.set_study_value(st.study_id, TEARDOWN_DUE_KEY, st.session)
        ending: StudyError | None = None
        try:
            try:
                self.executor.run_phase(job, "setup", setup)
            finally:
                self._store_host_steps()
            with _heap_frozen():
                return loop()
        except StudyError as exc:
            ending = exc
            raise
        finally:
            end_running(self.running_file)  # the session's trials are over
            torn_down = False
            try:
                self.executor.run_phase(job, "teardown", teardown)
                torn_down = True
            except StudyError as exc:
                # where it could not run (a host without its worker) is said, not dropped
                self.step_notes.append(f"the teardown failed: {exc}")
                if st is not None and tears_down:  # the next session runs it again
                    due = {"session": st.session, "failed": True}
                    st.store.set_study_value(st.study_id, TEARDOWN_DUE_KEY, due)
                if ending is not None:  # the study's own error says it too
                    ending.args = (f"{ending}\n(and the teardown failed: {exc})",)
            self._store_host_steps()
            if st is not None and tears_down and torn_down:
                st.store.set_study_value(st.study_id, TEARDOWN_DUE_KEY, None)

    def _teardown_left_behind(self, st: OpenStudy, teardown: Step | None) -> None:
        """Run the teardown of an earlier session that was cut off (killed) after its
        setup began, before this session's setup; its outcome is noted."""
        due = st.store.study_value(st.study_id, TEARDOWN_DUE_KEY)
        if due is None:
            return
        if isinstance(due, dict):  # {"session": N, "failed": true}: it ran, and failed
            what = f"session {due.get('session')}'s teardown failed"
        else:
            what = f"session {due} was cut off after its setup began, before its teardown"
        try:
            self.executor.run_phase(self.job, "teardown", teardown)
            self.step_notes.append(f"{what}: its teardown ran before this session's setup")
        except StudyError as exc:
            self.step_notes.append(
                f"{what}: its teardown, run before this session's setup, failed ({exc}); "
                "what it left running may still run"
            )
        finally:
            self._store_host_steps()

    def _store_host_steps(self) -> None:
        """Store the hosts' outcomes of the study's steps (a multi-host study's)."""
        runs = self.executor.drain_host_runs()
        st = self._opened
        if runs and st is not None:
            st.store.add_host_runs(st.study_id, runs, st.session)

    def measure(
        self, st: OpenStudy, requests: Sequence[TrialRequest]
    ) -> Generator[TrialRecord, None, None]:
        """Run a batch through the executor; keep each trial in the store (committed
        now, or within a second: :meth:`Store.queue_trial`) and append it to
        ``st.trials`` as it finishes, then yield it.  Closing the generator stops the
        batch (the executor does not start the rest)."""
        st.interrupted()  # a Ctrl-C lost in library code still ends the study here
        in_order = True
        try:
            with contextlib.closing(self.executor.run_trials(self.job, requests)) as records:
                for record in records:
                    st.interrupted()
                    st.store.queue_trial(st.study_id, record, st.session)
                    if record.status == DISTURBED:  # set aside: stored, not analysed
                        st.measured_now += record.duration or 0.0
                        continue
                    last = st.trials[-1] if st.trials else None
                    in_order = in_order and (
                        last is None or (last.run, last.seq) < (record.run, record.seq)
                    )
                    st.trials.append(record)
                    st.measured_now += record.duration or 0.0
                    if self.on_trial is not None:
                        self.on_trial(record)
                    yield record
        finally:
            # trials on a cluster end in any order: keep the store's order (run, seq)
            if not in_order:
                st.trials.sort(key=lambda t: (t.run, t.seq))


#: The kinds of study, by the section of the study file that makes them.
KINDS = ("run", "compare", "order", "sweep", "knobs")


def study_kind(spec: Spec | Mapping[str, Any]) -> str:
    """Which command runs ``spec`` (a Spec, or its stored JSON, read as it is so that a
    file an older Assay stored cannot stop a listing): ``compare`` ([[variant]]),
    ``order`` ([[test]]), ``sweep`` ([sweep]), ``knobs`` ([[knob]]) or ``run``.  A file
    with [[variant]]s (or [[test]]s) and a [sweep] is the variants' (or tests').

    >>> study_kind({"variants": [{"name": "a"}, {"name": "b"}], "tests": []})
    'compare'
    """
    data = spec.model_dump() if isinstance(spec, Spec) else spec
    if data.get("variants"):
        return "compare"
    if data.get("tests"):
        return "order"
    if data.get("sweep"):
        return "sweep"
    if data.get("knob_specs") or data.get("knobs_options"):
        return "knobs"
    return "run"


def stored_spec(data: dict[str, Any], name: str) -> Spec:
    """The study file rebuilt from its stored JSON (``Spec.model_dump``), named ``name``
    (an archived study keeps its name in the store).

    The default PI is left out as if it had not been given: a study with a work amount
    analyses the default wall time only when the file named it (see
    :func:`assay.studies.run.analyse`).
    """
    from pydantic import ValidationError

    default = Spec.model_fields["pis"].get_default(call_default_factory=True)
    if data.get("pis") == [p.model_dump(mode="json") for p in default]:
        data = {k: v for k, v in data.items() if k != "pis"}
    try:
        spec = Spec.model_validate(data)
    except ValidationError as exc:
        raise StoreError(
            f"study {name!r}: the study file stored with it is not one this version of "
            f"Assay reads ({'; '.join(invalid_fields(exc, data)[:3])}): another version "
            "stored it; read it with that one, or measure it again (--fresh)"
        ) from None
    return spec.model_copy(update={"study": spec.study.model_copy(update={"name": name})})


@dataclass(frozen=True)
class StoredStudy:
    """A study as its store holds it (no study file needed): its spec as the last
    session ran it, its kind and its sessions (see :meth:`Store.study_sessions`)."""

    name: str
    study_id: int
    spec: Spec
    kind: str
    sessions: list[dict[str, Any]]

    @property
    def ended(self) -> bool:
        """Whether the last session ended (else it was interrupted, or is running)."""
        return bool(self.sessions) and self.sessions[-1]["ended"] is not None

    @property
    def last_result(self) -> dict[str, Any]:
        """The result the last ended session recorded (``{}`` if none did)."""
        ended = [s["result"] for s in self.sessions if s["ended"] is not None]
        return dict(ended[-1] or {}) if ended else {}


def find_stored(store: Store, name: str) -> StoredStudy:
    """Study ``name`` of ``store``, without changing it; :class:`StudyError` names the
    store's studies when it has no such study."""
    found = store.find_study(name)
    if found is None:
        names = ", ".join(repr(n) for n in store.study_names()) or "none"
        raise StudyError(f"{store.path}: no study named {name!r}; its studies: {names}")
    sid = found[0]
    text = store.study_value(sid, SPEC_KEY)
    spec = stored_spec(json.loads(text) if text else store.study_spec(sid), name)
    return StoredStudy(name, sid, spec, study_kind(spec), store.study_sessions(sid))


def open_stored(store: Store, name: str) -> OpenStudy:
    """Study ``name`` as a result is built from it, read without starting a session
    (``session`` is :data:`NO_SESSION`): every stored trial, and the last session's
    environment and resumed trials (those stored before it)."""
    found = store.find_study(name)
    if found is None:
        raise StudyError(f"{store.path}: no study named {name!r}")
    sid = found[0]
    trials = store.trials(sid)
    sessions = store.study_sessions(sid)
    last = store.trials_by_session(sid).get(sessions[-1]["id"], 0) if sessions else 0
    envs = store.environments(sid)
    environment = envs[-1] if envs else {}
    return OpenStudy(store, sid, NO_SESSION, trials, len(trials) - last, environment, None)
