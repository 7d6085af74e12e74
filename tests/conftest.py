from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest


@pytest.fixture
def py() -> str:
    """The running Python, to build benchmark commands that exist everywhere."""
    return sys.executable


@pytest.fixture
def write_study(tmp_path: Path):  # type: ignore[no-untyped-def]
    def _write(text: str, name: str = "study.toml") -> Path:
        p = tmp_path / name
        p.write_text(text, encoding="utf-8")
        return p

    return _write


@pytest.fixture
def sigint() -> None:
    """Skip a test that sends SIGINT when this process ignores it: pytest started as a
    background job of a script ('(cmd &)') inherits SIG_IGN, and so do its children, so
    a Ctrl-C cannot be simulated."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        pytest.skip("SIGINT is ignored by the process that started pytest (a background job)")


def default_signals() -> None:
    """A ``preexec_fn``: the child starts with SIGINT, SIGTERM and SIGHUP at their default
    actions, whatever this process ignores (``nohup`` ignores SIGHUP; a background job
    of a script ignores SIGINT), so a test of how Assay ends on them runs anywhere."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
