"""``assay reproduce``'s report: the verdict first, then PI by PI, the claims and the
two environments side by side (terminal and Markdown)."""

from __future__ import annotations

import math
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from assay.report.fit import fitted
from assay.report.format import format_bytes
from assay.report.markdown import markdown_table
from assay.report.safe import plain
from assay.studies.reproduce import ReproduceResult

#: What an undecided PI needs, said under the table.
UNDECIDED_HINT = (
    "an interval wider than the tolerance cannot lie within it: judge with a wider "
    "--tolerance, or measure the study (and then its reproduction) with a narrower "
    "[stop] ci_width (in a comparison with require_ci_width = true)"
)
_STYLES = {"reproduced": "bold green", "not reproduced": "bold red", "undecided": "yellow"}
_MARKS = {"reproduced": "✅", "not reproduced": "❌", "undecided": "⚠️"}


def _num(x: float, unit: str = "") -> str:
    if not math.isfinite(x):
        return "n/a"
    return f"{x:.4g}{' ' + unit if unit else ''}"


def _value(key: str, x: Any) -> str:
    if x is None:
        return "—"
    if key == "memory_bytes" and isinstance(x, int):
        return format_bytes(x)
    return str(x)


def headline(r: ReproduceResult) -> str:
    """The verdict in one sentence, with the counts behind it."""
    said = [p.verdict for p in r.pis] + [c.verdict for c in r.claims]
    counts = ", ".join(
        f"{said.count(v)} {v}" for v in ("reproduced", "not reproduced", "undecided") if v in said
    )
    return (
        f"{r.verdict}: {r.study} ({r.kind}) from {r.original_store} against its reproduction "
        f"in {r.store}, within {r.tolerance:.0%} ({counts or 'nothing to judge'})"
    )


def pi_rows(r: ReproduceResult) -> tuple[list[str], list[list[object]]]:
    """PI by PI: the original and reproduced means, the ratio with its interval."""
    header = ["PI", "variant", "original", "reproduced", "ratio [interval]", "verdict"]
    rows: list[list[object]] = []
    for p in r.pis:
        ratio = (
            f"{p.ratio:.4g} [{p.low:.4g}, {p.high:.4g}] ({r.confidence:.0%})"
            if math.isfinite(p.low) and math.isfinite(p.high)
            else _num(p.ratio)
        )
        rows.append(
            [
                p.pi,
                p.variant or "—",
                _num(p.original, p.unit),
                _num(p.reproduced, p.unit),
                ratio,
                p.verdict,
            ]
        )
    return header, rows


def claim_rows(r: ReproduceResult) -> tuple[list[str], list[list[object]]]:
    header = ["claim", "original", "reproduced", "verdict"]
    return header, [[c.says, c.original, c.reproduced, c.verdict] for c in r.claims]


def environment_rows(r: ReproduceResult) -> tuple[list[str], list[list[object]]]:
    header = ["", "original", "reproduced"]
    rows: list[list[object]] = [
        [f"{k} ≠" if a != b else k, _value(k, a), _value(k, b)] for k, a, b in r.environments
    ]
    return header, rows


def _table(title: str, header: list[str], rows: list[list[object]], styled: bool) -> Table:
    t = Table(title=title, title_justify="left")
    for h in header:
        t.add_column(h)
    for row in rows:
        cells: list[Any] = [plain(str(v)) for v in row]
        if styled:
            cells[-1] = Text(cells[-1], style=_STYLES.get(cells[-1], ""))
        t.add_row(*cells)
    return t


def render_reproduction(r: ReproduceResult, console: Console) -> None:
    """The terminal report."""
    lines: list[RenderableType] = [Text(plain(headline(r)), style=_STYLES.get(r.verdict, "bold"))]
    lines.extend(fitted(_table("PI by PI", *pi_rows(r), styled=True), console, (), label="PI"))
    if r.claims:
        lines.extend(
            fitted(_table("claims", *claim_rows(r), styled=True), console, (), label="claim")
        )
    lines.extend(fitted(_table("environment", *environment_rows(r), False), console, ()))
    lines.append(
        Text(
            plain(
                f"method: the ratio reproduced / original of each mean, Fieller's "
                f"{r.confidence:.0%} interval (Welch df); reproduced when it lies within "
                f"1 ± {r.tolerance:.0%} (two one-sided tests at alpha "
                f"{(1 - r.confidence) / 2:g}), not reproduced when entirely outside; a run's "
                "PI enters with its own interval (its warm-up removal, merging, drift)"
            ),
            style="dim",
        )
    )
    if any(p.verdict == "undecided" for p in r.pis):
        lines.append(Text(plain(f"what would tell: {UNDECIDED_HINT}"), style="yellow"))
    for w in r.warnings:
        lines.append(Text(plain(f"warning: {w}"), style="yellow"))
    console.print(Group(*lines))


def reproduction_markdown(r: ReproduceResult) -> str:
    """The report as Markdown, for an artifact's page or a PR comment."""
    header, rows = pi_rows(r)
    marked = [[*row[:-1], f"{_MARKS.get(str(row[-1]), '')} {row[-1]}"] for row in rows]
    text = f"### Reproduction of {r.study}\n\n**{headline(r)}**\n\n"
    text += markdown_table(header, marked)
    if r.claims:
        ch, cr = claim_rows(r)
        text += "\n" + markdown_table(
            ch, [[*x[:-1], f"{_MARKS.get(str(x[-1]), '')} {x[-1]}"] for x in cr]
        )
    text += "\n" + markdown_table(*environment_rows(r))
    return text
