"""What every subcommand shares: consoles, error exits, the stopping-rule options and
turning a study file or a quick-mode command line into a study.

Exit statuses: :mod:`assay.cli.exits`.
"""

from __future__ import annotations

import contextlib
import shlex
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from assay.cli import exits
from assay.cli.fractions import SHARE, WIDTH
from assay.errors import NotAStoreError, SpecError, StoreError, StudyError
from assay.quick import SHELL_SYNTAX, quick_benchmark, quick_study_data
from assay.quick import command_words as command_words  # re-exported to the commands
from assay.quick import quick_name as quick_name
from assay.quick import quick_store_path as quick_store_path

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

    from assay.spec import Spec


#: ``--interference`` ([stop] interference): run, compare and sweep take it.
INTERFERENCE_OPTION = click.option(
    "--interference",
    type=click.Choice(["warn", "wait", "repeat"]),
    help="Other processes on the CPU: 'warn' (the default) reports them; 'wait' "
    "also holds each trial until they have used under half a core for 0.3 s "
    "(at most 30 s a trial); 'repeat' also measures again (up to twice) a trial "
    "of 0.1 s or more they disturbed, keeping the disturbed one aside.",
)


def err_console() -> Console:
    """Progress, notes and errors: stderr, outside text never markup nor escapes."""
    from assay.report.safe import SafeConsole  # rich: not for --help (start-up, #60)

    return SafeConsole(stderr=True, soft_wrap=True)


def checked_err_console(opts: Mapping[str, Any]) -> Console:
    """The error console, once the outputs the options ask for are known writable (a
    usage error, exit 2, before anything runs): how the reading commands start."""
    from assay.cli.outputs import check_outputs

    err = err_console()
    try:
        check_outputs(opts)
    except SpecError as exc:
        fail(err, exc)
    return err


def labelled(label: str, style: str, text: str) -> Text:
    """``label`` in ``style``, then `` text`` as plain text (outside text is never
    markup): the one-line error, warning and note form.  Rich is imported here, not at
    the top: ``assay COMMAND --help`` starts without it (#60)."""
    from rich.text import Text

    return Text.assemble((label, style), f" {text}")


def fail(err: Console, exc: Exception | str, status: int = exits.USAGE) -> NoReturn:
    """Print one error line (escaped: outside text is never markup) and exit."""
    err.print(labelled("error:", "red", str(exc)))
    sys.exit(status)


@contextlib.contextmanager
def study_errors(err: Console, store_path: Path | str, resume: str) -> Iterator[None]:
    """How every study command ends when it cannot finish.

    Ctrl-C: where the finished trials are and ``resume`` (how to go on), exit 130; a
    store or study error: its one-paragraph message, exit 3.
    """
    try:
        yield
    except KeyboardInterrupt:
        err.print(
            labelled(
                "\ninterrupted.", "yellow", f"Every finished trial is in {store_path}. {resume}"
            ),
            soft_wrap=True,  # no hard line breaks inside the store path or resume command
        )
        sys.exit(exits.INTERRUPTED)
    except (StoreError, StudyError) as exc:
        err.print(labelled("error:", "red", str(exc)))
        sys.exit(exits.STUDY)


F = TypeVar("F", bound=Callable[..., Any])


REPORT_OPTION = click.option(
    "--report",
    "report_out",
    metavar="PATH",
    help="Also write the study's HTML report at the end (as 'assay report STORE').",
)


def table_data_options(what: str) -> Callable[[F], F]:
    """``--one-hot`` and ``--drop-value`` of ``sweep --from`` and ``knobs --from``;
    ``what`` names a column's role ("parameter", "knob")."""

    def add(f: F) -> F:
        f = click.option(
            "--drop-value",
            "drop_values",
            type=float,
            multiple=True,
            metavar="X",
            help="--from: leave out rows whose metric is X (failed runs coded as 0, say).",
        )(f)
        return click.option(
            "--one-hot",
            type=click.Choice(["auto", "off"]),
            default="auto",
            show_default=True,
            help=f"--from: read 0/1 columns of which one is 1 per row as one categorical {what}.",
        )(f)

    return add


if TYPE_CHECKING:  # generic for type checkers in newer click releases (see fractions.py)
    _RoundsType = click.ParamType[int | str]
else:
    _RoundsType = click.ParamType


class WarmupRounds(_RoundsType):
    """``-w/--warmup``: a number of rounds, or ``auto``."""

    name = "N|auto"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> int | str:
        if isinstance(value, int) and value >= 0:
            return value
        text = str(value).strip()
        if text == "auto":
            return text
        try:
            n = int(text)
        except ValueError:
            n = -1
        if n < 0:
            self.fail(f"{value!r} is neither a number of rounds (0 or more) nor 'auto'", param, ctx)
        return n


def stop_options(f: F) -> F:
    """Options shared by ``run`` and ``compare``: the stopping rule and the executor."""
    options = [
        click.option(
            "--ci-width",
            type=WIDTH,
            metavar="W",
            help="Target relative CI half-width, e.g. 5% or 0.05 (default 5%).",
        ),
        click.option(
            "--confidence",
            type=SHARE,
            metavar="C",
            help="Confidence level, e.g. 95% or 0.95 (default 95%).",
        ),
        click.option(
            "--max-time",
            type=click.FloatRange(min=0, min_open=True),
            help="Stop after this many seconds of measured time.",
        ),
        INTERFERENCE_OPTION,
        click.option(
            "--min-samples",
            type=click.IntRange(min=2),
            help="Samples (after subsession merging) needed before stopping (default 10).",
        ),
        click.option(
            "--min-rounds",
            type=click.IntRange(min=1),
            help="Rounds needed before stopping (default 10; compare: cycles, only when "
            "given): rounds can differ (process start, memory layout) in ways only more "
            "rounds show.",
        ),
        click.option(
            "-w",
            "--warmup",
            type=WarmupRounds(),
            metavar="N|auto",
            help="Readings only: discard the first N rounds (0: none), or 'auto' (the "
            "default): as many as MSER finds to be warm-up (the first rounds of a cold "
            "cache, a JIT).",
        ),
        click.option(
            "--prepare",
            metavar="CMD",
            help="Quick mode: a shell command run before every trial, unmeasured (a reset: "
            "e.g. 'sync; echo 3 > /proc/sys/vm/drop_caches').",
        ),
        click.option(
            "-i",
            "--ignore-failure",
            is_flag=True,
            help="Quick mode: a non-zero exit status is measured like any other.",
        ),
        click.option(
            "--show-output",
            is_flag=True,
            help="Print each trial's output (its stored head and tail) to stderr.",
        ),
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
            "--resume",
            is_flag=True,
            help="Quick mode: resume (or report, when finished) the stored study of this "
            "command line. Without it a finished one is measured again, and an interrupted "
            "one resumed only when its folder and files are unchanged.",
        ),
        click.option(
            "--json", "json_out", metavar="PATH", help="Write the result as JSON ('-' = stdout)."
        ),
        click.option(
            "--markdown",
            "--export-markdown",
            "markdown_out",
            metavar="PATH",
            help="Write the result as Markdown tables, for a PR comment or "
            "$GITHUB_STEP_SUMMARY ('-' = stdout).",
        ),
        REPORT_OPTION,
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


def with_under_test(spec: Spec, opts: dict[str, Any]) -> Spec:
    """``--under-test`` laid over ``[benchmark].under_test`` (not part of the study's hash)."""
    if opts.get("under_test") is None:
        return spec
    bench = spec.benchmark.model_copy(update={"under_test": opts["under_test"]})
    return spec.model_copy(update={"benchmark": bench})


def stop_overrides(opts: dict[str, Any]) -> dict[str, Any]:
    keys = {
        "ci_width": "ci_width",
        "confidence": "confidence",
        "max_rounds": "max_rounds",
        "max_time": "max_time",
        "min_samples": "min_samples",
        "min_rounds": "min_rounds",
        "warmup": "warmup_rounds",
        "alpha": "alpha",
        "require_ci_width": "require_ci_width",
        "fail_if_worse": "fail_if_worse",
        "baseline": "baseline",
        "interference": "interference",
    }
    return {field: opts[o] for o, field in keys.items() if opts.get(o) is not None}


def is_study_file(target: tuple[str, ...]) -> bool:
    return len(target) == 1 and target[0].endswith(".toml") and "--" not in sys.argv[:2]


def spec_from_target(target: tuple[str, ...], opts: dict[str, Any]) -> tuple[Spec, Path]:
    from assay.cli.hyperfine import apply_runs, refuse_in_study_file

    apply_runs(opts)
    overrides = stop_overrides(opts)
    if is_study_file(target):
        refuse_in_study_file(opts)
        from assay.spec import StopSpec, load_spec  # pydantic: not for --help

        spec = load_spec(target[0])
        if overrides:
            stop = spec.stop.model_copy(update=overrides)
            spec = spec.model_copy(update={"stop": StopSpec.model_validate(stop.model_dump())})
        store = Path(opts["store"]) if opts["store"] else spec.store_path()
        return spec, store
    return quick_spec(target, opts, overrides)


def quick_spec(
    target: tuple[str, ...], opts: dict[str, Any], overrides: dict[str, Any]
) -> tuple[Spec, Path]:
    from assay.cli.hyperfine import quick_steps

    argv = command_words(list(target), shell=bool(opts["shell"]))
    bench = quick_benchmark(
        argv,
        shell=bool(opts["shell"]),
        timeout=opts["timeout"],
        prepare=opts.get("prepare"),
        ignore_failure=bool(opts.get("ignore_failure")),
    )
    quick_steps(bench, opts)
    name = opts["name"] or quick_name("quick", shlex.join(argv), bench)
    data = quick_study_data(name, bench, overrides, median=bool(opts.get("median")))
    from assay.spec import parse_spec_data

    return quick_store(parse_spec_data(data, source="command line"), opts)


def split_notes(target: tuple[str, ...], opts: dict[str, Any]) -> list[str]:
    """What :func:`command_words` did to commands given as one string each (said, so
    the user sees what is measured)."""
    if opts.get("shell") or is_study_file(target):
        return []
    singles = [a for a in target if a != "--" and any(c.isspace() for c in a)]
    if len([a for a in target if a != "--"]) != len(singles):
        return []  # words given one by one: nothing was split
    return [
        f"note: {a!r} is run as the words {shlex.split(a)} (add --shell for shell syntax)"
        for a in singles
        if not SHELL_SYNTAX & set(a)
    ]


def quick_resumption(
    spec: Spec, store_path: Path, opts: dict[str, Any], err: Console
) -> tuple[bool, dict[str, Any] | None]:
    """Whether to start afresh, and the fingerprint to keep with the study: a quick
    study run again measures again (:mod:`assay.studies.fingerprint`), and says so on
    stderr; a study file's resumes as ever (``--fresh`` aside)."""
    if spec.source_path is not None:
        return bool(opts["fresh"]), None
    if opts["fresh"] and opts.get("resume"):
        fail(err, "--fresh starts the study again, --resume goes on with it: give one")
    from assay.studies.fingerprint import quick_resumption_of

    decided, now = quick_resumption_of(
        spec, store_path, fresh=bool(opts["fresh"]), resume=bool(opts.get("resume"))
    )
    if decided.note is not None:
        err.print(labelled("note:", "cyan", decided.note))
    return decided.fresh, now


def quick_store(spec: Spec, opts: dict[str, Any]) -> tuple[Spec, Path]:
    spec = spec.model_copy(update={"source_path": None})
    return spec, Path(opts["store"]) if opts["store"] else quick_store_path()


def cluster_options(f: F) -> F:
    """``--workers N`` and ``--cluster ADDRESS``: where the trials run."""
    options = [
        click.option(
            "--workers",
            type=click.IntRange(min=1),
            help="Run trials on a Dask cluster of N single-threaded worker processes started "
            "on this machine (loopback only), one trial per worker at a time.",
        ),
        click.option(
            "--cluster",
            metavar="ADDRESS",
            help="Run trials on an existing Dask scheduler started with TLS (e.g. "
            "tls://10.0.0.5:8786; the client's certificate in Dask's configuration) whose "
            "workers offer the resource bench=1 (dask worker ADDRESS --nthreads 1 "
            "--resources bench=1).",
        ),
        click.option(
            "--insecure",
            is_flag=True,
            help="Accept a --cluster tcp:// scheduler without TLS: anyone who reaches it "
            "runs code as its workers' user.",
        ),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def executor_for(
    opts: dict[str, Any], err: Console, spec: Spec
) -> contextlib.AbstractContextManager[Any]:
    """The executor that ``--workers`` / ``--cluster`` ask for, else the study file's
    ``[cluster]``, else this machine; both options at once are a usage error (exit 2)."""
    from assay.execute.cluster import open_executor

    if opts.get("workers") is not None and opts.get("cluster") is not None:
        fail(err, "--workers starts a cluster on this machine, --cluster names one: give one")
    if opts.get("cluster") is not None:
        from assay.execute.tls import check_cluster_address

        try:
            check_cluster_address(opts["cluster"], insecure=bool(opts.get("insecure")))
        except StudyError as exc:
            fail(err, str(exc))
    elif opts.get("insecure"):
        fail(err, "--insecure: only with --cluster tcp://HOST:PORT (a scheduler without TLS)")
    return open_executor(
        workers=opts.get("workers"),
        address=opts.get("cluster"),
        ssh=spec.cluster,
        monitor=not opts.get("no_monitor", False),
        insecure=bool(opts.get("insecure")),
    )


def prepare_local_session(opts: dict[str, Any]) -> None:
    """Where the trials run on this machine (no ``--workers`` or ``--cluster``), start
    the session cgroup's slow migration now, while the command imports its modules
    (:func:`assay.execute.proctree.prepare_session`)."""
    if opts.get("workers") is None and opts.get("cluster") is None:
        from assay.execute.proctree import prepare_session

        prepare_session()


@contextlib.contextmanager
def running_study(
    err: Console,
    store_path: Path,
    resume: str,
    opts: dict[str, Any],
    spec: Spec,
    view: Any,
) -> Iterator[Any]:
    """What every study command runs its study in: :func:`study_errors` (exit statuses
    130 and 3), the executor the options or the study file ask for (yielded), and the
    live ``view`` (a LiveLine, left closed with ``-q``) showing the cluster's state."""
    with study_errors(err, store_path, resume), executor_for(opts, err, spec) as executor:
        view.status = executor.status
        with view if not opts["quiet"] else contextlib.nullcontext():
            yield executor


def refuse_cluster_with_from(opts: dict[str, Any], err: Console) -> None:
    """``--from`` analyses results measured elsewhere: no trial runs, no cluster, no store
    to report from (exit 2)."""
    given = [f"--{k}" for k in ("workers", "cluster") if opts.get(k) is not None]
    if opts.get("report_out"):
        given.append("--report")
    if given:
        fail(err, f"{' and '.join(given)}: not used with --from (nothing is run)")


def refuse_unknown_option(target: tuple[str, ...]) -> None:
    """An option this command does not know, written before the benchmark command: the
    parser passes it on as the command's first word (it ignores unknown options so that
    the benchmark's own options reach it).  No program starts with ``-``: it is a typo,
    a usage error (exit 2) naming the closest options.
    """
    first = next((a for a in target if a != "--"), "")
    if not first.startswith("-"):
        return
    ctx = click.get_current_context()
    name = first.split("=", 1)[0]
    known = sorted({o for p in ctx.command.params for o in p.opts if o.startswith("--")})
    import difflib

    raise click.NoSuchOption(name, possibilities=difflib.get_close_matches(name, known), ctx=ctx)


def hoist_options(target: tuple[str, ...], opts: dict[str, Any]) -> tuple[str, ...]:
    """Assay's options written after a command given as one string, hyperfine's way
    (``-- 'sleep 0.01' -- 'sleep 0.02' --report r.html``), taken as Assay's (set in
    ``opts``); the target without them.  In argv form (``-- ./bench ARGS``) a word that
    is exactly one of Assay's long options is a usage error with the fix: appending it
    to the command silently ran ``['sleep 0.012', '--report', 'r.html']`` 1,000 times.
    """
    from click.core import ParameterSource

    ctx = click.get_current_context()
    ours = {o for p in ctx.command.params for o in p.opts if o.startswith("--")}
    # (the parser took the first '--'; the commands are what is left, split by the others)
    head = list(target[:1]) if target[:1] == ("--",) else []
    groups: list[list[str]] = [[]]
    for a in target[len(head) :]:
        if a == "--":
            groups.append([])
        else:
            groups[-1].append(a)
    hoisted: list[str] = []
    for g in groups:
        cut = next((i for i, w in enumerate(g) if w.startswith("-")), len(g))
        if cut and all(any(c.isspace() for c in w) for w in g[:cut]) and cut < len(g):
            hoisted += g[cut:]  # one string per command: what follows is Assay's
            del g[cut:]
            continue
        for w in g[1:]:
            if w.split("=", 1)[0] in ours:
                cmd = shlex.join(g)
                raise click.UsageError(
                    f"{w!r} after '--' would be passed to the command ({cmd}); put Assay's "
                    f"{w.split('=', 1)[0]} before the first '--', or, if the program takes "
                    f"it itself, give the command as one string: -- {shlex.quote(cmd)}",
                    ctx=ctx,
                )
    if hoisted:
        sub = ctx.command.make_context(ctx.info_name, [*hoisted, "--", "x"], parent=ctx.parent)
        for name, value in sub.params.items():
            if sub.get_parameter_source(name) == ParameterSource.COMMANDLINE:
                opts[name] = value
    rebuilt = head
    for i, g in enumerate(groups):
        rebuilt += (["--"] if i else []) + g
    return tuple(rebuilt)


def refuse_quick_only(target: tuple[str, ...], opts: dict[str, Any]) -> None:
    """Options that build a quick-mode study, given with a study file (exit 2): the file
    says the same in ``[benchmark]``, where it is part of what the study measures."""
    if not is_study_file(target):
        return
    if opts.get("median"):
        raise SpecError(
            '--median: quick mode only; in a study file set statistic = "median" in a [[pi]]'
        )
    fields = {"prepare": "reset", "ignore_failure": "ignore_failure", "shell": "shell"}
    given = [k for k in fields if opts.get(k)]
    if given:
        flags = ", ".join("--" + k.replace("_", "-") for k in given)
        keys = ", ".join(fields[k] for k in given)
        raise SpecError(f"{flags}: quick mode only; in a study file set [benchmark] {keys}")


def trial_output_printer(err: Console) -> Callable[[Any], None]:
    """``--show-output``: each trial's stored output (head and tail), made safe to print."""

    from assay.report.safe import plain

    def show(record: Any) -> None:
        err.print(f"── trial {record.seq} ({record.status}) ──", style="dim")
        for stream in (record.stdout, record.stderr):
            text = plain(stream.decode("utf-8", "replace")).rstrip("\n")
            if text:
                err.print(text, soft_wrap=True)

    return show


def write_outputs(opts: dict[str, Any], makers: dict[str, Callable[[], str]]) -> None:
    """Write each requested output (option key -> its text), files replaced atomically."""
    from assay.report.export import write_text

    for key, make in makers.items():
        if opts.get(key):
            write_text(opts[key], make())


def write_study_report(
    opts: dict[str, Any],
    store_path: Path,
    study: str,
    err: Console,
    baseline: Sequence[Any] = (),
    readings: Mapping[str, tuple[Sequence[float], Sequence[float]]] | None = None,
) -> None:
    """``--report PATH``: the HTML report of the study just run, as ``assay report``
    writes it from the store, with its ``--baseline`` comparisons; a report that cannot
    be made is a warning (the study's results are stored and its exit status stands)."""
    path = opts.get("report_out")
    if not path:
        return
    from assay.report.export import write_text
    from assay.report.html import study_report

    try:
        page = study_report(store_path, study, baseline=baseline, readings=readings,
                            before_drawing=plots_without_3d)[0]  # fmt: skip
        write_text(path, page)
    except (StudyError, StoreError, SpecError, ValueError, OSError) as exc:
        err.print(labelled("warning:", "yellow", f"--report {path}: not written: {exc}"))
        return
    err.print(f"report written to {path}", style="dim")


def plots_without_3d() -> None:
    """Import Matplotlib's projections without its 3-D axes, in the command-line
    process only: ``matplotlib.projections`` imports ``mpl_toolkits.mplot3d`` to
    register them (0.1 s of a sweep's 1.6 s report, #60) and no plot of ours is 3-D.
    A library user's process keeps them (this is never called there); nothing is done
    once Matplotlib's projections are imported."""
    import warnings

    if "matplotlib.projections" in sys.modules:
        return
    planted = "mpl_toolkits.mplot3d" not in sys.modules
    if planted:
        sys.modules["mpl_toolkits.mplot3d"] = None  # type: ignore[assignment]
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Unable to import Axes3D")
            import matplotlib.projections  # noqa: F401
    finally:
        if planted:
            sys.modules.pop("mpl_toolkits.mplot3d", None)


@contextlib.contextmanager
def stored_study_errors(err: Console, path: Path) -> Iterator[None]:
    """How ``show`` and ``report`` end when a stored study cannot be read: no such
    study (exit 2, naming the store's studies), no such store or a file that is none (2),
    one that cannot be read now (3), a bad stored study (3), data that cannot be
    analysed (4)."""
    from assay.studies.stored import NoSuchStudy

    try:
        yield
    except (NoSuchStudy, NotAStoreError) as exc:  # bad input, as for ls and export
        fail(err, exc)
    except (StoreError, StudyError, SpecError) as exc:
        fail(err, exc, exits.STUDY)
    except ValueError as exc:  # the stored data cannot be analysed (a sweep's space)
        fail(err, exc, exits.NO_RESULT)
