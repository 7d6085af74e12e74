"""The errors every layer may raise: a study that cannot go on, a bad study file, a
store that cannot be used.

They live apart from :mod:`assay.studies`, :mod:`assay.spec` and :mod:`assay.store` so
that the executor raises the same error as the study loops without importing them, and
the command line catches them without importing pydantic or NumPy (``--help`` stays
fast). The command line turns a StudyError or StoreError into exit status 3, a
SpecError into 2.
"""

from __future__ import annotations


class StudyError(RuntimeError):
    """The study cannot go on (setup failed, store unusable); the message says why."""


class SpecError(ValueError):
    """A study file is invalid; the message names the file, the field and what was expected."""


class StoreError(RuntimeError):
    """The store cannot be opened or written; the message says which file and why."""


class NotAStoreError(StoreError):
    """The path is no results store at all (missing, a folder, empty, not SQLite, no
    Assay tables, damaged): bad input, unlike a store that cannot be read just now."""
