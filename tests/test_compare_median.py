"""``assay compare`` on the median: ranks, Mann–Whitney at the looks, the Hodges–Lehmann shift."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from rich.console import Console
from scipy.signal import lfilter

from assay.cli import main
from assay.designs.compare import compare_decision, compare_pi, look_level
from assay.report.compare import CSV_FIELDS, csv_rows, render_comparison
from assay.report.export import rows_to_csv
from assay.report.markdown import compare_markdown
from assay.stats.compare import SummaryStats
from assay.stats.compare_median import NO_SAMPLES
from assay.stats.rank_shift import rank_shift
from assay.studies.compare import CompareResult, comparison_dict

DATA = Path(__file__).parent / "data"


def _heavy(seed: int = 1, n: int = 53, factor: float = 1.5) -> dict[str, np.ndarray]:
    """Lognormal sigma 1 readings, 'slow' 1.5x 'base' (the mean is lost in the tail)."""
    rng = np.random.default_rng(seed)
    return {"base": rng.lognormal(0.0, 1.0, n), "slow": factor * rng.lognormal(0.0, 1.0, n)}


def test_median_ranks_by_mann_whitney_where_welch_is_lost_in_the_tail() -> None:
    data = _heavy()
    mean = compare_pi("t", "s", "lower", data)
    med = compare_pi("t", "s", "lower", data, statistic="median")
    (pm,) = mean.ranking.pairs
    (pd,) = med.ranking.pairs
    assert pm.comparison is not None and pd.comparison is not None
    assert pm.comparison.welch.p_value > 0.05  # Welch: no difference to see
    assert pd.comparison.shift is not None and pd.comparison.shift.p_value < 0.002
    assert med.statistic == "median" and med.best == "base"
    # decided by Mann-Whitney at alpha, as Pilot's every-cycle rule would; not by Welch
    assert compare_decision(
        med.ranking, None, 53, statistic="median", sequential="every-cycle"
    ).done
    assert not compare_decision(mean.ranking, None, 53, sequential="every-cycle").done


def test_the_effect_is_the_hodges_lehmann_shift_against_the_best() -> None:
    data = _heavy()
    med = compare_pi("t", "s", "lower", data, statistic="median")
    comp = med.to_best["slow"]
    assert comp.shift is not None
    # on the merged samples, slow against base
    slow, base = med.ranking.variants["slow"].merged, med.ranking.variants["base"].merged
    assert slow is not None and base is not None
    ref = rank_shift(slow, base)
    assert comp.shift.shift == pytest.approx(ref.shift)
    assert (comp.shift.low, comp.shift.high) == pytest.approx((ref.low, ref.high))
    assert comp.shift.relative == pytest.approx(ref.shift / np.median(base))
    assert med.medians["base"].median == pytest.approx(np.median(base))
    # the mean's comparison carries no shift
    assert compare_pi("t", "s", "lower", data).to_best["slow"].shift is None


def test_autocorrelated_readings_are_ranked_on_their_merged_samples() -> None:
    rng = np.random.default_rng(4)
    e = lfilter([1.0], [1.0, -0.8], rng.standard_normal((2, 400)), axis=1)
    data = {"a": 10.0 + 0.1 * e[0], "b": 10.0 + 0.1 * e[1]}
    med = compare_pi("t", "s", "lower", data, statistic="median")
    (pair,) = med.ranking.pairs
    assert pair.comparison is not None and pair.comparison.shift is not None
    a = med.ranking.variants[pair.better]
    assert a.subsession_size > 1  # merged, as the mean's comparison merges
    assert a.merged is not None
    assert pair.comparison.shift.n_a == a.n == a.merged.size < 400
    # the median of the merged samples (subsession means), not of the raw readings
    assert med.medians[pair.better].median == pytest.approx(np.median(a.merged))


def test_always_valid_falls_back_to_the_looks_and_says_so() -> None:
    med = compare_pi("t", "s", "lower", _heavy(8, 60, factor=3.0), statistic="median")
    (pair,) = med.ranking.pairs
    assert pair.comparison is not None and pair.comparison.shift is not None
    p = pair.comparison.shift.p_value
    # at cycle 53 (look 5: alpha / 30) the pair is decided when p is below that level
    look = look_level(0.01, 53)
    assert look is not None and p < look[1]
    d = compare_decision(med.ranking, None, 53, statistic="median")
    assert d.done and d.decided
    assert "Mann-Whitney p <" in d.reason and "look 5" in d.reason
    assert "no always-valid e-value" in d.reason
    # between looks it never stops, whatever the data say
    assert not compare_decision(med.ranking, None, 54, statistic="median").done
    # with sequential="looks" the reason is the looks' own
    looks = compare_decision(med.ranking, None, 53, statistic="median", sequential="looks")
    assert looks.done and "no always-valid" not in looks.reason


def test_budget_end_names_the_test_and_noethers_estimate() -> None:
    rng = np.random.default_rng(3)
    data = {"a": rng.lognormal(0.0, 1.0, 30), "b": rng.lognormal(0.02, 1.0, 30)}
    med = compare_pi("t", "s", "lower", data, statistic="median")
    d = compare_decision(med.ranking, None, 30, max_rounds=30, statistic="median")
    assert d.done and not d.decided
    assert "Noether asks for" in d.reason and "Mann-Whitney p <" in d.reason
    assert d.rounds_left is not None and d.rounds_left > 0
    every = compare_decision(
        med.ranking, None, 30, max_rounds=30, statistic="median", sequential="every-cycle"
    )
    assert "Noether asks for" in every.reason


def test_a_summary_cannot_be_ranked_on_the_median() -> None:
    rng = np.random.default_rng(0)
    data: dict[str, np.ndarray | SummaryStats] = {
        "a": rng.normal(1.0, 0.1, 30),
        "old": SummaryStats(1.0, 0.01, 30),
    }
    med = compare_pi("t", "s", "lower", data, statistic="median")
    assert med.ranking.order == ("a", "old")
    assert med.ranking.problems["old"] == NO_SAMPLES
    assert med.ranking.pairs[0].status == "undecided"
    assert NO_SAMPLES in med.ranking.pairs[0].note


def test_statistic_is_validated() -> None:
    with pytest.raises(ValueError, match="statistic"):
        compare_pi("t", "s", "lower", _heavy(), statistic="mode")  # type: ignore[arg-type]
    med = compare_pi("t", "s", "lower", _heavy(), statistic="median")
    with pytest.raises(ValueError, match="statistic"):
        compare_decision(med.ranking, None, 10, statistic="mode")  # type: ignore[arg-type]


def _result(statistic: str) -> CompareResult:
    comp = compare_pi("t", "s", "lower", _heavy(), statistic=statistic)  # type: ignore[arg-type]
    d = compare_decision(comp.ranking, None, 53, statistic=statistic)  # type: ignore[arg-type]
    return CompareResult(
        study="s", store="", pi="t", comparisons=[comp], decision=d, seed=1,
        fixed_order=False, cycles=53, trials_total=106,
    )  # fmt: skip


def test_json_csv_and_table_label_the_shift() -> None:
    res = _result("median")
    doc = comparison_dict(res.comparisons[0])
    assert doc["statistic"] == "median"
    (pair,) = doc["pairs"]
    assert pair["e_value"] is None  # not the median's rule
    assert pair["mann_whitney_p"] < 0.002 and pair["hodges_lehmann"]["method"] == "asymptotic"
    rows = list(csv.DictReader(io.StringIO(rows_to_csv(CSV_FIELDS, csv_rows(res)))))
    assert rows[1]["effect"] == "Hodges-Lehmann shift"
    assert float(rows[1]["shift_to_best_low"]) > 0.0
    assert rows[0]["median"] and rows[0]["statistic"] == "median"
    assert list(rows[0])[-1] == "verdict"
    out = io.StringIO()
    render_comparison(res, Console(file=out, width=200))
    text = out.getvalue()
    assert "HL shift vs best" in text and "median [CI]" in text
    assert "Hodges-Lehmann shift of location" in text and "Welch p" not in text
    md = compare_markdown(res.study, res.decision.reason, csv_rows(res))
    assert "estimate (CI)" in md and "| median " in md and "HL shift +" in md
    # the mean's table is unchanged: means, Welch and no shift
    mean = _result("mean")
    out = io.StringIO()
    render_comparison(mean, Console(file=out, width=200))
    assert "Welch p" in out.getvalue() and "HL shift" not in out.getvalue()
    mrows = csv_rows(mean)
    assert mrows[1]["effect"] == "difference of means" and "shift_to_best" not in mrows[1]


def _invoke(args: list[str]):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, ["compare", *args], catch_exceptions=False)


def test_from_files_on_the_median() -> None:
    res = _invoke(["--from", "--median", str(DATA / "hyperfine_sqlite_sync.json"), "--json", "-"])
    data = json.loads(res.stdout)
    (comp,) = data["comparisons"]
    assert comp["statistic"] == "median"
    assert "Hodges-Lehmann" in comp["method"]
    assert "hodges_lehmann" in comp["pairs"][0]
    assert "Mann-Whitney" in data["reason"] or "Noether" in data["reason"]


def test_median_flag_is_quick_mode_only(write_study, py: str) -> None:  # type: ignore[no-untyped-def]
    path = write_study(
        f'[study]\nname = "m"\n[benchmark]\ncommand = ["{py}", "-c", "pass"]\n'
        '[[variant]]\nname = "a"\n[[variant]]\nname = "b"\n'
    )
    res = _invoke([str(path), "--median"])
    assert res.exit_code == 2 and 'statistic = "median"' in res.output


COUNTED = """
[study]
name = "med"
[benchmark]
command = ["{py}", "-c", '''
import pathlib, random, sys
p = pathlib.Path(sys.argv[1])
k = int(p.read_text()) if p.exists() else 0
p.write_text(str(k + 1))
random.seed(1000 * k + int(sys.argv[2]))
print(f"v={{random.lognormvariate(0.0, 1.0) * float(sys.argv[3]):.6f}}")
''', "{{counter}}", "{{stream}}", "{{mu}}"]
[params]
counter = "x"
stream = 0
mu = 1.0
[[variant]]
name = "A"
params = {{ counter = "{tmp}/a.count", stream = 1 }}
[[variant]]
name = "B"
params = {{ counter = "{tmp}/b.count", stream = 2, mu = 8.0 }}
[[pi]]
name = "v"
source = "regex"
pattern = 'v=([0-9.-]+)'
statistic = "median"
[stop]
max_rounds = 30
"""


def test_study_file_with_statistic_median_decides(write_study, py: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = write_study(COUNTED.format(py=py, tmp=tmp_path), "med.toml")
    out = tmp_path / "r.json"
    res = _invoke([str(path), "--no-overhead", "-q", "--seed", "1", "--json", str(out)])
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    assert data["decided"] and "Mann-Whitney p <" in data["reason"]
    # at a look once each variant has 10 merged samples: B is 8x A on the median
    assert data["schedule"]["cycles"] in (10, 15, 23)
    (comp, *_) = data["comparisons"]
    assert comp["statistic"] == "median" and comp["order"] == ["A", "B"]
    assert "subsession means" in comp["method"]
    b = comp["variants"][1]
    assert b["effect"] == "Hodges-Lehmann shift" and b["relative_to_best_low"] > 1.0
