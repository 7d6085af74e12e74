"""A command's output, streamed: memory stays flat however much a benchmark prints.

A :class:`Spool` takes the bytes as they come and keeps the capped head and tail the
store records (:data:`~assay.store.OUTPUT_CAP`); when asked to keep everything (stdout,
which the readers search) it keeps the first :data:`SPILL` bytes in memory and the rest
in an anonymous temporary file.  :func:`iter_matches` runs a regex over a text stream
in windows, so a reader never holds more than a window of it (issue #13, item 11), and
within :data:`MATCH_TIME_LIMIT_S`: a pattern that backtracks without end on hostile
output ends in ``TimeoutError``, not in a hung study.

>>> s = Spool(cap=43, keep_all=True)
>>> for part in (b"head:", b"-" * 50, b":tail"):
...     s.write(part)
>>> s.size, s.kept()
(60, b'head:\\n[... 50 bytes cut by assay ...]\\n:tail')
>>> s.open_text().read() == "head:" + "-" * 50 + ":tail"
True
>>> [m.group(1) for m in iter_matches(r"x=(\\d+)", io.StringIO("x=1\\nx=22\\n"))]
['1', '22']
"""

from __future__ import annotations

import io
import tempfile
import time
from collections.abc import Iterator
from typing import IO, Any, Protocol, TextIO

from assay.store import OUTPUT_CAP

#: Bytes of a kept output held in memory; beyond that it goes to a temporary file.
SPILL = 1 << 20

#: The most bytes of an output a reader reads whole (a JSON or number reading of stdout,
#: any reading of a PI's file): memory stays bounded, and a file's size, which costs its
#: writer nothing (a sparse file), cannot stall a study.  A regex over stdout streams.
READ_CAP = 64 << 20

#: Seconds a PI's pattern may search one output for.  Backtracking grows exponentially
#: with the input for some patterns ('(a|aa)+$'); no limit on line length bounds it.
MATCH_TIME_LIMIT_S = 30.0

_CHUNK = 1 << 20  # characters read at a time by iter_matches
# A match, with the text that decides where it ends, is taken to be shorter than this:
# a match reaching into the last _WINDOW characters read waits for more text.
_WINDOW = 64 * 1024
_CONTEXT = 256  # characters kept before the search position: for ^, \b and look-behinds


class Spool:
    """One output stream of a command: the head and tail the store keeps, its size,
    and with ``keep_all`` the whole of it for :meth:`open_text`."""

    def __init__(self, cap: int = OUTPUT_CAP, *, keep_all: bool = False) -> None:
        self.cap = cap
        self.size = 0
        self._half = cap // 2
        self._head = bytearray()
        self._tail = bytearray()  # the last cap/2 bytes after the head
        self._keep_all = keep_all
        self._mem = bytearray()
        self._file: IO[bytes] | None = None
        self.error: OSError | None = None  # why the whole output could not be kept

    def write(self, data: bytes) -> None:
        """Take the next bytes of the stream."""
        self.size += len(data)
        take = self._half - len(self._head)
        if take > 0:
            self._head += data[:take]
            rest = data[take:]
        else:
            rest = data
        if rest:
            self._tail += rest
            if len(self._tail) > 2 * self._half:  # trim now and then, not at every write
                del self._tail[: len(self._tail) - self._half]
        if self._keep_all and self.error is None:
            self._keep(data)

    def _keep(self, data: bytes) -> None:
        try:
            if self._file is None and len(self._mem) + len(data) <= SPILL:
                self._mem += data
                return
            if self._file is None:
                # closed by close(), or with the spool
                self._file = tempfile.TemporaryFile(prefix="assay-out-")  # noqa: SIM115
                self._file.write(self._mem)
                self._mem = bytearray()
            self._file.write(data)
        except OSError as exc:  # a full disk: the head and tail are still kept
            self.error = exc
            self.close()

    def kept(self) -> bytes:
        """The head and tail, at most ``cap`` bytes with the marker of what was cut, in
        the store's format (:func:`~assay.store.cap_output`)."""
        tail = bytes(self._tail[-self._half :]) if len(self._tail) > self._half else self._tail
        if self.size <= self.cap:
            return bytes(self._head + self._tail)
        # shorten head and tail by the marker's length: the store does not cut again
        room = max(self.cap - len(_marker(self.size)), 0)
        head_n, tail_n = room // 2, room - room // 2
        cut = self.size - head_n - tail_n
        return bytes(self._head[:head_n]) + _marker(cut) + bytes(tail[len(tail) - tail_n :])

    def open_text(self) -> TextIO:
        """The whole output as text (UTF-8, bad bytes replaced, line ends as written);
        ``OSError`` when it could not be kept (a full disk)."""
        if not self._keep_all:
            raise ValueError("this output was not kept whole")
        if self.error is not None:
            raise self.error
        if self._file is None:
            raw: IO[bytes] = io.BytesIO(bytes(self._mem))
        else:
            self._file.flush()
            raw = open(self._file.fileno(), "rb", closefd=False)  # noqa: SIM115
            raw.seek(0)
        return io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="")

    def close(self) -> None:
        """Drop the temporary file (the head and tail stay)."""
        if self._file is not None:
            self._file.close()
            self._file = None
        self._mem = bytearray()


def _marker(cut: int) -> bytes:
    return f"\n[... {cut} bytes cut by assay ...]\n".encode()


class Match(Protocol):
    """A match of :func:`iter_matches`: the part of ``re.Match`` the readers use."""

    @property
    def string(self) -> str: ...
    def group(self, index: int = 0, /) -> str | Any: ...
    def span(self, index: int = 0, /) -> tuple[int, int]: ...
    def start(self, index: int = 0, /) -> int: ...
    def end(self, index: int = 0, /) -> int: ...


def iter_matches(pattern: str, stream: TextIO, time_limit: float | None = None) -> Iterator[Match]:
    """``re.finditer(pattern, text, re.MULTILINE)`` over a stream read in windows.

    Memory is bounded by the window, whatever the stream's length.  Each match's
    ``string`` is the window it was found in (positions are relative to it), with at
    least the 256 characters before the match and 64 KiB after it (less at the ends of
    the stream).  Assumes a match (and what decides where it ends) is under 64 KiB.

    ``TimeoutError`` once ``time_limit`` seconds (:data:`MATCH_TIME_LIMIT_S`) have
    passed since the search began (those the caller spends between matches included):
    the engine's own limit holds each step to the time left as its window's scan
    began, so the whole ends within twice ``time_limit``.  ``ValueError`` for a
    pattern the engine refuses.
    """
    # not ``re``: ``re`` has no time limit, and takes 15 s on an ordinary '(\d+)\s+ms'
    # over a 50 kB line of digits (1 ms here); its matches have ``re.Match``'s methods.
    # Imported here (7 ms): only where a pattern is read
    import regex  # type: ignore[import-untyped]

    try:
        rx = regex.compile(pattern, regex.MULTILINE)
    except regex.error as exc:  # the study file's check is re's: near, not the same
        raise ValueError(f"is not a pattern the search takes: {exc}") from None
    limit_s = MATCH_TIME_LIMIT_S if time_limit is None else time_limit
    deadline = time.monotonic() + limit_s
    clock = time.monotonic
    buf = ""
    pos = 0
    eof = False
    try:
        while not eof:
            chunk = stream.read(_CHUNK)
            eof = not chunk
            buf += chunk
            limit = len(buf) if eof else len(buf) - _WINDOW
            # one scan a window: a search a match cost 3 us of the engine's set-up each
            for m in rx.finditer(buf, pos, timeout=_left(deadline)):
                start, end = m.span()
                if end >= limit and not eof:  # it might go on in the text not read yet
                    pos = start
                    break
                yield m
                pos = end if end > start else end + 1
                if clock() > deadline:
                    raise TimeoutError
            else:
                pos = max(pos, limit)
            cut = max(0, min(pos, len(buf)) - _CONTEXT)
            buf = buf[cut:]
            pos -= cut
    except TimeoutError:
        raise TimeoutError(f"the search took more than {limit_s:g} s") from None


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0.0:
        raise TimeoutError
    return left


def first_match(pattern: str, stream: TextIO) -> Match | None:
    """``re.search(pattern, text, re.MULTILINE)`` over a stream (see :func:`iter_matches`)."""
    return next(iter_matches(pattern, stream), None)
