from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.execute import readers
from assay.execute.command import CommandResult
from assay.execute.output import iter_matches
from assay.execute.readers import (
    ReadError,
    parse_numbers,
    read_json_path,
    read_reading,
    read_unit_readings,
)
from assay.spec import PISpec, UnitsSpec


def result(stdout: str, duration: float = 1.5) -> CommandResult:
    return CommandResult(
        argv=["x"],
        status="ok",
        exit_code=0,
        started=0.0,
        duration=duration,
        stdout=stdout.encode(),
        stderr=b"",
    )


def test_wall_time() -> None:
    assert read_reading(PISpec(name="t"), result("", 2.5)) == 2.5


def test_regex_first_group() -> None:
    pi = PISpec(name="tps", source="regex", pattern=r"tps = ([0-9.]+)")
    assert read_reading(pi, result("a\ntps = 123.5 (incl)\n")) == 123.5


def test_json_path() -> None:
    pi = PISpec(name="p99", source="json", path="lat.p[1]")
    assert read_reading(pi, result(json.dumps({"lat": {"p": [1, 2.5]}}))) == 2.5


def test_file_source(tmp_path: Path) -> None:
    (tmp_path / "out.txt").write_text("42\n")
    pi = PISpec(name="x", source="file", file="out.txt")
    assert read_reading(pi, result(""), cwd=str(tmp_path)) == 42.0


@pytest.mark.parametrize(
    ("pi", "out", "match"),
    [
        (PISpec(name="a", source="regex", pattern="x=([0-9]+)"), "nothing", "matched nothing"),
        (PISpec(name="a", source="json", path="a.b"), "not json", "not JSON"),
        (PISpec(name="a", source="json", path="a.b"), '{"a": {}}', "no b"),
        (PISpec(name="a", source="json", path="a"), '{"a": "nan"}', "finite"),
        (PISpec(name="a", source="json", path="a"), '{"a": [1]}', "expected a number"),
        (PISpec(name="a", source="regex", pattern="x=(\\S+)"), "x=inf", "finite"),
        (PISpec(name="a", source="file", file="/nonexistent/f"), "", "cannot be read"),
    ],
)
def test_unreadable_outputs_raise_read_error(pi: PISpec, out: str, match: str) -> None:
    with pytest.raises(ReadError, match=match):
        read_reading(pi, result(out))


def test_unit_readings_regex_and_json() -> None:
    u = UnitsSpec(source="regex", pattern=r"lat=([0-9.]+)")
    arr = read_unit_readings(u, "lat", result("lat=1\nlat=2.5\nother\nlat=3"))
    assert arr.tolist() == [1.0, 2.5, 3.0]
    u2 = UnitsSpec(source="json", path="u")
    assert read_unit_readings(u2, "x", result('{"u": [1, 2]}')).tolist() == [1.0, 2.0]


def test_unit_readings_reject_nan() -> None:
    u = UnitsSpec(source="regex", pattern=r"v=(\S+)")
    with pytest.raises(ReadError, match="not a finite number"):
        read_unit_readings(u, "x", result("v=1\nv=nan\n"))


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200), st.text(min_size=1, max_size=30))
def test_json_path_never_crashes(doc: str, path: str) -> None:
    with contextlib.suppress(ReadError, json.JSONDecodeError):
        read_json_path(json.loads(doc) if doc.startswith("{") else doc, path)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=32), max_size=50))
def test_unit_readings_roundtrip(values: list[float]) -> None:
    text = "\n".join(repr(v) for v in values)
    arr = read_unit_readings(UnitsSpec(source="regex", pattern=r"(\S+)"), "x", result(text))
    np.testing.assert_allclose(arr, np.array(values, dtype=float))


# ------------------------------------------- issue "Nothing let in, round three"


def test_a_file_behind_a_link_is_read_and_a_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "run-3.txt").write_text("42\n")
    (tmp_path / "latest").symlink_to("run-3.txt")  # a benchmark's own link: followed
    pi = PISpec(name="x", source="file", file="latest")
    assert read_reading(pi, result(""), cwd=str(tmp_path)) == 42.0
    (tmp_path / "d").mkdir()
    with pytest.raises(ReadError, match=r"PI 'x': .*/d is a folder; expected a regular file"):
        read_reading(PISpec(name="x", source="file", file="d"), result(""), cwd=str(tmp_path))


def test_a_file_past_the_cap_is_an_error_not_its_head(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(readers, "READ_CAP", 8)
    (tmp_path / "u.txt").write_text("1\n2\n3\n4\n5\n")  # 10 bytes: a cut list would be 4 readings
    u = UnitsSpec(source="file", file="u.txt")
    with pytest.raises(ReadError, match=r"unit readings of PI 'x': .*u.txt is larger than"):
        read_unit_readings(u, "x", result(""), cwd=str(tmp_path))
    # stdout read whole (JSON, numbers) is held to the same cap; a pattern streams it
    with pytest.raises(ReadError, match="the output is 12 bytes, more than"):
        read_reading(PISpec(name="x", source="json", path="a"), result('{"a": 12345}'))
    pi = PISpec(name="x", source="regex", pattern=r"(\d+)\Z")
    assert read_reading(pi, result("1\n2\n3\n4\n55")) == 55.0


@pytest.mark.parametrize(
    ("pi", "out"),
    [
        (PISpec(name="x", source="regex", pattern=r"x=(\S+)"), "x=1e308"),
        (PISpec(name="x", source="regex", pattern=r"x=(\S+)"), "x=-1.7976931348623157e308"),
        (PISpec(name="x", source="json", path="x"), '{"x": 1e200}'),
    ],
)
def test_a_reading_too_large_to_analyse_is_refused(pi: PISpec, out: str) -> None:
    # "mean 1e+308 ± 0" was reported; the importers refuse such samples
    with pytest.raises(ReadError, match=r"PI 'x': a reading of .* is too large to analyse"):
        read_reading(pi, result(out))


def test_unit_readings_too_large_to_analyse_are_refused() -> None:
    u = UnitsSpec(source="regex", pattern=r"v=(\S+)")
    with pytest.raises(ReadError, match="values up to 1e\\+200 are too large to analyse"):
        read_unit_readings(u, "x", result("v=1\nv=1e200\n"))
    with pytest.raises(ReadError, match="too large to analyse"):
        read_unit_readings(UnitsSpec(source="json", path="u"), "x", result('{"u": [1, 1e300]}'))
    # the largest readings whose squares stay finite are read
    big = read_unit_readings(u, "x", result("v=1e154\nv=-1e150\n"))
    assert big.tolist() == [1e154, -1e150]


def test_a_pattern_search_ends_at_its_time_limit() -> None:
    # '(a|aa)+$' backtracks through ~1.6^50000 ways to split the line; the engine's
    # limit ends it (Python's re has none: the read hung)
    hostile = io.StringIO("a" * 50_000 + "!")
    with pytest.raises(TimeoutError, match=r"more than 0\.2 s"):
        list(iter_matches(r"(a|aa)+$", hostile, time_limit=0.2))


def _parse_numbers_before(text: str) -> list[float]:
    """parse_numbers as it was, a word at a time: the fast one must agree with it."""
    words = [w for w in re.split(r"[\s;]+", text.strip()) if w]
    if len(words) > 1:
        for w in words:
            if re.fullmatch(r"[-+]?\d+,\d+", w):
                raise ReadError(f"{w[:40]!r}: a decimal comma")
    out: list[float] = []
    for w in words:
        for tok in w.split(","):
            if tok:
                try:
                    out.append(float(tok))
                except ValueError:
                    raise ReadError(f"{tok[:40]!r} is not a number") from None
    return out


_PIECES = st.sampled_from(
    [
        *["1", "1.5", "-2", "1,5", "1,500", "2.5,3.5", "nan", "1e999", "x", "1_0", "١٢"],
        *[" ", "\n", ";", ",", ", ", "\t", "\x1c", "\u2003", "\xa0"],
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=12))
def test_parse_numbers_reads_as_a_word_at_a_time_did(pieces: list[str]) -> None:
    text = "".join(pieces)
    try:
        want: list[float] | str = _parse_numbers_before(text)
    except ReadError as exc:
        want = str(exc).split(":")[0]  # the word it names
    try:
        got: list[float] | str = parse_numbers(text)
    except ReadError as exc:
        got = str(exc).split(":")[0]
    assert got == want or (  # NaN != NaN
        isinstance(got, list) and isinstance(want, list) and np.array_equal(got, want, True)
    )


def test_a_million_unit_readings_from_a_file_and_from_json() -> None:
    values = np.random.default_rng(1).normal(1.5, 0.1, 1_000_000)
    text = "\n".join(map(repr, values.tolist()))
    np.testing.assert_array_equal(readers._finite(parse_numbers(text), "u"), values)
    doc = result(json.dumps({"u": values.tolist()}))
    np.testing.assert_array_equal(
        read_unit_readings(UnitsSpec(source="json", path="u"), "x", doc), values
    )
    # the same messages as one value at a time
    for bad, why in [
        ("[1, true]", "got bool"),
        ('[1, "1,5"]', "is not a number"),
        ("[1, 1e999]", "finite"),
    ]:
        with pytest.raises(ReadError, match=why):
            read_unit_readings(
                UnitsSpec(source="json", path="u"), "x", result('{"u": ' + bad + "}")
            )
    with pytest.raises(ReadError, match="beyond the range"):
        read_unit_readings(
            UnitsSpec(source="json", path="u"), "x", result('{"u": [1, ' + "9" * 400 + "]}")
        )
