"""Several measured clients (#42): a measured role with several hosts runs the benchmark
on each of them at once (each with its own host placeholders), and a trial's readings
are theirs joined per PI by ``[cluster] combine`` (a YCSB-style sum of throughputs, the
max of latencies); each host's readings are kept.  Hosts are the workers of a
LocalCluster (``--workers 3``), as in tests/test_roles.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from assay.cli import main
from assay.spec import SpecError, parse_spec_text
from assay.store import Store

PY = sys.executable

# each client says it started, waits (up to 30 s) for the other to have started too (so
# both ran at once), and prints its own throughput and latency
CLIENT = (
    "import sys, time, pathlib; d, i = pathlib.Path(sys.argv[1]), int(sys.argv[2]); "
    "(d / ('started-%d' % i)).touch(); end = time.monotonic() + 30; "
    "[time.sleep(0.01) for _ in iter(lambda: len(list(d.glob('started-*'))) < 2 "
    "and time.monotonic() < end, False)]; "
    "both = len(list(d.glob('started-*'))) == 2; "
    "print('i=%d both=%d tput=%d lat=%d' % (i, both, 100 + 10 * i, 5 + i))"
)

STUDY = """
[study]
name = "clients"

[benchmark]
command = ["{py}", "-c", "{client}", "{dir}", "{{host.index}}"]
reset = ["{py}", "-c", "{reset}", "{dir}"]
timeout = 60

[[pi]]
name = "tput"
source = "regex"
pattern = 'tput=([0-9]+)'
direction = "higher"

[[pi]]
name = "lat"
source = "regex"
pattern = 'lat=([0-9]+)'

[[pi]]
name = "both"
source = "regex"
pattern = 'both=([0-9]+)'

[stop]
max_rounds = 2
min_samples = 1000

[cluster]
measure = "client"
{combine}

[cluster.roles]
server = ["s0"]
client = ["c0", "c1"]
"""

# both clients' resets clear one shared folder at once: either may find a file gone
RESET = (
    "import sys, pathlib; "
    "[p.unlink(missing_ok=True) for p in pathlib.Path(sys.argv[1]).glob('started-*')]"
)
COMBINE = 'combine = { tput = "sum", lat = "max", both = "min" }'


def _study(tmp_path: Path, combine: str = COMBINE) -> Path:
    work = tmp_path / "hosts"
    work.mkdir(exist_ok=True)
    p = tmp_path / "study.toml"
    text = STUDY.format(py=PY, client=CLIENT, reset=RESET, dir=work, combine=combine)
    p.write_text(text.replace("{{", "{").replace("}}", "}"))
    return p


def test_two_clients_run_at_once_and_their_readings_are_joined(tmp_path: Path) -> None:
    study = _study(tmp_path)
    out = tmp_path / "r.json"
    res = CliRunner().invoke(
        main,
        [
            "run",
            str(study),
            "--workers",
            "3",
            "-q",
            "--no-monitor",
            "--no-overhead",
            "--json",
            str(out),
        ],
    )
    assert res.exit_code in (0, 5), res.output
    with Store(tmp_path / "study.assay.db") as st:
        found = st.find_study("clients")
        assert found is not None
        trials = st.trials(found[0])
    assert len(trials) == 2 and all(t.ok for t in trials), [t.error for t in trials]
    for t in trials:
        # both clients ran at once (each saw the other start), each with its own index
        assert t.readings == {"tput": 210.0, "lat": 6.0, "both": 1.0}
        parts = {h.host: h for h in t.host_runs if h.what == "trial" and h.role == "client"}
        assert parts["c0"].info["readings"] == {"tput": 100.0, "lat": 5.0, "both": 1.0}
        assert parts["c1"].info["readings"] == {"tput": 110.0, "lat": 6.0, "both": 1.0}
        assert b"i=1" in parts["c1"].stdout and b"i=0" in t.stdout
        assert t.host == "c0,c1"


def test_several_measured_hosts_need_a_rule_for_every_pi(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as err:
        parse_spec_text(_study(tmp_path, 'combine = { tput = "sum" }').read_text(), "s.toml")
    said = str(err.value)
    assert "the measured role 'client' has 2 hosts" in said and "lat, both" in said


def test_a_rule_for_a_pi_that_does_not_exist_is_refused(tmp_path: Path) -> None:
    text = _study(tmp_path, COMBINE.replace("both", "bth")).read_text()
    with pytest.raises(SpecError, match=r"cluster.combine.bth: not a \[\[pi\]\]"):
        parse_spec_text(text, "s.toml")


def test_combine_enters_the_measurement_hash_only_when_given(tmp_path: Path) -> None:
    one_client = (
        _study(tmp_path, "").read_text().replace('client = ["c0", "c1"]', 'client = ["c0"]')
    )
    base = parse_spec_text(one_client, "s.toml")
    summed = parse_spec_text(
        one_client.replace("[cluster]\n", "[cluster]\n" + COMBINE + "\n"), "s.toml"
    )
    assert base.measurement_hash() != summed.measurement_hash()
    assert json.loads(base.model_dump_json())["cluster"]["combine"] == {}


def test_a_client_that_fails_fails_the_trial_naming_its_host(tmp_path: Path) -> None:
    study = _study(tmp_path)
    failing = CLIENT.replace("end = ", "sys.exit('no route to server') if i == 1 else None; end = ")
    study.write_text(study.read_text().replace(CLIENT, failing))
    res = CliRunner().invoke(
        main, ["run", str(study), "--workers", "3", "-q", "--no-monitor", "--no-overhead"]
    )
    assert res.exit_code != 0
    with Store(tmp_path / "study.assay.db") as st:
        found = st.find_study("clients")
        assert found is not None
        trials = st.trials(found[0])
    assert trials and all(not t.ok and not t.readings for t in trials)
    assert all(t.error.startswith("on host c1: ") for t in trials), trials[0].error
