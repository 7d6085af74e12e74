"""A table of text cells, made once and shown in the terminal (rich) and in the HTML
report alike, so that both say the same in the same units (issue #38: the terminal's
tables and the report's raw JSON fields said it two ways).

>>> g = Grid("knobs", ["#", "knob"], [["1", "fsync"]], right=frozenset({0}))
>>> g.table().columns[0].justify, g.rows
('right', [['1', 'fsync']])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rich.table import Table
from rich.text import Text

from assay.report.safe import plain


@dataclass(frozen=True)
class Grid:
    """``title``, a ``header`` and ``rows`` of text; the columns in ``right`` are
    right-aligned (numbers), those in ``no_wrap`` never wrapped in a terminal."""

    title: str
    header: list[str]
    rows: list[list[str]]
    right: frozenset[int] = frozenset()
    no_wrap: frozenset[int] = field(default_factory=frozenset)

    def table(self, style: Callable[[int, int, str], str | None] | None = None) -> Table:
        """The terminal's table: cells are text, never markup; ``style(row, column,
        text)`` may give a cell a style, e.g. a verdict's colour."""
        table = Table(title=Text(plain(self.title)), title_justify="left", show_edge=False)
        for i, name in enumerate(self.header):
            table.add_column(
                name, justify="right" if i in self.right else "left", no_wrap=i in self.no_wrap
            )
        for r, row in enumerate(self.rows):
            table.add_row(*(self._cell(r, c, text, style) for c, text in enumerate(row)))
        return table

    @staticmethod
    def _cell(
        r: int, c: int, text: str, style: Callable[[int, int, str], str | None] | None
    ) -> Text:
        got = style(r, c, text) if style is not None else None
        return Text(plain(text), style=got or "")


def columns(names: Sequence[str], *, left: Sequence[str] = ()) -> frozenset[int]:
    """The indices of ``names`` that are not in ``left``: the right-aligned ones.

    >>> sorted(columns(["test", "n", "p"], left=["test"]))
    [1, 2]
    """
    return frozenset(i for i, n in enumerate(names) if n not in left)
