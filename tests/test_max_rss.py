"""#60: the command's peak memory (max RSS) is in the terminal's result, ``--json`` and
the HTML report, not only in ``assay export``.  The command allocates 50 MiB and
touches it: its peak is at least that, whatever else the interpreter holds."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from assay.cli import main

ALLOCATE = "x = bytearray(50 * 1024 * 1024)"


def test_a_run_shows_its_commands_peak_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    store, doc, page = tmp_path / "s.assay.db", tmp_path / "r.json", tmp_path / "r.html"
    res = CliRunner().invoke(
        main,
        ["run", "--runs", "3", "--no-monitor", "--store", str(store), "--json", str(doc),
         "--", sys.executable, "-c", ALLOCATE],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    rss = json.loads(doc.read_text())["max_rss"]
    # (the spawner that measures a command's own peak paces itself: not every trial)
    assert 1 <= rss["trials"] <= 3 and rss["median_kib"] >= 50 * 1024 <= rss["max_kib"]
    assert "max RSS: " in res.output and "the command's peak memory" in res.output
    shown = CliRunner().invoke(main, ["report", str(store), "-o", str(page)])
    assert shown.exit_code == 0, shown.output
    assert "max RSS: " in page.read_text()
