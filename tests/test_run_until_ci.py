"""The pure run-until-CI design: known-truth checks of analyze_pi, analyze_wps and decide."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.designs.run_until_ci import (
    CUT_CONFIRM_ALPHA,
    CUT_CONFIRM_ROUNDS,
    WPS_PI,
    RoundData,
    analyze_pi,
    analyze_wps,
    cut_confirmed,
    decide,
    round_segment,
)
from assay.spec import PISpec, StopSpec, WorkSpec
from assay.stats.intervals import t_interval


def wps_rounds(
    rng: np.random.Generator, works: list[float], v: float, alpha: float
) -> list[RoundData]:
    return [RoundData(work=w, duration=alpha + w / v + rng.normal(0, 0.002)) for w in works]


def test_wps_recovers_speed_and_setup_time() -> None:
    rng = np.random.default_rng(4)
    works = list(rng.permutation(np.linspace(50, 1000, 40)))
    r = analyze_wps(
        wps_rounds(rng, works, v=2000.0, alpha=0.05),
        StopSpec(),
        WorkSpec(min=10, max=1000, short_round=0.01),
    )
    assert r.name == WPS_PI and r.met
    assert r.low < 2000.0 < r.high
    assert r.extra["alpha_s"] == pytest.approx(0.05, abs=0.005)


def test_wps_ignores_short_rounds() -> None:
    rng = np.random.default_rng(5)
    good = wps_rounds(rng, list(rng.permutation(np.linspace(200, 1000, 30))), 2000.0, 0.05)
    # short rounds that follow another law must not pull the estimate
    short = [RoundData(work=w, duration=0.01) for w in (10.0, 20.0, 40.0)]
    r = analyze_wps(short + good, StopSpec(), WorkSpec(min=10, max=1000, short_round=0.1))
    assert r.n_raw == 30
    assert r.low < 2000.0 < r.high


def test_readings_path_drops_warmup_rounds() -> None:
    rounds = [RoundData(reading=100.0)] * 3 + [
        RoundData(reading=10.0 + 0.01 * (i % 5)) for i in range(40)
    ]
    r = analyze_pi(PISpec(name="t"), rounds, StopSpec(warmup_rounds=3))
    assert r.warmup_removed == 3 and r.n_raw == 40
    assert 10.0 <= r.mean <= 10.05


def test_unit_readings_rounds_without_stable_segment_are_rejected() -> None:
    rng = np.random.default_rng(2)
    plateaus = np.repeat([5.0, 0.0, 10.0], 100) + rng.normal(0, 0.1, 300)
    stable = 10.0 + rng.normal(0, 0.1, 300)
    r = analyze_pi(
        PISpec(name="t"),
        [RoundData(units=plateaus), RoundData(units=stable)],
        StopSpec(warmup_removal="edm-pilot"),
    )
    assert r.rounds_rejected == 1
    assert 150 < r.n_raw <= 300  # Pilot's EDM also trims some of the clean round


def test_decide_reasons() -> None:
    pi = PISpec(name="t")
    stop = StopSpec(max_rounds=50, max_time=100.0)
    rng = np.random.default_rng(0)
    good = analyze_pi(pi, [RoundData(reading=float(x)) for x in rng.normal(10, 0.1, 30)], stop)
    wide = analyze_pi(pi, [RoundData(reading=float(x)) for x in rng.normal(10, 5, 60)], stop)
    first = decide([good], [pi], stop, rounds_done=30, rounds_failed=0, elapsed=1)
    assert not first.done and first.target_met and first.rounds_left == 1  # to confirm
    confirmed = decide([good], [pi], stop, rounds_done=31, rounds_failed=0, elapsed=1, met_streak=1)
    assert confirmed.done and confirmed.reason.startswith("target reached")
    once = StopSpec(max_rounds=50, max_time=100.0, confirm_rounds=1)
    assert decide([good], [pi], once, rounds_done=30, rounds_failed=0, elapsed=1).done
    d = decide([wide], [pi], stop, rounds_done=3, rounds_failed=0, elapsed=1)
    assert not d.done and d.rounds_left is not None and d.rounds_left > 0
    assert (
        "max_rounds"
        in decide([wide], [pi], stop, rounds_done=50, rounds_failed=0, elapsed=1).reason
    )
    assert (
        "max_time" in decide([wide], [pi], stop, rounds_done=3, rounds_failed=0, elapsed=100).reason
    )
    assert "failed" in decide([wide], [pi], stop, rounds_done=10, rounds_failed=6, elapsed=1).reason


def test_common_cut_removes_the_same_warmup_from_every_round() -> None:
    rng = np.random.default_rng(8)
    rounds = []
    for _ in range(7):
        x = rng.normal(10.0, 1.0, 300)
        x[:40] += 4.0  # the workload's warm-up: in every round
        rounds.append(RoundData(units=x))
    r = analyze_pi(PISpec(name="t"), rounds, StopSpec())
    assert r.rounds_rejected == 0
    per_round = r.warmup_removed / 7
    assert 35 <= per_round <= 50
    assert r.n_raw == 7 * 300 - r.warmup_removed
    assert abs(r.mean - 10.0) < 0.15


def _ar1_rounds(rng: np.random.Generator, rounds: int, n: int, phi: float) -> list[np.ndarray]:
    """Stationary AR(1) unit readings (sd 1 around 10), one series cut into rounds."""
    e = rng.normal(0.0, np.sqrt(1 - phi * phi), rounds * n)
    x = np.empty(rounds * n)
    state = rng.normal()
    for i, v in enumerate(e):
        state = phi * state + v
        x[i] = state
    return list(10.0 + x.reshape(rounds, n))


def test_wandering_of_stationary_ar_readings_is_not_cut_as_a_warmup() -> None:
    """Within a round, AR(1) 0.9 wandering looks like change points; across rounds it
    lands in the heads as often above as below: the common cut is not confirmed."""
    rng = np.random.default_rng(11)
    units = _ar1_rounds(rng, 12, 200, 0.9)
    segments = [round_segment(u) for u in units]
    # the premise: the rounds' own segments would cut a common head or tail
    heads = [s[0] for s in segments if s is not None]
    tails = [200 - s[1] for s in segments if s is not None]
    assert np.median(heads) > 0 or np.median(tails) > 0
    r = analyze_pi(PISpec(name="t"), [RoundData(units=u) for u in units], StopSpec())
    assert r.warmup_removed == 0 and r.n_raw == 12 * 200


def test_a_cut_is_confirmed_by_rounds_that_agree_and_stands_on_few_rounds() -> None:
    rng = np.random.default_rng(5)
    warm = []
    for _ in range(6):
        x = rng.normal(10.0, 1.0, 200)
        x[:30] += np.linspace(1.5, 0.0, 30)  # a modest warm-up, in every round
        warm.append(x)
    assert cut_confirmed(warm, 30, 0, at_head=True)
    cool = [np.r_[rng.normal(10, 1, 170), rng.normal(9, 1, 30)] for _ in range(6)]
    assert cut_confirmed(cool, 0, 30, at_head=False)
    flat = [rng.normal(10.0, 1.0, 200) for _ in range(CUT_CONFIRM_ROUNDS - 1)]
    assert cut_confirmed(flat, 40, 0, at_head=True)  # too few rounds to judge: it stands
    # rounds too short to have both a cut and a rest do not count
    assert cut_confirmed([np.ones(20)] * 6, 30, 0, at_head=True)
    short = [rng.normal(10.0, 1.0, 20) for _ in range(6)]  # shorter than the tail cut
    assert cut_confirmed(cool[:2] + short, 0, 30, at_head=False)


@given(
    st.lists(st.floats(-1.0, 1.0), min_size=CUT_CONFIRM_ROUNDS, max_size=12),
    st.floats(0.1, 5.0),
)
@settings(max_examples=60, deadline=None)
def test_a_cut_is_confirmed_exactly_when_the_rounds_differences_exclude_zero(
    noise: list[float], shift: float
) -> None:
    """The rule is the t-interval of the per-round differences: a head lifted by
    ``shift + noise`` in every round."""
    rounds = [np.r_[np.full(10, 10.0 + shift + e), np.full(40, 10.0)] for e in noise]
    diffs = np.array([float(r[:10].mean() - r[10:].mean()) for r in rounds])
    ci = t_interval(diffs, 1.0 - CUT_CONFIRM_ALPHA)
    expect = not ci.low <= 0.0 <= ci.high
    assert cut_confirmed(rounds, 10, 0, at_head=True) == expect


def test_a_harmonic_pi_with_a_reading_of_zero_says_so_and_the_others_are_reported(
    tmp_path: object,
) -> None:
    """Issue #44: a reading of 0 in a harmonic-mean PI ended the study in a ValueError
    from the subsession search; now that PI has no interval and says why, and the
    study's other PIs are analysed as ever."""
    import json
    import sys
    from pathlib import Path

    from click.testing import CliRunner

    from assay.cli import main

    d = Path(str(tmp_path))
    counter = d / "n"
    code = (  # every third trial reads a rate of 0
        f"import random; from pathlib import Path; p = Path({str(counter)!r}); "
        "n = int(p.read_text()) if p.exists() else 0; p.write_text(str(n + 1)); "
        "print('rate=%s time=%s' % (0 if n % 3 == 1 else 10 + random.random(), "
        "1 + random.random()))"
    )
    (d / "s.toml").write_text(
        f'[study]\nname = "h"\n[benchmark]\ncommand = [{json.dumps(sys.executable)}, "-c", '
        f"{json.dumps(code)}]\n"
        '[[pi]]\nname = "rate"\nsource = "regex"\npattern = "rate=([0-9.]+)"\n'
        'mean = "harmonic"\ndirection = "higher"\n'
        '[[pi]]\nname = "time"\nsource = "regex"\npattern = "time=([0-9.]+)"\n'
        "[stop]\nmax_rounds = 12\nci_width = 0.2\n"
    )
    res = CliRunner().invoke(
        main,
        ["run", str(d / "s.toml"), "-q", "--json", str(d / "r.json"), "--store",
         str(d / "s.db"), "--no-monitor", "--no-overhead"],
    )  # fmt: skip
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    out = json.loads((d / "r.json").read_text())
    by_name = {p["name"]: p for p in out["pis"]}
    assert "mean = 'harmonic' needs positive readings" in by_name["rate"]["note"]
    assert " is 0;" in by_name["rate"]["note"]
    assert np.isfinite(by_name["time"]["mean"]) and "harmonic" not in (
        by_name["time"]["note"] or ""
    )


def test_a_pi_wider_than_its_target_says_why_and_how_many_rounds_would_meet_it() -> None:
    """Issue #45: `true` on a busy machine spent its 1,000 rounds and said only "the
    target is not met".  The note names the spread and the rounds the target needs at
    that spread (the half-width shrinks as 1/sqrt(n)); a met PI has no such note."""
    from assay.designs.run_until_ci import analyze_samples

    rng = np.random.default_rng(7)
    x = rng.lognormal(0.0, 0.5, 200)
    wide = analyze_samples(PISpec(name="t"), x, StopSpec(ci_width=0.01), "readings", 200)
    assert not wide.met and wide.required_raw is not None
    assert f"±1.0% needs about {wide.required_raw:,} rounds" in wide.note
    assert "coefficient of variation" in wide.note
    met = analyze_samples(PISpec(name="t"), x, StopSpec(ci_width=0.5), "readings", 200)
    assert met.met and "not met" not in met.note
