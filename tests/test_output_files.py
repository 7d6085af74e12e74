"""Output files (--json, --csv, export -o): replaced whole, privately, never a device."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

from assay.report.export import write_text


def test_an_output_is_replaced_whole_and_private(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    out.write_text("old")
    write_text(str(out), '{"new": 1}')
    assert out.read_text() == '{"new": 1}'
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]  # no temporary left


def test_a_link_planted_at_the_old_temporary_name_is_not_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep")
    (tmp_path / "r.json.tmp").symlink_to(victim)
    write_text(str(tmp_path / "r.json"), "{}")
    assert victim.read_text() == "keep"
    assert (tmp_path / "r.json").read_text() == "{}"


def test_a_fifo_is_written_into_not_replaced(tmp_path: Path) -> None:
    # as /dev/null is: renaming over it replaced the device (as root, --json /dev/null)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    write_text(str(fifo), "through the pipe")
    reader.join(10)
    assert got == ["through the pipe"]
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
