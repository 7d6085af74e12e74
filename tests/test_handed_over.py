"""Issue #44, first item: a process a trial hands to a long-lived service is no leftover.

A trial may start a process that must outlive it: PostgreSQL restarted by ``pg_ctl``
for a knob that needs a restart, a daemon.  It names it in the file ``ASSAY_HANDOVER``
names (:mod:`assay.execute.proctree`); the trial's end spares it and what it forks,
and still kills every other process the trial left.  Each test runs with both ways of
holding a trial's processes (a cgroup v2 where one is writable, and the scan).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import test_process_tree as tree_tests
from assay.execute import proctree
from assay.execute.command import run_command
from assay.spec import load_spec
from assay.store import Store
from test_targets_e2e import needs_pg, needs_redis

# the process-tree tests' fixtures: both mechanisms, a unique sleep duration per test
mechanism = tree_tests.mechanism
tag = tree_tests.tag
_running = tree_tests._running
_none_left = tree_tests._none_left


def _daemon(tag: str, pidfile: Path, *, hand_over: bool) -> str:
    """Shell: double-fork ``sleep TAG`` into a session of its own (a daemon), note its
    pid in ``pidfile`` and, if asked, hand it over."""
    start = f"(setsid sleep {tag} >/dev/null 2>&1 </dev/null & echo $! > {pidfile})"
    return start + (f'; cat {pidfile} >> "$ASSAY_HANDOVER"' if hand_over else "")


def _stat(pid: int) -> tuple[int, str] | None:
    """A process's parent and state letter (``Z``: a zombie); None when there is none."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[1]), fields[0]


@pytest.fixture
def kill_after() -> Iterator[list[int]]:
    """Pids the test's clean-up kills (a study's teardown would stop them)."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            continue
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)  # under the scan the daemon is this process's child


def test_a_daemon_handed_over_outlives_the_trial_and_a_leftover_does_not(
    mechanism: str, tag: str, tmp_path: Path, kill_after: list[int]
) -> None:
    """Of two daemons a trial starts, the one it hands over lives on, through later
    trials' ends too; the other is killed as before."""
    kept, left = tag + "1", tag + "2"
    script = "; ".join(
        [_daemon(kept, tmp_path / "kept", hand_over=True),
         _daemon(left, tmp_path / "left", hand_over=False), "echo done"]
    )  # fmt: skip
    res = run_command(["sh", "-c", script], timeout=30)
    daemon = int((tmp_path / "kept").read_text())
    kill_after.append(daemon)
    assert res.status == "ok" and res.stdout == b"done\n", res.error
    assert _running(kept) == [daemon], "the trial's end killed the daemon it handed over"
    assert _none_left(left), f"a leftover survived: {_running(left)}"
    if mechanism == "cgroup":  # out of the trials' accounting, where setup's servers are
        assert "assay-" not in tree_tests._own_cgroup(daemon)
    # a later trial's end leaves it alone too
    res = run_command(["sh", "-c", f"sleep {left} & echo again"], timeout=30)
    assert res.status == "ok" and res.stdout == b"again\n"
    assert _running(kept) == [daemon] and _none_left(left)


def test_a_handed_over_daemon_that_exits_is_reaped(
    mechanism: str, tag: str, tmp_path: Path, kill_after: list[int]
) -> None:
    """Under the scan the daemon was adopted by Assay (the subreaper): when it ends,
    Assay reaps it at its next trial; no zombie is left to pile up."""
    res = run_command(["sh", "-c", _daemon(tag, tmp_path / "pid", hand_over=True)], timeout=30)
    assert res.status == "ok", res.error
    daemon = int((tmp_path / "pid").read_text())
    kill_after.append(daemon)
    os.kill(daemon, signal.SIGTERM)  # the service stops it
    while (_stat(daemon) or (0, "Z"))[1] != "Z":
        time.sleep(0.01)
    assert run_command(["true"], timeout=30).status == "ok"
    # with the cgroup it was init's orphan: init reaps it, at its own pace
    assert (_stat(daemon) or (0, ""))[0] != os.getpid(), "a zombie of Assay's"


def test_a_handover_names_only_the_trials_own_processes(
    mechanism: str, tag: str, tmp_path: Path, kill_after: list[int]
) -> None:
    """Anything else in the file is ignored: a line that is no pid, another process's
    pid (not the trial's to hand over), a pid with another start time (reused)."""
    outside = subprocess.Popen(["sleep", tag + "9"], start_new_session=True)
    kill_after.append(outside.pid)
    lines = f"junk\n-4\n{outside.pid}\n{os.getpid()}\n99999999999999999999\n"
    script = "; ".join(
        [f"printf {shlex.quote(lines)} >> \"$ASSAY_HANDOVER\"",
         _daemon(tag + "1", tmp_path / "a", hand_over=False),
         f'echo "$(cat {tmp_path / "a"}) 12345" >> "$ASSAY_HANDOVER"',  # not its start time
         _daemon(tag + "2", tmp_path / "b", hand_over=True), "echo done"]
    )  # fmt: skip
    res = run_command(["sh", "-c", script], timeout=30)
    kill_after.append(int((tmp_path / "b").read_text()))
    assert res.status == "ok" and res.stdout == b"done\n", res.error
    assert _none_left(tag + "1"), "a hand-over with another start time spared the process"
    assert len(_running(tag + "2")) == 1
    assert outside.poll() is None


def test_a_handover_file_is_read_within_a_cap() -> None:
    big = b"1 2\n" * 100_000 + b"7\n"
    named = proctree.parse_handover(big[: proctree.HANDOVER_CAP])
    assert named == {1: 2}
    assert proctree.parse_handover(b"12 34\n56\nx\n0\n-3\n7 8 9\n") == {12: 34, 56: None}


# -- a study: the trials hand their daemon over, the teardown stops them -----------------
def _env(mechanism: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ASSAY_PROCESS_TREE"}
    return {**env, "ASSAY_PROCESS_TREE": "scan"} if mechanism == "scan" else env


def _assay_run(study: Path, mechanism: str, rounds: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "assay", "run", str(study), "-q", "--no-overhead",
         "--no-monitor", "--max-rounds", str(rounds)],
        capture_output=True, text=True, env=_env(mechanism), timeout=600, check=False,
    )  # fmt: skip


def _trials(study: Path) -> list[str]:
    """Each stored trial's status, and its error where it failed."""
    spec = load_spec(study)
    with Store(spec.store_path()) as store:
        found = store.find_study(spec.study.name)
        assert found is not None
        return [t.status + (f": {t.error} {t.stderr.decode()[-300:]}" if not t.ok else "")
                for t in store.trials(found[0])]  # fmt: skip


def test_a_study_whose_trials_hand_a_daemon_over(
    mechanism: str, tag: str, tmp_path: Path, kill_after: list[int]
) -> None:
    """Every trial checks that the daemons of the trials before it still run, starts
    one more (handed over) and a leftover; the teardown finds them all and stops them."""
    kept, left, pids = tag + "1", tag + "2", tmp_path / "handed"
    # running, not a zombie (kill -0 takes a zombie, which init may reap late, for alive)
    alive = 's=$(cut -d" " -f3 /proc/$p/stat 2>/dev/null); [ -n "$s" ] && [ "$s" != Z ]'
    check = f"for p in $(cat {pids} 2>/dev/null); do {alive} || exit 7; done"
    command = "; ".join(
        [check, _daemon(kept, tmp_path / "new", hand_over=True),
         f"cat {tmp_path / 'new'} >> {pids}", _daemon(left, tmp_path / "left", hand_over=False)]
    )  # fmt: skip
    teardown = f"{check}; echo all-alive > {tmp_path / 'teardown'}; kill $(cat {pids})"
    study = tmp_path / "handed.toml"
    study.write_text(
        f"""
[study]
name = "handed"
[benchmark]
command = ["sh", "-c", {json.dumps(command)}]
teardown = ["sh", "-c", {json.dumps(teardown)}]
timeout = 60
"""
    )
    res = _assay_run(study, mechanism, 3)
    if pids.exists():
        kill_after.extend(int(p) for p in pids.read_text().split())
    assert res.returncode in (0, 5), res.stderr
    assert _trials(study) == ["ok"] * 3, res.stderr
    assert (tmp_path / "teardown").read_text() == "all-alive\n"
    assert _none_left(kept) and _none_left(left)


# -- PostgreSQL: a knob that needs a restart, in every trial ------------------------------
DRIVER = """\
import json, pathlib, subprocess, sys
state, log = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
def server():
    doc = json.loads((state / "state.json").read_text())
    return doc["server"]["pid"]
n = len(log.read_text().splitlines()) if log.exists() else 0
before = server()
knob = sys.argv[3] % (32 + 16 * n)  # another value in every trial: a restart
run = subprocess.run([sys.executable, "-m", "assay.targets", *sys.argv[4:], "--knob", knob],
                     check=False)
with log.open("a") as f:
    f.write(f"{before} {server()}\\n")
sys.exit(run.returncode)
"""


def _knob_study(tmp_path: Path, target: str, setup: list[str], run: list[str]) -> Path:
    (tmp_path / "driver.py").write_text(DRIVER)
    state, log = tmp_path / "state", tmp_path / "servers"
    py = sys.executable
    command = [py, str(tmp_path / "driver.py"), str(state), str(log), KNOB[target], target, "run",
               "--state", str(state), *run]  # fmt: skip
    study = tmp_path / f"{target}.toml"
    study.write_text(
        f"""
[study]
name = "{target}-restarts"
[benchmark]
setup = {json.dumps([py, "-m", "assay.targets", target, "setup", "--state", str(state), *setup])}
command = {json.dumps(command)}
teardown = {json.dumps([py, "-m", "assay.targets", target, "teardown", "--state", str(state)])}
timeout = 120
"""
    )
    return study


#: per target, a knob that needs a restart, and how the driver writes its value
KNOB = {"postgres": "shared_buffers=%dMB", "redis": "databases=%d"}


def _restarts(tmp_path: Path, study: Path, mechanism: str) -> list[tuple[int, int]]:
    """Run 3 trials; the server's pid before and after each."""
    res = _assay_run(study, mechanism, 3)
    assert res.returncode in (0, 5), res.stderr
    assert _trials(study) == ["ok"] * 3, res.stderr
    assert not (tmp_path / "state").exists()  # the teardown stopped it and cleaned up
    return [
        (int(a), int(b))
        for a, b in (ln.split() for ln in (tmp_path / "servers").read_text().splitlines())
    ]


def _restarted_and_kept(servers: list[tuple[int, int]]) -> None:
    """Every trial restarted the server (a new pid), and the next trial found it."""
    assert len(servers) == 3
    for (_, after), (before, _) in itertools.pairwise(servers):
        assert before == after
    assert len({servers[0][0], *(after for _, after in servers)}) == 4


@needs_pg
@pytest.mark.slow
def test_postgres_restarted_for_a_knob_in_every_trial_lives_on(
    mechanism: str, tmp_path: Path
) -> None:
    """The issue's failure: shared_buffers needs a restart; the restarted server was
    killed with the trial's leftovers and the next trial found none.  Here each of 3
    trials restarts the server the trial before it left running."""
    study = _knob_study(
        tmp_path, "postgres", ["--scale", "1"],
        ["--duration", "1", "--clients", "1", "--jobs", "1", "--progress", "0"],
    )  # fmt: skip
    _restarted_and_kept(_restarts(tmp_path, study, mechanism))


@needs_redis
@pytest.mark.slow
def test_redis_restarted_for_a_knob_in_every_trial_lives_on(mechanism: str, tmp_path: Path) -> None:
    """Redis restarts for an immutable setting (``databases``) the same way."""
    study = _knob_study(tmp_path, "redis", [], ["--requests", "2000", "--tests", "set"])
    _restarted_and_kept(_restarts(tmp_path, study, mechanism))


@needs_pg
@pytest.mark.slow
def test_a_restarted_server_killed_anyway_is_named_with_the_fix(tmp_path: Path) -> None:
    """Where nothing spares it (an older Assay, another harness), the next run says
    which server went, why it most likely did, and what to do, instead of 'no server
    runs: run setup'."""
    state = str(tmp_path / "pg")

    def call(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "assay.targets", "postgres", *args, "--state", state]
        env = {k: v for k, v in os.environ.items() if k != "ASSAY_HANDOVER"}
        return subprocess.run(argv, capture_output=True, text=True, env=env, check=False)

    assert call("setup", "--scale", "1").returncode == 0
    try:
        run = ["run", "--duration", "1", "--progress", "0"]
        assert call(*run, "--knob", "shared_buffers=48MB").returncode == 0  # a restart
        server = json.loads((tmp_path / "pg" / "state.json").read_text())["server"]["pid"]
        os.kill(server, signal.SIGKILL)  # what a harness does to a trial's leftover
        while (_stat(server) or (0, "Z"))[1] != "Z":
            time.sleep(0.01)
        after = call(*run, "--knob", "shared_buffers=48MB")
        assert after.returncode == 2
        assert f"restarted for shared_buffers (pid {server}) no longer runs" in after.stderr
        assert "no ASSAY_HANDOVER" in after.stderr and "Run teardown, then setup" in after.stderr
    finally:
        assert call("teardown").returncode == 0


def test_hand_over_folders_are_private_and_removed_at_exit(tmp_path: Path) -> None:
    """One private folder per Assay process; at its exit it goes, with those of Assay
    processes that died without exit handlers (SIGKILL), and no live one's."""
    code = (
        "import os, signal, sys\n"
        "from assay.execute.command import run_command\n"
        "r = run_command(['sh', '-c', 'echo \"$ASSAY_HANDOVER\"'], timeout=10)\n"
        "print(r.stdout.decode().strip(), flush=True)\n"
        "if sys.argv[1] == 'kill': os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    env = {**os.environ, "TMPDIR": str(tmp_path)}

    def folder(how: str) -> Path:
        out = subprocess.run([sys.executable, "-c", code, how], env=env, capture_output=True)
        return Path(out.stdout.decode().strip()).parent

    killed = folder("kill")
    assert killed.parent == tmp_path and killed.stat().st_mode & 0o777 == 0o700
    live = tmp_path / f"assay-handover-{os.getpid()}-x"  # a live process's: kept
    live.mkdir()
    ended = folder("exit")
    assert not ended.exists() and not killed.exists() and live.exists()
