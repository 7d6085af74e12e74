"""``interference = "wait"`` (#36): trials held while other processes use the CPU,
on a simulated clock and /proc/stat (no timing in any assertion)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from click.testing import CliRunner

from assay.cli import main
from assay.execute import interference
from assay.execute.interference import QuietGate, machine_busy_s
from assay.report.terminal import interference_line
from assay.spec import StopSpec


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
    assert 'interference = "wait" held 1 trial until others used < 0.5 core (3.2 s' in line


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
