"""Which columns of a results CSV are parameters (``sweep --from``, ``knobs --from``).

Published data sets carry more than knobs and one metric: a saved pandas index
(``Unnamed: 0``), row numbers, other measured PIs (a latency beside ``tps``), round
columns (``tput_1, tput_2, tput_3``) and one-hot option groups (``opt_O1, opt_O2``, one
of them 1 per row).  Taken as knobs, a PI or a row id explains the metric and ranks
first; so by default they are left out, each with its reason, and the reports list the
columns that were used.  Everything here is pure: names and values in, decisions out.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = [
    "OneHotGroup",
    "default_metric_names",
    "metric_columns",
    "metric_like",
    "metric_names",
    "name_tokens",
    "one_hot_groups",
    "repetition_columns",
    "row_id_like",
    "sentinel_value",
]

# Words that name measured quantities rather than settings.  Matched as a whole token
# at the start or end of a name: "p99_ms" and "avg_latency" are PIs, while
# "log_min_duration_statement" and "checkpoint_timeout" (PostgreSQL knobs) are not.
_PI_WORDS = frozenset(
    {
        "latency", "lat", "throughput", "tput", "tps", "qps", "ops", "iops", "rps",
        "time", "duration", "runtime", "elapsed", "wall", "bandwidth", "bw", "mbps",
        "kbps", "gbps", "speedup", "mean", "median", "avg", "average", "stddev", "std",
        "stdev", "score", "errors", "failures",
    }
)  # fmt: skip
# Units end knob names as often as PI names ("commit_delay_us", "p99_ms"): they are
# dropped from the end before the name is judged.
_UNITS = frozenset(
    {"s", "ms", "us", "ns", "sec", "secs", "seconds", "kb", "mb", "gb", "pct", "percent"}
)
# Words that name rows, runs or rounds: identifiers, not settings.
_ID_WORDS = frozenset({"id", "idx", "index", "rownum", "rep", "repetition", "round", "trial"})
_PERCENTILE = re.compile(r"p\d{2,4}")
_UNNAMED = re.compile(r"unnamed: ?\d+", re.IGNORECASE)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def name_tokens(name: str) -> list[str]:
    """The lower-case words of a column name (split at non-alphanumerics and camelCase).

    >>> name_tokens("p99LatencyMs"), name_tokens("ops/s"), name_tokens("Unnamed: 0")
    (['p99', 'latency', 'ms'], ['ops', 's'], ['unnamed', '0'])
    """
    return [t.lower() for t in re.split(r"[^A-Za-z0-9]+", _CAMEL.sub("_", name)) if t]


def metric_like(name: str) -> str | None:
    """Why a column named ``name`` looks like a measured PI or a row id, or ``None``: a
    PI word (latency, tps, p99, time, ...) or an id word (id, index, round, ...) first
    or last in the name, after trailing units.

    >>> metric_like("latency_p99"), metric_like("checkpoint_timeout")
    ("its name looks like a measured PI ('latency')", None)
    >>> metric_like("Unnamed: 0")
    'unnamed column (a saved row index?)'
    """
    if not name.strip() or _UNNAMED.fullmatch(name.strip()):
        return "unnamed column (a saved row index?)"
    tokens = name_tokens(name)
    while len(tokens) > 1 and tokens[-1] in _UNITS:
        tokens.pop()
    ends = [tokens[0], tokens[-1]] if tokens else []
    for t in ends:
        if t in _PI_WORDS or _PERCENTILE.fullmatch(t):
            return f"its name looks like a measured PI ({t!r})"
    for t in ends:
        if t in _ID_WORDS:
            return f"its name looks like a row or run identifier ({t!r})"
    return None


def row_id_like(column: pd.Series) -> str | None:
    """Why a column looks like row numbers (``0..n-1`` or ``1..n`` in file order), or
    ``None``.

    >>> row_id_like(pd.Series([1, 2, 3, 4])), row_id_like(pd.Series([4, 1, 2, 3]))
    ('its values are the row numbers 1..4', None)
    """
    n = len(column)
    if n < 3 or not pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column):
        return None
    a = column.to_numpy(dtype=float, na_value=np.nan)
    for first in (0, 1):
        if np.array_equal(a, np.arange(first, first + n, dtype=float)):
            return f"its values are the row numbers {first}..{first + n - 1}"
    return None


@dataclass(frozen=True)
class OneHotGroup:
    """0/1 columns of which exactly one is 1 in every row: one categorical option."""

    name: str
    columns: tuple[str, ...]
    levels: tuple[str, ...]  # the value each column stands for, in column order

    def values(self, frame: pd.DataFrame) -> pd.Series:
        """The option's value in every row (the level of the column that is 1)."""
        hot = frame[list(self.columns)].to_numpy(dtype=float).argmax(axis=1)
        return pd.Series(np.asarray(self.levels, dtype=object)[hot], index=frame.index)


def _binary(column: pd.Series) -> bool:
    if not pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column):
        return False
    a = column.to_numpy(dtype=float, na_value=np.nan)
    return bool(np.all((a == 0) | (a == 1)))


def _prefix(names: Sequence[str]) -> str:
    """The common prefix of ``names`` cut back to a separator (``opt_O1, opt_O2`` -> ``opt``)."""
    common = names[0]
    for n in names[1:]:
        while not n.startswith(common):
            common = common[:-1]
    cut = max(common.rfind(c) for c in "_=.:-/ ")
    return common[:cut] if cut > 0 else ""


def _one_sum(frame: pd.DataFrame, columns: Sequence[str]) -> bool:
    return bool(np.all(frame[list(columns)].to_numpy(dtype=float).sum(axis=1) == 1))


def _group(frame: pd.DataFrame, columns: Sequence[str], taken: set[str]) -> OneHotGroup:
    prefix = _prefix(columns)
    name = prefix or "|".join(columns)
    if name in taken:
        name = "|".join(columns)
    levels = tuple(c[len(prefix) :].lstrip("_=.:-/ ") or c if prefix else c for c in columns)
    return OneHotGroup(name, tuple(columns), levels)


def one_hot_groups(
    frame: pd.DataFrame, columns: Sequence[str], taken: Sequence[str] = ()
) -> list[OneHotGroup]:
    """The one-hot groups among ``columns``: 0/1 columns whose row sums are 1 everywhere.

    Columns sharing a name prefix (``opt_O1, opt_O2``) are tried first, then all the
    0/1 columns left together.  ``taken``: names a group must not get (other columns).

    >>> f = pd.DataFrame({"opt_O1": [1, 0, 0], "opt_O2": [0, 1, 0], "opt_O3": [0, 0, 1],
    ...                   "w": [1, 2, 3]})
    >>> [(g.name, g.levels) for g in one_hot_groups(f, list(f.columns))]
    [('opt', ('O1', 'O2', 'O3'))]
    """
    binary = [c for c in columns if _binary(frame[c]) and frame[c].nunique() == 2]
    used = set(taken) | set(columns)
    groups: list[OneHotGroup] = []
    by_prefix: dict[str, list[str]] = {}
    for c in binary:
        cut = max(c.rfind(s) for s in "_=.:-/ ")
        by_prefix.setdefault(c[:cut] if cut > 0 else "", []).append(c)
    left = list(binary)
    for prefix, members in by_prefix.items():
        if prefix and len(members) >= 2 and _one_sum(frame, members):
            groups.append(_group(frame, members, used))
            left = [c for c in left if c not in members]
    if len(left) >= 2 and _one_sum(frame, left):
        groups.append(_group(frame, left, used))
    return groups


def repetition_columns(columns: Sequence[str], metric: str, pattern: str | None) -> list[str]:
    """The round columns of ``metric``: those matching ``pattern`` (shell wildcards, or
    a comma-separated list), else -- when the file has no column ``metric`` -- the
    columns named ``metric`` plus a round number (``tput_1``, ``tput.2``, ``tput3``,
    ``tput_r1``, ``tput_run1``).  Empty when there are none.

    >>> repetition_columns(["w", "tput_1", "tput_2", "lat_1"], "tput", None)
    ['tput_1', 'tput_2']
    >>> repetition_columns(["w", "a", "b"], "tput", "a,b")
    ['a', 'b']
    """
    if pattern:
        if "," in pattern or not any(ch in pattern for ch in "*?["):
            return [p.strip() for p in pattern.split(",") if p.strip()]
        return [c for c in columns if fnmatch.fnmatchcase(c, pattern)]
    if metric in columns:
        return []
    rx = re.compile(
        re.escape(metric) + r"[ _.\-]?(?:r|run|round|rep|repetition|trial)?[ _.\-]?\d+",
        re.IGNORECASE,
    )
    found = [c for c in columns if rx.fullmatch(c)]
    return found if len(found) >= 2 else []


def sentinel_value(values: np.ndarray, min_share: float = 0.05) -> tuple[float, int] | None:
    """A value that repeats suspiciously often (failed runs coded as 0 or -1): the most
    frequent value, when it holds at least ``min_share`` of the (at least 20) values and
    occurs at least 5 times as often as any other value (so that a metric with naturally
    repeating values, such as small counts, is not flagged).  Returns (value, count)
    or ``None``.

    >>> sentinel_value(np.array([0.0] * 30 + list(range(1, 71))))
    (0.0, 30)
    >>> sentinel_value(np.arange(100.0)) is None, sentinel_value(np.arange(100) % 7) is None
    (True, True)
    """
    a = np.asarray(values, dtype=float)
    a = a[np.isfinite(a)]
    if a.size < 20:
        return None
    uniq, counts = np.unique(a, return_counts=True)
    if uniq.size < 3:
        return None
    order = np.argsort(counts)[::-1]
    count, second = int(counts[order[0]]), int(counts[order[1]])
    if count < max(3, min_share * a.size) or count < 5 * second:
        return None
    return float(uniq[order[0]]), count


def default_metric_names(k: int) -> tuple[str, ...]:
    """The names of the values of a multi-valued result when none are given:
    ``value[1]`` ... ``value[k]``.

    >>> default_metric_names(3)
    ('value[1]', 'value[2]', 'value[3]')
    """
    return tuple(f"value[{i}]" for i in range(1, k + 1))


def metric_names(text: str) -> tuple[str, ...]:
    """The metric names of a comma-separated list (``--metrics copy,scale,add,triad``),
    stripped; ``ValueError`` saying why for an empty name or a name given twice.

    >>> metric_names(" copy, scale ,add,triad")
    ('copy', 'scale', 'add', 'triad')
    """
    names = tuple(n.strip() for n in text.split(","))
    if not names or any(not n for n in names):
        raise ValueError(f"expected comma-separated non-empty names, got {text!r}")
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"{dup[0]!r} is named twice; each metric needs its own name")
    return names


_METRIC_COLUMN = r"[ _.:\-/]?(?:\[(?P<br>[^\]]+)\]|(?P<name>[A-Za-z0-9].*))"


def metric_columns(columns: Sequence[str], base: str = "value") -> list[tuple[str, str]]:
    """The columns holding one metric each of a value named ``base`` (compared without
    case): ``value_copy``, ``value.scale``, ``value[add]``, ``value1`` -- each with its
    metric's name (``copy``, ``scale``, ``add``, ``1``), in column order.  Empty when
    there are none.

    >>> metric_columns(["test", "value_copy", "value_triad", "values", "host"])
    [('value_copy', 'copy'), ('value_triad', 'triad')]
    >>> metric_columns(["value[1]", "value[2]"])
    [('value[1]', '1'), ('value[2]', '2')]
    """
    rx = re.compile(re.escape(base) + _METRIC_COLUMN, re.IGNORECASE)
    out: list[tuple[str, str]] = []
    for c in columns:
        m = rx.fullmatch(c.strip())
        if m is None:
            continue
        name = (m.group("br") or m.group("name") or "").strip()
        if name and (m.group("br") or c.strip()[len(base)] in " _.:-/" or name[0].isdigit()):
            out.append((c, name))
    return out
