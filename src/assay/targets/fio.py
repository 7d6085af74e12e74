"""fio: sequential and random reads and writes on a file in a directory you name.

``--dir`` names the directory on the device to measure (required: Assay does not
guess which disk you mean; a tmpfs directory measures memory). The job reads or
writes ``--size`` of the file ``assay-fio.dat`` there with ``--rw read | write |
randread | randwrite | rw | randrw`` in blocks of ``--bs``, for ``--runtime`` seconds,
and fio's JSON report gives bandwidth, IOPS and completion-latency percentiles.
``--knob name=value`` passes any other fio job option (``ioengine=libaio``,
``iodepth=16``, ``direct=1``, ``fsync=1``, ...); a value fio rejects is an error
naming it.

``setup`` lays out the file (not measured), ``reset`` syncs it and drops it from the
page cache (``posix_fadvise(DONTNEED)``, no root needed), ``teardown`` removes it (and
the directory, when that is then empty). A ``--dir`` that is a symbolic link, or that
another user could change, is refused (Assay may run as root: fio must not write
through a planted link); a missing one is made with mode 700.

PIs (``pi.*``): ``throughput`` (IOPS, all directions), ``bandwidth_mib_s``,
``latency_us_mean``, ``latency_us_p50``/``p95``/``p99``/``p99_9`` (completion latency;
per direction ``read_*``/``write_*`` as well). Unit readings (``units.*``), one per
``--log-interval`` ms from fio's interval logs (Pilot's storage case): ``iops``,
``bandwidth_mib_s``, ``latency_us`` (mean completion latency of the interval).

>>> job = {"read": {"bw": 1024, "iops": 256.0, "io_bytes": 1, "runtime": 1000,
...        "clat_ns": {"mean": 3000.0, "percentile": {"50.000000": 2000, "99.000000": 9000}}},
...        "write": {"bw": 0, "iops": 0.0, "io_bytes": 0, "runtime": 0, "clat_ns": {}}}
>>> rep = parse_fio_json({"fio version": "fio-3.33", "jobs": [job]})
>>> rep["read"]["iops"], rep["read"]["latency_us_p50"], "write" in rep
(256.0, 2.0, False)
>>> parse_fio_log("100, 18300, 0, 0, 0\\n200, 16380, 0, 0, 0\\n")
[(100, 18300.0, 0), (200, 16380.0, 0)]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from assay.targets.base import RunResult, Target, TargetError, missing_binary
from assay.targets.private import check_parents, check_trusted_dir

PATTERNS = ("read", "write", "randread", "randwrite", "rw", "randrw", "readwrite")
FILE_NAME = "assay-fio.dat"
_OPTION = re.compile(r"^[a-z_][a-z0-9_]*$")
_PCTS = {"50.000000": "p50", "95.000000": "p95", "99.000000": "p99", "99.900000": "p99_9"}


def parse_fio_json(doc: Mapping[str, Any]) -> dict[str, Any]:
    """Bandwidth, IOPS and latency per direction from fio's ``--output-format=json``.

    Directions that did no I/O are left out. Latencies in µs, bandwidth in KiB/s
    (``bw_kib_s``) as fio reports it.
    """
    jobs = doc.get("jobs")
    if not isinstance(jobs, list) or not jobs:
        raise TargetError("fio's JSON report has no 'jobs'")
    out: dict[str, Any] = {"version": str(doc.get("fio version", ""))}
    for ddir in ("read", "write"):
        parts = [j[ddir] for j in jobs if isinstance(j.get(ddir), dict)]
        if not any(p.get("io_bytes", 0) for p in parts):
            continue
        iops = sum(float(p.get("iops", 0.0)) for p in parts)
        bw = sum(float(p.get("bw", 0.0)) for p in parts)
        first = next(p for p in parts if p.get("io_bytes", 0))
        clat = first.get("clat_ns", {}) or {}
        entry: dict[str, Any] = {
            "iops": iops,
            "bw_kib_s": bw,
            "io_bytes": sum(int(p.get("io_bytes", 0)) for p in parts),
            "runtime_ms": max(int(p.get("runtime", 0)) for p in parts),
        }
        if "mean" in clat:
            entry["latency_us_mean"] = float(clat["mean"]) / 1000.0
        for key, name in _PCTS.items():
            pct = clat.get("percentile", {}) or {}
            if key in pct:
                entry[f"latency_us_{name}"] = float(pct[key]) / 1000.0
        out[ddir] = entry
    if "read" not in out and "write" not in out:
        raise TargetError("fio did no I/O (every direction reports 0 bytes)")
    return out


def parse_fio_log(text: str) -> list[tuple[int, float, int]]:
    """Rows ``(time_ms, value, direction)`` of a fio log (``time, value, ddir, bs, ...``)."""
    rows: list[tuple[int, float, int]] = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 3 and parts[0].isdigit():
            rows.append((int(parts[0]), float(parts[1]), int(parts[2])))
    return rows


def interval_series(rows: list[tuple[int, float, int]], combine: str) -> list[float]:
    """One value per logged interval: directions summed (``sum``) or averaged (``mean``).

    >>> interval_series([(100, 5.0, 0), (100, 3.0, 1), (200, 4.0, 0)], "sum")
    [8.0, 4.0]
    """
    by_time: dict[int, list[float]] = {}
    for t, v, _d in rows:
        by_time.setdefault(t, []).append(v)
    out = []
    for t in sorted(by_time):
        vals = by_time[t]
        out.append(sum(vals) if combine == "sum" else sum(vals) / len(vals))
    return out


def _fio() -> str:
    path = shutil.which("fio")
    if path is None:
        raise missing_binary("fio", "fio")
    return path


def _size_ok(text: str) -> bool:
    return re.match(r"^[0-9]+[kKmMgGtT]?[iI]?[bB]?$", text) is not None


class FioTarget(Target):
    """fio: sequential and random reads and writes on a file in a directory you name."""

    name = "fio"

    def __init__(self, directory: str | None, size: str = "256M") -> None:
        self.directory = Path(directory).expanduser().absolute() if directory else None
        self.size = size

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        g = parser.add_argument_group("fio")
        g.add_argument("--dir", help="the directory (on the device) to measure: required")
        g.add_argument("--rw", default="randread", choices=PATTERNS, help="I/O pattern")
        g.add_argument("--bs", default="4k", help="block size")
        g.add_argument("--size", default="256M", help="file size")
        g.add_argument("--runtime", type=float, default=3.0, help="seconds per run")
        g.add_argument("--ioengine", default="psync", help="fio ioengine")
        g.add_argument("--iodepth", type=int, default=1)
        g.add_argument("--direct", type=int, default=0, choices=(0, 1), help="O_DIRECT")
        g.add_argument("--numjobs", type=int, default=1)
        g.add_argument("--rwmixread", type=int, default=50, help="rw/randrw: %% reads")
        g.add_argument("--log-interval", type=int, default=100, help="ms per unit reading")

    @classmethod
    def from_options(cls, opts: argparse.Namespace) -> FioTarget:
        return cls(opts.dir, opts.size)

    @staticmethod
    def workload_from_options(opts: argparse.Namespace) -> dict[str, Any]:
        return {
            "rw": opts.rw,
            "bs": opts.bs,
            "size": opts.size,
            "runtime": opts.runtime,
            "ioengine": opts.ioengine,
            "iodepth": opts.iodepth,
            "direct": opts.direct,
            "numjobs": opts.numjobs,
            "rwmixread": opts.rwmixread,
            "log_interval": opts.log_interval,
        }

    @property
    def file(self) -> Path:
        if self.directory is None:
            raise TargetError(
                "--dir is required: name a directory on the device to measure "
                "(e.g. --dir /mnt/ssd/assay); a tmpfs directory measures memory, not a disk"
            )
        return self.directory / FILE_NAME

    def _check_dir(self) -> Path:
        """The --dir directory, made (mode 700) when missing, after checking no other
        user can swap it or what is in it: not a symbolic link, owned by this user or
        root, not writable by others (unless sticky, like /tmp), nor are the
        directories above it. As root, fio must not write through a planted link."""
        path = self.file.parent
        check_parents(path, "--dir")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        except OSError as exc:
            raise TargetError(f"--dir {path}: cannot create it: {exc.strerror}") from None
        check_trusted_dir(path, "--dir", "name a directory of your own")
        if not os.access(path, os.W_OK):
            raise TargetError(f"--dir {path}: not writable by this user")
        return path

    def _own_file(self, fresh: bool) -> None:
        """Make sure the data file is this user's regular file: ``fresh`` replaces it
        with an empty one (``O_EXCL``: a link planted meanwhile is an error, not
        followed); otherwise one that is missing is made and any other kind refused."""
        path = self.file
        if fresh:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()  # a link itself, never what it names
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            os.close(os.open(path, flags, 0o600))
            return
        except FileExistsError:
            if fresh:
                raise TargetError(f"{path} appeared while it was replaced") from None
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            raise TargetError(
                f"{path} is not a file of this user (a link or another user's file); "
                "Assay does not write through it: remove it and run setup"
            )

    def _fio_run(
        self, args: list[str], what: str, knobs: Mapping[str, str] | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        proc = subprocess.run(
            [_fio(), *args], capture_output=True, stdin=subprocess.DEVNULL, check=False
        )
        if proc.returncode != 0:
            raise TargetError(self._failure(proc, what, knobs or {}))
        return proc

    def _failure(
        self, proc: subprocess.CompletedProcess[bytes], what: str, knobs: Mapping[str, str]
    ) -> str:
        err = (proc.stderr or proc.stdout).decode(errors="replace").strip()
        lines = [ln for ln in err.splitlines() if ln.strip()][:4]
        msg = " ".join(lines)[-500:] or "no message"
        if "Invalid argument" in msg:
            msg += " (O_DIRECT (direct=1) needs a file system that supports it; tmpfs does not)"
        for k, v in knobs.items():
            if f"{k}={v}" in msg or (v and f" {v} " in f" {msg} "):
                return f"fio rejected knob {k}={v}: {msg}"
        return f"{what} failed (exit status {proc.returncode}): {msg}"

    def start(self, knobs: Mapping[str, str], workload: Mapping[str, Any] | None = None) -> None:
        _fio()
        self._check_dir()
        size = str((workload or {}).get("size", self.size))
        if not _size_ok(size):
            raise TargetError(f"--size {size!r}: expected a size such as 256M or 1G")
        self._own_file(fresh=True)
        # written in full (not sparse), so that reads touch real blocks
        self._fio_run(
            ["--name=fill", f"--filename={self.file}", f"--size={size}", "--rw=write",
             "--bs=1M", "--end_fsync=1"],
            "fio (writing the file)",
        )  # fmt: skip
        self.reset()

    def apply(self, knobs: Mapping[str, str]) -> dict[str, str]:
        for k in knobs:
            if not _OPTION.match(k):
                raise TargetError(f"knob {k}: not a fio job option name")
        return dict(knobs)

    def reset(self, workload: Mapping[str, Any] | None = None) -> None:
        try:
            fd = os.open(self.file, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:  # missing, or a link: nothing of ours to drop
            return
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)

    def stop(self) -> None:
        if self.directory is None:
            return
        try:
            dfd = os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except FileNotFoundError:
            return
        except OSError:
            raise TargetError(
                f"--dir {self.directory} is a symbolic link or not a directory: Assay "
                "removes nothing through it"
            ) from None
        try:  # relative to the directory itself: a link in its place is not followed
            with contextlib.suppress(FileNotFoundError, IsADirectoryError, PermissionError):
                os.unlink(FILE_NAME, dir_fd=dfd)
        finally:
            os.close(dfd)
        with contextlib.suppress(OSError):  # only when empty: never the user's files
            self.directory.rmdir()

    def describe(self) -> dict[str, Any]:
        version = (
            subprocess.run([_fio(), "--version"], capture_output=True, check=False)
            .stdout.decode()
            .strip()
        )
        st = os.statvfs(self.file.parent) if self.directory and self.directory.exists() else None
        fs = _filesystem(self.file.parent) if self.directory else ""
        return {
            "target": self.name,
            "version": version,
            "file": str(self.file) if self.directory else "",
            "filesystem": fs,
            "free_bytes": st.f_bavail * st.f_frsize if st else None,
        }

    def run(self, workload: Mapping[str, Any]) -> RunResult:
        w = dict(workload)
        knobs = self.apply(dict(w.pop("knobs", {}) or {}))
        self._check_dir()
        self._own_file(fresh=False)
        opts: dict[str, str] = {
            "rw": str(w.get("rw", "randread")),
            "bs": str(w.get("bs", "4k")),
            "size": str(w.get("size", self.size)),
            "runtime": f"{float(w.get('runtime', 3.0)):g}",
            "ioengine": str(w.get("ioengine", "psync")),
            "iodepth": str(int(w.get("iodepth", 1))),
            "direct": str(int(w.get("direct", 0))),
            "numjobs": str(int(w.get("numjobs", 1))),
            "rwmixread": str(int(w.get("rwmixread", 50))),
        }
        opts.update(knobs)
        interval = int(w.get("log_interval", 100))
        with tempfile.TemporaryDirectory(prefix="assay-fio-") as logdir:
            prefix = f"{logdir}/log"
            args = [
                "--name=assay", f"--filename={self.file}", "--time_based=1",
                "--group_reporting=1", "--output-format=json",
                *(f"--{k}={v}" for k, v in opts.items()),
            ]  # fmt: skip
            if interval > 0:
                args += [
                    f"--write_iops_log={prefix}", f"--write_bw_log={prefix}",
                    f"--write_lat_log={prefix}", f"--log_avg_msec={interval}",
                ]  # fmt: skip
            proc = self._fio_run(args, "fio", opts)
            try:
                doc = json.loads(_json_part(proc.stdout.decode(errors="replace")))
            except ValueError:
                raise TargetError(
                    "fio's output is not JSON: " + proc.stdout.decode(errors="replace")[-300:]
                ) from None
            rep = parse_fio_json(doc)
            logs = {
                kind: [r for f in sorted(Path(logdir).glob(f"log_{kind}.*.log"))
                       for r in parse_fio_log(f.read_text())]
                for kind in ("iops", "bw", "clat")
            }  # fmt: skip
        dirs = [d for d in ("read", "write") if d in rep]
        iops = sum(rep[d]["iops"] for d in dirs)
        bw = sum(rep[d]["bw_kib_s"] for d in dirs)
        pi: dict[str, float] = {"throughput": iops, "bandwidth_mib_s": bw / 1024.0}
        main = rep[dirs[0]]
        for key in ("latency_us_mean", "latency_us_p50", "latency_us_p95", "latency_us_p99",
                    "latency_us_p99_9"):  # fmt: skip
            if key in main:
                pi[key] = main[key]
        for d in dirs:
            pi[f"{d}_iops"] = rep[d]["iops"]
            pi[f"{d}_bandwidth_mib_s"] = rep[d]["bw_kib_s"] / 1024.0
            for key, value in rep[d].items():
                if key.startswith("latency_us"):
                    pi[f"{d}_{key}"] = value
        units = {
            "iops": interval_series(logs["iops"], "sum"),
            "bandwidth_mib_s": [v / 1024.0 for v in interval_series(logs["bw"], "sum")],
            "latency_us": [v / 1000.0 for v in interval_series(logs["clat"], "mean")],
        }
        return RunResult(
            self.name,
            opts["rw"],
            pi=pi,
            units=units,
            report={**rep, "throughput_unit": "IOPS", "options": opts},
            knobs=knobs,
            version=str(rep.get("version", "")),
            params=w,
        )


def _json_part(text: str) -> str:
    """fio may print notes before its JSON object; keep the object."""
    start = text.find("{")
    return text[start:] if start >= 0 else text


def _filesystem(path: Path) -> str:
    best, kind = "", ""
    with contextlib.suppress(OSError), open("/proc/mounts") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and str(path).startswith(parts[1]) and len(parts[1]) > len(best):
                best, kind = parts[1], parts[2]
    return f"{kind} ({best})" if kind else ""
