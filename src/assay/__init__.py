"""Assay: run performance experiments the right way and say what the numbers mean.

>>> from assay import measure
>>> result = measure(lambda: sorted(range(1000, 0, -1)), calls_per_round=100, max_time=2)
>>> result.name, result.unit, result.low <= result.mean <= result.high
('time_per_call', 's', True)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["__version__", "measure"]

if TYPE_CHECKING:
    from assay.api import measure


def __getattr__(name: str) -> Any:
    # Lazy: `import assay` (and the CLI's start, and Ctrl-C during it) stays cheap.
    if name == "measure":
        from assay.api import measure

        return measure
    raise AttributeError(f"module 'assay' has no attribute {name!r}")
