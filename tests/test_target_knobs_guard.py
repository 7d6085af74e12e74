"""Target knobs cannot undo what keeps a server private.

A knob reaches the server's command line (Redis setup), its configuration file
(PostgreSQL setup) or a run-time setting: a knob naming a listener, authentication, a
file elsewhere or a program, and a value that smuggles in another setting (a word
starting with ``--``, a line break), are refused with a message naming the knob.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from assay.targets.base import TargetError
from assay.targets.postgres import _check_knobs as pg_check_knobs
from assay.targets.redis import _check_knobs as redis_check_knobs

HAVE_REDIS = bool(shutil.which("redis-server") and shutil.which("redis-benchmark"))

REDIS_PROTECTED = [
    "port", "bind", "requirepass", "unixsocket", "unixsocketperm", "protected-mode", "dir",
    "tls-port", "tls-cert-file", "tls-auth-clients", "masterauth", "aclfile", "include",
    "logfile", "pidfile", "dbfilename", "enable-debug-command", "enable-module-command",
    "loadmodule", "rename-command", "user", "masteruser", "replicaof", "slaveof",
    "cluster-enabled", "cluster-config-file", "appendfilename", "appenddirname",
    "enable-protected-configs", "acl-pubsub-default", "daemonize", "Port", "REQUIREPASS",
]  # fmt: skip
PG_PROTECTED = [
    "listen_addresses", "port", "unix_socket_directories", "unix_socket_permissions",
    "unix_socket_group", "hba_file", "ident_file", "data_directory", "config_file", "ssl",
    "ssl_cert_file", "ssl_key_file", "ssl_passphrase_command", "password_encryption",
    "krb_server_keyfile", "krb_caseins_users", "archive_command", "archive_library",
    "restore_command", "archive_cleanup_command", "recovery_end_command",
    "shared_preload_libraries", "local_preload_libraries", "session_preload_libraries",
    "dynamic_library_path", "jit_provider", "external_pid_file", "log_directory",
    "log_filename", "log_file_mode", "include", "include_dir", "include_if_exists",
    "primary_conninfo", "bonjour",
]  # fmt: skip
#: values that would start another setting: on a command line, or a new config line
SMUGGLING = ["--port 16399", "60 --requirepass x", "1\nport 16399", "1\rport 1", "a\x00b"]


@pytest.mark.parametrize("name", REDIS_PROTECTED)
def test_redis_refuses_protected_settings(name: str) -> None:
    with pytest.raises(TargetError, match=f"knob {name}: refused, .*keep the server private"):
        redis_check_knobs({name: "yes"})


@pytest.mark.parametrize("name", PG_PROTECTED)
def test_postgres_refuses_protected_parameters(name: str) -> None:
    with pytest.raises(TargetError, match=f"knob {name}: refused, .*keep the server private"):
        pg_check_knobs({name: "on"})


@pytest.mark.parametrize("value", SMUGGLING)
def test_values_that_smuggle_in_a_setting_are_refused(value: str) -> None:
    for check, name in ((redis_check_knobs, "save"), (pg_check_knobs, "work_mem")):
        with pytest.raises(TargetError, match=f"knob {name}=.*refused, .*expected a plain"):
            check({name: value})


def test_names_that_are_no_setting_names_are_refused() -> None:
    for name in ("--requirepass", "-port", "save\nport", "work_mem\n", "max memory"):
        with pytest.raises(TargetError, match="not a Redis setting name"):
            redis_check_knobs({name: "1"})
        with pytest.raises(TargetError, match="not a PostgreSQL parameter name"):
            pg_check_knobs({name: "1"})


def test_ordinary_knobs_pass() -> None:
    redis_check_knobs({
        "maxmemory": "64mb", "save": "60 1000", "appendonly": "yes", "io-threads": "4",
        "slowlog-log-slower-than": "-1", "maxmemory-policy": "allkeys-lru",
    })  # fmt: skip
    redis_check_knobs({"save": ""})
    pg_check_knobs({
        "work_mem": "8MB", "shared_buffers": "256MB", "fsync": "off", "wal_level": "minimal",
        "statement_timeout": "-1", "pg_stat_statements.max": "1000", "logging_collector": "on",
    })  # fmt: skip


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.skipif(not HAVE_REDIS, reason="Redis not installed")
def test_redis_setup_with_a_smuggled_port_opens_nothing(tmp_path: Path) -> None:
    port = 16399
    if _listening(port):
        pytest.skip(f"port {port} is in use already")
    state = str(tmp_path / "redis")
    up = subprocess.run(
        [sys.executable, "-m", "assay.targets", "redis", "setup", "--state", state,
         "--knob", f"save=--port {port}"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    try:
        assert up.returncode == 2, up.stdout
        assert "knob save='--port 16399': refused" in up.stderr
        assert not _listening(port)
    finally:
        subprocess.run([sys.executable, "-m", "assay.targets", "redis", "teardown",
                        "--state", state], capture_output=True, check=False)  # fmt: skip
