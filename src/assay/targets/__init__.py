"""Ready-made targets: real systems that study files can measure as they are.

``python3 -m assay.targets NAME ACTION [options]`` drives one target; NAME is one of
:data:`TARGETS` and ACTION one of setup, run, reset, teardown, describe. ``run``
prints one JSON object: PIs under ``pi``, unit readings under ``units`` (see
:class:`assay.targets.base.RunResult`).

>>> sorted(TARGETS)
['etcd', 'fio', 'postgres', 'redis', 'sqlite']
>>> target_class("sqlite").__name__
'SqliteTarget'
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from assay.targets.base import Target

#: target name -> "module:class" (imported only when used: the CLI stays fast)
TARGETS: dict[str, str] = {
    "sqlite": "assay.targets.sqlite:SqliteTarget",
    "postgres": "assay.targets.postgres:PostgresTarget",
    "redis": "assay.targets.redis:RedisTarget",
    "fio": "assay.targets.fio:FioTarget",
    "etcd": "assay.targets.etcd:EtcdTarget",
}


def target_class(name: str) -> type[Target]:
    """The class of the target called ``name``."""
    module, _, cls = TARGETS[name].partition(":")
    found: type[Target] = getattr(importlib.import_module(module), cls)
    return found
