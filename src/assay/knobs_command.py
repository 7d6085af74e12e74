"""``assay knobs``: the command's work, kept out of cli.py (which only parses options).

Offline mode (``--from samples.csv``) is complete here.  Live mode (``assay knobs
STUDY.toml``) is outlined in :func:`run_live`: it needs the shared "measure these
settings" runner, which the lead wires in.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rich.console import Console
from rich.markup import escape

from assay.spec import SpecError

KNOBS_FILE_HELP = """
\b
Offline, from measured settings (one row each; knob columns and PI columns):
  assay knobs --from samples.csv --metric throughput --metric p99:lower \\
      --objective "max throughput s.t. p99<=20" --top 5 --plot importance.png
  Knob columns: every column that is not a --metric or objective PI (or --knob NAME
  ...); numeric columns are numeric knobs, others categorical.  --tune N tunes the
  top-k and all knobs on the random-forest model of the samples (no measurement)
  and compares the trials each needs.
\b
Study file: as for 'assay run', plus the knobs (their values fill {name} placeholders):
  [[knob]]  name = "shared_buffers"  type = "int"  min = 16  max = 4096  log = true
            default = 128  unit = "MB"  unsafe = false
  [[knob]]  name = "synchronous_commit"  type = "categorical"  values = ["on", "off"]
            default = "on"  unsafe = true  (trades safety for speed: not tuned unless
            allowed)
  [knobs]   samples = 100  validation_samples = 25  trees = 300  top_k = 5  seed = 0
            allow_unsafe = false  rank_by = "impurity" | "permutation"
            objective = "max tps s.t. p99<=20"
"""

Direction = Literal["higher", "lower"]


@dataclass(frozen=True)
class KnobsOptions:
    """What the command line asked for (None: take the study file's or the default)."""

    from_csv: str | None = None
    metrics: tuple[str, ...] = ()
    knob_columns: tuple[str, ...] = ()
    unsafe: tuple[str, ...] = ()
    top: int | None = None
    trees: int | None = None
    seed: int | None = None
    objective: str | None = None
    rank_by: Literal["impurity", "permutation"] | None = None
    samples: int | None = None
    tune: int | None = None
    allow_unsafe: bool = False
    jobs: int | None = None
    json_out: str | None = None
    csv_out: str | None = None
    plot: str | None = None
    store: str | None = None
    fresh: bool = False
    quiet: bool = False


class KnobsInputError(ValueError):
    """Bad input for ``assay knobs``: exit status 2, one clear message."""


def _n_jobs(jobs: int | None) -> int:
    return jobs if jobs is not None and jobs > 0 else (os.cpu_count() or 1)


def run_offline(opts: KnobsOptions, console: Console, err: Console) -> int:
    """``assay knobs --from CSV``: rank, report, export; optional tuning on the model."""
    from assay.designs.knobs import CategoricalKnob, KnobSpace, analyze_knobs, infer_space
    from assay.report.knobs import SamplesError, metric_direction, read_samples_csv
    from assay.stats.objective import parse_objective

    assert opts.from_csv is not None
    try:
        objective = parse_objective(opts.objective) if opts.objective else None
        if not opts.metrics and objective is None:
            raise KnobsInputError(
                "--from needs at least one --metric NAME (a PI column of the CSV) or an --objective"
            )
        directions: dict[str, Direction] = {}
        for m in opts.metrics:
            name, direction = metric_direction(m)
            directions[name] = "lower" if direction == "lower" else "higher"
        extra = list(objective.pis) if objective else []
        frame, values = read_samples_csv(
            opts.from_csv, list(directions), knobs=opts.knob_columns, extra=extra
        )
        space = infer_space(frame, list(frame.columns))
        unknown = [u for u in opts.unsafe if u not in space.names]
        if unknown:
            raise KnobsInputError(
                f"--unsafe {', '.join(unknown)}: not a knob column of {opts.from_csv} "
                f"(knobs: {', '.join(space.names)})"
            )
        if opts.unsafe:
            space = KnobSpace(
                tuple(_marked_unsafe(k) if k.name in opts.unsafe else k for k in space.knobs)
            )
    except (SamplesError, KnobsInputError, ValueError) as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}")
        return 2
    settings = frame.to_dict("records")
    # categorical knobs were inferred from the text of the cells
    for s in settings:
        for k in space.knobs:
            if isinstance(k, CategoricalKnob):
                s[k.name] = str(s[k.name])
    n_jobs = _n_jobs(opts.jobs)
    trees = opts.trees or 300
    seed = opts.seed or 0
    if not opts.quiet:
        err.print(
            f"[dim]{len(settings)} settings · knobs: {', '.join(space.names)} · "
            f"{trees} trees · {n_jobs} job(s)[/]"
        )
    try:
        analysis = analyze_knobs(
            space,
            settings,
            {k: values[k] for k in directions},
            directions,
            objective=objective,
            top_k=opts.top or 5,
            n_trees=trees,
            seed=seed,
            by=opts.rank_by or "impurity",
            n_jobs=n_jobs,
            sources=(opts.from_csv,),
        )
    except ValueError as exc:
        err.print(f"[red]error:[/] {opts.from_csv}: {escape(str(exc))}")
        return 2
    for r in analysis.rankings:
        lead = r.knobs[0]
        if lead.impurity > 0.9 and lead.knob not in opts.knob_columns:
            err.print(
                f"[yellow]warning:[/] {lead.knob} alone explains {lead.impurity:.0%} of the "
                f"importance for {escape(r.pi)}: if it is a measured PI rather than a knob, "
                "name it with --metric, or list the knob columns with --knob"
            )
    tune_result = cost = None
    if opts.tune:
        tune_result, cost = _tune_on_model(analysis, settings, values, opts, trees=trees, seed=seed)
    _report(analysis, console, opts, tune=tune_result, cost=cost)
    return 0


def _marked_unsafe(knob: Any) -> Any:
    from dataclasses import replace

    return replace(knob, unsafe=True)


def _tune_on_model(
    analysis: Any,
    settings: Sequence[Mapping[str, Any]],
    values: Mapping[str, Any],
    opts: KnobsOptions,
    *,
    trees: int,
    seed: int,
) -> tuple[Any, Any]:
    """Tune the top-k (and, for the cost comparison, all knobs) on a forest of the samples."""
    from assay.designs.tune import compare_tuning_cost, surrogate_objective, tune
    from assay.stats.objective import composite_score

    primary = analysis.primary
    if analysis.objective is not None:
        y = composite_score(analysis.objective, values)
    else:
        y = values[primary.pi]
    model = surrogate_objective(analysis.space, settings, y, n_trees=trees, seed=seed)
    result = tune(
        analysis.space,
        model,
        opts.tune or 1,
        knobs=list(primary.top),
        direction=primary.direction,
        allow_unsafe=opts.allow_unsafe,
        seed=seed,
    )
    cost = compare_tuning_cost(
        analysis.space,
        model,
        list(primary.top),
        opts.tune or 1,
        seeds=[seed, seed + 1, seed + 2],
        direction=primary.direction,
        allow_unsafe=opts.allow_unsafe,
    )
    return result, cost


def _report(
    analysis: Any,
    console: Console,
    opts: KnobsOptions,
    *,
    tune: Any = None,
    cost: Any = None,
    tuned_on_model: bool = True,
) -> None:
    from assay.report.export import rows_to_csv, to_json, write_text
    from assay.report.knobs import CSV_FIELDS, csv_rows, knobs_dict, plot_importance, render_knobs

    render_knobs(analysis, console, tune=tune, cost=cost)
    if cost is not None and not tuned_on_model:
        console.print(
            "[dim]the tuning cost (top-k vs all knobs) is estimated on the random-forest "
            "model of the samples, without measuring[/]"
        )
    if tune is not None and tuned_on_model:
        console.print(
            "[dim]tuning ran on the random-forest model of the samples, not on the system: "
            "measure the best configuration before trusting it[/]"
        )
    if opts.json_out:
        write_text(opts.json_out, to_json(knobs_dict(analysis, tune=tune, cost=cost)))
    if opts.csv_out:
        write_text(opts.csv_out, rows_to_csv(CSV_FIELDS, csv_rows(analysis)))
    if opts.plot:
        plot_importance(analysis, opts.plot)


def run_live(study: str, opts: KnobsOptions, console: Console, err: Console) -> int:
    """``assay knobs STUDY.toml``: sample, measure, rank, validate, tune.

    1. Latin Hypercube samples of every knob (:func:`~assay.designs.knobs.latin_hypercube`),
       each measured once (the paper's design) through the study's store, so an
       interrupted study resumes without measuring a sample twice.
    2. Random-forest ranking per PI (and the objective), top-k R² curve, stability.
    3. Validation: a second LHS that varies only the top-k knobs (others at defaults);
       how close its best comes to the best of the all-knob samples, per PI.
    4. ``--tune N``: Optuna on the top-k knobs, each configuration measured; the best
       one measured 10 times more for its CI; the tuning cost against all knobs
       estimated on the forest model of the samples (no measurement).
    """
    from pathlib import Path

    from assay.designs.knobs import (
        analyze_knobs,
        latin_hypercube,
        space_from_spec,
        validation_sample,
    )
    from assay.report.terminal import study_errors
    from assay.runner import StudyError
    from assay.settings_runner import SettingsRunner, SettingsSession
    from assay.spec import load_spec
    from assay.stats.importance import validation_summary
    from assay.stats.objective import parse_objective

    try:
        spec = load_spec(study)
        if not spec.knob_specs:
            raise SpecError(
                f"{study}: no [[knob]] entries; 'assay knobs' needs the knobs to sample "
                "(see 'assay knobs --help')"
            )
        space = space_from_spec(spec)
        cfg = spec.knobs_config.model_copy(
            update={
                k: v
                for k, v in {
                    "samples": opts.samples,
                    "top_k": opts.top,
                    "trees": opts.trees,
                    "seed": opts.seed,
                    "objective": opts.objective,
                    "rank_by": opts.rank_by,
                }.items()
                if v is not None
            }
            | ({"allow_unsafe": True} if opts.allow_unsafe else {})
        )
        objective = parse_objective(cfg.objective) if cfg.objective else None
    except (SpecError, ValueError) as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}")
        return 2
    directions: dict[str, Direction] = {p.name: p.direction for p in spec.pis}
    store_path = Path(opts.store) if opts.store else spec.store_path()
    runner = SettingsRunner(spec, store_path, seed=cfg.seed, fresh=opts.fresh)
    view = _MeasureView(err)

    def measured(
        session: SettingsSession, settings: list[dict[str, Any]], what: str
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Measure each setting once; the settings that succeeded and their PI values."""
        import numpy as np

        from assay.settings_runner import setting_key, trial_value

        session.measure(
            settings, 1, on_progress=None if opts.quiet else lambda p: view.update(what, p)
        )
        by_key = {setting_key(t.setting): t for t in session.trials}
        ok = [s for s in settings if by_key[setting_key(s)].ok]
        values = {
            pi.name: np.array([trial_value(pi, by_key[setting_key(s)]) for s in ok])
            for pi in spec.pis
        }
        return ok, values

    def body(session: SettingsSession) -> tuple[Any, Any, Any]:
        samples = latin_hypercube(space, cfg.samples, seed=cfg.seed)
        ok, metrics = measured(session, samples, "all-knob LHS samples")
        if len(ok) < 10:
            raise StudyError(
                f"only {len(ok)} of {len(samples)} samples succeeded; the ranking needs at "
                "least 10 (see the failed trials in the store)"
            )
        if not opts.quiet:  # the forests take a while (a minute for 100 samples on 2 cores)
            view.line.show(f"ranking the knobs: random forests on {len(ok)} samples…", True)
        analysis = analyze_knobs(
            space,
            ok,
            metrics,
            directions,
            objective=objective,
            top_k=cfg.top_k,
            n_trees=cfg.trees,
            seed=cfg.seed,
            by=cfg.rank_by,
            n_jobs=_n_jobs(opts.jobs),
            sources=(str(store_path),),
        )
        n_val = cfg.validation_samples or max(10, cfg.samples // 4)
        val = validation_sample(space, list(analysis.primary.top), n_val, seed=cfg.seed + 1)
        val_ok, val_metrics = measured(session, val, "top-k validation samples")
        if val_ok:
            analysis = analysis.with_validation(
                validation_summary(metrics, val_metrics, directions)
            )
        tune_result = cost = None
        if opts.tune:
            tune_result, cost = _tune_live(
                session, analysis, ok, metrics, cfg, objective, opts,
                progress=None if opts.quiet else lambda line: view.line.show(line, True),
            )  # fmt: skip
        return analysis, tune_result, cost

    resume = "Run the same command again to resume: measured samples are not measured again."
    with (
        study_errors(err, store_path, resume),
        view if not opts.quiet else contextlib.nullcontext(),
    ):
        analysis, tune_result, cost = runner.session(body)
    _report(analysis, console, opts, tune=tune_result, cost=cost, tuned_on_model=False)
    return 0


def _tune_live(
    session: Any,
    analysis: Any,
    samples: list[dict[str, Any]],
    metrics: Mapping[str, Any],
    cfg: Any,
    objective: Any,
    opts: KnobsOptions,
    progress: Any = None,
) -> tuple[Any, Any]:
    """Optuna on the top-k knobs, every configuration measured in the study's store.

    ``progress`` (a callable taking one line), when given, hears of every measured trial.
    """
    import math
    from dataclasses import replace

    from assay.designs.tune import compare_tuning_cost, surrogate_objective, tune
    from assay.settings_runner import trial_value
    from assay.stats.intervals import t_interval
    from assay.stats.objective import composite_score

    primary = analysis.primary
    space = analysis.space
    pis = {p.name: p for p in session._runner.spec.pis}

    n_tuned = 0

    def readings(setting: dict[str, Any], reps: int) -> list[dict[str, float]]:
        got = session.measure([setting], reps)
        return [{n: trial_value(p, t) for n, p in pis.items()} for t in got]

    def measure_one(setting: dict[str, Any]) -> Any:
        nonlocal n_tuned
        r = readings(setting, 1)[0]
        n_tuned += 1
        if progress is not None:
            progress(f"tuning the top-k: trial {n_tuned}/{opts.tune or 1}")
        if objective is not None:
            return r
        v = r[primary.pi]
        return None if math.isnan(v) else v

    result = tune(
        space,
        measure_one,
        opts.tune or 1,
        knobs=list(primary.top),
        goal=objective,
        direction=primary.direction,
        allow_unsafe=cfg.allow_unsafe,
        seed=cfg.seed,
    )
    if result.best is not None:
        if progress is not None:
            progress("measuring the tuner's best configuration 10 more times…")
        # the tuner's best is one reading, the maximum of many noisy ones: measure it again
        again = [r[primary.pi] for r in readings(dict(result.best.setting), 11)[1:]]
        finite = [v for v in again if math.isfinite(v)]
        if len(finite) >= 2:
            ci = t_interval(finite)
            confirmed = {
                "pi": primary.pi,
                "unit": pis[primary.pi].unit,
                "n": len(finite),
                "mean": ci.mean,
                "half_width": ci.half_width,
                "confidence": ci.confidence,
            }
            result = replace(result, confirmed=confirmed)
    if progress is not None:
        progress("estimating the tuning cost (top-k vs all knobs) on the forest model…")
    y = composite_score(objective, metrics) if objective is not None else metrics[primary.pi]
    model = surrogate_objective(space, samples, y, n_trees=cfg.trees, seed=cfg.seed)
    cost = compare_tuning_cost(
        space,
        model,
        list(primary.top),
        opts.tune or 1,
        seeds=[cfg.seed, cfg.seed + 1, cfg.seed + 2],
        direction=primary.direction,
        allow_unsafe=cfg.allow_unsafe,
    )
    return result, cost


class _MeasureView:
    """Which samples are being measured, and how far along."""

    def __init__(self, err: Console) -> None:
        from assay.report.terminal import LiveLine

        self.line = LiveLine(err)

    def __enter__(self) -> _MeasureView:
        self.line.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.line.__exit__(*exc)

    def update(self, what: str, p: Any) -> None:
        failed = f" · {p.failed} failed" if p.failed else ""
        self.line.show(f"measuring {what}: {p.done}/{p.total}{failed}", p.done == p.total)
