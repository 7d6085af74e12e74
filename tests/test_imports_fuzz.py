"""Hostile and malformed files for ``assay compare --from`` (issue #8, bad input).

Every file fed to :mod:`assay.importers.results` either reads as results whose samples and
summaries are all finite, or fails with one :class:`ResultFileError` whose message starts
with the file's path; through the CLI, every bad file ends in exit status 2 and one
``error:`` paragraph naming the file, never a traceback. NaN, Infinity and numbers beyond
the float range never reach the statistics.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assay.cli import main
from assay.importers import results as imports
from assay.importers.results import ImportedResult, ResultFileError, read_result_file

DATA = Path(__file__).parent / "data"
FIXTURES = {
    "hyperfine": DATA / "hyperfine_sqlite_sync.json",
    "pyperf": DATA / "pyperf_sort.json",
    "assay": DATA / "assay_sqlite_sync_off.json",
}
HEALTH = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]

#: How many examples each property test draws (bench/RESULTS.md counts them).
EXAMPLES = {"bytes": 150, "truncated": 120, "mutated": 300, "cli": 60}


def _fixture_doc(kind: str) -> Any:
    return json.loads(FIXTURES[kind].read_text(encoding="utf-8"))


def _all_finite(results: list[ImportedResult]) -> bool:
    for r in results:
        if r.samples is not None and not np.all(np.isfinite(r.samples)):
            return False
        if not (math.isfinite(r.summary.mean) and math.isfinite(r.summary.var)):
            return False
    return True


def _read(path: Path) -> list[ImportedResult] | ResultFileError:
    """Read ``path``; a ResultFileError is returned (anything else propagates and fails)."""
    try:
        got = read_result_file(path)
    except ResultFileError as exc:
        assert str(exc).startswith(f"{path}: "), str(exc)
        assert exc.source == str(path)
        assert "\n\n" not in str(exc)
        return exc
    assert got, "a file that reads must give at least one result"
    assert _all_finite(got), [(r.name, r.summary) for r in got]
    return got


def _write(tmp: Path, name: str, data: bytes) -> Path:
    p = tmp / name
    p.write_bytes(data)
    return p


# ----------------------------------------------------------------------------- raw bytes


@settings(max_examples=EXAMPLES["bytes"], deadline=None, suppress_health_check=HEALTH)
@given(data=st.binary(max_size=400), gz=st.booleans())
def test_arbitrary_bytes_never_escape_as_anything_but_a_file_error(
    tmp_path: Path, data: bytes, gz: bool
) -> None:
    p = _write(tmp_path, "x.json.gz" if gz else "x.json", gzip.compress(data) if gz else data)
    _read(p)


@settings(max_examples=EXAMPLES["truncated"], deadline=None, suppress_health_check=HEALTH)
@given(
    kind=st.sampled_from(sorted(FIXTURES)),
    frac=st.floats(0.0, 1.0, exclude_max=True),
    gz=st.booleans(),
)
def test_truncated_files_fail_with_the_file_named(
    tmp_path: Path, kind: str, frac: float, gz: bool
) -> None:
    whole = FIXTURES[kind].read_bytes()
    if gz:
        whole = gzip.compress(whole)
    cut = whole[: int(len(whole) * frac)]
    got = _read(_write(tmp_path, "cut.json", cut))
    if gz or whole[len(cut) :].strip():  # not only the final newline cut off
        assert isinstance(got, ResultFileError)


# ----------------------------------------------------------------------------- wrong types

HUGE_INT = 10**400  # beyond the float range; json.dumps writes all its digits

hostile_values = st.one_of(
    st.sampled_from(
        [
            None,
            True,
            False,
            "1.5",
            "",
            "NaN",
            math.nan,
            math.inf,
            -math.inf,
            HUGE_INT,
            -HUGE_INT,
            1e308,
            -1e308,
            5e-324,
            0,
            -1,
            2**63,
            [],
            {},
            [None],
            [[1.0, 2.0]],
            {"a": None},
            [math.nan, 1.0],
            [1.0, math.inf, 2.0],
            [1e308, 1e308],
            ["1", "2"],
        ]
    ),
    st.text(max_size=20),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=5),
    st.recursive(
        st.none() | st.booleans() | st.floats() | st.text(max_size=5),
        lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=5), kids),
        max_leaves=8,
    ),
)


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into a JSON document (the root included)."""
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out.extend(_paths(v, (*prefix, i)))
    return out


def _replaced(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(doc, dict):
        return {k: (_replaced(v, rest, value) if k == head else v) for k, v in doc.items()}
    return [(_replaced(v, rest, value) if i == head else v) for i, v in enumerate(doc)]


def _dump(doc: Any) -> bytes:
    # allow_nan: Python writes NaN/Infinity/-Infinity literals, as some tools do
    return json.dumps(doc, allow_nan=True).encode()


@st.composite
def mutated_docs(draw: st.DrawFn) -> tuple[str, bytes]:
    kind = draw(st.sampled_from(sorted(FIXTURES)))
    doc = _fixture_doc(kind)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_paths(doc)))
        how = draw(st.sampled_from(["replace", "replace", "delete", "empty"]))
        if how == "delete" and path:
            parent = _get(doc, path[:-1])
            if isinstance(parent, dict):
                parent = {k: v for k, v in parent.items() if k != path[-1]}
            else:
                parent = [v for i, v in enumerate(parent) if i != path[-1]]
            doc = _replaced(doc, path[:-1], parent)
        elif how == "empty":
            here = _get(doc, path)
            doc = _replaced(doc, path, type(here)() if isinstance(here, list | dict) else "")
        else:
            doc = _replaced(doc, path, draw(hostile_values))
    return kind, _dump(doc)


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for k in path:
        doc = doc[k]
    return doc


@settings(max_examples=EXAMPLES["mutated"], deadline=None, suppress_health_check=HEALTH)
@given(case=mutated_docs(), gz=st.booleans())
def test_wrong_types_at_every_level_fail_cleanly_or_read_finite(
    tmp_path: Path, case: tuple[str, bytes], gz: bool
) -> None:
    _kind, data = case
    p = _write(tmp_path, "m.json", gzip.compress(data) if gz else data)
    _read(p)


# ----------------------------------------------------------------------------- named fields


def _hyperfine(times: Any, command: Any = "a") -> dict[str, Any]:
    return {"results": [{"command": command, "times": times}]}


def _pyperf(values: Any, unit: Any = "second") -> dict[str, Any]:
    return {"metadata": {"unit": unit}, "benchmarks": [{"runs": [{"values": values}]}]}


def _assay(**over: Any) -> dict[str, Any]:
    pi = {"name": "t", "mean": 1.0, "half_width": 0.1, "n_samples": 9, "confidence": 0.95}
    return {"study": "s", "pis": [{**pi, **over}]}


@pytest.mark.parametrize(
    ("doc", "field", "expected"),
    [
        (_hyperfine(["1.0", "2.0"]), r"results\[0\]\.times", "list of numbers, item 0 is '1.0'"),
        (_hyperfine([1.0, None]), r"results\[0\]\.times", "item 1 is None"),
        (_hyperfine([1.0, math.nan]), r"results\[0\]\.times", "item 1 is NaN"),
        (_hyperfine([math.inf, 1.0]), r"results\[0\]\.times", "item 0 is Infinity"),
        (_hyperfine([1.0, -math.inf]), r"results\[0\]\.times", "item 1 is -Infinity"),
        (_hyperfine([HUGE_INT, 1.0]), r"results\[0\]\.times", "item 0 is Infinity"),
        (_hyperfine([1e308, -1e308]), r"results\[0\]\.times", "too large to analyse"),
        (_hyperfine([True, 1.0]), r"results\[0\]\.times", "item 0 is True"),
        (_hyperfine([]), r"results\[0\]\.times", "non-empty list of numbers"),
        (_hyperfine({"a": 1}), r"results\[0\]\.times", "non-empty list of numbers"),
        (_hyperfine([[1.0, 2.0]]), r"results\[0\]\.times", "item 0 is \\[1.0, 2.0\\]"),
        (_hyperfine([1.0, 2.0], command=None), r"results\[0\]", "'command' string"),
        (_hyperfine([1.0, 2.0], command=7), r"results\[0\]", "'command' string"),
        ({"results": [None]}, r"results\[0\]", "expected an object"),
        ({"results": {"a": 1}}, "", "expected a hyperfine --export-json, pyperf or Assay"),
        (_pyperf([1.0, math.nan]), r"benchmarks\[0\]", "item 1 is NaN"),
        (_pyperf("12"), r"benchmarks\[0\]\.runs\[0\]\.values", "expected a list"),
        (_pyperf([1.0, 2.0], unit=["second"]), r"benchmarks\[0\]", "unknown unit"),
        (_pyperf([1.0, 2.0], unit=None), r"benchmarks\[0\]", "unknown unit"),
        ({"metadata": None, "benchmarks": []}, "'metadata'", "expected an object"),
        ({"benchmarks": [{"runs": [None]}]}, r"benchmarks\[0\]\.runs\[0\]", "an object"),
        ({"benchmarks": [{"metadata": [], "runs": []}]}, r"benchmarks\[0\]\.metadata", "object"),
        (_assay(mean=math.nan), "t", "needs finite mean"),
        (_assay(mean=None), "t", "needs finite mean"),
        (_assay(mean="1.0"), "t", "needs finite mean"),
        (_assay(half_width=math.inf), "t", "needs finite mean"),
        (_assay(n_samples=HUGE_INT), "t", "integer n_samples"),
        (_assay(n_samples=2.5), "t", "integer n_samples"),
        (_assay(confidence=1.5), "t", "confidence between 0 and 1"),
        (_assay(half_width=-0.1), r"pis\[0\] \('t'\)", "half_width"),
        (_assay(mean=1e308, half_width=1e308), r"pis\[0\] \('t'\)", "give no interval"),
        (_assay(confidence=1e-300), r"pis\[0\] \('t'\)", "give no interval"),
        (_assay(n_samples=2**62), "t", "integer n_samples"),
        (_assay(n_samples=10**17), r"pis\[0\] \('t'\)", ""),
        (_assay(direction=["lower"]), r"pis\[0\] \('t'\)", "direction must be"),
        ({"pis": [{"name": None}]}, r"pis\[0\]", "'name' string"),
        ({"pis": [[]]}, r"pis\[0\]", "'name' string"),
    ],
)
def test_each_wrong_value_is_named_with_its_field(
    tmp_path: Path, doc: Any, field: str, expected: str
) -> None:
    p = _write(tmp_path, "bad.json", _dump(doc))
    got = _read(p)
    if isinstance(got, list):
        # only a PI whose numbers still make an interval may read (10**17 samples do)
        assert expected == "" and _all_finite(got)
        return
    assert re.search(field, str(got)), str(got)
    assert re.search(expected, str(got)), str(got)


# ----------------------------------------------------------------------------- the file itself


def test_deeply_nested_json(tmp_path: Path) -> None:
    deep = b"[" * 200_000 + b"]" * 200_000
    got = _read(_write(tmp_path, "deep.json", deep))
    assert isinstance(got, ResultFileError) and "nested too deeply" in str(got)
    deep_obj = b'{"results": ' + b'{"a": ' * 50_000 + b"1" + b"}" * 50_001
    assert isinstance(_read(_write(tmp_path, "deep2.json", deep_obj)), ResultFileError)


def test_a_number_with_thousands_of_digits(tmp_path: Path) -> None:
    doc = b'{"results": [{"command": "a", "times": [1' + b"0" * 6000 + b", 1.0]}]}"
    got = _read(_write(tmp_path, "digits.json", doc))
    assert isinstance(got, ResultFileError) and "item 0 is Infinity" in str(got)


@pytest.mark.parametrize(
    "data",
    [
        b"\x1f\x8b",
        b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03garbage-not-deflate",
        b"\x1f\x8b\x08\x00" + b"\xff" * 64,
        gzip.compress(b'{"results": []}')[:-4],
        gzip.compress(b"\xff\xfe not utf-8"),
        gzip.compress(gzip.compress(b'{"results": []}')),  # gzip inside gzip
    ],
)
def test_a_gzip_that_is_not_gzip(tmp_path: Path, data: bytes) -> None:
    got = _read(_write(tmp_path, "bench.json.gz", data))
    assert isinstance(got, ResultFileError)


def test_a_gzip_bomb_stops_at_the_size_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(imports, "MAX_BYTES", 1 << 16)
    bomb = gzip.compress(b" " * (1 << 20))  # 1 MiB of blanks in ~1 KB
    got = _read(_write(tmp_path, "bomb.json.gz", bomb))
    assert isinstance(got, ResultFileError) and "inflates to more than" in str(got)
    big = _write(tmp_path, "big.json", b" " * (1 << 17))
    assert "larger than" in str(_read(big))


def test_non_utf8_and_boms(tmp_path: Path) -> None:
    got = _read(
        _write(tmp_path, "latin1.json", '{"results": [{"command": "café"}]}'.encode("latin-1"))
    )
    assert isinstance(got, ResultFileError) and "UTF-8" in str(got) and "0xe9" in str(got)
    utf16 = json.dumps(_hyperfine([1.0, 2.0])).encode("utf-16")
    got = _read(_write(tmp_path, "utf16.json", utf16))
    assert isinstance(got, ResultFileError) and "UTF-16" in str(got)
    # a UTF-8 byte-order mark (as Windows editors write) is not an error
    bom = b"\xef\xbb\xbf" + json.dumps(_hyperfine([1.0, 2.0])).encode()
    got = _read(_write(tmp_path, "bom.json", bom))
    assert isinstance(got, list) and got[0].samples is not None


def test_a_folder_a_missing_file_and_a_fifo(tmp_path: Path) -> None:
    folder = tmp_path / "results.json"
    folder.mkdir()
    assert "it is a folder" in str(_read(folder))
    assert "no such file" in str(_read(tmp_path / "nope.json"))
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)  # reading it would block forever: it must be refused unread
    assert "not a regular file" in str(_read(fifo))


def test_an_unreadable_file(tmp_path: Path) -> None:
    p = _write(tmp_path, "secret.json", _dump(_hyperfine([1.0, 2.0])))
    p.chmod(0)
    try:
        if os.access(p, os.R_OK):
            pytest.skip("running as root: permissions do not stop reading")
        assert "cannot read the file" in str(_read(p))
    finally:
        p.chmod(0o644)


def test_control_characters_in_names_are_escaped(tmp_path: Path) -> None:
    doc = {
        "results": [
            {"command": "a\x1b[2J\x1b[31mred", "times": [1.0, 2.0]},
            {"command": "b\nforged line", "times": [1.0, 2.0]},
        ]
    }
    got = _read(_write(tmp_path, "ctl.json", _dump(doc)))
    assert isinstance(got, list)
    assert [r.name for r in got] == ["a\\x1b[2J\\x1b[31mred", "b\\nforged line"]
    assert all(r.name.isprintable() for r in got)


def test_a_name_twice_in_one_file_names_the_file(tmp_path: Path) -> None:
    p = _write(tmp_path, "dup.json", _dump({"results": [_hyperfine([1.0, 2.0])["results"][0]] * 2}))
    with pytest.raises(ValueError, match=re.escape(str(p))):
        imports.read_result_files([p])


# ----------------------------------------------------------------------------- the CLI

GOOD = DATA / "hyperfine_sqlite_sync.json"


def _cli(*files: Path) -> Any:
    return CliRunner().invoke(main, ["compare", "--from", *map(str, files)])


def _assert_clean_cli_error(res: Any, path: Path) -> None:
    assert res.exit_code == 2, (res.exit_code, res.output, res.exception)
    assert isinstance(res.exception, SystemExit), repr(res.exception)
    err = res.stderr
    assert "Traceback" not in err and "Traceback" not in res.output
    text = err.strip()
    assert text.startswith("error:"), err
    assert "\n\n" not in text  # one paragraph
    assert str(path) in " ".join(text.split()) or str(path) in text.replace("\n", ""), err


HOSTILE_FILES: dict[str, bytes] = {
    "empty.json": b"",
    "binary.json": bytes(range(256)),
    "truncated.json": GOOD.read_bytes()[:300],
    "nan.json": _dump(_hyperfine([1.0, math.nan])),
    "infinity.json": b'{"results": [{"command": "a", "times": [Infinity, 1]}]}',
    "strings.json": _dump(_hyperfine(["1", "2"])),
    "nulls.json": _dump({"results": [{"command": "a", "times": [None, None]}]}),
    "huge.json": _dump(_hyperfine([HUGE_INT, 1.0])),
    "overflow.json": _dump(_hyperfine([1e308, -1e308, 1e308])),
    "deep.json": b"[" * 100_000 + b"]" * 100_000,
    "notgzip.json.gz": b"\x1f\x8b\x08\x00not gzip at all",
    "latin1.json": '{"results": [{"command": "é"}]}'.encode("latin-1"),
    "list.json": b"[1, 2, 3]",
    "empty-results.json": b'{"results": []}',
    "assay-nan.json": _dump(_assay(mean=math.nan, half_width=math.nan)),
    "assay-overflow.json": _dump(_assay(mean=1e308, half_width=1e308)),
    "pyperf-unit.json": _dump(_pyperf([1.0, 2.0], unit={"a": 1})),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_FILES))
def test_cli_exits_2_with_one_paragraph_naming_the_file(tmp_path: Path, name: str) -> None:
    p = _write(tmp_path, name, HOSTILE_FILES[name])
    _assert_clean_cli_error(_cli(GOOD, p), p)


def test_cli_folder_and_missing_file(tmp_path: Path) -> None:
    _assert_clean_cli_error(_cli(GOOD, tmp_path), tmp_path)
    _assert_clean_cli_error(_cli(GOOD, tmp_path / "missing.json"), tmp_path / "missing.json")


@settings(max_examples=EXAMPLES["cli"], deadline=None, suppress_health_check=HEALTH)
@given(case=mutated_docs())
def test_cli_on_mutated_files_exits_0_or_2_never_a_traceback(
    tmp_path: Path, case: tuple[str, bytes]
) -> None:
    _kind, data = case
    p = _write(tmp_path, "m.json", data)
    res = _cli(GOOD, p)
    if res.exit_code in (0, 5):  # decided, or not decided from these results
        return
    # a file error names the file; the CLI's own checks (units differ, too few results)
    # name what differs: either way exit 2 and one error paragraph
    assert res.exit_code == 2 and isinstance(res.exception, SystemExit), (
        res.exit_code,
        res.stderr,
        res.exception,
    )
    text = res.stderr.strip()
    assert text.startswith("error:") and "\n\n" not in text and "Traceback" not in text, text


def test_cli_names_that_look_like_markup(tmp_path: Path) -> None:
    doc = {
        "results": [
            {"command": "[/]", "times": [1.0, 1.1, 1.2]},
            {"command": "[bold red]b", "times": [2.0, 2.1, 2.2]},
        ]
    }
    p = _write(tmp_path, "markup.json", _dump(doc))
    res = _cli(p)
    assert res.exit_code in (0, 5), res.exception
    assert "[/]" in res.stdout and "[bold red]b" in res.stdout
