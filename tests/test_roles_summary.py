"""ELECT's cluster summary (assay.stats.cluster_summary) against a hand computation, its
properties, and the report's reading of stored host samples."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.report.summary import cluster_block
from assay.stats.cluster_summary import HostSeries, by_role, cluster_summary, common_grid
from assay.store import HostRun, TrialRecord
from assay.studies.cluster import cluster_report, host_series

GB = 1e9


def _hosts() -> list[HostSeries]:
    # host a: 2 cores, sampled every 0.5 s from t=100.0; host b: 4 cores, every 1 s from 100.2
    a = HostSeries(
        "server", "a", 100.0, np.array([0.5, 1.0, 1.5, 2.0]), np.array([0.5, 1.0, 1.5, 2.0]), 2,
        np.array([1.0, 2.0, 3.0, 4.0]) * GB, 5.0, 1.0,
    )  # fmt: skip
    b = HostSeries(
        "client", "b", 100.2, np.array([1.0, 2.0]), np.array([1.0, 3.0]), 4,
        np.array([10.0, 20.0]) * GB, 7.0, 2.0,
    )  # fmt: skip
    return [a, b]


def test_the_summary_matches_a_hand_computation() -> None:
    # common window: from 100.2 (b's first read) to 102.0 (a's last sample); every 0.5 s:
    # 100.7, 101.2, 101.7.  a's busy cores there: 1.0, 1.5, 2.0 (the samples ending at
    # 101.0, 101.5, 102.0); b's: 1.0, 1.0, 3.0.  Summed: 2.0, 2.5, 5.0 of 6 cores.
    s = cluster_summary(_hosts(), step=0.5)
    assert s.samples == 3 and s.hosts == 2 and s.cores == 6
    # p95 of (33.3, 41.7, 83.3)%, linear interpolation: 41.7 + 0.9 * (83.3 - 41.7)
    assert s.cpu_p95_percent == pytest.approx((2.5 + 0.9 * 2.5) / 6 * 100)
    # memory summed: 1+10, ... -> 12, 13, 24 GB; p95 = 13 + 0.9 * 11
    assert s.memory_p95_bytes == pytest.approx((13 + 0.9 * 11) * GB)
    assert (s.disk_bytes, s.network_bytes) == (12.0, 3.0)


def test_the_default_step_is_the_coarsest_hosts_interval() -> None:
    grid = common_grid(_hosts())
    assert grid.tolist() == pytest.approx([101.2])  # one 1 s step fits in 100.2 .. 102.0
    s = cluster_summary(_hosts())
    assert s.cpu_p95_percent == pytest.approx(2.5 / 6 * 100)  # a: 1.5, b: 1.0 at 101.2


def test_per_role_and_all_use_one_step() -> None:
    everyone, roles = by_role(_hosts())
    assert list(roles) == ["server", "client"]
    # the step of all hosts (1 s), over each group's own window
    assert roles["server"].cores == 2 and roles["server"].samples == 2  # 101.0, 102.0
    assert roles["server"].cpu_p95_percent == pytest.approx((1.0 + 0.95 * 1.0) / 2 * 100)
    # b alone at 101.2 and 102.2: 1 and 3 of 4 cores
    assert roles["client"].cpu_p95_percent == pytest.approx((1.0 + 0.95 * 2.0) / 4 * 100)
    assert everyone.samples == 1


def test_hosts_that_never_overlap_give_no_timestamp() -> None:
    a, b = _hosts()
    late = HostSeries("client", "b", 200.0, b.time_s, b.busy_cores, 4, b.memory_bytes, 0, 0)
    s = cluster_summary([a, late])
    assert s.samples == 0 and math.isnan(s.cpu_p95_percent) and math.isnan(s.memory_p95_bytes)


_samples = st.lists(st.floats(0.0, 1.0), min_size=1, max_size=30)


@settings(max_examples=60, deadline=None)
@given(_samples, st.integers(1, 64), st.floats(-1e6, 1e6))
def test_one_host_on_its_own_clock_is_the_p95_of_its_samples(
    fractions: list[float], cores: int, start: float
) -> None:
    n = len(fractions)
    busy = np.array(fractions) * cores
    h = HostSeries("r", "h", start, np.arange(1, n + 1) * 0.5, busy, cores, busy, 0.0, 0.0)
    s = cluster_summary([h], step=0.5)
    assert s.samples == n
    assert s.cpu_p95_percent == pytest.approx(np.percentile(busy / cores * 100, 95), abs=1e-6)


@settings(max_examples=60, deadline=None)
@given(_samples, _samples, st.floats(-1e5, 1e5))
def test_the_summary_is_bounded_and_does_not_depend_on_the_epoch(
    fa: list[float], fb: list[float], shift: float
) -> None:
    def host(name: str, f: list[float], start: float, cores: int) -> HostSeries:
        t = np.arange(1, len(f) + 1) * 0.25
        return HostSeries("r", name, start, t, np.array(f) * cores, cores, np.ones(len(f)), 1, 1)

    hosts = [host("a", fa, 1000.0, 2), host("b", fb, 1000.1, 8)]
    moved = [host("a", fa, 1000.0 + shift, 2), host("b", fb, 1000.1 + shift, 8)]
    s, m = cluster_summary(hosts), cluster_summary(moved)
    assert s.samples == m.samples
    if s.samples:
        assert 0.0 <= s.cpu_p95_percent <= 100.0 + 1e-9
        assert s.cpu_p95_percent == pytest.approx(m.cpu_p95_percent, abs=1e-6)
        assert s.memory_p95_bytes == pytest.approx(2.0)  # both hosts' 1 byte, every time


def _run(
    role: str, host: str, start: float, cpu: list[list[float]], mem_pct: list[float]
) -> HostRun:
    n = len(mem_pct)
    series = {"time_s": np.arange(1, n + 1) * 1.0, "memory": np.array(mem_pct)}
    series |= {f"cpu.{i}": np.array(c) for i, c in enumerate(cpu)}
    series |= {"disk.sda.bytes_per_s": np.full(n, 100.0), "disk.sda.busy": np.full(n, 90.0)}
    info = {"cpu_count": len(cpu), "memory_bytes": 8 * GB}
    return HostRun("trial", role, host, 0, "ok", started=start, info=info, resources=series)


def test_stored_samples_become_busy_cores_and_bytes() -> None:
    h = host_series(_run("server", "s", 50.0, [[100.0, 50.0], [0.0, 50.0]], [25.0, 50.0]))
    assert h.busy_cores.tolist() == [1.0, 1.0] and h.cores == 2
    assert h.memory_bytes.tolist() == [2 * GB, 4 * GB]
    assert h.disk_bytes == pytest.approx(200.0)  # 100 B/s for 2 s
    assert h.ends.tolist() == [51.0, 52.0]


def test_the_report_names_the_host_and_component_and_summarises_by_role() -> None:
    trials = [
        TrialRecord(
            seq=i,
            status="ok",
            host_runs=[
                _run("server", "10.0.0.2", 10.0 * i, [[20.0, 20.0]], [10.0, 10.0]),
                _run("client", "10.0.0.7", 10.0 * i, [[5.0, 5.0]], [10.0, 10.0]),
            ],
        )
        for i in range(3)
    ]
    warnings, doc = cluster_report(trials, under_test="cpu")
    # the disks are 90% busy on both hosts: one warning each, naming host and component
    assert len(warnings) == 2
    assert "host 10.0.0.2 (server[0]): bottleneck watch: disk above 80%" in warnings[0]
    assert "host 10.0.0.7 (client[0])" in warnings[1]
    assert doc["trials"] == 3 and set(doc["roles"]) == {"server", "client"}
    # all hosts: (0.2 + 0.05) busy cores of 2 -> 12.5% at every timestamp, in each trial
    assert doc["all"]["cpu_p95_percent"]["mean"] == pytest.approx(12.5)
    assert doc["roles"]["server"]["cpu_p95_percent"]["mean"] == pytest.approx(20.0)
    assert doc["all"]["memory_p95_bytes"]["mean"] == pytest.approx(1.6 * GB)
    assert doc["all"]["disk_bytes_total"] == pytest.approx(3 * 2 * 200.0)
    text = cluster_block(doc)
    assert text[0] == "[Cluster resource usage] all hosts (2 hosts, 2 cores)"
    assert "[Cluster resource usage] role server (1 hosts, 1 cores)" in text
