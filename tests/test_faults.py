"""``[[fault]]`` (#63): something done to a host of a role at a set time inside a trial
and undone after it, on a LocalCluster of workers standing for hosts (as
tests/test_roles.py): the study file's checks, the fault's and restore's runs stored with
the trial on the named host only, a fault that fails failing its trial, and a trial that
ends before the fault's time doing nothing to the host."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from assay.cli import main
from assay.rolespec import seconds
from assay.spec import SpecError, parse_spec_text
from assay.store import Store, TrialRecord

PY = sys.executable
NOTE = (
    "import sys, pathlib, time; pathlib.Path(sys.argv[1], sys.argv[2]).write_text(str(time.time()))"
)

STUDY = """
[study]
name = "faults"

[benchmark]
command = ["{py}", "-c", "import time; time.sleep({sleep}); print('done')"]
timeout = 60

[stop]
max_rounds = {rounds}
min_samples = 1000

{variants}
[[fault]]
role = "server"
host = {host}
at = {at}
{duration}
action = "stop"
{fault_variants}

[benchmark.roles.server]
setup = ["true"]
fault = ["{py}", "-c", "{note}", "{dir}", "fault-{{host.name}}-{{fault.action}}"]
restore = {restore}

[cluster.roles]
server = ["s0", "s1"]
client = ["c"]
"""


def _study(
    tmp_path: Path, *, at: str = "0.2", duration: str = "duration = 0.2", host: str = "1",
    sleep: float = 1.5, rounds: int = 2, restore: str | None = None, variants: str = "",
    fault_variants: str = "",
) -> Path:  # fmt: skip
    work = tmp_path / "hosts"
    work.mkdir(exist_ok=True)
    note = NOTE.replace('"', '\\"')
    restore = restore or json.dumps([PY, "-c", NOTE, str(work), "restore-{host.name}"])
    text = STUDY.format(
        py=PY, sleep=sleep, rounds=rounds, host=host, at=at, duration=duration, note=note,
        dir=work, restore=restore, variants=variants, fault_variants=fault_variants,
    ).replace("{{", "{").replace("}}", "}")  # fmt: skip
    path = tmp_path / "study.toml"
    path.write_text(text)
    return path


def _run(study: Path, command: str = "run") -> tuple[int, str, list[TrialRecord]]:
    res = CliRunner().invoke(main, [command, str(study), "--workers", "3", "-q", "--no-overhead"])
    with Store(study.parent / "study.assay.db") as st:
        found = st.find_study("faults")
        trials = st.trials(found[0]) if found else []
    return res.exit_code, res.output, trials


def test_the_fault_and_its_restore_run_on_the_named_host_in_every_trial(tmp_path: Path) -> None:
    code, output, trials = _run(_study(tmp_path))
    assert code in (0, 5), output
    assert len(trials) == 2 and all(t.ok for t in trials), [t.error for t in trials]
    for t in trials:
        runs = {h.what: h for h in t.host_runs if h.what in ("fault", "restore")}
        assert set(runs) == {"fault", "restore"}
        fault, restore = runs["fault"], runs["restore"]
        assert fault.host == restore.host == "s1" and fault.ok and restore.ok
        assert fault.info["action"] == "stop" and fault.info["fired"] is True
        assert fault.info["at_s"] == 0.2 and fault.info["duration_s"] == 0.2
        # the fault waited for its time; the restore came after it, at least its
        # duration later (both count from the measured command's start)
        assert fault.info["offset_s"] >= 0.2
        assert restore.info["offset_s"] >= fault.info["offset_s"] + 0.2
        assert fault.started is not None and restore.started is not None
        assert restore.started > fault.started
    work = tmp_path / "hosts"
    assert sorted(p.name for p in work.iterdir()) == ["fault-s1-stop", "restore-s1"]


def test_every_host_of_the_role_and_a_restore_at_the_trial_end(tmp_path: Path) -> None:
    code, output, trials = _run(_study(tmp_path, host='"all"', duration="", rounds=1))
    assert code in (0, 5), output
    (t,) = trials
    faults = sorted(h.host for h in t.host_runs if h.what == "fault")
    restores = sorted(h.host for h in t.host_runs if h.what == "restore")
    assert faults == restores == ["s0", "s1"]
    assert all(h.info["duration_s"] is None for h in t.host_runs if h.what == "fault")


def test_a_trial_that_ends_before_the_fault_leaves_the_host_alone(tmp_path: Path) -> None:
    code, output, trials = _run(_study(tmp_path, at="50", duration="", sleep=0.05, rounds=1))
    assert code in (0, 5), output
    (t,) = trials
    assert t.ok
    (fault,) = [h for h in t.host_runs if h.what == "fault"]
    assert fault.info["fired"] is False and not [h for h in t.host_runs if h.what == "restore"]
    assert not list((tmp_path / "hosts").iterdir())


def test_a_fault_that_fails_fails_its_trial_naming_the_host(tmp_path: Path) -> None:
    failing = json.dumps([PY, "-c", "import sys; sys.exit('cannot continue the member')"])
    code, _, trials = _run(_study(tmp_path, restore=failing, rounds=1))
    assert code != 0
    assert trials and not trials[0].ok
    assert "s1 (server[1])" in trials[0].error and "restore command" in trials[0].error
    assert "cannot continue the member" in trials[0].error


def test_a_fault_only_in_the_variants_it_names(tmp_path: Path) -> None:
    variants = '[[variant]]\nname = "calm"\n\n[[variant]]\nname = "faulty"\n'
    study = _study(tmp_path, variants=variants, fault_variants='variants = ["faulty"]',
                   rounds=1, sleep=0.8)  # fmt: skip
    res = CliRunner().invoke(
        main,
        ["compare", str(study), "--workers", "3", "-q", "--no-overhead", "--max-rounds", "2"],
    )
    assert res.exit_code in (0, 5), res.output
    with Store(study.parent / "study.assay.db") as st:
        found = st.find_study("faults")
        assert found is not None
        trials = st.trials(found[0])
    assert trials
    for t in trials:
        faulted = any(h.what == "fault" for h in t.host_runs)
        assert faulted == (t.setting["variant"] == "faulty"), t.setting


# -- the study file -------------------------------------------------------------------------
BASE = """
[study]
name = "f"
[benchmark]
command = ["true"]
timeout = 30
[benchmark.roles.server]
fault = ["kill", "{host.name}", "{fault.action}"]
restore = ["start", "{host.name}"]
[cluster.roles]
server = ["s0", "s1"]
client = ["c"]
"""


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        ('role = "db"\nat = 1\naction = "kill"', "fault[0].role: expected one of server, client"),
        ('role = "client"\nat = 1\naction = "kill"', "is the measured role"),
        ('role = "server"\nhost = 2\nat = 1\naction = "kill"', "server has 2 host(s) (0 to 1)"),
        ('role = "server"\nat = 25\nduration = 6\naction = "kill"', "the trial's timeout"),
        ('role = "server"\nat = 1\naction = "kill"\nvariants = ["x"]', "x is no [[variant]]"),
        ('role = "server"\nat = 1\naction = "Kill -9"', "one lowercase word"),
        ('role = "server"\nat = "soon"\naction = "kill"', "expected seconds"),
        ('role = "server"\nat = 1\nduration = 0\naction = "kill"', "a positive time"),
        ('role = "server"\nhost = "leader"\nat = 1\naction = "kill"', 'or "all"'),
    ],
)  # fmt: skip
def test_the_study_file_checks_its_faults(fault: str, message: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_spec_text(BASE + "[[fault]]\n" + fault + "\n", "f.toml")
    assert message in " ".join(str(err.value).split())


def test_a_role_needs_both_steps_and_the_fault_placeholders_stay_in_them() -> None:
    one = BASE.replace('restore = ["start", "{host.name}"]\n', "")
    with pytest.raises(SpecError, match="fault and restore: give both"):
        parse_spec_text(one, "f.toml")
    none = BASE.replace('fault = ["kill", "{host.name}", "{fault.action}"]\n', "").replace(
        'restore = ["start", "{host.name}"]\n', 'setup = ["true"]\n'
    )
    with pytest.raises(SpecError, match="has no fault and restore steps"):
        parse_spec_text(none + '[[fault]]\nrole = "server"\nat = 1\naction = "kill"\n', "f.toml")
    leaked = BASE.replace('command = ["true"]', 'command = ["echo", "{fault.action}"]')
    with pytest.raises(SpecError, match=r"fault\.action"):
        parse_spec_text(leaked, "f.toml")
    spec = parse_spec_text(BASE + '[[fault]]\nrole = "server"\nat = "1.5s"\naction = "kill"\n',
                           "f.toml")  # fmt: skip
    assert spec.faults[0].at == 1.5 and spec.faults[0].host == 0


def test_durations() -> None:
    assert seconds("250ms", "at") == 0.25 and seconds(" 2 s ", "at") == 2.0
    with pytest.raises(ValueError, match="expected seconds"):
        seconds(True, "at")


def test_the_report_draws_each_trials_series_with_its_fault(tmp_path: Path) -> None:
    from assay.report.html import _fault_series
    from assay.store import HostRun
    from assay.studies.faults import fault_timelines

    def trial(seq: int, variant: str, faulted: bool) -> TrialRecord:
        series = {"t_s": [1, 2, 3, 4], "ops_per_s": [100, 100, 5 if faulted else 100, 90]}
        runs = [
            HostRun("fault", "member", "m1", 1, "ok",
                    info={"action": "kill", "fired": True, "offset_s": 2.0}),
            HostRun("restore", "member", "m1", 1, "ok", info={"offset_s": 3.5}),
        ] if faulted else []  # fmt: skip
        return TrialRecord(seq=seq, status="ok", setting={"variant": variant},
                           stdout=json.dumps({"report": {"series": series}}).encode(),
                           host_runs=runs)  # fmt: skip

    lines = fault_timelines([trial(0, "calm", False), trial(1, "killed", True)])
    assert [(x.label, x.faults, x.restores) for x in lines] == [
        ("calm", [], []),
        ("killed", [("kill", "m1", 2.0)], [3.5]),
    ]
    assert fault_timelines([trial(0, "calm", False)]) == []  # no fault: no plot
    out = tmp_path / "f.svg"
    _fault_series(lines, out)
    svg = out.read_text()
    assert "dashed: the fault (kill)" in svg and "killed" in svg and "calm" in svg


def test_the_plan_says_what_a_fault_does() -> None:
    from assay.studies.plan import hosts_needed

    spec = parse_spec_text(
        BASE + '[[fault]]\nrole = "server"\nhost = "all"\nat = 3\nduration = 2\naction = "kill"\n',
        "f.toml",
    )
    assert hosts_needed(spec)[-1] == (
        "fault: kill on every host of role server, 3 s into every trial, for 2 s"
    )
