"""MSER, the warm-up truncation of readings-only studies (``assay.stats.warmup``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import assay.stats.autocorr as autocorr
from assay.cli import main
from assay.designs.run_until_ci import RoundData, analyze_pi, analyze_samples, pi_samples
from assay.spec import PISpec, StopSpec
from assay.stats.warmup import head_differs, mser_statistic, mser_truncation

values = arrays(np.float64, st.integers(3, 60), elements=st.floats(-1e3, 1e3, allow_nan=False))


def by_definition(x: np.ndarray) -> np.ndarray:
    """White (1997): sum((x[d:] - mean(x[d:]))**2) / (n - d)**2, d = 0 .. n - 2."""
    return np.array(
        [float(np.sum((x[d:] - x[d:].mean()) ** 2)) / (x.size - d) ** 2 for d in range(x.size - 1)]
    )


@settings(max_examples=200, deadline=None)
@given(values)
def test_the_statistic_is_the_definition(x: np.ndarray) -> None:
    scale = max(float(np.ptp(x)) ** 2, 1e-9)
    np.testing.assert_allclose(mser_statistic(x), by_definition(x), rtol=1e-9, atol=1e-9 * scale)


# sixteenths, shifted by whole numbers and scaled by powers of two: exact arithmetic
exact = arrays(
    np.float64, st.integers(3, 60), elements=st.integers(-(10**4), 10**4).map(lambda v: v / 16)
)


@settings(max_examples=200, deadline=None)
@given(exact, st.integers(-1000, 1000), st.sampled_from([0.25, 0.5, 2.0, 8.0]), st.integers(1, 5))
def test_the_cut_ignores_units_and_offsets(
    x: np.ndarray, shift: int, scale: float, batch: int
) -> None:
    d = mser_truncation(x, batch=batch)
    assert d % batch == 0 and 0 <= d <= x.size // 2
    # a sum of squares at ~1e-9 of another is a tie up to rounding: skip those draws
    stat = mser_statistic(x)
    if np.ptp(x) > 0 and np.ptp(np.sort(stat)[:2]) > 1e-9 * stat.max():
        assert mser_truncation(x * scale + shift, batch=batch) == d


@pytest.mark.parametrize("head", [1, 4, 9, 20])
def test_a_head_at_another_level_is_cut_whole(head: int) -> None:
    rng = np.random.default_rng(head)
    x = np.r_[np.full(head, 5.0), np.zeros(50)] + 0.01 * rng.standard_normal(head + 50)
    for batch in (1, 5):
        d = mser_truncation(x, batch=batch)
        # the whole head; past it MSER may take a few more (its minimum over noise)
        assert head <= d <= x.size // 2 and d % batch == 0
        assert abs(x[d:].mean()) < 0.01


def test_nothing_is_cut_without_a_warm_up_or_without_data() -> None:
    assert mser_truncation(np.full(40, 3.0)) == 0
    assert mser_truncation(np.array([1.0, 2.0])) == 0
    assert mser_truncation(np.array([1.0, np.nan, 2.0, 3.0])) == 0
    rng = np.random.default_rng(5)
    cuts = [mser_truncation(rng.standard_normal(60)) for _ in range(400)]
    # i.i.d. values: MSER's known false truncations, rare and short
    assert np.mean([c > 0 for c in cuts]) < 0.4 and np.mean(cuts) < 3


def test_the_gate_keeps_the_heads_mser_cuts_from_stationary_values() -> None:
    rng = np.random.default_rng(8)
    kept = cut = 0
    for _ in range(400):
        x = rng.standard_normal(60)
        d = mser_truncation(x)
        kept += d > 0
        cut += d > 0 and head_differs(x, d)
    assert kept > 80  # MSER alone cuts in about a third of them
    assert cut / 400 <= 0.05  # the gate: at most its alpha over all cut points


def test_the_gate_cuts_a_real_warm_up() -> None:
    rng = np.random.default_rng(9)
    for head in (1, 3, 8):  # one cold first run too, ten of the rest's sds off
        x = np.r_[np.full(head, 1.5), np.ones(40)] + 0.05 * rng.standard_normal(head + 40)
        d = mser_truncation(x)
        assert d >= head and head_differs(x, d)
    near = np.r_[1.08, np.ones(40) + 0.05 * rng.standard_normal(40)]  # within the spread
    assert not head_differs(near, 1)
    assert not head_differs(np.ones(10), 0) and not head_differs(np.ones(3), 2)


def test_the_gate_allows_for_autocorrelation_and_heavy_tails() -> None:
    rng = np.random.default_rng(14)  # a series whose start MSER cuts
    ar = np.zeros(400)
    for i in range(1, 400):
        ar[i] = 0.8 * ar[i - 1] + rng.standard_normal()
    x = 10.0 + ar
    # an excursion of AR(1) 0.8 noise at the start: a cut for MSER, not for the gate
    d = mser_truncation(x)
    t_plain = abs(x[:d].mean() - x[d:].mean()) / (
        x[d:].std(ddof=1) * np.sqrt(1 / d + 1 / (400 - d))
    )
    assert d > 0 and t_plain > 3 and not head_differs(x, d)
    logn = rng.lognormal(0.0, 1.0, 200)
    logn[0] = logn.max() * 1.5  # far in a heavy tail, not in its logarithms
    assert not head_differs(logn, 1)


def test_auto_warm_up_in_a_readings_study() -> None:
    rng = np.random.default_rng(2)
    warm = 10.0 * (1 + 0.5 * 0.5 ** np.arange(60)) + 0.2 * rng.standard_normal(60)
    rounds = [RoundData(reading=float(v), duration=1.0) for v in warm]
    pi = PISpec(name="t", unit="s")
    auto = pi_samples(pi, rounds, StopSpec(warmup_rounds="auto"))
    assert auto.removed == auto.first_round > 0
    assert "MSER" in auto.method
    res = analyze_pi(pi, rounds, StopSpec(warmup_rounds="auto"))
    assert res.warmup_removed == auto.removed and abs(res.mean - 10.0) < 0.1
    plain = analyze_pi(pi, rounds, StopSpec(warmup_rounds=0))
    assert plain.warmup_removed == 0 and plain.mean > res.mean
    few = pi_samples(pi, rounds[:9], StopSpec(warmup_rounds="auto"))
    assert few.removed == 0  # too few readings to look for one


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(5, 120),
    phi=st.sampled_from([0.0, 0.5, 0.95]),
    warm=st.sampled_from([0.0, 0.5]),
    harmonic=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_interval_reuses_the_warm_up_search_and_gives_what_its_own_would(
    n: int, phi: float, warm: float, harmonic: bool, seed: int
) -> None:
    """Issue #17: where the automatic warm-up cuts nothing, the interval takes its
    subsession search (the same one, on the same readings) instead of searching again:
    the same result as a search of its own, with one search per analysis (none again
    where no size qualified; a harmonic mean searches 1/x, its own)."""
    rng = np.random.default_rng(seed)
    e = np.zeros(n)
    for i in range(1, n):
        e[i] = phi * e[i - 1] + rng.standard_normal()
    x = 10.0 * (1 + warm * 0.5 ** np.arange(n)) + 0.3 * e
    pi = PISpec(name="t", unit="s", mean="harmonic" if harmonic else "arithmetic")
    stop = StopSpec(warmup_rounds="auto")
    got = pi_samples(pi, [RoundData(reading=float(v), duration=1.0) for v in x], stop)
    assert (got.searched is None) == (n < 10 or got.removed > 0)
    searches = 0
    real = autocorr.optimal_subsession

    def counted(*args: object, **kwargs: object) -> object:
        nonlocal searches
        searches += 1
        return real(*args, **kwargs)  # type: ignore[arg-type]

    fields = (got.samples, stop, got.method, got.rounds_used, got.removed, got.rejected)
    own = analyze_samples(pi, *fields)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(autocorr, "optimal_subsession", counted)
        shared = analyze_samples(pi, *fields, searched=got.searched)
    assert repr(shared) == repr(own)  # (repr: NaN fields compare equal)
    assert searches == (1 if got.searched is None or harmonic else 0)


def test_the_command_line_takes_auto_or_a_number(tmp_path: Path) -> None:
    store = str(tmp_path / "w.db")
    run = ["run", "-q", "-r", "12", "--min-rounds", "1", "--store", store, "--json", "-"]
    res = CliRunner().invoke(main, [*run, "-w", "auto", "--", "true"])
    assert res.exit_code in (0, 5), res.output
    (pi,) = json.loads(res.stdout)["pis"]
    assert pi["method"].startswith("readings, MSER warm-up removal")
    res = CliRunner().invoke(main, [*run, "--fresh", "-w", "3", "--", "true"])
    assert json.loads(res.stdout)["pis"][0]["warmup_removed"] == 3
    bad = CliRunner().invoke(main, [*run, "-w", "soon", "--", "true"])
    assert bad.exit_code == 2 and "neither a number of rounds" in bad.output
