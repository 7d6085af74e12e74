"""Hostile study files (issue #13, item 12): no traceback, only the project's errors.

A seeded generator mutates valid study files of every kind (run, compare, order,
sweep, knobs) with what broke the parser before: deep nesting, NUL characters, huge
numbers, rich markup, control characters, long names, ``~nouser`` paths.  Each file
goes through the parser and the path resolution a study does before it runs (the
store, the lock and the running note beside it, the working folder, the sweep's
grid).  The only errors allowed are :class:`SpecError` naming the file (and the
field, where the file is valid TOML) and :class:`StoreError`.

The files a study keeps beside its store (its lock and its running note) are tested
here too: a store name too long for them, and a full or read-only disk.
"""

from __future__ import annotations

import contextlib
import copy
import errno
import json
import os
import random
import re
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from assay.errors import StudyError
from assay.execute.leftovers import clear_running, note_running
from assay.execute.trial import TrialJob, TrialRequest, run_trial
from assay.spec import (
    MAX_DEPTH,
    PISpec,
    Spec,
    SpecError,
    expand_user,
    load_spec,
    parse_spec_text,
)
from assay.store import NAME_MAX, Store, StoreError, StudyBusyError, study_file

# ------------------------------------------------------------------------- generator


@dataclass(frozen=True)
class Raw:
    """A TOML literal written as it is (what a Python value cannot say: 1e400, 5000 digits)."""

    text: str


def _string(s: str) -> str:
    out = []
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def toml_value(v: Any) -> str:
    if isinstance(v, Raw):
        return v.text
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return {"inf": "inf", "-inf": "-inf", "nan": "nan"}.get(repr(v), repr(v))
    if isinstance(v, str):
        return _string(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    assert isinstance(v, dict)
    return "{" + ", ".join(f"{_string(k)} = {toml_value(x)}" for k, x in v.items()) + "}"


def toml_doc(doc: dict[str, Any]) -> str:
    """One ``key = value`` line per section (inline tables): valid TOML for any doc."""
    return "".join(f"{_string(k)} = {toml_value(v)}\n" for k, v in doc.items())


def _nested(depth: int, table: bool) -> Raw:
    if table:
        return Raw("{a = " * depth + "1" + "}" * depth)
    return Raw("[" * depth + "1" + "]" * depth)


HOSTILE_STRINGS = [
    "",
    " ",
    "\x00",
    "a\x00b",
    "[/]",
    "[bold red]x[/]",
    "[/x] [link=file:///etc/passwd]y",
    "\x1b[31mred\x1b[0m",
    "\x01\x02\x7f\r\n\t",
    "\u202e\u200b",
    "~nouser/x.db",
    "~nouser",
    "~",
    "~/x.db",
    "/",
    ".",
    "..",
    "a/",
    "../../etc/passwd",
    "/dev/null",
    "s" * 240,
    "s" * 240 + ".db",
    "s" * 300,
    "é" * 200,
    "🚀" * 70,
    "x" * 5000,
    "$\\foo$",
    "{x}",
    "{missing}",
    "{{",
    "}",
    "a=b",
    "=",
    "-rf",
    "%s%n",
    "'; DROP TABLE studies; --",
    "(" * 400 + "x" + ")" * 400,
    "x{99999999999}",
    "([0-9.]+)",
    "(",
    "\\",
    "max tps s.t. " + "(" * 300,
    "a < b < c",
    "workers > 2 and (" * 50,
]

HOSTILE_NUMBERS: list[Any] = [
    0,
    -1,
    1,
    2**31,
    2**63 - 1,
    -(2**63),
    2**63,
    10**30,
    -(10**30),
    Raw("9" * 5000),
    Raw("-" + "9" * 4400),
    Raw("9" * 4000),
    1e308,
    -1e308,
    5e-324,
    Raw("1e400"),
    Raw("inf"),
    Raw("-inf"),
    Raw("nan"),
    0.5,
    -0.0,
    True,
    False,
]

HOSTILE_SHAPES: list[Any] = [
    [],
    {},
    [[]],
    [{}],
    ["x"] * 1000,
    list(range(300)),
    _nested(5, False),
    _nested(MAX_DEPTH + 1, False),
    _nested(200, False),
    _nested(5000, False),
    _nested(5, True),
    _nested(200, True),
    _nested(3000, True),
]

HOSTILE = HOSTILE_STRINGS + HOSTILE_NUMBERS + HOSTILE_SHAPES


def base_docs() -> list[dict[str, Any]]:
    """Valid study files of every kind (each parses as it is)."""
    bench = {"command": ["echo", "{rows}"], "timeout": 60}
    run = {
        "study": {"name": "run", "store": "r.assay.db", "description": "d"},
        "benchmark": {
            **bench,
            "env": {"A": "{rows}"},
            "cwd": ".",
            "setup": ["true"],
            "reset": ["echo", "{rows}"],
            "teardown": ["true"],
        },
        "params": {"rows": 10, "mode": "wal", "on": True, "f": 0.5},
        "pi": [
            {
                "name": "tps",
                "unit": "1/s",
                "direction": "higher",
                "source": "regex",
                "pattern": "tps=([0-9.]+)",
                "units": {"source": "regex", "pattern": "op=([0-9.]+)"},
            },
            {"name": "p99", "source": "json", "path": "lat.p[1]"},
            {"name": "f", "source": "file", "file": "out.txt"},
        ],
        "stop": {"ci_width": 0.05, "max_rounds": 50, "max_time": 60.0, "confidence": 0.95},
    }
    compare = {
        "study": {"name": "cmp"},
        "benchmark": bench,
        "params": {"rows": 1},
        "variant": [{"name": "a", "params": {"rows": 2}}, {"name": "b", "command": ["true"]}],
    }
    order = {
        "study": {"name": "ord"},
        "benchmark": bench,
        "params": {"rows": 1},
        "test": [{"name": "t1"}, {"name": "t2", "params": {"rows": 3}}],
        "order": {"runs": 2, "repetitions": 2, "seed": 1},
    }
    sweep = {
        "study": {"name": "sw", "store": "~/sw.assay.db"},
        "benchmark": {"command": ["echo", "{w}", "{mode}"]},
        "sweep": {
            "params": {"w": [1, 2, 4], "mode": ["wal", "delete"]},
            "constraints": ["w > 1"],
            "sampler": "balanced",
            "max_settings": 5,
        },
    }
    knobs = {
        "study": {"name": "kn"},
        "benchmark": {"command": ["echo", "{cache}", "{sync}"]},
        "knob": [
            {"name": "cache", "type": "int", "min": 1, "max": 64, "default": 8, "log": True},
            {"name": "sync", "type": "categorical", "values": ["on", "off"], "default": "on"},
        ],
        "knobs": {"samples": 20, "top_k": 2, "objective": "min wall_time"},
        "cluster": {"hosts": ["a", "b"], "port": 22},
    }
    return [run, compare, order, sweep, knobs]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in a doc: table keys and list items, containers included."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield (*prefix, k)
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield (*prefix, i)
            yield from _paths(v, (*prefix, i))


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    for part in path[:-1]:
        doc = doc[part]
    doc[path[-1]] = value


def mutate(rng: random.Random, doc: dict[str, Any]) -> dict[str, Any]:
    """One to three hostile changes at random places of a copy of ``doc``."""
    doc = copy.deepcopy(doc)
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        places = list(_paths(doc))
        path = rng.choice(places)
        kind = rng.random()
        if kind < 0.75:
            _set(doc, path, copy.deepcopy(rng.choice(HOSTILE)))
        elif kind < 0.85:  # a new key with a hostile name beside the chosen one
            parent: Any = doc
            for part in path[:-1]:
                parent = parent[part]
            if isinstance(parent, dict):
                parent[rng.choice(HOSTILE_STRINGS) or "k"] = copy.deepcopy(rng.choice(HOSTILE))
        elif kind < 0.95:  # the value wrapped in nesting
            _set(doc, path, _nested(rng.choice([3, MAX_DEPTH, 100, 4000]), rng.random() < 0.5))
        else:
            parent = doc
            for part in path[:-1]:
                parent = parent[part]
            del parent[path[-1]]
    return doc


def mangle(rng: random.Random, text: str) -> str:
    """A text-level change: cut short, a hostile character inserted, a line repeated."""
    i = rng.randrange(len(text) + 1)
    kind = rng.random()
    if kind < 0.3:
        return text[:i]
    if kind < 0.7:
        return (
            text[:i] + rng.choice(["\x00", "[", "]", '"', "\\", "\x1b", "=", "\n", "é"]) + text[i:]
        )
    lines = text.splitlines(keepends=True)
    j = rng.randrange(len(lines))
    return "".join([*lines[: j + 1], lines[j], *lines[j + 1 :]])


def study_files(n: int, seed: int) -> Iterator[tuple[str, str, tuple[str, ...]]]:
    """``n`` hostile study files: (source name, text, every key the file holds)."""
    rng = random.Random(seed)
    bases = base_docs()
    for i in range(n):
        base = rng.choice(bases)
        doc = mutate(rng, base)
        keys = tuple(sorted({str(k) for p in _paths(doc) for k in p if isinstance(k, str)}))
        text = toml_doc(doc)
        if rng.random() < 0.15:
            text = mangle(rng, text)
        yield f"fuzz/{i}.toml", text, keys


# ------------------------------------------------------------------- what a study does


def resolve_paths(spec: Spec) -> list[Path]:
    """The paths a study resolves before it runs its first trial (see studies.base)."""
    store = spec.store_path()
    name = spec.study.name
    lock, note = study_file(store, name, ".lock"), study_file(store, name, ".running")
    for p in (lock, note):
        assert len(os.fsencode(p.name + ".tmp")) <= NAME_MAX, p.name
        assert p.parent == store.parent
    out = [store, lock, note]
    if spec.benchmark.cwd is not None:
        out.append(Path(expand_user(spec.benchmark.cwd)))
    if spec.sweep is not None:
        spec.sweep.space().check_enumerable()  # a grid the parser let through fits
    return out


def check_one(source: str, text: str) -> str:
    """Parse and resolve one study file; the outcome, or an AssertionError."""
    try:
        spec = parse_spec_text(text, source=source)
    except SpecError as exc:
        msg = str(exc)
        assert msg.startswith(f"{source}: "), msg[:300]
        assert "Traceback" not in msg
        return "not valid TOML" if "not valid TOML" in msg else "invalid"
    try:
        resolve_paths(spec)
    except (SpecError, StoreError) as exc:
        assert str(exc), "an empty message"
        return "path error"
    return "ok"


def field_named(msg: str, keys: tuple[str, ...]) -> bool:
    """Whether each line of an 'invalid study file' message is ``field: problem`` with a
    field of the file (a section, or a key of the file, quoted when it is not bare)."""
    lines = msg.split("\n")[1:]
    for line in lines:
        where, sep, problem = line.strip().partition(": ")
        head = re.split(r"[.\[]", where, maxsplit=1)[0]
        if not (sep and problem and where):
            return False
        if not (head in keys or head in SECTIONS or head.startswith('"')):
            return False
    return bool(lines)


#: The top-level fields of a study file (by their names in the file).
SECTIONS = {f.alias or name for name, f in Spec.model_fields.items()}

N_FILES = 1200


def test_a_thousand_hostile_study_files_give_no_traceback() -> None:
    start = time.perf_counter()
    outcomes: dict[str, int] = {}
    for source, text, _keys in study_files(N_FILES, seed=13):
        try:
            outcome = check_one(source, text)
        except AssertionError:
            raise
        except BaseException as exc:  # the bug: anything but the project's errors
            pytest.fail(f"{source}: {type(exc).__name__}: {str(exc)[:200]}\n{text[:600]!r}")
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    elapsed = time.perf_counter() - start
    # the generator reaches every outcome, and in numbers: it is not testing one path
    assert sum(outcomes.values()) == N_FILES
    for outcome in ("ok", "invalid", "not valid TOML"):
        assert outcomes.get(outcome, 0) >= 20, outcomes
    assert elapsed < 30, f"{elapsed:.1f} s for {N_FILES} files"


def test_invalid_study_file_messages_name_the_file_and_the_field() -> None:
    checked = 0
    for source, text, keys in study_files(400, seed=7):
        try:
            parse_spec_text(text, source=source)
        except SpecError as exc:
            msg = str(exc)
            if msg.startswith(f"{source}: invalid study file:"):
                assert field_named(msg, keys), msg[:400]
                checked += 1
    assert checked >= 100


# ------------------------------------------------------------ the cases of the issue

BASE = '[study]\nname = "s"\n{extra}[benchmark]\ncommand = ["echo"]\n{bench}'


@pytest.mark.parametrize(
    ("extra", "bench", "field", "why"),
    [
        ("", "x = " + "[" * 3000 + "]" * 3000 + "\n", "", "nested too deeply"),
        ("", "x = " + "{a = " * 3000 + "1" + "}" * 3000 + "\n", "", "nested too deeply"),
        ("", "timeout = " + "9" * 5000 + "\n", "line 5", "thousands of digits"),
        ("", "timeout = 1e400\n", "benchmark.timeout", "less than or equal"),
        ("", "timeout = 1e308\n", "benchmark.timeout", "less than or equal"),
        ('store = "a\\u0000b"\n', "", "study.store", "NUL"),
        ('store = "~nouser/x.db"\n', "", "study.store", "cannot expand '~nouser'"),
        ('store = "dir/"\n', "", "study.store", "not a folder"),
        (f'store = "{"s" * 300}.db"\n', "", "study.store", "more than the 255"),
        ("", 'cwd = "~nouser/w"\n', "benchmark.cwd", "no such user"),
        ("", 'env = { "A=B" = "1" }\n', "benchmark.env", "not an environment variable"),
        ("", 'reset = ["echo", "{nope}"]\n', "benchmark.reset", "placeholder '{nope}'"),
        ("", 'setup = ["echo", "{nope}"]\n', "benchmark.setup", "placeholder '{nope}'"),
        ("", "[params]\nn = 99999999999999999999\n", "params.n", "beyond 64 bits"),
        ("", "[params]\nn = nan\n", "params.n", "NaN"),
        ("", "[params]\nn = " + "[" * 40 + "]" * 40 + "\n", "params.n", "nested more than"),
        (
            "",
            '[[pi]]\nname = "t"\nsource = "regex"\npattern = \'x{99999999999}(1)\'\n',
            "pi[0]",
            "repetition number is too large",
        ),
        (
            "",
            '[[pi]]\nname = "t"\nsource = "regex"\npattern = \''
            + "(" * 2000
            + "x"
            + ")" * 2000
            + "'\n",
            "pi[0]",
            "nested too deeply",
        ),
    ],
)
def test_each_crash_of_the_issue_is_a_spec_error_naming_file_and_field(
    extra: str, bench: str, field: str, why: str
) -> None:
    text = BASE.format(extra=extra, bench=bench)
    with pytest.raises(SpecError) as err:
        parse_spec_text(text, source="hostile.toml")
    msg = str(err.value)
    assert msg.startswith("hostile.toml: "), msg
    assert field in msg and why in msg, msg
    assert len(msg) < 1000, "the message quotes a hostile value whole"


def test_rich_markup_and_control_characters_are_kept_as_written() -> None:
    # markup is the printer's business (it escapes); the parser keeps the text as given
    name = "[bold]x[/] \x1b[31m"
    spec = parse_spec_text(BASE.format(extra="", bench="").replace('"s"', json.dumps(name)), "m")
    assert spec.study.name == name


def test_a_study_file_with_invalid_bytes_is_a_spec_error(tmp_path: Path) -> None:
    for i, data in enumerate([b"\xff\xfe[study]", b"[study]\x00\nname='x'", b"\x00" * 10]):
        p = tmp_path / f"b{i}.toml"
        p.write_bytes(data)
        with pytest.raises(SpecError, match=rf"^{p}: "):
            load_spec(p)


# ------------------------------------------- the files a study keeps beside its store


def test_a_240_character_store_name_still_gets_its_lock_and_running_note(
    tmp_path: Path,
) -> None:
    store = tmp_path / ("s" * 240 + ".db")
    with Store(store) as a, Store(store) as b:
        a.lock_study("x")
        lock = study_file(store, "x", ".lock")
        assert lock.exists() and lock.parent == tmp_path
        # the lock is held: a second session is refused, not run alongside
        with pytest.raises(StudyBusyError):
            b.lock_study("x")
        note = study_file(store, "x", ".running")
        note_running(note, ["true"], False, "m")
        assert json.loads(note.read_text())["marker"] == "m"
        clear_running(note)
        assert not note.exists()
    assert not lock.exists()  # released at the end


def test_the_shortened_names_differ_by_store_and_by_study(tmp_path: Path) -> None:
    a, b = tmp_path / ("s" * 240 + "a.db"), tmp_path / ("s" * 240 + "b.db")
    names = {study_file(s, n, ".lock").name for s in (a, b) for n in ("x", "y")}
    assert len(names) == 4
    assert all(len(os.fsencode(n + ".tmp")) <= NAME_MAX for n in names)


def _fail_on(monkeypatch: pytest.MonkeyPatch, code: int, suffix: str) -> None:
    real_open = os.open

    def fake_open(path: Any, *args: Any, **kwargs: Any) -> int:
        if str(path).endswith(suffix):
            raise OSError(code, os.strerror(code), str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", fake_open)


@pytest.mark.parametrize(
    ("code", "hint"),
    [
        (errno.ENOSPC, "the disk is full"),
        (errno.EROFS, "read-only filesystem"),
        (errno.ENAMETOOLONG, "File name too long"),
    ],
)
def test_a_lock_file_that_cannot_be_made_is_a_clear_error_not_a_run_unlocked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int, hint: str
) -> None:
    store = tmp_path / "s.db"
    with Store(store) as st:
        _fail_on(monkeypatch, code, ".lock")
        with pytest.raises(StoreError) as err:
            st.lock_study("x")
    msg = str(err.value)
    assert msg.startswith(f"{study_file(store, 'x', '.lock')}: cannot create the lock file")
    assert hint in msg and "\n" not in msg


@pytest.mark.parametrize(
    ("code", "hint"), [(errno.ENOSPC, "the disk is full"), (errno.EROFS, "read-only")]
)
def test_a_running_note_that_cannot_be_written_is_a_study_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int, hint: str
) -> None:
    note = study_file(tmp_path / "s.db", "x", ".running")

    def no_room(*args: Any, **kwargs: Any) -> int:
        raise OSError(code, os.strerror(code), str(note.parent))

    monkeypatch.setattr(tempfile, "mkstemp", no_room)  # the note's fresh file
    with pytest.raises(StudyError) as err:
        note_running(note, ["true"], False, "m")
    msg = str(err.value)
    assert msg.startswith(f"{note}: cannot note the benchmark about to run") and hint in msg
    assert not note.exists() and not list(note.parent.glob(".assay-*.tmp"))


# a filesystem with no inode left for the lock (or the note): a real ENOSPC, end to end


def _mount_tmpfs(mnt: Path, options: str) -> None:
    mnt.mkdir()
    res = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mnt)], capture_output=True
    )
    if res.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {res.stderr.decode().strip()}")


@pytest.fixture
def tiny(tmp_path: Path) -> Iterator[Path]:
    """A folder on its own tmpfs; the test remounts it as it needs."""
    mnt = tmp_path / "tiny"
    _mount_tmpfs(mnt, "size=1m,mode=700")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _remount(mnt: Path, options: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{options}", str(mnt)], check=True)


def test_no_inode_left_for_the_lock_on_a_real_filesystem_is_one_clear_line(tiny: Path) -> None:
    _remount(tiny, "nr_inodes=4")
    # the root, the store, its -wal and -shm take the 4 inodes: no room for the lock
    with Store(tiny / "s.db") as st, pytest.raises(StoreError) as err:
        st.lock_study("x")
    msg = str(err.value)
    assert "cannot create the lock file of study 'x'" in msg and "disk is full" in msg


def test_no_room_for_the_running_note_stops_the_trial_with_a_study_error(tiny: Path) -> None:
    note = study_file(tiny / "s.db", "x", ".running")
    _remount(tiny, "nr_inodes=2")
    (tiny / "other").touch()  # the root and this: no inode left for the note
    job = TrialJob(pis=(PISpec(name="wall_time"),), timeout=10.0, running_file=note)
    with pytest.raises(StudyError, match=r"cannot note the benchmark about to run.*disk is full"):
        run_trial(job, TrialRequest(seq=0, argv=["true"]))


def test_a_store_on_a_full_disk_says_the_disk_is_full(tiny: Path) -> None:
    db = tiny / "s.db"
    with Store(db) as st:
        st.open_study("s", "h", {})
    with open(tiny / "fill", "wb") as f, contextlib.suppress(OSError):
        while True:
            f.write(b"\0" * 65536)
    # SQLite says "disk I/O error" here; the message says what to do
    with pytest.raises(StoreError, match="disk is full"):
        Store(db)
