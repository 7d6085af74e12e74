"""What a quick-mode study measures besides its command line, and whether to resume it.

A quick study is named by its command line, so ``./bench`` edited, or run from another
folder, has the same name.  Like hyperfine and pyperf, a quick study run again measures
again: only an *interrupted* session is resumed, and only when what it measures is
unchanged: the working directory, the executable the command resolves to and the
content of the executable and of every argument that names a file.

>>> fp = fingerprint([["true"]], shell=False, cwd="/")
>>> fp["cwd"], list(fp["files"]) == [shutil.which("true")]
('/', True)
>>> changes(fp, fp)
[]
"""

from __future__ import annotations

import datetime
import hashlib
import os
import shlex
import shutil
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The study value a quick study's fingerprint is kept under.
FINGERPRINT_KEY = "quick_fingerprint"

_HASHED = 64 * 1024 * 1024  # larger files: their size and modification time only


def _file_mark(path: str) -> str | None:
    """The content of a regular file, as a short digest (size and mtime beyond
    :data:`_HASHED` bytes); None for anything else."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    if st.st_size > _HASHED:
        return f"size {st.st_size}, modified {st.st_mtime_ns}"
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return "sha256 " + digest.hexdigest()[:16]


def _words(argv: Sequence[str], shell: bool) -> list[str]:
    if not shell:
        return list(argv)
    try:
        return shlex.split(" ".join(argv), posix=True)
    except ValueError:  # unbalanced quotes: the shell will say so; the words as typed
        return " ".join(argv).split()


def fingerprint(commands: Sequence[Sequence[str]], *, shell: bool, cwd: str) -> dict[str, Any]:
    """The working directory and the files the command lines read as code or name:
    each one's executable (found on PATH as the shell would) and each word that is a
    file."""
    files: dict[str, str] = {}
    for argv in commands:
        for i, word in enumerate(_words(argv, shell)):
            if not word or len(word) > 4096:
                continue
            path = shutil.which(word) if i == 0 and "/" not in word else None
            path = path or (word if os.path.isabs(word) else os.path.join(cwd, word))
            mark = _file_mark(path)
            if mark is not None:
                files[os.path.normpath(path)] = mark
    return {"cwd": cwd, "files": files}


def changes(old: dict[str, Any] | None, new: dict[str, Any]) -> list[str]:
    """What differs between two fingerprints, in words; [] when nothing does.

    >>> changes({"cwd": "/a", "files": {"/a/b.sh": "x"}}, {"cwd": "/b", "files": {}})
    ['the working directory (/a, now /b)', '/a/b.sh is no longer used']
    """
    if not isinstance(old, dict):
        return ["what it measured was not recorded"]
    out = []
    if old.get("cwd") != new["cwd"]:
        out.append(f"the working directory ({old.get('cwd')}, now {new['cwd']})")
    before: dict[str, str] = old.get("files") or {}
    for path, mark in new["files"].items():
        if path not in before:
            out.append(f"{path} is new")
        elif before[path] != mark:
            out.append(f"{path} changed")
    out += [f"{path} is no longer used" for path in before if path not in new["files"]]
    return out


@dataclass(frozen=True)
class Resumption:
    """Whether a quick study starts afresh (archiving what is stored), and the line
    that says why (None: nothing stored, nothing to say)."""

    fresh: bool
    note: str | None


def _when(epoch: float | None) -> str:
    if epoch is None:
        return "an earlier run"
    return datetime.datetime.fromtimestamp(epoch).strftime("%Y-%m-%d %H:%M")


def resumption(
    stored: dict[str, Any] | None,
    now: dict[str, Any],
    *,
    last_started: float | None,
    last_ended: float | None,
    trials: int,
    fresh: bool,
    resume: bool,
) -> Resumption:
    """What a quick study run again does with what its store holds.

    ``stored``: the fingerprint kept with the study (None: none kept); ``last_started``
    and ``last_ended``: its newest session's start and end (``last_ended`` None: it was
    interrupted); ``trials``: how many it holds (0: nothing to resume).

    >>> resumption(None, {}, last_started=0.0, last_ended=5.0, trials=9, fresh=False,
    ...            resume=False).fresh
    True
    """
    if fresh or trials == 0:
        return Resumption(fresh, None)
    if resume:
        what = "reporting" if last_ended is not None else "resuming"
        return Resumption(False, f"{what} the study of {_when(last_started)} (--resume)")
    if last_ended is not None:
        return Resumption(
            True,
            f"measuring again: the result of {_when(last_started)} stays in the store "
            "('assay ls --all'; --resume reports it instead)",
        )
    changed = changes(stored, now)
    if changed:
        return Resumption(
            True,
            f"starting afresh, not resuming the interrupted run of {_when(last_started)}: "
            f"{'; '.join(changed)}",
        )
    return Resumption(False, f"resuming the interrupted run of {_when(last_started)}")


def read_stored(store_path: Path, name: str) -> tuple[dict[str, Any] | None, Any]:
    """The fingerprint and the :class:`~assay.store.StudyOverview` of quick study
    ``name`` in the store at ``store_path``; (None, None) when it holds none."""
    from assay.store import Store, StoreError

    if not store_path.exists():
        return None, None
    try:
        with Store(store_path, read_only=True) as store:
            found = next((o for o in store.overview() if o.name == name), None)
            if found is None:
                return None, None
            return store.study_value(found.id, FINGERPRINT_KEY), found
    except StoreError:
        return None, None  # the study's own opening says what is wrong with the store


def quick_resumption_of(
    spec: Any, store_path: Path, *, fresh: bool, resume: bool
) -> tuple[Resumption, dict[str, Any]]:
    """Whether the quick study ``spec`` (a :class:`~assay.spec.Spec`) starts afresh in
    ``store_path``, as the CLI and :mod:`assay.public` decide it, with the fingerprint
    of what it measures now (its commands, their files, this working directory)."""
    b = spec.benchmark
    commands = [b.command, *(v.command for v in spec.variants if v.command)]
    now = fingerprint(commands, shell=b.shell, cwd=os.getcwd())
    stored, found = read_stored(store_path, spec.study.name)
    decided = resumption(
        stored,
        now,
        last_started=None if found is None else found.last_trial,
        last_ended=None if found is None else found.last_ended,
        trials=0 if found is None else sum(found.trials_by_status.values()),
        fresh=fresh,
        resume=resume,
    )
    return decided, now
