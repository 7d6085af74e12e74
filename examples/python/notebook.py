"""Assay from Python, as in a notebook: run a command, compare two, look at the trials
as a DataFrame and write the HTML report.

    python3 examples/python/notebook.py [OUT_DIR]

Everything goes to OUT_DIR (default: a new temporary folder): the store and the report.
The budgets are small (10 rounds) so that it runs in seconds; drop ``max_rounds`` to
measure until the CI is as narrow as asked.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import assay


def main(out: Path) -> None:
    store = out / "notebook.assay.db"

    # one command, until its CI is within ±5% (here: at most 10 rounds)
    run = assay.run(["sleep", "0.001"], ci_width=0.05, max_rounds=10, store=store)
    print(run.summary())
    wall = run.to_dict()["pis"][0]
    print(f"mean {wall['mean']:.4g} s, CI [{wall['low']:.4g}, {wall['high']:.4g}]")

    # two commands, interleaved; which is faster, and is the difference real?
    cmp = assay.compare(
        {"1 ms": ["sleep", "0.001"], "2 ms": "sleep 0.002"}, max_rounds=10, store=store
    )
    print(cmp.summary())

    # every trial, one row each, for pandas
    trials = cmp.trials_dataframe()
    print(trials.groupby("setting.variant")["reading.wall_time"].agg(["count", "mean"]))

    report = cmp.report(out / "compare.html")
    print(f"report written to {report}")


if __name__ == "__main__":
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="assay-"))
    folder.mkdir(parents=True, exist_ok=True)
    main(folder)
