"""The target interface: what every ready-made adapter for a real system provides.

A target starts the system (a private server, a database file, a scratch directory),
applies knobs, runs one workload and reports its performance indices (PIs) and unit
readings, resets the system between trials, stops it, and describes its version and
configuration. Study files drive targets through ``python3 -m assay.targets NAME
ACTION ...``, which prints one JSON object (see :meth:`RunResult.to_json`), so every
design (run, compare, order, sweep, knobs) uses them as plain argv commands.

>>> r = RunResult("demo", "noop", pi={"throughput": 2.0}, units={"latency_ms": [1.0, 0.5]})
>>> r.to_json()["pi"]["throughput"]
2.0
>>> parse_knobs(["fsync=off", "work_mem=64MB"])
{'fsync': 'off', 'work_mem': '64MB'}
"""

from __future__ import annotations

import argparse
import math
import re
import socket
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar


class TargetError(RuntimeError):
    """A target cannot start, apply a knob or run; the message names the cause and the fix."""


@dataclass
class RunResult:
    """What one workload run produced: PIs (one value each), unit readings, the raw report."""

    target: str
    workload: str
    pi: dict[str, float] = field(default_factory=dict)
    units: dict[str, list[float]] = field(default_factory=dict)
    report: dict[str, Any] = field(default_factory=dict)
    knobs: dict[str, str] = field(default_factory=dict)
    version: str = ""
    params: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The JSON object printed by ``python3 -m assay.targets NAME run``.

        ``pi.NAME`` holds the readings (``[[pi]] source = "json", path = "pi.NAME"``),
        ``units.NAME`` the unit-reading lists, ``report`` the target's own report
        (what the benchmark tool printed, parsed), ``knobs`` the applied knobs.
        """
        for name, value in self.pi.items():
            if not math.isfinite(value):
                raise TargetError(f"{self.target}: PI {name} is {value}, not a finite number")
        return {
            "target": self.target,
            "workload": self.workload,
            "version": self.version,
            "params": self.params,
            "knobs": self.knobs,
            "pi": self.pi,
            "units": self.units,
            "report": self.report,
        }


class Target(ABC):
    """A real system Assay can measure; one subclass per system.

    A target object is made from the command-line options of one invocation
    (:meth:`from_options`); state that must outlive it (a server's pid, port and
    applied knobs) lives in a private state directory
    (:class:`assay.targets.private.StateDir`).
    """

    name: ClassVar[str]

    @classmethod
    @abstractmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """Add this target's options (state, workload parameters) to ``parser``."""

    @classmethod
    @abstractmethod
    def from_options(cls, opts: argparse.Namespace) -> Target:
        """Make the target from parsed options."""

    @abstractmethod
    def start(self, knobs: Mapping[str, str], workload: Mapping[str, Any] | None = None) -> None:
        """Bring the system up afresh with ``knobs`` as its baseline configuration, and
        load the data ``workload`` needs (tables, files)."""

    @abstractmethod
    def apply(self, knobs: Mapping[str, str]) -> dict[str, str]:
        """Make the running configuration the baseline overlaid with ``knobs``; return it."""

    @abstractmethod
    def run(self, workload: Mapping[str, Any]) -> RunResult:
        """Run one workload and return its PIs and unit readings."""

    @abstractmethod
    def reset(self, workload: Mapping[str, Any] | None = None) -> None:
        """Bring the system back to a clean state (fresh data) between trials."""

    @staticmethod
    @abstractmethod
    def workload_from_options(opts: argparse.Namespace) -> dict[str, Any]:
        """The workload parameters given on the command line."""

    @abstractmethod
    def stop(self) -> None:
        """Stop the system and remove what :meth:`start` created."""

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """Version and configuration of the system, as JSON-able data."""

    #: the faults :meth:`fault` can do (a study's ``[[fault]] action``); none by default
    faults: ClassVar[tuple[str, ...]] = ()

    def fault(self, action: str, opts: argparse.Namespace) -> dict[str, Any]:
        """Do fault ``action`` to this host's part of the system (a ``[[fault]]``'s step);
        return what was done."""
        raise TargetError(f"the {type(self).__name__} target has no faults to inject")

    def restore(self, opts: argparse.Namespace) -> dict[str, Any]:
        """Undo this host's faults (a ``[[fault]]``'s restore step); nothing when none."""
        raise TargetError(f"the {type(self).__name__} target has no faults to restore")


_KNOB_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")


def parse_knobs(items: Sequence[str] | None) -> dict[str, str]:
    """``["name=value", ...]`` to a dict; later entries win; a clear error for a bad one."""
    out: dict[str, str] = {}
    for item in items or ():
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not _KNOB_NAME.match(name):
            raise TargetError(
                f"--knob {item!r}: expected NAME=VALUE, e.g. --knob shared_buffers=256MB"
            )
        out[name] = value.strip()
    return out


def knob_value_problem(value: str) -> str | None:
    """Why ``value`` may not be a knob's value, or None when it may.

    A control character (newline, carriage return, NUL ...) could end the configuration
    line the value is written into and start another setting, and a word starting with
    ``--`` is read as another option when the value reaches a server's command line.

    >>> knob_value_problem("60 1000") is None, knob_value_problem("60 --port 1")
    (True, "its word '--port' starts with '--' (a command line reads it as another option)")
    """
    bad = next((c for c in value if ord(c) < 32 or ord(c) == 127), None)
    if bad is not None:
        return (
            f"it contains the control character {bad!r} (it could end the configuration "
            "line and start another setting)"
        )
    word = next((w for w in value.split() if w.startswith("--")), None)
    if word is not None:
        return f"its word {word!r} starts with '--' (a command line reads it as another option)"
    return None


@dataclass(frozen=True)
class KnobRules:
    """What a target accepts as a knob: a setting name of ``name``'s form (``names``
    says which, with examples), a value like ``value_example``, and no protected
    setting (``protected``: the names by why they are; ``prefixes``: the same for
    whole families of names); ``allowed`` lists a few that are."""

    server: str  # "a Redis setting", "a PostgreSQL parameter"
    name: re.Pattern[str]
    names: str
    value_example: str
    protected: Mapping[str, frozenset[str]]
    prefixes: Mapping[str, str]
    allowed: str

    def why_protected(self, name: str) -> str | None:
        """Why the setting ``name`` (in any case) may not be a knob, or None."""
        low = name.lower()
        why = next((why for why, names in self.protected.items() if low in names), None)
        return why or next((w for p, w in self.prefixes.items() if low.startswith(p)), None)

    def check(self, knobs: Mapping[str, str]) -> None:
        """Refuse a knob that could open the server up: a name that is no plain setting
        name, a value that could smuggle in another setting (:func:`knob_value_problem`),
        or a protected setting; :class:`TargetError` names the knob and what is allowed."""
        for k, v in knobs.items():
            if not self.name.fullmatch(k):
                raise TargetError(f"knob {k!r}: not {self.server} name; expected {self.names}")
            problem = knob_value_problem(v)
            if problem is not None:
                raise TargetError(
                    f"knob {k}={v!r}: refused, {problem}; expected a plain value on one "
                    f"line, e.g. {self.value_example}"
                )
            why = self.why_protected(k)
            if why is not None:
                raise TargetError(
                    f"knob {k}: refused, {why}: the target sets it itself, to keep the "
                    "server private (setup --tcp or --port make it listen on 127.0.0.1 as "
                    f"well); others are allowed, e.g. {self.allowed}"
                )


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that is free now (the kernel picks it: bind to port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def check_port_free(port: int, host: str = "127.0.0.1") -> None:
    """Raise :class:`TargetError` when ``port`` is taken on ``host`` (by a listener: a
    connection of a server stopped just before, in TIME-WAIT, does not keep its server
    from listening again, as servers set SO_REUSEADDR)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as exc:
            raise TargetError(
                f"port {port} on {host} is taken ({exc.strerror}): another server is "
                "listening there; leave out --port to let Assay pick a free port"
            ) from None


def missing_binary(program: str, package: str) -> TargetError:
    """The error for a program that is not installed, naming the package and the script."""
    return TargetError(
        f"{program} is not installed (Debian package {package}); install the target "
        "programs with: bash scripts/install-targets.sh (as root), or apt-get install "
        f"{package}"
    )


def pid_alive(pid: int) -> bool:
    """Whether a process with ``pid`` exists (and is not a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (``q`` in 0..100) of a non-empty sequence.

    >>> percentile([1.0, 2.0, 3.0, 4.0], 50)
    2.5
    """
    xs = sorted(values)
    if not xs:
        raise ValueError("percentile of no values")
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)
