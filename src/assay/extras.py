"""Optional dependencies: what each extra (``pip install -e '.[EXTRA]'`` in Assay's
folder) brings, and the one-line error that names the extra when its package is missing.

A core install runs ``run``, ``compare``, ``order``, ``sweep`` (ANOVA), ``history``,
``show``, ``report`` and ``export`` (CSV) on one machine.  The rest needs an extra:

- ``cluster``: Dask's distributed (``--workers``, ``--cluster``, a study file's
  ``[cluster]``), asyncssh (clusters over SSH) and cryptography (the clusters' TLS
  certificates);
- ``models``: scikit-learn (``assay knobs``' random forests, the sweep's ``mlp`` and
  ``linear`` models);
- ``tune``: Optuna (``assay knobs --tune``);
- ``export``: pyarrow (``assay export --format parquet``).

:class:`MissingExtra` is a :class:`~assay.errors.StudyError`: the command line prints
it as one line, ``error: …``, and exits with status 3, as for any study that cannot go
on.  Heavy packages are imported only where they are used (by :func:`require_extra`).

>>> require_extra("math", "models", "arithmetic").__name__
'math'
>>> require_extra("no_such_module_here", "models", "the MLP model")  # doctest: +ELLIPSIS
Traceback (most recent call last):
assay.extras.MissingExtra: the MLP model needs no_such_module_here: pip install -e '.[models]' ...
"""

from __future__ import annotations

import importlib
import warnings
from types import ModuleType

from assay.errors import StudyError

__all__ = ["PACKAGES", "MissingExtra", "missing_extra", "require_extra"]

#: The name to install for each module that an extra brings (where the two differ).
PACKAGES: dict[str, str] = {
    "asyncssh": "asyncssh",
    "cryptography": "cryptography",
    "dask": "Dask",
    "distributed": "Dask (distributed)",
    "optuna": "Optuna",
    "pyarrow": "pyarrow",
    "sklearn": "scikit-learn",
}


class MissingExtra(StudyError):
    """An optional dependency is not installed; the message names the extra to install
    (``extra``) and what needed it."""

    def __init__(self, message: str, *, extra: str) -> None:
        super().__init__(message)
        self.extra = extra


def _needs(module: str, extra: str, what: str) -> str:
    package = PACKAGES.get(module, module)
    return f"{what} needs {package}: pip install -e '.[{extra}]' in Assay's folder"


def missing_extra(module: str, extra: str, what: str) -> str | None:
    """What :func:`require_extra` would say if ``module`` cannot be found, without
    importing it (``assay plan``: a study's needs before it runs); None when it is there.

    >>> missing_extra("math", "models", "arithmetic") is None
    True
    """
    import importlib.util

    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    return None if found else _needs(module, extra, what)


#: A deprecation notice an extra's import prints about a package it imports in turn.
_DEPENDENCY_NOISE = r".* is deprecated and support will be removed in a future release"


def require_extra(module: str, extra: str, what: str) -> ModuleType:
    """``module``, imported; if it cannot be, a :class:`MissingExtra` whose message says
    that ``what`` needs it and which extra brings it:
    ``the MLP model needs scikit-learn: pip install -e '.[models]' in Assay's folder``."""
    try:
        with warnings.catch_warnings():
            # not the user's to act on: asyncssh 2.24 names cryptography's DSA classes,
            # which cryptography (51 here) deprecates: a dozen lines above a cluster
            # study's first
            warnings.filterwarnings("ignore", message=_DEPENDENCY_NOISE)
            return importlib.import_module(module)
    except ImportError as exc:
        message = _needs(module, extra, what)
        top = module.partition(".")[0]
        if exc.name is None or exc.name.partition(".")[0] != top:
            # installed, but something it imports is missing: say what
            message += f" (it is installed, but importing it failed: {exc})"
        raise MissingExtra(message, extra=extra) from None
