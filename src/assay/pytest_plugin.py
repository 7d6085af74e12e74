"""pytest plugin: the ``assay_benchmark`` fixture measures a function until its CI is
as narrow as asked, stores the result and can fail the session on a regression.

::

    def test_sort(assay_benchmark):
        assay_benchmark(sorted, list(range(1000, 0, -1)))

Each call measures ``fn(*args, **kwargs)`` with :func:`assay.measure` (in process, the
time per call until the CI's relative half-width is ``--assay-ci-width``, within
``--assay-max-time`` seconds) and stores the result in ``--assay-store`` (default
``.assay/pytest.db`` under the rootdir), one study per test (named by its node id), one
session per pytest run.  At the end a table shows each test's mean ± CI, the samples
and the ratio to the test's reference run.  ``--assay-compare`` holds every test
against its reference run with Assay's regression gate: the last stored run that passed
its gate (a run that failed it, or that it could not judge, never becomes the
reference, so running slow code again fails again), or the run ``--assay-reference
REF`` pins (a name given with ``--assay-save NAME``, a run's number, a date, a git
commit or branch); with ``--assay-fail-if-worse 5%`` a test slower by more than 5% with
the CI's confidence fails the session (exit status 1).  ``--assay-disable`` calls each
function once, untimed (a plain test).
A test may set its own targets with a marker, which win over the options::

    @pytest.mark.assay(ci_width="2%", max_time=30, fail_if_worse="10%")
    def test_parse(assay_benchmark): ...

(``fail_if_worse`` is that test's gate when the session compares: ``--assay-compare``
or ``--assay-fail-if-worse``).
Under pytest-xdist workers nothing is timed: parallel tests disturb each other's
timings, so such tests are skipped, saying why.

Light on purpose: pytest loads this module in every project where Assay is installed,
so NumPy and the store are imported only when a benchmark runs.
"""

from __future__ import annotations

import functools
import math
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

if TYPE_CHECKING:
    from assay.designs.run_until_ci import PIResult
    from assay.stats.drift_bound import RatioBound
    from assay.stats.gate import GateVerdict

#: where the stored studies come from (the source named in their errors)
STUDY_KIND = "assay_benchmark"


def _share(text: str) -> float:
    """``5%`` or ``0.05`` -> 0.05 (a share in (0, 1)).

    >>> _share("5%"), _share("0.5")
    (0.05, 0.5)
    """
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        raise pytest.UsageError(f"{text!r}: not a share (e.g. 5% or 0.05)") from None
    if not 0 < value < 1:
        raise pytest.UsageError(f"{text!r}: must be between 0% and 100%")
    return value


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("assay", "Assay benchmarks (the assay_benchmark fixture)")
    group.addoption(
        "--assay-ci-width",
        default="5%",
        metavar="W",
        help="Target relative CI half-width of each benchmark, e.g. 5%% or 0.05 (default 5%%).",
    )
    group.addoption(
        "--assay-max-time",
        type=float,
        default=10.0,
        metavar="S",
        help="Most seconds each benchmark is measured for (default 10).",
    )
    group.addoption(
        "--assay-store",
        metavar="PATH",
        help="Results store (default: .assay/pytest.db under the rootdir).",
    )
    group.addoption(
        "--assay-compare",
        action="store_true",
        help="Hold each benchmark against a stored run (Assay's regression gate): the last "
        "that passed its gate (never a failed one), or --assay-reference.",
    )
    group.addoption(
        "--assay-reference",
        metavar="REF",
        help="Compare with this stored run instead of the last that passed its gate: a name "
        "given with --assay-save, a run's number, a date (YYYY-MM-DD: the last run that "
        "day or before) or a git commit or branch (the last run made at it). Implies "
        "--assay-compare.",
    )
    group.addoption(
        "--assay-save",
        metavar="NAME",
        help="Name this run, to pin it later with --assay-reference NAME.",
    )
    group.addoption(
        "--assay-fail-if-worse",
        metavar="PCT",
        help="With --assay-compare: fail the session (exit 1) when a benchmark is slower "
        "than its reference run by more than PCT (e.g. 5%%) with the CI's confidence.",
    )
    group.addoption(
        "--assay-disable",
        action="store_true",
        help="Call each benchmarked function once, untimed (a plain test).",
    )


@dataclass
class Measured:
    """One benchmark of the session: its result, its reference run's and the gate."""

    nodeid: str
    result: PIResult
    previous: dict[str, Any] | None  # the reference run's result
    verdict: GateVerdict | None = None
    threshold: float | None = None  # the gate's, when the session fails on it
    reference: str = ""  # which stored run was compared with, and why


@dataclass(frozen=True)
class Targets:
    """One test's targets: the session's options, or its ``@pytest.mark.assay``."""

    ci_width: float
    max_time: float
    threshold: float | None  # --assay-fail-if-worse or the marker's fail_if_worse


#: What ``@pytest.mark.assay(...)`` takes.
MARKER_KEYS = ("ci_width", "max_time", "fail_if_worse")


@dataclass
class AssayBench:
    """The session's settings and what its benchmarks measured."""

    store: Path
    ci_width: float
    max_time: float
    compare: bool
    threshold: float | None
    disabled: bool
    measured: list[Measured] = field(default_factory=list)
    pin: str | None = None  # --assay-reference
    save: str | None = None  # --assay-save
    root: Path | None = None  # the rootdir: where git is asked

    # asked of git only once a benchmark is stored: the plugin loads in every pytest
    # session of a project where Assay is installed, most of which time nothing
    @functools.cached_property
    def commit(self) -> str | None:
        """The rootdir's git commit, stored with each run."""
        return None if self.root is None else _git(self.root, "HEAD")

    @functools.cached_property
    def pinned_commit(self) -> str | None:
        """``--assay-reference`` read as a git commit or branch."""
        return None if self.root is None or not self.pin else _git(self.root, self.pin)


_KEY = pytest.StashKey[AssayBench]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "assay(ci_width='5%', max_time=10, fail_if_worse='5%'): this test's targets for "
        "the assay_benchmark fixture (over --assay-ci-width, --assay-max-time and "
        "--assay-fail-if-worse)",
    )
    store = config.getoption("assay_store")
    worse = config.getoption("assay_fail_if_worse")
    threshold = None if worse is None else _share(worse)
    compare = bool(config.getoption("assay_compare"))
    pin = config.getoption("assay_reference")
    if (threshold is not None or pin) and not compare:
        compare = True  # a threshold or a pinned run means nothing without comparing
    max_time = float(config.getoption("assay_max_time"))
    if not max_time > 0:
        raise pytest.UsageError("--assay-max-time: must be more than 0 seconds")
    config.stash[_KEY] = AssayBench(
        store=Path(store) if store else config.rootpath / ".assay" / "pytest.db",
        ci_width=_share(config.getoption("assay_ci_width")),
        max_time=max_time,
        compare=compare,
        threshold=threshold,
        disabled=bool(config.getoption("assay_disable")),
        pin=pin or None,
        save=config.getoption("assay_save") or None,
        root=config.rootpath,
    )


def _git(where: Path, ref: str) -> str | None:
    """The commit ``ref`` names in the git checkout at ``where``; None outside one (or
    without git, or for a name git does not know)."""
    import subprocess

    if ref.startswith("-"):  # never an option of git's
        return None
    try:
        done = subprocess.run(
            ["git", "-C", str(where), "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    out = done.stdout.strip()
    return out if done.returncode == 0 and out else None


class Benchmark:
    """The ``assay_benchmark`` fixture: call it with the function and its arguments; it
    returns the function's return value (from one untimed call before the timing);
    :attr:`result` is the measurement (None when disabled)."""

    def __init__(self, state: AssayBench, nodeid: str, targets: Targets | None = None) -> None:
        self._state = state
        self._nodeid = nodeid
        self.targets = targets or Targets(state.ci_width, state.max_time, state.threshold)
        self.result: PIResult | None = None

    def __call__(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if self.result is not None:
            raise RuntimeError("assay_benchmark: one benchmark per test (it names the study)")
        value = fn(*args, **kwargs)
        if self._state.disabled:
            return value
        if os.environ.get("PYTEST_XDIST_WORKER"):
            pytest.skip(
                "assay_benchmark: not timed under pytest-xdist (tests run in parallel "
                "disturb each other's timings): run the benchmarks with -n 0 or -p no:xdist"
            )
        from assay.api import TargetNotMetWarning, measure

        def call() -> object:
            return fn(*args, **kwargs)

        with warnings.catch_warnings():  # the table says when the target was not met
            warnings.simplefilter("ignore", TargetNotMetWarning)
            self.result = measure(
                call,
                ci_width=self.targets.ci_width,
                max_time=self.targets.max_time,
            )
        self._state.measured.append(
            _record(self._state, self._nodeid, self.result, self.targets.threshold)
        )
        return value


@pytest.fixture
def assay_benchmark(request: pytest.FixtureRequest) -> Benchmark:
    """Measure ``fn(*args, **kwargs)`` until its CI is as narrow as ``--assay-ci-width``
    (or the test's ``@pytest.mark.assay(ci_width=...)``) asks:
    ``assay_benchmark(fn, *args, **kwargs)``."""
    state = request.config.stash[_KEY]
    nodeid = request.node.nodeid
    marker = request.node.get_closest_marker("assay")
    return Benchmark(state, nodeid, _targets(state, nodeid, marker))


def _targets(state: AssayBench, nodeid: str, marker: pytest.Mark | None) -> Targets:
    """The session's targets, with what the test's marker sets instead; a marker that
    cannot be read fails the test, saying which key and what was expected."""
    if marker is None:
        return Targets(state.ci_width, state.max_time, state.threshold)

    def bad(why: str) -> NoReturn:
        pytest.fail(f"{nodeid}: @pytest.mark.assay: {why}", pytrace=False)

    if marker.args:
        bad(f"takes keywords only ({', '.join(MARKER_KEYS)}), got {marker.args!r}")
    unknown = sorted(set(marker.kwargs) - set(MARKER_KEYS))
    if unknown:
        bad(f"unknown {', '.join(unknown)}: expected {', '.join(MARKER_KEYS)}")
    kw = marker.kwargs
    try:
        ci_width = _share(str(kw["ci_width"])) if "ci_width" in kw else state.ci_width
        worse = kw.get("fail_if_worse")
        threshold = _share(str(worse)) if worse is not None else state.threshold
    except pytest.UsageError as exc:
        bad(str(exc))
    max_time = kw.get("max_time", state.max_time)
    if isinstance(max_time, bool) or not isinstance(max_time, int | float) or not max_time > 0:
        bad(f"max_time={max_time!r}: expected a number of seconds above 0")
    return Targets(ci_width, float(max_time), threshold)


def _record(
    state: AssayBench, nodeid: str, result: PIResult, threshold: float | None = None
) -> Measured:
    """Gate ``result`` against the test's reference run (with ``--assay-compare`` or a
    threshold), then store it as a new session of the test's study with the verdict
    (a run that failed its gate is never a reference), its name and git commit."""
    from assay.studies.run import in_process_runs, in_process_spec, record_in_process

    spec = in_process_spec(nodeid, ["pytest", nodeid], f"{STUDY_KIND} {nodeid}")
    runs = in_process_runs(state.store, spec)
    ref, why = reference_run(runs, state.pin, state.pinned_commit)
    previous = None if ref is None else ref["result"]
    compared = state.compare and previous is not None
    measured = Measured(
        nodeid, result, previous, threshold=threshold if compared else None, reference=why
    )
    if compared and previous is not None:
        measured.verdict = _gate(result, previous, threshold or 0.0)
    # a run that failed its gate, or that it could not judge, never becomes a reference:
    # a re-run of slow code (or slow code that ran while the gate could not tell) would
    # otherwise compare with itself and pass
    gate = {"worse": "failed", "undecided": "undecided"}.get(_verdict(measured) or "", "passed")
    if gate == "failed" and measured.threshold is None:
        gate = "undecided"  # worse, but no threshold was asked for: reported, not failed
    environment: dict[str, Any] = {"pytest": nodeid, "gate": gate}
    if measured.verdict is not None:
        environment["verdict"] = measured.verdict.verdict
    if state.save:
        environment["saved"] = state.save
    if state.commit:
        environment["git"] = state.commit
    record_in_process(state.store, spec, result, environment)
    return measured


def _verdict(m: Measured) -> str | None:
    return None if m.verdict is None else m.verdict.verdict


def _when(run: dict[str, Any]) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(float(run["ended"]), UTC).strftime("%Y-%m-%d %H:%M UTC")


def reference_run(
    runs: list[dict[str, Any]], pin: str | None, pinned_commit: str | None = None
) -> tuple[dict[str, Any] | None, str]:
    """The stored run (of :func:`assay.studies.run.in_process_runs`, oldest first) a new
    run is compared with, and a phrase saying which and why: the one ``pin`` names (a
    name given with ``--assay-save``, a run's number, a date ``YYYY-MM-DD``: the last run
    that day or before, or a git commit: the last run made at it), else the last run
    that passed its gate (not one that failed it, nor one it could not judge).

    >>> runs = [{"id": 1, "ended": 0.0, "environment": {}},
    ...         {"id": 2, "ended": 86400.0, "environment": {"gate": "failed"}}]
    >>> [r and r["id"] for r in [reference_run(runs, None)[0], reference_run(runs, "2")[0]]]
    [1, 2]
    >>> reference_run(runs, None)[1]
    'run 1 of 1970-01-01 00:00 UTC, the last that passed its gate'
    >>> reference_run(runs, "1970-01-01")[1]
    'run 1 of 1970-01-01 00:00 UTC, pinned (--assay-reference 1970-01-01)'
    >>> reference_run(runs, "x")
    (None, 'no stored run matches --assay-reference x')
    """
    import re
    from datetime import UTC, datetime

    if pin is None:  # runs stored before gates were recorded count as passed
        passed = [r for r in runs if r["environment"].get("gate", "passed") == "passed"]
        if not passed:
            return None, "no stored run that passed its gate" if runs else "no stored run"
        return passed[
            -1
        ], f"run {passed[-1]['id']} of {_when(passed[-1])}, the last that passed its gate"
    found: list[dict[str, Any]] = [r for r in runs if r["environment"].get("saved") == pin]
    if not found and pin.isdigit():
        found = [r for r in runs if r["id"] == int(pin)]
    if not found and re.fullmatch(r"\d{4}-\d{2}-\d{2}", pin):
        try:
            day = datetime.strptime(pin, "%Y-%m-%d").replace(tzinfo=UTC).timestamp()
        except ValueError:
            day = None
        if day is not None:
            found = [r for r in runs if float(r["ended"]) < day + 86400]
    if not found and pinned_commit:
        found = [r for r in runs if r["environment"].get("git") == pinned_commit]
    if not found:
        return None, f"no stored run matches --assay-reference {pin}"
    return found[
        -1
    ], f"run {found[-1]['id']} of {_when(found[-1])}, pinned (--assay-reference {pin})"


def _gate(result: PIResult, previous: dict[str, Any], threshold: float) -> GateVerdict:
    """This run against the reference run with :func:`assay.stats.gate.regression_gate`
    (Welch's test of the two means, from their intervals), and where that is undecided
    the two runs' block ranges (:func:`assay.stats.gate.with_drift_bound`)."""
    from assay.stats.compare import analyze_variant, summary_from_ci
    from assay.stats.gate import gate_verdict, regression_gate, with_drift_bound

    conf = result.confidence
    try:
        now = summary_from_ci(result.mean, result.half_width, result.n_samples, conf)
        then = summary_from_ci(
            float(previous["mean"]),
            float(previous["half_width"]),
            int(previous["n_samples"]),
            float(previous.get("confidence", conf)),
        )
    except (KeyError, TypeError, ValueError):  # a run without an interval
        nan = math.nan
        if math.isfinite(result.half_width):
            why = "the reference run has none"
        else:  # its note says why (too few rounds, a level that moved)
            why = "this run has none" + (f": {result.note}" if result.note else "")
        ordinary = gate_verdict(
            "this run",
            "the reference run",
            relative=nan,
            low=nan,
            high=nan,
            direction="lower",
            threshold=threshold,
            why=why,
        )
    else:
        ordinary = regression_gate(
            "this run",
            analyze_variant(now, conf),
            "the reference run",
            analyze_variant(then, conf),
            direction="lower",
            threshold=threshold,
            confidence=conf,
        )
    # a gross change decides even where the interval is invalid or a drift widened it
    return with_drift_bound(ordinary, _blocks_bound(result, previous))


def _blocks_bound(result: PIResult, previous: dict[str, Any]) -> RatioBound | None:
    """The two runs' block ranges (:mod:`assay.stats.drift_bound`), when both stored
    them (a run stored before #58 has none)."""
    from assay.stats.drift_bound import block_ratio_bound

    then = previous.get("blocks")
    if not isinstance(then, list | tuple) or not all(isinstance(x, int | float) for x in then):
        return None
    return block_ratio_bound(result.blocks, [float(x) for x in then])


def _seconds(x: float) -> str:
    if not math.isfinite(x):
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if abs(x) >= scale:
            return f"{x / scale:.4g} {unit}"
    return f"{x / 1e-9:.4g} ns"


def table_rows(measured: list[Measured]) -> list[list[str]]:
    """The summary table: test, mean ± CI, samples, ratio to the reference run (and the
    gate's verdict when there is one).

    >>> from types import SimpleNamespace as NS
    >>> r = NS(mean=0.002, half_width=0.0001, relative_half_width=0.05, n_samples=30, met=True)
    >>> table_rows([Measured("t.py::test_a", r, {"mean": 0.001})])  # doctest: +NORMALIZE_WHITESPACE
    [['test', 'mean ± CI', 'n', 'vs reference'],
     ['t.py::test_a', '2 ms ± 5.0%', '30', '2.00x']]
    """
    rows = [["test", "mean ± CI", "n", "vs reference"]]
    for m in measured:
        r = m.result
        estimate = f"{_seconds(r.mean)} ± {r.relative_half_width:.1%}"
        if not r.met:
            estimate += " (target not met)"
        ratio = "-"
        before = m.previous.get("mean") if m.previous else None
        if isinstance(before, int | float) and before > 0 and math.isfinite(r.mean):
            ratio = f"{r.mean / before:.2f}x"
        if m.verdict is not None:
            ratio += f" ({m.verdict.verdict})"
        rows.append([m.nodeid, estimate, str(r.n_samples), ratio])
    return rows


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state = session.config.stash.get(_KEY, None)
    if state is None:
        return
    if _regressed(state) and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _regressed(state: AssayBench) -> list[Measured]:
    """The benchmarks the gate found worse than their reference run beyond a threshold
    (the session's or their marker's)."""
    return [
        m
        for m in state.measured
        if m.threshold is not None and m.verdict is not None and m.verdict.verdict == "worse"
    ]


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(_KEY, None)
    if state is None or not state.measured:
        return
    tr = terminalreporter
    tr.write_sep("-", f"assay benchmarks (stored in {state.store})")
    rows = table_rows(state.measured)
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        tr.write_line("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)))
    for m in state.measured:
        if m.verdict is not None and (m.threshold is not None or m.verdict.verdict != "undecided"):
            worse = m.verdict.verdict == "worse" and m.threshold is not None
            tr.write_line(f"{m.nodeid}: {m.verdict.text()}", red=worse, bold=worse)
    if state.compare:
        refs = {m.reference for m in state.measured}
        if len(refs) == 1:  # one line when every test has the same (a pin, a first run)
            tr.write_line(f"reference: {refs.pop()}")
        else:
            for m in state.measured:
                tr.write_line(f"{m.nodeid}: reference: {m.reference}")
    for m in _regressed(state):
        tr.write_line(
            f"assay: {m.nodeid} is slower than its reference run by more than "
            f"{m.verdict.limit if m.verdict else ''}: the session fails",
            red=True,
            bold=True,
        )
