"""Markdown tables of results (``--markdown``), for a README, a PR comment or
``$GITHUB_STEP_SUMMARY``: every estimate with its CI, as in the terminal.

>>> print(markdown_table(["a", "b"], [["x|y", "1"]]), end="")
| a | b |
|---|---|
| x\\|y | 1 |
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from assay.report.format import format_estimate, format_percent, kind_name
from assay.report.safe import plain

# GitHub's Markdown makes links, images, mentions and HTML of these: an outside string (a
# study, variant or PI name, a unit, an error) shows them as text.  Backslash escapes
# for brackets, '!', backticks, '|' and '#'; entities where an escape would not stop
# GitHub: '@' (a mention, an e-mail link), the ':' of 'x://' and 'mailto:' and the '.'
# of 'www.' (links GitHub forms from bare text), '&' (so that an entity in the data
# stays text), '<' and '>'.
_ESCAPED = str.maketrans(
    {c: "\\" + c for c in "\\`[]!|#"} | {"&": "&amp;", "<": "&lt;", ">": "&gt;", "@": "&#64;"}
)
_AUTOLINK = re.compile(r"(?i)(?<=[a-z0-9])(:)(?=//)|(?<=mailto)(:)|(?<=xmpp)(:)|(?<=www)(\.)")
_LINE_START = re.compile(r"^(\s*)([-+*>=]|\d+(?=[.)]))")  # a list, a quote, an underline


def _cell(value: object) -> str:
    """One line of text that GitHub shows as written: no link, image, mention or HTML is
    formed from it, and '|' does not end a table cell.

    >>> print(_cell("![t](https://evil.example/t.png) @octocat <b>|</b>"))
    \\!\\[t\\](https&#58;//evil.example/t.png) &#64;octocat &lt;b&gt;\\|&lt;/b&gt;
    """
    text = plain(str(value)).replace("\n", " ").translate(_ESCAPED)
    return _AUTOLINK.sub(lambda m: "&#58;" if m.group(4) is None else "&#46;", text)


def _text(value: object) -> str:
    """:func:`_cell` for a paragraph of its own: nor does it start a list or a quote
    (an escape before the mark, after an ordered list's number: ``1\\. x``)."""
    return _LINE_START.sub(
        lambda m: m.group(0) + "\\" if m.group(2)[0].isdigit() else m.group(1) + "\\" + m.group(2),
        _cell(value),
    )


def _answer(answer: str) -> str:
    """The study's answer (:mod:`assay.report.answer`) as its first paragraph."""
    return f"**{_text(answer)}**\n\n" if answer else ""


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A table of Assay's ``header`` and rows of any values, each shown as text."""
    lines = ["| " + " | ".join(h.replace("|", "\\|") for h in header) + " |"]  # ours
    lines.append("|" + "|".join("---" for _ in header) + "|")
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _estimate(row: Mapping[str, Any]) -> str:
    return format_estimate(
        row["mean"], row["half_width"], row.get("unit", ""), row.get("low"), row.get("high")
    )


def run_rows(pis: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[list[object]]]:
    """``assay run``'s table in human units, as the Markdown and the HTML report show it:
    a header and one row per PI (its ``--json`` entry)."""
    rows: list[list[object]] = [
        [
            p["name"],
            _estimate(p) if p.get("mean") is not None else "n/a",
            format_percent(p["relative_half_width"]),
            f"{p['confidence']:.0%}",
            p["n_samples"],
            p["method"],
        ]
        for p in pis
    ]
    return ["PI", "mean ± CI half-width", "relative", "confidence", "n", "method"], rows


def run_markdown(
    study: str, pis: Sequence[Mapping[str, Any]], baseline: Sequence[Any] = (), answer: str = ""
) -> str:
    """``assay run``: one row per PI; with ``--baseline``, a table of each PI against
    the earlier result (:class:`assay.studies.baseline.BaselineComparison`)."""
    header, rows = run_rows(pis)
    text = f"### {_cell(study)}\n\n" + _answer(answer) + markdown_table(header, rows)
    if baseline:
        text += "\n" + baseline_markdown(baseline)
    return text


def baseline_rows(comparisons: Sequence[Any]) -> tuple[list[str], list[list[object]]]:
    """Each PI against the baseline: the change with its CI, Welch's p and the verdict,
    as the Markdown and the HTML report show them."""
    # here: stats.gate imports SciPy (~0.6 s), and assay run imports this module before
    # its first trial
    from assay.stats.gate import change_text

    rows: list[list[object]] = []
    for c in comparisons:
        verdict = "—" if c.gate is None else f"{c.gate.verdict} (threshold {c.gate.limit})"
        p = f"{c.p_value:.2g}" if math.isfinite(c.p_value) else "n/a"
        change = change_text(c.relative, c.rel_low, c.rel_high) or "no interval"
        rows.append([c.pi, change, p, verdict, c.source])
    return ["PI", "change vs baseline [CI]", "Welch p", "gate", "baseline"], rows


def baseline_markdown(comparisons: Sequence[Any]) -> str:
    """Each PI against the baseline (:func:`baseline_rows`) as a Markdown table."""
    return markdown_table(*baseline_rows(comparisons))


#: The marks the Markdown gives claim verdicts (the terminal colours them the same way).
CLAIM_MARKS = {"holds": "✅", "fails": "❌", "undecided": "⚠️"}


def claim_rows(claims: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[list[object]]]:
    """Each ``[[claim]]`` of a result (its ``claims`` entries, issue #62): what it says,
    the ratio, the estimate with its interval, the claimed region and the verdict,
    as the terminal, the Markdown and the HTML report show them."""
    from assay.stats.claims import ClaimRule

    rows: list[list[object]] = []
    for c in claims:
        num, den = c["ratio"]
        est, low, high = c.get("estimate"), c.get("low"), c.get("high")
        level = float(c.get("confidence") or 0.9)
        if est is None:
            value = "n/a"
        elif low is None or high is None:
            value = f"{est:.3g}× (no interval)"
        else:
            value = f"{est:.4g}× [{low:.4g}, {high:.4g}] ({level:.0%})"
        region = ClaimRule(c["kind"], float(c["bound"])).text()
        rows.append([c["says"], f"{num} / {den} ({c['pi']})", value, region, c["verdict"]])
    return ["claim", "ratio (PI)", "estimate [interval]", "claimed", "verdict"], rows


def claims_note(claims: Sequence[Mapping[str, Any]]) -> str:
    """How the claims' verdicts were reached, in one line (each claim's own ``method``
    is in the JSON).

    >>> claims_note([{"kind": "within", "confidence": 0.9, "method": "..."}])[:51]
    "verdicts on Fieller's 90% interval of each ratio of"
    """
    level = float(claims[0].get("confidence") or 0.9)
    always = any("always-valid" in str(c.get("method", "")) for c in claims)
    interval = (
        f"the always-valid {level:.0%} interval of each ratio of means (the study stopped "
        "on its claims)"
        if always
        else f"Fieller's {level:.0%} interval of each ratio of means (Welch df)"
    )
    kinds = {c.get("kind") for c in claims}
    tests = []
    if kinds & {"at_least", "at_most"}:
        tests.append(f"a one-sided test at alpha {(1 - level) / 2:g} for at least / at most")
    if "within" in kinds:
        tests.append(f"two one-sided tests (TOST) at alpha {(1 - level) / 2:g} for within")
    return (
        f"verdicts on {interval}: {', '.join(tests)}; holds: the interval lies inside the "
        "claimed region, fails: entirely outside it, undecided: it straddles a boundary"
    )


def claims_markdown(claims: Sequence[Mapping[str, Any]]) -> str:
    """The claims table (:func:`claim_rows`) in Markdown, verdicts marked; "" without."""
    if not claims:
        return ""
    header, rows = claim_rows(claims)
    marked = [
        [*r[:-1], f"{CLAIM_MARKS.get(c['verdict'], '')} {r[-1]}"]
        for r, c in zip(rows, claims, strict=True)
    ]
    return markdown_table(header, marked) + f"\n{_text(claims_note(claims))}\n\n"


_MEDIAN = ("median", "median_low", "median_high")


def compare_markdown(
    study: str,
    reason: str,
    rows: Sequence[Mapping[str, Any]],
    gates: Sequence[Any] = (),
    answer: str = "",
    claims: Sequence[Mapping[str, Any]] = (),
) -> str:
    """``assay compare``: the claims first (``claims``: the result's entries), then one
    row per variant and PI, best first; with ``--fail-if-worse``, the gate's verdicts
    (:class:`assay.stats.gate.GateVerdict`)."""
    header, table = compare_rows(rows)
    text = f"### {_cell(study)}\n\n{_answer(answer)}{claims_markdown(claims)}{_text(reason)}\n\n"
    text += markdown_table(header, table)
    if gates:
        marks = {"worse": "❌", "not worse": "✅"}
        text += "\n" + "".join(
            f"- {marks.get(g.verdict, '⚠️')} **{g.verdict}**: {_cell(g.text())}\n" for g in gates
        )
    return text


def compare_rows(
    rows: Sequence[Mapping[str, Any]],
) -> tuple[list[str], list[list[object]]]:
    """``assay compare``'s ranking in human units, as the Markdown and the HTML report
    show it: a header and one row per variant and PI (``pi`` in each row), best first."""

    def relative(r: Mapping[str, Any]) -> str:
        x = r.get("relative_to_best")
        if x is None or not math.isfinite(x) or r.get("rank") == 1:
            return "best" if r.get("rank") == 1 else "n/a"
        low, high = r.get("relative_to_best_low"), r.get("relative_to_best_high")
        finite = all(isinstance(b, float) and math.isfinite(b) for b in (low, high))
        ci = f" ({low:+.1%} … {high:+.1%})" if finite else ""
        hl = "HL shift " if r.get("effect") == "Hodges-Lehmann shift" else ""
        return f"{hl}{x:+.1%}{ci}"

    def estimate(r: Mapping[str, Any]) -> str:
        if r.get("statistic") == "median":  # a median with its order-statistic interval
            if r.get("median") is None:
                return "n/a"
            med, low, high = (float(r[k]) for k in _MEDIAN)
            half = (high - low) / 2 if math.isfinite(high - low) else math.inf

            def one(x: float) -> str:  # to the digits the interval's width supports
                if not math.isfinite(x):
                    return "-∞" if x < 0 else "+∞"
                return format_estimate(x, half, r.get("unit", "")).split(" ± ")[0]

            return f"median {one(med)} ({one(low)} … {one(high)})"
        return _estimate(r) if r.get("mean") is not None else "n/a"

    table: list[list[object]] = [
        [
            r["pi"],
            r["rank"],
            r["variant"],
            estimate(r),
            relative(r),
            r.get("n_samples", ""),
            r.get("verdict", ""),
        ]
        for r in rows
    ]
    on_median = any(r.get("statistic") == "median" for r in rows)
    shown = "estimate (CI)" if on_median else "mean ± CI half-width"
    return ["PI", "rank", "variant", shown, "vs best (CI)", "n", "verdict"], table


def artifact_markdown(store_path: Any, study: str | None) -> str:
    """The artifact page (:func:`assay.report.html.artifact_report`) as Markdown, for a
    README, an artifact appendix or a PR: the answer, the claims, ELECT's summary by
    rounds, the environment and how to run it again."""
    from assay.report.answer import answer
    from assay.report.summary import summary_lines
    from assay.studies.stored import report_result

    stored, result, trials, _ = report_result(store_path, study)  # a sweep: what show keeps
    doc = result.as_dict()
    env = getattr(result, "environment", None) or doc.get("environment") or {}
    kind, name = stored.kind, stored.name
    parts = [
        f"## Artifact: {_cell(name)}\n",
        f"{_cell(kind_name(kind))} study, {len(trials)} trials, from the store "
        f"`{_cell(store_path.name)}`\n",
        _answer(answer(kind, doc)),
    ]
    if doc.get("claims"):
        parts.append("### Claims\n\n" + claims_markdown(doc["claims"]))
    fence = "`" * 3
    summary = "\n".join(summary_lines(stored, trials)).replace(fence, "'''")
    parts.append(f"### Summary by rounds\n\n{fence}text\n{summary}\n{fence}\n")
    if env:
        parts.append("### Environment\n\n" + markdown_table(["", "value"], list(env.items())))
    parts.append(
        "### How to run it again\n\n"
        f"1. plan it: `assay plan {_cell(name)}.toml`\n"
        f"2. run it: `assay {kind} {_cell(name)}.toml`\n"
        "3. or run it again from this store and judge it against this result: "
        f"`assay reproduce {_cell(store_path.name)}`\n"
    )
    return "\n".join(parts)
