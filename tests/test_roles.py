"""Studies that span several hosts (``[cluster.roles]``): the study file's roles, their
steps on every host through Dask workers pinned to hosts (a LocalCluster of workers
standing for hosts), each host's exit status, output and samples stored, and a trial
that fails naming the host."""

from __future__ import annotations

import json
import re
import sqlite3
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from assay.cli import main
from assay.spec import SpecError, parse_spec_text
from assay.store import HostRun, Store, TrialRecord

PY = sys.executable

SPEC = """
[study]
name = "roles"

[benchmark]
command = ["echo", "{{hosts.server}}", "{{host.index}}"]
{extra_benchmark}

[cluster]
{extra_cluster}

[cluster.roles]
client = ["c"]
server = ["s0", "s1"]
"""


def _spec(extra_cluster: str = "", extra_benchmark: str = "") -> str:
    return (
        SPEC.format(extra_cluster=extra_cluster, extra_benchmark=extra_benchmark)
        .replace("{{", "{")
        .replace("}}", "}")
    )


def test_roles_give_the_hosts_and_placeholders() -> None:
    spec = parse_spec_text(
        _spec(extra_benchmark='[benchmark.roles.server]\nsetup = ["start", "--id={host.index}"]'),
        "f.toml",
    )
    assert spec.cluster is not None
    assert spec.cluster.hosts == ["c", "s0", "s1"]  # hosts default to the roles'
    assert spec.benchmark.roles["server"].setup == ["start", "--id={host.index}"]


@pytest.mark.parametrize(
    ("cluster", "benchmark", "expected"),
    [
        ('measure = "server"', "", "cluster.combine: the measured role 'server' has 2 hosts"),
        ('measure = "db"', "", "measure: expected one of the roles client, server"),
        ('hosts = ["c", "s0"]', "", "hosts: expected the hosts of [cluster.roles]"),
        ("", "[benchmark.roles.db]\nsetup = ['x']", "benchmark.roles.db: not a role"),
        ("", "[benchmark.roles.server]\nsetup = ['x', '{nope}']", "placeholder '{nope}'"),
        ("", "[benchmark.roles.server]\nstart = ['x']", "benchmark.roles.server.start"),
        ("", "conclude = ['x']", "benchmark.conclude: not with [cluster.roles]"),
    ],
)
def test_bad_roles_name_the_file_the_field_and_what_was_expected(
    cluster: str, benchmark: str, expected: str
) -> None:
    with pytest.raises(SpecError) as err:
        parse_spec_text(_spec(cluster, benchmark), "study.toml")
    assert "study.toml" in str(err.value) and expected in str(err.value)


def test_a_host_in_two_roles_is_refused() -> None:
    text = _spec().replace('client = ["c"]', 'client = ["s1"]')
    with pytest.raises(SpecError, match="host 's1' is also in role 'client'"):
        parse_spec_text(text, "f.toml")


def test_a_host_placeholder_without_roles_is_refused() -> None:
    text = '[study]\nname = "x"\n[benchmark]\ncommand = ["echo", "{hosts.server}"]\n'
    with pytest.raises(SpecError, match=r"placeholder '\{hosts.server\}'"):
        parse_spec_text(text, "f.toml")


def test_roles_change_the_measurement_hash_only_when_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import hashlib

    hashed: list[bytes] = []
    sha256 = hashlib.sha256

    def spy(blob: bytes) -> object:
        hashed.append(blob)
        return sha256(blob)

    plain = '[study]\nname = "x"\n[benchmark]\ncommand = ["echo", "{a}"]\n[params]\na = 1\n'
    # an empty [benchmark.roles] hashes as a file without it (as before roles existed:
    # the stored trials of one-machine studies still resume)
    empty = plain.replace("[params]", "[benchmark.roles]\n[params]")
    assert parse_spec_text(empty, "f").benchmark.roles == {}
    assert parse_spec_text(plain, "f").measurement_hash() == (
        parse_spec_text(empty, "f").measurement_hash()
    )
    with_steps = parse_spec_text(
        _spec(extra_benchmark="[benchmark.roles.server]\nsetup = ['x']"), "f"
    )
    assert parse_spec_text(_spec(), "f").measurement_hash() != with_steps.measurement_hash()
    monkeypatch.setattr(hashlib, "sha256", spy)
    parse_spec_text(plain, "f").measurement_hash()
    with_steps.measurement_hash()
    # what is hashed: no "roles" key at all without role steps
    assert b'"roles"' not in hashed[0] and b'"roles"' in hashed[1]


# ------------------------------------------------------------------ the store


def test_host_runs_are_stored_with_their_trial_and_steps_on_their_own(tmp_path: Path) -> None:
    import numpy as np

    runs = [
        HostRun(
            "trial",
            "server",
            "s1",
            1,
            "failed",
            3,
            "boom",
            b"out",
            b"err",
            10.0,
            1.0,
            {"cpu_count": 2},
            {"time_s": np.array([0.5, 1.0])},
        ),
    ]
    with Store(tmp_path / "s.db") as st:
        sid = st.open_study("x", "h", {})
        st.add_trial(sid, TrialRecord(seq=0, status="failed", host_runs=runs))
        st.add_host_runs(sid, [HostRun("setup", "server", "s0", 0, "ok", 0, stdout=b"up")])
        (back,) = st.trials(sid)
        steps = st.host_runs(sid, steps=True)[None]
    (h,) = back.host_runs
    assert (h.role, h.host, h.index, h.status, h.exit_code, h.stderr) == (
        "server",
        "s1",
        1,
        "failed",
        3,
        b"err",
    )
    assert h.info == {"cpu_count": 2} and h.resources["time_s"].tolist() == [0.5, 1.0]
    assert [(s.what, s.host, s.stdout) for s in steps] == [("setup", "s0", b"up")]


def test_a_store_made_before_hosts_were_kept_opens_and_reads(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    with Store(db) as st:
        sid = st.open_study("x", "h", {})
        st.add_trial(sid, TrialRecord(seq=0, status="ok", readings={"t": 1.0}))
    con = sqlite3.connect(db)  # as an older Assay left it: no host tables
    con.executescript("DROP TABLE host_samples; DROP TABLE host_runs;")
    con.close()
    with Store(db, read_only=True) as st:  # read-only: nothing is created
        assert [t.host_runs for t in st.trials(sid)] == [[]]
    with Store(db) as st:  # opened to write: the tables are added, the trial kept
        st.add_trial(
            sid, TrialRecord(seq=1, status="ok", host_runs=[HostRun("trial", "r", "h", 0, "ok")])
        )
        assert [len(t.host_runs) for t in st.trials(sid)] == [0, 1]


# ------------------------------------------------------------------ on a cluster

LIVE = """
[study]
name = "roles-live"

[benchmark]
command = ["{py}", "-c", '''
import sys
from pathlib import Path
servers = sys.argv[1].split(",")
up = sorted(p.name for p in Path(sys.argv[2]).glob("up-*"))
print(f"t={{len(up)}} servers={{len(servers)}}")
''', "{{hosts.server}}", "{dir}"]
timeout = 60

[[pi]]
name = "t"
source = "regex"
pattern = 't=([0-9]+)'

[stop]
max_rounds = {rounds}
min_samples = 1000

[benchmark.roles.server]
setup = ["{py}", "-c", "{setup}", "{dir}", "{{host.name}}", "{{host.index}}"]
command = ["{py}", "-c", "{command}", "{dir}", "{{host.name}}"]
ready = "serving"
teardown = ["{py}", "-c", "{teardown}", "{dir}", "{{host.name}}"]

[cluster]
on_host_failure = "{on_failure}"

[cluster.roles]
server = ["s0", "s1"]
client = ["c"]
"""

SETUP_OK = (
    "import sys, pathlib; d, name, i = sys.argv[1:]; "
    "pathlib.Path(d, 'up-' + name + '-' + i).touch(); print('server', name, 'up')"
)
SETUP_FAILS_ON_S1 = (
    "import sys, pathlib; d, name, i = sys.argv[1:]; "
    "sys.exit('cannot bind port 5432 on ' + name) if name == 's1' else None"
)
TEARDOWN = "import sys, pathlib; pathlib.Path(sys.argv[1], 'down-' + sys.argv[2]).touch()"
COMMAND_OK = "import sys; print('serving')"
# the server s1's worker is killed (SIGKILL) during the third trial
KILL_ON_THIRD = (
    "import os, sys, signal, pathlib; p = pathlib.Path(sys.argv[1], 'calls-' + sys.argv[2]); "
    "n = int(p.read_text()) if p.exists() else 0; p.write_text(str(n + 1)); "
    "os.kill(os.getppid(), signal.SIGKILL) if n == 2 and sys.argv[2] == 's1' else None; "
    "print('serving', flush=True)"
)


def _live(
    tmp_path: Path,
    setup: str = SETUP_OK,
    command: str = COMMAND_OK,
    rounds: int = 3,
    on_failure: str = "stop",
) -> Path:
    work = tmp_path / "hosts"
    work.mkdir(exist_ok=True)
    p = tmp_path / "study.toml"
    p.write_text(
        LIVE.format(
            py=PY,
            dir=work,
            setup=setup.replace('"', '\\"'),
            command=command.replace('"', '\\"'),
            teardown=TEARDOWN,
            rounds=rounds,
            on_failure=on_failure,
        )
    )
    return p


def _run(study: Path, *extra: str) -> tuple[int, str, dict[str, object]]:
    out = study.parent / "r.json"
    res = CliRunner().invoke(
        main,
        ["run", str(study), "--workers", "3", "-q", "--no-overhead", "--json", str(out), *extra],
    )
    doc = json.loads(out.read_text()) if out.exists() else {}
    return res.exit_code, res.output, doc


def _stored(study: Path) -> tuple[list[TrialRecord], list[HostRun]]:
    with Store(study.parent / "study.assay.db") as st:
        found = st.find_study("roles-live")
        assert found is not None
        return st.trials(found[0]), st.host_runs(found[0], steps=True).get(None, [])


def test_roles_set_up_every_host_and_a_trial_spans_them_all(tmp_path: Path) -> None:
    study = _live(tmp_path)
    code, output, doc = _run(study)
    assert code in (0, 5), output
    trials, steps = _stored(study)
    assert len(trials) == 3 and all(t.ok for t in trials)
    # the measured host as the study file names it, as a failed trial records it (#41:
    # ok trials recorded the hostname, which clones of one image share)
    assert {t.host for t in trials} == {"c"}
    # the client saw both servers' setups and the server list in its argv
    assert all(t.readings["t"] == 2.0 for t in trials)
    assert trials[0].argv[-2] == "s0,s1"
    # each server host ran its setup (own exit status and output) and its teardown
    setups = {(s.host, s.index, s.status, s.exit_code) for s in steps if s.what == "setup"}
    assert setups == {("s0", 0, "ok", 0), ("s1", 1, "ok", 0)}
    assert {s.stdout for s in steps if s.what == "setup"} == {b"server s0 up\n", b"server s1 up\n"}
    assert {s.host for s in steps if s.what == "teardown"} == {"s0", "s1"}
    assert sorted(p.name for p in (tmp_path / "hosts").glob("down-*")) == ["down-s0", "down-s1"]
    # every trial: a part per host, each with its exit status and watch samples
    for t in trials:
        parts = {(h.role, h.host): h for h in t.host_runs if h.what == "trial"}
        assert set(parts) == {("client", "c"), ("server", "s0"), ("server", "s1")}
        assert all(h.ok and h.resources.get("time_s") is not None for h in parts.values())
        assert parts[("server", "s0")].stdout == b"serving\n"
        assert all(h.info["cpu_count"] >= 1 and h.started for h in parts.values())
    cluster = doc["resources"]["cluster"]  # type: ignore[index]
    assert cluster["trials"] == 3
    assert set(cluster["roles"]) == {"server", "client"}
    assert set(cluster["hosts"]) == {"c (client[0])", "s0 (server[0])", "s1 (server[1])"}
    assert cluster["all"]["hosts"] == 3 and cluster["all"]["cpu_p95_percent"]["rounds"] == 3


def test_a_failing_setup_is_named_with_its_host_and_stderr(tmp_path: Path) -> None:
    study = _live(tmp_path, setup=SETUP_FAILS_ON_S1)
    code, output, _ = _run(study)
    assert code == 3, output
    flat = " ".join(output.split())
    assert "on host s1 (server[1])" in flat and "cannot bind port 5432 on s1" in flat
    trials, steps = _stored(study)
    assert trials == []
    failed = [s for s in steps if s.what == "setup" and not s.ok]
    assert [(s.host, s.exit_code, s.stderr.strip()) for s in failed] == [
        ("s1", 1, b"cannot bind port 5432 on s1")
    ]


@pytest.mark.parametrize("on_failure", ["stop", "continue"])
def test_a_server_whose_worker_dies_fails_its_trial_naming_the_host(
    tmp_path: Path, on_failure: str
) -> None:
    # each trial runs the server command on s0 and s1; s1's third kills its Dask worker
    study = _live(tmp_path, command=KILL_ON_THIRD, rounds=5, on_failure=on_failure)
    code, output, _ = _run(study)
    trials, _ = _stored(study)
    by_status = [t.status for t in trials]
    assert by_status[:2] == ["ok", "ok"] and by_status[2] == "failed"
    lost = trials[2]
    assert "on host s1 (server[1])" in lost.error and "is gone" in lost.error
    assert [h.host for h in lost.host_runs if h.status == "lost"] == ["s1"]
    assert all(t.readings["t"] == 2.0 for t in trials[:2])  # nothing stored is lost
    # the teardown ran on every host, s1's after its worker's restart (#41, item 7: under
    # 'stop' it was skipped there, its server left running)
    assert sorted(p.name for p in (tmp_path / "hosts").glob("down-*")) == ["down-s0", "down-s1"]
    _, steps = _stored(study)
    assert {(s.host, s.status) for s in steps if s.what == "teardown"} == {
        ("s0", "ok"),
        ("s1", "ok"),
    }
    if on_failure == "stop":
        assert code == 3, output
        assert len(trials) == 3
        assert "on_host_failure" in " ".join(output.split())
    else:
        # the nanny restarts the worker (same name): the study goes on to its end
        assert code in (0, 5), output
        assert len(trials) == 5 and [t.status for t in trials[3:]] == ["ok", "ok"]


def test_too_few_workers_for_the_hosts_is_a_clear_error(tmp_path: Path) -> None:
    study = _live(tmp_path)
    res = CliRunner().invoke(main, ["run", str(study), "--workers", "2", "-q", "--no-overhead"])
    assert res.exit_code == 3, res.output
    assert "name 3 hosts, one worker each: give --workers 3 or more" in " ".join(res.output.split())


def test_a_study_with_roles_is_refused_on_one_machine(tmp_path: Path) -> None:
    from assay.spec import load_spec
    from assay.studies.base import Study, StudyError

    study = Study(load_spec(_live(tmp_path)), tmp_path / "s.db")  # reading results: fine
    with (
        Store(tmp_path / "s.db") as store,
        pytest.raises(StudyError, match=r"\[cluster.roles\] spans several hosts"),
    ):
        study._open(store)  # running trials: refused


def test_a_teardown_waits_for_a_host_whose_worker_is_restarting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """#41, item 7: a worker killed near the study's end was restarting when the teardown
    began; its host's teardown was skipped ("it has no Dask worker"), its server left
    running.  The teardown waits for it (up to REJOIN_S), as a trial does."""
    from assay.execute import roles
    from assay.execute.trial import TrialJob

    ex = roles.RoleExecutor.__new__(roles.RoleExecutor)
    ex.revive, ex._revived = None, []
    ex.plan = roles.RolePlan(
        {"server": ["s0", "s1"], "client": ["c"]}, "client",
        {"server": {"teardown": ["true"]}}, {}, {},
    )  # fmt: skip
    polls = iter(range(100))

    def addresses(slots: object = None) -> dict[roles.HostSlot, str]:
        back = next(polls) >= 3  # s1's worker rejoins at the fourth look
        return {s: f"tcp://{s.host}" for s in ex.plan.slots if back or s.host != "s1"}

    submitted: list[str] = []
    monkeypatch.setattr(ex, "_addresses", addresses)
    monkeypatch.setattr(roles, "POLL_S", 0.01)
    monkeypatch.setattr(ex, "_submit", lambda slot, *a: submitted.append(slot.host) or slot)
    monkeypatch.setattr(ex, "_wait", lambda futures, *a: {s: roles._Lost("stub") for s in futures})
    ex._phase(TrialJob(pis=(), timeout=10), "teardown", None, keep_going=True)
    assert sorted(submitted) == ["s0", "s1"]


def test_a_role_steps_python3_is_the_studys_not_the_first_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#61: the examples' role steps are ``["python3", "redis_pair.py", ...]``; on a
    host whose first ``python3`` has no Assay (an SSH session's default PATH, a venv
    install) they failed with ModuleNotFoundError.  The Python the workers run (the
    study's) comes first on the steps' PATH."""
    import shutil
    import subprocess

    system = shutil.which("python3", path="/usr/bin:/bin")
    if system is None or subprocess.run([system, "-c", "import assay"]).returncode == 0:
        pytest.skip("needs a system python3 without Assay (as the hosts' is)")
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "python3").symlink_to(system)
    monkeypatch.setenv("PATH", f"{fake}:{'/usr/bin:/bin'}")
    study = _live(tmp_path, setup="import assay, sys, pathlib; " + SETUP_OK.split("; ", 1)[1])
    text = study.read_text().replace(f'setup = ["{PY}"', 'setup = ["python3"', 1)
    assert 'setup = ["python3"' in text
    study.write_text(text)
    code, output, _ = _run(study)
    assert code in (0, 5), output
    trials, steps = _stored(study)
    assert len(trials) == 3 and all(t.ok for t in trials), output
    assert {(s.host, s.status) for s in steps if s.what == "setup"} == {("s0", "ok"), ("s1", "ok")}


def test_a_roles_command_is_stopped_when_the_measured_command_ends(tmp_path: Path) -> None:
    """#61: docs/clusters.md says a role's command runs until the benchmark ends; a
    background load (``sleep 1000``) ran to the study's timeout and failed every trial
    ("timed out", "the command command").  It is stopped with the measured command and
    stored ok."""
    study = _live(tmp_path)
    text = study.read_text()
    start = text.index("command = [", text.index("[benchmark.roles.server]"))
    end = text.index("\n", start)
    text = text[:start] + 'command = ["sleep", "1000"]' + text[end:]
    text = text.replace('ready = "serving"\n', "")  # ready once started
    study.write_text(text.replace("timeout = 60", "timeout = 20"))
    code, output, _ = _run(study)
    assert code in (0, 5), output
    trials, _ = _stored(study)
    assert len(trials) == 3 and all(t.ok for t in trials), output
    for t in trials:
        servers = [h for h in t.host_runs if h.role == "server" and h.what == "trial"]
        assert len(servers) == 2 and all(h.status == "ok" for h in servers), servers
    assert "the command command" not in output


# the server's command is ready half a second after it starts, once it has made its mark
LATE_READY = (
    "import sys, time, pathlib; time.sleep(0.5); "
    "pathlib.Path(sys.argv[1], 'up-late-' + sys.argv[2]).touch(); print('serving', flush=True)"
)


def test_the_measured_command_starts_once_every_role_command_is_ready(tmp_path: Path) -> None:
    """#61: ``ready`` is a barrier: the client (which counts the up-* marks) runs only
    after each server's command printed "serving", so it sees their marks from the first
    trial on: 2 setups + 2 commands."""
    study = _live(tmp_path, command=LATE_READY)
    code, output, _ = _run(study)
    assert code in (0, 5), output
    trials, _ = _stored(study)
    assert len(trials) == 3 and all(t.ok for t in trials), output
    assert [t.readings["t"] for t in trials] == [4.0, 4.0, 4.0]


def test_a_role_command_that_ends_without_saying_ready_fails_the_trial(tmp_path: Path) -> None:
    study = _live(tmp_path, command="print('starting')", rounds=1)
    code, output, _ = _run(study)
    assert code == 3, output  # a host's part failed: on_host_failure = "stop"
    trials, _ = _stored(study)
    assert trials and not any(t.ok for t in trials), output
    errors = " ".join(h.error for t in trials for h in t.host_runs if h.role == "server")
    assert "it ended without printing its ready pattern 'serving'" in errors
    assert "the role's command \"server: " in errors


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ('command = ["serve"]\nready = "(["', "is not a regular expression"),
        ('setup = ["start"]\nready = "up"', "ready: the role has no command to print it"),
    ],
)
def test_ready_is_checked_with_the_study_file(steps: str, message: str) -> None:
    text = (
        '[study]\nname = "x"\n[benchmark]\ncommand = ["echo", "{hosts.server}"]\n'
        f"[benchmark.roles.server]\n{steps}\n"
        '[cluster]\n[cluster.roles]\nserver = ["s0"]\nclient = ["c"]\n'
    )
    with pytest.raises(SpecError, match=re.escape(message)):
        parse_spec_text(text, "r.toml")
