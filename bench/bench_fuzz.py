"""Fuzzers of issue #46 ("Nothing let in, round three"): study files, benchmark outputs
and ``--from`` inputs, each case under a hang bound and a memory limit.

Three campaigns of seeded cases (``--cases`` each, and as many again for ``--from``:
result files and CSVs are a row each):

* **study files**: the hostile study files of ``tests/test_fuzz_spec.py``
  (``study_files``) written to disk and read with ``load_spec``, then the paths a study
  resolves before its first trial (``resolve_paths``); plus files that are no study file
  (/dev/zero, a link to it, a FIFO with no writer, a 1 GB sparse file, a folder,
  non-UTF-8, UTF-16, 5 MB of TOML).  Expected: a valid study, or a ``SpecError`` (a
  ``StoreError`` for the paths) whose message starts with the file's path.  A sample
  (``--study-cli``) goes through ``assay run FILE`` (there is no dry run; only files the
  loader refuses, so nothing runs): exit 2 and an ``error:`` naming the file.
* **benchmark outputs**: the cases of ``tests/test_fuzz_outputs.py`` (``cases``: regex,
  JSON path, plain numbers, unit readings; stdout and a file), plus PI files that are
  /dev/zero, a link to it, a FIFO with no writer, a 1 GB sparse file, a folder, a 70 MB
  file, non-UTF-8; patterns that backtrack (``(a+)+$``, ``(\\d+\\s?)+x``…) on 50 kB
  hostile lines; 1e308 readings; 70 MB of stdout spooled to a file.  Read with
  ``read_reading``/``read_unit_readings`` on a ``CommandResult``.  Expected: finite
  readings or a ``ReadError``.  The search limit of a pattern
  (``output.MATCH_TIME_LIMIT_S``, 30 s in a study) is set to ``--match-limit`` here.
* **``--from`` inputs**: result files for ``compare --from`` (``tests/test_imports_fuzz.py``:
  its mutated fixtures drawn with Hypothesis from a seed, arbitrary bytes, truncated
  fixtures, its hostile files, and file-level cases) read with its ``_read``
  (``read_result_file`` and its checks); and hostile CSVs for ``sweep --from``, ``knobs
  --from`` and ``order --from`` (a generator here: 1e308, NaN, inf, empty cells, wrong
  column counts, 5000-digit numbers, non-UTF-8 bytes, a header only, binary files, a FIFO,
  /dev/zero) read with ``read_results_csv``, ``read_samples_csv`` and
  ``read_order_file``.  Expected: finite data, or the importer's own error naming the
  file.  A sample (``--cli``) goes through the real commands in subprocesses: exit 0, 2,
  4 or 5 (see ``exits.HELP``), no traceback, and for exit 2 an ``error:`` naming the file.

Every in-process case runs in a worker process (``multiprocessing``, spawn) held to
``RLIMIT_AS`` = ``--mem-gib`` GiB (a blow-up is a ``MemoryError``, not the machine's OOM);
a case with no answer after ``--bound`` seconds is a hang: the worker is killed and
replaced.  The CLI runs are ``python -m assay`` (``runpy``, as ``-m`` does) under the same
limit, with ``--bound`` + 10 s each.  Peak RSS is each process's ``VmHWM``.

Prints the machine, date and load, one line per problem (the case, the exception, where)
and a Markdown table.

Run from the repository root::

    python bench/bench_fuzz.py [--cases 1200] [--seed 46] [--cli 100] [--study-cli 40]
        [--bound 20] [--mem-gib 2] [--match-limit 2] [--only study,outputs,from]
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import importlib
import multiprocessing as mp
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
import traceback
import zlib
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from machine import machine_line  # noqa: E402

GiB = 1 << 30
HUGE = 1 << 30  # the sparse file: 1 GB that costs no disk and no time to write


def _tests(name: str) -> ModuleType:
    """A test module whose generators the fuzzers reuse (tests/ is on the path)."""
    return importlib.import_module(name)


# ---------------------------------------------------------------------------- the cases


@dataclass(frozen=True)
class Case:
    """One case: what it is (for the report) and what the worker runs (picklable)."""

    desc: str
    payload: tuple[Any, ...]
    special: bool = False  # a file-level case (device, FIFO, huge file): CLI samples take it


def _special_files(tmp: Path, valid_head: bytes, suffix: str) -> dict[str, str]:
    """The files that are no file of the kind: name -> path (made in ``tmp``; each name
    but /dev/zero's ends in ``suffix``, as the CLI may want)."""
    tmp.mkdir(parents=True, exist_ok=True)
    fifo = tmp / f"fifo{suffix}"
    os.mkfifo(fifo)  # no writer, ever: a blocking open waits for ever
    (tmp / f"zero-link{suffix}").symlink_to("/dev/zero")
    with open(tmp / f"sparse{suffix}", "wb") as f:
        f.truncate(HUGE)
    with open(tmp / f"sparse-head{suffix}", "wb") as f:  # a valid head, then 1 GB of NULs
        f.write(valid_head)
        f.truncate(HUGE)
    (tmp / f"folder{suffix}").mkdir()
    return {
        "/dev/zero": "/dev/zero",
        "a link to /dev/zero": str(tmp / f"zero-link{suffix}"),
        "a FIFO with no writer": str(fifo),
        "a 1 GB sparse file": str(tmp / f"sparse{suffix}"),
        "a valid head then 1 GB of NULs (sparse)": str(tmp / f"sparse-head{suffix}"),
        "a folder": str(tmp / f"folder{suffix}"),
        "a missing file": str(tmp / f"missing{suffix}"),
    }


def _write(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


def _fill(cases: list[Case], n: int, more: Iterable[Case]) -> list[Case]:
    for c in more:
        if len(cases) >= n:
            break
        cases.append(c)
    return cases


# study files -------------------------------------------------------------------------

VALID_STUDY = b'[study]\nname = "s"\n[benchmark]\ncommand = ["echo", "1"]\n'


def study_cases(n: int, seed: int, tmp: Path) -> list[Case]:
    fs = _tests("test_fuzz_spec")
    cases = [
        Case(f"study file: {what}", ("study", path), True)
        for what, path in _special_files(tmp / "special", VALID_STUDY, ".toml").items()
    ]
    for what, data in {
        "non-UTF-8 bytes": b"\xff\xfe[study]\nname = '\xe9'\n",
        "NUL bytes": b"[study]\x00\nname='x'\n" + b"\x00" * 100,
        "UTF-16": VALID_STUDY.decode().encode("utf-16"),
        "a UTF-8 BOM": b"\xef\xbb\xbf" + VALID_STUDY,
        "empty": b"",
        "binary": bytes(range(256)) * 64,
        "5 MB of TOML (100,000 params)": VALID_STUDY
        + b"[params]\n"
        + b"".join(b"p%d = %d\n" % (i, i) for i in range(100_000))
        + b"x" * 3_500_000
        + b" = 1\n",
        "a 5000-digit timeout": VALID_STUDY + b"timeout = " + b"9" * 5000 + b"\n",
        "3000 nested arrays": VALID_STUDY + b"x = " + b"[" * 3000 + b"]" * 3000 + b"\n",
    }.items():
        path = _write(tmp / f"special-{len(cases)}.toml", data)
        cases.append(Case(f"study file: {what}", ("study", path), True))

    def generated() -> Iterable[Case]:
        for i, (source, text, _keys) in enumerate(fs.study_files(n, seed)):
            path = tmp / f"study-{i:05d}.toml"
            path.write_text(text, encoding="utf-8", errors="surrogatepass")
            yield Case(f"{source}: {text[:100]!r}", ("study", str(path)))

    return _fill(cases, n, generated())


# benchmark outputs -------------------------------------------------------------------

#: Patterns that backtrack without end on the lines below (tests/test_fuzz_outputs.py).
BACKTRACKING = [
    r"(a+)+$",
    r"(a|aa)+$",
    r"(\d+\s?)+x",
    r"(\d+)\s+ms",
    r"(\S+)x",
    r"^(\d+)+$\n(\d)",
]
HOSTILE_LINES = ("a" * 50_000 + "!\n" + "1 " * 25_000 + "\n" + "1" * 50_000 + "\n").encode()


def _reader_fields() -> list[tuple[str, dict[str, str]]]:
    """A PI's file read every way: (PI or unit readings, the reader's fields)."""
    return [
        (kind, how)
        for kind in ("pi", "units")
        for how in ({}, {"pattern": r"([0-9.]+)"}, {"path": "a"})
    ]


def output_cases(n: int, seed: int, tmp: Path) -> list[Case]:
    fo = _tests("test_fuzz_outputs")
    lines: bytes = getattr(fo, "HOSTILE_LINES", HOSTILE_LINES)
    files = _special_files(tmp / "special", b"1.5\n", "")
    with open(tmp / "special" / "over-cap", "wb") as f:  # past the 64 MiB a reading reads
        f.truncate(70 << 20)
    files["a 70 MB sparse file"] = str(tmp / "special" / "over-cap")
    files["non-UTF-8 bytes"] = _write(tmp / "special" / "latin1", b"\xe9\xff 1.5\n")
    files["1e308 and -1e308"] = _write(tmp / "special" / "big", b"1e308\n-1e308\n")
    cases: list[Case] = []
    for what, path in files.items():
        for kind, how in _reader_fields():
            fields = {"source": "file", "file": path, **how}
            desc = f"{kind} file {what}, {how or 'plain numbers'}"
            cases.append(Case(desc, ("output", kind, fields, ("bytes", b""), str(tmp)), True))
    for pattern in BACKTRACKING:
        for kind in ("pi", "units"):
            desc = f"{kind} pattern {pattern!r} on 50 kB hostile lines"
            cases.append(
                Case(
                    desc,
                    (
                        "output",
                        kind,
                        {"source": "regex", "pattern": pattern},
                        ("bytes", lines),
                        str(tmp),
                    ),
                    True,
                )
            )
    big = {
        "1e308 regex": ({"source": "regex", "pattern": r"t=(\S+)"}, b"t=1e308\n"),
        "1e308 JSON": ({"source": "json", "path": "t"}, b'{"t": 1e308}'),
        "1.7976931348623157e308 JSON": (
            {"source": "json", "path": "t"},
            b'{"t": 1.7976931348623157e308}',
        ),
    }
    for what, (fields, out) in big.items():
        for kind in ("pi", "units"):
            if kind == "units" and "path" in fields:
                out = out.replace(b'"t": ', b'"t": [').replace(b"}", b", -1e308]}")
            payload = ("output", kind, dict(fields), ("bytes", out), str(tmp))
            cases.append(Case(f"{kind} {what}", payload, True))
    spool = ("spool", 70 << 20, b"t=1.5 " + b"x" * 1018 + b"\n")
    for kind, fields in [
        ("pi", {"source": "json", "path": "t"}),
        ("pi", {"source": "regex", "pattern": r"t=([0-9.]+)"}),
        ("units", {"source": "regex", "pattern": r"t=([0-9.]+)"}),
        ("units", {"source": "json", "path": "t"}),
    ]:
        desc = f"{kind} {fields} on 70 MB of stdout (spooled)"
        cases.append(Case(desc, ("output", kind, fields, spool, str(tmp)), True))
    for kind in ("pi", "units"):
        cases.append(
            Case(
                f"{kind} regex on non-UTF-8 stdout",
                (
                    "output",
                    kind,
                    {"source": "regex", "pattern": r"t=(\S+)"},
                    ("bytes", b"t=\xff\xfe1.5\nt=1\xe9\n"),
                    str(tmp),
                ),
                True,
            )
        )
    gen_n = n - len(cases)
    gen_dir = tmp / "generated"
    gen_dir.mkdir()
    generated = (
        Case(f"{kind}: {out[:100]!r}", ("output-gen", seed, gen_n, str(gen_dir), i))
        for i, (kind, out, _read) in enumerate(fo.cases(gen_n, seed, gen_dir))
    )
    return _fill(cases, n, generated)


# compare --from result files ---------------------------------------------------------


def _drawn(strategy: Any, n: int, seed: int) -> list[Any]:
    """``n`` examples of a Hypothesis strategy, the same for the same seed."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as with_seed

    out: list[Any] = []
    s = seed
    while len(out) < n:

        @with_seed(s)
        @settings(
            max_examples=n - len(out),
            database=None,
            deadline=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @given(strategy)
        def draw(x: Any) -> None:
            out.append(x)

        draw()
        s += 1
    return out[:n]


def _gzip_bomb(path: Path, size: int) -> str:
    """``size`` bytes of blanks, gzipped (a few hundred kB), written in pieces."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    with open(path, "wb") as f:
        piece = b" " * (1 << 20)
        for _ in range(size >> 20):
            f.write(z.compress(piece))
        f.write(z.flush())
    return str(path)


def result_cases(n: int, seed: int, tmp: Path) -> list[Case]:
    fi = _tests("test_imports_fuzz")
    good = fi.GOOD.read_bytes()
    cases = [
        Case(f"result file: {what}", ("result", path), True)
        for what, path in _special_files(tmp / "special", good, ".json").items()
    ]
    deep_obj = b'{"results": ' + b'{"a": ' * 50_000 + b"1" + b"}" * 50_001
    file_level = {
        **{f"test's hostile file {k}": v for k, v in fi.HOSTILE_FILES.items()},
        "200,000 nested arrays": b"[" * 200_000 + b"]" * 200_000,
        "50,000 nested objects": deep_obj,
        "a 6000-digit number": b'{"results": [{"command": "a", "times": [1'
        + b"0" * 6000
        + b", 1.0]}]}",
        "gzip magic only": b"\x1f\x8b",
        "gzip header, not deflate": b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03garbage",
        "gzip cut short": gzip.compress(good)[:-4],
        "gzip in gzip": gzip.compress(gzip.compress(good)),
        "UTF-16": good.decode().encode("utf-16"),
        "a UTF-8 BOM": b"\xef\xbb\xbf" + good,
        "latin-1": '{"results": [{"command": "café"}]}'.encode("latin-1"),
        "control characters in names": fi._dump(
            {"results": [{"command": "a\x1b[2J\x1b[31m", "times": [1.0, 2.0]}]}
        ),
    }
    for what, data in file_level.items():
        name = f"special-{len(cases)}" + (".json.gz" if data[:2] == b"\x1f\x8b" else ".json")
        cases.append(Case(f"result file: {what}", ("result", _write(tmp / name, data)), True))
    bomb = _gzip_bomb(tmp / "bomb.json.gz", 300 << 20)
    cases.append(Case("result file: a gzip bomb of 300 MB of blanks", ("result", bomb), True))

    rng = random.Random(seed)
    left = n - len(cases)
    n_bytes, n_cut = left // 6, left // 6
    docs = _drawn(fi.mutated_docs(), left - n_bytes - n_cut, seed)
    generated: list[Case] = []
    for i in range(n_bytes):
        data = rng.randbytes(rng.randrange(401))
        gz = rng.random() < 0.5
        path = _write(
            tmp / f"bytes-{i}.json{'.gz' if gz else ''}", gzip.compress(data) if gz else data
        )
        generated.append(Case(f"{len(data)} arbitrary bytes{' (gzip)' * gz}", ("result", path)))
    for i in range(n_cut):
        kind = rng.choice(sorted(fi.FIXTURES))
        whole = fi.FIXTURES[kind].read_bytes()
        gz = rng.random() < 0.5
        if gz:
            whole = gzip.compress(whole)
        cut = whole[: int(len(whole) * rng.random())]
        path = _write(tmp / f"cut-{i}.json", cut)
        desc = f"{kind} fixture{' gzipped' * gz} cut to {len(cut)} of {len(whole)} bytes"
        generated.append(Case(desc, ("result", path)))
    for i, (kind, data) in enumerate(docs):
        gz = rng.random() < 0.5
        path = _write(tmp / f"mut-{i}.json", gzip.compress(data) if gz else data)
        desc = f"mutated {kind} fixture{' (gzip)' * gz}: {data[:100]!r}"
        generated.append(Case(desc, ("result", path)))
    rng.shuffle(generated)
    return _fill(cases, n, generated)


# sweep / knobs / order --from CSVs ---------------------------------------------------

HOSTILE_CELLS = [
    "1e308",
    "-1e308",
    "1.7976931348623157e308",
    "1e309",
    "-1e309",
    "5e-324",
    "1e-400",
    "inf",
    "-inf",
    "Infinity",
    "NaN",
    "nan",
    "",
    " ",
    "9" * 5000,
    "-" + "9" * 5000,
    "9" * 20,
    str(2**63),
    str(-(2**63)),
    "1,5",
    '"1,5"',
    "0x10",
    "1_000",
    "١٢",
    "\x00",
    "é",
    '"',
    '"unterminated',
    "=1+1",
    "-0",
    "True",
    "null",
    "#",
    "\\",
    "\t",
    "0",
    "-1",
    "[1, 2]",
]

#: The most characters a generated CSV holds.
CSV_MAX = 16 << 20

#: The shapes of a results CSV: header, rows, and the metric the reader is asked for.
SHAPES = ("sweep", "knobs", "rounds", "order")


def _base_csv(rng: random.Random, shape: str) -> tuple[list[list[str]], str, str | None]:
    """A valid CSV of ``shape``: (header and rows, metric, parameter columns)."""
    r = rng.uniform
    if shape == "sweep":
        rows = [
            [str(w), m, f"{r(100, 200) * w:.3f}"]
            for w in (1, 2, 4, 8)
            for m in ("wal", "delete")
            for _ in range(2)
        ]
        return [["workers", "mode", "tps"], *rows], "tps", "workers,mode"
    if shape == "rounds":
        rows = [
            [str(w), m, *(f"{r(100, 200):.2f}" for _ in range(3))]
            for w in (1, 2, 4, 8)
            for m in ("wal", "delete")
        ]
        return [["workers", "mode", "tput_1", "tput_2", "tput_3"], *rows], "tput", None
    if shape == "knobs":
        rows = [
            [
                str(rng.choice([1, 2, 4, 8, 16, 32, 64])),
                rng.choice(["on", "off"]),
                str(rng.randint(1, 16)),
                f"{r(1000, 5000):.1f}",
                f"{r(1, 20):.2f}",
            ]
            for _ in range(30)
        ]
        return [["cache", "sync", "threads", "throughput", "p99_ms"], *rows], "throughput", None
    rows = []
    for run in range(6):
        kind = "fixed" if run < 3 else "random"
        tests = ["a", "b"] if kind == "fixed" else rng.sample(["a", "b"], 2)
        rows += [[t, kind, str(run), str(pos), f"{r(1, 2):.4f}"] for pos, t in enumerate(tests)]
    return [["test", "order", "run", "position", "value"], *rows], "value", None


def _short(v: str) -> str:
    return repr(v) if len(v) <= 12 else f"{v[:12]!r}… ({len(v)} characters)"


def _mutate_csv(rng: random.Random, table: list[list[str]], metric: str) -> tuple[bytes, str]:
    """One to three hostile changes to a CSV: the bytes and what was done."""
    done = []
    for _ in range(rng.choice([1, 1, 2, 3])):
        k = rng.random()
        rows = len(table)
        if k < 0.55 and rows > 1:
            i = rng.randrange(1, rows)
            row = table[i]
            j = rng.randrange(len(row)) if row else 0
            v = rng.choice(HOSTILE_CELLS)
            if row:
                row[j] = v
            done.append(f"cell {i},{j} = {_short(v)}")
        elif k < 0.62:
            col = rng.randrange(len(table[0]))
            v = rng.choice(HOSTILE_CELLS)
            for row in table[1:]:
                if col < len(row):
                    row[col] = v
            done.append(f"column {table[0][col]!r} all {_short(v)}")
        elif k < 0.70 and rows > 1:
            row = table[rng.randrange(1, rows)]
            if rng.random() < 0.5 and row:
                row.pop()
                done.append("a row one cell short")
            else:
                row.extend(["1"] * rng.randint(1, 3))
                done.append("a row with extra cells")
        elif k < 0.75:
            del table[1:]
            done.append("a header only")
        elif k < 0.80:
            header = table[0]
            what = rng.choice(["duplicate", "empty", "drop metric", "hostile"])
            if what == "duplicate":
                header[rng.randrange(len(header))] = header[0]
            elif what == "empty":
                header[rng.randrange(len(header))] = ""
            elif what == "drop metric":
                cols = [c for c in header if not c.startswith(metric)] or header
                header[:] = cols + ["x"] * (len(header) - len(cols))
            else:
                header[rng.randrange(len(header))] = rng.choice(HOSTILE_CELLS) or "x"
            done.append(f"header: {what}")
        elif k < 0.84:
            for row in table[1:]:
                row.append(rng.choice(HOSTILE_CELLS))
            table[0].append(rng.choice(["extra", metric, "tput_4", "id"]))
            done.append("a hostile column")
        elif k < 0.87 and rows > 1:
            table.extend([[c[:20] for c in table[1]] for _ in range(rng.choice([100, 20_000]))])
            done.append(f"{len(table) - 1} rows")
        elif k < 0.89 and rows > 1:
            table[1][-1] = "7" * 1_000_000
            done.append("a 1 MB cell")
        else:
            done.append("(text)")
    lines, size = [], 0
    for row in table:  # at most 16 MB: a 1 MB cell and 20,000 rows could make 20 GB
        lines.append(",".join(row))
        size += len(lines[-1]) + 1
        if size > CSV_MAX:
            done.append(f"cut to {len(lines)} lines")
            break
    data = ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")
    if "(text)" in done:
        k = rng.random()
        i = rng.randrange(len(data) + 1)
        if k < 0.25:
            data, how = data[:i], f"cut at byte {i}"
        elif k < 0.55:
            b = rng.choice([b"\xff", b"\xe9", b"\x00", b"\xc3", b"\r", b'"', b"\n\n"])
            data, how = data[:i] + b + data[i:], f"{b!r} at byte {i}"
        elif k < 0.7:
            data, how = data.replace(b"\n", b"\r\n"), "CRLF"
        elif k < 0.8:
            data, how = b"\xef\xbb\xbf" + data, "a BOM"
        elif k < 0.9:
            data, how = data.replace(b",", b";"), "semicolons"
        else:
            data, how = data.decode("utf-8", "replace").encode("utf-16"), "UTF-16"
        done = [d for d in done if d != "(text)"] + [how]
    return data, "; ".join(done)


def _csv_reader(shape: str, rng: random.Random) -> str:
    return "order" if shape == "order" else rng.choice(["sweep", "knobs"])


def csv_cases(n: int, seed: int, tmp: Path) -> list[Case]:
    rng = random.Random(seed)
    cases: list[Case] = []
    heads = {
        s: ("\n".join(",".join(r) for r in _base_csv(rng, s)[0]) + "\n").encode() for s in SHAPES
    }
    special = _special_files(tmp / "special", heads["sweep"], ".csv")
    sweep_table, _m, _p = _base_csv(rng, "sweep")
    sweep_text = "\n".join(",".join(r) for r in sweep_table) + "\n"
    file_level = {
        "empty": b"",
        "binary": bytes(range(256)) * 16,
        "UTF-16": sweep_text.encode("utf-16"),
        "latin-1": sweep_text.replace("wal", "wál").encode("latin-1"),
        "gzip": gzip.compress(sweep_text.encode()),
        "a 5000-digit metric column": "\n".join(
            ",".join([*r[:2], "9" * 5000] if i else r) for i, r in enumerate(sweep_table)
        ).encode(),
        "a 20 MB line": b"workers,mode,tps\n" + b"1" * (20 << 20) + b"\n",
    }
    readers = {"sweep": ("tps", "workers,mode"), "knobs": ("tps", None), "order": ("value", None)}
    for reader, (metric, params) in readers.items():
        for what, path in special.items():
            payload = ("csv", reader, path, metric, params)
            cases.append(Case(f"{reader} CSV: {what}", payload, True))
        for what, data in file_level.items():
            path = _write(tmp / f"special-{len(cases)}.csv", data)
            payload = ("csv", reader, path, metric, params)
            cases.append(Case(f"{reader} CSV: {what}", payload, True))
    for shape in SHAPES:
        table, metric, params = _base_csv(rng, shape)
        for what in ("header only", "valid"):
            data = (
                (",".join(table[0]) + "\n").encode()
                if what == "header only"
                else ("\n".join(",".join(r) for r in table) + "\n").encode()
            )
            path = _write(tmp / f"special-{len(cases)}.csv", data)
            reader = _csv_reader(shape, rng)
            cases.append(
                Case(f"{reader} CSV ({shape}): {what}", ("csv", reader, path, metric, params), True)
            )

    def generated() -> Iterable[Case]:
        for i in range(n):
            shape = rng.choice(SHAPES)
            table, metric, params = _base_csv(rng, shape)
            data, how = _mutate_csv(rng, table, metric)
            path = _write(tmp / f"csv-{i:05d}.csv", data)
            reader = _csv_reader(shape, rng)
            use_params = params if rng.random() < 0.5 else None
            yield Case(f"{reader} CSV ({shape}): {how}", ("csv", reader, path, metric, use_params))

    return _fill(cases, n, generated())


# --------------------------------------------------------------------------- the worker

_GEN_CACHE: dict[tuple[Any, ...], list[Any]] = {}


def _finite(values: Any) -> bool:
    import numpy as np

    arr = np.atleast_1d(np.asarray(values, dtype=np.float64))
    return bool(np.all(np.isfinite(arr)))


def _named(exc: Exception, path: str, outcome: str) -> tuple[str, str]:
    msg = str(exc)
    if not msg or "Traceback" in msg:
        return "!contract", f"{type(exc).__name__} with message {msg[:200]!r}"
    if not msg.startswith(f"{path}: ") and not msg.startswith(f"{path} "):
        return "error not naming the file", f"{type(exc).__name__}: {msg[:200]}"
    return outcome, ""


def _run_study(path: str) -> tuple[str, str]:
    from assay.spec import SpecError, load_spec
    from assay.store import StoreError

    try:
        spec = load_spec(path)
    except SpecError as exc:
        return _named(exc, path, "SpecError")
    try:
        _tests("test_fuzz_spec").resolve_paths(spec)
    except (SpecError, StoreError):
        return "valid, path error", ""
    return "valid study", ""


def _stdout(source: tuple[Any, ...]) -> Any:
    from assay.execute.command import CommandResult
    from assay.execute.output import Spool

    spool = None
    if source[0] == "bytes":
        stdout = source[1]
    else:
        _, size, piece = source
        spool = Spool(keep_all=True)
        for _ in range(size // len(piece)):
            spool.write(piece)
        stdout = spool.kept()
    return CommandResult(
        argv=["x"],
        status="ok",
        exit_code=0,
        started=0.0,
        duration=1.0,
        stdout=stdout,
        stderr=b"",
        output=spool,
    )


def _run_output(kind: str, fields: dict[str, str], source: tuple[Any, ...], cwd: str) -> Any:
    from assay.execute.readers import read_reading, read_unit_readings
    from assay.spec import PISpec, UnitsSpec

    res = _stdout(source)
    try:
        if kind == "pi":
            return read_reading(PISpec(name="t", **fields), res, cwd)  # type: ignore[arg-type]
        return read_unit_readings(UnitsSpec(**fields), "t", res, cwd)  # type: ignore[arg-type]
    finally:
        res.close()


def _output_outcome(read: Callable[[], Any], finite: bool = True) -> tuple[str, str]:
    from assay.execute.readers import ReadError

    try:
        got = read()
    except ReadError as exc:
        msg = str(exc)
        if not msg or "Traceback" in msg or len(msg) > 1000:
            return "!contract", f"ReadError message {msg[:200]!r} ({len(msg)} chars)"
        return "ReadError", ""
    if finite and not _finite(got):
        return "!contract", f"a non-finite reading: {str(got)[:100]}"
    return "finite reading(s)", ""


def _run_csv(reader: str, path: str, metric: str, params: str | None) -> tuple[str, str]:
    names = params.split(",") if params else None
    if reader == "sweep":
        from assay.importers.sweep import SweepDataError, read_results_csv

        try:
            data = read_results_csv(path, names, metric)
        except SweepDataError as exc:
            return _named(exc, path, "SweepDataError")
        values: Any = data.frame[metric].to_numpy(dtype=float)
    elif reader == "knobs":
        from assay.importers.knobs import SamplesError, read_samples_csv

        try:
            _frame, pis, _data = read_samples_csv(path, [metric])
        except SamplesError as exc:
            return _named(exc, path, "SamplesError")
        values = list(pis.values())
    else:
        from assay.importers.order import OrderDataError, read_order_file

        try:
            trials = read_order_file(path)
        except OrderDataError as exc:
            return _named(exc, path, "OrderDataError")
        values = trials.table["value"].to_numpy(dtype=float)
    if not _finite(values):
        return "!contract", "non-finite values read"
    return "data read", ""


def run_case(payload: tuple[Any, ...]) -> tuple[str, str]:
    """One case in the worker: (outcome, detail); an outcome starting with '!' is a
    broken contract; an exception escapes (the caller records it as a traceback)."""
    what = payload[0]
    if what == "study":
        return _run_study(payload[1])
    if what == "output":
        _, kind, fields, source, cwd = payload
        return _output_outcome(lambda: _run_output(kind, fields, source, cwd))
    if what == "output-gen":
        _, seed, n, tmp, i = payload
        key = ("output-gen", seed, n, tmp)
        if key not in _GEN_CACHE:
            _GEN_CACHE[key] = list(_tests("test_fuzz_outputs").cases(n, seed, Path(tmp)))
        kind, _out, read = _GEN_CACHE[key][i]
        # plain numbers may be NaN/inf: the reading refuses them on the way out
        return _output_outcome(read, finite=kind not in ("plain", "units-plain"))
    if what == "result":
        from assay.importers.results import ResultFileError

        got = _tests("test_imports_fuzz")._read(Path(payload[1]))
        return ("ResultFileError", "") if isinstance(got, ResultFileError) else ("results", "")
    if what == "csv":
        return _run_csv(*payload[1:])
    raise ValueError(f"unknown case {what!r}")


def _hwm_kib(pid: int | str = "self") -> int:
    """A process's peak resident set (``VmHWM``, KiB); 0 when gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _where(exc: BaseException) -> str:
    """The innermost frame in Assay's source (and the innermost of all, if elsewhere)."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "/assay/" in f.filename and "/tests/" not in f.filename]
    out = []
    for f in ([ours[-1]] if ours else []) + frames[-1:]:
        parts = Path(f.filename).parts
        at = parts.index("assay") if "assay" in parts else max(len(parts) - 3, 0)
        text = f"{'/'.join(parts[at:])}:{f.lineno} {f.name}"
        if text not in out:
            out.append(text)
    return " < ".join(reversed(out)) if len(out) > 1 else (out[0] if out else "?")


def _worker(conn: Connection, mem_bytes: int, match_limit: float) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
    import numpy  # noqa: F401  (imported before the first case: its time is not a case's)
    import pandas  # noqa: F401

    from assay.execute import output

    if hasattr(output, "MATCH_TIME_LIMIT_S"):
        output.MATCH_TIME_LIMIT_S = match_limit
    conn.send(("ready", _hwm_kib()))
    while True:
        try:
            payload = conn.recv()
        except EOFError:
            return
        if payload is None:
            return
        t0 = time.perf_counter()
        where = ""
        try:
            outcome, detail = run_case(payload)
        except BaseException as exc:  # the bug: anything but the project's errors
            in_tests = traceback.extract_tb(exc.__traceback__)[-1:]
            checked = isinstance(exc, AssertionError) and any(
                "/tests/" in f.filename for f in in_tests
            )
            outcome = "!contract" if checked else "!traceback"
            detail = f"{type(exc).__name__}: {str(exc)[:240]}"
            where = _where(exc)
        conn.send((outcome, detail, where, time.perf_counter() - t0, _hwm_kib()))


class Worker:
    """A worker process held to the memory limit; replaced after a hang or a death."""

    def __init__(self, mem_bytes: int, match_limit: float) -> None:
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker, args=(child, mem_bytes, match_limit), daemon=True)
        self.proc.start()
        child.close()
        if not self.conn.poll(300):
            raise RuntimeError("the fuzz worker did not start")
        _ready, self.peak_kib = self.conn.recv()

    def run(self, payload: tuple[Any, ...], bound: float) -> tuple[Any, ...] | str:
        """The worker's answer, or 'hang' (no answer within ``bound`` s) or 'death'."""
        try:
            self.conn.send(payload)
            if not self.conn.poll(bound):
                self.peak_kib = max(self.peak_kib, _hwm_kib(self.proc.pid or 0))
                self.kill()
                return "hang"
            reply: tuple[Any, ...] = self.conn.recv()
        except (EOFError, OSError, BrokenPipeError):
            self.kill()
            return "death"
        self.peak_kib = max(self.peak_kib, reply[4])
        return reply

    def kill(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(10)

    def stop(self) -> None:
        with contextlib.suppress(OSError, BrokenPipeError):
            self.conn.send(None)
        self.proc.join(10)
        self.kill()


# -------------------------------------------------------------------------- a campaign


def _case_file(case: Case) -> str:
    """The file a case reads (its output for a generated output case)."""
    p = case.payload
    if p[0] == "output":
        return str(p[2].get("file", "stdout"))
    if p[0] == "output-gen":
        return f"stdout or a file in {p[3]}"
    return str(p[2] if p[0] == "csv" else p[1])


@dataclass
class Tally:
    """What one fuzzer found."""

    name: str
    cases: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    problems: list[tuple[str, str, str, str]] = field(default_factory=list)  # kind, case, …
    keep: bool = False  # the case files are kept: a problem's case is shown with its file
    slowest: tuple[float, str] = (0.0, "")
    peak_kib: int = 0
    peak_clean_kib: int = 0  # the peak where no case of the process had a problem
    rise: tuple[int, str] = (0, "")  # the largest rise of a process's peak by one case
    notes: list[tuple[str, str, str]] = field(default_factory=list)  # outcome, case, detail
    wall_s: float = 0.0
    results: list[str] = field(default_factory=list)  # each case's outcome, in order

    def add(
        self,
        case: Case,
        outcome: str,
        detail: str,
        where: str,
        took: float,
        peak: int,
        rise: int,
    ) -> bool:
        """Count one case (``peak``: its process's peak RSS after it, ``rise``: how much
        the case raised it); whether it was a problem."""
        self.cases += 1
        self.results.append(outcome)
        self.outcomes[outcome] += 1
        self.peak_kib = max(self.peak_kib, peak)
        if took > self.slowest[0] and outcome != "hang":  # a hang took the bound
            self.slowest = (took, case.desc)
        if outcome.startswith("!") or outcome in ("hang", "death"):
            desc = case.desc
            if self.keep:
                desc += f" (file {_case_file(case)})"
            self.problems.append((outcome.lstrip("!"), desc, detail, where))
            return True
        self.peak_clean_kib = max(self.peak_clean_kib, peak)
        if rise > self.rise[0]:
            self.rise = (rise, case.desc)
        if "not naming" in outcome:
            self.notes.append((outcome, case.desc, detail))
        return False

    def count(self, kind: str) -> int:
        return sum(1 for p in self.problems if p[0] == kind)


def run_campaign(
    name: str, cases: list[Case], args: argparse.Namespace, log: Callable[[str], None]
) -> Tally:
    tally = Tally(name, keep=args.keep)
    mem = int(args.mem_gib * GiB)
    worker = Worker(mem, args.match_limit)
    t_start = time.perf_counter()
    for i, case in enumerate(cases):
        t0 = time.perf_counter()
        before = worker.peak_kib
        reply = worker.run(case.payload, args.bound)
        took = time.perf_counter() - t0
        if isinstance(reply, str):  # hang or death: a new worker for the next case
            detail = (
                f"no answer after {args.bound:g} s"
                if reply == "hang"
                else (f"the worker died (exit {worker.proc.exitcode})")
            )
            tally.add(case, reply, detail, "", took, worker.peak_kib, worker.peak_kib - before)
            log(f"  {name} #{i}: {reply}: {case.desc[:120]}")
            worker = Worker(mem, args.match_limit)
            continue
        outcome, detail, where, _in_worker, hwm = reply
        if tally.add(case, outcome, detail, where, took, hwm, hwm - before):
            log(f"  {name} #{i}: {outcome[1:]}: {detail[:160]} [{where}] :: {case.desc[:100]}")
            # a fresh worker: the next cases' peak is theirs, not a blow-up's
            worker.stop()
            worker = Worker(mem, args.match_limit)
        if args.verbose and i % 200 == 0:
            log(f"  {name}: {i}/{len(cases)} in {time.perf_counter() - t_start:.0f} s")
    worker.stop()
    tally.wall_s = time.perf_counter() - t_start
    return tally


# ---------------------------------------------------------------------------- the CLI

_LAUNCHER = """
import atexit, os, resource, runpy, sys
lim = int(os.environ["FUZZ_AS"])
resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
def _hwm():
    with open("/proc/self/status") as f:
        kib = [l.split()[1] for l in f if l.startswith("VmHWM:")][0]
    with open(os.environ["FUZZ_HWM"], "w") as out:
        out.write(kib)
atexit.register(_hwm)
sys.argv[0] = "assay"
runpy.run_module("assay", run_name="__main__", alter_sys=True)
"""


def run_cli(
    argv: list[str], path: str, tmp: Path, args: argparse.Namespace
) -> tuple[str, str, float, int]:
    """``python -m assay ARGV`` under the memory limit: (outcome, detail, wall, peak KiB)."""
    hwm = tmp / "hwm"
    hwm.unlink(missing_ok=True)
    env = {
        **os.environ,
        "FUZZ_AS": str(int(args.mem_gib * GiB)),
        "FUZZ_HWM": str(hwm),
        "HOME": str(tmp / "home"),
        "COLUMNS": "1000",
        "OPENBLAS_NUM_THREADS": "1",
    }
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _LAUNCHER, *argv],
            capture_output=True,
            timeout=args.bound + 10,
            cwd=tmp,
            env=env,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return "hang", f"no exit after {args.bound + 10:g} s", time.perf_counter() - t0, 0
    wall = time.perf_counter() - t0
    try:
        peak = int(hwm.read_text())
    except (OSError, ValueError):
        peak = 0
    err = proc.stderr.decode("utf-8", "replace")
    rc = proc.returncode
    if "Traceback" in err or "Traceback" in proc.stdout.decode("utf-8", "replace"):
        last = [ln for ln in err.strip().splitlines() if ln and not ln.startswith(" ")]
        where = [ln.strip() for ln in err.splitlines() if ln.strip().startswith("File ")]
        return (
            "!traceback",
            f"exit {rc}: {(last or ['?'])[-1][:200]} [{(where or ['?'])[-1]}]",
            wall,
            peak,
        )
    text = err.strip()
    if rc == 2:
        if not text.startswith("error:"):
            return "!contract", f"exit 2 without an 'error:' line: {text[:200]!r}", wall, peak
        if path not in " ".join(text.split()) and path not in text.replace("\n", ""):
            return "exit 2, error not naming the file", text[:200], wall, peak
        return "exit 2, error naming the file", "", wall, peak
    if rc in (0, 4, 5):
        return f"exit {rc}", "", wall, peak
    return "!contract", f"exit {rc}: {text[-200:]!r}", wall, peak


def _sample(
    cases: list[Case], results: list[str], k: int, keep: Callable[[int], bool]
) -> list[int]:
    """Up to ``k`` case indices (of those ``keep`` allows): the special files first, then
    generated cases that were a problem in process, then generated cases spread evenly
    over the campaign."""
    special = [i for i, c in enumerate(cases) if c.special and keep(i)]
    chosen = special[: max(k // 3, min(len(special), k // 2))]
    bad = [i for i, c in enumerate(cases) if not c.special and keep(i) and results[i][0] == "!"]
    chosen += bad[: k // 4]
    rest = [i for i, c in enumerate(cases) if not c.special and keep(i) and i not in chosen]
    room = k - len(chosen)
    if rest and room > 0:
        step = max(len(rest) / room, 1.0)
        chosen += {rest[int(j * step)] for j in range(min(room, len(rest)))}
    return sorted(chosen)


def cli_campaign(
    name: str,
    picks: list[tuple[Case, list[str], str]],
    tmp: Path,
    args: argparse.Namespace,
    log: Callable[[str], None],
) -> Tally:
    tally = Tally(name, keep=args.keep)
    (tmp / "home").mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    for case, argv, path in picks:
        outcome, detail, wall, peak = run_cli(argv, path, tmp, args)
        if tally.add(case, outcome, detail, "", wall, peak, peak):
            log(f"  {name}: {outcome.lstrip('!')}: {detail[:200]} :: {case.desc[:100]}")
    tally.wall_s = time.perf_counter() - t_start
    return tally


# ------------------------------------------------------------------------------ report


def _outcomes(t: Tally) -> str:
    ok = [(k, v) for k, v in t.outcomes.most_common() if not k.startswith("!")]
    ok = [(k, v) for k, v in ok if k not in ("hang", "death")]
    return ", ".join(f"{k} {v:,}" for k, v in ok)


def table(tallies: list[Tally], bound: float) -> str:
    lines = [
        f"| fuzzer | cases | outcomes | tracebacks | hangs (> {bound:g} s; CLI > "
        f"{bound + 10:g} s) | worker deaths | other broken contracts | slowest case (not a hang) | "
        "peak RSS: all cases (cases without a problem) | wall |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for t in tallies:
        slow = f"{t.slowest[0]:.2f} s ({t.slowest[1][:60]})"
        lines.append(
            f"| {t.name} | {t.cases:,} | {_outcomes(t)} | {t.count('traceback')} | "
            f"{t.count('hang')} | {t.count('death')} | {t.count('contract')} | "
            f"{slow.replace('|', '¦')} | {t.peak_kib / 1024:.0f} MiB "
            f"({t.peak_clean_kib / 1024:.0f} MiB) | {t.wall_s:.0f} s |"
        )
    return "\n".join(lines)


def problems(tallies: list[Tally]) -> list[str]:
    """Each distinct problem once (in process: the exception's type and where; through
    the CLI: the exception's line and where; each hang), with its count and first case."""
    seen: dict[tuple[str, str, str, str], list[Any]] = {}
    for t in tallies:
        for kind, desc, detail, where in t.problems:
            head = detail.split(":")[0] if kind == "traceback" and where else detail
            if kind in ("hang", "death"):
                head = desc
            key = (t.name, kind, head, where)
            if key not in seen:
                seen[key] = [0, desc, detail]
            seen[key][0] += 1
    return [
        f"{name}: {kind} ×{n}: {detail[:200]}"
        + (f" [{where}]" if where else "")
        + f"\n    first case: {desc[:200]}"
        for (name, kind, _h, where), (n, desc, detail) in seen.items()
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--cases", type=int, default=1200, help="cases per fuzzer (>= 1000)")
    ap.add_argument("--seed", type=int, default=46)
    ap.add_argument("--cli", type=int, default=100, help="--from cases run through the CLI")
    ap.add_argument("--study-cli", type=int, default=40, help="study files through `assay run`")
    ap.add_argument("--bound", type=float, default=20.0, help="seconds a case may take")
    ap.add_argument("--mem-gib", type=float, default=2.0, help="RLIMIT_AS of each process")
    ap.add_argument(
        "--match-limit",
        type=float,
        default=2.0,
        help="output.MATCH_TIME_LIMIT_S in the worker (30 s in a study)",
    )
    ap.add_argument("--only", default="study,outputs,from")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the case files (and say where)")
    args = ap.parse_args()
    only = set(args.only.split(","))
    # this process too: a generator gone wrong must not take a shared machine's memory
    cap = int(max(4.0, 2 * args.mem_gib) * GiB)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    def log(s: str) -> None:
        print(s, file=sys.stderr, flush=True)

    load0 = os.getloadavg()
    tallies: list[Tally] = []
    kept = tempfile.mkdtemp(prefix="fz-") if args.keep else None
    with (
        contextlib.nullcontext(kept) if kept else tempfile.TemporaryDirectory(prefix="fz-") as tmp_s
    ):
        tmp = Path(tmp_s)
        if "study" in only:
            log("study files: generating")
            cases = study_cases(args.cases, args.seed, tmp / "study")
            log(f"study files: {len(cases)} cases")
            t = run_campaign("study files (`load_spec`, paths)", cases, args, log)
            tallies.append(t)
            refused = {"SpecError", "!traceback", "hang", "death"}
            idx = _sample(
                cases,
                t.results,
                args.study_cli,
                lambda i: t.results[i] in refused and cases[i].payload[1].endswith(".toml"),
            )
            picks = [(cases[i], ["run", cases[i].payload[1]], cases[i].payload[1]) for i in idx]
            tallies.append(
                cli_campaign(
                    "study files refused, `assay run FILE`", picks, tmp / "study-cli", args, log
                )
            )
        if "outputs" in only:
            log("benchmark outputs: generating")
            cases = output_cases(args.cases, args.seed, tmp / "outputs")
            log(f"benchmark outputs: {len(cases)} cases")
            tallies.append(run_campaign("benchmark outputs (readers)", cases, args, log))
        if "from" in only:
            log("--from inputs: generating")
            results = result_cases(args.cases, args.seed, tmp / "results")
            csvs = csv_cases(args.cases, args.seed, tmp / "csv")
            log(f"--from inputs: {len(results)} result files, {len(csvs)} CSVs")
            tr = run_campaign("`compare --from` result files", results, args, log)
            tc = run_campaign("`sweep`/`knobs`/`order --from` CSVs", csvs, args, log)
            tallies += [tr, tc]
            good = str(_tests("test_imports_fuzz").GOOD)
            per = args.cli // 5  # compare 2/5 of the sample, sweep, knobs and order 1/5
            picks = [
                (
                    results[i],
                    ["compare", "--from", good, results[i].payload[1]],
                    results[i].payload[1],
                )
                for i in _sample(results, tr.results, args.cli - 3 * per, lambda i: True)
            ]
            for reader in ("sweep", "knobs", "order"):
                of_reader = [c.payload[1] == reader for c in csvs]
                for i in _sample(csvs, tc.results, per, of_reader.__getitem__):
                    _, _, path, metric, params = csvs[i].payload
                    argv = {
                        "sweep": ["sweep", path, "--from", "--metric", metric, "-q"]
                        + (["--params", params] if params else []),
                        "knobs": [
                            "knobs",
                            "--from",
                            path,
                            "--metric",
                            metric,
                            "--trees",
                            "20",
                            "--jobs",
                            "1",
                            "-q",
                        ],
                        "order": ["order", "--from", path, "-q"],
                    }[reader]
                    picks.append((csvs[i], argv, path))
            tallies.append(
                cli_campaign("`--from` inputs through the CLI", picks, tmp / "from-cli", args, log)
            )
    what = (
        f"seed {args.seed}, {args.cases} cases a fuzzer, bound {args.bound:g} s a case, "
        f"RLIMIT_AS {args.mem_gib:g} GiB, pattern search limit {args.match_limit:g} s"
    )
    print(machine_line(load0, what) + "\n")
    if kept:
        print(f"case files kept in {kept}\n")
    found = problems(tallies)
    if found:
        print("Problems (each distinct one, with its count and first case):")
        for p in found:
            print("  " + p)
        print()
    for t in tallies:
        for outcome, desc, detail in t.notes[:5]:
            print(f"note: {t.name}: {outcome}: {desc[:120]}\n    {detail[:240]}")
        if t.rise[1]:
            print(
                f"note: {t.name}: the case that raised its process's peak RSS most, of those "
                f"without a problem: {t.rise[0] / 1024:.0f} MiB, {t.rise[1][:120]}"
            )
    print()
    print(table(tallies, args.bound))
    print("\ncommand: python bench/bench_fuzz.py " + " ".join(sys.argv[1:]))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
