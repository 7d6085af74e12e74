"""Issue #57 item 6: one rule for every option that takes a value.  A value that looks
like one of the command's options (``--json``, or exactly a short option such as
``-h``) is refused with exit 2, naming the option, the value and the way to mean it
(``--store=--json``); ``=`` values, ``-``, negative numbers and the words after ``--``
are values.  The options are found by walking the click commands, so a new command or
option is covered without a new test.
"""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from assay.cli import exits, main
from assay.cli.option_values import AssayCommand

SWEEP = (
    '[study]\nname = "s"\n[benchmark]\ncommand = ["true", "{x}"]\n'
    '[sweep]\nsampler = "grid"\nrepetitions = 2\n[sweep.params]\nx = [1, 2]\n'
)


def group() -> click.Context:
    """The group's context, with its settings: click caches a command's help option
    from the first context it sees, so a bare one would drop ``-h``."""
    return click.Context(main, info_name="assay", **main.context_settings)


def commands() -> dict[str, click.Command]:
    ctx = group()
    found = {name: main.get_command(ctx, name) for name in main.list_commands(ctx)}
    return {name: cmd for name, cmd in found.items() if cmd is not None}


def context(cmd: click.Command) -> click.Context:
    """The command's context under the group (the group gives it ``-h``)."""
    return click.Context(cmd, parent=group(), info_name="x")


def options(cmd: click.Command) -> list[click.Option]:
    params = cmd.get_params(context(cmd))
    return [p for p in params if isinstance(p, click.Option)]


def a_flag(cmd: click.Command) -> str:
    """A real long flag of ``cmd``: ``--json`` where it is one of its options."""
    names = [o for p in options(cmd) for o in p.opts if o.startswith("--")]
    if "--json" in names:
        return "--json"
    flags = [o for p in options(cmd) if p.is_flag for o in p.opts if o.startswith("--")]
    return next((f for f in flags if f != "--help"), "--help")


CASES = [
    pytest.param(name, opt, value, id=f"{name} {opt} {value}")
    for name, cmd in commands().items()
    for p in options(cmd)
    if not (p.is_flag or p.count)
    for opt in p.opts
    for value in (a_flag(cmd), "-h")
]


def invoke(args: list[str], cache: Path) -> Result:
    return CliRunner().invoke(main, args, env={"XDG_CACHE_HOME": str(cache), "COLUMNS": "200"})


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working folder: a file named after an option would land here."""
    where = tmp_path / "cwd"
    where.mkdir()
    monkeypatch.chdir(where)
    return where


def test_every_command_has_the_rule() -> None:
    assert len(commands()) >= 12
    for name, cmd in commands().items():
        assert isinstance(cmd, AssayCommand), name


def test_every_option_is_walked() -> None:
    walked = {(c.values[0], c.values[1]) for c in CASES}
    for expected in [
        ("sweep", "--store"),
        ("run", "--name"),
        ("run", "--prepare"),
        ("run", "--setup"),
        ("run", "--conclude"),
        ("run", "--cleanup"),
        ("export", "-o"),
        ("report", "-o"),
        ("history", "--git-range"),
        ("compare", "-P"),
    ]:
        assert expected in walked


@pytest.mark.parametrize(("command", "opt", "value"), CASES)
def test_an_option_as_a_value_is_refused(
    command: str, opt: str, value: str, cwd: Path, tmp_path: Path
) -> None:
    nargs = next(p.nargs for p in options(commands()[command]) if opt in p.opts)
    extra = ["x"] * (nargs - 1)
    res = invoke([command, opt, value, *extra, "--", "true"], tmp_path / "cache")
    assert res.exit_code == exits.USAGE, res.output
    assert f"{opt} {value}: {opt} takes" in res.stderr
    assert "looks like the next option" in res.stderr
    assert f"={value}" in res.stderr  # how to mean it
    assert list(cwd.iterdir()) == []
    assert not (tmp_path / "cache").exists()  # no quick-mode store either


def test_sweep_store_swallowing_json_runs_nothing(cwd: Path, tmp_path: Path) -> None:
    """The issue's case: it ran the whole study into an SQLite file named '--json'."""
    (cwd / "s.toml").write_text(SWEEP, encoding="utf-8")
    res = invoke(["sweep", "s.toml", "--store", "--json", "-q"], tmp_path / "cache")
    assert res.exit_code == exits.USAGE, res.output
    assert "--store --json: --store takes a file name" in res.stderr
    assert "--store=--json or --store ./--json" in res.stderr
    assert sorted(p.name for p in cwd.iterdir()) == ["s.toml"]


def test_equals_and_ordinary_values_still_work(cwd: Path, tmp_path: Path) -> None:
    (cwd / "s.toml").write_text(SWEEP, encoding="utf-8")
    res = invoke(["sweep", "s.toml", "--store=x.db", "-q", "--json", "-"], tmp_path / "cache")
    assert res.exit_code == exits.OK, res.output
    assert json.loads(res.stdout)["store"] == "x.db" and (cwd / "x.db").is_file()
    args = ["run", "--no-overhead", "--no-monitor", "-q", "-r", "3", "--store", "y.db"]
    res = invoke([*args, "--json=--odd.json", "--", "true", "-q", "--verbose"], tmp_path / "c")
    assert res.exit_code in (exits.OK, exits.SHORT), res.output
    assert (cwd / "y.db").is_file()  # '=': the user meant a file of that name
    assert json.loads((cwd / "--odd.json").read_text())["kind"] == "run"


def parse(command: str, args: list[str]) -> dict[str, object]:
    """The parsed options of ``assay COMMAND ARGS`` (nothing runs)."""
    cmd = commands()[command]
    return cmd.make_context(command, args, parent=group()).params


def test_dashes_that_are_values_pass() -> None:
    assert parse("history", ["--seed", "-5", "x.db", "s"])["shuffle_seed"] == -5
    assert parse("run", ["--json", "-", "--", "true"])["json_out"] == "-"
    assert parse("export", ["x.db", "-o", "-q"])["output"] == "-q"  # export has no -q
    assert parse("run", ["-P", "n", "-5", "5", "--", "true"])["scan"] == ("n", "-5", "5")
    assert parse("run", ["--max-rounds=3", "-qr", "4", "--", "true"])["max_rounds"] == 4
    assert parse("run", ["-r5", "--", "true"])["max_rounds"] == 5  # attached


def test_words_after_the_double_dash_are_not_values() -> None:
    target = parse("run", ["-q", "--", "./bench", "--name", "--json", "-q"])["target"]
    assert target == ("./bench", "--name", "--json", "-q")
    assert parse("history", ["--", "s.toml", "--store", "--json"])["args"] == (
        "s.toml",
        "--store",
        "--json",
    )


def test_a_numeric_option_keeps_its_own_rule() -> None:
    """``--alpha -1`` is not an option of compare: its type refuses it, not this rule."""
    res = CliRunner().invoke(main, ["compare", "--alpha", "-1", "--", "a", "b"])
    assert res.exit_code == exits.USAGE
    assert "Invalid value for '--alpha'" in res.stderr
    assert "looks like the next option" not in res.stderr


def test_hyperfines_shell_spellings_are_taken(tmp_path: Path) -> None:
    """#60: hyperfine's --shell=none (no shell) and --shell=sh; another shell refused."""
    store = str(tmp_path / "s.db")
    runner = CliRunner()
    none = runner.invoke(
        main, ["run", "--shell=none", "--runs", "3", "--store", store, "--", "true"]
    )
    assert none.exit_code == 0, none.output
    sh = runner.invoke(
        main, ["run", "--shell=sh", "--runs", "3", "--store", store + "2", "true && true"]
    )
    assert sh.exit_code == 0, sh.output
    bash = runner.invoke(main, ["run", "--shell=bash", "--store", store, "--", "true"])
    assert bash.exit_code == 2 and "--shell=bash" in bash.output
