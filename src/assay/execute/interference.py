"""``interference = "wait"``: hold the next trial while other processes use the CPU;
``"repeat"``: also measure again a trial they disturbed.

The watch (:func:`~assay.execute.monitor.others_cores`) says, after the fact, how much
CPU other processes took during a trial. This gate acts on it: over the trials since
its last look (a window of at least :data:`WINDOW_S`, so that /proc/stat's 10 ms ticks
resolve it), the machine's busy CPU time less this process's own and its reaped
children's (the trials, resets and steps Assay ran) is the others'; when they used
``threshold_cores`` or more, the next trial waits until they have stayed below it for
``settle_s``, at most ``max_wait_s`` (then it runs, and the wait is counted as given
up). On a quiet machine it costs two small reads per window and never waits.

What it cannot tell apart: a server your benchmark talks to that Assay did not start as
a child (it counts as "others"; started in ``setup`` it is a child only until it
detaches). Linux only: elsewhere (no /proc/stat) it never waits.

``repeat`` judges each trial of at least :data:`WINDOW_S` on its own (shorter ones
only through the gate's window): a trial during which the others used
``threshold_cores`` or more is set aside (:func:`set_aside`: stored with status
:data:`DISTURBED`, out of the analysis, never deleted) and measured again after the
gate's wait, at most :data:`MAX_REPEATS` times; a trial still disturbed then is kept.

All of it is local to one host; a Dask worker runs its own gate.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

from assay.store import DISTURBED, TrialRecord

#: Shortest window whose others' CPU share is judged (/proc/stat counts 10 ms ticks).
WINDOW_S = 0.1
#: The step of the wait's probes.
PROBE_S = 0.1
#: How many times ``interference = "repeat"`` measures one disturbed trial again.
MAX_REPEATS = 2

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def machine_busy_s(path: str = "/proc/stat") -> float | None:
    """CPU seconds the machine's cores have been busy since boot (total less idle and
    iowait, as the bottleneck watch counts it); None where /proc/stat is not there.

    >>> machine_busy_s("/nonexistent") is None
    True
    """
    try:
        with open(path, "rb") as f:
            first = f.readline().split()
    except OSError:
        return None
    if not first or first[0] != b"cpu":
        return None
    ticks = [int(v) for v in first[1:]]
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)
    # guest time is already counted in user (and guest_nice in nice)
    total = sum(ticks[:8])
    return (total - idle) / _TICK


def own_cpu_s() -> float:
    """CPU seconds this process and its reaped children (trials, resets) have used."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


@dataclass(frozen=True)
class _Mark:
    at: float
    busy: float
    own: float


def _mark() -> _Mark | None:
    busy = machine_busy_s()
    return None if busy is None else _Mark(time.monotonic(), busy, own_cpu_s())


def others_between(a: _Mark, b: _Mark) -> float:
    """Cores other processes kept busy, on average, between two marks."""
    dt = b.at - a.at
    if dt <= 0:
        return 0.0
    return max(0.0, (b.busy - a.busy - (b.own - a.own)) / dt)


@dataclass
class QuietGate:
    """Holds each trial until other processes have left the CPU (``interference =
    "wait"``); one per executor. ``waits``, ``waited_s`` and ``gave_up`` say what it did.

    >>> gate = QuietGate(threshold_cores=64.0)  # no machine is that busy: never waits
    >>> gate.before_trial()
    0.0
    """

    threshold_cores: float = 0.5
    settle_s: float = 0.3
    max_wait_s: float = 30.0
    waits: int = 0
    waited_s: float = 0.0
    gave_up: int = 0
    repeated: int = 0  # trials set aside and measured again (interference = "repeat")
    kept_disturbed: int = 0  # disturbed after MAX_REPEATS repeats: kept in the analysis
    _last: _Mark | None = field(default=None, repr=False)

    def mark(self) -> _Mark | None:
        """The machine's and this process's CPU time now (where a trial starts)."""
        return _mark()

    def repeat_if_disturbed(self, record: TrialRecord, start: _Mark | None, attempt: int) -> bool:
        """``interference = "repeat"``: whether ``record`` (an ok trial begun at
        ``start``, its ``attempt``-th repeat) must be measured again; if so it is set
        aside (:func:`set_aside`).  A trial too short to judge alone is never repeated."""
        now = _mark()
        if not record.ok or start is None or now is None or now.at - start.at < WINDOW_S:
            return False
        others = others_between(start, now)
        if others < self.threshold_cores:
            return False
        if attempt >= MAX_REPEATS:
            self.kept_disturbed += 1
            return False
        self.repeated += 1
        set_aside(record, others, self.threshold_cores)
        return True

    def before_trial(self) -> float:
        """Wait, if the others were busy since the last look; the seconds waited."""
        now = _mark()
        if now is None:
            return 0.0
        if self._last is None:
            self._last = now
            return 0.0
        if now.at - self._last.at < WINDOW_S:
            return 0.0  # the window grows over short trials until it can be judged
        busy = others_between(self._last, now)
        self._last = now
        if busy < self.threshold_cores:
            return 0.0
        waited = self._wait(now)
        self._last = _mark()
        return waited

    def _wait(self, start: _Mark) -> float:
        self.waits += 1
        quiet_since: float | None = None
        prev = start
        while True:
            time.sleep(PROBE_S)
            cur = _mark()
            if cur is None:
                break
            if others_between(prev, cur) < self.threshold_cores:
                quiet_since = prev.at if quiet_since is None else quiet_since
                if cur.at - quiet_since >= self.settle_s:
                    break
            else:
                quiet_since = None
            prev = cur
            if cur.at - start.at >= self.max_wait_s:
                self.gave_up += 1
                break
        waited = time.monotonic() - start.at
        self.waited_s += waited
        return waited

    def summary(self) -> dict[str, float] | None:
        """What the gate did, for the result (None when it never waited nor repeated)."""
        if not (self.waits or self.repeated or self.kept_disturbed):
            return None
        return {
            "waits": float(self.waits),
            "waited_s": self.waited_s,
            "gave_up": float(self.gave_up),
            "threshold_cores": self.threshold_cores,
            "repeated": float(self.repeated),
            "kept_disturbed": float(self.kept_disturbed),
        }


def set_aside(record: TrialRecord, others: float, threshold: float) -> None:
    """Mark a disturbed trial for the store: status :data:`DISTURBED`, the reason, and a
    negative ``seq`` of its own (its place is the repeat's; the store keeps both).

    >>> t = TrialRecord(seq=7, status="ok")
    >>> set_aside(t, 1.26, 0.5)
    >>> t.status, t.seq < 0, t.error
    ('disturbed', True, 'other processes used 1.3 cores during it (0.5 or more): measured again')
    """
    record.status = DISTURBED
    record.error = (
        f"other processes used {others:.1f} cores during it ({threshold:g} or more): measured again"
    )
    # unique in the study (run, seq): microseconds since the epoch, and the seq's low bits
    record.seq = -(time.time_ns() // 1000 * 16 + record.seq % 16) - 1
