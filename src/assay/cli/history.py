"""``assay history``: a run study's result across commits, and where it changed.

Reads the store only (``assay history STORE STUDY``), or first measures a range of
commits (``assay history --run-commits A..B -- STUDY.toml``), each in its own git
worktree and study (``STUDY@<short sha>``), then reads the store the same way.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from assay.cli import exits
from assay.cli.common import err_console, fail, stored_study_errors, study_errors, write_outputs
from assay.cli.outputs import check_outputs, report_console
from assay.cli.sections import SectionedCommand
from assay.errors import SpecError

HISTORY_HELP = """
\b
Where the revisions come from: each session of a run study records the revision of
[benchmark] git_repo, so a CI job running 'assay run --fresh STUDY.toml' after every
commit builds a history; --run-commits stores one study per commit (STUDY@<12-hex
sha>; 'assay show STORE STUDY@<sha>' reports one), with the revision as a study value.
Both are read together.
\b
--run-commits A..B (git's range: reachable from B, not from A; 'A^..B' includes A):
for each commit a detached worktree in a private temporary folder (removed
afterwards), [benchmark] build = [argv] run there (a failed build is recorded and
reported, the next commit goes on), then the study with its cwd in the worktree (the
same folder of the repository as [benchmark] cwd, else the top). Commits measured
before are skipped (resumable; failed builds too unless --retry-failed).
\b
The commits are interleaved: all are built first, then measured in passes; each pass
visits the commits not done yet in a fresh random order (--order-seed; drawn and
printed when not given) for a block of rounds each (--block, default the study's
[stop] min_rounds), until each commit's study meets its stopping rule or spends its
budget (max_rounds, max_time: per commit). A change in the machine's load then hits
every commit alike instead of looking like a change in the code. --sequential
measures one commit after the other, oldest first, each to its end (the old order).
\b
Change points: E-Divisive means over the commits' means (Matteson & James 2014) with
a permutation test of each candidate, bisecting until p > alpha (as MongoDB's CI,
Daly et al., ICPE 2020); each step with Welch's CI of the difference of the segment
means. A step is called worse or better only when its CI excludes 0; a change point
whose step's CI includes 0 is reported as a possible change (never a regression, not
counted by --fail-on-change). The points are ordered by 'git rev-list --topo-order'
when the repository is at hand (--repo, else the one measured), else by the time of
their first trial.
\b
Exit status:
  0    no change point, or change points without --fail-on-change (they are listed)
  1    --fail-on-change: a change point steps the PI's worse way (its CI excludes 0)
  2    usage error or bad study file     3  the store, study or repository cannot be read
  4    no commit has a result            130  interrupted (run again to resume)
"""


@click.command(cls=SectionedCommand, epilog=HISTORY_HELP)
@click.argument("args", nargs=-1)
@click.option(
    "--run-commits",
    "run_range",
    metavar="A..B",
    help="Measure these commits first (then give the study file: -- STUDY.toml).",
)
@click.option("--git-range", metavar="A..B", help="Only the commits of this range.")
@click.option("--repo", type=click.Path(file_okay=False), help="The git repository to order by.")
@click.option("--pi", help="The PI to follow (default: the study's first).")
@click.option(
    "--alpha",
    "change_alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="Significance level of each change point's permutation test.",
)
@click.option(
    "--permutations",
    type=click.IntRange(min=19),
    default=199,
    show_default=True,
    help="Shuffles per permutation test.",
)
@click.option(
    "--min-size",
    type=click.IntRange(min=2),
    default=3,
    show_default=True,
    help="Fewest commits on either side of a change point.",
)
@click.option(
    "--seed", "shuffle_seed", type=int, default=0, show_default=True, help="Seed of the shuffles."
)
@click.option(
    "--fail-on-change",
    is_flag=True,
    help="Exit 1 when a step goes the worse way (its CI excluding 0).",
)
@click.option("--store", type=click.Path(dir_okay=False), help="--run-commits: the store.")
@click.option("--retry-failed", is_flag=True, help="--run-commits: build failed commits again.")
@click.option(
    "--sequential",
    is_flag=True,
    help="--run-commits: one commit after the other, each to its end (not interleaved).",
)
@click.option(
    "--block",
    type=click.IntRange(min=1),
    metavar="N",
    help="--run-commits: rounds of a commit per visit (default: the study's min_rounds).",
)
@click.option(
    "--order-seed",
    type=click.IntRange(min=0),
    metavar="N",
    help="--run-commits: seed of the commits' order in each pass (default: drawn).",
)
@click.option(
    "--build-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=3600.0,
    show_default=True,
    help="--run-commits: seconds a build may take.",
)
@click.option("--no-overhead", is_flag=True, help="Skip the launch-overhead measurement.")
@click.option("--no-monitor", is_flag=True, help="Turn off the bottleneck watch.")
@click.option("--json", "json_out", metavar="PATH", help="Write the result as JSON ('-' = stdout).")
@click.option("-q", "--quiet", is_flag=True, help="No report on stderr (with --json -).")
def history(args: tuple[str, ...], **opts: Any) -> None:
    """A run study's result at each commit, and the commits where it changed.

    \b
      assay history results.assay.db "my study"
      assay history results.assay.db "my study" --git-range v1.0..main --json -
      assay history --run-commits v1.0..main -- study.toml
    """
    err = err_console()
    try:
        check_outputs(opts)
    except SpecError as exc:
        fail(err, exc)
    study: str | None
    if opts["run_range"] is not None:
        store_path, study = _run_commits(args, opts, err)
    else:
        if not 1 <= len(args) <= 2:
            fail(err, "give STORE [STUDY], or --run-commits A..B -- STUDY.toml")
        store_path = Path(args[0])
        study = args[1] if len(args) == 2 else None
    from assay.studies.history import load_history  # lazy: --help stays fast

    with stored_study_errors(err, store_path):
        result = load_history(
            store_path,
            study,
            pi=opts["pi"],
            repo=opts["repo"],
            git_range=opts["git_range"],
            alpha=opts["change_alpha"],
            permutations=opts["permutations"],
            min_size=opts["min_size"],
            seed=opts["shuffle_seed"],
        )
    from assay.report.export import to_json
    from assay.report.history import render_history

    console = report_console(opts, 110)
    render_history(result, console)
    write_outputs(opts, {"json_out": lambda: to_json(result.as_dict())})
    if not result.measured:
        sys.exit(exits.NO_RESULT)
    worse = any(c.worse for c in result.changes)
    sys.exit(exits.WORSE if opts["fail_on_change"] and worse else exits.OK)


def _run_commits(args: tuple[str, ...], opts: dict[str, Any], err: Any) -> tuple[Path, str]:
    """``--run-commits``: measure the range's commits; the store and study to read."""
    from assay.spec import load_spec

    if len(args) != 1 or not args[0].endswith(".toml"):
        fail(err, "--run-commits A..B needs the study file: -- STUDY.toml")
    try:
        spec = load_spec(args[0])
    except SpecError as exc:
        fail(err, exc)
    from assay.studies.base import study_kind

    if study_kind(spec) != "run":
        fail(err, f"{args[0]}: --run-commits measures run studies, not {study_kind(spec)} studies")
    store_path = Path(opts["store"]) if opts["store"] else spec.store_path()
    from assay.report.history import render_outcomes
    from assay.studies.history import run_commits

    sequential = bool(opts["sequential"])
    if sequential and (opts["block"] is not None or opts["order_seed"] is not None):
        fail(err, "--block and --order-seed order interleaved commits: not with --sequential")
    seed = opts["order_seed"]
    if seed is None and not sequential:
        import secrets

        seed = secrets.randbelow(2**31)
    block = opts["block"] or spec.stop.min_rounds
    if not sequential and not opts["quiet"]:
        err.print(
            f"interleaved: every commit built first, then measured {block} round(s) at a "
            f"time in a fresh random order each pass (--order-seed {seed}; --sequential: "
            "one commit after the other)",
            style="dim",
            soft_wrap=True,
        )

    def started(revision: str, i: int, total: int) -> None:
        if not opts["quiet"]:
            what = "commit" if sequential else "building commit"
            err.print(f"{what} {i + 1}/{total}: {revision[:12]}", style="dim")

    def visiting(b: Any) -> None:
        if not opts["quiet"]:
            err.print(
                f"pass {b.pass_number}, commit {b.index + 1}/{b.count}: {b.revision[:12]} "
                f"({b.rounds} round(s) so far)",
                style="dim",
            )

    def finished(outcome: Any) -> None:
        if not opts["quiet"]:
            render_outcomes([outcome], err)

    resume = "Run the same command again to go on (measured commits are skipped)."
    with study_errors(err, store_path, resume):
        run_commits(
            spec,
            store_path,
            opts["run_range"],
            retry_failed=opts["retry_failed"],
            build_timeout=opts["build_timeout"],
            on_start=started,
            on_commit=finished,
            sequential=sequential,
            block=block,
            seed=seed,
            on_block=visiting,
            runner_options={
                "measure_overhead": not opts["no_overhead"],
                "monitor": not opts["no_monitor"],
            },
        )
    if opts["git_range"] is None:
        opts["git_range"] = opts["run_range"]
    return store_path, spec.study.name
