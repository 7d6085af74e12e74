"""assay.privatefs, the one helper for files and folders in shared places (#57)."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from assay.privatefs import (
    UnsafePathError,
    check_own_folder,
    open_private,
    private_dir,
    private_temp,
    read_private,
    write_private,
)

ROOT = os.geteuid() == 0
HINT = "use another"


def test_a_private_temp_folder_is_0700_and_removed(tmp_path: Path) -> None:
    with private_temp("assay-t-") as d:
        assert stat.S_IMODE(os.stat(d).st_mode) == 0o700 and d.name.startswith("assay-t-")
    assert not d.exists()


def test_a_predictable_folder_is_made_private_or_refused(tmp_path: Path) -> None:
    made = private_dir(tmp_path / "a" / "b", "folder", HINT)
    assert stat.S_IMODE(os.stat(made).st_mode) == 0o700
    assert private_dir(made, "folder", HINT) == made  # ours: accepted again
    os.chmod(made, 0o755)
    with pytest.raises(UnsafePathError, match="mode 755"):
        private_dir(made, "folder", HINT)
    (tmp_path / "link").symlink_to(made)
    with pytest.raises(UnsafePathError, match="symbolic link"):
        private_dir(tmp_path / "link", "folder", HINT)


def test_a_file_is_opened_only_when_it_is_this_users_and_no_link(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep")
    (tmp_path / "link").symlink_to(victim)
    with pytest.raises(UnsafePathError, match="symbolic link"):
        open_private(tmp_path / "link", os.O_WRONLY | os.O_TRUNC)
    assert victim.read_text() == "keep"
    assert read_private(tmp_path / "link") is None
    write_private(tmp_path / "link", b"new")  # replaces the link, never writes through
    assert victim.read_text() == "keep" and (tmp_path / "link").read_bytes() == b"new"
    assert not (tmp_path / "link").is_symlink()


@pytest.mark.skipif(not ROOT, reason="chown needs root")
def test_another_users_file_or_folder_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o755)
    shutil.chown(theirs, "nobody")
    with pytest.raises(UnsafePathError, match="belongs to another user"):
        check_own_folder(theirs, "results store x", HINT)
    nobody = theirs.stat().st_uid
    monkeypatch.setenv("SUDO_UID", str(nobody))  # the user who ran sudo: their own folder
    check_own_folder(theirs, "results store x", HINT)
    monkeypatch.delenv("SUDO_UID")
    f = tmp_path / "f"
    f.write_text("x")
    shutil.chown(f, "nobody")
    with pytest.raises(UnsafePathError, match="not a file of this user"):
        open_private(f, os.O_RDONLY)
    os.close(open_private(f, os.O_RDONLY, owners={nobody}))  # a store of the sudo user's


def test_a_folder_others_can_write_is_refused_even_when_sticky(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    with pytest.raises(UnsafePathError, match="can be written by other users"):
        check_own_folder(shared, "results store x", HINT)
    os.chmod(shared, 0o755)
    check_own_folder(shared, "results store x", HINT)
    check_own_folder(tmp_path / "missing", "results store x", HINT)  # made later, ours


def test_the_folders_of_killed_processes_are_removed_by_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A driver killed with SIGKILL leaves its private scratch folder; the next one
    with the same prefix removes it (never a live process's, never through a link)."""
    import subprocess
    import tempfile

    from assay.privatefs import remove_stale

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = tmp_path / f"assay-t-{dead.pid}-abc"
    (stale / "w").mkdir(parents=True)
    live = tmp_path / f"assay-t-{os.getpid()}-def"
    live.mkdir()
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep").write_text("x")
    (tmp_path / f"assay-t-{dead.pid}-link").symlink_to(victim)
    assert remove_stale("assay-t-") == [stale]
    assert live.is_dir() and (victim / "keep").exists()
    with private_temp("assay-t-") as d:
        assert d.name.startswith(f"assay-t-{os.getpid()}-")
