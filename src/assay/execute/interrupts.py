"""SIGTERM and SIGHUP end Assay the way Ctrl-C does.

By default they kill Python on the spot: no ``finally`` runs, so the benchmark kept
running and the study's ``.lock`` and ``.running`` files stayed behind (issue #13,
item 5).  Here they raise :class:`KeyboardInterrupt` in the main thread, through
whatever handles SIGINT at that moment (the store holds SIGINT while it commits, and so
then holds these too): the running command's process tree is killed, the notes are
removed and the store is closed by the code that already does so for Ctrl-C.

A handler someone else set (or SIG_IGN, as ``nohup`` sets for SIGHUP) is left alone.

Python raises the KeyboardInterrupt wherever the main thread is, and C code that clears
errors can lose it (a SIGINT during ``import pandas`` inside Assay's analysis was lost
about one time in four: the study ran on to its budget).  So the signals are also
counted, and a study checks the count between trials (:class:`InterruptCheck`).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

#: The signals that end Assay like Ctrl-C.
TERMINATING = (signal.SIGTERM, signal.SIGHUP)


_received = 0  # interrupts seen by this module's handlers, lost or not


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    global _received
    _received += 1
    signal.default_int_handler(signum, frame)


def _as_interrupt(signum: int, frame: FrameType | None) -> None:
    global _received
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler) and handler is not _as_interrupt:
        handler(signal.SIGINT, frame)  # ours raises KeyboardInterrupt; the store's waits
    else:  # SIGINT ignored (a background job) or default: still end like Ctrl-C
        _received += 1
        raise KeyboardInterrupt


class InterruptCheck:
    """Raises KeyboardInterrupt when an interrupt came since it was made (or last
    raised), in case the one Python raised was lost on the way.

    >>> check = InterruptCheck()
    >>> check()  # nothing came: returns
    """

    def __init__(self) -> None:
        self._seen = _received

    def __call__(self) -> None:
        if _received != self._seen:
            self._seen = _received
            raise KeyboardInterrupt


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def install() -> list[signal.Signals]:
    """Make SIGTERM and SIGHUP raise KeyboardInterrupt from now on, where they have
    their default action, and count SIGINTs where Python's handler has them (main thread
    only); the signals so changed."""
    changed: list[signal.Signals] = []
    if not _main_thread():
        return changed
    with contextlib.suppress(ValueError):
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, _on_sigint)
            changed.append(signal.SIGINT)
    for sig in TERMINATING:
        with contextlib.suppress(ValueError):  # not the main interpreter
            if signal.getsignal(sig) == signal.SIG_DFL:
                signal.signal(sig, _as_interrupt)
                changed.append(sig)
    return changed


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """:func:`install` for the duration of the block (a command run by the API)."""
    changed = install()
    try:
        yield
    finally:
        for sig in changed:
            signal.signal(
                sig, signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL
            )


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Hold SIGINT, SIGTERM and SIGHUP while the block runs (a clean-up that a second
    Ctrl-C must not cut short), then deliver the first one that came."""
    if not _main_thread():
        yield
        return
    pending: list[int] = []

    def hold(signum: int, _frame: FrameType | None) -> None:
        pending.append(signum)

    previous: dict[signal.Signals, Any] = {}
    try:
        for sig in (signal.SIGINT, *TERMINATING):
            previous[sig] = signal.signal(sig, hold)
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if pending:
            handler = previous.get(signal.Signals(pending[0]))
            if callable(handler):
                handler(pending[0], None)
            elif handler == signal.SIG_DFL:
                signal.raise_signal(pending[0])
