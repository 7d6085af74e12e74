"""Issue #18: the GitHub Actions example (examples/ci/) measures a pull request's head
against its base and fails on a regression.  Its measuring script runs here as the
workflow runs it, in a real git repository (in a folder whose name has a space) where
the head commit made the benchmark twice as slow."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from assay.cli import exits

CI = Path(__file__).parent.parent / "examples" / "ci"
SCRIPT = CI / "compare-base-head.sh"


def git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": os.environ["PATH"], "HOME": str(repo)}  # fmt: skip
    done = subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
    return done.stdout.decode().strip()


def commit_bench(repo: Path, seconds: float, message: str) -> str:
    bench = repo / "bench" / "run.sh"
    bench.parent.mkdir(exist_ok=True)
    bench.write_text(f"#!/bin/sh\nexec sleep {seconds}\n")
    bench.chmod(0o755)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD")


def compare(repo: Path, base: str, out: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.update(ASSAY_BASE=base, ASSAY_BENCH="bench/run.sh", ASSAY_BUILD="touch built",
               ASSAY_OUT=str(out), ASSAY_ARGS="-r 30 --no-monitor --no-overhead",
               PATH=f"{Path(sys.executable).parent}:{env['PATH']}")  # fmt: skip
    return subprocess.run(["sh", str(SCRIPT)], cwd=repo, env=env, capture_output=True, text=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("needs git")
    r = tmp_path / "my repo"
    r.mkdir()
    git(r, "init", "-q")
    return r


def test_a_twice_as_slow_head_fails_the_check(repo: Path, tmp_path: Path) -> None:
    base = commit_bench(repo, 0.02, "fast")
    commit_bench(repo, 0.04, "slow")
    out = tmp_path / "out dir"
    done = compare(repo, base, out)
    # 1: worse; 5 only if a variant's timings gave no interval on a loaded machine
    assert done.returncode in (exits.WORSE, exits.SHORT), done.stdout + done.stderr
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "| PI | rank | variant |" in summary and "head" in summary and "base" in summary
    if done.returncode == exits.WORSE:
        assert "❌ **worse**: head is worse than base" in summary
    assert (out / "report.html").stat().st_size > 1000
    assert (repo / "built").exists()  # the build ran in the head tree ...
    assert git(repo, "worktree", "list").count("\n") == 0  # ... and the base tree is gone
    # the script's umask (077: its results are its user's), as any new file (#38)
    assert oct((out / "result.json").stat().st_mode & 0o777) == "0o600"


def test_the_same_code_passes(repo: Path, tmp_path: Path) -> None:
    base = commit_bench(repo, 0.02, "fast")
    (repo / "README").write_text("docs only\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "docs")
    done = compare(repo, base, tmp_path / "out")
    assert done.returncode in (exits.OK, exits.SHORT), done.stdout + done.stderr


def test_the_workflow_runs_the_script_with_its_settings() -> None:
    import yaml

    flow = yaml.safe_load((CI / "assay-pr.yml").read_text(encoding="utf-8"))
    job = flow["jobs"]["assay"]
    steps = " ".join(str(s.get("run", "")) for s in job["steps"])
    assert "sh examples/ci/compare-base-head.sh" in steps
    assert "GITHUB_STEP_SUMMARY" in steps
    script = SCRIPT.read_text(encoding="utf-8")
    for key in job["env"]:  # every setting the workflow gives is one the script reads
        assert key in script, key
    checkout = next(
        s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/checkout")
    )
    assert checkout["with"]["fetch-depth"] == 0  # the base commit must be fetched
