"""Issue #20: ``assay order --from`` reads OrderSage's results file as OrderSage writes it:
run numbers that restart for each kind of order (and each host), failed trials counted
and left out, hosts as a reported factor.  Each OrderSage fixture is checked against the
same trials converted by hand to the long format: the analysis must be the same."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from assay.cli import main
from assay.importers.order import OrderDataError, read_order_file, read_trials_csv
from assay.stats.order import analyse_order

HEADER = (
    "run_uuid,hostname,run_num,total_runs,exp_command,exp_number,order_number,order_type,"
    "time_start,time_stop,completion_status,result\n"
)

# 3 fixed-order and 3 random-order runs of two tests on one host, numbered 0-2 for each
# kind as OrderSage numbers them; run 1 (fixed) lost its b.sh trial (exit status != 0,
# its result a placeholder that is not a number)
ORDERSAGE = HEADER + (
    "u0,node1,0,3,bash a.sh,0,0,fixed,0.01,0.02,Success,10.1\n"
    "u0,node1,0,3,bash b.sh,1,1,fixed,0.02,0.03,Success,20.6\n"
    "u1,node1,1,3,bash a.sh,0,0,fixed,0.01,0.02,Success,10.4\n"
    "u1,node1,1,3,bash b.sh,1,1,fixed,0.02,0.03,Failure,failed\n"
    "u2,node1,2,3,bash a.sh,0,0,fixed,0.01,0.02,Success,9.9\n"
    "u2,node1,2,3,bash b.sh,1,1,fixed,0.02,0.03,Success,20.9\n"
    "u3,node1,0,3,bash b.sh,1,0,random,0.01,0.02,Success,19.7\n"
    "u3,node1,0,3,bash a.sh,0,1,random,0.02,0.03,Success,10.8\n"
    "u4,node1,1,3,bash a.sh,0,0,random,0.01,0.02,Success,10.2\n"
    "u4,node1,1,3,bash b.sh,1,1,random,0.02,0.03,Success,20.1\n"
    "u5,node1,2,3,bash b.sh,1,0,random,0.01,0.02,Success,19.5\n"
    "u5,node1,2,3,bash a.sh,0,1,random,0.02,0.03,Success,10.9\n"
)
# the same trials by hand in the long format: the failed one left out
LONG = (
    "test,order,run,position,value\n"
    "bash a.sh,fixed,f0,0,10.1\n"
    "bash b.sh,fixed,f0,1,20.6\n"
    "bash a.sh,fixed,f1,0,10.4\n"
    "bash a.sh,fixed,f2,0,9.9\n"
    "bash b.sh,fixed,f2,1,20.9\n"
    "bash b.sh,random,r0,0,19.7\n"
    "bash a.sh,random,r0,1,10.8\n"
    "bash a.sh,random,r1,0,10.2\n"
    "bash b.sh,random,r1,1,20.1\n"
    "bash b.sh,random,r2,0,19.5\n"
    "bash a.sh,random,r2,1,10.9\n"
)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def _same_analysis(a_table: pd.DataFrame, b_table: pd.DataFrame) -> None:
    a, b = analyse_order(a_table), analyse_order(b_table)
    assert a.verdict() == b.verdict() and a.pooled_line() == b.pooled_line()
    assert (a.flagged, a.pooled_flagged, a.tested) == (b.flagged, b.pooled_flagged, b.tested)
    for x, y in zip(a.results, b.results, strict=True):
        assert x.test == y.test and x.note == y.note
        assert x.comparison == y.comparison and x.per_run == y.per_run
        assert x.drift_random == y.drift_random and x.drift_fixed == y.drift_fixed
        assert x.p_value == pytest.approx(y.p_value) and x.pooled_p == pytest.approx(y.pooled_p)


def test_ordersage_file_is_analysed_as_its_hand_converted_long_format(tmp_path: Path) -> None:
    read = read_order_file(_write(tmp_path, "os.csv", ORDERSAGE))
    long = read_trials_csv(_write(tmp_path, "long.csv", LONG))
    assert read.source_format == "ordersage"
    assert read.failed == {"bash b.sh": 1} and read.statuses == {"Failure": 1}
    assert len(read.table) == len(long) == 11
    # the runs restart at 0 for each kind: six runs, not three mixing both kinds
    a = analyse_order(read.table)
    per_run = [r.per_run for r in a.results]
    assert [(p.n_fixed, p.n_random) for p in per_run if p] == [(3, 3), (2, 3)]
    _same_analysis(read.table.drop(columns=["host"]), long)


def test_newer_ordersage_columns_and_baseline_spelling(tmp_path: Path) -> None:
    """Later OrderSage versions write test_command/test_number and number the runs of both
    kinds 0..2N-1; 'baseline' is the paper's word for the fixed order."""
    newer = (
        ORDERSAGE.replace("exp_command,exp_number", "test_command,test_number")
        .replace(",fixed,", ",baseline,")
        .replace("u3,node1,0,", "u3,node1,3,")
        .replace("u4,node1,1,", "u4,node1,4,")
        .replace("u5,node1,2,", "u5,node1,5,")
    )
    read = read_order_file(_write(tmp_path, "new.csv", newer))
    _same_analysis(read.table, read_trials_csv(_write(tmp_path, "long.csv", LONG)))


def test_the_long_format_with_an_extra_run_num_column_stays_the_long_format(
    tmp_path: Path,
) -> None:
    text = LONG.replace("value\n", "value,run_num\n", 1).replace("\n", ",7\n")
    text = text.replace("value,run_num,7\n", "value,run_num\n")
    read = read_order_file(_write(tmp_path, "l.csv", text))
    assert read.source_format == "long" and len(read.table) == 11


def test_a_test_without_command_is_named_by_its_number(tmp_path: Path) -> None:
    text = ORDERSAGE.replace(",bash a.sh,0,", ",,0,")
    table = read_order_file(_write(tmp_path, "n.csv", text)).table
    assert sorted(set(table["test"])) == ["0", "bash b.sh"]


def test_cli_reads_ordersage_reports_failed_trials_and_matches_long_json(tmp_path: Path) -> None:
    os_path, long_path = _write(tmp_path, "os.csv", ORDERSAGE), _write(tmp_path, "l.csv", LONG)
    res = CliRunner().invoke(main, ["order", "--from", str(os_path), "--json", "-"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout[res.stdout.index("{") :])
    assert doc["trials"]["by_status"] == {"ok": 11, "failed": 1}
    assert doc["trials"]["total"] == 12
    assert any(
        w.startswith("1 failed trial not analysed (completion_status: Failure 1; by test: "
                     "bash b.sh 1)")
        for w in doc["warnings"]
    )  # fmt: skip
    again = CliRunner().invoke(main, ["order", "--from", str(long_path), "--json", "-"])
    ref = json.loads(again.stdout[again.stdout.index("{") :])
    assert doc["tests"] == ref["tests"] and doc["verdict"] == ref["verdict"]
    shown = CliRunner().invoke(main, ["order", "--from", str(os_path)])
    assert "11 trials (1 failed, not analysed)" in shown.output
    assert "(OrderSage results)" in doc["reason"]


BAD = [
    (ORDERSAGE.replace(",fixed,0.01", ",sorted,0.01", 1), "line 2: column 'order_type': expected"),
    (ORDERSAGE.replace("Success,10.1", "Success,fast"), "line 2: column 'result': expected"),
    (ORDERSAGE.replace(",0,fixed,0.01", ",x,fixed,0.01", 1), "line 2: column 'order_number'"),
    (ORDERSAGE.replace("u1,node1,1,", "u1,node1,0,"), "run '0' (fixed on node1) already has"),
    (HEADER.replace(",result", ",value"), "missing column 'result'"),
    (HEADER.replace("exp_command,exp_number", "cmd,num"), "missing column 'exp_command'"),
    (HEADER + "u,h,0,1,a,0,0,fixed,0,0,Failure,x\n", "no successful trials: all 1 trials failed"),
    (
        HEADER + "u,h,0,1,a,0,0,fixed,0,0,Success,1\nu,h,0,1,a,0,0,random,0,0,Failure,x\n",
        "no random-order trials that succeeded",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("text", "message"), BAD)
def test_bad_ordersage_file_is_one_clear_error(tmp_path: Path, text: str, message: str) -> None:
    p = _write(tmp_path, "bad.csv", text)
    with pytest.raises(OrderDataError) as info:
        read_order_file(p)
    assert str(info.value).startswith(f"{p}: ") and message in str(info.value)
    res = CliRunner().invoke(main, ["order", "--from", str(p)])
    assert res.exit_code == 2 and message in res.output


# --- hosts -----------------------------------------------------------------------------


def ordersage_hosts(
    hosts: dict[str, float], runs: int = 5, seed: int = 0, tests: int = 3
) -> pd.DataFrame:
    """An OrderSage results table: each host runs ``runs`` fixed-order and ``runs``
    random-order runs of every test once, numbered from 0 per host and kind; a host's
    readings are multiplied by its factor.  No order effect."""
    rng = np.random.default_rng(seed)
    rows = []
    for host, factor in hosts.items():
        for kind in ("fixed", "random"):
            for run in range(runs):
                order = list(range(tests)) if kind == "fixed" else list(rng.permutation(tests))
                for pos, k in enumerate(order):
                    value = (10.0 + 5 * k + rng.normal(0, 0.3)) * factor
                    rows.append(
                        (f"{host}-{kind}-{run}", host, run, runs, f"t{k}.sh", k, pos, kind,
                         0.0, 0.0, "Success", round(value, 4))
                    )  # fmt: skip
    return pd.DataFrame(rows, columns=HEADER.strip().split(","))


def _by_hand(os_table: pd.DataFrame) -> pd.DataFrame:
    """The reference conversion: successful rows, a run per (host, kind, run_num)."""
    ok = os_table[os_table["completion_status"] == "Success"]
    return pd.DataFrame(
        {
            "test": ok["exp_command"],
            "order": ok["order_type"],
            "run": ok["hostname"] + ":" + ok["order_type"] + ":" + ok["run_num"].astype(str),
            "position": ok["order_number"],
            "value": ok["result"].astype(float),
            "host": ok["hostname"],
        }
    ).reset_index(drop=True)


def test_a_host_that_stands_out_is_named(tmp_path: Path) -> None:
    table = ordersage_hosts({"node1": 1.0, "node2": 1.0, "node3": 1.1, "node4": 1.0})
    p = tmp_path / "hosts.csv"
    table.to_csv(p, index=False)
    read = read_order_file(p)
    _same_analysis(read.table, _by_hand(table))
    a = analyse_order(read.table)
    assert not a.order_matters  # each host ran both kinds alike: no order effect
    assert len(a.hosts) == 3 and all(h.significant for h in a.hosts)
    assert {h.standout for h in a.hosts} == {"node3"}
    assert a.host_threshold == pytest.approx(0.05 / 3)
    h = a.hosts[0]
    assert h.effect.hosts == ("node1", "node2", "node3", "node4") and h.effect.n == (10,) * 4
    lines = a.host_lines()
    assert len(lines) == 3 and lines[0].startswith("host node3 stands out: the hosts differ")
    res = CliRunner().invoke(main, ["order", "--from", str(p), "--json", str(tmp_path / "h.json")])
    assert res.exit_code == 0 and "host node3 stands out" in res.output
    doc = json.loads((tmp_path / "h.json").read_text())
    assert [h["standout"] for h in doc["hosts"]] == ["node3"] * 3
    assert doc["hosts"][0]["runs"] == [10, 10, 10, 10]


def test_alike_hosts_agree_and_one_host_is_no_factor(tmp_path: Path) -> None:
    alike = analyse_order(_by_hand(ordersage_hosts({"a": 1.0, "b": 1.0}, seed=2)))
    assert alike.hosts and not any(h.significant for h in alike.hosts)
    assert alike.host_lines()[0].startswith("the 2 hosts agree for every test")
    # two hosts that differ: neither is singled out, both medians are given
    two = analyse_order(_by_hand(ordersage_hosts({"a": 1.0, "b": 1.2}, seed=2)))
    assert all(h.significant and h.standout is None for h in two.hosts)
    assert "the hosts differ for test t0.sh" in two.host_lines()[0]
    one = analyse_order(_by_hand(ordersage_hosts({"a": 1.0}, seed=2)))
    assert one.hosts == [] and one.host_lines() == []
