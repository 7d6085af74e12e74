"""The answer of a study in one sentence a reader can quote, with its evidence: the
first line of its HTML report and of its Markdown, and the ``answer:`` line of the
terminal report (one formatter for all three).

It is built from the study's JSON document (``result.as_dict()``), so that a stored
study, ``--from`` data and a result read back say the same.

>>> answer("run", {"study": "s", "done": True, "pis": [{"name": "wall_time", "unit": "s",
...     "mean": 0.0123, "low": 0.0120, "high": 0.0126, "half_width": 0.0003,
...     "relative_half_width": 0.024, "confidence": 0.95, "rounds_used": 42, "met": True}]})
'wall_time 12.30 ms ± 0.30 ms (±2.4%, 95% CI, 42 rounds); the target is met'
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from assay.report.format import format_estimate, format_percent


def answer(kind: str, doc: Mapping[str, Any]) -> str:
    """The study's answer (``""`` when its document has none)."""
    make = {"run": _run, "compare": _compare, "order": _order, "sweep": _sweep, "knobs": _knobs}
    return make[kind](doc) if kind in make else ""


def _num(x: Any) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


def _pct(x: float) -> str:
    if math.isnan(x):
        return "n/a"
    return f"{x * 100:+.1f}%" if math.isfinite(x) else ("-∞" if x < 0 else "+∞")


def _run(doc: Mapping[str, Any]) -> str:
    parts = []
    for p in doc.get("pis") or []:
        mean, half = _num(p.get("mean")), _num(p.get("half_width"))
        if not math.isfinite(mean):
            parts.append(f"{p.get('name')}: no valid CI")
            continue
        conf = _num(p.get("confidence"))
        est = format_estimate(
            mean, half, str(p.get("unit") or ""), _num(p.get("low")), _num(p.get("high"))
        )
        rel = format_percent(_num(p.get("relative_half_width")))
        parts.append(f"{p.get('name')} {est} ({rel}, {conf:.0%} CI, {p.get('rounds_used')} rounds)")
    if not parts:
        return ""
    met = all(bool(p.get("met")) for p in doc.get("pis") or [])
    return "; ".join(parts) + ("; the target is met" if met else "; the target is not met")


def _compare(doc: Mapping[str, Any]) -> str:
    """The claims' verdicts first, where the study has claims (#62), then the ranking."""
    claims, ranking = _claims(doc), _ranking(doc)
    if str(doc.get("reason", "")).startswith("claims decided"):
        # it stopped on its claims: its ranking is said, not called undecided
        ranking = re.sub(r"^not decided (after \d+ cycles): ", r"\1, ", ranking)
    return f"{claims}; {ranking}" if claims and ranking else claims or ranking


def _claims(doc: Mapping[str, Any]) -> str:
    """How many claims hold, fail and are undecided, naming those that do not hold.

    >>> _claims({"claims": [{"says": "a", "verdict": "holds"}, {"says": "b", "verdict": "fails"}]})
    'claims: 1 holds, 1 fails ("b")'
    """
    cs: Sequence[Mapping[str, Any]] = doc.get("claims") or []
    if not cs:
        return ""
    parts = []
    for verdict in ("holds", "fails", "undecided"):
        named = [str(c.get("says")) for c in cs if c.get("verdict") == verdict]
        if named:
            which = "" if verdict == "holds" else " (" + "; ".join(f'"{n}"' for n in named) + ")"
            verb = verdict if len(named) == 1 or verdict == "undecided" else verdict[:-1]
            parts.append(f"{len(named)} {verb}{which}")
    return "claims: " + ", ".join(parts)


def _ranking(doc: Mapping[str, Any]) -> str:
    comps: Sequence[Mapping[str, Any]] = doc.get("comparisons") or []
    if not comps:
        return ""
    c = comps[0]
    rows: Sequence[Mapping[str, Any]] = c.get("variants") or []
    if not rows:
        return ""
    best = rows[0]
    better = "lower" if c.get("direction") == "lower" else "higher"
    against = []
    for r in rows[1:]:
        rel = _num(r.get("relative_to_best"))
        low, high = _num(r.get("relative_to_best_low")), _num(r.get("relative_to_best_high"))
        # an unbounded interval reads the same from the result and from its --json, where
        # JSON has no infinity (null): "no CI", not a sign the document cannot keep
        bounded = math.isfinite(low) and math.isfinite(high)
        ci = f"[{_pct(low)}, {_pct(high)}]" if bounded else "(no CI)"
        shown = "n/a" if not math.isfinite(rel) else f"{_pct(rel)} {ci}"
        against.append(f"`{r.get('variant')}` {shown}")
    cycles = (doc.get("schedule") or {}).get("cycles")
    how = f"after {cycles} cycles" if cycles else "from the results given"
    alpha = _num(c.get("alpha"))
    test = f"; α = {alpha:g}" if math.isfinite(alpha) else ""
    if doc.get("decided"):
        lead = f"`{best.get('variant')}` is best on {c.get('pi')} ({better} is better)"
        return f"{lead}: " + ", ".join(against) + f" against it (decided {how}{test})"
    raw = [r for r in rows if r.get("raw_median") is not None]
    if raw:  # no interval for some: what their raw samples say, never a leader
        said = []
        for r in raw:
            rel, p = _num(r.get("raw_relative")), _num(r.get("raw_mann_whitney_p"))
            vs = f"`{r.get('raw_vs')}`'s" if r.get("raw_vs") else "the other's"
            shift = f"{_pct(rel)} against {vs}" if math.isfinite(rel) else "n/a"
            test = f", Mann-Whitney p = {p:.2g}" if math.isfinite(p) else ""
            said.append(f"`{r.get('variant')}` has no valid CI; its median is {shift}{test}")
        return (
            f"not decided {how} on {c.get('pi')}: "
            + "; ".join(said)
            + " (raw samples, autocorrelated: indicative only)"
        )
    lead = f"not decided {how}: `{best.get('variant')}` leads on {c.get('pi')}"
    return f"{lead}: " + ", ".join(against) + " against it"


def _order(doc: Mapping[str, Any]) -> str:
    verdict = str(doc.get("verdict") or "")
    return verdict[:1].upper() + verdict[1:] if verdict else ""


def _sweep(doc: Mapping[str, Any]) -> str:
    """The claims' verdicts first, where the study has claims (#62), then the terms."""
    claims, terms = _claims(doc), _sweep_terms(doc)
    return f"{claims}; {terms}" if claims and terms else claims or terms


def _sweep_terms(doc: Mapping[str, Any]) -> str:
    analysis = doc.get("analysis") or {}
    terms = [
        f"{str(t.get('term')).replace(':', ' × ')} ({_num(t.get('pct_var')):.1f}%)"
        for t in analysis.get("significant") or []
    ]
    points = [
        f"{p.get('param')} {p.get('kind')} at {p.get('value')}"
        for p in analysis.get("important_points") or []
    ]
    if not terms:
        return "no parameter has a significant effect" if analysis else ""
    text = "significant, by share of variance: " + ", ".join(terms[:6])
    text += f" and {len(terms) - 6} more" if len(terms) > 6 else ""
    text += "; " + ", ".join(points[:3]) if points else ""
    busy = doc.get("busy")
    if busy:  # stopped within its first quarter: the held-out R² has not judged it
        text = (
            f"provisional (the machine was busy: load {_num(busy.get('load')):.1f} on "
            f"{busy.get('cores')} cores; stopped early): " + text
        )
    return text


def _knobs(doc: Mapping[str, Any]) -> str:
    rankings = doc.get("rankings") or []
    if not rankings:
        return ""
    r = rankings[0]
    names = [str(k) for k in r.get("top") or []]
    if not names:
        return ""
    verdict = str(r.get("stability_verdict") or "")
    which = "the knob that matters" if len(names) == 1 else f"the {len(names)} knobs that matter"
    return (
        f"{which} most for {r.get('pi')}: " + ", ".join(names) + (f"; {verdict}" if verdict else "")
    )
