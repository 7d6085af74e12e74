"""A parameter space: parameters with their values, constraints, and repetitions.

The space is the full grid of the parameters' values, less the settings that break a
constraint (:mod:`assay.designs.constraints`).  :meth:`ParameterSpace.settings`
enumerates the valid settings as a data frame, vectorised: a grid of a million
settings is built and filtered in about a second.

>>> space = ParameterSpace(
...     [Parameter("workers", [1, 2, 4, 8]), Parameter("locks", [1, 2, 4]),
...      Parameter("journal", ["wal", "delete"])],
...     constraints=["locks < workers"],
... )
>>> space.grid_size, space.size
(24, 12)
>>> print(space.describe())
3 parameters: workers (4 values: 1 … 8), locks (3 values: 1 … 4), journal (2 values: wal, delete)
full grid: 24 settings; 1 constraint leaves 12 (50%)
× 3 repetitions = 36 trials
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from assay.designs.constraints import (
    Constraint,
    ConstraintError,
    ValueType,
    evaluate_all,
    parse_constraint,
)

__all__ = ["MAX_CELLS", "MAX_GRID", "Parameter", "ParameterSpace", "SpaceError"]

#: Largest full grid that :meth:`ParameterSpace.settings` will enumerate.
MAX_GRID = 50_000_000

#: Largest grid, in values (settings × parameters), that it will enumerate: each
#: value takes about 34 bytes on the way (codes, their int64 copy, the data frame),
#: and a sweep keeps a key and a row per setting besides.  24 two-valued parameters
#: (16.8 million settings, under MAX_GRID) reached 6.4 GB and a MemoryError.
MAX_CELLS = 10_000_000

#: Bytes per enumerated value, for the size given in the refusal.
_BYTES_PER_CELL = 34

Kind = Literal["numeric", "categorical"]
Value = str | int | float | bool


class SpaceError(ValueError):
    """A parameter or a space is invalid; the message names it and what was expected."""


def _is_number(v: object) -> bool:
    return isinstance(v, int | float | np.integer | np.floating) and not isinstance(
        v, bool | np.bool_
    )


@dataclass(frozen=True)
class Parameter:
    """One parameter and its values.

    ``kind`` is ``"numeric"`` (ordered numbers, kept sorted ascending) or
    ``"categorical"`` (strings or booleans, kept in the given order); left out, it
    follows the values.  Numbers may be declared categorical when their order means
    nothing.  At least two distinct values are needed.

    >>> Parameter("workers", [8, 1, 4]).values
    (1, 4, 8)
    >>> Parameter("mode", ["wal", "delete"]).kind
    'categorical'
    """

    name: str
    values: tuple[Value, ...]
    kind: Kind = field(default="numeric")

    def __init__(self, name: str, values: Iterable[Value], kind: Kind | None = None) -> None:
        vals = list(values)
        where = f"parameter {name!r}"
        if not name or not isinstance(name, str):
            raise SpaceError("a parameter needs a non-empty name")
        if len(vals) < 2:
            raise SpaceError(f"{where}: needs at least 2 values, got {len(vals)}")
        numbers = [_is_number(v) for v in vals]
        if all(numbers):
            inferred: Kind = "numeric"
        elif all(isinstance(v, str) for v in vals) or all(
            isinstance(v, bool | np.bool_) for v in vals
        ):
            inferred = "categorical"
        else:
            kinds = sorted({type(v).__name__ for v in vals})
            raise SpaceError(
                f"{where}: all values must be of one kind (numbers, strings or true/false); "
                f"got {', '.join(kinds)}"
            )
        kind = kind or inferred
        if kind not in ("numeric", "categorical"):
            raise SpaceError(f"{where}: kind must be 'numeric' or 'categorical', got {kind!r}")
        if kind == "numeric" and inferred != "numeric":
            raise SpaceError(f"{where}: a numeric parameter needs numbers as values")
        if any(_is_number(v) and not math.isfinite(float(v)) for v in vals):
            raise SpaceError(f"{where}: values must be finite numbers")
        seen: list[Value] = []
        for v in vals:
            if any(v == s and type(v) is type(s) for s in seen) or (
                _is_number(v) and any(_is_number(s) and float(s) == float(v) for s in seen)
            ):
                raise SpaceError(f"{where}: value {v!r} is given twice")
            seen.append(v)
        if kind == "numeric":
            vals = sorted(vals, key=float)
        vals = [v.item() if isinstance(v, np.generic) else v for v in vals]
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "values", tuple(vals))
        object.__setattr__(self, "kind", kind)

    @property
    def value_type(self) -> ValueType:
        """The type the constraint language sees: number, text or bool."""
        first = self.values[0]
        if isinstance(first, bool):
            return "bool"
        return "text" if isinstance(first, str) else "number"

    def __len__(self) -> int:
        return len(self.values)

    def array(self) -> npt.NDArray[Any]:
        """The values as a numpy array (numbers as int64 or float64, others as objects)."""
        if self.value_type == "number":
            if all(isinstance(v, int) for v in self.values):
                return np.asarray(self.values, dtype=np.int64)
            return np.asarray(self.values, dtype=float)
        return np.asarray(self.values, dtype=object)

    def short(self) -> str:
        """``name (n values: a, b)`` or ``name (n values: lo … hi)``."""
        vs = self.values
        shown = (
            f"{vs[0]} … {vs[-1]}"
            if self.kind == "numeric" and len(vs) > 2
            else ", ".join(str(v) for v in vs[:4]) + (", …" if len(vs) > 4 else "")
        )
        return f"{self.name} ({len(vs)} values: {shown})"


class ParameterSpace:
    """The valid settings of some parameters, and how often each is measured.

    ``constraints`` are texts in the constraint language (or parsed
    :class:`~assay.designs.constraints.Constraint` objects); errors name them as
    ``constraints[i]`` unless ``constraint_where`` gives other labels.
    """

    def __init__(
        self,
        parameters: Sequence[Parameter],
        constraints: Sequence[str | Constraint] = (),
        repetitions: int = 3,
        *,
        constraint_where: Sequence[str] | None = None,
    ) -> None:
        params = list(parameters)
        if not params:
            raise SpaceError("a parameter space needs at least one parameter")
        names = [p.name for p in params]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise SpaceError(f"parameter names must be unique; repeated: {', '.join(dupes)}")
        if int(repetitions) != repetitions or repetitions < 1:
            raise SpaceError(f"repetitions must be a positive integer, got {repetitions!r}")
        types = {p.name: p.value_type for p in params}
        parsed: list[Constraint] = []
        for i, c in enumerate(constraints):
            where = constraint_where[i] if constraint_where else f"constraints[{i}]"
            if isinstance(c, Constraint):
                unknown = sorted(c.names - set(types))
                if unknown:
                    raise ConstraintError(
                        f"{where}: constraint {c.text!r}: unknown parameter(s) {', '.join(unknown)}"
                    )
                parsed.append(c)
            else:
                parsed.append(parse_constraint(c, types, where=where))
        self.parameters: tuple[Parameter, ...] = tuple(params)
        self.constraints: tuple[Constraint, ...] = tuple(parsed)
        self.repetitions = int(repetitions)
        self._settings: pd.DataFrame | None = None

    @classmethod
    def from_mapping(
        cls,
        params: Mapping[str, Sequence[Value]],
        constraints: Sequence[str] = (),
        repetitions: int = 3,
    ) -> ParameterSpace:
        """A space from ``{name: values}`` (kinds follow the values).

        >>> ParameterSpace.from_mapping({"a": [1, 2], "b": ["x", "y"]}).grid_size
        4
        """
        return cls([Parameter(n, v) for n, v in params.items()], constraints, repetitions)

    def allows(self, setting: Mapping[str, Value]) -> bool:
        """Whether ``setting`` (a value of every parameter) meets every constraint.

        >>> space = ParameterSpace.from_mapping({"a": [1, 2], "b": [1, 2]}, ["a < b"])
        >>> space.allows({"a": 2, "b": 1}), space.allows({"a": 1, "b": 2})
        (False, True)
        """
        columns = {k: np.asarray([v]) for k, v in setting.items()}
        return all(bool(c.evaluate(columns)[0]) for c in self.constraints)

    @property
    def names(self) -> list[str]:
        """The parameters' names, in order."""
        return [p.name for p in self.parameters]

    @property
    def grid_size(self) -> int:
        """Settings in the full grid (before constraints)."""
        return math.prod(len(p) for p in self.parameters)

    @property
    def size(self) -> int:
        """Valid settings: those that satisfy every constraint."""
        return len(self.settings())

    def check_enumerable(self) -> None:
        """Refuse, before allocating anything, a grid too large to enumerate.

        The size comes from the product of the value counts, so a grid of 2**24
        settings is refused in microseconds.  The message gives the grid's size and
        the memory its enumeration would take.

        >>> big = ParameterSpace.from_mapping({f"p{i}": [0, 1] for i in range(24)})
        >>> big.check_enumerable()  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        assay.designs.space.SpaceError: the full grid has 16,777,216 settings of 24 ...
        """
        grid = self.grid_size
        cells = grid * len(self.parameters)
        if grid <= MAX_GRID and cells <= MAX_CELLS:
            return
        n = len(self.parameters)
        gb = cells * _BYTES_PER_CELL / 1e9
        raise SpaceError(
            f"the full grid has {grid:,} settings of {n} parameter{'s' if n != 1 else ''} "
            f"({cells:,} values, about {gb:,.1f} GB to enumerate), more than the "
            f"{MAX_CELLS:,} values Assay enumerates; use fewer parameters "
            "or fewer values each, or fix some parameters in [params]"
        )

    def codes(self) -> npt.NDArray[np.int64]:
        """Value indices of the valid settings, one column per parameter (grid order)."""
        self.check_enumerable()
        grid = self.grid_size
        cards = [len(p) for p in self.parameters]
        dtype = np.int16 if max(cards) < 2**15 else np.int64
        # grid order: the last parameter changes fastest, as in itertools.product
        codes = np.empty((grid, len(cards)), dtype=dtype)
        inner = grid
        for j, c in enumerate(cards):
            inner //= c
            outer = grid // (inner * c)
            codes[:, j] = np.tile(np.repeat(np.arange(c, dtype=dtype), inner), outer)
        if self.constraints:
            # evaluate each constraint only over the parameters it names, then broadcast
            ok = np.ones(grid, dtype=bool)
            for con in self.constraints:
                ok &= self._satisfies(con, codes, cards)
            codes = codes[ok]
        return codes.astype(np.int64)

    def _satisfies(
        self, con: Constraint, codes: npt.NDArray[Any], cards: list[int]
    ) -> npt.NDArray[np.bool_]:
        used = [j for j, p in enumerate(self.parameters) if p.name in con.names]
        if not used:
            return np.broadcast_to(con.evaluate({}), (codes.shape[0],)) & True
        sub_cards = [cards[j] for j in used]
        sub = math.prod(sub_cards)
        # every combination of the named parameters once: a small grid
        sub_codes = np.indices(sub_cards).reshape(len(used), sub).T
        cols = {self.parameters[j].name: self.parameters[j].array()[sub_codes[:, i]]
                for i, j in enumerate(used)}  # fmt: skip
        ok_sub = evaluate_all([con], cols, sub)
        index = np.zeros(codes.shape[0], dtype=np.int64)
        for i, j in enumerate(used):
            index = index * sub_cards[i] + codes[:, j]
        return ok_sub[index]

    def settings(self) -> pd.DataFrame:
        """The valid settings: one row each (grid order), one column per parameter.

        Numeric parameters are int64 or float64 columns; categorical ones are pandas
        categoricals whose categories are the values in their given order.

        >>> ParameterSpace.from_mapping({"a": [1, 2], "b": ["x", "y"]}, ["a > 1"]).settings()
           a  b
        0  2  x
        1  2  y
        """
        if self._settings is None:
            codes = self.codes()
            cols: dict[str, Any] = {}
            for j, p in enumerate(self.parameters):
                if p.kind == "numeric":
                    cols[p.name] = p.array()[codes[:, j]]
                else:
                    cols[p.name] = pd.Categorical.from_codes(
                        codes[:, j], categories=pd.Index(list(p.values), dtype=object)
                    )
            self._settings = pd.DataFrame(cols)
        return self._settings.copy()

    def describe(self) -> str:
        """A short text: parameters, full grid size, constrained size, trials."""
        n = len(self.parameters)
        lines = [
            f"{n} parameter{'s' if n != 1 else ''}: "
            + ", ".join(p.short() for p in self.parameters)
        ]
        grid = self.grid_size
        if self.constraints:
            k = len(self.constraints)
            if grid > MAX_GRID or grid * n > MAX_CELLS:
                lines.append(f"full grid: {grid:,} settings (too many to apply constraints)")
                return "\n".join(lines)
            size = self.size
            pct = f"{100 * size / grid:.0f}%" if size else "none"
            lines.append(
                f"full grid: {grid:,} settings; {k} constraint{'s' if k != 1 else ''} "
                f"leave{'s' if k == 1 else ''} {size:,} ({pct})"
            )
        else:
            size = grid
            lines.append(f"full grid: {grid:,} settings (no constraints)")
        r = self.repetitions
        lines.append(f"× {r} repetition{'s' if r != 1 else ''} = {size * r:,} trials")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (
            f"ParameterSpace({', '.join(self.names)}; grid {self.grid_size:,}, "
            f"{len(self.constraints)} constraints, repetitions={self.repetitions})"
        )
