"""Which columns of a results CSV are parameters, and how its rows are read (issue #20):
:mod:`assay.importers.columns` and :func:`assay.importers.csvdata.read_measurements`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.importers.columns import (
    metric_like,
    one_hot_groups,
    repetition_columns,
    row_id_like,
    sentinel_value,
)
from assay.importers.csvdata import read_measurements


class DataError(ValueError):
    pass


@pytest.mark.parametrize(
    "name",
    ["latency", "p99_ms", "avg_latency", "tps", "qps", "ops/s", "exec_time", "Unnamed: 0", "",
     "throughputMean", "run_id", "round", "exec_time_ms", "runtime_s"],
)  # fmt: skip
def test_pi_and_id_names_are_recognised(name: str) -> None:
    assert metric_like(name) is not None


@pytest.mark.parametrize(
    "name",
    ["workers", "checkpoint_timeout", "log_min_duration_statement", "shared_buffers",
     "timeout", "opt_level", "replicas", "wal_writer_delay", "commit_delay_us",
     "checkpoint_timeout_s", "buffer_mb"],
)  # fmt: skip
def test_knob_names_are_not_taken_for_pis(name: str) -> None:
    assert metric_like(name) is None


def test_row_ids_are_recognised_only_in_file_order() -> None:
    assert row_id_like(pd.Series(range(10))) is not None
    assert row_id_like(pd.Series(range(1, 11))) is not None
    assert row_id_like(pd.Series([1, 3, 2, 4, 5])) is None
    assert row_id_like(pd.Series(range(2, 12))) is None
    assert row_id_like(pd.Series(["0", "1", "2"])) is None


def test_one_hot_groups_by_prefix_and_left_over() -> None:
    f = pd.DataFrame(
        {
            "opt_O1": [1, 0, 0, 1],
            "opt_O2": [0, 1, 0, 0],
            "opt_O3": [0, 0, 1, 0],
            "gcc": [1, 1, 0, 0],
            "clang": [0, 0, 1, 1],
            "flag": [1, 1, 1, 0],  # 0/1 but no group
            "w": [1, 2, 3, 4],
        }
    )
    groups = one_hot_groups(f, list(f.columns))
    assert [(g.name, g.columns, g.levels) for g in groups] == [
        ("opt", ("opt_O1", "opt_O2", "opt_O3"), ("O1", "O2", "O3")),
    ]
    # without the non-grouping flag, the remaining two form one group
    g2 = one_hot_groups(f, ["gcc", "clang", "w"])
    assert [(g.name, g.levels) for g in g2] == [("gcc|clang", ("gcc", "clang"))]
    assert g2[0].values(f).tolist() == ["gcc", "gcc", "clang", "clang"]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=5, max_size=40))
def test_one_hot_round_trip(codes: list[int]) -> None:
    """Any categorical column, one-hot encoded, comes back as itself (property)."""
    levels = ["a", "b", "c", "d"]
    values = [levels[c] for c in codes]
    f = pd.get_dummies(pd.Series(values), prefix="mode", dtype=int)
    f["w"] = range(len(values))
    groups = one_hot_groups(f, list(f.columns))
    if len(set(values)) < 2:  # a single 0/1 column that is always 1: no group
        assert groups == []
        return
    assert len(groups) == 1 and groups[0].name == "mode"
    assert groups[0].values(f).tolist() == values


def test_repetition_columns() -> None:
    cols = ["w", "tput_1", "tput_2", "tput_3", "lat_1", "lat_2"]
    assert repetition_columns(cols, "tput", None) == ["tput_1", "tput_2", "tput_3"]
    assert repetition_columns(cols, "tput", "tput_[12]") == ["tput_1", "tput_2"]
    assert repetition_columns(cols, "tput", "tput_1, tput_3") == ["tput_1", "tput_3"]
    assert repetition_columns(["w", "tput", "tput_1", "tput_2"], "tput", None) == []
    assert repetition_columns(["w", "tput_1"], "tput", None) == []  # one round is not rounds
    assert repetition_columns(["tput.r1", "tput.r2"], "tput", None) == ["tput.r1", "tput.r2"]


def test_sentinel_value_stands_out_from_the_other_values() -> None:
    rng = np.random.default_rng(0)
    failed = np.r_[np.zeros(63), rng.uniform(100, 200, 37)]
    assert sentinel_value(failed) == (0.0, 63)
    coded = np.r_[np.full(10, -1.0), rng.normal(0, 5, 110)]  # -1 inside the range
    assert sentinel_value(coded) == (-1.0, 10)
    counts = rng.poisson(4, 200).astype(float)  # values that repeat by nature
    assert sentinel_value(counts) is None
    assert sentinel_value(rng.uniform(0, 1, 100)) is None
    assert sentinel_value(np.r_[np.zeros(3), rng.uniform(1, 2, 97)]) is None  # 3% < 5%


def _csv(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "r.csv"
    p.write_text(text)
    return p


def test_nan_metric_rows_are_dropped_with_a_count(tmp_path: Path) -> None:
    p = _csv(tmp_path, "w,tps\n1,10\n2,\n3,30\n4,NaN\n5,50\n")
    m = read_measurements(p, ["tps"], DataError)
    assert m.frame["w"].tolist() == [1, 3, 5]
    assert m.params == ["w"]  # 1..n, but the only column: a one-parameter sweep
    assert any("dropped 2 row(s) with no tps value" in n and "lines 3, 5" in n for n in m.notes)


@pytest.mark.parametrize(("cell", "shown"), [("fast", "'fast'"), ("inf", "'inf'")])
def test_bad_metric_cells_name_file_column_line(tmp_path: Path, cell: str, shown: str) -> None:
    p = _csv(tmp_path, f"w,tps\n1,10\n2,{cell}\n3,30\n")
    with pytest.raises(DataError) as exc:
        read_measurements(p, ["tps"], DataError)
    text = str(exc.value)
    assert str(p) in text and "column 'tps', line 3" in text and shown in text
    assert "np.float64" not in text


def test_default_columns_leave_out_pis_ids_and_constants(tmp_path: Path) -> None:
    rows = ["Unnamed: 0,run_id,w,c,const,latency,tps"] + [
        f"{i},{i + 1},{w},{c},7,{1 / (w + 1):.4f},{10 * w}"
        for i, (w, c) in enumerate([(1, "x"), (2, "y"), (1, "x"), (2, "y")])
    ]
    p = _csv(tmp_path, "\n".join(rows) + "\n")
    m = read_measurements(p, ["tps"], DataError)
    assert m.params == ["w", "c"]
    assert [c for c, _ in m.excluded] == ["Unnamed: 0", "run_id", "latency"]
    assert any("const has a single value" in n for n in m.notes)
    named = read_measurements(p, ["tps"], DataError, params=["w", "latency"])
    assert named.params == ["w", "latency"] and named.excluded == []


def test_empty_parameter_cell_names_the_line(tmp_path: Path) -> None:
    p = _csv(tmp_path, "w,c,tps\n1,x,10\n2,,20\n3,y,30\n")
    with pytest.raises(DataError, match=r"column 'c', line 3: empty"):
        read_measurements(p, ["tps"], DataError)


def test_round_columns_become_rows(tmp_path: Path) -> None:
    p = _csv(tmp_path, "w,tput_1,tput_2,tput_3\n1,10,11,\n2,20,21,22\n")
    m = read_measurements(p, ["tput"], DataError)
    assert sorted(zip(m.frame["w"], m.frame["tput"], strict=True)) == [
        (1, 10.0), (1, 11.0), (2, 20.0), (2, 21.0), (2, 22.0)
    ]  # fmt: skip
    assert m.rounds == {"tput": ["tput_1", "tput_2", "tput_3"]}
    assert list(m.frame.index) == [2, 3, 2, 3, 3]  # each trial keeps its line
    with pytest.raises(DataError, match=r"--repetitions 'x_\*': no column matches"):
        read_measurements(p, ["tput"], DataError, repetitions="x_*")
