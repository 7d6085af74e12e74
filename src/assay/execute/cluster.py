"""Choosing where a study's trials run: this machine, or a Dask cluster.

Three ways to name a cluster: ``--workers N``, a ``LocalCluster`` of ``N``
single-threaded worker processes on this machine, bound to loopback; ``--cluster
ADDRESS``, an existing scheduler; the study file's ``[cluster]`` table, machines reached
over SSH (Dask's ``SSHCluster``: a scheduler on one host, one worker per host).  The
command line's choice wins over the file's.  Without any, trials run here, one at a
time.  A ``[cluster]`` with ``roles`` makes every trial span the hosts
(:class:`~assay.execute.roles.RoleExecutor`) on whichever of the three clusters: with
``--workers N``, worker ``i`` stands for host ``i`` of the roles.

Every connection of a cluster Assay starts is mutual TLS with credentials made for the
study (:mod:`assay.execute.tls`): an open scheduler would run anyone's code.

>>> with open_executor(monitor=False) as ex:
...     ex.describe()
{'kind': 'local', 'workers': 1}
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.errors import StudyError
from assay.execute.executor import Executor, LocalExecutor
from assay.extras import require_extra
from assay.privatefs import private_temp

if TYPE_CHECKING:
    from assay.spec import ClusterSpec


@contextlib.contextmanager
def open_executor(
    *,
    workers: int | None = None,
    address: str | None = None,
    ssh: ClusterSpec | None = None,
    monitor: bool = True,
    insecure: bool = False,
) -> Iterator[Executor]:
    """The executor for a study; a cluster this starts is stopped on the way out.
    ``address`` must be ``tls://`` unless ``insecure``."""
    if workers is not None and address is not None:
        raise ValueError("--workers starts a cluster here, --cluster names one: give one")
    roles = ssh if ssh is not None and ssh.roles is not None else None
    if workers is None and address is None:
        if ssh is not None:
            _require_cluster_extra("the study file's [cluster]", ssh=True)
            with _dask_quiet(), _ssh_executor(ssh, monitor) as ex:
                yield ex
            return
        yield LocalExecutor(monitor=monitor)
        return
    _require_cluster_extra("--workers" if workers is not None else "--cluster")
    with _dask_quiet(), _dask_cluster(workers, address, roles, monitor, insecure) as ex:
        yield ex


def _require_cluster_extra(what: str, *, ssh: bool = False) -> None:
    """Dask's distributed (and, over SSH, asyncssh), or a
    :class:`~assay.extras.MissingExtra` naming ``assay[cluster]``: before a cluster starts."""
    require_extra("distributed", "cluster", what)
    if ssh:
        require_extra("asyncssh", "cluster", what)


@contextlib.contextmanager
def _dask_cluster(
    workers: int | None,
    address: str | None,
    roles: ClusterSpec | None,
    monitor: bool,
    insecure: bool,
) -> Iterator[Executor]:
    """A ``LocalCluster`` of ``workers`` processes, or the scheduler at ``address``."""
    import dask
    from distributed import Client, LocalCluster

    from assay.execute.dask_executor import RESOURCE
    from assay.execute.tls import NO_HTTP_ROUTES, temporary_security

    if workers is not None:
        if workers < 1:
            raise ValueError(f"--workers {workers}: expected 1 or more")
        if roles is not None and workers < len(roles.hosts):
            raise StudyError(
                f"--workers {workers}: the study's [cluster.roles] name {len(roles.hosts)} "
                f"hosts, one worker each: give --workers {len(roles.hosts)} or more"
            )
        # the scheduler's and workers' scratch space in a folder of the study's own:
        # Dask's default, $TMPDIR/dask-scratch-space, is a shared path another user can
        # make first and fill with links (its lock files are opened for writing) or
        # modules (its folders go on sys.path)
        with (
            private_temp("assay-dask-") as scratch,
            dask.config.set({"temporary-directory": str(scratch)}),
        ):
            try:
                with dask.config.set(NO_HTTP_ROUTES):  # read as the scheduler and nannies start
                    cluster = LocalCluster(
                        n_workers=workers,
                        threads_per_worker=1,
                        processes=True,
                        resources={RESOURCE: 1},
                        host="127.0.0.1",  # loopback: nothing outside this machine reaches it
                        security=temporary_security(),  # ...and no other user of this one
                        dashboard_address=None,
                        silence_logs=logging.ERROR,
                        local_directory=str(scratch),
                    )
            except (RuntimeError, OSError, TimeoutError) as exc:  # e.g. a worker killed at start
                raise StudyError(
                    f"--workers {workers}: the local Dask cluster did not start ({exc}); "
                    "nothing was run: run the same command again"
                ) from None
            with _closed_quietly(cluster), _closed_quietly(client := Client(cluster)):
                yield _dask_executor(client, roles, monitor, workers)
        return
    assert address is not None
    client = connect_client(address, insecure=insecure)
    with _closed_quietly(client):
        yield _dask_executor(client, roles, monitor, 1)


def _dask_executor(
    client: Any, roles: ClusterSpec | None, monitor: bool, expected: int, *, identical: bool = False
) -> Executor:
    """A :class:`DaskExecutor`, or the multi-host one when the study file has roles."""
    from assay.execute.dask_executor import DaskExecutor

    if roles is not None:
        from assay.execute.roles import RoleExecutor

        need = len(roles.hosts)
        return RoleExecutor(client, roles, monitor=monitor, expected_workers=max(expected, need))
    return DaskExecutor(
        client, monitor=monitor, require_identical=identical, expected_workers=expected
    )


@contextlib.contextmanager
def _dask_quiet() -> Iterator[None]:
    """Dask's own log lines off while a study uses a cluster: a scheduler that goes away
    logs the client's reconnection tracebacks, before the study's one-line error that
    says what happened and what to do."""
    import distributed  # noqa: F401  # its loggers exist from its import on

    # Dask's configuration gives some of its loggers levels of their own
    names = [
        "distributed",
        "tornado",  # Dask's event loop logs its callbacks' errors (a worker that cannot start)
        *(n for n in logging.root.manager.loggerDict if n.startswith(("distributed.", "tornado."))),
    ]
    levels = {name: logging.getLogger(name).level for name in names}
    for name in names:
        logging.getLogger(name).setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)


@contextlib.contextmanager
def _closed_quietly(closable: Any, timeout: float | None = None) -> Iterator[None]:
    """Close a Dask client or cluster on the way out, within ``timeout`` seconds if
    given.  Every trial is committed by then: a worker still restarting (one that was
    killed) or a connection already gone must not turn a finished study into a failed
    command."""
    try:
        yield
    finally:
        with contextlib.suppress(OSError, TimeoutError, RuntimeError):
            closable.close() if timeout is None else closable.close(timeout=timeout)


def ssh_connect_options(spec: ClusterSpec) -> dict[str, Any]:
    """asyncssh's options for the ``[cluster]`` table.

    >>> from assay.spec import ClusterSpec
    >>> ssh_connect_options(ClusterSpec(hosts=["h"], user="u", port=2222, known_hosts="none"))
    {'port': 2222, 'username': 'u', 'known_hosts': None}
    """
    options: dict[str, Any] = {"port": spec.port}
    if spec.user:
        options["username"] = spec.user
    if spec.key:
        options["client_keys"] = [str(Path(spec.key).expanduser())]
    if spec.known_hosts == "none":
        options["known_hosts"] = None
    elif spec.known_hosts:
        options["known_hosts"] = str(Path(spec.known_hosts).expanduser())
    return options


@contextlib.contextmanager
def _ssh_executor(spec: ClusterSpec, monitor: bool) -> Iterator[Executor]:
    import dask

    from assay.execute.tls import credentials_on_hosts, temporary_security

    scheduler = spec.scheduler or spec.hosts[0]
    security = temporary_security()
    with contextlib.ExitStack() as stack:
        try:
            where = stack.enter_context(
                credentials_on_hosts([scheduler, *spec.hosts], ssh_connect_options(spec), security)
            )
            # the remote scheduler and workers get this configuration (Dask passes it
            # on): they read the study's key and certificate from the files
            stack.enter_context(dask.config.set(where.config))
            cluster = ssh_cluster(spec, scheduler, security)
        except StudyError:
            raise
        except Exception as exc:  # asyncssh's and Dask's errors: refused, auth, no python
            raise StudyError(
                f"[cluster]: cannot start the Dask cluster over SSH on "
                f"{', '.join(spec.hosts)}: {type(exc).__name__}: {exc}"
            ) from None
        with (
            _ssh_cluster_closed(cluster) as client,
            _heartbeat(client, spec.idle_timeout),
        ):
            roles = spec if spec.roles is not None else None
            executor = _dask_executor(
                client, roles, monitor, len(spec.hosts), identical=spec.require_identical
            )
            from assay.execute.roles import RoleExecutor

            if isinstance(executor, RoleExecutor):  # its trials need every host back
                executor.revive = worker_reviver(cluster, spec.port)
            yield executor


#: How long the end of an SSH cluster may take (a normal one: 1-2 s).
CLOSE_S = 5.0


@contextlib.contextmanager
def _ssh_cluster_closed(cluster: Any) -> Iterator[Any]:
    """A client of the SSH ``cluster``; on the way out both closed, within
    :data:`CLOSE_S` each.  With its scheduler lost the cluster's own close would wait on
    it in vain (5 s, then 10 s more in Dask's exit handler: #61, a killed scheduler's
    study took 16 s to exit): its hosts' processes are ended through their SSH
    sessions instead, and Dask's exit handler is told the cluster is done."""
    from distributed import Client

    client = Client(cluster)
    try:
        yield client
    finally:
        lost = client.status not in ("running", "newly-created")
        with contextlib.suppress(OSError, TimeoutError, RuntimeError):
            client.close(timeout=CLOSE_S)
        with contextlib.suppress(OSError, TimeoutError, RuntimeError):
            if lost:
                _ssh_processes_ended(cluster)
            else:
                cluster.close(timeout=CLOSE_S)
        cluster.shutdown_on_close = False  # closed, or as far as it can be


def _ssh_processes_ended(cluster: Any) -> None:
    """End the scheduler's and workers' processes of an SSH ``cluster`` through their
    SSH sessions (each is killed and its connection closed), within :data:`CLOSE_S`."""
    import asyncio

    processes = [*cluster.workers.values(), cluster.scheduler]

    async def end() -> None:
        await asyncio.gather(
            *(p.close() for p in processes if p is not None), return_exceptions=True
        )

    cluster.sync(end, callback_timeout=CLOSE_S)


#: How long the reviver waits for a host's SSH port to answer before leaving it for later.
PROBE_S = 2.0


def worker_reviver(cluster: Any, port: int) -> Callable[[int, str], bool]:
    """A function that starts worker ``name`` of an SSH ``cluster`` again on ``host``,
    once the host answers on its SSH ``port`` (``False`` at once while it does not):
    after an outage longer than the worker's ``death_timeout`` its processes have
    ended, and Dask's SpecCluster does not start them again (#41: a 75 s outage lost
    the host for the rest of the study, a trial failing on it every minute)."""

    async def restart(name: int) -> None:
        old = cluster.workers.pop(name, None)
        if old is not None:
            with contextlib.suppress(Exception):  # its connection is gone already
                await old.close()
        await cluster._correct_state()  # starts the workers the spec has and it lacks

    def revive(name: int, host: str) -> bool:
        try:
            with socket.create_connection((host, port), timeout=PROBE_S):
                pass
        except OSError:
            return False  # still down: nothing to start it over
        try:
            cluster.sync(restart, name)
        except Exception:  # asyncssh's and Dask's: it is tried again later
            return False
        return True

    return revive


@contextlib.contextmanager
def _heartbeat(client: Any, idle_timeout: float) -> Iterator[None]:
    """Keep an SSH cluster alive while this driver is: the scheduler was started with
    ``idle_timeout`` (it ends once idle that long: no task and no heartbeat) and its
    workers with the same ``death_timeout``, so a killed driver's cluster ends by itself
    (#41: a scheduler and a worker on every host were still up 6 min later).  A
    heartbeat every quarter of the timeout restarts the scheduler's idle clock, also
    while the driver analyses or waits between batches."""
    beat = idle_timeout / 4
    stop = threading.Event()

    def keep_alive(dask_scheduler: Any) -> None:
        # runs on the scheduler (a local function: pickled by value, so its host needs
        # no Assay): its idle clock starts again
        dask_scheduler.idle_since = None

    def run() -> None:
        while not stop.wait(beat):
            with contextlib.suppress(Exception):  # a lost scheduler is the study's to report
                client.run_on_scheduler(keep_alive)

    thread = threading.Thread(target=run, name="assay-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=beat)


def ssh_cluster(spec: ClusterSpec, scheduler: str, security: Any = None) -> Any:
    """Dask's SSH cluster (what ``distributed.SSHCluster`` builds), with each worker named
    by its host's place in ``hosts`` and listening on that host's address: a study with
    roles finds host ``i``'s worker by its name, also where several "hosts" are
    addresses of one machine (127.0.0.2, 127.0.0.3).  With ``security`` (this side's
    credentials; the hosts' come from Dask's configuration) every connection is TLS."""
    from distributed import SpecCluster
    from distributed.deploy.ssh import Scheduler, Worker

    from assay.execute.dask_executor import RESOURCE

    protocol = "tls://" if security is not None else "tcp://"
    options = ssh_connect_options(spec)
    workers = {
        i: {
            "cls": Worker,
            "options": {
                "address": host,
                "connect_options": options,
                "kwargs": {
                    "nthreads": 1,
                    "resources": {RESOURCE: 1},
                    "name": i,
                    "host": host,
                    "protocol": protocol,
                    # a worker whose scheduler is gone (or never came) ends by itself
                    "death_timeout": spec.idle_timeout,
                },
                "worker_class": "distributed.Nanny",  # SSHCluster's default
                "remote_python": spec.remote_python,
            },
        }
        for i, host in enumerate(spec.hosts)
    }
    scheduler_spec = {
        "cls": Scheduler,
        "options": {
            "address": scheduler,
            "connect_options": options,
            # the scheduler listens on the host named for it, nowhere else
            "kwargs": {
                "host": scheduler,
                "port": 0,
                "dashboard_address": None,
                "protocol": protocol,
                # ends once its driver's heartbeat has stopped that long (_heartbeat)
                "idle_timeout": spec.idle_timeout,
            },
            "remote_python": spec.remote_python,
        },
    }
    return SpecCluster(workers, scheduler_spec, name="SSHCluster", security=security)


#: How long ``--cluster`` waits for the scheduler's answer before saying it cannot.
CONNECT_S = 20.0


def connect_client(address: str, *, insecure: bool, timeout: float = CONNECT_S) -> Any:
    """A Dask client of the scheduler at ``address``, or a :class:`StudyError` within
    about ``timeout`` seconds: whatever answers there (nothing, something that is not
    Dask, a scheduler that refuses our certificate)."""
    from distributed import Client

    from assay.execute.tls import check_cluster_address, client_security

    check_cluster_address(address, insecure=insecure)
    security = client_security(address)
    # Dask's own connect waits without a limit for a silent peer's handshake, and reads
    # a stranger's first bytes as a frame length (an 8 EiB allocation): a bounded
    # handshake of our own first, so neither reaches the client
    try:
        asyncio.run(_handshake(address, security, timeout))
        return Client(address, timeout=timeout, security=security)
    except StudyError:
        raise
    except Exception as exc:  # refused, reset, TLS refused, not Dask, a timeout
        why = str(exc).strip() or type(exc).__name__
        if isinstance(exc, TimeoutError | asyncio.TimeoutError):
            why = f"no answer within {timeout:g} s"
        elif isinstance(exc, MemoryError):
            why = "what answers there is not a Dask scheduler"
        raise StudyError(
            f"--cluster {address}: cannot reach the Dask scheduler: {why[:300]}"
        ) from None


async def _handshake(address: str, security: Any, timeout: float) -> None:
    from distributed.comm.core import connect

    args = security.get_connection_args("client") if security is not None else {}
    comm = await asyncio.wait_for(connect(address, timeout=timeout, **args), timeout)
    await comm.close()
