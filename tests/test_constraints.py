"""The constraint language: known answers, clear errors, and nothing ever runs."""

from __future__ import annotations

import ast
import builtins
import contextlib
import os
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.designs.constraints import (
    ConstraintError,
    evaluate_all,
    parse_constraint,
)

TYPES: dict[str, Any] = {
    "locks": "number",
    "workers": "number",
    "wh": "number",
    "replicas": "number",
    "cpus": "number",
    "x": "number",
    "journal": "text",
    "sync": "text",
    "flag": "bool",
}

COLS = {
    "locks": np.array([1, 2, 4, 6, 1]),
    "workers": np.array([2, 2, 8, 4, 12]),
    "wh": np.array([10, 100, 4, 25, 0]),
    "replicas": np.array([1, 3, 5, 7, 3]),
    "cpus": np.array([1, 8, 2, 4, 0]),
    "x": np.array([1, 3, 4, 2, 8]),
    "journal": np.array(["wal", "delete", "wal", "off", "delete"], dtype=object),
    "sync": np.array(["off", "off", "full", "normal", "full"], dtype=object),
    "flag": np.array([True, False, True, False, True]),
}


def ev(text: str) -> list[bool]:
    return parse_constraint(text, TYPES).evaluate(COLS).tolist()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("locks < workers", [True, False, True, False, True]),
        # 10/1, 300/8, 20/2, 175/4, 0/0 (undefined -> not satisfied)
        ("wh * replicas / cpus <= 25", [True, False, True, False, False]),
        ("journal == 'wal' or sync != 'off'", [True, False, True, True, True]),
        ("x in (1, 2, 4)", [True, False, True, True, False]),
        ("x not in [1, 2, 4]", [False, True, False, False, True]),
        ("journal in ('wal', 'off')", [True, False, True, True, False]),
        ("1 <= locks < workers <= 8", [True, False, True, False, False]),
        ("not (locks < workers)", [False, True, False, True, False]),
        ("flag and x > 1", [False, False, True, False, True]),
        ("flag == False", [False, True, False, True, False]),
        ("abs(locks - workers) <= 2", [True, True, False, True, False]),
        ("max(locks, x, 3) == 4", [False, False, True, False, False]),
        ("min(workers, cpus) >= 2", [False, True, True, True, False]),
        ("x ** 2 % 3 == 1", [True, False, True, True, True]),
        ("x // 2 == 2 and -x < 0", [False, False, True, False, False]),
        ("x / 0 > 1", [True, True, True, True, True]),  # +inf > 1
        ("workers - +locks != 0", [True, False, True, True, True]),
        ("journal < 'e'", [False, True, False, False, True]),
        ("True", [True] * 5),
        ("1 > 2", [False] * 5),
    ],
)
def test_known_answers(text: str, expected: list[bool]) -> None:
    assert ev(text) == expected


def test_evaluate_all_combines() -> None:
    cs = [parse_constraint(t, TYPES) for t in ["locks < workers", "journal == 'wal'"]]
    assert evaluate_all(cs, COLS, 5).tolist() == [True, False, True, False, False]
    assert evaluate_all([], COLS, 5).all()


def test_untyped_names_are_collected() -> None:
    c = parse_constraint("wh * replicas / cpus <= 25")
    assert c.names == frozenset({"wh", "replicas", "cpus"})


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("locks.real > 0", "attribute access 'locks.real'"),
        ("().__class__", "attribute access '().__class__'"),
        ("x[0] > 1", "indexing 'x[0]'"),
        ("(lambda: 1)() > 0", "the call"),
        ("print(x) > 0", "the call 'print(x)' is not allowed (only abs, min and max)"),
        ("wrokers > 1", "unknown parameter 'wrokers' (did you mean 'workers'?"),
        ("__import__('os').system('touch pwned')", "the call"),
        ("x ** 1000 > 1", "exponent larger than 64"),
        ("x ** locks > 1", "exponent of '**' must be a constant number"),
        ("9 ** 9 ** 9 > 1", "exponent"),
        ("journal < 3", "compares a text with a number"),
        ("journal + 1 > 0", "'+' needs numbers; got a text"),
        ("x", "must be a condition"),
        ("x is None", "'is' / 'is not' are not allowed"),
        ("x == None", "constant 'None' is not allowed"),
        ("x in workers", "needs a literal list"),
        ("x in (workers, 2)", "may hold only constants; got 'workers'"),
        ("(x, 1) == 1", "a list such as '(x, 1)' is only allowed after 'in'"),
        ("x < 1 if flag else 2", "an if-expression"),
        ("[c for c in x] == 1", "a comprehension"),
        ("(y := 3) > 1", "an assignment"),
        ("f'{x}' == journal", "an f-string"),
        ("x < ", "not a valid expression"),
        ("", "empty"),
        ("flag < flag", "cannot order true/false values"),
        ("abs(x, locks) > 1", "abs() takes one argument"),
        ("min(x=1) > 1", "min() takes 2 to 16 arguments"),
        ("x & 1 == 1", "operator in"),
        ("~x > 1", "operator in"),
        ("x @ x > 1", "operator in"),
        ("b'x' == journal", "constant"),
        ("1j == x", "constant"),
        ("x>1" + " and x>1" * 100, "too long"),
        ("x" * 2000, "longer than"),
    ],
)
def test_clear_errors(text: str, fragment: str) -> None:
    with pytest.raises(ConstraintError) as info:
        parse_constraint(text, TYPES, where="sweep.constraints[1]")
    msg = str(info.value)
    assert msg.startswith("sweep.constraints[1]: constraint "), msg
    assert fragment in msg, msg


HOSTILE = [
    "__import__('os').system('touch pwned')",
    "().__class__.__bases__[0].__subclasses__()",
    "().__class__",
    "open('pwned', 'w').write('x') > 0",
    'exec(\'open("pwned", "w")\') or True',
    "eval('1') == 1",
    "globals()['__builtins__']",
    "[x for x in ().__class__.__mro__]",
    "getattr(x, '__class__') == 1",
    "x.__init__.__globals__['os'].system('touch pwned')",
    "(lambda: __import__('os').system('touch pwned'))()",
    "breakpoint()",
    "compile('1', 'f', 'exec')",
    "__builtins__",
    "os.system('touch pwned') == 0",
    "x if __import__('os').system('touch pwned') else x",
    "x.__class__.__base__.__subclasses__()[0] == 1",
    "[*open('pwned', 'w')]",
    "{'a': open('pwned', 'w')}",
    "(yield 1)",
    "await x",
    "import os",
    "x; import os",
    "x == 1\nimport os",
    "\\x00",
    "\x00",
]


@pytest.fixture
def guard(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """Record any attempt to run code or a process while constraints are handled."""
    calls: list[str] = []
    real_compile = builtins.compile

    def watched_compile(source: Any, filename: Any, mode: Any, flags: int = 0, *a: Any, **k: Any):  # type: ignore[no-untyped-def]
        if not flags & ast.PyCF_ONLY_AST:
            calls.append(f"compile:{source!r}")
        return real_compile(source, filename, mode, flags, *a, **k)

    def refuse(name: str):  # type: ignore[no-untyped-def]
        def f(*a: Any, **k: Any) -> Any:
            calls.append(name)
            raise RuntimeError(f"{name} called")

        return f

    monkeypatch.setattr(builtins, "compile", watched_compile)
    monkeypatch.setattr(builtins, "eval", refuse("eval"))
    monkeypatch.setattr(builtins, "exec", refuse("exec"))
    monkeypatch.setattr(os, "system", refuse("os.system"))
    monkeypatch.setattr(subprocess, "Popen", refuse("Popen"))
    monkeypatch.chdir(tmp_path)
    return calls


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_text_never_runs(text: str, guard: list[str], tmp_path: Path) -> None:
    for types in (TYPES, None):
        try:
            c = parse_constraint(text, types)
        except ConstraintError:
            continue
        # only harmless expressions get here; evaluating them must be harmless too
        with contextlib.suppress(ConstraintError):
            c.evaluate(COLS)
    assert guard == []
    assert not (tmp_path / "pwned").exists()
    assert list(tmp_path.iterdir()) == []


@settings(max_examples=400, deadline=None)
@given(text=st.text(max_size=120))
def test_arbitrary_text_ends_in_a_result_or_a_clear_error(text: str) -> None:
    try:
        c = parse_constraint(text, TYPES, where="c[0]")
    except ConstraintError as exc:
        assert str(exc).startswith("c[0]: constraint ")
        return
    out = c.evaluate(COLS)
    assert out.dtype == np.bool_ and out.shape == (5,)


ALPHABET = st.sampled_from(
    [*TYPES, "1", "2", "0", "-", "+", "*", "/", "//", "%", "**", "(", ")", " < ", " <= ", " == ",
     " != ", " and ", " or ", "not ", " in ", "(1, 2)", "'wal'", "abs(", "min(", ", ", ".", "[",
     "]", "__class__", "lambda", ":", "True"]
)  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(parts=st.lists(ALPHABET, max_size=14))
def test_token_soup_ends_in_a_result_or_a_clear_error(parts: list[str]) -> None:
    text = "".join(parts)
    for types in (TYPES, None):
        try:
            c = parse_constraint(text, types)
        except ConstraintError:
            continue
        try:
            out = c.evaluate(COLS)
        except ConstraintError:
            assert types is None  # only untyped constraints can fail at evaluation
            continue
        assert out.dtype == np.bool_ and out.shape == (5,)


def test_missing_column_is_a_clear_error() -> None:
    c = parse_constraint("locks < workers", TYPES, where="sweep.constraints[0]")
    with pytest.raises(ConstraintError, match=r"sweep.constraints\[0\].*no values for workers"):
        c.evaluate({"locks": np.array([1])})


def test_untyped_type_clash_is_caught_at_evaluation() -> None:
    c = parse_constraint("journal < 3")
    with pytest.raises(ConstraintError, match="cannot be evaluated"):
        c.evaluate({"journal": np.array(["wal"], dtype=object)})


def test_large_inputs_are_vectorised() -> None:
    n = 200_000
    rng = np.random.default_rng(0)
    cols = {"locks": rng.integers(1, 16, n), "workers": rng.integers(1, 16, n)}
    out = parse_constraint("locks < workers and locks * 2 >= workers").evaluate(cols)
    ref = (cols["locks"] < cols["workers"]) & (cols["locks"] * 2 >= cols["workers"])
    assert np.array_equal(out, ref)
