"""A host pool packed by each trial's need (#42): ``[cluster] pack = true`` gives a
trial the hosts its setting needs (its ``counts``; one host of a role without one), and
runs as many trials at once as the roles' hosts allow.  With two clients and two
servers, trials of one server run two at once, each on its own server; a trial of two
servers takes both, after the groups set up on them are torn down.  Hosts are the
workers of a LocalCluster (``--workers 4``), as in tests/test_roles_groups.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from assay.cli import main
from assay.spec import SpecError, parse_spec_text
from assay.store import Store, TrialRecord
from test_roles_settings import SETUP, TEARDOWN  # the servers' steps: the same

PY = sys.executable

# each client reads what its servers were set up with; a client of one server marks
# that it is in flight and waits (up to 20 s) for another: "together=1" only when two
# trials of one server run at once
STUDY = """
[study]
name = "pack"

[benchmark]
command = ["{py}", "-c", '''
import sys, time
from pathlib import Path
d, me, servers = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
print("servers=" + servers)
print("seen=" + ",".join(Path(d, "conf-" + s).read_text() for s in servers.split(",")))
together = 0
if "," not in servers:
    Path(d, "inflight-" + me).touch()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if [p for p in d.glob("inflight-*") if p.name != "inflight-" + me]:
            together = 1
            break
        time.sleep(0.05)
    time.sleep(0.3)  # the other sees this one too
    Path(d, "inflight-" + me).unlink()
print("together=%d" % together)
''', "{dir}", "{{host.name}}", "{{hosts.server}}"]
timeout = 60

[[pi]]
name = "together"
source = "regex"
pattern = 'together=([0-9]+)'

[benchmark.roles.server]
setup = ["{py}", "-c", "{setup}", "{dir}", "{{host.name}}", "{{nodes}}"]
teardown = ["{py}", "-c", "{teardown}", "{dir}", "{{host.name}}", "{{nodes}}"]

[cluster]
pack = true
counts = {{ server = "nodes" }}

[cluster.roles]
client = ["c0", "c1"]
server = ["s0", "s1"]

[sweep]
repetitions = 2
[sweep.params]
nodes = [1, 2]
"""


def _study(tmp_path: Path) -> Path:
    work = tmp_path / "hosts"
    work.mkdir()
    p = tmp_path / "study.toml"
    text = STUDY.format(
        py=PY,
        dir=work,
        setup=SETUP.replace('"', '\\"'),
        teardown=TEARDOWN.replace('"', '\\"'),
    )
    p.write_text(text.replace("{{", "{").replace("}}", "}"))
    return p


def _study_run(study: Path, command: str) -> tuple[Any, list[TrialRecord], dict[str, Any]]:
    """``assay COMMAND study --workers 4``: its outcome, the stored trials, the JSON."""
    out = study.parent / "r.json"
    res = CliRunner().invoke(main, [command, str(study), "--workers", "4", "--json", str(out)])
    assert res.exit_code in (0, 5), res.output
    with Store(study.parent / "study.assay.db") as st:
        found = st.find_study("pack")
        assert found is not None
        trials = st.trials(found[0])
    return res, trials, json.loads(out.read_text())


def _said(t: TrialRecord, key: str) -> str:
    lines = t.stdout.decode().splitlines()
    return next(line.split("=", 1)[1] for line in lines if line.startswith(key + "="))


def test_trials_take_the_hosts_their_setting_needs_and_small_ones_run_at_once(
    tmp_path: Path,
) -> None:
    study = _study(tmp_path)
    res, trials, doc = _study_run(study, "sweep")
    assert len(trials) == 4 and all(t.ok for t in trials), [t.error for t in trials]
    for t in trials:
        servers = _said(t, "servers").split(",")
        nodes = int(str(t.setting["nodes"]))
        assert len(servers) == nodes  # {hosts.server}: the trial's own servers
        assert _said(t, "seen") == ",".join([str(nodes)] * nodes)  # set up for its setting
        assert {h.host for h in t.host_runs if h.what == "trial"} == {t.host, *servers}
    small = [t for t in trials if t.setting["nodes"] == 1]
    # two trials of one server ran at once, on their own clients and servers
    assert all(t.readings["together"] == 1.0 for t in small)
    assert {t.host for t in small} == {"c0", "c1"}
    assert {_said(t, "servers") for t in small} == {"s0", "s1"}
    # a server was never set up twice (its setup refuses), each torn down as often as
    # set up: the groups of one server torn down before the trial of two, and back
    assert not list((tmp_path / "hosts").glob("conf-*"))
    log = (tmp_path / "hosts" / "log").read_text().splitlines()
    ups = [line for line in log if line.startswith("up ")]
    assert len(ups) == sum(line.startswith("down ") for line in log)
    assert sorted(ups).count("up s1 2") >= 1 and sorted(ups).count("up s1 1") >= 1
    groups = doc["environment"]["executor"]["groups"]
    assert groups["packed"] == 2
    assert groups["hosts"] == [
        ["c0 (client[0])", "s0 (server[0])"],
        ["c1 (client[1])", "s1 (server[1])"],
        ["c0 (client[0])", "s0 (server[0])", "s1 (server[1])"],
    ]
    text = " ".join(res.output.split())
    assert "trials packed onto 3 groups of hosts by the hosts each needs, up to 2 at once" in text


def test_pack_is_checked_against_the_roles() -> None:
    base = (
        "[study]\nname='s'\n[benchmark]\ncommand=['true']\n{more}[[pi]]\nname='t'\n"
        "source='wall_time'\n[cluster]\n{cluster}\n"
    )
    roles = "roles = {client = ['a', 'b'], server = ['c', 'd', 'e']}"
    # a role's size is the whole role's under pack: 3 servers of 3
    spec = parse_spec_text(
        base.format(more="", cluster=f"pack = true\ncounts = {{server = 'n'}}\n{roles}")
        + "[sweep.params]\nn = [1, 3]\n"
    )
    assert [sorted(g.hosts()) for g in spec.host_groups()] == [
        ["a", "c"],
        ["b", "d"],
        ["a", "c", "d", "e"],
    ]
    with pytest.raises(SpecError, match=r"n = 4: expected a whole number of hosts from 0 to 3"):
        parse_spec_text(
            base.format(more="", cluster=f"pack = true\ncounts = {{server = 'n'}}\n{roles}")
            + "[params]\nn = 4\n"
        )
    # a number sizes a role too: two clients per trial, their readings combined
    two = f"pack = true\ncounts = {{client = 2}}\ncombine = {{t = 'max'}}\n{roles}"
    assert [sorted(g.hosts()) for g in parse_spec_text(base.format(more="", cluster=two))
            .host_groups()] == [["a", "b", "c"]]  # fmt: skip
    with pytest.raises(SpecError, match=r"client = True: expected a parameter's name or"):
        parse_spec_text(
            base.format(more="", cluster=f"pack = true\ncounts = {{client = true}}\n{roles}")
        )
    with pytest.raises(SpecError, match=r"groups = 2 and pack = true: choose one"):
        parse_spec_text(base.format(more="", cluster="pack = true\ngroups = 2\n" + roles))
    with pytest.raises(SpecError, match=r"pack: gives each trial the hosts of \[cluster.roles\]"):
        parse_spec_text(base.format(more="", cluster="pack = true\nhosts = ['a']"))
    # [benchmark]'s own setup would run once per study: a group's hosts change
    with pytest.raises(SpecError, match=r"put the measured hosts' setup in \[benchmark.roles.cli"):
        parse_spec_text(base.format(more="setup = ['true']\n", cluster="pack = true\n" + roles))


def test_a_comparisons_cycle_of_two_needs_runs_on_a_group_of_the_larger(tmp_path: Path) -> None:
    """A cycle runs on one group: variants of one and two servers take the group of two,
    the one-server variant its first server, set up again at each switch."""
    study = _study(tmp_path)
    text = study.read_text()
    design = (
        '[params]\nnodes = 1\n[[variant]]\nname = "one"\n[[variant]]\nname = "two"\n'
        "params = { nodes = 2 }\n[stop]\nmax_rounds = 3\nmin_samples = 1000\n"
        'sequential = "every-cycle"\n'
    )
    text = text.replace("time.monotonic() + 20", "time.monotonic()")  # no other trial at once
    study.write_text(text[: text.index("[sweep]")] + design)
    _, trials, _ = _study_run(study, "compare")
    assert len(trials) == 6 and all(t.ok for t in trials), [t.error for t in trials]
    for t in trials:
        nodes = int(str(t.setting["nodes"]))
        assert t.host == "c0"  # the group of two servers': c0, s0, s1
        assert _said(t, "servers") == ",".join(["s0", "s1"][:nodes])
        assert _said(t, "seen") == ",".join([str(nodes)] * nodes)
    assert not list((tmp_path / "hosts").glob("conf-*"))


# s1 kills its own Dask worker (the command's parent) in every trial
KILL_ON_S1 = (
    "import os, sys, signal; "
    "os.kill(os.getppid(), signal.SIGKILL) if sys.argv[1] == 's1' else None; "
    "print('serving', flush=True)"
)


def test_a_host_that_left_takes_out_its_groups_and_the_trial_runs_on_another(
    tmp_path: Path,
) -> None:
    study = _study(tmp_path)
    text = study.read_text().replace("time.monotonic() + 20", "time.monotonic()")
    command = KILL_ON_S1.replace('"', '\\"')
    text = text.replace(
        "[cluster]\n",
        f'command = ["{PY}", "-c", "{command}", "{{host.name}}"]\nready = "serving"\n\n'
        '[cluster]\non_host_failure = "continue"\n',
    )
    sweep = text[text.index("[sweep]") :]  # one server each: x is not a server setting
    text = text.replace(sweep, '[params]\nnodes = 1\n[sweep]\n[sweep.params]\nx = ["a", "b"]\n')
    study.write_text(text)
    res, trials, doc = _study_run(study, "sweep")
    # every planned trial kept once, each ok: the one cut off ran again on c0, s0
    assert len(trials) == 6 and all(t.ok for t in trials), [t.error for t in trials]
    assert sorted((str(t.setting["x"]), t.setting["repetition"]) for t in trials) == [
        (x, r) for x in ("a", "b") for r in range(3)
    ]
    assert {t.host for t in trials} == {"c0"}  # s1 ends its worker in every trial
    executor = doc["environment"]["executor"]
    taken = executor["groups"]["taken_out"][0]
    assert taken["hosts"] == "c1, s1" and "on host s1 (server[1])" in taken["why"]
    assert "group 1 (c1, s1) taken out at" in " ".join(res.output.split())
    # s1's server torn down too (after its worker's restart): nothing left set up
    assert not list((tmp_path / "hosts").glob("conf-*"))
