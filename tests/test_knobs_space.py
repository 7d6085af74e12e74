"""The knob space: Latin Hypercube samples, validation samples, encoding, study-file model."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.designs.knobs import (
    CategoricalKnob,
    KnobSpace,
    NumericKnob,
    encode,
    infer_space,
    knob_matrix,
    latin_hypercube,
    lhs_unit,
    space_from_spec,
    validation_sample,
)
from assay.spec import SpecError, parse_spec_text


def _space() -> KnobSpace:
    return KnobSpace(
        (
            NumericKnob("lin", -5.0, 5.0, 0.0),
            NumericKnob("logf", 0.01, 100.0, 1.0, log=True),
            NumericKnob("count", 1, 8, 2, integer=True),
            NumericKnob("mem", 16, 4096, 128, integer=True, log=True),
            CategoricalKnob("mode", ("a", "b", "c"), "a"),
            CategoricalKnob("fsync", (True, False), True, unsafe=True),
        )
    )


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 60), seed=st.integers(0, 2**31 - 1))
def test_lhs_covers_every_stratum_once(n: int, seed: int) -> None:
    s = latin_hypercube(_space(), n, seed=seed)
    lin = np.array([x["lin"] for x in s])
    strata = np.floor((lin + 5.0) / 10.0 * n).astype(int)
    assert sorted(strata.tolist()) == list(range(n))
    # log scale: strata are equal in log space
    logf = np.log(np.array([x["logf"] for x in s]))
    lo, hi = math.log(0.01), math.log(100.0)
    strata = np.minimum(np.floor((logf - lo) / (hi - lo) * n), n - 1).astype(int)
    assert sorted(strata.tolist()) == list(range(n))


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 80), seed=st.integers(0, 2**31 - 1))
def test_lhs_ints_and_categories(n: int, seed: int) -> None:
    s = latin_hypercube(_space(), n, seed=seed)
    for x in s:
        assert isinstance(x["count"], int) and 1 <= x["count"] <= 8
        assert isinstance(x["mem"], int) and 16 <= x["mem"] <= 4096
        assert x["mode"] in ("a", "b", "c")
    # equal-width bins of stratified points: each value within 2 of its share
    counts = Counter(x["mode"] for x in s)
    for v in ("a", "b", "c"):
        assert abs(counts[v] - n / 3) < 2
    counts_int = Counter(x["count"] for x in s)
    for v in range(1, 9):
        assert abs(counts_int[v] - n / 8) < 2


def test_int_values_all_reached_and_log_scale_median() -> None:
    s = latin_hypercube(_space(), 400, seed=3)
    assert {x["count"] for x in s} == set(range(1, 9))
    mem = np.array([x["mem"] for x in s])
    # log-uniform on [16, 4096]: the median is the geometric mean, 256
    assert 200 <= np.median(mem) <= 330
    assert np.mean(mem < 256) == pytest.approx(0.5, abs=0.05)


def test_lhs_reproducible_and_seed_dependent() -> None:
    a = latin_hypercube(_space(), 20, seed=7)
    assert a == latin_hypercube(_space(), 20, seed=7)
    assert a != latin_hypercube(_space(), 20, seed=8)
    u = lhs_unit(10, 3, seed=1)
    assert u.shape == (10, 3) and np.all((u >= 0) & (u < 1))


def test_validation_sample_varies_only_the_given_knobs() -> None:
    space = _space()
    s = validation_sample(space, ["lin", "mode"], 30, seed=2)
    defaults = space.defaults()
    for x in s:
        for name in ("logf", "count", "mem", "fsync"):
            assert x[name] == defaults[name]
    assert len({x["lin"] for x in s}) == 30
    assert {x["mode"] for x in s} == {"a", "b", "c"}
    with pytest.raises(ValueError, match="unknown knob"):
        validation_sample(space, ["nope"], 3)
    with pytest.raises(ValueError, match="at least one knob"):
        validation_sample(space, [], 3)


def test_encode_dummies_and_standardises() -> None:
    space = _space()
    s = latin_hypercube(space, 50, seed=0)
    e = encode(space, s)
    assert e.columns[:5] == ("mode=a", "mode=b", "mode=c", "fsync=True", "fsync=False")
    assert e.groups.count("mode") == 3 and e.groups.count("fsync") == 2
    num = [i for i, c in enumerate(e.columns) if "=" not in c]
    assert np.allclose(e.X[:, num].mean(axis=0), 0, atol=1e-12)
    assert np.allclose(e.X[:, num].std(axis=0), 1)
    dummies = e.X[:, :3]
    assert np.all(dummies.sum(axis=1) == 1)
    # the log knob is encoded by its logarithm
    m = knob_matrix(space, s)
    assert np.allclose(m.values[:, 1], np.log([x["logf"] for x in s]))


def test_knob_matrix_errors() -> None:
    space = _space()
    good = space.defaults()
    with pytest.raises(ValueError, match="no value for knob"):
        knob_matrix(space, [{k: v for k, v in good.items() if k != "mem"}])
    with pytest.raises(ValueError, match="not one of"):
        knob_matrix(space, [{**good, "mode": "z"}])


def test_knob_validation() -> None:
    with pytest.raises(ValueError, match=r"knob x: 'min' \(1\) must be less than 'max' \(1\)"):
        NumericKnob("x", 1, 1, 1)
    with pytest.raises(ValueError, match="needs 'min' > 0"):
        NumericKnob("x", 0, 10, 1, log=True)
    with pytest.raises(ValueError, match="overflows a float"):  # sampling spans max - min
        NumericKnob("x", -1e308, 1e308, 0.0)
    with pytest.raises(ValueError, match="64-bit integers"):  # as NumPy and Optuna hold them
        NumericKnob("x", 0, 2**64, 0, integer=True)
    with pytest.raises(ValueError, match="outside"):
        NumericKnob("x", 0, 10, 11)
    with pytest.raises(ValueError, match="not one of"):
        CategoricalKnob("m", ("a", "b"), "c")
    with pytest.raises(ValueError, match="unique"):
        KnobSpace((NumericKnob("x", 0, 1, 0), NumericKnob("x", 0, 1, 0)))


def test_infer_space_from_a_frame() -> None:
    frame = pd.DataFrame(
        {"n": [1, 2, 3, 4], "r": [0.5, 0.25, 1.0, 2.0], "m": ["on", "off", "on", "on"]}
    )
    space = infer_space(frame, ["n", "r", "m"])
    n, r, m = space.knobs
    assert isinstance(n, NumericKnob) and n.integer and (n.low, n.high) == (1, 4)
    assert isinstance(r, NumericKnob) and not r.integer
    assert isinstance(m, CategoricalKnob) and m.values == ("off", "on") and m.default == "on"


STUDY = """
[study]
name = "pg"
[benchmark]
command = ["pgtarget", "--knob", "shared_buffers={shared_buffers}MB", "--knob", "fsync={fsync}",
           "--knob", "cost={cost}"]
[[pi]]
name = "tps"
source = "json"
path = "pi.tps"
direction = "higher"
[[pi]]
name = "p99"
source = "json"
path = "pi.p99"
[[knob]]
name = "shared_buffers"
type = "int"
min = 16
max = 4096
log = true
default = 128
unit = "MB"
[[knob]]
name = "fsync"
type = "categorical"
values = ["on", "off"]
default = "on"
unsafe = true
[[knob]]
name = "cost"
type = "float"
min = 0.5
max = 4.0
default = 1.0
[knobs]
samples = 50
top_k = 2
objective = "max tps s.t. p99<=20"
"""


def test_spec_knob_study_and_space() -> None:
    spec = parse_spec_text(STUDY, "pg.toml")
    assert [k.name for k in spec.knob_specs] == ["shared_buffers", "fsync", "cost"]
    assert spec.knobs_config.samples == 50 and spec.knobs_config.trees == 300
    space = space_from_spec(spec)
    sb = space["shared_buffers"]
    assert isinstance(sb, NumericKnob) and sb.integer and sb.log and sb.unit == "MB"
    assert space["fsync"].unsafe
    assert space.safe_names() == ("shared_buffers", "cost")
    # knob studies hash their knob space; the same file hashes the same
    assert spec.measurement_hash() == parse_spec_text(STUDY, "pg.toml").measurement_hash()


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("default = 128", "default = 5000", "knob[0]: 'default' 5000 is outside"),
        ("log = true", "log = true\nvalues = [1, 2]", "takes 'min' and 'max', not 'values'"),
        ("min = 16", "min = 0", "'log = true' needs 'min' > 0"),
        ('default = "on"', 'default = "maybe"', "is not one of 'values'"),
        ('values = ["on", "off"]', 'values = ["on"]', "at least two entries"),
        ("default = 1.0", 'default = "x"', "'default' must be a number"),
        ("max = 4096", "max = 4096.5", "whole numbers"),
        ("p99<=20", "p98<=20", "knobs.objective: 'p98' is not a [[pi]]"),
        ("max tps", "most tps", "expected 'max PI' or 'min PI'"),
        ('"fsync={fsync}"', '"fsync=on"', "no '{fsync}' placeholder"),
        ("samples = 50", "samples = 5", "knobs.samples"),
        ("[knobs]", "[params]\ncost = 2\n[knobs]", "also in [params]"),
        ('type = "float"', 'type = "double"', "knob[2].type"),
    ],
)
def test_spec_knob_errors(old: str, new: str, message: str) -> None:
    text = STUDY.replace(old, new, 1)
    assert text != STUDY
    with pytest.raises(SpecError) as exc:
        parse_spec_text(text, "pg.toml")
    assert "pg.toml" in str(exc.value)
    assert message in str(exc.value)


def test_spec_knobs_section_needs_knobs() -> None:
    text = '[study]\nname = "x"\n[benchmark]\ncommand = ["true"]\n[knobs]\nsamples = 20\n'
    with pytest.raises(SpecError, match=r"needs \[\[knob\]\] entries"):
        parse_spec_text(text, "k.toml")
