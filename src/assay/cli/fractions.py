"""Shares on the command line: ``5%`` and ``0.05`` mean the same, everywhere.

A bare number of 1 or more is refused rather than guessed at: ``--ci-width 5`` could
mean 5% or 500%, and reading it either way silently would give a study the user did
not ask for.

>>> SHARE.convert("5%", None, None), SHARE.convert("0.05", None, None)
(0.05, 0.05)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

# ParamType is generic for type checkers in newer click releases; older ones cannot
# subscript it at run time
if TYPE_CHECKING:
    _ParamType = click.ParamType[float]
else:
    _ParamType = click.ParamType


class Share(_ParamType):
    """A fraction strictly between 0 and 1 (``closed_high``: up to 1 inclusive), written
    as ``0.05`` or ``5%``."""

    name = "share"

    def __init__(self, *, closed_high: bool = False) -> None:
        self.closed_high = closed_high

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        if isinstance(value, float):
            return value
        text = str(value).strip()
        percent = text.endswith("%")
        try:
            x = float(text[:-1]) / 100 if percent else float(text)
        except ValueError:
            self.fail(f"{value!r}: expected a fraction like 0.05 or a percent like 5%", param, ctx)
        bounds = "more than 0% and at most 100%" if self.closed_high else "between 0% and 100%"
        if not percent and x >= 1 and not (self.closed_high and x == 1):
            self.fail(
                f"{value!r}: a bare number must be a fraction below 1; for percent write "
                f"{text}% (e.g. 0.05 or 5%)",
                param,
                ctx,
            )
        if not (0 < x < 1 or (self.closed_high and x == 1)):
            self.fail(f"{value!r}: expected {bounds}", param, ctx)
        return x


SHARE = Share()  # confidence, alpha, sampling rates: strictly inside (0, 1)
WIDTH = Share(closed_high=True)  # a relative CI half-width: up to ±100%
