"""``assay compare``: which of several commands is best, in the least time (Pilot §III-F)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from assay.cli import exits
from assay.cli.common import (
    cluster_options,
    command_words,
    err_console,
    fail,
    hoist_options,
    is_study_file,
    prepare_local_session,
    quick_name,
    quick_resumption,
    quick_store,
    refuse_cluster_with_from,
    refuse_quick_only,
    refuse_unknown_option,
    running_study,
    spec_from_target,
    split_notes,
    stop_options,
    stop_overrides,
    trial_output_printer,
    with_under_test,
    write_outputs,
    write_study_report,
)
from assay.cli.fractions import SHARE, WIDTH
from assay.cli.hyperfine import (
    apply_runs,
    hyperfine_options,
    quick_steps,
    refuse_in_study_file,
    scan_axes,
    scan_variant_dicts,
    write_hyperfine_exports,
)
from assay.cli.outputs import check_outputs, report_console
from assay.cli.sections import SectionedCommand
from assay.errors import SpecError
from assay.importers import RESULT_FORMATS
from assay.quick import quick_benchmark, quick_study_data

if TYPE_CHECKING:
    from assay.spec import Spec

# assay.designs.compare.SEQUENTIAL_RULES, not imported: the CLI starts without NumPy
SEQUENTIAL_CHOICES = ("always-valid", "looks", "every-cycle")

COMPARE_FILE_HELP = """
\b
Study file: as for 'assay run' (see 'assay run --help'), plus two or more variants:
  [[variant]]  name = "off"  params = {sync = "OFF"}   (laid over [params])
  [[variant]]  name = "new"  command = ["./new", "{rows}"]  env = {K = "v"}
               (a variant without command runs [benchmark].command)
  [[pi]]       statistic = "median"  (heavy tails: ranked on medians, Mann-Whitney
               decides at the looks, the effect is the Hodges-Lehmann shift)
  [stop]       alpha = 0.01  (false-positive rate)  require_ci_width = false
               sequential = "always-valid"  (or "looks", "every-cycle")
               fail_if_worse = 0.05  baseline = "off"  (the CI gate: exit 1 when a
               variant is worse than the baseline by more than 5%)
               max_rounds counts cycles (every variant once); max_time = 600
               until = "claims"  (stop once every [[claim]] holds or fails)
  [[claim]]    says = "new is at least 1.5x as fast"  ratio = ["new", "off"]
               at_least = 1.5  (or at_most = 0.8, or within = "10%"); judged on
               the ratio of the two means' 90% interval: exit 1 when a claim
               fails, 5 when one is undecided
"""


def _split_commands(
    target: tuple[str, ...], *, shell: bool = False, scan: bool = False
) -> list[list[str]]:
    """``CMD_A ... -- CMD_B ...`` (the first ``--`` is consumed by the parser) -> argvs
    (``scan``: exactly one command, whose values the scan puts in)."""
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
    one_per_string = len(groups) == 1 and len(groups[0]) >= 2
    if one_per_string and not shell and all(any(c.isspace() for c in g) for g in groups[0]):
        groups = [[g] for g in groups[0]]  # hyperfine's habit: each command one string
    groups = [command_words(g, shell=shell) for g in groups]
    if scan and len(groups) != 1:
        raise SpecError(
            f"a scan (-P/-L) runs one command with its values put in; got {len(groups)} "
            "commands: e.g. assay compare -P t 1 4 -- sleep 0.0{t}"
        )
    if scan:
        return groups
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
    apply_runs(opts)
    overrides = stop_overrides(opts)
    if opts["sequential"] is not None:
        overrides["sequential"] = opts["sequential"]
    if is_study_file(target):
        refuse_in_study_file(opts)
        spec, store = spec_from_target(target, opts)
        if opts["sequential"] is not None:
            stop = spec.stop.model_copy(update={"sequential": opts["sequential"]})
            spec = spec.model_copy(update={"stop": stop})
        if len(spec.variants) < 2:
            raise SpecError(
                f"{spec.source_path}: assay compare needs a study file with at least two "
                "[[variant]] entries (see 'assay compare --help')"
            )
        return spec, store
    axes = scan_axes(opts)
    groups = _split_commands(target, shell=bool(opts["shell"]), scan=bool(axes))
    bench = quick_benchmark(
        groups[0],
        shell=bool(opts["shell"]),
        timeout=opts["timeout"],
        prepare=opts["prepare"],
        ignore_failure=bool(opts["ignore_failure"]),
    )
    quick_steps(bench, opts)
    if axes:
        if opts["name"]:
            raise SpecError("--name: a scan's variants are named by their commands")
        variants = scan_variant_dicts(groups[0], axes)
        names = [v["name"] for v in variants]
    else:
        names = _variant_names(groups, opts["name"])
        variants = [{"name": n, "command": g} for n, g in zip(names, groups, strict=True)]
    study = opts["study"] or quick_name(
        "compare", " vs ".join(names), {"benchmark": bench, "variants": variants}
    )
    data = quick_study_data(study, bench, overrides, variants=variants, median=bool(opts["median"]))
    from assay.spec import parse_spec_data

    return quick_store(parse_spec_data(data, source="command line"), opts)


@click.command(
    cls=SectionedCommand,
    context_settings={"ignore_unknown_options": True},
    epilog=COMPARE_FILE_HELP + exits.HELP,
)
@click.argument("target", nargs=-1, type=click.UNPROCESSED, required=True)
@click.option(
    "--from",
    "from_files",
    is_flag=True,
    help="Compare existing results: TARGET is hyperfine/pyperf/Assay JSON files, Google "
    "Benchmark/pytest-benchmark/asv JSON, go test -bench output or criterion folders.",
)
@click.option(
    "--format",
    "from_format",
    type=click.Choice(RESULT_FORMATS),
    help="With --from: read the files as this format (default: detected from each file).",
)
@click.option("--name", multiple=True, help="Quick mode: name the variants, once per command.")
@click.option("--study", help="Quick mode: the study name (default: from the commands).")
@click.option("--pi", help="The PI that decides (default: the study's first).")
@click.option(
    "--median",
    is_flag=True,
    help="Quick mode and --from: rank on medians (heavy tails, outliers): Mann-Whitney "
    "decides at the looks (cycles 10, 15, 23, ...), the effect is the Hodges-Lehmann "
    'shift with its distribution-free CI; in a study file: statistic = "median" in a [[pi]].',
)
@click.option(
    "-r",
    "--max-rounds",
    type=click.IntRange(min=1),
    help="Stop after this many cycles (each variant once per cycle; default 1000).",
)
@click.option(
    "--alpha",
    type=SHARE,
    help="The false-positive rate, e.g. 1% or 0.01 (default 1%): the e-value must reach "
    "1/alpha (Welch's p < alpha with --from).",
)
@click.option(
    "--sequential",
    type=click.Choice(SEQUENTIAL_CHOICES),
    help="When the study may stop: always-valid (default; after any cycle, as soon as "
    "every pair's e-value reaches 1/alpha), looks (cycles 10, 15, 23, ... at shrinking "
    "Welch levels; the former default) or every-cycle (Pilot's fixed-level rule, "
    "which finds differences that are not there).",
)
@click.option(
    "--require-ci-width/--no-require-ci-width",
    default=None,
    help="Also wait until every CI is within --ci-width (Pilot's optional third condition).",
)
@click.option(
    "--fail-if-worse",
    type=WIDTH,
    metavar="PCT",
    help="CI gate: exit 1 when a variant is worse than the baseline by more than PCT "
    "(e.g. 5%) with the study's confidence, 5 when that cannot be told, else 0.",
)
@click.option(
    "--baseline",
    metavar="NAME",
    help="The variant the others are held against by --fail-if-worse (default: the first).",
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
@stop_options
@hyperfine_options
@cluster_options
def compare(target: tuple[str, ...], **opts: Any) -> None:
    """Decide which of several commands is best, in the least time (Pilot §III-F).

    \b
    Quick mode (each command after its own --):
      assay compare -- python3 -c "sorted(range(10**6))" -- python3 -c "list(range(10**6))"
    Study mode, variants from a study file (resumes if interrupted):
      assay compare examples/compare-sqlite-sync.toml
    Existing results (hyperfine --export-json, pyperf, assay --json, Google Benchmark,
    pytest-benchmark, asv, go test -bench output, criterion folders; --format to force one):
      assay compare --from old.json new.json
    As hyperfine users write it (each command one string; --shell for shell syntax):
      assay compare "sleep 0.01" "sleep 0.02"

    Rounds are interleaved (A0 B0 A1 B1 ...), in a fresh seeded random order per cycle.
    After each cycle the variants are ranked on the deciding PI; it stops as soon as
    every adjacent pair's always-valid e-value reaches 1/alpha (a test that may be
    looked at after every cycle and still finds a difference that is not there at
    most alpha of the time; --sequential picks another rule), and every CI is narrow
    enough with --require-ci-width; or when the budget ends, saying which pairs are
    undecided and how many more rounds they need.
    """
    refuse_unknown_option(target)
    _compare(hoist_options(target, opts), opts)


#: compare's own options, as a scan from 'assay run -P/-L' leaves them
_COMPARE_DEFAULTS: dict[str, Any] = {
    "from_files": False,
    "from_format": None,
    "name": (),
    "study": None,
    "pi": None,
    "alpha": None,
    "sequential": None,
    "require_ci_width": None,
    "baseline": None,
    "seed": None,
    "fixed_order": None,
}


def scan_from_run(target: tuple[str, ...], opts: dict[str, Any]) -> NoReturn:
    """``assay run -P/-L ...``: the scan is a comparison of its values (interleaved, so
    that drift cannot fake a trend), run and reported as ``assay compare`` does."""
    err = err_console()
    refused = [f for k, f in (("baseline_file", "--baseline"),) if opts.get(k)]
    if refused:
        fail(err, f"{refused[0]}: not with a scan (-P/-L); compare the values with --fail-if-worse")
    mine = {**_COMPARE_DEFAULTS, **opts, "study": opts.get("name"), "name": ()}
    _compare(target, mine)
    sys.exit(exits.OK)  # _compare exits


def _compare(target: tuple[str, ...], opts: dict[str, Any]) -> None:
    if opts.get("from_format") and not opts["from_files"]:
        fail(err_console(), "--format: only with --from (it names the format of the files)")
    if not opts["from_files"]:
        prepare_local_session(opts)
    from assay.report.answer import answer
    from assay.report.compare import CSV_FIELDS, CompareProgressView, csv_rows, render_comparison
    from assay.report.export import rows_to_csv, to_json
    from assay.report.markdown import compare_markdown
    from assay.report.terminal import print_session_line
    from assay.studies.compare import CompareResult, CompareRunner, compare_files

    console = report_console(opts, 130)
    err = err_console()
    try:
        check_outputs(opts, plot_suffixes=(".png", ".svg"))
    except SpecError as exc:
        fail(err, exc)
    result: CompareResult
    if opts["from_files"]:
        refuse_cluster_with_from(opts, err)
        try:
            result = compare_files(
                [t for t in target if t != "--"],
                pi=opts["pi"],
                alpha=opts["alpha"] or 0.01,
                confidence=opts["confidence"] or 0.95,
                statistic="median" if opts["median"] else "mean",
                fmt=opts.get("from_format"),
            )
        except (SpecError, ValueError) as exc:
            fail(err, exc)
    else:
        try:
            refuse_quick_only(target, opts)
            spec, store_path = _compare_spec(target, opts)
            pis = [p.name for p in spec.pis]
            if opts["pi"] is not None and opts["pi"] not in pis:
                raise SpecError(
                    f"--pi {opts['pi']!r}: no such PI; the study's PIs: {', '.join(pis)}"
                )
            names = [v.name for v in spec.variants]
            if spec.stop.baseline is not None and spec.stop.baseline not in names:
                raise SpecError(
                    f"baseline {spec.stop.baseline!r}: no such variant; the variants: "
                    f"{', '.join(names)}"
                )
        except SpecError as exc:
            fail(err, exc)
        for note in split_notes(target, opts):
            err.print(note, markup=False)
        spec = with_under_test(spec, opts)
        progress = CompareProgressView(err, spec.stop)
        how = "Run the same command again to resume."
        fresh, fingerprint = quick_resumption(spec, store_path, opts, err)
        with running_study(err, store_path, how, opts, spec, progress) as executor:
            runner = CompareRunner(
                spec,
                store_path,
                pi=opts["pi"],
                seed=opts["seed"],
                fixed_order=opts["fixed_order"],
                fresh=fresh,
                fingerprint=fingerprint,
                measure_overhead=not opts["no_overhead"],
                executor=executor,
                on_compare_progress=None if opts["quiet"] else progress.update,
            )
            if opts["show_output"]:
                runner.on_trial = trial_output_printer(err)
            result = runner.run()
    threshold = opts["fail_if_worse"]
    baseline = opts["baseline"]
    if not opts["from_files"]:
        threshold = spec.stop.fail_if_worse
        baseline = spec.stop.baseline
    if threshold is not None:
        try:
            result.gate(threshold, baseline)
        except ValueError as exc:
            fail(err, exc)
    render_comparison(result, console)
    if not opts["quiet"]:
        print_session_line(result, err)
    write_outputs(
        opts,
        {
            "json_out": lambda: to_json(result.as_dict()),
            "csv_out": lambda: rows_to_csv(CSV_FIELDS, csv_rows(result)),
            "markdown_out": lambda: compare_markdown(
                result.study,
                result.decision.reason,
                csv_rows(result),
                result.gates,
                answer("compare", result.as_dict()),
                [c.as_dict() for c in result.claims],
            ),
        },
    )
    if opts.get("plot"):
        if result.scan is None:
            err.print(
                "--plot: not written: the variants are not a scan (they differ in more "
                "than parameter values)",
                style="yellow",
            )
        else:
            from assay.report.compare import scan_plot

            err.print(f"scan plot written to {scan_plot(result.scan, opts['plot'])}", style="dim")
    if not opts["from_files"]:
        write_hyperfine_exports(opts, store_path, spec)
        write_study_report(opts, store_path, spec.study.name, err)
    sys.exit(exits.compare_exit(result))
