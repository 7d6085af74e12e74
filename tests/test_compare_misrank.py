"""Issue #40, part 2: a variant without a valid interval must not make the other "best".

Two ``pyperf --fast`` files (20 values each, B 1.16x slower): A's values drift, no
subsession size brings their lag-1 autocorrelation within the limit, and A was ranked
last with ``n/a`` while B, the slower, was called ``best``.  A variant without an
interval still ranks below every variant with one, but no variant is ``best`` then,
and what the raw samples say (medians, Mann-Whitney) is reported instead.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from click.testing import CliRunner

from assay.cli import main
from assay.stats.compare import (
    InsufficientDataError,
    SummaryStats,
    analyze_variant,
    rank_variants,
    raw_comparison,
)
from assay.studies.compare import compare_files, variant_rows

FloatArray = npt.NDArray[np.float64]


def _walk(rng: np.random.Generator, level: float, n: int = 20) -> FloatArray:
    """``n`` values around ``level`` that wander (a random walk of 1/3 % steps)."""
    return level * (1.0 + 0.01 * np.cumsum(rng.normal(0.0, 1.0, n)) / 3.0)


def _pair() -> tuple[FloatArray, FloatArray]:
    """A (10 ms) and B (1.16x slower), seeded so that A has no valid interval and B has."""
    rng = np.random.default_rng(0)
    return _walk(rng, 0.010), _walk(rng, 0.0116)


def _pyperf(path: Path, name: str, values: FloatArray) -> Path:
    doc = {
        "version": "1.0",
        "metadata": {"name": name, "unit": "second"},
        "benchmarks": [{"metadata": {"name": name}, "runs": [{"values": values.tolist()}]}],
    }
    path.write_text(json.dumps(doc))
    return path


def _has_interval(x: FloatArray) -> bool:
    try:
        analyze_variant(x)
    except InsufficientDataError:
        return False
    return True


def test_the_pair_reproduces_the_issue() -> None:
    a, b = _pair()
    assert not _has_interval(a) and _has_interval(b)
    assert float(np.median(b) / np.median(a)) == pytest.approx(1.16, abs=0.03)


def test_compare_from_pyperf_does_not_call_the_slower_best(tmp_path: Path) -> None:
    a, b = _pair()
    fa = _pyperf(tmp_path / "a.json", "a", a)
    fb = _pyperf(tmp_path / "b.json", "b", b)
    res = CliRunner().invoke(
        main, ["compare", "--from", str(fa), str(fb), "--json", str(tmp_path / "r.json")]
    )
    assert res.exit_code == 5, res.output  # not decided: A has no interval
    text = " ".join(res.output.split())
    # before: "1 │ b │ 11.60 ms ± 0.14 ms │ ... │ best"
    assert "best" not in [line.split("│")[-1].strip() for line in res.output.splitlines()]
    assert "a looks better (lower is better)" in text
    assert "a's median 0.01001 is 13.7% lower than b's 0.01159" in text
    assert "n/a (median 10.0" in text
    doc = json.loads((tmp_path / "r.json").read_text())
    rows = doc["comparisons"][0]["variants"]
    # the variant with an interval still ranks above the one without
    assert [r["variant"] for r in rows] == ["b", "a"]
    assert [r["verdict"] for r in rows] == ["undecided", "undecided"]
    assert "mean" in rows[0] and "mean" not in rows[1]
    assert rows[1]["raw_vs"] == "b"
    assert rows[1]["raw_median"] == pytest.approx(float(np.median(a)))
    assert rows[1]["raw_relative"] == pytest.approx(np.median(a) / np.median(b) - 1)
    assert rows[1]["raw_mann_whitney_p"] < 1e-6
    assert not doc["decided"]
    # the answer names no leader: it says what the raw samples say (before: "`b` leads")
    assert "leads on" not in text
    assert "answer: not decided from the results given on wall_time" in text
    assert "`a` has no valid CI; its median is -13.7% against `b`'s" in text


def test_compare_files_on_the_median_says_the_same(tmp_path: Path) -> None:
    a, b = _pair()
    fa = _pyperf(tmp_path / "a.json", "a", a)
    fb = _pyperf(tmp_path / "b.json", "b", b)
    res = compare_files([str(fa), str(fb)], statistic="median")
    rows = variant_rows(res.comparisons[0])
    assert [r["variant"] for r in rows] == ["b", "a"]
    assert rows[0]["verdict"] != "best"
    assert any("a looks better" in w for w in res.warnings)
    assert "a looks better" in res.decision.reason


def _ar1(rng: np.random.Generator, n: int, phi: float, level: float) -> FloatArray:
    e = rng.normal(0.0, 1.0, n)
    x = np.empty(n)
    x[0] = e[0]
    for i in range(1, n):
        x[i] = phi * x[i - 1] + e[i]
    return level + 0.02 * level * x


@pytest.mark.parametrize("direction", ["lower", "higher"])
def test_small_autocorrelated_pairs_never_misrank(direction: str) -> None:
    """Many small strongly autocorrelated pairs: whenever one side has no interval, it
    ranks below every side with one, nothing is called best, and its raw comparison is
    the medians and Mann-Whitney of the raw samples against the first-ranked side."""
    from scipy.stats import mannwhitneyu

    rng = np.random.default_rng(40)
    seen = 0
    for _ in range(60):
        n = int(rng.integers(8, 25))
        x = _ar1(rng, n, 0.9, 1.0)
        y = _ar1(rng, n, 0.9, 1.1)
        r = rank_variants({"x": x, "y": y}, direction)  # type: ignore[arg-type]
        if not r.problems:
            continue
        seen += 1
        analysed = [k for k in r.order if k in r.variants]
        assert list(r.order[: len(analysed)]) == analysed  # never above a valid one
        assert not r.decided
        from assay.designs.compare import compare_pi

        c = compare_pi("t", "s", direction, {"x": x, "y": y})  # type: ignore[arg-type]
        assert variant_rows(c)[0]["verdict"] != "best"
        first = r.order[0]
        for name, rc in r.raw.items():
            assert name in r.problems and rc.other == first
            xs = {"x": x, "y": y}
            assert rc.median == pytest.approx(float(np.median(xs[name])))
            assert rc.other_median == pytest.approx(float(np.median(xs[first])))
            want = mannwhitneyu(xs[name], xs[first]).pvalue
            assert rc.mann_whitney_p == pytest.approx(want, rel=1e-6)
            assert "on the raw samples" in r.problems[name]
            note = next(p.note for p in r.pairs if name in (p.better, p.worse))
            assert "on the raw samples" in note
    assert seen >= 5  # the shapes do reach the case


def test_raw_comparison_words() -> None:
    rc = raw_comparison("a", [1.0, 1.1, 1.2, 1.0, 1.1], "b", [2.0, 2.1, 2.2, 2.1, 2.0])
    assert rc.looks_better
    assert "a's median 1.1 is 47.6% lower than b's 2.1" in rc.text(0.05)
    assert rc.text(0.05).endswith("a looks better (lower is better)")
    assert rc.text(0.001).endswith("no difference shown")
    up = raw_comparison("a", [1.0, 1.1, 1.2, 1.0, 1.1], "b", [2.0, 2.1, 2.2, 2.1, 2.0], "higher")
    assert up.text(0.05).endswith("b looks better (higher is better)")


def test_summary_side_gets_no_raw_comparison() -> None:
    a, _ = _pair()
    r = rank_variants({"a": a, "s": SummaryStats(0.0116, 1e-8, 5)})
    assert r.order == ("s", "a") and r.raw == {}
    assert "on the raw samples" not in r.problems["a"]


def test_all_analysed_still_best() -> None:
    rng = np.random.default_rng(3)
    from assay.designs.compare import compare_pi

    c = compare_pi(
        "t", "s", "lower", {"a": rng.normal(1.2, 0.1, 60), "b": rng.normal(1.0, 0.1, 60)}
    )
    rows = variant_rows(c)
    assert rows[0]["variant"] == "b" and rows[0]["verdict"] == "best"
    assert c.ranking.raw == {}
