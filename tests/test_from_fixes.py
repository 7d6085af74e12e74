"""Issue #20: ``sweep --from`` and ``knobs --from`` on results others published.

Each test reproduces a wrong answer found on public data (or a format that had to be
converted by hand) on a small fixture, and checks the analysis that should come out.
"""

from __future__ import annotations

import csv
import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from rich.console import Console

from assay.cli import main
from assay.designs.knobs import knob_matrix
from assay.designs.sweep import Mismatch, analyse, mismatch, simulate
from assay.report.sweep import mismatch_lines
from assay.stats.importance import KnobEncoder
from assay.studies.knobs import rank_samples, samples_from_csv

FAST = ["--trees", "20", "--jobs", "1"]
SWEEP = ["--start", "0.3", "--step", "0.1"]


def _invoke(*args: str) -> Any:
    res = CliRunner().invoke(main, list(args))
    assert res.exit_code == 0, res.output
    return res


# --- 1. a dominant knob with extreme outliers --------------------------------------------


def _outlier_samples(path: Path, n: int = 600, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    levels = np.unique(np.round(np.geomspace(16, 4000, 300)))
    k0 = rng.choice(levels, n)
    k0 = np.where(rng.random(n) < 0.013, 5e14 + rng.integers(0, 100, n), k0)
    frame = pd.DataFrame({"k0": k0})
    for j in range(1, 6):
        frame[f"k{j}"] = rng.integers(1, 33, n)
    x = np.log(np.minimum(k0, levels[-1]))
    frame["throughput"] = 1000 * np.tanh((x - np.log(16)) / 3) + frame["k1"] + rng.normal(0, 10, n)
    frame.to_csv(path, index=False)
    return path


def test_outlier_knob_ranks_first_and_r2_matches_plain_sklearn(tmp_path: Path) -> None:
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.pipeline import Pipeline

    path = _outlier_samples(tmp_path / "s.csv")
    samples = samples_from_csv(str(path), ["throughput"])
    result = rank_samples(samples, top_k=2, trees=30, seed=0, jobs=1)
    ranking = result.analysis.primary
    assert ranking.knobs[0].knob == "k0"
    assert ranking.knobs[0].permutation > 0.5
    raw = pd.read_csv(path)
    y = raw["throughput"].to_numpy()
    plain = RandomForestRegressor(n_estimators=30, random_state=0, oob_score=True)
    plain.fit(raw[[f"k{j}" for j in range(6)]].to_numpy(), y)
    assert ranking.r2_oob == pytest.approx(plain.oob_score_, abs=0.02)
    assert ranking.r2_oob > 0.9
    assert any(w.startswith("k0: ") and "far outside" in w for w in result.warnings)
    # the fixture reproduces the fault: standardised, k0's values collapse, R² with them
    m = knob_matrix(samples.space, samples.settings)
    old = Pipeline(
        [
            ("encode", KnobEncoder(m.levels, "standard")),
            ("forest", RandomForestRegressor(n_estimators=30, random_state=0, oob_score=True)),
        ]
    ).fit(m.values, y)
    assert old.named_steps["forest"].oob_score_ < 0.5


# --- 2. --csv writes the analysed means of the sampled settings ---------------------------


def _repeated_rows(path: Path, seed: int = 0) -> Path:
    """48 settings, each 1-4 rows (112 in all), in no particular order."""
    rng = np.random.default_rng(seed)
    rows = []
    reps = [1, 2, 3, 4] * 12
    for (w, c, v), k in zip(
        itertools.product([1, 2, 4, 8, 16, 32], ["x", "y"], [1, 2, 3, 4]), reps, strict=True
    ):
        for _ in range(k):
            tps = min(w, 8) * 10 + 0.1 * w + {"x": 0, "y": 5}[c] + 0.5 * v + rng.normal(0, 1)
            rows.append({"w": w, "c": c, "v": v, "tps": round(tps, 3)})
    frame = pd.DataFrame(rows).sample(frac=1, random_state=seed)
    frame.to_csv(path, index=False)
    return path


def test_sweep_csv_holds_the_mean_of_each_sampled_setting(tmp_path: Path) -> None:
    data = _repeated_rows(tmp_path / "r.csv")
    out, table = tmp_path / "r.json", tmp_path / "m.csv"
    _invoke("sweep", "--from", str(data), "--metric", "tps", *SWEEP, "--json", str(out),
            "--csv", str(table))  # fmt: skip
    raw = pd.read_csv(data)
    means = raw.groupby(["w", "c", "v"])["tps"].agg(["mean", "size"])
    rows = list(csv.DictReader(table.open()))
    doc = json.loads(out.read_text())
    assert len(rows) == doc["settings_measured"] == len({(r["w"], r["c"], r["v"]) for r in rows})
    total = 0
    for r in rows:
        key = (int(r["w"]), r["c"], int(r["v"]))
        assert float(r["tps"]) == pytest.approx(means.loc[key, "mean"])
        total += int(means.loc[key, "size"])
    assert doc["trials"]["total"] == total < len(raw)  # the sampled settings' trials


# --- 3. columns that are not knobs ---------------------------------------------------------


def _with_extra_columns(path: Path, n: int = 80, seed: int = 1) -> Path:
    rng = np.random.default_rng(seed)
    a, b = rng.uniform(0, 1, n), rng.integers(1, 9, n)
    tps = 100 + 50 * a + 2 * b + rng.normal(0, 1, n)
    frame = pd.DataFrame(
        {"a": a.round(4), "b": b, "mode": rng.choice(["p", "q"], n), "latency": 1000 / tps,
         "tps": tps.round(3)}
    )  # fmt: skip
    frame.to_csv(path)  # with the pandas index: "Unnamed: 0"
    return path


def test_pi_and_index_columns_are_not_knobs(tmp_path: Path) -> None:
    data = _with_extra_columns(tmp_path / "s.csv")
    out = tmp_path / "k.json"
    res = _invoke("knobs", "--from", str(data), "--metric", "tps", "--json", str(out), *FAST)
    doc = json.loads(out.read_text())
    assert [k["name"] for k in doc["knobs"]] == ["a", "b", "mode"]
    assert doc["rankings"][0]["top"][0] == "a"
    excluded = {e["column"]: e["reason"] for e in doc["input"]["excluded"]}
    assert set(excluded) == {"Unnamed: 0", "latency"} and "PI" in excluded["latency"]
    assert "not knobs: Unnamed: 0" in res.output and "knobs: a, b, mode" in res.output
    named = tmp_path / "n.json"
    _invoke("knobs", "--from", str(data), "--metric", "tps", "--knob", "a", "--knob", "latency",
            "--json", str(named), *FAST)  # fmt: skip
    assert [k["name"] for k in json.loads(named.read_text())["knobs"]] == ["a", "latency"]


def test_sweep_leaves_out_pi_columns_by_default(tmp_path: Path) -> None:
    data = tmp_path / "r.csv"
    frame = pd.read_csv(_repeated_rows(tmp_path / "base.csv"))
    frame.assign(p99_ms=1000 / frame["tps"]).to_csv(data)
    out = tmp_path / "r.json"
    res = _invoke("sweep", "--from", str(data), "--metric", "tps", *SWEEP, "--json", str(out))
    doc = json.loads(out.read_text())
    assert doc["params"] == ["w", "c", "v"]
    assert {e["column"] for e in doc["input"]["excluded"]} == {"Unnamed: 0", "p99_ms"}
    assert "left out: Unnamed: 0" in res.output


# --- 4. a metric coded 0 for failed runs -------------------------------------------------


def test_repeated_zero_metric_is_flagged_and_can_be_dropped(tmp_path: Path) -> None:
    data = _with_extra_columns(tmp_path / "s.csv", n=100)
    frame = pd.read_csv(data, index_col=0).drop(columns="latency")
    frame.loc[frame.index[:63], "tps"] = 0.0
    frame.to_csv(data, index=False)
    out = tmp_path / "k.json"
    res = _invoke("knobs", "--from", str(data), "--metric", "tps", "--json", str(out), *FAST)
    assert "tps is exactly 0 in 63 of 100 rows (63%)" in res.output
    assert "--drop-value 0" in res.output
    doc = json.loads(out.read_text())
    assert doc["n_samples"] == 100 and any("exactly 0" in w for w in doc["warnings"])
    res = _invoke("knobs", "--from", str(data), "--metric", "tps", "--drop-value", "0",
                  "--json", str(out), *FAST)  # fmt: skip
    doc = json.loads(out.read_text())
    assert doc["n_samples"] == 37 and "exactly 0" not in res.output
    assert "dropped 63 row(s) whose tps is 0 (--drop-value)" in res.output


# --- 5. the mismatch figure and its counts --------------------------------------------------


def test_mismatch_counts_missed_and_added_points() -> None:
    d = pd.DataFrame({"w": [1, 2, 4, 8, 16, 32] * 2, "c": ["x"] * 6 + ["y"] * 6})
    full = analyse(d.assign(t=d["w"].clip(upper=8) * 10.0 + (d["c"] == "y")), ["w", "c"], "t",
                   form="main")  # fmt: skip
    t = d["w"].clip(upper=4) * 10.0 + 0.3 * d["w"] + (d["c"] == "y")
    other = analyse(d.assign(t=t), ["w", "c"], "t", form="main")
    m = mismatch(full, other)
    assert [p[-4:] for p in (*m.points_missed, *m.points_extra)] == ["at 8", "at 4"]
    assert m.points_rate == 2.0 and m.params_missed == m.params_extra == ()
    text = "\n".join(mismatch_lines(m))
    assert "important points: 1 in all the data; sample found 0, missed 1" in text
    assert f"added 1 ({m.points_extra[0]}): 2/1 = 200%" in text


def test_mismatch_lines_read_above_100_percent() -> None:
    m = Mismatch(1, (), 3, ("p1", "p4", "p5", "p6"), (), (), ("p1",), ("p4", "p5", "p6"))
    text = "\n".join(mismatch_lines(m))
    assert "important points: 3 in all the data; sample found 2, missed 1 (p1), added 3" in text
    assert "4/3 = 133%" in text


# --- 6. row order does not change the simulation -------------------------------------------


def test_shuffled_rows_with_the_same_seed_give_the_same_simulation() -> None:
    rng = np.random.default_rng(4)
    d = pd.DataFrame(
        list(itertools.product([1, 2, 4, 8, 16, 32], ["x", "y", "z"], [1, 2, 3, 4])),
        columns=["w", "c", "v"],
    )
    d["t"] = (
        d["w"].clip(upper=8) * 10.0
        + d["c"].map({"x": 0, "y": 3, "z": 4})
        + rng.normal(0, 2, len(d))
    )
    first = simulate(d, ["w", "c", "v"], "t", start=0.1, step=0.05, seed=7)
    for state in (1, 2, 3):
        again = simulate(d.sample(frac=1, random_state=state), ["w", "c", "v"], "t", start=0.1,
                         step=0.05, seed=7)  # fmt: skip
        assert again.to_dict() == first.to_dict()
        assert again.settings.equals(first.settings)


# --- 7. one rule for rows without a metric -------------------------------------------------


def test_rows_without_a_metric_are_dropped_alike_with_a_note(tmp_path: Path) -> None:
    data = _with_extra_columns(tmp_path / "s.csv")
    frame = pd.read_csv(data, index_col=0).drop(columns="latency")
    frame.loc[frame.index[[3, 10, 20]], "tps"] = np.nan
    frame.to_csv(data, index=False)
    out = tmp_path / "k.json"
    res = _invoke("knobs", "--from", str(data), "--metric", "tps", "--json", str(out), *FAST)
    assert "dropped 3 row(s) with no tps value (failed trials; lines 5, 12, 22)" in res.output
    assert json.loads(out.read_text())["n_samples"] == 77
    res = _invoke("sweep", "--from", str(data), "--metric", "tps", "--params", "b,mode", *SWEEP)
    assert "dropped 3 row(s) with no tps value" in res.output


def test_infinite_metric_is_refused_as_the_file_has_it(tmp_path: Path) -> None:
    data = tmp_path / "s.csv"
    data.write_text("w,tps\n1,1\n2,inf\n3,3\n4,4\n5,5\n")
    for cmd in (["sweep", "--from", str(data)], ["knobs", "--from", str(data)]):
        res = CliRunner().invoke(main, [*cmd, "--metric", "tps"])
        assert res.exit_code == 2
        assert f"{data}: column 'tps', line 3: 'inf' is not a finite number" in res.output
        assert "np.float64" not in res.output


# --- 8. one column per round ----------------------------------------------------------------


def _wide_and_long(tmp_path: Path) -> tuple[Path, Path]:
    rng = np.random.default_rng(2)
    rows = []
    for w, c, v in itertools.product([1, 2, 4, 8, 16, 32], ["x", "y"], [1, 2, 3]):
        base = min(w, 8) * 10 + 0.1 * w + {"x": 0, "y": 5}[c] + 0.05 * v
        rows.append({"w": w, "c": c, "v": v, **{f"tput_{r}": base + rng.normal(0, 0.5)
                                                 for r in (1, 2, 3)}})  # fmt: skip
    wide = pd.DataFrame(rows)
    wide.to_csv(tmp_path / "wide.csv", index=False)
    long = wide.melt(id_vars=["w", "c", "v"], value_name="tput").drop(columns="variable")
    long.to_csv(tmp_path / "long.csv", index=False)
    return tmp_path / "wide.csv", tmp_path / "long.csv"


def _analysis(doc: dict[str, Any]) -> Any:
    return doc["analysis"], doc["steps"], doc["summary"], doc["trials"]["total"]


def test_round_columns_give_the_long_format_analysis(tmp_path: Path) -> None:
    wide, long = _wide_and_long(tmp_path)
    a, b, c = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    res = _invoke("sweep", "--from", str(wide), "--metric", "tput", *SWEEP, "--json", str(a))
    assert "the 3 columns tput_1, tput_2, tput_3 are read as repetitions" in res.output
    _invoke("sweep", "--from", str(wide), "--metric", "tput", "--repetitions", "tput_*", *SWEEP,
            "--json", str(b))  # fmt: skip
    _invoke("sweep", "--from", str(long), "--metric", "tput", "--params", "w,c,v", *SWEEP,
            "--json", str(c))  # fmt: skip
    docs = [json.loads(p.read_text()) for p in (a, b, c)]
    assert _analysis(docs[0]) == _analysis(docs[1]) == _analysis(docs[2])
    ka, kb = tmp_path / "ka.json", tmp_path / "kb.json"
    _invoke("knobs", "--from", str(wide), "--metric", "tput", "--json", str(ka), *FAST)
    _invoke("knobs", "--from", str(long), "--metric", "tput", "--json", str(kb), *FAST)
    ra, rb = (json.loads(p.read_text()) for p in (ka, kb))
    assert ra["rankings"] == rb["rankings"] and ra["n_samples"] == 36


def test_live_repetitions_must_be_a_count(tmp_path: Path) -> None:
    study = tmp_path / "s.toml"
    study.write_text(
        '[study]\nname = "s"\n[benchmark]\ncommand = ["echo", "{w}"]\n[[pi]]\nname = "t"\n'
        'source = "wall_time"\n[sweep]\n[sweep.params]\nw = [1, 2]\n'
    )
    res = CliRunner().invoke(main, ["sweep", str(study), "--repetitions", "tput_*"])
    assert res.exit_code == 2 and "expected a whole number" in res.output


# --- 9. one-hot option groups ----------------------------------------------------------------


def test_one_hot_groups_give_the_categorical_analysis(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    rows = []
    for w, opt, _ in itertools.product([1, 2, 4, 8, 16, 32], ["O1", "O2", "O3"], range(2)):
        t = min(w, 8) * 10 + {"O1": 0, "O2": 6, "O3": 9}[opt] + rng.normal(0, 0.5)
        rows.append({"w": w, "opt": opt, "tps": round(t, 4)})
    long = pd.DataFrame(rows)
    hot = long.drop(columns="opt").assign(
        **{f"opt_{o}": (long["opt"] == o).astype(int) for o in ("O1", "O2", "O3", "O4")}
    )  # opt_O4 is 0 everywhere: a constant column
    hot.to_csv(tmp_path / "hot.csv", index=False)
    long.to_csv(tmp_path / "long.csv", index=False)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    res = _invoke("sweep", "--from", str(tmp_path / "hot.csv"), "--metric", "tps", *SWEEP,
                  "--json", str(a))  # fmt: skip
    assert "column opt_O4 has a single value" in res.output
    assert "opt_O1, opt_O2, opt_O3 (one of them 1 in every row)" in res.output
    _invoke("sweep", "--from", str(tmp_path / "long.csv"), "--metric", "tps", *SWEEP,
            "--json", str(b))  # fmt: skip
    da, db = json.loads(a.read_text()), json.loads(b.read_text())
    assert da["params"] == db["params"] == ["w", "opt"]
    assert _analysis(da) == _analysis(db)
    off = CliRunner().invoke(main, ["sweep", "--from", str(tmp_path / "hot.csv"), "--metric",
                                    "tps", "--one-hot", "off", *SWEEP, "--json", "-"])  # fmt: skip
    assert off.exit_code == 0 and json.loads(off.stdout)["params"] == [
        "w", "opt_O1", "opt_O2", "opt_O3"
    ]  # fmt: skip


# --- 10. significant terms that matter ------------------------------------------------------


def test_significant_terms_below_a_share_are_listed_apart(tmp_path: Path) -> None:
    wide, _ = _wide_and_long(tmp_path)
    out = tmp_path / "r.json"
    res = _invoke("sweep", "--from", str(wide), "--metric", "tput", *SWEEP, "--json", str(out))
    doc = json.loads(out.read_text())
    significant = {r["term"]: r["pct_var"] for r in doc["analysis"]["significant"]}
    assert doc["significant_material"] == [t for t, v in significant.items() if v >= 1.0]
    assert len(doc["significant_material"]) < len(significant)  # the fixture has small ones
    assert "Significant and explaining ≥ 1% of the variance: w" in res.output
    material = doc["mismatch_material"]
    assert material["min_share"] == 0.01
    assert material["params_full"] == len(doc["significant_material"]) or material["params_full"]
    wider = tmp_path / "w.json"
    _invoke("sweep", "--from", str(wide), "--metric", "tput", *SWEEP, "--min-share", "50%",
            "--json", str(wider))  # fmt: skip
    assert json.loads(wider.read_text())["significant_material"] == ["w"]


def test_report_renders_counts(tmp_path: Path) -> None:
    wide, _ = _wide_and_long(tmp_path)
    res = _invoke("sweep", "--from", str(wide), "--metric", "tput", *SWEEP)
    assert "significant terms:" in res.output and "sample found" in res.output
    assert "terms ≥ 1% of variance:" in res.output
    Console()  # the report module renders through rich; nothing else to set up


def test_a_model_too_large_for_memory_is_refused_with_its_size(tmp_path: Path) -> None:
    """#40: 17 parameters with up to 611 values each, not a grid: the sweep asked NumPy
    for 51.3 TiB and died with a traceback; now one line with the numbers and the fix."""
    import numpy as np

    rng = np.random.default_rng(0)
    rows = ["x,y,z,tput"] + [
        f"{rng.integers(0, 600)},{rng.integers(0, 600)},{rng.integers(0, 500)},"
        f"{1000 + rng.normal(0, 5):.3f}"
        for _ in range(3000)
    ]
    data = tmp_path / "scatter.csv"
    data.write_text("\n".join(rows) + "\n")
    from click.testing import CliRunner

    from assay.cli import main

    res = CliRunner().invoke(main, ["sweep", "--from", str(data), "--metric", "tput"])
    assert res.exit_code == 2, res.output
    assert "the model has" in res.output and "TiB" in res.output
    assert "assay knobs --from" in res.output and "Traceback" not in res.output
