"""Text from outside (a benchmark's output, a study file, a host) made safe for a terminal.

Two dangers: rich reads ``[red]`` or ``[/]`` as markup (a crash or a style applied),
and the terminal obeys escape sequences (a new window title, a cleared screen).  Every
outside string goes through :func:`plain` (control characters out) and, where it is
printed with markup, :func:`shown` (escaped too).

>>> plain("ok\\x1b]0;pwned\\x07 \\x1b[2Jdone\\r")
'ok done'
>>> shown("[/] \\x1b[31mred")
'\\\\[/] red'
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType
from rich.markup import escape
from rich.segment import Segment

# CSI / OSC / other escape sequences first (so their parameters go too), then any other
# C0 or C1 control character except newline and tab
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI ... final byte
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC ... BEL or ST
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"  # DCS, SOS, PM, APC ... ST
    r"|\x1b[@-_]?"  # two-byte escapes, or a lone ESC
    r"|\x9b[0-?]*[ -/]*[@-~]"  # 8-bit CSI
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
)


def plain(text: str) -> str:
    """``text`` without escape sequences and control characters (newline and tab kept)."""
    return _ESCAPES.sub("", text)


def shown(text: object) -> str:
    """``text`` for a rich markup string: control characters out, markup escaped."""
    return escape(plain(str(text)))


class SafeConsole(Console):
    """A console for reports and messages: strings are never read as markup (styles come
    from ``Text`` objects and ``style=``), and whatever is rendered has its control
    characters removed before rich adds its own colours and cursor movements.

    >>> import io
    >>> out = io.StringIO()
    >>> SafeConsole(file=out, width=40).print("[/] \\x1b[2Jok")
    >>> out.getvalue()
    '[/] ok\\n'
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("markup", False)
        kwargs.setdefault("highlight", False)
        kwargs.setdefault("emoji", False)
        super().__init__(*args, **kwargs)

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control or not _ESCAPES.search(segment.text):
                yield segment
            else:
                yield Segment(plain(segment.text), segment.style)
