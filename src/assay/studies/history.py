"""A study's result across commits (``assay history``), and measuring commits for it.

Where the revisions come from
-----------------------------
A run study measured at many revisions keeps them in one of two ways; ``history``
reads both, from every study of the store named ``STUDY`` or ``STUDY@...``:

* one study, one session per revision: when ``[benchmark] git_repo`` is set, each
  session records the checked-out revision (``git_revision`` of its environment), so a
  CI job that runs ``assay run --fresh STUDY.toml`` after each commit leaves the older
  sessions in ``STUDY@archived-...`` studies, and one that keeps the study adds
  sessions to it: every trial is given its session's revision;
* one study per commit, named ``STUDY@<12-hex short sha>``, as
  :func:`run_commits` (``assay history --run-commits``) stores them: the study value
  :data:`REVISION_KEY` holds the full revision and :data:`BUILD_KEY` how its build went.

Per-commit studies keep each commit's stopping rule and resumption intact (a commit's
study is an ordinary ``assay run`` study: ``assay show STORE STUDY@abc123def456``
reports it) and let a rerun skip the commits already measured.  ``run_commits``
measures them interleaved by default (blocks of rounds, a fresh random order each pass:
a change of the machine's load between commits would otherwise pass for a change in
the code, issue #36); each block is a session of the commit's study.

Each revision's point is the study's result on its trials (:func:`assay.studies.run.
analyse`: Pilot's mean and CI, as ``assay run`` reports it); the change points across
the points come from :func:`assay.stats.history.e_divisive`, and a step is a
regression only when its CI excludes 0 (:func:`find_changes`).

Git is run as argv lists (never a shell); worktrees go to a private temporary folder
(``mkdtemp``: mode 0700) that is removed afterwards.
"""

from __future__ import annotations

import contextlib
import math
import re
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from assay.errors import StudyError
from assay.spec import Spec
from assay.store import ARCHIVED, Store, TrialRecord, is_archived
from assay.studies.base import OpenStudy, StoredStudy, find_stored, last_lines
from assay.studies.run import Runner, StudyResult, analyse

__all__ = [
    "BUILD_KEY",
    "REVISION_KEY",
    "SCHEDULE_KEY",
    "BlockStart",
    "CommitOutcome",
    "CommitPoint",
    "HistoryChange",
    "HistoryResult",
    "commit_study_name",
    "find_changes",
    "load_history",
    "run_commits",
]

#: Study value of a per-commit study: the full revision it measured.
REVISION_KEY = "history_revision"
#: Study value of a per-commit study: ``{"ok": bool, "exit_code": int | None,
#: "output_tail": [str]}`` of its build.
BUILD_KEY = "history_build"
#: Study value of a per-commit study: the repository it was checked out from.
REPO_KEY = "history_repo"
#: Study value of a per-commit study measured interleaved with the others: ``{"seed":
#: int, "block": int}`` of the last ``--run-commits`` call that measured it.
SCHEDULE_KEY = "history_schedule"

SHORT = 12  # hex digits of a revision in a per-commit study's name
GIT_TIMEOUT = 60.0


# --------------------------------------------------------------------------- git


def _git(repo: Path, *args: str) -> str:
    """``git -C repo ARGS`` (argv, no shell); StudyError with git's message on failure."""
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise StudyError(f"git {' '.join(args[:2])} in {repo}: {exc}") from None
    if done.returncode != 0:
        why = " ".join(done.stderr.split())[:300] or f"exit status {done.returncode}"
        raise StudyError(f"git {' '.join(args[:2])} in {repo}: {why}")
    return done.stdout


def git_toplevel(path: Path) -> Path:
    """The top folder of the git repository holding ``path``."""
    return Path(_git(path, "rev-parse", "--show-toplevel").strip())


def _check_range(git_range: str) -> str:
    # a revision range is not an option: refuse anything git would read as one
    if not git_range or git_range.startswith("-") or any(c.isspace() for c in git_range):
        raise StudyError(f"{git_range!r} is not a revision range such as v1.0..main")
    return git_range


def rev_list(repo: Path, git_range: str | None = None) -> list[str]:
    """Full revisions, oldest first, in git's topological order: those of ``git_range``
    (``A..B``: reachable from B, not from A), or of every ref."""
    what = ["--all"] if git_range is None else [_check_range(git_range)]
    out = _git(repo, "rev-list", "--topo-order", "--reverse", *what, "--")
    return out.split()


# --------------------------------------------------------------------------- reading


@dataclass
class CommitPoint:
    """One revision's result in the history."""

    revision: str
    first_trial: float | None  # start of its first trial (Unix time)
    trials: int
    ok_trials: int
    mean: float = math.nan
    low: float = math.nan
    high: float = math.nan
    n_samples: int = 0
    dirty: bool = False  # measured with uncommitted changes (git status not clean)
    build: dict[str, Any] | None = None  # per-commit studies: how the build went
    studies: list[str] = field(default_factory=list)

    @property
    def has_result(self) -> bool:
        return math.isfinite(self.mean)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "has_result": self.has_result}


@dataclass
class HistoryChange:
    """A change point between commits: where, how big, how sure."""

    revision: str  # the first measured commit after the change
    previous: str  # the last measured commit before it
    suspects: list[str]  # the commits that may have made it (previous excluded)
    p_value: float
    statistic: float
    mean_before: float
    mean_after: float
    difference: float
    diff_low: float
    diff_high: float
    relative: float
    rel_low: float
    rel_high: float
    commits_before: int
    commits_after: int
    # the step's CI excludes 0: only then is it a regression (worse) or an improvement;
    # E-Divisive's p alone is not enough (issue #36: a load change between commits made
    # a comment-only commit 'worse +49%', CI [-7.7%, +117.9%], p = 0.025)
    significant: bool
    worse: bool  # a regression: the step goes the PI's worse way and is significant

    @property
    def verdict(self) -> str:
        """``worse``, ``better``, or ``possible`` (a change point whose step's CI
        includes 0: neither a regression nor an improvement)."""
        if not self.significant:
            return "possible"
        return "worse" if self.worse else "better"

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "verdict": self.verdict}


@dataclass
class HistoryResult:
    """``assay history``: every revision's point and the change points between them."""

    study: str
    store: str
    pi: str
    unit: str
    direction: str
    confidence: float
    order: str  # "git" (topological order in the repo) or "time" (first trial)
    repo: str | None
    points: list[CommitPoint]
    changes: list[HistoryChange]
    alpha: float
    permutations: int
    min_size: int
    notes: list[str] = field(default_factory=list)

    @property
    def measured(self) -> list[CommitPoint]:
        return [p for p in self.points if p.has_result]

    def as_dict(self) -> dict[str, Any]:
        return {
            "study": self.study,
            "store": self.store,
            "pi": self.pi,
            "unit": self.unit,
            "direction": self.direction,
            "confidence": self.confidence,
            "order": self.order,
            "repo": self.repo,
            "method": {
                "change_points": "E-Divisive means, permutation test per candidate",
                "alpha": self.alpha,
                "permutations": self.permutations,
                "min_size": self.min_size,
                "step_ci": "Welch interval of the difference between segment means",
            },
            "points": [p.as_dict() for p in self.points],
            "changes": [c.as_dict() for c in self.changes],
            "notes": self.notes,
        }


def commit_study_name(study: str, revision: str) -> str:
    """The per-commit study of ``revision``: ``STUDY@<12 hex digits>``.

    >>> commit_study_name("sort", "0123456789abcdef0123456789abcdef01234567")
    'sort@0123456789ab'
    """
    return f"{study}@{revision[:SHORT]}"


def _family(names: Sequence[str], study: str) -> list[str]:
    """The store's studies that hold ``study``'s history: itself, its archives and its
    per-commit studies."""
    commit = re.compile(re.escape(study) + r"@[0-9a-f]{7,40}\Z")
    return [
        n
        for n in names
        if n == study or (is_archived(n) and n.startswith(study + ARCHIVED)) or commit.match(n)
    ]


def _base_names(names: Sequence[str]) -> list[str]:
    """Study names with archive and per-commit suffixes taken off."""
    out: list[str] = []
    for n in names:
        base = n.split(ARCHIVED, 1)[0] if is_archived(n) else re.sub(r"@[0-9a-f]{7,40}\Z", "", n)
        if base not in out:
            out.append(base)
    return out


def _session_revisions(store: Store, sid: int, trials: list[TrialRecord]) -> list[str | None]:
    """Each trial's revision: its session's ``git_revision``.  A run study's sessions
    add trials after the stored ones (the next seq), so in (run, seq) order the trials
    come session by session; trials stored without a session have none."""
    counts = store.trials_by_session(sid)
    if None in counts or sum(counts.values()) != len(trials):
        return [None] * len(trials)
    revs: list[str | None] = []
    for session, env in zip(store.study_sessions(sid), store.environments(sid), strict=True):
        rev = env.get("git_revision")
        revs += [rev if isinstance(rev, str) and rev else None] * counts.get(session["id"], 0)
    return revs


@dataclass
class _Group:
    trials: list[TrialRecord] = field(default_factory=list)
    dirty: bool = False
    build: dict[str, Any] | None = None
    studies: list[str] = field(default_factory=list)
    spec: Spec | None = None


def _read_groups(
    store: Store, names: list[str], notes: list[str]
) -> tuple[dict[str, _Group], StoredStudy, str | None]:
    """Trials by revision across the studies ``names``; the study whose spec is used
    (the plain study if there is one, else the first in the store); its repo."""
    groups: dict[str, _Group] = {}
    unknown = 0
    reference: StoredStudy | None = None
    repo: str | None = None
    for name in names:
        stored = find_stored(store, name)
        if stored.kind != "run":
            raise StudyError(
                f"{store.path}: study {name!r} is a {stored.kind} study; history reads run "
                "studies (one result per revision)"
            )
        if reference is None or name == names[0]:
            reference = stored
        trials = store.trials(stored.study_id)
        revision = store.study_value(stored.study_id, REVISION_KEY)
        if isinstance(revision, str) and revision:
            revs: list[str | None] = [revision] * len(trials)
            build = store.study_value(stored.study_id, BUILD_KEY)
            found = store.study_value(stored.study_id, REPO_KEY)
            repo = found if isinstance(found, str) else repo
            g = groups.setdefault(revision, _Group())
            g.build = build if isinstance(build, dict) else g.build
            g.studies.append(name)
            g.spec = g.spec or stored.spec
        else:
            revs = _session_revisions(store, stored.study_id, trials)
            for env in store.environments(stored.study_id):
                if isinstance(env.get("git_repo"), str):
                    repo = repo or env["git_repo"]
        for t, rev in zip(trials, revs, strict=True):
            if rev is None:
                unknown += 1
                continue
            clean = rev.removesuffix("+dirty")
            g = groups.setdefault(clean, _Group())
            g.trials.append(t)
            g.dirty = g.dirty or rev.endswith("+dirty")
            g.spec = g.spec or stored.spec
            if name not in g.studies:
                g.studies.append(name)
    if unknown:
        notes.append(
            f"{unknown} trial(s) without a recorded revision were left out (set [benchmark] "
            "git_repo so that each session records it)"
        )
    assert reference is not None  # names is never empty
    return groups, reference, repo


def _point(revision: str, g: _Group, spec: Spec, pi: str) -> CommitPoint:
    starts = [t.started for t in g.trials if t.started is not None]
    point = CommitPoint(
        revision=revision,
        first_trial=min(starts) if starts else None,
        trials=len(g.trials),
        ok_trials=sum(1 for t in g.trials if t.ok),
        dirty=g.dirty,
        build=g.build,
        studies=g.studies,
    )
    if point.ok_trials:
        result = next((r for r in analyse(g.spec or spec, g.trials) if r.name == pi), None)
        if result is not None and math.isfinite(result.mean):
            point.mean, point.low, point.high = result.mean, result.low, result.high
            point.n_samples = result.n_samples
    return point


def _resolve_repo(repo: Path | str | None) -> Path | None:
    if repo is None:
        return None
    try:
        return git_toplevel(Path(repo).expanduser())
    except StudyError:
        return None


def _order(
    points: list[CommitPoint], repo: Path | None, git_range: str | None, notes: list[str]
) -> tuple[list[CommitPoint], list[str] | None]:
    """Points in git's topological order (and that order's commits), else by time."""
    by_time = sorted(points, key=lambda p: (p.first_trial is None, p.first_trial or 0.0))
    if repo is None:
        if git_range:
            raise StudyError(
                f"--git-range {git_range}: no git repository to read it in (give --repo)"
            )
        if len(points) > 1:
            notes.append("no git repository at hand (--repo): commits ordered by first trial")
        return by_time, None
    listing = rev_list(repo, git_range)
    rank = {rev: i for i, rev in enumerate(listing)}
    inside = [p for p in points if p.revision in rank]
    outside = len(points) - len(inside)
    if outside and git_range:
        notes.append(f"{outside} measured revision(s) outside {git_range} were left out")
    elif outside:
        notes.append(f"{outside} measured revision(s) not in {repo}'s history were left out")
    return sorted(inside, key=lambda p: rank[p.revision]), listing


def load_history(
    store_path: Path,
    study: str | None,
    *,
    pi: str | None = None,
    repo: Path | str | None = None,
    git_range: str | None = None,
    alpha: float = 0.05,
    permutations: int = 199,
    min_size: int = 3,
    seed: int = 0,
) -> HistoryResult:
    """The history of ``study`` in the store at ``store_path`` (module notes): one point
    per revision, in git's order when the repository is at hand (``repo``, else the
    one its trials were measured in), else by the time of each revision's first trial;
    and the change points between them.

    Raises :class:`~assay.studies.stored.NoSuchStudy` (no such study),
    :class:`StudyError` (not a run study, an unknown PI, a bad range) or
    :class:`~assay.store.StoreError`.
    """
    from assay.studies.stored import NoSuchStudy

    notes: list[str] = []
    with Store(store_path, read_only=True) as store:
        all_names = store.study_names()
        bases = _base_names(all_names)
        if study is None:
            if len(bases) != 1:
                listed = ", ".join(repr(n) for n in bases) or "none"
                raise NoSuchStudy(f"{store_path} holds {len(bases)} studies; name one: {listed}")
            study = bases[0]
        names = _family(all_names, study)
        if not names:
            listed = ", ".join(repr(n) for n in bases) or "none"
            raise NoSuchStudy(f"{store_path}: no study named {study!r}; its studies: {listed}")
        if study in names:  # the plain study first: its spec is the reference
            names.remove(study)
            names.insert(0, study)
        groups, reference, stored_repo = _read_groups(store, names, notes)
    spec = reference.spec
    pi_spec = next((p for p in spec.pis if p.name == (pi or spec.pis[0].name)), None)
    if pi_spec is None:
        known = ", ".join(p.name for p in spec.pis)
        raise StudyError(f"{store_path}: study {study!r} has no PI {pi!r}; its PIs: {known}")
    points = [_point(rev, g, spec, pi_spec.name) for rev, g in groups.items()]
    git = _resolve_repo(repo if repo is not None else stored_repo)
    if repo is not None and git is None:
        raise StudyError(f"--repo {repo}: not a git repository")
    points, listing = _order(points, git, git_range, notes)
    measured = [p for p in points if p.has_result]
    changes: list[HistoryChange] = []
    if len(measured) < 2 * min_size:
        notes.append(
            f"{len(measured)} commit(s) with a result: change points need at least "
            f"{2 * min_size} (min size {min_size} on each side)"
        )
    else:
        changes = find_changes(
            measured,
            pi_spec.direction,
            spec.stop.confidence,
            listing=listing,
            alpha=alpha,
            permutations=permutations,
            min_size=min_size,
            seed=seed,
        )
    return HistoryResult(
        study=study,
        store=str(store_path),
        pi=pi_spec.name,
        unit=pi_spec.unit,
        direction=pi_spec.direction,
        confidence=spec.stop.confidence,
        order="git" if listing is not None else "time",
        repo=None if git is None else str(git),
        points=points,
        changes=changes,
        alpha=alpha,
        permutations=permutations,
        min_size=min_size,
        notes=notes,
    )


def find_changes(
    measured: Sequence[CommitPoint],
    direction: str,
    confidence: float,
    *,
    listing: list[str] | None = None,
    alpha: float = 0.05,
    permutations: int = 199,
    min_size: int = 3,
    seed: int = 0,
) -> list[HistoryChange]:
    """The change points between the means of ``measured`` (commits with a result, in
    order; ``listing``: git's order of every commit, for the suspects): E-Divisive means
    with a permutation test at ``alpha``, each step with Welch's CI at ``confidence``.
    A step is a regression (``worse``) only when it goes ``direction``'s worse way and
    its CI excludes 0; a change point whose CI includes 0 is only a possible change."""
    from assay.stats.history import e_divisive, segment_steps

    values = [p.mean for p in measured]
    found = e_divisive(values, alpha, permutations, min_size, seed)
    steps = segment_steps(values, [c.index for c in found], confidence)
    changes: list[HistoryChange] = []
    for c, s in zip(found, steps, strict=True):
        after, before = measured[c.index], measured[c.index - 1]
        w = s.welch
        up = w.difference > 0 if direction == "lower" else w.difference < 0
        significant = w.diff_low > 0 or w.diff_high < 0  # NaN bounds: not significant
        changes.append(
            HistoryChange(
                revision=after.revision,
                previous=before.revision,
                suspects=_suspects(listing, before.revision, after.revision),
                p_value=c.p_value,
                statistic=c.statistic,
                mean_before=s.mean_before,
                mean_after=s.mean_after,
                difference=w.difference,
                diff_low=w.diff_low,
                diff_high=w.diff_high,
                relative=w.relative,
                rel_low=w.rel_low,
                rel_high=w.rel_high,
                commits_before=s.before[1] - s.before[0],
                commits_after=s.after[1] - s.after[0],
                significant=bool(significant),
                worse=bool(significant and up and w.difference != 0.0),
            )
        )
    return changes


def _suspects(listing: list[str] | None, before: str, after: str) -> list[str]:
    """The commits after ``before`` up to ``after`` in git's order (just ``after``
    without a repository): one of them made the change."""
    if listing is None:
        return [after]
    i, j = listing.index(before), listing.index(after)
    return listing[i + 1 : j + 1]


# --------------------------------------------------------------------------- measuring


@dataclass
class CommitOutcome:
    """What ``--run-commits`` did at one commit."""

    revision: str
    study: str
    status: str  # "measured", "skipped" (measured before), "build failed", "no result"
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class _CommitRunner(Runner):
    """A run study of one commit: its trials run in the commit's worktree, and its
    revision, repository and build are recorded as study values."""

    def __init__(
        self,
        spec: Spec,
        store_path: Path,
        cwd: Path,
        revision: str,
        repo: Path,
        *,
        schedule: dict[str, Any] | None = None,
        **kw: Any,
    ) -> None:
        super().__init__(spec, store_path, **kw)
        self.cwd = str(cwd)  # not in the spec: its path changes from run to run
        self.revision = revision
        self.repo = repo
        self.schedule = schedule  # interleaved: the seed and block of the order

    def _open(self, store: Store) -> OpenStudy:
        st = super()._open(store)
        store.set_study_value(st.study_id, REVISION_KEY, self.revision)
        store.set_study_value(st.study_id, REPO_KEY, str(self.repo))
        store.set_study_value(st.study_id, BUILD_KEY, {"ok": True})
        if self.schedule is not None:
            store.set_study_value(st.study_id, SCHEDULE_KEY, self.schedule)
        st.environment["git_revision"] = self.revision
        return st


def commit_spec(spec: Spec, revision: str) -> Spec:
    """The study of one commit: named ``STUDY@<short sha>``, without ``git_repo`` (the
    revision is a study value; the session would record the main checkout's)."""
    bench = spec.benchmark.model_copy(update={"git_repo": None})
    study = spec.study.model_copy(update={"name": commit_study_name(spec.study.name, revision)})
    return spec.model_copy(update={"benchmark": bench, "study": study})


def _path_of(spec: Spec, value: str | None) -> Path | None:
    if value is None:
        return None
    p = Path(value).expanduser()
    if not p.is_absolute() and spec.source_path:
        p = Path(spec.source_path).parent / p
    return p.resolve()


def _worktree_cwd(spec: Spec, repo: Path, worktree: Path) -> Path:
    """The benchmark's folder in the worktree: its ``cwd`` if that lies in the
    repository, else the worktree's top."""
    cwd = _path_of(spec, spec.benchmark.cwd)
    if cwd is not None and cwd.is_relative_to(repo):
        return worktree / cwd.relative_to(repo)
    return worktree


@contextlib.contextmanager
def _worktree(repo: Path, revision: str) -> Iterator[Path]:
    """A detached worktree of ``revision`` in a private temporary folder, removed after."""
    top = Path(tempfile.mkdtemp(prefix="assay-history-"))  # mode 0700
    tree = top / "tree"
    try:
        _git(repo, "worktree", "add", "--detach", "--quiet", str(tree), revision)
        yield tree
    finally:
        with contextlib.suppress(StudyError):
            _git(repo, "worktree", "remove", "--force", str(tree))
        shutil.rmtree(top, ignore_errors=True)
        with contextlib.suppress(StudyError):
            _git(repo, "worktree", "prune")


def _build(argv: list[str], cwd: Path, timeout: float) -> dict[str, Any]:
    """Run the build; what the store records of it."""
    try:
        done = subprocess.run(
            argv,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"ok": False, "exit_code": None, "output_tail": [f"timed out after {timeout:g} s"]}
    except OSError as exc:
        return {"ok": False, "exit_code": None, "output_tail": [str(exc)]}
    tail = last_lines(done.stdout + done.stderr, lines=5)
    return {"ok": done.returncode == 0, "exit_code": done.returncode, "output_tail": tail}


def _record_build(store_path: Path, spec: Spec, revision: str, repo: Path, build: Any) -> None:
    """Keep a failed build in the store: a per-commit study without trials."""
    from assay.studies.base import SPEC_KEY

    store_path.parent.mkdir(parents=True, exist_ok=True)
    with Store(store_path) as store:
        store.lock_study(spec.study.name)
        sid = store.open_study(
            spec.study.name, spec.measurement_hash(), spec.model_dump(mode="json")
        )
        store.set_study_value(sid, SPEC_KEY, spec.model_dump_json())
        store.set_study_value(sid, REVISION_KEY, revision)
        store.set_study_value(sid, REPO_KEY, str(repo))
        store.set_study_value(sid, BUILD_KEY, build)


def _measured_before(store_path: Path, name: str) -> tuple[bool, dict[str, Any] | None, int]:
    """Whether commit study ``name`` is done (its last session ended with trials, and not
    paused between two blocks of an interleaved run), its recorded build, and how many
    trials it holds."""
    if not store_path.exists():
        return False, None, 0
    with Store(store_path, read_only=True) as store:
        found = store.find_study(name)
        if found is None:
            return False, None, 0
        build = store.study_value(found[0], BUILD_KEY)
        sessions = store.study_sessions(found[0])
        counts = store.trials_by_session(found[0])
    last = sessions[-1] if sessions else None
    result = last["result"] if last is not None else None
    paused = isinstance(result, dict) and result.get("done") is False
    done = last is not None and last["ended"] is not None and not paused
    trials = sum(counts.values())
    return done and trials > 0, build if isinstance(build, dict) else None, trials


@dataclass
class BlockStart:
    """``--run-commits`` (interleaved): a block of rounds of one commit is starting."""

    pass_number: int  # 1, 2, ...
    index: int  # the commit's place in this pass (0-based)
    count: int  # commits in this pass (those not done yet)
    revision: str
    rounds: int  # the commit's trials so far


@dataclass
class _Pending:
    """A built commit of an interleaved run, measured block by block."""

    revision: str
    spec: Spec
    cwd: Path
    rounds: int


def run_commits(
    spec: Spec,
    store_path: Path,
    git_range: str,
    *,
    retry_failed: bool = False,
    build_timeout: float = 3600.0,
    on_commit: Callable[[CommitOutcome], None] | None = None,
    on_start: Callable[[str, int, int], None] | None = None,
    runner_options: dict[str, Any] | None = None,
    sequential: bool = False,
    block: int | None = None,
    seed: int | None = None,
    on_block: Callable[[BlockStart], None] | None = None,
) -> list[CommitOutcome]:
    """Measure every commit of ``git_range`` as its own run study (:func:`commit_spec`):
    check it out in a private worktree, run ``[benchmark] build`` there, then the study
    with the benchmark in the worktree.  Commits measured before are skipped, as are
    builds that failed before unless ``retry_failed``; a failed build is recorded and the
    next commit goes on.  The outcomes come in git's order (oldest first).

    By default the commits are interleaved (:func:`_interleaved`): every commit is built
    first, then measured in passes, each visiting the commits not done yet in a fresh
    random order (``seed``; drawn when None) for ``block`` rounds each (default: the
    study's ``min_rounds``), until each meets its stopping rule or spends its budget;
    a change of the machine's load then hits every commit alike instead of looking like
    a change in the code.  ``sequential``: one commit after the other, oldest first,
    each measured to its end (``on_start`` before each; in interleaved runs, before
    each build).
    """
    if spec.benchmark.git_repo is None:
        raise StudyError(
            f"{spec.source_path or 'the study'}: --run-commits needs [benchmark] git_repo "
            "(the repository whose commits are measured)"
        )
    given = _path_of(spec, spec.benchmark.git_repo)
    assert given is not None
    repo = git_toplevel(given)
    revisions = rev_list(repo, git_range)
    if not revisions:
        raise StudyError(f"{repo}: no commits in {git_range}")
    outcomes: dict[str, CommitOutcome] = {}
    todo: list[tuple[int, str, Spec, int]] = []  # (index in the range, revision, spec, trials)
    for i, revision in enumerate(revisions):
        one = commit_spec(spec, revision)
        name = one.study.name
        done, build, trials = _measured_before(store_path, name)
        failed_before = build is not None and not build.get("ok", True)
        if done or (failed_before and not retry_failed):
            status = "skipped" if done else "build failed"
            detail = "measured before" if done else "build failed before (--retry-failed)"
            outcomes[revision] = CommitOutcome(revision, name, status, detail)
            if on_commit is not None and sequential:
                on_commit(outcomes[revision])
        elif sequential:
            if on_start is not None:
                on_start(revision, i, len(revisions))
            outcomes[revision] = _measure_commit(
                one, store_path, revision, repo, build_timeout, runner_options
            )
            if on_commit is not None:
                on_commit(outcomes[revision])
        else:
            todo.append((i, revision, one, trials))
    if not sequential:
        for o in outcomes.values():  # the skipped ones first, then as they end
            if on_commit is not None:
                on_commit(o)
        options = dict(runner_options or {})
        schedule = _Schedule(
            seed=secrets.randbelow(2**31) if seed is None else seed,
            block=block or spec.stop.min_rounds,
        )
        got = _interleaved(
            todo,
            store_path,
            repo,
            len(revisions),
            schedule,
            build_timeout,
            options,
            on_start=on_start,
            on_commit=on_commit,
            on_block=on_block,
        )
        outcomes.update({o.revision: o for o in got})
    return [outcomes[r] for r in revisions if r in outcomes]


@dataclass
class _Schedule:
    """The interleaved schedule of a ``--run-commits`` call, recorded in each commit's
    study (:data:`SCHEDULE_KEY`)."""

    seed: int
    block: int

    def order(self, revisions: Sequence[str], pass_number: int) -> list[str]:
        """The commits' order in one pass: a permutation drawn from ``(seed, pass)``."""
        from assay.designs.compare import cycle_order

        return cycle_order(revisions, self.seed, pass_number)


def _build_in(
    spec: Spec,
    store_path: Path,
    revision: str,
    repo: Path,
    tree: Path,
    build_timeout: float,
) -> CommitOutcome | None:
    """Build the commit in its worktree; its outcome when the build failed (recorded)."""
    if not spec.benchmark.build:
        return None
    build = _build(list(spec.benchmark.build), tree, build_timeout)
    if build["ok"]:
        return None
    _record_build(store_path, spec, revision, repo, build)
    why = f"exit status {build['exit_code']}" if build["exit_code"] is not None else ""
    tail = "; ".join(build["output_tail"][-2:])
    return CommitOutcome(
        revision, spec.study.name, "build failed", ", ".join(filter(None, [why, tail]))
    )


def _finished(revision: str, name: str, result: StudyResult, blocks: int = 0) -> CommitOutcome:
    ok = int(result.trials_by_status.get("ok", 0))
    if ok == 0:
        return CommitOutcome(revision, name, "no result", "every trial failed")
    where = f" in {blocks} block(s)" if blocks else ""
    return CommitOutcome(revision, name, "measured", f"{result.trials_total} trial(s){where}")


def _interleaved(
    todo: list[tuple[int, str, Spec, int]],
    store_path: Path,
    repo: Path,
    total: int,
    schedule: _Schedule,
    build_timeout: float,
    runner_options: dict[str, Any],
    *,
    on_start: Callable[[str, int, int], None] | None,
    on_commit: Callable[[CommitOutcome], None] | None,
    on_block: Callable[[BlockStart], None] | None,
) -> list[CommitOutcome]:
    """Build every commit of ``todo`` in its own worktree (kept until the end), then
    measure the built ones in passes of blocks (:func:`run_commits`).  Each block is a
    session of the commit's own study that ends 'paused' after ``schedule.block`` rounds
    (:class:`~assay.studies.run.Runner`'s ``max_new_rounds``) unless the study's
    stopping rule ends it first; every session analyses all of the commit's trials, so
    the last one's result is the commit's.  An interruption leaves every finished trial
    stored (the next call resumes each study) and every worktree removed."""
    outcomes: list[CommitOutcome] = []

    def tell(o: CommitOutcome) -> None:
        outcomes.append(o)
        if on_commit is not None:
            on_commit(o)

    with contextlib.ExitStack() as trees:
        pending: dict[str, _Pending] = {}
        blocks: dict[str, int] = {}
        for i, revision, one, trials in todo:
            if on_start is not None:
                on_start(revision, i, total)
            tree = trees.enter_context(_worktree(repo, revision))
            failed = _build_in(one, store_path, revision, repo, tree, build_timeout)
            if failed is not None:
                tell(failed)
                continue
            cwd = _worktree_cwd(one, repo, tree)
            pending[revision] = _Pending(revision, one, cwd, trials)
            blocks[revision] = 0
        pass_number = 0
        while pending:
            pass_number += 1
            order = schedule.order(list(pending), pass_number - 1)
            for k, revision in enumerate(order):
                c = pending[revision]
                if on_block is not None:
                    on_block(BlockStart(pass_number, k, len(order), revision, c.rounds))
                runner = _CommitRunner(
                    c.spec,
                    store_path,
                    c.cwd,
                    revision,
                    repo,
                    schedule=asdict(schedule),
                    max_new_rounds=schedule.block,
                    **runner_options,
                )
                result = runner.run()
                blocks[revision] += 1
                c.rounds = result.trials_total
                if result.decision.done:
                    del pending[revision]
                    tell(_finished(revision, c.spec.study.name, result, blocks[revision]))
    return outcomes


def _measure_commit(
    spec: Spec,
    store_path: Path,
    revision: str,
    repo: Path,
    build_timeout: float,
    runner_options: dict[str, Any] | None,
) -> CommitOutcome:
    """``--sequential``: build the commit and measure it to its end."""
    with _worktree(repo, revision) as tree:
        failed = _build_in(spec, store_path, revision, repo, tree, build_timeout)
        if failed is not None:
            return failed
        cwd = _worktree_cwd(spec, repo, tree)
        runner = _CommitRunner(spec, store_path, cwd, revision, repo, **(runner_options or {}))
        result = runner.run()
    return _finished(revision, spec.study.name, result)
