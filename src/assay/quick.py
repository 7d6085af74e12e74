"""Quick-mode studies: a study built from command lines rather than a study file.

What ``assay run -- CMD`` and ``assay compare -- A -- B`` build, shared by the CLI and
the Python API (:mod:`assay.public`): the words of a command, the study's name (from
what it measures, so that the same command line finds the same study), its
``[benchmark]`` table, the study mapping and where quick studies are stored.

Light on purpose: the CLI imports it before ``--help`` (no pydantic, no NumPy).

>>> bench = quick_benchmark(["sleep", "0.01"], shell=False)
>>> data = quick_study_data(quick_name("quick", "sleep 0.01", bench), bench, {})
>>> data["study"]["name"], data["benchmark"]["command"]
('quick sleep-0-01 039fcda1', ['sleep', '0.01'])
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from assay.errors import SpecError

# characters that mean something to /bin/sh but not to Assay's word splitting
SHELL_SYNTAX = set("|&;<>()$`*?[]{}~!")
# a placeholder of Assay's template (not ${VAR}, nor brace expansion {a,b})
PLACEHOLDER = re.compile(r"(?<!\$)\{[A-Za-z_][A-Za-z0-9_]*\}")


def command_words(args: list[str], *, shell: bool) -> list[str]:
    """The argv of one quick-mode command, as typed after ``--``.

    One quoted string (``assay run "sleep 0.01"``, as hyperfine users write it) is
    split into words; if it holds shell syntax it needs ``--shell``.  A second ``--``
    means two commands: ``assay compare`` measures those.

    >>> command_words(["sleep 0.01"], shell=False)
    ['sleep', '0.01']
    >>> command_words(["sleep 0.0{t}"], shell=False)  # hyperfine's -P form
    ['sleep', '0.0{t}']
    """
    if args and args[0] == "--":
        args = args[1:]
    if not args:
        raise SpecError("no command given: use 'assay run -- CMD ARGS...' or 'assay run FILE.toml'")
    if shell:
        return args
    if "--" in args:
        raise SpecError(
            f"'--' inside the command ({shlex.join(args)}): assay run measures one command; "
            "to compare commands use 'assay compare -- CMD_A -- CMD_B' (if '--' is an "
            "argument of your command, add --shell and quote the command)"
        )
    if len(args) == 1 and any(c.isspace() for c in args[0]):
        # a {name} placeholder (-P/-L, [params]) is Assay's, not the shell's: filled
        # into its word after splitting, as hyperfine's 'sleep 0.0{t}' form expects
        if SHELL_SYNTAX & set(PLACEHOLDER.sub("", args[0])):
            raise SpecError(
                f"{args[0]!r} is one string with shell syntax: add --shell to run it with "
                "/bin/sh -c, or give the words after '--' (assay run -- CMD ARGS...)"
            )
        try:
            words = shlex.split(args[0])
        except ValueError as exc:
            raise SpecError(f"{args[0]!r}: {exc}") from None
        if words:
            return words
    return args


def quick_name(kind: str, command: str, measurement: dict[str, Any]) -> str:
    """A quick study's name: from what it measures, so the same command line resumes it.

    >>> quick_name("quick", "sleep 0.01", {"command": ["sleep", "0.01"]})
    'quick sleep-0-01 fefca889'
    """
    import hashlib  # here: hashlib and json cost 4 ms of every command's start (#60)
    import json

    digest = hashlib.sha256(json.dumps(measurement, sort_keys=True).encode()).hexdigest()
    from assay.spec import slug

    return f"{kind} {slug(command)[:40]} {digest[:8]}"


def quick_benchmark(
    argv: Sequence[str],
    *,
    shell: bool,
    timeout: float | None = None,
    prepare: str | None = None,
    ignore_failure: bool = False,
) -> dict[str, Any]:
    """The ``[benchmark]`` table of a quick study of ``argv`` (``prepare``: a shell
    command run before every trial, unmeasured).

    >>> quick_benchmark(["true"], shell=False, prepare="sync")
    {'command': ['true'], 'shell': False, 'reset': ['/bin/sh', '-c', 'sync']}
    """
    bench: dict[str, Any] = {"command": list(argv), "shell": shell}
    if timeout is not None:
        bench["timeout"] = timeout
    if prepare:
        bench["reset"] = ["/bin/sh", "-c", prepare]
    if ignore_failure:
        bench["ignore_failure"] = True
    return bench


def quick_study_data(
    name: str,
    bench: dict[str, Any],
    stop: dict[str, Any],
    *,
    variants: list[dict[str, Any]] | None = None,
    median: bool = False,
) -> dict[str, Any]:
    """The study mapping of a quick study (for :func:`assay.spec.parse_spec_data`);
    ``median``: the median wall time with its distribution-free CI."""
    data: dict[str, Any] = {"study": {"name": name}, "benchmark": bench}
    if variants is not None:
        data["variant"] = variants
    data["stop"] = stop
    if median:  # how readings are summed up: the same study, resumed
        data["pi"] = [{"name": "wall_time", "unit": "s", "statistic": "median"}]
    return data


def quick_store_path() -> Path:
    """Where quick-mode studies are stored: ``$XDG_CACHE_HOME/assay/quick.assay.db``."""
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return cache / "assay" / "quick.assay.db"
