"""A sweep and two studies at once on hosts as a user's CloudLab nodes are: network
namespaces with their own addresses and sshd, one shared hostname (#41, items 2 and 9).
Hosts made and removed here (tests/netns_hosts.py); skipped where namespaces (or a
cgroup CPU controller, for the slow host) cannot be made."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from assay.store import Store
from netns_hosts import Hosts, cpu_capped, netns_hosts, why_not

# a fixed amount of CPU work whatever {n} is: the parameter has no effect, only the
# host that runs a trial can change its time
STUDY = """
[study]
name = "{name}"
[benchmark]
command = ["sh", "-c", "i=0; while [ $i -lt 60000 ]; do i=$((i+1)); done", "sh", "{{n}}"]
[sweep]
repetitions = {repetitions}
[sweep.params]
n = [1, 2, 3, 4]
[cluster]
hosts = {hosts}
{keys}
"""


def _needs_hosts() -> None:
    reason = why_not()
    if reason is not None:
        pytest.skip(reason)


def _study(path: Path, name: str, hosts: Hosts, addresses: list[str], repetitions: int) -> None:
    path.write_text(
        STUDY.format(
            name=name, hosts=json.dumps(addresses), keys=hosts.cluster_toml(),
            repetitions=repetitions,
        )
    )  # fmt: skip


def _address(label: str | None) -> str:
    return (label or "").split(" ")[-1].strip("()")


def test_a_sweep_on_hosts_one_of_them_slow_names_the_slow_host(tmp_path: Path) -> None:
    """#41, item 2: with one host 7.7x slower the sweep said "No parameter has a
    significant effect ... any setting is representative" and nothing about hosts."""
    _needs_hosts()
    with netns_hosts(3, tmp_path) as hosts:
        try:
            capped = cpu_capped(hosts, 2, share=0.1)
            capped.__enter__()
        except OSError as exc:
            pytest.skip(f"no cgroup CPU controller to slow a host: {exc}")
        try:
            study = tmp_path / "spread.toml"
            _study(study, "spread", hosts, hosts.addresses, repetitions=4)
            done = subprocess.run(
                [sys.executable, "-m", "assay", "sweep", study.name, "--json", "r.json"],
                cwd=tmp_path, capture_output=True, text=True, timeout=600,
            )  # fmt: skip
        finally:
            capped.__exit__(None, None, None)
        assert done.returncode in (0, 5), done.stderr
        with Store(tmp_path / "spread.assay.db") as st:
            found = st.find_study("spread")
            assert found is not None
            trials = st.trials(found[0])
        assert all(t.ok for t in trials)
        ran = {_address(t.host) for t in trials}  # hosts stored as "vm (10.x.y.z)"
        assert hosts.addresses[2] in ran and len(ran) >= 2
        doc = json.loads((tmp_path / "r.json").read_text())
        (warning,) = [w for w in doc["warnings"] if "the hosts give different results" in w]
        assert "the sweep mixes machines" in warning
        assert hosts.addresses[2] in warning
        assert "the hosts give different results" in done.stdout + done.stderr
        # and no "any setting is representative": the sweep draws no conclusion
        assert doc["summary"]["recommendation"].startswith("No conclusion: the hosts give")
        assert "any setting is representative" not in done.stdout
        assert hosts.left() == {}  # nothing of the study on any host


def test_two_studies_at_once_on_disjoint_hosts_both_finish(tmp_path: Path) -> None:
    """#41, item 9: two studies at once on disjoint host groups; one stopped once with
    "its Dask worker ... is gone" (a single poll of the scheduler listed no workers).
    A worker is now taken for gone only from Dask's events or several checks in a row."""
    _needs_hosts()
    with netns_hosts(4, tmp_path) as hosts:
        runs = []
        for i, group in enumerate((hosts.addresses[:2], hosts.addresses[2:])):
            work = tmp_path / f"study{i}"
            work.mkdir()
            _study(work / "s.toml", f"s{i}", hosts, group, repetitions=6)
            runs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "assay", "sweep", "s.toml", "-q"],
                    cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                )
            )  # fmt: skip
        errors = [p.communicate(timeout=600)[1] for p in runs]
        for p, err in zip(runs, errors, strict=True):
            assert p.returncode in (0, 5), err
            assert "gone" not in err, err
        for i, group in enumerate((hosts.addresses[:2], hosts.addresses[2:])):
            with Store(tmp_path / f"study{i}" / "s.assay.db") as st:
                found = st.find_study(f"s{i}")
                assert found is not None
                trials = st.trials(found[0])
            assert trials and all(t.ok for t in trials)
            assert {_address(t.host) for t in trials} <= set(group)  # each on its own hosts only
        assert hosts.left() == {}  # nothing of the study on any host
