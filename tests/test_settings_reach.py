"""A setting must reach what it is meant to change, or the study is refused (#42): a
variant's value of a parameter that a once-per-study step uses was silently dropped,
and a swept value in [benchmark] env crashed the run with a KeyError."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from assay.cli import main
from assay.spec import SpecError, parse_spec_text

COMPARE = """
[study]
name = "io"
[benchmark]
command = ["true"]
{step}
[params]
io_threads = 1
[[variant]]
name = "io1"
[[variant]]
name = "io4"
params = {{ io_threads = 4 }}
{cluster}
"""


@pytest.mark.parametrize("step", ["setup", "reset", "teardown"])
def test_a_variant_value_a_study_step_uses_is_refused(step: str) -> None:
    text = COMPARE.format(step=f'{step} = ["srv", "--io-threads", "{{io_threads}}"]', cluster="")
    with pytest.raises(SpecError) as err:
        parse_spec_text(text, "io.toml")
    said = str(err.value)
    assert "variant[1] ('io4').params.io_threads" in said
    assert f"[benchmark] {step} uses '{{io_threads}}'" in said and "io_threads = 1" in said


def test_a_variant_value_a_role_step_uses_reaches_it() -> None:
    # a role is set up again for the variant's value (tests/test_roles_settings.py)
    text = COMPARE.format(
        step='[benchmark.roles.server]\nsetup = ["redis-server", "--io-threads", "{io_threads}"]',
        cluster='[cluster.roles]\nserver = ["s0"]\nclient = ["c"]\n[cluster]\nmeasure = "client"',
    )
    assert "io_threads" in parse_spec_text(text, "io.toml").per_trial_names()


def test_a_variant_value_only_the_command_uses_is_fine() -> None:
    spec = parse_spec_text(
        COMPARE.format(step='setup = ["true"]', cluster="").replace(
            'command = ["true"]', 'command = ["echo", "{io_threads}"]'
        ),
        "io.toml",
    )
    assert spec.variant_params(spec.variants[1]) == {"io_threads": 4}


SWEEP = """
[study]
name = "env-sweep"
[benchmark]
command = ["{py}", "-c", "import os; print('v=%d' % len(os.environ['MODE']))"]
env = {{ MODE = "{{mode}}" }}
setup = ["true"]
[[pi]]
name = "v"
source = "regex"
pattern = 'v=([0-9]+)'
[sweep]
repetitions = 2
[sweep.params]
mode = ["a", "bbb"]
"""


def test_a_swept_value_in_env_reaches_the_trials_and_the_steps_run(tmp_path: Path) -> None:
    study = tmp_path / "s.toml"
    study.write_text(SWEEP.format(py=sys.executable), encoding="utf-8")
    res = CliRunner().invoke(
        main, ["sweep", str(study), "-q", "--no-monitor", "--json", str(tmp_path / "r.json")]
    )
    assert res.exit_code in (0, 5), res.output  # before: KeyError, exit 1
    import json

    settings = json.loads((tmp_path / "r.json").read_text())["settings"]
    assert {s["mode"]: s["v"] for s in settings} == {"a": 1, "bbb": 3}


def test_a_swept_parameter_named_as_a_pi_is_refused() -> None:
    # the sweep's table holds both as columns: before, a TypeError deep in pandas
    text = SWEEP.format(py=sys.executable).replace('name = "v"', 'name = "mode"')
    with pytest.raises(SpecError, match=r"sweep.params: mode is also a \[\[pi\]\] name"):
        parse_spec_text(text, "s.toml")
