"""``assay knobs STUDY.toml``: LHS samples measured through the store, ranked, validated, tuned."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from click.testing import CliRunner

from assay.cli import main
from assay.store import Store

STUDY = """
[study]
name = "synthetic-knobs"

[benchmark]
command = ["{py}", "-c", '''
import sys, random, math
a, b, c, d = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3], float(sys.argv[4])
y = 50 * math.log(a) + {{"x": 0, "y": 80, "z": 20}}[c] + random.gauss(0, 2)
print(f"tps={{y:.3f}}")
''', "{{a}}", "{{b}}", "{{c}}", "{{d}}"]

[[pi]]
name = "tps"
direction = "higher"
source = "regex"
pattern = 'tps=([-0-9.]+)'

[[knob]]
name = "a"
type = "int"
min = 1
max = 1000
log = true
default = 10

[[knob]]
name = "b"
type = "float"
min = 0
max = 1
default = 0.5

[[knob]]
name = "c"
type = "categorical"
values = ["x", "y", "z"]
default = "x"

[[knob]]
name = "d"
type = "float"
min = 0
max = 10
default = 1
unsafe = true

[knobs]
samples = 40
trees = 60
top_k = 2
validation_samples = 10
rank_by = "permutation"
"""


def _trials(db: Path) -> list[dict[str, object]]:
    with Store(db) as store:
        found = store.find_study("synthetic-knobs")
        assert found is not None
        return [t.setting for t in store.trials(found[0])]


def test_live_knobs_rank_validate_tune_and_resume(tmp_path: Path) -> None:
    study = tmp_path / "knobs.toml"
    study.write_text(STUDY.format(py=sys.executable))
    out = tmp_path / "k.json"
    args = ["knobs", str(study), "--tune", "6", "--jobs", "1", "--json", str(out)]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    # every phase says what it does (the forests and the tuner ran silently before)
    assert "ranking the knobs: random forests on 40 samples" in res.stderr
    assert "tuning the top-k: trial 6/6" in res.stderr
    # headlines stay on one line (as table titles they wrapped to the narrow table's width)
    lines = res.stdout.splitlines()
    # how the trials ended, as run and sweep say (#60: a knob study never said)
    assert any(ln.endswith(" ok)") and " trials (" in ln for ln in lines), res.stdout
    assert any(ln.startswith("best configuration (trial ") and ln.endswith(")") for ln in lines)
    assert any(ln.startswith("tuning cost: trials to within") and "per run" in ln for ln in lines)
    doc = json.loads(out.read_text())
    assert doc["trials"]["by_status"]["ok"] == doc["trials"]["total"] and doc["failures"] == []
    ranking = doc["rankings"][0] if "rankings" in doc else doc["pis"][0]
    top = set(ranking["top"])
    assert top == {"a", "c"}, ranking["top"]  # the two knobs that matter
    tune = doc["tune"]
    assert set(tune["tuned"]) == {"a", "c"} and "d" not in tune["tuned"]
    assert tune["confirmed"]["n"] == 10 and tune["confirmed"]["half_width"] > 0
    db = tmp_path / "knobs.assay.db"
    n = len(_trials(db))
    # samples + validation + tuner + 10 re-measurements of the best, each once at most
    assert 40 + 10 + 10 < n <= 40 + 10 + 6 + 10
    # a second run resumes: the samples and validation samples are not measured again
    again = CliRunner().invoke(main, ["knobs", str(study), "--jobs", "1", "-q"])
    assert again.exit_code == 0, again.output
    assert len(_trials(db)) == n


def test_study_without_knobs_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "plain.toml"
    p.write_text('[study]\nname = "x"\n[benchmark]\ncommand = ["true"]\n')
    res = CliRunner().invoke(main, ["knobs", str(p)])
    assert res.exit_code == 2
    assert "no [[knob]] entries" in res.stderr


def test_assay_run_on_a_knob_study_points_to_assay_knobs(tmp_path: Path) -> None:
    study = tmp_path / "knobs.toml"
    study.write_text(STUDY.format(py=sys.executable))
    res = CliRunner().invoke(main, ["run", str(study)])
    assert res.exit_code == 2, res.output
    assert "run it with 'assay knobs" in res.stderr and "Traceback" not in res.stderr


def test_runner_names_a_placeholder_left_without_a_value(tmp_path: Path) -> None:
    import pytest

    from assay.spec import load_spec
    from assay.studies.run import Runner, StudyError

    study = tmp_path / "knobs.toml"
    study.write_text(STUDY.format(py=sys.executable))
    spec = load_spec(study)
    with pytest.raises(StudyError, match=r"no value for placeholder '\{a\}'"):
        Runner(spec, spec.store_path(), measure_overhead=False, monitor=False).run()


def test_a_knob_study_with_fixed_params_measures_each_sample_once(tmp_path: Path) -> None:
    """Issue #13, item 3: stored settings carry the study's [params]; the samples were
    looked up without them (a KeyError after measuring, and a re-run measured all again)."""
    study = tmp_path / "knobs.toml"
    text = STUDY.format(py=sys.executable).replace(
        '"{a}", "{b}", "{c}", "{d}"]', '"{a}", "{b}", "{c}", "{d}", "{scale}"]'
    )
    text = text.replace("[[pi]]", "[params]\nscale = 3\n\n[[pi]]", 1)
    assert '"{scale}"' in text
    study.write_text(text)
    res = CliRunner().invoke(main, ["knobs", str(study), "--jobs", "1", "-q"])
    assert res.exit_code == 0, res.output
    db = tmp_path / "knobs.assay.db"
    first = _trials(db)
    assert len(first) == 40 + 10 and all(t["scale"] == 3 for t in first)
    again = CliRunner().invoke(main, ["knobs", str(study), "--jobs", "1", "-q"])
    assert again.exit_code == 0, again.output
    assert len(_trials(db)) == 50
