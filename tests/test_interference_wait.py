"""``interference = "wait"`` (#36): trials held while other processes use the CPU,
on a simulated clock and /proc/stat (no timing in any assertion)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
from click.testing import CliRunner

from assay.cli import main
from assay.execute import interference
from assay.execute.interference import MAX_REPEATS, QuietGate, machine_busy_s
from assay.report.terminal import interference_line
from assay.spec import StopSpec
from assay.store import DISTURBED, Store, TrialRecord


@dataclass
class Machine:
    """A clock, the machine's busy CPU seconds and ours: others busy until ``noisy_until``."""

    now: float = 100.0
    busy: float = 0.0
    own: float = 0.0
    others_cores: float = 2.0
    noisy_until: float = 0.0

    def sleep(self, dt: float) -> None:
        self.run(dt, own_cores=0.0)

    def run(self, dt: float, own_cores: float) -> None:
        """``dt`` seconds pass with Assay (and its trials) using ``own_cores``."""
        noisy = min(max(self.noisy_until - self.now, 0.0), dt)
        self.busy += own_cores * dt + self.others_cores * noisy
        self.own += own_cores * dt
        self.now += dt


@pytest.fixture
def machine(monkeypatch: pytest.MonkeyPatch) -> Machine:
    m = Machine()
    monkeypatch.setattr(interference, "machine_busy_s", lambda: m.busy)
    monkeypatch.setattr(interference, "own_cpu_s", lambda: m.own)
    monkeypatch.setattr(interference.time, "monotonic", lambda: m.now)
    monkeypatch.setattr(interference.time, "sleep", m.sleep)
    return m


def test_a_quiet_machine_never_waits(machine: Machine) -> None:
    gate = QuietGate()
    for _ in range(50):
        assert gate.before_trial() == 0.0
        machine.run(0.05, own_cores=1.0)  # the trial's own CPU is not the others'
    assert gate.summary() is None


def test_others_busy_hold_the_next_trial_until_they_have_left(machine: Machine) -> None:
    gate = QuietGate(threshold_cores=0.5, settle_s=0.3)
    gate.before_trial()
    machine.noisy_until = machine.now + 2.0
    machine.run(0.2, own_cores=1.0)  # a trial while two busy loops run
    waited = gate.before_trial()
    # held until the loops ended (1.8 s later) and the machine stayed quiet for 0.3 s
    assert waited == pytest.approx(1.8 + 0.3, abs=0.11)
    assert machine.now >= machine.noisy_until + 0.3
    s = gate.summary()
    assert s is not None and s["waits"] == 1 and s["gave_up"] == 0


def test_the_wait_is_bounded_and_says_it_gave_up(machine: Machine) -> None:
    gate = QuietGate(max_wait_s=5.0)
    gate.before_trial()
    machine.noisy_until = machine.now + 1e6  # never quiet
    machine.run(0.2, own_cores=0.0)
    waited = gate.before_trial()
    assert waited == pytest.approx(5.0, abs=0.11)
    s = gate.summary()
    assert s is not None and s["gave_up"] == 1


def test_short_trials_are_judged_over_a_window_long_enough_for_the_ticks(
    machine: Machine,
) -> None:
    gate = QuietGate()
    gate.before_trial()
    machine.noisy_until = machine.now + 0.05
    machine.run(0.01, own_cores=1.0)  # 10 ms: too short to judge; nothing waits yet
    assert gate.before_trial() == 0.0
    machine.run(0.1, own_cores=1.0)  # the window (0.11 s) saw 0.9 core of others
    assert gate.before_trial() > 0.0


def test_no_proc_stat_means_no_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(interference, "machine_busy_s", lambda: None)
    gate = QuietGate(threshold_cores=0.0)
    assert gate.before_trial() == 0.0 and gate.before_trial() == 0.0
    assert machine_busy_s("/nonexistent") is None


def test_proc_stat_busy_is_total_less_idle_and_iowait(tmp_path) -> None:  # type: ignore[no-untyped-def]
    stat = tmp_path / "stat"
    # user nice system idle iowait irq softirq steal guest guest_nice
    stat.write_text("cpu  100 0 50 800 50 0 0 0 30 0\ncpu0 1 2 3 4\n")
    assert machine_busy_s(str(stat)) == pytest.approx(150 / interference._TICK)


def test_the_report_says_what_the_wait_did() -> None:
    line = interference_line(
        {
            "trials": 10, "disturbed": 1, "threshold_cores": 0.5, "median_cores": 0.0,
            "max_cores": 2.0,
            "waits": {"waits": 1, "waited_s": 3.2, "gave_up": 0, "threshold_cores": 0.5},
        }
    )  # fmt: skip
    assert "interference: " in line and "; held 1 trial until others used < 0.5 core (3.2 s" in line


def test_the_policy_is_a_stop_setting_and_a_cli_option(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    assert StopSpec().interference == "warn"
    assert StopSpec(interference="wait").interference == "wait"
    with pytest.raises(ValueError, match="interference"):
        StopSpec(interference="pause")  # type: ignore[arg-type]
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    looks: list[float] = []
    monkeypatch.setattr(QuietGate, "before_trial", lambda self: looks.append(1.0) or 0.0)
    for policy, expected in (("warn", 0), ("wait", 3)):
        looks.clear()
        res = CliRunner().invoke(
            main,
            ["run", "--runs", "3", "--no-overhead", "--no-monitor", "-q", "--fresh",
             "--interference", policy, "--", "true"],
        )  # fmt: skip
        assert res.exit_code in (0, 5), res.output
        assert len(looks) == expected  # the gate looks before every trial, with "wait"
    bad = CliRunner().invoke(main, ["run", "--interference", "pause", "--", "true"])
    assert bad.exit_code == 2


# interference = "repeat" ------------------------------------------------------------


def test_a_disturbed_trial_is_set_aside_and_a_short_or_quiet_one_is_not(machine: Machine) -> None:
    gate = QuietGate(threshold_cores=0.5)
    ok = TrialRecord(seq=4, status="ok")
    start = gate.mark()
    machine.noisy_until = machine.now + 10.0
    machine.run(0.05, own_cores=1.0)  # 50 ms: too short for the ticks to tell
    assert not gate.repeat_if_disturbed(ok, start, 0) and ok.status == "ok"
    machine.run(0.2, own_cores=1.0)  # 0.25 s with two busy loops: disturbed
    assert gate.repeat_if_disturbed(ok, start, 0)
    assert ok.status == DISTURBED and ok.seq < 0 and "measured again" in ok.error
    failed = TrialRecord(seq=5, status="failed")  # a failure is data, never repeated
    assert not gate.repeat_if_disturbed(failed, start, 0) and failed.seq == 5
    machine.noisy_until = machine.now
    quiet, start = TrialRecord(seq=6, status="ok"), gate.mark()
    machine.run(0.3, own_cores=1.0)  # only the trial's own core
    assert not gate.repeat_if_disturbed(quiet, start, 0) and quiet.status == "ok"


def test_repeats_are_bounded_and_the_last_disturbed_trial_is_kept(machine: Machine) -> None:
    gate = QuietGate()
    machine.noisy_until = machine.now + 1e6
    outcomes = []
    for attempt in range(MAX_REPEATS + 1):
        rec, start = TrialRecord(seq=1, status="ok"), gate.mark()
        machine.run(0.2, own_cores=1.0)
        outcomes.append(gate.repeat_if_disturbed(rec, start, attempt))
    assert outcomes == [True] * MAX_REPEATS + [False] and rec.status == "ok"
    s = gate.summary()
    assert s is not None and s["repeated"] == MAX_REPEATS and s["kept_disturbed"] == 1


def test_repeat_measures_a_disturbed_trial_again_and_keeps_it_aside(  # type: ignore[no-untyped-def]
    tmp_path, monkeypatch
) -> None:
    """`assay run --runs 3 --interference repeat`: the first trial disturbed twice is
    measured three times; the store keeps the two disturbed ones (status "disturbed"),
    the analysis has exactly three trials, and the report says what was repeated."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(QuietGate, "before_trial", lambda self: 0.0)
    seen = iter([2.0, 1.5])  # the others' cores during the first two trials, then none
    monkeypatch.setattr(interference, "others_between", lambda a, b: next(seen, 0.0))
    store = tmp_path / "s.db"
    res = CliRunner().invoke(
        main,
        ["run", "--runs", "3", "--no-overhead", "--json", "-", "--store", str(store),
         "--interference", "repeat", "--", "sleep", "0.12"],
    )  # fmt: skip
    assert res.exit_code in (0, 5), res.output
    out = json.loads(res.stdout)
    assert out["trials"]["by_status"] == {"ok": 3}
    assert out["samples"][0]["seqs"] == [0, 1, 2]
    waits = out["resources"]["interference"]["waits"]
    assert waits["repeated"] == 2 and waits["kept_disturbed"] == 0
    assert "measured 2 disturbed trials again (set aside, not analysed)" in res.stderr
    with Store(store, read_only=True) as db:
        ((sid, _),) = [(o.id, o.name) for o in db.overview()]
        kept = db.trials(sid)
        every = db.trials(sid, disturbed=True)
    assert [t.status for t in kept] == ["ok"] * 3 and [t.seq for t in kept] == [0, 1, 2]
    aside = [t for t in every if t.status == DISTURBED]
    assert len(aside) == 2 and all(t.seq < 0 and t.duration for t in aside)
    assert "other processes used 2.0 cores" in min(aside, key=lambda t: t.started or 0).error


def test_repeat_is_a_stop_setting_and_the_report_says_what_it_did() -> None:
    assert StopSpec(interference="repeat").interference == "repeat"
    line = interference_line(
        {"waits": {"waits": 0, "waited_s": 0.0, "gave_up": 0, "threshold_cores": 0.5,
                   "repeated": 2, "kept_disturbed": 0}}
    )  # fmt: skip
    assert line == ("interference: measured 2 disturbed trials again (set aside, not analysed)")


def test_a_dask_worker_repeats_a_disturbed_trial_too(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The worker's block (run_block, here outside Dask) sets aside and repeats as the
    local executor does: the disturbed trial first, then its repeat under the same seq."""
    from assay.execute.dask_executor import run_block
    from assay.execute.trial import TrialJob, TrialRequest

    monkeypatch.setattr(QuietGate, "before_trial", lambda self: 0.0)
    seen = iter([1.8])
    monkeypatch.setattr(interference, "others_between", lambda a, b: next(seen, 0.0))
    job = TrialJob(pis=(), timeout=10.0, quiet_wait=True, repeat_disturbed=True)
    block = run_block(job, [TrialRequest(seq=0, argv=["sleep", "0.12"])], False)
    assert [t.status for t in block.records] == [DISTURBED, "ok"]
    assert block.records[0].seq < 0 and block.records[1].seq == 0


def test_sweep_takes_the_policy_on_its_command_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """`assay sweep STUDY --interference repeat` (the README's advice) reaches [stop]."""
    from assay.cli.sweep import _overrides
    from assay.spec import load_spec

    study = tmp_path / "s.toml"
    study.write_text(
        '[study]\nname = "s"\n[benchmark]\ncommand = ["sleep", "{t}"]\n'
        "[sweep]\nparams = { t = [0.01, 0.02] }\n"
    )
    opts = dict.fromkeys(
        ("sampler", "start", "step", "r2", "model", "max_settings", "max_time", "seed",
         "repetitions", "log")
    )  # fmt: skip
    spec = _overrides(load_spec(study), {**opts, "interference": "repeat"})
    assert spec.stop.interference == "repeat"
    res = CliRunner().invoke(
        main, ["sweep", "--from", str(study), "--metric", "x", "--interference", "wait"]
    )
    assert res.exit_code == 2 and "not with --from" in res.output
