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
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from assay.template import placeholders


class SpecError(ValueError):
    """A study file is invalid; the message names the file, the field and what was expected."""


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
    must_satisfy: bool = True
    units: UnitsSpec | None = None

    @model_validator(mode="after")
    def _check_source_fields(self) -> PISpec:
        if self.source != "wall_time":
            _check_reader_fields(self.source, self.pattern, self.path, self.file)
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
        if pattern:
            _check_regex(pattern)


def _check_regex(pattern: str) -> None:
    import re

    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"'pattern' is not a valid regular expression: {exc}") from None
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
    teardown: list[str] | None = None
    timeout: Annotated[float, Field(gt=0)] = 600.0
    work: WorkSpec | None = None
    git_repo: str | None = None
    # the component the benchmark means to stress (Pilot's component under test): the
    # bottleneck watch warns when any other passes 80% utilisation; none declared ->
    # it warns for every component above 80%
    under_test: Literal["cpu", "disk", "network", "memory"] | None = None

    @field_validator("command", "setup", "reset", "teardown")
    @classmethod
    def _no_empty_argv0(cls, v: list[str] | None) -> list[str] | None:
        if v is not None and (not v or not v[0].strip()):
            raise ValueError("the first element (the program) must not be empty")
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


class StopSpec(_Model):
    """When a run-until-CI study (or a comparison) is done."""

    confidence: Annotated[float, Field(gt=0, lt=1)] = 0.95
    ci_width: Annotated[float, Field(gt=0, lt=10)] = 0.05
    max_rounds: Annotated[int, Field(ge=1)] = 1000
    max_time: Annotated[float, Field(gt=0)] = 600.0
    min_samples: Annotated[int, Field(ge=2)] = 10
    warmup_rounds: Annotated[int, Field(ge=0)] = 0
    max_autocorrelation: Annotated[float, Field(gt=0, lt=1)] = 0.1
    warmup_removal: Literal["edm", "edm-pilot", "none"] = "edm"
    residual_correction: bool = True
    confirm_rounds: Annotated[int, Field(ge=1)] = 2
    max_failures: Annotated[float, Field(gt=0, le=1)] = 0.5
    # comparisons (assay compare): Welch's threshold, and Pilot's optional third
    # condition (every variant's CI within ci_width as well as the ranking decided)
    alpha: Annotated[float, Field(gt=0, lt=1)] = 0.01
    require_ci_width: bool = False


class StudyMeta(_Model):
    name: Annotated[str, Field(min_length=1)]
    description: str = ""
    store: str | None = None


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
    source_path: str | None = Field(default=None, exclude=True)

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @model_validator(mode="after")
    def _check_consistency(self) -> Spec:
        names = [p.name for p in self.pis]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"PI names must be unique; repeated: {', '.join(dupes)}")
        if not self.pis:
            raise ValueError("at least one [[pi]] is needed")
        known = set(self.params)
        if self.benchmark.work is not None:
            known.add(self.benchmark.work.placeholder)
            if self.benchmark.work.placeholder in self.params:
                raise ValueError(
                    f"'{self.benchmark.work.placeholder}' is both a parameter and the work "
                    "placeholder; rename one"
                )
        if not self.variants:
            templated = list(self.benchmark.command) + list(self.benchmark.env.values())
            _check_placeholders("benchmark", templated, known)
            return self
        self._check_variants(known)
        return self

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
            for key in v.params:
                if key not in self.params and key not in used:
                    raise ValueError(
                        f"{where}.params.{key}: not a parameter of [params] and not used by "
                        "the variant's command or env (check the spelling)"
                    )
            _check_placeholders(where, templated, known | set(v.params))

    def variant_params(self, variant: VariantSpec) -> dict[str, Scalar]:
        """The parameter values of one variant: its params laid over [params]."""
        return {**self.params, **variant.params}

    def measurement_hash(self) -> str:
        """Hash of everything that changes what a trial measures (not the stopping rule)."""
        payload: dict[str, Any] = {
            # under_test changes what is watched, not what is measured: old hashes stay
            "benchmark": self.benchmark.model_dump(mode="json", exclude={"under_test"}),
            "params": self.params,
            "pis": [p.model_dump(mode="json") for p in self.pis],
        }
        if self.variants:  # only then: hashes of studies without variants stay as they were
            payload["variants"] = [v.model_dump(mode="json") for v in self.variants]
        blob = json.dumps(payload, sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    def store_path(self, default_dir: Path | None = None) -> Path:
        """Where this study's SQLite store lives (beside the study file by default)."""
        base = Path(self.source_path).parent if self.source_path else (default_dir or Path.cwd())
        if self.study.store:
            p = Path(self.study.store).expanduser()
            return p if p.is_absolute() else base / p
        stem = Path(self.source_path).stem if self.source_path else slug(self.study.name)
        return base / f"{stem}.assay.db"


#: Keys of a comparison trial's ``setting`` that name its variant and cycle.
RESERVED_SETTING_KEYS = ("variant", "cycle")


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


def _format_loc(loc: tuple[int | str, ...], data: dict[str, Any]) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts[-1] = f"{parts[-1]}[{item}]" if parts else f"[{item}]"
        else:
            parts.append(str(item))
    return ".".join(parts)


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
        msg += f" (got {given!r})"
    return f"{where}: {msg}" if where else msg


def parse_spec_data(data: dict[str, Any], source: str = "<study>") -> Spec:
    """Validate an already-parsed study mapping; raise SpecError with readable messages."""
    try:
        spec = Spec.model_validate({**data, "source_path": source})
    except ValidationError as exc:
        lines = [_friendly(dict(e), data) for e in exc.errors()]
        raise SpecError(f"{source}: invalid study file:\n  " + "\n  ".join(lines)) from None
    return spec


def parse_spec_text(text: str, source: str = "<study>") -> Spec:
    """Parse and validate study-file TOML text."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{source}: not valid TOML: {exc}") from None
    return parse_spec_data(data, source)


def load_spec(path: str | Path) -> Spec:
    """Read and validate a study file.

    Raises
    ------
    SpecError
        If the file is missing, unreadable, not TOML, or fails validation.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(f"{p}: no such study file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{p}: cannot read the study file: {exc}") from None
    return parse_spec_text(text, source=str(p))
