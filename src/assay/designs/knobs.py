"""The knob space of a knob pre-selection study, its Latin Hypercube samples and encoding.

A knob is a configuration parameter of the system under test with a range (numeric,
integer or real, optionally on a log scale) or a list of values (categorical), a
default (its value whenever it is not varied) and an ``unsafe`` flag for knobs that
trade safety for speed (``fsync``, ``synchronous_commit``): a tuner leaves those at
their defaults unless allowed (the paper's reliability-aware tuning point).

:func:`latin_hypercube` draws ``N`` settings as in the paper (§3): each knob's range is
split into ``N`` equal intervals (equal in log space for log-scale knobs) and every
interval holds exactly one sample.  :func:`validation_sample` draws the paper's
validation set: only the top-k knobs vary, the others stay at their defaults.
:func:`analyze_knobs` runs :func:`assay.stats.importance.rank_knobs` for every PI (and a
composite objective) of a set of measured settings.

>>> space = KnobSpace((
...     NumericKnob("shared_buffers", 16, 4096, default=128, integer=True, log=True),
...     CategoricalKnob("synchronous_commit", ("on", "off"), default="on", unsafe=True),
... ))
>>> settings = latin_hypercube(space, 4, seed=1)
>>> len(settings), sorted(settings[0])
(4, ['shared_buffers', 'synchronous_commit'])
>>> all(16 <= s["shared_buffers"] <= 4096 for s in settings)
True
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from assay.knob_range import INT_KNOB_MAX, INT_KNOB_MIN, range_problem
from assay.stats.importance import KnobMatrix, PIRanking, ValidationRow
from assay.stats.objective import Objective, composite_score

if TYPE_CHECKING:
    import pandas as pd

    from assay.spec import Spec

__all__ = [
    "CategoricalKnob",
    "EncodedSettings",
    "KnobAnalysis",
    "KnobSpace",
    "NumericKnob",
    "analyze_knobs",
    "encode",
    "infer_space",
    "knob_matrix",
    "latin_hypercube",
    "lhs_unit",
    "range_problem",
    "space_from_spec",
    "validation_sample",
]

FloatArray = npt.NDArray[np.float64]
Value = str | int | float | bool
Direction = Literal["higher", "lower"]


@dataclass(frozen=True)
class NumericKnob:
    """A knob with a numeric range ``[low, high]``.

    >>> NumericKnob("work_mem", 1, 1024, default=4, integer=True, log=True).from_unit(0.5)
    32
    """

    name: str
    low: float
    high: float
    default: float
    integer: bool = False
    log: bool = False
    unsafe: bool = False
    unit: str = ""

    def __post_init__(self) -> None:
        problem = range_problem(self.low, self.high, integer=self.integer, log=self.log)
        if problem is not None:
            raise ValueError(f"knob {self.name}: {problem}")
        if not self.low <= self.default <= self.high:
            raise ValueError(
                f"knob {self.name}: default {self.default} is outside [{self.low}, {self.high}]"
            )

    @property
    def kind(self) -> str:
        """``int`` or ``float``."""
        return "int" if self.integer else "float"

    def from_unit(self, u: float) -> Value:
        """The value at position ``u`` in [0, 1) of the range (log-spaced for log knobs).

        Integers are rounded; on a linear scale the range is first widened by half a step
        on each side, so that every integer owns an equal share of the unit interval (on a
        log scale the values are spaced by their logarithm, so no integer owns an equal
        share anyway, and the range is left as declared).
        """
        if self.log:
            lo, hi = math.log(self.low), math.log(self.high)
            # rounding may put the exponent a hair past log(high): exp overflows at 1.8e308
            x = math.exp(min(lo + u * (hi - lo), hi))
        else:
            lo, hi = (self.low - 0.5, self.high + 0.5) if self.integer else (self.low, self.high)
            x = lo + u * (hi - lo)
        if self.integer:
            return int(min(max(math.floor(x + 0.5), self.low), self.high))
        return float(min(max(x, self.low), self.high))

    def encode(self, value: Any) -> float:
        """The model's column value: the knob value, its log for log-scale knobs."""
        x = float(value)
        return math.log(x) if self.log else x


@dataclass(frozen=True)
class CategoricalKnob:
    """A knob that takes one of ``values``.

    >>> knob = CategoricalKnob("wal_sync_method", ("fsync", "fdatasync", "open_sync"), "fsync")
    >>> knob.from_unit(0.5)
    'fdatasync'
    """

    name: str
    values: tuple[Value, ...]
    default: Value
    unsafe: bool = False
    unit: str = ""

    def __post_init__(self) -> None:
        if len(self.values) < 1 or len(set(map(repr, self.values))) != len(self.values):
            raise ValueError(f"knob {self.name}: needs distinct values, got {list(self.values)}")
        if self.default not in self.values:
            raise ValueError(
                f"knob {self.name}: default {self.default!r} is not one of {list(self.values)}"
            )

    @property
    def kind(self) -> str:
        """``categorical``."""
        return "categorical"

    def from_unit(self, u: float) -> Value:
        """Equal-width bins of the unit interval, one per value, in order."""
        return self.values[min(int(u * len(self.values)), len(self.values) - 1)]

    def encode(self, value: Any) -> float:
        """The category code (position in ``values``)."""
        for i, v in enumerate(self.values):
            if v == value and type(v) is type(value):
                return float(i)
        for i, v in enumerate(self.values):  # "on" vs "on", 1 vs 1.0, CSV text vs values
            if str(v) == str(value) or (
                not isinstance(v, str) and not isinstance(value, str) and v == value
            ):
                return float(i)
        raise ValueError(f"knob {self.name}: {value!r} is not one of {list(self.values)}")


Knob = NumericKnob | CategoricalKnob


@dataclass(frozen=True)
class KnobSpace:
    """An ordered set of knobs.

    >>> space = KnobSpace((NumericKnob("a", 0, 1, 0.5), NumericKnob("b", 1, 9, 2, unsafe=True)))
    >>> space.names, space.defaults(), space.safe_names()
    (('a', 'b'), {'a': 0.5, 'b': 2}, ('a',))
    """

    knobs: tuple[Knob, ...]

    def __post_init__(self) -> None:
        names = [k.name for k in self.knobs]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"knob names must be unique; repeated: {', '.join(dupes)}")
        if not self.knobs:
            raise ValueError("a knob space needs at least one knob")

    @property
    def names(self) -> tuple[str, ...]:
        """Knob names in order."""
        return tuple(k.name for k in self.knobs)

    def __getitem__(self, name: str) -> Knob:
        for k in self.knobs:
            if k.name == name:
                return k
        raise KeyError(f"no knob {name!r} (knobs: {', '.join(self.names)})")

    def defaults(self) -> dict[str, Value]:
        """Every knob at its default."""
        return {k.name: k.default for k in self.knobs}

    def safe_names(self) -> tuple[str, ...]:
        """Knobs not marked unsafe."""
        return tuple(k.name for k in self.knobs if not k.unsafe)

    def levels(self) -> tuple[int, ...]:
        """0 for numeric knobs, the number of values for categorical ones."""
        return tuple(len(k.values) if isinstance(k, CategoricalKnob) else 0 for k in self.knobs)


def lhs_unit(n: int, d: int, seed: int | None = 0) -> FloatArray:
    """``n`` Latin Hypercube points in ``[0, 1)^d`` (:class:`scipy.stats.qmc.LatinHypercube`).

    Every column has exactly one point in each of the ``n`` intervals ``[i/n, (i+1)/n)``.

    >>> u = lhs_unit(5, 2, seed=0)
    >>> sorted((u[:, 0] * 5).astype(int).tolist())
    [0, 1, 2, 3, 4]
    """
    from scipy.stats import qmc

    if n < 1 or d < 1:
        raise ValueError(f"Latin Hypercube: need n >= 1 and d >= 1, got n={n}, d={d}")
    try:
        sampler = qmc.LatinHypercube(d, rng=seed)
    except TypeError:  # SciPy < 1.15 names it seed
        sampler = qmc.LatinHypercube(d, seed=seed)
    return np.asarray(sampler.random(n), dtype=np.float64)


def latin_hypercube(
    space: KnobSpace,
    n: int,
    seed: int | None = 0,
    vary: Sequence[str] | None = None,
) -> list[dict[str, Value]]:
    """``n`` settings: the knobs in ``vary`` (default: all) Latin-Hypercube sampled, the
    others at their defaults.  The same seed gives the same settings.

    >>> space = KnobSpace((NumericKnob("x", 0.0, 10.0, 1.0), CategoricalKnob("m", ("a", "b"), "a")))
    >>> latin_hypercube(space, 2, seed=3) == latin_hypercube(space, 2, seed=3)
    True
    """
    names = list(space.names if vary is None else vary)
    unknown = [v for v in names if v not in space.names]
    if unknown:
        raise ValueError(f"unknown knob(s) {', '.join(unknown)} (knobs: {', '.join(space.names)})")
    if not names:
        return [space.defaults() for _ in range(n)]
    u = lhs_unit(n, len(names), seed)
    out: list[dict[str, Value]] = []
    for row in u:
        setting = space.defaults()
        for name, x in zip(names, row, strict=True):
            setting[name] = space[name].from_unit(float(x))
        out.append(setting)
    return out


def validation_sample(
    space: KnobSpace, vary: Sequence[str], n: int, seed: int | None = 0
) -> list[dict[str, Value]]:
    """The paper's validation set: ``n`` LHS settings of only the knobs ``vary`` (the
    top-k), every other knob at its default.

    >>> space = KnobSpace((NumericKnob("x", 0, 1, 0.5), NumericKnob("y", 0, 1, 0.25)))
    >>> {s["y"] for s in validation_sample(space, ["x"], 5, seed=0)}
    {0.25}
    """
    if not vary:
        raise ValueError("validation sample: name at least one knob to vary")
    return latin_hypercube(space, n, seed, vary=vary)


def knob_matrix(space: KnobSpace, settings: Sequence[Mapping[str, Any]]) -> KnobMatrix:
    """The settings as a :class:`KnobMatrix` (log values, category codes).

    >>> x = NumericKnob("x", 1, 100, 10, log=True)
    >>> space = KnobSpace((x, CategoricalKnob("m", ("a", "b"), "a")))
    >>> knob_matrix(space, [{"x": 1, "m": "b"}]).values.tolist()
    [[0.0, 1.0]]
    """
    rows = []
    for i, s in enumerate(settings):
        missing = [n for n in space.names if n not in s]
        if missing:
            raise ValueError(f"setting {i}: no value for knob(s) {', '.join(missing)}")
        rows.append([k.encode(s[k.name]) for k in space.knobs])
    values = np.asarray(rows, dtype=np.float64).reshape(len(rows), len(space.knobs))
    return KnobMatrix(values, space.names, space.levels())


@dataclass(frozen=True)
class EncodedSettings:
    """The model's input: dummy-encoded categorical knobs, standardised numeric knobs."""

    X: FloatArray
    columns: tuple[str, ...]  # e.g. "wal_sync_method=fdatasync", "shared_buffers"
    groups: tuple[str, ...]  # the knob each column belongs to


def encode(space: KnobSpace, settings: Sequence[Mapping[str, Any]]) -> EncodedSettings:
    """Dummy-encode categorical knobs and standardise numeric ones (the paper's §3).

    >>> space = KnobSpace((NumericKnob("x", 0, 10, 1), CategoricalKnob("m", ("a", "b"), "a")))
    >>> e = encode(space, [{"x": 0, "m": "a"}, {"x": 10, "m": "b"}])
    >>> e.columns, e.X.tolist()
    (('m=a', 'm=b', 'x'), [[1.0, 0.0, -1.0], [0.0, 1.0, 1.0]])
    """
    from assay.stats.importance import encoded_groups, knob_encoder

    matrix = knob_matrix(space, settings)
    X = np.asarray(knob_encoder(matrix).fit_transform(matrix.values), dtype=np.float64)
    _, groups = encoded_groups(matrix)
    columns: list[str] = []
    seen: dict[str, int] = {}
    for g in groups:
        knob = space[g]
        if isinstance(knob, CategoricalKnob):
            columns.append(f"{g}={knob.values[seen.get(g, 0)]}")
            seen[g] = seen.get(g, 0) + 1
        else:
            columns.append(g)
    return EncodedSettings(X, tuple(columns), tuple(groups))


def _is_integral(a: FloatArray) -> bool:
    return bool(np.all(a == np.round(a)))


def infer_space(frame: pd.DataFrame, columns: Sequence[str]) -> KnobSpace:
    """A knob space from data collected elsewhere: numeric columns become numeric knobs
    over their observed range (integer when every value is), other columns categorical
    knobs over their observed values.  Defaults: the median (numeric) or the most
    frequent value (categorical); only validation and tuning use them.
    """
    import pandas as pd

    knobs: list[Knob] = []
    for c in columns:
        col = frame[c]
        if pd.api.types.is_bool_dtype(col) or not pd.api.types.is_numeric_dtype(col):
            values = sorted({str(v) for v in col}, key=str)
            mode = str(col.astype(str).mode().iloc[0])
            knobs.append(CategoricalKnob(str(c), tuple(values), mode))
            continue
        a = col.to_numpy(dtype=np.float64)
        lo, hi = float(a.min()), float(a.max())
        # whole numbers beyond 64 bits (1e20) are no integer knob: a float one holds them
        integer = _is_integral(a) and lo >= INT_KNOB_MIN and hi <= INT_KNOB_MAX
        med = float(np.median(a))
        default: float = round(med) if integer else med
        if lo == hi:  # constant column: give it a nominal range; it cannot matter
            hi = max(lo + 1.0, math.nextafter(lo, math.inf))  # + 1 is lost beyond 2**53
            if math.isinf(hi):
                lo, hi = math.nextafter(lo, -math.inf), lo
        knobs.append(NumericKnob(str(c), lo, hi, default, integer=integer))
    return KnobSpace(tuple(knobs))


def space_from_spec(spec: Spec) -> KnobSpace:
    """The knob space declared by a study file's ``[[knob]]`` entries."""
    knobs: list[Knob] = []
    for k in spec.knob_specs:
        if k.type == "categorical":
            knobs.append(
                CategoricalKnob(k.name, tuple(k.values or ()), k.default, k.unsafe, k.unit)
            )
        else:
            assert k.min is not None and k.max is not None  # the spec validated them
            knobs.append(
                NumericKnob(
                    k.name,
                    float(k.min) if k.type == "float" else int(k.min),
                    float(k.max) if k.type == "float" else int(k.max),
                    float(k.default) if k.type == "float" else int(k.default),
                    integer=k.type == "int",
                    log=k.log,
                    unsafe=k.unsafe,
                    unit=k.unit,
                )
            )
    return KnobSpace(tuple(knobs))


@dataclass(frozen=True)
class KnobAnalysis:
    """Rankings of the knobs for each PI (and the composite objective, if any)."""

    space: KnobSpace
    n_samples: int
    rankings: tuple[PIRanking, ...]
    objective: Objective | None = None
    validation: tuple[ValidationRow, ...] = ()
    sources: tuple[str, ...] = field(default=())

    @property
    def primary(self) -> PIRanking:
        """The ranking handed to the tuner: the objective's, else the first PI's."""
        if self.objective is not None:
            return self.ranking(self.objective.name)
        return self.rankings[0]

    def ranking(self, pi: str) -> PIRanking:
        """The ranking for one PI (or the objective's name)."""
        for r in self.rankings:
            if r.pi == pi:
                return r
        raise KeyError(f"no ranking for {pi!r} (have: {', '.join(r.pi for r in self.rankings)})")

    def with_validation(self, rows: Sequence[ValidationRow]) -> KnobAnalysis:
        """A copy with the validation result attached."""
        return KnobAnalysis(
            self.space, self.n_samples, self.rankings, self.objective, tuple(rows), self.sources
        )

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON export."""
        return {
            "n_samples": self.n_samples,
            "sources": list(self.sources),
            "knobs": [
                {"name": k.name, "type": k.kind, "unsafe": k.unsafe, "default": k.default}
                for k in self.space.knobs
            ],
            "objective": str(self.objective) if self.objective else None,
            "primary": self.primary.pi,
            "rankings": [r.as_dict() for r in self.rankings],
            "validation": [v.as_dict() for v in self.validation],
        }


def analyze_knobs(
    space: KnobSpace,
    settings: Sequence[Mapping[str, Any]],
    metrics: Mapping[str, npt.ArrayLike],
    directions: Mapping[str, Direction],
    *,
    objective: Objective | None = None,
    top_k: int = 5,
    n_trees: int = 300,
    seed: int = 0,
    by: Literal["impurity", "permutation"] = "impurity",
    max_k: int | None = 15,
    stability_sizes: Sequence[int] | None = None,
    stability_repeats: int = 5,
    permutation_repeats: int = 5,
    n_jobs: int | None = 1,
    sources: Sequence[str] = (),
) -> KnobAnalysis:
    """Rank the knobs for every PI in ``directions`` (its own ranking each) and, when
    ``objective`` is given, for its composite score (see
    :func:`assay.stats.objective.composite_score`); ``metrics`` maps PI names to one
    value per setting.
    """
    from assay.stats.importance import rank_knobs

    matrix = knob_matrix(space, settings)
    columns: dict[str, npt.ArrayLike] = dict(metrics)
    targets: list[tuple[str, Direction]] = list(directions.items())
    if objective is not None:
        columns[objective.name] = composite_score(objective, metrics)
        targets.append((objective.name, objective.direction))
    rankings = tuple(
        rank_knobs(
            matrix,
            columns[pi],
            pi=pi,
            direction=direction,
            top_k=top_k,
            by=by,
            n_trees=n_trees,
            seed=seed,
            max_k=max_k,
            stability_sizes=stability_sizes,
            stability_repeats=stability_repeats,
            permutation_repeats=permutation_repeats,
            n_jobs=n_jobs,
        )
        for pi, direction in targets
    )
    return KnobAnalysis(space, matrix.n, rankings, objective, (), tuple(sources))
