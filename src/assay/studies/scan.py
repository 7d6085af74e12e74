"""A comparison whose variants differ only in their parameters (a scan: ``-P``/``-L``,
or ``[[variant]] params = {...}`` in a study file): its means in scan order, each one's
ratio to the best, and the fitted trend of a numeric parameter; and a comparison's or
a run's trials as hyperfine's ``--export-json``/``--export-csv`` results (written by
:mod:`assay.report.export`).
"""

from __future__ import annotations

import dataclasses
import shlex
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.designs.compare import PIComparison
from assay.spec import Spec
from assay.stats.scan import TrendFit, fit_trend
from assay.stats.spread import spread
from assay.store import Store, TrialRecord


@dataclass(frozen=True)
class ScanRow:
    """One scanned value (combination): its variant, values, mean and CI, n, and its
    mean over the best variant's (``ratio``: 1.00 for the best)."""

    variant: str
    params: dict[str, Any]
    mean: float | None
    low: float | None
    high: float | None
    n: int
    ratio: float | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "parameters": self.params,
            "mean": self.mean,
            "low": self.low,
            "high": self.high,
            "n_samples": self.n,
            "ratio_to_best": self.ratio,
        }


@dataclass(frozen=True)
class ScanSummary:
    """The scan of one PI: rows in scan order and, for one numeric parameter, its trend."""

    pi: str
    unit: str
    parameters: list[str]
    rows: list[ScanRow]
    trend: TrendFit | None = None
    trend_parameter: str | None = None
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "pi": self.pi,
            "unit": self.unit,
            "parameters": self.parameters,
            "rows": [r.as_dict() for r in self.rows],
            "trend": None if self.trend is None else self.trend.as_dict(),
            "trend_parameter": self.trend_parameter,
            "notes": self.notes,
        }


def scan_parameters(spec: Spec) -> list[str] | None:
    """The scanned parameters when every variant runs the benchmark's command with
    values of the same parameters (and only those differ); None otherwise."""
    variants = spec.variants
    if len(variants) < 2 or any(v.command is not None or v.env for v in variants):
        return None
    keys = [list(v.params) for v in variants]
    if not keys[0] or any(k != keys[0] for k in keys):
        return None
    return keys[0]


def scan_summary(spec: Spec, comparison: PIComparison) -> ScanSummary | None:
    """The scan view of ``comparison`` (one PI of a comparison of ``spec``), or None
    when the variants are not a scan."""
    names = scan_parameters(spec)
    if names is None:
        return None
    stats = comparison.ranking.variants
    means = [s.mean for s in stats.values()]
    best = None
    if means:
        best = min(means) if comparison.direction == "lower" else max(means)
    rows = []
    for v in spec.variants:
        s = stats.get(v.name)
        ratio = None if s is None or not best else s.mean / best
        rows.append(
            ScanRow(
                v.name,
                dict(v.params),
                None if s is None else s.mean,
                None if s is None else s.ci.low,
                None if s is None else s.ci.high,
                0 if s is None else s.n,
                ratio,
            )
        )
    summary = ScanSummary(comparison.name, comparison.unit, names, rows)
    numeric = [n for n in names if all(isinstance(v.params[n], int | float) for v in spec.variants)]
    if len(names) != 1 or not numeric:
        note = "no trend: " + (
            "several parameters are scanned (a grid)"
            if len(names) > 1
            else "the values are not numbers"
        )
        return ScanSummary(**{**summary.__dict__, "notes": [note]})
    fit_in = [(v.params[names[0]], stats[v.name]) for v in spec.variants if v.name in stats]
    trend = fit_trend(
        [float(x) for x, _ in fit_in],
        [s.mean for _, s in fit_in],
        [(s.var / s.n) ** 0.5 if s.n else float("nan") for _, s in fit_in],
        comparison.ranking.confidence,
    )
    return dataclasses.replace(summary, trend=trend, trend_parameter=names[0])


# --- hyperfine's export formats ------------------------------------------------------


def hyperfine_results(path: Path, spec: Spec) -> list[dict[str, Any]]:
    """The study's trials as hyperfine's ``--export-json`` ``results``: per command
    (variant) its wall times in seconds, their mean, standard deviation, median, min
    and max, the mean user and system CPU times, the exit codes and, for a scan, the
    ``parameters`` (as strings, as hyperfine writes them).  Failed trials count in
    ``exit_codes`` only; a command without a measured trial has null statistics."""
    with Store(path, read_only=True) as db:
        found = db.find_study(spec.study.name)
        trials = [] if found is None else db.trials(found[0])
    scanned = scan_parameters(spec) or []
    if spec.variants:
        groups = [
            (v.name, {k: str(v.params[k]) for k in scanned}, _of_variant(trials, v.name))
            for v in spec.variants
        ]
    else:
        command = spec.benchmark.command
        groups = [(command[0] if len(command) == 1 else shlex.join(command), {}, trials)]
    # hyperfine's times are the measured runs: not the warm-ups (--warmup N discards
    # each command's first N rounds from the analysis too)
    skip = spec.stop.warmup_rounds if isinstance(spec.stop.warmup_rounds, int) else 0
    return [_result(name, params, _measured(mine, skip)) for name, params, mine in groups]


def _measured(trials: list[TrialRecord], skip: int) -> list[TrialRecord]:
    """``trials`` without the first ``skip`` rounds (warm-ups), in the order run."""
    return sorted(trials, key=lambda t: (t.run, t.seq))[skip:] if skip else trials


def _of_variant(trials: list[TrialRecord], name: str) -> list[TrialRecord]:
    return [t for t in trials if t.setting.get("variant") == name]


def _result(command: str, params: dict[str, str], trials: list[TrialRecord]) -> dict[str, Any]:
    ok = [t for t in trials if t.ok and t.duration is not None]
    times = [float(t.duration) for t in ok if t.duration is not None]
    users = [t.cpu_user for t in ok if t.cpu_user is not None]
    systems = [t.cpu_system for t in ok if t.cpu_system is not None]
    s = spread(times)
    result: dict[str, Any] = {
        "command": command,
        "mean": s.mean,
        "stddev": s.sd,
        "median": s.median,
        "user": statistics.fmean(users) if users else None,
        "system": statistics.fmean(systems) if systems else None,
        "min": s.low,
        "max": s.high,
        "times": times,
        "exit_codes": [t.exit_code for t in trials],
    }
    if params:
        result["parameters"] = params
    return result
