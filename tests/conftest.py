from __future__ import annotations

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
