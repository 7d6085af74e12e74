"""Host as a factor: the Kruskal–Wallis test of readings by host (order), the F test of
host beside the settings (run, compare, sweep), the warnings studies give when a
cluster's hosts disagree, and the refusal of differing hardware."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from assay.execute.dask_executor import hardware_differences
from assay.spec import parse_spec_data
from assay.stats.hosts import host_effect
from assay.store import TrialRecord
from assay.studies.base import host_warnings

samples = st.lists(
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), min_size=2, max_size=30
)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.text("abcdef", min_size=1, max_size=3), samples, min_size=2, max_size=4))
def test_host_effect_is_scipys_kruskal_and_ignores_host_order(
    groups: dict[str, list[float]],
) -> None:
    effect = host_effect(groups)
    values = [np.asarray(groups[h]) for h in sorted(groups)]
    if np.ptp(np.concatenate(values)) == 0:
        assert effect is None
        return
    assert effect is not None
    h, p = stats.kruskal(*values)
    assert effect.statistic == pytest.approx(h) and effect.p_value == pytest.approx(p)
    assert effect.hosts == tuple(sorted(groups))
    assert effect.medians == tuple(float(np.median(v)) for v in values)
    again = host_effect(dict(reversed(list(groups.items()))))
    assert again == effect


def test_host_effect_known_answers() -> None:
    rng = np.random.default_rng(1)
    same = {"a": rng.normal(10, 1, 40), "b": rng.normal(10, 1, 40)}
    shifted = {"a": rng.normal(10, 1, 40), "b": rng.normal(12, 1, 40)}
    e_same, e_shift = host_effect(same), host_effect(shifted)
    assert e_same is not None and e_same.p_value > 0.05
    assert e_shift is not None and e_shift.p_value < 1e-4
    assert host_effect({"a": [1.0, 2.0], "b": [3.0]}) is None  # b has one reading only


def _spec():  # type: ignore[no-untyped-def]
    return parse_spec_data(
        {
            "study": {"name": "h"},
            "benchmark": {"command": ["true"]},
            "pi": [{"name": "t", "unit": "s"}],
        },
        "h.toml",
    )


def _trials(by_host: dict[str, list[float]]) -> list[TrialRecord]:
    out = []
    for host, values in by_host.items():
        out += [
            TrialRecord(seq=len(out) + i, status="ok", host=host, readings={"t": v})
            for i, v in enumerate(values)
        ]
    return out


def test_hosts_that_disagree_are_named_in_a_warning() -> None:
    rng = np.random.default_rng(2)
    fast, slow = list(rng.normal(1.0, 0.01, 20)), list(rng.normal(1.2, 0.01, 20))
    (warning,) = host_warnings(_spec(), _trials({"fast": fast, "slow": slow}), label="v: ")
    assert warning.startswith("v: t: the hosts give different results (host as a factor: F(1, ")
    ratio = np.exp(np.mean(np.log(slow)) - np.mean(np.log(fast)))
    assert "fast ×1 (n=20)" in warning and f"slow ×{ratio:.3g} (n=20)" in warning


def test_a_slow_host_that_ran_two_of_sixteen_trials_is_named() -> None:
    # #41's case for one setting: ranks (Kruskal-Wallis) gave p = 0.06 and no warning
    rng = np.random.default_rng(4)
    trials = _trials(
        {"a": list(rng.lognormal(0, 0.1, 7)), "b": list(rng.lognormal(0, 0.1, 7)),
         "c": list(14 * rng.lognormal(0, 0.1, 2))}
    )  # fmt: skip
    (warning,) = host_warnings(_spec(), trials)
    found = re.search(r"c ×([0-9.]+) \(n=2\)", warning)
    assert found and float(found.group(1)) > 10
    # a host with one reading is left out: one slow trial is not a slow machine
    assert host_warnings(_spec(), trials[:-1]) == []


def test_hosts_that_agree_or_one_host_give_no_warning() -> None:
    rng = np.random.default_rng(3)
    same = _trials({"a": list(rng.normal(1, 0.01, 20)), "b": list(rng.normal(1, 0.01, 20))})
    assert host_warnings(_spec(), same) == []
    assert host_warnings(_spec(), _trials({"a": [1.0, 2.0, 3.0]})) == []


def test_differing_hardware_is_listed_property_by_property() -> None:
    workers = {
        "tcp://a:1": {"cpu_model": "X", "cpu_count": 8, "memory_bytes": 1},
        "tcp://b:1": {"cpu_model": "X", "cpu_count": 4, "memory_bytes": 1},
    }
    assert hardware_differences(workers) == ["cpu_count: 8 (tcp://a:1), 4 (tcp://b:1)"]
    workers["tcp://b:1"]["cpu_count"] = 8
    assert hardware_differences(workers) == []


def test_hosts_that_rank_the_variants_differently_are_named() -> None:
    from assay.studies.compare import host_comparisons, host_disagreement

    spec = parse_spec_data(
        {
            "study": {"name": "c"},
            "benchmark": {"command": ["true"]},
            "pi": [{"name": "t", "unit": "s"}],
            "variant": [{"name": "x"}, {"name": "y"}],
        },
        "c.toml",
    )
    rng = np.random.default_rng(4)
    trials, seq = [], 0
    for host, means in (("a", {"x": 1.0, "y": 1.2}), ("b", {"x": 1.2, "y": 1.0})):
        for cycle in range(30):
            for v in ("x", "y"):
                reading = {"t": float(rng.normal(means[v], 0.01))}
                setting = {"variant": v, "cycle": cycle}
                trials.append(
                    TrialRecord(seq=seq, status="ok", host=host, setting=setting, readings=reading)
                )
                seq += 1
    by_host = host_comparisons(spec, spec.pis[0], trials)
    assert {h: c.ranking.order for h, c in by_host.items()} == {"a": ("x", "y"), "b": ("y", "x")}
    warning = host_disagreement(by_host)
    assert warning is not None and "a: x > y; b: y > x" in warning
    # one host, or hosts that agree: nothing to say
    assert host_comparisons(spec, spec.pis[0], [t for t in trials if t.host == "a"]) == {}
    assert host_disagreement({"a": by_host["a"], "c": by_host["a"]}) is None


# --- a sweep: hosts compared within settings (#41) ------------------------------------


def _sweep_trials(slow: float, seed: int = 0) -> list[TrialRecord]:
    """Settings x = 1..6 (each 10x the last), 4 repetitions each, alternating hosts a and
    b; b's readings ``slow`` times a's; noise 5%."""
    rng = np.random.default_rng(seed)
    out = []
    for x in range(1, 7):
        for r in range(4):
            host = "a" if r % 2 == 0 else "b"
            v = 10.0**x * (slow if host == "b" else 1.0) * float(rng.lognormal(0, 0.05))
            t = TrialRecord(seq=len(out), status="ok", host=host, readings={"t": v})
            t.setting = {"x": x}
            out.append(t)
    return out


def test_a_slow_host_in_a_sweep_is_named_and_the_settings_are_not_taken_for_it() -> None:
    from assay.studies.base import setting_host_warnings

    (warning,) = setting_host_warnings(_spec(), _sweep_trials(7.7), ["x"])
    assert "the hosts give different results for the same settings" in warning
    assert "a ×1 (n=12), b ×7." in warning  # b's readings 7.7x a's (noise aside)
    # settings 10^x apart, hosts alike: no warning (raw readings by host would differ
    # by chance of which settings each host got, not here: each host has every setting)
    assert setting_host_warnings(_spec(), _sweep_trials(1.0), ["x"]) == []
    assert setting_host_warnings(_spec(), _sweep_trials(7.7)[::2], ["x"]) == []  # one host


def test_a_slow_host_that_ran_two_trials_of_sixteen_is_seen() -> None:
    """Seen on namespace hosts (#41): dynamic dispatch gave a host 14x slower 2 of 16
    trials; ranks of departures (Kruskal-Wallis) gave p = 0.059, the blocked F test
    sees the size of the two departures."""
    from assay.studies.base import setting_host_warnings

    rows = [  # (setting, host, seconds) as measured
        (1, "h2", 0.0836), (4, "h3", 0.0733), (2, "h4", 0.896), (3, "h2", 0.0670),
        (4, "h3", 0.0745), (2, "h3", 0.0656), (3, "h2", 0.0668), (4, "h3", 0.0635),
        (1, "h3", 0.0687), (2, "h2", 0.0661), (3, "h3", 0.0728), (3, "h4", 1.094),
        (4, "h2", 0.0643), (1, "h3", 0.0752), (1, "h2", 0.0683), (2, "h2", 0.0682),
    ]  # fmt: skip
    trials = []
    for seq, (x, host, v) in enumerate(rows):
        t = TrialRecord(seq=seq, status="ok", host=host, readings={"t": v})
        t.setting = {"x": x}
        trials.append(t)
    (warning,) = setting_host_warnings(_spec(), trials, ["x"])
    assert "h4 ×1" in warning and "(n=2)" in warning


def test_the_blocked_host_test_is_statsmodels_type_ii_anova() -> None:
    import pandas as pd
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm

    from assay.stats.hosts import host_block_effect

    rng = np.random.default_rng(3)
    settings_ = [s for s in "pqrs" for _ in range(5)]
    hosts = [str(rng.choice(["a", "b", "c"])) for _ in settings_]
    y = [
        ord(s) + (0.4 if h == "c" else 0.0) + rng.normal(0, 0.3)
        for s, h in zip(settings_, hosts, strict=True)
    ]
    effect = host_block_effect(y, settings_, hosts)
    frame = pd.DataFrame({"y": y, "s": settings_, "h": hosts})
    table = anova_lm(smf.ols("y ~ C(s) + C(h)", frame).fit(), typ=2)
    assert effect is not None
    assert effect.statistic == pytest.approx(table.loc["C(h)", "F"])
    assert effect.p_value == pytest.approx(table.loc["C(h)", "PR(>F)"])
    assert effect.df == (2, int(table.loc["Residual", "df"]))


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from("pqr"), st.sampled_from("abc"), st.floats(-100, 100)),
        min_size=4,
        max_size=30,
    ),
    st.floats(-1e3, 1e3),
)
def test_the_blocked_host_test_ignores_the_settings_levels_and_row_order(
    rows: list[tuple[str, str, float]], shift: float
) -> None:
    """Adding any constant to one setting's readings (the setting's own effect) or
    reordering the trials changes nothing."""
    from assay.stats.hosts import host_block_effect

    s, h, y = (list(c) for c in zip(*rows, strict=True))
    first = host_block_effect(y, s, h)
    moved = [v + (shift if k == "p" else 0.0) for v, k in zip(y, s, strict=True)]
    again = host_block_effect(moved[::-1], s[::-1], h[::-1])
    if first is None or again is None:
        return  # degenerate (nothing estimable or an exact fit): both may say so
    if first.p_value > 1e-9 and again.p_value > 1e-9:
        assert again.p_value == pytest.approx(first.p_value, rel=1e-4, abs=1e-9)


def test_the_blocked_host_test_keeps_its_level_when_hosts_agree() -> None:
    """400 sweeps of 6 settings x 4 trials on 3 hosts alike (normal noise on the log
    scale, hosts drawn at random per trial): false alarms at alpha 0.01 within the
    99.9th percentile of Binomial(400, 0.01) (11)."""
    from assay.stats.hosts import host_block_effect

    rng = np.random.default_rng(7)
    alarms = 0
    for _ in range(400):
        s = [k for k in range(6) for _ in range(4)]
        h = [str(rng.integers(3)) for _ in s]
        y = [k * 0.5 + rng.normal(0, 0.1) for k in s]
        e = host_block_effect(y, s, h)
        alarms += e is not None and e.p_value < 0.01
    assert alarms <= int(stats.binom.ppf(0.999, 400, 0.01))
