"""Results measured elsewhere, read for Assay's analyses: hyperfine, pyperf and Assay
JSON (``compare --from``), and the CSV files of ``order``, ``sweep`` and ``knobs --from``.

Every reader names the file, the line or field, and what was expected when it refuses.
"""
