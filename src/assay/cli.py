"""The ``assay`` command line: parse, call, print."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import click
from rich.console import Console

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


@main.command(
    context_settings={"ignore_unknown_options": True},
    epilog=STUDY_FILE_HELP,
)
@click.argument("target", nargs=-1, type=click.UNPROCESSED, required=True)
@click.option(
    "--ci-width",
    callback=_parse_width,
    metavar="W",
    help="Target relative CI half-width, e.g. 0.05 or 5% (default 5%).",
)
@click.option(
    "--confidence",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    help="Confidence level (default 0.95).",
)
@click.option("--max-rounds", type=click.IntRange(min=1), help="Stop after this many trials.")
@click.option(
    "--max-time",
    type=click.FloatRange(min=0, min_open=True),
    help="Stop after this many seconds of measured time.",
)
@click.option(
    "--min-samples",
    type=click.IntRange(min=2),
    help="Samples (after subsession merging) needed before stopping (default 10).",
)
@click.option("--warmup", type=click.IntRange(min=0), help="Discard the first N rounds.")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    help="Per-trial timeout in seconds (quick mode; default 600).",
)
@click.option("--shell", is_flag=True, help="Quick mode: run the command through /bin/sh -c.")
@click.option("--name", help="Quick mode: the study name (default: from the command and time).")
@click.option("--store", type=click.Path(dir_okay=False), help="SQLite store to use.")
@click.option(
    "--fresh",
    is_flag=True,
    help="Archive this study's stored trials and start again instead of resuming.",
)
@click.option("--json", "json_out", metavar="PATH", help="Write the result as JSON ('-' = stdout).")
@click.option("--csv", "csv_out", metavar="PATH", help="Write one CSV row per PI ('-' = stdout).")
@click.option("--no-overhead", is_flag=True, help="Skip the launch-overhead measurement.")
@click.option("-q", "--quiet", is_flag=True, help="No progress display.")
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
    from assay.report.terminal import ProgressView, render_result
    from assay.runner import Runner, StudyError
    from assay.store import StoreError

    console = Console(highlight=False, width=None if sys.stdout.isatty() else 110)
    err = _err_console()
    try:
        spec, store_path = _spec_from_target(target, opts)
    except SpecError as exc:
        err.print(f"[red]error:[/] {exc}")
        sys.exit(2)
    progress = ProgressView(err, spec.stop.ci_width)
    try:
        with progress if not opts["quiet"] else _Null():
            runner = Runner(
                spec,
                store_path,
                fresh=opts["fresh"],
                measure_overhead=not opts["no_overhead"],
                on_progress=None if opts["quiet"] else progress.update,
            )
            result = runner.run()
    except KeyboardInterrupt:
        err.print(
            f"\n[yellow]interrupted.[/] Every finished trial is in {store_path}. "
            + (
                "Run the same command again to resume."
                if spec.source_path and spec.source_path.endswith(".toml")
                else f"Resume with: assay run --store {store_path} --name '{spec.study.name}' -- …"
            ),
            soft_wrap=True,  # no hard line breaks inside the store path or resume command
        )
        sys.exit(130)
    except (StoreError, StudyError) as exc:
        err.print(f"[red]error:[/] {exc}")
        sys.exit(3)
    render_result(result, console)
    data = result.as_dict()
    if opts["json_out"]:
        write_text(opts["json_out"], to_json(data))
    if opts["csv_out"]:
        write_text(opts["csv_out"], to_csv(result.study, data["pis"]))


class _Null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _stop_overrides(opts: dict[str, Any]) -> dict[str, Any]:
    keys = {
        "ci_width": "ci_width",
        "confidence": "confidence",
        "max_rounds": "max_rounds",
        "max_time": "max_time",
        "min_samples": "min_samples",
        "warmup": "warmup_rounds",
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
    spec = parse_spec_data(data, source="command line")
    spec = spec.model_copy(update={"source_path": None})
    if opts["store"]:
        store = Path(opts["store"])
    else:
        cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "assay"
        store = cache / "quick.assay.db"
    return spec, store


if __name__ == "__main__":
    main()
