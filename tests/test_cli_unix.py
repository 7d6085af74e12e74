"""Issue #14: the command line behaves like a good Unix tool — exit statuses that mean
something, JSON/CSV that pipe, typos and odd values refused, failures explained,
outputs checked before the work, narrow terminals, quick studies that resume.

Each test runs real commands and asserts the exit status and the stream each output
goes to (click's runner keeps stdout and stderr apart).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from assay.cli import exits, main

QUICK = ("--no-overhead", "--no-monitor")


def invoke(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> Result:
    """``assay ARGS`` with the quick-mode store in ``tmp_path``."""
    environ = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "COLUMNS": "110", **(env or {})}
    return CliRunner().invoke(main, list(args), env=environ)


# -- exit statuses -----------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [["false"], ["/no/such/command"], [sys.executable, "-c", "import sys; sys.exit(3)"]],
)
def test_nothing_valid_measured_is_exit_4(tmp_path: Path, command: list[str]) -> None:
    res = invoke(tmp_path, "run", *QUICK, "-q", "-r", "6", "--", *command)
    assert res.exit_code == exits.NO_RESULT, res.output
    assert "failed" in res.stdout


def test_a_regex_that_never_matches_is_exit_4_and_shows_the_output(
    tmp_path: Path, write_study: Any, py: str
) -> None:
    study = write_study(
        f'[study]\nname = "rx"\n[benchmark]\ncommand = ["{py}", "-c", "print(\'tps: n/a\')"]\n'
        '[[pi]]\nname = "tps"\nsource = "regex"\npattern = \'tps=([0-9.]+)\'\n'
        "[stop]\nmax_rounds = 5\n"
    )
    res = invoke(tmp_path, "run", *QUICK, "-q", str(study))
    assert res.exit_code == exits.NO_RESULT, res.output
    assert "parse_error" in res.stdout
    assert "stdout: tps: n/a" in res.stdout  # what the pattern was searched in


def test_budget_spent_before_the_target_is_exit_5(tmp_path: Path) -> None:
    res = invoke(tmp_path, "run", *QUICK, "-q", "-r", "3", "--ci-width", "0.01%", "--", "true")
    assert res.exit_code == exits.SHORT, res.output
    assert "budget spent" in res.stdout


def test_target_reached_is_exit_0(tmp_path: Path) -> None:
    res = invoke(tmp_path, "run", *QUICK, "-q", "--ci-width", "90%", "--", "sleep", "0.01")
    assert res.exit_code == exits.OK, res.output
    assert "target reached" in res.stdout


@pytest.mark.parametrize("command", ["run", "compare", "order", "sweep", "knobs"])
def test_every_help_documents_the_exit_statuses(tmp_path: Path, command: str) -> None:
    res = invoke(tmp_path, command, "--help")
    assert res.exit_code == 0
    text = " ".join(res.stdout.split())
    for line in ("Exit status:", "0 done", "2 usage error", "4 no valid result", "130"):
        assert line in text, line


def test_failures_show_the_end_of_stderr(tmp_path: Path) -> None:
    script = "echo starting; echo 'fatal: config not found' >&2; exit 3"
    res = invoke(tmp_path, "run", *QUICK, "-q", "-r", "5", "--", "sh", "-c", script)
    assert res.exit_code == exits.NO_RESULT
    assert "exited with status 3" in res.stdout
    assert "stderr: fatal: config not found" in res.stdout
    assert res.stdout.count("fatal: config not found") == 1  # the same ending is said once


# -- pipes ---------------------------------------------------------------------------


def test_json_to_stdout_pipes_through_a_real_pipe(tmp_path: Path) -> None:
    """``assay run --json - -- true | python3 -m json.tool``."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    assay = [sys.executable, "-m", "assay.cli", "run", "--json", "-", *QUICK, "-r", "12"]
    line = " ".join(assay) + " -- true | " + sys.executable + " -m json.tool"
    done = subprocess.run(["sh", "-c", line], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr  # json.tool's status: the JSON parsed
    assert json.loads(done.stdout)["pis"][0]["name"] == "wall_time"
    assert "mean ± CI half-width" in done.stderr  # the report, on stderr


@pytest.mark.parametrize("flag", ["--json", "--csv", "--export-markdown"])
def test_dash_outputs_leave_stdout_to_the_data(tmp_path: Path, flag: str) -> None:
    res = invoke(tmp_path, "run", *QUICK, "-r", "4", flag, "-", "--", "true")
    assert res.exit_code in (exits.OK, exits.SHORT), res.output
    out, err = res.stdout, res.stderr
    if flag == "--json":
        json.loads(out)
    elif flag == "--csv":
        assert out.splitlines()[0].startswith("study,pi,unit")
        assert len(out.splitlines()) == 2
    else:
        assert out.startswith("### quick true")
        assert "| wall_time |" in out
    assert "mean ± CI half-width" in err
    shared = {line for line in out.splitlines() if line.strip()} & set(err.splitlines())
    assert not shared, shared  # no line of the report on both streams


def test_quiet_with_a_dash_output_prints_only_the_data(tmp_path: Path) -> None:
    res = invoke(tmp_path, "run", *QUICK, "-q", "-r", "3", "--json", "-", "--", "true")
    json.loads(res.stdout)
    assert res.stderr == ""


def test_two_outputs_on_stdout_are_refused(tmp_path: Path) -> None:
    res = invoke(tmp_path, "run", "--json", "-", "--csv", "-", "--", "true")
    assert res.exit_code == exits.USAGE
    assert "both write to stdout" in res.stderr


def test_an_output_given_the_next_option_as_its_file_is_refused(tmp_path: Path) -> None:
    """`--json --store s.db`: click hands --json the word '--store'; it was a file named
    '--store' and the store path became the benchmark command."""
    res = invoke(tmp_path, "run", "--json", "--store", str(tmp_path / "s.db"), "--", "true")
    assert res.exit_code == exits.USAGE
    assert "--json takes a file name" in res.stderr and "looks like the next option" in res.stderr
    assert not (tmp_path / "--store").exists() and not (tmp_path / "s.db").exists()


def test_from_modes_pipe_too(tmp_path: Path) -> None:
    data = Path(__file__).parent / "data"
    res = invoke(tmp_path, "order", "--from", str(data / "order_trials.csv"), "--json", "-")
    assert res.exit_code == exits.OK, res.output
    assert json.loads(res.stdout)["pooled_flagged"] == ["c"]  # run means do not flag it
    assert "Kruskal" in res.stderr
    files = [str(data / "hyperfine_sqlite_sync.json"), str(data / "assay_sqlite_sync_off.json")]
    res = invoke(tmp_path, "compare", "--from", "--pi", "wall_time", *files, "--csv", "-")
    assert res.stdout.startswith("study,pi,rank,variant")
    assert "method:" in res.stderr and "method:" not in res.stdout


# -- typos, commands as one string, values ------------------------------------------


def test_one_quoted_string_is_split_as_hyperfine_does_and_said(tmp_path: Path) -> None:
    res = invoke(tmp_path, "run", *QUICK, "-q", "-r", "3", "--json", "-", "sleep 0.01")
    assert res.exit_code in (exits.OK, exits.SHORT), res.output
    assert json.loads(res.stdout)["pis"][0]["mean"] > 0.005
    assert "is run as the words ['sleep', '0.01']" in res.stderr


def test_one_string_with_shell_syntax_asks_for_shell(tmp_path: Path) -> None:
    res = invoke(tmp_path, "run", "sleep 0.01 | cat")
    assert res.exit_code == exits.USAGE
    assert "--shell" in res.stderr


def test_two_commands_to_run_point_to_compare(tmp_path: Path) -> None:
    res = invoke(tmp_path, "run", "--", "true", "--", "false")
    assert res.exit_code == exits.USAGE
    assert "assay compare" in res.stderr


def test_compare_takes_one_string_per_command(tmp_path: Path) -> None:
    res = invoke(
        tmp_path, "compare", *QUICK, "-q", "-r", "12", "--json", "-", "sleep 0.01", "sleep 0.03"
    )
    assert res.exit_code in (exits.OK, exits.SHORT), res.output
    names = {v["variant"] for v in json.loads(res.stdout)["comparisons"][0]["variants"]}
    assert names == {"sleep 0.01", "sleep 0.03"}


@pytest.mark.parametrize(
    ("option", "value", "accepted"),
    [
        ("--ci-width", "5", False),  # 5 or 500%? refused, with the % spelling suggested
        ("--ci-width", "200%", False),
        ("--ci-width", "0%", False),
        ("--ci-width", "5%", True),
        ("--ci-width", "0.05", True),
        ("--confidence", "95%", True),
        ("--confidence", "0.95", True),
        ("--confidence", "95", False),
        ("--confidence", "100%", False),
    ],
)
def test_shares_are_read_as_written(
    tmp_path: Path, option: str, value: str, accepted: bool
) -> None:
    res = invoke(tmp_path, "run", *QUICK, "-q", "-r", "3", option, value, "--", "true")
    if accepted:
        assert res.exit_code in (exits.OK, exits.SHORT), res.output
    else:
        assert res.exit_code == exits.USAGE
        assert option in res.stderr
        if value == "5":
            assert "5%" in res.stderr


def test_compare_alpha_takes_percent(tmp_path: Path) -> None:
    res = invoke(tmp_path, "compare", "--alpha", "5", "--", "true", "--", "true")
    assert res.exit_code == exits.USAGE
    res = invoke(tmp_path, "compare", *QUICK, "-q", "-r", "2", "--alpha", "5%", "true 1", "true 2")
    assert res.exit_code != exits.USAGE, res.output


# -- outputs checked before the work ------------------------------------------------


@pytest.mark.parametrize("flag", ["--json", "--csv", "--export-markdown"])
def test_an_unwritable_output_is_refused_before_any_trial(tmp_path: Path, flag: str) -> None:
    marker = tmp_path / "ran"
    res = invoke(tmp_path, "run", flag, "/no/such/dir/r.out", "--", "touch", str(marker))
    assert res.exit_code == exits.USAGE
    assert res.stderr.count("\n") == 1 and "/no/such/dir does not exist" in res.stderr
    assert not marker.exists()  # not a single trial ran


def test_a_bad_plot_name_is_refused_before_the_work(tmp_path: Path) -> None:
    data = Path(__file__).parent / "data" / "order_trials.csv"
    res = invoke(tmp_path, "order", "--from", str(data), "--plot", str(tmp_path))
    assert res.exit_code == exits.USAGE
    assert "expected a file name ending in .png or .svg" in res.stderr


# -- narrow terminals --------------------------------------------------------------


def _figures_whole(text: str) -> None:
    assert "…" not in text, text
    for line in text.splitlines():
        assert line == line.rstrip(), repr(line)  # no trailing blanks in a pipe


@pytest.mark.parametrize("columns", [60, 80])
def test_order_at_narrow_widths_cuts_no_figure(tmp_path: Path, columns: int) -> None:
    data = Path(__file__).parent / "data" / "order_trials.csv"
    res = invoke(tmp_path, "order", "--from", str(data), env={"COLUMNS": str(columns)})
    assert res.exit_code == exits.OK
    _figures_whole(res.stdout)
    assert max(len(line) for line in res.stdout.splitlines()) <= columns
    assert "10.00 [9.80, 10.18]" in res.stdout  # the fixed-order median of test a, whole


def test_compare_at_80_columns_keeps_verdicts_and_estimates_whole(tmp_path: Path) -> None:
    data = Path(__file__).parent / "data"
    files = [str(data / "hyperfine_sqlite_sync.json"), str(data / "assay_sqlite_sync_off.json")]
    res = invoke(tmp_path, "compare", "--from", "--pi", "wall_time", *files, env={"COLUMNS": "80"})
    _figures_whole(res.stdout)
    # ± 0.69: the live comparison's small-sample rule (#58): the 20 readings' lag-1
    # autocorrelation 0.35 is not significant, so they are not merged (Pilot's rule made
    # 5 subsessions of 4, ± 0.48), and the interval is widened at phi's upper bound
    assert "separated" in res.stdout and "12.51 ms ± 0.69 ms" in res.stdout
    assert "narrow terminal: left out" in res.stdout  # says which columns went


def test_pipes_honour_columns(tmp_path: Path) -> None:
    wide = invoke(tmp_path, "run", *QUICK, "-r", "3", "--", "true")
    assert max(len(line) for line in wide.stdout.splitlines()) > 60
    res = invoke(tmp_path, "run", *QUICK, "-r", "3", "--", "true", env={"COLUMNS": "60"})
    assert max(len(line) for line in res.stdout.splitlines()) <= 60


# -- quick mode resumes; Ctrl-C ----------------------------------------------------


def test_the_same_quick_command_measures_again_or_resumes_when_asked(tmp_path: Path) -> None:
    args = ("run", *QUICK, "-q", "-r", "4", "--json", "-", "--", "true")
    first = json.loads(invoke(tmp_path, *args).stdout)
    second = json.loads(invoke(tmp_path, *args).stdout)
    assert second["study"] == first["study"]
    assert second["trials"]["resumed"] == 0 and second["trials"]["total"] == 4  # anew
    resumed = json.loads(invoke(tmp_path, *args[:-2], "--resume", "--", "true").stdout)
    assert resumed["trials"]["resumed"] == 4 and resumed["trials"]["total"] == 4
    fresh = json.loads(invoke(tmp_path, *args[:-2], "--fresh", "--", "true").stdout)
    assert fresh["trials"]["resumed"] == 0
    other = json.loads(invoke(tmp_path, *args[:-1], "false").stdout)
    assert other["study"] != first["study"]


def test_ctrl_c_before_the_first_trial_says_interrupted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_module = sys.modules["assay.cli.run"]  # (assay.cli.run is also the command)

    def interrupted(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(run_module, "spec_from_target", interrupted)
    res = invoke(tmp_path, "run", "--", "true")
    assert res.exit_code == exits.INTERRUPTED
    assert "interrupted" in res.stderr and "Aborted" not in res.output


# -- hyperfine habits ----------------------------------------------------------------


def test_prepare_runs_before_every_trial_and_short_options(tmp_path: Path) -> None:
    log = tmp_path / "prepared"
    res = invoke(
        tmp_path,
        "run",
        *QUICK,
        "-q",
        "-r",
        "4",
        "-w",
        "1",
        "--prepare",
        f"echo x >> {log}",
        "--",
        "true",
    )
    assert res.exit_code in (exits.OK, exits.SHORT), res.output
    assert log.read_text().count("x") == 4


def test_ignore_failure_measures_a_failing_command(tmp_path: Path) -> None:
    res = invoke(tmp_path, "run", *QUICK, "-q", "-i", "-r", "4", "--json", "-", "--", "false")
    assert res.exit_code in (exits.OK, exits.SHORT), res.output
    assert json.loads(res.stdout)["trials"]["by_status"] == {"ok": 4}


def test_show_output_prints_each_trials_output_safely(tmp_path: Path) -> None:
    code = "print('hello [/] \\x1b]0;title\\x07 there')"
    res = invoke(
        tmp_path, "run", *QUICK, "-q", "-r", "2", "--show-output", "--", sys.executable, "-c", code
    )
    assert res.exit_code in (exits.OK, exits.SHORT), res.output
    assert res.stderr.count("hello [/]  there") == 2
    assert "\x1b" not in res.stderr


def test_help_groups_the_options(tmp_path: Path) -> None:
    text = invoke(tmp_path, "run", "--help").stdout
    sections = ["Measurement:", "Stopping rule and budget:", "Output:", "Store:"]
    assert all(s in text for s in sections)
    assert [text.index(s) for s in sections] == sorted(text.index(s) for s in sections)
    assert "-r, --max-rounds" in text and "-w, --warmup" in text


def test_prepare_is_refused_with_a_study_file(tmp_path: Path, write_study: Any) -> None:
    study = write_study('[study]\nname = "s"\n[benchmark]\ncommand = ["true"]\n')
    res = invoke(tmp_path, "run", "--prepare", "echo", str(study))
    assert res.exit_code == exits.USAGE
    assert "[benchmark] reset" in res.stderr


# -- --report on the study commands (issue #16) --------------------------------------


def test_report_option_writes_the_html_report_at_the_end(tmp_path: Path) -> None:
    page = tmp_path / "r.html"
    res = invoke(tmp_path, "run", *QUICK, "-q", "-r", "3", "--report", str(page), "--", "true")
    assert res.exit_code in (exits.OK, exits.SHORT), res.output
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>") and "quick true" in text and "<svg" in text
    assert f"report written to {page}" in " ".join(res.stderr.split())
    page = tmp_path / "c.html"
    res = invoke(
        tmp_path, "compare", *QUICK, "-q", "-r", "3", "--report", str(page), "--", "true",
        "--", "false",
    )  # fmt: skip
    assert "compare" in page.read_text()


def test_report_option_is_checked_first_and_refused_with_from(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    res = invoke(tmp_path, "run", "--report", "/no/dir/r.html", "--", "touch", str(marker))
    assert res.exit_code == exits.USAGE and not marker.exists()
    data = Path(__file__).parent / "data" / "order_trials.csv"
    res = invoke(tmp_path, "order", "--from", str(data), "--report", str(tmp_path / "o.html"))
    assert res.exit_code == exits.USAGE and "--report" in res.stderr


def test_the_quick_study_name_the_readme_shows_is_the_one_assay_gives() -> None:
    """Issue #44: the README named a quick study that no command makes."""
    import re
    from pathlib import Path

    from assay.cli.common import quick_spec

    root = Path(__file__).resolve().parent.parent
    pages = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    text = "\n".join(p.read_text(encoding="utf-8") for p in pages)
    named = set(re.findall(r'"(quick sleep-0-01 [0-9a-f]{8})"', text))
    opts = {"shell": False, "timeout": None, "name": None, "store": None}
    spec, _ = quick_spec(("sleep 0.01",), opts, {})
    assert named == {spec.study.name}
