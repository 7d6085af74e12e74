"""Issue #62 part 2: the live lines of sweeps and knob studies say the time left."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from assay.report import terminal
from assay.report.knobs import KnobsProgressView
from assay.report.sweep import SweepProgressView
from assay.report.terminal import TrialPace
from assay.studies.knobs import KnobsProgress
from assay.studies.sweep import SweepProgress


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(terminal.time, "monotonic", c)
    return c


def test_the_pace_counts_trials_across_batches(clock: Clock) -> None:
    pace = TrialPace()
    pace.update(1)  # the first finish starts the clock
    assert pace.per_trial() is None and pace.seconds(10) is None
    clock.now += 4.0
    pace.update(3)  # two more in 4 s
    assert pace.per_trial() == pytest.approx(2.0)
    clock.now += 4.0
    pace.update(2)  # a new batch: its count starts again at 0
    assert pace.per_trial() == pytest.approx(2.0)  # 4 trials in 8 s
    assert pace.seconds(5) == pytest.approx(10.0)
    pace.update(2)  # no new trial: no change
    assert pace.per_trial() == pytest.approx(2.0)


def lines(view: SweepProgressView | KnobsProgressView) -> list[str]:
    said: list[str] = []
    view.show = lambda line, final=False: said.append(line)  # type: ignore[method-assign]
    return said


def test_a_sweeps_line_says_the_batch_and_the_most_left(clock: Clock) -> None:
    view = SweepProgressView(Console(file=io.StringIO()))
    said = lines(view)
    view.update(SweepProgress([], 315, 1, 48, trials_left_max=900))
    assert "left" not in said[-1]
    clock.now += 10.0
    view.update(SweepProgress([], 315, 11, 48, trials_left_max=890))  # 1 s a trial
    assert "trial 11/48 of this batch, ~37.0 s left in it" in said[-1]
    assert "(at most ~14 min 50 s to the end of the space)" in said[-1]


def test_a_knob_studys_line_says_the_time_left(clock: Clock) -> None:
    view = KnobsProgressView(Console(file=io.StringIO()))
    said = lines(view)
    view.update(KnobsProgress("samples", 1, 40, measuring=True))
    clock.now += 6.0
    view.update(KnobsProgress("samples", 4, 40, measuring=True))  # 2 s a trial
    assert said[-1] == "measuring samples: 4/40 · ~1 min 12 s left"
