"""Hostile input that once hung or crashed (issue "Nothing let in, round three", part 7):
knob ranges whose span overflows a float, ``--from`` files holding 1e308, and stores that
are read-only or no store at all.  Each refusal is one line naming the file and the field
(or column and line), with the exit status of bad input; nothing ends in a traceback."""

from __future__ import annotations

import math
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from click.testing import CliRunner, Result
from hypothesis import example, given, settings
from hypothesis import strategies as st

from assay.cli import main
from assay.designs.knobs import (
    KnobSpace,
    NumericKnob,
    infer_space,
    latin_hypercube,
    space_from_spec,
)
from assay.designs.tune import tune
from assay.spec import SpecError, parse_spec_data, parse_spec_text

BIG = sys.float_info.max  # 1.7976931348623157e308
INT64 = (-(2**63), 2**63 - 1)


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


# a. knob ranges ---------------------------------------------------------------------------
def _knob_study(knob: str) -> str:
    return (
        '[study]\nname = "k"\n[benchmark]\ncommand = ["echo", "{x}"]\n'
        f'[[knob]]\nname = "x"\n{knob}\n'
    )


@pytest.mark.parametrize(
    ("knob", "message"),
    [
        (
            'type = "float"\nmin = -1e308\nmax = 1e308\ndefault = 0.0',
            "'max' - 'min' = 1e+308 - -1e+308 overflows a float",
        ),
        ('type = "int"\nmin = -1e308\nmax = 1e308\ndefault = 0', "must be 64-bit integers"),
        ('type = "int"\nmin = 0\nmax = 1e19\ndefault = 0', "must be 64-bit integers"),
    ],
)
def test_a_knob_range_that_sampling_cannot_span_is_refused(knob: str, message: str) -> None:
    with pytest.raises(SpecError) as exc:
        parse_spec_text(_knob_study(knob), "k.toml")
    text = str(exc.value)
    assert text.startswith("k.toml: invalid study file") and "knob[0]: 'x': " in text
    assert message in text, text


EXTREME = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([BIG, -BIG, 1e308, -1e308, 5e-324, 0.0, 1.0, 2.0**63, -(2.0**63)]),
)


@settings(max_examples=300, deadline=None)
@given(
    low=EXTREME,
    high=EXTREME,
    kind=st.sampled_from(["int", "float"]),
    log=st.booleans(),
    seed=st.integers(0, 2**16),
)
@example(low=-1e308, high=1e308, kind="int", log=False, seed=0)  # once an OverflowError
@example(low=-BIG, high=BIG, kind="float", log=False, seed=0)
@example(low=5e-324, high=BIG, kind="float", log=True, seed=0)
@example(low=1.0, high=1e308, kind="int", log=True, seed=0)
def test_extreme_knob_ranges_are_refused_or_sampled_within_bounds(
    low: float, high: float, kind: str, log: bool, seed: int
) -> None:
    knob = {"name": "x", "type": kind, "min": low, "max": high, "log": log, "default": low}
    data = {"study": {"name": "k"}, "benchmark": {"command": ["echo", "{x}"]}, "knob": [knob]}
    try:
        spec = parse_spec_data(data, "k.toml")
    except SpecError as exc:
        assert "knob[0]" in str(exc)
        return
    for s in latin_hypercube(space_from_spec(spec), 7, seed=seed):
        v = s["x"]
        assert isinstance(v, int | float) and type(v) is (int if kind == "int" else float)
        assert math.isfinite(v) and low <= v <= high


# Optuna's TPE warns of a log of 0 over a 2**64-wide integer range, and stays within it
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize(
    "knob",
    [
        NumericKnob("x", -BIG / 2, BIG / 2, 0.0),  # the widest span a float holds
        NumericKnob("x", 0.0, BIG, 0.0),
        NumericKnob("x", 5e-324, BIG, 1.0, log=True),
        NumericKnob("x", INT64[0], INT64[1], 0, integer=True),
        NumericKnob("x", 1, INT64[1], 1, integer=True, log=True),
    ],
    ids=["float", "float-top", "log", "int64", "int64-log"],
)
def test_the_widest_accepted_ranges_sample_and_tune_within_bounds(knob: NumericKnob) -> None:
    space = KnobSpace((knob,))
    settings_ = latin_hypercube(space, 20, seed=1)
    assert len({s["x"] for s in settings_}) > 10  # spread over the range, not piled at an end
    result = tune(space, lambda s: float(hash(s["x"]) % 97), 12, seed=0)  # TPE from trial 11
    for s in [*settings_, *(t.setting for t in result.trials)]:
        v = s["x"]
        assert isinstance(v, int | float) and math.isfinite(v) and knob.low <= v <= knob.high


def test_a_huge_constant_column_still_makes_a_knob() -> None:
    for v in (1e17, BIG, -BIG, 2.0**63):
        knob = infer_space(pd.DataFrame({"k": [v, v, v]}), ["k"])["k"]
        assert isinstance(knob, NumericKnob) and knob.low <= v <= knob.high


# b. --from files holding 1e308 ---------------------------------------------------------------
def _results_csv(path: Path, *, metric: float | None = None, param: float | None = None) -> Path:
    rows = [
        {"w": w, "c": c, "tps": 10.0 * w + {"x": 0, "y": 5}[c] + 0.1 * r}
        for w in (1, 2, 4, 8)
        for c in ("x", "y")
        for r in range(3)
    ]
    if metric is not None:
        rows[4]["tps"] = metric  # line 6 of the file
    if param is not None:
        rows[4]["w"] = param
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


@pytest.mark.parametrize(
    ("command", "cell", "message"),
    [
        ("sweep", {"metric": 1e308}, "column 'tps', line 6: 1e+308 is too large to analyse"),
        ("sweep", {"metric": -1e308}, "column 'tps', line 6: -1e+308 is too large to analyse"),
        ("sweep", {"param": 1e308}, "column 'w', line 6: 1e+308 is too large to analyse"),
        ("knobs", {"metric": 1e308}, "column 'tps', line 6: 1e+308 is too large to analyse"),
    ],
)
def test_from_a_csv_holding_1e308_names_the_file_column_and_line(
    tmp_path: Path, command: str, cell: dict[str, float], message: str
) -> None:
    data = _results_csv(tmp_path / "r.csv", **cell)
    extra = ["--knob", "w,c"] if command == "knobs" else ["--params", "w,c"]
    res = invoke(command, "--from", str(data), "--metric", "tps", *extra)
    assert res.exit_code == 2, res.output
    assert res.stderr.startswith(f"error: {data}: {message}"), res.stderr
    assert "Traceback" not in res.output and res.stderr.count("\n") <= 3  # one wrapped line
    if "metric" in cell:  # a failed run coded as 1e308 has a way out
        assert f"--drop-value {cell['metric']!r}" in res.stderr


def test_sweep_from_leaves_out_1e308_rows_with_drop_value(tmp_path: Path) -> None:
    data = _results_csv(tmp_path / "r.csv", metric=1e308)
    res = invoke(
        "sweep", "--from", str(data), "--metric", "tps", "--params", "w,c",
        "--drop-value", "1e308",
    )  # fmt: skip
    assert res.exit_code in (0, 5), res.output
    assert "dropped 1 row(s) whose tps is 1e+308" in res.output


def test_sweep_from_an_analysis_error_names_the_file(tmp_path: Path) -> None:
    data = _results_csv(tmp_path / "r.csv", metric=-5.0)
    res = invoke("sweep", "--from", str(data), "--metric", "tps", "--params", "w,c", "--log")
    assert res.exit_code == 2, res.output
    assert res.stderr.startswith(f"error: {data}: "), res.stderr
    assert "tps must be positive" in res.stderr


# c. stores: read-only, or no store -------------------------------------------------------
QUIET = ["--no-overhead", "--no-monitor", "-q"]


@pytest.fixture(scope="module")
def finished_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store in a folder of its own holding one finished study ("tiny", 3 trials)."""
    db = tmp_path_factory.mktemp("store") / "s.db"
    res = invoke("run", "--store", str(db), "-r", "3", *QUIET, "--name", "tiny", "--", "true")
    assert res.exit_code in (0, 5), res.output
    return db


def _read_only_mounts(folder: Path) -> bool:
    """Whether ``unshare -rm`` can bind-mount ``folder`` read-only here: in a private mount
    namespace (as a mapped root), so the mount never outlives the command."""
    if shutil.which("unshare") is None or sys.platform != "linux":
        return False
    probe = 'mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" && ! touch "$1/x"'
    argv = ["unshare", "-rm", "sh", "-c", probe, "sh", str(folder)]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


# $1 the store's folder, $2 where the outputs go (NAME.out, NAME.err, NAME.rc for each
# command); with $3 = "ro", in a private mount namespace, the folder is read through a
# read-only bind mount of it at $4
_READ_SCRIPT = """
set -u
DIR=$1 OUT=$2
if [ "$3" = ro ]; then
    mount --bind "$1" "$4" && mount -o remount,ro,bind "$4" || exit 99
    touch "$4/probe" 2>/dev/null && exit 98
    DIR=$4
fi
cmd() {
    name=$1; shift
    "$PY" -m assay "$@" >"$OUT/$name.out" 2>"$OUT/$name.err"; echo $? >"$OUT/$name.rc"
}
cmd ls ls "$DIR/s.db" --json
cmd show show "$DIR/s.db" --json -
cmd export export "$DIR/s.db" -o -
cmd report report "$DIR/s.db" -o "$OUT/report.html"
"""


def _outputs(folder: Path, name: str) -> tuple[int, str, str]:
    return (
        int((folder / f"{name}.rc").read_text()),
        (folder / f"{name}.out").read_text(),
        (folder / f"{name}.err").read_text(),
    )


def test_read_only_commands_read_a_store_on_a_read_only_filesystem(
    finished_store: Path, tmp_path: Path
) -> None:
    if not _read_only_mounts(tmp_path):
        pytest.skip("no read-only bind mount here (needs unshare -rm and mount)")
    folder = finished_store.parent
    before = sorted(p.name for p in folder.iterdir())
    mounted, ro_out, rw_out = tmp_path / "ro", tmp_path / "ro-out", tmp_path / "rw-out"
    for d in (mounted, ro_out, rw_out):
        d.mkdir()
    env = {**os.environ, "PY": sys.executable}
    script = ["sh", "-c", _READ_SCRIPT, "sh", str(folder)]
    done = subprocess.run(
        ["unshare", "-rm", *script, str(ro_out), "ro", str(mounted)],
        env=env, capture_output=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in folder.iterdir()) == before  # nothing could be written
    # the same commands on the writable store (which leave its -wal and -shm files)
    done = subprocess.run([*script, str(rw_out), "rw"], env=env, capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr
    for name in ("ls", "show", "export", "report"):
        rc, out, err = _outputs(ro_out, name)
        assert "unable to open" not in err and "Traceback" not in err, err
        want_rc, want_out, _ = _outputs(rw_out, name)
        assert rc == want_rc and rc in (0, 5), (name, rc, err)  # 5: show's -r budget
        assert out.replace(str(mounted), str(folder)) == want_out, name  # the store's path
    assert '"name": "tiny"' in _outputs(ro_out, "ls")[1]
    assert _outputs(ro_out, "export")[1].count("\ntiny,") == 3  # the study's three trials
    assert (ro_out / "report.html").stat().st_size > 0


def _no_store(kind: str, path: Path, store: Path) -> Path:
    if kind == "text":
        path.write_text("study,seq\nnot,a store\n" * 50)
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "random":
        path.write_bytes(bytes(range(256)) * 20)
    elif kind == "sqlite-without-tables":
        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE other (x)")
    elif kind == "cut-short":
        path.write_bytes(store.read_bytes()[:4096])
    return path


@pytest.mark.parametrize("command", ["ls", "show", "export", "report"])
@pytest.mark.parametrize(
    "kind", ["text", "empty", "random", "sqlite-without-tables", "cut-short", "folder"]
)
def test_a_file_that_is_no_store_is_bad_input_in_one_line(
    finished_store: Path, tmp_path: Path, command: str, kind: str
) -> None:
    path = tmp_path / "s.db"
    if kind == "folder":
        path.mkdir()
    else:
        _no_store(kind, path, finished_store)
    extra: list[Any] = ["-o", str(tmp_path / "r.html")] if command == "report" else []
    res = invoke(command, str(path), *extra)
    assert res.exit_code == 2, (res.exit_code, res.output)
    assert res.exception is None or isinstance(res.exception, SystemExit)
    assert "Traceback" not in res.output
    if kind == "folder":  # click refuses it before assay reads anything
        assert "is a directory" in res.stderr
    else:
        assert res.stderr.startswith(f"error: {path}: not a results store"), res.stderr
        assert res.stderr.count("\n") == 1, res.stderr


# -- what the fuzzers of issue #46 found (bench/bench_fuzz.py) -----------------------------
def _hostile_file(tmp_path: Path, kind: str, name: str) -> Path:
    """A FIFO with no writer, a link to /dev/zero, or a sparse file of 1 GB."""
    import os

    p = tmp_path / name
    if kind == "fifo":
        os.mkfifo(p)
    elif kind == "zero":
        p.symlink_to("/dev/zero")
    else:
        with p.open("wb") as f:
            f.truncate(1 << 30)
    return p


@pytest.mark.parametrize("kind", ["fifo", "zero", "sparse"])
@pytest.mark.parametrize(
    "args",
    [
        ["run", "{f}"],
        ["order", "--from", "{f}"],
        ["sweep", "--from", "{f}", "--params", "a", "--metric", "y"],
        ["knobs", "--from", "{f}", "--metric", "y"],
    ],
    ids=["study file", "order --from", "sweep --from", "knobs --from"],
)
def test_a_fifo_dev_zero_or_huge_input_file_is_refused_at_once(
    tmp_path: Path, kind: str, args: list[str]
) -> None:
    """A FIFO hung these commands for ever, /dev/zero or a 1 GB sparse file filled the
    memory (MemoryError): each is now one line naming the file, exit 2."""
    import subprocess
    import sys

    f = _hostile_file(tmp_path, kind, "in.csv" if "--from" in args else "s.toml")
    argv = [a.replace("{f}", str(f)) for a in args]
    proc = subprocess.run(
        [sys.executable, "-m", "assay", *argv], capture_output=True, text=True,
        timeout=120, check=False,  # a hang guard only
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and str(f) in proc.stderr
    assert ("regular file" in proc.stderr) if kind != "sparse" else ("larger than" in proc.stderr)


def test_huge_integers_in_from_files_are_errors_naming_the_cell(tmp_path: Path) -> None:
    """A 400-digit metric raised OverflowError in pandas; a 5000-digit position in an
    order file raised Python's int limit."""
    from click.testing import CliRunner

    from assay.cli import main

    big = "9" * 400
    csv = tmp_path / "t.csv"
    csv.write_text(f"workers,mode,tps\n1,wal,1\n2,wal,2\n1,delete,3\n2,delete,{big}\n")
    res = CliRunner().invoke(
        main, ["sweep", str(csv), "--from", "--metric", "tps", "--params", "workers,mode"]
    )
    assert res.exit_code == 2 and "column 'tps', line 5" in res.output, res.output
    order = tmp_path / "o.csv"
    order.write_text(f"test,order,run,position,value\na,fixed,0,{'9' * 5000},1.5\n")
    res = CliRunner().invoke(main, ["order", "--from", str(order)])
    assert res.exit_code == 2 and "column 'position'" in res.output, res.output
    assert len(res.output) < 600  # the cell shown cut, not 5000 digits
