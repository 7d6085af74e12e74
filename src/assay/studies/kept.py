"""What a study keeps of its analysis in its store, so that ``assay show`` and
``assay report`` read it instead of computing it again.

A knob study's random forests take tens of seconds, its Latin Hypercube and a sweep's
important points a second of SciPy and kneed imports: computed at the end of the
run, they are kept beside the trials under a digest of everything they were computed
from (Assay's version included: a new one may compute otherwise).  A reader that
finds the digest reads the value; any other reader (other trials, another version, a
value that does not parse: the store is data) computes it again, and keeps it when
the store is open for writing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from assay._version import __version__
from assay.store import Store

T = TypeVar("T")

#: What a kept value was made from: the store, the study's id.
Kept = tuple[Store, int]


def digest(made_from: Sequence[Any]) -> str:
    """A digest of ``made_from`` (as JSON, other values by their repr) and Assay's
    version.

    >>> digest([1, "a"]) == digest([1, "a"]) != digest([1, "b"])
    True
    """
    text = json.dumps([__version__, *made_from], sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


def kept_or_made(
    kept: Kept,
    key: str,
    made_from: Sequence[Any],
    make: Callable[[], T],
    dump: Callable[[T], Any],
    load: Callable[[Any], T],
) -> T:
    """The value the study keeps under ``key`` if it was made from ``made_from``
    (read by ``load``); else ``make()``, kept (written by ``dump``, replacing the one
    kept before) when the store is open for writing."""
    store, study_id = kept
    mark = digest(made_from)
    entry = store.study_value(study_id, key)
    if isinstance(entry, dict) and entry.get("made_from") == mark and "value" in entry:
        try:
            return load(entry["value"])
        except (KeyError, IndexError, TypeError, ValueError):
            pass  # not what this version writes: made again
    value = make()
    if not store.read_only:
        store.set_study_value(study_id, key, {"made_from": mark, "value": dump(value)})
    return value
