"""Assay: run performance experiments the right way and say what the numbers mean.

>>> from assay import measure
>>> result = measure(lambda: sorted(range(1000, 0, -1)), calls_per_round=100, max_time=2)
>>> result.name, result.unit, result.low <= result.mean <= result.high
('time_per_call', 's', True)

The CLI's studies from Python (:mod:`assay.public`): :func:`run`, :func:`compare`,
:func:`sweep`, :func:`order`, :func:`knobs` and :func:`load` return a :class:`Result`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from assay._version import __version__

__all__ = [
    "Result",
    "__version__",
    "compare",
    "knobs",
    "load",
    "measure",
    "order",
    "run",
    "sweep",
]

if TYPE_CHECKING:
    from assay.api import measure
    from assay.public import Result, compare, knobs, load, order, run, sweep

_PUBLIC = {"Result", "compare", "knobs", "load", "order", "run", "sweep"}


def __getattr__(name: str) -> Any:
    # Lazy: `import assay` (and the CLI's start, and Ctrl-C during it) stays cheap.
    if name == "measure":
        from assay.api import measure

        return measure
    if name in _PUBLIC:
        from assay import public

        return getattr(public, name)
    raise AttributeError(f"module 'assay' has no attribute {name!r}")
