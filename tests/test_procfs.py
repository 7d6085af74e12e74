"""Kernel files read whole, through descriptors kept open (issue #17)."""

from __future__ import annotations

import os
from pathlib import Path

from assay.execute.procfs import KeptFiles, read_bytes


def test_a_kept_file_is_read_from_its_start_each_time(tmp_path: Path) -> None:
    path = tmp_path / "counter"
    path.write_bytes(b"1\n" * 50_000)
    files = KeptFiles()
    try:
        assert files.read(str(path)) == read_bytes(path)
        with open(path, "r+b") as f:  # the same file, new content
            f.write(b"2\n")
        assert files.read(str(path)).startswith(b"2\n1\n")
        assert len(files._fds) == 1  # one descriptor, kept
    finally:
        files.close()
    assert not files._fds


def test_a_descriptor_that_fails_is_opened_again(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x")
    files = KeptFiles()
    files.read(str(path))
    os.close(files._fds[str(path)])  # as a removed cgroup's file fails
    assert files.read(str(path)) == b"x"
    files.forget(str(tmp_path) + "-other")  # not this folder
    assert files._fds
    files.forget(str(tmp_path))
    assert not files._fds


def test_a_forked_child_reads_through_its_own_descriptor() -> None:
    """/proc/self is the opener's: a descriptor the parent opened reads the parent."""
    files = KeptFiles()
    assert files.read("/proc/self/stat").split()[0] == str(os.getpid()).encode()
    pid = os.fork()
    if pid == 0:
        ok = files.read("/proc/self/stat").split()[0] == str(os.getpid()).encode()
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert files.read("/proc/self/stat").split()[0] == str(os.getpid()).encode()
    files.close()
