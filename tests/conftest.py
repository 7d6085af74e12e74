from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

#: Debian's chromium, which the report and docs tests drive through Playwright (never
#: ``playwright install``: no browser downloads).
CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One chromium for the module (root needs --no-sandbox); the tests that use it are
    skipped where it or Playwright is missing."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield b
        b.close()


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
