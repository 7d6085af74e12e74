"""Trials on a Dask worker record the host by name and address (#41: hosts cloned from
one image share a hostname, and a report said "3 workers on host vm")."""

from __future__ import annotations

import platform
from pathlib import Path

import pytest
from click.testing import CliRunner

from assay.cli import main
from assay.execute.dask_executor import worker_host
from assay.store import Store

pytest.importorskip("distributed")


def test_outside_a_worker_the_host_is_its_name() -> None:
    assert worker_host() == platform.node()


def test_trials_on_workers_record_name_and_address(tmp_path: Path) -> None:
    store = tmp_path / "w.assay.db"
    res = CliRunner().invoke(
        main,
        ["run", "--workers", "2", "-r", "4", "--no-overhead", "--no-monitor", "-q",
         "--store", str(store), "--", "true"],
    )  # fmt: skip
    assert res.exit_code in (0, 5), res.output
    with Store(store, read_only=True) as st:
        (name,) = st.study_names()
        found = st.find_study(name)
        assert found is not None
        hosts = {t.host for t in st.trials(found[0])}
    assert hosts == {f"{platform.node()} (127.0.0.1)"}
