"""Terminal output: the live progress line and the final summary."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Self

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text

from assay.execute.executor import ExecutorStatus
from assay.execute.interference import MAX_REPEATS
from assay.execute.monitor import BUDGET, DISTURBED_CORES, MIN_CPU_WINDOW
from assay.execute.overhead import LaunchOverhead
from assay.report.answer import answer
from assay.report.fit import fitted
from assay.report.format import (
    format_bytes,
    format_duration,
    format_estimate,
    format_percent,
    format_spread,
    trial_counts,
)
from assay.report.safe import plain
from assay.stats.spread import spread
from assay.studies.run import Progress, StudyResult

if TYPE_CHECKING:
    from assay.spec import StopSpec
    from assay.studies.baseline import BaselineComparison


def status_text(s: ExecutorStatus) -> str:
    """``4 workers, 4 busy · 12 in flight · ~35.0 s left in this batch``.

    >>> status_text(ExecutorStatus(workers=4, busy=2, in_flight=2, left_s=None))
    '4 workers, 2 busy · 2 in flight'
    """
    text = f"{s.workers} workers, {s.busy} busy · {s.in_flight} in flight"
    if s.left_s is not None:
        text += f" · ~{format_duration(s.left_s)} left in this batch"
    return text


class LiveLine:
    """One status line: live on a terminal; elsewhere (CI logs, pipes) one line every 10 s."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.live: Live | None = None
        self.last_plain = 0.0
        # a cluster's workers and trials in flight, added to every line when set
        self.status: Callable[[], ExecutorStatus | None] | None = None

    def __enter__(self) -> Self:
        if self.console.is_terminal:
            self.live = Live(
                Text("starting…"), console=self.console, transient=True, refresh_per_second=8
            )
            self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.__exit__(None, None, None)

    def show(self, line: str, final: bool = False) -> None:
        status = self.status() if self.status is not None else None
        if status is not None:
            line = f"{line} · {status_text(status)}"
        line = plain(line)  # names and hosts come from outside
        if self.live is not None:
            self.live.update(Text(line))
        elif time.monotonic() - self.last_plain >= 10 or final:
            self.last_plain = time.monotonic()
            self.console.print(line, highlight=False, markup=False)


class TrialPace:
    """Wall seconds per trial as a live line sees them finish: the time since the first
    trial finished over the trials finished since (the analyses between batches
    included), from ``done`` counts that start again at 0 with each batch.

    >>> pace = TrialPace()
    >>> pace.per_trial() is None
    True
    """

    def __init__(self) -> None:
        self._start: float | None = None
        self._trials = 0
        self._last = 0

    def update(self, done: int) -> None:
        """A batch's finished-trial count, as each live update gives it."""
        new = done - self._last if done >= self._last else done  # a new batch
        self._last = done
        if new <= 0:
            return
        if self._start is None:  # the first finish starts the clock
            self._start = time.monotonic()
            return
        self._trials += new

    def per_trial(self) -> float | None:
        """Seconds per trial, None before two trials have finished."""
        if self._start is None or self._trials == 0:
            return None
        return (time.monotonic() - self._start) / self._trials

    def seconds(self, trials: int) -> float | None:
        """The time ``trials`` more take at this pace; None with no pace yet."""
        per = self.per_trial()
        return None if per is None or trials <= 0 else per * trials


class TimeLeft:
    """The time a study has left, as the live line shows it: smoothed from one look to
    the next on a log scale (a comparison's raw estimate jumped 21 s -> 7 h 11 min ->
    2 min 39 s) and never beyond what its budget leaves.

    >>> t = TimeLeft(max_time=600.0)
    >>> round(t.update(20.0, elapsed=0.0)), round(t.update(25000.0, elapsed=10.0))
    (20, 56)
    >>> round(t.update(10**9, elapsed=590.0))  # the budget's 10 s are all it can take
    10
    """

    SMOOTHING = 0.3  # the weight of the newest estimate

    def __init__(self, max_time: float | None = None) -> None:
        self.max_time = max_time
        self._log: float | None = None

    def budget_s(self, elapsed: float, cap_s: float | None = None) -> float:
        """The seconds the budget leaves (``cap_s``: what its rounds leave), inf without."""
        caps = [c for c in (cap_s, None if self.max_time is None else self.max_time - elapsed)
                if c is not None]  # fmt: skip
        return max(0.0, min(caps)) if caps else math.inf

    def update(self, raw_s: float, *, elapsed: float, cap_s: float | None = None) -> float:
        cap = self.budget_s(elapsed, cap_s)
        raw = min(max(raw_s, 0.0), cap) if math.isfinite(raw_s) else cap
        if not math.isfinite(raw):
            return raw
        x = math.log1p(raw)
        self._log = (
            x if self._log is None else (1 - self.SMOOTHING) * self._log + self.SMOOTHING * x
        )
        return min(math.expm1(self._log), cap)


def rounds_left_text(need: int, eta_s: float, per_round_s: float, budget_s: float) -> str:
    """The live line's one estimate of what is left: the rounds that the (smoothed)
    time left holds, so that the two never disagree (a raw count of 583 then 1580
    beside a time falling from 44 s to 40 s read as broken); when the target needs more
    than the budget leaves, both figures, said so.

    >>> rounds_left_text(40, 4.0, 0.1, 60.0)
    ' · ~40 rounds left (~4.0 s)'
    >>> rounds_left_text(1580, 39.8, 0.1, 39.8)
    ' · ~398 rounds left in the budget (~39.8 s); the target needs ~1580'
    """
    if per_round_s <= 0 or not math.isfinite(eta_s):
        return f" · ~{need} rounds left (~{format_duration(eta_s)})"
    fits = max(1, round(eta_s / per_round_s))
    if need * per_round_s > budget_s:
        return (
            f" · ~{min(fits, need)} rounds left in the budget (~{format_duration(eta_s)}); "
            f"the target needs ~{need}"
        )
    return f" · ~{min(fits, need)} rounds left (~{format_duration(eta_s)})"


class ProgressView(LiveLine):
    """Shows rounds done, the current CI width per PI and the estimated time left.

    Between two analyses (a study analyses at a pace on short commands) a PI's width
    is its last known one, with the round it was known at, not ``±∞``."""

    def __init__(self, console: Console, target: float, stop: StopSpec | None = None) -> None:
        super().__init__(console)
        self.target = target
        self.stop = stop
        self.left = TimeLeft(None if stop is None else stop.max_time)
        self._known: dict[str, tuple[float, int]] = {}  # PI -> (width, round)

    def _width(self, name: str, width: float, rounds: int) -> str:
        if math.isfinite(width):
            self._known[name] = (width, rounds)
            return f"{name} {format_percent(width)}"
        if name in self._known:
            last, at = self._known[name]
            return f"{name} {format_percent(last)} (round {at})"
        return f"{name} {format_percent(width)}"

    def update(self, p: Progress) -> None:
        widths = (
            ", ".join(self._width(r.name, r.relative_half_width, p.rounds) for r in p.results)
            or "collecting samples"
        )
        left = ""
        if p.decision.rounds_left is not None and not p.decision.done:
            per_round = p.mean_round_s if math.isfinite(p.mean_round_s) else 0.0
            cap = None
            if self.stop is not None:  # the rounds the budget leaves
                cap = max(0, self.stop.max_rounds - p.rounds) * per_round
            need = p.decision.rounds_left
            eta = self.left.update(need * per_round, elapsed=p.elapsed, cap_s=cap)
            left = rounds_left_text(need, eta, per_round, self.left.budget_s(p.elapsed, cap))
        failed = f" · {p.failed} failed" if p.failed else ""
        line = (
            f"round {p.rounds}{failed} · CI {widths} (target {format_percent(self.target)}){left}"
        )
        if p.decision.done:  # the last line says what the study decided
            line += f" · {p.decision.reason}"
        self.show(line, p.decision.done)


def render_baseline(comparisons: Sequence[BaselineComparison], console: Console) -> None:
    """``assay run --baseline``: each PI against the earlier result, and the gate's verdict."""
    for c in comparisons:
        style = ""
        if c.gate is not None:
            style = {"worse": "bold red", "not worse": "bold green"}.get(c.gate.verdict, "yellow")
        console.print(Text(plain(c.text()), style=style))
    if not comparisons:
        console.print(Text("baseline: no PI of this result has a usable interval", "yellow"))


def without_disturbed_line(w: Mapping[str, Any]) -> str:
    """Each PI again without the disturbed trials (``StudyResult.without_disturbed``).

    >>> line = without_disturbed_line({"left_out": 3, "watched": 14, "pis": [{"name": "t",
    ...     "unit": "s", "mean": 0.0115, "half_width": 0.0002, "relative_half_width": 0.017}]})
    >>> line.split(": ")[1]
    't 11.50 ms ± 0.20 ms (±1.7%)'
    """
    parts = []
    for p in w.get("pis") or []:
        mean, half = p.get("mean"), p.get("half_width")
        if mean is None or not math.isfinite(float(mean)):
            parts.append(f"{p.get('name')}: no valid CI")
            continue
        half_width = math.inf if half is None else float(half)
        est = format_estimate(float(mean), half_width, p["unit"], p.get("low"), p.get("high"))
        parts.append(f"{p.get('name')} {est} ({format_percent(p.get('relative_half_width'))})")
    return (
        f"without the {w['left_out']} disturbed trials (of {w['watched']} watched; other "
        f"processes used {DISTURBED_CORES:g} core or more): " + "; ".join(parts)
    )


def fixed_count_summaries(
    samples: Sequence[Mapping[str, Any]], skip: int = 0
) -> list[dict[str, Any]]:
    """Each PI's readings summarised as hyperfine does (``--runs N``): mean, standard
    deviation, median, min, max and count, for ``--json``; the first ``skip`` readings
    (``--warmup``'s rounds) left out, as hyperfine leaves its warm-ups out."""
    out = []
    for row in samples:
        s = spread(list(row.get("values") or [])[skip:])
        if s.n:
            out.append({"pi": row["pi"], "unit": row.get("unit", ""), **s.as_dict()})
    return out


def fixed_count_lines(summaries: Sequence[Mapping[str, Any]]) -> list[str]:
    """``--runs N``'s lines: what was measured, whatever the interval says."""
    return [
        f"{s['pi']}: {format_spread(s['mean'], s['sd'], s['min'], s['max'], s['n'], s['unit'])}"
        for s in summaries
    ]


def render_result(
    res: StudyResult, console: Console, fixed_count: Sequence[Mapping[str, Any]] = ()
) -> None:
    """The final summary a reader can trust: every number with its CI, n and method;
    with ``fixed_count`` (``--runs N``), hyperfine's summary of the runs under it."""
    table = Table(title=Text(plain(res.study)), title_justify="left", show_edge=False)
    table.add_column("PI")
    table.add_column("mean ± CI half-width", justify="right")
    table.add_column("CI", justify="right")
    table.add_column("n (subsession), rounds", justify="right")
    table.add_column("warm-up removed", justify="right")
    table.add_column("met", justify="center")
    for r in res.results:
        better = "↓" if r.direction == "lower" else "↑"
        table.add_row(
            Text(plain(f"{r.name} {better}")),
            Text(plain(format_estimate(r.mean, r.half_width, r.unit, r.low, r.high))),
            f"{format_percent(r.relative_half_width)} @ {r.confidence:.0%}",
            (f"{r.n_samples} × {r.subsession_size}" if r.subsession_size else str(r.n_samples))
            + f", {r.rounds_used} rounds",
            str(r.warmup_removed),
            Text("yes", "green") if r.met else Text("no", "yellow"),
        )
    drop = ("warm-up removed", "met", "n (subsession), rounds")
    lines: list[RenderableType] = fitted(table, console, drop, label="PI")
    methods = sorted({f"{r.name}: {r.method}" for r in res.results})
    lines.append(Text("method: " + "; ".join(methods), style="dim"))
    # why a CI rests on round means, moved, or is not met yet: the reader must see it
    lines.extend(Text(plain(f"{r.name}: {r.note}"), "yellow") for r in res.results if r.note)
    by = trial_counts(res.trials_by_status)
    said = answer("run", res.as_dict())
    if said:
        lines.append(Text(plain(f"answer: {said}"), style="bold"))
    lines.extend(Text(plain(line), style="bold") for line in fixed_count_lines(fixed_count))
    if res.without_disturbed:
        lines.append(Text(plain(without_disturbed_line(res.without_disturbed)), style="yellow"))
    ran = (
        f" · {res.trials_total} trials ({by}) · measured {format_duration(res.elapsed_s)}"
        if res.trials_total
        else ""  # measured in process: no trials stored
    )
    lines.append(
        Text(
            f"{res.decision.reason}{ran}"
            + (f" · {res.resumed_trials} resumed from the store" if res.resumed_trials else "")
        )
    )
    if res.max_rss:
        lines.append(Text(max_rss_line(res.max_rss)))
    lines.extend(
        footer_lines(
            res.bookkeeping_s_per_trial,
            res.launch_overhead,
            res.warnings,
            res.failures,
            res.store,
            resources=None if res.resources is None else {"": res.resources},
            environment=res.environment,
            bookkeeping_s_median=res.bookkeeping_s_median,
        )
    )
    console.print(Group(*lines))


def _central(summary: Mapping[str, Any]) -> float:
    """The central value of a rounds summary (value or mean); NaN when empty."""
    v = summary.get("value", summary.get("mean"))
    return math.nan if v is None else float(v)


def max_rss_line(m: Mapping[str, Any] | None) -> str:
    """The command's peak memory, as ``time -v``'s "Maximum resident set size" reads;
    "" when not measured.

    >>> max_rss_line({"median_kib": 12595.0, "max_kib": 13312, "trials": 20})
    "max RSS: 12.3 MiB (the command's peak memory, median of 20 trials; highest 13.0 MiB)"
    """
    if not m or not m.get("trials"):
        return ""
    n = int(m["trials"])
    med, top = format_bytes(float(m["median_kib"]) * 1024), format_bytes(float(m["max_kib"]) * 1024)
    if n == 1:
        return f"max RSS: {med} (the command's peak memory, 1 trial)"
    return f"max RSS: {med} (the command's peak memory, median of {n} trials; highest {top})"


def resources_line(r: Mapping[str, Any], label: str = "") -> str:
    """One line of the bottleneck watch: p95 utilisation per component and totals."""

    def pct(key: str) -> str:
        v = _central(r[key])
        return "n/a" if not math.isfinite(v) else f"{v:.0f}%"

    interval = r.get("interval_s")
    every = f"every {interval * 1e3:.0f} ms" if interval else ""
    cpu = f"CPU {pct('cpu_p95_percent')} (busiest core {pct('cpu_busiest_core_p95_percent')})"
    if r["trials"] and not r["cpu_busiest_core_p95_percent"].get("rounds"):
        # /proc/stat's 10 ms ticks: a busy share needs MIN_CPU_WINDOW of a core's time
        cpu = f"CPU n/a (trials shorter than {MIN_CPU_WINDOW * 1e3:.0f} ms of a core's time)"
    skipped = r.get("trials_not_watched") or 0
    unwatched = (
        f" ({skipped} more not watched: the watch takes at most {BUDGET:.0%} of the time)"
        if skipped
        else ""
    )
    return (
        f"resources{f' ({label})' if label else ''}, p95 per trial, mean of "
        f"{r['trials']} trials{unwatched}: {cpu}, memory {pct('memory_p95_percent')}, disk busy "
        f"{pct('disk_busy_p95_percent')}, network {pct('network_p95_percent')}; disk I/O "
        f"{format_bytes(r['disk_bytes_total'])}, network "
        f"{format_bytes(r['network_bytes_sent_total'])} sent / "
        f"{format_bytes(r['network_bytes_received_total'])} received in all (machine-wide: "
        "every process's, during the trials); "
        f"{r['samples']} samples {every}".rstrip()
    )


def gate_text(waits: Mapping[str, Any] | None) -> str:
    """What ``interference = "wait"`` / ``"repeat"`` did, as "; …" (or "").

    >>> text = gate_text({"waits": 2, "waited_s": 3.04, "threshold_cores": 0.5,
    ...                   "repeated": 3, "kept_disturbed": 1})
    >>> for part in text.split("; ")[1:]: print(part)
    held 2 trials until others used < 0.5 core (3.0 s in all)
    measured 3 disturbed trials again (set aside, not analysed
    1 still disturbed after 2 repeats, kept)
    """
    if not waits:
        return ""
    held, n = "", int(waits["waits"])
    if n:
        held = (
            f"; held {n} trial{'s' if n != 1 else ''} until others used "
            f"< {float(waits['threshold_cores']):g} core ({float(waits['waited_s']):.1f} s in all"
            + (f", gave up {int(waits['gave_up'])} times" if waits.get("gave_up") else "")
            + ")"
        )
    again, kept = int(waits.get("repeated", 0)), int(waits.get("kept_disturbed", 0))
    if again or kept:
        still = f"; {kept} still disturbed after {MAX_REPEATS} repeats, kept" if kept else ""
        held += (
            f"; measured {again} disturbed trial{'s' if again != 1 else ''} again "
            f"(set aside, not analysed{still})"
        )
    return held


def interference_line(i: Mapping[str, Any] | None, label: str = "") -> str:
    """Other processes' use of the CPU during the watched trials, or "" if unknown.

    >>> line = interference_line({"trials": 40, "disturbed": 12, "threshold_cores": 0.5,
    ...                           "median_cores": 0.2, "max_cores": 1.7})
    >>> line.split(": ")[1].split(" (")[0]
    'other processes used 0.5 core or more in 12 of 40 watched trials'
    >>> "3 more watched trials too short to tell" in interference_line({"trials": 1,
    ...     "disturbed": 1, "threshold_cores": 0.5, "median_cores": 2.0, "max_cores": 2.0,
    ...     "not_told": 3})
    True
    """
    where = f" ({label})" if label else ""
    held = gate_text((i or {}).get("waits"))
    if not i or not i.get("trials"):
        return f"interference{where}: {held[2:]}" if held else ""
    n, bad, limit = int(i["trials"]), int(i["disturbed"]), float(i["threshold_cores"])
    spread = f"median {float(i['median_cores']):.1f}, max {float(i['max_cores']):.1f} cores"
    # the watched trials too short to tell: else "1 of 1 watched" beside "of 9 watched"
    untold = int(i.get("not_told") or 0)
    if untold:
        spread += f"; {untold} more watched trials too short to tell"
    if not bad:
        return (
            f"interference{where}: other processes used less than {limit:g} core in all "
            f"{n} watched trials they could be told in ({spread}){held}"
            if untold
            else f"interference{where}: other processes used less than {limit:g} core in "
            f"all {n} watched trials ({spread}){held}"
        )
    return (
        f"interference{where}: other processes used {limit:g} core or more in {bad} of {n} "
        f"watched trials (disturbed; {spread}): their CPU time is not this benchmark's"
        f"{held}"
    )


def executor_line(executor: Mapping[str, Any] | None) -> str:
    """``ran on a Dask cluster (tcp://...): 2 workers on hosts a ×1, b ×1``; "" here.

    >>> executor_line({"kind": "dask", "scheduler": "tcp://h:1", "workers": {
    ...     "w1": {"host": "vm (10.0.0.2)"}, "w2": {"host": "vm (10.0.0.3)"}}})
    'ran on a Dask cluster (tcp://h:1): 2 workers on hosts vm (10.0.0.2) ×1, vm (10.0.0.3) ×1'
    >>> executor_line({"kind": "dask", "scheduler": "tls://h:1", "workers": {"w": {"host": "a"}}})
    'ran on a Dask cluster (tls://h:1): 1 worker on host a ×1'
    >>> executor_line({"kind": "dask", "scheduler": "tls://h:1", "workers": {"w": {"host": "a"}},
    ...                "revived": ["10.0.0.3 (replica[0])"]}).split("; ")[1][:51]
    'a new worker started over SSH for 10.0.0.3 (replica'
    >>> executor_line({"kind": "dask", "scheduler": "tls://h:1", "workers": {"w": {"host": "a"}},
    ...                "restarted": [{"host": "10.0.0.3 (replica[0])", "at": "12:00:03"}]}
    ...               ).rsplit("trials: ", 1)[1]
    '10.0.0.3 (replica[0]) at 12:00:03'
    """
    if not executor or executor.get("kind") != "dask":
        return ""
    workers = executor.get("workers") or {}
    hosts: dict[str, int] = {}
    for env in workers.values():
        host = str(env.get("host", "?")) if isinstance(env, Mapping) else "?"
        hosts[host] = hosts.get(host, 0) + 1
    named = ", ".join(f"{h} ×{n}" for h, n in sorted(hosts.items()))
    where = "host" if len(hosts) == 1 else "hosts"
    them = f"{len(workers)} worker{'' if len(workers) == 1 else 's'}"
    line = f"ran on a Dask cluster ({executor.get('scheduler', '?')}): {them} on {where} {named}"
    lost = [w for w in executor.get("lost") or [] if isinstance(w, Mapping)]
    if lost:
        each = ", ".join(
            f"{w.get('host', '?')} (seen gone at "
            f"{time.strftime('%H:%M:%S', time.localtime(float(w.get('seen_at', 0))))})"
            for w in lost
        )
        again = int(executor.get("trials_run_again") or 0)
        line += (
            f"; lost during the study: {len(lost)} worker{'' if len(lost) == 1 else 's'}, "
            f"{each}; {again} trial{' was' if again == 1 else 's were'} run again on "
            "another worker (each kept once)"
        )
    revived = [str(h) for h in executor.get("revived") or []]
    if revived:
        line += (
            f"; a new worker started over SSH for {', '.join(revived)}, when "
            f"{'it' if len(revived) == 1 else 'each'} answered again after an outage"
        )
    restarted = [w for w in executor.get("restarted") or [] if isinstance(w, Mapping)]
    if restarted:
        each = ", ".join(f"{w.get('host', '?')} at {w.get('at', '?')}" for w in restarted)
        line += f"; a worker that died was restarted by its nanny and ran the later trials: {each}"
    return (
        line
        + groups_text(executor.get("groups"))
        + reconfiguration_text(executor.get("reconfigurations"))
        + phases_text(executor.get("phases"), _group_count(executor.get("groups")))
    )


def _group_count(groups: Any) -> int:
    hosts = groups.get("hosts") if isinstance(groups, Mapping) else None
    return len(hosts) if isinstance(hosts, list) and hosts else 1


def phases_text(phases: Any, groups: int = 1) -> str:
    """Where a multi-host study's hosts spent their time, by phase (#61), for the
    executor line; "" without a breakdown, or when nothing took time.  With ``groups``
    running at once the seconds are the groups' summed.

    >>> phases_text({"setup": 4.4, "reconfiguration": 17.6, "reset": 0.0, "trial": 40.2,
    ...              "teardown": 2.2})
    '; by phase: trials 40.2 s, roles set up again 17.6 s, setup 4.4 s, teardown 2.2 s'
    >>> phases_text({"setup": 1.0, "trial": 30.0}, groups=2)
    '; by phase (2 groups, summed): trials 30.0 s, setup 1.0 s'
    """
    if not isinstance(phases, Mapping):
        return ""
    names = {"trial": "trials", "reconfiguration": "roles set up again", "reset": "resets"}
    spent = sorted(
        ((float(v), names.get(str(k), str(k))) for k, v in phases.items() if float(v) >= 0.05),
        reverse=True,
    )
    if not spent:
        return ""
    summed = f" ({groups} groups, summed)" if groups > 1 else ""
    return f"; by phase{summed}: " + ", ".join(f"{name} {v:.1f} s" for v, name in spent)


def groups_text(groups: Any) -> str:
    """The groups of hosts that ran trials at once (``[cluster] groups`` or ``pack``),
    and any taken out of a batch because a host left mid-trial, for the executor line.

    >>> text = groups_text({"hosts": [["a (client[0])", "c (server[0])"], ["b (client[1])",
    ...     "d (server[1])"]], "taken_out": [{"group": 1, "hosts": "b, d", "trial": 7,
    ...     "why": "on host d (server[1]): its Dask worker is gone", "at": "12:00:03"}]})
    >>> for part in text.split("; ")[1:]:  # doctest: +NORMALIZE_WHITESPACE
    ...     print(part)
    2 groups of hosts ran trials at once: a, c | b, d
    group 1 (b, d) taken out at 12:00:03: on host d (server[1]): its Dask worker is gone (trial 7
    ran again on another group, kept once)
    """
    if not isinstance(groups, Mapping) or not groups.get("hosts"):
        return ""
    each = " | ".join(
        ", ".join(str(h).split(" (")[0] for h in members) for members in groups["hosts"]
    )
    if groups.get("packed"):  # [cluster] pack: groups formed by each trial's need
        out = (
            f"; trials packed onto {len(groups['hosts'])} groups of hosts by the hosts each "
            f"needs, up to {groups['packed']} at once: {each}"
        )
    else:
        out = f"; {len(groups['hosts'])} groups of hosts ran trials at once: {each}"
    for t in groups.get("taken_out") or []:
        if isinstance(t, Mapping):
            out += (
                f"; group {t.get('group')} ({t.get('hosts')}) taken out at {t.get('at')}: "
                f"{t.get('why')} (trial {t.get('trial')} ran again on another group, kept once)"
            )
    return out


def reconfiguration_text(reconf: Any) -> str:
    """What setting roles up again between trials cost (#42), for the executor line.

    >>> reconfiguration_text({"count": 3, "seconds": 4.5, "roles": {"server": 3}})
    '; roles set up again for a setting: server 3 times, 4.5 s in all (1.5 s each)'
    >>> reconfiguration_text({"count": 0, "seconds": 0.0, "roles": {}})
    '; every trial ran on the roles as first set up (no setting changed them)'
    """
    if not isinstance(reconf, Mapping):
        return ""
    n = int(reconf.get("count") or 0)
    if n == 0:
        return "; every trial ran on the roles as first set up (no setting changed them)"
    roles = reconf.get("roles") or {}
    each = ", ".join(f"{r} {k} time{'' if k == 1 else 's'}" for r, k in roles.items())
    secs = float(reconf.get("seconds") or 0.0)
    return (
        f"; roles set up again for a setting: {each}, {secs:.1f} s in all ({secs / n:.1f} s each)"
    )


def session_line(res: Any) -> Text | None:
    """This session's wall time against the time its commands ran, and what is left:
    Assay's own (a result's ``session_wall_s``/``session_measured_s``; None when the
    result was not measured in this process, as in ``assay show``).  Printed on stderr
    beside the progress, so that the report stays the one ``assay show`` prints."""
    wall = getattr(res, "session_wall_s", None)
    measured = getattr(res, "session_measured_s", None)
    if wall is None or measured is None or wall <= 0:
        return None
    return Text(
        f"this session: {format_duration(wall)} of wall time, of which the commands ran "
        f"{format_duration(measured)} ({measured / wall:.0%}); Assay itself "
        f"{format_duration(max(wall - measured, 0.0))} (start-up probe, setup, resets, "
        "analysis, store)",
        style="dim",
    )


def print_session_line(res: Any, err: Console) -> None:
    """:func:`session_line` on ``err``, when the result has one."""
    line = session_line(res)
    if line is not None:
        err.print(line)


def _failed_where(setting: Mapping[str, Any]) -> str:
    """Which setting a failed trial ran, for its line: the variant and cycle, or the
    parameters' values (and the repetition).

    >>> _failed_where({"variant": "b", "cycle": 3}), _failed_where({"x": 2, "repetition": 1})
    (' (b, cycle 3)', ' (x=2, repetition 1)')
    """
    if "variant" in setting:
        return f" ({setting['variant']}, cycle {setting.get('cycle')})"
    shown = [f"{k}={v}" for k, v in setting.items() if k not in ("repetition", "cycle")]
    if "repetition" in setting and shown:
        shown.append(f"repetition {setting['repetition']}")
    return f" ({', '.join(shown)})" if shown else ""


def footer_lines(
    bookkeeping_s_per_trial: float | None,
    launch_overhead: LaunchOverhead | None,
    warnings: list[str],
    failures: list[dict[str, Any]],
    store: str,
    *,
    resources: Mapping[str, Mapping[str, Any]] | None = None,
    environment: Mapping[str, Any] | None = None,
    bookkeeping_s_median: float | None = None,
) -> list[Text]:
    """Where trials ran, overhead, resources, warnings, failed trials and the store: the
    end of every report.

    ``resources`` maps a label (a variant's name, or "") to its bottleneck-watch summary;
    ``environment`` is the study's, whose ``executor`` names a cluster's workers;
    ``bookkeeping_s_median``, the typical own cost between trials, is shown beside the
    mean when one-time costs (the first analysis's imports) make the mean misleading.
    """
    lines: list[Text] = []
    cluster = executor_line((environment or {}).get("executor"))
    if cluster:
        lines.append(Text(cluster, style="dim"))
    for label, r in (resources or {}).items():
        lines.append(Text(resources_line(r, label), style="dim"))
        seen = interference_line(r.get("interference"), label)
        if seen:
            lines.append(Text(seen, style="yellow" if "disturbed" in seen else "dim"))
    over = []
    if bookkeeping_s_per_trial is not None:
        mean = format_duration(bookkeeping_s_per_trial)
        typical = bookkeeping_s_median
        if typical is not None and bookkeeping_s_per_trial > 2 * typical:
            cost = (
                f"{format_duration(typical)}/trial typical (median), {mean} on average with "
                "one-time costs such as the first analysis's imports"
            )
        else:
            cost = f"{mean}/trial"
        over.append(
            f"Assay's own cost {cost} (from one command's end to the next one's start, "
            "resets excluded; not in the measured time)"
        )
    if launch_overhead is not None:
        lo = launch_overhead
        age = lo.age_s
        when = "" if age < 60 else f" (probed {format_duration(age)} ago, at a similar load)"
        if lo.note:
            when = f" ({lo.note})" if not lo.moved else " (probed again at the session's end)"
        over.append(
            f"executor vs bare launch: {lo.difference_s * 1e3:+.2f} ms "
            f"[{lo.difference_low_s * 1e3:+.2f}, {lo.difference_high_s * 1e3:+.2f}] per trial"
            f"{when}"
        )
    shares = [r["watch_share"] for r in (resources or {}).values() if r.get("watch_share")]
    monitor = [
        r["monitor_cpu_per_s"]
        for r in (resources or {}).values()
        if r.get("monitor_cpu_per_s") is not None
    ]
    if shares:
        over.append(
            f"bottleneck watch {max(shares):.2%} of the time from trial to trial (measured: "
            "its reads around watched trials and its sampling thread)"
        )
    elif monitor:  # a store from before the watch timed its reads
        over.append(f"bottleneck watch {max(monitor):.2%} of one core (measured)")
    if over:
        lines.append(Text("overhead: " + "; ".join(over), style="dim"))
    if launch_overhead is not None and launch_overhead.moved:
        lines.append(Text(plain(f"warning: launch: {launch_overhead.note}"), style="yellow"))
    for w in warnings:
        lines.append(Text(plain(f"warning: {w}"), style="yellow"))
    shown_tails: set[tuple[str, ...]] = set()
    for f in failures[:5]:
        where = _failed_where(f.get("setting") or {})
        line = f"trial {f['seq']}{where}: {f['status']}: {f['error']}"
        lines.append(Text(plain(line), style="red"))
        # why it failed: the end of what the command said, once for each different ending
        tails = tuple(
            f"    {name}: {plain(tail)}"
            for name in ("stderr", "stdout")
            for tail in f.get(f"{name}_tail") or []
        )
        if tails not in shown_tails:
            shown_tails.add(tails)
            lines.extend(Text(t, style="dim") for t in tails)
    if len(failures) > 5:
        lines.append(
            Text(f"… and {len(failures) - 5} more failed trials (see --json)", style="red")
        )
    if store:
        lines.append(Text(plain(f"store: {store}"), style="dim"))
    return lines
