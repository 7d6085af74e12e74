"""hyperfine's options on ``assay run`` and ``assay compare``, where its users put them:
parameter scans (``-P``/``-D``/``-L``), its export formats, ``--runs``, ``--setup`` and
``--cleanup``, ``--conclude``, ``--time-unit``, ``-N``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from assay.errors import SpecError

F = TypeVar("F", bound=Callable[..., Any])


# --time-unit's names (report.format.TIME_UNITS, kept here: --help imports no report)
_TIME_UNIT_NAMES = ("second", "millisecond", "microsecond", "nanosecond", "s", "ms", "us", "ns")


def _set_time_unit(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None:
        from assay.report.format import set_time_unit

        set_time_unit(value)


def hyperfine_options(f: F) -> F:
    """The options, for a command's decorators."""
    options = [
        click.option(
            "-P",
            "--parameter-scan",
            "scan",
            nargs=3,
            metavar="NAME LOW HIGH",
            help="Scan a parameter: run the command with {NAME} = LOW, LOW+1, ... HIGH (-D "
            "for another step), each value a variant of one interleaved comparison; "
            "reported in scan order with the fitted trend (e.g. -P t 1 4 -- sleep 0.0{t}).",
        ),
        click.option(
            "-D",
            "--parameter-step-size",
            "scan_step",
            metavar="STEP",
            help="The step of -P (decimal: -D 0.1 gives 0.3, not 0.30000000000000004).",
        ),
        click.option(
            "-L",
            "--parameter-list",
            "scan_lists",
            nargs=2,
            multiple=True,
            metavar="NAME A,B,...",
            help="Scan a parameter over a list of values (several -L: every combination).",
        ),
        click.option(
            "--plot",
            "plot",
            metavar="PATH",
            help="A scan (-P/-L, or variants that differ only in parameter values): "
            "each value's mean and CI against the parameter, with the trend (PNG or SVG).",
        ),
        click.option(
            "--export-json",
            "hyperfine_json",
            metavar="PATH",
            help="Write hyperfine's JSON export (results with times, exit codes and, for a "
            "scan, parameters): what tools made for hyperfine read ('-' = stdout).",
        ),
        click.option(
            "--export-csv",
            "hyperfine_csv",
            metavar="PATH",
            help="Write hyperfine's CSV export (one row per command; '-' = stdout).",
        ),
        click.option(
            "--runs",
            type=click.IntRange(min=2),
            help="Exactly N rounds (cycles for compare), after --warmup W's W rounds: no "
            "earlier stop, no later one; run "
            "prints mean ± σ, min … max as hyperfine does, and exits 0 unless --ci-width "
            "was asked for too.",
        ),
        click.option(
            "--setup",
            "setup_cmd",
            metavar="CMD",
            help="Quick mode: a shell command run once before the first trial (unmeasured).",
        ),
        click.option(
            "--conclude",
            "conclude_cmd",
            metavar="CMD",
            help="Quick mode: a shell command run after every trial (unmeasured; e.g. to "
            "stop what the trial started).",
        ),
        click.option(
            "--cleanup",
            "cleanup_cmd",
            metavar="CMD",
            help="Quick mode: a shell command run once after the last trial (unmeasured).",
        ),
        click.option(
            "-u",
            "--time-unit",
            type=click.Choice(_TIME_UNIT_NAMES),
            callback=_set_time_unit,
            expose_value=False,
            help="Show times in this unit (default: the one that suits each value).",
        ),
        click.option(
            "-N",
            "--no-shell",
            "no_shell",
            is_flag=True,
            help="Accepted for hyperfine's sake: commands run without a shell unless --shell.",
        ),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def scan_axes(opts: dict[str, Any]) -> list[Any]:
    """The scanned parameters (:class:`~assay.designs.scan.ScanAxis`) of ``-P``/``-D``/
    ``-L``, in the order given (``-P`` first); :class:`SpecError` for bad values."""
    from assay.designs.scan import ScanError, list_axis, range_axis

    if opts.get("scan_step") is not None and not opts.get("scan"):
        raise SpecError("-D: the step of a -P scan; give -P NAME LOW HIGH too")
    try:
        axes = []
        if opts.get("scan"):
            name, low, high = opts["scan"]
            axes.append(range_axis(name, low, high, opts.get("scan_step")))
        axes += [list_axis(name, values) for name, values in opts.get("scan_lists") or ()]
    except ScanError as exc:
        raise SpecError(str(exc)) from None
    return axes


def scan_variant_dicts(command: list[str], axes: list[Any]) -> list[dict[str, Any]]:
    """The ``[[variant]]`` entries of a scan of ``command``."""
    from assay.designs.scan import ScanError, scan_variants

    try:
        return [{"name": v.name, "params": v.params} for v in scan_variants(command, axes)]
    except ScanError as exc:
        raise SpecError(str(exc)) from None


def apply_runs(opts: dict[str, Any]) -> None:
    """``--runs N``: exactly N measured rounds, as ``--min-rounds N --max-rounds N``;
    with ``--warmup W`` (a number) W rounds more, discarded first, as hyperfine runs W
    warm-ups and then N."""
    runs = opts.get("runs")
    if runs is None:
        return
    warmup = opts.get("warmup")
    total = runs + warmup if isinstance(warmup, int) and warmup > 0 else runs
    for key, flag in (("max_rounds", "--max-rounds"), ("min_rounds", "--min-rounds")):
        if opts.get(key) is not None and opts[key] != total:
            raise SpecError(f"--runs {runs} and {flag} {opts[key]}: give one of them")
        opts[key] = total


def quick_steps(bench: dict[str, Any], opts: dict[str, Any]) -> None:
    """``--setup``/``--cleanup`` as the quick study's setup and teardown steps."""
    if opts.get("setup_cmd"):
        bench["setup"] = ["/bin/sh", "-c", opts["setup_cmd"]]
    if opts.get("cleanup_cmd"):
        bench["teardown"] = ["/bin/sh", "-c", opts["cleanup_cmd"]]
    if opts.get("conclude_cmd"):
        bench["conclude"] = ["/bin/sh", "-c", opts["conclude_cmd"]]


def refuse_in_study_file(opts: dict[str, Any]) -> None:
    """Options that build a quick study, given with a study file."""
    given = [
        flag
        for key, flag in (
            ("scan", "-P"),
            ("scan_lists", "-L"),
            ("setup_cmd", "--setup"),
            ("cleanup_cmd", "--cleanup"),
            ("conclude_cmd", "--conclude"),
        )
        if opts.get(key)
    ]
    if given:
        raise SpecError(
            f"{', '.join(given)}: quick mode only; in a study file use [[variant]] params "
            "(a scan) and [benchmark] setup / conclude / teardown"
        )


def write_hyperfine_exports(opts: dict[str, Any], store_path: Path, spec: Any) -> None:
    """``--export-json`` and ``--export-csv`` from the study's stored trials."""
    if not (opts.get("hyperfine_json") or opts.get("hyperfine_csv")):
        return
    from assay.report.export import hyperfine_csv, hyperfine_json, write_text
    from assay.studies.scan import hyperfine_results

    results = hyperfine_results(store_path, spec)
    if opts.get("hyperfine_json"):
        write_text(opts["hyperfine_json"], hyperfine_json(results))
    if opts.get("hyperfine_csv"):
        write_text(opts["hyperfine_csv"], hyperfine_csv(results))
