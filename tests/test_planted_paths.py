"""Nothing written through a planted path (#57): another local user (``nobody``) plants
links and folders at every predictable path in a shared place that root's Assay, its
examples' setup steps and its recipes would use; root then runs them, and no root file
may change, no folder or key of nobody's may be trusted.

Paths covered (each test names its own):
- ``--workers N``: ``$TMPDIR/dask-scratch-space`` (a 0777 folder of nobody's, with
  ``global.lock`` and ``purge.lock`` linked to a root file);
- a ``[cluster]`` study over SSH (loopback hosts): ``/tmp/dask-scratch-space`` on the
  hosts, when it does not exist yet;
- a store beside a study file in a sticky world-writable folder: the store itself, its
  ``-wal``, ``-shm`` and ``-journal``, the study's ``.lock``, ``.running`` and
  ``.pending``;
- the examples' setup steps: ``order_cache.py setup`` (the old
  ``$TMPDIR/assay-order-cache/f00000.tmp`` and a cache folder nobody made), the Redis,
  SQLite and fio targets' setup in a shared ``$TMPDIR``;
- the recipe ``examples/distributed/ssh-loopback-hosts.sh``: a folder of nobody's with
  nobody's key, a link, and a folder under a sticky shared one.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.store import study_file

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def _nobody_exists() -> bool:
    import pwd

    try:
        pwd.getpwnam("nobody")
    except KeyError:
        return False
    return True


if os.geteuid() != 0 or shutil.which("setpriv") is None or not _nobody_exists():
    pytest.skip("needs root, setpriv and the user nobody", allow_module_level=True)


def as_nobody(*argv: str) -> None:
    """Run ``argv`` as nobody (no groups, a bare environment); it must succeed."""
    res = subprocess.run(
        ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", *argv],
        capture_output=True, text=True, check=False, cwd="/",
        env={"PATH": "/usr/bin:/bin", "HOME": "/"},
    )  # fmt: skip
    assert res.returncode == 0, (argv, res.stderr)


def plant_link(at: Path, target: Path) -> None:
    as_nobody("ln", "-s", str(target), str(at))


def plant_dir(at: Path) -> None:
    as_nobody("mkdir", "-m", "777", str(at))


@pytest.fixture
def shared() -> Iterator[Path]:
    """A sticky world-writable folder, as /tmp is (made in /tmp: nobody must reach it)."""
    d = Path(tempfile.mkdtemp(prefix="assay-shared-", dir="/tmp"))
    os.chmod(d, 0o1777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


class Victims:
    """Root's files that planted links point at: one that exists (0600, known bytes)
    and a name where none exists (a link there must not make one)."""

    def __init__(self, folder: Path) -> None:
        self.file = folder / "root-only"
        self.file.write_bytes(b"root's secret\n")
        os.chmod(self.file, 0o600)
        self.absent = folder / "made-through-a-link"
        self._before = self._state()

    def _state(self) -> tuple[bytes, int, int, bool]:
        st = os.stat(self.file)
        return (
            hashlib.sha256(self.file.read_bytes()).digest(),
            st.st_mtime_ns,
            stat.S_IMODE(st.st_mode),
            self.absent.exists(),
        )

    def unchanged(self) -> bool:
        return self._state() == self._before


@pytest.fixture
def victims(tmp_path: Path) -> Victims:
    private = tmp_path / "root"
    private.mkdir(mode=0o700)
    return Victims(private)


def _assay(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> int:
    res = subprocess.run(
        [sys.executable, "-m", "assay", *args],
        capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, **(env or {})}, cwd=cwd,
    )  # fmt: skip
    return res.returncode


def _root_entries(folder: Path) -> list[tuple[str, int, bool]]:
    """What root left in ``folder``: (name, mode, is a link) of each entry root owns."""
    out = []
    for p in folder.iterdir():
        st = os.lstat(p)
        if st.st_uid == 0:
            out.append((p.name, stat.S_IMODE(st.st_mode), stat.S_ISLNK(st.st_mode)))
    return out


def test_workers_keep_no_scratch_space_in_the_shared_temporary_folder(
    tmp_path: Path, shared: Path, victims: Victims
) -> None:
    scratch = shared / "dask-scratch-space"
    plant_dir(scratch)
    for name in ("global.lock", "purge.lock"):
        plant_link(scratch / name, victims.file)
    plant_link(scratch / "worker-x.dirlock", victims.absent)
    rc = _assay(
        "run", "--workers", "2", "--runs", "3", "-q", "--store", str(tmp_path / "s.db"),
        "--", "true", env={"TMPDIR": str(shared)},
    )  # fmt: skip
    assert rc in (0, 5)  # 5: three runs give no valid CI
    assert victims.unchanged()
    assert sorted(p.name for p in scratch.iterdir()) == [
        "global.lock",
        "purge.lock",
        "worker-x.dirlock",
    ]  # Dask never used nobody's folder
    assert _root_entries(shared) == []  # its own private folder was removed at the end


def _study(folder: Path, name: str) -> Path:
    study = folder / f"{name}.toml"
    study.write_text(
        f'[study]\nname = "{name}"\n\n[benchmark]\ncommand = ["true"]\n\n[stop]\nmax_rounds = 3\n'
    )
    return study


def test_a_store_in_a_shared_folder_is_refused_and_nothing_written_through_its_names(
    shared: Path, victims: Victims
) -> None:
    study = _study(shared, "planted")
    store = shared / "planted.assay.db"
    names = [store, *(Path(f"{store}{s}") for s in ("-wal", "-shm", "-journal"))]
    names += [study_file(store, "planted", s) for s in (".lock", ".running", ".pending")]
    for i, name in enumerate(names):
        plant_link(name, victims.absent if i % 2 == 0 else victims.file)
    assert _assay("run", str(study), "-q") == 3
    assert _assay("run", "-q", "--runs", "3", "--store", str(store), "--", "true") == 3
    assert victims.unchanged()
    assert [e for e in _root_entries(shared) if e[0] != study.name] == []


def test_a_stores_own_files_are_never_opened_through_a_link(tmp_path: Path) -> None:
    """In a folder of root's own (the store is allowed there), a link at the lock's or
    the running note's name (left by anyone) is refused or replaced, never written
    through; the store is made 0600."""
    from assay.errors import StoreError
    from assay.execute.leftovers import note_running, stop_leftover
    from assay.store import Store

    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    store = tmp_path / "s.assay.db"
    study_file(store, "x", ".lock").symlink_to(victim)
    with Store(store) as st:
        assert stat.S_IMODE(os.stat(store).st_mode) == 0o600
        with pytest.raises(StoreError, match="symbolic link"):
            st.lock_study("x")
    note = study_file(store, "x", ".running")
    note.symlink_to(victim)
    assert stop_leftover(note) is None  # a link is not read as a note
    note_running(note, ["true"], False, "m")
    assert victim.read_text() == "keep\n" and not note.is_symlink()
    linked = tmp_path / "linked.assay.db"
    linked.symlink_to(victim)
    with pytest.raises(StoreError):
        Store(linked).close()  # the target is no regular store: SQLite refuses it...
    assert victim.read_text() == "keep\n"  # ...and nothing was written to it


def test_the_order_examples_setup_writes_only_in_a_folder_of_its_own(
    tmp_path: Path, shared: Path, victims: Victims
) -> None:
    old = shared / "assay-order-cache"  # the name the setup used until #57
    plant_dir(old)
    plant_link(old / "f00000.tmp", victims.file)
    plant_link(old / "f00000", victims.absent)
    cache = tmp_path / "root" / "cache"
    env = {**os.environ, "TMPDIR": str(shared), "ASSAY_ORDER_CACHE": str(cache)}
    script = str(EXAMPLES / "order_cache.py")
    res = subprocess.run([sys.executable, script, "setup"], env=env, check=False, timeout=300)
    assert res.returncode == 0
    assert stat.S_IMODE(os.stat(cache).st_mode) == 0o700 and len(list(cache.iterdir())) == 1000
    # a cache folder that nobody made (in a shared folder) is refused, not used
    theirs = shared / "their-cache"
    plant_dir(theirs)
    plant_link(theirs / "f00000", victims.file)
    env["ASSAY_ORDER_CACHE"] = str(theirs)
    refused = subprocess.run(
        [sys.executable, script, "setup"], env=env, capture_output=True, text=True, check=False
    )
    assert refused.returncode != 0 and "mode 700" in refused.stderr
    assert victims.unchanged()
    assert sorted(p.name for p in old.iterdir()) == ["f00000", "f00000.tmp"]


@pytest.mark.parametrize("target", ["redis", "sqlite", "fio"])
def test_a_targets_setup_in_a_shared_temporary_folder_makes_only_private_folders(
    target: str, tmp_path: Path, shared: Path, victims: Victims
) -> None:
    need = {"redis": "redis-server", "fio": "fio", "sqlite": "true"}[target]
    if shutil.which(need) is None:
        pytest.skip(f"no {need}: run scripts/install-targets.sh")
    # names a careless implementation would use, planted in the shared folder
    for name in (f"assay-{target}", f"assay-{target}-data", "assay", f"{target}.log"):
        plant_link(shared / name, victims.file)
    state = ["--state", str(tmp_path / "state")]
    extra = {
        "fio": ["--dir", str(tmp_path / "fio"), "--size", "1M"],
        "sqlite": ["--dir", str(tmp_path / "sqlite")],
    }.get(target, state)
    env = {**os.environ, "TMPDIR": str(shared)}
    base = [sys.executable, "-m", "assay.targets", target]
    try:
        res = subprocess.run(
            [*base, "setup", *extra],
            env=env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert res.returncode == 0, res.stderr
        made = _root_entries(shared)
        assert all(mode == 0o700 and not link for _, mode, link in made), made
    finally:
        subprocess.run([*base, "teardown", *extra], env=env, check=False,
                       capture_output=True, timeout=120)  # fmt: skip
    assert victims.unchanged()


def _recipe(folder: Path, port: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(EXAMPLES / "distributed" / "ssh-loopback-hosts.sh"), str(folder), str(port)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def test_the_loopback_ssh_recipe_trusts_no_folder_or_key_it_did_not_make(
    shared: Path, victims: Victims
) -> None:
    if not Path("/usr/sbin/sshd").exists() or shutil.which("ssh-keygen") is None:
        pytest.skip("needs sshd: run scripts/install-targets.sh")
    # nobody's folder with nobody's key in it, where the recipe's old default was
    theirs = shared / "assay-ssh"
    plant_dir(theirs)
    as_nobody("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(theirs / "client_key"))
    plant_link(theirs / "sshd.pid", victims.file)
    plant_link(theirs / "known_hosts", victims.absent)
    res = _recipe(theirs, 1)
    assert res.returncode != 0 and "can be changed by other users" in res.stderr
    assert not (theirs / "authorized_keys").exists()
    # below a folder no other user can change (as the home folder's default is): a
    # folder handed to nobody with nobody's key, a link, a folder open to others
    cache = Path(os.path.expanduser("~/.cache/assay"))
    cache.mkdir(mode=0o700, parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="test-recipe-", dir=cache))
    try:
        given = base / "given"
        given.mkdir(mode=0o700)
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                        str(given / "client_key")], check=True)  # fmt: skip
        shutil.chown(given, "nobody")
        for p in given.iterdir():
            shutil.chown(p, "nobody")
        (base / "linked").symlink_to(victims.file.parent)
        (base / "open").mkdir(mode=0o755)
        os.chmod(base / "open", 0o755)
        for name in ("given", "linked", "open"):
            res = _recipe(base / name, 1)
            assert res.returncode != 0 and "not a folder of uid 0" in res.stderr, name
        assert not (given / "authorized_keys").exists()
        assert sorted(p.name for p in victims.file.parent.iterdir()) == [victims.file.name]
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert victims.unchanged()
    text = (EXAMPLES / "distributed" / "ssh-loopback-hosts.sh").read_text()
    assert "StrictModes yes" in text and "StrictModes no" not in text


@pytest.fixture
def ssh_hosts(tmp_path: Path) -> Iterator[dict[str, object]]:
    from test_roles_ssh import _free_port

    if not Path("/usr/sbin/sshd").exists() or shutil.which("ssh-keygen") is None:
        pytest.skip("needs sshd: run scripts/install-targets.sh")
    cache = Path(os.path.expanduser("~/.cache/assay"))
    cache.mkdir(mode=0o700, parents=True, exist_ok=True)
    d = Path(tempfile.mkdtemp(prefix="test-ssh-", dir=cache))
    port = _free_port()
    res = _recipe(d, port)
    assert res.returncode == 0, res.stderr
    try:
        yield {"dir": d, "port": port}
    finally:
        with contextlib.suppress(OSError, ValueError):
            os.kill(int((d / "sshd.pid").read_text()), 15)
        shutil.rmtree(d, ignore_errors=True)


def test_an_ssh_cluster_keeps_its_workers_scratch_space_private(
    tmp_path: Path, victims: Victims, ssh_hosts: dict[str, object]
) -> None:
    pytest.importorskip("asyncssh")
    scratch = Path("/tmp/dask-scratch-space")  # the hosts' default: their own /tmp
    planted = not scratch.exists() and not scratch.is_symlink()
    if planted:
        plant_dir(scratch)
        for name in ("global.lock", "purge.lock"):
            plant_link(scratch / name, victims.file)
    before = sorted(p.name for p in scratch.iterdir()) if scratch.is_dir() else []
    d = ssh_hosts["dir"]
    study = tmp_path / "ssh.toml"
    study.write_text(
        '[study]\nname = "ssh-scratch"\n\n[benchmark]\ncommand = ["true"]\n\n'
        "[stop]\nmax_rounds = 3\n\n[cluster]\n"
        f'hosts = ["127.0.0.1", "127.0.0.2"]\nport = {ssh_hosts["port"]}\n'
        f'key = "{d}/client_key"\nknown_hosts = "{d}/known_hosts"\n'
        f'remote_python = "{sys.executable}"\nidle_timeout = 5\n'
    )
    try:
        assert _assay("run", str(study), "-q") in (0, 5)
        assert victims.unchanged()
        after = sorted(p.name for p in scratch.iterdir()) if scratch.is_dir() else []
        assert after == before  # no worker or scheduler made a folder there
    finally:
        if planted:
            shutil.rmtree(scratch, ignore_errors=True)


def test_a_pi_never_reads_a_file_of_the_kernels(tmp_path: Path) -> None:
    """A PI's file under /proc (a link to it, too) is refused: /proc/self/environ would
    copy the driver's environment into a stored trial error."""
    from assay.execute.readers import ReadError, _read_file
    from assay.spec import SpecError, parse_spec_text

    study = (
        '[study]\nname = "p"\n[benchmark]\ncommand = ["true"]\n'
        '[[pi]]\nname = "x"\nsource = "file"\nfile = "{file}"\npattern = "(.*)"\n'
    )
    for file in ("/proc/self/environ", "/sys/kernel/x"):
        with pytest.raises(SpecError, match="kernel's"):
            parse_spec_text(study.format(file=file))
    parse_spec_text(study.format(file="out/proc/x"))  # a folder of that name is fine
    link = tmp_path / "result.txt"
    link.symlink_to("/proc/self/environ")
    with pytest.raises(ReadError, match="kernel's"):
        _read_file(link, "PI x")
