"""The Python API (issue #39): assay.run, compare, sweep, order, knobs and load, each
returning an assay.Result; studies given as a path, TOML text or a dict; the CLI's
errors.  No assertion on durations: every study is bounded by rounds, not time."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import assay
from assay.errors import SpecError, StoreError, StudyError

QUICK = {"measure_overhead": False, "max_rounds": 3}

RUN_TOML = """
[study]
name = "api-run"

[benchmark]
command = ["true"]

[stop]
max_rounds = 3
"""

COMPARE_TOML = """
[study]
name = "api-compare"

[benchmark]
command = ["sleep", "{t}"]

[params]
t = "0"

[[variant]]
name = "short"
params = { t = "0" }

[[variant]]
name = "long"
params = { t = "0.002" }

[stop]
max_rounds = 3
"""

SWEEP_TOML = """
[study]
name = "api-sweep"

[benchmark]
command = ["sh", "-c", "echo tps=$((10 * $1 + 3))", "sh", "{w}"]

[[pi]]
name = "tps"
unit = "tx/s"
direction = "higher"
source = "regex"
pattern = 'tps=([0-9.]+)'

[sweep]
repetitions = 2

[sweep.params]
w = [1, 2, 3, 4]
"""

ORDER_TOML = """
[study]
name = "api-order"

[benchmark]
command = ["echo", "{op}"]

[params]
op = "x"

[[test]]
name = "a"
params = { op = "a" }

[[test]]
name = "b"
params = { op = "b" }

[order]
runs = 2
repetitions = 3
seed = 1
"""

KNOBS_TOML = """
[study]
name = "api-knobs"

[benchmark]
command = ["sh", "-c", "echo tps=$((50 * $1 + $2))", "sh", "{a}", "{b}"]

[[pi]]
name = "tps"
direction = "higher"
source = "regex"
pattern = 'tps=([-0-9.]+)'

[[knob]]
name = "a"
type = "int"
min = 1
max = 20
default = 2

[[knob]]
name = "b"
type = "int"
min = 0
max = 3
default = 1

[knobs]
samples = 10
trees = 10
top_k = 1
validation_samples = 2
"""


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "api.assay.db"


def _check(result: assay.Result, kind: str, study: str, store: Path) -> None:
    assert isinstance(result, assay.Result)
    assert (result.kind, result.study, result.store) == (kind, study, store)
    assert isinstance(result.to_dict(), dict)
    assert study in result.summary()
    frame = result.trials_dataframe()
    assert list(frame.columns[:4]) == ["study", "seq", "run", "status"]
    assert set(frame["study"]) == {study}
    loaded = assay.load(store, study)
    assert loaded.kind == kind and loaded.study == study


# -- run


def test_run_a_command_as_words(store: Path) -> None:
    r = assay.run(["true"], store=store, name="words", **QUICK)
    _check(r, "run", "words", store)
    pis = r.to_dict()["pis"]
    assert pis[0]["name"] == "wall_time" and pis[0]["rounds_used"] == 3
    frame = r.trials_dataframe()
    assert len(frame) == 3 == r.to_dict()["trials"]["total"]  # one row per trial
    assert "reading.wall_time" in frame.columns


def test_run_a_command_as_one_string_names_the_study_as_the_cli(store: Path) -> None:
    from assay.quick import quick_benchmark, quick_name

    r = assay.run("sleep 0.001", store=store, **QUICK)
    bench = quick_benchmark(["sleep", "0.001"], shell=False)
    assert r.study == quick_name("quick", "sleep 0.001", bench)
    assert r.spec is not None and r.spec.benchmark.command == ["sleep", "0.001"]


def test_a_quick_study_run_again_is_measured_again(store: Path) -> None:
    assay.run(["true"], store=store, name="again", **QUICK)
    second = assay.run(["true"], store=store, name="again", **QUICK)
    assert len(second.trials_dataframe()) == 3  # the earlier one is archived, kept


def test_run_uses_the_quick_store_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    r = assay.run(["true"], name="default-store", **QUICK)
    assert r.store == tmp_path / "cache" / "assay" / "quick.assay.db"
    assert r.store.exists()


@pytest.mark.parametrize("given", ["path", "pathlib", "text", "dict"])
def test_run_a_study_given_as_path_text_or_dict(
    tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch, given: str
) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "run.toml"
    path.write_text(RUN_TOML)
    spec: Any = {
        "path": str(path),
        "pathlib": path,
        "text": RUN_TOML,
        "dict": {"study": {"name": "api-run"}, "benchmark": {"command": ["true"]}},
    }[given]
    r = assay.run(spec, store=store, max_rounds=3, measure_overhead=False)
    _check(r, "run", "api-run", store)
    assert len(r.trials_dataframe()) == 3


def test_a_study_files_store_is_beside_it(tmp_path: Path) -> None:
    path = tmp_path / "run.toml"
    path.write_text(RUN_TOML)
    r = assay.run(path, measure_overhead=False)
    assert r.store == tmp_path / "run.assay.db"


def test_the_stop_options_override_the_study_file(tmp_path: Path, store: Path) -> None:
    path = tmp_path / "run.toml"
    path.write_text(RUN_TOML)
    r = assay.run(path, store=store, max_rounds=2, ci_width=0.5, confidence=0.9,
                  max_time=30, measure_overhead=False)  # fmt: skip
    assert r.spec is not None
    stop = r.spec.stop
    assert (stop.max_rounds, stop.ci_width, stop.confidence, stop.max_time) == (2, 0.5, 0.9, 30)
    assert len(r.trials_dataframe()) == 2


def test_report_writes_the_html_report(tmp_path: Path, store: Path) -> None:
    r = assay.run(["true"], store=store, name="reported", **QUICK)
    out = r.report(tmp_path / "r.html")
    assert out == tmp_path / "r.html"
    text = out.read_text()
    assert text.startswith("<!DOCTYPE html>") or "<html" in text
    assert "reported" in text


def _work() -> int:
    return sum(range(200))


def test_run_a_python_callable_in_process(tmp_path: Path, store: Path) -> None:
    # #39: "Commands and Python callables both accepted"
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a short budget may miss the target: no matter
        r = assay.run(_work, store=store, max_time=1.0, calls_per_round=50)
    assert r.kind == "run" and r.study.endswith("test_public_api._work")
    (pi,) = r.to_dict()["pis"]
    assert pi["name"] == "time_per_call" and pi["n_raw"] > 0
    assert "measured in process" in r.to_dict()["reason"]
    assert "time_per_call" in r.summary()
    loaded = assay.load(store, r.study)  # the store keeps it, as the plugin's results
    assert loaded.to_dict()["pis"][0]["mean"] == pytest.approx(pi["mean"])
    assert "time_per_call" in r.report(tmp_path / "r.html").read_text()
    assert r.trials_dataframe().empty  # no trials: the calls were timed in process


# -- compare


def test_compare_commands_given_by_name(store: Path) -> None:
    r = assay.compare({"fast": ["true"], "slow": "sleep 0.002"}, store=store, name="cmp", **QUICK)
    _check(r, "compare", "cmp", store)
    assert r.raw.variants == ["fast", "slow"]
    assert len(r.trials_dataframe()) == 6  # 3 cycles of 2 variants
    assert "fast" in r.summary() and "slow" in r.summary()
    assert r.to_dict()["study"] == "cmp"


def test_compare_gates_with_fail_if_worse(store: Path) -> None:
    r = assay.compare(
        {"a": ["true"], "b": ["true"]}, store=store, fail_if_worse=0.5, baseline="a", **QUICK
    )
    assert [(g.candidate, g.baseline) for g in r.raw.gates] == [("b", "a")]
    assert r.to_dict()["gate"][0]["threshold"] == 0.5


@pytest.mark.parametrize("given", ["path", "text", "dict"])
def test_compare_a_study(tmp_path: Path, store: Path, given: str) -> None:
    path = tmp_path / "compare.toml"
    path.write_text(COMPARE_TOML)
    spec: Any = {
        "path": path,
        "text": COMPARE_TOML,
        "dict": {
            "study": {"name": "api-compare"},
            "benchmark": {"command": ["true"]},
            "variant": [{"name": "short"}, {"name": "long"}],
            "stop": {"max_rounds": 3},
        },
    }[given]
    r = assay.compare(spec, store=store, measure_overhead=False)
    _check(r, "compare", "api-compare", store)
    assert r.raw.variants == ["short", "long"]


# -- sweep, order, knobs


def test_sweep(tmp_path: Path, store: Path) -> None:
    r = assay.sweep(SWEEP_TOML, store=store)
    _check(r, "sweep", "api-sweep", store)
    frame = r.trials_dataframe()
    assert "setting.w" in frame.columns and set(frame["setting.w"]) <= {1, 2, 3, 4}


def test_order(tmp_path: Path, store: Path) -> None:
    path = tmp_path / "order.toml"
    path.write_text(ORDER_TOML)
    r = assay.order(path, store=store, measure_overhead=False)
    _check(r, "order", "api-order", store)
    assert len(r.trials_dataframe()) == r.to_dict()["trials"]["total"]


def test_knobs(tmp_path: Path, store: Path) -> None:
    r = assay.knobs(KNOBS_TOML, store=store, jobs=1)
    _check(r, "knobs", "api-knobs", store)
    assert len(r.trials_dataframe()) >= 10


# -- errors: the CLI's exceptions


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda s: assay.run("ls | wc", store=s), "shell syntax"),
        (lambda s: assay.run([], store=s), "no command given"),
        (lambda s: assay.run({"study": {"name": "x"}}, store=s), "benchmark"),
        (lambda s: assay.run("[study\nname=", store=s), "not valid TOML"),
        (lambda s: assay.run("missing.toml", store=s), "no such study file"),
        (lambda s: assay.run(COMPARE_TOML, store=s), r"assay\.compare\(\)"),
        (lambda s: assay.run(RUN_TOML, store=s, ci_width=-1), "ci_width"),
        (lambda s: assay.run(["true"], store=s, confidence=2.0), "confidence"),
        (lambda s: assay.compare({"a": ["true"]}, store=s), "at least two"),
        (lambda s: assay.compare(RUN_TOML, store=s), r"\[\[variant\]\]"),
        (lambda s: assay.compare({"a": "true", "b": "true"}, store=s, baseline="c"), "'c'"),
        (lambda s: assay.sweep(RUN_TOML, store=s), r"\[sweep\]"),
        (lambda s: assay.order(RUN_TOML, store=s), r"\[\[test\]\]"),
        (lambda s: assay.knobs(RUN_TOML, store=s), r"\[\[knob\]\]"),
    ],
)
def test_bad_input_raises_spec_error(store: Path, call: Any, match: str) -> None:
    with pytest.raises(SpecError, match=match):
        call(store)
    assert not store.exists()  # refused before anything ran


def test_load_errors_are_the_clis(tmp_path: Path, store: Path) -> None:
    with pytest.raises(StoreError):
        assay.load(tmp_path / "none.assay.db")
    assay.run(["true"], store=store, name="one", **QUICK)
    assay.run(["true"], store=store, name="two", **QUICK)
    with pytest.raises(StudyError, match="name one"):
        assay.load(store)
    with pytest.raises(StudyError, match="no study named"):
        assay.load(store, "three")
    assert assay.load(store, "two").study == "two"


def test_import_assay_stays_light() -> None:
    code = (
        "import sys, assay\n"
        "names = assay.__all__\n"
        "assert callable(assay.__getattr__)\n"
        "print(sorted(m for m in ('pydantic', 'numpy', 'pandas', 'assay.public', 'assay.spec')"
        " if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"
    assert set(assay.__all__) >= {"run", "compare", "sweep", "order", "knobs", "load", "Result"}


def test_the_notebook_example_runs(tmp_path: Path) -> None:
    script = Path(__file__).resolve().parent.parent / "examples" / "python" / "notebook.py"
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "compare.html").is_file()
    assert (tmp_path / "out" / "notebook.assay.db").is_file()
    assert "report written to" in done.stdout and "setting.variant" in done.stdout


def test_a_run_results_first_figures_are_attributes_and_others_say_where() -> None:
    """#60: ``r.mean`` is the first thing a notebook user types."""
    from types import SimpleNamespace as NS

    from assay.public import Result

    pi = NS(mean=0.5, low=0.4, high=0.6, unit="s")
    r = Result(kind="run", study="s", store=Path("s.db"), raw=NS(results=[pi]))
    assert (r.mean, r.low, r.high, r.unit) == (0.5, 0.4, 0.6, "s")
    c = Result(kind="compare", study="c", store=Path("c.db"), raw=NS())
    with pytest.raises(AttributeError, match="a compare result has no single mean"):
        _ = c.mean
