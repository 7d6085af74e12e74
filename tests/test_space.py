"""Parameter spaces: parameters, enumeration with constraints, and the [sweep] section."""

from __future__ import annotations

import itertools
import time
import typing

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.designs.constraints import ConstraintError
from assay.designs.samplers import SAMPLERS, make_sampler
from assay.designs.space import MAX_CELLS, Parameter, ParameterSpace, SpaceError
from assay.spec import SpecError, SweepSampler, parse_spec_text
from assay.studies.sweep import space_from_spec


def test_parameter_kinds_and_order() -> None:
    p = Parameter("workers", [16, 1, 4])
    assert p.kind == "numeric" and p.values == (1, 4, 16) and p.value_type == "number"
    c = Parameter("journal", ["wal", "delete"])
    assert c.kind == "categorical" and c.values == ("wal", "delete") and c.value_type == "text"
    b = Parameter("fsync", [True, False])
    assert b.kind == "categorical" and b.value_type == "bool"
    n = Parameter("level", [3, 1, 2], kind="categorical")
    assert n.values == (3, 1, 2) and n.value_type == "number"


@pytest.mark.parametrize(
    ("values", "kind", "fragment"),
    [
        ([1], None, "at least 2 values"),
        ([], None, "at least 2 values"),
        ([1, "a"], None, "of one kind"),
        ([1, True], None, "of one kind"),
        ([1, 1.0], None, "given twice"),
        (["a", "a"], None, "given twice"),
        (["a", "b"], "numeric", "needs numbers"),
        ([1, float("nan")], None, "finite"),
        ([1, 2], "ordinal", "kind must be"),
    ],
)
def test_parameter_errors(values: list[typing.Any], kind: typing.Any, fragment: str) -> None:
    with pytest.raises(SpaceError, match=fragment) as info:
        Parameter("p", values, kind)
    assert "parameter 'p'" in str(info.value)


def brute(params: dict[str, list[typing.Any]], keep: typing.Callable[..., bool]) -> pd.DataFrame:
    rows = [r for r in itertools.product(*params.values()) if keep(*r)]
    return pd.DataFrame(rows, columns=list(params))


def test_settings_match_brute_force_with_constraints() -> None:
    params = {
        "wh": [1, 2, 4, 8, 16, 32],
        "replicas": [1, 3, 5, 7],
        "cpus": [1, 2, 4, 8, 16],
        "journal": ["wal", "delete", "off"],
        "sync": ["off", "normal", "full"],
    }
    space = ParameterSpace.from_mapping(
        params, ["wh * replicas / cpus <= 25", "journal == 'wal' or sync != 'off'"]
    )
    want = brute(params, lambda wh, r, c, j, s: wh * r / c <= 25 and (j == "wal" or s != "off"))
    got = space.settings()
    assert space.grid_size == 6 * 4 * 5 * 3 * 3
    assert space.size == len(want)
    assert got.astype(object).values.tolist() == want.astype(object).values.tolist()


@settings(max_examples=40, deadline=None)
@given(
    cards=st.lists(st.integers(2, 5), min_size=1, max_size=4),
    bound=st.integers(0, 12),
)
def test_grid_order_and_filtering_property(cards: list[int], bound: int) -> None:
    params = {f"p{j}": [2 * i + j for i in range(c)] for j, c in enumerate(cards)}
    names = list(params)
    text = " + ".join(names) + f" >= {bound}"
    space = ParameterSpace.from_mapping(params, [text])
    want = brute(params, lambda *r: sum(r) >= bound)
    got = space.settings()
    assert got.values.tolist() == want.values.tolist()
    assert space.grid_size == int(np.prod(cards))


def test_dtypes_are_what_samplers_expect() -> None:
    space = ParameterSpace.from_mapping(
        {"n": [1, 2], "f": [0.5, 1.5], "c": ["b", "a"], "t": [True, False]}
    )
    df = space.settings()
    assert df["n"].dtype == np.int64 and df["f"].dtype == np.float64
    assert isinstance(df["c"].dtype, pd.CategoricalDtype)
    assert list(df["c"].cat.categories) == ["b", "a"]  # the given order
    assert isinstance(df["t"].dtype, pd.CategoricalDtype)
    # the samplers accept the frame as it is
    for name in SAMPLERS:
        pos = make_sampler(name).pick(df, np.zeros(len(df), bool), 3, np.random.default_rng(0))
        assert len(pos) == 3


def test_constraint_only_on_some_parameters_broadcasts() -> None:
    space = ParameterSpace.from_mapping(
        {"a": [1, 2, 3], "b": ["x", "y"], "c": [1, 2]}, ["a != 2", "c in (2,)"]
    )
    df = space.settings()
    assert len(df) == 2 * 2 * 1
    assert set(df.a) == {1, 3} and set(df.c) == {2}


def test_constant_constraints() -> None:
    assert ParameterSpace.from_mapping({"a": [1, 2]}, ["1 < 2"]).size == 2
    assert ParameterSpace.from_mapping({"a": [1, 2]}, ["1 > 2"]).size == 0


def test_describe() -> None:
    space = ParameterSpace(
        [Parameter("workers", [1, 2, 4, 8, 12]), Parameter("locks", [1, 2, 4, 6])],
        ["locks < workers"],
        repetitions=3,
    )
    text = space.describe()
    assert "full grid: 20 settings; 1 constraint leaves 11 (55%)" in text
    assert "× 3 repetitions = 33 trials" in text
    free = ParameterSpace.from_mapping({"a": [1, 2]}, repetitions=1).describe()
    assert "full grid: 2 settings (no constraints)" in free and "1 repetition = 2 trials" in free


def test_space_errors() -> None:
    with pytest.raises(SpaceError, match="at least one parameter"):
        ParameterSpace([])
    with pytest.raises(SpaceError, match="repeated: a"):
        ParameterSpace([Parameter("a", [1, 2]), Parameter("a", [3, 4])])
    with pytest.raises(SpaceError, match="repetitions"):
        ParameterSpace([Parameter("a", [1, 2])], repetitions=0)
    with pytest.raises(ConstraintError, match=r"constraints\[1\].*unknown parameter 'b'"):
        ParameterSpace.from_mapping({"a": [1, 2]}, ["a > 1", "b > 1"])
    big = ParameterSpace.from_mapping({f"p{i}": list(range(10)) for i in range(8)}, ["p0 < p1"])
    with pytest.raises(SpaceError, match="more than"):
        big.settings()
    assert "too many to apply constraints" in big.describe()


def test_a_million_settings_enumerate() -> None:
    params = {f"p{i}": list(range(10)) for i in range(6)}
    space = ParameterSpace.from_mapping(params, ["p0 < p1", "p2 * p3 / (p4 + 1) <= 25"])
    df = space.settings()
    a = np.indices([10] * 6).reshape(6, -1)
    want = int(((a[0] < a[1]) & (a[2] * a[3] / (a[4] + 1) <= 25)).sum())
    assert len(df) == want == space.size


# ------------------------------------------------------------------ the [sweep] section

BASE = """
[study]
name = "sweep"
[benchmark]
command = ["bench", "--workers={workers}", "--locks={locks}", "--journal={journal}", "{fixed}"]
[params]
fixed = "x"
[[pi]]
name = "tps"
source = "regex"
pattern = "tps=([0-9.]+)"
direction = "higher"
"""


def sweep(text: str) -> str:
    return BASE + text


GOOD = """
[sweep]
repetitions = 2
sampler = "balanced"
start = 0.1
step = 0.05
r2 = 0.8
splits = 10
model = "mlp"
max_settings = 100
max_time = 3600
constraints = ["locks < workers"]
[sweep.params]
workers = [1, 2, 4, 8]
locks = [1, 2, 4]
journal = ["wal", "delete"]
"""


def test_sweep_section_parses_and_builds_the_space() -> None:
    spec = parse_spec_text(sweep(GOOD), source="s.toml")
    assert spec.sweep is not None
    assert spec.sweep.sampler == "balanced" and spec.sweep.model == "mlp"
    space = space_from_spec(spec)
    assert space.names == ["workers", "locks", "journal"]
    assert space.repetitions == 2
    assert space.grid_size == 24 and space.size == 12


def test_sweep_defaults_follow_the_paper() -> None:
    spec = parse_spec_text(
        sweep("[sweep.params]\nworkers = [1, 2]\nlocks = [1, 2]\njournal = ['a', 'b']"),
        source="s.toml",
    )
    sw = spec.sweep
    assert sw is not None
    assert (sw.repetitions, sw.sampler, sw.start, sw.step, sw.r2, sw.splits, sw.model) == (
        3,
        "random",
        0.05,
        0.05,
        0.9,
        10,
        "anova",
    )


def test_spec_samplers_match_the_registry() -> None:
    assert typing.get_args(SweepSampler) == SAMPLERS


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (
            GOOD.replace('["locks < workers"]', '["locks < workers", "lokcs > 1"]'),
            "sweep.constraints[1]: constraint 'lokcs > 1': unknown parameter 'lokcs' "
            "(did you mean 'locks'?",
        ),
        (GOOD.replace('["locks < workers"]', '["journal < 2"]'), "sweep.constraints[0]"),
        (GOOD.replace('["locks < workers"]', '["locks.__class__"]'), "attribute access"),
        (GOOD.replace("workers = [1, 2, 4, 8]", "workers = [1]"), "workers: needs at least 2"),
        (GOOD.replace("workers = [1, 2, 4, 8]", "workers = [1, 'a']"), "of one kind"),
        (GOOD.replace("workers = [1, 2, 4, 8]", "workers = [2, 2]"), "given twice"),
        (GOOD.replace("start = 0.1", "start = 0"), "sweep.start"),
        (GOOD.replace("start = 0.1", "start = 1.5"), "sweep.start"),
        (GOOD.replace("r2 = 0.8", "r2 = 1.2"), "sweep.r2"),
        (GOOD.replace('sampler = "balanced"', 'sampler = "sobol"'), "sweep.sampler"),
        (GOOD.replace('model = "mlp"', 'model = "forest"'), "sweep.model"),
        (GOOD.replace("splits = 10", "splits = 0"), "sweep.splits"),
        (GOOD.replace("max_time = 3600", "max_time = -1"), "sweep.max_time"),
        (GOOD.replace("repetitions = 2", "repetitions = 0"), "sweep.repetitions"),
        (GOOD + "fixed = [1, 2]\n", "fixed is also in [params]"),
        (GOOD.replace("r2 = 0.8", 'metric = "latency"'), "sweep.metric: 'latency' is not a"),
        (GOOD.replace("r2 = 0.8", "r3 = 0.8"), "sweep.r3: unknown field"),
        (GOOD.replace("journal = ", "other = "), "placeholder '{journal}'"),
    ],
)
def test_sweep_errors_name_the_field(text: str, fragment: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_spec_text(sweep(text), source="s.toml")
    assert fragment in str(info.value), str(info.value)
    assert str(info.value).startswith("s.toml: invalid study file")


def test_space_from_spec_without_sweep() -> None:
    spec = parse_spec_text(BASE.replace("{workers}", "1").replace("{locks}", "1").replace(
        "{journal}", "1"), source="s.toml")  # fmt: skip
    with pytest.raises(SpaceError, match="no \\[sweep\\] section"):
        space_from_spec(spec)


def test_a_grid_too_large_to_enumerate_is_refused_at_once_with_its_size() -> None:
    # 24 two-valued parameters: 16.8 million settings, under MAX_GRID, but 6.4 GB and a
    # MemoryError when enumerated; the refusal comes from the value counts alone
    space = ParameterSpace.from_mapping({f"p{i}": [0, 1] for i in range(24)})
    start = time.perf_counter()
    for enumerate_it in (space.check_enumerable, space.settings, space.codes):
        with pytest.raises(SpaceError, match=r"16,777,216 settings of 24 parameters"):
            enumerate_it()
    assert time.perf_counter() - start < 1.0
    assert space.grid_size == 2**24  # the size itself is known without enumerating
    assert "16,777,216" in space.describe()


def test_the_limit_counts_values_not_settings() -> None:
    # 2**20 settings of 20 parameters (21 million values: 237 s and 1.4 GB in a sweep)
    wide = ParameterSpace.from_mapping({f"p{i}": [0, 1] for i in range(20)})
    with pytest.raises(SpaceError, match=r"about [0-9.]+ GB"):
        wide.check_enumerable()
    # a grid just under the limit is enumerated as before
    ok = ParameterSpace.from_mapping({f"p{i}": [0, 1] for i in range(12)})
    ok.check_enumerable()
    assert len(ok.settings()) == 2**12
    assert 2**12 * 12 <= MAX_CELLS < 2**20 * 20


def test_a_sweep_study_file_with_such_a_grid_is_refused_naming_the_file_and_field() -> None:
    params = "\n".join(f"p{i} = [1, 2]" for i in range(24))
    words = ", ".join(f'"{{p{i}}}"' for i in range(24))
    text = (
        f'[study]\nname = "big"\n[benchmark]\ncommand = ["echo", {words}]\n'
        f"[sweep.params]\n{params}\n"
    )
    with pytest.raises(
        SpecError, match=r"(?s)big\.toml: .*sweep\.params: the full grid has 16,777,216"
    ):
        parse_spec_text(text, source="big.toml")
