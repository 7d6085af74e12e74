"""The machine, date and load line every bench prints above its table."""

from __future__ import annotations

import datetime as dt
import os
import platform


def machine_line(load_at_start: tuple[float, float, float], what: str) -> str:
    """``Machine: HOST, N cores, PLATFORM; DATE UTC; load at start …, at end …; WHAT``."""
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M")

    def load(x: tuple[float, float, float]) -> str:
        return " ".join(f"{v:.2f}" for v in x)

    return (
        f"Machine: {platform.node()}, {os.cpu_count()} cores, {platform.platform()}; {now} "
        f"UTC; load at start {load(load_at_start)}, at end {load(os.getloadavg())}; {what}"
    )
