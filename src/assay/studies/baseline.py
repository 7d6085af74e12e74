"""``assay run --baseline FILE``: a new measurement held against an old one.

Pilot compares a result with "old results" known only by their summary (§III-F): the
mean, the variance of the subsession samples and their count.  The baseline file is
what ``assay run --json`` wrote (or a hyperfine / pyperf JSON export, read by
:mod:`assay.importers.results`); each PI of the new result is matched to the
baseline's PI of the same name, and the two get Welch's test with Fieller's interval
of the relative difference (:func:`assay.stats.compare.welch_test`).  With a
threshold, the regression gate of :mod:`assay.stats.gate` gives the verdict.

>>> from assay.stats.compare import SummaryStats
>>> c = compare_summaries("wall_time", "s", "lower", SummaryStats(1.1, 0.001, 30),
...                       SummaryStats(1.0, 0.001, 30), source="old.json", threshold=0.05)
>>> c.gate.verdict, round(c.relative, 3)
('worse', 0.1)
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.designs.run_until_ci import PIResult
from assay.importers.results import ImportedResult, ResultFileError, read_result_file
from assay.spec import PISpec
from assay.stats.compare import SummaryStats, analyze_variant, summary_from_ci, welch_test
from assay.stats.drift_bound import RatioBound
from assay.stats.gate import GateVerdict, change_text, gate_verdict, with_drift_bound


@dataclass(frozen=True)
class Baseline:
    """One PI of the baseline file: its summary, merged as a new result's would be."""

    source: str  # the file's name
    summary: SummaryStats
    # its readings, where the file has them (an Assay document's samples, hyperfine's
    # times): the report draws them beside the new ones
    readings: tuple[float, ...] = ()


@dataclass(frozen=True)
class BaselineComparison:
    """One PI of the new result against the same PI of the baseline."""

    pi: str
    unit: str
    direction: str
    new_mean: float
    old_mean: float
    relative: float  # (new - old) / old
    rel_low: float
    rel_high: float
    p_value: float
    confidence: float
    source: str  # the baseline file
    gate: GateVerdict | None  # with a threshold (--fail-if-worse)

    bound: str = ""  # how the interval was made when it is not Welch's (drift_bound)

    def text(self) -> str:
        """One line: the change with its interval and Welch's p, and the verdict."""
        change = change_text(self.relative, self.rel_low, self.rel_high)
        if change is None:
            shown = "no interval (too few samples on one side)"
        elif self.bound:
            shown = f"{change} (the interval is {self.bound})"
        else:
            shown = f"{change} (Welch p = {self.p_value:.2g})"
        line = f"{self.pi} vs baseline {self.source}: {shown}"
        if self.gate is not None:
            line += f"; {_verdict_words(self.gate)}"
        return line

    def as_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if k != "gate"}
        d["gate"] = None if self.gate is None else self.gate.as_dict()
        return d | {"text": self.text()}


def _verdict_words(g: GateVerdict) -> str:
    return {
        "worse": f"worse than the baseline beyond {g.limit}",
        "not worse": f"not worse than the baseline by more than {g.limit}",
        "undecided": f"undecided at {g.limit} (the interval straddles it)",
    }[g.verdict]


def _bound(new_blocks: Sequence[float], old: Baseline, harmonic: bool) -> RatioBound | None:
    """The drift-surviving bound (:mod:`assay.stats.drift_bound`) of a new result with
    no interval against a baseline whose readings the file kept."""
    from assay.stats.drift_bound import block_means, block_ratio_bound

    then = block_means(old.readings, harmonic=harmonic) if old.readings else None
    if then is None or not new_blocks:
        return None
    return block_ratio_bound(new_blocks, then)


def compare_summaries(
    pi: str,
    unit: str,
    direction: str,
    new: SummaryStats | None,
    old: SummaryStats,
    *,
    source: str,
    confidence: float = 0.95,
    threshold: float | None = None,
    bound: RatioBound | None = None,
    why: str = "",
) -> BaselineComparison:
    """Welch's test and Fieller's interval of ``(new - old) / old``; ``new`` None: the
    new result has no interval (``why``).  Where the gate is undecided, the two runs'
    block ranges (``bound``) decide when they are apart
    (:func:`assay.stats.gate.with_drift_bound`); with no interval they are what is shown."""
    nan = math.nan
    rel, lo, hi, p = nan, nan, nan, nan
    if new is not None:
        w = welch_test(new.mean, new.var, new.n, old.mean, old.var, old.n, confidence)
        rel, lo, hi, p = w.relative, w.rel_low, w.rel_high, w.p_value
    elif bound is not None:
        rel, lo, hi = bound.relative, bound.low, bound.high
    gate = None
    if threshold is not None:
        none = "this run has no valid interval" + (f": {why}" if why else "")
        gate = gate_verdict(
            "this run",
            source,
            relative=nan if new is None else rel,
            low=nan if new is None else lo,
            high=nan if new is None else hi,
            direction=direction,
            threshold=threshold,
            why=none if new is None else "",
        )
        gate = with_drift_bound(gate, bound)
    # the drift bound's figures where it is what decides (no ordinary interval, or the
    # gate went by it); None: the ordinary interval's
    used = bound if new is None or (gate is not None and gate.bound != "") else None
    return BaselineComparison(
        pi=pi,
        unit=unit,
        direction=direction,
        new_mean=new.mean if new is not None else nan,
        old_mean=old.mean,
        relative=used.relative if used is not None else rel,
        rel_low=used.low if used is not None else lo,
        rel_high=used.high if used is not None else hi,
        p_value=p,
        confidence=confidence,
        source=source,
        gate=gate,
        bound=used.words() if used is not None else "",
    )


def read_baseline(
    path: str | Path, pis: Sequence[PISpec], confidence: float = 0.95
) -> dict[str, Baseline]:
    """The baseline's result for each PI of the study that it has, by PI name.

    An Assay ``--json`` file is matched PI by PI; a hyperfine or pyperf export (one
    benchmark, timed in seconds) stands for the ``wall_time`` PI.  Raises
    :class:`~assay.importers.results.ResultFileError` naming the file when nothing
    matches, a file holds several benchmarks, the units disagree, or its samples give
    no interval.
    """
    results = read_result_file(path)
    wanted = {p.name: p for p in pis}
    if results[0].format != "assay":
        if len(results) != 1:
            names = ", ".join(r.name for r in results)
            raise ResultFileError(
                path,
                f"holds {len(results)} benchmarks ({names}); a baseline is one measurement "
                "of the same command",
            )
        if "wall_time" not in wanted:
            raise ResultFileError(
                path,
                f"a {results[0].format} export holds wall times; this study has no "
                f"wall_time PI (its PIs: {', '.join(wanted)})",
            )
        matched = {"wall_time": results[0]}
    else:
        matched = {r.pi: r for r in results if r.pi in wanted}
        if not matched:
            have = ", ".join(str(r.pi) for r in results)
            raise ResultFileError(
                path, f"has no PI of this study (it has {have}; the study: {', '.join(wanted)})"
            )
    out: dict[str, Baseline] = {}
    for name, r in matched.items():
        unit = wanted[name].unit
        if r.unit and unit and r.unit != unit:
            raise ResultFileError(
                path, f"PI {name!r} is in {r.unit!r} there but in {unit!r} in this study"
            )
        try:
            readings = () if r.samples is None else tuple(map(float, r.samples))
            out[name] = Baseline(Path(r.source).name, _old_summary(r, confidence), readings)
        except ValueError as exc:
            raise ResultFileError(
                path, f"PI {name!r}: its samples give no interval ({exc})"
            ) from None
    return out


def _new_summary(r: PIResult) -> SummaryStats | None:
    ok = math.isfinite(r.mean) and math.isfinite(r.half_width) and r.n_samples >= 2
    if not ok:
        return None
    return summary_from_ci(r.mean, r.half_width, r.n_samples, r.confidence, r.subsession_size)


def _old_summary(r: ImportedResult, confidence: float) -> SummaryStats:
    if r.samples is None or r.format == "assay":  # an Assay run's own interval
        return r.summary
    return analyze_variant(r.samples, confidence).summary  # merged like a new result


def compare_with_baseline(
    results: Sequence[PIResult],
    baseline: Mapping[str, Baseline],
    *,
    threshold: float | None = None,
    harmonic: Collection[str] = (),
) -> list[BaselineComparison]:
    """Each new PI result that the baseline has, compared with it (see the module);
    ``harmonic``: the PIs whose means are harmonic (rates)."""
    out = []
    for r in results:
        old = baseline.get(r.name)
        if old is None:
            continue
        new = _new_summary(r)
        out.append(
            compare_summaries(
                r.name,
                r.unit,
                r.direction,
                new,
                old.summary,
                source=old.source,
                confidence=r.confidence,
                threshold=threshold,
                bound=_bound(r.blocks, old, r.name in harmonic),
                why=r.note,
            )
        )
    return out
