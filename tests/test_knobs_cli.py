"""``assay knobs``: the offline command (--from CSV), its errors, and the live-mode stub."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from assay.cli import main

FAST = ["--trees", "20", "--jobs", "1"]


def _write_samples(path: Path, n: int = 60, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["buffer", "threads", "mode", "junk", "flag", "throughput", "p99"])
        for _ in range(n):
            buffer = rng.uniform(0, 1)
            threads = int(rng.integers(1, 65))
            mode = rng.choice(["a", "b"])
            junk = rng.uniform(0, 1)
            flag = int(rng.integers(0, 2))
            tps = 100 + 80 * buffer + (30 if mode == "b" else 0) + rng.normal(0, 2)
            p99 = 5 + 0.2 * threads + rng.normal(0, 0.3)
            w.writerow(
                [f"{buffer:.4f}", threads, mode, f"{junk:.4f}", flag, f"{tps:.2f}", f"{p99:.2f}"]
            )
    return path


def test_offline_ranks_exports_and_plots(tmp_path: Path) -> None:
    samples = _write_samples(tmp_path / "s.csv")
    out_json, out_csv, plot = tmp_path / "k.json", tmp_path / "k.csv", tmp_path / "imp.png"
    res = CliRunner().invoke(
        main,
        [
            "knobs",
            "--from",
            str(samples),
            "--metric",
            "throughput",
            "--metric",
            "p99",
            "--top",
            "2",
            "--objective",
            "max throughput s.t. p99<=12",
            "--unsafe",
            "flag",
            "--json",
            str(out_json),
            "--csv",
            str(out_csv),
            "--plot",
            str(plot),
            *FAST,
        ],
    )
    assert res.exit_code == 0, res.output
    assert "knob importance: throughput ↑" in res.output
    assert "knob importance: p99 ↓" in res.output
    assert "top 2 by impurity importance: buffer, mode" in res.output
    assert "out-of-bag R²" in res.output and "stability of the top 2" in res.output
    assert "flag ⚠" in res.output
    data = json.loads(out_json.read_text())
    assert [r["pi"] for r in data["rankings"]] == [
        "throughput",
        "p99",
        "max throughput s.t. p99<=12",
    ]
    assert data["rankings"][1]["top"][0] == "threads"
    assert data["primary"] == "max throughput s.t. p99<=12"
    rows = list(csv.DictReader(out_csv.open()))
    assert len(rows) == 3 * 5 and {r["knob"] for r in rows} == {
        "buffer",
        "threads",
        "mode",
        "junk",
        "flag",
    }
    assert plot.read_bytes()[:4] == b"\x89PNG"


def test_offline_tune_on_the_model(tmp_path: Path) -> None:
    samples = _write_samples(tmp_path / "s.csv")
    res = CliRunner().invoke(
        main,
        [
            "knobs",
            "--from",
            str(samples),
            "--metric",
            "throughput",
            "--tune",
            "12",
            "--json",
            "-",
            *FAST,
        ],
    )
    assert res.exit_code == 0, res.output
    assert "tuner: Optuna TPE" in res.output and "tuning cost" in res.output
    assert "random-forest model of the samples" in res.output


@pytest.mark.parametrize(
    ("edit", "args", "message"),
    [
        (None, ["--metric", "tput"], "no column 'tput'"),
        ("bad_number", ["--metric", "throughput"], "column 'throughput', line 4: 'fast'"),
        ("empty_knob", ["--metric", "throughput"], "column 'junk', line 3: empty"),
        ("few_rows", ["--metric", "throughput"], "at least 10"),
        (None, [], "at least one --metric"),
        (None, ["--metric", "throughput:up"], "'higher' or 'lower'"),
        (None, ["--metric", "throughput", "--objective", "best throughput"], "expected 'max PI'"),
        (None, ["--metric", "throughput", "--knob", "nope"], "no column 'nope' for --knob"),
        (None, ["--metric", "throughput", "--unsafe", "nope"], "--unsafe nope"),
    ],
)
def test_bad_input_exits_2_with_one_clear_message(
    tmp_path: Path, edit: str | None, args: list[str], message: str
) -> None:
    samples = _write_samples(tmp_path / "s.csv", n=30)
    lines = samples.read_text().splitlines()
    if edit == "bad_number":
        cells = lines[3].split(",")
        cells[5] = "fast"
        lines[3] = ",".join(cells)
    elif edit == "empty_knob":
        cells = lines[2].split(",")
        cells[3] = ""
        lines[2] = ",".join(cells)
    elif edit == "few_rows":
        lines = lines[:6]
    samples.write_text("\n".join(lines) + "\n")
    res = CliRunner().invoke(main, ["knobs", "--from", str(samples), *args, *FAST])
    assert res.exit_code == 2, res.output
    assert message in res.output
    assert "Traceback" not in res.output
    if edit or "column" in message:
        assert str(samples) in res.output


def test_missing_and_unreadable_files(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["knobs", "--from", str(tmp_path / "no.csv"), "--metric", "t"])
    assert res.exit_code == 2 and "no such samples file" in res.output
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    res = CliRunner().invoke(main, ["knobs", "--from", str(empty), "--metric", "t"])
    assert res.exit_code == 2 and "cannot read it as CSV" in res.output


def test_study_or_samples_not_both_nor_neither(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["knobs"])
    assert res.exit_code == 2 and "not both or neither" in res.output
    res = CliRunner().invoke(main, ["knobs", "x.toml", "--from", "s.csv"])
    assert res.exit_code == 2


def test_live_mode_needs_knobs(tmp_path: Path) -> None:
    plain = tmp_path / "plain.toml"
    plain.write_text('[study]\nname = "p"\n[benchmark]\ncommand = ["true"]\n')
    res = CliRunner().invoke(main, ["knobs", str(plain)])
    assert res.exit_code == 2 and "no [[knob]] entries" in res.output


def test_help_lists_the_study_format() -> None:
    res = CliRunner().invoke(main, ["knobs", "--help"])
    assert res.exit_code == 0
    assert "[[knob]]" in res.output and "--objective" in res.output
