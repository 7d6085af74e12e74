"""Results measured elsewhere, read for Assay's analyses: hyperfine, pyperf, Google
Benchmark, Go, criterion.rs, pytest-benchmark, asv and Assay files (``compare --from``), and
the CSV files of ``order``, ``sweep`` and ``knobs --from``.

Every reader names the file, the line or field, and what was expected when it refuses.
"""

from typing import Literal, get_args

ResultFormat = Literal[
    "hyperfine",
    "pyperf",
    "assay",
    "google-benchmark",
    "go",
    "criterion",
    "pytest-benchmark",
    "asv",
]

#: The formats ``compare --from`` reads (``--format`` names one), in the order of
#: :data:`ResultFormat`; here, not in :mod:`assay.importers.results`, so that the command
#: line lists them without NumPy.
RESULT_FORMATS: tuple[ResultFormat, ...] = get_args(ResultFormat)
