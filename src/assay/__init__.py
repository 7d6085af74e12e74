"""Assay: run performance experiments the right way and say what the numbers mean.

>>> from assay import measure
>>> result = measure(lambda: sorted(range(1000, 0, -1)), calls_per_round=100, max_time=2)
>>> result.name, result.unit, result.low <= result.mean <= result.high
('time_per_call', 's', True)
"""

__version__ = "0.1.0"

from assay.api import measure

__all__ = ["__version__", "measure"]
