"""Tests for examples/order-file-cache*.toml: the page cache carries state between tests.

    python3 order_cache.py setup    create the data: 1000 files of 32 KiB (once)
    python3 order_cache.py evict    drop the files from the page cache (the reset)
    python3 order_cache.py backup   read every file and drop it from the cache afterwards,
                                    as backup tools do (dd iflag=nocache, rsync --drop-cache)
    python3 order_cache.py scan     read every file (fast when cached, slow when not)
    python3 order_cache.py cpu      a CPU-only loop that never touches the files

Each test prints ``t=SECONDS``, its own elapsed time. Evicting uses
posix_fadvise(POSIX_FADV_DONTNEED), which needs no root, unlike
``echo 1 > /proc/sys/vm/drop_caches``. Many small files make a cold read cost one
disk request per file: several times slower than a cached one.

The files live in ``$ASSAY_ORDER_CACHE`` or ``~/.cache/assay/order-cache``: a folder of
the user's own (mode 700), never a fixed name in the shared temporary folder, where
another user could make it first and plant links that the setup would write through.
A folder that exists but is not the user's own, mode 700 and not a link is refused.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import stat
import sys
import tempfile
import time

_HOME = pwd.getpwuid(os.geteuid()).pw_dir  # not $HOME, which sudo may keep
DIR = os.environ.get("ASSAY_ORDER_CACHE") or os.path.join(_HOME, ".cache", "assay", "order-cache")
FILES = 1000
SIZE = 32 << 10
NAMES = [os.path.join(DIR, f"f{i:05d}") for i in range(FILES)]


def private_dir(path: str) -> None:
    """Make ``path`` mode 700, or accept it only as this user's own folder (not a link)
    that nobody else may enter (as Assay's own folders: assay.privatefs.private_dir,
    not imported: this script runs with whatever python3 the study finds)."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    st = os.lstat(path)
    if (
        not stat.S_ISDIR(st.st_mode)
        or st.st_uid != os.geteuid()
        or stat.S_IMODE(st.st_mode) & 0o077
    ):
        sys.exit(
            f"{path}: not a folder of uid {os.geteuid()} with mode 700 (a link, another "
            "user's, or open to others): remove it, or set ASSAY_ORDER_CACHE to another"
        )


def setup() -> None:
    private_dir(DIR)
    for name in NAMES:
        if os.path.exists(name) and os.path.getsize(name) == SIZE:
            continue
        # a fresh file of its own name (mkstemp: O_EXCL, mode 600), renamed into place
        fd, tmp = tempfile.mkstemp(prefix=".f", dir=DIR)
        with os.fdopen(fd, "wb") as f:
            f.write(os.urandom(SIZE))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, name)


def drop(fd: int) -> None:
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)


def evict() -> None:
    for name in NAMES:
        fd = os.open(name, os.O_RDONLY)
        try:
            drop(fd)
        finally:
            os.close(fd)


def read_files(drop_after: bool) -> None:
    buf = bytearray(SIZE)
    for name in NAMES:
        fd = os.open(name, os.O_RDONLY)
        try:
            os.readv(fd, [buf])
            if drop_after:
                drop(fd)
        finally:
            os.close(fd)


def cpu() -> None:
    x = 0
    for i in range(400_000):
        x += i * i


def main(op: str) -> None:
    if op == "setup":
        setup()
        return
    if op == "evict":
        evict()
        return
    t0 = time.perf_counter()
    if op == "backup":
        read_files(drop_after=True)
    elif op == "scan":
        read_files(drop_after=False)
    elif op == "cpu":
        cpu()
    else:
        sys.exit(f"unknown test {op!r}")
    print(f"t={time.perf_counter() - t0:.6f}")


if __name__ == "__main__":
    main(sys.argv[1])
