"""Issue #13, item 9: strings from outside (study names, units, variant and test names,
CSV columns, a command's stderr) reach the terminal as text — never as rich markup
(a ``MarkupError`` after the study ran, or a style applied) and never as escape
sequences (a new window title, a cleared screen)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from click.testing import CliRunner, Result

from assay.cli import main
from assay.report.safe import plain, shown

EVIL = "[/] [bold red]x \x1b]0;pwned\x07\x1b[2J\x9b31m"
TOML_EVIL = json.dumps(EVIL)  # a TOML basic string is a JSON string here


def invoke(tmp_path: Path, *args: str) -> Result:
    env = {"XDG_CACHE_HOME": str(tmp_path), "COLUMNS": "150"}
    return CliRunner().invoke(main, list(args), env=env)


def assert_clean(res: Result) -> None:
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    for stream in (res.stdout, res.stderr):
        assert "\x1b" not in stream and "\x9b" not in stream and "\x07" not in stream
        assert "MarkupError" not in stream


def test_plain_and_shown() -> None:
    assert plain(EVIL) == "[/] [bold red]x "
    assert shown("[/]") == "\\[/]"
    assert plain("a\tb\nc\r\x00") == "a\tb\nc"


def test_a_study_name_and_unit_print_as_text(tmp_path: Path) -> None:
    study = tmp_path / "s.toml"
    study.write_text(
        f'[study]\nname = {TOML_EVIL}\n[benchmark]\ncommand = ["true"]\n'
        f'[[pi]]\nname = "wall"\nunit = {TOML_EVIL}\n[stop]\nmax_rounds = 3\n'
    )
    res = invoke(tmp_path, "run", str(study), "--no-overhead", "--no-monitor")
    assert_clean(res)
    assert res.exit_code == 5
    assert "[/] [bold red]x" in res.stdout  # the name, as written


def test_a_failing_setups_stderr_is_shown_without_its_escapes(tmp_path: Path) -> None:
    study = tmp_path / "s.toml"
    script = "printf '\\033]0;pwned\\007\\033[2Jfatal [/] setup\\n' >&2; exit 1"
    study.write_text(
        f'[study]\nname = "s"\n[benchmark]\ncommand = ["true"]\n'
        f'setup = ["sh", "-c", {json.dumps(script)}]\n[stop]\nmax_rounds = 3\n'
    )
    res = invoke(tmp_path, "run", str(study), "--no-overhead", "--no-monitor")
    assert_clean(res)
    assert res.exit_code == 3
    assert "fatal [/] setup" in res.stderr


def test_variant_names_print_as_text(tmp_path: Path) -> None:
    res = invoke(
        tmp_path,
        "compare",
        "--no-overhead",
        "--no-monitor",
        "-r",
        "3",
        *("--name", EVIL, "--name", "[bold]b"),
        *("--", "true", "--", "true"),
    )
    assert_clean(res)
    assert "[bold]b" in res.stdout and "[/] [bold red]x" in res.stdout


def order_csv(path: Path, tests: list[str]) -> Path:
    """Order trials (the ``--from`` format) of ``tests``: 3 fixed and 3 random runs."""
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["test", "order", "run", "position", "value"])
        for run in range(3):
            for order in ("fixed", "random"):
                for pos, test in enumerate(tests):
                    w.writerow([test, order, f"{order}{run}", pos, 10 + pos + run * 0.1])
    return path


def knobs_csv(path: Path, columns: list[str]) -> Path:
    """40 measured settings of two knobs and a metric, named ``columns``."""
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(columns)
        for i in range(40):
            w.writerow([i % 7, (i * 3) % 5, (i % 7) * 2.0 + 0.1 * ((i * 3) % 5)])
    return path


def test_order_test_names_and_units_print_as_text(tmp_path: Path) -> None:
    path = order_csv(tmp_path / "t.csv", [EVIL, "[b]"])
    res = invoke(tmp_path, "order", "--from", str(path), "--unit", "[/]")
    assert_clean(res)
    assert "[b]" in res.stdout and "[/] [bold red]x" in res.stdout


def test_knob_columns_and_metrics_print_as_text(tmp_path: Path) -> None:
    path = knobs_csv(tmp_path / "k.csv", ["[/]", "[red]b", "m[/]"])
    res = invoke(tmp_path, "knobs", "--from", str(path), "--metric", "m[/]", "--trees", "20")
    assert_clean(res)
    assert res.exit_code == 0, res.output
    assert "[red]b" in res.stdout


def test_plots_take_names_as_literal_text(tmp_path: Path) -> None:
    """Issue #13, item 12: matplotlib read a name like ``$\\foo$`` as TeX and raised."""
    path = order_csv(tmp_path / "t.csv", ["$\\foo$", "b"])
    res = invoke(tmp_path, "order", "--from", str(path), "--plot", str(tmp_path / "o.svg"))
    assert res.exit_code == 0, res.output
    assert "$\\foo$" in (tmp_path / "o.svg").read_text()
    knobs = knobs_csv(tmp_path / "k.csv", ["$\\bar$", "b", "m"])
    out = tmp_path / "k.png"
    res = invoke(tmp_path, "knobs", "--from", str(knobs), "--metric", "m", "--plot", str(out))
    assert res.exit_code == 0, res.output
    assert out.stat().st_size > 0


MD_EVIL = "![t](https://evil.example/t.png) [click](https://evil.example) @octocat <img src=x>"


def test_markdown_forms_no_link_image_mention_or_html_from_outside_strings(
    tmp_path: Path,
) -> None:
    """Issue #44: ``--markdown`` goes into PR comments and ``$GITHUB_STEP_SUMMARY``, where
    a variant named like a Markdown image fetched it from its host and ``@name`` pinged
    a user."""
    res = invoke(
        tmp_path,
        "compare",
        "--no-overhead",
        "--no-monitor",
        "-r",
        "3",
        "--markdown",
        str(tmp_path / "c.md"),
        *("--name", MD_EVIL, "--name", "# www.evil.example | mailto:a@b.example"),
        *("--", "true", "--", "true"),
    )
    assert_clean(res)
    md = (tmp_path / "c.md").read_text()
    assert "evil.example" in md  # the names are there, as text
    import re

    assert not re.search(r"(?<!\\)[\[\]!]", md.replace("| PI | rank |", "")), md  # no link
    for formed in ("@octocat", "<img", "https://", "www.evil", "mailto:"):
        assert formed not in md, formed
    assert "\\# www&#46;evil.example \\| mailto&#58;a&#64;b.example" in md  # one cell, as text
