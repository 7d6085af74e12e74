"""Kill safety: SIGKILL at random moments, resume, and nothing is lost or doubled; Ctrl-C
stops cleanly.

The harness runs ``python -m assay.cli run study.toml -q --no-overhead`` as a
subprocess on a small deterministic study and kills it with SIGKILL at seeded random
moments, each in one of three phases of a session:

* ``startup``: just after the session row is written, while the stored trials are
  re-analysed (change-point detection on every stored round) and the first trial starts;
* ``trial``: while the k-th benchmark process of the session runs;
* ``commit``: just after the k-th benchmark process has been reaped, while its output is
  parsed, the trial is committed and the next analysis runs.

After every kill the study is resumed by running the same command again. When the kills
are done a last run finishes the study, and the store is checked: ``PRAGMA
integrity_check`` is ``ok``; the trials are exactly seqs 0..N-1, once each; every trial
seen committed after any kill is still there unchanged; and the analysis
(``assay.studies.run.analyse``, and the CLI's ``--json`` result) equals that of an
uninterrupted run of the same study.

Deterministic readings: each trial's benchmark counts the study's committed trials in
the store (read-only; the runner does not write while a trial runs) and those waiting
in its journal (``Store.queue_trial``), which is the trial's own seq when the runner is
correct, and prints a reading and unit readings that
are a fixed function of that count. An uninterrupted run therefore has exactly the same
readings, and a trial stored under the wrong seq (or twice) shows up as a reading that
does not match its seq.

Each ``assay`` start costs ~2 s of imports on a small machine, so the 50-kill run is
marked ``slow``; the default run does ``DEFAULT_KILLS`` kills. ``bench/bench_kill_safety.py``
runs the same harness and prints the figures.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import pytest

from assay.store import study_file

STUDY_NAME = "kill-safety"
STORE = "study.assay.db"
PID_FILE = "bench.pid"
TRIAL_SLEEP_S = 0.03  # plus ~25 ms of interpreter start: trials of ~50-80 ms
UNITS_PER_TRIAL = 60
DEFAULT_KILLS = 12
FULL_KILLS = 50
MAX_ROUNDS = 60

# The benchmark: writes its pid (atomically) for the harness, counts the committed
# trials of the study, works a little, prints readings that depend only on that count.
BENCH_SCRIPT = f"""
import contextlib, os, sqlite3, sys, time
store, pid_file, journal = sys.argv[1], sys.argv[2], sys.argv[3]
tmp = pid_file + ".tmp"
with open(tmp, "w") as f:
    f.write(str(os.getpid()))
os.replace(tmp, pid_file)
db = sqlite3.connect(store, timeout=30)
n = db.execute(
    "SELECT COUNT(*) FROM trials t JOIN studies s ON s.id = t.study_id WHERE s.name = ?",
    ({STUDY_NAME!r},),
).fetchone()[0]
db.close()
# trials kept but not committed yet wait in the study's journal, a line each (the
# runner commits them, and empties it, before the next trial; a resume, before any)
with contextlib.suppress(FileNotFoundError), open(journal, "rb") as f:
    n += f.read().count(b"\\n")
time.sleep({TRIAL_SLEEP_S!r})
base = 10.0 + (n * 7919 % 101) / 100
for i in range({UNITS_PER_TRIAL}):
    print(f"op={{base + ((i * 13 + n * 7) % 10) / 1000:.6f}}")
print(f"seq={{n}} pid={{os.getpid()}} total={{base:.6f}}")
"""

STUDY_TOML = """
[study]
name = "{name}"
store = "{store}"

[benchmark]
command = ["{py}", "bench_trial.py", "{store}", "{pid_file}", "{journal}"]
cwd = "."
timeout = 60

[[pi]]
name = "op"
unit = "ms"
source = "regex"
pattern = 'total=([0-9.]+)'
units = {{ source = "regex", pattern = 'op=([0-9.]+)' }}

[stop]
ci_width = 1e-9
max_rounds = {max_rounds}
max_time = 1000000
"""


def expected_reading(seq: int) -> float:
    """The reading the benchmark prints for the trial with this seq."""
    return round(10.0 + (seq * 7919 % 101) / 100, 6)


def make_study(directory: Path, max_rounds: int = MAX_ROUNDS) -> Path:
    """Write the study file and its benchmark script into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "bench_trial.py").write_text(BENCH_SCRIPT, encoding="utf-8")
    path = directory / "study.toml"
    path.write_text(
        STUDY_TOML.format(
            name=STUDY_NAME,
            store=STORE,
            py=sys.executable.replace("\\", "\\\\"),
            pid_file=PID_FILE,
            journal=study_file(STORE, STUDY_NAME, ".pending").name,
            max_rounds=max_rounds,
        ),
        encoding="utf-8",
    )
    return path


def assay_argv(*extra: str) -> list[str]:
    return [sys.executable, "-m", "assay.cli", "run", "study.toml", "-q", "--no-overhead", *extra]


def launch(
    directory: Path, *extra: str, stderr: Any = subprocess.DEVNULL
) -> subprocess.Popen[bytes]:
    """Start ``assay run`` in its own process group, as a shell starts a foreground job."""
    return subprocess.Popen(
        assay_argv(*extra),
        cwd=directory,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        start_new_session=True,
    )


def run_to_end(directory: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        assay_argv("--json", "result.json"),
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its reaper does not count)."""
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


def read_pid(directory: Path) -> int | None:
    try:
        return int((directory / PID_FILE).read_text())
    except (OSError, ValueError):
        return None


def kill_benchmark(directory: Path) -> bool:
    """Kill the benchmark a SIGKILLed ``assay`` left behind; True if one was running."""
    pid = read_pid(directory)
    if pid is None or not alive(pid):
        return False
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)  # the benchmark leads its own process group
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.005)
    return True


class Finished(Exception):
    """``assay`` exited before the moment we waited for."""


def _wait(proc: subprocess.Popen[bytes], cond: Any, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if proc.poll() is not None:
            raise Finished
        if time.monotonic() > deadline:
            raise TimeoutError("assay did not reach the awaited moment")
        time.sleep(0.001)


def count_sessions(store: Path) -> int:
    if not store.exists():
        return 0
    try:
        with contextlib.closing(sqlite3.connect(store, timeout=30)) as db:
            return int(db.execute("SELECT COUNT(*) FROM sessions").fetchone()[0])
    except sqlite3.Error:
        return 0


def wait_for_benchmark(proc: subprocess.Popen[bytes], directory: Path, k: int) -> int:
    """Wait until the k-th benchmark process of this session has started; its pid."""
    seen: list[int] = []

    def kth() -> int | None:
        pid = read_pid(directory)
        if pid is not None and pid not in seen:
            seen.append(pid)
        return seen[k - 1] if len(seen) >= k else None

    return int(_wait(proc, kth))


def wait_for_session(proc: subprocess.Popen[bytes], store: Path, sessions: int) -> None:
    """Wait until this run has written its session row (the store is open, the study found)."""
    _wait(proc, lambda: count_sessions(store) > sessions)


def wait_for_exit(proc: subprocess.Popen[bytes], pid: int) -> None:
    """Wait until the benchmark ``pid`` has ended and been reaped by ``assay``."""
    _wait(proc, lambda: not alive(pid))


def stored_trials(store: Path) -> dict[int, tuple[int, bytes]]:
    """seq -> (trial id, stdout) of the study's committed trials."""
    if not store.exists():
        return {}
    with contextlib.closing(sqlite3.connect(store, timeout=30)) as db:
        rows = db.execute(
            "SELECT t.seq, t.id, t.stdout FROM trials t JOIN studies s ON s.id = t.study_id"
            " WHERE s.name = ?",
            (STUDY_NAME,),
        ).fetchall()
    return {int(seq): (int(tid), bytes(out)) for seq, tid, out in rows}


def analysis_of(study: Path) -> list[dict[str, Any]]:
    """The analysis of the stored trials, as ``assay.studies.run.analyse`` gives it."""
    from assay.spec import load_spec
    from assay.store import Store
    from assay.studies.run import analyse

    spec = load_spec(study)
    with Store(spec.store_path()) as st:
        found = st.find_study(spec.study.name)
        assert found is not None
        trials = st.trials(found[0])
    return [r.as_dict() for r in analyse(spec, trials)]


def canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, default=str)


@dataclass
class Reference:
    """An uninterrupted run of the study."""

    analysis: list[dict[str, Any]]
    pis: list[dict[str, Any]]
    trials: int
    wall_s: float


def reference_run(directory: Path, max_rounds: int = MAX_ROUNDS) -> Reference:
    study = make_study(directory, max_rounds)
    t0 = time.perf_counter()
    done = run_to_end(directory)
    wall = time.perf_counter() - t0
    assert done.returncode in (0, 5), done.stderr  # 5: max_rounds before the CI target
    pis = json.loads((directory / "result.json").read_text())["pis"]
    return Reference(analysis_of(study), pis, len(stored_trials(directory / STORE)), wall)


@dataclass
class KillReport:
    """What the kill harness saw and found."""

    kills_planned: int
    kills: int = 0  # SIGKILLs that hit a running assay
    phases: Counter[str] = field(default_factory=Counter)
    killed_before_commit: int = 0  # 'commit' kills where the reaped trial was not stored
    killed_after_commit: int = 0  # ... and where it was
    benchmarks_orphaned: int = 0  # left running by a SIGKILLed assay (killed by the harness)
    finished_early: int = 0  # assay ended before the awaited moment (no kill)
    resumes: int = 0
    final_returncode: int | None = None
    final_stderr: str = ""
    trials_expected: int = MAX_ROUNDS
    trials_found: int = 0
    seqs_missing: list[int] = field(default_factory=list)
    seqs_extra: list[int] = field(default_factory=list)
    duplicates: int = 0
    lost: int = 0  # trials seen committed after some kill that later vanished or changed
    wrong_readings: int = 0  # a trial whose output does not belong to its seq
    not_ok: int = 0
    integrity: str = ""
    analysis_equal: bool = False
    result_equal: bool = False
    wall_s: float = 0.0
    trials_per_kill: list[int] = field(default_factory=list)

    def problems(self) -> list[str]:
        out = []
        if self.final_returncode not in (0, 5):  # 5: the budget before the CI target
            out.append(f"final run exited {self.final_returncode}: {self.final_stderr[-2000:]}")
        if self.integrity != "ok":
            out.append(f"integrity_check: {self.integrity}")
        if self.trials_found != self.trials_expected or self.seqs_missing or self.seqs_extra:
            out.append(
                f"trials: expected {self.trials_expected}, found {self.trials_found}; "
                f"missing seqs {self.seqs_missing}, extra {self.seqs_extra}"
            )
        for name in ("duplicates", "lost", "wrong_readings", "not_ok"):
            if getattr(self, name):
                out.append(f"{name}: {getattr(self, name)}")
        if not self.analysis_equal:
            out.append("the analysis differs from the uninterrupted run's")
        if not self.result_equal:
            out.append("the reported result differs from the uninterrupted run's")
        return out


def kill_harness(
    directory: Path,
    reference: Reference,
    kills: int,
    seed: int = 20240508,
    max_rounds: int = MAX_ROUNDS,
    log: Any = None,
) -> KillReport:
    """SIGKILL ``assay run`` ``kills`` times at random moments, resuming each time; then
    finish the study and check the store against ``reference``."""
    rng = random.Random(seed)
    study = make_study(directory, max_rounds)
    store = directory / STORE
    rep = KillReport(kills_planned=kills, trials_expected=max_rounds)
    seen: dict[int, tuple[int, bytes]] = {}
    t_start = time.perf_counter()
    attempts = 0
    while rep.kills < kills and attempts < 3 * kills:
        attempts += 1
        (directory / PID_FILE).unlink(missing_ok=True)
        sessions = count_sessions(store)
        before = len(stored_trials(store))
        phase = rng.choice(["startup", "trial", "commit"])
        k = rng.randint(1, 3)
        proc = launch(directory)
        bench_pid: int | None = None
        try:
            if phase == "startup":
                wait_for_session(proc, store, sessions)
                time.sleep(rng.uniform(0.0, 0.05))
            elif phase == "trial":
                bench_pid = wait_for_benchmark(proc, directory, k)
                time.sleep(rng.uniform(0.0, TRIAL_SLEEP_S + 0.01))
            else:
                bench_pid = wait_for_benchmark(proc, directory, k)
                wait_for_exit(proc, bench_pid)
                # skewed towards 0: parsing and the commit take ~1-2 ms after the reap
                time.sleep(0.008 * rng.random() ** 3)
        except Finished:
            pass
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            rep.kills += 1
            rep.phases[phase] += 1
        else:
            rep.finished_early += 1
        rep.resumes += 1
        if kill_benchmark(directory):
            rep.benchmarks_orphaned += 1
        now = stored_trials(store)
        rep.trials_per_kill.append(len(now) - before)
        if phase == "commit" and bench_pid is not None:
            mark = f"pid={bench_pid} ".encode()
            if any(mark in out for _, out in now.values()):
                rep.killed_after_commit += 1
            else:
                rep.killed_before_commit += 1
        for seq, row in now.items():
            seen.setdefault(seq, row)
        if log is not None:
            log(
                f"kill {rep.kills:3d}/{kills}: phase {phase:7s} k={k} trials {before} -> {len(now)}"
            )
    (directory / PID_FILE).unlink(missing_ok=True)
    final = run_to_end(directory)
    rep.final_returncode = final.returncode
    rep.final_stderr = final.stderr
    rep.wall_s = time.perf_counter() - t_start
    check_store(study, reference, seen, rep)
    return rep


def check_store(
    study: Path, reference: Reference, seen: dict[int, tuple[int, bytes]], rep: KillReport
) -> None:
    directory = study.parent
    store = directory / STORE
    with contextlib.closing(sqlite3.connect(store, timeout=30)) as db:
        rep.integrity = "; ".join(r[0] for r in db.execute("PRAGMA integrity_check"))
        rows = db.execute(
            "SELECT t.seq, t.status, t.stdout FROM trials t JOIN studies s"
            " ON s.id = t.study_id WHERE s.name = ? ORDER BY t.seq",
            (STUDY_NAME,),
        ).fetchall()
        readings = dict(
            db.execute(
                "SELECT t.seq, r.value FROM readings r JOIN trials t ON t.id = r.trial_id"
                " JOIN studies s ON s.id = t.study_id WHERE s.name = ? AND r.pi = 'op'",
                (STUDY_NAME,),
            ).fetchall()
        )
    seqs = [int(r[0]) for r in rows]
    counts = Counter(seqs)
    rep.trials_found = len(seqs)
    rep.duplicates = sum(c - 1 for c in counts.values())
    rep.seqs_missing = sorted(set(range(rep.trials_expected)) - set(seqs))
    rep.seqs_extra = sorted(set(seqs) - set(range(rep.trials_expected)))
    rep.not_ok = sum(1 for r in rows if r[1] != "ok")
    for seq, _status, out in rows:
        ok_out = f"seq={seq} ".encode() in bytes(out)
        if not ok_out or readings.get(seq) != expected_reading(seq):
            rep.wrong_readings += 1
    final = stored_trials(store)
    rep.lost = sum(1 for seq, row in seen.items() if final.get(seq) != row)
    rep.analysis_equal = canonical(analysis_of(study)) == canonical(reference.analysis)
    result = directory / "result.json"
    if result.exists():
        pis = json.loads(result.read_text())["pis"]
        rep.result_equal = canonical(pis) == canonical(reference.pis)


# -- tests ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    return reference_run(tmp_path_factory.mktemp("uninterrupted"))


def test_uninterrupted_reference_is_what_the_harness_expects(reference: Reference) -> None:
    assert reference.trials == MAX_ROUNDS
    (r,) = reference.analysis
    assert r["rounds_used"] == MAX_ROUNDS and not r["met"]
    values = [expected_reading(s) for s in range(MAX_ROUNDS)]
    assert abs(r["mean"] - sum(values) / len(values)) < 0.05  # the unit readings' mean


def test_sigkill_at_random_moments_loses_and_doubles_nothing(
    tmp_path: Path, reference: Reference
) -> None:
    rep = kill_harness(tmp_path, reference, kills=DEFAULT_KILLS, seed=1)
    assert rep.kills == DEFAULT_KILLS, rep
    assert not rep.problems(), rep.problems()


def slow_selected(config: pytest.Config) -> bool:
    """Slow tests run with ``-m slow`` (or any marker expression naming it positively) or
    ``ASSAY_SLOW=1``; the default run skips them."""
    expr = str(config.getoption("markexpr", "") or "")
    return os.environ.get("ASSAY_SLOW") == "1" or ("slow" in expr and "not slow" not in expr)


@pytest.mark.slow
def test_sigkill_50_times_loses_and_doubles_nothing(
    tmp_path: Path, reference: Reference, request: pytest.FixtureRequest
) -> None:
    if not slow_selected(request.config):
        pytest.skip("50 kills take ~2.5 min (an assay start is ~2 s): -m slow or ASSAY_SLOW=1")
    rep = kill_harness(tmp_path, reference, kills=FULL_KILLS, seed=2)
    assert rep.kills == FULL_KILLS, rep
    assert not rep.problems(), rep.problems()
    assert all(rep.phases[p] for p in ("startup", "trial", "commit")), rep.phases


def test_ctrl_c_stops_cleanly_says_how_to_resume_and_resumes(tmp_path: Path, sigint: None) -> None:
    """SIGINT to the process group (what Ctrl-C does) at random moments."""
    rounds = 20  # slack: under load a session may finish a few trials before its SIGINT
    make_study(tmp_path, max_rounds=rounds)
    store = tmp_path / STORE
    rng = random.Random(7)
    interrupts = 0
    for phase in ["trial", "commit", "trial", "commit", "startup"]:
        (tmp_path / PID_FILE).unlink(missing_ok=True)
        sessions = count_sessions(store)
        before = stored_trials(store)
        proc = launch(tmp_path, stderr=subprocess.PIPE)
        bench_pid: int | None = None
        if phase == "startup":
            wait_for_session(proc, store, sessions)
            time.sleep(rng.uniform(0.0, 0.03))
        else:
            bench_pid = wait_for_benchmark(proc, tmp_path, 2)
            if phase == "trial":
                time.sleep(rng.uniform(0.0, TRIAL_SLEEP_S))
            else:
                wait_for_exit(proc, bench_pid)
                time.sleep(rng.uniform(0.0, 0.005))
        assert proc.poll() is None
        os.killpg(proc.pid, signal.SIGINT)
        _, err_b = proc.communicate(timeout=30)
        err = " ".join(err_b.decode().split())  # the console may wrap the message
        interrupts += 1
        assert proc.returncode == 130, f"{phase}: {err}"
        assert "Traceback" not in err, err
        assert "interrupted" in err and "Every finished trial is in" in err, err
        assert "Run the same command again to resume" in err, err
        # the benchmark was killed with its process group, not left running
        pid = read_pid(tmp_path)
        if pid is not None:
            assert not alive(pid), f"benchmark {pid} still running after Ctrl-C"
        after = stored_trials(store)
        assert all(after.get(s) == row for s, row in before.items())
        assert sorted(after) == list(range(len(after)))
        if bench_pid is not None and phase == "trial":
            # a trial cut short by Ctrl-C is not stored
            assert not any(f"pid={bench_pid} ".encode() in out for _, out in after.values())
    assert interrupts == 5
    done = run_to_end(tmp_path)
    assert done.returncode in (0, 5), done.stderr  # 5: max_rounds before the CI target
    data = json.loads((tmp_path / "result.json").read_text())
    assert data["trials"]["total"] == rounds
    assert data["trials"]["resumed"] == len(after)
    final = stored_trials(store)
    assert sorted(final) == list(range(rounds))
    assert all(final[s] == row for s, row in after.items())
    for seq, (_tid, out) in final.items():
        assert f"seq={seq} ".encode() in out


class _SignalAfter:
    """A connection stand-in that sends this process SIGINT right after one statement, as
    a Ctrl-C during that statement (say, COMMIT's fsync) would surface."""

    def __init__(self, db: sqlite3.Connection, statement: str) -> None:
        self._db = db
        self._statement = statement

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        cur = self._db.execute(sql, *args)
        if sql.startswith(self._statement):
            os.kill(os.getpid(), signal.SIGINT)
        return cur

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)


@pytest.mark.parametrize("statement", ["COMMIT", "INSERT INTO trials"])
def test_ctrl_c_during_a_commit_keeps_the_trial_and_raises_keyboard_interrupt(
    tmp_path: Path, statement: str, sigint: None
) -> None:
    """Regression: a SIGINT that landed during COMMIT used to make the store try to roll
    back a committed transaction and fail with 'cannot save a trial: cannot rollback'
    (exit 3 instead of 130; 12 of 30 Ctrl-Cs just after a trial in one measurement)."""
    from assay.store import Store, TrialRecord

    with Store(tmp_path / "s.db") as st:
        sid = st.open_study("s", "h", {})
        real = st._db
        st._db = _SignalAfter(real, statement)  # type: ignore[assignment]
        with pytest.raises(KeyboardInterrupt):
            st.add_trial(sid, TrialRecord(seq=0, status="ok", readings={"t": 1.0}))
        st._db = real
        assert not real.in_transaction
        assert [t.readings for t in st.trials(sid)] == [{"t": 1.0}]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
