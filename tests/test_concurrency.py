"""Two ``assay`` processes on one store (issue #8, concurrency).

Real processes, as a user would start them from two terminals:

* the same study twice at once: the second refuses (exit 3) naming the store, the study,
  the first one's pid and what to do, and leaves the first one's benchmark alone;
* two studies in one store file at once: both finish, neither disturbs the other;
* readers while a writer commits: every read sees whole trials (readings and unit
  readings together), and a second session on a finished study gives the same result;
* a session killed with SIGKILL does not block the next one.

After each, the store passes ``PRAGMA integrity_check`` and holds every trial once, with
unique sequence numbers. The lock itself (:meth:`assay.store.Store.lock_study`) is
tested in-process at the end.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from assay.store import Store, StoreError, StudyBusyError, TrialRecord, study_file

STORE = "shared.assay.db"
ROUNDS = 6
UNITS = 20

# ~50-70 ms a trial: python start-up plus a short sleep; readings fixed, so any trial
# stored twice or under a foreign study shows in the counts. While a file "hold" exists
# in the study folder, each trial waits (after noting its pid): that is how a test keeps
# a session in the middle of its trials for as long as it needs, on any machine.
BENCH = """
import os, sys, time
open(sys.argv[1], "a").write(f"{os.getpid()}\\n")
deadline = time.monotonic() + 60
while os.path.exists("hold") and time.monotonic() < deadline:
    time.sleep(0.005)
time.sleep(0.03)
for i in range(UNITS):
    print(f"op={1.0 + (i % 5) / 100:.4f}")
print("total=1.0")
""".replace("UNITS", str(UNITS))

STUDY = """
[study]
name = "{name}"
store = "{store}"

[benchmark]
command = ["{py}", "bench.py", "{pids}"]
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
max_rounds = {rounds}
max_time = 1000000
"""


def make_study(directory: Path, name: str, rounds: int = ROUNDS) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "bench.py").write_text(BENCH, encoding="utf-8")
    path = directory / f"{name}.toml"
    path.write_text(
        STUDY.format(
            name=name,
            store=STORE,
            py=sys.executable.replace("\\", "\\\\"),
            pids=f"{name}.pids",
            rounds=rounds,
        ),
        encoding="utf-8",
    )
    return path


ASSAY_RUN = [sys.executable, "-m", "assay.cli", "run"]


def launch(directory: Path, study: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*ASSAY_RUN, study.name, "-q", "--no-overhead", "--no-monitor", *extra],
        cwd=directory,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def finish(proc: subprocess.Popen[str], timeout: float = 120) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def wait_for(cond: Any, proc: subprocess.Popen[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def benchmarks_started(directory: Path, name: str) -> int:
    p = directory / f"{name}.pids"
    return len(p.read_text().split()) if p.exists() else 0


def count_sessions(store: Path, name: str) -> int:
    with contextlib.closing(sqlite3.connect(store, timeout=30)) as db:
        row = db.execute(
            "SELECT COUNT(*) FROM sessions x JOIN studies s ON s.id = x.study_id WHERE s.name = ?",
            (name,),
        ).fetchone()
    return int(row[0])


def check_store(store: Path, expected: dict[str, int]) -> dict[str, list[Any]]:
    """integrity_check ok; each study has exactly seqs 0..n-1, once each, all 'ok', with
    its reading and unit readings; returns the rows per study."""
    with contextlib.closing(sqlite3.connect(store, timeout=30)) as db:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        out: dict[str, list[Any]] = {}
        for name, n in expected.items():
            rows = db.execute(
                "SELECT t.id, t.seq, t.status, t.error FROM trials t JOIN studies s"
                " ON s.id = t.study_id WHERE s.name = ? ORDER BY t.seq",
                (name,),
            ).fetchall()
            seqs = [r[1] for r in rows]
            assert max(Counter(seqs).values(), default=1) == 1, f"{name}: duplicate seqs"
            assert seqs == list(range(n)), (name, seqs)
            assert all(r[2] == "ok" for r in rows), [(r[1], r[2], r[3]) for r in rows]
            for tid, *_ in rows:
                (k,) = db.execute("SELECT COUNT(*) FROM readings WHERE trial_id = ?", (tid,))
                (u,) = db.execute(
                    "SELECT n FROM unit_readings WHERE trial_id = ? AND pi = 'op'", (tid,)
                )
                assert k == (1,) and u == (UNITS,)
            out[name] = rows
        (total,) = db.execute("SELECT COUNT(*) FROM trials").fetchone()
        assert total == sum(expected.values())
    return out


def one_paragraph(err: str) -> str:
    text = err.strip()
    assert "Traceback" not in text, text
    assert "\n\n" not in text, text
    return " ".join(text.split())  # undo the console's wrapping


# ----------------------------------------------------------------------------- processes


def test_same_study_twice_the_second_refuses_and_the_first_is_untouched(tmp_path: Path) -> None:
    study = make_study(tmp_path, "alpha")
    hold = tmp_path / "hold"
    hold.touch()
    first = launch(tmp_path, study)
    wait_for(lambda: benchmarks_started(tmp_path, "alpha") >= 1, first)
    second = launch(tmp_path, study)  # while the first's trial 0 runs
    code2, _, err2 = finish(second)
    hold.unlink()
    code1, _, err1 = finish(first)
    assert code1 in (0, 5), err1  # 5: the budget before the CI target
    assert code2 == 3, err2
    msg = one_paragraph(err2)
    store = tmp_path / STORE
    assert msg.startswith(f"error: {STORE}: "), msg  # the store, as the study file names it
    assert "study 'alpha' is being run by another assay process" in msg, msg
    assert f"pid {first.pid}" in msg and f"kill {first.pid}" in msg, msg
    assert "run the same command again" in msg, msg
    # the refused process stopped nothing: every trial of the first ran to its end
    check_store(store, {"alpha": ROUNDS})
    assert benchmarks_started(tmp_path, "alpha") == ROUNDS
    assert not study_file(store, "alpha", ".lock").exists()  # released at the end


@pytest.mark.slow
def test_same_study_started_at_the_same_moment(tmp_path: Path) -> None:
    study = make_study(tmp_path, "race")
    procs = [launch(tmp_path, study), launch(tmp_path, study)]
    results = [finish(p) for p in procs]
    codes = sorted(0 if r[0] == 5 else r[0] for r in results)  # 5: the budget, not the CI
    store = tmp_path / STORE
    check_store(store, {"race": ROUNDS})
    if codes == [0, 3]:
        loser = next(r for r in results if r[0] == 3)
        msg = one_paragraph(loser[2])
        assert "is being run by another assay process" in msg and STORE in msg, msg
    else:  # both may succeed only one after the other, never overlapping
        assert codes == [0, 0], results
        with contextlib.closing(sqlite3.connect(store)) as db:
            (a, b) = db.execute("SELECT started, ended FROM sessions ORDER BY started").fetchall()
        assert a[1] is not None and a[1] <= b[0]


def test_two_studies_in_one_store_both_finish(tmp_path: Path) -> None:
    # the same benchmark command in both: neither may take the other's running
    # benchmark for a leftover of a killed session
    one, two = make_study(tmp_path, "one"), make_study(tmp_path, "two")
    two.write_text(two.read_text().replace('"two.pids"', '"one.pids"'), encoding="utf-8")
    hold = tmp_path / "hold"
    hold.touch()
    procs = [launch(tmp_path, one), launch(tmp_path, two)]  # a fresh store: both create it
    # both sessions in their first trial at once (the pid file has both trials' pids)
    wait_for(lambda: benchmarks_started(tmp_path, "one") >= 2, procs[0])
    hold.unlink()
    results = [finish(p) for p in procs]
    assert [r[0] in (0, 5) for r in results] == [True, True], [r[2] for r in results]
    assert all("left running" not in r[1] + r[2] for r in results)
    check_store(tmp_path / STORE, {"one": ROUNDS, "two": ROUNDS})
    assert benchmarks_started(tmp_path, "one") == 2 * ROUNDS
    with contextlib.closing(sqlite3.connect(tmp_path / STORE)) as db:
        ((mode,),) = db.execute("PRAGMA journal_mode").fetchall()
    assert mode == "wal"


READER = textwrap.dedent(
    """
    import json, sys, time
    from assay.store import Store
    store, name, stop = sys.argv[1], sys.argv[2], sys.argv[3]
    reads, counts, bad = 0, [], []
    import os
    while not os.path.exists(stop):
        with Store(store) as st:
            found = st.find_study(name)
            if found is None:
                continue
            trials = st.trials(found[0])
        reads += 1
        counts.append(len(trials))
        if [t.seq for t in trials] != list(range(len(trials))):
            bad.append(("seqs", [t.seq for t in trials]))
        for t in trials:
            if set(t.readings) != {"op"} or t.unit_readings["op"].size != UNITS:
                bad.append(("partial trial", t.seq))
        time.sleep(0.02)
    print(json.dumps({"reads": reads, "counts": counts, "bad": bad}))
    """.replace("UNITS", str(UNITS))
)


def _run_in_process(study: Path) -> dict[str, Any]:
    """Run a study to its end here (no interpreter start-up); its JSON result."""
    from assay.spec import load_spec
    from assay.studies.run import Runner

    cwd = Path.cwd()
    os.chdir(study.parent)  # the study's store and pid file are relative to it
    try:
        spec = load_spec(study.name)
        res = Runner(spec, spec.store_path(), measure_overhead=False, monitor=False).run()
    finally:
        os.chdir(cwd)
    out: dict[str, Any] = json.loads(json.dumps(res.as_dict(), default=str))
    return out


def test_readers_while_a_writer_commits(tmp_path: Path) -> None:
    done = make_study(tmp_path, "done", rounds=4)
    before = _run_in_process(done)
    writer_study = make_study(tmp_path, "writer")
    stop = tmp_path / "stop-reading"
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(tmp_path / STORE), "writer", str(stop)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    hold = tmp_path / "hold"
    hold.touch()
    writer = launch(tmp_path, writer_study)
    wait_for(lambda: benchmarks_started(tmp_path, "writer") >= 1, writer)
    # a second session on the finished study (it reads the trials and writes only its
    # session row) while the writer is in its first trial; then the writer commits
    second = launch(tmp_path, done, "--json", "after.json")
    wait_for(lambda: count_sessions(tmp_path / STORE, "done") >= 2, second)
    hold.unlink()
    code, _, err = finish(second)
    assert code in (0, 5), err  # 5: the budget before the CI target
    wcode, _, werr = finish(writer)
    stop.touch()
    out, rerr = reader.communicate(timeout=60)
    assert wcode in (0, 5), werr
    assert reader.returncode in (0, 5), rerr
    seen = json.loads(out)
    assert seen["bad"] == [], seen["bad"][:5]
    assert seen["reads"] > 0
    assert seen["counts"] == sorted(seen["counts"])  # trials only ever appear
    assert len(set(seen["counts"])) > 1, seen["counts"]  # it did read during the writes
    after = json.loads((tmp_path / "after.json").read_text())
    assert after["pis"] == before["pis"] and after["trials"]["resumed"] == 4
    check_store(tmp_path / STORE, {"done": 4, "writer": ROUNDS})


@pytest.mark.slow
def test_a_sigkilled_session_does_not_block_the_next(tmp_path: Path) -> None:
    study = make_study(tmp_path, "killed")
    proc = launch(tmp_path, study)
    wait_for(lambda: benchmarks_started(tmp_path, "killed") >= 3, proc)
    os.kill(proc.pid, signal.SIGKILL)  # its benchmark runs on: the next session stops it
    proc.communicate()
    lock = study_file(tmp_path / STORE, "killed", ".lock")
    assert lock.exists()  # SIGKILL leaves the file; the kernel dropped the lock itself
    code, _, err = finish(launch(tmp_path, study))
    assert code in (0, 5), err  # 5: the budget before the CI target
    check_store(tmp_path / STORE, {"killed": ROUNDS})
    assert not lock.exists()


# ----------------------------------------------------------------------------- the lock


def test_lock_refuses_a_second_holder_and_fresh_until_released(tmp_path: Path) -> None:
    path = tmp_path / "s.assay.db"
    with Store(path) as a:
        a.lock_study("x")
        a.lock_study("x")  # the holder may ask again
        lock = study_file(path, "x", ".lock")
        info = json.loads(lock.read_text())
        assert info["pid"] == os.getpid() and info["study"] == "x"
        with Store(path) as b:
            with pytest.raises(StudyBusyError) as err:
                b.lock_study("x")
            assert err.value.pid == os.getpid()
            assert isinstance(err.value, StoreError)
            assert str(path) in str(err.value) and "'x'" in str(err.value)
            b.lock_study("y")  # another study in the same store
    assert not lock.exists() and not study_file(path, "y", ".lock").exists()
    with Store(path) as c:
        c.lock_study("x")  # free again


def test_a_stale_or_garbled_lock_file_does_not_block(tmp_path: Path) -> None:
    path = tmp_path / "s.assay.db"
    study_file(path, "x", ".lock").write_bytes(b"\x00garbage{")
    with Store(path) as a:
        a.lock_study("x")
        sid = a.open_study("x", "h", {})
        a.add_trial(sid, TrialRecord(seq=0, status="ok", readings={"t": 1.0}))
        with Store(path) as b:
            # a holder whose file cannot be read is still refused, without a pid
            study_file(path, "x", ".lock").write_bytes(b"not json")
            with pytest.raises(StudyBusyError) as err:
                b.lock_study("x")
            assert err.value.pid is None
            assert "another assay process;" in str(err.value)


def test_no_lock_in_a_read_only_folder(tmp_path: Path) -> None:
    path = tmp_path / "ro" / "s.assay.db"
    with Store(path) as st:
        st.open_study("x", "h", {})
    path.parent.chmod(0o555)
    try:
        if os.access(path.parent, os.W_OK):
            pytest.skip("running as root: the folder stays writable")
        with Store(path) as st:
            st.lock_study("x")  # cannot create the lock file: no lock, no error here
            assert st.find_study("x") is not None
    finally:
        path.parent.chmod(0o755)


def test_sqlite_waits_for_a_busy_writer(tmp_path: Path) -> None:
    """The busy timeout is set: a commit waits for another connection's write to end
    instead of failing with 'database is locked'."""
    path = tmp_path / "s.assay.db"
    with Store(path) as a:
        (timeout,) = a._db.execute("PRAGMA busy_timeout").fetchone()
        assert timeout >= 10_000
        sid = a.open_study("x", "h", {})
        other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        other.execute("BEGIN IMMEDIATE")  # another process's write in progress
        probe = sqlite3.connect(path, timeout=0)
        with contextlib.closing(probe), pytest.raises(sqlite3.OperationalError, match="locked"):
            probe.execute("BEGIN IMMEDIATE")
        released = threading.Event()

        def commit() -> None:
            other.execute("COMMIT")
            released.set()

        timer = threading.Timer(0.2, commit)
        timer.start()
        a.add_trial(sid, TrialRecord(seq=0, status="ok", readings={"t": 1.0}))
        timer.join()
        other.close()
        assert released.is_set()
        assert [t.seq for t in a.trials(sid)] == [0]


OPEN_AT = textwrap.dedent(
    """
    import sys, time
    from assay.store import Store
    path, start = sys.argv[1], float(sys.argv[2])
    while time.time() < start:
        pass
    with Store(path):
        print("opened")
    """
)


def test_two_processes_creating_one_store_at_the_same_instant_both_open_it(
    tmp_path: Path,
) -> None:
    """SQLite answers two connections switching one new database to WAL together with
    "database is locked" at once, without its busy timeout: one of two processes opening
    a new store at the same instant failed about half the time."""
    for i in range(8):
        path = tmp_path / f"s{i}.assay.db"
        start = time.time() + 0.5  # both past their imports, then released together
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", OPEN_AT, str(path), str(start)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        for p in procs:
            out, err = p.communicate(timeout=60)
            assert p.returncode == 0 and out.strip() == "opened", err
