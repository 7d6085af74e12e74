"""A setting reaches every role (#42): a swept or a variant's value that a role's steps
use sets the role up again (its teardown with the old value, its setup with the new)
before the trial that needs it; a sweep runs the settings that share a role's values
together; each trial measures the server as its setting asks.  Hosts are the workers of
a LocalCluster (``--workers 3``), as in tests/test_roles.py."""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from assay.cli import main
from assay.spec import SpecError, parse_spec_text
from assay.store import Store

PY = sys.executable

# each server writes its setting where the client reads it; its teardown removes it
# and logs what it tore down; the client prints the servers' settings as it sees them
STUDY = """
[study]
name = "roles-settings"

[benchmark]
command = ["{py}", "-c", '''
import sys
from pathlib import Path
d = Path(sys.argv[1])
seen = sorted(p.read_text() for p in d.glob("conf-*"))
print("seen=" + ",".join(seen))
print("n=%d" % len(set(seen)))
''', "{dir}"]
timeout = 60

[[pi]]
name = "n"
source = "regex"
pattern = 'n=([0-9]+)'

[benchmark.roles.server]
setup = ["{py}", "-c", "{setup}", "{dir}", "{{host.name}}", "{{fsync}}"]
teardown = ["{py}", "-c", "{teardown}", "{dir}", "{{host.name}}", "{{fsync}}"]

[cluster.roles]
server = ["s0", "s1"]
client = ["c"]
{design}
"""

SETUP = (
    "import sys, pathlib; d, name, v = sys.argv[1:]; p = pathlib.Path(d, 'conf-' + name); "
    "sys.exit('still set up: ' + p.read_text()) if p.exists() else p.write_text(v); "
    "open(pathlib.Path(d, 'log'), 'a').write('up %s %s' % (name, v) + chr(10))"
)
TEARDOWN = (
    "import sys, pathlib; d, name, v = sys.argv[1:]; pathlib.Path(d, 'conf-' + name).unlink(); "
    "open(pathlib.Path(d, 'log'), 'a').write('down %s %s' % (name, v) + chr(10))"
)

SWEEP = """
[sweep]
repetitions = 2
[sweep.params]
fsync = ["no", "everysec", "always"]
"""

COMPARE = """
[params]
fsync = "no"
[[variant]]
name = "no"
[[variant]]
name = "always"
params = { fsync = "always" }
[stop]
max_rounds = 3
min_samples = 1000
sequential = "every-cycle"
"""


def _study(tmp_path: Path, design: str) -> Path:
    work = tmp_path / "hosts"
    work.mkdir()
    p = tmp_path / "study.toml"
    text = STUDY.format(
        py=PY,
        dir=work,
        setup=SETUP.replace('"', '\\"'),
        teardown=TEARDOWN.replace('"', '\\"'),
        design=design,
    )
    p.write_text(text.replace("{{", "{").replace("}}", "}"))
    return p


def _log(study: Path) -> list[str]:
    return (study.parent / "hosts" / "log").read_text().splitlines()


def _trials(study: Path) -> list[tuple[dict[str, object], str]]:
    """Each trial's setting and what its client saw, in the order they ran."""
    with Store(study.parent / "study.assay.db") as st:
        found = st.find_study("roles-settings")
        assert found is not None
        trials = sorted(st.trials(found[0]), key=lambda t: t.started or 0.0)
        return [(t.setting, t.stdout.decode().split()[0]) for t in trials]


def test_a_swept_server_setting_reaches_the_servers_set_up_again_per_setting(
    tmp_path: Path,
) -> None:
    study = _study(tmp_path, SWEEP)
    out = tmp_path / "r.json"
    res = CliRunner().invoke(
        main, ["sweep", str(study), "--workers", "3", "-q", "--no-monitor", "--json", str(out)]
    )
    assert res.exit_code in (0, 5), res.output
    trials = _trials(study)
    assert len(trials) == 6
    # every trial measured both servers as its setting asked (before: refused)
    for setting, seen in trials:
        assert seen == f"seen={setting['fsync']},{setting['fsync']}", trials
    # a setting's repetitions ran together: two changes of setting, each one teardown
    # (with the old value) and one setup (with the new) per server
    order = [s["fsync"] for s, _ in trials]
    assert sum(a != b for a, b in itertools.pairwise(order)) == 2, order
    log = _log(study)
    ups = [line for line in log if line.startswith("up s0")]
    assert [u.split()[2] for u in ups] == [order[0], order[2], order[4]]
    assert log.count(f"down s0 {order[-1]}") == 1 and log[-1].startswith("down")
    assert not list((study.parent / "hosts").glob("conf-*"))  # all torn down at the end
    doc = json.loads(out.read_text())
    reconf = doc["environment"]["executor"]["reconfigurations"]
    assert reconf["count"] == 2 and reconf["roles"] == {"server": 2}


@pytest.mark.parametrize(
    "design",
    [
        COMPARE,
        # #61: a value only the variants give and only role steps use (it was refused
        # unless [params] had it too)
        COMPARE.replace(
            'fsync = "no"\n[[variant]]\nname = "no"\n',
            '[[variant]]\nname = "no"\nparams = { fsync = "no" }\n',
        ),
    ],
    ids=["in-params", "variants-only"],
)
def test_a_variants_server_setting_reaches_its_trials(tmp_path: Path, design: str) -> None:
    assert ('[params]\nfsync = "no"' in design) == (design == COMPARE)
    study = _study(tmp_path, design)
    res = CliRunner().invoke(main, ["compare", str(study), "--workers", "3", "-q", "--no-monitor"])
    assert res.exit_code in (0, 5), res.output
    trials = _trials(study)
    assert len(trials) == 6
    # before #42 the "always" variant ran on servers set up with [params]' "no"
    for setting, seen in trials:
        assert seen == f"seen={setting['fsync']},{setting['fsync']}", trials
    # interleaved, not grouped: each switch of variant sets the servers up again
    switches = sum(a[0]["fsync"] != b[0]["fsync"] for a, b in itertools.pairwise(trials))
    assert switches >= 1
    assert sum(line.startswith("up s0") for line in _log(study)) == switches + 1


def test_a_role_value_some_variant_lacks_is_refused() -> None:
    text = (
        STUDY.format(
            py=PY, dir="/tmp", setup="x", teardown="x", design=COMPARE.replace('fsync = "no"\n', "")
        )
        .replace("{{", "{")
        .replace("}}", "}")
    )
    with pytest.raises(SpecError, match=r"variant\[0\] \('no'\): \[benchmark.roles.server\] setup"):
        parse_spec_text(text, "s.toml")


def test_an_order_tests_value_in_a_role_step_is_still_refused() -> None:
    design = """
[params]
fsync = "no"
[order]
[[test]]
name = "a"
[[test]]
name = "b"
params = { fsync = "always" }
"""
    text = STUDY.format(py=PY, dir="/tmp", setup="x", teardown="x", design=design)
    text = text.replace("{{", "{").replace("}}", "}")
    with pytest.raises(SpecError, match=r"\[benchmark.roles.server\] setup uses '\{fsync\}'"):
        parse_spec_text(text, "s.toml")


def test_a_knob_only_a_role_step_uses_is_a_knob() -> None:
    design = """
[knobs]
samples = 10
[[knob]]
name = "fsync"
type = "categorical"
values = ["no", "always"]
default = "no"
"""
    text = STUDY.format(py=PY, dir="/tmp", setup="x", teardown="x", design=design)
    spec = parse_spec_text(text.replace("{{", "{").replace("}}", "}"), "s.toml")
    assert spec.per_trial_names() == {"fsync"}


COUNTED = """
[study]
name = "roles-settings"

[benchmark]
command = ["{py}", "-c", '''
import sys
from pathlib import Path
up = sorted(p.name for p in Path(sys.argv[1]).glob("conf-*"))
print("up=" + ",".join(up) + " named=" + sys.argv[2])
print("n=%d" % len(up))
''', "{dir}", "{{hosts.server}}"]
timeout = 60

[[pi]]
name = "n"
source = "regex"
pattern = 'n=([0-9]+)'

[benchmark.roles.server]
setup = ["{py}", "-c", "{setup}", "{dir}", "{{host.name}}", "{{nodes}}"]
teardown = ["{py}", "-c", "{teardown}", "{dir}", "{{host.name}}", "{{nodes}}"]

[cluster]
counts = {{ server = "nodes" }}

[cluster.roles]
server = ["s0", "s1"]
client = ["c"]

[sweep]
repetitions = 2
[sweep.params]
nodes = [1, 2]
"""


def test_a_roles_size_is_a_parameter_its_first_hosts_take_part(tmp_path: Path) -> None:
    work = tmp_path / "hosts"
    work.mkdir()
    study = tmp_path / "study.toml"
    text = COUNTED.format(
        py=PY, dir=work, setup=SETUP.replace('"', '\\"'), teardown=TEARDOWN.replace('"', '\\"')
    )
    study.write_text(text.replace("{{", "{").replace("}}", "}"))
    res = CliRunner().invoke(main, ["sweep", str(study), "--workers", "3", "-q", "--no-monitor"])
    assert res.exit_code in (0, 5), res.output
    trials = _trials(study)
    assert len(trials) == 4
    with Store(study.parent / "study.assay.db") as st:
        found = st.find_study("roles-settings")
        assert found is not None
        stored = {t.seq: t for t in st.trials(found[0])}
    for t in stored.values():
        nodes = int(t.setting["nodes"])
        servers = ["s0", "s1"][:nodes]
        assert t.readings["n"] == nodes  # exactly that many servers were up
        assert t.stdout.decode().split() == [
            "up=" + ",".join(f"conf-{s}" for s in servers),
            "named=" + ",".join(servers),
            f"n={nodes}",
        ]
        parts = {h.host for h in t.host_runs if h.what == "trial"}
        assert parts == {"c", *servers}  # an idle host takes no part in the trial
    # s1 was set up only for the trials of 2 nodes, and torn down after them
    log = _log(study)
    assert log.count("up s1 2") == 1 and log.count("down s1 2") == 1
    assert not list(work.glob("conf-*"))


def test_a_role_size_beyond_its_hosts_is_refused_with_the_numbers() -> None:
    text = COUNTED.format(py=PY, dir="/tmp", setup="x", teardown="x").replace(
        "nodes = [1, 2]", "nodes = [1, 3]"
    )
    with pytest.raises(SpecError, match=r"nodes = 3: expected a whole number of hosts from 0 to 2"):
        parse_spec_text(text.replace("{{", "{").replace("}}", "}"), "s.toml")
