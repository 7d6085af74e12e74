"""Composite objectives: make one PI as good as possible while others stay within bounds.

``"max throughput s.t. p99 <= 20"`` reads as: maximise ``throughput`` subject to
``p99 <= 20``.  :func:`composite_score` turns the measured PIs of many settings into
one score column that a model can rank knobs on (the paper's future-work point on
composite metrics): feasible settings keep their value of the optimised PI, infeasible
ones score below every feasible one, the further the more they break a bound.

This module imports only NumPy so that study-file validation can use
:func:`parse_objective` without loading the modelling libraries.

>>> obj = parse_objective("max throughput s.t. p99 <= 20")
>>> obj.pi, obj.direction, obj.constraints[0].bound
('throughput', 'higher', 20.0)
>>> composite_score(obj, {"throughput": [100, 200, 300], "p99": [10, 15, 40]}).tolist()
[100.0, 200.0, -100.0]
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from assay.stats._arrays import finite_1d

__all__ = ["Constraint", "Objective", "composite_score", "parse_objective"]

FloatArray = npt.NDArray[np.float64]
Direction = Literal["higher", "lower"]

_MAX = {"max", "maximise", "maximize", "maximum", "higher"}
_MIN = {"min", "minimise", "minimize", "minimum", "lower"}
_OPS = {"<=": "<=", "<": "<=", "≤": "<=", ">=": ">=", ">": ">=", "≥": ">="}
_NAME = r"[A-Za-z_][A-Za-z0-9_.-]*"
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_CONSTRAINT = re.compile(rf"^\s*({_NAME})\s*(<=|>=|≤|≥|<|>)\s*({_NUMBER})\s*$")
_SPLIT = re.compile(r"\s+(?:s\.t\.|st|subject\s+to|with|where)\s+", re.IGNORECASE)


@dataclass(frozen=True)
class Constraint:
    """A bound on one PI: ``pi <= bound`` or ``pi >= bound``.

    >>> Constraint("p99", "<=", 20.0).violation(25.0)
    0.25
    >>> Constraint("p99", "<=", 20.0).violation(15.0)
    0.0
    """

    pi: str
    op: Literal["<=", ">="]
    bound: float

    def violation(self, value: float) -> float:
        """How far ``value`` breaks the bound, relative to ``|bound|`` (0 when it holds)."""
        excess = value - self.bound if self.op == "<=" else self.bound - value
        scale = abs(self.bound) if self.bound != 0 else 1.0
        return max(0.0, excess) / scale

    def __str__(self) -> str:
        return f"{self.pi}{self.op}{self.bound:g}"


@dataclass(frozen=True)
class Objective:
    """Optimise ``pi`` in ``direction`` subject to ``constraints``.

    >>> str(Objective("tps", "higher", (Constraint("p99", "<=", 20.0),)))
    'max tps s.t. p99<=20'
    """

    pi: str
    direction: Direction
    constraints: tuple[Constraint, ...] = ()

    @property
    def pis(self) -> tuple[str, ...]:
        """Every PI the objective reads, the optimised one first."""
        out = [self.pi]
        out += [c.pi for c in self.constraints if c.pi not in out]
        return tuple(out)

    @property
    def name(self) -> str:
        """The score column's name: the objective as text."""
        return str(self)

    def violation(self, values: Mapping[str, float]) -> float:
        """Sum of the relative violations of every constraint by one setting's PIs."""
        return sum(c.violation(float(values[c.pi])) for c in self.constraints)

    def feasible(self, values: Mapping[str, float]) -> bool:
        """Whether one setting's PIs satisfy every constraint."""
        return self.violation(values) == 0.0

    def __str__(self) -> str:
        head = f"{'max' if self.direction == 'higher' else 'min'} {self.pi}"
        if not self.constraints:
            return head
        return head + " s.t. " + ", ".join(str(c) for c in self.constraints)


def parse_objective(text: str) -> Objective:
    """Parse ``"max PI [s.t. PI <= X[, PI >= Y ...]]"`` (also ``min``, ``subject to``, ``and``).

    Raises ValueError with the expected form when ``text`` does not parse.

    >>> parse_objective("min p99 subject to throughput >= 1000 and p50 < 5").constraints
    (Constraint(pi='throughput', op='>=', bound=1000.0), Constraint(pi='p50', op='<=', bound=5.0))
    """
    expected = (
        "expected 'max PI' or 'min PI', optionally followed by 's.t.' and bounds such as "
        "'p99<=20, p50<=5' (e.g. 'max throughput s.t. p99<=20')"
    )
    parts = _SPLIT.split(text.strip(), maxsplit=1)
    head = parts[0].split()
    if len(head) != 2 or head[0].lower() not in _MAX | _MIN or not re.fullmatch(_NAME, head[1]):
        raise ValueError(f"objective {text!r}: {expected}")
    direction: Direction = "higher" if head[0].lower() in _MAX else "lower"
    constraints: list[Constraint] = []
    if len(parts) == 2:
        for piece in re.split(r",|\s+and\s+", parts[1]):
            m = _CONSTRAINT.match(piece)
            if not m:
                raise ValueError(
                    f"objective {text!r}: cannot read the bound {piece.strip()!r}; {expected}"
                )
            bound = float(m.group(3))
            if not math.isfinite(bound):
                raise ValueError(f"objective {text!r}: the bound {piece.strip()!r} is not finite")
            op: Literal["<=", ">="] = "<=" if _OPS[m.group(2)] == "<=" else ">="
            constraints.append(Constraint(m.group(1), op, bound))
    return Objective(head[1], direction, tuple(constraints))


def composite_score(objective: Objective, columns: Mapping[str, npt.ArrayLike]) -> FloatArray:
    """One score per setting: the optimised PI where every bound holds, a penalty elsewhere.

    An infeasible setting scores ``worst - spread * min(violation, 1)`` for a maximised
    PI (``worst + ...`` for a minimised one), where ``worst`` and ``spread`` are the
    minimum (maximum) and range of the optimised PI over all settings and ``violation``
    is the summed relative violation of the bounds.  So every infeasible setting ranks
    below every feasible one, and the score still tells the model how badly a bound was
    broken; capping at one range keeps one extreme reading from dominating the variance
    that impurity importance splits on.

    >>> obj = parse_objective("min p99 s.t. tps >= 100")
    >>> composite_score(obj, {"p99": [5, 9, 7], "tps": [50, 120, 150]}).tolist()
    [11.0, 9.0, 7.0]
    """
    missing = [p for p in objective.pis if p not in columns]
    if missing:
        raise ValueError(
            f"objective {objective}: no values for {', '.join(missing)} "
            f"(available: {', '.join(columns) or 'none'})"
        )
    y = finite_1d(columns[objective.pi], objective.pi)
    violation = np.zeros_like(y)
    for c in objective.constraints:
        v = finite_1d(columns[c.pi], c.pi)
        if v.shape != y.shape:
            raise ValueError(
                f"objective {objective}: {c.pi} has {v.size} values, {objective.pi} {y.size}"
            )
        violation += np.array([c.violation(float(x)) for x in v])
    if y.size == 0:
        return y
    spread = float(np.ptp(y)) or (abs(float(y[0])) or 1.0)
    penalty = spread * np.minimum(violation, 1.0)
    if objective.direction == "higher":
        return np.where(violation > 0, float(y.min()) - penalty, y)
    return np.where(violation > 0, float(y.max()) + penalty, y)
