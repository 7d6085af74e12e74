"""Constraints between parameters: a small, safe expression language.

A constraint such as ``locks < workers`` or ``wh * replicas / cpus <= 25`` says which
settings of a parameter space are valid.  The text is parsed with :mod:`ast` (which
only parses, never runs anything) and accepted only if every node is on a short
whitelist; it is then evaluated by walking the tree over numpy arrays, one element per
setting.  Nothing is ever passed to ``eval``, ``exec`` or ``compile``.

Accepted: parameter names; numbers, strings, ``True``/``False``; comparisons (chained
too: ``1 <= a < b``); ``and``, ``or``, ``not``; ``+ - * / // % **`` and unary ``-``/``+``
on numbers (exponents: constant numbers up to 64 in size); ``abs(x)``, ``min(x, y, ...)``,
``max(x, y, ...)``; and ``x in (1, 2, 4)`` / ``x not in ['a', 'b']`` with a literal list
of constants.  Arithmetic runs in floating point; a setting where the expression is
undefined (division by zero, NaN) does not satisfy it.

>>> c = parse_constraint("locks < workers", {"locks": "number", "workers": "number"})
>>> c.evaluate({"locks": np.array([1, 4]), "workers": np.array([2, 2])}).tolist()
[True, False]
>>> try:
...     parse_constraint("().__class__", {})
... except ConstraintError as exc:
...     print(str(exc)[:73])
constraint '().__class__': attribute access '().__class__' is not allowed
"""

from __future__ import annotations

import ast
import difflib
import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

__all__ = [
    "Constraint",
    "ConstraintError",
    "ValueType",
    "evaluate_all",
    "parse_constraint",
]

#: The type of a parameter's values, or of a sub-expression.
ValueType = Literal["number", "text", "bool"]
_Kind = Literal["number", "text", "bool", "any"]

#: Longest accepted constraint text, and most syntax-tree nodes.
MAX_LENGTH = 1000
MAX_NODES = 300
#: Largest accepted absolute exponent of ``**`` (keeps results representable and fast).
MAX_EXPONENT = 64

_HELP = (
    "A constraint may use parameter names, numbers, 'strings', comparisons "
    "(< <= == != >= >, in, not in), and/or/not, + - * / // % ** and abs/min/max."
)

_BINOPS: dict[type[ast.operator], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
}
_CMPOPS: dict[type[ast.cmpop], str] = {
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.In: "in",
    ast.NotIn: "not in",
}
_FUNCS = {"abs": (1, 1), "min": (2, 16), "max": (2, 16)}
_DESCRIBE: dict[type[ast.AST], str] = {
    ast.Attribute: "attribute access",
    ast.Subscript: "indexing",
    ast.Lambda: "a lambda",
    ast.Call: "a call",
    ast.NamedExpr: "an assignment",
    ast.IfExp: "an if-expression",
    ast.Dict: "a dict",
    ast.Set: "a set",
    ast.ListComp: "a comprehension",
    ast.SetComp: "a comprehension",
    ast.DictComp: "a comprehension",
    ast.GeneratorExp: "a generator",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield",
    ast.JoinedStr: "an f-string",
    ast.FormattedValue: "an f-string",
    ast.Starred: "unpacking",
    ast.Slice: "a slice",
}


class ConstraintError(ValueError):
    """A constraint is not valid; the message names it and the offending part."""


Array = npt.NDArray[Any]


@dataclass(frozen=True)
class Constraint:
    """A parsed, checked constraint; :meth:`evaluate` applies it to columns of settings."""

    text: str
    names: frozenset[str]
    where: str
    _tree: ast.Expression

    def evaluate(self, columns: Mapping[str, npt.ArrayLike]) -> npt.NDArray[np.bool_]:
        """A bool per setting: does it satisfy the constraint?

        ``columns`` maps each parameter name to an array with one value per setting
        (all of the same length).

        >>> c = parse_constraint("journal == 'wal' or sync != 'off'")
        >>> c.evaluate({"journal": np.array(["wal", "delete", "delete"], dtype=object),
        ...             "sync": np.array(["off", "off", "full"], dtype=object)}).tolist()
        [True, False, True]
        """
        arrays = {n: np.asarray(columns[n]) for n in self.names if n in columns}
        missing = sorted(self.names - set(arrays))
        if missing:
            raise ConstraintError(f"{self._label()}: no values for {', '.join(missing)}")
        n = len(next(iter(arrays.values()))) if arrays else _length(columns)
        try:
            with np.errstate(all="ignore"):
                out = _Evaluator(arrays).visit(self._tree.body)
        except (TypeError, ValueError) as exc:  # e.g. text compared with numbers, untyped
            raise ConstraintError(f"{self._label()}: cannot be evaluated: {exc}") from None
        result = np.broadcast_to(np.asarray(out, dtype=bool), (n,))
        return np.array(result, dtype=bool)

    def _label(self) -> str:
        return _label(self.text, self.where)


def _length(columns: Mapping[str, npt.ArrayLike]) -> int:
    for v in columns.values():
        return len(np.asarray(v))
    return 1


def _label(text: str, where: str) -> str:
    shown = text if len(text) <= 80 else text[:77] + "..."
    return f"{where + ': ' if where else ''}constraint {shown!r}"


def parse_constraint(
    text: str,
    types: Mapping[str, ValueType] | None = None,
    where: str = "",
) -> Constraint:
    """Parse and check ``text``; ``types`` maps the known parameters to their value type.

    With ``types`` given, unknown names and type clashes (``journal < 3``) are errors
    now rather than at evaluation.  ``where`` (e.g. ``sweep.constraints[1]``) prefixes
    every error message.

    >>> sorted(parse_constraint("x in (1, 2) and y >= 2 * x", {"x": "number", "y": "number"}).names)
    ['x', 'y']
    >>> try:
    ...     parse_constraint("wrokers > 1", {"workers": "number"})
    ... except ConstraintError as exc:
    ...     print(exc)
    constraint 'wrokers > 1': unknown parameter 'wrokers' (did you mean 'workers'?; known: workers)
    """
    if not isinstance(text, str):
        raise ConstraintError(f"{_label(str(text), where)}: a constraint must be a string")
    label = _label(text, where)
    if not text.strip():
        raise ConstraintError(f"{label}: the constraint is empty")
    if len(text) > MAX_LENGTH:
        raise ConstraintError(f"{label}: longer than {MAX_LENGTH} characters")
    try:
        with warnings.catch_warnings():  # e.g. "1and": Python's own hints are noise here
            warnings.simplefilter("ignore")
            tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ConstraintError(f"{label}: not a valid expression ({exc.msg}). {_HELP}") from None
    except (ValueError, RecursionError, MemoryError, OverflowError) as exc:
        raise ConstraintError(f"{label}: not a valid expression ({exc}). {_HELP}") from None
    checker = _Checker(text.strip(), label, types)
    kind = checker.check(tree.body)
    if kind != "bool":
        raise ConstraintError(
            f"{label}: must be a condition that is true or false (a comparison such as "
            f"'a < b'), not a {kind}"
        )
    return Constraint(text=text, names=frozenset(checker.names), where=where, _tree=tree)


def evaluate_all(
    constraints: list[Constraint], columns: Mapping[str, npt.ArrayLike], n: int
) -> npt.NDArray[np.bool_]:
    """The settings (of ``n``) that satisfy every constraint.

    >>> cs = [parse_constraint("a < b"), parse_constraint("a != 2")]
    >>> evaluate_all(cs, {"a": np.array([1, 2, 3]), "b": np.array([3, 3, 3])}, 3).tolist()
    [True, False, False]
    """
    ok = np.ones(n, dtype=bool)
    for c in constraints:
        ok &= c.evaluate(columns)
    return ok


# --------------------------------------------------------------------------- checking


class _Checker:
    """Walks the tree once: rejects anything off the whitelist and infers value types."""

    def __init__(self, text: str, label: str, types: Mapping[str, ValueType] | None) -> None:
        self.text = text
        self.label = label
        self.types = types
        self.names: set[str] = set()
        self.count = 0

    def fail(self, node: ast.AST, problem: str, help_: bool = False) -> ConstraintError:
        """An error naming the constraint; ``{part}`` in ``problem`` shows the node's text."""
        msg = problem.replace("{part}", repr(self.segment(node)))
        return ConstraintError(f"{self.label}: {msg}" + (f". {_HELP}" if help_ else ""))

    def segment(self, node: ast.AST) -> str:
        try:
            seg = ast.get_source_segment(self.text, node)
        except (ValueError, IndexError, TypeError):
            seg = None
        return seg if seg else type(node).__name__

    def check(self, node: ast.AST) -> _Kind:
        self.count += 1
        if self.count > MAX_NODES:
            raise ConstraintError(f"{self.label}: too long (more than {MAX_NODES} parts)")
        if isinstance(node, ast.Constant):
            return self.constant(node)
        if isinstance(node, ast.Name):
            return self.name(node)
        if isinstance(node, ast.BoolOp):
            for v in node.values:
                self.want(v, "bool", "'and'/'or' need conditions on both sides")
            return "bool"
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.Not):
                self.want(node.operand, "bool", "'not' needs a condition")
                return "bool"
            if isinstance(node.op, ast.USub | ast.UAdd):
                self.want(node.operand, "number", "a sign needs a number")
                return "number"
            raise self.fail(node, "the operator in {part} is not allowed", help_=True)
        if isinstance(node, ast.BinOp):
            return self.binop(node)
        if isinstance(node, ast.Compare):
            return self.compare(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.Tuple | ast.List):
            raise self.fail(node, "a list such as {part} is only allowed after 'in' / 'not in'")
        what = _DESCRIBE.get(type(node), f"'{type(node).__name__}'")
        raise self.fail(node, what + " {part} is not allowed", help_=True)

    def want(self, node: ast.AST, kind: _Kind, problem: str) -> None:
        got = self.check(node)
        if got not in (kind, "any"):
            raise self.fail(node, f"{problem}; got a {got}: {{part}}")

    def constant(self, node: ast.Constant) -> _Kind:
        v = node.value
        if isinstance(v, bool):
            return "bool"
        if isinstance(v, int):
            if abs(v) > 2**63:
                raise self.fail(node, "number too large: {part}")
            return "number"
        if isinstance(v, float):
            return "number"
        if isinstance(v, str):
            return "text"
        raise ConstraintError(
            f"{self.label}: constant {self.segment(node)!r} is not allowed "
            "(only numbers, 'strings', True and False)"
        )

    def name(self, node: ast.Name) -> _Kind:
        n = node.id
        if self.types is None:
            self.names.add(n)
            return "any"
        if n not in self.types:
            close = difflib.get_close_matches(n, list(self.types), n=1)
            hint = f"did you mean {close[0]!r}?; " if close else ""
            known = ", ".join(sorted(self.types)) or "none"
            raise ConstraintError(f"{self.label}: unknown parameter {n!r} ({hint}known: {known})")
        self.names.add(n)
        return self.types[n]

    def binop(self, node: ast.BinOp) -> _Kind:
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise ConstraintError(
                f"{self.label}: operator in {self.segment(node)!r} is not allowed. {_HELP}"
            )
        self.want_number(node.left, op)
        self.want_number(node.right, op)
        if op == "**":
            exp = _constant_number(node.right)
            if exp is None:
                raise self.fail(node, "the exponent of '**' must be a constant number: {part}")
            if not math.isfinite(exp) or abs(exp) > MAX_EXPONENT:
                raise self.fail(node, f"exponent larger than {MAX_EXPONENT} in {{part}}")
        return "number"

    def want_number(self, node: ast.AST, op: str) -> None:
        got = self.check(node)
        if got not in ("number", "any"):
            raise self.fail(node, f"'{op}' needs numbers; got a {got}: {{part}}")

    def compare(self, node: ast.Compare) -> _Kind:
        left = self.check(node.left)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            sym = _CMPOPS.get(type(op))
            if sym is None:
                raise ConstraintError(
                    f"{self.label}: 'is' / 'is not' are not allowed in "
                    f"{self.segment(node)!r}; use == or !="
                )
            if sym in ("in", "not in"):
                if not isinstance(right_node, ast.Tuple | ast.List | ast.Set):
                    raise self.fail(
                        right_node, f"'{sym}' needs a literal list such as (1, 2, 4); got {{part}}"
                    )
                kinds = set()
                for elt in right_node.elts:
                    self.count += 1
                    c = _constant(elt)
                    if c is None:
                        raise self.fail(
                            elt, f"the list after '{sym}' may hold only constants; got {{part}}"
                        )
                    kinds.add(self.check(elt))
                for k in kinds:
                    self.same(node, left, k)
                right: _Kind = left
            else:
                right = self.check(right_node)
                self.same(node, left, right)
                if sym not in ("==", "!=") and "bool" in (left, right):
                    raise self.fail(node, f"'{sym}' cannot order true/false values in {{part}}")
            left = right
        return "bool"

    def same(self, node: ast.AST, a: str, b: str) -> None:
        if "any" in (a, b) or a == b:
            return
        raise self.fail(node, f"compares a {a} with a {b} in {{part}}")

    def call(self, node: ast.Call) -> _Kind:
        func = node.func
        if not isinstance(func, ast.Name) or func.id not in _FUNCS:
            raise ConstraintError(
                f"{self.label}: the call {self.segment(node)!r} is not allowed "
                "(only abs, min and max)"
            )
        lo, hi = _FUNCS[func.id]
        if node.keywords or not lo <= len(node.args) <= hi:
            want = "one argument" if lo == hi else f"{lo} to {hi} arguments"
            raise self.fail(node, f"{func.id}() takes {want}: {{part}}")
        for a in node.args:
            self.want_number(a, f"{func.id}()")
        return "number"


def _constant(node: ast.AST) -> Any:
    """The value of a literal constant (numbers may carry a sign), else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float | str | bool):
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub | ast.UAdd)
        and isinstance(node.operand, ast.Constant)
        and isinstance(node.operand.value, int | float)
        and not isinstance(node.operand.value, bool)
    ):
        v = node.operand.value
        return -v if isinstance(node.op, ast.USub) else v
    return None


def _constant_number(node: ast.AST) -> float | None:
    v = _constant(node)
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    return float(v) if abs(v) < 1e300 else math.inf


# --------------------------------------------------------------------------- evaluation


class _Evaluator:
    """Evaluates a checked tree on arrays.  Only the node types let through by _Checker."""

    def __init__(self, columns: Mapping[str, Array]) -> None:
        self.columns = {
            k: (v.astype(float) if v.dtype.kind in "iuf" else v) for k, v in columns.items()
        }

    def visit(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            v = node.value
            return float(v) if isinstance(v, int) and not isinstance(v, bool) else v
        if isinstance(node, ast.Name):
            return self.columns[node.id]
        if isinstance(node, ast.BoolOp):
            vals = [np.asarray(self.visit(v), dtype=bool) for v in node.values]
            join: Any = np.logical_and if isinstance(node.op, ast.And) else np.logical_or
            out = vals[0]
            for b in vals[1:]:
                out = join(out, b)
            return out
        if isinstance(node, ast.UnaryOp):
            x = self.visit(node.operand)
            if isinstance(node.op, ast.Not):
                return np.logical_not(np.asarray(x, dtype=bool))
            return -np.asarray(x, dtype=float) if isinstance(node.op, ast.USub) else x
        if isinstance(node, ast.BinOp):
            a = np.asarray(self.visit(node.left), dtype=float)
            b = np.asarray(self.visit(node.right), dtype=float)
            return _ARITH[type(node.op)](a, b)
        if isinstance(node, ast.Compare):
            return self.compare(node)
        if isinstance(node, ast.Call):
            args = [np.asarray(self.visit(a), dtype=float) for a in node.args]
            assert isinstance(node.func, ast.Name)
            if node.func.id == "abs":
                return np.abs(args[0])
            pick: Any = np.minimum if node.func.id == "min" else np.maximum
            res = args[0]
            for arg in args[1:]:
                res = pick(res, arg)
            return res
        raise AssertionError(f"unchecked node {type(node).__name__}")  # pragma: no cover

    def compare(self, node: ast.Compare) -> Any:
        left = self.visit(node.left)
        result: Any = True
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            if isinstance(op, ast.In | ast.NotIn):
                assert isinstance(right_node, ast.Tuple | ast.List | ast.Set)
                hit: Any = False
                for elt in right_node.elts:
                    v = _constant(elt)
                    v = float(v) if isinstance(v, int) and not isinstance(v, bool) else v
                    hit = np.logical_or(hit, _eq(left, v))
                part = np.logical_not(hit) if isinstance(op, ast.NotIn) else hit
                result = np.logical_and(result, part)
                continue
            right = self.visit(right_node)
            result = np.logical_and(result, _CMP[type(op)](left, right))
            left = right
        return result


def _eq(a: Any, b: Any) -> Any:
    return np.asarray(a == b, dtype=bool) if not isinstance(a, np.ndarray) else np.equal(a, b)


def _safe_cmp(fn: Any) -> Any:
    def cmp(a: Any, b: Any) -> Any:
        return np.asarray(fn(a, b), dtype=bool)

    return cmp


_ARITH: dict[type[ast.operator], Any] = {
    ast.Add: np.add,
    ast.Sub: np.subtract,
    ast.Mult: np.multiply,
    ast.Div: np.true_divide,
    ast.FloorDiv: np.floor_divide,
    ast.Mod: np.mod,
    ast.Pow: np.power,
}
_CMP: dict[type[ast.cmpop], Any] = {
    ast.Lt: _safe_cmp(np.less),
    ast.LtE: _safe_cmp(np.less_equal),
    ast.Gt: _safe_cmp(np.greater),
    ast.GtE: _safe_cmp(np.greater_equal),
    ast.Eq: _safe_cmp(np.equal),
    ast.NotEq: _safe_cmp(np.not_equal),
}
