"""The bottleneck watch: pure summaries on known arrays, real trials, store, CLI."""

from __future__ import annotations

import itertools
import json
import math
import sqlite3
import sys
import threading
import time
from pathlib import Path

import numpy as np
import psutil
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from assay.cli import main
from assay.execute.command import run_command
from assay.execute.monitor import (
    BUDGET,
    INTERVAL_KEY,
    MONITOR_CPU_KEY,
    WATCH_COST_KEY,
    ResourceMonitor,
    ResourceSummary,
    Stat,
    bottleneck_warnings,
    choose_interval,
    resources_dict,
    rounds_summary,
    series_from_counters,
    summarize,
)
from assay.spec import SpecError, load_spec, parse_spec_text
from assay.store import Store
from assay.studies.run import Runner

BUSY = "import time\nt = time.perf_counter()\nwhile time.perf_counter() - t < {s}: pass"


def _summary(cpu: float = 10.0, memory: float = 10.0, disk: float = 0.0) -> ResourceSummary:
    stats = {
        "cpu": Stat(cpu, cpu),
        "cpu_mean": Stat(cpu / 2, cpu / 2),
        "memory": Stat(memory, memory),
        "disk": Stat(disk, disk),
        "network": Stat(math.nan, math.nan),
    }
    return ResourceSummary(5, 0.1, 0.5, 0.001, stats, 1024.0, 10.0, 20.0)


# ------------------------------------------------------------------ pure functions


def test_series_from_counters_known_arrays() -> None:
    s = series_from_counters(
        times=np.array([0.0, 0.5, 1.0]),
        cpu_busy=np.array([[0.0, 0.0], [0.5, 0.0], [0.75, 0.25]]),
        cpu_total=np.array([[0.0, 0.0], [0.5, 0.5], [1.0, 1.0]]),
        memory=np.array([10.0, 20.0, 30.0]),
        disk_bytes=np.array([[0.0], [100.0], [300.0]]),
        disk_busy_ms=np.array([[0.0], [250.0], [250.0]]),
        disk_names=["sda"],
        net_sent=np.array([[0.0], [1e6], [1e6]]),
        net_recv=np.array([[0.0], [0.0], [2.5e6]]),
        nic_names=["eth0"],
        nic_speeds_mbps=[100.0],
    )
    np.testing.assert_allclose(s["time_s"], [0.5, 1.0])
    np.testing.assert_allclose(s["cpu.0"], [100.0, 50.0])
    np.testing.assert_allclose(s["cpu.1"], [0.0, 50.0])
    np.testing.assert_allclose(s["memory"], [20.0, 30.0])
    np.testing.assert_allclose(s["disk.sda.bytes_per_s"], [200.0, 400.0])
    np.testing.assert_allclose(s["disk.sda.busy"], [50.0, 0.0])
    np.testing.assert_allclose(s["net.eth0.sent_per_s"], [2e6, 0.0])
    # 100 Mb/s = 12.5 MB/s; 2.5 MB in 0.5 s = 5 MB/s = 40%
    np.testing.assert_allclose(s["net.eth0.recv_util"], [0.0, 40.0])

    s[INTERVAL_KEY] = np.array([0.5])
    s[MONITOR_CPU_KEY] = np.array([0.004])
    r = summarize(s)
    assert r.samples == 2 and r.duration_s == 1.0 and r.interval_s == 0.5
    assert r.stats["cpu"].max == 100.0  # the busiest core in each sample
    assert r.stats["cpu"].p95 == pytest.approx(97.5)
    assert r.stats["cpu_mean"].max == 50.0
    assert r.stats["disk"].max == 50.0
    assert r.stats["network"].max == 40.0
    assert r.disk_bytes == pytest.approx(300.0)  # totals: rate x interval
    assert r.net_bytes_sent == pytest.approx(1e6)
    assert r.net_bytes_recv == pytest.approx(2.5e6)
    assert r.monitor_cpu_per_s == pytest.approx(0.004)
    assert math.isnan(r.watch_s)  # a store from before the watch timed its reads
    s[WATCH_COST_KEY] = np.array([0.002])
    r = summarize(s)
    assert r.watch_s == 0.002
    # its reads and its thread, (0.002 + 0.004) x 2 s over 12 s from trial to trial, the
    # unwatched trials included
    d = resources_dict([r, r], None, elapsed_s=12.0)
    assert d["watch_share"] == pytest.approx(0.001)
    assert resources_dict([r], None)["watch_share"] is None


def numpy_series(t, busy, total, memory, db, dbusy, disks, ns, nr, nics, speeds):  # type: ignore[no-untyped-def]
    """The NumPy arithmetic series_from_counters had before issue #17 (the reference)."""
    from assay.execute.monitor import MIN_CPU_WINDOW

    dt = np.diff(t)
    dt = np.where(dt > 0, dt, np.nan)
    out = {"time_s": t[1:] - t[0]}
    b, tt = np.diff(busy, axis=0), np.diff(total, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        pct = np.clip(100.0 * b / np.where(tt >= MIN_CPU_WINDOW, tt, np.nan), 0, 100)
    for i in range(pct.shape[1]):
        out[f"cpu.{i}"] = pct[:, i]
    out["memory"] = memory[1:]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        rate = np.diff(db, axis=0) / dt[:, None]
        bp = np.diff(dbusy, axis=0) / (10.0 * dt[:, None])
        sent = np.diff(ns, axis=0) / dt[:, None]
        recv = np.diff(nr, axis=0) / dt[:, None]
    for j, name in enumerate(disks):
        out[f"disk.{name}.bytes_per_s"] = np.maximum(rate[:, j], 0.0)
        out[f"disk.{name}.busy"] = np.clip(bp[:, j], 0.0, 100.0)
    for j, name in enumerate(nics):
        out[f"net.{name}.sent_per_s"] = np.maximum(sent[:, j], 0.0)
        out[f"net.{name}.recv_per_s"] = np.maximum(recv[:, j], 0.0)
        if speeds[j] > 0:
            cap = speeds[j] * 1e6 / 8.0
            out[f"net.{name}.sent_util"] = np.clip(100.0 * sent[:, j] / cap, 0.0, 100.0)
            out[f"net.{name}.recv_util"] = np.clip(100.0 * recv[:, j] / cap, 0.0, 100.0)
    return out


counter = st.one_of(st.floats(0, 1e12), st.just(math.nan))


@given(
    k=st.integers(1, 6),
    cores=st.integers(0, 3),
    disks=st.integers(0, 2),
    nics=st.integers(0, 2),
    data=st.data(),
)
def test_the_series_are_numpys_arithmetic_to_the_bit(
    k: int, cores: int, disks: int, nics: int, data: st.DataObject
) -> None:
    """Issue #17: the series are computed in plain Python (cheaper on a few reads with
    cold caches); they are what NumPy's arithmetic gave, NaNs (gone devices, clock
    ticks, times that did not advance) included, from lists or from arrays."""

    def table(width: int, values: st.SearchStrategy[float] = counter) -> list[list[float]]:
        return [data.draw(st.lists(values, min_size=width, max_size=width)) for _ in range(k)]

    t = data.draw(st.lists(st.floats(0, 1e3), min_size=k, max_size=k))
    cpu = st.floats(0, 1e4)
    busy, total = table(cores, cpu), table(cores, cpu)
    memory = data.draw(st.lists(st.floats(0, 100), min_size=k, max_size=k))
    db, dbusy, ns, nr = table(disks), table(disks), table(nics), table(nics)
    dnames, nnames = [f"d{j}" for j in range(disks)], [f"n{j}" for j in range(nics)]
    speeds = data.draw(st.lists(st.sampled_from([0.0, 100.0, 1e4]), max_size=nics))
    got = series_from_counters(t, busy, total, memory, db, dbusy, dnames, ns, nr, nnames, speeds)

    def arr(x: list[list[float]], width: int) -> np.ndarray:
        return np.asarray(x, dtype=float).reshape(k, width)

    arrays = series_from_counters(
        np.array(t), arr(busy, cores), arr(total, cores), np.array(memory), arr(db, disks),
        arr(dbusy, disks), dnames, arr(ns, nics), arr(nr, nics), nnames, speeds,
    )  # fmt: skip
    full = speeds + [0.0] * (nics - len(speeds))
    want = numpy_series(
        np.array(t), arr(busy, cores), arr(total, cores), np.array(memory, dtype=float),
        arr(db, disks), arr(dbusy, disks), dnames, arr(ns, nics), arr(nr, nics), nnames, full,
    )  # fmt: skip
    assert sorted(got) == sorted(want) == sorted(arrays)
    for key, ref in want.items():
        np.testing.assert_array_equal(got[key], ref, err_msg=key)
        np.testing.assert_array_equal(arrays[key], ref, err_msg=key)


def test_network_utilisation_unknown_without_link_speed() -> None:
    s = series_from_counters(
        np.array([0.0, 1.0]),
        np.zeros((2, 1)),
        np.array([[0.0], [1.0]]),
        np.array([5.0, 5.0]),
        net_sent=np.array([[0.0], [1e9]]),
        net_recv=np.array([[0.0], [0.0]]),
        nic_names=["veth"],
        nic_speeds_mbps=[0.0],
    )
    r = summarize(s)
    assert math.isnan(r.utilisation()["network"])
    assert r.net_bytes_sent == 1e9
    assert summarize({}).samples == 0


def test_rounds_summary_follows_elect() -> None:
    assert rounds_summary([]) == {"rounds": 0}
    assert rounds_summary([2.0, math.nan]) == {"rounds": 1, "value": 2.0}
    five = rounds_summary([1.0, 2.0, 3.0, 4.0, 5.0])
    assert five["mean"] == 3.0 and five["low"] < 3.0 < five["high"]


def test_warnings_name_the_component_over_80_percent() -> None:
    hot = [_summary(cpu=100.0), _summary(cpu=20.0)]
    (w,) = bottleneck_warnings(hot, under_test="disk")
    assert "cpu above 80%" in w and "1 of 2 trials" in w and "(disk)" in w
    assert bottleneck_warnings(hot, under_test="cpu") == []
    (w,) = bottleneck_warnings(hot, under_test=None)
    assert 'under_test = "cpu"' in w
    (w,) = bottleneck_warnings([_summary(memory=95.0)], under_test="cpu")
    assert w.startswith("bottleneck watch: memory above 80%")
    assert bottleneck_warnings([_summary()], under_test=None) == []
    d = resources_dict(hot, "disk")
    assert d["trials_over_threshold"]["cpu"] == 1
    assert d["cpu_busiest_core_p95_percent"] == {
        "rounds": 2,
        "mean": 60.0,
        "min": 20.0,
        "max": 100.0,
    }
    assert d["disk_bytes_total"] == 2048.0


def test_interval_respects_the_budget_given_a_fake_cost() -> None:
    for cost in (1e-5, 3e-4, 1e-3, 4e-3):
        interval = choose_interval(cost)
        assert cost / interval <= BUDGET + 1e-12
    assert choose_interval(1.0) == 1.0  # clamped: never slower than max_interval

    ticks = iter(np.arange(0, 100, 0.005))  # every clock read: +5 ms of CPU
    mon = ResourceMonitor(clock=lambda: float(next(ticks)))
    interval = mon.calibrate(reads=4)
    assert mon.cost_per_sample == pytest.approx(0.005 / 4)
    assert (mon.cost_per_sample or 0) / interval <= BUDGET


# ------------------------------------------------------------------ real sampling


def test_cpu_bound_trial_saturates_a_core() -> None:
    mon = ResourceMonitor()
    mon.start()
    res = run_command([sys.executable, "-c", BUSY.format(s=0.5)], timeout=30)
    got = mon.stop()
    assert res.status == "ok"
    assert got.summary.samples >= 2
    assert got.summary.stats["cpu"].max > 50.0
    assert got.summary.monitor_cpu_s >= 0.0
    assert got.series[INTERVAL_KEY][0] >= 0.05


def test_sleep_does_not_warn_about_cpu() -> None:
    # a sleep uses no CPU: a busy CPU during it is other processes' (the CI's own
    # neighbours), and the warning must say so rather than blame the benchmark; no
    # assertion may rest on how busy the machine was (#36)
    from assay.execute.monitor import others_cores

    mon = ResourceMonitor()
    mon.start()
    res = run_command(["sleep", "0.4"], timeout=30)
    got = mon.stop()
    own = (res.cpu_user or 0.0) + (res.cpu_system or 0.0)
    others = others_cores(got.summary, own)
    warned = [w for w in bottleneck_warnings([got.summary], None, others=[others]) if "cpu" in w]
    if others < 0.05:  # quiet during the sleep (measured in the same window, not assumed)
        assert not warned
    elif others >= 0.5:  # busy: the warning says whose CPU it was
        assert all("busy with them" in w for w in warned), warned


# ------------------------------------------------------------------ spec, store, runner

STUDY = """
[study]
name = "watch"
[benchmark]
command = ["{py}", "-c", "{code}"]
{extra}
[stop]
max_rounds = 3
min_samples = 2
ci_width = 5
"""


def _study(write_study, py: str, extra: str = "", code: str = BUSY.format(s=0.3)) -> Path:  # type: ignore[no-untyped-def]
    return write_study(STUDY.format(py=py, code=code.replace("\n", "\\n"), extra=extra))


def test_under_test_validated_with_a_clear_error() -> None:
    bad = '[study]\nname = "x"\n[benchmark]\ncommand = ["true"]\nunder_test = "gpu"\n'
    with pytest.raises(SpecError, match=r"x.toml: invalid study file:\n  benchmark.under_test"):
        parse_spec_text(bad, source="x.toml")
    good = parse_spec_text(bad.replace("gpu", "disk"), source="x.toml")
    plain = parse_spec_text(bad.replace('under_test = "gpu"\n', ""), source="x.toml")
    assert good.benchmark.under_test == "disk" and plain.benchmark.under_test is None
    # declaring the component under test does not change what the study measures
    assert good.measurement_hash() == plain.measurement_hash()


def test_runner_warns_and_stores_samples_with_the_trial(write_study, py: str) -> None:  # type: ignore[no-untyped-def]
    spec = load_spec(_study(write_study, py, 'under_test = "disk"'))
    res = Runner(spec, spec.store_path(), measure_overhead=False).run()
    # (on a busy machine the others' share is named instead: see test_interference.py)
    assert any(
        w.startswith("bottleneck watch: cpu above 80%") and ("(disk)" in w or "busy with them" in w)
        for w in res.warnings
    )
    assert res.as_dict()["resources"]["under_test"] == "disk"
    with Store(spec.store_path()) as st:
        found = st.find_study("watch")
        assert found is not None
        trials = st.trials(found[0])
    # the first trial of a kind is always watched; later ones as the watch's 1% budget
    # allows, which a busy neighbour (a costlier watch) can make fewer than all
    watched = [t for t in trials if t.resources]
    assert trials and trials[0] in watched
    assert all("cpu.0" in t.resources and "time_s" in t.resources for t in watched)
    sampled = sum(1 for t in watched if len(t.resources["time_s"]) > 0)
    assert res.resources is not None and res.resources["trials"] == sampled >= 1
    assert summarize(trials[0].resources).stats["cpu"].max > 50
    db = sqlite3.connect(spec.store_path())
    # one row set per trial, keyed by trial id: committed with the trial
    (orphans,) = db.execute(
        "SELECT COUNT(*) FROM resource_samples WHERE trial_id NOT IN (SELECT id FROM trials)"
    ).fetchone()
    assert orphans == 0


def test_old_store_without_the_table_keeps_opening(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with Store(path) as st:
        sid = st.open_study("s", "h", {})
    db = sqlite3.connect(path)
    db.execute("DROP TABLE resource_samples")
    db.commit()
    db.close()
    with Store(path) as st:
        assert st.trials(sid) == []


def test_cli_no_monitor_and_json_resources(write_study, py: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = _study(write_study, py, code="pass")
    out = tmp_path / "r.json"
    r = CliRunner().invoke(main, ["run", str(path), "--no-overhead", "-q", "--json", str(out)])
    assert r.exit_code in (0, 5), r.output  # 5: the budget before the CI target
    watched = json.loads(out.read_text())["resources"]
    # a trial of `python -c pass` may be under 40 ms: then some go unwatched
    assert watched["trials"] >= 1
    assert watched["trials"] + watched["trials_not_watched"] == 3
    assert "resources, p95 per trial" in r.output
    r = CliRunner().invoke(
        main,
        ["run", str(path), "--fresh", "--no-overhead", "--no-monitor", "-q", "--json", str(out)],
    )
    assert r.exit_code in (0, 5), r.output  # 5: the budget before the CI target
    assert json.loads(out.read_text())["resources"] is None
    assert "bottleneck watch" not in r.output
    with Store(load_spec(path).store_path()) as st:
        found = st.find_study("watch")
        assert found is not None
        assert all(t.resources == {} for t in st.trials(found[0]))


def test_compare_reports_resources_by_variant(tmp_path: Path, py: str) -> None:
    out = tmp_path / "c.json"
    args = ["compare", "--store", str(tmp_path / "c.db"), "--max-rounds", "3", "--min-samples"]
    args += ["2", "--no-overhead", "-q", "--under-test", "cpu", "--json", str(out)]
    args += ["--", py, "-c", "pass", "--", py, "-c", "pass;pass"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code in (0, 5), r.output  # 5: the budget before the CI target
    res = json.loads(out.read_text())["resources"]
    assert set(res) == {f"{py} -c pass", f"{py} -c 'pass;pass'"}
    assert all(v["under_test"] == "cpu" for v in res.values())


def test_one_sampling_thread_serves_every_trial() -> None:
    """Issue #17: the watch's thread lives across trials (a thread per trial cost ~2.5 ms
    of Assay's own time each); a trial's in-thread samples come at least one interval
    after its start, and none is taken between trials."""
    import threading
    import time

    before = {t.ident for t in threading.enumerate()}
    m = ResourceMonitor(interval=0.02)
    try:
        for _ in range(5):
            m.start()
            t0 = time.monotonic()
            time.sleep(0.07)
            series = m.stop().series
            assert series["memory"].size >= 2  # in-thread samples were taken
        new = [t for t in threading.enumerate() if t.ident not in before]
        assert [t.name for t in new] == ["assay-monitor"]
        m.start()
        t0 = time.monotonic()
        m.stop()
        reads = m._reads.times  # first read, maybe in-thread samples, last read
        assert all(t - t0 >= 0.02 - 1e-3 for t in reads[1:-1])
        count = len(m._reads.times)
        time.sleep(0.08)  # between trials: the thread takes no sample
        assert len(m._reads.times) == count
    finally:
        m.close()
    assert not any(t.ident not in before and t.is_alive() for t in threading.enumerate())


def test_the_first_read_is_the_threads_unless_a_trial_ends_before_it() -> None:
    """Issue #17: start() leaves a trial's first read to the sampling thread (out of
    Assay's time between trials). A trial over before the thread took it has stop()
    take it; from then on start() reads."""
    m = ResourceMonitor(interval=1.0)
    try:
        m.start()
        assert not m._reads.times
        time.sleep(0.05)
        assert len(m._reads.times) == 1  # the thread's
        assert m.stop().series["memory"].size == 1 and m._first_in_thread
        m.start()  # the thread waited for a sample due 1 s after the last trial's start:
        time.sleep(0.05)  # the new trial wakes it
        assert len(m._reads.times) == 1
        m.stop()
    finally:
        m.close()
    slow = ResourceMonitor(interval=1.0)
    slow._thread = threading.current_thread()  # as if its thread never got to run
    slow.start()
    assert slow.stop().series["memory"].size == 1 and not slow._first_in_thread
    slow.start()
    assert len(slow._reads.times) == 1  # start() read
    assert slow.stop().series["memory"].size == 1


def test_an_idle_sampling_thread_ends_and_comes_back(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading
    import time

    import assay.execute.monitor as monitor_mod

    monkeypatch.setattr(monitor_mod, "IDLE_EXIT_S", 0.1)
    m = ResourceMonitor(interval=0.02)
    m.start()
    first = m._thread
    m.stop()
    assert first is not None
    first.join(5)
    assert not first.is_alive() and m._thread is None  # ended on its own, unclosed
    m.start()
    time.sleep(0.05)
    assert m._thread is not None and m._thread is not first and m.stop().series
    m.close()
    assert not any(t is first or t is m._thread for t in threading.enumerate())


@pytest.mark.skipif(not Path("/proc/stat").exists(), reason="Linux /proc only")
def test_reads_from_proc_are_psutils_numbers() -> None:
    """Issue #17: the watch reads /proc itself (a tenth of psutil's cost), with psutil's
    arithmetic: each cumulative counter lies between two psutil reads taken around it,
    and memory % is psutil's."""
    from assay.execute.monitor import _proc_counters, _psutil_counters

    m = ResourceMonitor(interval=1.0)
    before = _psutil_counters(m.disks, m.nics)
    got = _proc_counters(m.disks, m.nics)
    after = _psutil_counters(m.disks, m.nics)
    assert got is not None
    for i in (0, 1, 3, 4, 5, 6):  # cpu total, cpu busy, disk bytes/busy, net sent/recv
        assert len(got[i]) == len(before[i])
        for lo, x, hi in zip(before[i], got[i], after[i], strict=True):
            if math.isnan(lo):
                continue
            assert lo - 1e-6 <= x <= hi + 1e-6, (i, lo, x, hi)
    assert min(before[2], after[2]) - 0.5 <= got[2] <= max(before[2], after[2]) + 0.5


def test_without_proc_the_watch_reads_through_psutil(monkeypatch: pytest.MonkeyPatch) -> None:
    import assay.execute.monitor as monitor_mod

    def missing(path: str) -> bytes:
        raise FileNotFoundError(path)

    monkeypatch.setattr(monitor_mod, "read_bytes", missing)
    m = ResourceMonitor(interval=1.0)
    monkeypatch.setattr(m._files, "read", missing)  # the watch's own, kept open
    m.start()
    time.sleep(0.05)  # (the sampling thread takes the first read)
    series = m.stop().series
    assert not m._from_proc
    assert series["memory"].size == 1 and 0 < series["memory"][0] <= 100
    assert sum(1 for k in series if k.startswith("cpu.")) == psutil.cpu_count()


@given(
    st.lists(
        st.one_of(
            st.floats(min_value=-1e6, max_value=1e6),
            st.sampled_from([math.nan, math.inf, -math.inf]),
        ),
        max_size=40,
    )
)
def test_stat_is_numpys_p95_and_max_of_the_finite_values(values: list[float]) -> None:
    """Stat.of interpolates by hand (issue #17: np.percentile cost ~40 µs a series):
    the same p95 as NumPy's default method, and NaN when nothing is finite."""
    got = Stat.of(np.array(values, dtype=float))
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        assert math.isnan(got.p95) and math.isnan(got.max)
        return
    assert got.p95 == pytest.approx(float(np.percentile(finite, 95)), rel=1e-12, abs=1e-9)
    assert got.max == max(finite)
    assert min(finite) <= got.p95 <= got.max


def test_a_window_of_a_few_clock_ticks_gives_no_cpu_share() -> None:
    """Issue #17: /proc/stat counts 10 ms ticks, so the reads around a trial of a few ms
    gave a core 0% or 100%: under MIN_CPU_WINDOW of a core's time it is not measured."""
    from assay.execute.monitor import MIN_CPU_WINDOW

    s = series_from_counters(
        times=np.array([0.0, 0.005, 0.105]),
        cpu_busy=np.array([[0.0, 0.0], [0.01, 0.0], [0.06, 0.01]]),
        cpu_total=np.array([[0.0, 0.0], [0.01, 0.01], [0.11, 0.11]]),
        memory=np.array([10.0, 10.0, 10.0]),
    )
    assert MIN_CPU_WINDOW > 0.01
    assert math.isnan(s["cpu.0"][0]) and math.isnan(s["cpu.1"][0])  # one tick: 100% or 0%
    assert s["cpu.0"][1] == pytest.approx(50.0) and s["cpu.1"][1] == pytest.approx(10.0)
    r = summarize(s)
    assert r.stats["cpu"].max == pytest.approx(50.0)  # the measurable window only


def test_a_no_op_study_gets_no_cpu_share_from_tick_noise(tmp_path: Path) -> None:
    """Runs of `true` got a busy share in 1 trial in 4 and warned of a CPU bottleneck
    (above 80% in about 1 trial in 8): tick noise."""
    out = tmp_path / "r.json"
    res = CliRunner().invoke(
        main,
        ["run", "-q", "--no-overhead", "-r", "60", "--min-samples", "60", "--ci-width",
         "0.0001", "--store", str(tmp_path / "r.db"), "--json", str(out), "--", "true"],
    )  # fmt: skip
    data = json.loads(out.read_text())
    watched = data["resources"]["trials"]
    assert watched + data["resources"]["trials_not_watched"] == 60, res.output
    # (a `true` delayed 40 ms by a loaded machine is measured: a few at most; ~15 before)
    assert data["resources"]["cpu_busiest_core_p95_percent"]["rounds"] <= min(5, watched)


def test_a_paced_watch_skips_trials_to_keep_its_cost_in_budget() -> None:
    """Issue #17: the watch's start and stop cost about as much as Assay's whole
    bookkeeping between trials: ``paced``, a trial is watched once the time since the
    last watched one is 1/budget times that one's watch cost; long trials all are."""
    m = ResourceMonitor(interval=1.0, paced=True, budget=0.01)
    try:
        watched = 0
        for _ in range(40):
            m.start()
            got = m.stop()  # a trial of no time at all
            watched += bool(got.series)
        assert 1 <= watched < 40  # the first one, then one now and then
        for _ in range(300):  # a short trial is watched again after a while
            time.sleep(0.01)
            m.start()
            if m.stop().series:
                break
        else:
            raise AssertionError("no short trial watched in 3 s")
        m.start()
        time.sleep(0.2)  # a long trial: watched, or, if it started within the skip
        m.stop()  # of the last watched short one, the next one is
        for _ in range(3):
            m.start()
            time.sleep(0.2)  # long trials (200x a watch's ~1 ms): every one watched
            assert m.stop().series
        # interleaved kinds (a comparison's variants) are paced each on its own, so a
        # pace cannot alias with the alternation and leave one kind unwatched
        seen = {"a": 0, "b": 0}
        for i in range(400):
            kind = "ab"[i % 2]
            m.start(kind)
            time.sleep(0.002)
            seen[kind] += bool(m.stop().series)
        assert seen["a"] >= 2 and seen["b"] >= 2, seen
        # a sweep's settings one after the other: a setting's repetitions are not held
        # back by settings no longer run (trials of 0.1 s: 100x a watch's ~1 ms)
        # (how many of its repetitions are watched depends on the watch's cost on this
        # machine, its sampling thread's included: at least its first)
        watched_reps = [0] * 6
        for setting in range(6):
            for _ in range(3):
                m.start(f"setting {setting}")
                time.sleep(0.1)
                watched_reps[setting] += bool(m.stop().series)
        assert all(n >= 1 for n in watched_reps), watched_reps
        every = ResourceMonitor(interval=1.0, budget=0.01)  # the default: every trial
        for _ in range(5):
            every.start()
            assert every.stop().series
        every.close()
    finally:
        m.close()


def test_the_mean_over_cores_leaves_out_a_core_without_a_share() -> None:
    """Near 40 ms one core may count a 10 ms tick less and have no share: the mean over
    cores was then NaN ("CPU n/a (busiest core 50%)"); it is the mean of the others."""
    s = series_from_counters(
        times=np.array([0.0, 0.04]),
        cpu_busy=np.array([[0.0, 0.0], [0.02, 0.0]]),
        cpu_total=np.array([[0.0, 0.0], [0.04, 0.03]]),
        memory=np.array([10.0, 10.0]),
    )
    assert math.isnan(s["cpu.1"][0])
    r = summarize(s)
    assert r.stats["cpu_mean"].p95 == pytest.approx(50.0)
    assert r.stats["cpu"].p95 == pytest.approx(50.0)


def test_a_paced_watch_counts_its_sampling_threads_cpu_in_its_cost() -> None:
    """Issue #44: the watch cost 1-5% of a busy machine's time against its 1% budget:
    the pace counted only the reads around a trial, not the sampling thread's CPU during
    it, which the report counts.  A thread that (by this fake clock) spends 0.5 s per
    sample holds the next trials of the kind back for 0.5 / 1% = 50 s at least."""
    ticks = itertools.count()
    m = ResourceMonitor(interval=0.005, paced=True, budget=0.01, clock=lambda: 0.5 * next(ticks))
    m._first_in_thread = False  # the first read in start(): only the thread's are "costly"
    try:
        watched = 0
        for _ in range(30):
            m.start()
            time.sleep(0.03)
            watched += bool(m.stop().series)
        assert watched == 1
    finally:
        m.close()


def test_a_paced_watch_keeps_its_whole_cost_within_budget_of_the_time_since_the_first_trial() -> (
    None
):
    """Issue #44: paced per kind by its recent costs, the watch still took 1.0-1.2% of a
    busy machine's time against its 1% budget (its first, costlier watches).  By this
    fake clock the first watch's sampling thread spends 2 s: no trial of its kind is
    watched again before 2 s / 1% = 200 s, whatever the later watches cost; a new kind's
    first trial still is."""
    m = ResourceMonitor(interval=0.005, paced=True, budget=0.01, clock=lambda: 0.0)
    m._first_in_thread = False
    try:
        m.start("a")
        time.sleep(0.03)
        m._thread_cpu = 2.0  # as if its thread had spent 2 s
        assert m.stop().series
        m._skip_until["a"] = 0.0  # as if its recent costs were nothing
        watched = 0
        for _ in range(5):
            m.start("a")
            time.sleep(0.01)
            watched += bool(m.stop().series)
        assert watched == 0
        m.start("b")
        assert m.stop().series  # the first of its kind
    finally:
        m.close()
