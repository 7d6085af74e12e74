"""Number formatting: an estimate is always shown with its uncertainty, to the digits
the uncertainty supports.

>>> format_estimate(0.0123456, 0.000234, "s")
'12.35 ms ± 0.23 ms'
>>> format_estimate(1234.5, 12.3, "tx/s")
'1234 tx/s ± 12 tx/s'
>>> format_estimate(5.0, float("inf"), "s")
'5.000 s ± ∞'
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from contextvars import ContextVar

_TIME_SCALES = [(1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")]

#: The names ``--time-unit`` takes (hyperfine's, and the short ones), and their scale.
TIME_UNITS = {
    "second": (1.0, "s"),
    "s": (1.0, "s"),
    "millisecond": (1e-3, "ms"),
    "ms": (1e-3, "ms"),
    "microsecond": (1e-6, "µs"),
    "us": (1e-6, "µs"),
    "µs": (1e-6, "µs"),
    "nanosecond": (1e-9, "ns"),
    "ns": (1e-9, "ns"),
}

# the unit every time is shown in (--time-unit); None: the one that suits each value
_FIXED_TIME: ContextVar[tuple[float, str] | None] = ContextVar("time_unit", default=None)


def set_time_unit(name: str | None) -> None:
    """Show every time in one unit (a name of :data:`TIME_UNITS`), or again in the one
    that suits each value (None); what ``--time-unit`` sets for the whole command.

    >>> set_time_unit("ms"); format_estimate(1.5, 0.01, "s")
    '1500 ms ± 10 ms'
    >>> set_time_unit(None); format_estimate(1.5, 0.01, "s")
    '1.500 s ± 0.010 s'
    """
    if name is not None and name not in TIME_UNITS:
        raise ValueError(f"unknown time unit {name!r}; expected one of {', '.join(TIME_UNITS)}")
    _FIXED_TIME.set(None if name is None else TIME_UNITS[name])


def _scale_time(mean: float) -> tuple[float, str]:
    fixed = _FIXED_TIME.get()
    if fixed is not None:
        return fixed
    a = abs(mean)
    for factor, name in _TIME_SCALES:
        if a >= factor:
            return factor, name
    return _TIME_SCALES[-1]


def _decimals(half_width: float) -> int:
    """Decimals that show two significant digits of the half-width."""
    if not math.isfinite(half_width) or half_width <= 0:
        return 3
    return max(0, 1 - math.floor(math.log10(half_width)))


#: How far apart an interval's two sides may be (a share of the longer) and still print as
#: ``± x``: beyond it, ``mean [low, high]`` (a rate's harmonic interval, a ratio's).
ASYMMETRY = 0.1


def format_estimate(
    mean: float,
    half_width: float,
    unit: str = "",
    low: float | None = None,
    high: float | None = None,
) -> str:
    """``mean ± half-width unit`` with seconds auto-scaled to ms/µs/ns; given the
    interval's ends, an asymmetric one is ``mean [low, high] unit``: a ``±`` would say
    the mean could be 87000 rows/s lower where the interval reaches 1815 rows/s.

    >>> format_estimate(16583.0, 104012.0, "rows/s", 1815.0, 209838.0)
    '16583 [1815, 209838] rows/s'
    >>> format_estimate(10.0, 1.0, "ops/s", 9.0, 11.05)
    '10.0 ops/s ± 1.0 ops/s'
    """
    if not math.isfinite(mean):
        return "n/a"
    scale, shown_unit = (1.0, unit)
    if unit == "s":
        scale, shown_unit = _scale_time(mean)
    m = mean / scale
    h = half_width / scale if math.isfinite(half_width) else math.inf
    sep = f" {shown_unit}" if shown_unit else ""
    if _asymmetric(mean, low, high):
        assert low is not None and high is not None
        lo, hi = low / scale, high / scale
        d = _decimals(min(m - lo, hi - m) or max(m - lo, hi - m))
        return f"{m:.{d}f} [{lo:.{d}f}, {hi:.{d}f}]{sep}"
    d = _decimals(h)
    if not math.isfinite(h):
        return f"{m:.{d}f}{sep} ± ∞"
    return f"{m:.{d}f}{sep} ± {h:.{d}f}{sep}"


def _asymmetric(mean: float, low: float | None, high: float | None) -> bool:
    """Whether the finite interval [low, high] around ``mean`` is lopsided beyond
    :data:`ASYMMETRY`."""
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return False
    below, above = mean - low, high - mean
    longer = max(below, above)
    return longer > 0 and abs(above - below) > ASYMMETRY * longer


def format_spread(
    mean: float, sd: float | None, low: float, high: float, n: int, unit: str = ""
) -> str:
    """A fixed count's summary as hyperfine prints it: mean ± standard deviation, the
    range and the count, all in one scale.

    >>> format_spread(0.0124, 0.0018, 0.0101, 0.0150, 20, "s")
    '12.4 ms ± 1.8 ms (mean ± σ), range 10.1 ms … 15.0 ms, 20 runs'
    >>> format_spread(3.0, None, 3.0, 3.0, 1, "ops/s")
    '3.000 ops/s (1 run)'
    """
    scale, shown = (1.0, unit)
    if unit == "s":
        scale, shown = _scale_time(mean)
    sep = f" {shown}" if shown else ""
    if sd is None:
        return f"{mean / scale:.3f}{sep} ({n} run{'s' if n != 1 else ''})"
    d = _decimals(sd / scale) if sd > 0 else 3
    m, s, lo, hi = (v / scale for v in (mean, sd, low, high))
    return (
        f"{m:.{d}f}{sep} ± {s:.{d}f}{sep} (mean ± σ), range {lo:.{d}f}{sep} … {hi:.{d}f}{sep}, "
        f"{n} runs"
    )


def trial_counts(by_status: Mapping[str, int]) -> str:
    """How a study's trials ended, for its closing line, by status name in order.

    >>> trial_counts({"ok": 12, "failed": 2})
    '2 failed, 12 ok'
    """
    return ", ".join(f"{n} {s}" for s, n in sorted(by_status.items()))


def format_percent(fraction: float) -> str:
    """A relative half-width as ±x.x%."""
    if not math.isfinite(fraction):
        return "±∞"
    return f"±{fraction * 100:.1f}%"


def format_duration(seconds: float) -> str:
    """Human duration: 0.45 ms, 950 ms, 12.3 s, 4 min 05 s, 1 h 02 min (two significant
    digits below 10 ms: Assay's own cost per trial is a fraction of one).

    >>> format_duration(0.00045), format_duration(0.0123), format_duration(245)
    ('0.45 ms', '12 ms', '4 min 05 s')
    """
    if not math.isfinite(seconds):
        return "?"
    if seconds < 0.01:
        return f"{seconds * 1000:.2g} ms" if seconds >= 1e-5 else "0 ms"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60):02d} min"


def format_bytes(n: float) -> str:
    """A byte count in binary units.

    >>> format_bytes(512), format_bytes(25276203008)
    ('512 B', '23.5 GiB')
    """
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def kind_name(kind: str) -> str:
    """A study's kind as it reads before "study": ``knob`` for ``knobs`` (the command's
    name), the others as they are.

    >>> kind_name("knobs"), kind_name("sweep")
    ('knob', 'sweep')
    """
    return "knob" if kind == "knobs" else kind


def format_p(p: float) -> str:
    """A p-value to two significant digits (``<1e-12`` below that).

    >>> format_p(0.01234), format_p(1e-15), format_p(float("nan"))
    ('0.012', '<1e-12', 'n/a')
    """
    if not math.isfinite(p):
        return "n/a"
    if p < 1e-12:
        return "<1e-12"
    return f"{p:.2g}"
