"""README.md's commands, checked (issue #44: "the README lies in small ways").

Every shell command in README.md's fenced code blocks is found: each line of a ```sh
block (a trailing ``\\`` joins the next line; ``# …`` comments dropped) and each
``$ …`` line of a plain ``` block (whose following lines, up to the next ``$`` line, are
its output). A command line may hold several commands (``|``, ``&&``, ``;``, ``&``);
each that is ``assay …`` (after ``NAME=value`` assignments and ``setsid``/``nohup``/
``env``/``time``) is an Assay invocation.

For EVERY Assay invocation:

- it parses: the subcommand exists and click accepts its options and arguments
  (``make_context`` with ``resilient_parsing=False``), including Assay's own checks of
  quick-mode command lines (an Assay option after ``--``, options hyperfine's way after
  commands given as one string);
- every file it names from the repository (``examples/…``, ``tests/…``, ``bench/…``,
  ``scripts/…``) exists; a store ``examples/X.assay.db`` is the one ``X.toml`` writes,
  so ``X.toml`` must exist;
- it is classified, in this file, as one of: ``RUN`` (runs in seconds on the embedded
  default: run for real by default), ``SLOW`` (runs here, but takes longer: run with
  ``-m slow``) or ``NOT_RUN`` (needs something other than the embedded default — a
  cluster, PostgreSQL, the reader's own program — each with its reason). A command
  added to the README fails ``test_every_readme_command_is_classified`` until it is
  given a class, and a class entry whose command left the README fails too.

Each page's commands run in the page's order (issue #60: "every command must run as
printed after the commands before it on the same page, or be marked as a template"),
through ``bash -o pipefail -c`` in one fresh temporary directory per page holding a copy
of ``examples/`` (and the repository files the pages name under ``tests/data`` and
``bench/data``), with ``HOME`` and ``XDG_CACHE_HOME`` inside it (the user's quick-mode
store and launch-overhead cache are never touched) and ``COLUMNS=200`` (a table too wide
for the width drops columns, and whether it is too wide depends on the numbers
measured; at 200 the README's tables keep all theirs). RUN commands run as printed;
SLOW studies with a smaller budget (``--max-time 10``, an order study ``--runs 2``:
``SMALLER_BUDGET``), so they, and what reads their stores after them, may end with 5
or 4 (``CUT_SHORT``);
NOT_RUN commands are skipped. A command whose comment says ``template`` (it names what
the reader brings: their store, other tools' results) is skipped there and run on its
own beside fixtures standing for what it names: ``study.assay.db`` holding one study
named ``my study``, the quick-mode store holding ``assay run "sleep 0.01"``'s study,
and the result files ``compare --from`` reads. With ``-m slow`` every SLOW command also
runs on its own, in full, beside the same fixtures. Each run
checks the exit status the README states (0 unless the entry says otherwise), the
files the command writes, and, for a ``jq`` pipeline, that the printed value is not
``null`` (skipped when ``jq`` is not installed: ``apt-get install jq``).

Where the README shows the command's output right after it (its ``$`` line's
following lines, or a plain block right after a one-command ```sh block), the output
is compared in shape, numbers masked. The rule:

- both texts are masked: a duration (``674 ms``, ``2 min 25 s``) becomes ``<t>``, a
  byte size (``144.0 KiB``) ``<b>``, any other number (``0.017``, ``1.3e-06``, ``∞``)
  ``<n>``; runs of a table's rule characters (``━━━``) become one; then each text is
  cut into whitespace-separated words, so line wrapping at another width does not
  matter;
- a README line that is only ``...`` or ``…`` marks lines left out; so does ``…`` or
  ``...`` inside a line (what stands either side must still be there, in order);
- every other README line (its parts, cut at an inline ``…``) must appear in the real
  output (stdout, then stderr) as consecutive words, in the README's order. Lines the
  README leaves out altogether are allowed (the README says "(trimmed)" where it
  trims), so a README output is a trimmed, in-order picture of the real one;
- the README's outputs are of runs that reached their target (exit 0); a run that
  ended with another status its entry allows (5 on a busy machine) is not compared;
- for the ``SLOW`` studies only, README lines that depend on what the measurements
  turned out to be (which terms are significant and in which order, which warnings
  fire) are listed in the entry's ``volatile`` with the reason, and not compared.

No test asserts a duration or a measured number.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import click
import pytest

from assay.cli import main
from assay.cli.common import hoist_options, refuse_unknown_option

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"

#: A path from the repository: checked to exist, and copied into the sandbox.
REPO_PATH = re.compile(r"^(examples|tests|bench|scripts)/\S+$")
#: Repository folders the sandbox holds (the README's commands read from them).
SANDBOX_COPIES = ("examples", "tests/data", "bench/data")
WRAPPERS = {"setsid", "nohup", "env", "time", "exec"}
SEPARATORS = {"|", "||", "&&", ";", "&"}
REDIRECTIONS = {">", ">>", "<", "<<", ">&", "&>", ">|"}
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
#: The width the commands run at: wide enough that no README table drops a column
#: (a table too wide for the terminal leaves out its least important columns, and
#: whether it is too wide depends on the widths of the numbers measured).
COLUMNS = "200"


# -- the README's commands ------------------------------------------------------------


@dataclass(frozen=True)
class Command:
    """One command line of the README, as written (comment dropped, continuations
    joined, whitespace collapsed), with the output the README shows right after it."""

    line: int
    text: str
    output: tuple[str, ...] | None = None
    source: str = "README.md"  # the Markdown file, from the repository's root
    template: bool = False  # its comment says "template" (:func:`is_template`)


def _split_comment(text: str) -> tuple[str, str]:
    """A command line's code and its trailing ``# comment`` (outside quotes)."""
    quote = ""
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or text[i - 1].isspace()):
            return text[:i], text[i + 1 :].strip()
    return text, ""


def _clean(text: str) -> str:
    """A command line without its trailing ``# comment``, whitespace collapsed."""
    return " ".join(_split_comment(text)[0].split())


def is_template(text: str) -> bool:
    """Whether a command line's comment marks it as a template: it names what the reader
    brings (their store, their results, their build), made by no command before it on
    its page, so it is parse-checked but not run in the page's order."""
    return re.search(r"\btemplate\b", _split_comment(text)[1], re.I) is not None


def _lexer(text: str) -> Iterator[str]:
    lex = shlex.shlex(text, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    return iter(lex)


def readme_commands(text: str | None = None, path: Path = README) -> list[Command]:
    """Every command line of a Markdown file's (the README's, by default) fenced ```sh
    blocks and ``$`` lines; ``text`` instead of the file's, when given."""
    lines = (path.read_text(encoding="utf-8") if text is None else text).splitlines()
    source = path.relative_to(REPO).as_posix() if path.is_relative_to(REPO) else path.name
    found: list[Command] = []
    i = 0
    while i < len(lines):
        fence = lines[i].strip()
        if not fence.startswith("```"):
            i += 1
            continue
        lang = fence[3:].strip()
        start = i + 1
        end = next(j for j in range(start, len(lines)) if lines[j].strip() == "```")
        body = lines[start:end]
        if lang in ("sh", "bash", "shell"):
            block: list[Command] = []
            pending = ""
            first = 0
            for k, raw in enumerate(body):
                if not pending:
                    first = start + k + 1
                if raw.rstrip().endswith("\\"):
                    pending += raw.rstrip()[:-1] + " "
                    continue
                joined = _clean(pending + raw)
                marked = is_template(pending + raw)
                pending = ""
                if joined:
                    block.append(Command(first, joined, source=source, template=marked))
            # a plain block right after a one-command sh block is that command's output
            nxt = end + 1
            while nxt < len(lines) and not lines[nxt].strip():
                nxt += 1
            if len(block) == 1 and nxt < len(lines) and lines[nxt].strip() == "```":
                out_end = next(j for j in range(nxt + 1, len(lines)) if lines[j].strip() == "```")
                block[0] = replace(block[0], output=tuple(lines[nxt + 1 : out_end]))
            found += block
        elif lang == "":
            current: Command | None = None
            output: list[str] = []
            for k, raw in enumerate(body):
                if raw.startswith("$ "):
                    if current is not None:
                        found.append(replace(current, output=tuple(output)))
                    current = Command(
                        start + k + 1, _clean(raw[2:]), source=source, template=is_template(raw)
                    )
                    output = []
                elif current is not None:
                    output.append(raw)
            if current is not None:
                found.append(replace(current, output=tuple(output)))
        i = end + 1
    return found


def simple_commands(text: str) -> list[list[str]]:
    """The simple commands of a command line: words, without redirections."""
    text = re.sub(r"(?<=\s)\d?>&\d\b", " ", text)  # 2>&1
    commands: list[list[str]] = [[]]
    skip = False
    for word in _lexer(text):
        if skip:
            skip = False
        elif word in SEPARATORS:
            commands.append([])
        elif word in REDIRECTIONS:
            skip = True
        else:
            commands[-1].append(word)
    return [c for c in commands if c]


def program_words(words: list[str]) -> list[str]:
    """A simple command's words from its program on (assignments and wrappers dropped)."""
    i = 0
    while i < len(words) and (ASSIGNMENT.match(words[i]) or words[i] in WRAPPERS):
        i += 1
    return words[i:]


def assay_argvs(text: str) -> list[list[str]]:
    """The argv (after ``assay``) of every Assay invocation in a command line."""
    out = []
    for words in simple_commands(text):
        prog = program_words(words)
        if prog and prog[0] == "assay":
            out.append(prog[1:])
    return out


#: The pages whose commands are checked: the README and every guide (docs/cli.md is
#: generated from --help and holds no examples to run).
PAGES = [README, *sorted(p for p in (REPO / "docs").glob("*.md") if p.name != "cli.md")]
COMMANDS = [c for page in PAGES for c in readme_commands(path=page)]
ASSAY_COMMANDS = [c for c in COMMANDS if assay_argvs(c.text)]


# -- what is run, and what is not -------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """How a README command is run: the exit statuses that are right (the README's),
    the files it must write, and, for SLOW studies, the README output lines that depend
    on the measurements (regular expressions over the README's own lines)."""

    status: frozenset[int] = frozenset({0})
    setup: tuple[str, ...] = ()
    creates: tuple[str, ...] = ()
    volatile: tuple[str, ...] = ()
    why: str = ""


def needs_pyarrow() -> Run:
    """``export -o trials.parquet``: written when pyarrow is installed; otherwise exit 3
    (a missing extra, docs/exit-statuses.md) with the install hint the page gives."""
    try:
        import pyarrow  # type: ignore[import-not-found, import-untyped, unused-ignore]  # noqa: F401
    except ImportError:
        return Run(status=frozenset({3}), why="pyarrow is not installed: exit 3, naming it")
    return Run(creates=("trials.parquet", "trials.units.parquet"))


NOISY = (
    "(5: a few-ms CPU-bound command on a shared 2-core machine can drift until its 1,000 "
    "rounds are spent, 'no valid CI'; the line shows the command line, not a verdict)"
)

# a no-op's level on a shared machine can also step (a neighbour starts): the level check
# then ends the study early, "no valid CI: the mean moved", exit 4 as docs/run.md says
MOVED = (
    f"{NOISY[:-1]}; 4: the level of a few-ms command stepped during the study, which "
    "ends it early with 'the mean moved', the status docs/run.md gives that)"
)

BUSY = (
    "(5: on a busy machine, at load 4-6, the study's max_time budget ends before its "
    "target; the README says it takes longer there, and 5 is the README's status for it)"
)

#: Commands run for real by default: each takes seconds on the embedded default.
RUN: dict[str, Run] = {
    'assay run "sleep 0.01"': Run(),
    "assay run -P t 1 4 -- sleep 0.0{t}": Run(),
    "assay run --shell -- 'seq 100000 | sort | uniq | wc -l'": Run(
        status=frozenset({0, 4, 5}), why=MOVED
    ),
    "assay run --json - -- true | jq '.pis[0].mean'": Run(status=frozenset({0, 4, 5}), why=MOVED),
    "assay compare -- 'sleep 0.01' -- 'sleep 0.012' --report r.html": Run(creates=("r.html",)),
    "assay show study.assay.db": Run(),
    "assay show examples/sqlite-sweep.assay.db": Run(),
    "assay report examples/sqlite-sweep.assay.db -o report.html": Run(creates=("report.html",)),
    'assay show ~/.cache/assay/quick.assay.db "quick sleep-0-01 039fcda1" --json - | jq .pis': (
        Run()
    ),
    "assay show study.assay.db --summary": Run(),
    "assay report study.assay.db -o report.html": Run(creates=("report.html",)),
    'assay report study.assay.db "my study" -o report.html --plots plots/': Run(
        creates=("report.html",)
    ),
    "assay ls": Run(),
    "assay ls study.assay.db --all --json": Run(),
    'assay run -q --ci-width 20% --store study.assay.db --name "my study" -- sleep 0.01': Run(),
    "assay export study.assay.db -o trials.csv": Run(creates=("trials.csv", "trials.units.csv")),
    "assay export study.assay.db \"my study\" --format json -o - | jq '.trials[0]'": Run(),
    "assay export study.assay.db -o trials.parquet": needs_pyarrow(),
    'assay rm "quick sleep-0-01 039fcda1"': Run(),
    "assay gc --older-than 30d --dry-run": Run(),
    "assay compare --from hyperfine.json pyperf.json assay-result.json": Run(),
    # base.json is `sleep 0.02`'s result, head.json `sleep 0.01`'s: head is not worse
    "assay compare --from base.json head.json --fail-if-worse 5%": Run(),
    "assay order --from tests/data/order_trials.csv --unit s": Run(),
    "assay sweep --from bench/data/sqlite-sweep-grid.csv --params "
    "journal_mode,synchronous,batch,value_size --metric throughput --unit ops/s --log": Run(),
    "assay ls study.assay.db": Run(),
    # a pilot of 9 trials (3 settings), a few seconds: the fixture store holds another study
    "assay plan examples/sqlite-sweep.toml": Run(),
    "assay status study.assay.db": Run(),
}

#: A sweep's outcome is what it measures: when (and whether) the R² target is reached,
#: which terms are significant, in which order, and the knee. Its header (parameters,
#: grid, table columns), the log note and the store are compared.
SWEEP_VOLATILE = (
    r"^\s+\d+ │ ",  # the steps
    r"^Measured |^interactions\.$",
    r"^Significant parameters|^  \S.*%\s+p [<=] ",
    r"^Important points|^  \d+\. |^Report results",
    r"^Significant and explaining|significant but below",
    r"^done: ",
)
#: A run's notes, warnings, and resource and overhead clauses depend on the readings
#: (skewness; whether the rounds differ more than their unit readings explain, which
#: makes the method line's "t-interval of round means"; how the watch paced itself).
RUN_VOLATILE = (
    r"^method: |^MSER warm-up removal",
    r"^(insert_rate|batch_time): |^explain \(F test|^is corrected|^readings \(statistic",
    # a skewed sample's interval reads "mean [low, high]" (Hall's correction), not "± h"
    r"^\s*(insert_rate|batch_time) [↑↓]\s+│",
    r"^warning: |^this benchmark measures",
    # "(N more not watched …)" when the watch paced itself; "typical (median), N on
    # average with one-time costs …" when the mean is over twice the median
    r"^resources, p95 per trial|^overhead: |^analysis's imports",
)


#: Commands run for real with ``-m slow`` (or ``ASSAY_SLOW=1``): seconds to minutes.
SLOW: dict[str, Run] = {
    # decided in 2-7 s on a quiet machine, but a minute at load 2-3: Python's start-up
    # (fsyncs, for sync-full) is noisy on this shared machine, and noise needs cycles
    'assay compare -- python3 -c "import time; time.sleep(0.02)" -- python3 -c "import time; '
    'time.sleep(0.03)"': Run(status=frozenset({0, 5}), why=NOISY),
    "assay compare examples/compare-sqlite-sync.toml --json result.json": Run(
        creates=("result.json",)
    ),
    # 20-40 s here: the TRUNCATE equivalence needs the most cycles; on a busy machine
    # its 120 s budget can end first (5, the claim undecided)
    "assay compare examples/artifact/sqlite-journal-claims.toml": Run(
        status=frozenset({0, 5}), why=BUSY
    ),
    "assay report examples/artifact/sqlite-journal-claims.assay.db --artifact "
    "-o artifact.html": Run(
        status=frozenset({0}),
        creates=("artifact.html",),
        setup=(
            "assay compare -q --no-overhead examples/artifact/sqlite-journal-claims.toml "
            "|| test $? -eq 5",
        ),
    ),
    # its original first (that study, as above); the reproduction's PIs can stay
    # undecided on a busy machine (5), its claims are what the page shows
    "assay reproduce examples/artifact/sqlite-journal-claims.assay.db --tolerance 25%": Run(
        status=frozenset({0, 5}),
        why=BUSY,
        setup=(
            "assay compare -q --no-overhead examples/artifact/sqlite-journal-claims.toml "
            "|| test $? -eq 5",
        ),
    ),
    "assay sweep examples/sqlite-sweep.toml --plot sqlite-tiles.png": Run(
        status=frozenset({0, 5}), why=BUSY, creates=("sqlite-tiles.png",), volatile=SWEEP_VOLATILE
    ),
    "assay run examples/run-sqlite-insert.toml": Run(
        status=frozenset({0, 5}), why=BUSY, volatile=RUN_VOLATILE
    ),
    'assay run --max-time 10 -- python3 -c "sum(range(10**6))"': Run(
        status=frozenset({0, 5}),
        why="a CPU-bound loop on a shared 2-core machine can drift until its 10 s are "
        "spent (exit 5, 'no valid CI')",
    ),
    "assay order examples/order-file-cache.toml --plot order.png --trials-csv trials.csv": Run(
        creates=("order.png", "trials.csv"),
        volatile=(
            # which test's order matters, and by how much, is what the study measures
            r"^ (backup|scan|cpu) ",
            r"^order matters|^pooled trials|^drift inside",
        ),
    ),
    "assay sweep examples/sqlite-sweep.toml --workers 2": Run(
        status=frozenset({0, 5}), why=BUSY, volatile=(*SWEEP_VOLATILE, r"^ran on a Dask cluster")
    ),
}

#: Commands that are only parse-checked, each with why it is not run here.
NOT_RUN: dict[str, str] = {
    "assay compare --name old --name new -- ./old --rows 1000 -- ./new --rows 1000": (
        "./old and ./new stand for the reader's own programs"
    ),
    "assay compare --fail-if-worse 5% -- ./bench-base -- ./bench-head": (
        "./bench-base and ./bench-head stand for the reader's own builds"
    ),
    "assay compare --name base --name head --fail-if-worse 5% --markdown summary.md -- "
    "../base/bench -- ./bench": "../base/bench and ./bench: the reader's two checkouts",
    "assay run --json today.json --baseline main.json --fail-if-worse 5% -- ./bench": (
        "./bench and main.json: the reader's program and an earlier job's result"
    ),
    'assay history results.assay.db "my study"': (
        "needs a run study measured at several commits ([benchmark] git_repo); "
        "tests/test_history.py builds one"
    ),
    "assay history --run-commits v1.0..main -- study.toml": (
        "needs a git repository with a tag v1.0 and the reader's study file"
    ),
    "assay compare examples/distributed/redis-replica-compare.toml --json r.json": (
        "a cluster: three loopback SSH hosts (ssh-loopback-hosts.sh) running Redis"
    ),
    "assay sweep examples/distributed/redis-fsync-sweep.toml --json r.json": (
        "a cluster: four loopback SSH hosts (ssh-loopback-hosts.sh) running Redis; "
        "tests/test_netns_distributed.py runs it on namespace hosts"
    ),
    "assay compare examples/distributed/redis-replica-claims.toml": (
        "a cluster: three loopback SSH hosts (ssh-loopback-hosts.sh) running Redis; "
        "tests/test_netns_distributed.py runs it on namespace hosts"
    ),
    "assay sweep examples/distributed/redis-replicas-packed.toml --json r.json": (
        "a cluster: five loopback SSH hosts (ssh-loopback-hosts.sh) running Redis; "
        "tests/test_netns_distributed.py runs it on namespace hosts"
    ),
    "assay knobs examples/distributed/redis-knobs.toml": (
        "a cluster: two loopback SSH hosts (ssh-loopback-hosts.sh) running Redis; "
        "tests/test_netns_distributed.py runs it on namespace hosts"
    ),
    "assay sweep study.toml --cluster tls://10.0.0.5:8786": (
        "the reader's study on their own warm cluster; a TLS --cluster is tried in "
        "tests/test_warm_cluster.py"
    ),
    "assay show examples/distributed/redis-replica-compare.assay.db --summary": (
        "the store the multi-host comparison (a cluster) writes"
    ),
    "setsid nohup assay compare study.toml -q --json r.json > study.log 2>&1 < /dev/null &": (
        "study.toml is the reader's days-long study, detached from the terminal"
    ),
    "assay knobs examples/postgres-knobs.toml --plot importance.png": (
        "PostgreSQL (scripts/install-targets.sh); 8 minutes"
    ),
    "assay compare examples/postgres-pgbench-compare.toml": (
        "PostgreSQL (scripts/install-targets.sh); 2.5 minutes"
    ),
}


def classified(text: str) -> str | None:
    for name, table in (("RUN", RUN), ("SLOW", SLOW), ("NOT_RUN", NOT_RUN)):
        if text in table:
            return name
    return None


def _cid(c: Command) -> str:
    return f"{c.source}:L{c.line}:{c.text[:70]}"


def _ids(value: object) -> str:
    """Test ids: a command's README line and start; other parameters add nothing."""
    return _cid(value) if isinstance(value, Command) else "-"


# -- every command parses and names files that exist --------------------------------------


def test_the_readme_has_commands() -> None:
    """The extraction finds the README's commands (a broken fence would hide them)."""
    assert len(ASSAY_COMMANDS) >= 30, [c.text for c in ASSAY_COMMANDS]
    texts = {c.text for c in ASSAY_COMMANDS}
    assert "assay run examples/run-sqlite-insert.toml" in texts
    assert any(c.output for c in ASSAY_COMMANDS)


def test_every_readme_command_is_classified() -> None:
    texts = {c.text for c in ASSAY_COMMANDS}
    unclassified = sorted(t for t in texts if classified(t) is None)
    assert not unclassified, (
        "README commands in none of RUN, SLOW, NOT_RUN (give each a class): "
        + "; ".join(unclassified)
    )
    twice = sorted(t for t in texts if sum(t in table for table in (RUN, SLOW, NOT_RUN)) > 1)
    assert not twice, twice
    stale = sorted(t for table in (RUN, SLOW, NOT_RUN) for t in table if t not in texts)
    assert not stale, "classified commands in neither README.md nor docs/: " + "; ".join(stale)


@pytest.mark.parametrize(
    ("command", "argv"),
    [(c, a) for c in ASSAY_COMMANDS for a in assay_argvs(c.text)],
    ids=_ids,
)
def test_the_command_parses(command: Command, argv: list[str]) -> None:
    check_parses(command, argv)


def check_parses(command: Command, argv: list[str]) -> None:
    """click accepts ``assay ARGV`` (and Assay's own checks of quick-mode command lines)."""
    assert argv, f"{command.source} line {command.line}: 'assay' alone"
    group = main.make_context("assay", list(argv), resilient_parsing=False)
    name = argv[0]
    sub = main.get_command(group, name)
    assert sub is not None, f"{command.source} line {command.line}: no subcommand {name!r}"
    try:
        ctx = sub.make_context(name, list(argv[1:]), parent=group, resilient_parsing=False)
        with ctx:
            target = ctx.params.get("target")
            if name in ("run", "compare") and target is not None:
                refuse_unknown_option(target)
                hoist_options(target, dict(ctx.params))
    except click.UsageError as exc:
        where = f"{command.source} line {command.line}"
        pytest.fail(f"{where}: {command.text}\n  {exc.format_message()}")


def _repo_paths(words: list[str]) -> list[str]:
    return [w.rstrip("/") for w in words if REPO_PATH.match(w)]


@pytest.mark.parametrize("command", COMMANDS, ids=_cid)
def test_the_files_it_names_exist(command: Command) -> None:
    """A repository path an Assay command or a script run by ``sh``/``bash`` names
    exists (a store: the study file that writes it)."""
    check_files_exist(command)


def check_files_exist(command: Command) -> None:
    missing = []
    for words in simple_commands(command.text):
        prog = program_words(words)
        if not prog or prog[0] not in ("assay", "sh", "bash"):
            continue
        args = prog[1:] if prog[0] == "assay" else prog[1:2]
        for path in _repo_paths(args):
            p = REPO / path
            if p.name.endswith(".assay.db"):
                p = p.with_name(p.name.removesuffix(".assay.db") + ".toml")
            if not p.exists():
                missing.append(str(p.relative_to(REPO)))
    assert not missing, f"{command.source} line {command.line}: {command.text}: no {missing}"


def test_every_pip_install_line_works_in_a_clone() -> None:
    """``pip install`` lines install the clone (``-e '.[extra]'``), with extras that
    exist: the README is read in a clone, not on PyPI."""
    check_pip_install_lines(README.read_text(encoding="utf-8"))


def check_pip_install_lines(text: str) -> None:
    extras = set(
        tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"][
            "optional-dependencies"
        ]
    )
    found = re.findall(r"pip install\s+(-e\s+)?('[^']*'|\S+)", text)
    assert found
    for editable, word in found:
        target = word.strip("'\"")
        if not target.startswith((".", "assay")):
            continue  # another package (pip install pyarrow)
        line = f"pip install {editable}{word}"
        assert editable, f"{line!r}: a clone installs itself with -e '.[…]'"
        m = re.fullmatch(r"\.(?:\[([\w,-]+)\])?", target)
        assert m, f"{line!r}: install the clone ('.[extra]'), not {target!r}"
        assert set((m.group(1) or "test").split(",")) <= extras, line


def test_tools_the_commands_use_are_named_in_install() -> None:
    """A program the examples pipe through (``jq``) is named in the Install section."""
    text = README.read_text(encoding="utf-8")
    install = text.split("## Install", 1)[1].split("\n## ", 1)[0]
    used = {w for c in COMMANDS for s in simple_commands(c.text) for w in program_words(s)[:1]}
    for tool in sorted(used & {"jq"}):
        assert f"`{tool}`" in install, f"{tool} is used by README commands: name it in Install"


# -- output shapes ----------------------------------------------------------------------

_NUM = r"[-+−]?(?:\d+(?:[.,]\d+)*(?:[eE][-+]?\d+)?|∞)"
_DURATION = re.compile(rf"{_NUM}\s?(?:ns|µs|us|ms|s|min|h)\b(?:\s+{_NUM}\s?(?:ms|s|min|h)\b)*")
_BYTES = re.compile(rf"{_NUM}\s?(?:B|KiB|MiB|GiB|TiB)\b")
_NUMBER = re.compile(_NUM)
_RULE = re.compile(r"([━─═])\1+")
_GAP = re.compile(r"\.\.\.|…")


def mask(text: str) -> list[str]:
    """A text's words with numbers masked (see the module's docstring)."""
    text = _DURATION.sub("<t>", text)
    text = _BYTES.sub("<b>", text)
    text = _NUMBER.sub("<n>", text)
    text = _GAP.sub(" … ", text)  # a gap is a word of its own, in both texts
    return _RULE.sub(r"\1", text).split()


def _find(words: list[str], part: list[str], start: int) -> int:
    """Where ``part`` next occurs as consecutive words from ``start`` (its end), or -1."""
    n = len(part)
    for i in range(start, len(words) - n + 1):
        if words[i : i + n] == part:
            return i + n
    return -1


def shape_mismatch(readme: tuple[str, ...], real: str, volatile: tuple[str, ...] = ()) -> str:
    """'' when the README's output is an in-order, trimmed picture of ``real`` (numbers
    masked); else the first README line that is not found, with what was expected."""
    words = mask(real)
    at = 0
    for line in readme:
        if any(re.search(v, line) for v in volatile):
            continue
        parts: list[list[str]] = [[]]
        for w in mask(line):
            if w == "…":
                parts.append([])
            else:
                parts[-1].append(w)
        for part in parts:
            if not part:
                continue
            end = _find(words, part, at)
            if end < 0:
                return (
                    f"README line not in the output (in order, numbers masked):\n  {line}\n"
                    f"  masked: {' '.join(part)}\n  after: {' '.join(words[at : at + 40])} …"
                )
            at = end
    return ""


def test_the_shape_rule() -> None:
    real = (
        "sqlite-sync\n 1 │ sync-off  │ 274133 rows/s ± 23971 rows/s │ 6 × 1\n"
        "decided in 6 cycles · measured 1.2 s\nstore: x.assay.db\n"
    )
    readme = (
        "sqlite-sync",
        " 1 │ sync-off │ 31947 rows/s ± 2739 rows/s │  12 × 1",
        "  ...",
        "decided in 13 cycles · measured 885 ms",
    )
    assert shape_mismatch(readme, real) == ""
    assert shape_mismatch(("store: x.assay.db", "sqlite-sync"), real) != ""  # order
    assert shape_mismatch(("decided in … · measured 2 min 5 s",), real) == ""
    assert shape_mismatch(("1 │ sync-off│",), real) != ""  # words, not characters
    assert shape_mismatch(("a (5 values: A, …), b",), "a (5 values: A, B, …), b") == ""
    assert "sync-on" in shape_mismatch((" 1 │ sync-on │",), real)
    assert shape_mismatch(("warning: cpu",), real, volatile=("^warning",)) == ""


# -- running the commands ---------------------------------------------------------------


def _env(home: Path, bindir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "LINES"}
    path = os.pathsep.join([str(bindir), str(Path(sys.executable).parent), env.get("PATH", "")])
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), PATH=path, COLUMNS=COLUMNS)
    env.pop("XDG_RUNTIME_DIR", None)
    return env


def _sh(
    text: str, cwd: Path, env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-o", "pipefail", "-c", text],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


#: Quick settings for the fixtures' own studies (not README commands).
_FAST = "-q --no-monitor --ci-width 50%"

#: How the template sandbox is made: commands run in it once per module.
FIXTURES = (
    # the quick-mode store holds `assay run "sleep 0.01"`'s study (show, rm); this one
    # also keeps the launch-overhead probe in the sandbox's cache for the runs to come
    f'assay run {_FAST} "sleep 0.01"',
    # the main command's store (its sweep takes minutes: a short study stands for it)
    f"assay run {_FAST} --no-overhead --store examples/sqlite-sweep.assay.db -- sleep 0.01",
    # study.assay.db with one study, "my study" (show, report, export, ls)
    f'assay run {_FAST} --no-overhead --store study.assay.db --name "my study" -- sleep 0.01',
    # results for compare --from: hyperfine's, pyperf's (wall time in s) and Assay's,
    # a stored `assay run --json` of sleep 0.01 (a live `true` beside busy neighbours
    # switched between a 0.6 and a 3.5 ms launch mid-run: "the level moved", exit 4)
    "cp tests/data/hyperfine_sqlite_sync.json hyperfine.json",
    "cp tests/data/pyperf_sort.json pyperf.json",
    "cp tests/data/assay_gate_head.json assay-result.json",
    # the gate's base and head, `assay run --json` results of sleep 0.02 and sleep 0.01
    # with stored i.i.d. readings: a live short run on a busy machine can end with a
    # base too short for block means and a head whose readings do not merge, and the
    # gate then says 5 (undecided), not the page's 0
    "cp tests/data/assay_gate_base.json base.json",
    "cp tests/data/assay_gate_head.json head.json",
)


def _fresh_sandbox(root: Path) -> tuple[Path, dict[str, str]]:
    """``root/box`` with copies of the repository's examples and data (no stores), an
    ``assay`` shim in ``root/bin`` running this Python's Assay, and the environment."""
    box = root / "box"
    box.mkdir()
    for rel in SANDBOX_COPIES:
        shutil.copytree(
            REPO / rel, box / rel, ignore=shutil.ignore_patterns("*.assay.db*", "__pycache__")
        )
    bindir = root / "bin"
    bindir.mkdir()
    shim = bindir / "assay"
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m assay "$@"\n')
    shim.chmod(0o755)
    return box, _env(box, bindir)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sandbox with the copies and fixtures every run starts from."""
    root = tmp_path_factory.mktemp("readme")
    box, env = _fresh_sandbox(root)
    for step in FIXTURES:
        res = _sh(step, box, env, timeout=300)
        assert res.returncode == 0, f"fixture {step!r}: {res.returncode}\n{res.stderr[-2000:]}"
    return root


def _uses_jq(text: str) -> bool:
    """Whether a command pipes through ``jq`` (a test skips it where jq is missing)."""
    return any(program_words(s)[:1] == ["jq"] for s in simple_commands(text))


def _sandbox(template: Path, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    box = tmp_path / "box"
    shutil.copytree(template / "box", box, symlinks=True)
    return box, _env(box, template / "bin")


def _check_run(command: Command, run: Run, template: Path, tmp_path: Path, timeout: float) -> None:
    uses_jq = _uses_jq(command.text)
    if uses_jq and shutil.which("jq") is None:
        pytest.skip("jq is not installed (apt-get install jq)")
    box, env = _sandbox(template, tmp_path)
    for step in run.setup:
        done = _sh(step, box, env, timeout=timeout)
        assert done.returncode == 0, f"setup {step!r}: {done.returncode}\n{done.stderr[-2000:]}"
    res = _sh(command.text, box, env, timeout=timeout)
    _check_result(command, run, res, box)


def _check_result(
    command: Command,
    run: Run,
    res: subprocess.CompletedProcess[str],
    box: Path,
    also: frozenset[int] = frozenset(),
    before: str = "",
) -> None:
    """The checks of a run command's result: its exit status (the entry's, or one of
    ``also``), the files it writes, a ``jq`` pipeline's value, and the output the page
    shows, in shape, after a 0; ``before`` heads the failure's message."""
    uses_jq = _uses_jq(command.text)
    said = (
        f"{before}{command.source} line {command.line}: {command.text}\n"
        f"stdout:\n{res.stdout[-3000:]}\nstderr:\n{res.stderr[-3000:]}"
    )
    assert res.returncode in run.status | also, (
        f"exit {res.returncode}, README: {sorted(run.status | also)} {run.why}\n{said}"
    )
    for path in run.creates:
        assert (box / path).exists(), f"{path} not written\n{said}"
    if uses_jq:
        value = res.stdout.strip()
        assert value and value != "null", f"jq printed {value!r}\n{said}"
    if command.output is not None and res.returncode == 0:  # what the README shows
        problem = shape_mismatch(command.output, res.stdout + "\n" + res.stderr, run.volatile)
        assert not problem, f"{problem}\n{said}"


def _occurrences(
    table: dict[str, Run], commands: list[Command] | None = None
) -> list[tuple[Command, Run]]:
    """Each classified command once (a command shown twice runs once), with its output
    where one of its occurrences shows it (of the README's commands, by default)."""
    chosen: dict[str, Command] = {}
    for c in ASSAY_COMMANDS if commands is None else commands:
        if c.text in table and (c.text not in chosen or (c.output and not chosen[c.text].output)):
            chosen[c.text] = c
    return [(c, table[c.text]) for c in chosen.values()]


@pytest.mark.parametrize(
    ("command", "run"),
    _occurrences(RUN, [c for c in ASSAY_COMMANDS if c.template]),
    ids=_ids,
)
def test_the_template_runs(command: Command, run: Run, template: Path, tmp_path: Path) -> None:
    """A template runs with the fixtures standing for what it names (every other RUN
    command runs in its page's order, :func:`test_every_page_runs_in_order`)."""
    _check_run(command, run, template, tmp_path, timeout=120)


def slow_selected(config: pytest.Config) -> bool:
    """Slow tests run with ``-m slow`` (or a marker expression naming it positively) or
    ``ASSAY_SLOW=1``; the default run skips them (as tests/test_kill_safety.py's)."""
    expr = str(config.getoption("markexpr", "") or "")
    return os.environ.get("ASSAY_SLOW") == "1" or ("slow" in expr and "not slow" not in expr)


@pytest.mark.slow
@pytest.mark.parametrize(("command", "run"), _occurrences(SLOW), ids=_ids)
def test_the_slow_command_runs(
    command: Command, run: Run, template: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if not slow_selected(request.config):
        pytest.skip("minutes on the embedded default: -m slow or ASSAY_SLOW=1")
    _check_run(command, run, template, tmp_path, timeout=900)


# -- every page's commands, in order --------------------------------------------------

#: What a SLOW study is given in the page-order run instead of its own budget (said in
#: the test's output): 10 s of measuring, or two runs of each order kind.
SMALLER_BUDGET = {
    "run": " --max-time 10",
    "compare": " --max-time 10",
    "sweep": " --max-time 10",
    "order": " --runs 2",
}


#: What a SLOW study given a smaller budget may end with, and what reads its store after
#: it: 5, the budget spent before the target; 4, "the mean moved" (a study of seconds
#: beside other work sees its level step: the CI runner's run-sqlite-insert.toml did,
#: at round 52 of 59, as docs/run.md says a moved level ends).
CUT_SHORT = frozenset({4, 5})


def _budgeted(text: str) -> str:
    """A SLOW command with a smaller budget (:data:`SMALLER_BUDGET`), put right after its
    one Assay invocation's subcommand (before a ``--`` that starts the measured command);
    unchanged where its subcommand takes none (report, reproduce)."""
    argvs = assay_argvs(text)
    sub = argvs[0][0] if len(argvs) == 1 and argvs[0] else ""
    extra = SMALLER_BUDGET.get(sub, "")
    if not extra:
        return text
    code, _ = _split_comment(text)
    return re.sub(rf"\bassay {sub}\b", lambda m: m.group(0) + extra, code, count=1).rstrip()


def page_steps(page: Path) -> list[tuple[Command, str, str]]:
    """A page's Assay commands in its order, each with what the page-order run does
    with it (``run``: as printed; ``budget``: with a smaller budget; ``skip``: not run)
    and why."""
    steps: list[tuple[Command, str, str]] = []
    for c in readme_commands(path=page):
        if not assay_argvs(c.text):
            continue  # install lines and a cluster's set-up: tested elsewhere or not here
        if c.template:
            steps.append((c, "skip", "a template (its comment says so)"))
        elif c.text in RUN:
            steps.append((c, "run", ""))
        elif c.text in SLOW:
            steps.append((c, "budget", "a slow study, with a smaller budget"))
        else:
            steps.append((c, "skip", NOT_RUN.get(c.text, "not classified")))
    return steps


ORDERED_PAGES = [p for p in PAGES if any(how != "skip" for _, how, _ in page_steps(p))]


def test_a_template_is_marked_by_its_comment() -> None:
    page = "```sh\nassay show study.assay.db   # template: your study's store\nassay ls\n```\n"
    got = readme_commands(page)
    assert [(c.text, c.template) for c in got] == [
        ("assay show study.assay.db", True),
        ("assay ls", False),
    ]
    assert not is_template("assay run -- echo '# template'")


@pytest.mark.parametrize("page", ORDERED_PAGES, ids=lambda p: p.name)
def test_every_page_runs_in_order(page: Path, tmp_path: Path) -> None:
    """Each page's Assay commands run in the page's order in one fresh sandbox (the
    repository's examples and data, a private HOME) with none of the fixtures the
    command-by-command tests stand in for what a page assumes: a command must run as
    printed after the commands before it on its page, or be marked a template in its
    comment. SLOW studies run with a smaller budget (:data:`SMALLER_BUDGET`), so they
    may end with 5 (budget spent) or 4 (the level moved), and so may what reads their
    stores after them (:data:`CUT_SHORT`);
    NOT_RUN commands and templates are skipped, each with its reason, in the failure's
    log."""
    box, env = _fresh_sandbox(tmp_path)
    log: list[str] = []
    budget_spent = False
    for command, how, why in page_steps(page):
        if how == "skip":
            log.append(f"line {command.line}: skipped ({why}): {command.text}")
            continue
        uses_jq = _uses_jq(command.text)
        if uses_jq and shutil.which("jq") is None:
            log.append(f"line {command.line}: skipped (jq is not installed): {command.text}")
            continue
        run = RUN.get(command.text) or SLOW[command.text]
        text = _budgeted(command.text) if how == "budget" else command.text
        began = time.monotonic()
        res = _sh(text, box, env, timeout=300)
        log.append(
            f"line {command.line}: exit {res.returncode} in {time.monotonic() - began:.0f} s: "
            f"{text}"
        )
        after_budget = how == "budget" or budget_spent
        # a study cut short, and what reads its store, is not the page's picture of it
        shown = command if not after_budget else replace(command, output=None)
        _check_result(
            shown, run, res, box, CUT_SHORT if after_budget else frozenset(),
            before="\n".join(log) + "\n",
        )  # fmt: skip
        budget_spent = budget_spent or (how == "budget" and res.returncode in CUT_SHORT)
    print("\n".join(log))
