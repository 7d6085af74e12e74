"""Issue #40, part 1: ``assay order --from`` with several metrics per trial.

A memory-bandwidth benchmark reports four kernels in one ``result``
(``"33888.15,33794.10,38016.58,38157.31"``); OrderSage writes it quoted.  It is split
into one metric per value (named by ``--metrics`` or ``value[1]`` ... ``value[k]``),
each analysed as a test of its own with Bonferroni over them all; the same data as one
row per metric at one position, and the long format's ``metric`` column or value
columns, give the same analysis.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Sequence
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from assay.cli import main
from assay.importers.columns import default_metric_names, metric_columns, metric_names
from assay.importers.order import OrderDataError, read_order_file
from assay.studies.order import order_from_csv

HEADER = (
    "run_uuid,hostname,run_num,total_runs,exp_command,exp_number,order_number,order_type,"
    "time_start,time_stop,completion_status,result\n"
)
KERNELS = ("copy", "scale", "add", "triad")
BASE = (33888.15, 33794.10, 38016.58, 38157.31)
TESTS = ("stream", "lat")


def schedule(
    tests: Sequence[str], runs: int, rng: random.Random
) -> Iterator[tuple[str, int, int, str]]:
    """(kind, run number, position, test) of every trial: ``runs`` runs of ``tests`` in
    their order, then as many each shuffled by ``rng`` (lazily: a caller drawing from
    ``rng`` between trials draws in the same order as if it shuffled itself)."""
    for kind in ("fixed", "random"):
        for run in range(runs):
            order = list(tests)
            if kind == "random":
                rng.shuffle(order)
            for pos, test in enumerate(order):
                yield kind, run, pos, test


def _trials(runs: int = 6, seed: int = 40) -> list[tuple[str, str, int, int, list[float]]]:
    """(test, kind, run number, position, the four values) of every trial."""
    rng = random.Random(seed)
    out = []
    for kind, run, pos, test in schedule(TESTS, runs, rng):
        scale = 1.0 if test == "stream" else 0.5
        values = [round(v * scale * (1 + rng.gauss(0, 0.01)), 2) for v in BASE]
        out.append((test, kind, run, pos, values))
    return out


def _multi(trials: list[tuple[str, str, int, int, list[float]]]) -> str:
    """OrderSage's file, each result the four values quoted."""
    rows = [
        f'u,node1,{r},6,{t},0,{pos},{k},0,1,Success,"{",".join(f"{v:.2f}" for v in vals)}"\n'
        for t, k, r, pos, vals in trials
    ]
    return HEADER + "".join(rows)


def _per_metric(trials: list[tuple[str, str, int, int, list[float]]]) -> str:
    """The same data, one row per metric, every metric's row at the trial's position."""
    rows = [
        f"u,node1,{r},6,{t} -- {m},0,{pos},{k},0,1,Success,{v:.2f}\n"
        for t, k, r, pos, vals in trials
        for m, v in zip(KERNELS, vals, strict=True)
    ]
    return HEADER + "".join(rows)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _sorted(table: pd.DataFrame) -> pd.DataFrame:
    cols = ["test", "order", "run", "position"]
    return table.sort_values(cols).reset_index(drop=True)[[*cols, "value"]]


# ----------------------------------------------------------------- quoted multi-valued results


def test_quoted_results_are_split_into_named_metrics(tmp_path: Path) -> None:
    p = _write(tmp_path, "results.csv", _multi(_trials()))
    read = read_order_file(p, metrics=KERNELS)
    assert read.metrics == KERNELS and read.metrics_from == "named by --metrics"
    tests = list(dict.fromkeys(read.table["test"]))
    assert tests == [f"{t} -- {m}" for t in TESTS for m in KERNELS]
    assert len(read.table) == 2 * 6 * 2 * 4
    first = read.table[(read.table["run"] == "node1/fixed-0") & (read.table["position"] == 0)]
    assert len(first) == 4 and set(first["test"]) == {f"stream -- {m}" for m in KERNELS}


def test_default_metric_names_are_said(tmp_path: Path) -> None:
    p = _write(tmp_path, "results.csv", _multi(_trials()))
    read = read_order_file(p)
    assert read.metrics == ("value[1]", "value[2]", "value[3]", "value[4]")
    assert "default names value[1]" in read.metrics_text()
    assert "stream -- value[3]" in set(read.table["test"])


def test_cli_metrics_option_names_the_tests_and_says_so(tmp_path: Path) -> None:
    p = _write(tmp_path, "results.csv", _multi(_trials()))
    out = tmp_path / "r.json"
    res = CliRunner().invoke(
        main, ["order", "--from", str(p), "--metrics", "copy,scale,add,triad", "--json", str(out)]
    )
    assert res.exit_code in (0, 1, 5), res.output
    text = " ".join(res.output.split())
    assert "Traceback" not in res.output
    assert "4 metrics per trial, each analysed as a test: copy, scale, add, triad" in text
    assert "(named by --metrics)" in text
    doc = json.loads(out.read_text())
    assert doc["metrics"] == list(KERNELS)
    assert "named by --metrics" in doc["metrics_note"]
    assert [t["test"] for t in doc["tests"]] == [f"{t} -- {m}" for t in TESTS for m in KERNELS]


def test_cli_default_names_are_in_the_report(tmp_path: Path) -> None:
    p = _write(tmp_path, "results.csv", _multi(_trials()))
    res = CliRunner().invoke(main, ["order", "--from", str(p)])
    text = " ".join(res.output.split())
    assert "value[1], value[2], value[3], value[4]" in text
    assert "name them with --metrics" in text


def test_failed_rows_are_not_counted_for_the_values(tmp_path: Path) -> None:
    text = _multi(_trials()).replace(
        'u,node1,0,6,lat,0,1,fixed,0,1,Success,"', 'u,node1,0,6,lat,0,1,fixed,0,1,Failure,"1,'
    )
    read = read_order_file(_write(tmp_path, "results.csv", text), metrics=KERNELS)
    assert read.failed == {"lat": 1}
    assert len(read.table) == (2 * 6 * 2 - 1) * 4


# ----------------------------------------------------------------- wrong value counts


def _bad(tmp_path: Path, text: str, metrics: tuple[str, ...] | None = None) -> str:
    with pytest.raises(OrderDataError) as exc:
        read_order_file(_write(tmp_path, "bad.csv", text), metrics=metrics)
    msg = str(exc.value)
    assert msg.startswith(str(tmp_path / "bad.csv") + ": ") and "\n" not in msg
    return msg


def test_a_row_with_fewer_values_names_its_line_and_counts(tmp_path: Path) -> None:
    lines = _multi(_trials()).splitlines(keepends=True)
    lines[5] = lines[5].rsplit(",", 1)[0] + '"\n'  # drops the 4th value of line 6
    msg = _bad(tmp_path, "".join(lines))
    assert "line 6: column 'result': found 3 values, expected 4 (as at line 2;" in msg


def test_a_single_value_among_several_is_refused(tmp_path: Path) -> None:
    lines = _multi(_trials()).splitlines(keepends=True)
    lines[3] = lines[3].split('"')[0] + "33000.0\n"
    msg = _bad(tmp_path, "".join(lines))
    assert "line 4: column 'result': found 1 value, expected 4" in msg


def test_metrics_count_must_match(tmp_path: Path) -> None:
    msg = _bad(tmp_path, _multi(_trials()), metrics=("copy", "scale", "add"))
    assert "line 2: column 'result': found 4 values, expected 3 (--metrics copy,scale,add)" in msg


def test_a_value_that_is_not_a_number_is_named(tmp_path: Path) -> None:
    text = _multi(_trials()).replace('"33', '"x33', 1)
    msg = _bad(tmp_path, text)
    assert "line 2: column 'result': value 1 of 4: expected a finite number, got 'x33" in msg


def test_cli_wrong_counts_exit_2(tmp_path: Path) -> None:
    p = _write(tmp_path, "results.csv", _multi(_trials()))
    res = CliRunner().invoke(main, ["order", "--from", str(p), "--metrics", "a,b"])
    assert res.exit_code == 2 and "found 4 values, expected 2 (--metrics a,b)" in res.output
    res = CliRunner().invoke(main, ["order", "--from", str(p), "--metrics", "a,a,b,c"])
    assert res.exit_code == 2 and "--metrics: 'a' is named twice" in res.output


def test_metrics_without_from_is_refused(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["order", str(tmp_path / "x.toml"), "--metrics", "a,b"])
    assert res.exit_code == 2 and "--metrics: only with --from" in res.output


# ----------------------------------------------------------------- several tests at one position


def test_per_metric_rows_at_one_position_read_as_the_split(tmp_path: Path) -> None:
    trials = _trials()
    split = read_order_file(_write(tmp_path, "m.csv", _multi(trials)), metrics=KERNELS)
    rows = read_order_file(_write(tmp_path, "r.csv", _per_metric(trials)))
    pd.testing.assert_frame_equal(_sorted(split.table), _sorted(rows.table))
    a = order_from_csv(str(tmp_path / "m.csv"), metrics=KERNELS).analysis
    b = order_from_csv(str(tmp_path / "r.csv")).analysis
    assert a.tested == b.tested == 8
    assert {r.test: r.p_value for r in a.results} == pytest.approx(
        {r.test: r.p_value for r in b.results}
    )


def test_same_test_twice_at_one_position_is_still_refused(tmp_path: Path) -> None:
    lines = _per_metric(_trials()).splitlines(keepends=True)
    msg = _bad(tmp_path, "".join([*lines[:3], lines[2], *lines[3:]]))
    assert "line 4: run '0' (fixed on node1) already has a trial of 'stream -- scale'" in msg
    assert "at position 0 (line 3)" in msg
    long = "test,order,run,position,value\na,fixed,1,0,1.0\nb,fixed,1,0,1.0\na,fixed,1,0,2.0\n"
    msg = _bad(tmp_path, long)
    assert "line 4: run '1' already has a trial of 'a' at position 0 (line 2)" in msg


def test_different_tests_at_one_position_are_accepted_in_the_long_format(
    tmp_path: Path,
) -> None:
    text = (
        "test,order,run,position,value\n"
        "a,fixed,1,0,1.0\nb,fixed,1,0,2.0\na,random,2,0,1.1\nb,random,2,0,2.1\n"
    )
    read = read_order_file(_write(tmp_path, "t.csv", text))
    assert len(read.table) == 4 and read.metrics == ()


# ----------------------------------------------------------------- the long format


def _long_rows(trials: list[tuple[str, str, int, int, list[float]]]) -> list[list[str]]:
    return [
        [t, k, f"node1/{k}-{r}", str(pos), *(f"{v:.2f}" for v in vals)]
        for t, k, r, pos, vals in trials
    ]


def test_long_format_metric_column(tmp_path: Path) -> None:
    trials = _trials()
    lines = ["test,order,run,position,metric,value"]
    for t, k, run, pos, *vals in _long_rows(trials):
        lines += [f"{t},{k},{run},{pos},{m},{v}" for m, v in zip(KERNELS, vals, strict=True)]
    read = read_order_file(_write(tmp_path, "long.csv", "\n".join(lines) + "\n"))
    split = read_order_file(_write(tmp_path, "m.csv", _multi(trials)), metrics=KERNELS)
    pd.testing.assert_frame_equal(_sorted(read.table), _sorted(split.table))
    assert read.metrics == KERNELS and read.metrics_from == "column 'metric'"


def test_long_format_value_columns(tmp_path: Path) -> None:
    trials = _trials()
    head = "test,order,run,position," + ",".join(f"value_{m}" for m in KERNELS)
    body = [",".join(row) for row in _long_rows(trials)]
    p = _write(tmp_path, "wide.csv", "\n".join([head, *body]) + "\n")
    read = read_order_file(p)
    split = read_order_file(_write(tmp_path, "m.csv", _multi(trials)), metrics=KERNELS)
    pd.testing.assert_frame_equal(_sorted(read.table), _sorted(split.table))
    assert read.metrics == KERNELS
    assert "value columns value_copy, value_scale" in read.metrics_text()
    # --metrics renames them, or names the value columns themselves
    renamed = read_order_file(p, metrics=("c", "s", "a", "t"))
    assert "stream -- t" in set(renamed.table["test"])
    with pytest.raises(OrderDataError, match="2 names for 4 value columns"):
        read_order_file(p, metrics=("c", "s"))
    bare = "test,order,run,position," + ",".join(KERNELS)
    q = _write(tmp_path, "bare.csv", "\n".join([bare, *body]) + "\n")
    pd.testing.assert_frame_equal(
        _sorted(read_order_file(q, metrics=KERNELS).table), _sorted(split.table)
    )


def test_long_format_quoted_values(tmp_path: Path) -> None:
    trials = _trials()
    body = [
        f'{t},{k},{run},{pos},"{",".join(vals)}"' for t, k, run, pos, *vals in _long_rows(trials)
    ]
    p = _write(tmp_path, "q.csv", "\n".join(["test,order,run,position,value", *body]) + "\n")
    read = read_order_file(p, metrics=KERNELS)
    split = read_order_file(_write(tmp_path, "m.csv", _multi(trials)), metrics=KERNELS)
    pd.testing.assert_frame_equal(_sorted(read.table), _sorted(split.table))


def test_trials_csv_round_trips(tmp_path: Path) -> None:
    p = _write(tmp_path, "results.csv", _multi(_trials()))
    out = tmp_path / "trials.csv"
    res = CliRunner().invoke(
        main,
        ["order", "--from", str(p), "--metrics", "copy,scale,add,triad", "--trials-csv", str(out)],
    )
    assert "Traceback" not in res.output
    again = read_order_file(out)
    first = read_order_file(p, metrics=KERNELS)
    assert len(again.table) == len(first.table)
    assert set(again.table["test"]) == set(first.table["test"])


# ----------------------------------------------------------------- Bonferroni over the metrics


def test_bonferroni_counts_every_metric(tmp_path: Path) -> None:
    """8 tests (2 commands x 4 metrics): threshold alpha / 8.  A carry-over on one
    kernel of one command alone is found, the others are not flagged."""
    trials = _trials(runs=8)
    shifted = []
    for t, k, r, pos, vals in trials:
        if t == "stream" and k == "fixed":  # the fixed order favours stream's triad
            vals = [*vals[:3], vals[3] * 0.9]
        shifted.append((t, k, r, pos, vals))
    p = _write(tmp_path, "results.csv", _multi(shifted))
    res = order_from_csv(str(p), alpha=0.05, metrics=KERNELS)
    a = res.analysis
    assert a.tested == 8
    assert a.threshold == pytest.approx(0.05 / 8)
    assert a.flagged == ["stream -- triad"]
    assert (
        "Bonferroni over the 8 tests (each of the 4 metrics of a test counted as a test)"
        in (res.as_dict()["method"])
    )
    assert "Bonferroni threshold 0.05/8" in a.verdict()


# ----------------------------------------------------------------- helpers


def test_column_helpers() -> None:
    assert default_metric_names(2) == ("value[1]", "value[2]")
    assert metric_names("copy, scale") == ("copy", "scale")
    with pytest.raises(ValueError, match="non-empty"):
        metric_names("copy,,add")
    assert metric_columns(["test", "value", "values", "value_copy", "value[2]"]) == [
        ("value_copy", "copy"),
        ("value[2]", "2"),
    ]


# ------------------------------------------------------- tests of different shapes (#59)


def _mixed(trials: list[tuple[str, str, int, int, list[float]]]) -> str:
    """'stream' with its four values, 'lat' with one (its first): each test its own."""
    rows = []
    for t, k, r, pos, vals in trials:
        result = f'"{",".join(f"{v:.2f}" for v in vals)}"' if t == "stream" else f"{vals[0]:.2f}"
        rows.append(f"u,node1,{r},6,{t},0,{pos},{k},0,1,Success,{result}\n")
    return HEADER + "".join(rows)


def test_a_file_whose_tests_hold_different_numbers_of_values_is_read_whole(
    tmp_path: Path,
) -> None:
    """#59: one test of four values beside one of one was refused whole ("found 1 value,
    expected 4 (as at line 2; every result holds the same number of values)")."""
    p = _write(tmp_path, "results.csv", _mixed(_trials()))
    read = read_order_file(p, metrics=KERNELS)
    tests = set(read.table["test"])
    assert tests == {f"stream -- {k}" for k in KERNELS} | {"lat"}
    assert len(read.table) == 2 * 6 * (4 + 1)
    assert read.metrics == KERNELS
    lat = read.table[read.table["test"] == "lat"]["value"]
    assert lat.between(16000, 18000).all()  # its one value, not split
    # and without --metrics: the default names, the one-value test as it is
    assert set(read_order_file(p).table["test"]) == {
        f"stream -- {n}" for n in default_metric_names(4)
    } | {"lat"}


def test_a_test_whose_own_rows_differ_in_count_is_still_refused(tmp_path: Path) -> None:
    lines = _mixed(_trials()).splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if ",lat," in line and i > 3)
    lines[at] = lines[at].rsplit(",", 1)[0] + ',"1.0,2.0"\n'  # a 'lat' row of two values
    msg = _bad(tmp_path, "".join(lines))
    assert f"line {at + 1}: column 'result': found 2 values, expected 1 (as at line " in msg
    assert "(test 'lat')" in msg


def test_metrics_for_a_file_of_single_values_is_refused(tmp_path: Path) -> None:
    single = HEADER + "".join(
        f"u,node1,{r},6,{t},0,{pos},{k},0,1,Success,{vals[0]:.2f}\n"
        for t, k, r, pos, vals in _trials()
    )
    msg = _bad(tmp_path, single, metrics=KERNELS)
    assert "every result holds one value; --metrics names the values" in msg
