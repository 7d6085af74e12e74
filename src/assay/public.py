"""Assay from Python: the CLI's studies as functions that return a :class:`Result`.

Each function mirrors a subcommand: :func:`run` (``assay run``), :func:`compare`,
:func:`sweep`, :func:`order`, :func:`knobs`, and :func:`load` (``assay show``: a stored
study's result, nothing run).  A command is a list of words or one string (split into
words as the CLI splits it); a study is a study file's path, its TOML text or the same
as a dict.  Quick studies (commands, dicts and TOML text without ``[study] store``) are
stored where the CLI keeps them (``$XDG_CACHE_HOME/assay/quick.assay.db``) unless
``store`` names a store; a study file's store is beside it, as for the CLI.

Errors are the CLI's: :class:`~assay.errors.SpecError` for a bad study or command,
:class:`~assay.errors.StudyError` and :class:`~assay.errors.StoreError` when the
study cannot run or its store cannot be read.

>>> import tempfile, pathlib, assay
>>> store = pathlib.Path(tempfile.mkdtemp()) / "doc.assay.db"
>>> r = assay.run(["true"], max_rounds=3, store=store, name="true", measure_overhead=False)
>>> r.kind, r.study, r.to_dict()["pis"][0]["name"]
('run', 'true', 'wall_time')
>>> len(r.trials_dataframe())
3
>>> "true" in r.summary()
True
>>> assay.load(store).to_dict()["pis"][0]["rounds_used"]
3
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeGuard

from assay.errors import SpecError

if TYPE_CHECKING:
    import pandas as pd

    from assay.execute.executor import Executor
    from assay.spec import Spec

__all__ = ["Result", "compare", "knobs", "load", "order", "run", "sweep"]

Kind = Literal["run", "compare", "order", "sweep", "knobs"]
#: A command: its words, or one string split into words as the CLI splits it.
Command = str | Sequence[str]
#: A study: a study file's path, its TOML text, or the same as a mapping.
StudyLike = str | os.PathLike[str] | Mapping[str, Any]


@dataclass(frozen=True)
class Result:
    """A study's result: ``raw`` is the study runner's result object (``StudyResult``,
    ``CompareResult``, ``OrderResult``, ``SweepResult`` or ``KnobsResult``), ``kind``
    the study's kind, ``study`` its name, ``store`` the store that holds its trials and
    ``spec`` the study as it ran (the CLI's options laid over it)."""

    kind: Kind
    study: str
    store: Path
    raw: Any
    spec: Spec | None = None

    def _first_pi(self, what: str) -> Any:
        """The first PI's result of a run study (what a notebook reads first)."""
        results = getattr(self.raw, "results", None) if self.kind == "run" else None
        if not results:
            raise AttributeError(
                f"a {self.kind} result has no single {what}: see .to_dict() (or .summary())"
            )
        return results[0]

    @property
    def mean(self) -> float:
        """The first PI's mean (a run study; its interval: :attr:`low`, :attr:`high`)."""
        return float(self._first_pi("mean").mean)

    @property
    def low(self) -> float:
        """The lower end of the first PI's confidence interval (a run study)."""
        return float(self._first_pi("interval").low)

    @property
    def high(self) -> float:
        """The upper end of the first PI's confidence interval (a run study)."""
        return float(self._first_pi("interval").high)

    @property
    def unit(self) -> str:
        """The first PI's unit (a run study)."""
        return str(self._first_pi("unit").unit)

    def to_dict(self) -> dict[str, Any]:
        """The result as ``--json`` writes it."""
        data: dict[str, Any] = self.raw.as_dict()
        return data

    def summary(self, width: int = 120) -> str:
        """The result as the CLI prints it in a terminal, as plain text (no colour),
        headed by the study's name where the CLI's report does not show it."""
        from assay.report.safe import SafeConsole

        out = io.StringIO()
        console = SafeConsole(file=out, width=width, color_system=None, force_terminal=False)
        _render(self.kind, self.raw, console)
        text = out.getvalue()
        if self.study not in text:  # a knob study's report names no study
            text = f"study: {self.study}\n{text}"
        return text

    def trials_dataframe(self) -> pd.DataFrame:
        """One row per stored trial of the study, with the columns ``assay export``
        writes: ``study, seq, run, status``, a ``setting.KEY`` column per setting, a
        ``reading.PI`` column per PI, then when it started, how long it took and what it
        cost."""
        import pandas as pd

        table = _export(self.store, self.study).trials
        return pd.DataFrame(table.rows, columns=table.fields)

    def unit_readings_dataframe(self) -> pd.DataFrame:
        """The unit readings, one row per value: ``study, run, seq, pi, index, value``."""
        import pandas as pd

        table = _export(self.store, self.study).unit_readings
        return pd.DataFrame(table.rows, columns=table.fields)

    def report(self, path: str | os.PathLike[str]) -> Path:
        """Write the study's HTML report (as ``assay report``) to ``path``; return it."""
        from assay.report.export import write_text
        from assay.report.html import study_report

        write_text(str(path), study_report(self.store, self.study)[0])
        return Path(path)

    def __repr__(self) -> str:
        return f"Result(kind={self.kind!r}, study={self.study!r}, store={str(self.store)!r})"


def run(
    command_or_spec: Command | StudyLike | Callable[[], object],
    *,
    ci_width: float | None = None,
    confidence: float | None = None,
    max_time: float | None = None,
    max_rounds: int | None = None,
    store: str | os.PathLike[str] | None = None,
    name: str | None = None,
    quiet: bool = True,
    shell: bool = False,
    fresh: bool = False,
    measure_overhead: bool = True,
    calls_per_round: int | None = None,
    isolate: bool = False,
) -> Result:
    """Measure until every CI is as narrow as asked (``assay run``).

    ``command_or_spec``: a command (a list of words, or one string without shell
    syntax: ``shell=True`` runs it with ``/bin/sh -c``), a study (a path ending in
    ``.toml``, TOML text, or a dict), or a Python callable taking no arguments, timed in
    process by :func:`assay.api.measure` (``calls_per_round``, ``isolate``; its study
    keeps the result, as the pytest plugin's do).  ``ci_width`` and ``confidence`` are
    shares (``0.05`` for 5%).  A quick study is measured afresh each time (the earlier
    result stays in the store); a study file resumes, as on the command line.

    >>> import tempfile, pathlib
    >>> store = pathlib.Path(tempfile.mkdtemp()) / "run.assay.db"
    >>> r = run("sleep 0.001", max_rounds=3, store=store, measure_overhead=False)
    >>> r.raw.results[0].rounds_used, r.study.startswith("quick sleep-0-001")
    (3, True)
    >>> r.unit, r.mean > 0.001, r.low <= r.mean <= r.high  # the first PI's figures
    ('s', True, True)
    """
    stop = _stop(ci_width, confidence, max_time, max_rounds)
    if callable(command_or_spec) and not isinstance(command_or_spec, str | os.PathLike):
        return _run_function(
            command_or_spec,
            stop,
            store=store,
            name=name,
            quiet=quiet,
            calls_per_round=calls_per_round,
            isolate=isolate,
        )
    if _is_command(command_or_spec):
        from assay.quick import command_words, quick_benchmark, quick_name, quick_study_data

        argv = command_words(_words(command_or_spec), shell=shell)
        bench = quick_benchmark(argv, shell=shell)
        import shlex

        study = name or quick_name("quick", shlex.join(argv), bench)
        spec = _parse(quick_study_data(study, bench, stop))
        from_file = False
    else:
        spec, from_file = _study(command_or_spec, stop, name)
    _refuse_kind(spec, "run")
    from assay.report.terminal import ProgressView
    from assay.studies.run import Runner

    path = _store(spec, store, from_file)
    fresh, fingerprint = _resumption(spec, path, from_file, fresh)
    with _running(spec, quiet) as (executor, err):
        view = ProgressView(err, spec.stop.ci_width, spec.stop) if err is not None else None
        with _live(view, executor):
            runner = Runner(
                spec,
                path,
                fresh=fresh,
                fingerprint=fingerprint,
                measure_overhead=measure_overhead,
                executor=executor,
                on_progress=None if view is None else view.update,
            )
            result = runner.run()
    return Result("run", spec.study.name, path, result, spec)


def _run_function(
    fn: Callable[[], object],
    stop: dict[str, Any],
    *,
    store: str | os.PathLike[str] | None,
    name: str | None,
    quiet: bool,
    calls_per_round: int | None,
    isolate: bool,
) -> Result:
    """:func:`run` of a callable: measured in process, its result stored as a session."""
    from assay.api import measure
    from assay.studies.run import Runner, in_process_spec, record_in_process

    label = f"{getattr(fn, '__module__', None) or '?'}.{getattr(fn, '__qualname__', repr(fn))}"
    study = name or f"python {label}"
    spec = in_process_spec(study, ["python", label], f"assay.run({label})")
    result = measure(
        fn, calls_per_round=calls_per_round, isolate=isolate, progress=not quiet, **stop
    )
    if store is not None:
        path = Path(store)
    else:
        from assay.quick import quick_store_path

        path = quick_store_path()
    record_in_process(path, spec, result, {"python": label})
    return Result("run", study, path, Runner(spec, path, monitor=False).stored(), spec)


def compare(
    commands_or_spec: Mapping[str, Command] | StudyLike,
    *,
    ci_width: float | None = None,
    confidence: float | None = None,
    max_time: float | None = None,
    max_rounds: int | None = None,
    alpha: float | None = None,
    fail_if_worse: float | None = None,
    baseline: str | None = None,
    seed: int | None = None,
    store: str | os.PathLike[str] | None = None,
    name: str | None = None,
    quiet: bool = True,
    shell: bool = False,
    fresh: bool = False,
    measure_overhead: bool = True,
) -> Result:
    """Decide which of several commands is best (``assay compare``).

    ``commands_or_spec``: ``{"name": command, ...}`` (two or more; each command a list of
    words or one string), or a study with ``[[variant]]`` entries.  ``fail_if_worse``
    (a share, e.g. ``0.05``) gates every variant against ``baseline`` (default: the
    first): the verdicts are in ``result.raw.gates``.

    >>> import tempfile, pathlib
    >>> store = pathlib.Path(tempfile.mkdtemp()) / "compare.assay.db"
    >>> r = compare({"a": ["true"], "b": "sleep 0.001"}, max_rounds=3, store=store,
    ...             measure_overhead=False)
    >>> r.kind, r.raw.variants
    ('compare', ['a', 'b'])
    """
    stop = _stop(ci_width, confidence, max_time, max_rounds)
    stop.update(
        {
            k: v
            for k, v in (("alpha", alpha), ("fail_if_worse", fail_if_worse), ("baseline", baseline))
            if v is not None
        }
    )
    if isinstance(commands_or_spec, Mapping) and not _looks_like_spec(commands_or_spec):
        spec = _compare_commands(commands_or_spec, stop, name=name, shell=shell)
        from_file = False
    else:
        spec, from_file = _study(commands_or_spec, stop, name)
    _refuse_kind(spec, "compare")
    names = [v.name for v in spec.variants]
    if spec.stop.baseline is not None and spec.stop.baseline not in names:
        raise SpecError(
            f"baseline {spec.stop.baseline!r}: no such variant; the variants: {', '.join(names)}"
        )
    from assay.report.compare import CompareProgressView
    from assay.studies.compare import CompareRunner

    path = _store(spec, store, from_file)
    fresh, fingerprint = _resumption(spec, path, from_file, fresh)
    with _running(spec, quiet) as (executor, err):
        view = CompareProgressView(err, spec.stop) if err is not None else None
        with _live(view, executor):
            runner = CompareRunner(
                spec,
                path,
                seed=seed,
                fresh=fresh,
                fingerprint=fingerprint,
                measure_overhead=measure_overhead,
                executor=executor,
                on_compare_progress=None if view is None else view.update,
            )
            result = runner.run()
    if spec.stop.fail_if_worse is not None:
        result.gate(spec.stop.fail_if_worse, spec.stop.baseline)
    return Result("compare", spec.study.name, path, result, spec)


def sweep(
    spec: StudyLike,
    *,
    store: str | os.PathLike[str] | None = None,
    name: str | None = None,
    quiet: bool = True,
    fresh: bool = False,
) -> Result:
    """Map a parameter space (``assay sweep``): ``spec`` has a ``[sweep]`` section."""
    from assay.report.sweep import SweepProgressView
    from assay.studies.sweep import SweepRunner

    study, from_file = _study(spec, {}, name)
    _refuse_kind(study, "sweep")
    path = _store(study, store, from_file)
    with _running(study, quiet) as (executor, err):
        view = SweepProgressView(err) if err is not None else None
        with _live(view, executor):
            runner = SweepRunner(
                study,
                path,
                fresh=fresh,
                executor=executor,
                on_progress=None if view is None else view.update,
            )
            result = runner.run()
    return Result("sweep", study.study.name, path, result, study)


def order(
    spec: StudyLike,
    *,
    runs: int | None = None,
    repetitions: int | None = None,
    seed: int | None = None,
    alpha: float | None = None,
    store: str | os.PathLike[str] | None = None,
    name: str | None = None,
    quiet: bool = True,
    fresh: bool = False,
    measure_overhead: bool = True,
) -> Result:
    """The ordering trap (``assay order``): ``spec`` lists two or more ``[[test]]``s."""
    from assay.report.order import OrderProgressView
    from assay.studies.order import OrderRunner

    study, from_file = _study(spec, {}, name)
    _refuse_kind(study, "order")
    path = _store(study, store, from_file)
    with _running(study, quiet) as (executor, err):
        view = OrderProgressView(err) if err is not None else None
        with _live(view, executor):
            runner = OrderRunner(
                study,
                path,
                runs=runs,
                repetitions=repetitions,
                seed=seed,
                alpha=alpha,
                fresh=fresh,
                measure_overhead=measure_overhead,
                executor=executor,
                on_order_progress=None if view is None else view.update,
            )
            result = runner.run()
    return Result("order", study.study.name, path, result, study)


def knobs(
    spec: StudyLike,
    *,
    tune: int | None = None,
    jobs: int | None = None,
    store: str | os.PathLike[str] | None = None,
    name: str | None = None,
    quiet: bool = True,
    fresh: bool = False,
) -> Result:
    """Which knobs matter (``assay knobs``): ``spec`` has ``[[knob]]`` entries."""
    from assay.report.knobs import KnobsProgressView
    from assay.studies.knobs import KnobsRunner

    study, from_file = _study(spec, {}, name)
    _refuse_kind(study, "knobs")
    path = _store(study, store, from_file)
    with _running(study, quiet) as (executor, err):
        view = KnobsProgressView(err) if err is not None else None
        with _live(view, executor):
            runner = KnobsRunner(
                study,
                path,
                study.knobs_config,
                tune=tune,
                jobs=jobs,
                fresh=fresh,
                executor=executor,
                on_progress=None if view is None else view.update,
            )
            result = runner.run()
    return Result("knobs", study.study.name, path, result, study)


def load(store: str | os.PathLike[str], study: str | None = None) -> Result:
    """The stored result of ``study`` (or of the store's only study), as ``assay show``
    builds it: nothing runs and nothing is written.  Raises
    :class:`~assay.errors.StudyError` (no such study, or several and none named) or
    :class:`~assay.errors.StoreError` (no such store)."""
    from assay.errors import NotAStoreError
    from assay.studies.stored import stored_result

    path = Path(store)
    if not path.exists():
        raise NotAStoreError(f"{path}: no such store")
    stored, result, _ = stored_result(path, study)
    kinds: dict[str, Kind] = {k: k for k in ("run", "compare", "order", "sweep", "knobs")}
    return Result(kinds.get(stored.kind, "run"), stored.name, path, result, stored.spec)


# -- how the functions build and run a study


def _render(kind: str, raw: Any, console: Any) -> None:
    import importlib

    module, function = _RENDER[kind]
    getattr(importlib.import_module(module), function)(raw, console)


_RENDER: dict[str, tuple[str, str]] = {
    "run": ("assay.report.terminal", "render_result"),
    "compare": ("assay.report.compare", "render_comparison"),
    "order": ("assay.report.order", "render_order"),
    "sweep": ("assay.report.sweep", "render_sweep"),
    "knobs": ("assay.report.knobs", "render_knobs_result"),
}


def _export(store: Path, study: str) -> Any:
    from assay.errors import StudyError
    from assay.studies.export import UnknownStudyError, export_store

    try:
        return export_store(store, study)
    except UnknownStudyError as exc:
        raise StudyError(str(exc)) from None


def _stop(
    ci_width: float | None,
    confidence: float | None,
    max_time: float | None,
    max_rounds: int | None,
) -> dict[str, Any]:
    given = {
        "ci_width": ci_width,
        "confidence": confidence,
        "max_time": max_time,
        "max_rounds": max_rounds,
    }
    return {k: v for k, v in given.items() if v is not None}


def _is_command(target: object) -> TypeGuard[Command]:
    """A list of words, or a string that is neither a ``.toml`` path nor TOML text."""
    if isinstance(target, str):
        return not (target.endswith(".toml") or _is_toml_text(target))
    if isinstance(target, Sequence):
        return all(isinstance(w, str) for w in target)
    return False


def _is_toml_text(text: str) -> bool:
    return "\n" in text or text.lstrip().startswith("[")


def _words(command: Command) -> list[str]:
    if isinstance(command, str):
        return [command]
    if not all(isinstance(w, str) for w in command):
        raise SpecError(f"a command is a list of strings (or one string), got {command!r}")
    return list(command)


def _looks_like_spec(data: Mapping[str, Any]) -> bool:
    return any(k in data for k in ("study", "benchmark", "variant"))


def _parse(data: Mapping[str, Any], source: str = "the Python API") -> Spec:
    from assay.spec import parse_spec_data

    if not isinstance(data, Mapping):
        raise SpecError(f"a study is a path, TOML text or a dict, got {type(data).__name__}")
    return parse_spec_data(dict(data), source=source)


def _study(target: object, stop: dict[str, Any], name: str | None) -> tuple[Spec, bool]:
    """The study of a path, TOML text or dict with ``stop`` laid over its ``[stop]``,
    renamed ``name`` when given; and whether it came from a file."""
    from assay.spec import StopSpec, load_spec, parse_spec_text

    from_file = False
    if isinstance(target, Mapping):
        spec = _parse(target, "<dict>")
    elif isinstance(target, str) and _is_toml_text(target):
        spec = parse_spec_text(target, source="<string>")
    elif isinstance(target, str | os.PathLike):
        spec, from_file = load_spec(os.fspath(target)), True
    else:
        raise SpecError(f"a study is a path, TOML text or a dict, got {type(target).__name__}")
    if stop:
        from pydantic import ValidationError

        try:
            merged = StopSpec.model_validate({**spec.stop.model_dump(), **stop})
        except ValidationError as exc:
            wrong = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise SpecError(f"{spec.source_path}: invalid stopping rule: {wrong}") from None
        spec = spec.model_copy(update={"stop": merged})
    if name is not None:
        spec = spec.model_copy(update={"study": spec.study.model_copy(update={"name": name})})
    if not from_file:
        spec = spec.model_copy(update={"source_path": None})
    return spec, from_file


def _compare_commands(
    commands: Mapping[str, Command], stop: dict[str, Any], *, name: str | None, shell: bool
) -> Spec:
    """The quick comparison of ``{"name": command}``, built as ``assay compare --name``
    builds it (the same study name for the same commands)."""
    from assay.quick import command_words, quick_benchmark, quick_name, quick_study_data

    if len(commands) < 2:
        raise SpecError(
            f"compare needs at least two commands, got {len(commands)}: "
            '{"a": ["cmd", ...], "b": ["cmd", ...]}'
        )
    groups = [command_words(_words(c), shell=shell) for c in commands.values()]
    names = [str(n) for n in commands]
    bench = quick_benchmark(groups[0], shell=shell)
    variants = [{"name": n, "command": g} for n, g in zip(names, groups, strict=True)]
    study = name or quick_name(
        "compare", " vs ".join(names), {"benchmark": bench, "variants": variants}
    )
    spec = _parse(quick_study_data(study, bench, stop, variants=variants))
    return spec.model_copy(update={"source_path": None})


def _refuse_kind(spec: Spec, kind: Kind) -> None:
    """A study of another kind, given to this function: the CLI's SpecError."""
    where = spec.source_path or "the study"
    has = {
        "compare": len(spec.variants) >= 2 if kind == "compare" else bool(spec.variants),
        "order": len(spec.tests) >= 2 if kind == "order" else bool(spec.tests),
        "sweep": spec.sweep is not None,
        "knobs": bool(spec.knob_specs),
    }
    what = {
        "compare": "[[variant]]s (two or more)",
        "order": "[[test]]s (two or more)",
        "sweep": "a [sweep] section",
        "knobs": "[[knob]] entries",
    }
    if kind != "run" and not has[kind]:
        raise SpecError(f"{where}: assay.{kind}() needs a study with {what[kind]}")
    others = [k for k in ("compare", "order", "sweep", "knobs") if k != kind and has[k]]
    if others:
        raise SpecError(
            f"{where}: this study has {what[others[0]]}; run it with assay.{others[0]}()"
        )


def _store(spec: Spec, store: str | os.PathLike[str] | None, from_file: bool) -> Path:
    """``store``, else a study file's store (beside it) or a named ``[study] store``,
    else the CLI's store of quick studies."""
    if store is not None:
        return Path(store)
    if from_file or spec.study.store:
        return spec.store_path()
    from assay.quick import quick_store_path

    return quick_store_path()


def _resumption(
    spec: Spec, path: Path, from_file: bool, fresh: bool
) -> tuple[bool, dict[str, Any] | None]:
    """As the CLI decides: a study file resumes; a quick study is measured again when
    it finished, and resumed when interrupted with its files unchanged."""
    if from_file:
        return fresh, None
    from assay.studies.fingerprint import quick_resumption_of

    decided, now = quick_resumption_of(spec, path, fresh=fresh, resume=False)
    return decided.fresh, now


@contextmanager
def _running(spec: Spec, quiet: bool) -> Iterator[tuple[Executor, Any]]:
    """The executor the study file asks for (its ``[cluster]``, else this machine), and
    the console of the progress line (None when ``quiet``)."""
    from assay.execute.cluster import open_executor
    from assay.execute.proctree import prepare_session

    prepare_session()
    err = None
    if not quiet:
        from assay.report.safe import SafeConsole

        err = SafeConsole(stderr=True, soft_wrap=True)
    with open_executor(ssh=spec.cluster) as executor:
        yield executor, err


def _live(view: Any, executor: Executor) -> Any:
    if view is None:
        return nullcontext()
    view.status = executor.status
    return view
