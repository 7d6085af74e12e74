"""Tile plots: the layout (pure) and the drawing (files that open)."""

from __future__ import annotations

import itertools
import math
import struct
import xml.etree.ElementTree as ET
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.report.tile import TileLayout, draw_tiles, tile_layout, tile_plot

VALUES = {
    "workers": [1, 2, 4, 8],
    "wh": [1, 4, 16],
    "mode": ["wal", "delete"],
    "cross": [0, 50, 100],
    "nodes": [1, 2],
    "zipf": [0.0, 0.5, 0.99],
}


def full(names: list[str], seed: int = 0) -> pd.DataFrame:
    rows = list(itertools.product(*(VALUES[n] for n in names)))
    df = pd.DataFrame(rows, columns=names)
    df["tps"] = np.random.default_rng(seed).random(len(df))
    return df


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_tile_count_and_cells(n: int) -> None:
    names = list(VALUES)[:n]
    df = full(names)
    lay = tile_layout(df, "tps")
    assert len(lay.tiles) == math.prod(len(VALUES[p]) for p in names[2:])
    # every setting lands in its own cell, holding its own value
    cells = {lay.cell(r._asdict()) for r in df[names].itertuples(index=False)}
    assert len(cells) == len(df)
    for rec in df.to_dict("records"):
        r, c = lay.cell(rec)
        assert lay.matrix[r, c] == rec["tps"]
    # everything else is a gap
    assert np.isfinite(lay.matrix).sum() == len(df)


def test_known_setting_lands_in_the_right_cell() -> None:
    names = ["workers", "wh", "mode", "cross"]
    df = full(names)
    df["tps"] = 0.0
    pick = (df.workers == 4) & (df.wh == 16) & (df["mode"] == "delete") & (df.cross == 50)
    df.loc[pick, "tps"] = 99.0
    lay = tile_layout(df, "tps")
    # workers = 4 is x index 2 in tile column "delete" (index 1): 1 * (4 + 1) + 2 = 7;
    # wh = 16 is y index 2 in tile row cross = 50 (index 1): 1 * (3 + 1) + 2 = 6
    assert lay.cell({"workers": 4, "wh": 16, "mode": "delete", "cross": 50}) == (6, 7)
    assert lay.matrix[6, 7] == 99.0
    assert np.nansum(lay.matrix) == 99.0
    assert lay.tiles[("delete", 50)] == (4, 5)
    assert lay.tile_rect(("delete", 50)) == (4, 5, 3, 4)
    # 2 tiles of 4 columns + 1 gap; 3 tiles of 3 rows + 2 gaps
    assert lay.matrix.shape == (3 * 3 + 2, 2 * 4 + 1)


def test_super_tiles_are_separated_by_a_wider_gap() -> None:
    names = ["workers", "wh", "mode", "cross", "nodes"]
    lay = tile_layout(full(names), "tps")
    assert lay.col_stride == (1, 5, 2 * 5 - 1 + 2)
    assert lay.cell({"workers": 1, "wh": 1, "mode": "wal", "cross": 0, "nodes": 2}) == (0, 11)
    assert lay.matrix.shape[1] == 2 * 11 - 2


def test_missing_settings_are_blank_and_value_lists_are_honoured() -> None:
    names = ["workers", "wh", "mode"]
    df = full(names)
    df = df[~((df.workers == 2) & (df.wh == 4))]
    lay = tile_layout(df, "tps", values={"workers": [1, 2, 4, 8, 16]})
    assert lay.values["workers"] == (1, 2, 4, 8, 16)
    r, c = lay.cell({"workers": 2, "wh": 4, "mode": "wal"})
    assert math.isnan(lay.matrix[r, c])
    r, c = lay.cell({"workers": 16, "wh": 4, "mode": "wal"})
    assert math.isnan(lay.matrix[r, c])


def test_repetitions_are_averaged_and_categories_keep_their_order() -> None:
    df = pd.DataFrame(
        {
            "a": [1, 1, 2, 2, 1],
            "b": pd.Categorical(["y", "x", "y", "x", "y"], categories=["y", "x"]),
            "m": [1.0, 2.0, 3.0, 4.0, 3.0],
        }
    )
    lay = tile_layout(df, "m")
    assert lay.values["b"] == ("y", "x")
    assert lay.matrix.tolist() == [[2.0, 3.0], [2.0, 4.0]]
    med = tile_layout(df, "m", agg="median")
    assert med.matrix[0, 0] == 2.0


@settings(max_examples=30, deadline=None)
@given(
    cards=st.lists(st.integers(1, 4), min_size=2, max_size=6),
    seed=st.integers(0, 999),
    frac=st.floats(0.1, 1.0),
)
def test_layout_is_a_bijection(cards: list[int], seed: int, frac: float) -> None:
    names = [f"p{i}" for i in range(len(cards))]
    rows = list(itertools.product(*(range(c) for c in cards)))
    df = pd.DataFrame(rows, columns=names)
    df["y"] = np.arange(len(df), dtype=float)
    keep = np.random.default_rng(seed).random(len(df)) < frac
    values = {n: list(range(c)) for n, c in zip(names, cards, strict=True)}
    lay = tile_layout(df[keep], "y", values=values)
    assert len(lay.tiles) == math.prod(cards[2:])
    cells = [lay.cell(dict(zip(names, r, strict=True))) for r in rows]
    assert len(set(cells)) == len(rows)
    h, w = lay.matrix.shape
    assert all(0 <= r < h and 0 <= c < w for r, c in cells)
    for (r, c), y, k in zip(cells, df["y"], keep, strict=True):
        if k:
            assert lay.matrix[r, c] == y
        else:
            assert math.isnan(lay.matrix[r, c])
    # tiles do not overlap
    covered = np.zeros((h, w), dtype=int)
    for key in lay.tiles:
        r0, c0, th, tw = lay.tile_rect(key)
        covered[r0 : r0 + th, c0 : c0 + tw] += 1
    assert covered.max() == 1


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"metric": "nope"}, "no column 'nope'"),
        ({"metric": "tps", "params": ["workers"]}, "2 to 6 parameters"),
        ({"metric": "tps", "params": ["workers", "zz"]}, "no column 'zz'"),
        ({"metric": "tps", "params": ["workers", "workers"]}, "distinct"),
        ({"metric": "tps", "params": ["workers", "tps"]}, "distinct"),
    ],
)
def test_layout_errors(kwargs: dict[str, object], fragment: str) -> None:
    df = full(["workers", "wh"])
    with pytest.raises(ValueError, match=fragment):
        tile_layout(df, **kwargs)  # type: ignore[arg-type]


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data[12:16] == b"IHDR"
    w, h = struct.unpack(">II", data[16:24])
    return int(w), int(h)


@pytest.mark.parametrize("n", [2, 4, 6])
def test_png_is_written(n: int, tmp_path: Path) -> None:
    names = list(VALUES)[:n]
    df = full(names).sample(frac=0.7, random_state=1)
    out = tile_plot(df, "tps", tmp_path / "sub" / "t.png", title="demo", unit="txn/s")
    w, h = png_size(out)
    assert w > 300 and h > 200


def test_svg_is_written_and_parses(tmp_path: Path) -> None:
    lay = tile_layout(full(["workers", "wh", "mode"]), "tps")
    out = draw_tiles(lay, tmp_path / "t.svg", log=True)
    root = ET.parse(out).getroot()
    assert root.tag.endswith("svg")
    text = out.read_text()
    assert "mode=wal" in text and "mode=delete" in text


def test_bad_suffix(tmp_path: Path) -> None:
    lay = tile_layout(full(["workers", "wh"]), "tps")
    with pytest.raises(ValueError, match=r"\.png or \.svg"):
        draw_tiles(lay, tmp_path / "t.pdf")


def test_empty_metric_still_draws(tmp_path: Path) -> None:
    df = full(["workers", "wh"])
    df["tps"] = np.nan
    lay: TileLayout = tile_layout(df, "tps")
    assert np.isnan(lay.matrix).all()
    png_size(draw_tiles(lay, tmp_path / "t.png"))


@pytest.mark.parametrize("fmt", ["png", "svg"])
def test_labels_are_literal_text_not_tex(tmp_path: Path, fmt: str) -> None:
    # matplotlib parses text between two '$' as TeX: '$\foo$' raised its parse error
    df = pd.DataFrame(
        {
            "$a$": ["$\\foo$", "x$y$", "$\\foo$", "x$y$", "$\\foo$", "x$y$"],
            "b": [1, 1, 2, 2, 3, 3],
            "$c$": ["$\\bar{$", "$\\bar{$", "$\\bar{$", "$\\bar{$", "$\\bar{$", "$\\bar{$"],
            "$m$": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        }
    )
    # svg.fonttype 'none' writes text as text, so the SVG shows what was drawn
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        out = tile_plot(df, "$m$", tmp_path / f"t.{fmt}", title="$\\oops$", unit="$\\mu$s")
    assert out.stat().st_size > 0
    if fmt == "svg":
        text = out.read_text()
        for label in ("$\\foo$", "x$y$", "$c$=$\\bar{$", "$\\oops$", "$m$ ($\\mu$s)"):
            assert label in text, label


def test_a_sweep_analysed_on_log_scale_colours_its_tiles_on_log_scale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue #44: the analysis was on log(throughput), the tiles' colours linear, so most
    tiles were one colour."""
    import csv

    from click.testing import CliRunner

    import assay.report.tile as tile
    from assay.cli import main

    seen: list[bool] = []
    real = tile.tile_plot

    def spy(*args: object, **kwargs: object) -> object:
        seen.append(bool(kwargs.get("log")))
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(tile, "tile_plot", spy)
    data = tmp_path / "r.csv"
    with data.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["a", "b", "tps"])
        for a in range(4):
            for b in range(3):
                for r in range(3):
                    w.writerow([a, b, 10.0**a * (1 + b) * (1 + 0.01 * r)])
    for flags, want in (([], False), (["--log"], True)):
        res = CliRunner().invoke(
            main,
            ["sweep", "--from", str(data), "--params", "a,b", "--metric", "tps", "-q",
             "--plot", str(tmp_path / "t.png"), *flags],
        )  # fmt: skip
        assert res.exit_code in (0, 5), res.output
        assert seen[-1] is want
