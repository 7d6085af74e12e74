"""One Redis server of a primary + replica pair, on one address (the multi-host example's
setup and teardown steps).

    python3 redis_pair.py start ADDRESS PORT [--replicaof PRIMARY]
    python3 redis_pair.py stop ADDRESS PORT

``start`` runs ``redis-server`` bound to ADDRESS only, without persistence, its files in
a private folder of its own (/tmp/assay-redis-ADDRESS-PORT), and returns once it answers
(a replica: once its link to the primary is up).  ``stop`` shuts it down and removes the
folder.  Every value reaches the programs as one argv word; no shell is involved.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path


def _cli(address: str, port: int, *words: str) -> subprocess.CompletedProcess[str]:
    argv = ["redis-cli", "-h", address, "-p", str(port), *words]
    return subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)


def _folder(address: str, port: int) -> Path:
    return Path(f"/tmp/assay-redis-{address}-{port}")


def start(address: str, port: int, primary: str | None) -> int:
    folder = _folder(address, port)
    folder.mkdir(mode=0o700, exist_ok=True)
    argv = ["redis-server", "--bind", address, "--port", str(port), "--daemonize", "yes"]
    argv += ["--save", "", "--appendonly", "no", "--dir", str(folder)]
    argv += ["--pidfile", str(folder / "redis.pid"), "--logfile", str(folder / "redis.log")]
    if primary is not None:
        argv += ["--replicaof", primary, str(port)]
    subprocess.run(argv, check=True, timeout=30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if primary is None and _cli(address, port, "ping").stdout.strip() == "PONG":
            print(f"primary up on {address}:{port}")
            return 0
        if (
            primary is not None
            and "master_link_status:up" in _cli(address, port, "info", "replication").stdout
        ):
            print(f"replica of {primary} up on {address}:{port}")
            return 0
        time.sleep(0.1)
    log = folder / "redis.log"
    print(log.read_text()[-2000:] if log.exists() else "no log", file=sys.stderr)
    print(f"redis on {address}:{port} did not come up in 30 s", file=sys.stderr)
    return 1


def stop(address: str, port: int) -> int:
    _cli(address, port, "shutdown", "nosave")
    shutil.rmtree(_folder(address, port), ignore_errors=True)
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("action", choices=("start", "stop"))
    p.add_argument("address")
    p.add_argument("port", type=int)
    p.add_argument("--replicaof", metavar="PRIMARY")
    a = p.parse_args()
    if a.action == "start":
        return start(a.address, a.port, a.replicaof)
    return stop(a.address, a.port)


if __name__ == "__main__":
    sys.exit(main())
