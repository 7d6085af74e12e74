"""``shell = true``: the user's command is shell syntax, the parameter values are not.

Issue #13, item 8: values substituted into a shell command used to be joined as they
were, so ``$(…)``, ``;`` and backticks in ``[params]``, in ``setup`` and in sweep values
executed.  Round three, item 5: a value quoted as one word still ran inside the user's own
quotes (``"dq={x}"``, ``'{y}'``).  A value is now never in the script's text: it is
assigned to a shell variable ahead of it, and the placeholder refers to the variable.
"""

from __future__ import annotations

import json
import shlex
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import example, given, settings
from hypothesis import strategies as st

from assay.cli import main
from assay.errors import StudyError
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


@pytest.mark.parametrize(
    ("value", "quoted"),
    [
        ("; touch pwned", "{v}"),
        ("$(touch pwned)", "{v}"),
        ("`touch pwned`", "{v}"),
        ("$(touch pwned)", '"dq={v}"'),  # the two: inside the user's own quotes
        ("'; touch pwned #", "'{v}'"),
    ],
)
def test_a_shell_study_never_runs_a_value(tmp_path: Path, value: str, quoted: str) -> None:
    study = tmp_path / "s.toml"
    command = json.dumps(["printf", "%s", quoted, ">", "run.out"])
    study.write_text(
        f"""
[study]
name = "shell"
[benchmark]
shell = true
cwd = "."
setup = ["printf", "%s", "{{v}}", ">", "setup.out"]
command = {command}
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
    assert (tmp_path / "run.out").read_text() == quoted.strip("'\"").replace("{v}", value)
    with Store(tmp_path / "s.assay.db") as store:
        found = store.find_study("shell")
        assert found is not None
        trials = store.trials(found[0])
    assert [t.status for t in trials] == ["ok", "ok"]
    # the stored argv shows the value as the shell reads it, ahead of the script
    assert trials[0].argv[0] == f"assay_v={shlex.quote(value)};"


# every quoting a placeholder may stand in, and what printf prints for it (NUL-ended)
CONTEXTS: list[tuple[list[str], str]] = [
    (["$(printf", "%s", "{v}", "|", "wc", "-c)"], "#"),  # a count; the contexts after it too
    (["{v}"], "{v}"),
    (['"{v}"'], "{v}"),
    (["'{v}'"], "{v}"),
    (["a{v}b"], "a{v}b"),
    (['"dq={v}!"'], "dq={v}!"),
    (["'sq={v}!'"], "sq={v}!"),
    (["'a'{v}\"b\""], "a{v}b"),
    (['"a', "{v}", 'b"'], "a {v} b"),  # quotes across the words of the argv
    (["'a", "{v}", "b'"], "a {v} b"),
    (['"$(printf', "%s.", '{v})"'], "{v}."),  # '.': $(…) drops trailing newlines
    (['"$(printf', "%s.", '"{v}")"'], "{v}."),
    (['"`printf', "%s.", "'{v}'`\""], "{v}."),
]
FRAGMENTS = ["$(touch PWN)", "`touch PWN`", "; touch PWN #", "'", '"', "\\", "\n", "$", "{",
             "}", "*", "$1", "${x}", "'\"$(touch PWN)\"'", "\"; touch PWN; \"", "' ; touch PWN '",
             "$((1+1))", "!", "~", "#", " ", "\t"]  # fmt: skip
VALUES = st.lists(
    st.sampled_from(FRAGMENTS)
    | st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\0")),
    max_size=6,
).map("".join)


@settings(max_examples=150, deadline=None)
@given(VALUES)
@example("$(touch PWN)")
@example("'; touch PWN #")
@example("")
def test_any_value_in_any_quoting_reaches_the_program_as_its_text(value: str) -> None:
    argv = ["printf", "'%s\\0'"] + [w for words, _ in CONTEXTS for w in words]
    with tempfile.TemporaryDirectory() as d:
        res = run_command(render_argv(argv, {"v": value}, shell=True), timeout=30, cwd=d,
                          shell=True)  # fmt: skip
        assert res.status == "ok", (res.error, res.stderr)
        assert not list(Path(d).iterdir()), "a shell ran a value"
    printed = res.stdout.decode("utf-8", "surrogateescape").split("\0")
    assert printed[-1] == ""
    for (_, want), got in zip(CONTEXTS, printed[:-1], strict=True):
        assert got.isdigit() if want == "#" else got == want.replace("{v}", value)


def test_the_users_shell_code_around_values_still_works(tmp_path: Path) -> None:
    # a variable of its own, a function (its $1 is its own), a pipe, redirections, a comment
    argv = ["X=own;", "f()", "{", 'echo "$X:{v}:$1";', "};", "f", "arg", "|", "tr", "a-z",
            "A-Z", ">", "out;", "cat", "out", "2>/dev/null", "#", "it's", "{v}"]  # fmt: skip
    res = run_command(render_argv(argv, {"v": "a b"}, shell=True), timeout=10,
                      cwd=str(tmp_path), shell=True)  # fmt: skip
    assert res.stdout.decode() == "OWN:A B:ARG\n"


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["echo", "$(({v} + 1))"], "inside $((…))"),
        (["echo", "\\{v}"], "follows a backslash"),
        (["echo", '"\\{v}"'], "follows a backslash"),
        (["echo", "${v}"], "write '${{v}}' for the shell's own variable v"),
    ],
)
def test_a_placeholder_the_shell_would_misread_is_refused(argv: list[str], said: str) -> None:
    with pytest.raises(StudyError) as err:
        render_argv(argv, {"v": "1"}, shell=True)
    assert "placeholder '{v}' in the shell command" in str(err.value) and said in str(err.value)
    # what the messages offer works: a literal '$' or backslash, the shell's own variable
    for fixed, printed in [("\\${v}", "$a b"), ("\\\\{v}", "\\a b"), ("${{v}}", "own")]:
        cmd = render_argv(["v=own;", "printf", "%s", fixed], {"v": "a b"}, shell=True)
        assert run_command(cmd, timeout=10, shell=True).stdout.decode() == printed
