"""Issue #43: the optional dependencies are extras, and a missing one is a one-line
error that names the extra to install (exit status 3), never an ImportError traceback.

The command-line checks run ``assay`` in a fresh interpreter in which the extra's
modules cannot be imported (``sys.modules[name] = None``), so that nothing this test
process imported earlier hides the missing package.
"""

from __future__ import annotations

import ast
import csv
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from assay.cli import exits
from assay.extras import MissingExtra, require_extra

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "assay"

#: Extra -> the modules it brings that Assay imports.
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "cluster": ("dask", "distributed", "asyncssh", "cryptography"),
    "models": ("sklearn",),
    "tune": ("optuna",),
    "export": ("pyarrow",),
}
#: Modules that only the tests import.
TEST_ONLY = ("statsmodels",)
EVERY_OPTIONAL = tuple(m for ms in EXTRA_MODULES.values() for m in ms) + TEST_ONLY

#: Runs ``assay ARGS`` with the modules of argv[1] (comma-separated) not importable.
DRIVER = """
import sys
for name in filter(None, sys.argv[1].split(",")):
    sys.modules[name] = None
from assay.cli import main
main(sys.argv[2:], prog_name="assay")
"""


def assay_without(
    modules: tuple[str, ...] | list[str], *args: str, cwd: Path
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", DRIVER, ",".join(modules), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def assert_one_line_error(res: subprocess.CompletedProcess[str], expected: str) -> None:
    assert res.returncode == exits.STUDY, (res.returncode, res.stdout, res.stderr)
    assert "Traceback" not in res.stderr + res.stdout
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert lines[-1] == f"error: {expected} in Assay's folder", res.stderr
    assert sum(line.startswith("error:") for line in lines) == 1, res.stderr


def _requirement_names(requirements: list[str]) -> set[str]:
    """``dask[distributed]>=2024.1`` -> ``dask``: the distribution names, normalised."""
    names = set()
    for r in requirements:
        m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", r)
        assert m is not None, r
        names.add(re.sub(r"[-_.]+", "-", m[1]).lower())
    return names


def _pyproject() -> dict[str, object]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        project: dict[str, object] = tomllib.load(f)["project"]
    return project


# -- the helper ----------------------------------------------------------------------


def test_require_extra_returns_the_module() -> None:
    import math

    assert require_extra("math", "models", "arithmetic") is math


def test_a_missing_module_names_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sklearn", None)  # import sklearn now fails
    with pytest.raises(MissingExtra) as caught:
        require_extra("sklearn", "models", "the MLP model")
    assert str(caught.value) == (
        "the MLP model needs scikit-learn: pip install -e '.[models]' in Assay's folder"
    )
    assert caught.value.extra == "models"
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_a_missing_extra_is_a_study_error_on_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.errors import StudyError

    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(StudyError) as caught:
        require_extra("distributed", "cluster", "--workers")
    assert "\n" not in str(caught.value)
    assert "pip install -e '.[cluster]'" in str(caught.value)


def test_an_installed_package_that_cannot_be_imported_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pkg = tmp_path / "assay_fake_extra"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("import assay_fake_dependency_not_installed\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(
        MissingExtra, match=r"'\.\[models\]' in Assay's folder \(it is installed, but importing"
    ):
        require_extra("assay_fake_extra", "models", "the fake model")
    sys.modules.pop("assay_fake_extra", None)


def test_the_tuner_keeps_its_own_error_class(monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.designs.tune import TuneUnavailable, _optuna

    monkeypatch.setitem(sys.modules, "optuna", None)
    with pytest.raises(TuneUnavailable, match=r"^tuning \(--tune\) needs Optuna: pip install"):
        _optuna()
    assert issubclass(TuneUnavailable, MissingExtra)


def test_the_sweep_model_is_checked_before_anything_is_measured(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from assay.stats.models import make_model, require_model

    monkeypatch.setitem(sys.modules, "sklearn", None)
    require_model("anova")  # no scikit-learn needed
    with pytest.raises(MissingExtra, match=r"^the linear model needs scikit-learn"):
        require_model("linear")
    import pandas as pd

    X = pd.DataFrame({"n": [1.0, 2.0, 3.0]})
    with pytest.raises(MissingExtra, match=r"^the MLP model needs scikit-learn"):
        make_model("mlp").fit(X, [1.0, 2.0, 3.0])


def test_the_sweeps_turning_points_need_no_scikit_learn(monkeypatch: pytest.MonkeyPatch) -> None:
    """The isotonic fit behind knees and turning points is SciPy's (core), and gives
    what scikit-learn's IsotonicRegression gave."""
    import numpy as np

    from assay.stats.trends import _isotonic, near_monotone

    rng = np.random.default_rng(0)
    x = rng.integers(0, 8, 40).astype(float)  # ties pooled, as scikit-learn pools them
    y = rng.normal(size=40)
    expected = {}
    sk = pytest.importorskip("sklearn.isotonic")
    for inc in (True, False):
        expected[inc] = sk.IsotonicRegression(increasing=inc).fit_transform(x, y)
    monkeypatch.setitem(sys.modules, "sklearn", None)
    monkeypatch.setitem(sys.modules, "sklearn.isotonic", None)
    for inc in (True, False):
        np.testing.assert_allclose(_isotonic(x, y, increasing=inc), expected[inc], atol=1e-12)
    found = near_monotone([1, 2, 4, 8, 16], [1.0, 5.0, 8.0, 8.3, 8.1])
    assert found is not None and found[0] == 1.0


# -- the command line: one path per extra --------------------------------------------


def _knob_samples(path: Path, n: int = 30) -> Path:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["buffer", "mode", "tps"])
        for i in range(n):
            buffer = (i * 7 % n) / n
            mode = "ab"[i % 2]
            w.writerow([f"{buffer:.3f}", mode, f"{100 + 80 * buffer + 10 * (i % 2):.2f}"])
    return path


def _sweep_grid(path: Path) -> Path:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["a", "b", "y"])
        for rep in range(2):
            for a in (1, 2, 4, 8):
                for b in ("x", "z"):
                    w.writerow([a, b, 10 * a + (5 if b == "z" else 0) + 0.1 * rep])
    return path


def test_cli_models_sweep_mlp_without_scikit_learn(tmp_path: Path) -> None:
    grid = _sweep_grid(tmp_path / "grid.csv")
    res = assay_without(
        ["sklearn"],
        *("sweep", "--from", str(grid), "--metric", "y", "--model", "mlp"),
        cwd=tmp_path,
    )
    assert_one_line_error(res, "the MLP model needs scikit-learn: pip install -e '.[models]'")


def test_cli_models_knobs_without_scikit_learn(tmp_path: Path) -> None:
    samples = _knob_samples(tmp_path / "s.csv")
    res = assay_without(
        ["sklearn"], "knobs", "--from", str(samples), "--metric", "tps", cwd=tmp_path
    )
    assert_one_line_error(
        res, "ranking knobs with random forests needs scikit-learn: pip install -e '.[models]'"
    )


def test_cli_tune_without_optuna(tmp_path: Path) -> None:
    samples = _knob_samples(tmp_path / "s.csv")
    res = assay_without(
        ["optuna"],
        *("knobs", "--from", str(samples), "--metric", "tps", "--tune", "5", "--trees", "10"),
        cwd=tmp_path,
    )
    assert_one_line_error(res, "tuning (--tune) needs Optuna: pip install -e '.[tune]'")


def test_cli_cluster_workers_without_dask(tmp_path: Path) -> None:
    store = tmp_path / "s.assay.db"
    res = assay_without(
        ["dask", "distributed"],
        *("run", "--workers", "2", "--store", str(store), "--max-time", "5", "--", "true"),
        cwd=tmp_path,
    )
    assert_one_line_error(res, "--workers needs Dask (distributed): pip install -e '.[cluster]'")


def test_cli_ssh_cluster_without_asyncssh(tmp_path: Path) -> None:
    study = tmp_path / "study.toml"
    study.write_text(
        '[study]\nname = "c"\n\n[benchmark]\ncommand = ["true"]\n\n'
        '[cluster]\nhosts = ["127.0.0.2"]\n',
        encoding="utf-8",
    )
    res = assay_without(["asyncssh"], "run", str(study), "--max-time", "5", cwd=tmp_path)
    assert_one_line_error(
        res, "the study file's [cluster] needs asyncssh: pip install -e '.[cluster]'"
    )


def test_cli_core_sweep_runs_without_any_extra(tmp_path: Path) -> None:
    """The ANOVA sweep (with its knees and turning points) is the core's."""
    grid = _sweep_grid(tmp_path / "grid.csv")
    res = assay_without(
        list(EVERY_OPTIONAL), "sweep", "--from", str(grid), "--metric", "y", cwd=tmp_path
    )
    assert res.returncode == exits.OK, res.stderr
    assert "Traceback" not in res.stderr and "error:" not in res.stderr


# -- the packaging -------------------------------------------------------------------


def test_the_core_dependencies_leave_the_extras_out() -> None:
    project = _pyproject()
    core = _requirement_names(project["dependencies"])  # type: ignore[arg-type]
    for name in ("statsmodels", "dask", "asyncssh", "scikit-learn", "optuna", "pyarrow"):
        assert name not in core, name
    for tool in ("pytest", "ruff", "mypy", "playwright", "hypothesis"):
        assert tool not in core, tool


def test_the_extras_match_the_code() -> None:
    extras: dict[str, list[str]] = _pyproject()["optional-dependencies"]  # type: ignore[assignment]
    names = {k: _requirement_names(v) for k, v in extras.items()}
    assert names["cluster"] == {"dask", "asyncssh", "cryptography"}
    assert any("distributed" in r for r in extras["cluster"] if r.startswith("dask"))
    assert names["models"] == {"scikit-learn"}
    assert names["tune"] == {"optuna"}
    assert names["export"] == {"pyarrow"}
    users = {k: v for k, v in extras.items() if k not in ("all", "test", "docs")}
    assert set(extras["all"]) == {r for v in users.values() for r in v}
    # CI installs .[test]: every extra's requirement, exactly as the extra gives it
    for extra, requirements in users.items():
        missing = set(requirements) - set(extras["test"])
        assert not missing, f"[test] lacks [{extra}]'s {sorted(missing)}"
    assert "statsmodels" in names["test"]
    assert all("statsmodels" not in v for k, v in names.items() if k != "test")


def _top_level_imports(tree: ast.Module) -> list[str]:
    """The modules a module imports when it is imported (not inside a function, nor
    under ``if TYPE_CHECKING:``)."""
    found: list[str] = []
    body: list[ast.stmt] = list(tree.body)
    while body:
        node = body.pop()
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append(node.module)
        elif isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.unparse(node.test):
            body += node.body + node.orelse
        elif isinstance(node, ast.Try):
            body += node.body + node.orelse + node.finalbody
    return found


def test_no_module_of_assay_imports_an_extra_when_it_is_imported() -> None:
    """An optional package is imported inside the function that needs it (after
    :func:`require_extra`), so that the core imports without it."""
    bad = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for module in _top_level_imports(tree):
            if module.partition(".")[0] in EVERY_OPTIONAL:
                bad.append(f"{path.relative_to(SRC)}: {module}")
    assert bad == []


def test_an_extras_import_prints_no_deprecation_notice_of_its_own_dependencies() -> None:
    # asyncssh 2.24 names cryptography's DSA classes, which cryptography 51 deprecates:
    # a dozen warning lines came above a cluster study's first line (its error, in the
    # netns tests); in a fresh process, as the first import is the one that warns
    pytest.importorskip("asyncssh")
    code = (
        "from assay.extras import require_extra\n"
        "require_extra('asyncssh', 'cluster', 'a [cluster] over SSH')\n"
    )
    done = subprocess.run(
        [sys.executable, "-W", "always", "-c", code], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "deprecated" not in done.stderr, done.stderr
