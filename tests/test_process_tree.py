"""Issue #13, items 5 and 11: a trial's process tree ends with the trial, and its output
is streamed.

Every benchmark here runs ``sleep`` with a unique duration (``300.<random>``): a
process that survived is found by that argv in /proc, whatever session, group or
environment it ended up in.  Each test runs with both ways of holding the tree: a
cgroup v2 (skipped where none is writable) and the subreaper + /proc scan fallback.
"""

from __future__ import annotations

import io
import json
import os
import random
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.execute import output, proctree
from assay.execute.command import run_command
from assay.execute.readers import read_reading, read_unit_readings
from assay.spec import PISpec, UnitsSpec
from assay.store import OUTPUT_CAP
from conftest import default_signals


def _cgroup_available() -> bool:
    saved = os.environ.pop("ASSAY_PROCESS_TREE", None)
    try:
        return proctree._find_base() is not None
    finally:
        if saved is not None:
            os.environ["ASSAY_PROCESS_TREE"] = saved


MECHANISMS = [
    pytest.param(
        "cgroup",
        marks=pytest.mark.skipif(not _cgroup_available(), reason="no writable cgroup v2"),
    ),
    "scan",
]


@pytest.fixture(params=MECHANISMS)
def mechanism(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "scan":
        monkeypatch.setenv("ASSAY_PROCESS_TREE", "scan")
    else:
        monkeypatch.delenv("ASSAY_PROCESS_TREE", raising=False)
    proctree.end_session()  # the session cgroup of an earlier test, if any
    monkeypatch.setattr(proctree, "_base", {})  # found again under this setting
    monkeypatch.setattr(proctree, "_session", {})
    yield request.param
    proctree.end_session()


@pytest.fixture
def tag() -> Iterator[str]:
    """A unique sleep duration; whatever still runs with it is killed after the test."""
    t = f"300.{random.randrange(10**8, 10**9)}"
    yield t
    for pid in _running(t):
        os.kill(pid, signal.SIGKILL)


def _running(tag: str) -> list[int]:
    """Live processes (not zombies) with ``tag`` in their argv."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            args = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")
            state = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if tag.encode() in args and state not in ("Z", "X"):
            found.append(int(name))
    return found


def _wait_for(tag: str, n: int = 1, within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while len(_running(tag)) < n:
        assert time.monotonic() < deadline, f"{n} processes with {tag} never started"
        time.sleep(0.02)


def _none_left(tag: str) -> bool:
    deadline = time.monotonic() + 2.0  # SIGKILLed processes take a moment to go
    while _running(tag):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


# the benchmarks of the issue; {t} is the unique sleep
TIMEOUT_CASES = {
    # a grandchild in a session of its own, and the leader sleeping
    "setsid grandchild": "setsid sleep {t} & sleep {t}",
    # a child that closes stdout and stderr, then sleeps
    "child closes stdout": "(exec >/dev/null 2>&1; sleep {t}) & sleep {t}",
    # a grandchild in a new session keeps stdout open; its environment scrubbed too
    "new session keeps stdout": "setsid env -i sleep {t} & sleep {t}",
    # a double fork: the grandchild is orphaned while the trial runs
    "orphaned grandchild": "(setsid sleep {t} &) ; sleep {t}",
}


@pytest.mark.parametrize("case", list(TIMEOUT_CASES))
def test_a_timeout_bounds_the_trial_and_kills_every_descendant(
    case: str, mechanism: str, tag: str
) -> None:
    script = TIMEOUT_CASES[case].format(t=tag)
    t0 = time.monotonic()
    res = run_command(["sh", "-c", script], timeout=1)
    took = time.monotonic() - t0
    assert res.status == "timeout", res.error
    assert took < 5, f"a timeout=1 trial took {took:.1f} s"
    assert 1 <= res.duration < 5
    assert _none_left(tag), f"survivors: {_running(tag)}"


LEFT_BEHIND = {
    # the old executor waited for these until the timeout (stdout held open), then left
    # the setsid one running
    "setsid keeps stdout": "setsid sleep {t} & echo done",
    "env scrubbed, new session": "setsid env -i sleep {t} & echo done",
    # the old executor returned at once and left it running (3 per 3 trials)
    "closes stdout": "sleep {t} >/dev/null 2>&1 & echo done",
    "orphaned": "(setsid sleep {t} >/dev/null 2>&1 &) ; echo done",
    # a daemon: double fork, own session, no marker, no pipes (issue #17: one cgroup for
    # the whole session; it is found as new there, below no process older than the trial)
    "daemon, env scrubbed": "(setsid env -i sleep {t} >/dev/null 2>&1 </dev/null &) ; echo done",
}


@pytest.mark.parametrize("case", list(LEFT_BEHIND))
def test_what_a_trial_leaves_running_ends_with_it(case: str, mechanism: str, tag: str) -> None:
    script = LEFT_BEHIND[case].format(t=tag)
    t0 = time.monotonic()
    res = run_command(["sh", "-c", script], timeout=30)
    assert time.monotonic() - t0 < 5
    assert res.status == "ok", res.error
    assert res.stdout == b"done\n"
    assert res.duration < 5
    assert _none_left(tag), f"survivors: {_running(tag)}"


@pytest.mark.skipif(not _cgroup_available(), reason="no writable cgroup v2")
def test_a_trial_that_makes_its_own_cgroup_below_the_session_leaves_nothing(tag: str) -> None:
    """The session cgroup's directory is listed only when ``cgroup.stat`` counts
    cgroups below it (issue #17): a benchmark that makes its own there and moves a
    process into it still has that process killed with the trial."""
    proctree.end_session()
    tree = proctree.ProcessTree(proctree.new_marker())  # makes the session cgroup
    tree.close()
    session = proctree._session[os.getpid()]
    assert session is not None
    assert proctree._no_descendants(os.fspath(session))
    sub = session / "bench-own"
    script = f"mkdir {sub}; sleep {tag} & echo $! > {sub}/cgroup.procs"
    try:
        res = run_command(["sh", "-c", script], timeout=30)
        assert res.status == "ok", res.error
        assert _none_left(tag), f"survivors: {_running(tag)}"
    finally:
        proctree.end_session()
    assert not session.exists()


def test_a_setup_step_may_leave_a_server_running(mechanism: str, tag: str) -> None:
    """``keep_descendants`` (setup, reset): a daemon that left the step's pipes lives on;
    at the timeout it is killed with the rest."""
    res = run_command(
        ["sh", "-c", f"setsid sleep {tag} >/dev/null 2>&1 & echo up"],
        timeout=30,
        keep_descendants=True,
    )
    assert res.status == "ok" and res.stdout == b"up\n"
    assert len(_running(tag)) == 1
    tag2 = tag + "1"
    try:
        res = run_command(
            ["sh", "-c", f"setsid sleep {tag2} & echo up"], timeout=1, keep_descendants=True
        )
        assert res.status == "timeout"  # it kept the step's stdout open past the timeout
        assert _none_left(tag2)
    finally:
        for pid in _running(tag2):
            os.kill(pid, signal.SIGKILL)


def test_the_mechanism_is_the_one_asked_for(mechanism: str) -> None:
    tree = proctree.ProcessTree(proctree.new_marker())
    try:
        assert tree.mechanism == mechanism
    finally:
        tree.close()


def test_no_cgroup_is_left_behind(mechanism: str, tag: str) -> None:
    """One cgroup for the session: after its trials it holds Assay alone, and it goes
    when the session ends."""
    base = proctree._cgroup_base()
    run_command(["sh", "-c", f"setsid sleep {tag} & echo x"], timeout=10)
    run_command(["sh", "-c", f"sleep {tag}"], timeout=0.5)
    assert _none_left(tag)
    if base is not None:
        session = base / f"assay-{os.getpid()}"
        assert proctree._group_pids(session) == {os.getpid()}
        mine = [p.name for p in base.iterdir() if p.name.startswith(f"assay-{os.getpid()}")]
        assert mine == [session.name]
        proctree.end_session()
        assert not session.exists()
        assert _own_cgroup(os.getpid()) == _own_cgroup(1) or "assay-" not in _own_cgroup(
            os.getpid()
        )


def _own_cgroup(pid: int) -> str:
    """The cgroup v2 path of a process ("0::" line of /proc/PID/cgroup)."""
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        if line.startswith("0::"):
            return line[3:]
    return ""


def _server(script: str) -> subprocess.Popen[bytes]:
    """A long-running shell started by this (Assay's) process, outside any trial."""
    proc = subprocess.Popen(["sh", "-c", script], stdout=subprocess.PIPE, start_new_session=True)
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    return proc


def _until(flag: Path) -> str:
    """Shell: wait until ``flag`` is written (the server forked; however loaded the host)."""
    return f"while [ ! -s {flag} ]; do sleep 0.01; done"


def test_a_process_older_than_the_trial_is_spared_with_the_children_it_forks(
    mechanism: str, tag: str, tmp_path: Path
) -> None:
    """Issue #17: a trial's processes are what is new in the session cgroup, less what
    descends from an older process: a server that Assay's process started before the
    trial (in the session cgroup too) keeps running, and so does the child it forks
    while the trial runs."""
    run_command(["true"], timeout=10)  # the session cgroup exists: the server is born in it
    flag = tmp_path / "forked"
    server = _server(
        f'trap "sleep {tag} & echo \\$! > {flag}" USR1; echo ready; while :; do sleep 0.05; done'
    )
    try:
        if mechanism == "cgroup":
            assert _own_cgroup(server.pid).endswith(f"/assay-{os.getpid()}")
        res = run_command(
            ["sh", "-c", f"kill -USR1 {server.pid}; {_until(flag)}; echo done"], timeout=30
        )
        assert res.status == "ok" and res.stdout == b"done\n", res.error
        assert server.poll() is None, "the trial's end killed a process older than it"
        assert len(_running(tag)) == 1, "the trial's end killed the child an older process forked"
    finally:
        server.kill()
        server.wait()


def test_a_steps_server_is_outside_the_session_cgroup_and_keeps_its_daemons(
    mechanism: str, tag: str, tmp_path: Path
) -> None:
    """A setup step's launch steps out of the session cgroup: the server it starts, and
    a daemon that server double-forks while a trial runs (an orphan: init's child),
    are no trial's."""
    run_command(["true"], timeout=10)
    flag = tmp_path / "forked"
    ready = tmp_path / "ready"
    script = (
        f"trap '(sleep {tag} >/dev/null 2>&1 & echo $! > {flag})' USR1; echo 1 > {ready}; "
        "while :; do sleep 0.05; done"
    )
    start = f"setsid sh -c {shlex.quote(script)} >/dev/null 2>&1 & {_until(ready)}; echo $!"
    res = run_command(  # the step returns once the server's trap is set
        ["sh", "-c", start],
        timeout=30,
        keep_descendants=True,
    )
    assert res.status == "ok", res.error
    server = int(res.stdout)
    try:
        if mechanism == "cgroup":
            assert "assay-" not in _own_cgroup(server)
            assert _own_cgroup(os.getpid()).endswith(f"/assay-{os.getpid()}")  # back in
        res = run_command(["sh", "-c", f"kill -USR1 {server}; {_until(flag)}"], timeout=30)
        assert res.status == "ok", res.error
        assert len(_running(tag)) == 1, "the trial's end killed a step's server's daemon"
    finally:
        os.kill(server, signal.SIGKILL)


def test_trials_of_two_threads_spare_each_other(mechanism: str, tag: str) -> None:
    """One trial at a time is the rule, but a trial that ends while another thread's
    runs must not kill the other (a leader newer than its launch)."""
    first: list[object] = []
    t_a, t_b = tag + "1", tag + "2"
    thread = threading.Thread(
        target=lambda: first.append(run_command(["sh", "-c", "sleep 0.4", t_a], timeout=30))
    )
    thread.start()
    try:
        _wait_for(t_a)
        second = run_command(["sh", "-c", "sleep 1.2", t_b], timeout=30)
    finally:
        thread.join()
    assert second.status == "ok", second.error
    assert [getattr(r, "status", None) for r in first] == ["ok"]


def test_interrupting_the_command_kills_its_tree(mechanism: str, tag: str) -> None:
    """Ctrl-C (and SIGTERM, which assay turns into the same) while a trial runs."""
    script = f"setsid sleep {tag} & sleep {tag}"

    def interrupt(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    try:
        with pytest.raises(KeyboardInterrupt):
            run_command(["sh", "-c", script], timeout=60)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert _none_left(tag)


# --- SIGTERM / SIGHUP to `assay run` -------------------------------------------------


def test_sigterm_and_sighup_end_assay_like_ctrl_c() -> None:
    """They raise KeyboardInterrupt (so every finally-block runs); during a clean-up
    they wait for its end."""
    code = (
        "import os, signal, time\n"
        "from assay.execute.interrupts import deferred, install\n"
        "install()\n"
        "try:\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    time.sleep(5)\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted')\n"
        "order = []\n"
        "try:\n"
        "    with deferred():\n"
        "        os.kill(os.getpid(), signal.SIGHUP)\n"
        "        time.sleep(0.1)\n"
        "        order.append('clean-up done')\n"
        "except KeyboardInterrupt:\n"
        "    order.append('then interrupted')\n"
        "print(order)\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=30,
        preexec_fn=default_signals,  # as they are outside nohup (issue #44)
    )  # fmt: skip
    assert res.stdout.splitlines() == ["interrupted", "['clean-up done', 'then interrupted']"]


def test_an_interrupt_lost_in_library_code_is_raised_again_at_the_next_check() -> None:
    """C code that clears errors can lose Python's KeyboardInterrupt (it happened inside
    ``import pandas``); the count keeps it, and a study checks it between trials."""
    code = (
        "import os, signal\n"
        "from assay.execute.interrupts import InterruptCheck, install\n"
        "install()\n"
        "check = InterruptCheck()\n"
        "check()\n"
        "try:\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    for _ in range(10**6): pass\n"
        "except KeyboardInterrupt:\n"
        "    print('raised, and lost')\n"
        "try:\n"
        "    check()\n"
        "except KeyboardInterrupt:\n"
        "    print('raised again')\n"
        "check()\n"
        "print('once')\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=30,
        preexec_fn=default_signals,  # as they are outside nohup (issue #44)
    )  # fmt: skip
    assert res.stdout.splitlines() == ["raised, and lost", "raised again", "once"], res.stderr


def _study(write_study, tag: str) -> Path:  # type: ignore[no-untyped-def]
    script = f"setsid sleep {tag} & (exec >/dev/null; sleep {tag}) & sleep {tag}"
    return write_study(
        f"""
[study]
name = "tree"
[benchmark]
command = ["sh", "-c", {json.dumps(script)}]
timeout = 600
[stop]
max_rounds = 1
"""
    )


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_sigterm_to_assay_leaves_no_benchmark_and_no_notes(
    sig: signal.Signals, mechanism: str, tag: str, write_study, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    study = _study(write_study, tag)
    assay = subprocess.Popen(
        [sys.executable, "-m", "assay", "run", str(study), "-q", "--no-overhead"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=default_signals,  # SIGHUP's default action even under nohup (issue #44)
    )
    try:
        _wait_for(tag, 3, within=60)
        notes = [p.name for p in tmp_path.iterdir() if p.suffix in (".lock", ".running")]
        assert len(notes) == 2, notes  # both exist while the trial runs
        assay.send_signal(sig)
        _, err = assay.communicate(timeout=30)
    finally:
        if assay.poll() is None:
            assay.kill()
            assay.wait()
    assert assay.returncode == 130, err.decode(errors="replace")
    assert _none_left(tag), f"survivors: {_running(tag)}"
    left = [p.name for p in tmp_path.iterdir() if p.suffix in (".lock", ".running")]
    assert left == []


def test_a_resume_stops_the_whole_tree_a_killed_assay_left(
    mechanism: str, tag: str, write_study, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """SIGKILL cannot be caught: the next session kills what carries the trial's marker,
    in any session (the old resume killed the leader's group only)."""
    study = _study(write_study, tag)
    assay = subprocess.Popen(
        [sys.executable, "-m", "assay", "run", str(study), "-q", "--no-overhead"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _wait_for(tag, 3, within=60)
    assay.kill()
    assay.wait()
    assert len(_running(tag)) == 3  # SIGKILL: they outlive assay...
    from assay.execute.leftovers import stop_leftover
    from assay.store import study_file

    note = study_file(tmp_path / "study.assay.db", "tree", ".running")
    assert note.exists()
    assert stop_leftover(note) is not None
    assert _none_left(tag), f"survivors: {_running(tag)}"  # ...until the study resumes


def test_a_session_writes_one_note_and_every_trial_carries_its_marker(
    write_study, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """Issue #17: the running note is written once per session (it cost ~0.2 ms between
    trials when written and removed around each); each trial's marker is the session's
    and a part of its own, and the note is gone when the session ends."""
    from assay.execute import leftovers
    from assay.spec import load_spec
    from assay.store import study_file
    from assay.studies.run import Runner

    written: list[str] = []
    real = leftovers.note_running

    def counted(path: Path, argv: list[str], shell: bool, marker: str) -> None:
        written.append(marker)
        real(path, argv, shell, marker)

    monkeypatch.setattr(leftovers, "note_running", counted)
    seen = tmp_path / "markers.txt"
    study = write_study(
        f"""
[study]
name = "notes"
[benchmark]
command = ["sh", "-c", {json.dumps(f'echo "$ASSAY_TRIAL" >> {seen}')}]
[stop]
max_rounds = 4
"""
    )
    spec = load_spec(study)
    Runner(spec, spec.store_path(), measure_overhead=False, monitor=False).run()
    markers = seen.read_text().split()
    assert len(written) == 1 and len(markers) == 4
    session = written[0]
    assert all(m.startswith(session + leftovers.TRIAL_SEP) for m in markers)
    assert len(set(markers)) == 4  # each trial has a part of its own
    assert not study_file(spec.store_path(), "notes", ".running").exists()


def test_a_sessions_marker_kills_its_trials_and_no_one_elses(tag: str) -> None:
    """kill_marked(session, below=".") kills the trials marked ``session.*`` (and an older
    version's trial marked ``session``), not another session's whose marker merely
    starts the same way."""

    def start(marker: str) -> subprocess.Popen[bytes]:
        env = {**os.environ, "ASSAY_TRIAL": marker}
        return subprocess.Popen(["sleep", tag], env=env, start_new_session=True)

    ours = [start("cafe.01"), start("cafe.02"), start("cafe")]
    theirs = [start("cafe01.x"), start("beef.01"), start("caf")]
    try:
        _wait_for(tag, 6)
        killed = proctree.kill_marked("cafe", below=".")
        assert sorted(killed) == sorted(p.pid for p in ours)
        for p in ours:
            assert p.wait(timeout=10) == -signal.SIGKILL
        assert all(p.poll() is None for p in theirs)
    finally:
        for p in ours + theirs:
            p.kill()
            p.wait()


# --- output: streamed, capped, searched ----------------------------------------------


def test_long_output_is_capped_and_read_whole(tmp_path: Path) -> None:
    """stdout of 20 MB: the result keeps the store's head and tail, the readers find
    numbers anywhere in it."""
    script = (
        "import sys\n"
        "w = sys.stdout.write\n"
        "w('first=1.5\\n')\n"
        "for i in range(200000): w('lat=%d filler filler filler filler filler filler\\n' % i)\n"
        "w('tps = 123.25\\n')\n"
    )
    res = run_command([sys.executable, "-c", script], timeout=60)
    try:
        assert res.status == "ok"
        assert res.output is not None and res.output.size > 10_000_000
        assert len(res.stdout) <= OUTPUT_CAP
        assert res.stdout.startswith(b"first=1.5\n") and res.stdout.endswith(b"tps = 123.25\n")
        cut = int(re.search(rb"\[\.\.\. (\d+) bytes cut by assay", res.stdout).group(1))  # type: ignore[union-attr]
        assert cut == res.output.size - len(res.stdout) + len(
            re.search(rb"\n\[\.\.\. \d+ bytes cut by assay \.\.\.\]\n", res.stdout).group(0)  # type: ignore[union-attr]
        )
        tps = PISpec(name="tps", source="regex", pattern=r"tps = ([0-9.]+)")
        assert read_reading(tps, res) == 123.25
        units = read_unit_readings(UnitsSpec(source="regex", pattern=r"lat=(\d+) "), "x", res)
        assert units.tolist() == [float(i) for i in range(200000)]
    finally:
        res.close()


def test_memory_does_not_grow_with_the_output() -> None:
    """200 MB of stdout, a regex PI read from its last line: the process running the
    trial stays far below the output's size (the old executor peaked at 620 MiB)."""
    code = (
        "from assay.execute.trial import TrialJob, TrialRequest, run_trial\n"
        "from assay.spec import PISpec\n"
        "pi = PISpec(name='tps', source='regex', pattern=r'tps = ([0-9.]+)')\n"
        "script = \"yes 'lat=1.5 filler' | head -c 200000000; echo; echo 'tps = 42.5'\"\n"
        "rec = run_trial(TrialJob(pis=(pi,), timeout=120), TrialRequest(0, ['sh', '-c', script]))\n"
        # VmHWM: this process's own peak (ru_maxrss keeps the forking parent's peak
        # across exec, so a large pytest process would show through)
        "status = open('/proc/self/status').read().splitlines()\n"
        "peak = int(next(l.split()[1] for l in status if l.startswith('VmHWM')))\n"
        "print(rec.status, rec.readings['tps'], peak)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    status, tps, rss_kib = res.stdout.split()
    assert (status, tps) == ("ok", "42.5"), res.stderr
    assert int(rss_kib) < 150 * 1024


def test_stderr_keeps_its_head_and_tail() -> None:
    res = run_command(
        ["sh", "-c", "echo start >&2; head -c 300000 /dev/zero | tr '\\0' x >&2; echo end >&2"],
        timeout=30,
    )
    assert res.status == "ok"
    assert len(res.stderr) <= OUTPUT_CAP
    assert res.stderr.startswith(b"start\n") and res.stderr.endswith(b"xxend\n")


def test_a_spool_that_cannot_be_written_is_a_read_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.execute import readers

    def full(*_a: object, **_k: object) -> object:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(output, "SPILL", 10)
    monkeypatch.setattr(output.tempfile, "TemporaryFile", full)
    res = run_command(["sh", "-c", "echo 'tps = 5'; echo more"], timeout=10)
    assert res.status == "ok" and res.stdout.startswith(b"tps = 5")  # the head is kept
    pi = PISpec(name="tps", source="regex", pattern=r"tps = (\d+)")
    with pytest.raises(readers.ReadError, match="No space left"):
        read_reading(pi, res)


_TOKENS = st.sampled_from(["x=1", "x=22", "x=333", "y", "abc", "\n", " ", "\r\n", "é", "x="])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_TOKENS, max_size=60), st.sampled_from([r"x=(\d+)", r"^x=(\d+)", r"(\d)$", r"y\s*(a)"])
)
def test_windowed_search_finds_what_finditer_finds(tokens: list[str], pattern: str) -> None:
    """Windows far smaller than a real one (7 characters read, 9 held back) cut through
    every match somewhere."""
    text = "".join(tokens)
    old = (output._CHUNK, output._WINDOW, output._CONTEXT)
    output._CHUNK, output._WINDOW, output._CONTEXT = 7, 9, 3
    try:
        got = [m.group(0, 1) for m in output.iter_matches(pattern, io.StringIO(text))]
    finally:
        output._CHUNK, output._WINDOW, output._CONTEXT = old
    assert got == [m.group(0, 1) for m in re.finditer(pattern, text, re.MULTILINE)]


def test_the_session_cgroup_made_ahead_is_the_one_trials_use(mechanism: str) -> None:
    """Issue #17: the migration into the session cgroup (17 ms here) runs in a thread
    while a study imports its modules; the first trial's tree waits for it and holds
    its processes in that same cgroup. Under the scan nothing is made."""
    import threading

    proctree.prepare_session()
    for t in threading.enumerate():
        if t.name == "assay-session-cgroup":
            t.join(10)
    tree = proctree.ProcessTree("x")
    try:
        assert tree.mechanism == mechanism
        if mechanism == "cgroup":
            assert proctree._session[os.getpid()] is not None
            assert _own_cgroup(os.getpid()).endswith(f"/assay-{os.getpid()}")
        else:
            assert os.getpid() not in proctree._session or proctree._session[os.getpid()] is None
    finally:
        tree.close()
