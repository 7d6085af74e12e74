"""TLS for every Dask cluster Assay starts or joins.

A Dask scheduler runs whatever task a connected client submits, as the user that
started it: an unauthenticated one lets every local user (``--workers``) or everyone on
the network (``[cluster]`` over SSH) run code as that user.  So every cluster Assay
starts uses mutual TLS with a key and self-signed certificate made for that one study
(``Security.temporary()``): a client, worker or scheduler without them is refused at
the handshake, and Dask's HTTP servers serve nothing.  Nothing is written here (the
credentials live in the processes' memory); for an SSH cluster they are copied, over
the SSH connection itself, into a fresh 0700 folder of a random name on each host and
removed at the end.

An existing scheduler (``--cluster ADDRESS``) must speak TLS (``tls://``), with the
client's certificate in Dask's configuration, unless the user says ``--insecure``.

>>> check_cluster_address("tls://10.0.0.5:8786", insecure=False)
'tls://10.0.0.5:8786'
>>> check_cluster_address("tcp://10.0.0.5:8786", insecure=True)
'tcp://10.0.0.5:8786'
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import secrets
import shlex
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from assay.errors import StudyError
from assay.extras import MissingExtra, require_extra

# distributed's Security carries no annotations: its objects are Any here

#: Dask's configuration keys of the client's TLS credentials, as environment variables.
CLIENT_TLS_ENV = (
    "DASK_DISTRIBUTED__COMM__TLS__CA_FILE",
    "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT",
    "DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY",
)

# scheme://host:port, with an IPv6 host in brackets; the port is required: Dask's
# default port is a guess that would connect somewhere else silently
_ADDRESS = re.compile(
    r"(?P<scheme>[a-z]+)://(?P<host>\[[0-9a-fA-F:.]+\]|[A-Za-z0-9._-]+):(?P<port>\d{1,5})"
)


#: Dask's HTTP servers (the scheduler's and each worker's: dashboard, metrics, task and
#: worker listings) answer anyone who reaches them, without TLS: none of their routes.
NO_HTTP_ROUTES: dict[str, Any] = {
    "distributed.scheduler.http.routes": [],
    "distributed.worker.http.routes": [],
}


def temporary_security() -> Any:
    """A key and self-signed certificate for one study's cluster, in memory only, with
    encryption required on every connection."""
    from distributed import Security

    try:
        return Security.temporary()
    except ImportError:  # cryptography (asyncssh needs it too)
        raise MissingExtra(
            "a Dask cluster's TLS certificate needs cryptography: "
            "pip install -e '.[cluster]' in Assay's folder",
            extra="cluster",
        ) from None


def check_cluster_address(address: str, *, insecure: bool) -> str:
    """``--cluster ADDRESS`` as given, or a :class:`StudyError` that says what to give.

    >>> check_cluster_address("tcp://h:8786", insecure=False)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    assay.errors.StudyError: --cluster tcp://h:8786: an unencrypted scheduler ...
    >>> check_cluster_address("h:8786", insecure=False)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    assay.errors.StudyError: --cluster 'h:8786': expected tls://HOST:PORT ...
    """
    m = _ADDRESS.fullmatch(address)
    if m is None or int(m["port"]) > 65535 or m["scheme"] not in ("tls", "tcp"):
        raise StudyError(
            f"--cluster {address[:200]!r}: expected tls://HOST:PORT (a Dask scheduler "
            "started with TLS), or tcp://HOST:PORT with --insecure"
        )
    if m["scheme"] == "tcp" and not insecure:
        raise StudyError(
            f"--cluster {address}: an unencrypted scheduler runs the code of anyone who "
            "reaches it; start it with TLS (dask scheduler --tls-ca-file CA --tls-cert "
            "CERT --tls-key KEY), give tls://HOST:PORT and the client's credentials in "
            f"Dask's configuration ({', '.join(CLIENT_TLS_ENV)}), or add --insecure to "
            "use it as it is"
        )
    return address


def client_security(address: str) -> Any:
    """The client's credentials for a ``tls://`` scheduler, from Dask's configuration;
    None for a ``tcp://`` one (allowed by ``--insecure``)."""
    from distributed import Security

    if not address.startswith("tls://"):
        return None
    security: Any = Security()
    if not (security.tls_ca_file and security.tls_client_cert):
        raise StudyError(
            f"--cluster {address}: a TLS scheduler needs the client's CA file, certificate "
            f"and key in Dask's configuration ({', '.join(CLIENT_TLS_ENV)}, or "
            "distributed.comm.tls.* in a Dask configuration file)"
        )
    return security


@dataclass(frozen=True)
class RemoteCredentials:
    """Where the study's TLS files are on every SSH host, and Dask's configuration that
    names them (it reaches the remote scheduler and workers, which read the files)."""

    folder: str
    config: dict[str, Any]


def remote_config(folder: str) -> dict[str, Any]:
    """Dask's configuration for a scheduler and workers that read the study's key and
    certificate from ``folder`` (``cert.pem`` is its own CA: self-signed) and keep their
    scratch space there too: Dask's default, ``/tmp/dask-scratch-space``, is a shared
    path whose lock files another user could plant as links (and whose folders go on
    the workers' ``sys.path``).

    >>> remote_config("/tmp/x")["distributed.comm.tls.worker.key"]
    '/tmp/x/key.pem'
    >>> remote_config("/tmp/x")["temporary-directory"]
    '/tmp/x'
    """
    cert, key = f"{folder}/cert.pem", f"{folder}/key.pem"
    config: dict[str, Any] = {
        **NO_HTTP_ROUTES,
        "temporary-directory": folder,
        "distributed.comm.require-encryption": True,
        "distributed.comm.tls.ca-file": cert,
    }
    for role in ("scheduler", "worker", "client"):
        config[f"distributed.comm.tls.{role}.cert"] = cert
        config[f"distributed.comm.tls.{role}.key"] = key
    return config


def _install_script(folder: str) -> str:
    """The shell command that makes ``folder`` (mode 0700, ours, not a link: its name is
    random, so it exists only where another "host" is this same machine) and writes the
    key read from stdin into it, readable by nobody else."""
    q = shlex.quote(folder)
    return (
        f"umask 077 && {{ mkdir -m 700 {q} 2>/dev/null || "
        f"{{ [ -d {q} ] && [ ! -L {q} ] && [ -O {q} ]; }}; }} && "
        f"cat > {q}/key.pem"
    )


async def _on_hosts(
    hosts: Sequence[str], options: dict[str, Any], commands: Sequence[tuple[str, str]]
) -> None:
    asyncssh = require_extra("asyncssh", "cluster", "a [cluster] over SSH")

    async def one(host: str) -> None:
        async with asyncssh.connect(host, **options) as conn:
            for command, stdin in commands:
                result = await conn.run(command, input=stdin, check=False)
                if result.exit_status != 0:
                    err = str(result.stderr or "").strip()[:300]
                    raise StudyError(
                        f"[cluster]: cannot write the study's TLS certificate on {host} "
                        f"(exit {result.exit_status}{': ' + err if err else ''})"
                    )

    await asyncio.gather(*(one(h) for h in dict.fromkeys(hosts)))


@contextlib.contextmanager
def credentials_on_hosts(
    hosts: Sequence[str], options: dict[str, Any], security: Any
) -> Iterator[RemoteCredentials]:
    """Copy the study's key and certificate to every host for the length of the block,
    over SSH (stdin: never a command line, which any user of the host can read), and
    remove them on the way out."""
    folder = f"/tmp/assay-tls-{secrets.token_hex(16)}"
    q = shlex.quote(folder)
    key, cert = str(security.tls_scheduler_key), str(security.tls_scheduler_cert)
    write = [
        (_install_script(folder), key),
        (f"umask 077 && cat > {q}/cert.pem", cert),
    ]
    try:
        asyncio.run(_on_hosts(hosts, options, write))
        with _removed_when_gone(hosts, options, folder):
            yield RemoteCredentials(folder, remote_config(folder))
    finally:
        with contextlib.suppress(Exception):  # a host gone: its /tmp is its own to clean
            asyncio.run(_on_hosts(hosts, options, [(f"rm -rf -- {q}", "")]))


@contextlib.contextmanager
def _removed_when_gone(
    hosts: Sequence[str], options: dict[str, Any], folder: str
) -> Iterator[None]:
    """On every host, an SSH session that removes ``folder`` once its input ends: at the
    block's end, or when this process dies (a killed driver: its connections close and
    the hosts' sshd ends the sessions' input), so the study's key does not outlive it
    on the hosts (#41).  Best effort: a host it cannot reach keeps the folder until the
    block's own removal."""
    asyncssh = require_extra("asyncssh", "cluster", "a [cluster] over SSH")

    q = shlex.quote(folder)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="assay-tls-guard", daemon=True)
    thread.start()
    guards: list[tuple[Any, Any]] = []

    async def start(host: str) -> None:
        conn = await asyncssh.connect(host, **options)
        guards.append((conn, await conn.create_process(f"cat > /dev/null; rm -rf -- {q}")))

    async def start_all() -> None:
        await asyncio.gather(*(start(h) for h in dict.fromkeys(hosts)), return_exceptions=True)

    async def stop_all() -> None:
        for conn, proc in guards:
            with contextlib.suppress(Exception):
                proc.stdin.write_eof()
                await asyncio.wait_for(proc.wait(), 10)
            conn.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.wait_closed(), 5)

    try:
        asyncio.run_coroutine_threadsafe(start_all(), loop).result(timeout=60)
        yield
    finally:
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(stop_all(), loop).result(timeout=30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)
        loop.close()
