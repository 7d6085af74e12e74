"""Files and folders in places other users share: the one helper for all of Assay.

Assay often runs as root on machines with other users.  A file or folder at a
predictable path in a place they can write (the temporary folder, a project folder
that is group-writable, a store's folder) could be a link they planted: opened by
root, it would overwrite a file of root's, or hand them a folder root then trusts.
So every file and folder Assay, its targets and its examples make goes through here:

- a fresh private temporary folder (``mkdtemp``: mode 0700, a name nobody can guess),
  :func:`private_temp_dir`, removed at the end;
- a folder with a predictable name: made mode 0700, or accepted only when it is this
  user's own, not a link, and no other user may enter or change it
  (:func:`private_dir`);
- a file with a predictable name: opened ``O_NOFOLLOW`` and accepted only when it is
  a regular file of this user (:func:`open_private`);
- a folder another user could change refused, naming the folder, its owner and mode,
  and the fix (:func:`check_own_folder`, :func:`check_parents`).

Each refusal is an :class:`UnsafePathError`; the callers add their own context.

>>> d = private_temp_dir("assay-doc-")
>>> oct(os.stat(d).st_mode & 0o777)
'0o700'
>>> fd = open_private(d / "a.txt", os.O_WRONLY | os.O_CREAT)
>>> os.close(fd); shutil.rmtree(d)
"""

from __future__ import annotations

import contextlib
import errno
import grp
import os
import pwd
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

#: Folders a private folder is made in: the temporary folder's resolved path.
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafePathError(RuntimeError):
    """A path another user could have planted or could change; the message names it,
    why, and what to do instead."""


def _own_private_group(gid: int) -> bool:
    """Whether ``gid`` is this user's own group (Debian's user private groups: named as
    the user, no other members), so that a folder writable by it is still private."""
    try:
        me = pwd.getpwuid(os.geteuid())
        group = grp.getgrgid(gid)
    except KeyError:
        return False
    return gid == me.pw_gid and group.gr_name == me.pw_name and set(group.gr_mem) <= {me.pw_name}


def others_can_write(st: os.stat_result) -> bool:
    """Whether a user other than the owner may add, rename or remove entries in the
    folder ``st`` describes (group- or other-writable; a group of the user's own does
    not count)."""
    if st.st_mode & 0o002:
        return True
    return bool(st.st_mode & 0o020) and not _own_private_group(st.st_gid)


def trusted_owners() -> set[int]:
    """Whose folders this process may trust: root, itself, and the user who ran it with
    sudo (``sudo assay ...`` in one's own project folder)."""
    owners = {0, os.geteuid()}
    with contextlib.suppress(ValueError):
        owners.add(int(os.environ.get("SUDO_UID", "")))
    return owners


def _describe(st: os.stat_result) -> str:
    return f"owner uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):o}"


def check_parents(path: Path, what: str, hint: str) -> None:
    """Raise :class:`UnsafePathError` unless every folder above ``path`` (links
    resolved) belongs to root or this user and no other user may rename entries in it
    (not writable by group or others, unless sticky like /tmp)."""
    _check_chain(Path(os.path.realpath(Path(path).absolute().parent)), path, what, hint, False)


def _check_chain(real: Path, path: Path, what: str, hint: str, itself: bool) -> None:
    me = os.geteuid()
    for d in (real, *real.parents):
        try:
            st = os.stat(d)
        except FileNotFoundError:
            continue  # made later, by this user
        except OSError as exc:
            raise UnsafePathError(f"{what} {path}: cannot inspect {d}: {exc.strerror}") from None
        shared = st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX
        if st.st_uid not in (0, me) or shared:
            above = "" if itself and d == real else " above it"
            raise UnsafePathError(
                f"{what} {path}: the directory {d}{above} can be changed by other users "
                f"({_describe(st)}); {hint}"
            )


def check_trusted_dir(path: Path, what: str, hint: str) -> Path:
    """``path`` resolved, when it is an existing folder no other user can change: not a
    link itself, and it and every folder above it pass :func:`check_parents`' checks
    (a sticky folder such as /tmp passes: a private folder is made inside it)."""
    path = Path(path).absolute()
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise UnsafePathError(f"{what} {path}: cannot use it ({exc.strerror}); {hint}") from None
    if stat.S_ISLNK(st.st_mode):
        raise UnsafePathError(
            f"{what} {path} is a symbolic link; Assay does not follow it (another user "
            f"could point it elsewhere): {hint}"
        )
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafePathError(f"{what} {path} is not a directory; {hint}")
    real = Path(os.path.realpath(path))
    _check_chain(real, path, what, hint, itself=True)
    return real


def check_own_folder(folder: Path, what: str, hint: str) -> None:
    """Raise :class:`UnsafePathError` when files with predictable names in ``folder``
    could be links another user planted: the folder (links resolved) belongs to a user
    other than root, this user or the one who ran sudo, or others may write in it, even
    sticky like /tmp (programs such as SQLite open their own files there without
    ``O_NOFOLLOW``); folders above it must pass :func:`check_parents`' checks."""
    real = Path(os.path.realpath(Path(folder).absolute()))
    try:
        st = os.stat(real)
    except FileNotFoundError:
        return  # made by this user (a caller's mkdir): nobody else's
    except OSError as exc:
        raise UnsafePathError(f"{what}: cannot inspect {real}: {exc.strerror}") from None
    if st.st_uid not in trusted_owners():
        raise UnsafePathError(
            f"{what}: the folder {real} belongs to another user ({_describe(st)}): a file "
            f"there could be a link that user planted; {hint}"
        )
    if others_can_write(st):
        raise UnsafePathError(
            f"{what}: the folder {real} can be written by other users ({_describe(st)}): "
            f"a file there could be a link one of them planted; {hint}"
        )
    _check_chain(real.parent, folder, what, hint, itself=False)


def private_temp_dir(prefix: str = "assay-") -> Path:
    """A fresh folder (``mkdtemp``: mode 0700, an unguessable name) in the temporary
    folder; the caller removes it (:func:`private_temp`)."""
    return Path(tempfile.mkdtemp(prefix=prefix))


@contextlib.contextmanager
def private_temp(prefix: str = "assay-") -> Iterator[Path]:
    """A :func:`private_temp_dir` for the length of the block, removed at its end
    (``rmtree`` does not follow links inside it).  Its name carries this process's pid:
    the folders of processes killed before their end (SIGKILL) are removed by the next
    one with the same prefix."""
    remove_stale(prefix)
    path = private_temp_dir(f"{prefix}{os.getpid()}-")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def remove_stale(prefix: str) -> list[Path]:
    """Remove the temporary folders ``prefix<pid>-…`` of this user whose process is
    gone (real folders only, never a link); the ones removed."""
    gone: list[Path] = []
    with contextlib.suppress(OSError), os.scandir(tempfile.gettempdir()) as entries:
        for entry in entries:
            pid = entry.name[len(prefix) :].split("-", 1)[0]
            if not entry.name.startswith(prefix) or not pid.isdigit() or _alive(int(pid)):
                continue
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid():
                shutil.rmtree(entry.path, ignore_errors=True)
                gone.append(Path(entry.path))
    return gone


def _alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (of any user: then its folder is left alone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def private_dir(path: Path, what: str, hint: str) -> Path:
    """The folder ``path`` (a predictable name), made mode 0700 with its missing
    parents (0700 too), or accepted when it exists as this user's own folder, not a
    link, that no other user may enter; refused otherwise (:class:`UnsafePathError`)."""
    path = Path(path).expanduser().absolute()
    check_parents(path, what, hint)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    try:
        fd = os.open(path, _DIR_FLAGS)
    except OSError as exc:  # ELOOP/ENOTDIR: a link (O_NOFOLLOW) or a file
        raise UnsafePathError(
            f"{what} {path} is a symbolic link or not a folder ({exc.strerror}); Assay "
            f"does not follow it: {hint}"
        ) from None
    try:
        st = os.fstat(fd)
        if st.st_uid != os.geteuid() or stat.S_IMODE(st.st_mode) & 0o077:
            raise UnsafePathError(
                f"{what} {path} exists with {_describe(st)}; Assay uses only a folder of "
                f"its user (uid {os.geteuid()}) that nobody else may enter: {hint}"
            )
    finally:
        os.close(fd)
    return path


def open_private(
    path: Path,
    flags: int,
    mode: int = 0o600,
    *,
    dir_fd: int | None = None,
    owners: set[int] | None = None,
) -> int:
    """A descriptor of ``path`` opened with ``flags`` and ``O_NOFOLLOW`` (a new file:
    ``mode``), when it is a regular file of this user (or of one of ``owners``); else
    :class:`UnsafePathError` (a link, a FIFO, another user's file).  The caller closes
    it."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # the name is a link
            raise UnsafePathError(
                f"{path} is a symbolic link; Assay does not follow it (another user could "
                "have planted it): remove it, or use another folder"
            ) from None
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid not in (owners or {os.geteuid()}):
        os.close(fd)
        raise UnsafePathError(
            f"{path} is not a file of this user ({_describe(st)}); Assay does not write "
            "through it: remove it, or use another folder"
        )
    return fd


def write_private(path: Path, data: bytes) -> None:
    """Write ``path`` afresh and atomically: a new file (``mkstemp``: mode 0600, a
    fresh name, so no planted link is followed) renamed over it."""
    # a short name of its own: ``path``'s may already be as long as a name can be
    fd, tmp = tempfile.mkstemp(prefix=".assay-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def read_private(path: Path, limit: int = 1 << 20) -> bytes | None:
    """The bytes of ``path`` when it is a regular file of this user (read with
    ``O_NOFOLLOW``); None when it is missing, a link or another user's."""
    try:
        fd = open_private(path, os.O_RDONLY | os.O_NONBLOCK)
    except (OSError, UnsafePathError):
        return None
    with os.fdopen(fd, "rb") as f:
        return f.read(limit)
