from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.spec import SpecError, load_spec, parse_spec_text
from assay.template import placeholders

MINIMAL = """
[study]
name = "s"
[benchmark]
command = ["echo", "{rows}"]
[params]
rows = 10
"""


def test_minimal_study_defaults() -> None:
    spec = parse_spec_text(MINIMAL, "m.toml")
    assert spec.pis[0].name == "wall_time"
    assert spec.pis[0].direction == "lower"
    assert spec.stop.ci_width == 0.05
    assert spec.stop.confidence == 0.95
    assert spec.params == {"rows": 10}


def test_error_names_file_field_and_expectation() -> None:
    text = MINIMAL + '\n[[pi]]\nname = "t"\ndirection = "sideways"\n'
    with pytest.raises(SpecError) as e:
        parse_spec_text(text, "bad.toml")
    msg = str(e.value)
    assert "bad.toml" in msg
    assert "pi[0].direction" in msg
    assert "'lower'" in msg and "'higher'" in msg and "sideways" in msg


def test_unknown_field_is_rejected_with_its_path() -> None:
    with pytest.raises(SpecError, match=r"benchmark\.comand: unknown field"):
        parse_spec_text('[study]\nname="s"\n[benchmark]\ncomand=["x"]\ncommand=["x"]\n', "t")


def test_missing_placeholder_value_is_reported() -> None:
    with pytest.raises(SpecError, match=r"placeholder '\{rowz\}'"):
        parse_spec_text('[study]\nname="s"\n[benchmark]\ncommand=["echo","{rowz}"]\n', "t")


def test_regex_pi_needs_a_capturing_group() -> None:
    text = MINIMAL + '[[pi]]\nname="tps"\nsource="regex"\npattern="tps=[0-9]+"\n'
    with pytest.raises(SpecError, match="capturing group"):
        parse_spec_text(text, "t")


def test_duplicate_pi_names() -> None:
    text = MINIMAL + '[[pi]]\nname="a"\n[[pi]]\nname="a"\n'
    with pytest.raises(SpecError, match="repeated: a"):
        parse_spec_text(text, "t")


def test_bad_toml_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="not valid TOML"):
        parse_spec_text("[study\n", "x.toml")
    with pytest.raises(SpecError, match="no such study file"):
        load_spec(tmp_path / "nope.toml")


def test_work_range_checked() -> None:
    text = MINIMAL.replace('"{rows}"]', '"{rows}", "{work}"]') + ""
    text = text.replace("[params]", "[benchmark.work]\nmin = 10\nmax = 5\n[params]")
    with pytest.raises(SpecError, match="greater than 'min'"):
        parse_spec_text(text, "t")


def test_measurement_hash_ignores_stop_rule() -> None:
    a = parse_spec_text(MINIMAL, "a")
    b = parse_spec_text(MINIMAL + "[stop]\nci_width = 0.01\n", "b")
    c = parse_spec_text(MINIMAL.replace("rows = 10", "rows = 11"), "c")
    assert a.measurement_hash() == b.measurement_hash()
    assert a.measurement_hash() != c.measurement_hash()


def test_store_path_defaults_beside_study_file(tmp_path: Path) -> None:
    p = tmp_path / "my-study.toml"
    p.write_text(MINIMAL)
    assert load_spec(p).store_path() == tmp_path / "my-study.assay.db"


def test_placeholders() -> None:
    assert placeholders("{a}-{b}{{c}} {x + 1} {0}") == ["a", "b"]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_arbitrary_text_gives_spec_error_not_traceback(text: str) -> None:
    try:
        parse_spec_text(text, "fuzz.toml")
    except SpecError as exc:
        assert str(exc).startswith("fuzz.toml")


toml_scalars = st.one_of(
    st.integers(), st.floats(allow_nan=False), st.text(max_size=20), st.booleans()
)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["name", "command", "timeout", "shell", "source", "ci_width", "x"]),
        toml_scalars,
        max_size=5,
    ),
    st.sampled_from(["study", "benchmark", "stop", "pi", "params", "junk"]),
)
def test_hostile_field_values_give_spec_error(fields: dict[str, object], section: str) -> None:
    from assay.spec import parse_spec_data

    data: dict[str, object] = {
        "study": {"name": "s"},
        "benchmark": {"command": ["true"]},
        section: [fields] if section == "pi" else fields,
    }
    try:
        parse_spec_data(data, "h.toml")
    except SpecError as exc:
        assert str(exc).startswith("h.toml")


def test_conclude_changes_the_measurement_hash_only_when_given() -> None:
    from assay.spec import parse_spec_data

    def spec(**bench: object) -> str:
        data = {"study": {"name": "h"}, "benchmark": {"command": ["prog"], **bench}}
        return parse_spec_data(data, source="t").measurement_hash()

    # a study file without conclude keeps the hash Assay computed before it existed
    assert spec() == spec(conclude=None)
    assert len({spec(), spec(conclude=["stop"]), spec(conclude=["stop", "-9"])}) == 3
