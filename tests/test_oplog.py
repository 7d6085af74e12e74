"""go-ycsb's per-operation log: the operations a --max-time stop cut off are not failures."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from assay.targets.oplog import CUT_OFF, cut_off, parse_oplog, summarise, window_pis, windows

_OPS = st.sampled_from(["READ", "UPDATE", "TOTAL", "READ_ERROR", "UPDATE_ERROR"])
_ROWS = st.lists(
    st.tuples(_OPS, st.integers(1_000_000, 9_000_000), st.integers(0, 3_000_000)),
    min_size=1,
    max_size=60,
)


def _log_text(rows: list[tuple[str, int, int]]) -> str:
    return "operation,timestamp_us,latency_us\n" + "".join(f"{o},{s},{lat}\n" for o, s, lat in rows)


@given(_ROWS, st.floats(0.5, 13.0))
def test_only_failures_that_ended_after_the_stop_are_cut_off(
    rows: list[tuple[str, int, int]], stop_s: float
) -> None:
    log = parse_oplog(_log_text(rows))
    kept = cut_off(log, stop_s)
    late = sorted(
        (s, lat) for o, s, lat in rows if o.endswith("_ERROR") and s + lat >= stop_s * 1e6
    )
    # there when none was cut off: a stopped run's figures always count them
    assert sorted(zip(*(a.tolist() for a in kept[CUT_OFF]), strict=True)) == late
    for op, (starts, lat) in log.items():
        if not op.endswith("_ERROR"):  # what succeeded stays, whenever it ended
            assert np.array_equal(kept[op][0], starts) and np.array_equal(kept[op][1], lat)
            continue
        early = (starts + lat) < stop_s * 1e6
        if early.any():
            assert np.array_equal(kept[op][0], starts[early])
        else:
            assert op not in kept  # a kind with no failure left is no kind of failure


def test_a_stopped_runs_figures_count_what_it_cut_off_apart() -> None:
    # 4 threads, each with an operation in flight when the run was stopped at 3.0 s; one
    # of them had hung since 1.5 s (a request the cluster lost in a fault)
    rows = [("TOTAL", 1_000_000 + 1000 * i, 500) for i in range(1900)]
    rows += [("READ_ERROR", 2_999_000 + i, 1000 + 10 * i) for i in range(3)]
    rows += [("UPDATE_ERROR", 1_500_000, 1_500_000)]
    rows += [("READ_ERROR", 2_000_000, 300)]  # one that failed before the stop
    kept = cut_off(parse_oplog(_log_text(rows)), 3.0)
    figures = summarise(kept)
    assert figures["READ_ERROR"]["count"] == 1 and "UPDATE_ERROR" not in figures
    assert figures[CUT_OFF]["count"] == 4 and figures[CUT_OFF]["max_us"] == 1_500_000
    assert figures["TOTAL"]["count"] == 1900
    pis = window_pis(windows(kept, t0_s=0.0, at_s=1.2, until_s=2.0))
    assert (pis["errors_before"], pis["errors_during"], pis["errors_after"]) == (0, 0, 1)
    assert (pis["cut_off_before"], pis["cut_off_during"], pis["cut_off_after"]) == (0, 1, 3)
    # a run stopped with nothing in flight: none cut off, said as 0
    calm = summarise(cut_off(parse_oplog(_log_text(rows[:1900])), 3.0))
    assert calm[CUT_OFF]["count"] == 0


def test_the_warning_names_operations_that_hung_since_an_earlier_window() -> None:
    from assay.targets.base import RunResult
    from assay.targets.ycsb import failed_operations

    def said(pi: dict[str, float]) -> str:
        stopped = {"stopped_by_max_time": True}
        return failed_operations(RunResult("ycsb-etcd", "ycsb-a", pi=pi, report=stopped), "etcd")

    hung = {"errors": 0.0, "cut_off": 16.0, "cut_off_max_us": 5.3e6, "cut_off_before": 0.0,
            "cut_off_during": 6.0, "cut_off_after": 10.0}  # fmt: skip
    assert said(hung) == (
        "still in flight when --max-time stopped go-ycsb: 6 started during the window "
        "(the longest for 5.3 s)"
    )
    # what the last window had in flight at the stop is what any stop cuts off: nothing said
    assert said({**hung, "cut_off_during": 0.0}) == ""
    # --windows AT alone: 'during' runs to the end, so what it had in flight is no hang
    assert said({"errors": 0.0, "cut_off": 16.0, "cut_off_before": 0.0,
                 "cut_off_during": 16.0}) == ""  # fmt: skip
    failed = said({**hung, "errors": 3.0, "update_error_count": 3.0, "total_count": 97.0,
                   "errors_before": 0.0, "errors_during": 3.0, "errors_after": 0.0})  # fmt: skip
    assert failed.startswith("3 of 100 operations failed (update 3); by window: 0 before, 3 ")
    assert failed.endswith("; still in flight when --max-time stopped go-ycsb: 6 started "
                           "during the window (the longest for 5.3 s)")  # fmt: skip
