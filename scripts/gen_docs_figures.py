"""Make the figures of the docs (docs/img/) with Assay itself, from data kept in the
repository: nothing is measured, so the same tree gives the same figures.

Run from the repository's root: ``python3 scripts/gen_docs_figures.py`` (``--check``:
exit 1 when a figure the pages use is missing).

- ``sweep-tiles.svg``: ``assay sweep --from bench/data/sqlite-sweep-grid.csv --plot``,
  the main command's space measured whole (docs/sweep.md);
- ``compare-ranking.svg``: ``assay compare --from tests/data/hyperfine_sqlite_sync.json``
  drawn by the HTML report's ranking plot (docs/compare.md).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IMG = ROOT / "docs" / "img"
FIGURES = ("sweep-tiles.svg", "compare-ranking.svg")


def sweep_tiles(out: Path) -> None:
    subprocess.run(
        [
            sys.executable, "-m", "assay", "sweep", "--from",
            str(ROOT / "bench" / "data" / "sqlite-sweep-grid.csv"),
            "--params", "journal_mode,synchronous,batch,value_size",
            "--metric", "throughput", "--unit", "ops/s", "--log", "-q",
            "--plot", str(out),
        ],
        check=True,
        cwd=ROOT,
    )  # fmt: skip


def compare_ranking(out: Path) -> None:
    import matplotlib

    from assay.report.html import _ranking
    from assay.studies.compare import compare_files

    result = compare_files([str(ROOT / "tests" / "data" / "hyperfine_sqlite_sync.json")])
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "ranking"}):
        _ranking(result, [], out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only check that they exist")
    args = ap.parse_args()
    if args.check:
        missing = [f for f in FIGURES if not (IMG / f).is_file()]
        print("missing: " + ", ".join(missing) if missing else "all figures present")
        return 1 if missing else 0
    IMG.mkdir(parents=True, exist_ok=True)
    sweep_tiles(IMG / "sweep-tiles.svg")
    compare_ranking(IMG / "compare-ranking.svg")
    print("wrote " + ", ".join(f"docs/img/{f}" for f in FIGURES))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
