"""Hostile benchmark outputs (issue #13, item 10): a reading is a finite number or a
parse error of its trial with the cause, never a traceback and never a wrong number.

A seeded generator writes outputs with huge numbers, 5000-digit integers, deep JSON
nesting, ``1,5``-style decimals and NaN/inf text, and reads them with every reader
(regex, JSON path, plain numbers; one reading and unit readings; from stdout and from
a file).  Then the analysis: huge but finite readings (whose variance overflows a
float) give an estimate or "no valid CI", never an exception.

Round three: a PI's file that is /dev/zero, a FIFO or a 100 MB sparse file, and a
pattern that backtracks without end on a hostile line, each end in a parse error; they
are read in a child held to 1 GiB and 60 s, so a read that hangs or takes all memory
fails its test, not the machine.
"""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import numpy as np
import pytest

from assay.designs.run_until_ci import RoundData, analyze_pi, analyze_samples, decide
from assay.execute.command import CommandResult
from assay.execute.readers import ReadError, parse_numbers, read_reading, read_unit_readings
from assay.execute.trial import TrialJob, TrialRequest, run_trial
from assay.spec import PISpec, StopSpec, UnitsSpec
from assay.stats.intervals import UNREACHABLE_SAMPLE_SIZE, required_sample_size, t_interval
from assay.store import Store


def result(stdout: str) -> CommandResult:
    return CommandResult(
        argv=["x"],
        status="ok",
        exit_code=0,
        started=0.0,
        duration=1.0,
        stdout=stdout.encode("utf-8", "surrogatepass"),
        stderr=b"",
    )


# ------------------------------------------------------------------------- generator

NUMBERS = [
    "1",
    "1.5",
    "-2",
    "+3",
    ".5",
    "5.",
    "0",
    "-0",
    "1e308",
    "1.7976931348623157e308",
    "-1.7976931348623157e308",
    "5e-324",
    "1e-400",
    "1e309",
    "-1e309",
    "1e99999",
    "9" * 400,
    "9" * 5000,
    "-" + "9" * 5000,
    "1,5",
    "1,500",
    "1,500,000",
    "1.5e3",
    "1.5E-3",
    "NaN",
    "nan",
    "inf",
    "-inf",
    "Infinity",
    "-Infinity",
    "1_000",
    "0x10",
    "١٢",
    "1.5.",
    "",
    " ",
    "e",
    "--1",
]

JSON_VALUES = [
    "1",
    "2.5",
    "1e308",
    "-1e308",
    "1e400",
    "9" * 400,
    "9" * 5000,
    "-" + "9" * 5000,
    "NaN",
    "Infinity",
    "-Infinity",
    '"1,5"',
    '"12.5"',
    '"inf"',
    "true",
    "null",
    "{}",
    "[]",
    "[1, 2]",
    "[" * 100_000 + "]" * 100_000,
    "[" * 50 + "1" + "]" * 50,
    '{"a": ' * 5000 + "1" + "}" * 5000,
]

SEPARATORS = ["\n", " ", ",", ", ", ";", "/", "\t", "\r\n"]
SUFFIXES = ["", "\n", " ms", ",5", "e3", "/2,5", ".", " (incl)", "x"]

PATTERNS = [r"tps=([0-9.]+)", r"tps=(\S+)", r"tps=([-+0-9.eE]+)", r"tps=([0-9.,]+)"]
UNIT_PATTERNS = [r"op=([0-9.]+)", r"op=(\S+)", r"op=([-+0-9.eE]+)"]

Reader = Callable[[], object]


KINDS = ["regex", "units-regex", "json", "units-json", "plain", "units-plain", "file", "units-file"]


def cases(n: int, seed: int, tmp: Path) -> Iterator[tuple[str, str, Reader]]:
    """``n`` (kind, output, read) triples: the read returns a reading or readings; a
    file kind writes its output to a file in ``tmp``."""
    rng = random.Random(seed)
    for i in range(n):
        kind = rng.choice(KINDS)
        if kind == "regex":
            out = rng.choice(["", "noise\n", "tps = 3\n"]) + "tps=" + rng.choice(NUMBERS)
            out += rng.choice(SUFFIXES)
            pi = PISpec(name="tps", source="regex", pattern=rng.choice(PATTERNS))
            yield kind, out, partial(read_reading, pi, result(out))
        elif kind == "units-regex":
            sep = rng.choice(SEPARATORS)
            toks = [rng.choice(NUMBERS) for _ in range(rng.randint(1, 6))]
            if rng.random() < 0.5:
                out = sep.join("op=" + t for t in toks)
            else:  # "op=1,5/2,5/3,5": one prefix, many numbers
                out = "op=" + sep.join(toks)
            u = UnitsSpec(source="regex", pattern=rng.choice(UNIT_PATTERNS))
            yield kind, out, partial(read_unit_readings, u, "op", result(out))
        elif kind == "json":
            v = rng.choice(JSON_VALUES)
            out = '{"r": {"tps": ' + v + ', "lat": [' + v + "]}}"
            pi = PISpec(name="tps", source="json", path=rng.choice(["r.tps", "r.lat[0]"]))
            yield kind, out, partial(read_reading, pi, result(out))
        elif kind == "units-json":
            vals = [rng.choice(JSON_VALUES[:-3]) for _ in range(rng.randint(0, 5))]
            out = '{"u": [' + ", ".join(vals) + "]}"
            if rng.random() < 0.1:
                out = '{"u": ' + JSON_VALUES[-3] + "}"
            u = UnitsSpec(source="json", path="u")
            yield kind, out, partial(read_unit_readings, u, "op", result(out))
        elif kind == "plain":
            out = rng.choice(NUMBERS) + rng.choice(["", "\n", " ", " 2"])
            yield kind, out, partial(parse_numbers, out)
        elif kind == "units-plain":
            sep = rng.choice(SEPARATORS)
            out = sep.join(rng.choice(NUMBERS) for _ in range(rng.randint(1, 6)))
            yield kind, out, partial(parse_numbers, out)
        else:  # a file the command wrote, read plain, by a pattern or a JSON path
            sep = rng.choice(SEPARATORS)
            how = rng.choice(["plain", "regex", "json"])
            out = sep.join(rng.choice(NUMBERS) for _ in range(rng.randint(1, 3)))
            if how == "json":
                out = '{"u": [' + ", ".join(rng.choices(JSON_VALUES[:-3], k=2)) + "]}"
            name = f"f{i}.txt"
            (tmp / name).write_text(out, encoding="utf-8", errors="surrogatepass")
            pattern = r"(\S+)" if how == "regex" else None
            if kind == "file":
                path = "u[1]" if how == "json" else None
                pi = PISpec(name="f", source="file", file=name, pattern=pattern, path=path)
                yield kind, out, partial(read_reading, pi, result(""), str(tmp))
            else:
                path = "u" if how == "json" else None
                u = UnitsSpec(source="file", file=name, pattern=pattern, path=path)
                yield kind, out, partial(read_unit_readings, u, "f", result(""), str(tmp))


def _finite(values: object) -> bool:
    arr = np.atleast_1d(np.asarray(values, dtype=np.float64))
    return bool(np.all(np.isfinite(arr)))


N_OUTPUTS = 3000


def test_thousands_of_hostile_outputs_give_a_finite_reading_or_a_parse_error(
    tmp_path: Path,
) -> None:
    start = time.perf_counter()
    outcomes: dict[tuple[str, str], int] = {}
    for kind, out, read in cases(N_OUTPUTS, seed=10, tmp=tmp_path):
        try:
            got = read()
        except ReadError as exc:
            assert str(exc), "a parse error without its cause"
            assert "Traceback" not in str(exc) and len(str(exc)) < 400, str(exc)[:500]
            outcome = "parse error"
        except BaseException as exc:  # the bug: anything else escapes the trial
            pytest.fail(f"{kind}: {type(exc).__name__}: {str(exc)[:200]}\n{out[:300]!r}")
        else:
            # plain numbers may be NaN/inf here: _as_float refuses them on the way out
            if not kind.startswith("plain") and kind != "units-plain":
                assert _finite(got), (kind, out[:200], got)
            outcome = "reading"
        outcomes[kind, outcome] = outcomes.get((kind, outcome), 0) + 1
    for kind in ("regex", "units-regex", "json", "units-json", "file", "units-file"):
        for outcome in ("reading", "parse error"):
            assert outcomes.get((kind, outcome), 0) >= 20, outcomes
    assert time.perf_counter() - start < 30


# ------------------------------------------------------------ the cases of the issue

README_PATTERN = r"tps=([0-9.]+)"


@pytest.mark.parametrize(
    ("out", "why"),
    [
        ("tps=1,5\n", "'1' out of 'tps=1,5'"),  # was stored as 1.0
        ("tps=1,500 (incl)\n", "only part"),  # a thousands separator: was 1.0
        ("tps=1.5e3\n", "only part"),  # an exponent: was 1.5
        ("x=-2 tps=3.5e-1\n", "only part"),
        ("tps=1e309\n", "only part"),
        ("tps=" + "9" * 5000 + "\n", "not a finite number"),  # 5000 digits: float says inf
    ],
)
def test_a_reading_the_pattern_cut_short_is_a_parse_error(out: str, why: str) -> None:
    pi = PISpec(name="tps", source="regex", pattern=README_PATTERN)
    with pytest.raises(ReadError, match=why):
        read_reading(pi, result(out))


def test_a_negative_number_is_not_read_without_its_sign() -> None:
    # "\D*" takes the minus sign: the reading would be 2.5
    pi = PISpec(name="d", source="regex", pattern=r"delta\D*([0-9.]+)")
    with pytest.raises(ReadError, match="only part"):
        read_reading(pi, result("delta= -2.5\n"))
    assert read_reading(pi, result("delta= 2.5, id-3\n")) == 2.5
    # the pattern that takes the sign reads it
    pi2 = PISpec(name="d", source="regex", pattern=r"delta=\s*([-0-9.]+)")
    assert read_reading(pi2, result("delta= -2.5\n")) == -2.5


def test_numbers_around_a_full_match_are_read_as_before() -> None:
    pi = PISpec(name="tps", source="regex", pattern=README_PATTERN)
    for out, want in [
        ("tps=123.5 (incl)\n", 123.5),
        ("tps=7\nother 8", 7.0),
        ("tps=2.5, then 3", 2.5),  # a comma after: a list separator
        ("tps=2.5,3.5", 2.5),  # the number has its point: the comma separates
        ("tps=1e308\n".replace("1e308", "42"), 42.0),
    ]:
        assert read_reading(pi, result(out)) == want, out
    u = UnitsSpec(source="regex", pattern=r"op=([0-9.]+)")
    assert read_unit_readings(u, "op", result("op=1.5,op=2.5")).tolist() == [1.5, 2.5]
    assert read_unit_readings(u, "op", result("id-3 op=4")).tolist() == [4.0]


def test_unit_readings_with_decimal_commas_are_not_split_into_more_readings() -> None:
    u = UnitsSpec(source="regex", pattern=r"([0-9.]+)")
    with pytest.raises(ReadError, match="only part"):
        read_unit_readings(u, "op", result("1,5/2,5/3,5\n"))  # was six readings
    with pytest.raises(ReadError, match="decimal comma"):
        parse_numbers("1,5 2,5 3,5")  # was six readings
    with pytest.raises(ReadError, match="decimal comma"):
        parse_numbers("1,5\n2,5\n")
    # plain lists stay lists
    assert parse_numbers("1.5,2.5,3.5") == [1.5, 2.5, 3.5]
    assert parse_numbers("1, 2, 3") == [1.0, 2.0, 3.0]
    assert parse_numbers("1.5 2.5\n3") == [1.5, 2.5, 3.0]


@pytest.mark.parametrize(
    ("doc", "why"),
    [
        ('{"t": ' + "9" * 5000 + "}", "cannot be read"),  # was a ValueError traceback
        ('{"t": ' + "9" * 400 + "}", "beyond the range"),  # was an OverflowError
        ('{"t": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),  # RecursionError
        ('{"t": 1e400}', "not a finite number"),
        ('{"t": NaN}', "not a finite number"),
        ('{"t": -Infinity}', "not a finite number"),
    ],
)
def test_json_outputs_that_escaped_the_reader_are_parse_errors(doc: str, why: str) -> None:
    pi = PISpec(name="t", source="json", path="t")
    with pytest.raises(ReadError, match=why):
        read_reading(pi, result(doc))
    u = UnitsSpec(source="json", path="u")
    with pytest.raises(ReadError):
        read_unit_readings(u, "t", result(doc.replace('"t": ', '"u": [') + "]"))


def test_an_overflowing_reading_is_a_stored_parse_error_with_its_cause(tmp_path: Path) -> None:
    # the trial as the executor runs it: the benchmark prints 1e309 (and one of 5000 digits)
    code = "print('tps=1e309'); print('{\"u\": [' + '9' * 5000 + ']}')"
    pis = (
        PISpec(name="tps", source="regex", pattern=r"tps=(\S+)"),
        PISpec(name="v", source="json", path="u[0]"),
    )
    for pi in pis:
        rec = run_trial(
            TrialJob(pis=(pi,), timeout=30.0),
            TrialRequest(seq=0, argv=[sys.executable, "-c", code]),
        )
        assert rec.status == "parse_error"
        assert rec.readings == {} and rec.unit_readings == {}
        assert f"PI '{pi.name}'" in rec.error
        with Store(tmp_path / f"{pi.name}.db") as st:
            sid = st.open_study("s", "h", {})
            st.add_trial(sid, rec)
            (stored,) = st.trials(sid)
        assert stored.status == "parse_error" and stored.error == rec.error


# ---------------------------------------------------------------- the analysis copes


def test_huge_but_finite_readings_never_crash_the_analysis() -> None:
    rng = np.random.default_rng(3)
    stop = StopSpec(min_samples=5)
    for exp in [-320, -300, -160, 0, 100, 150, 154, 155, 200, 300, 307, 308]:
        scale = 10.0**exp if exp < 308 else 1.7e308
        for spread in (0.5, 1.0):
            x = scale * (1.0 - spread * rng.random(40))
            for mean in ("arithmetic", "harmonic"):
                if mean == "harmonic" and exp < -308:
                    continue  # rates whose reciprocals overflow: see the report of #13
                pi = PISpec(name="t", mean=mean)
                res = analyze_samples(pi, x, stop, "m", 40)
                # an estimate, or no valid CI: an unmet target, never a false "met"
                assert not (res.met and not math.isfinite(res.half_width)), res
                if math.isfinite(res.half_width) and res.n_samples >= 2 and exp > -300:
                    assert res.half_width > 0.0, res  # no spread lost to underflow
                decide([res], [pi], stop, rounds_done=40, rounds_failed=0, elapsed=1.0)


def test_readings_of_1e308_in_a_store_do_not_crash_a_resume() -> None:
    # readings stored before this fix: 1e308 among ordinary ones, then a few together
    stop = StopSpec(min_samples=5)
    pi = PISpec(name="t")
    for readings in ([1.0, 2.0, 1e308, 1.5, 1.2] * 4, [1e308] * 10 + [-1.7e308] * 10):
        res = analyze_pi(pi, [RoundData(reading=v) for v in readings], stop)
        assert not res.met
        decide([res], [pi], stop, rounds_done=len(readings), rounds_failed=0, elapsed=1.0)


def test_t_interval_keeps_the_spread_of_huge_and_tiny_samples() -> None:
    base = np.array([1.0, 2.0, 3.0, 4.0])
    ref = t_interval(base)
    for scale in (2.0**900, 2.0**-1000):  # powers of two: the exact same interval, scaled
        ci = t_interval(base * scale)
        assert ci.mean == ref.mean * scale and ci.std == ref.std * scale
        assert ci.half_width == pytest.approx(ref.half_width * scale, rel=1e-15)
    # a spread beyond float's range: no valid interval rather than an error
    wide = t_interval([1.7e308, -1.7e308, 1.7e308, -1.7e308])
    assert math.isinf(wide.half_width) and math.isnan(wide.std)


def test_a_width_no_study_can_reach_is_a_count_not_an_error() -> None:
    assert required_sample_size(math.inf, 1.0, 0.05) == UNREACHABLE_SAMPLE_SIZE
    assert required_sample_size(1e200, 1e-200, 0.05) == UNREACHABLE_SAMPLE_SIZE
    assert required_sample_size(1.0, 10.0, 0.05) == 18  # as before
    with pytest.raises(ValueError, match="std"):
        required_sample_size(math.nan, 1.0, 0.05)


def test_json_number_text_roundtrips() -> None:
    # finite readings of every size that can be analysed come back exactly
    pi = PISpec(name="t", source="json", path="t")
    for v in (1e154, -1.3e154, 5e-324, 0.1):
        assert read_reading(pi, result(json.dumps({"t": v}))) == v
    # beyond, their squares overflow: refused, as the importers refuse them
    for v in (1e308, -1e308, 1.7976931348623157e308, 1.4e154):
        with pytest.raises(ReadError, match="too large to analyse"):
            read_reading(pi, result(json.dumps({"t": v})))


# ------------------------------------------ round three: files and patterns that hang


_PRELUDE = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))  # a MemoryError, not 24 GB
from assay.execute import output
from assay.execute.command import CommandResult
from assay.execute.readers import ReadError, read_reading, read_unit_readings
from assay.spec import PISpec, UnitsSpec

def show(read):
    try:
        print("read", read(), flush=True)
    except ReadError as exc:
        print("ReadError", exc, flush=True)

res = CommandResult(
    argv=["x"], status="ok", exit_code=0, started=0.0, duration=1.0,
    stdout=sys.stdin.buffer.read(), stderr=b"",
)
"""


def in_child(code: str, cwd: Path, stdin: bytes = b"") -> list[str]:
    """What ``code`` (after :data:`_PRELUDE`) prints, run in a child of 1 GiB at most;
    a child still running after 60 s fails the test (the read hung)."""
    proc = subprocess.run(
        [sys.executable, "-c", _PRELUDE + code],
        input=stdin,
        capture_output=True,
        timeout=60,
        cwd=cwd,
        env={**os.environ, "OPENBLAS_NUM_THREADS": "1"},  # threads' stacks fit in 1 GiB
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-1500:]
    return proc.stdout.decode().splitlines()


def _hostile_file(kind: str, tmp: Path) -> str:
    if kind == "fifo":  # no writer: a blocking open waits for ever
        os.mkfifo(tmp / "fifo")
    elif kind == "huge":  # 100 MB that cost no disk and no time to write
        with open(tmp / "huge", "wb") as f:
            f.truncate(100 << 20)
    elif kind == "link":
        (tmp / "link").symlink_to("/dev/zero")
    elif kind == "folder":
        (tmp / "folder").mkdir()
    return {"zero": "/dev/zero"}.get(kind, kind)


@pytest.mark.parametrize(
    ("kind", "why"),
    [
        ("zero", "is a character device; expected a regular file"),
        ("link", "is a character device; expected a regular file"),
        ("fifo", "is a FIFO (named pipe); expected a regular file"),
        ("folder", "is a folder; expected a regular file"),
        ("huge", "is larger than 64 MiB"),
    ],
)
def test_a_pi_file_that_is_no_regular_file_of_readings_is_a_parse_error(
    kind: str, why: str, tmp_path: Path
) -> None:
    # /dev/zero took the driver to 4.6 GB in 60 s; a FIFO hung it for ever
    name = _hostile_file(kind, tmp_path)
    reads = [
        f"PISpec(name='t', source='file', file={name!r}{how})"
        for how in ("", ", pattern='([0-9.]+)'", ", path='a'")
    ] + [
        f"UnitsSpec(source='file', file={name!r}{how})"
        for how in ("", ", pattern='([0-9.]+)'", ", path='a'")
    ]
    code = "\n".join(
        f"show(lambda: read_reading({r}, res, {str(tmp_path)!r}))"
        if r.startswith("PISpec")
        else f"show(lambda: read_unit_readings({r}, 't', res, {str(tmp_path)!r}))"
        for r in reads
    )
    lines = in_child(code, tmp_path)
    assert len(lines) == 6, lines
    for line in lines:
        assert line.startswith("ReadError ") and "PI 't'" in line and name in line, line
        assert why in line, line


HOSTILE_LINES = ("a" * 50_000 + "!\n" + "1 " * 25_000 + "\n" + "1" * 50_000 + "\n").encode()


@pytest.mark.parametrize(
    "pattern",
    [r"(a+)+$", r"(a|aa)+$", r"(\d+\s?)+x", r"(\d+)\s+ms", r"(\S+)x", r"^(\d+)+$\n(\d)"],
)
def test_a_pattern_that_backtracks_on_hostile_output_ends_in_a_parse_error(
    pattern: str, tmp_path: Path
) -> None:
    # with Python's re each hung on these 50 kB lines: '(\d+)\s+ms' alone took 15 s,
    # '(\d+\s?)+x' and '(a|aa)+$' for ever; now a search has 1 s here (30 in a study)
    code = f"""
output.MATCH_TIME_LIMIT_S = 1.0
show(lambda: read_reading(PISpec(name="t", source="regex", pattern={pattern!r}), res))
show(lambda: read_unit_readings(UnitsSpec(source="regex", pattern={pattern!r}), "t", res))
"""
    reading, units = in_child(code, tmp_path, HOSTILE_LINES)
    assert reading.startswith("ReadError PI 't': pattern"), reading
    assert "matched nothing" in reading or "took more than 1 s" in reading, reading
    # unit readings may be none at all
    assert units == "read []" or "took more than 1 s" in units, units


def test_a_trial_whose_pattern_runs_out_of_time_is_a_parse_error_and_the_study_goes_on(
    tmp_path: Path,
) -> None:
    code = """
from assay.execute.trial import TrialJob, TrialRequest, run_trial
output.MATCH_TIME_LIMIT_S = 1.0
bench = "print('tps=' + 'a' * 50000 + '!'); print('tps=2')"
pi = PISpec(name="tps", source="regex", pattern=r"tps=((a|aa)+$|\\d)")
job = TrialJob(pis=(pi,), timeout=30.0)
for seq in range(2):
    rec = run_trial(job, TrialRequest(seq=seq, argv=[sys.executable, "-c", bench]))
    print(rec.status, rec.error, flush=True)
"""
    lines = in_child(code, tmp_path)
    assert len(lines) == 2, lines
    for line in lines:
        assert line.startswith("parse_error PI 'tps': pattern"), line
        assert "took more than 1 s" in line, line
