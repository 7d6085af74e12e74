"""The executor of sweeps and knob studies: settings × repetitions, stored, resumable."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pandas as pd

from assay.spec import parse_spec_data
from assay.store import Store
from assay.studies.settings import (
    SettingsRunner,
    SettingsSession,
    pending_trials,
    setting_means,
    trials_table,
)

SCRIPT = (
    "import sys; a, b = int(sys.argv[1]), sys.argv[2]; "
    "print(f'y={a * (2 if b == \"x\" else 3)}'); sys.exit(7 if a == 5 else 0)"
)


def _spec(tmp_path: Path):  # type: ignore[no-untyped-def]
    return parse_spec_data(
        {
            "study": {"name": "settings", "store": str(tmp_path / "s.assay.db")},
            "benchmark": {"command": [sys.executable, "-c", SCRIPT, "{a}", "{b}"]},
            "params": {"a": 1, "b": "x"},
            "pi": [{"name": "y", "source": "regex", "pattern": r"y=(\d+)"}],
        },
        str(tmp_path / "study.toml"),
    )


def test_measures_each_setting_and_resumes_without_repeating(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    settings = [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}, {"a": 5, "b": "x"}]

    def first(s: SettingsSession) -> int:
        return len(s.measure(settings[:2], 2))

    runner = SettingsRunner(spec, spec.store_path(), seed=3, monitor=False)
    assert runner.session(first) == 4

    def second(s: SettingsSession) -> pd.DataFrame:
        s.measure(settings, 2)
        return trials_table(s.trials, ["a", "b"], spec.pis)

    table = SettingsRunner(spec, spec.store_path(), seed=3, monitor=False).session(second)
    # only the new setting ran in the second session: 6 trials in all, none repeated
    assert len(table) == 6
    assert not table.duplicated(["a", "b", "repetition"]).any()
    with Store(spec.store_path()) as store:
        found = store.find_study("settings")
        assert found is not None
        assert len(store.trials(found[0])) == 6
    means = setting_means(table, ["a", "b"], "y").set_index(["a", "b"])["y"]
    assert means.to_dict() == {(1, "x"): 2.0, (2, "y"): 6.0}  # a = 5 failed: no mean
    failed = table[table["a"] == 5]
    assert list(failed["status"]) == ["failed", "failed"]
    assert all(math.isnan(v) for v in failed["y"])


def test_deadline_stops_launching(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    runner = SettingsRunner(spec, spec.store_path(), monitor=False)
    got = runner.session(lambda s: s.measure([{"a": 1, "b": "x"}], 3, deadline=0.0))
    assert got == []


def test_pending_trials_treat_equal_numbers_as_one_setting() -> None:
    import numpy as np

    assert pending_trials([{"a": np.int64(4)}], 1, [{"a": 4.0, "repetition": 0}]) == []


def test_a_resumed_batch_runs_its_missing_trials_in_the_uninterrupted_order(
    tmp_path: Path,
) -> None:
    """Issue #13 kill campaign: the missing trials of a resumed batch were reshuffled with
    a seed drawn from the progress made, so on a drifting system a resumed sweep measured
    other settings at each moment than an uninterrupted one and its analysis differed."""
    settings = [{"a": a, "b": b} for a in (1, 2, 3) for b in ("x", "y")]

    def order(store_dir: Path, stop_after: int | None) -> list[tuple[int, str, int]]:
        spec = _spec(store_dir)

        def body(s: SettingsSession) -> None:
            def maybe_stop(p: object) -> None:
                if stop_after is not None and getattr(p, "done", 0) >= stop_after:
                    raise KeyboardInterrupt  # as a Ctrl-C between two trials

            s.measure(settings, 2, on_progress=maybe_stop)

        runner = SettingsRunner(spec, spec.store_path(), seed=3, monitor=False)
        try:
            runner.session(body)
        except KeyboardInterrupt:
            SettingsRunner(spec, spec.store_path(), seed=3, monitor=False).session(
                lambda s: s.measure(settings, 2)
            )
        with Store(spec.store_path()) as store:
            found = store.find_study("settings")
            assert found is not None
            trials = sorted(store.trials(found[0]), key=lambda t: t.seq)
        return [(t.setting["a"], t.setting["b"], t.setting["repetition"]) for t in trials]

    uninterrupted = order(tmp_path / "a", None)
    assert len(uninterrupted) == 12
    for k in (1, 5, 11):
        assert order(tmp_path / f"k{k}", k) == uninterrupted
