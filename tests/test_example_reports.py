"""Issue #16: a report of every study file in ``examples/``, from a small stored study.

The examples drive real systems (PostgreSQL, Redis, fio, SQLite) for minutes; here each
one runs through its own study loop with an executor that answers at once with
made-up readings (a smooth function of the setting plus 2% noise), so the stored study
has the example's exact study file, parameters, variants, tests and PIs.  The report of
that store must have every section and the design's plots, open in the browser without
a console error or a request, and name the example's own PIs.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Generator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from assay.execute.executor import Executor
from assay.execute.trial import Step, TrialJob, TrialRequest
from assay.spec import Spec, load_spec
from assay.store import TrialRecord
from assay.studies.base import study_kind
from test_report_html import PLOTS, Opened, _report, needs_browser

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("*.toml"))


def _level(setting: dict[str, Any]) -> float:
    """A reading level in [1, 3) that depends on every value of the setting, additively
    (so a sweep's ANOVA can explain it) and the same on every call."""
    total = 1.0
    for name, value in sorted(setting.items()):
        digest = hashlib.sha256(f"{name}={value}".encode()).digest()
        total += digest[0] / 255 * 2 / max(len(setting), 1)
    return total


class InstantExecutor(Executor):
    """Answers every trial at once with readings for each PI (and unit readings where
    the PI has units); setup, reset and teardown steps do nothing."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)
        self.clock = 1.7e9

    def start(self) -> None:
        pass

    def run_step(self, job: TrialJob, step: Step) -> None:
        pass

    def run_trials(
        self, job: TrialJob, requests: Sequence[TrialRequest]
    ) -> Generator[TrialRecord, None, None]:
        for request in requests:
            level = _level(request.setting)
            readings: dict[str, float] = {}
            units: dict[str, np.ndarray] = {}
            for i, pi in enumerate(job.pis):
                value = level * (1 + i) * (1 + 0.02 * self.rng.standard_normal())
                readings[pi.name] = float(value)
                if pi.units is not None:
                    units[pi.name] = value * (1 + 0.02 * self.rng.standard_normal(50))
            duration = readings[job.pis[0].name] if job.pis else 1.0
            if request.work is not None:  # t = alpha + w / v with v = 100 work per second
                duration = (0.05 + request.work / 100) * (1 + 0.02 * self.rng.standard_normal())
            self.clock += duration + 0.01
            yield TrialRecord(
                seq=request.seq,
                status="ok",
                run=request.run,
                setting=dict(request.setting),
                argv=list(request.argv),
                work=request.work,
                started=self.clock,
                duration=duration,
                exit_code=0,
                host="example-host",
                readings=readings,
                unit_readings=units,
                stdout=b"made-up readings for the report test\n",
            )


def _plots(spec: Spec) -> list[str]:
    """The plots the example's report must have (a work-per-second study: its fit)."""
    if spec.benchmark.work is not None:
        return ["work-fit"]
    return PLOTS[study_kind(spec)]


def _run_example(spec: Spec, store: Path) -> None:
    """The example's own study loop, its trials answered by :class:`InstantExecutor`."""
    kind = study_kind(spec)
    options: dict[str, Any] = {"executor": InstantExecutor(), "measure_overhead": False}
    if kind == "run":
        from assay.studies.run import Runner

        Runner(spec, store, **options).run()
    elif kind == "compare":
        from assay.studies.compare import CompareRunner

        CompareRunner(spec, store, **options).run()
    elif kind == "order":
        from assay.studies.order import OrderRunner

        OrderRunner(spec, store, runs=3, repetitions=2, **options).run()
    elif kind == "sweep":
        from assay.studies.sweep import SweepRunner

        SweepRunner(spec, store, **options).run()
    else:
        from assay.studies.knobs import KnobsRunner

        config = spec.knobs_config.model_copy(update={"samples": 40})
        KnobsRunner(spec, store, config, jobs=1, **options).run()


@pytest.fixture(scope="module")
def example_stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Spec]]:
    d = tmp_path_factory.mktemp("examples")
    out: dict[str, tuple[Path, Spec]] = {}
    for path in EXAMPLES:
        spec = load_spec(path)
        store = d / f"{path.stem}.assay.db"
        t0 = time.monotonic()
        _run_example(spec, store)
        assert time.monotonic() - t0 < 120, f"{path.name}: the made-up study did not end"
        out[path.stem] = (store, spec)
    return out


def test_every_example_is_covered() -> None:
    kinds = {study_kind(load_spec(p)) for p in EXAMPLES}
    # "scan" is a compare whose variants differ only in a parameter: no example is one
    assert len(EXAMPLES) >= 10 and kinds == set(PLOTS) - {"scan"}, kinds


@pytest.mark.parametrize("example", [p.stem for p in EXAMPLES])
def test_report_of_each_example(
    example_stores: dict[str, tuple[Path, Spec]], tmp_path: Path, example: str
) -> None:
    store, spec = example_stores[example]
    page = _report(store, tmp_path / f"{example}.html").read_text(encoding="utf-8")
    drawn = re.findall(r'<figure id="plot-([^"]+)"', page)
    assert set(_plots(spec)) <= set(drawn), (example, drawn)
    if study_kind(spec) == "sweep":  # the made-up levels give the sweep an important point
        assert "important-points" in drawn  # knobs may add its stability
        assert re.search(r"(turning|knee|step) at", page), example
    for pi in spec.pis:  # the example's own PIs are reported by name
        assert pi.name in page, pi.name
    assert spec.study.name in page


@needs_browser
@pytest.mark.parametrize("example", [p.stem for p in EXAMPLES])
def test_example_report_in_the_browser(
    browser: Any, example_stores: dict[str, tuple[Path, Spec]], tmp_path: Path, example: str
) -> None:
    store, spec = example_stores[example]
    html = _report(store, tmp_path / f"{example}.html")
    opened = Opened(browser, html, tmp_path / f"example-{example}.png")
    figures = opened.page.locator("figure svg")
    assert figures.count() >= len(_plots(spec))
    for i in range(figures.count()):
        box = figures.nth(i).bounding_box()
        assert box is not None and box["width"] > 200 and box["height"] > 100
    assert opened.errors == [] and opened.requests == [] and opened.dialogs == []
    opened.page.close()
