from __future__ import annotations

import contextlib
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.execute.command import CommandResult
from assay.execute.readers import ReadError, read_json_path, read_reading, read_unit_readings
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
        (PISpec(name="a", source="file", file="/nonexistent/f"), "", "cannot read"),
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
