"""``shell = true``: the user's command is shell syntax, the parameter values are not.

Issue #13, item 8: values substituted into a shell command used to be joined as they
were, so ``$(…)``, ``;`` and backticks in ``[params]``, in ``setup`` and in sweep values
executed.  Each value is now substituted as one quoted word.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from assay.cli import main
from assay.execute.command import render_argv, run_command
from assay.store import Store

HOSTILE = ["; touch pwned", "$(touch pwned)", "`touch pwned`", "a b  c", "'\"", "*", "x\ny"]


@pytest.mark.parametrize("value", HOSTILE)
def test_a_value_is_one_literal_word_in_a_shell_command(value: str, tmp_path: Path) -> None:
    argv = render_argv(["printf", "%s", "{v}"], {"v": value}, shell=True)
    res = run_command(argv, timeout=10, cwd=str(tmp_path), shell=True)
    assert res.status == "ok", res.error
    assert res.stdout.decode() == value
    assert not list(tmp_path.iterdir()), "a shell interpreted the value"


def test_the_users_own_shell_syntax_still_works(tmp_path: Path) -> None:
    argv = render_argv(["echo", "$((1+2))", "{v}", "|", "tr", "a", "b"], {"v": "a"}, shell=True)
    res = run_command(argv, timeout=10, cwd=str(tmp_path), shell=True)
    assert res.stdout.decode().strip() == "3 b"


def test_without_shell_values_are_left_as_they_are() -> None:
    assert render_argv(["echo", "{v}"], {"v": "$(x) y"}) == ["echo", "$(x) y"]


@pytest.mark.parametrize("value", ["; touch pwned", "$(touch pwned)", "`touch pwned`"])
def test_a_shell_study_never_runs_a_value(tmp_path: Path, value: str) -> None:
    study = tmp_path / "s.toml"
    study.write_text(
        f"""
[study]
name = "shell"
[benchmark]
shell = true
cwd = "."
setup = ["printf", "%s", "{{v}}", ">", "setup.out"]
command = ["printf", "%s", "{{v}}", ">", "run.out"]
[params]
v = {json.dumps(value)}
[stop]
max_rounds = 2
"""
    )
    res = CliRunner().invoke(main, ["run", str(study), "-q", "--no-overhead", "--no-monitor"])
    assert res.exit_code == 5, res.output  # both trials ran; 2 rounds give no CI target
    assert not (tmp_path / "pwned").exists()
    assert (tmp_path / "setup.out").read_text() == value
    assert (tmp_path / "run.out").read_text() == value
    with Store(tmp_path / "s.assay.db") as store:
        found = store.find_study("shell")
        assert found is not None
        assert [t.status for t in store.trials(found[0])] == ["ok", "ok"]
