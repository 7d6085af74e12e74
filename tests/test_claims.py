"""Issue #62 part 1: claims in a study file, checked on their evidence.

``[[claim]]`` says the ratio of two variants' means lies at or above a bound, at or
below one, or within a margin of 1; its verdict (holds / fails / undecided) rests on the
ratio's interval at ``1 - 2 alpha`` (:mod:`assay.stats.claims`)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import optimize
from scipy import stats as sps

from assay.cli import exits
from assay.spec import SpecError, parse_spec_text
from assay.stats.claims import (
    ClaimRule,
    claim_level,
    judge_claim,
    paired_ratio_interval,
    ratio_interval,
)
from assay.stats.compare import SummaryStats, analyze_variant, compare_samples
from test_gate import QUICK, gate_study, invoke
from test_report_html import _result_schema


@pytest.mark.parametrize(
    ("kind", "bound", "low", "high", "verdict"),
    [
        ("at_least", 1.5, 1.6, 2.0, "holds"),
        ("at_least", 1.5, 1.5, 2.0, "holds"),  # the bound itself is in the region
        ("at_least", 1.5, 1.2, 1.4, "fails"),
        ("at_least", 1.5, 1.4, 1.6, "undecided"),
        ("at_most", 0.8, 0.6, 0.7, "holds"),
        ("at_most", 0.8, 0.85, 0.9, "fails"),
        ("at_most", 0.8, 0.75, 0.85, "undecided"),
        ("within", 0.1, 0.95, 1.08, "holds"),
        ("within", 0.1, 1.12, 1.3, "fails"),
        ("within", 0.1, 0.7, 0.85, "fails"),
        ("within", 0.1, 1.05, 1.15, "undecided"),
        ("within", 0.1, 0.8, 1.2, "undecided"),  # wider than the region: straddles both
        ("within", 0.1, -math.inf, math.inf, "undecided"),
    ],
)
def test_verdicts(kind: str, bound: float, low: float, high: float, verdict: str) -> None:
    v = judge_claim(ClaimRule(kind, bound), (low + high) / 2, low, high)  # type: ignore[arg-type]
    assert v.verdict == verdict, v.why


@given(
    kind=st.sampled_from(["at_least", "at_most", "within"]),
    bound=st.floats(0.01, 0.99),
    a=st.floats(0.01, 5.0),
    b=st.floats(0.01, 5.0),
)
def test_the_verdict_is_where_the_interval_lies(
    kind: str, bound: float, a: float, b: float
) -> None:
    low, high = min(a, b), max(a, b)
    rule = ClaimRule(kind, bound)  # type: ignore[arg-type]
    lo, hi = rule.region
    v = judge_claim(rule, (low + high) / 2, low, high)
    if lo <= low and high <= hi:
        assert v.verdict == "holds"
    elif high < lo or low > hi:
        assert v.verdict == "fails"
    else:
        assert v.verdict == "undecided"
    assert f"{low:.3g}" in v.why


def _fieller_reference(ma: float, va: float, mb: float, vb: float, df: float, level: float):
    """Fieller's set {R: (ma - R mb)^2 <= t^2 (va + R^2 vb)} solved by root finding."""
    t = sps.t.ppf(0.5 + level / 2, df)

    def f(r: float) -> float:
        return (ma - r * mb) ** 2 - t**2 * (va + r**2 * vb)

    est = ma / mb
    return optimize.brentq(f, 1e-9, est), optimize.brentq(f, est, 100 * est)


def test_the_ratio_interval_is_fiellers_at_90_percent() -> None:
    a = analyze_variant(SummaryStats(2.0, 0.04, 20))
    b = analyze_variant(SummaryStats(1.0, 0.01, 20))
    est, low, high = ratio_interval(a, b, 0.95)
    se2a, se2b = 0.04 / 20, 0.01 / 20
    df = (se2a + se2b) ** 2 / (se2a**2 / 19 + se2b**2 / 19)  # Welch-Satterthwaite
    ref = _fieller_reference(2.0, se2a, 1.0, se2b, df, 0.90)
    assert est == pytest.approx(2.0)
    assert (low, high) == pytest.approx(ref, rel=1e-6)
    assert claim_level(0.95) == 0.9


def test_the_always_valid_interval_is_wider() -> None:
    rng = np.random.default_rng(7)
    c = compare_samples(rng.normal(1.5, 0.1, 80), rng.normal(1.0, 0.1, 80))
    fixed = ratio_interval(c.a, c.b, 0.95)
    valid = ratio_interval(c.a, c.b, 0.95, always_valid=True)
    assert valid[1] < fixed[1] < fixed[2] < valid[2]


def test_error_rates_of_equivalence_at_the_margins() -> None:
    """A true ratio just outside the margin is called "holds" at most alpha of the time,
    one just inside is called "fails" at most alpha (2,000 seeded studies each;
    bench/bench_claims.py runs more cases)."""
    rng = np.random.default_rng(62)
    rule = ClaimRule("within", 0.05)
    holds_outside = fails_inside = 0
    n = 2000

    def stats(x: np.ndarray):  # type: ignore[no-untyped-def]
        return analyze_variant(SummaryStats(float(x.mean()), float(x.var(ddof=1)), x.size))

    for _ in range(n):
        den = stats(rng.normal(1.0, 0.05, 30))
        out, inside = stats(rng.normal(1.05, 0.05, 30)), stats(rng.normal(1.0, 0.05, 30))
        holds_outside += judge_claim(rule, *ratio_interval(out, den, 0.95)).verdict == "holds"
        fails_inside += judge_claim(rule, *ratio_interval(inside, den, 0.95)).verdict == "fails"
    # alpha 0.05; the binomial's 99.9% upper limit at 2,000 draws is about 0.067
    assert holds_outside / n <= 0.067
    assert fails_inside / n <= 0.067


STUDY = """
[study]
name = "s"
[benchmark]
command = ["sleep", "{{t}}"]
[params]
t = 0.01
[[variant]]
name = "a"
[[variant]]
name = "b"
params = {{ t = 0.02 }}
{claims}
"""


def _spec(claims: str):  # type: ignore[no-untyped-def]
    return parse_spec_text(STUDY.format(claims=claims), "s.toml")


def test_a_claim_is_read_with_its_region() -> None:
    spec = _spec('[[claim]]\nsays = "b is slower"\nratio = ["b", "a"]\nwithin = "10%"\n')
    (c,) = spec.claims
    assert c.rule == ClaimRule("within", 0.1) and c.ratio == ["b", "a"] and c.pi is None
    assert spec.stop.until == "ranking"


_C = '[[claim]]\nsays = "x"\n'
_BA = 'ratio = ["b", "a"]\n'


@pytest.mark.parametrize(
    ("claims", "said"),
    [
        (_C + _BA, "exactly one of at_least, at_most, within (got none)"),
        (_C + _BA + "at_least = 1.5\nat_most = 2.0\n", "(got at_least, at_most)"),
        (_C + 'ratio = ["b", "z"]\nat_least = 1.5\n', "'z' is not a variant (the variants: a, b)"),
        (_C + 'pi = "cpu"\n' + _BA + "at_least = 1.5\n", "'cpu' is not a [[pi]]"),
        (_C + _BA + 'within = "ten"\n', "expected a share such as"),
        (_C + _BA + "within = 1.5\n", "below 100%"),
        (_C + 'ratio = ["b"]\nat_least = 1.5\n', "expected two variant names"),
        (_C + 'ratio = ["b", { t = 1 }]\nat_least = 1.5\n', "{'t': 1} is not a variant"),
        (_C + 'ratio = ["a", "a"]\nat_least = 1.5\n', "a side against itself"),
        ('[stop]\nuntil = "claims"\n', "has none"),
    ],
)
def test_a_bad_claim_is_refused_naming_the_field(claims: str, said: str) -> None:
    with pytest.raises(SpecError) as exc:
        _spec(claims)
    assert said in str(exc.value)


def test_claims_outside_a_comparison_are_refused() -> None:
    text = (
        '[study]\nname = "r"\n[benchmark]\ncommand = ["true"]\n'
        '[[claim]]\nsays = "x"\nratio = ["b", "a"]\nat_least = 1.5\n'
    )
    with pytest.raises(SpecError, match="a claim compares two"):
        parse_spec_text(text, "r.toml")


def _claims_study(tmp_path: Path, old: float, new: float, claims: str) -> Path:
    study = gate_study(tmp_path, old, new)
    # gate_study's variants are "old" and "new"; its PI is "v" (exact readings)
    study.write_text(study.read_text() + claims)
    return study


def test_a_study_judges_its_claims_and_says_so_everywhere(tmp_path: Path) -> None:
    claims = (
        '[[claim]]\nsays = "new is at least 1.2x old"\nratio = ["new", "old"]\nat_least = 1.2\n'
        '[[claim]]\nsays = "new is the same as old within 5%"\nratio = ["new", "old"]\n'
        'within = "5%"\n'
    )
    study = _claims_study(tmp_path, 1.0, 1.3, claims)
    md = tmp_path / "r.md"
    res = invoke(tmp_path, "compare", *QUICK, str(study), "--json", "-", "--markdown", str(md))
    assert res.exit_code == exits.WORSE, res.output  # a claim fails: 1
    doc = json.loads(res.stdout)
    jsonschema.validate(doc, _result_schema(), cls=jsonschema.Draft202012Validator)
    holds, fails = doc["claims"]
    assert holds["verdict"] == "holds" and holds["ratio"] == ["new", "old"]
    assert holds["estimate"] == pytest.approx(1.3, rel=0.01)
    assert holds["low"] >= 1.2 and holds["confidence"] == 0.9
    assert holds["method"].startswith("one-sided test at alpha 0.05: Fieller's 90%")
    assert fails["verdict"] == "fails" and fails["low"] > 1.05
    assert fails["method"].startswith("two one-sided tests (TOST)")
    text = md.read_text()
    assert text.index("| claim |") < text.index("| PI |")  # the claims open the page
    assert "✅ holds" in text and "❌ fails" in text


def test_claims_that_hold_exit_0_and_an_undecided_one_5(tmp_path: Path) -> None:
    ok = '[[claim]]\nsays = "s"\nratio = ["new", "old"]\nat_least = 1.2\n'
    res = invoke(tmp_path, "compare", *QUICK, str(_claims_study(tmp_path, 1.0, 1.3, ok)))
    assert res.exit_code == exits.OK, res.output
    assert "claims" in res.stdout.splitlines()[0]  # the terminal opens with them
    edge = '[[claim]]\nsays = "s"\nratio = ["new", "old"]\nat_least = 1.3\n'
    other = tmp_path / "edge"
    other.mkdir()
    study = _claims_study(other, 1.0, 1.3, edge)  # the ratio is 1.3: on the bound
    res = invoke(tmp_path, "compare", *QUICK, str(study), "--json", "-")
    assert res.exit_code == exits.SHORT, res.output
    (c,) = json.loads(res.stdout)["claims"]
    assert c["verdict"] == "undecided" and "straddles 1.3" in c["why"]


def test_a_study_stops_when_its_claims_are_decided(tmp_path: Path) -> None:
    """``until = "claims"``: a 30% gap claimed "at least 1.1x" is decided on its
    always-valid interval, and the study stops there, exit 0."""
    claims = (
        '[[claim]]\nsays = "new is at least 1.1x old"\nratio = ["new", "old"]\nat_least = 1.1\n'
    )
    study = gate_study(tmp_path, 1.0, 1.3, extra='until = "claims"\n')
    study.write_text(study.read_text().replace("max_rounds = 12", "max_rounds = 200") + claims)
    res = invoke(tmp_path, "compare", *QUICK, str(study), "--json", "-")
    assert res.exit_code == exits.OK, res.output
    doc = json.loads(res.stdout)
    assert doc["reason"] == "claims decided: 1 holds"
    (c,) = doc["claims"]
    assert c["verdict"] == "holds" and "always-valid 90% interval" in c["method"]
    assert doc["schedule"]["cycles"] < 200


# --- claims on a sweep's settings ----------------------------------------------------


def sweep_study(tmp_path: Path, claims: str, extra: str = "") -> Path:
    """A sweep over p and q whose readings are exactly p x (1, 1.01, 1.01, 1)[k % 4]."""
    from test_gate import BENCH

    counter = str(tmp_path / "n_{p}_{q}")
    command = json.dumps([sys.executable, "-c", BENCH, counter, "{p}"])
    study = tmp_path / "s.toml"
    study.write_text(
        f'[study]\nname = "s"\n[benchmark]\ncommand = {command}\n'
        '[[pi]]\nname = "v"\nsource = "regex"\npattern = \'value=([0-9.]+)\'\n'
        f"[sweep]\nrepetitions = 3\n{extra}[sweep.params]\n"
        "p = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\nq = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n" + claims
    )
    return study


SWEEP_CLAIMS = (
    '[[claim]]\nsays = "p 10 is at least 5x p 1"\nratio = [{ p = 10, q = 10 }, { p = 1, q = 1 }]\n'
    "at_least = 5\n"
    '[[claim]]\nsays = "p 2 is p 1 within 5%"\nratio = [{ p = 2, q = 3 }, { p = 1, q = 3 }]\n'
    'within = "5%"\n'
)


def test_a_sweep_measures_its_claimed_settings_and_judges_them(tmp_path: Path) -> None:
    # a budget of 5 settings: Algorithm 1 would draw 5 of the 100 at random; the 4 that
    # the claims name are measured first, whatever the draw
    study = sweep_study(tmp_path, SWEEP_CLAIMS, "max_settings = 8\n")
    res = invoke(tmp_path, "sweep", "-q", "--no-monitor", str(study), "--json", "-")
    assert res.exit_code == exits.WORSE, res.output  # the second claim fails
    doc = json.loads(res.stdout)
    jsonschema.validate(doc, _result_schema(), cls=jsonschema.Draft202012Validator)
    holds, fails = doc["claims"]
    assert holds["verdict"] == "holds" and holds["ratio"] == ["p=10, q=10", "p=1, q=1"]
    assert holds["estimate"] == pytest.approx(10.0, rel=0.01)
    assert fails["verdict"] == "fails" and fails["estimate"] == pytest.approx(2.0, rel=0.01)
    assert res.stderr == "" or "claims" in res.stderr  # the report went to stderr


@pytest.mark.parametrize(
    ("ratio", "said"),
    [
        ('["a", "b"]', "a sweep's claim names settings by their values, e.g. { p = 1, q = 1 }"),
        ("[{ p = 1 }, { p = 2, q = 1 }]", "give a value of every swept parameter and no other"),
        ("[{ p = 1, q = 1, r = 2 }, { p = 2, q = 1 }]", "not swept: r"),
        ("[{ p = 11, q = 1 }, { p = 2, q = 1 }]", "p = 11 is not one of its values"),
    ],
)
def test_a_bad_sweep_claim_is_refused(tmp_path: Path, ratio: str, said: str) -> None:
    study = sweep_study(tmp_path, f'[[claim]]\nsays = "x"\nratio = {ratio}\nat_least = 2\n')
    res = invoke(tmp_path, "sweep", "-q", str(study))
    assert res.exit_code == exits.USAGE and said in res.output, res.output


def test_a_sweeps_claims_are_judged_at_its_end_not_stopped_on(tmp_path: Path) -> None:
    claim = '[[claim]]\nsays = "x"\nratio = [{ p = 2, q = 1 }, { p = 1, q = 1 }]\nat_least = 2\n'
    study = sweep_study(tmp_path, claim + '[stop]\nuntil = "claims"\n')
    res = invoke(tmp_path, "sweep", "-q", str(study))
    assert res.exit_code == exits.USAGE
    assert "a sweep or knob study's claims are judged at its end" in res.output


# --- a knob study's claims: settings named by knob values, the others at their defaults --

KNOB_CODE = (
    "import math, random, sys\n"
    "a, b = int(sys.argv[1]), float(sys.argv[2])\n"
    "print('v=%.6f' % ((20 * math.log(a) + 10 * b + 1) * (1 + 0.01 * random.random())))\n"
)


def knob_study(tmp_path: Path, claims: str) -> Path:
    study = tmp_path / "k.toml"
    study.write_text(
        '[study]\nname = "k"\n[benchmark]\n'
        f"command = [{json.dumps(sys.executable)}, \"-c\", {json.dumps(KNOB_CODE)}, "
        '"{a}", "{b}", "{c}"]\n'
        '[[pi]]\nname = "v"\ndirection = "higher"\nsource = "regex"\npattern = \'v=([0-9.]+)\'\n'
        '[[knob]]\nname = "a"\ntype = "int"\nmin = 1\nmax = 100\ndefault = 10\n'
        '[[knob]]\nname = "b"\ntype = "float"\nmin = 0\nmax = 1\ndefault = 0.5\n'
        '[[knob]]\nname = "c"\ntype = "categorical"\nvalues = ["x", "y"]\ndefault = "x"\n'
        "[knobs]\nsamples = 12\nvalidation_samples = 10\ntrees = 20\ntop_k = 1\n"
        "claim_repetitions = 4\n" + claims
    )
    return study


@pytest.mark.parametrize(
    ("ratio", "said"),
    [
        ('["a", "b"]', "a knob study's claim names settings by knob values"),
        ("[{ a = 1 }, { d = 2 }]", "'d' is not a [[knob]] (the knobs: a, b, c)"),
        ("[{ a = 101 }, { a = 2 }]", "a = 101: expected a number in [1, 100]"),
        ("[{ a = 2.5 }, { a = 2 }]", "a = 2.5: an int knob takes whole numbers"),
        ('[{ c = "z" }, { c = "x" }]', "c = 'z' is not one of ['x', 'y']"),
    ],
)
def test_a_bad_knob_claim_is_refused(tmp_path: Path, ratio: str, said: str) -> None:
    study = knob_study(tmp_path, f'[[claim]]\nsays = "x"\nratio = {ratio}\nat_least = 2\n')
    res = invoke(tmp_path, "knobs", "-q", str(study))
    assert res.exit_code == exits.USAGE and said in res.output, res.output


def test_a_knob_studys_claims_measure_their_settings_and_are_judged(tmp_path: Path) -> None:
    """Each named setting (the other knobs at their defaults) is measured
    claim_repetitions times, the claims judged on those readings, reported first, in
    --json, by show, and a failing one makes the exit status 1."""
    claims = (
        '[[claim]]\nsays = "a = 100 is at least 1.5x a = 10"\n'
        "ratio = [{ a = 100 }, { a = 10 }]\nat_least = 1.5\n"
        '[[claim]]\nsays = "b barely matters"\n'
        'ratio = [{ a = 100, b = 1.0, c = "y" }, { a = 100, b = 0.0 }]\nat_most = 1.05\n'
    )
    study = knob_study(tmp_path, claims)
    res = invoke(tmp_path, "knobs", "-q", "--jobs", "1", "--json", "-", str(study))
    assert res.exit_code == exits.WORSE, res.output  # the second claim fails
    doc = json.loads(res.stdout)
    jsonschema.validate(doc, _result_schema(), cls=jsonschema.Draft202012Validator)
    holds, fails = doc["claims"]
    # b at its default 0.5: (20 ln 100 + 5 + 1) / (20 ln 10 + 5 + 1)
    assert holds["verdict"] == "holds" and holds["estimate"] == pytest.approx(1.885, rel=0.02)
    assert holds["ratio"] == ["a=100", "a=10"]
    assert fails["verdict"] == "fails" and fails["estimate"] == pytest.approx(1.107, rel=0.01)
    assert doc["trials"]["total"] == 12 + 10 + 4 * 4  # samples, validation, 4 claimed x 4
    report = invoke(tmp_path, "show", str(tmp_path / "k.assay.db")).stdout
    assert report.index("a = 100 is at least 1.5x a = 10") < report.index("knob importance")
    shown = invoke(tmp_path, "show", str(tmp_path / "k.assay.db"), "--json", "-", "-q")
    assert shown.exit_code == exits.WORSE
    assert [c["verdict"] for c in json.loads(shown.stdout)["claims"]] == ["holds", "fails"]


# --- paired ratios: a sweep's or knob study's reproduction, setting by setting -----------


@given(
    st.lists(
        st.tuples(st.floats(0.01, 1e6), st.floats(-1.0, 1.0)), min_size=2, max_size=40
    ),
    st.sampled_from([0.9, 0.95, 0.99]),
)
def test_the_paired_ratio_is_scipys_paired_t_interval_of_the_logs(
    pairs: list[tuple[float, float]], confidence: float
) -> None:
    a = np.array([x for x, _ in pairs])
    b = a * np.exp([d for _, d in pairs])
    est, low, high = paired_ratio_interval(a, b, confidence)
    d = np.log(b) - np.log(a)
    assert est == pytest.approx(math.exp(d.mean()), rel=1e-9)
    if np.ptp(d) > 1e-9:
        ci = sps.ttest_rel(np.log(b), np.log(a)).confidence_interval(claim_level(confidence))
        assert low == pytest.approx(math.exp(ci.low), rel=1e-7)
        assert high == pytest.approx(math.exp(ci.high), rel=1e-7)
    assert low <= est * (1 + 1e-12) and est <= high * (1 + 1e-12)


def test_a_paired_ratio_needs_two_positive_pairs() -> None:
    assert all(math.isnan(x) for x in paired_ratio_interval([1.0], [1.1], 0.95))
    # a zero, a negative or a NaN value is left out, not logged
    est, low, _ = paired_ratio_interval([1, 0, -2, 4, math.nan], [2, 1, 1, 8, 1], 0.95)
    assert est == pytest.approx(2.0) and low == pytest.approx(2.0)
    with pytest.raises(ValueError, match="same length"):
        paired_ratio_interval([1, 2], [1, 2, 3], 0.95)


@pytest.mark.parametrize(("true", "wrong"), [(1.1, "reproduced"), (1.0, "not reproduced")])
def test_paired_reproduction_verdicts_err_at_most_alpha(true: float, wrong: str) -> None:
    """2,000 synthetic reproductions of 20 settings whose ratios scatter (sd 5% on the
    log scale) around ``true``: at the margin's edge (1.1 with 10% tolerance) "reproduced"
    is said at most alpha (5%) of the time; at 1.0 "not reproduced" essentially never."""
    rng = np.random.default_rng(62)
    said = 0
    verdicts = {"holds": "reproduced", "fails": "not reproduced", "undecided": "undecided"}
    for _ in range(2000):
        a = rng.lognormal(3.0, 1.0, 20)
        b = a * true * np.exp(rng.normal(0.0, 0.05, 20))
        v = judge_claim(ClaimRule("within", 0.1), *paired_ratio_interval(a, b, 0.95))
        said += verdicts[v.verdict] == wrong
    # the 95% Clopper-Pearson upper bound of the rate stays under alpha + 1.5 points
    assert sps.beta.ppf(0.975, said + 1, 2000 - said) <= 0.065
