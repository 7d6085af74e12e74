"""The Dask clusters Assay starts admit its own driver and nobody else; ``--cluster``
refuses a scheduler without TLS unless told ``--insecure``, and whatever answers at the
address (nothing, something that is not Dask) is a clear error within a bound.

The intruder is a process of the user ``nobody``: it imports Dask as root (root's Python
is not readable by ``nobody`` here), then drops to ``nobody`` before it connects, as a
local user with a Dask of their own would.
"""

from __future__ import annotations

import os
import pwd
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from assay.cli import main
from assay.errors import StudyError
from assay.execute.cluster import connect_client, open_executor

try:
    NOBODY: pwd.struct_passwd | None = pwd.getpwnam("nobody")
except KeyError:
    NOBODY = None
needs_nobody = pytest.mark.skipif(
    os.geteuid() != 0 or NOBODY is None, reason="needs root and the user 'nobody'"
)

INTRUDER = """
import os, sys
import distributed
from distributed import Client, Security
other_ca = Security.temporary()  # made before the drop: root's cryptography
import importlib, pkgutil  # what Dask imports lazily, while root's files are readable
for package in ("tornado", "distributed", "cloudpickle", "msgpack", "encodings"):
    for info in pkgutil.walk_packages(importlib.import_module(package).__path__, package + "."):
        if "test" in info.name:  # distributed.utils_test turns warnings into errors
            continue
        try:
            importlib.import_module(info.name)
        except BaseException:
            pass
os.setgroups([])
os.setgid({gid})
os.setuid({uid})
marker = {marker!r}

def pwn():
    open(marker, "w").write(str(os.getuid()))
    return os.getuid()

for address in sys.argv[1:]:
    for name, security in (("none", None), ("its own CA", other_ca)):
        try:
            client = Client(address, timeout=5, security=security)
        except BaseException as exc:
            print("refused", address, name, type(exc).__name__, str(exc)[:80])
            continue
        try:
            print("ADMITTED", address, name, client.submit(pwn, pure=False).result(timeout=20))
        except BaseException as exc:
            print("ADMITTED, submit failed", address, name, type(exc).__name__)
        client.close()
"""


def _intrude(addresses: list[str], marker: Path) -> str:
    assert NOBODY is not None
    code = textwrap.dedent(INTRUDER).format(
        uid=NOBODY.pw_uid, gid=NOBODY.pw_gid, marker=str(marker)
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, *addresses],
        capture_output=True, text=True, timeout=300, check=False, cwd="/",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


@needs_nobody
def test_no_other_user_reaches_a_local_cluster(tmp_path: Path) -> None:
    """As ``nobody``, neither the scheduler nor a worker takes a connection: not
    without credentials, not with a certificate of another CA, not over plain TCP."""
    tmp_path.chmod(0o777)  # where a successful intruder would leave its mark
    marker = tmp_path / "pwned"
    with open_executor(workers=1, monitor=False) as ex:
        ex.start()
        client = ex.client  # type: ignore[attr-defined]
        scheduler = client.scheduler.address
        workers = list(client.scheduler_info()["workers"])
        assert scheduler.startswith("tls://127.0.0.1:")
        assert workers and all(w.startswith("tls://127.0.0.1:") for w in workers)
        plain = [a.replace("tls://", "tcp://") for a in (scheduler, *workers)]
        out = _intrude([scheduler, *plain], marker)
        assert client.submit(os.getuid, pure=False).result() == os.getuid()  # its own driver
    assert "ADMITTED" not in out, out
    assert out.count("refused") == 2 * (1 + len(plain))
    assert not marker.exists()


def test_a_scheduler_without_tls_is_refused_unless_insecure(tmp_path: Path) -> None:
    study = tmp_path / "s.toml"
    study.write_text('[study]\nname = "x"\n[benchmark]\ncommand = ["true"]\n')
    res = CliRunner().invoke(main, ["run", str(study), "--cluster", "tcp://127.0.0.1:9", "-q"])
    assert res.exit_code == 2, res.output
    assert "unencrypted scheduler runs the code of anyone" in res.output
    assert "--insecure" in res.output
    res = CliRunner().invoke(main, ["run", str(study), "--insecure", "-q"])
    assert res.exit_code == 2 and "only with --cluster" in res.output
    res = CliRunner().invoke(
        main, ["run", str(study), "--cluster", "tcp://127.0.0.1:9", "--insecure", "-q"]
    )
    assert res.exit_code == 3, res.output
    assert "cannot reach the Dask scheduler" in res.output


@pytest.mark.parametrize(
    "address", ["127.0.0.1:8786", "tls://", "tls://h:99999", "udp://h:1", "tls://h:1/x", "x" * 5000]
)
def test_a_malformed_cluster_address_is_a_usage_error(address: str, tmp_path: Path) -> None:
    study = tmp_path / "s.toml"
    study.write_text('[study]\nname = "x"\n[benchmark]\ncommand = ["true"]\n')
    res = CliRunner().invoke(main, ["run", str(study), "--cluster", address, "-q"])
    assert res.exit_code == 2, res.output
    assert "expected tls://HOST:PORT" in res.output
    assert "Traceback" not in res.output and len(res.output) < 1000


def test_a_tls_scheduler_needs_the_clients_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CA_FILE", "CLIENT__CERT", "CLIENT__KEY"):
        monkeypatch.delenv(f"DASK_DISTRIBUTED__COMM__TLS__{name}", raising=False)
    with pytest.raises(StudyError, match="needs the client's CA file, certificate"):
        connect_client("tls://127.0.0.1:9", insecure=False)


@pytest.fixture
def stranger() -> Iterator[tuple[int, list[str]]]:
    """A loopback server that is not Dask: it says nothing (``silent``) or answers what
    any request gets with an HTTP error."""
    srv = socket.create_server(("127.0.0.1", 0))
    mode: list[str] = ["silent"]
    held: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            held.append(conn)
            if mode[0] == "http":
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")

    threading.Thread(target=serve, daemon=True).start()
    yield srv.getsockname()[1], mode
    srv.close()
    for conn in held:
        conn.close()


@pytest.mark.parametrize("scheme", ["tcp", "tls"])
@pytest.mark.parametrize("kind", ["silent", "http"])
def test_what_is_not_a_dask_scheduler_is_a_clear_error_in_bounded_time(
    stranger: tuple[int, list[str]], kind: str, scheme: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from distributed import Security

    port, mode = stranger
    mode[0] = kind
    if scheme == "tls":  # credentials of some CA: the stranger cannot check them anyway
        sec = Security.temporary()
        monkeypatch.setattr("assay.execute.tls.client_security", lambda address: sec)
    # a silent peer: Dask's own handshake waits for it without a limit; this returns
    with pytest.raises(StudyError, match="cannot reach the Dask scheduler") as info:
        connect_client(f"{scheme}://127.0.0.1:{port}", insecure=True, timeout=2)
    if kind == "silent":
        assert "no answer within 2 s" in str(info.value)


def test_the_clusters_http_servers_serve_nothing() -> None:
    """Dask's dashboard, metrics and listings (plain HTTP, no TLS) answer no route."""
    import urllib.error
    import urllib.request

    import psutil

    with open_executor(workers=1, monitor=False) as ex:
        ex.start()
        me = psutil.Process()
        ports = {
            c.laddr.port
            for p in (me, *me.children(recursive=True))
            for c in p.net_connections(kind="tcp")
            if c.status == psutil.CONN_LISTEN
        }
        assert len(ports) >= 3  # the scheduler's, the worker's and the nanny's at least
        answered = []
        for port in ports:
            for path in ("/health", "/metrics", "/info/main/workers.html", "/json/counts.json"):
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5):
                        answered.append((port, path))
                except (urllib.error.URLError, OSError):
                    pass
    assert answered == []


# -- hangs: a worker or scheduler gone ----------------------------------------------------
def test_a_worker_dying_during_setup_ends_the_study(tmp_path: Path) -> None:
    """The setup task is pinned to its worker: when that worker dies, no other may run
    it, and the study used to wait forever.  Now it ends, naming the worker."""
    study = tmp_path / "s.toml"
    kill = "import os, signal; os.kill(os.getppid(), signal.SIGKILL)"  # the worker process
    study.write_text(
        '[study]\nname = "setup-kill"\n[benchmark]\n'
        f'setup = [{sys.executable!r}, "-c", {kill!r}]\ncommand = ["true"]\n'
    )
    proc = subprocess.run(
        [sys.executable, "-m", "assay", "run", str(study), "--workers", "1", "-q",
         "--no-monitor", "--store", str(tmp_path / "s.db")],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    assert "left the Dask cluster during the setup or teardown step" in proc.stderr
    assert "Traceback" not in proc.stderr


def _dask(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


@pytest.fixture
def external_cluster() -> Iterator[tuple[str, subprocess.Popen[bytes], subprocess.Popen[bytes]]]:
    """A scheduler and one worker of our own, without TLS (the test is about hangs)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    scheduler = _dask(
        "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", str(port),
        "--no-dashboard",
    )  # fmt: skip
    worker = _dask(
        "distributed.cli.dask_worker", address, "--nthreads", "1", "--resources", "bench=1",
        "--no-dashboard", "--no-nanny",
    )  # fmt: skip
    yield address, scheduler, worker
    for p in (worker, scheduler):
        p.kill()
        p.wait()


def test_a_cluster_whose_workers_all_died_ends_the_study(
    external_cluster: tuple[str, subprocess.Popen[bytes], subprocess.Popen[bytes]],
) -> None:
    from assay.execute.trial import TrialJob, TrialRequest
    from assay.spec import PISpec

    address, _, worker = external_cluster
    job = TrialJob(pis=(PISpec(name="wall_time"),), timeout=60)
    with open_executor(address=address, insecure=True, monitor=False) as ex:
        ex.start()
        ex.wait_s = 3  # type: ignore[attr-defined]  # the grace for workers to come back
        trials = ex.run_trials(job, [TrialRequest(i, ["sleep", "0.5"]) for i in range(8)])
        first = next(trials)
        assert first.ok
        worker.kill()
        with pytest.raises(StudyError, match="has had no worker for 3 s"):
            list(trials)


def test_a_scheduler_that_dies_ends_the_study_in_one_line(
    external_cluster: tuple[str, subprocess.Popen[bytes], subprocess.Popen[bytes]],
    tmp_path: Path,
) -> None:
    address, scheduler, _ = external_cluster
    study = tmp_path / "s.toml"
    study.write_text(
        '[study]\nname = "sched-kill"\n[benchmark]\ncommand = ["sh", "-c", "echo x; sleep 0.3"]\n'
    )
    driver = subprocess.Popen(
        [sys.executable, "-m", "assay", "run", str(study), "--cluster", address, "--insecure",
         "--no-monitor", "--store", str(tmp_path / "s.db")],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    import sqlite3

    # kill the scheduler once the study has kept a trial (nothing timed: the store says)
    db = tmp_path / "s.db"
    for _ in range(6000):
        if driver.poll() is not None:
            break
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
                if conn.execute("select count(*) from trials").fetchone()[0] > 0:
                    break
        except sqlite3.Error:
            pass
        threading.Event().wait(0.05)
    scheduler.kill()
    _, err = driver.communicate(timeout=300)
    assert driver.returncode == 3, err
    assert "Traceback" not in err
    assert "connection to the Dask scheduler" in err and "lost" in err
