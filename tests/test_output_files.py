"""Output files (--json, --csv, --report, export -o): replaced whole, written privately and
then given the mode the umask gives a new file, never a device."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

from assay.report.export import current_umask, write_text


def test_an_output_is_replaced_whole_with_the_umasks_mode(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    out.write_text("old")
    for umask, mode in ((0o022, 0o644), (0o077, 0o600), (0o002, 0o664)):
        old = os.umask(umask)
        try:
            write_text(str(out), '{"new": 1}')
        finally:
            os.umask(old)
        assert out.read_text() == '{"new": 1}'
        assert stat.S_IMODE(out.stat().st_mode) == mode  # #38: a report to share
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]  # no temporary left
    assert current_umask() == os.umask(os.umask(0o022))  # read without changing it


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
