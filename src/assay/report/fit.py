"""Tables that fit the terminal without cutting a figure.

Rich squeezes a table that is too wide by wrapping and cutting cells ("undeci…",
"21.5 ms ±" over three lines).  Here figures never wrap: a table that cannot fit drops
its least important columns, in an order each report gives, and says which.

>>> from rich.console import Console, RenderableType
>>> t = Table("name", "mean", "extra")
>>> t.add_row("a", "1.00 ± 0.01", "a long explanation column")
>>> fit_table(t, Console(width=24), ["extra"])
['extra']
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console, RenderableType
from rich.table import Column, Table
from rich.text import Text

LABEL_WIDTH = 16  # a name column narrower than this reads as a column of fragments


def _header(column: object) -> str:
    header = getattr(column, "header", "")
    return header.plain if isinstance(header, Text) else str(header)


def fit_table(
    table: Table, console: Console, drop_order: Sequence[str], *, label: str | None = None
) -> list[str]:
    """Make every column of ``table`` but ``label`` (the names: they may wrap, kept at
    least :data:`LABEL_WIDTH` wide) unwrappable, then drop columns named in
    ``drop_order`` (least important first) until the table fits ``console.width``;
    return the headers dropped."""
    label = _header(table.columns[0]) if label is None else label
    for column in table.columns:
        if _header(column) == label:
            column.min_width = min(LABEL_WIDTH, _widest(column, console))
            column.overflow = "fold"
        else:
            column.no_wrap = True
    dropped: list[str] = []
    for name in drop_order:
        if _needed(table, console, label) <= console.width:
            break
        found = next((c for c in table.columns if _header(c) == name), None)
        if found is not None:
            table.columns.remove(found)
            dropped.append(name)
    return dropped


def _cell_width(cell: object, console: Console) -> int:
    if isinstance(cell, str):
        cell = console.render_str(cell)  # markup or not, as the console prints it
    if isinstance(cell, Text):
        return max((line.cell_len for line in cell.split("\n")), default=0)
    return console.measure(cell).maximum  # type: ignore[arg-type]


def _widest(column: Column, console: Console) -> int:
    cells = [column.header, *column.cells] if column.header else list(column.cells)
    return max((_cell_width(c, console) for c in cells), default=1)


def _needed(table: Table, console: Console, label: str) -> int:
    """The narrowest the table can be drawn without wrapping or cutting a figure."""
    widths = [
        (c.min_width or 1) if _header(c) == label else _widest(c, console) for c in table.columns
    ]
    padding = table.padding[1] + table.padding[3]  # left and right of every cell
    edges = 2 if table.show_edge and table.box is not None else 0
    rules = len(widths) - 1 if table.box is not None else 0
    return sum(widths) + padding * len(widths) + rules + edges


def fitted(
    table: Table, console: Console, drop_order: Sequence[str], *, label: str | None = None
) -> list[RenderableType]:
    """``table`` fitted to the console (:func:`fit_table`) and the note on what it left
    out; when even that is too wide, each row stacked as ``header: value`` lines."""
    every = list(table.columns)
    dropped = fit_table(table, console, drop_order, label=label)
    if _needed(table, console, label or _header(every[0])) <= console.width:
        note = dropped_note(dropped)
        return [table] if note is None else [table, note]
    table.columns[:] = every  # stacked, every column has room again
    return stacked(table, console)


def stacked(table: Table, console: Console) -> list[RenderableType]:
    """Each row of ``table`` as its first cell, then one ``header: value`` line per other
    column: the form for terminals too narrow for any table."""
    out: list[RenderableType] = []
    if table.title is not None:
        title = table.title
        out.append(_text(title, console))
    columns = table.columns
    for cells in zip(*(list(c.cells) for c in columns), strict=True):
        out.append(Text.assemble(_text(cells[0], console), style="bold"))
        for column, cell in zip(columns[1:], cells[1:], strict=True):
            out.append(Text.assemble("  ", _header(column), ": ", _text(cell, console)))
    return out


def _text(cell: object, console: Console) -> Text:
    if isinstance(cell, Text):
        return cell
    return console.render_str(cell) if isinstance(cell, str) else Text(str(cell))


def dropped_note(dropped: Sequence[str]) -> Text | None:
    """The line that says which columns a narrow terminal left out."""
    if not dropped:
        return None
    return Text(
        f"(narrow terminal: left out {', '.join(dropped)}; widen it or see --json)",
        style="dim",
    )
