"""The error every layer may raise when a study cannot go on.

It lives apart from :mod:`assay.studies` so that the executor (which runs the setup,
reset and teardown steps) raises the same error as the study loops without importing
them. The command line turns it into exit status 3.
"""

from __future__ import annotations


class StudyError(RuntimeError):
    """The study cannot go on (setup failed, store unusable); the message says why."""
