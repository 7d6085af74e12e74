"""Tile plots of high-dimensional results (Hui et al., §5).

With parameters p1 … pn, a *tile* is a 2-D heat map over p1 (x) and p2 (y) for one
combination of the other parameters.  Tiles are laid side by side by p3 (columns) and
p4 (rows) into a *super-tile*, and super-tiles by p5 (columns) and p6 (rows).  Every
cell is coloured by the metric on one shared scale, so patterns across the whole space
can be seen at once; settings that were not measured (or are not valid) stay blank.

:func:`tile_layout` is pure: it places every setting in one matrix, with blank gaps
between tiles (one cell) and between super-tiles (two cells).  :func:`draw_tiles`
draws a layout with matplotlib (Agg) and writes PNG or SVG.

>>> import pandas as pd
>>> df = pd.DataFrame({"a": [1, 2, 1, 2], "b": [1, 1, 2, 2], "y": [1.0, 2.0, 3.0, 4.0]})
>>> lay = tile_layout(df, "y")
>>> lay.matrix.tolist()
[[1.0, 2.0], [3.0, 4.0]]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from assay.report.export import save_figure
from assay.values import short as _fmt

__all__ = ["TileLayout", "draw_tiles", "tile_layout", "tile_plot"]

#: Every text of the plot is literal: a value or name like ``$\foo$`` is not TeX to parse.
_LITERAL: dict[str, Any] = {"parse_math": False}

#: Blank cells between neighbouring tiles, and between neighbouring super-tiles.
TILE_GAP = 1
SUPER_GAP = 2


@dataclass(frozen=True)
class TileLayout:
    """Where every setting lies in the tile matrix.

    ``matrix[row, col]`` holds the metric (NaN: not measured, or a gap); row 0 is the
    bottom.  ``x_params`` are (p1, p3, p5) and ``y_params`` (p2, p4, p6), as many as
    there are parameters; ``values`` lists each parameter's values in axis order.
    ``tiles`` maps each combination of the outer parameters (p3 … p6, in that order) to
    the (row, col) of its tile's lower-left cell.
    """

    matrix: npt.NDArray[np.float64]
    metric: str
    params: tuple[str, ...]
    values: Mapping[str, tuple[Any, ...]]
    x_params: tuple[str, ...]
    y_params: tuple[str, ...]
    tiles: Mapping[tuple[Any, ...], tuple[int, int]]
    col_stride: tuple[int, ...]
    row_stride: tuple[int, ...]

    @property
    def outer(self) -> tuple[str, ...]:
        """The parameters that group tiles (p3 … p6)."""
        return self.params[2:]

    def cell(self, setting: Mapping[str, Any]) -> tuple[int, int]:
        """The (row, col) of a setting given as ``{parameter: value}``.

        >>> import pandas as pd
        >>> df = pd.DataFrame({"a": [1, 2], "b": ["x", "y"], "c": [5, 6], "m": [0.0, 1.0]})
        >>> tile_layout(df, "m").cell({"a": 2, "b": "y", "c": 6})
        (1, 4)
        """
        col = sum(
            self._index(p, setting[p]) * s
            for p, s in zip(self.x_params, self.col_stride, strict=True)
        )
        row = sum(
            self._index(p, setting[p]) * s
            for p, s in zip(self.y_params, self.row_stride, strict=True)
        )
        return int(row), int(col)

    def _index(self, param: str, value: Any) -> int:
        vals = self.values[param]
        for i, v in enumerate(vals):
            if v == value:
                return i
        raise KeyError(f"{param}: value {value!r} is not one of {list(vals)}")

    def tile_rect(self, key: tuple[Any, ...]) -> tuple[int, int, int, int]:
        """(row, col, height, width) of one tile."""
        r, c = self.tiles[key]
        h = len(self.values[self.y_params[0]]) if len(self.y_params) else 1
        w = len(self.values[self.x_params[0]])
        return r, c, h, w


def _ordered_values(s: pd.Series, given: Sequence[Any] | None) -> tuple[Any, ...]:
    if given is not None:
        return tuple(given)
    if isinstance(s.dtype, pd.CategoricalDtype):
        return tuple(s.cat.categories)
    if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s):
        return tuple(sorted(pd.unique(s.dropna()).tolist()))
    return tuple(pd.unique(s.dropna()).tolist())


def _strides(cards: Sequence[int]) -> tuple[tuple[int, ...], int]:
    """Offsets of each level's index, and the total extent, for cards (inner first)."""
    strides: list[int] = []
    if not cards:
        return (), 1
    extent = cards[0]
    strides.append(1)
    gaps = (TILE_GAP, SUPER_GAP)
    for level, c in enumerate(cards[1:]):
        step = extent + gaps[min(level, 1)]
        strides.append(step)
        extent = step * c - gaps[min(level, 1)]
    return tuple(strides), extent


def tile_layout(
    data: pd.DataFrame,
    metric: str,
    params: Sequence[str] | None = None,
    *,
    values: Mapping[str, Sequence[Any]] | None = None,
    agg: Literal["mean", "median"] = "mean",
) -> TileLayout:
    """Place each setting of ``data`` (settings + a ``metric`` column) in the tile matrix.

    ``params`` (2 to 6, default: every other column) sets the roles in order: tile x,
    tile y, tile columns, tile rows, super-tile columns, super-tile rows.  ``values``
    may list a parameter's values (e.g. every value of the space, so unmeasured ones
    show blank); otherwise they come from the data (numbers sorted, categories in
    their order).  Repeated settings are averaged (``agg``), and so are settings that
    differ only in columns left out of ``params``.
    """
    if metric not in data.columns:
        raise ValueError(f"no column {metric!r} in the data (columns: {', '.join(data.columns)})")
    names = [c for c in data.columns if c != metric] if params is None else [str(p) for p in params]
    if not 2 <= len(names) <= 6:
        raise ValueError(f"a tile plot shows 2 to 6 parameters, got {len(names)}: {names}")
    missing = [p for p in names if p not in data.columns]
    if missing:
        raise ValueError(f"no column {', '.join(map(repr, missing))} in the data")
    if len(set(names)) != len(names) or metric in names:
        raise ValueError(f"parameters must be distinct and not the metric: {names}")
    vals = {p: _ordered_values(data[p], (values or {}).get(p)) for p in names}
    x_params = tuple(names[0::2])
    y_params = tuple(names[1::2])
    col_stride, width = _strides([len(vals[p]) for p in x_params])
    row_stride, height = _strides([len(vals[p]) for p in y_params])

    y = pd.to_numeric(data[metric], errors="coerce").to_numpy(dtype=float)
    cols = np.zeros(len(data), dtype=np.int64)
    rows = np.zeros(len(data), dtype=np.int64)
    known = np.isfinite(y)
    for group, stride, target in (
        (x_params, col_stride, cols),
        (y_params, row_stride, rows),
    ):
        for p, s in zip(group, stride, strict=True):
            lookup = {v: i for i, v in enumerate(vals[p])}
            idx = data[p].map(lambda v, lk=lookup: lk.get(v, -1)).to_numpy(dtype=np.int64)
            known &= idx >= 0  # values outside the given list are left out
            target += np.where(idx >= 0, idx, 0) * s
    frame = pd.DataFrame({"r": rows[known], "c": cols[known], "y": y[known]})
    cell = frame.groupby(["r", "c"])["y"].agg(agg)
    matrix = np.full((height, width), np.nan)
    matrix[cell.index.get_level_values(0), cell.index.get_level_values(1)] = cell.to_numpy()

    outer = names[2:]
    tiles: dict[tuple[Any, ...], tuple[int, int]] = {}
    for combo in _product([vals[p] for p in outer]):
        setting = dict(zip(outer, combo, strict=True))
        setting[names[0]] = vals[names[0]][0]
        setting[names[1]] = vals[names[1]][0]
        r = sum(vals[p].index(setting[p]) * s for p, s in zip(y_params, row_stride, strict=True))
        c = sum(vals[p].index(setting[p]) * s for p, s in zip(x_params, col_stride, strict=True))
        tiles[tuple(combo)] = (int(r), int(c))
    return TileLayout(
        matrix=matrix,
        metric=metric,
        params=tuple(names),
        values=vals,
        x_params=x_params,
        y_params=y_params,
        tiles=tiles,
        col_stride=col_stride,
        row_stride=row_stride,
    )


def _product(lists: Sequence[Sequence[Any]]) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = [()]
    for values in lists:
        out = [(*t, v) for t in out for v in values]
    return out


def draw_tiles(
    layout: TileLayout,
    path: str | Path,
    *,
    title: str | None = None,
    cmap: str = "viridis",
    log: bool = False,
    unit: str = "",
) -> Path:
    """Draw ``layout`` and write it to ``path`` (``.png`` or ``.svg``); returns the path.

    One shared colour scale (a colour bar beside the tiles); blank cells were not
    measured.  Tick labels under the bottom tiles and left of the leftmost tiles give
    the tile parameters' values; labels above and to the right name the outer ones.
    """
    # Figure without pyplot: no global backend state; savefig picks Agg/SVG by format
    import matplotlib
    from matplotlib import colors as mcolors
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    out = Path(path)
    fmt = out.suffix.lower().lstrip(".")
    if fmt not in ("png", "svg"):
        raise ValueError(f"{out}: the tile plot is written as .png or .svg, not {out.suffix!r}")
    m = layout.matrix
    height, width = m.shape
    finite = m[np.isfinite(m)]
    cell_in = 0.28 if max(height, width) <= 60 else max(0.06, 16.0 / max(height, width))
    fig_w = min(40.0, max(5.0, width * cell_in + 3.0))
    fig_h = min(40.0, max(3.5, height * cell_in + 2.0))
    fig = Figure(figsize=(fig_w, fig_h), layout="constrained")
    ax = fig.add_subplot()
    norm: Any = None
    if log and finite.size and finite.min() > 0:
        norm = mcolors.LogNorm(vmin=float(finite.min()), vmax=float(finite.max()))
    elif finite.size:
        norm = mcolors.Normalize(vmin=float(finite.min()), vmax=float(finite.max()))
    cm = matplotlib.colormaps[cmap].with_extremes(bad=(0.0, 0.0, 0.0, 0.0))
    image = ax.imshow(
        np.ma.masked_invalid(m), origin="lower", cmap=cm, norm=norm, aspect="auto",
        interpolation="nearest", extent=(-0.5, width - 0.5, -0.5, height - 0.5),
    )  # fmt: skip
    label = layout.metric + (f" ({unit})" if unit else "")
    bar = fig.colorbar(image, ax=ax, shrink=0.8)
    bar.set_label(label, **_LITERAL)
    if isinstance(norm, mcolors.LogNorm):
        # plain "3e+04", not the mathtext "3×10⁴" of the log scale's default: its
        # parser is built on first use, 0.16 s of a sweep's report (#60)
        from matplotlib.ticker import LogFormatter

        bar.ax.yaxis.set_major_formatter(LogFormatter(10))
        bar.ax.yaxis.set_minor_formatter(LogFormatter(10, labelOnlyBase=False))
    for key in layout.tiles:
        r, c, h, w = layout.tile_rect(key)
        ax.add_patch(
            Rectangle((c - 0.5, r - 0.5), w, h, fill=False, edgecolor="0.6", linewidth=0.6)
        )
    px, py = layout.params[0], layout.params[1]
    xs, ys = layout.values[px], layout.values[py]
    tiles_x = sorted({c for _, c in layout.tiles.values()})
    tiles_y = sorted({r for r, _ in layout.tiles.values()})
    small = 7 if max(len(xs) * len(tiles_x), len(ys) * len(tiles_y)) <= 60 else 5
    ax.set_xticks([c + i for c in tiles_x for i in range(len(xs))])
    ax.set_xticklabels(
        [_fmt(v) for _ in tiles_x for v in xs], fontsize=small, rotation=90, **_LITERAL
    )
    ax.set_yticks([r + i for r in tiles_y for i in range(len(ys))])
    ax.set_yticklabels([_fmt(v) for _ in tiles_y for v in ys], fontsize=small, **_LITERAL)
    ax.set_xlabel(_axis_label(layout.x_params), **_LITERAL)
    ax.set_ylabel(_axis_label(layout.y_params), **_LITERAL)
    ax.tick_params(length=2)
    for side in ("top", "right", "bottom", "left"):
        ax.spines[side].set_visible(False)
    _outer_labels(ax, layout, height, width)
    ax.set_xlim(-0.5, width - 0.5)
    ax.set_ylim(-0.5, height - 0.5)
    if title:
        fig.suptitle(title, **_LITERAL)
    out.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, out, format=fmt, dpi=120)
    return out


def _axis_label(params: Sequence[str]) -> str:
    roles = ["", "tiles by ", "super-tiles by "]
    return " · ".join(f"{roles[i]}{p}" for i, p in enumerate(params))


def _outer_labels(ax: Any, layout: TileLayout, height: int, width: int) -> None:
    """Values of the outer parameters: above the columns, right of the rows."""
    for level in (1, 2):
        if level < len(layout.x_params):
            p = layout.x_params[level]
            span = layout.col_stride[level] - (TILE_GAP if level == 1 else SUPER_GAP)
            reps = _repeats(layout.col_stride, level, width)
            for base in reps:
                for i, v in enumerate(layout.values[p]):
                    x = base + i * layout.col_stride[level] + span / 2 - 0.5
                    ax.text(
                        x, height - 0.5 + 0.4 + 1.1 * (level - 1), f"{p}={_fmt(v)}",
                        ha="center", va="bottom", fontsize=7, clip_on=False, **_LITERAL,
                    )  # fmt: skip
        if level < len(layout.y_params):
            p = layout.y_params[level]
            span = layout.row_stride[level] - (TILE_GAP if level == 1 else SUPER_GAP)
            reps = _repeats(layout.row_stride, level, height)
            for base in reps:
                for i, v in enumerate(layout.values[p]):
                    y = base + i * layout.row_stride[level] + span / 2 - 0.5
                    ax.text(
                        width - 0.5 + 0.4 + 2.2 * (level - 1), y, f"{p}={_fmt(v)}",
                        ha="left", va="center", fontsize=7, rotation=270, clip_on=False,
                        **_LITERAL,
                    )  # fmt: skip


def _repeats(stride: Sequence[int], level: int, extent: int) -> list[int]:
    """Start offsets of the blocks that repeat the labels of ``level`` (once per outer)."""
    if level + 1 < len(stride):
        return list(range(0, extent, stride[level + 1]))
    return [0]


def tile_plot(
    data: pd.DataFrame,
    metric: str,
    path: str | Path,
    params: Sequence[str] | None = None,
    *,
    values: Mapping[str, Sequence[Any]] | None = None,
    title: str | None = None,
    log: bool = False,
    unit: str = "",
) -> Path:
    """Lay out and draw ``data`` in one call (see :func:`tile_layout`, :func:`draw_tiles`).

    >>> import tempfile, pandas as pd
    >>> df = pd.DataFrame({"a": [1, 2, 1, 2], "b": [1, 1, 2, 2], "y": [1.0, 2.0, 3.0, 4.0]})
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = tile_plot(df, "y", f"{d}/t.svg")
    ...     p.read_text()[:5]
    '<?xml'
    """
    layout = tile_layout(data, metric, params, values=values)
    return draw_tiles(layout, path, title=title, log=log, unit=unit)
