"""How much Assay's own instrumentation adds to a measured wall time (Pilot §III-C).

Pilot measures overhead by running the same work with and without its instrumentation.
Here the "work" is a no-op program: it is launched through Assay's executor (process
group, output capture, resource accounting) and through a bare ``subprocess.run``,
alternating, and the difference of the mean wall times is reported with its paired
t confidence interval (each executor launch against the bare one after it).

The probe measures the machine and Assay's executor, not a study, so it is run once and
its launch times are cached per user (``$XDG_CACHE_HOME/assay/launch-overhead.json``,
mode 0600): a session does not spend its start-up on 40 launches before the first trial
(#17).  The cache serves while it is under :data:`MAX_AGE_S` old, was measured at about
today's load (:data:`LOAD_CHANGE`) and on the same host, kernel, Python, Assay (its
executor's source files included) and ``ASSAY_*`` environment with the same probe;
else the probe runs again and replaces it.  The interval is computed when it is first
read, after the trials, without SciPy.  (Not run after the trials instead: every
session would still pay for it, at its end; nor in the gaps between trials, where its
launches would disturb what the trials measure.)

>>> o = probe_launch_overhead(repetitions=5)
>>> o.repetitions, o.difference_s == o.with_assay_s - o.without_assay_s
(5, True)
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import os
import shutil
import stat
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

from assay._version import __version__
from assay.execute.command import run_command
from assay.handover import MARKER

#: How long a cached probe serves (seconds): a day, so that a changed machine (a new
#: kernel is in the key; its load, cgroup set-up or firmware are not) is re-probed soon.
MAX_AGE_S = 24 * 3600
CACHE_NAME = "launch-overhead.json"
_READ_LIMIT = 1 << 16  # bytes: the cache holds a few hundred; more is not ours


@dataclass(frozen=True)
class LaunchOverhead:
    """Extra wall time per trial from Assay's executor vs a bare subprocess launch: the
    probe's wall times (seconds, one per launch of each kind) and what reports show."""

    with_assay: tuple[float, ...]
    without_assay: tuple[float, ...]
    probe: str
    confidence: float = 0.95
    measured_at: float | None = None  # when the probe ran (epoch seconds); None: now
    # probed again at a session's end (see probe_again): why, and whether a bare launch
    # then took notably longer or shorter than the cached probe had said
    note: str = ""
    moved: bool = False

    @property
    def age_s(self) -> float:
        """How old the probe's figure is, in seconds (0 for one run now)."""
        return 0.0 if self.measured_at is None else max(0.0, time.time() - self.measured_at)

    @property
    def repetitions(self) -> int:
        return len(self.with_assay)

    @property
    def with_assay_s(self) -> float:
        return statistics.fmean(self.with_assay)

    @property
    def without_assay_s(self) -> float:
        return statistics.fmean(self.without_assay)

    @property
    def difference_s(self) -> float:
        return self.with_assay_s - self.without_assay_s

    @property
    def difference_low_s(self) -> float:
        return self._interval[0]

    @property
    def difference_high_s(self) -> float:
        return self._interval[1]

    @functools.cached_property
    def _interval(self) -> tuple[float, float]:
        """The paired t-interval of the launches' differences (each executor launch and
        the bare one after it: the machine's drift during the probe cancels in a pair;
        whole degrees of freedom, so no SciPy: issue #17); Welch's interval when the
        two kinds differ in number; unbounded below 2 launches of either."""
        a, b = self.with_assay, self.without_assay
        if min(len(a), len(b)) < 2:
            return -math.inf, math.inf
        if len(a) == len(b):
            from assay.stats.intervals import t_interval

            ci = t_interval([x - y for x, y in zip(a, b, strict=True)], self.confidence)
            return ci.low, ci.high
        from assay.stats.compare import welch_test

        w = welch_test(
            statistics.fmean(a),
            statistics.variance(a),
            len(a),
            statistics.fmean(b),
            statistics.variance(b),
            len(b),
            self.confidence,
        )
        return w.diff_low, w.diff_high

    def as_dict(self) -> dict[str, Any]:
        """The JSON form results carry (the launch times themselves are left out)."""
        return {
            "with_assay_s": self.with_assay_s,
            "without_assay_s": self.without_assay_s,
            "difference_s": self.difference_s,
            "difference_low_s": self.difference_low_s,
            "difference_high_s": self.difference_high_s,
            "repetitions": self.repetitions,
            "probe": self.probe,
            "age_s": self.age_s,
            "note": self.note,
            "moved": self.moved,
        }


def _noop_argv() -> list[str]:
    true = shutil.which("true")
    return [true] if true else [sys.executable, "-c", ""]


def _bare_launch(argv: list[str]) -> float:
    """The wall seconds of one launch of ``argv`` by a bare ``subprocess.run``."""
    t0 = time.perf_counter()
    subprocess.run(argv, check=False)
    return time.perf_counter() - t0


def probe_launch_overhead(repetitions: int = 20, confidence: float = 0.95) -> LaunchOverhead:
    """Alternate executor and bare launches of a no-op program, now (no cache)."""
    if repetitions < 1:
        raise ValueError(f"repetitions must be >= 1, got {repetitions}")
    argv = _noop_argv()
    with_s: list[float] = []
    without_s: list[float] = []
    for _ in range(repetitions):
        with_s.append(run_command(argv, timeout=30).duration)
        without_s.append(_bare_launch(argv))
    return LaunchOverhead(tuple(with_s), tuple(without_s), " ".join(argv), confidence)


def measure_launch_overhead(
    repetitions: int = 20, confidence: float = 0.95, *, cache: Path | None = None
) -> LaunchOverhead:
    """The launch overhead on this machine: the cached probe's while it is valid (see the
    module notes), else :func:`probe_launch_overhead` run now and cached.  ``cache``: the
    cache file (default: :func:`cache_path`); a cache that cannot be read or written is
    passed over, never an error."""
    path = cache if cache is not None else cache_path()
    argv = _noop_argv()
    key = cache_key(argv, repetitions)
    if path is not None:
        found = read_cache(path, key, repetitions, load=machine_load())
        if found is not None:
            with_s, without_s, at = found
            return LaunchOverhead(with_s, without_s, " ".join(argv), confidence, at)
    measured = probe_launch_overhead(repetitions, confidence)
    if path is not None:
        write_cache(path, key, measured)
    return measured


#: A bare launch that moved by more than this many seconds *and* this share of the
#: cached figure since the cached probe ran is said (#60: beside two busy loops a
#: no-op's launch went from about 0.6 to 3.5 ms, and a probe cached before the loops
#: started said nothing of it).
LAUNCH_MOVED_S = 0.5e-3
LAUNCH_MOVED_SHARE = 0.5


#: Bare launches a session makes at its end to check a cached probe (a few ms).
SPOT_LAUNCHES = 5


def _moved(old: float, new: float) -> bool:
    """Whether a bare launch's time moved notably: by more than :data:`LAUNCH_MOVED_S`
    and :data:`LAUNCH_MOVED_SHARE` of ``old``.

    >>> _moved(0.0006, 0.0035), _moved(0.0006, 0.0009), _moved(0.004, 0.0048)
    (True, False, False)
    """
    return abs(new - old) > max(LAUNCH_MOVED_S, LAUNCH_MOVED_SHARE * old)


def launch_moved(cached: LaunchOverhead, launches: int = SPOT_LAUNCHES) -> str | None:
    """Why ``cached`` no longer holds, from ``launches`` bare launches of the no-op made
    now (their median against the cached probe's): a few milliseconds at a session's
    end, where the 1-minute load average the cache is kept by lags work that started
    seconds before (#60); None when a bare launch takes what the probe said."""
    argv = _noop_argv()
    times = [_bare_launch(argv) for _ in range(launches)]
    now, then = statistics.median(times), statistics.median(cached.without_assay)
    if not _moved(then, now):
        return None
    return f"a bare launch took {now * 1e3:.2f} ms, not {then * 1e3:.2f} ms"


def probe_again(cached: LaunchOverhead, why: str, *, cache: Path | None = None) -> LaunchOverhead:
    """The probe run now in place of ``cached`` (one a session took from the cache and
    whose trials ``why`` says ran beside other work), the cache rewritten with it; its
    note says why, and whether a bare launch now takes notably longer or shorter than
    the cached probe said (:data:`LAUNCH_MOVED_S`, :data:`LAUNCH_MOVED_SHARE`)."""
    from dataclasses import replace

    fresh = probe_launch_overhead(cached.repetitions, cached.confidence)
    path = cache if cache is not None else cache_path()
    if path is not None:
        write_cache(path, cache_key(_noop_argv(), cached.repetitions), fresh)
    old, new = cached.without_assay_s, fresh.without_assay_s
    moved = _moved(old, new)
    note = f"probed again at the session's end: {why}"
    if moved:
        note = (
            f"launching a no-op took {new * 1e3:.2f} ms at the session's end, against "
            f"{old * 1e3:.2f} ms when the cached probe ran: other work on the machine "
            "delays every launch, and each trial's wall time holds that delay (probed "
            f"again because {why})"
        )
    return replace(fresh, note=note, moved=moved)


def cache_path() -> Path | None:
    """``$XDG_CACHE_HOME/assay/launch-overhead.json`` (default ``~/.cache``); ``None``
    when there is no home directory to put it in."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    try:
        base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache"
    except RuntimeError:  # no HOME and no password entry
        return None
    return base / "assay" / CACHE_NAME


def cache_key(argv: list[str], repetitions: int) -> str:
    """A digest of what the probe's result depends on: host, kernel, Python, Assay and
    its executor's source files, the ``ASSAY_*`` environment, the probe and its size."""
    here = Path(__file__).parent
    sources = []
    for f in sorted(here.glob("*.py")):
        with contextlib.suppress(OSError):
            st = f.stat()
            sources.append([f.name, st.st_size, st.st_mtime_ns])
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith("ASSAY_") and k != MARKER)
    what = {
        "uname": list(os.uname()),
        "python": [sys.executable, sys.version],
        "assay": __version__,
        "executor": sources,
        "env": env,
        "probe": argv,
        "repetitions": repetitions,
    }
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()


#: The change of the machine's load (1-minute load average per core) beyond which the
#: cached probe is not used: launch times measured on a busy machine said +4.47 ms on a
#: quiet one (issue #44).
LOAD_CHANGE = 0.5


def machine_load() -> float | None:
    """The 1-minute load average per core; None where the system has none."""
    try:
        return os.getloadavg()[0] / (os.cpu_count() or 1)
    except OSError:
        return None


def read_cache(
    path: Path,
    key: str,
    repetitions: int,
    now: float | None = None,
    load: float | None = None,
) -> tuple[tuple[float, ...], tuple[float, ...], float] | None:
    """The cached launch times (with, without Assay) and when they were measured, when
    ``path`` is a regular file of this user that no one else may read or write, made
    for ``key`` less than :data:`MAX_AGE_S` before ``now`` at a machine load within
    :data:`LOAD_CHANGE` of ``load`` (when both are known); else ``None``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            return None
        raw = f.read(_READ_LIMIT)
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("key") != key:
        return None
    measured, with_s, without_s = (data.get(k) for k in ("measured", "with_assay", "without_assay"))
    if not isinstance(measured, int | float) or isinstance(measured, bool):
        return None
    if not 0.0 <= (time.time() if now is None else now) - measured < MAX_AGE_S:  # NaN too
        return None
    if not (_durations(with_s, repetitions) and _durations(without_s, repetitions)):
        return None
    then = data.get("load")
    if load is not None and isinstance(then, int | float) and abs(load - then) > LOAD_CHANGE:
        return None  # measured at another load: its launch times are not today's
    return tuple(with_s), tuple(without_s), float(measured)


def _number(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def _durations(x: object, n: int) -> TypeGuard[list[float]]:
    return isinstance(x, list) and len(x) == n and all(_number(v) and v >= 0 for v in x)


def write_cache(path: Path, key: str, o: LaunchOverhead, now: float | None = None) -> bool:
    """Store ``o``'s launch times under ``key`` in ``path`` (mode 0600, replaced whole so
    that a reader never sees half a file); ``False`` when it could not be written."""
    data = {
        "key": key,
        "measured": time.time() if now is None else now,
        "load": machine_load(),
        "with_assay": list(o.with_assay),
        "without_assay": list(o.without_assay),
    }
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)  # mode 0600
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError:  # a read-only or full home: the study goes on without a cache
        return False
    return True
