"""The roles of a study that spans several machines: the study file's part.

``[cluster.roles]`` names groups of hosts (``client = ["10.0.0.7"]``, ``server =
["10.0.0.1", "10.0.0.2"]``); ``[benchmark.roles.<role>]`` gives a role its own
``setup``, ``reset``, ``teardown`` and ``command`` (run on every host of the role).
The measured command, ``[benchmark].command``, runs on the one host of the measured
role (``[cluster] measure``, default ``client``).  Every command may use the
placeholders ``{hosts.<role>}`` (the role's hosts, comma-separated), ``{host.name}``,
``{host.role}`` and ``{host.index}`` (the host's own, by its place in its role).

This module is pure validation and naming: :mod:`assay.execute.roles` runs the steps.

>>> sorted(cluster_placeholders({"client": ["a"], "server": ["b", "c"]}))
['host.index', 'host.name', 'host.role', 'hosts.client', 'hosts.server']
>>> host_values({"client": ["a"], "server": ["b", "c"]}, "server", 1)["hosts.server"]
'b,c'
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

#: A role's name: it is written in placeholders (``{hosts.server}``).
ROLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: The placeholders of the host a command runs on.
HOST_KEYS = ("host.name", "host.role", "host.index")
#: The measured role when ``[cluster] measure`` is not given.
DEFAULT_MEASURED = "client"


class RoleStepsSpec(BaseModel):
    """``[benchmark.roles.<role>]``: what runs on every host of one role.

    ``setup`` before the study, ``reset`` before every trial, ``teardown`` after the
    study (in reverse role order) and ``command`` during every trial, beside the
    measured command (its exit status is checked; it does not end the trial).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    setup: Annotated[list[str], Field(min_length=1)] | None = None
    reset: Annotated[list[str], Field(min_length=1)] | None = None
    teardown: Annotated[list[str], Field(min_length=1)] | None = None
    command: Annotated[list[str], Field(min_length=1)] | None = None
    # a [[fault]]'s steps on a host of the role: ``fault`` at its time in a trial,
    # ``restore`` after its duration (or once the trial ended); {fault.action} is its action
    fault: Annotated[list[str], Field(min_length=1)] | None = None
    restore: Annotated[list[str], Field(min_length=1)] | None = None
    # a regular expression the command prints (stdout) once it is ready: the measured
    # command starts only then (default: once the command has started)
    ready: str | None = None

    @field_validator("ready")
    @classmethod
    def _ready_pattern(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                re.compile(v)
            except re.error as exc:
                raise ValueError(f"{v!r} is not a regular expression: {exc}") from None
            if not v:
                raise ValueError("an empty pattern: leave ready out to start at once")
        return v

    @model_validator(mode="after")
    def _ready_needs_command(self) -> RoleStepsSpec:
        if self.ready is not None and self.command is None:
            raise ValueError("ready: the role has no command to print it")
        return self

    @model_validator(mode="after")
    def _fault_needs_restore(self) -> RoleStepsSpec:
        if (self.fault is None) != (self.restore is None):
            raise ValueError(
                "fault and restore: give both (a fault's restore runs before the next trial)"
            )
        return self

    @field_validator("setup", "reset", "teardown", "command", "fault", "restore")
    @classmethod
    def _no_empty_argv0(cls, v: list[str] | None) -> list[str] | None:
        if v is not None and not v[0].strip():
            raise ValueError("the first element (the program) must not be empty")
        return v

    def argvs(self) -> dict[str, list[str]]:
        """The role's steps that are given, by name."""
        steps = {"setup": self.setup, "reset": self.reset, "teardown": self.teardown}
        faults = {"fault": self.fault, "restore": self.restore}
        return {
            k: v for k, v in {**steps, "command": self.command, **faults}.items() if v is not None
        }


#: The placeholders a fault's ``fault`` and ``restore`` steps get besides the host's.
FAULT_KEYS = ("fault.action", "fault.at", "fault.duration")
#: A fault's action: one word, given to the role's steps as {fault.action}.
FAULT_ACTION = re.compile(r"[a-z][a-z0-9-]{0,31}")


def seconds(value: object, what: str) -> float:
    """A duration: a number of seconds, or a string such as ``"5s"``, ``"500ms"`` or
    ``"2m"``; ValueError naming ``what`` otherwise.

    >>> seconds("500ms", "at"), seconds(3, "at"), seconds("2m", "at")
    (0.5, 3.0, 120.0)
    """
    if isinstance(value, bool):
        raise ValueError(f'{what}: expected seconds, e.g. 5 or "5s", got {value!r}')
    if isinstance(value, int | float):
        return float(value)
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(ms|s|m)?\s*", str(value))
    if m is None:
        raise ValueError(f'{what}: expected seconds, e.g. 5, "5s", "500ms" or "2m", got {value!r}')
    return float(m[1]) * {"ms": 0.001, "s": 1.0, "m": 60.0, None: 1.0}[m[2]]


class FaultSpec(BaseModel):
    """``[[fault]]``: something done to a host of a role at a set time inside every
    trial (of ``variants``, when given), undone after ``duration`` (or when the trial
    ends): the role's ``fault`` step runs on that host ``at`` seconds after the measured
    command started, its ``restore`` step after ``duration``, both with
    ``{fault.action}``. ``host`` is the host's place in its role, or ``"all"``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    at: float
    role: str
    action: str
    host: int | str = 0
    duration: float | None = None
    variants: list[str] | None = None

    @field_validator("at", "duration", mode="before")
    @classmethod
    def _seconds(cls, v: object, info: Any) -> object:
        if v is None:
            return v
        got = seconds(v, info.field_name)
        if got < 0 or (info.field_name == "duration" and got == 0):
            raise ValueError(f"{info.field_name}: expected a positive time, got {v!r}")
        return got

    @field_validator("action")
    @classmethod
    def _word(cls, v: str) -> str:
        if not FAULT_ACTION.fullmatch(v):
            raise ValueError(
                f"expected one lowercase word such as kill, stop or link-down, got {v!r}"
            )
        return v

    @field_validator("host")
    @classmethod
    def _place(cls, v: int | str) -> int | str:
        if (
            isinstance(v, bool)
            or (isinstance(v, int) and v < 0)
            or (isinstance(v, str) and v != "all")
        ):
            raise ValueError(
                f'expected a host\'s place in its role (0, 1, ...) or "all", got {v!r}'
            )
        return v

    def values(self) -> dict[str, str]:
        """The values of :data:`FAULT_KEYS`."""
        return {
            "fault.action": self.action,
            "fault.at": f"{self.at:g}",
            "fault.duration": "" if self.duration is None else f"{self.duration:g}",
        }


def check_faults(
    faults: Sequence[FaultSpec],
    steps: Mapping[str, RoleStepsSpec],
    roles: Mapping[str, Sequence[str]] | None,
    measured: str | None,
    timeout: float,
    variants: Sequence[str],
) -> None:
    """``[[fault]]``: a role of ``[cluster.roles]`` other than the measured one, with
    ``fault`` and ``restore`` steps; a host it has; within the trial's timeout; variants
    the study has; one fault per host. ValueError naming the field."""
    taken: set[tuple[str, int]] = set()
    for i, f in enumerate(faults):
        where = f"fault[{i}]"
        if not roles:
            raise ValueError(f"{where}: a fault runs on a host of a role: add [cluster.roles]")
        if f.role not in roles:
            raise ValueError(f"{where}.role: expected one of {', '.join(roles)}, got {f.role!r}")
        if f.role == measured:
            raise ValueError(
                f"{where}.role: {f.role} is the measured role (its host runs the trial's "
                "command); a fault goes to another role's host"
            )
        if f.role not in steps or steps[f.role].fault is None:
            raise ValueError(
                f"{where}: the role {f.role} has no fault and restore steps: add them to "
                f"[benchmark.roles.{f.role}] (what the action does, and what undoes it)"
            )
        size = len(roles[f.role])
        places = range(size) if f.host == "all" else [int(f.host)]
        if f.host != "all" and int(f.host) >= size:
            raise ValueError(
                f"{where}.host: {f.role} has {size} host(s) (0 to {size - 1}), got {f.host}"
            )
        for place in places:
            if (f.role, place) in taken:
                raise ValueError(f"{where}: {f.role}[{place}] has a fault already (one per host)")
            taken.add((f.role, place))
        end = f.at + (f.duration or 0.0)
        if end >= timeout:
            raise ValueError(
                f"{where}: at {f.at:g} s + duration {f.duration or 0:g} s is not within the "
                f"trial's timeout ({timeout:g} s, [benchmark] timeout)"
            )
        unknown = sorted(set(f.variants or []) - set(variants))
        if unknown:
            raise ValueError(
                f"{where}.variants: {', '.join(unknown)} is no [[variant]] of the study "
                f"(variants: {', '.join(variants) or 'none'})"
            )


def check_roles(roles: Mapping[str, Sequence[str]], hosts: Sequence[str]) -> None:
    """``[cluster.roles]``: identifier names, non-empty host lists, a host in one role
    only, and (when ``hosts`` is given) the same hosts as ``[cluster] hosts``;
    ValueError naming the field and what was expected."""
    seen: dict[str, str] = {}
    for name, members in roles.items():
        if not ROLE_NAME.fullmatch(name):
            raise ValueError(
                f"roles.{name!r}: expected a role name of letters, digits and '_' "
                "(it is written in placeholders such as {hosts.server})"
            )
        if not members:
            raise ValueError(f"roles.{name}: expected a list of one host or more")
        for h in members:
            if h in seen:
                raise ValueError(
                    f"roles.{name}: host {h!r} is also in role {seen[h]!r}; expected each "
                    "host in one role (one Dask worker per host runs one role's commands)"
                )
            seen[h] = name
    if hosts and set(hosts) != set(seen):
        extra = sorted(set(hosts) - set(seen))
        missing = sorted(set(seen) - set(hosts))
        what = "; ".join(
            x
            for x in (
                f"in no role: {', '.join(extra)}" if extra else "",
                f"not in hosts: {', '.join(missing)}" if missing else "",
            )
            if x
        )
        raise ValueError(
            f"hosts: expected the hosts of [cluster.roles] (or leave hosts out): {what}"
        )


def role_hosts(roles: Mapping[str, Sequence[str]]) -> list[str]:
    """Every host of the roles, in role order: the cluster's hosts (worker ``i`` is host ``i``).

    >>> role_hosts({"server": ["b", "c"], "client": ["a"]})
    ['b', 'c', 'a']
    """
    return [h for members in roles.values() for h in members]


def group_roles(
    roles: Mapping[str, Sequence[str]], groups: int, index: int
) -> dict[str, list[str]]:
    """Group ``index`` of ``groups`` (``[cluster] groups``): every role's hosts cut into
    ``groups`` equal runs, in order, and this group's run of each.

    >>> group_roles({"client": ["a", "b"], "server": ["c", "d", "e", "f"]}, 2, 1)
    {'client': ['b'], 'server': ['e', 'f']}
    """
    out = {}
    for role, members in roles.items():
        size = len(members) // groups
        out[role] = list(members[index * size : (index + 1) * size])
    return out


def check_groups(roles: Mapping[str, Sequence[str]], groups: int) -> None:
    """``[cluster] groups``: every role's hosts divide into that many equal runs.

    >>> try:
    ...     check_groups({"client": ["a", "b"], "server": ["c", "d", "e"]}, 2)
    ... except ValueError as e:
    ...     print(str(e)[:58], "…", str(e)[-13:])
    groups = 2: role 'server' has 3 hosts, not a multiple of 2 … (list 2 or 4)
    """
    for role, members in roles.items():
        if len(members) % groups:
            below = len(members) // groups * groups
            fits = " or ".join(str(n) for n in (below, below + groups) if n > 0)
            raise ValueError(
                f"groups = {groups}: role {role!r} has {len(members)} hosts, not a multiple "
                f"of {groups}: each group of hosts takes an equal run of every role's hosts, "
                f"in order (list {fits})"
            )


def measured_role(roles: Mapping[str, Sequence[str]], measure: str | None) -> str:
    """The role whose hosts run ``[benchmark].command`` (each of them at once; their
    readings joined by ``[cluster] combine``); ValueError when there is none."""
    name = measure or DEFAULT_MEASURED
    if name not in roles:
        field = "measure" if measure else "measure (default 'client')"
        raise ValueError(
            f"{field}: expected one of the roles {', '.join(roles)}, got {name!r}: "
            "the role whose host runs [benchmark].command"
        )
    return name


def role_size(
    counts: Mapping[str, str | int], role: str, values: Mapping[str, object]
) -> int | None:
    """How many of ``role``'s hosts a trial of ``values`` takes by ``[cluster] counts``:
    a whole number, or the value of the parameter it names; None when it says nothing
    (no count, or a parameter without a value).

    >>> counts = {"replica": "n", "client": 2}
    >>> role_size(counts, "replica", {"n": 3}), role_size(counts, "client", {})
    (3, 2)
    """
    count = counts.get(role)
    if isinstance(count, int):
        return count
    if count is None or count not in values:
        return None
    return int(str(values[count]))


def active_roles(
    roles: Mapping[str, Sequence[str]],
    counts: Mapping[str, str | int],
    values: Mapping[str, object],
) -> dict[str, list[str]]:
    """The hosts of each role that take part in a trial of ``values``: a role sized by a
    parameter (``[cluster] counts``) its first that many, the others all of theirs.

    >>> active_roles({"client": ["a"], "replica": ["b", "c", "d"]}, {"replica": "n"}, {"n": 2})
    {'client': ['a'], 'replica': ['b', 'c']}
    """
    out = {r: list(h) for r, h in roles.items()}
    for role in counts:
        size = role_size(counts, role, values) if role in out else None
        if size is not None:
            out[role] = out[role][:size]
    return out


def trial_need(
    roles: Mapping[str, Sequence[str]],
    counts: Mapping[str, str | int],
    values: Mapping[str, object],
) -> Need:
    """``[cluster] pack``: how many hosts of each role a trial of ``values`` takes, in
    role order: its ``counts`` size, one host for a role without a count.

    >>> trial_need({"client": ["a", "b"], "replica": ["c", "d"]}, {"replica": "n"}, {"n": 2})
    (('client', 1), ('replica', 2))
    """
    return tuple(
        (r, size if (size := role_size(counts, r, values)) is not None else 1) for r in roles
    )


#: How many hosts of each role a trial takes, in role order (``[cluster] pack``).
Need = tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class HostGroup:
    """A group of hosts that runs a trial at a time: its share of each role, and the
    need of the trials it runs (``[cluster] pack``; None: any trial's, ``groups``)."""

    roles: dict[str, list[str]]
    need: Need | None = None

    def hosts(self) -> set[str]:
        return {h for members in self.roles.values() for h in members}


def packed_groups(
    roles: Mapping[str, Sequence[str]], need: Sequence[tuple[str, int]]
) -> list[dict[str, list[str]]]:
    """``[cluster] pack``: the groups of hosts that trials needing ``need`` can run on
    at once: group k takes the k-th run of ``n`` hosts of every role needing ``n``
    (none of a role needing 0), as many groups as the scarcest role allows.

    >>> packed_groups({"client": ["a", "b", "c"], "replica": ["d", "e", "f", "g"]},
    ...               [("client", 1), ("replica", 2)])
    [{'client': ['a'], 'replica': ['d', 'e']}, {'client': ['b'], 'replica': ['f', 'g']}]
    """
    sizes = dict(need)
    count = min((len(roles[r]) // n for r, n in sizes.items() if n > 0), default=0)
    return [
        {r: list(roles[r][k * n : (k + 1) * n]) for r, n in sizes.items()} for k in range(count)
    ]


def cluster_placeholders(roles: Mapping[str, Sequence[str]] | None) -> set[str]:
    """The placeholders a study with these roles gives every command."""
    if not roles:
        return set()
    return {*HOST_KEYS, *(f"hosts.{r}" for r in roles)}


def host_values(roles: Mapping[str, Sequence[str]], role: str, index: int) -> dict[str, str]:
    """The placeholder values of host ``index`` of ``role``."""
    out = {f"hosts.{r}": ",".join(members) for r, members in roles.items()}
    out.update({"host.name": roles[role][index], "host.role": role, "host.index": str(index)})
    return out


def check_role_steps(
    steps: Mapping[str, RoleStepsSpec],
    roles: Mapping[str, Sequence[str]] | None,
) -> list[tuple[str, list[str]]]:
    """``[benchmark.roles]``: every role named is a role of ``[cluster.roles]``; returns
    each step's field and argv, for the study file's placeholder check."""
    out: list[tuple[str, list[str]]] = []
    for role, spec in steps.items():
        if not roles or role not in roles:
            have = ", ".join(roles or {}) or "none: add [cluster.roles]"
            raise ValueError(
                f"benchmark.roles.{role}: not a role of [cluster.roles] (roles: {have})"
            )
        out.extend((f"benchmark.roles.{role}.{what}", argv) for what, argv in spec.argvs().items())
    return out
