"""Parameter scans, hyperfine's way (issue #35): ``-P``/``-D``/``-L`` make the variants
of one interleaved comparison; the scan is reported in its order with the fitted trend;
hyperfine's ``--export-json``/``--export-csv`` are written from the store."""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import statsmodels.api as sm
from click.testing import CliRunner, Result
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.cli import main
from assay.designs.scan import (
    MAX_SCAN_VARIANTS,
    ScanError,
    list_axis,
    range_axis,
    scan_variants,
)
from assay.spec import parse_spec_data
from assay.stats.scan import fit_trend
from assay.studies.compare import decide_comparison

# --- the variants -----------------------------------------------------------------------


def test_a_decimal_step_gives_the_values_written_not_float_sums() -> None:
    assert range_axis("x", "0", "0.3", "0.1").values == (0, 0.1, 0.2, 0.3)
    assert range_axis("t", "1", "4").values == (1, 2, 3, 4)
    assert range_axis("t", "1", "4", "2").values == (1, 3)  # HIGH need not be reached


def test_list_values_that_read_as_numbers_are_numbers_others_stay_as_written() -> None:
    assert list_axis("n", "1,2,10").values == (1, 2, 10)
    assert list_axis("n", "0.5,1.5").values == (0.5, 1.5)
    assert list_axis("v", "01,1e3,abc").values == ("01", "1e3", "abc")


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: range_axis("t", "1.5", "4"), "without -D the bounds must be integers"),
        (lambda: range_axis("t", "4", "1"), "HIGH is below LOW"),
        (lambda: range_axis("t", "1", "1"), "one value"),
        (lambda: range_axis("t", "0", "1", "0"), "the step must be positive"),
        (lambda: range_axis("t", "1", "x"), "HIGH 'x' is not a number"),
        (lambda: range_axis("t", "0", "1000"), f"more than {MAX_SCAN_VARIANTS}"),
        (lambda: range_axis("1t", "0", "3"), "a parameter name is letters"),
        (lambda: list_axis("v", "a,,b"), "an empty value"),
        (lambda: list_axis("v", "a,a"), "a value given twice"),
    ],
)
def test_bad_scan_options_say_which_and_why(make: Any, message: str) -> None:
    with pytest.raises(ScanError, match=message):
        make()


def test_variants_are_named_by_the_command_with_the_values_put_in_in_grid_order() -> None:
    grid = [list_axis("a", "x,y"), range_axis("b", "1", "2")]
    got = scan_variants(["echo", "{a}-{b}"], grid)
    assert [v.name for v in got] == ["echo x-1", "echo x-2", "echo y-1", "echo y-2"]
    assert got[1].params == {"a": "x", "b": 2}
    # a value with a blank is quoted in the name as a shell would need it
    assert scan_variants(["echo", "{a}"], [list_axis("a", "p q,r")])[0].name == "echo 'p q'"


@pytest.mark.parametrize(
    ("command", "axes", "message"),
    [
        (["sleep", "1"], [range_axis("t", "1", "2")], "'t' is not in the command"),
        (["sleep", "{t}{u}"], [range_axis("t", "1", "2")], "placeholder '{u}'"),
        (["e", "{t}"], [range_axis("t", "1", "2"), list_axis("t", "3,4")], "scanned twice"),
        (
            ["e", "{a}{b}"],
            [range_axis("a", "1", "20"), range_axis("b", "1", "20")],
            "400 combinations",
        ),
    ],
)
def test_a_scan_the_command_cannot_take_is_refused(
    command: list[str], axes: list[Any], message: str
) -> None:
    with pytest.raises(ScanError, match=message):
        scan_variants(command, axes)


# --- the trend ---------------------------------------------------------------------------


def _statsmodels_fit(x: list[float], y: list[float], se: list[float], scaled: bool) -> Any:
    model = sm.WLS(y, sm.add_constant(np.asarray(x, dtype=float)), weights=1 / np.square(se))
    if scaled:
        return model.fit()
    return model.fit(cov_type="fixed scale", cov_kwds={"scale": 1.0})


def test_a_line_that_fits_has_the_normal_interval_of_known_errors() -> None:
    x, y, se = [1.0, 2.0, 3.0, 4.0], [11.02, 20.97, 31.01, 41.0], [0.05, 0.04, 0.06, 0.05]
    fit = fit_trend(x, y, se)
    assert fit is not None and fit.model == "linear" and fit.fits
    ref = _statsmodels_fit(x, y, se, scaled=False)
    assert fit.slope == pytest.approx(ref.params[1], rel=1e-9)
    assert fit.intercept == pytest.approx(ref.params[0], rel=1e-9)
    low, high = ref.conf_int(alpha=0.05)[1]
    assert (fit.low, fit.high) == (pytest.approx(low, rel=1e-9), pytest.approx(high, rel=1e-9))
    assert fit.knee is None


def test_means_that_depart_from_the_line_widen_the_interval_by_their_scatter() -> None:
    x, y, se = [1.0, 2.0, 3.0, 4.0, 5.0], [10.0, 22.0, 29.0, 43.0, 49.0], [0.1] * 5
    fit = fit_trend(x, y, se)
    assert fit is not None and not fit.fits and fit.lack_of_fit_p < 0.05
    ref = _statsmodels_fit(x, y, se, scaled=True)  # Student's t, scale from the residuals
    low, high = ref.conf_int(alpha=0.05)[1]
    assert (fit.low, fit.high) == (pytest.approx(low, rel=1e-9), pytest.approx(high, rel=1e-9))


def test_a_saturating_curve_is_fitted_on_the_log_and_has_a_knee() -> None:
    x = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0]
    y = [1.0, 2.0, 4.0, 8.0, 8.2, 8.3]
    fit = fit_trend(x, y, [0.01] * 6)
    assert fit is not None and not fit.fits
    assert fit.knee == ("knee", 8.0)
    doubling = fit_trend(x, [5.0 + 3.0 * np.log2(v) for v in x], [0.01] * 6)
    assert doubling is not None and doubling.model == "log"
    assert doubling.step[0] == pytest.approx(3.0)  # per doubling


def test_one_value_or_no_errors_give_no_trend() -> None:
    assert fit_trend([1.0, 1.0], [2.0, 2.1], [0.1, 0.1]) is None
    assert fit_trend([1.0, 2.0], [2.0, 3.0], [0.0, float("nan")]) is None


@settings(max_examples=25, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), slope=st.floats(-5, 5), k=st.integers(3, 8))
def test_the_slope_interval_covers_the_true_slope_at_its_level(
    seed: int, slope: float, k: int
) -> None:
    """Means with normal errors of known size around a line: the 95% interval covers
    the true slope in 92-96% of scans (a line rejected by chance may be reported on the
    log scale); 400 scans, bounds with the binomial's spread: 0.89-0.985."""
    rng = np.random.default_rng(seed)
    x = np.arange(1.0, k + 1)
    se = rng.uniform(0.05, 0.5, size=k)
    covered = 0
    for _ in range(400):
        y = 3.0 + slope * x + rng.normal(0, se)
        fit = fit_trend(list(x), list(y), list(se))
        assert fit is not None
        covered += fit.low <= slope <= fit.high
    assert 0.89 <= covered / 400 <= 0.985


# --- the stopping rule ------------------------------------------------------------------


def test_runs_asks_for_exactly_that_many_cycles_of_a_comparison() -> None:
    spec = parse_spec_data(
        {
            "study": {"name": "s"},
            "benchmark": {"command": ["e", "{t}"]},
            "variant": [{"name": "a", "params": {"t": 1}}, {"name": "b", "params": {"t": 2}}],
            "stop": {"min_rounds": 12, "max_rounds": 12},
        },
        source="test",
    )
    from assay.designs.compare import compare_pi

    rng = np.random.default_rng(1)
    samples = {"a": rng.normal(1.0, 0.01, 60), "b": rng.normal(2.0, 0.01, 60)}
    comp = compare_pi("wall_time", "s", "lower", samples, alpha=0.01, confidence=0.95)
    early = decide_comparison(comp, spec, cycles=11, trials=22, failed=0, elapsed=1.0)
    assert not early.done and "12 cycles asked" in early.reason
    at = decide_comparison(comp, spec, cycles=12, trials=24, failed=0, elapsed=1.0)
    assert at.done


# --- the command line -------------------------------------------------------------------


def _invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_run_with_a_scan_compares_the_values_and_exports_as_hyperfine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    hf, hcsv, doc = tmp_path / "hf.json", tmp_path / "hf.csv", tmp_path / "a.json"
    res = _invoke(
        "run", "-P", "t", "1", "3", "--runs", "3", "--no-overhead", "--no-monitor", "-q",
        "--export-json", str(hf), "--export-csv", str(hcsv), "--json", str(doc),
        "--", sys.executable, "-c", "pass", "{t}",
    )  # fmt: skip
    assert res.exit_code in (0, 5), res.output
    names = [f"{Path(sys.executable).as_posix()} -c pass {t}" for t in (1, 2, 3)]
    result = json.loads(doc.read_text())
    assert result["schedule"]["cycles"] == 3  # --runs: exactly 3 cycles
    scan = result["scan"]
    assert [r["variant"] for r in scan["rows"]] == names  # in scan order
    assert [r["parameters"] for r in scan["rows"]] == [{"t": 1}, {"t": 2}, {"t": 3}]
    assert scan["trend_parameter"] == "t" and scan["parameters"] == ["t"]
    assert "scan: wall_time by t" in res.output
    exported = json.loads(hf.read_text())["results"]
    assert [r["command"] for r in exported] == names
    assert [r["parameters"] for r in exported] == [{"t": "1"}, {"t": "2"}, {"t": "3"}]
    assert all(len(r["times"]) == 3 and r["exit_codes"] == [0, 0, 0] for r in exported)
    for r in exported:
        assert r["min"] <= r["median"] <= r["max"] and r["stddev"] >= 0
    rows = list(csv.DictReader(io.StringIO(hcsv.read_text())))
    assert list(rows[0]) == [
        "command", "mean", "stddev", "median", "user", "system", "min", "max", "parameter_t",
    ]  # fmt: skip
    assert [r["parameter_t"] for r in rows] == ["1", "2", "3"]
    # what tools made for hyperfine read, Assay reads back too
    back = _invoke("compare", "--from", str(hf), "--json", "-", "-q")
    assert {c["variant"] for c in json.loads(back.stdout)["comparisons"][0]["variants"]} == set(
        names
    )


def test_a_plain_run_exports_its_one_command_as_hyperfine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    res = _invoke(
        "run", "--runs", "4", "--no-overhead", "--no-monitor", "-q", "--export-json", "-",
        "--", "true",
    )  # fmt: skip
    assert res.exit_code in (0, 5), res.output
    (only,) = json.loads(res.stdout)["results"]
    assert only["command"] == "true" and len(only["times"]) == 4 and "parameters" not in only


def test_setup_and_cleanup_run_once_around_the_trials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    log = tmp_path / "log"
    res = _invoke(
        "run", "--runs", "3", "--no-overhead", "--no-monitor", "-q",
        "--setup", f"echo setup >> {log}", "--cleanup", f"echo cleanup >> {log}",
        "--", "sh", "-c", f"echo trial >> {log}",
    )  # fmt: skip
    assert res.exit_code in (0, 5), res.output
    assert log.read_text().split() == ["setup", "trial", "trial", "trial", "cleanup"]


def test_conclude_runs_after_every_trial_and_its_failure_keeps_the_trial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    log = tmp_path / "log"
    res = _invoke(
        "run", "--runs", "3", "--no-overhead", "--no-monitor", "-q",
        "--conclude", f"echo conclude >> {log}", "--", "sh", "-c", f"echo trial >> {log}",
    )  # fmt: skip
    assert res.exit_code in (0, 5), res.output
    assert log.read_text().split() == ["trial", "conclude"] * 3
    store = tmp_path / "s.assay.db"
    res = _invoke(
        "run", "--runs", "3", "--no-overhead", "--no-monitor", "-q", "--store", str(store),
        "--conclude", "exit 3", "--", "true",
    )  # fmt: skip
    assert res.exit_code == 3 and "the conclude command" in res.output
    from assay.store import Store

    with Store(store) as st:
        (name,) = st.study_names()
        found = st.find_study(name)
        assert found is not None
        assert len(st.trials(found[0])) == 1  # measured before its conclude failed


def test_time_unit_shows_every_time_in_that_unit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from assay.report.format import set_time_unit

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    try:
        res = _invoke(
            "run", "--runs", "3", "--no-overhead", "--no-monitor", "-u", "microsecond",
            "--", "sleep", "0.001",
        )  # fmt: skip
    finally:
        set_time_unit(None)
    assert res.exit_code in (0, 5), res.output
    assert "µs ±" in res.stdout and " ms ±" not in res.stdout
    bad = CliRunner().invoke(main, ["run", "--time-unit", "minute", "--", "true"])
    assert bad.exit_code == 2 and "'minute' is not one of" in bad.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "-D", "0.1", "--", "sleep", "1"], "-D: the step of a -P scan"),
        (["run", "-P", "t", "1", "3", "--", "sleep", "1"], "'t' is not in the command"),
        (["compare", "-P", "t", "1", "3", "--", "e", "{t}", "--", "true"], "got 2 commands"),
        (["run", "-P", "t", "1", "3", "--baseline", "x.json", "--", "e", "{t}"], "--baseline"),
        (["run", "--runs", "3", "-r", "5", "--", "true"], "--runs 3 and --max-rounds 5"),
        (["compare", "-P", "t", "1", "3", "--name", "a", "--", "e", "{t}"], "--name"),
    ],
)
def test_scan_usage_errors_exit_2_naming_the_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    res = _invoke(*args)
    assert res.exit_code == 2 and message in res.output, res.output


def test_a_study_file_takes_no_scan_option(tmp_path: Path) -> None:
    study = tmp_path / "s.toml"
    study.write_text('[study]\nname = "s"\n[benchmark]\ncommand = ["true"]\n')
    res = _invoke("run", str(study), "-P", "t", "1", "3")
    assert res.exit_code == 2 and "-P: quick mode only" in res.output, res.output


def test_a_study_file_whose_variants_differ_in_values_gets_the_scan_view(
    tmp_path: Path,
) -> None:
    study = tmp_path / "s.toml"
    study.write_text(
        '[study]\nname = "s"\n[benchmark]\ncommand = ["true", "{n}"]\n'
        '[[variant]]\nname = "one"\nparams = {n = 1}\n'
        '[[variant]]\nname = "two"\nparams = {n = 2}\n'
        "[stop]\nmax_rounds = 3\n"
    )
    res = _invoke("compare", str(study), "--no-overhead", "--no-monitor", "-q", "--json", "-")
    scan: dict[str, Any] = json.loads(res.stdout)["scan"]
    assert [r["variant"] for r in scan["rows"]] == ["one", "two"]


def test_a_scan_is_plotted_and_a_plot_without_a_scan_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    png, svg = tmp_path / "s.png", tmp_path / "s.svg"
    res = _invoke(
        "run", "-P", "t", "1", "3", "--runs", "3", "--no-overhead", "--no-monitor", "-q",
        "--plot", str(png), "--", sys.executable, "-c", "pass", "{t}",
    )  # fmt: skip
    assert res.exit_code in (0, 5), res.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    res = _invoke(
        "compare", "-L", "m", "a,b", "--runs", "3", "--no-overhead", "--no-monitor", "-q",
        "--plot", str(svg), "--", "echo", "{m}",
    )  # fmt: skip
    assert res.exit_code in (0, 5), res.output
    text = svg.read_text()
    assert "<svg" in text and "scan: wall_time by m" in text  # labels as text
    refused = _invoke("run", "--plot", str(png), "--", "true")
    assert refused.exit_code == 2 and "--plot: a scan's plot" in refused.output
    odd = _invoke("run", "-P", "t", "1", "2", "--plot", str(tmp_path / "p.jpg"), "--", "e", "{t}")
    assert odd.exit_code == 2 and ".png or .svg" in odd.output


def test_hyperfines_one_word_form_with_a_placeholder_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#60: ``assay run -P t 1 2 'sleep 0.0{t}'``, hyperfine's own form: the {t} is
    Assay's placeholder, not shell syntax; the string is split into words and each
    value fills its word (no shell runs)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    doc = tmp_path / "a.json"
    res = _invoke(
        "run", "-P", "t", "1", "2", "--runs", "3", "--no-overhead", "--no-monitor", "-q",
        "--json", str(doc), f"{Path(sys.executable).as_posix()} -c pass {{t}}",
    )  # fmt: skip
    assert res.exit_code in (0, 5), res.output
    rows = json.loads(doc.read_text())["scan"]["rows"]
    assert [r["parameters"] for r in rows] == [{"t": 1}, {"t": 2}]
    # shell syntax beside the placeholder still asks for --shell
    bad = _invoke("run", "-P", "t", "1", "2", "echo {t} | cat")
    assert bad.exit_code == 2 and "--shell" in bad.output, bad.output
