"""Studies on a Dask cluster (``--workers N``: a LocalCluster of worker processes here):
every planned trial committed exactly once, when all goes well, when a worker process
is SIGKILLed mid-study and when the driver itself is killed and started again."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner

from assay.cli import main
from assay.store import Store

PY = sys.executable

# Each trial prints the pid of the process that started it: the Dask worker.
#: A line of ORDER_STUDY's benchmark: how a process running it is told apart.
BENCH_MARK = "time.sleep(float(sys.argv[1]))"

ORDER_STUDY = """
[study]
name = "cluster-order"

[benchmark]
command = ["{py}", "-c", '''
import os, sys, time
time.sleep(float(sys.argv[1]))
print(f"t={{0.01 + 0.001 * len(sys.argv[2])}} worker={{os.getppid()}}")
''', "{{pause}}", "{{op}}"]

[params]
pause = {pause}

[[pi]]
name = "t"
source = "regex"
pattern = 't=([0-9.]+)'

[[pi]]
name = "worker"
source = "regex"
pattern = 'worker=([0-9]+)'

[[test]]
name = "a"
params = {{op = "a"}}

[[test]]
name = "bb"
params = {{op = "bb"}}

[order]
runs = {runs}
repetitions = 2
seed = 7
"""

SWEEP_STUDY = """
[study]
name = "cluster-sweep"

[benchmark]
command = ["{py}", "-c", '''
import os, sys, time
w, c = int(sys.argv[1]), sys.argv[2]
time.sleep({pause})
print(f"tps={{min(w, 8) * 10 + {{'x': 0, 'y': 5}}[c]}} worker={{os.getppid()}}")
''', "{{w}}", "{{c}}"]

[[pi]]
name = "tps"
direction = "higher"
source = "regex"
pattern = 'tps=([0-9.]+)'

[[pi]]
name = "worker"
source = "regex"
pattern = 'worker=([0-9]+)'

[sweep]
repetitions = 2
start = 0.2
step = 0.2
sampler = "grid"
r2 = 0.99

[sweep.params]
w = [1, 2, 4, 8, 16]
c = ["x", "y"]
"""


def _write(tmp_path: Path, template: str, **values: object) -> Path:
    p = tmp_path / "study.toml"
    p.write_text(template.format(py=PY, **values))
    return p


def _stored(db: Path, name: str) -> list[object]:
    with Store(db) as store:
        found = store.find_study(name)
        assert found is not None
        return list(store.trials(found[0]))


def _assert_order_complete(db: Path, runs: int) -> list[object]:
    trials = _stored(db, "cluster-order")
    slots = Counter((t.run, t.seq) for t in trials)  # type: ignore[attr-defined]
    # 2 kinds × runs, each run: 2 tests × 2 repetitions, every slot exactly once
    assert sorted(slots) == [(r, p) for r in range(2 * runs) for p in range(4)]
    assert set(slots.values()) == {1}
    assert all(t.ok for t in trials)  # type: ignore[attr-defined]
    return trials


def test_order_runs_each_run_on_one_worker_and_several_runs_at_once(tmp_path: Path) -> None:
    study = _write(tmp_path, ORDER_STUDY, pause=0.05, runs=3)
    out = tmp_path / "r.json"
    res = CliRunner().invoke(
        main, ["order", str(study), "--workers", "4", "-q", "--no-overhead", "--json", str(out)]
    )
    assert res.exit_code == 0, res.output
    trials = _assert_order_complete(tmp_path / "study.assay.db", runs=3)
    by_run: dict[int, set[float]] = {}
    for t in trials:
        by_run.setdefault(t.run, set()).add(t.readings["worker"])  # type: ignore[attr-defined]
    assert all(len(w) == 1 for w in by_run.values())  # a run stays on its worker
    assert len(set().union(*by_run.values())) > 1  # runs spread over the workers
    doc = json.loads(out.read_text())
    assert doc["environment"]["executor"]["kind"] == "dask"
    assert len(doc["environment"]["executor"]["workers"]) == 4


def test_sweep_spreads_settings_over_workers_and_commits_each_once(tmp_path: Path) -> None:
    study = _write(tmp_path, SWEEP_STUDY, pause=0.05)
    res = CliRunner().invoke(main, ["sweep", str(study), "--workers", "4", "-q"])
    assert res.exit_code == 0, res.output
    trials = _stored(tmp_path / "study.assay.db", "cluster-sweep")
    keys = Counter(
        (t.setting["w"], t.setting["c"], t.setting["repetition"])  # type: ignore[attr-defined]
        for t in trials
    )
    assert set(keys.values()) == {1}
    assert len(keys) % 2 == 0 and len(keys) >= 4
    assert len({t.readings["worker"] for t in trials}) > 1  # type: ignore[attr-defined]
    # seq numbers stay unique although trials end out of order
    assert len({t.seq for t in trials}) == len(trials)  # type: ignore[attr-defined]


def test_a_knob_study_measures_every_sample_once_on_four_workers(tmp_path: Path) -> None:
    from test_knobs_live import STUDY as KNOBS_STUDY

    study = tmp_path / "knobs.toml"
    study.write_text(KNOBS_STUDY.format(py=PY))
    out = tmp_path / "k.json"
    args = ["knobs", str(study), "--workers", "4", "--jobs", "1", "-q", "--json", str(out)]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    trials = _stored(tmp_path / "knobs.assay.db", "synthetic-knobs")
    keys = Counter(
        tuple(sorted((k, str(v)) for k, v in t.setting.items()))  # type: ignore[attr-defined]
        for t in trials
    )
    assert len(trials) == 40 + 10 and set(keys.values()) == {1}  # samples + validation
    doc = json.loads(out.read_text())
    ranking = doc["rankings"][0] if "rankings" in doc else doc["pis"][0]
    assert set(ranking["top"]) == {"a", "c"}  # the same answer as here


def test_workers_and_cluster_together_are_a_usage_error(tmp_path: Path) -> None:
    study = _write(tmp_path, SWEEP_STUDY, pause=0.0)
    res = CliRunner().invoke(
        main, ["sweep", str(study), "--workers", "2", "--cluster", "tcp://127.0.0.1:1"]
    )
    assert res.exit_code == 2
    assert "give one" in res.output


def test_an_unreachable_scheduler_is_a_clear_error(tmp_path: Path) -> None:
    study = _write(tmp_path, SWEEP_STUDY, pause=0.0)
    res = CliRunner().invoke(
        main, ["sweep", str(study), "--cluster", "tcp://127.0.0.1:9", "--insecure", "-q"]
    )
    assert res.exit_code == 3
    assert "cannot reach the Dask scheduler" in res.output


def _assay(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [PY, "-m", "assay", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def _kill_tree(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the driver only: its workers and their benchmarks are left to die alone."""
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def _worker_processes(driver: int) -> list[psutil.Process]:
    """The Dask worker processes under a driver that are running a benchmark (a nanny
    starting its worker has a Python child too: killing it was a failed cluster start,
    not a lost trial)."""
    try:
        kids = psutil.Process(driver).children(recursive=True)
    except psutil.Error:
        return []
    out = []
    for k in kids:
        try:
            if any(BENCH_MARK in " ".join(c.cmdline()) for c in k.children()):
                out.append(k)
        except psutil.Error:
            continue
    return out


def test_a_killed_worker_loses_nothing_its_trial_runs_again(tmp_path: Path) -> None:
    study = _write(tmp_path, ORDER_STUDY, pause=0.4, runs=2)
    proc = _assay("order", str(study), "--workers", "2", "-q", "--no-overhead", "--no-monitor")
    killed = None
    deadline = time.monotonic() + 60
    while killed is None and time.monotonic() < deadline and proc.poll() is None:
        busy = _worker_processes(proc.pid)
        if busy:
            killed = busy[0].pid
            os.kill(killed, signal.SIGKILL)
        time.sleep(0.05)
    try:
        _, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            _kill_tree(proc)
    assert killed is not None, "no worker was seen running a trial"
    assert proc.returncode == 0, err.decode(errors="replace")[-2000:]
    _assert_order_complete(tmp_path / "study.assay.db", runs=2)


SLOW_FIRST = (  # one trial only is the first, also when two start at once (mkdir)
    "import contextlib, os, sys, time\\nfirst = False\\n"
    "with contextlib.suppress(FileExistsError): os.mkdir(sys.argv[2]); first = True\\n"
    "sys.argv[1] = sys.argv[1] if first else '0.05'\\n"
    "time.sleep(float(sys.argv[1])); print('t=1')"
)
SLOW_FIRST_STUDY = """
[study]
name = "cluster-slow-first"

[benchmark]
# the first trial to start takes 300 s (its worker is killed under it), the others 0.05 s
command = [
    "{py}", "-c", "{code}",
    "300", "{flag}",
]
timeout = 400

[[pi]]
name = "t"
source = "regex"
pattern = 't=([0-9.]+)'

[stop]
max_rounds = 4
min_rounds = 4
"""


def test_a_killed_workers_benchmark_is_stopped_by_its_successor(tmp_path: Path) -> None:
    """#41: a worker killed mid-trial left its benchmark running (~8 s, beside the
    restarted worker's next trial); the restarted worker now kills it as it starts."""
    flag = tmp_path / "first-started"
    study = _write(tmp_path, SLOW_FIRST_STUDY, flag=flag, code=SLOW_FIRST)
    out, log = tmp_path / "r.json", tmp_path / "stderr.log"
    # stderr to a file: the dying worker's and its nanny's log lines could fill a pipe
    # nobody reads until the end, and block the cluster
    with log.open("wb") as err_file:
        proc = subprocess.Popen(
            [PY, "-m", "assay", "run", str(study), "--workers", "2", "--no-overhead",
             "--no-monitor", "--json", str(out)],
            stdout=err_file, stderr=err_file, start_new_session=True,
            env={**os.environ, "PYTHONFAULTHANDLER": "1"},  # a stack on SIGABRT below
        )  # fmt: skip
    slow = None
    try:
        deadline = time.monotonic() + 120
        while slow is None:
            assert proc.poll() is None, log.read_text()[-2000:]
            assert time.monotonic() < deadline, "the slow first trial did not start"
            for worker in _worker_processes(proc.pid):
                with contextlib.suppress(psutil.Error):
                    kids = [
                        k
                        for k in worker.children()
                        if BENCH_MARK in " ".join(k.cmdline())
                        and time.time() - k.create_time() > 2.0  # not a 0.05 s one
                    ]
                    if kids:
                        slow, victim = kids[0], worker
            time.sleep(0.05)
        victim.kill()  # the worker, not its benchmark (in a process group of its own)
        deadline = time.monotonic() + 120  # the benchmark would sleep 300 s
        while slow.is_running() and slow.status() != psutil.STATUS_ZOMBIE:
            assert time.monotonic() < deadline, "the dead worker's benchmark still runs"
            time.sleep(0.2)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            tree = [
                f"{k.pid} {k.status()} {' '.join(k.cmdline())[:120]}"
                for k in psutil.Process(proc.pid).children(recursive=True)
            ]
            proc.send_signal(signal.SIGABRT)
            proc.wait()
            pytest.fail("\n".join(tree) + "\n" + log.read_text()[-3000:])
        assert proc.returncode in (0, 5), log.read_text()[-2000:]
    finally:
        if proc.poll() is None:
            _kill_tree(proc)
        if slow is not None and slow.is_running():
            slow.kill()
    # and the result says a worker was lost, when, with a trial in flight (#41 item 4)
    executor = json.loads(out.read_text())["environment"]["executor"]
    assert len(executor["lost"]) == 1 and executor["lost"][0]["seen_at"] > 0
    assert executor["trials_run_again"] == 1  # the slow trial, run again elsewhere
    text = " ".join(log.read_text().split())  # the report's executor line
    assert "lost during the study: 1 worker, " in text
    assert "; 1 trial was run again on another worker" in text


COMPARE_STUDY = """
[study]
name = "cluster-compare"

[benchmark]
command = [
    "{py}", "-c", "import sys, time; time.sleep(0.05); print('t=0.01' + sys.argv[1])", "{{v}}"
]

[[pi]]
name = "t"
source = "regex"
pattern = 't=([0-9.]+)'

[[variant]]
name = "a"
params = {{v = "0"}}

[[variant]]
name = "b"
params = {{v = "2"}}

[params]
v = "0"

[stop]
max_rounds = {cycles}
min_samples = 1000
"""


def _kill_and_resume(args: list[str], kills: int, seed: int) -> None:
    """SIGKILL the driver ``kills`` times at random moments, then let it finish."""
    rng = random.Random(seed)
    for _ in range(kills):
        proc = _assay(*args)
        time.sleep(rng.uniform(1.2, 4.0))  # start-up is ~1.5 s: some kills land in it
        if proc.poll() is None:
            _kill_tree(proc)
    final = _assay(*args)
    _, err = final.communicate(timeout=600)
    assert final.returncode in (0, 5), err.decode(errors="replace")[-2000:]  # 5: budget


def _assert_compare_complete(db: Path, cycles: int) -> None:
    trials = _stored(db, "cluster-compare")
    seqs = Counter(t.seq for t in trials)  # type: ignore[attr-defined]
    assert sorted(seqs) == list(range(2 * cycles)) and set(seqs.values()) == {1}
    by_cycle: dict[int, set[str]] = {}
    for t in trials:
        assert t.setting["cycle"] == t.seq // 2  # type: ignore[attr-defined]
        by_cycle.setdefault(t.seq // 2, set()).add(t.setting["variant"])  # type: ignore[attr-defined]
    assert all(v == {"a", "b"} for v in by_cycle.values())  # each cycle: every variant once


def test_a_killed_driver_resumes_an_order_study_without_losing_or_repeating_a_trial(
    tmp_path: Path,
) -> None:
    study = _write(tmp_path, ORDER_STUDY, pause=0.1, runs=3)
    args = ["order", str(study), "--workers", "2", "-q", "--no-overhead", "--no-monitor"]
    _kill_and_resume(args, kills=3, seed=1)
    _assert_order_complete(tmp_path / "study.assay.db", runs=3)


def test_a_killed_driver_resumes_a_comparison_cycle_by_cycle(tmp_path: Path) -> None:
    study = _write(tmp_path, COMPARE_STUDY, cycles=30)
    args = ["compare", str(study), "--workers", "3", "-q", "--no-overhead", "--no-monitor"]
    _kill_and_resume(args, kills=3, seed=2)
    _assert_compare_complete(tmp_path / "study.assay.db", cycles=30)


@pytest.mark.slow
def test_twenty_driver_kills_lose_and_double_nothing(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    from test_kill_safety import slow_selected

    if not slow_selected(request.config):
        pytest.skip("20 kills of cluster studies take a few minutes: -m slow or ASSAY_SLOW=1")
    order = tmp_path / "order"
    order.mkdir()
    study = _write(order, ORDER_STUDY, pause=0.1, runs=6)
    args = ["order", str(study), "--workers", "2", "-q", "--no-overhead", "--no-monitor"]
    _kill_and_resume(args, kills=10, seed=3)
    _assert_order_complete(order / "study.assay.db", runs=6)
    comp = tmp_path / "compare"
    comp.mkdir()
    study = _write(comp, COMPARE_STUDY, cycles=80)
    args = ["compare", str(study), "--workers", "3", "-q", "--no-overhead", "--no-monitor"]
    _kill_and_resume(args, kills=10, seed=4)
    _assert_compare_complete(comp / "study.assay.db", cycles=80)


SSH_STUDY = """
[study]
name = "ssh-sweep"

[benchmark]
command = [
    "{py}", "-c", "import sys; w = int(sys.argv[1]); print(f'tps={{min(w, 8) * 10}}')", "{{w}}"
]

[[pi]]
name = "tps"
direction = "higher"
source = "regex"
pattern = 'tps=([0-9.]+)'

[sweep]
repetitions = 2
sampler = "grid"
start = 0.5
step = 0.5

[sweep.params]
w = [1, 2, 4, 8]

[cluster]
hosts = ["127.0.0.1", "localhost"]
port = {port}
user = "{user}"
key = "{key}"
known_hosts = "{known_hosts}"
remote_python = "{py}"
"""


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def sshd(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A private sshd on a free loopback port that accepts one key made for the test."""
    import getpass
    import shutil
    import socket

    if not Path("/usr/sbin/sshd").exists() or shutil.which("ssh-keygen") is None:
        pytest.skip("no sshd: run scripts/install-targets.sh (it installs openssh-server)")
    d = tmp_path / "sshd"
    d.mkdir()
    for name in ("host_key", "client_key"):
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / name)], check=True
        )
    (d / "authorized_keys").write_text((d / "client_key.pub").read_text())
    port = _free_port()
    # the host key as a known_hosts line: the client checks the server it reaches
    host_key = (d / "host_key.pub").read_text().split()
    (d / "known_hosts").write_text(
        f"[127.0.0.1]:{port},[localhost]:{port} {host_key[0]} {host_key[1]}\n"
    )
    (d / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {d / 'host_key'}\n"
        f"AuthorizedKeysFile {d / 'authorized_keys'}\nPidFile {d / 'sshd.pid'}\n"
        "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
    )
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege-separation folder
    proc = subprocess.Popen(
        ["/usr/sbin/sshd", "-D", "-e", "-f", str(d / "sshd_config")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                err = proc.stderr.read().decode() if proc.stderr else ""
                proc.kill()
                pytest.fail(f"sshd did not start: {err}")
            time.sleep(0.05)
    yield {
        "port": port,
        "user": getpass.getuser(),
        "key": str(d / "client_key"),
        "known_hosts": str(d / "known_hosts"),
    }
    proc.terminate()
    proc.wait(timeout=10)


def test_a_sweep_runs_on_an_ssh_cluster_named_in_the_study_file(
    tmp_path: Path, sshd: dict[str, object]
) -> None:
    study = _write(tmp_path, SSH_STUDY, **sshd)
    out = tmp_path / "r.json"
    before = set(Path("/tmp").glob("assay-tls-*"))  # (an aborted run elsewhere may leave one)
    res = CliRunner().invoke(main, ["sweep", str(study), "-q", "--json", str(out)])
    assert res.exit_code == 0, res.output
    trials = _stored(tmp_path / "study.assay.db", "ssh-sweep")
    keys = Counter((t.setting["w"], t.setting["repetition"]) for t in trials)  # type: ignore[attr-defined]
    assert keys == Counter({(w, r): 1 for w in (1, 2, 4, 8) for r in (0, 1)})
    assert all(t.ok for t in trials)  # type: ignore[attr-defined]
    executor = json.loads(out.read_text())["environment"]["executor"]
    assert executor["kind"] == "dask" and len(executor["workers"]) == 2
    assert executor["scheduler"].startswith("tls://127.0.0.1:")  # the study's own TLS
    assert set(Path("/tmp").glob("assay-tls-*")) <= before  # its credentials removed


SSH_RUN_STUDY = """
[study]
name = "ssh-lifetime"

[benchmark]
command = ["sleep", "0.2"]

[stop]
max_rounds = 1000
min_rounds = 1000

[cluster]
hosts = ["127.0.0.1"]
port = {port}
user = "{user}"
key = "{key}"
known_hosts = "{known_hosts}"
remote_python = "{py}"
idle_timeout = 3
"""


def _dask_under(sshd_config: Path) -> list[psutil.Process]:
    """The Dask scheduler, nanny and worker processes the test's sshd started."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmd = proc.info["cmdline"] or []
        if str(sshd_config) in cmd:
            for child in proc.children(recursive=True):
                with contextlib.suppress(psutil.Error):
                    line = " ".join(child.cmdline())
                    if "distributed" in line or "dask" in line:
                        found.append(child)
    return found


def test_a_killed_drivers_ssh_cluster_ends_by_itself(
    tmp_path: Path, sshd: dict[str, object]
) -> None:
    """#41: a SIGKILLed driver left its scheduler and a worker on every host running
    (6 min later). The scheduler ends once the driver's heartbeat has stopped for
    [cluster] idle_timeout seconds, and its workers with it."""
    study = _write(tmp_path, SSH_RUN_STUDY, **sshd)
    config = Path(str(sshd["key"])).parent / "sshd_config"
    before = set(Path("/tmp").glob("assay-tls-*"))
    proc = _assay("run", str(study), "-q", "--no-overhead", "--no-monitor")
    deadline = time.monotonic() + 120
    while len(_dask_under(config)) < 2:  # the scheduler and the worker (and its nanny)
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        assert time.monotonic() < deadline, "the cluster did not start within 120 s"
        time.sleep(0.2)
    time.sleep(2 * 3.0)  # trials run; the heartbeat keeps the cluster past idle_timeout
    cluster = _dask_under(config)
    assert proc.poll() is None and len(cluster) >= 2, "the cluster ended under its driver"
    _kill_tree(proc)
    # the sshd's sessions end with the driver: its processes are then init's children
    deadline = time.monotonic() + 90
    while left := [p for p in cluster if p.is_running() and p.status() != "zombie"]:
        if time.monotonic() > deadline:
            for p in left:
                p.kill()
            pytest.fail(f"still running 90 s after the driver's kill: {left}")
        time.sleep(0.5)
    # and the study's TLS key is not left in the hosts' /tmp (here: this machine's)
    while new := set(Path("/tmp").glob("assay-tls-*")) - before:
        if time.monotonic() > deadline:
            pytest.fail(f"the study's credentials outlived its driver: {new}")
        time.sleep(0.5)


def test_an_ssh_host_that_refuses_is_a_clear_error(tmp_path: Path, sshd: dict[str, object]) -> None:
    study = _write(tmp_path, SSH_STUDY, **{**sshd, "port": _free_port()})
    res = CliRunner().invoke(main, ["sweep", str(study), "-q"])
    assert res.exit_code == 3
    assert "cannot start the Dask cluster over SSH" in res.output


def test_the_cluster_reports_workers_trials_in_flight_and_time_left(tmp_path: Path) -> None:
    from assay.execute.cluster import open_executor
    from assay.execute.trial import TrialJob, TrialRequest
    from assay.spec import PISpec

    job = TrialJob(pis=(PISpec(name="wall_time"),), timeout=30)
    sleep = ["sh", "-c", "sleep 0.2"]
    with open_executor(workers=2, monitor=False) as ex:
        ex.start()
        assert ex.slots() == 2
        seen = []
        for rec in ex.run_trials(job, [TrialRequest(i, sleep) for i in range(6)]):
            status = ex.status()
            assert status is not None and rec.ok
            seen.append((status.workers, status.in_flight, status.left_s is not None))
    assert [s[1] for s in seen] == [5, 4, 3, 2, 1, 0]
    assert all(w == 2 for w, _, _ in seen)
    assert all(known for _, left, known in seen if left)  # an estimate once trials returned


@pytest.mark.parametrize(
    "args",
    [
        ["order", "--from", "t.csv", "--workers", "2"],
        ["sweep", "--from", "r.csv", "--params", "a", "--metric", "y", "--cluster", "tcp://h:1"],
        ["knobs", "--from", "s.csv", "--metric", "y", "--workers", "2"],
        ["compare", "--from", "--workers", "2", "a.json", "b.json"],
    ],
)
def test_a_cluster_with_from_is_a_usage_error(args: list[str]) -> None:
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 2, res.output
    assert "not used with --from (nothing is run)" in res.output


def test_setup_runs_on_every_worker_and_a_failing_one_names_the_worker(tmp_path: Path) -> None:
    log = tmp_path / "setups.log"
    append = f"import os; open({str(log)!r}, 'a').write(str(os.getppid()) + chr(10))"
    study = _write(tmp_path, SWEEP_STUDY, pause=0.0)
    text = study.read_text().replace(
        "[benchmark]\n", f'[benchmark]\nsetup = [{json.dumps(PY)}, "-c", {json.dumps(append)}]\n', 1
    )
    study.write_text(text)
    res = CliRunner().invoke(main, ["sweep", str(study), "--workers", "2", "-q"])
    assert res.exit_code == 0, res.output
    assert len(set(log.read_text().split())) == 2  # once on each worker
    study.write_text(text.replace(append, "raise SystemExit(4)"))
    res = CliRunner().invoke(main, ["sweep", str(study), "--workers", "2", "-q", "--fresh"])
    assert res.exit_code == 3
    assert "on worker tls://127.0.0.1:" in res.output and "the setup command" in res.output


def test_a_local_cluster_that_does_not_start_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worker that dies while the cluster starts (Dask: "Nanny failed to start") is
    a study error that says nothing ran, not a traceback with exit 1."""
    import distributed

    from assay.errors import StudyError
    from assay.execute.cluster import open_executor

    def failing(*args: object, **kwargs: object) -> object:
        raise RuntimeError("Nanny failed to start.")

    monkeypatch.setattr(distributed, "LocalCluster", failing)
    with (
        pytest.raises(StudyError, match=r"--workers 2: the local Dask cluster did not start"),
        open_executor(workers=2),
    ):
        pass
