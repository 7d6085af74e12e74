"""`assay run` on commands shorter than its analysis: analyses at a pace, the same
decisions (issue #17)."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import numpy as np
import pytest

import assay.studies.run as run_study
from assay.spec import load_spec
from assay.store import TrialRecord
from assay.studies.run import Runner, Tally

QUICK = """
[study]
name = "quick"
[benchmark]
command = ["true"]
[stop]
ci_width = {width}
max_rounds = {rounds}
"""


def _slow_analyses(monkeypatch: pytest.MonkeyPatch, seconds: float) -> list[int]:
    """Every analysis of a study takes ``seconds`` more; the list gets each one's
    round count."""
    real = run_study.analyse
    calls: list[int] = []

    def slow(spec, trials, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(len(trials))
        time.sleep(seconds)
        return real(spec, trials, *args, **kwargs)

    monkeypatch.setattr(run_study, "analyse", slow)
    return calls


def test_a_run_of_quick_commands_analyses_at_a_pace_and_stops_on_its_budget(
    write_study,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An analysis 20 ms longer than a trial of `true`: after the second one (the
    first holds imports) the next waits for 80 ms of commands; the budget still ends
    the study at its last round, and the stored decision is the loop's."""
    calls = _slow_analyses(monkeypatch, 0.02)
    spec = load_spec(write_study(QUICK.format(width=1e-9, rounds=40)))
    res = Runner(spec, spec.store_path(), measure_overhead=False, monitor=False).run()
    assert res.trials_total == 40
    assert res.decision.reason == "budget spent: 40 rounds (max_rounds)"
    # rounds 0 and 2 (round 1 cannot end the study: next_look), the budget's end (its
    # decision and run()'s result), a few between
    assert calls[:2] == [0, 2]
    assert calls[-2:] == [40, 40]
    assert len(calls) < 12, calls
    stored = Runner(spec, spec.store_path(), measure_overhead=False).stored()
    assert stored.decision == res.decision


def _counted_study(
    py: str, counter: Path, name: str, reading: str, stop: str, setup: str = "pass"
) -> str:
    """A study whose command prints ``value=`` ``reading``: Python on ``count``, the
    trials before it (kept in ``counter``), after the statement ``setup``, so that every
    test run reads the same sequence; ``stop`` is its ``[stop]`` table's lines."""
    return f"""
[study]
name = "{name}"
[benchmark]
command = ["{py}", "-c", '''
import os, random, sys
count = int(open(sys.argv[1]).read()) if os.path.exists(sys.argv[1]) else 0
open(sys.argv[1], "w").write(str(count + 1))
{setup}
print("value=" + {reading})
''', "{counter}"]
[[pi]]
name = "v"
source = "regex"
pattern = 'value=([0-9.]+)'
[stop]
{stop}
"""


def test_a_paced_run_confirms_its_target_on_the_round_before(
    write_study,  # type: ignore[no-untyped-def]
    py: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A target met at an analysis whose round before was not analysed is confirmed
    on that round (replayed): the study stops as one analysed after every round would,
    by its target, and says so again from the store."""
    calls = _slow_analyses(monkeypatch, 0.02)
    # readings, not wall times: a VM's no-op drifts, and the level check may then
    # (rightly) end the study instead (seen once in CI)
    text = _counted_study(
        py,
        tmp_path / "count",
        "periodic",
        '("1.0", "1.01", "1.01", "1.0")[count % 4]',
        "ci_width = 5.0\nmax_rounds = 2000",
    )
    spec = load_spec(write_study(text))
    res = Runner(spec, spec.store_path(), measure_overhead=False, monitor=False).run()
    assert res.decision.reason == "target reached: every CI is within the requested width"
    n = res.trials_total
    assert n >= spec.stop.min_rounds + 1
    assert n - 1 in calls and calls.count(n - 1) == 1  # the replay: the round before, once
    assert len(calls) < n, calls  # rounds went unanalysed
    stored = Runner(spec, spec.store_path(), measure_overhead=False).stored()
    assert stored.decision == res.decision


def _trial(seq: int, status: str, duration: float, units: int | None) -> TrialRecord:
    got = {} if units is None else {"op": np.ones(units)}
    return TrialRecord(seq=seq, status=status, duration=duration, unit_readings=got)


def test_a_tally_is_the_sums_over_its_trials(tmp_path: Path) -> None:
    trials = [
        _trial(0, "ok", 0.5, 10),
        _trial(1, "failed", 0.25, None),
        _trial(2, "ok", 1.0, 30),
        _trial(3, "timeout", 2.0, None),
        _trial(4, "ok", 0.125, None),  # no unit readings in this one
    ]
    tally = Tally.of(trials)
    assert (tally.rounds, tally.failed) == (5, 2)
    assert tally.elapsed == sum(t.duration or 0.0 for t in trials)
    assert tally.ok_elapsed == 1.625
    assert tally.units == {"op": 40}
    study = tmp_path / "s.toml"
    study.write_text(
        '[study]\nname = "u"\n[benchmark]\ncommand = ["true"]\n[[pi]]\nname = "op"\n'
        'source = "regex"\npattern = "t=(.*)"\nunits = { source = "regex", pattern = "o=(.*)" }\n'
    )
    assert tally.raw_per_round(load_spec(study)) == {"op": 40 / 3}
    assert Tally().raw_per_round(load_spec(study)) == {}


def test_a_run_stops_on_the_round_an_analysis_after_every_round_would(
    write_study,  # type: ignore[no-untyped-def]
    py: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue #17: after an analysis that does not meet the target, the next
    ``confirm_rounds - 1`` rounds cannot end the study (it needs that many met rounds
    in a row), so they go unanalysed, and are analysed only when the next look meets
    the target: the study stops on the same round as Pilot's analysis after every
    round, with fewer analyses."""
    from assay.store import Store
    from assay.studies.base import open_stored
    from assay.studies.run import analyse, decide_trials

    calls = _slow_analyses(monkeypatch, 0.0)
    text = _counted_study(
        py,
        tmp_path / "count",
        "noisy",
        'f"{1.0 + 0.05 * random.gauss(0, 1):.6f}"',
        "ci_width = 0.025\nmax_rounds = 200",
        setup="random.seed(count)",  # the k-th trial's reading is the same in every run
    )
    spec = load_spec(write_study(text))
    res = Runner(spec, spec.store_path(), measure_overhead=False, monitor=False).run()
    assert res.decision.reason == "target reached: every CI is within the requested width"
    n = res.trials_total
    with Store(spec.store_path(), read_only=True) as store:
        trials = open_stored(store, spec.study.name).trials
    streak, first = 0, None
    for k in range(n + 1):  # Pilot's loop: an analysis after every round
        d = decide_trials(spec, trials[:k], analyse(spec, trials[:k]), streak)
        if d.done:
            first = k
            break
        streak = streak + 1 if d.target_met else 0
    assert first == n > spec.stop.min_rounds
    loop = calls[:-1]  # (the last is run()'s result)
    assert len(loop) < n * 0.75, loop  # about every other round


def test_the_live_line_keeps_the_last_known_width_and_ends_with_the_verdict() -> None:
    """Issue #35: no ``±∞`` between analyses, a time left that does not jump past the
    budget, and a last line that agrees with the verdict."""
    import io
    from types import SimpleNamespace as NS

    from rich.console import Console

    from assay.report.compare import CompareProgressView
    from assay.report.terminal import ProgressView
    from assay.spec import StopSpec

    out = io.StringIO()
    stop = StopSpec(max_time=60.0)
    view = ProgressView(Console(file=out, width=200), 0.05, stop)
    running = NS(done=False, rounds_left=10**6, reason="running")
    lines = []
    for rounds, width in ((10, 0.08), (11, float("inf"))):
        r = NS(name="t", relative_half_width=width)
        view.last_plain = -1e9  # (off a terminal a line every 10 s: each one here)
        view.update(NS(rounds=rounds, failed=0, elapsed=30.0, results=[r],
                       decision=running, mean_round_s=1.0))  # fmt: skip
        lines.append(out.getvalue())
    assert "t ±8.0% (round 10)" in lines[1] and "±∞" not in lines[1]
    assert "(~30.0 s)" in lines[1]  # a million rounds left, but 30 s of budget
    done = NS(done=True, rounds_left=None, reason="budget spent: 12 rounds (max_rounds)")
    view.update(NS(rounds=12, failed=0, elapsed=40.0, results=[], decision=done,
                   mean_round_s=1.0))  # fmt: skip
    assert out.getvalue().rstrip().endswith("budget spent: 12 rounds (max_rounds)")

    out = io.StringIO()
    cview = CompareProgressView(Console(file=out, width=200), stop)
    ranking = NS(order=["a", "b"], variants={}, undecided=[])
    comp = NS(ranking=ranking, statistic="mean", direction="lower")
    undecided = NS(done=True, rounds_left=None, reason="budget spent: 1 pair undecided")
    cview.update(NS(cycles=5, trials=10, failed=0, elapsed=1.0, comparison=comp,
                    decision=undecided, mean_cycle_s=0.1))  # fmt: skip
    assert "budget spent: 1 pair undecided" in out.getvalue()
    assert "decided" not in out.getvalue().replace("undecided", "")


def test_the_live_lines_rounds_and_time_left_are_one_estimate() -> None:
    """#60: '~583 rounds left (~44.3 s)' then '~1580 rounds left (~39.8 s)' read as
    broken: the rounds shown are those the time left holds, and a target beyond the
    budget is said as such."""
    from assay.report.terminal import TimeLeft, rounds_left_text

    left = TimeLeft(max_time=60.0)
    shown = []
    for elapsed, need in ((10.0, 583), (20.2, 1580), (25.0, 900)):
        per_round = 0.1
        eta = left.update(need * per_round, elapsed=elapsed)
        text = rounds_left_text(need, eta, per_round, left.budget_s(elapsed))
        shown.append((int(text.split("~")[1].split()[0]), eta))
        if need * per_round > left.budget_s(elapsed):
            assert f"the target needs ~{need}" in text
    # the rounds shown follow the time shown: both fall, or both rise
    for (r0, t0), (r1, t1) in itertools.pairwise(shown):
        assert (r1 - r0) * (t1 - t0) >= 0
