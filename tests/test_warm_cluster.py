"""A warm cluster for many studies (#41, item 12), as docs/clusters.md sets it up: a CA
and a certificate made with openssl, a TLS scheduler and one worker started by hand on
loopback, and two studies run on it with ``--cluster`` and the client's credentials in
Dask's configuration; a study without them is refused."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

CURVE = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tls(d: Path) -> list[str]:
    """The docs' three openssl commands; the scheduler's and worker's TLS options."""
    run = {"cwd": d, "check": True, "capture_output": True}
    subprocess.run(["openssl", "req", "-x509", *CURVE, "-days", "1", "-subj", "/CN=assay-ca",
                    "-keyout", "ca.key", "-out", "ca.pem"], **run)  # type: ignore[call-overload]  # fmt: skip
    subprocess.run(["openssl", "req", *CURVE, "-subj", "/CN=assay-cluster",
                    "-keyout", "cluster.key", "-out", "cluster.csr"], **run)  # type: ignore[call-overload]  # fmt: skip
    subprocess.run(["openssl", "x509", "-req", "-in", "cluster.csr", "-CA", "ca.pem",
                    "-CAkey", "ca.key", "-CAcreateserial", "-days", "1",
                    "-out", "cluster.pem"], **run)  # type: ignore[call-overload]  # fmt: skip
    return ["--tls-ca-file", "ca.pem", "--tls-cert", "cluster.pem", "--tls-key", "cluster.key"]


@pytest.fixture
def warm(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    if shutil.which("openssl") is None or shutil.which("dask") is None:
        pytest.skip("no openssl or dask: run scripts/install-targets.sh and the test extra")
    d = tmp_path / "tls"
    d.mkdir(mode=0o700)
    tls = _tls(d)
    port = _free_port()
    address = f"tls://127.0.0.1:{port}"
    logs = open(d / "cluster.log", "wb")  # noqa: SIM115
    (d / "scratch").mkdir(mode=0o700)  # as docs/clusters.md says: not /tmp/dask-scratch-space
    env = {**os.environ, "DASK_TEMPORARY_DIRECTORY": str(d / "scratch")}
    scheduler = subprocess.Popen(
        ["dask", "scheduler", "--protocol", "tls", "--host", "127.0.0.1", "--port", str(port),
         "--no-dashboard", *tls],
        cwd=d, stdout=logs, stderr=logs, start_new_session=True, env=env,
    )  # fmt: skip
    worker = subprocess.Popen(
        ["dask", "worker", address, "--nthreads", "1", "--resources", "bench=1", "--name", "0",
         "--no-dashboard", *tls],
        cwd=d, stdout=logs, stderr=logs, start_new_session=True, env=env,
    )  # fmt: skip
    try:
        yield address, d
    finally:
        for proc in (worker, scheduler):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 9)
            proc.wait(timeout=30)
        logs.close()


def _run(
    tmp_path: Path, address: str, env: dict[str, str], name: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "assay", "run", "--cluster", address, "--runs", "3", "-q",
         "--no-monitor", "--json", str(tmp_path / f"{name}.json"), "--store",
         str(tmp_path / "s.db"), "--name", name, "--", "sleep", "0.01"],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip


def test_studies_run_on_a_warm_tls_cluster_the_docs_start(
    tmp_path: Path, warm: tuple[str, Path]
) -> None:
    address, d = warm
    env = {
        **os.environ,
        "DASK_DISTRIBUTED__COMM__TLS__CA_FILE": str(d / "ca.pem"),
        "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT": str(d / "cluster.pem"),
        "DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY": str(d / "cluster.key"),
    }
    deadline = time.monotonic() + 60  # the worker joins within seconds
    first = _run(tmp_path, address, env, "first")
    while first.returncode == 3 and "no worker" in first.stderr and time.monotonic() < deadline:
        time.sleep(1)
        first = _run(tmp_path, address, env, "first")
    second = _run(tmp_path, address, env, "second")  # the same cluster, still warm
    for name, done in (("first", first), ("second", second)):
        assert done.returncode in (0, 5), done.stderr
        doc = json.loads((tmp_path / f"{name}.json").read_text())
        executor = doc["environment"]["executor"]
        assert executor["kind"] == "dask" and executor["scheduler"] == address
    # a client without the credentials is refused at the handshake: one line, exit 3
    bare = {k: v for k, v in env.items() if not k.startswith("DASK_DISTRIBUTED__COMM__TLS")}
    refused = _run(tmp_path, address, bare, "bare")
    assert refused.returncode in (2, 3) and "Traceback" not in refused.stderr, refused.stderr
