"""The study file: a TOML description of a benchmark, validated with clear errors.

A study file names the command to measure (an argv list with ``{param}``
placeholders), how each performance index (PI) is read from a trial, and when
to stop. Later designs (compare, order, sweep, knobs) add sections to the same
file; unknown top-level sections are rejected so that typos are caught.

Example
-------
>>> spec = parse_spec_text('''
... [study]
... name = "hello"
... [benchmark]
... command = ["echo", "{word}"]
... [params]
... word = "hi"
... ''', source="inline.toml")
>>> spec.benchmark.command
['echo', '{word}']
>>> spec.pis[0].name
'wall_time'
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from assay.errors import SpecError as SpecError  # re-exported: assay.spec.SpecError
from assay.inputfile import is_kernel_path
from assay.knob_range import range_problem
from assay.rolespec import (
    FAULT_KEYS,
    FaultSpec,
    HostGroup,
    Need,
    RoleStepsSpec,
    check_faults,
    check_groups,
    check_role_steps,
    check_roles,
    cluster_placeholders,
    group_roles,
    measured_role,
    packed_groups,
    trial_need,
)
from assay.stats.claims import CLAIM_KINDS, ClaimRule
from assay.store import NAME_MAX
from assay.template import placeholders

if TYPE_CHECKING:
    from assay.designs.space import ParameterSpace


#: Longest timeout a study may ask for (s); a timer much longer overflows the clock.
MAX_TIMEOUT = 1e9


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


Scalar = str | int | float | bool


class UnitsSpec(_Model):
    """How unit readings (one value per unit of work) are read from a trial."""

    source: Literal["regex", "json", "file"]
    pattern: str | None = None
    path: str | None = None
    file: str | None = None

    @model_validator(mode="after")
    def _check_source_fields(self) -> UnitsSpec:
        _check_reader_fields(self.source, self.pattern, self.path, self.file)
        return self


class PISpec(_Model):
    """A performance index: a named, unit-carrying quantity read from every trial."""

    name: Annotated[str, Field(min_length=1, pattern=r"^[A-Za-z_][A-Za-z0-9_.-]*$")]
    unit: str = ""
    direction: Literal["lower", "higher"] = "lower"
    source: Literal["wall_time", "regex", "json", "file"] = "wall_time"
    pattern: str | None = None
    path: str | None = None
    file: str | None = None
    mean: Literal["arithmetic", "harmonic"] = "arithmetic"
    # "median": a distribution-free interval, for heavy tails (assay run)
    statistic: Literal["mean", "median"] = "mean"
    must_satisfy: bool = True
    units: UnitsSpec | None = None

    @model_validator(mode="after")
    def _check_source_fields(self) -> PISpec:
        if self.source != "wall_time":
            _check_reader_fields(self.source, self.pattern, self.path, self.file)
        if self.statistic == "median" and self.mean == "harmonic":
            raise ValueError(
                "mean = 'harmonic' applies to statistic = 'mean' only (the median of rates "
                "is already the rate of the median time)"
            )
        return self


def _check_reader_fields(
    source: str, pattern: str | None, path: str | None, file: str | None
) -> None:
    if source == "regex":
        if not pattern:
            raise ValueError("source = 'regex' needs a 'pattern' with one capturing group")
        _check_regex(pattern)
    elif source == "json" and not path:
        raise ValueError("source = 'json' needs a 'path' such as 'result.tps' or 'lat[0]'")
    elif source == "file":
        if not file:
            raise ValueError("source = 'file' needs a 'file' that the command writes")
        if is_kernel_path(file):
            raise ValueError(
                f"'file' = {file[:80]!r}: a file under /proc or /sys is the kernel's, not "
                "one the command writes (/proc/self/environ would copy Assay's environment "
                "into the store): name the file your benchmark writes"
            )
        if pattern:
            _check_regex(pattern)


def _check_regex(pattern: str) -> None:
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"'pattern' is not a valid regular expression: {exc}") from None
    except (OverflowError, RecursionError) as exc:  # x{99999999999}; thousands of groups
        what = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise ValueError(f"'pattern' is not a valid regular expression: {what}") from None
    if compiled.groups < 1:
        raise ValueError(
            "'pattern' needs one capturing group around the number, e.g. 'tps=([0-9.]+)'"
        )


class WorkSpec(_Model):
    """An adjustable work amount: enables Pilot's work-per-second (WPS) regression."""

    placeholder: Annotated[str, Field(min_length=1)] = "work"
    min: Annotated[int, Field(ge=1)]
    max: Annotated[int, Field(ge=1)]
    unit: str = "units"
    short_round: Annotated[float, Field(gt=0)] = 1.0

    @model_validator(mode="after")
    def _check_range(self) -> WorkSpec:
        if self.max <= self.min:
            raise ValueError(f"'max' ({self.max}) must be greater than 'min' ({self.min})")
        return self


class BenchmarkSpec(_Model):
    """The measured command and its surroundings."""

    command: Annotated[list[str], Field(min_length=1)]
    shell: bool = False
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    setup: list[str] | None = None
    reset: list[str] | None = None
    conclude: list[str] | None = None  # after every trial (hyperfine's --conclude)
    teardown: list[str] | None = None
    # at most ~31 years: a timer of 1e308 s is beyond what the platform's clock holds
    timeout: Annotated[float, Field(gt=0, le=MAX_TIMEOUT)] = 600.0
    ignore_failure: bool = False  # a non-zero exit status still counts as a measured trial
    work: WorkSpec | None = None
    git_repo: str | None = None
    # the command that builds the measured system at a revision (argv, run in a git
    # worktree of git_repo checked out at that commit, before its trials): used only by
    # ``assay history --run-commits``; a failed build is recorded for that commit
    build: list[str] | None = None
    # the component the benchmark means to stress (Pilot's component under test): the
    # bottleneck watch warns when any other passes 80% utilisation; none declared ->
    # it warns for every component above 80%
    under_test: Literal["cpu", "disk", "network", "memory"] | None = None
    # [benchmark.roles.<role>]: steps on every host of a [cluster.roles] role
    roles: dict[str, RoleStepsSpec] = Field(default_factory=dict)

    @field_validator("command", "setup", "reset", "conclude", "teardown", "build")
    @classmethod
    def _no_empty_argv0(cls, v: list[str] | None) -> list[str] | None:
        if v is not None and (not v or not v[0].strip()):
            raise ValueError("the first element (the program) must not be empty")
        return v

    @field_validator("env")
    @classmethod
    def _env_names(cls, v: dict[str, str]) -> dict[str, str]:
        return _check_env_names(v)

    @field_validator("cwd", "git_repo")
    @classmethod
    def _expandable(cls, v: str | None) -> str | None:
        if v is not None:
            expand_user(v)
        return v


class VariantSpec(_Model):
    """One variant of a comparison (``[[variant]]``): its own command, params or env.

    A variant without ``command`` runs ``[benchmark].command`` with its ``params``
    laid over ``[params]`` and its ``env`` laid over ``[benchmark].env``.
    """

    name: Annotated[str, Field(min_length=1)]
    command: Annotated[list[str], Field(min_length=1)] | None = None
    params: dict[str, Scalar] = Field(default_factory=dict)
    env: dict[str, str] = Field(default_factory=dict)

    @field_validator("command")
    @classmethod
    def _no_empty_argv0(cls, v: list[str] | None) -> list[str] | None:
        if v is not None and not v[0].strip():
            raise ValueError("the first element (the program) must not be empty")
        return v

    @field_validator("env")
    @classmethod
    def _env_names(cls, v: dict[str, str]) -> dict[str, str]:
        return _check_env_names(v)


class OrderTestSpec(VariantSpec):
    """One test of an ordering-trap experiment (``[[test]]``, ``assay order``): like a
    variant, its own command, params or env laid over ``[benchmark]`` and ``[params]``."""


class OrderSpec(_Model):
    """The ``[order]`` section: runs of each kind, repetitions, seed and the analysis."""

    runs: Annotated[int, Field(ge=1)] = 5  # runs of each kind (fixed and random)
    fixed_runs: Annotated[int, Field(ge=1)] | None = None  # default: runs
    random_runs: Annotated[int, Field(ge=1)] | None = None  # default: runs
    repetitions: Annotated[int, Field(ge=1)] = 3  # trials of each test per run
    seed: Annotated[int, Field(ge=0)] | None = None  # default: random, recorded in the store
    baseline: Literal["blocked", "cycled"] = "blocked"
    alpha: Annotated[float, Field(gt=0, lt=1)] = 0.05  # experiment-wide (Bonferroni)
    test: Literal["kruskal", "mann-whitney"] = "kruskal"
    drift: Literal["spearman", "kendall"] = "spearman"
    confidence: Annotated[float, Field(gt=0, lt=1)] = 0.95  # of the median CIs


class KnobSpec(_Model):
    """One knob of a knob pre-selection study (``[[knob]]``, ``assay knobs``).

    Numeric (``type = "int"`` or ``"float"``): ``min``, ``max``, optional ``log = true``;
    categorical: ``values``.  ``default`` is its value whenever it is not varied;
    ``unsafe = true`` marks a knob that trades safety for speed (``fsync``): tuners leave
    it at its default unless ``[knobs] allow_unsafe = true``.  The value is substituted
    into ``{name}`` placeholders like a ``[params]`` value.
    """

    name: Annotated[str, Field(min_length=1, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
    type: Literal["int", "float", "categorical"]
    min: float | None = None
    max: float | None = None
    log: bool = False
    values: list[Scalar] | None = None
    default: Scalar
    unit: str = ""
    unsafe: bool = False
    description: str = ""

    @model_validator(mode="after")
    def _check_range(self) -> KnobSpec:
        if self.type == "categorical":
            if self.min is not None or self.max is not None or self.log:
                raise ValueError("a categorical knob takes 'values', not 'min'/'max'/'log'")
            if not self.values or len(self.values) < 2:
                raise ValueError("a categorical knob needs 'values' with at least two entries")
            if len({repr(v) for v in self.values}) != len(self.values):
                raise ValueError(f"'values' must be distinct, got {self.values}")
            if self.default not in self.values or isinstance(self.default, bool) != any(
                isinstance(v, bool) and v == self.default for v in self.values
            ):
                raise ValueError(f"'default' {self.default!r} is not one of 'values' {self.values}")
            return self
        if self.values is not None:
            raise ValueError(f"a {self.type} knob takes 'min' and 'max', not 'values'")
        if self.min is None or self.max is None:
            raise ValueError(f"a {self.type} knob needs 'min' and 'max'")
        problem = range_problem(self.min, self.max, integer=self.type == "int", log=self.log)
        if problem is not None:
            raise ValueError(f"{self.name!r}: {problem}")  # the location names only knob[i]
        d = self.default
        if isinstance(d, bool) or not isinstance(d, int | float):
            raise ValueError(f"'default' must be a number for a {self.type} knob, got {d!r}")
        if not self.min <= d <= self.max:
            raise ValueError(
                f"'default' {d:g} is outside [min, max] = [{self.min:g}, {self.max:g}]"
            )
        if self.type == "int" and any(float(x) != int(x) for x in (self.min, self.max, d)):
            raise ValueError("an int knob needs whole numbers for 'min', 'max' and 'default'")
        return self


class ClusterSpec(_Model):
    """The ``[cluster]`` table: machines reached over SSH, one Dask worker each.

    The scheduler runs on ``scheduler`` (default: the first host); each host in
    ``hosts`` runs one single-threaded worker that offers ``bench=1``, so one trial
    runs per host at a time.  ``user``, ``port``, ``key`` (a private key file) and
    ``known_hosts`` are the SSH options (``known_hosts = "none"`` skips host-key checks:
    only for throw-away test hosts); ``remote_python`` is the Python, with Assay
    installed, that the hosts run.  ``[cluster.roles]`` groups the hosts into roles
    (see :mod:`assay.rolespec`; ``hosts`` then defaults to theirs); ``measure`` is the
    role that runs the measured command (on each of its hosts at once, their readings
    joined per PI by ``combine``: ``sum`` of throughputs, ``max`` of latencies),
    ``on_host_failure`` whether a trial that
    failed on one host (its step failed, its worker died) stops the study;
    ``idle_timeout`` how long the cluster outlives its driver (its heartbeat).
    """

    hosts: Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1)]
    roles: dict[str, list[str]] | None = None
    measure: str | None = None  # default: the role "client"
    on_host_failure: Literal["stop", "continue"] = "stop"
    # how the readings of a measured role's several hosts make the trial's, per PI
    combine: dict[str, Literal["sum", "mean", "max", "min"]] = Field(default_factory=dict)
    # a role's size as a parameter (or a whole number): the role's first {param} hosts
    # (of its group) take part in a trial
    counts: dict[str, str | int] = Field(default_factory=dict)
    # the roles' hosts cut into this many groups, each running trials of its own at once
    groups: Annotated[int, Field(ge=1)] = 1
    # each trial takes from every role the hosts its setting needs (its counts, one host
    # of a role without one): as many trials at once as the roles' hosts allow
    pack: bool = False
    scheduler: str | None = None
    user: str | None = None
    port: Annotated[int, Field(ge=1, le=65535)] = 22
    key: str | None = None
    known_hosts: str | None = None  # default: ~/.ssh/known_hosts; "none": not checked
    remote_python: str | None = None  # default: the hosts' python3
    require_identical: bool = False  # refuse hosts whose CPU, cores or memory differ
    # seconds the scheduler and workers outlive their driver (a killed `assay`): the
    # driver's heartbeat keeps them; without it the scheduler ends, and its workers
    idle_timeout: Annotated[float, Field(ge=2)] = 60.0

    @field_validator("hosts")
    @classmethod
    def _plain_hosts(cls, v: list[str]) -> list[str]:
        for h in v:
            if h.startswith("-") or any(c.isspace() or not c.isprintable() for c in h):
                raise ValueError(f"{h!r}: expected a host name or address")
        return v

    @model_validator(mode="before")
    @classmethod
    def _hosts_of_roles(cls, data: Any) -> Any:
        roles = data.get("roles") if isinstance(data, dict) else None
        if isinstance(roles, dict) and "hosts" not in data:
            members = [m for m in roles.values() if isinstance(m, list)]
            data = {**data, "hosts": [h for m in members for h in m]}
        return data

    @field_validator("counts", mode="before")
    @classmethod
    def _counts(cls, v: Any) -> Any:
        for role, count in v.items() if isinstance(v, dict) else ():
            plain = isinstance(count, str) or (type(count) is int and count >= 0)
            if not plain:
                raise ValueError(
                    f"{role} = {count!r}: expected a parameter's name or a whole number of hosts"
                )
        return v

    @model_validator(mode="after")
    def _check_roles(self) -> ClusterSpec:
        if self.pack and self.roles is None:
            raise ValueError(
                "pack: gives each trial the hosts of [cluster.roles] its setting needs; add "
                "the roles (without roles every host runs trials of its own)"
            )
        if self.pack and self.groups > 1:
            raise ValueError(
                f"groups = {self.groups} and pack = true: choose one (groups cuts the roles' "
                "hosts into equal fixed groups; pack forms each trial's group from its need)"
            )
        if self.roles is not None:
            check_roles(self.roles, self.hosts)
            measured_role(self.roles, self.measure)
            check_groups(self.roles, self.groups)
        elif self.measure is not None:
            raise ValueError("measure: names a role of [cluster.roles]; add the roles")
        elif self.groups > 1:
            raise ValueError(
                "groups: cuts the hosts of [cluster.roles] into groups that each run a "
                "trial; add the roles (without roles every host runs trials of its own)"
            )
        return self

    def group_roles(self) -> dict[str, list[str]]:
        """The roles of one group of hosts (all of them without ``groups``): what each
        trial has, and what counts and combine are checked against."""
        assert self.roles is not None
        return group_roles(self.roles, self.groups, 0)


class KnobsSpec(_Model):
    """The ``[knobs]`` section: how ``assay knobs`` samples, ranks and hands on the knobs."""

    samples: Annotated[int, Field(ge=10)] = 100  # Latin Hypercube samples of all knobs
    # top-k only; default max(10, samples / 4)
    validation_samples: Annotated[int, Field(ge=1)] | None = None
    trees: Annotated[int, Field(ge=1)] = 300  # random-forest trees (the paper's 300)
    top_k: Annotated[int, Field(ge=1)] = 5
    seed: Annotated[int, Field(ge=0)] = 0
    allow_unsafe: bool = False  # let the tuner change knobs marked unsafe
    rank_by: Literal["impurity", "permutation"] = "impurity"
    objective: str | None = None  # e.g. "max tps s.t. p99<=20"
    # how many times each setting a [[claim]] names is measured (its interval needs two)
    claim_repetitions: Annotated[int, Field(ge=2)] = 5

    @field_validator("objective")
    @classmethod
    def _parse_objective(cls, v: str | None) -> str | None:
        if v is not None:
            from assay.stats.objective import parse_objective

            parse_objective(v)
        return v


#: Samplers of ``[sweep] sampler`` (kept equal to assay.designs.samplers.SAMPLERS by a test).
SweepSampler = Literal["random", "balanced", "stratified", "distribution", "lhs", "grid"]


class SweepSpec(_Model):
    """The ``[sweep]`` section (``assay sweep``): a parameter space sampled incrementally.

    ``[sweep.params]`` gives each parameter's values (numbers, or strings/booleans for
    categories); they fill ``{name}`` placeholders like ``[params]``.  ``constraints``
    are conditions such as ``"locks < workers"`` (a safe expression language, see
    assay.designs.constraints).  ``start`` and ``step`` are the initial and added
    sampling rates (fractions of the valid settings); sampling stops when all ``splits``
    validation R² reach ``r2``, or when ``max_settings`` / ``max_time`` (s) is spent.
    """

    params: Annotated[dict[str, list[Scalar]], Field(min_length=1)]
    constraints: list[str] = Field(default_factory=list)
    repetitions: Annotated[int, Field(ge=1)] = 3
    sampler: SweepSampler = "random"
    start: Annotated[float, Field(gt=0, le=1)] = 0.05
    step: Annotated[float, Field(gt=0, le=1)] = 0.05
    r2: Annotated[float, Field(gt=0, le=1)] = 0.9
    # stop as soon as the noise between repetitions caps R² below r2 (even the upper
    # bound of the ceiling is lower): no model could reach it
    stop_at_ceiling: bool = True
    # "stop": on a busy machine (assay.studies.sweep.busy_machine) stop within the first
    # quarter of the settings with a provisional answer; "continue": measure on
    busy: Literal["stop", "continue"] = "stop"
    splits: Annotated[int, Field(ge=1)] = 10
    model: Literal["anova", "mlp", "linear"] = "anova"
    max_settings: Annotated[int, Field(ge=1)] | None = None
    max_time: Annotated[float, Field(gt=0)] | None = None
    seed: Annotated[int, Field(ge=0)] | None = None
    metric: str | None = None  # the PI analysed; default: the first [[pi]]
    # "log": fit the models to log(metric) (multiplicative effects; a departure from
    # the paper, measured in bench/RESULTS.md, issue #5)
    transform: Literal["none", "log"] = "none"

    @field_validator("params")
    @classmethod
    def _check_params(cls, v: dict[str, list[Scalar]]) -> dict[str, list[Scalar]]:
        from assay.designs.space import Parameter, SpaceError

        for name, values in v.items():
            try:
                Parameter(name, values)
            except SpaceError as exc:
                raise ValueError(f"{name}: {str(exc).split(': ', 1)[-1]}") from None
        return v

    def space(self) -> ParameterSpace:
        """The parameter space: the grid of ``params`` less the settings that break a
        constraint.  Constraint errors name the field (``sweep.constraints[1]``).

        >>> SweepSpec(params={"workers": [1, 2, 4], "locks": [1, 2]},
        ...           constraints=["locks < workers"]).space().size
        3
        """
        from assay.designs.space import Parameter, ParameterSpace

        params = [Parameter(name, values) for name, values in self.params.items()]
        where = [f"sweep.constraints[{i}]" for i in range(len(self.constraints))]
        return ParameterSpace(params, self.constraints, self.repetitions, constraint_where=where)


class StopSpec(_Model):
    """When a run-until-CI study (or a comparison) is done."""

    confidence: Annotated[float, Field(gt=0, lt=1)] = 0.95
    ci_width: Annotated[float, Field(gt=0, lt=10)] = 0.05
    max_rounds: Annotated[int, Field(ge=1)] = 1000
    max_time: Annotated[float, Field(gt=0)] = 600.0
    min_samples: Annotated[int, Field(ge=2)] = 10
    # rounds before any stop: variation between rounds (process start, layout, data
    # placement) shows only across rounds (Kalibera & Jones; pyperf runs 20 processes)
    min_rounds: Annotated[int, Field(ge=1)] = 10
    # readings only: the first N rounds are warm-up, or "auto": as many as MSER finds
    # (assay.stats.warmup; no coverage lost on stationary readings, bench/RESULTS.md)
    warmup_rounds: int | Literal["auto"] = "auto"
    max_autocorrelation: Annotated[float, Field(gt=0, lt=1)] = 0.1
    warmup_removal: Literal["edm", "edm-pilot", "none"] = "edm"
    residual_correction: bool = True
    confirm_rounds: Annotated[int, Field(ge=1)] = 2
    max_failures: Annotated[float, Field(gt=0, le=1)] = 0.5
    # other processes on the CPU: "warn" reports them (the interference line); "wait"
    # also holds each trial until they have left; "repeat" also measures a trial they
    # disturbed again, the disturbed one kept aside (assay.execute.interference)
    interference: Literal["warn", "wait", "repeat"] = "warn"
    # comparisons (assay compare): Welch's threshold, and Pilot's optional third
    # condition (every variant's CI within ci_width as well as the ranking decided)
    alpha: Annotated[float, Field(gt=0, lt=1)] = 0.01
    require_ci_width: bool = False
    # how a comparison may stop after any cycle and keep alpha (assay.designs.compare):
    # always-valid e-values, the geometric looks before issue #17, or Pilot's rule
    sequential: Literal["always-valid", "looks", "every-cycle"] = "always-valid"
    # a regression gate for CI (assay compare): exit 1 when a variant is worse than
    # the baseline (default: the first variant) by more than this share, with confidence
    fail_if_worse: Annotated[float, Field(gt=0, le=1)] | None = None
    baseline: str | None = None
    # what a comparison stops on: its ranking decided, or every [[claim]] decided
    # (holds or fails on its always-valid interval; the ranking may stay undecided)
    until: Literal["ranking", "claims"] = "ranking"

    @field_validator("warmup_rounds", mode="before")
    @classmethod
    def _rounds_or_auto(cls, v: Any) -> Any:
        if v == "auto" or (isinstance(v, int) and not isinstance(v, bool) and v >= 0):
            return v
        raise ValueError('expected a number of rounds (0 or more) or "auto"')


class ClaimSpec(_Model):
    """A claim the study checks (``[[claim]]``, issue #62): the ratio of two variants'
    means (a comparison) or of two settings' means named by their values (a sweep:
    ``{ replicas = 2, appendfsync = "always" }``) on a PI, and the region the claim says
    it lies in (exactly one of ``at_least``, ``at_most``, ``within``); judged by
    :mod:`assay.stats.claims`."""

    says: Annotated[str, Field(min_length=1)]
    pi: str | None = None  # default: the study's deciding PI (the first)
    ratio: Annotated[list[str | dict[str, Scalar]], Field(min_length=2, max_length=2)]
    at_least: Annotated[float, Field(gt=0)] | None = None
    at_most: Annotated[float, Field(gt=0)] | None = None
    within: float | None = None  # a share: 0.1 or "10%"

    @field_validator("ratio", mode="before")
    @classmethod
    def _two_names(cls, v: Any) -> Any:
        if not isinstance(v, list) or len(v) != 2:
            raise ValueError(
                'expected two variant names, ratio = ["numerator", "denominator"], or two '
                "settings of a sweep, ratio = [{ p = 2 }, { p = 1 }]"
            )
        return v

    def labels(self) -> tuple[str, str]:
        """The numerator's and the denominator's names: a variant's, or a setting's
        values (``replicas=2, appendfsync=always``)."""

        def label(x: str | dict[str, Scalar]) -> str:
            return x if isinstance(x, str) else ", ".join(f"{k}={v}" for k, v in x.items())

        return label(self.ratio[0]), label(self.ratio[1])

    @field_validator("within", mode="before")
    @classmethod
    def _share(cls, v: Any) -> Any:
        if isinstance(v, bool):
            raise ValueError('expected a share such as "10%" or 0.1')
        if isinstance(v, str):
            text = v.strip()
            try:
                v = float(text[:-1]) / 100 if text.endswith("%") else float(text)
            except ValueError:
                raise ValueError(f'{text!r}: expected a share such as "10%" or 0.1') from None
        if isinstance(v, (int, float)) and not 0 < v < 1:
            raise ValueError(f'{v!r}: expected a margin above 0% and below 100% ("10%" or 0.1)')
        return v

    @model_validator(mode="after")
    def _one_region(self) -> ClaimSpec:
        given = [k for k in CLAIM_KINDS if getattr(self, k) is not None]
        if len(given) != 1:
            got = f"got {', '.join(given)}" if given else "got none"
            raise ValueError(f"give exactly one of at_least, at_most, within ({got})")
        return self

    @property
    def rule(self) -> ClaimRule:
        """The region as :class:`~assay.stats.claims.ClaimRule`."""
        kind = next(k for k in CLAIM_KINDS if getattr(self, k) is not None)
        return ClaimRule(kind, float(getattr(self, kind)))


class StudyMeta(_Model):
    name: Annotated[str, Field(min_length=1)]
    description: str = ""
    store: str | None = None

    @field_validator("store")
    @classmethod
    def _store_file(cls, v: str | None) -> str | None:
        if not v:
            return v
        name = Path(expand_user(v)).name
        if v.endswith(("/", os.sep)) or name in ("", ".", ".."):
            raise ValueError("expected the path of a file for the results store, not a folder")
        size = len(os.fsencode(name))
        if size > NAME_MAX:
            raise ValueError(
                f"the file name is {size} bytes long, more than the {NAME_MAX} a file name may have"
            )
        return v


class Spec(_Model):
    """A validated study file."""

    study: StudyMeta
    benchmark: BenchmarkSpec
    params: dict[str, Scalar] = Field(default_factory=dict)
    pis: Annotated[list[PISpec], Field(alias="pi")] = Field(
        default_factory=lambda: [PISpec(name="wall_time", unit="s")]
    )
    stop: StopSpec = Field(default_factory=StopSpec)
    variants: Annotated[list[VariantSpec], Field(alias="variant")] = Field(default_factory=list)
    claims: Annotated[list[ClaimSpec], Field(alias="claim")] = Field(default_factory=list)
    faults: Annotated[list[FaultSpec], Field(alias="fault")] = Field(default_factory=list)
    tests: Annotated[list[OrderTestSpec], Field(alias="test")] = Field(default_factory=list)
    order: OrderSpec | None = None
    knob_specs: Annotated[list[KnobSpec], Field(alias="knob")] = Field(default_factory=list)
    knobs_options: Annotated[KnobsSpec | None, Field(alias="knobs")] = None
    sweep: SweepSpec | None = None
    cluster: ClusterSpec | None = None  # where trials run; not part of what they measure
    source_path: str | None = Field(default=None, exclude=True)

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @model_validator(mode="after")
    def _check_consistency(self) -> Spec:
        names = [p.name for p in self.pis]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"pi: PI names must be unique; repeated: {', '.join(dupes)}")
        if not self.pis:
            raise ValueError("pi: at least one [[pi]] is needed")
        if self.claims and not self.variants and self.sweep is None and not self.knob_specs:
            raise ValueError(
                "claim: a claim compares two [[variant]]s of a comparison (assay compare) or "
                "two settings of a sweep (assay sweep) or of a knob study (assay knobs)"
            )
        roles = self.cluster.roles if self.cluster else None
        self._check_pack()
        self._check_counts()
        self._check_combine()  # (after the counts: it asks a trial's hosts)
        known = set(self.params) | cluster_placeholders(roles)
        for where, argv in check_role_steps(self.benchmark.roles, roles):
            # rendered with each trial's setting and the hosts: a role is set up again
            # when a value its steps use changes (#42); a fault's also with its own
            faulty = set(FAULT_KEYS) if where.endswith((".fault", ".restore")) else set()
            _check_placeholders(where, argv, known | self.per_trial_names() | faulty)
        if self.faults:
            assert self.cluster is not None or not roles
            check_faults(
                self.faults, self.benchmark.roles, roles,
                measured_role(roles, self.cluster.measure) if roles and self.cluster else None,
                self.benchmark.timeout, [v.name for v in self.variants],
            )  # fmt: skip
        if self.benchmark.conclude and roles:
            raise ValueError(
                "benchmark.conclude: not with [cluster.roles]; end what a trial started in "
                "the next trial's [benchmark.roles.<role>] reset"
            )
        for step in ("setup", "reset", "conclude", "teardown"):
            # rendered with [params] alone, once per study (a KeyError when it started)
            _check_placeholders(f"benchmark.{step}", getattr(self.benchmark, step) or [], known)
        if self.benchmark.work is not None:
            known.add(self.benchmark.work.placeholder)
            if self.benchmark.work.placeholder in self.params:
                raise ValueError(
                    f"benchmark.work.placeholder: '{self.benchmark.work.placeholder}' is both "
                    "a parameter and the work "
                    "placeholder; rename one"
                )
        if self.sweep is not None:
            self._check_sweep(known)
            known |= set(self.sweep.params)
        self._check_claims()
        if self.knob_specs or self.knobs_options is not None:
            self._check_knobs(known)
            return self
        if self.tests or self.order is not None:
            self._check_tests(known)
            return self
        if not self.variants:
            templated = list(self.benchmark.command) + list(self.benchmark.env.values())
            _check_placeholders("benchmark", templated, known)
            return self
        self._check_variants(known)
        return self

    def _check_sweep(self, known: set[str]) -> None:
        from assay.designs.constraints import ConstraintError
        from assay.designs.space import SpaceError

        assert self.sweep is not None
        both = sorted(set(self.sweep.params) & known)
        if both:
            raise ValueError(
                f"sweep.params: {', '.join(both)} is also in [params] (or the work "
                "placeholder); a parameter is either fixed or swept, not both"
            )
        clash = sorted(set(self.sweep.params) & {p.name for p in self.pis})
        if clash:  # the analysis's table holds both as columns (a name twice crashed it)
            raise ValueError(
                f"sweep.params: {', '.join(clash)} is also a [[pi]] name; rename one "
                "(the parameter's values and the PI's readings are columns of one table)"
            )
        metric = self.sweep.metric
        if metric is not None and metric not in {p.name for p in self.pis}:
            known_pis = ", ".join(p.name for p in self.pis)
            raise ValueError(f"sweep.metric: {metric!r} is not a [[pi]] (known: {known_pis})")
        try:
            space = self.sweep.space()
        except ConstraintError as exc:
            raise ValueError(str(exc)) from None
        except RecursionError:
            raise ValueError("sweep.constraints: an expression nested too deeply") from None
        try:
            space.check_enumerable()  # before a sweep tries: 24 two-valued params were 6.4 GB
        except SpaceError as exc:
            raise ValueError(f"sweep.params: {exc}") from None

    def _check_combine(self) -> None:
        """``[cluster] combine``: a rule for every PI when the measured role has several
        hosts (a YCSB-style study sums its clients' throughputs), for PIs only."""
        cluster = self.cluster
        if cluster is None:
            return
        names = [p.name for p in self.pis]
        for name in cluster.combine:
            if name not in names:
                raise ValueError(
                    f"cluster.combine.{name}: not a [[pi]] of this study (PIs: {', '.join(names)})"
                )
        if cluster.roles is None:
            if cluster.combine:
                raise ValueError(
                    "cluster.combine: joins a measured role's hosts; add [cluster.roles]"
                )
            return
        role = measured_role(cluster.roles, cluster.measure)
        hosts = max(len(g.roles[role]) for g in self.host_groups())  # a trial's: one group's
        if hosts < 2:
            return
        missing = [n for n in names if n not in cluster.combine]
        if missing:
            raise ValueError(
                f"cluster.combine: the measured role {role!r} has {hosts} hosts, each running "
                f"[benchmark].command at once; say how their readings make the trial's for "
                f'{", ".join(missing)}: combine = {{ {missing[0]} = "sum" }} (or "mean", '
                '"max", "min": sum throughputs, take the max of latencies)'
            )
        units = [p.name for p in self.pis if p.units is not None]
        if units:
            raise ValueError(
                f"pi {units[0]!r}: unit readings are not joined across the measured role's "
                f"{hosts} hosts; read one value per trial, or measure on one host"
            )

    def _check_pack(self) -> None:
        """``[cluster] pack``: a trial's group of hosts changes with its setting, so the
        measured hosts' own setup and teardown go with their role, not with the study."""
        cluster = self.cluster
        if cluster is None or not cluster.pack:
            return
        steps = [w for w in ("setup", "teardown") if getattr(self.benchmark, w)]
        if steps:
            raise ValueError(
                f"benchmark.{steps[0]}: with [cluster] pack = true a trial's group of hosts "
                "is formed for its setting, set up and torn down with it; put the measured "
                f"hosts' {steps[0]} in [benchmark.roles.{cluster.measure or 'client'}]"
            )

    def _check_counts(self) -> None:
        """``[cluster] counts``: a role's size from a parameter, each of whose values
        (``[params]``, swept, a variant's) is a whole number of the role's hosts."""
        cluster = self.cluster
        if cluster is None or not cluster.counts:
            return
        if cluster.roles is None:
            raise ValueError("cluster.counts: sizes roles of [cluster.roles]; add the roles")
        measured = measured_role(cluster.roles, cluster.measure)
        for role, param in cluster.counts.items():
            where = f"cluster.counts.{role}"
            if role not in cluster.roles:
                raise ValueError(
                    f"{where}: not a role of [cluster.roles] ({', '.join(cluster.roles)})"
                )
            if isinstance(param, int):
                values: list[Scalar] = [param]
            elif param in {k.name for k in self.knob_specs}:
                raise ValueError(
                    f"{where}: {param!r} is a knob; a role's size is swept or set by a variant"
                )
            else:
                values = self.count_values(param)
            if not values:
                raise ValueError(
                    f"{where}: {param!r} has no value: give it one in [params] or sweep it "
                    "in [sweep.params]"
                )
            # a trial's: one group's, or under pack the whole role's
            members = cluster.roles[role] if cluster.pack else cluster.group_roles()[role]
            pool = len(members)
            low = 1 if role == measured else 0
            group = f" in group 0 of {cluster.groups}" if cluster.groups > 1 else ""
            name = f"{param} = " if isinstance(param, str) else ""
            for v in values:
                if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= pool:
                    raise ValueError(
                        f"{where}: {name}{v!r}: expected a whole number of hosts from "
                        f"{low} to {pool} (the role's hosts{group}: {', '.join(members)}); "
                        "list more hosts in the role to measure more"
                    )

    def host_groups(self) -> list[HostGroup]:
        r"""The groups of hosts trials run on, each one trial at a time, the groups at
        once where their hosts do not overlap: ``[cluster] groups`` equal runs of every
        role's hosts, or under ``pack`` for each need a trial can have (its ``counts``)
        as many groups of that need as the roles' hosts allow; one group of every host
        otherwise, none without ``[cluster.roles]``.

        >>> spec = parse_spec_text(
        ...     "[study]\nname='s'\n[benchmark]\ncommand=['x']\n[[pi]]\nname='time'\n"
        ...     "[sweep.params]\nn=[0, 2]\n[cluster]\npack=true\ncounts={replica='n'}\n"
        ...     "[cluster.roles]\nclient=['a','b']\nreplica=['c','d']", "s.toml")
        >>> [sorted(g.hosts()) for g in spec.host_groups()]
        [['a'], ['b'], ['a', 'c', 'd']]
        """
        cluster = self.cluster
        if cluster is None or cluster.roles is None:
            return []
        if not cluster.pack:
            return [
                HostGroup(group_roles(cluster.roles, cluster.groups, g))
                for g in range(cluster.groups)
            ]
        return [
            HostGroup(roles, need)
            for need in self.trial_needs()
            for roles in packed_groups(cluster.roles, need)
        ]

    def trial_needs(self) -> list[Need]:
        """``[cluster] pack``: every need (hosts per role) a trial of the study can have."""
        import itertools

        cluster = self.cluster
        assert cluster is not None and cluster.roles is not None
        params = sorted({c for c in cluster.counts.values() if isinstance(c, str)})
        choices = [sorted({str(v) for v in self.count_values(p)}) for p in params]
        return sorted(
            {
                trial_need(cluster.roles, cluster.counts, dict(zip(params, combo, strict=True)))
                for combo in itertools.product(*choices)
            }
        )

    def count_values(self, param: str) -> list[Scalar]:
        """Every value ``param`` takes in the study's trials: [params]', swept, variants'."""
        out: list[Scalar] = []
        if self.sweep is not None and param in self.sweep.params:
            out += self.sweep.params[param]
        elif param in self.params:
            out.append(self.params[param])
        for entry in [*self.variants, *self.tests]:
            if param in entry.params:
                out.append(entry.params[param])
        return out

    def per_trial_names(self) -> set[str]:
        """The parameters whose value a trial's setting gives: swept, knobs, variants'
        and tests' (a test's is refused in a role step by :meth:`_refuse_once_only`).

        >>> spec = parse_spec_text(
        ...     "[study]\\nname='s'\\n[benchmark]\\ncommand=['sleep','{t}']\\n"
        ...     "[sweep.params]\\nt=[0.1, 0.2]\\n[[pi]]\\nname='time'", "s.toml")
        >>> sorted(spec.per_trial_names())
        ['t']
        """
        out = set(self.sweep.params) if self.sweep is not None else set()
        out |= {k.name for k in self.knob_specs}
        for entry in [*self.variants, *self.tests]:
            out |= set(entry.params)
        return out

    def _role_step_names(self) -> dict[str, str]:
        """Each placeholder of the [benchmark.roles] steps (host and fault placeholders
        aside), with the first step that uses it."""
        roles = self.cluster.roles if self.cluster else None
        host = cluster_placeholders(roles) | set(FAULT_KEYS)
        out: dict[str, str] = {}
        for where, argv in check_role_steps(self.benchmark.roles, roles):
            step = f"[{where.rsplit('.', 1)[0]}] {where.rsplit('.', 1)[1]}"
            for part in argv:
                for name in placeholders(part):
                    if name not in host:
                        out.setdefault(name, step)
        return out

    def _check_claims(self) -> None:
        """Every claim names a PI of the study and two of its variants (a comparison) or
        two settings of its space (a sweep: a value of every swept parameter)."""
        if self.stop.until == "claims" and (not self.claims or not self.variants):
            raise ValueError(
                'stop.until: "claims" stops a comparison when every [[claim]] is decided; '
                + (
                    "this study has none: add a [[claim]]"
                    if not self.claims
                    else "a sweep or knob study's claims are judged at its end"
                )
                + ', or leave until = "ranking"'
            )
        pis = [p.name for p in self.pis]
        names = [v.name for v in self.variants]
        for i, c in enumerate(self.claims):
            where = f"claim[{i}] ({c.says!r})"
            if c.pi is not None and c.pi not in pis:
                raise ValueError(f"{where}.pi: {c.pi!r} is not a [[pi]] (known: {', '.join(pis)})")
            for side in c.ratio:
                if self.variants:
                    if not isinstance(side, str) or side not in names:
                        raise ValueError(
                            f"{where}.ratio: {side!r} is not a variant (the variants: "
                            f"{', '.join(names)})"
                        )
                elif self.sweep is not None:
                    self._check_claimed_setting(where, side)
                else:
                    self._check_claimed_knobs(where, side)
            if c.ratio[0] == c.ratio[1]:
                raise ValueError(f"{where}.ratio: a side against itself; name two")

    def _check_claimed_knobs(self, where: str, side: str | dict[str, Scalar]) -> None:
        """A knob study's claimed setting: some of its knobs, each at a value it may
        take (the others stay at their defaults)."""
        knobs = {k.name: k for k in self.knob_specs}
        first = self.knob_specs[0]
        if not isinstance(side, dict) or not side:
            raise ValueError(
                f"{where}.ratio: {side!r}: a knob study's claim names settings by knob values "
                f"(the other knobs at their defaults), e.g. {{ {first.name} = {first.default!r} }}"
            )
        for name, v in side.items():
            k = knobs.get(name)
            if k is None:
                raise ValueError(
                    f"{where}.ratio: {name!r} is not a [[knob]] (the knobs: {', '.join(knobs)})"
                )
            if k.type == "categorical":
                values = k.values or []
                if not any(v == x and isinstance(v, bool) == isinstance(x, bool) for x in values):
                    raise ValueError(f"{where}.ratio: {name} = {v!r} is not one of {values!r}")
                continue
            assert k.min is not None and k.max is not None
            number = isinstance(v, int | float) and not isinstance(v, bool)
            if not number or not k.min <= float(v) <= k.max:
                raise ValueError(
                    f"{where}.ratio: {name} = {v!r}: expected a number in [{k.min:g}, {k.max:g}]"
                )
            if k.type == "int" and float(v) != int(v):
                raise ValueError(f"{where}.ratio: {name} = {v!r}: an int knob takes whole numbers")

    def _check_claimed_setting(self, where: str, side: str | dict[str, Scalar]) -> None:
        """A sweep's claimed setting: every swept parameter, each at one of its values,
        inside the constraints."""
        assert self.sweep is not None
        swept = self.sweep.params
        example = ", ".join(f"{k} = {v[0]!r}" for k, v in swept.items())
        if not isinstance(side, dict):
            raise ValueError(
                f"{where}.ratio: {side!r}: a sweep's claim names settings by their values, "
                f"e.g. {{ {example} }}"
            )
        missing = [k for k in swept if k not in side]
        extra = [k for k in side if k not in swept]
        if missing or extra:
            raise ValueError(
                f"{where}.ratio: {side!r}: give a value of every swept parameter and no other "
                f"({', '.join(swept)}; "
                + (f"missing {', '.join(missing)}" if missing else f"not swept: {', '.join(extra)}")
                + ")"
            )
        for k, v in side.items():
            if v not in swept[k]:
                raise ValueError(
                    f"{where}.ratio: {k} = {v!r} is not one of its values {swept[k]!r}"
                )
        if not self.sweep.space().allows(side):
            raise ValueError(f"{where}.ratio: {side!r} breaks sweep.constraints")

    def _check_variants(self, known: set[str]) -> None:
        if len(self.variants) < 2:
            raise ValueError("variant: a comparison needs at least two [[variant]] entries")
        vnames = [v.name for v in self.variants]
        dupes = sorted({n for n in vnames if vnames.count(n) > 1})
        if dupes:
            raise ValueError(f"variant: names must be unique; repeated: {', '.join(dupes)}")
        if self.benchmark.work is not None:
            raise ValueError(
                "variant: comparisons do not support [benchmark.work] (adjustable work) yet"
            )
        reserved = sorted(set(self.params) & set(RESERVED_SETTING_KEYS))
        if reserved:
            raise ValueError(
                f"params: {', '.join(reserved)} is reserved in a comparison (it names the "
                "variant and cycle of each trial); rename the parameter"
            )
        for i, v in enumerate(self.variants):
            where = f"variant[{i}] ({v.name!r})"
            argv = v.command if v.command is not None else self.benchmark.command
            env = {**self.benchmark.env, **v.env}
            templated = list(argv) + list(env.values())
            used = {n for part in templated for n in placeholders(part)}
            used |= set(self._role_step_names())  # a variant's value reaches role steps
            for key in v.params:
                if key not in self.params and key not in used:
                    raise ValueError(
                        f"{where}.params.{key}: not a parameter of [params] and not used by "
                        "the variant's command, env or role steps (check the spelling)"
                    )
            _check_placeholders(where, templated, known | set(v.params))
            for name, step in self._role_step_names().items():
                if name not in known and name not in v.params:
                    raise ValueError(
                        f"{where}: {step} uses '{{{name}}}', which has no value in this "
                        "variant: give it one in its params, or in [params]"
                    )
            self._refuse_once_only(where, v.params, roles=False)

    def _once_steps(self, roles: bool) -> dict[str, str]:
        """Each placeholder of the steps rendered once per study with [params] alone
        ([benchmark] setup, reset, conclude, teardown; with ``roles``, the
        [benchmark.roles] steps too), with the first step that uses it."""
        out: dict[str, str] = {}
        for step in ("setup", "reset", "conclude", "teardown"):
            for part in getattr(self.benchmark, step) or []:
                for name in placeholders(part):
                    out.setdefault(name, f"[benchmark] {step}")
        return {**self._role_step_names(), **out} if roles else out

    def _refuse_once_only(self, where: str, values: Mapping[str, Any], *, roles: bool) -> None:
        """A variant's (or test's) value of a parameter that a once-per-study step uses
        would be dropped: the step runs with [params] for every trial (#42: a server's
        io_threads = 4 variant ran with io-threads 1, and the report ranked it best).
        A variant's value reaches the role steps (the role is set up again for it); a
        test's does not (an order experiment's trials must not reconfigure between
        them: the carry-over it looks for would be the reconfiguration's)."""
        once = self._once_steps(roles)
        for key in values:
            if key in once:
                raise ValueError(
                    f"{where}.params.{key}: {once[key]} uses '{{{key}}}', and it runs once per "
                    f"study with [params] (here {key} = {self.params.get(key)!r}), so every "
                    "trial would run with that value, not this one; compare such settings "
                    "as separate studies, or move the setting into the measured command"
                )

    def _check_knobs(self, known: set[str]) -> None:
        if not self.knob_specs:
            raise ValueError("knobs: a knob study ([knobs], assay knobs) needs [[knob]] entries")
        if self.variants or self.tests:
            raise ValueError("knob: a study has [[knob]]s or [[variant]]s/[[test]]s, not both")
        names = [k.name for k in self.knob_specs]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"knob: names must be unique; repeated: {', '.join(dupes)}")
        clash = sorted(set(names) & {p.name for p in self.pis})
        if clash:
            raise ValueError(f"knob: {', '.join(clash)} is also a [[pi]] name; rename one")
        b = self.benchmark
        templated = list(b.command) + list(b.env.values())
        _check_placeholders("benchmark", templated, known | set(names))
        used = {
            n for part in templated + (b.setup or []) + (b.reset or []) for n in placeholders(part)
        } | set(self._role_step_names())  # a server's knob: its role is set up again
        for i, k in enumerate(self.knob_specs):
            where = f"knob[{i}] ({k.name!r})"
            if k.name in known:
                raise ValueError(
                    f"{where}: also in [params] (or the work placeholder); a knob's value "
                    "comes from its sample, its default from 'default': remove one"
                )
            if k.name not in used:
                raise ValueError(
                    f"{where}: no '{{{k.name}}}' placeholder in [benchmark] command, env, "
                    "setup or reset uses it, so every sample would measure the same system"
                )
        objective = self.knobs_config.objective
        if objective is not None:
            from assay.stats.objective import parse_objective

            pis = [p.name for p in self.pis]
            for name in parse_objective(objective).pis:
                if name not in pis:
                    raise ValueError(
                        f"knobs.objective: {name!r} is not a [[pi]] of this study "
                        f"(PIs: {', '.join(pis)})"
                    )

    def pi_named(self, name: str | None) -> PISpec:
        """The PI called ``name`` (the first when ``None``); ValueError naming the PIs."""
        names = [p.name for p in self.pis]
        if name is not None and name not in names:
            raise ValueError(f"unknown PI {name!r}; the study's PIs: {', '.join(names)}")
        return next(p for p in self.pis if p.name == (name or names[0]))

    @property
    def knobs_config(self) -> KnobsSpec:
        """The ``[knobs]`` section, defaults filled in."""
        return self.knobs_options if self.knobs_options is not None else KnobsSpec()

    def _check_tests(self, known: set[str]) -> None:
        if len(self.tests) < 2:
            raise ValueError(
                "test: an order experiment ([order], assay order) needs at least two [[test]] "
                "entries"
            )
        if self.variants:
            raise ValueError("variant: a study has either [[variant]]s or [[test]]s, not both")
        names = [t.name for t in self.tests]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"test: names must be unique; repeated: {', '.join(dupes)}")
        if self.benchmark.work is not None:
            raise ValueError("test: order experiments do not support [benchmark.work] yet")
        reserved = sorted(set(self.params) & set(ORDER_SETTING_KEYS))
        if reserved:
            raise ValueError(
                f"params: {', '.join(reserved)} is reserved in an order experiment (it names "
                "the test and order of each trial); rename the parameter"
            )
        for i, t in enumerate(self.tests):
            where = f"test[{i}] ({t.name!r})"
            argv = t.command if t.command is not None else self.benchmark.command
            templated = list(argv) + list({**self.benchmark.env, **t.env}.values())
            used = {n for part in templated for n in placeholders(part)}
            for key in t.params:
                if key not in self.params and key not in used:
                    raise ValueError(
                        f"{where}.params.{key}: not a parameter of [params] and not used by "
                        "the test's command or env (check the spelling)"
                    )
            _check_placeholders(where, templated, known | set(t.params))
            self._refuse_once_only(where, t.params, roles=True)

    def variant_params(self, variant: VariantSpec) -> dict[str, Scalar]:
        """The parameter values of one variant: its params laid over [params]."""
        return {**self.params, **variant.params}

    def measurement_hash(self) -> str:
        """Hash of everything that changes what a trial measures (not the stopping rule)."""
        payload: dict[str, Any] = {
            # under_test changes what is watched, not what is measured: old hashes stay
            "benchmark": self.benchmark.model_dump(
                mode="json",
                exclude={"under_test", "ignore_failure", "build", "roles", "conclude"},
            ),
        }
        if self.benchmark.conclude is not None:  # only then: older hashes stay as they were
            payload["benchmark"]["conclude"] = self.benchmark.conclude
        if self.benchmark.roles:  # only then: hashes of one-machine studies stay as they were
            payload["benchmark"]["roles"] = {
                k: v.model_dump(mode="json") for k, v in self.benchmark.roles.items()
            }
        if self.benchmark.ignore_failure:  # only then: older hashes stay as they were
            payload["benchmark"]["ignore_failure"] = True
        if self.benchmark.build is not None:  # likewise; a build changes what is measured
            payload["benchmark"]["build"] = self.benchmark.build
        payload |= {
            "params": self.params,
            # the statistic is how readings are summarised, not what a trial measures
            "pis": [p.model_dump(mode="json", exclude={"statistic"}) for p in self.pis],
        }
        if self.variants:  # only then: hashes of studies without variants stay as they were
            payload["variants"] = [v.model_dump(mode="json") for v in self.variants]
        if self.tests:  # likewise: the [order] schedule is recorded in the store instead
            payload["tests"] = [t.model_dump(mode="json") for t in self.tests]
        if self.knob_specs:  # likewise: the knob space changes what the samples measure
            payload["knobs"] = [k.model_dump(mode="json") for k in self.knob_specs]
        if self.cluster is not None and self.cluster.combine:  # likewise: a trial's readings
            payload["combine"] = dict(sorted(self.cluster.combine.items()))
        if self.cluster is not None and self.cluster.counts:  # likewise: the hosts measured
            payload["counts"] = dict(sorted(self.cluster.counts.items()))
        if self.faults:  # likewise: a trial with a node killed measures something else
            payload["faults"] = [f.model_dump(mode="json") for f in self.faults]
        blob = json.dumps(payload, sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    def store_path(self, default_dir: Path | None = None) -> Path:
        """Where this study's SQLite store lives (beside the study file by default)."""
        base = Path(self.source_path).parent if self.source_path else (default_dir or Path.cwd())
        if self.study.store:
            try:
                p = Path(expand_user(self.study.store))
            except ValueError as exc:  # checked when the file was read; HOME may differ now
                raise SpecError(f"{self.source_path}: study.store: {exc}") from None
            return p if p.is_absolute() else base / p
        stem = Path(self.source_path).stem if self.source_path else slug(self.study.name)
        return base / f"{stem}.assay.db"


#: Keys of a comparison trial's ``setting`` that name its variant and cycle.
RESERVED_SETTING_KEYS = ("variant", "cycle")

#: Keys of an order experiment trial's ``setting`` that name its test and kind of order.
ORDER_SETTING_KEYS = ("test", "order")


def _check_placeholders(where: str, templated: list[str], known: set[str]) -> None:
    for part in templated:
        for name in placeholders(part):
            if name not in known:
                raise ValueError(
                    f"{where}: placeholder '{{{name}}}' in the command has no value: "
                    f"add it to [params] (known: {', '.join(sorted(known)) or 'none'}), "
                    f"or write '{{{{{name}}}}}' if the braces are meant literally"
                )


def slug(text: str) -> str:
    """A file-name-safe short form of ``text``."""
    out = "".join(c if c.isalnum() or c in "-_" else "-" for c in text.lower())
    return out.strip("-")[:60] or "study"


def expand_user(path: str) -> str:
    """``~`` and ``~user`` expanded; ValueError naming the user where there is none
    (``Path.expanduser`` raises RuntimeError there; ``./~x`` names a folder ``~x``).

    >>> expand_user("data/s.db")
    'data/s.db'
    >>> expand_user("~nosuchuser/s.db")
    Traceback (most recent call last):
    ValueError: '~nosuchuser/s.db': cannot expand '~nosuchuser': no such user
    """
    out = os.path.expanduser(path)
    if out.startswith("~"):  # left as it was: no such user, or no home folder
        user = path.split("/", 1)[0]
        why = "no such user" if user != "~" else "no home folder ($HOME is not set)"
        raise ValueError(f"{path[:80]!r}: cannot expand {user[:40]!r}: {why}")
    return out


def _check_env_names(env: dict[str, str]) -> dict[str, str]:
    for name in env:
        if not name or "=" in name:
            raise ValueError(f"{name!r} is not an environment variable name (empty or with '=')")
    return env


def _format_loc(loc: tuple[int | str, ...], data: dict[str, Any]) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts[-1] = f"{parts[-1]}[{item}]" if parts else f"[{item}]"
        else:
            parts.append(_key_text(str(item)))
    return ".".join(parts)


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]{1,60}")


def _key_text(key: str) -> str:
    """A key as TOML writes it: bare, or quoted (with escapes) when it holds anything
    else, so a key with a newline or 5000 characters keeps the message on one line.

    >>> print(_key_text("rows"), _key_text("a b"), _key_text(chr(10)))
    rows "a b" "\\n"
    """
    if _BARE_KEY.fullmatch(key):
        return key
    quoted = json.dumps(key[:60])
    return quoted if len(key) <= 60 else quoted[:-1] + '..."'


def _friendly(err: dict[str, Any], data: dict[str, Any]) -> str:
    loc = tuple(x for x in err.get("loc", ()) if x not in ("function-after",))
    where = _format_loc(loc, data)
    msg = str(err.get("msg", "invalid value"))
    msg = msg.removeprefix("Value error, ")
    kind = err.get("type", "")
    if kind == "extra_forbidden":
        msg = "unknown field (check the spelling; see 'assay run --help' for the study file format)"
    elif kind == "missing":
        msg = "required field is missing"
    given = err.get("input")
    if kind not in ("missing", "extra_forbidden") and not isinstance(given, dict | list):
        shown = repr(given)
        msg += f" (got {shown if len(shown) <= 80 else shown[:76] + ' ...'})"
    return f"{where}: {msg}" if where else msg


def invalid_fields(exc: ValidationError, data: dict[str, Any]) -> list[str]:
    """One readable line per field a validation refused (``where: what (got ...)``)."""
    return [_friendly(dict(e), data) for e in exc.errors()]


def parse_spec_data(data: dict[str, Any], source: str = "<study>") -> Spec:
    """Validate an already-parsed study mapping; raise SpecError with readable messages."""
    try:
        spec = Spec.model_validate({**data, "source_path": source})
    except ValidationError as exc:
        lines = invalid_fields(exc, data)
        raise SpecError(f"{source}: invalid study file:\n  " + "\n  ".join(lines)) from None
    return spec


def parse_spec_text(text: str, source: str = "<study>") -> Spec:
    """Parse and validate study-file TOML text."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{source}: not valid TOML: {exc}") from None
    except ValueError:  # an integer of more than 4300 digits, which int() refuses
        long = re.search(r"\d{4000,}", text)
        line = f"line {text.count(chr(10), 0, long.start()) + 1}: " if long else ""
        raise SpecError(
            f"{source}: not valid TOML: {line}an integer of thousands of digits "
            "(TOML integers are 64-bit)"
        ) from None
    except RecursionError:
        raise SpecError(f"{source}: not valid TOML: arrays or tables nested too deeply") from None
    _check_values(data, source)
    return parse_spec_data(data, source)


#: Deepest nesting of tables and arrays a study file has any use for.
MAX_DEPTH = 16

#: TOML integers are 64-bit; tomllib reads longer ones, which NumPy cannot hold.
_INT_RANGE = range(-(2**63), 2**63)


def _check_values(data: dict[str, Any], source: str) -> None:
    """Refuse what no field takes and what would break later, naming the field: a NUL
    (no path, argument or environment holds one), NaN, an integer beyond 64 bits, or
    nesting deeper than :data:`MAX_DEPTH`.  Iterative: no recursion limit to hit."""
    stack: list[tuple[str, Any, int]] = [("", data, 0)]
    while stack:
        where, value, depth = stack.pop()
        problem = None
        if depth > MAX_DEPTH:
            problem = f"nested more than {MAX_DEPTH} levels deep"
        elif isinstance(value, str) and "\x00" in value:
            problem = "contains a NUL character"
        elif isinstance(value, float) and math.isnan(value):
            problem = "is NaN, not a number"
        elif isinstance(value, int) and not isinstance(value, bool) and value not in _INT_RANGE:
            problem = "is an integer beyond 64 bits"
        elif isinstance(value, dict):
            for key, item in value.items():
                path = f"{where}.{_key_text(key)}" if where else _key_text(key)
                if "\x00" in key:
                    where, problem = path, "its name contains a NUL character"
                    break
                stack.append((path, item, depth + 1))
        elif isinstance(value, list):
            stack.extend((f"{where}[{i}]", item, depth + 1) for i, item in enumerate(value))
        if problem is not None:
            raise SpecError(f"{source}: invalid study file:\n  {where or 'the file'}: {problem}")


#: The largest study file read: a few KiB in practice; more is not a study file.
MAX_STUDY_FILE = 16 << 20


def load_spec(path: str | Path) -> Spec:
    """Read and validate a study file.

    Raises
    ------
    SpecError
        If the file is missing, unreadable, not TOML, or fails validation.
    """
    from assay.inputfile import InputFileError, read_bounded

    p = Path(path)
    if not os.path.lexists(p):
        raise SpecError(f"{p}: no such study file")
    try:  # a FIFO, /dev/zero or a huge file is refused, not read for ever
        text = read_bounded(p, MAX_STUDY_FILE).decode("utf-8")
    except InputFileError as exc:
        raise SpecError(f"{p}: the study file {exc}") from None
    except UnicodeDecodeError as exc:
        raise SpecError(f"{p}: cannot read the study file: {exc}") from None
    return parse_spec_text(text, source=str(p))
