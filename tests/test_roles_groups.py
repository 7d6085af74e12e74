"""Node groups in parallel (#42): ``[cluster] groups = 2`` cuts every role's hosts into
two equal runs, each group runs a trial of its own at once, its roles set up for the
settings it runs; a group whose host's worker leaves mid-trial is taken out of the batch
and the trial runs on the other group, kept once.  Hosts are the workers of a
LocalCluster (``--workers 4``), as in tests/test_roles.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from assay.cli import main
from assay.spec import SpecError, parse_spec_text
from assay.store import Store, TrialRecord
from test_roles_settings import SETUP, TEARDOWN  # the servers' steps: the same

PY = sys.executable

# the server writes its setting where its group's client reads it; each client marks
# that it is in flight and waits (up to 20 s) for the other group's: "together=1" only
# when both groups run trials at once
STUDY = """
[study]
name = "groups"

[benchmark]
command = ["{py}", "-c", '''
import sys, time
from pathlib import Path
d, me, server = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
print("server=" + server)
print("seen=" + Path(d, "conf-" + server).read_text())
Path(d, "inflight-" + me).touch()
deadline = time.monotonic() + 20
while not [p for p in d.glob("inflight-*") if p.name != "inflight-" + me]:
    if time.monotonic() > deadline:
        break
    time.sleep(0.05)
together = bool([p for p in d.glob("inflight-*") if p.name != "inflight-" + me])
print("together=%d" % together)
''', "{dir}", "{{host.name}}", "{{hosts.server}}"]
timeout = 60

[[pi]]
name = "together"
source = "regex"
pattern = 'together=([0-9]+)'

[benchmark.roles.server]
setup = ["{py}", "-c", "{setup}", "{dir}", "{{host.name}}", "{{fsync}}"]
command = ["{py}", "-c", "{command}", "{dir}", "{{host.name}}"]
ready = "serving"
teardown = ["{py}", "-c", "{teardown}", "{dir}", "{{host.name}}", "{{fsync}}"]

[cluster]
groups = 2
on_host_failure = "{on_failure}"

[cluster.roles]
server = ["s0", "s1"]
client = ["c0", "c1"]

[sweep]
repetitions = 2
[sweep.params]
fsync = ["no", "everysec", "always"]
"""

SERVE = "print('serving')"
# s1's second trial kills its own Dask worker (the command's parent)
KILL_ON_SECOND = (
    "import os, sys, signal, pathlib; p = pathlib.Path(sys.argv[1], 'calls-' + sys.argv[2]); "
    "n = int(p.read_text()) if p.exists() else 0; p.write_text(str(n + 1)); "
    "os.kill(os.getppid(), signal.SIGKILL) if n == 1 and sys.argv[2] == 's1' else None; "
    "print('serving', flush=True)"
)


def _study(tmp_path: Path, command: str = SERVE, on_failure: str = "stop") -> Path:
    work = tmp_path / "hosts"
    work.mkdir()
    p = tmp_path / "study.toml"
    text = STUDY.format(
        py=PY,
        dir=work,
        setup=SETUP.replace('"', '\\"'),
        command=command.replace('"', '\\"'),
        teardown=TEARDOWN.replace('"', '\\"'),
        on_failure=on_failure,
    )
    p.write_text(text.replace("{{", "{").replace("}}", "}"))
    return p


def _sweep(study: Path) -> tuple[int, str, dict[str, object], list[TrialRecord]]:
    out = study.parent / "r.json"
    res = CliRunner().invoke(
        main, ["sweep", str(study), "--workers", "4", "-q", "--json", str(out)]
    )
    doc = json.loads(out.read_text()) if out.exists() else {}
    with Store(study.parent / "study.assay.db") as st:
        found = st.find_study("groups")
        assert found is not None
        trials = st.trials(found[0])
    return res.exit_code, res.output, doc, trials


def _said(t: TrialRecord, key: str) -> str:
    lines = t.stdout.decode().splitlines()
    return next(line.split("=", 1)[1] for line in lines if line.startswith(key + "="))


def test_two_groups_run_trials_at_once_each_on_its_own_servers(tmp_path: Path) -> None:
    study = _study(tmp_path)
    code, output, doc, trials = _sweep(study)
    assert code in (0, 5), output
    assert len(trials) == 6 and all(t.ok for t in trials), [t.error for t in trials]
    for t in trials:
        client = t.host
        server = {"c0": "s0", "c1": "s1"}[str(client)]
        assert _said(t, "server") == server  # {hosts.server}: its group's only
        assert _said(t, "seen") == t.setting["fsync"]  # its server set up for its setting
        assert {h.host for h in t.host_runs if h.what == "trial"} == {client, server}
    # each group ran trials while the other did (a client waits up to 20 s to see the
    # other group's in flight; one group at a time would never see it)
    assert {t.host for t in trials} == {"c0", "c1"}
    assert all(t.readings["together"] == 1.0 for t in trials)
    # every server torn down with the setting it last had: nothing left set up
    assert not list((tmp_path / "hosts").glob("conf-*"))
    log = (tmp_path / "hosts" / "log").read_text().splitlines()
    assert sum(line.startswith("up ") for line in log) == sum(
        line.startswith("down ") for line in log
    )
    executor = doc["environment"]["executor"]  # type: ignore[index]
    assert executor["groups"]["hosts"] == [
        ["s0 (server[0])", "c0 (client[0])"],
        ["s1 (server[1])", "c1 (client[1])"],
    ]
    assert "2 groups of hosts ran trials at once: s0, c0 | s1, c1" in " ".join(output.split())


def test_a_group_whose_host_left_is_taken_out_and_its_trial_runs_on_the_other(
    tmp_path: Path,
) -> None:
    study = _study(tmp_path, command=KILL_ON_SECOND, on_failure="continue")
    code, output, doc, trials = _sweep(study)
    assert code in (0, 5), output
    # every planned trial kept once, each ok (the one cut off ran again on group 0)
    assert len(trials) == 6 and all(t.ok for t in trials), [t.error for t in trials]
    assert sorted((t.setting["fsync"], t.setting["repetition"]) for t in trials) == sorted(
        (f, r) for f in ("no", "everysec", "always") for r in (0, 1)
    )
    (out,) = doc["environment"]["executor"]["groups"]["taken_out"]  # type: ignore[index]
    assert out["group"] == 1 and out["hosts"] == "s1, c1"
    assert "on host s1 (server[1])" in out["why"] and "Dask worker" in out["why"]
    assert "group 1 (s1, c1) taken out at" in " ".join(output.split())
    # s1's server torn down too (after its worker's restart): nothing left set up
    assert not list((tmp_path / "hosts").glob("conf-*"))


def test_groups_are_checked_against_the_roles() -> None:
    base = (
        "[study]\nname='s'\n[benchmark]\ncommand=['true']\n[[pi]]\nname='t'\nsource='wall_time'\n"
        "[cluster]\n{cluster}\n"
    )
    with pytest.raises(SpecError, match=r"groups = 2: role 'server' has 3 hosts, not a multi"):
        parse_spec_text(
            base.format(
                cluster="groups = 2\nroles = {server = ['a', 'b', 'c'], client = ['d', 'e']}"
            )
        )
    with pytest.raises(SpecError, match=r"groups: cuts the hosts of \[cluster.roles\]"):
        parse_spec_text(base.format(cluster="groups = 2\nhosts = ['a', 'b']"))
    # a role's size is one group's: 2 replicas of 4 listed in 2 groups
    sized = (
        "groups = 2\ncounts = {replica = 'n'}\n"
        "roles = {replica = ['a', 'b', 'c', 'd'], client = ['e', 'f']}"
    )
    parse_spec_text(base.format(cluster=sized) + "[params]\nn = 2\n")
    with pytest.raises(SpecError, match=r"from 0 to 2 \(the role's hosts in group 0 of 2: a, b\)"):
        parse_spec_text(base.format(cluster=sized) + "[params]\nn = 3\n")
    # one client per group: nothing to combine
    parse_spec_text(base.format(cluster="groups = 2\nroles = {client = ['e', 'f']}"))


def test_a_run_study_shares_its_rounds_among_the_groups(tmp_path: Path) -> None:
    """`run` asks the executor for as many rounds at once as it has slots: one per
    group; both groups measure, each with its own server set up with [params]."""
    study = _study(tmp_path)
    text = study.read_text()
    sweep = text[text.index("[sweep]") :]
    study.write_text(
        text.replace(sweep, '[params]\nfsync = "no"\n[stop]\nmax_rounds = 6\nmin_rounds = 6\n')
    )
    out = tmp_path / "r.json"
    res = CliRunner().invoke(
        main, ["run", str(study), "--workers", "4", "-q", "--no-overhead", "--json", str(out)]
    )
    assert res.exit_code in (0, 5), res.output
    with Store(tmp_path / "study.assay.db") as st:
        found = st.find_study("groups")
        assert found is not None
        trials = st.trials(found[0])
    assert len(trials) == 6 and all(t.ok for t in trials), [t.error for t in trials]
    assert {t.host for t in trials} == {"c0", "c1"}
    assert all(_said(t, "seen") == "no" for t in trials)
    assert not list((tmp_path / "hosts").glob("conf-*"))  # both servers torn down


def test_the_benchmarks_own_steps_name_their_groups_hosts(tmp_path: Path) -> None:
    """[benchmark] setup, reset and teardown run on each group's measured host with that
    group's hosts in their placeholders (they named every group's before)."""
    study = _study(tmp_path)
    work = tmp_path / "hosts"
    note = (
        "import sys, pathlib; p = pathlib.Path(sys.argv[1], sys.argv[2] + '-' + sys.argv[3]); "
        "p.write_text(p.read_text() + sys.argv[4] + ' ' if p.exists() else sys.argv[4] + ' ')"
    )
    steps = "".join(
        f'{what} = ["{PY}", "-c", "{note}", "{work}", "{what}", "{{host.name}}", '
        '"{hosts.server}"]\n'
        for what in ("setup", "reset", "teardown")
    )
    study.write_text(study.read_text().replace("timeout = 60\n", "timeout = 60\n" + steps, 1))
    code, output, _, trials = _sweep(study)
    assert code in (0, 5), output
    assert len(trials) == 6 and all(t.ok for t in trials), [t.error for t in trials]
    ran = {p.name: p.read_text().split() for p in work.glob("*-c[01]")}
    assert ran["setup-c0"] == ["s0"] and ran["setup-c1"] == ["s1"]
    assert ran["teardown-c0"] == ["s0"] and ran["teardown-c1"] == ["s1"]
    resets = ran.get("reset-c0", []) + ran.get("reset-c1", [])
    assert len(resets) == 6  # one before each trial, on the group that ran it
    assert set(ran.get("reset-c0", [])) <= {"s0"} and set(ran.get("reset-c1", [])) <= {"s1"}
