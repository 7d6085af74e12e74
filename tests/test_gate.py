"""Issue #18 (part): the regression gate, ``assay compare --fail-if-worse PCT``.

Exit 1 when a candidate is worse than the baseline by more than PCT with the study's
confidence (its whole interval beyond the threshold), 0 when it is not (its whole
interval below), 5 when the interval straddles the threshold."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner, Result
from hypothesis import given
from hypothesis import strategies as st

from assay.cli import exits, main
from assay.stats.gate import gate_verdict

DATA = Path(__file__).parent / "data"
QUICK = ("--no-overhead", "--no-monitor", "-q")


def invoke(tmp_path: Path, *args: str) -> Result:
    return CliRunner().invoke(main, list(args), env={"XDG_CACHE_HOME": str(tmp_path)})


@pytest.mark.parametrize(
    ("relative", "low", "high", "direction", "verdict"),
    [
        (0.30, 0.25, 0.35, "lower", "worse"),  # 30% slower, surely beyond 5%
        (0.01, -0.02, 0.04, "lower", "not worse"),
        (0.05, 0.01, 0.09, "lower", "undecided"),  # straddles 5%
        (-0.30, -0.35, -0.25, "higher", "worse"),  # 30% less throughput
        (0.30, 0.25, 0.35, "higher", "not worse"),  # 30% more throughput
        (math.nan, math.nan, math.nan, "lower", "undecided"),  # no estimate
        (0.2, -math.inf, math.inf, "lower", "undecided"),  # an unbounded interval
    ],
)
def test_verdicts(relative: float, low: float, high: float, direction: str, verdict: str) -> None:
    v = gate_verdict(
        "new", "old", relative=relative, low=low, high=high, direction=direction, threshold=0.05
    )
    assert v.verdict == verdict


finite = st.floats(-2, 2, allow_nan=False)


@given(a=finite, b=finite, threshold=st.floats(0.001, 1), lower=st.booleans())
def test_the_verdict_follows_the_interval_and_never_the_estimate_alone(
    a: float, b: float, threshold: float, lower: bool
) -> None:
    low, high = sorted((a, b))
    direction = "lower" if lower else "higher"
    v = gate_verdict(
        "n", "o", relative=(low + high) / 2, low=low, high=high, direction=direction,
        threshold=threshold,
    )  # fmt: skip
    worse_low, worse_high = (low, high) if lower else (-high, -low)
    if worse_low > threshold:
        assert v.verdict == "worse"
    elif worse_high < threshold:
        assert v.verdict == "not worse"
    else:
        assert v.verdict == "undecided"


# A real benchmark whose readings are exact: its k-th run (counted in a file) prints
# base × (1, 1.01, 1.01, 1)[k % 4], a pattern with no lag-1 autocorrelation, so every
# variant gets an interval from few rounds (timings of `sleep` sometimes get none:
# "no subsession size brings |lag-1 autocorrelation| to <= 0.1").
BENCH = (
    "import pathlib, sys\n"
    "p = pathlib.Path(sys.argv[1]); k = len(p.read_text()) if p.exists() else 0\n"
    "p.write_text('x' * (k + 1))\n"
    "print(f'value={float(sys.argv[2]) * (1 + 0.01 * (0, 1, 1, 0)[k % 4]):.6f}')\n"
)


def gate_study(tmp_path: Path, old: float, new: float, extra: str = "") -> Path:
    def command(name: str, base: float) -> str:
        return json.dumps([sys.executable, "-c", BENCH, str(tmp_path / name), str(base)])

    study = tmp_path / "g.toml"
    study.write_text(
        f'[study]\nname = "g"\n[benchmark]\ncommand = {command("old.n", old)}\n'
        '[[pi]]\nname = "v"\nsource = "regex"\npattern = \'value=([0-9.]+)\'\n'
        f'[[variant]]\nname = "old"\n[[variant]]\nname = "new"\n'
        f"command = {command('new.n', new)}\n[stop]\nmax_rounds = 12\n{extra}"
    )
    return study


def test_a_30_percent_slower_candidate_fails_the_gate(tmp_path: Path) -> None:
    study = gate_study(tmp_path, 1.0, 1.3)
    res = invoke(tmp_path, "compare", *QUICK, str(study), "--fail-if-worse", "5%", "--json", "-")
    assert res.exit_code == exits.WORSE, res.output
    (gate,) = json.loads(res.stdout)["gate"]
    assert gate["verdict"] == "worse" and gate["baseline"] == "old"
    assert gate["relative"] == pytest.approx(0.30, abs=0.01)
    assert "new is worse than old: +30.0%" in gate["text"]


def test_two_identical_commands_pass(tmp_path: Path) -> None:
    study = gate_study(tmp_path, 1.0, 1.0)
    res = invoke(tmp_path, "compare", *QUICK, str(study), "--fail-if-worse", "5%")
    assert res.exit_code == exits.OK, res.output
    assert "new is not worse than old by more than 5%" in res.stdout


def test_a_slower_real_command_fails_the_gate(tmp_path: Path) -> None:
    """The same with timings: `sleep 0.026` against `sleep 0.02` (5 when a variant's
    timings get no interval: then more rounds would tell, never a pass)."""
    res = invoke(
        tmp_path, "compare", *QUICK, "-r", "40", "--fail-if-worse", "5%", "--json", "-",
        "--", "sleep", "0.02", "--", "sleep", "0.026",
    )  # fmt: skip
    assert res.exit_code in (exits.WORSE, exits.SHORT), res.output
    (gate,) = json.loads(res.stdout)["gate"]
    assert gate["verdict"] in ("worse", "undecided") and gate["baseline"] == "sleep 0.02"


def test_an_undecidable_pair_is_status_5(tmp_path: Path) -> None:
    # 10% slower against a 10% threshold: the interval straddles it, however narrow
    study = gate_study(tmp_path, 1.0, 1.1)
    res = invoke(tmp_path, "compare", *QUICK, str(study), "--fail-if-worse", "10%")
    assert res.exit_code == exits.SHORT, res.output
    assert "undecided at 10%" in res.stdout and "straddles" in res.stdout


def test_the_gate_on_existing_results_and_a_named_baseline(tmp_path: Path) -> None:
    files = [str(DATA / "hyperfine_sqlite_sync.json"), str(DATA / "assay_sqlite_sync_off.json")]
    args = ["compare", "--from", "--pi", "wall_time", *files, "--fail-if-worse", "5%"]
    res = invoke(tmp_path, *args, "--json", "-")
    assert res.exit_code == exits.WORSE, res.output  # synchronous=FULL is 63% slower
    gates = json.loads(res.stdout)["gate"]
    assert [g["verdict"] for g in gates] == ["worse", "not worse"]
    res = invoke(tmp_path, *args, "--baseline", "nope")
    assert res.exit_code == exits.USAGE and "no such variant" in res.stderr


def test_the_study_file_says_the_same(tmp_path: Path) -> None:
    study = gate_study(tmp_path, 1.0, 1.3, 'fail_if_worse = 0.05\nbaseline = "old"\n')
    res = invoke(tmp_path, "compare", *QUICK, str(study))
    assert res.exit_code == exits.WORSE, res.output
    study.write_text(study.read_text().replace('baseline = "old"', 'baseline = "nope"'))
    res = invoke(tmp_path, "compare", *QUICK, str(study))
    assert res.exit_code == exits.USAGE and "no such variant" in res.stderr


def test_the_median_gate_rests_on_the_hodges_lehmann_shift() -> None:
    """Issue #21's median statistic: a candidate whose every fourth run is 3× slower is
    50% worse on the mean and not worse on the median."""
    from assay.stats.compare import analyze_variant
    from assay.stats.gate import regression_gate

    rng = np.random.default_rng(4)
    base = 1.0 + 0.01 * rng.standard_normal(40)
    cand = 1.0 + 0.01 * rng.standard_normal(40)
    cand[rng.permutation(40)[:10]] *= 3.0
    a, b = (analyze_variant(x, max_autocorrelation=1.0) for x in (cand, base))  # unmerged
    kw = dict(direction="lower", threshold=0.05, confidence=0.95)
    by_mean = regression_gate("new", a, "old", b, **kw)  # type: ignore[arg-type]
    by_median = regression_gate("new", a, "old", b, statistic="median", **kw)  # type: ignore[arg-type]
    assert by_mean.verdict == "worse" and by_mean.relative > 0.4
    assert by_median.verdict == "not worse", by_median.text()
    assert abs(by_median.relative) < 0.01 and by_median.high < 0.05


def test_a_median_study_gates_on_its_hodges_lehmann_shift(tmp_path: Path) -> None:
    """From the command line the gate of a median study is the shift its table shows."""
    study = gate_study(tmp_path, 1.0, 1.3)
    text = study.read_text().replace(
        "pattern = 'value=([0-9.]+)'\n", "pattern = 'value=([0-9.]+)'\nstatistic = \"median\"\n"
    )
    assert 'statistic = "median"' in text
    study.write_text(text)
    res = invoke(tmp_path, "compare", *QUICK, str(study), "--fail-if-worse", "5%", "--json", "-")
    data = json.loads(res.stdout)
    (gate,) = data["gate"]
    row = next(r for r in data["comparisons"][0]["variants"] if r["variant"] == "new")
    assert row["effect"] == "Hodges-Lehmann shift"
    assert (gate["relative"], gate["low"], gate["high"]) == (
        row["relative_to_best"],
        row["relative_to_best_low"],
        row["relative_to_best_high"],
    )
    assert gate["verdict"] == "worse" and res.exit_code == exits.WORSE, res.output


def test_an_undecided_verdict_without_an_interval_says_why() -> None:
    """ "(too few samples)" was said of every verdict without an interval, also of a run
    whose interval the level check refused; now each caller says which side has none
    and why."""
    nan = float("nan")
    moved = gate_verdict(
        "this run", "the previous run", relative=nan, low=nan, high=nan, direction="lower",
        threshold=0.05, why="this run has none: no valid CI: the mean moved",
    )  # fmt: skip
    assert moved.text().endswith("(this run has none: no valid CI: the mean moved)")
    assert moved.as_dict()["why"] == "this run has none: no valid CI: the mean moved"
    plain = gate_verdict(
        "a", "b", relative=nan, low=nan, high=nan, direction="lower", threshold=0.05
    )
    assert plain.text().endswith("(one side has no interval)")


def test_the_plugins_gate_says_why_this_run_has_no_interval() -> None:
    from assay.designs.run_until_ci import _empty
    from assay.pytest_plugin import _gate

    result = _empty("time", "s", "lower", "readings", 0.95, "no valid CI: the mean moved")
    previous = {"mean": 1.0, "half_width": 0.01, "n_samples": 20, "confidence": 0.95}
    v = _gate(result, previous, 0.05)
    assert v.verdict == "undecided"
    assert v.why == "this run has none: no valid CI: the mean moved", v.text()
