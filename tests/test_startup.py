"""Issue #17: ``assay run`` reaches its first trial without importing SciPy, pandas or
the other heavy libraries (they cost ~1 s of start-up), and the launch-overhead probe is
measured once per machine and cached, not before every session's first trial.

The end-to-end checks look from the first trial itself: its command is a small script
that reads what its parent (the ``assay`` process) has loaded at that moment.  No wall
time is asserted anywhere (bench/bench_startup.py measures it).
"""

from __future__ import annotations

import json
import math
import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from assay.execute.overhead import (
    MAX_AGE_S,
    LaunchOverhead,
    cache_key,
    launch_moved,
    measure_launch_overhead,
    probe_again,
    probe_launch_overhead,
    read_cache,
    write_cache,
)
from assay.execute.peak import spawner

HEAVY = (
    "scipy",
    "pandas",
    "sklearn",
    "statsmodels",
    "dask",
    "distributed",
    "kneed",
    "optuna",
    "matplotlib",
)

#: The benchmark command of the end-to-end tests: on its first run, the shared objects
#: of heavy packages that its parent has mapped, and whether it saw NumPy's (which the
#: parent has loaded: the check reads the right process).
FIRST_TRIAL = """\
import json, os, re, sys
out = sys.argv[1]
if not os.path.exists(out):
    maps = open(f"/proc/{os.getppid()}/maps").read().splitlines()
    paths = sorted({line.split()[-1] for line in maps if "/" in line})
    heavy = [p for p in paths if re.search(r"/(scipy|pandas|sklearn|statsmodels|matplotlib)"
                                           r"(\\.libs)?/", p)]
    numpy = any(re.search(r"/numpy/.*\\.so", p) for p in paths)
    with open(out, "w") as f:
        json.dump([heavy, numpy], f)
"""

#: Runs ``assay`` in this process with an audit hook that, at the first spawn of the
#: benchmark command (marked by its script's name), writes which heavy modules are
#: imported (pure-Python packages such as kneed, optuna and dask map no shared object)
#: and how many other programs were spawned before it (the overhead probe's launches).
AUDIT = """\
import json, runpy, sys
{preload}
heavy, out, marker = {heavy!r}, sys.argv[1], sys.argv[2]
seen, spawns = [], []
def hook(event, args):
    if event in ("os.posix_spawn", "subprocess.Popen", "os.exec") and not seen:
        if marker not in repr(args):
            spawns.append(event)
            return
        seen.append(sorted(m for m in sys.modules if m.split(".")[0] in heavy))
        with open(out, "w") as f:
            json.dump({{"modules": seen[0], "spawns_before": len(spawns)}}, f)
sys.addaudithook(hook)
sys.argv = ["assay", *sys.argv[3:]]
runpy.run_module("assay", run_name="__main__", alter_sys=True)
"""

STUDY = """\
[study]
name = "startup"

[benchmark]
command = [{py}, {script}, {out}]
"""

linux_only = pytest.mark.skipif(
    not Path("/proc/self/maps").exists(), reason="reads /proc/PID/maps (Linux)"
)


def _target(tmp_path: Path, mode: str, out: Path) -> list[str]:
    script = tmp_path / "first_trial.py"
    script.write_text(FIRST_TRIAL)
    command = [sys.executable, str(script), str(out)]
    if mode == "quick":
        return ["--", *command]
    study = tmp_path / "study.toml"
    study.write_text(STUDY.format(py=json.dumps(command[0]), script=json.dumps(command[1]),
                                  out=json.dumps(command[2])))  # fmt: skip
    return [str(study)]


def _env(tmp_path: Path) -> dict[str, str]:
    # an empty user cache: the first run on a machine, when the overhead probe runs too
    return {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}


def _run(argv: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        argv, cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True, timeout=300
    )
    assert done.returncode in (0, 5), done.stderr  # 5: one round is short of the target
    return done


@linux_only
@pytest.mark.parametrize("mode", ["study", "quick"])
def test_first_trial_starts_before_scipy_or_pandas_is_loaded(tmp_path: Path, mode: str) -> None:
    out = tmp_path / "first-trial.txt"
    argv = [sys.executable, "-m", "assay", "run", "-r", "1", "-q", "--json", "result.json"]
    _run([*argv, *_target(tmp_path, mode, out)], tmp_path)
    heavy, saw_numpy = json.loads(out.read_text())
    assert saw_numpy, "the check did not read the assay process's maps"
    assert heavy == []
    # the probe still reports, in the same form as before
    launch = json.loads((tmp_path / "result.json").read_text())["overhead"]["launch"]
    assert list(launch) == [
        "with_assay_s",
        "without_assay_s",
        "difference_s",
        "difference_low_s",
        "difference_high_s",
        "repetitions",
        "probe",
        "age_s",  # how old the cached probe's figure is (issue #44)
        "note",  # probed again at the session's end, and why (issue #60)
        "moved",  # ... and a bare launch then took notably longer or shorter
    ]
    assert launch["repetitions"] == 20
    assert launch["difference_low_s"] <= launch["difference_s"] <= launch["difference_high_s"]


def _audited(tmp_path: Path, mode: str, preload: str = "") -> dict[str, object]:
    """What the audit hook saw at the first trial of ``assay run -r 1`` (with ``--fresh``:
    a second call runs its trial again, with the same user cache)."""
    out, seen = tmp_path / "first-trial.txt", tmp_path / "audit.json"
    out.unlink(missing_ok=True)
    seen.unlink(missing_ok=True)
    wrapper = tmp_path / "audit.py"
    wrapper.write_text(AUDIT.format(heavy=HEAVY, preload=preload))
    argv = [sys.executable, str(wrapper), str(seen), "first_trial.py", "run", "--fresh"]
    _run([*argv, "-r", "1", "-q", *_target(tmp_path, mode, out)], tmp_path)
    assert out.exists(), "the benchmark command did not run"
    found: dict[str, object] = json.loads(seen.read_text())
    return found


@pytest.mark.parametrize("mode", ["study", "quick"])
def test_no_heavy_module_is_imported_before_the_first_trial(tmp_path: Path, mode: str) -> None:
    first = _audited(tmp_path, mode)
    assert first["modules"] == []
    # the probe: 20 launches through Assay, 20 bare; the peak spawner's build (its cache
    # is empty too), where there is a C compiler
    assert first["spawns_before"] == 40 + (spawner() is not None)
    again = _audited(tmp_path, mode)  # the probe is cached: nothing runs before the trial
    assert again == {"modules": [], "spawns_before": 0}


def test_the_audit_sees_heavy_modules_when_they_are_there(tmp_path: Path) -> None:
    # the check can fail: a benchmark spawned after importing pandas is caught
    modules = _audited(tmp_path, "quick", preload="import pandas")["modules"]
    assert isinstance(modules, list) and "pandas" in modules


# the cache of the launch-overhead probe


def test_the_probe_is_cached_and_reused(tmp_path: Path) -> None:
    path = tmp_path / "assay" / "launch-overhead.json"
    first = measure_launch_overhead(repetitions=3, cache=path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again = measure_launch_overhead(repetitions=3, cache=path)
    assert again.with_assay == first.with_assay  # the same launches: read, not re-measured
    assert again.without_assay == first.without_assay
    assert {**again.as_dict(), "age_s": 0} == {**first.as_dict(), "age_s": 0}
    assert again.age_s >= 0 and first.measured_at is None  # run now; read from the cache
    other = measure_launch_overhead(repetitions=4, cache=path)  # another key: measured again
    assert other.repetitions == 4


def _cached(tmp_path: Path) -> tuple[Path, str, LaunchOverhead]:
    path = tmp_path / "launch-overhead.json"
    o = LaunchOverhead((0.003, 0.004, 0.005), (0.001, 0.0012, 0.0011), "/usr/bin/true")
    key = cache_key(["/usr/bin/true"], 3)
    assert write_cache(path, key, o, now=1000.0)
    return path, key, o


def test_a_fresh_cache_of_the_same_key_is_read(tmp_path: Path) -> None:
    path, key, o = _cached(tmp_path)
    got = read_cache(path, key, 3, now=1000.0 + MAX_AGE_S - 1)
    assert got == (o.with_assay, o.without_assay, 1000.0)


def test_a_cache_measured_at_another_load_is_passed_over(tmp_path: Path) -> None:
    """Issue #44: a probe cached at a busy moment (+4.47 ms) served a quiet machine."""
    path, key, _ = _cached(tmp_path)
    data = json.loads(path.read_text())
    data["load"] = 3.0  # per core: a busy machine
    path.write_text(json.dumps(data))
    assert read_cache(path, key, 3, now=1000.0, load=3.2) is not None
    assert read_cache(path, key, 3, now=1000.0, load=0.2) is None
    assert read_cache(path, key, 3, now=1000.0) is not None  # the load unknown now


@pytest.mark.parametrize(
    "spoil",
    [
        "old",
        "future",
        "other key",
        "other size",
        "readable by others",
        "link",
        "not json",
        "bad values",
    ],
)
def test_a_stale_foreign_or_broken_cache_is_passed_over(tmp_path: Path, spoil: str) -> None:
    path, key, _ = _cached(tmp_path)
    now, reps = 1000.0, 3
    if spoil == "old":
        now += MAX_AGE_S
    elif spoil == "future":
        now -= 1.0
    elif spoil == "other key":
        key = cache_key(["/bin/true"], 3)
    elif spoil == "other size":
        reps = 4
    elif spoil == "readable by others":
        path.chmod(0o644)
    elif spoil == "link":
        link = tmp_path / "link.json"
        link.symlink_to(path)
        path = link
    elif spoil == "not json":
        path.write_text("{")
    elif spoil == "bad values":
        data = json.loads(path.read_text())
        data["with_assay"] = [0.1, -1.0, 0.2]
        path.write_text(json.dumps(data))
    assert read_cache(path, key, reps, now=now) is None


def test_the_key_follows_the_assay_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    before = cache_key(["/usr/bin/true"], 20)
    monkeypatch.setenv("ASSAY_PROCESS_TREE", "scan")  # changes how trials are launched
    assert cache_key(["/usr/bin/true"], 20) != before
    monkeypatch.delenv("ASSAY_PROCESS_TREE")
    monkeypatch.setenv("ASSAY_TRIAL", "x")  # a trial's own marker: not the machine's
    assert cache_key(["/usr/bin/true"], 20) == before


def test_an_unwritable_cache_does_not_stop_the_probe(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    o = measure_launch_overhead(repetitions=2, cache=blocker / "sub" / "x.json")
    assert o.repetitions == 2


@pytest.mark.parametrize(("bare", "moved"), [(0.0035, True), (0.0008, False), (0.0002, False)])
def test_a_probe_run_again_says_when_a_bare_launch_moved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bare: float, moved: bool
) -> None:
    """#60: beside two busy loops a no-op's launch took 3.5 ms where the cached probe,
    made quiet, said 0.6: the probe run again at the session's end says so, and the
    cache holds the new launches; a move under 0.5 ms (or half the cached figure) is
    not one."""
    import assay.execute.overhead as overhead

    cached = LaunchOverhead((0.0011,) * 3, (0.0006,) * 3, "true", measured_at=1000.0)
    fresh = LaunchOverhead((bare + 0.0005,) * 3, (bare,) * 3, "true")
    monkeypatch.setattr(overhead, "probe_launch_overhead", lambda n, c: fresh)
    path = tmp_path / "launch-overhead.json"
    got = probe_again(cached, "other work disturbed 9 of its 10 watched trials", cache=path)
    assert got.without_assay == fresh.without_assay and got.measured_at is None
    assert got.moved is moved and "other work disturbed 9 of its 10" in got.note
    assert ("launching a no-op took" in got.note) is moved
    assert got.as_dict()["moved"] is moved
    key = cache_key(overhead._noop_argv(), 3)
    assert read_cache(path, key, 3) is not None  # the cache holds the new launches


def test_bare_launches_at_a_sessions_end_check_a_cached_probe() -> None:
    slow = LaunchOverhead((0.2,) * 3, (0.2,) * 3, "true", measured_at=1000.0)
    said = launch_moved(slow, launches=3)  # a no-op never takes 200 ms here
    assert said is not None and said.endswith("not 200.00 ms")


def test_a_session_disturbed_by_other_work_probes_its_launch_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The probe is run again only when the session took it from the cache, its trials
    ran here, and other work disturbed at least a quarter of its watched trials."""
    import assay.execute.overhead as overhead
    import assay.studies.base as base
    from assay.store import TrialRecord

    fresh = LaunchOverhead((0.004,) * 2, (0.0035,) * 2, "true")
    monkeypatch.setattr(overhead, "probe_launch_overhead", lambda n, c: fresh)
    monkeypatch.setattr(overhead, "cache_path", lambda: None)
    trials = [TrialRecord(seq=i, status="ok") for i in range(8)]

    def study(overhead_: LaunchOverhead | None, bad: int, env: dict[str, str] | None = None
              ) -> base.OpenStudy:  # fmt: skip
        monkeypatch.setattr(
            base, "disturbed_trials", lambda ts: ({(0, i) for i in range(bad)}, len(ts))
        )
        return base.OpenStudy(None, 1, 1, trials, 0, env or {}, overhead_)  # type: ignore[arg-type]

    cached = LaunchOverhead((0.0011,) * 2, (0.0006,) * 2, "true", measured_at=1000.0)
    now = LaunchOverhead((0.0011,) * 2, (0.0006,) * 2, "true")
    spot: list[str | None] = [None]  # what the bare launches at the session's end say
    monkeypatch.setattr(overhead, "launch_moved", lambda o: spot[0])
    assert base.session_overhead(study(cached, 1)) is cached  # 1 of 8: under a quarter
    spot[0] = "a bare launch took 3.50 ms, not 0.60 ms"
    got = base.session_overhead(study(cached, 1))  # the trials too short to tell
    assert got is not None and got.moved and spot[0] in got.note
    spot[0] = None
    assert base.session_overhead(study(now, 8)) is now  # probed in this session already
    assert base.session_overhead(study(cached, 8, {"executor": "dask"})) is cached
    st = study(cached, 2 + 1)
    again = base.session_overhead(st)
    assert again is not None and again.moved and st.overhead is again
    assert "other work disturbed 3 of the 8 watched trials" in again.note
    assert base.session_overhead(st) is again  # once: now it was probed in this session


def test_the_interval_pairs_each_launch_with_the_bare_one_after_it() -> None:
    a = (0.0031, 0.0042, 0.0050, 0.0038, 0.0045)
    b = (0.0010, 0.0012, 0.0011, 0.0014, 0.0013)
    o = LaunchOverhead(a, b, "true", confidence=0.9)
    from scipy import stats

    ref = stats.ttest_rel(a, b).confidence_interval(0.9)
    assert o.difference_s == pytest.approx(np.mean(a) - np.mean(b))
    assert (o.difference_low_s, o.difference_high_s) == pytest.approx((ref.low, ref.high))
    # a drift shared by the pairs does not widen it (Welch's would be 3.3x as wide here)
    drift = tuple(0.001 * k for k in range(5))
    shifted = LaunchOverhead(
        tuple(x + d for x, d in zip(a, drift, strict=True)),
        tuple(y + d for y, d in zip(b, drift, strict=True)),
        "true",
        confidence=0.9,
    )
    assert shifted.difference_low_s == pytest.approx(o.difference_low_s)


def test_the_interval_of_launches_unequal_in_number_is_welchs() -> None:
    a = (0.0031, 0.0042, 0.0050, 0.0038, 0.0045)
    b = (0.0010, 0.0012, 0.0011, 0.0014)
    o = LaunchOverhead(a, b, "true", confidence=0.9)
    from scipy import stats

    # Welch–Satterthwaite by hand
    va, vb = np.var(a, ddof=1) / len(a), np.var(b, ddof=1) / len(b)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    half = stats.t.ppf(0.95, df) * math.sqrt(va + vb)
    diff = np.mean(a) - np.mean(b)
    assert o.difference_s == pytest.approx(diff)
    assert o.difference_low_s == pytest.approx(diff - half)
    assert o.difference_high_s == pytest.approx(diff + half)
    assert o.repetitions == 5 and o.with_assay_s == pytest.approx(np.mean(a))
    one = LaunchOverhead((0.003,), (0.001,), "true")
    assert (one.difference_low_s, one.difference_high_s) == (-math.inf, math.inf)


def test_probing_needs_a_launch() -> None:
    with pytest.raises(ValueError, match="repetitions"):
        probe_launch_overhead(repetitions=0)


def _heavy_after(calls: list[list[str]]) -> str:
    """The output of ``assay ARGS`` for each of ``calls`` in a fresh interpreter, then
    ``HEAVY [...]``: which of pydantic, NumPy, SciPy, pandas and the study-file models
    those calls imported."""
    code = (
        "import sys\n"
        "from assay.cli import main\n"
        f"for args in {calls!r}:\n"
        "    try:\n"
        "        main(args)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "heavy = sorted(m for m in ('pydantic', 'numpy', 'scipy', 'pandas', 'assay.spec')"
        " if m in sys.modules)\n"
        "print('HEAVY', heavy)\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    ).stdout


def test_version_help_and_completion_import_no_subcommand() -> None:
    """Issue #35: ``assay --version`` took 0.9-1.0 s, every completion Tab too: the group
    imported every subcommand and so pydantic, NumPy and SciPy."""
    out = _heavy_after([["--version"], ["--help"]])
    assert "HEAVY []" in out, out
    assert "gc " in out and "Remove old studies" in out  # the listing, from COMMANDS


def test_every_listed_command_loads_and_is_what_its_line_says() -> None:
    import click

    from assay.cli import COMMANDS, main

    ctx = click.Context(main)
    for name in COMMANDS:
        command = main.get_command(ctx, name)
        assert isinstance(command, click.Command) and command.name == name
        first = (command.help or "").strip().splitlines()[0]
        # the listing's line is the command's own first line, or says the same shorter
        assert first.split()[0] == COMMANDS[name][1].split()[0], (name, first)


@pytest.mark.parametrize(
    "command",
    [
        "run",
        "compare",
        "order",
        "sweep",
        "knobs",
        "show",
        "report",
        "ls",
        "export",
        "rm",
        "gc",
        "history",
    ],
)
def test_a_subcommands_help_imports_neither_pydantic_nor_numpy(command: str) -> None:
    """Issue #35: ``assay run --help`` took 263 ms: cli/common imported the study-file
    models (pydantic) and the store (NumPy) to catch their errors."""
    out = _heavy_after([[command, "--help"]])
    assert "HEAVY []" in out, out
    assert "Usage: " in out
