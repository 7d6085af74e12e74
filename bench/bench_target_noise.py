"""Run-to-run noise of the target examples (examples/<target>-*.toml) on this machine.

Each example is run ``--reps`` times from a fresh store with a fixed number of rounds
(``--rounds``; a comparison: cycles). For the first PI of each variant (or of the
study) it reports

* trial CV%: the coefficient of variation of the per-trial readings within one study
  (the mean over the repetitions), how noisy a single trial is;
* run CV%: the CV of the study means across the repetitions, how much a whole
  (short) study moves from one run to the next;
* the wall time of one repetition (setup and teardown included).

    python3 bench/bench_target_noise.py                 # every target example
    python3 bench/bench_target_noise.py --reps 5 --rounds 8 examples/sqlite-kv-run.toml
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from assay.spec import load_spec
from assay.store import Store

ROOT = Path(__file__).resolve().parent.parent
TARGET_NAMES = ("sqlite", "postgres", "redis", "fio")
DEFAULT = sorted(p for t in TARGET_NAMES for p in (ROOT / "examples").glob(f"{t}-*.toml"))


def cv_percent(xs: list[float]) -> float:
    """Sample standard deviation over mean, in percent (nan for fewer than two values)."""
    if len(xs) < 2 or statistics.fmean(xs) == 0:
        return float("nan")
    return 100.0 * statistics.stdev(xs) / abs(statistics.fmean(xs))


def one_rep(example: Path, rounds: int, store: Path) -> tuple[dict[str, list[float]], float]:
    """Run the example once; return the first PI's readings per variant and the wall time."""
    spec = load_spec(example)
    cmd = "compare" if spec.variants else "run"
    argv = [sys.executable, "-m", "assay", cmd, str(example), "--max-rounds", str(rounds),
            "--store", str(store), "--no-overhead", "--no-monitor", "-q", "--fresh"]  # fmt: skip
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{example.name}: assay {cmd} failed:\n{proc.stderr[-2000:]}")
    pi = spec.pis[0].name
    out: dict[str, list[float]] = {}
    with Store(store) as st:
        found = st.find_study(spec.study.name)
        assert found is not None
        for t in st.trials(found[0]):
            if t.ok and pi in t.readings:
                out.setdefault(str(t.setting.get("variant", "-")), []).append(t.readings[pi])
    return out, wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("examples", nargs="*", type=Path, default=DEFAULT)
    ap.add_argument("--reps", type=int, default=3, help="repetitions of each study")
    ap.add_argument("--rounds", type=int, default=6, help="rounds (compare: cycles) per study")
    args = ap.parse_args()
    print(f"{'example':34} {'variant':16} {'PI':14} {'mean':>12} {'trial CV%':>9} "
          f"{'run CV%':>8} {'wall s':>7}")  # fmt: skip
    for ex in args.examples:
        spec = load_spec(ex)
        if spec.sweep is not None or spec.knob_specs:
            continue  # sweeps and knob studies vary settings: no single study mean to repeat
        means: dict[str, list[float]] = {}
        trial_cvs: dict[str, list[float]] = {}
        walls: list[float] = []
        with tempfile.TemporaryDirectory(prefix="assay-noise-") as d:
            for rep in range(args.reps):
                readings, wall = one_rep(ex, args.rounds, Path(d) / f"r{rep}.assay.db")
                walls.append(wall)
                for variant, xs in readings.items():
                    means.setdefault(variant, []).append(statistics.fmean(xs))
                    trial_cvs.setdefault(variant, []).append(cv_percent(xs))
        for variant, ms in means.items():
            print(
                f"{ex.name:34} {variant:16} {spec.pis[0].name:14} {statistics.fmean(ms):12.4g} "
                f"{statistics.fmean(trial_cvs[variant]):9.1f} {cv_percent(ms):8.1f} "
                f"{statistics.fmean(walls):7.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
