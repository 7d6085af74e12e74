"""The ``assay`` command line: parse, call, print."""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.markup import escape

from assay import __version__
from assay.spec import Spec, SpecError, StopSpec, load_spec, parse_spec_data, slug

STUDY_FILE_HELP = """
\b
Study file (TOML):
  [study]      name = "..."  store = "x.assay.db" (default: beside the file)
  [benchmark]  command = ["prog", "--rows", "{rows}"]  shell = false
               setup / reset / teardown = [argv]  timeout = 600  env = {K = "{p}"}
               work = {min = 1000, max = 100000}  (adjustable work: {work} placeholder,
               enables the work-per-second regression)
  [params]     rows = 1000
  [[pi]]       name = "tps"  unit = "tx/s"  direction = "higher"
               source = "wall_time" | "regex" (pattern) | "json" (path) | "file" (file)
               units = {source = "regex", pattern = 'lat=([0-9.]+)'}  (unit readings)
  [stop]       ci_width = 0.05  confidence = 0.95  max_rounds = 1000  max_time = 600
               min_samples = 10  warmup_rounds = 0  max_autocorrelation = 0.1
               warmup_removal = "edm" | "edm-pilot" (as published) | "none"
               residual_correction = true  (false: Pilot's plain subsession t-interval)
               max_failures = 0.5  (stop early when more than this share of trials fail)
  [benchmark]  under_test = "cpu" | "disk" | "network" | "memory"  (bottleneck watch:
               warn when another component passes 80% utilisation; default: any)
"""


def _err_console() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)


def _parse_width(_ctx: click.Context, _param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    text = value.strip()
    try:
        x = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise click.BadParameter(
            f"{value!r}: expected a fraction like 0.05 or a percent like 5%"
        ) from None
    if not 0 < x < 10:
        raise click.BadParameter(f"{value!r}: the relative half-width must be > 0")
    return x


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="assay")
def main() -> None:
    """Assay runs performance experiments the right way and says what the numbers mean.

    Every number comes with its confidence interval, sample count and method.
    """


F = TypeVar("F", bound=Callable[..., Any])


def _stop_options(f: F) -> F:
    """Options shared by ``run`` and ``compare``: the stopping rule and the executor."""
    options = [
        click.option(
            "--ci-width",
            callback=_parse_width,
            metavar="W",
            help="Target relative CI half-width, e.g. 0.05 or 5% (default 5%).",
        ),
        click.option(
            "--confidence",
            type=click.FloatRange(0, 1, min_open=True, max_open=True),
            help="Confidence level (default 0.95).",
        ),
        click.option(
            "--max-time",
            type=click.FloatRange(min=0, min_open=True),
            help="Stop after this many seconds of measured time.",
        ),
        click.option(
            "--min-samples",
            type=click.IntRange(min=2),
            help="Samples (after subsession merging) needed before stopping (default 10).",
        ),
        click.option("--warmup", type=click.IntRange(min=0), help="Discard the first N rounds."),
        click.option(
            "--timeout",
            type=click.FloatRange(min=0, min_open=True),
            help="Per-trial timeout in seconds (quick mode; default 600).",
        ),
        click.option(
            "--shell", is_flag=True, help="Quick mode: run the command through /bin/sh -c."
        ),
        click.option("--store", type=click.Path(dir_okay=False), help="SQLite store to use."),
        click.option(
            "--fresh",
            is_flag=True,
            help="Archive this study's stored trials and start again instead of resuming.",
        ),
        click.option(
            "--json", "json_out", metavar="PATH", help="Write the result as JSON ('-' = stdout)."
        ),
        click.option("--no-overhead", is_flag=True, help="Skip the launch-overhead measurement."),
        click.option(
            "--no-monitor",
            is_flag=True,
            help="Turn off the bottleneck watch (CPU, memory, disk and network sampling).",
        ),
        click.option(
            "--under-test",
            type=click.Choice(["cpu", "disk", "network", "memory"]),
            help="The component the benchmark stresses: the bottleneck watch warns when "
            "another passes 80% (overrides [benchmark].under_test).",
        ),
        click.option("-q", "--quiet", is_flag=True, help="No progress display."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


@main.command(
    context_settings={"ignore_unknown_options": True},
    epilog=STUDY_FILE_HELP,
)
@click.argument("target", nargs=-1, type=click.UNPROCESSED, required=True)
@click.option("--max-rounds", type=click.IntRange(min=1), help="Stop after this many trials.")
@click.option("--name", help="Quick mode: the study name (default: from the command and time).")
@click.option("--csv", "csv_out", metavar="PATH", help="Write one CSV row per PI ('-' = stdout).")
@_stop_options
def run(target: tuple[str, ...], **opts: Any) -> None:
    """Measure until every CI is as narrow as asked (Pilot's method).

    \b
    Quick mode, like hyperfine but with a stopping rule:
      assay run -- python -c "sum(range(10**6))"
    Study mode, from a study file (resumes if interrupted):
      assay run examples/run-sqlite-insert.toml

    Each PI is reported as mean ± CI half-width with the number of samples, the
    subsession size (adjacent samples merged until |lag-1 autocorrelation| <= 0.1),
    the warm-up removed (E-Divisive with Medians on unit readings) and the method.
    """
    # pipes and CI logs get a readable width instead of rich's 80-column default
    # heavy imports (NumPy, SciPy, pandas) only once a command runs: --help stays fast
    from assay.report.export import to_csv, to_json, write_text
    from assay.report.terminal import ProgressView, render_result, study_errors
    from assay.runner import Runner

    console = Console(highlight=False, width=None if sys.stdout.isatty() else 110)
    err = _err_console()
    try:
        spec, store_path = _spec_from_target(target, opts)
        if spec.variants:
            raise SpecError(
                f"{spec.source_path}: this study compares [[variant]]s; run it with "
                f"'assay compare {spec.source_path}'"
            )
        if spec.tests:
            raise SpecError(
                f"{spec.source_path}: this study lists [[test]]s for the ordering trap; run "
                f"it with 'assay order {spec.source_path}'"
            )
        if spec.sweep is not None:
            raise SpecError(
                f"{spec.source_path}: this study sweeps a parameter space ([sweep]); run it "
                f"with 'assay sweep {spec.source_path}'"
            )
        if spec.knob_specs:
            raise SpecError(
                f"{spec.source_path}: this study samples [[knob]]s; run it with "
                f"'assay knobs {spec.source_path}'"
            )
    except SpecError as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}")
        sys.exit(2)
    spec = _with_under_test(spec, opts)
    progress = ProgressView(err, spec.stop.ci_width)
    resume = (
        "Run the same command again to resume."
        if spec.source_path and spec.source_path.endswith(".toml")
        else f"Resume with: assay run --store {store_path} --name '{spec.study.name}' -- …"
    )
    with (
        study_errors(err, store_path, resume),
        progress if not opts["quiet"] else contextlib.nullcontext(),
    ):
        runner = Runner(
            spec,
            store_path,
            fresh=opts["fresh"],
            measure_overhead=not opts["no_overhead"],
            monitor=not opts["no_monitor"],
            on_progress=None if opts["quiet"] else progress.update,
        )
        result = runner.run()
    render_result(result, console)
    data = result.as_dict()
    if opts["json_out"]:
        write_text(opts["json_out"], to_json(data))
    if opts["csv_out"]:
        write_text(opts["csv_out"], to_csv(result.study, data["pis"]))


def _with_under_test(spec: Spec, opts: dict[str, Any]) -> Spec:
    """``--under-test`` laid over ``[benchmark].under_test`` (not part of the study's hash)."""
    if opts.get("under_test") is None:
        return spec
    bench = spec.benchmark.model_copy(update={"under_test": opts["under_test"]})
    return spec.model_copy(update={"benchmark": bench})


def _stop_overrides(opts: dict[str, Any]) -> dict[str, Any]:
    keys = {
        "ci_width": "ci_width",
        "confidence": "confidence",
        "max_rounds": "max_rounds",
        "max_time": "max_time",
        "min_samples": "min_samples",
        "warmup": "warmup_rounds",
        "alpha": "alpha",
        "require_ci_width": "require_ci_width",
    }
    return {field: opts[o] for o, field in keys.items() if opts.get(o) is not None}


def _is_study_file(target: tuple[str, ...]) -> bool:
    return len(target) == 1 and target[0].endswith(".toml") and "--" not in sys.argv[:2]


def _spec_from_target(target: tuple[str, ...], opts: dict[str, Any]) -> tuple[Spec, Path]:
    overrides = _stop_overrides(opts)
    if _is_study_file(target):
        spec = load_spec(target[0])
        if overrides:
            stop = spec.stop.model_copy(update=overrides)
            spec = spec.model_copy(update={"stop": StopSpec.model_validate(stop.model_dump())})
        store = Path(opts["store"]) if opts["store"] else spec.store_path()
        return spec, store
    return _quick_spec(target, opts, overrides)


def _quick_spec(
    target: tuple[str, ...], opts: dict[str, Any], overrides: dict[str, Any]
) -> tuple[Spec, Path]:
    argv = [a for a in target]
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise SpecError("no command given: use 'assay run -- CMD ARGS...' or 'assay run FILE.toml'")
    name = opts["name"] or f"quick {time.strftime('%Y%m%d-%H%M%S')} {slug(' '.join(argv))[:40]}"
    bench: dict[str, Any] = {"command": argv, "shell": bool(opts["shell"])}
    if opts["timeout"] is not None:
        bench["timeout"] = opts["timeout"]
    data = {"study": {"name": name}, "benchmark": bench, "stop": overrides}
    return _quick_store(parse_spec_data(data, source="command line"), opts)


def _quick_store(spec: Spec, opts: dict[str, Any]) -> tuple[Spec, Path]:
    spec = spec.model_copy(update={"source_path": None})
    if opts["store"]:
        store = Path(opts["store"])
    else:
        cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "assay"
        store = cache / "quick.assay.db"
    return spec, store


COMPARE_FILE_HELP = """
\b
Study file: as for 'assay run' (see 'assay run --help'), plus two or more variants:
  [[variant]]  name = "off"  params = {sync = "OFF"}   (laid over [params])
  [[variant]]  name = "new"  command = ["./new", "{rows}"]  env = {K = "v"}
               (a variant without command runs [benchmark].command)
  [stop]       alpha = 0.01  (Welch threshold)  require_ci_width = false
               max_rounds counts cycles (every variant once); max_time = 600
"""


def _split_commands(target: tuple[str, ...]) -> list[list[str]]:
    """``CMD_A ... -- CMD_B ...`` (the first ``--`` is consumed by the parser) -> argvs."""
    args = list(target)
    if args and args[0] == "--":
        args = args[1:]
    groups: list[list[str]] = [[]]
    for a in args:
        if a == "--":
            groups.append([])
        else:
            groups[-1].append(a)
    if any(not g for g in groups):
        raise SpecError("an empty command between '--' separators: give each variant a command")
    if len(groups) < 2:
        raise SpecError(
            "assay compare needs at least two commands, each after its own '--': "
            "assay compare -- CMD_A ARGS... -- CMD_B ARGS... (or a study file with "
            "[[variant]]s, or --from FILES)"
        )
    return groups


def _variant_names(groups: list[list[str]], given: tuple[str, ...]) -> list[str]:
    if given:
        if len(given) != len(groups):
            raise SpecError(
                f"--name given {len(given)} times for {len(groups)} commands: name every "
                "command, in order, or none"
            )
        if len(set(given)) != len(given):
            raise SpecError(f"--name: the names must be unique, got {', '.join(given)}")
        return list(given)
    names: list[str] = []
    for g in groups:
        base = shlex.join(g)
        name, k = base, 2
        while name in names:
            name, k = f"{base} #{k}", k + 1
        names.append(name)
    return names


def _compare_spec(target: tuple[str, ...], opts: dict[str, Any]) -> tuple[Spec, Path]:
    overrides = _stop_overrides(opts)
    if _is_study_file(target):
        spec, store = _spec_from_target(target, opts)
        if len(spec.variants) < 2:
            raise SpecError(
                f"{spec.source_path}: assay compare needs a study file with at least two "
                "[[variant]] entries (see 'assay compare --help')"
            )
        return spec, store
    groups = _split_commands(target)
    names = _variant_names(groups, opts["name"])
    study = opts["study"] or (
        f"compare {time.strftime('%Y%m%d-%H%M%S')} {slug(' vs '.join(names))[:40]}"
    )
    bench: dict[str, Any] = {"command": groups[0], "shell": bool(opts["shell"])}
    if opts["timeout"] is not None:
        bench["timeout"] = opts["timeout"]
    data = {
        "study": {"name": study},
        "benchmark": bench,
        "variant": [{"name": n, "command": g} for n, g in zip(names, groups, strict=True)],
        "stop": overrides,
    }
    return _quick_store(parse_spec_data(data, source="command line"), opts)


@main.command(
    context_settings={"ignore_unknown_options": True},
    epilog=COMPARE_FILE_HELP,
)
@click.argument("target", nargs=-1, type=click.UNPROCESSED, required=True)
@click.option(
    "--from",
    "from_files",
    is_flag=True,
    help="Compare existing results: TARGET is hyperfine/pyperf/Assay JSON files.",
)
@click.option("--name", multiple=True, help="Quick mode: name the variants, once per command.")
@click.option("--study", help="Quick mode: the study name (default: from the commands and time).")
@click.option("--pi", help="The PI that decides (default: the study's first).")
@click.option(
    "--max-rounds",
    type=click.IntRange(min=1),
    help="Stop after this many cycles (each variant once per cycle; default 1000).",
)
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    help="Welch's threshold for a significant difference (default 0.01).",
)
@click.option(
    "--require-ci-width/--no-require-ci-width",
    default=None,
    help="Also wait until every CI is within --ci-width (Pilot's optional third condition).",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    help="Seed of the random order within each cycle (default: random, recorded in the store).",
)
@click.option(
    "--fixed-order",
    is_flag=True,
    default=None,
    help="Run the variants in the given order in every cycle.",
)
@click.option(
    "--csv", "csv_out", metavar="PATH", help="Write one CSV row per variant ('-' = stdout)."
)
@_stop_options
def compare(target: tuple[str, ...], **opts: Any) -> None:
    """Decide which of several commands is best, in the least time (Pilot §III-F).

    \b
    Quick mode (each command after its own --):
      assay compare -- python3 -c "sorted(range(10**6))" -- python3 -c "list(range(10**6))"
    Study mode, variants from a study file (resumes if interrupted):
      assay compare examples/compare-sqlite-sync.toml
    Existing results (hyperfine --export-json, pyperf JSON, assay --json):
      assay compare --from old.json new.json

    Rounds are interleaved (A0 B0 A1 B1 ...), in a fresh seeded random order per cycle.
    After each cycle the variants are ranked on the deciding PI; it stops when every
    adjacent pair's CIs are separated or Welch's p < alpha (and every CI is narrow
    enough, with --require-ci-width), or when the budget ends, saying which pairs are
    undecided and how many more rounds Welch's sample-size estimate asks for.
    """
    from assay.compare_runner import CompareResult, CompareRunner
    from assay.report.compare import CSV_FIELDS, CompareProgressView, csv_rows, render_comparison
    from assay.report.export import rows_to_csv, to_json, write_text
    from assay.report.terminal import study_errors

    console = Console(highlight=False, width=None if sys.stdout.isatty() else 130)
    err = _err_console()
    result: CompareResult
    if opts["from_files"]:
        try:
            result = _compare_files(target, opts)
        except (SpecError, ValueError) as exc:
            err.print(f"[red]error:[/] {escape(str(exc))}")
            sys.exit(2)
    else:
        try:
            spec, store_path = _compare_spec(target, opts)
            pis = [p.name for p in spec.pis]
            if opts["pi"] is not None and opts["pi"] not in pis:
                raise SpecError(
                    f"--pi {opts['pi']!r}: no such PI; the study's PIs: {', '.join(pis)}"
                )
        except SpecError as exc:
            err.print(f"[red]error:[/] {escape(str(exc))}")
            sys.exit(2)
        spec = _with_under_test(spec, opts)
        progress = CompareProgressView(err)
        how = (
            "Run the same command again to resume."
            if spec.source_path and spec.source_path.endswith(".toml")
            else f"Resume with: assay compare --store {store_path} --study '{spec.study.name}' -- …"
        )
        with (
            study_errors(err, store_path, how),
            progress if not opts["quiet"] else contextlib.nullcontext(),
        ):
            runner = CompareRunner(
                spec,
                store_path,
                pi=opts["pi"],
                seed=opts["seed"],
                fixed_order=opts["fixed_order"],
                fresh=opts["fresh"],
                measure_overhead=not opts["no_overhead"],
                monitor=not opts["no_monitor"],
                on_compare_progress=None if opts["quiet"] else progress.update,
            )
            result = runner.run()
    render_comparison(result, console)
    if opts["json_out"]:
        write_text(opts["json_out"], to_json(result.as_dict()))
    if opts["csv_out"]:
        write_text(opts["csv_out"], rows_to_csv(CSV_FIELDS, csv_rows(result)))


def _compare_files(target: tuple[str, ...], opts: dict[str, Any]) -> Any:
    """``--from``: rank existing results (no execution)."""
    from assay.compare_runner import CompareResult
    from assay.designs.compare import CompareDecision, compare_pi, undecided_text
    from assay.report.imports import read_result_files

    files = [t for t in target if t != "--"]
    results = read_result_files(files, pi=opts["pi"])
    if len(results) < 2:
        raise SpecError(
            f"--from: found {len(results)} result(s) in {', '.join(files)}; "
            "a comparison needs at least two"
        )
    for attr in ("unit", "direction"):
        kinds = {getattr(r, attr) for r in results}
        if len(kinds) > 1:
            raise SpecError(
                f"--from: the results differ in {attr} ({', '.join(sorted(kinds))}); "
                "compare results of the same PI (pick one with --pi)"
            )
    first = results[0]
    pi_name = opts["pi"] or first.pi or "wall_time"
    formats = sorted({r.format for r in results})
    summaries = any(r.samples is None for r in results)
    method = (
        f"imported ({', '.join(formats)}): samples subsession-merged"
        + (
            "; Assay results as summaries (mean, subsession variance from the CI)"
            if summaries
            else ""
        )
        + "; Welch's t-test, Mann-Whitney U (samples only), Hedges' g"
    )
    comp = compare_pi(
        pi_name,
        first.unit,
        first.direction,
        {r.name: r.data for r in results},
        alpha=opts["alpha"] or 0.01,
        confidence=opts["confidence"] or 0.95,
        method=method,
    )
    r = comp.ranking
    if r.decided:
        reason = f"decided: every adjacent pair is CI-separated or Welch p < {r.alpha:g}"
    else:
        reason = f"not decided from these results; {undecided_text(r)}"
    decision = CompareDecision(
        True,
        reason,
        0 if r.decided else None,
        decided=r.decided,
        undecided=tuple((p.better, p.worse) for p in r.undecided),
    )
    return CompareResult(
        study=f"compare --from {' '.join(Path(f).name for f in files)}",
        store="",
        pi=pi_name,
        comparisons=[comp],
        decision=decision,
        seed=None,
        fixed_order=False,
        cycles=0,
        trials_total=0,
        sources=files,
        warnings=[f"{name}: {why}" for name, why in r.problems.items()],
    )


ORDER_FILE_HELP = """
\b
Study file: as for 'assay run' (see 'assay run --help'), plus two or more tests:
  [[test]]     name = "read"  params = {op = "read"}   (laid over [params])
  [[test]]     name = "warm"  command = ["cat", "data.bin"]  env = {K = "v"}
               (a test without command runs [benchmark].command)
  [benchmark]  reset = [argv]  (run before every trial: the clean state)
  [order]      runs = 5 (runs of each kind)  fixed_runs / random_runs (override)
               repetitions = 3 (trials of each test per run)  seed = 1 (default: random)
               baseline = "blocked" (A A B B) | "cycled" (A B A B)
               alpha = 0.05  test = "kruskal" | "mann-whitney"
               drift = "spearman" | "kendall"  confidence = 0.95 (median CIs)
\b
--from CSV: columns test, order (fixed or random), run, position, value
"""


@main.command(epilog=ORDER_FILE_HELP)
@click.argument("target")
@click.option(
    "--from",
    "from_file",
    is_flag=True,
    help="Analyse existing trials: TARGET is a CSV with columns test, order, run, position, value.",
)
@click.option(
    "--runs", type=click.IntRange(min=1), help="Runs of each kind (default [order].runs, 5)."
)
@click.option(
    "--repetitions",
    type=click.IntRange(min=1),
    help="Trials of each test per run (default [order].repetitions, 3).",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    help="Seed of the random orders (default: random, recorded in the store).",
)
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    help="Experiment-wide significance level, Bonferroni-corrected (default 0.05).",
)
@click.option("--pi", help="The PI analysed (default: the study's first).")
@click.option("--unit", help="--from: the unit of the values (e.g. s, ms, MB/s).")
@click.option("--json", "json_out", metavar="PATH", help="Write the result as JSON ('-' = stdout).")
@click.option("--csv", "csv_out", metavar="PATH", help="Write one CSV row per test ('-' = stdout).")
@click.option(
    "--trials-csv",
    "trials_out",
    metavar="PATH",
    help="Write every successful trial in the --from format ('-' = stdout).",
)
@click.option("--plot", metavar="PATH", help="Plot medians with CIs, fixed vs random (.png/.svg).")
@click.option("--store", type=click.Path(dir_okay=False), help="SQLite store to use.")
@click.option("--fresh", is_flag=True, help="Archive this study's stored trials and start again.")
@click.option("--no-overhead", is_flag=True, help="Skip the launch-overhead measurement.")
@click.option("--no-monitor", is_flag=True, help="Turn off the bottleneck watch.")
@click.option("-q", "--quiet", is_flag=True, help="No progress display.")
def order(target: str, **opts: Any) -> None:
    """Detect the ordering trap: do the tests' results depend on their order?

    \b
      assay order examples/order-file-cache.toml --plot order.png
      assay order --from trials.csv

    Runs the tests in one baseline (fixed) order and in seeded random orders, N runs
    of each kind, each test repeated R times per run, calling the reset command before
    every trial. Per test, fixed-order and random-order results are compared with the
    Kruskal-Wallis and Mann-Whitney U tests; order matters when any test's p-value is
    below the Bonferroni threshold alpha / (number of tests). Also: the relative
    difference of the means, the medians with distribution-free CIs, and the drift of
    each test's result with its position in the run. Resumes if interrupted.
    """
    from assay.order_runner import OrderResult, OrderRunner
    from assay.report.export import rows_to_csv, to_json, write_text
    from assay.report.order import (
        CSV_FIELDS,
        OrderDataError,
        OrderProgressView,
        csv_rows,
        plot_order,
        render_order,
        trials_csv,
    )
    from assay.report.terminal import study_errors

    console = Console(highlight=False, width=None if sys.stdout.isatty() else 130)
    err = _err_console()
    plot = opts["plot"]
    result: OrderResult
    try:
        if plot is not None and Path(plot).suffix.lower() not in (".png", ".svg"):
            raise SpecError(f"--plot {plot}: expected a file name ending in .png or .svg")
        if opts["from_file"]:
            result = _order_from_csv(target, opts)
        else:
            spec = load_spec(target)
            if len(spec.tests) < 2:
                raise SpecError(
                    f"{spec.source_path}: assay order needs a study file with at least two "
                    "[[test]] entries (see 'assay order --help')"
                )
            pis = [p.name for p in spec.pis]
            if opts["pi"] is not None and opts["pi"] not in pis:
                raise SpecError(
                    f"--pi {opts['pi']!r}: no such PI; the study's PIs: {', '.join(pis)}"
                )
    except (SpecError, OrderDataError) as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}")
        sys.exit(2)
    if not opts["from_file"]:
        store_path = Path(opts["store"]) if opts["store"] else spec.store_path()
        progress = OrderProgressView(err)
        resume = "Run the same command again to resume the same schedule."
        with (
            study_errors(err, store_path, resume),
            progress if not opts["quiet"] else contextlib.nullcontext(),
        ):
            runner = OrderRunner(
                spec,
                store_path,
                pi=opts["pi"],
                runs=opts["runs"],
                repetitions=opts["repetitions"],
                seed=opts["seed"],
                alpha=opts["alpha"],
                fresh=opts["fresh"],
                measure_overhead=not opts["no_overhead"],
                monitor=not opts["no_monitor"],
                on_order_progress=None if opts["quiet"] else progress.update,
            )
            result = runner.run()
    render_order(result, console)
    if opts["json_out"]:
        write_text(opts["json_out"], to_json(result.as_dict()))
    if opts["csv_out"]:
        write_text(opts["csv_out"], rows_to_csv(CSV_FIELDS, csv_rows(result)))
    if opts["trials_out"]:
        write_text(opts["trials_out"], trials_csv(result.table))
    if plot is not None:
        plot_order(result, plot)


def _order_from_csv(target: str, opts: dict[str, Any]) -> Any:
    """``assay order --from trials.csv``: analyse existing trials (no execution)."""
    from assay.order_runner import OrderResult, analyse_table
    from assay.report.order import read_trials_csv
    from assay.spec import OrderSpec

    given = [f"--{k}" for k in ("runs", "repetitions", "seed", "pi", "store") if opts[k]]
    if opts["fresh"]:
        given.append("--fresh")
    if given:
        raise SpecError(
            f"{', '.join(given)}: not used with --from (the trials are read from {target})"
        )
    table = read_trials_csv(target)
    settings = OrderSpec(alpha=opts["alpha"] or 0.05)
    analysis = analyse_table(table, settings, list(dict.fromkeys(table["test"])))
    return OrderResult(
        study=f"order --from {Path(target).name}",
        store="",
        pi="value",
        unit=opts["unit"] or "",
        direction="lower",
        analysis=analysis,
        plan=None,
        reason=f"analysed {len(table)} trials from {target}",
        table=table,
        trials_planned=len(table),
        trials_total=len(table),
        sources=[target],
        warnings=[f"{r.test}: {r.note}" for r in analysis.results if r.note],
    )


def _knobs_help() -> str:
    from assay.knobs_command import KNOBS_FILE_HELP

    return KNOBS_FILE_HELP


@main.command(epilog=_knobs_help())
@click.argument("study", required=False)
@click.option("--from", "from_csv", metavar="CSV", help="Rank knobs of measured settings.")
@click.option(
    "--metric",
    "metrics",
    multiple=True,
    metavar="PI[:higher|lower]",
    help="A PI column to rank the knobs for (repeat for several; each gets its own ranking).",
)
@click.option("--knob", "knob_columns", multiple=True, help="--from: only these knob columns.")
@click.option("--unsafe", multiple=True, help="--from: mark a knob unsafe (not tuned).")
@click.option("--top", type=click.IntRange(min=1), help="Knobs to hand on (default 5).")
@click.option("--trees", type=click.IntRange(min=1), help="Random-forest trees (default 300).")
@click.option("--seed", type=click.IntRange(min=0), help="Seed of sampling and models (0).")
@click.option("--objective", help="Composite objective, e.g. 'max tps s.t. p99<=20'.")
@click.option(
    "--rank-by",
    type=click.Choice(["impurity", "permutation"]),
    help="Importance whose top-k is handed on (default impurity, as in the paper).",
)
@click.option("--samples", type=click.IntRange(min=10), help="Study: LHS samples to measure.")
@click.option("--tune", type=click.IntRange(min=1), metavar="TRIALS", help="Tune the top-k.")
@click.option("--allow-unsafe", is_flag=True, help="Let the tuner change unsafe knobs.")
@click.option("--jobs", type=int, help="CPU cores for the models (default: all).")
@click.option("--json", "json_out", metavar="PATH", help="Write the result as JSON ('-' = stdout).")
@click.option(
    "--csv", "csv_out", metavar="PATH", help="One CSV row per PI and knob ('-' = stdout)."
)
@click.option("--plot", metavar="PATH", help="Importance bar chart (.png, .svg, .pdf).")
@click.option("--store", type=click.Path(dir_okay=False), help="Study: SQLite store to use.")
@click.option("--fresh", is_flag=True, help="Study: archive stored trials and start again.")
@click.option("-q", "--quiet", is_flag=True, help="No progress display.")
def knobs(study: str | None, **opts: Any) -> None:
    """Find the few knobs that matter (Latin Hypercube samples + random-forest importance).

    \b
    From measured settings:  assay knobs --from samples.csv --metric throughput
    From a study file:       assay knobs STUDY.toml --samples 100 [--tune 50]

    Knobs are ranked by impurity importance (Kanellis et al.) beside held-out permutation
    importance; the top-k models' out-of-bag R², the stability of the top-k on subsets of
    the samples, the validation (only the top-k varied) and tuning (Optuna) follow.
    """
    from assay.knobs_command import KnobsOptions, run_live, run_offline

    console = Console(highlight=False, width=None if sys.stdout.isatty() else 130)
    err = _err_console()
    options = KnobsOptions(**opts)
    if (study is None) == (options.from_csv is None):
        err.print(
            "[red]error:[/] give a study file (assay knobs STUDY.toml) or measured settings "
            "(assay knobs --from samples.csv --metric PI), not both or neither"
        )
        sys.exit(2)
    code = (
        run_offline(options, console, err)
        if study is None
        else run_live(study, options, console, err)
    )
    if code:
        sys.exit(code)


if __name__ == "__main__":
    main()


def _register_commands() -> None:
    """Subcommands that live in :mod:`assay.commands` (their heavy imports stay lazy)."""
    from assay.commands.sweep import sweep

    main.add_command(sweep)


_register_commands()
