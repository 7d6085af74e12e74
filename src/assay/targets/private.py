"""Private places of a target: its state directory, its servers' data directories,
generated secrets.

Targets often run as root, so no path they act on may be one another local user can
plant or swap. A state directory is created fresh, mode 0700 and owned by the user
running Assay, or refused when it exists with another owner or mode or is a symbolic
link, and so is one whose parent directories another user could change. Its files are
opened relative to the directory's descriptor with ``O_NOFOLLOW`` (written ones with
``O_EXCL`` and renamed into place), so a link planted there is never followed. A
server's data directory (:func:`make_private_dir`) is made with ``mkdtemp`` (0700, a
fresh unique name) and holds a marker naming its state directory: teardown removes
only a directory that carries it, never one a state file merely names.

>>> import tempfile
>>> st = StateDir(Path(tempfile.mkdtemp()) / "demo")
>>> st.save({"port": 5})
>>> st.load(), oct(st.path.stat().st_mode & 0o777)
({'port': 5}, '0o700')
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import secrets
import shutil
import stat
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from assay import privatefs
from assay.targets.base import TargetError

STATE_FILE = "state.json"
MARKER = "assay-state-dir"  # in a data directory: the state directory it belongs to
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def default_state_dir(target: str) -> Path:
    """The per-user state directory of ``target``: ``$XDG_RUNTIME_DIR/assay/targets/NAME``
    when that directory is private to this user, else ``~/.cache/assay/targets/NAME``
    (the home directory of the effective user, not ``$HOME``, which sudo may keep)."""
    run = os.environ.get("XDG_RUNTIME_DIR", "")
    base: Path | None = None
    if run and os.path.isabs(run):
        with contextlib.suppress(OSError):
            st = os.lstat(run)
            if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o077:
                base = Path(run)
    if base is None:
        base = Path(pwd.getpwuid(os.geteuid()).pw_dir) / ".cache"
    return base / "assay" / "targets" / target


_OWN_DIR_HINT = "name a directory of your own (the default lies in your home or runtime directory)"


def check_parents(path: Path, what: str, hint: str = _OWN_DIR_HINT) -> None:
    """:func:`assay.privatefs.check_parents`, refusing with a :class:`TargetError`."""
    try:
        privatefs.check_parents(path, what, hint)
    except privatefs.UnsafePathError as exc:
        raise TargetError(str(exc)) from None


def check_trusted_dir(path: Path, what: str, hint: str) -> Path:
    """:func:`assay.privatefs.check_trusted_dir`, refusing with a :class:`TargetError`:
    a server's private directory is made inside it."""
    try:
        return privatefs.check_trusted_dir(path, what, hint)
    except privatefs.UnsafePathError as exc:
        raise TargetError(str(exc)) from None


def _check_private(st: os.stat_result, path: Path, what: str) -> None:
    if not stat.S_ISDIR(st.st_mode):
        raise TargetError(f"{what} {path} is not a directory")
    if st.st_uid != os.geteuid() or stat.S_IMODE(st.st_mode) != 0o700:
        raise TargetError(
            f"{what} {path} exists with owner uid {st.st_uid} and mode "
            f"{stat.S_IMODE(st.st_mode):o}; Assay uses only a directory of its user (uid "
            f"{os.geteuid()}) with mode 700: remove it, or name another with --state"
        )


class StateDir:
    """A target's private state directory: ``state.json`` holds what outlives one
    invocation (pids, ports, knobs), other files hold secrets and logs."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser().absolute()

    @contextlib.contextmanager
    def _fd(self, create: bool) -> Iterator[int | None]:
        """The checked directory's descriptor; None when it does not exist (and
        ``create`` is false)."""
        what = "state directory"
        check_parents(self.path, what)
        made = False
        if create:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                os.mkdir(self.path, 0o700)
                made = True
            except FileExistsError:
                pass
            except OSError as exc:
                raise TargetError(
                    f"{what} {self.path}: cannot create it ({exc.strerror}); name another "
                    "with --state"
                ) from None
        try:
            fd = os.open(self.path, _DIR_FLAGS)
        except FileNotFoundError:
            if create:
                raise TargetError(f"{what} {self.path} vanished while it was made") from None
            yield None
            return
        except OSError as exc:  # ELOOP or ENOTDIR: a link (O_NOFOLLOW) or a file
            raise TargetError(
                f"{what} {self.path} is a symbolic link or not a directory "
                f"({exc.strerror}); Assay does not follow it: remove it, or name another "
                "with --state"
            ) from None
        try:
            if made:
                os.fchmod(fd, 0o700)  # exactly 0700 whatever the umask
            _check_private(os.fstat(fd), self.path, what)
            yield fd
        finally:
            os.close(fd)

    def exists(self) -> bool:
        """Whether the directory exists (and is private: else a TargetError)."""
        with self._fd(create=False) as fd:
            return fd is not None

    def create(self) -> None:
        """Create the directory (0700) or check the one there."""
        with self._fd(create=True):
            pass

    def file(self, name: str) -> Path:
        """The path of a file in the directory (for programs that take a path)."""
        return self.path / name

    def read(self, name: str) -> str | None:
        """The text of file ``name``: None when missing, a link or not our own file."""
        with self._fd(create=False) as dfd:
            if dfd is None:
                return None
            try:
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)
            except OSError:
                return None
            with os.fdopen(fd, "rb") as f:
                st = os.fstat(f.fileno())
                if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
                    return None
                return f.read().decode(errors="replace")

    def write(self, name: str, text: str, *, exclusive: bool = False) -> bool:
        """Write file ``name`` (mode 0600) afresh: a new file, of a name of its own (two
        writers at once do not meet), renamed into place; ``exclusive``: only where
        there is none (False, nothing written, when another writer's came first)."""
        with self._fd(create=True) as dfd:
            assert dfd is not None
            tmp = f"{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            try:
                fd = os.open(tmp, flags, 0o600, dir_fd=dfd)
            except OSError as exc:
                raise TargetError(f"cannot write {self.path / tmp}: {exc.strerror}") from None
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            if not exclusive:
                os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
                return True
            try:
                os.link(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd, follow_symlinks=False)
            except FileExistsError:
                return False
            finally:
                os.unlink(tmp, dir_fd=dfd)
            return True

    def open_log(self, name: str) -> int:
        """A descriptor appending to log file ``name`` (created 0600); the caller closes it."""
        with self._fd(create=True) as dfd:
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
            try:
                fd = os.open(name, flags, 0o600, dir_fd=dfd)
            except OSError as exc:
                raise TargetError(f"cannot open {self.path / name}: {exc.strerror}") from None
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
                os.close(fd)
                raise TargetError(f"{self.path / name} is not a file of this user")
            return fd

    def remove(self, *names: str) -> None:
        """Remove files from the directory (links themselves, never what they name)."""
        with self._fd(create=False) as dfd:
            if dfd is None:
                return
            for name in names:
                with contextlib.suppress(FileNotFoundError, IsADirectoryError, PermissionError):
                    os.unlink(name, dir_fd=dfd)

    def remove_dir(self) -> None:
        """Remove the directory when it is empty."""
        if self.exists():
            with contextlib.suppress(OSError):
                os.rmdir(self.path)

    def load(self) -> dict[str, Any] | None:
        """The saved state; None when there is none (or it is not readable JSON)."""
        text = self.read(STATE_FILE)
        try:
            data = json.loads(text) if text is not None else None
        except ValueError:
            return None
        return data if isinstance(data, dict) else None

    def save(self, state: Mapping[str, Any]) -> None:
        """Save ``state`` (atomically)."""
        self.write(STATE_FILE, json.dumps(state, indent=1, sort_keys=True))

    def clear(self) -> None:
        """Forget the saved state."""
        self.remove(STATE_FILE)

    def not_running(self, server: str, target: str) -> TargetError:
        """The error for a server that does not run for this state directory."""
        return TargetError(
            f"no {server} server runs for the state directory {self.path}: run "
            f"'python3 -m assay.targets {target} setup --state {self.path}' first "
            "(a study's [benchmark] setup does it)"
        )


def new_secret() -> str:
    """A random password (URL-safe characters: no quoting needed in config files)."""
    return secrets.token_urlsafe(24)


def make_private_dir(
    prefix: str, parent: str | None, state: StateDir, owner: pwd.struct_passwd | None
) -> Path:
    """A fresh data directory (``mkdtemp``: mode 0700, a unique name) in ``parent``
    (default: the temporary directory) marked as belonging to ``state``, handed to
    ``owner`` (a server's user) when given. ``parent`` must pass
    :func:`check_trusted_dir`; the directory is made in its resolved path."""
    where = check_trusted_dir(
        Path(parent or tempfile.gettempdir()),
        "the parent directory of the server's data directory",
        "name another (or set TMPDIR to a directory of your own)",
    )
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=where))
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    with os.fdopen(os.open(path / MARKER, flags, 0o600), "w", encoding="utf-8") as f:
        f.write(str(state.path))
    if owner is not None:
        os.chown(path, owner.pw_uid, owner.pw_gid)
    return path


def owned_private_dir(path: object, uid: int, state: StateDir) -> Path | None:
    """``path`` when it is a data directory :func:`make_private_dir` made for ``state``
    (a real directory, mode 0700, owned by ``uid``, with the marker); else None."""
    if not isinstance(path, str) or not os.path.isabs(path):
        return None
    try:
        dfd = os.open(path, _DIR_FLAGS)
    except OSError:
        return None
    try:
        st = os.fstat(dfd)
        if st.st_uid != uid or stat.S_IMODE(st.st_mode) != 0o700:
            return None
        fd = os.open(MARKER, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)
        with os.fdopen(fd, "rb") as f:
            if os.fstat(f.fileno()).st_uid != os.geteuid():
                return None
            return Path(path) if f.read().decode(errors="replace") == str(state.path) else None
    except OSError:
        return None
    finally:
        os.close(dfd)


def remove_private_dir(path: object, uid: int, state: StateDir) -> bool:
    """Remove the data directory ``path`` when :func:`owned_private_dir` accepts it."""
    found = owned_private_dir(path, uid, state)
    if found is None:
        return False
    shutil.rmtree(found, ignore_errors=True)  # fd-based: links inside are not followed
    return True


def read_nofollow(path: Path, uid: int, offset: int = 0) -> str:
    """The text of a server's file from ``offset`` ("" when it is missing, a link, or
    not owned by ``uid``): read as root it must not be a way to read other files."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != uid:
            return ""
        f.seek(offset)
        return f.read().decode(errors="replace")
