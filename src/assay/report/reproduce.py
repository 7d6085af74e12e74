"""``assay reproduce``'s report: the verdict first, then PI by PI, the claims and the
two environments side by side (terminal and Markdown)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from assay.report.fit import fitted
from assay.report.format import format_bytes
from assay.report.markdown import markdown_table
from assay.report.safe import plain
from assay.studies.reproduce import PAIRED_KINDS, PIReproduction, ReproduceResult

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
    return _ratio_rows(r, r.pis)


def _ratio_rows(
    r: ReproduceResult, judged: Sequence[PIReproduction]
) -> tuple[list[str], list[list[object]]]:
    what = {"order": "test", "sweep": "over", "knobs": "over"}.get(r.kind, "variant")
    header = ["PI", what, "original", "reproduced", "ratio [interval]", "verdict"]
    rows: list[list[object]] = []
    for p in judged:
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


#: The settings listed one by one (those not reproduced or undecided first).
SHOWN_SETTINGS = 10


def settings_line(r: ReproduceResult) -> str:
    """How many of a sweep's settings reproduced one by one."""
    said = [p.verdict for p in r.settings]
    counts = ", ".join(
        f"{said.count(v)} {v}" for v in ("reproduced", "not reproduced", "undecided") if v in said
    )
    return f"settings one by one (not in the verdict): {counts}" + (
        f"; the first {SHOWN_SETTINGS} of {len(said)}:" if len(said) > SHOWN_SETTINGS else ":"
    )


def setting_rows(r: ReproduceResult) -> tuple[list[str], list[list[object]]]:
    """The first :data:`SHOWN_SETTINGS` settings judged one by one."""
    header, rows = _ratio_rows(r, r.settings[:SHOWN_SETTINGS])
    return ["setting", *header[2:]], [row[1:] for row in rows]


def finding_rows(r: ReproduceResult) -> tuple[list[str], list[list[object]]]:
    header = ["found", "original", "reproduced", ""]
    return header, [[f.what, f.original, f.reproduced, "same" if f.same else "differs"]
                    for f in r.findings]  # fmt: skip


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


def method(r: ReproduceResult) -> str:
    """How the ratios were made and judged, in one line."""
    tests = (
        f"reproduced when it lies within 1 ± {r.tolerance:.0%} (two one-sided tests at "
        f"alpha {(1 - r.confidence) / 2:g}), not reproduced when entirely outside"
    )
    if r.kind in PAIRED_KINDS:
        return (
            "method: over the settings both measured, the geometric mean of the ratios "
            f"reproduced / original of their means, the paired t {r.confidence:.0%} "
            f"interval of their logs; {tests}"
            + ("; a setting one by one: Fieller's interval over its repetitions" if r.settings
               else "")
        )  # fmt: skip
    if r.kind == "order":
        return (
            "method: each test's mean over its runs (one mean a run, the original's schedule), "
            f"the ratio reproduced / original with Fieller's {r.confidence:.0%} interval "
            f"(Welch df); {tests}"
        )
    return (
        f"method: the ratio reproduced / original of each mean, Fieller's "
        f"{r.confidence:.0%} interval (Welch df); {tests}; a run's PI enters with its own "
        "interval (its warm-up removal, merging, drift)"
    )


def render_reproduction(r: ReproduceResult, console: Console) -> None:
    """The terminal report."""
    lines: list[RenderableType] = [Text(plain(headline(r)), style=_STYLES.get(r.verdict, "bold"))]
    lines.extend(fitted(_table("PI by PI", *pi_rows(r), styled=True), console, (), label="PI"))
    if r.claims:
        lines.extend(
            fitted(_table("claims", *claim_rows(r), styled=True), console, (), label="claim")
        )
    if r.settings:
        lines.append(Text(plain(settings_line(r))))
        lines.extend(
            fitted(_table("", *setting_rows(r), styled=True), console, (), label="setting")
        )
    if r.findings:
        found = _table("what each found (not in the verdict)", *finding_rows(r), styled=False)
        lines.extend(fitted(found, console, (), label="found"))
    lines.extend(fitted(_table("environment", *environment_rows(r), False), console, ()))
    lines.append(Text(plain(method(r)), style="dim"))
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
    if r.settings:
        sh, sr = setting_rows(r)
        text += f"\n{settings_line(r)}\n\n" + markdown_table(
            sh, [[*x[:-1], f"{_MARKS.get(str(x[-1]), '')} {x[-1]}"] for x in sr]
        )
    if r.findings:
        text += "\n" + markdown_table(*finding_rows(r))
    text += "\n" + markdown_table(*environment_rows(r))
    return text + f"\n{method(r)}\n"
