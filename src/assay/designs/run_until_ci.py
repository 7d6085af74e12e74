"""Run-until-CI (Pilot §III-A, §III-D, §III-E): keep running rounds until every PI's
confidence interval is as narrow as asked, or the budget is spent.

This module is pure: it turns the data of finished rounds into per-PI results and a
decision. The study loop (``assay.studies.run``) executes trials and stores them.

Per PI, the method follows Pilot:

* with unit readings: the non-stable phases of each round are removed with
  E-Divisive with Medians (the stable segment is the longest one and holds more than
  half of the round's unit readings; a round without one contributes nothing), then
  adjacent samples are merged into subsessions until |lag-1 autocorrelation| <= 0.1,
  and a t-interval is taken over the subsession means;
* with readings only: the first ``warmup_rounds`` rounds are dropped, then the same
  subsession merging and t-interval over the per-round readings;
* with an adjustable work amount: additionally the work-per-second regression
  t = alpha + w / v gives the stable speed v with its CI.

>>> import numpy as np
>>> from assay.spec import PISpec, StopSpec
>>> rng = np.random.default_rng(1)
>>> rounds = [RoundData(reading=float(x), duration=1.0) for x in rng.normal(10, 0.5, 40)]
>>> r = analyze_pi(PISpec(name="t", unit="s"), rounds, StopSpec())
>>> r.method, r.met, round(r.mean)
('readings, subsession t-interval', True, 10)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

import numpy as np

from assay.spec import PISpec, StopSpec, WorkSpec
from assay.stats.autocorr import autocorrelation, subsession_interval
from assay.stats.changepoint import dominant_segment
from assay.stats.intervals import required_sample_size
from assay.stats.workamount import WorkAmountPlanner
from assay.stats.wps import fit_wps

WPS_PI = "work_per_second"


@dataclass(frozen=True)
class RoundData:
    """What the analysis needs from one successful trial."""

    reading: float | None = None
    units: np.ndarray | None = None
    work: float | None = None
    duration: float = math.nan
    # the stable segment of ``units`` when already known (None: the round has none)
    segment: tuple[int, int] | Literal["unknown"] | None = "unknown"


# Change points are located exactly on up to this many readings, on block medians beyond
# (bench/RESULTS.md: ~0.05 s per round up to 100k readings; 0.17 s with 1000, 2.3 s with 4000).
EDM_MAX_EXACT = 500
# Level of the Mann-Whitney pruning of EDM's change points (method "edm"), and the
# block size of that test (None: the subsession size of the longest segment).
EDM_PRUNE_ALPHA = 0.01
EDM_PRUNE_BLOCK: int | None = 1
# Quantile, across rounds, of the head and tail cuts applied to every round (method "edm").
EDM_CUT_QUANTILE = 0.5


def round_segment(units: np.ndarray, method: str = "edm") -> tuple[int, int] | None:
    """The stable segment [begin, end) of one round's unit readings; None if there is none.

    ``edm``: E-Divisive with Medians, change points pruned by significance, Pilot's
    dominant-segment rule; ``edm-pilot``: the same without pruning, as Pilot publishes it;
    ``none``: the whole round.
    """
    if method == "none":
        return (0, int(units.size))
    if method == "edm":
        # test change points on decorrelated blocks: AR noise wanders without changing
        seg = dominant_segment(
            units, max_exact=EDM_MAX_EXACT, alpha=EDM_PRUNE_ALPHA, block=EDM_PRUNE_BLOCK
        )
    else:
        seg = dominant_segment(units, max_exact=EDM_MAX_EXACT)
    return None if seg is None else (seg.begin, seg.end)


@dataclass(frozen=True)
class PIResult:
    """One PI's estimate with its uncertainty and how it was obtained."""

    name: str
    unit: str
    direction: str
    method: str
    mean: float
    low: float
    high: float
    half_width: float
    relative_half_width: float
    confidence: float
    n_samples: int  # samples the interval rests on (subsession means or WPS pairs)
    n_raw: int  # raw readings / unit readings used, after warm-up removal
    rounds_used: int
    subsession_size: int
    autocorrelation: float
    warmup_removed: int  # unit readings (or rounds) removed as non-stable
    rounds_rejected: int  # rounds with no stable segment
    required_raw: int | None  # raw samples needed for the target width (estimate)
    met: bool
    note: str = ""
    extra: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _empty(
    pi_name: str,
    unit: str,
    direction: str,
    method: str,
    conf: float,
    note: str,
    raw: np.ndarray | None = None,
    rounds_used: int = 0,
    removed: int = 0,
    rejected: int = 0,
) -> PIResult:
    mean = float(np.mean(raw)) if raw is not None and raw.size else math.nan
    return PIResult(
        name=pi_name,
        unit=unit,
        direction=direction,
        method=method,
        mean=mean,
        low=-math.inf,
        high=math.inf,
        half_width=math.inf,
        relative_half_width=math.inf,
        confidence=conf,
        n_samples=0 if raw is None else int(raw.size),
        n_raw=0 if raw is None else int(raw.size),
        rounds_used=rounds_used,
        subsession_size=0,
        autocorrelation=math.nan,
        warmup_removed=removed,
        rounds_rejected=rejected,
        required_raw=None,
        met=False,
        note=note,
    )


def stable_unit_readings(
    rounds: Sequence[RoundData], method: str = "edm"
) -> tuple[np.ndarray, int, int]:
    """Concatenate the stable part of every round; return (samples, removed, rounds rejected).

    ``edm-pilot`` (Pilot as published): each round keeps its own dominant segment, and a
    round without one contributes nothing. ``edm``: the warm-up and cool-down are taken
    as properties of the workload, the same in every round, so every round is cut at the
    median head and median tail found across rounds. Cutting each round where its own
    data deviate (Pilot) trims exactly the excursions of autocorrelated noise and so
    shrinks the variance the CI sees (bench/RESULTS.md: coverage 89% for AR(1) phi = 0.5).
    """
    pairs: list[tuple[np.ndarray, tuple[int, int] | None]] = []
    for r in rounds:
        if r.units is not None and r.units.size > 0:
            seg = round_segment(r.units, method) if r.segment == "unknown" else r.segment
            pairs.append((r.units, seg))
    kept: list[np.ndarray] = []
    removed = 0
    rejected = 0
    if method == "edm":
        found = [(seg, units.size) for units, seg in pairs if seg is not None]
        q = EDM_CUT_QUANTILE
        head = int(np.quantile([seg[0] for seg, _ in found], q)) if found else 0
        tail = int(np.quantile([n - seg[1] for seg, n in found], q)) if found else 0
        for units, _ in pairs:
            part = units[head : max(units.size - tail, head)]
            kept.append(part)
            removed += int(units.size - part.size)
    else:
        for units, seg in pairs:
            if seg is None:
                rejected += 1
                removed += int(units.size)
                continue
            kept.append(units[seg[0] : seg[1]])
            removed += int(units.size) - (seg[1] - seg[0])
    samples = np.concatenate(kept) if kept else np.empty(0)
    return samples, removed, rejected


def analyze_samples(
    pi: PISpec,
    samples: np.ndarray,
    stop: StopSpec,
    method: str,
    rounds_used: int,
    removed: int = 0,
    rejected: int = 0,
) -> PIResult:
    """Subsession merging and a t-interval on an ordered sample; the shared core of both paths."""
    got = subsession_interval(
        samples,
        confidence=stop.confidence,
        max_autocorrelation=stop.max_autocorrelation,
        harmonic=pi.mean == "harmonic",
        correct_residual=stop.residual_correction,
    )
    if got is None:
        drifting = samples.size >= 3 * stop.min_samples
        return _empty(
            pi.name,
            pi.unit,
            pi.direction,
            method,
            stop.confidence,
            (
                f"the lag-1 autocorrelation ({autocorrelation(samples):.2f}) does not fall to "
                f"{stop.max_autocorrelation} by merging up to a third of the "
                f"{samples.size} samples: the PI drifts or shifted during the study, so no "
                "valid CI exists (background load, frequency scaling or a changing system?)"
            )
            if drifting
            else "not enough samples yet to merge away their autocorrelation",
            samples,
            rounds_used,
            removed,
            rejected,
        )
    ci, sub = got
    rel = ci.relative_half_width
    met = ci.n >= stop.min_samples and rel <= stop.ci_width
    required: int | None = None
    if pi.mean == "arithmetic" and ci.n >= 2 and ci.std > 0 and ci.mean != 0:
        need = required_sample_size(ci.std, ci.mean, stop.ci_width, stop.confidence)
        required = max(need, stop.min_samples) * sub.size
    elif math.isfinite(rel):
        # the half-width shrinks as 1/sqrt(n)
        required = max(math.ceil(ci.n * (rel / stop.ci_width) ** 2), stop.min_samples) * sub.size
    return PIResult(
        name=pi.name,
        unit=pi.unit,
        direction=pi.direction,
        method=method,
        mean=ci.mean,
        low=ci.low,
        high=ci.high,
        half_width=ci.half_width,
        relative_half_width=rel,
        confidence=stop.confidence,
        n_samples=ci.n,
        n_raw=int(samples.size),
        rounds_used=rounds_used,
        subsession_size=sub.size,
        autocorrelation=float(sub.autocorrelation),
        warmup_removed=removed,
        rounds_rejected=rejected,
        required_raw=required,
        met=met,
    )


@dataclass(frozen=True)
class PISamples:
    """One PI's ordered samples after warm-up handling, before subsession merging."""

    samples: np.ndarray
    method: str  # how they were obtained (ends with the interval method)
    rounds_used: int
    removed: int  # unit readings (or rounds) removed as non-stable or warm-up
    rejected: int = 0  # rounds with no stable segment


def pi_samples(pi: PISpec, rounds: Sequence[RoundData], stop: StopSpec) -> PISamples:
    """The samples one PI's estimate rests on: stable unit readings, or readings after
    the first ``warmup_rounds`` (Pilot's UR or readings path)."""
    if pi.units is not None or any(r.units is not None for r in rounds):
        unit_rounds = [r for r in rounds if r.units is not None]
        samples, removed, rejected = stable_unit_readings(unit_rounds, stop.warmup_removal)
        method = {
            "edm": "unit readings, EDM warm-up removal (pruned), subsession t-interval",
            "edm-pilot": "unit readings, EDM warm-up removal (Pilot), subsession t-interval",
        }.get(stop.warmup_removal, "unit readings, subsession t-interval")
        return PISamples(samples, method, len(unit_rounds), removed, rejected)
    readings = np.array([r.reading for r in rounds if r.reading is not None], dtype=float)
    skipped = min(stop.warmup_rounds, readings.size)
    return PISamples(
        readings[skipped:],
        "readings, subsession t-interval",
        int(readings.size - skipped),
        removed=skipped,
    )


def analyze_pi(pi: PISpec, rounds: Sequence[RoundData], stop: StopSpec) -> PIResult:
    """The estimate of one PI from the rounds done so far (Pilot's UR or readings path)."""
    got = pi_samples(pi, rounds, stop)
    return analyze_samples(
        pi, got.samples, stop, got.method, got.rounds_used, got.removed, got.rejected
    )


def analyze_wps(rounds: Sequence[RoundData], stop: StopSpec, work: WorkSpec) -> PIResult:
    """Pilot's work-per-second regression over (work, duration) pairs.

    As in Pilot, rounds shorter than the short-round threshold are stored but not
    analysed, and after a first fit the rounds whose work amount is below what the
    non-stable phases consume (alpha * v) are dropped and the model refitted.
    """
    pairs = [
        (r.work, r.duration)
        for r in rounds
        if r.work is not None and r.duration >= work.short_round
    ]
    method = "work-per-second regression t = alpha + w/v"
    unit = f"{work.unit}/s"
    if len(pairs) < 3:
        return _empty(
            WPS_PI,
            unit,
            "higher",
            method,
            stop.confidence,
            "fewer than 3 rounds longer than the short-round threshold",
        )
    w = np.array([p[0] for p in pairs], dtype=float)
    t = np.array([p[1] for p in pairs], dtype=float)
    fit = fit_wps(w, t, confidence=stop.confidence, max_autocorrelation=stop.max_autocorrelation)
    if fit is not None and fit.alpha_per_round > 0 and math.isfinite(fit.v) and fit.v > 0:
        keep = w >= fit.alpha_per_round * fit.v
        if 3 <= int(keep.sum()) < w.size:
            refit = fit_wps(
                w[keep],
                t[keep],
                confidence=stop.confidence,
                max_autocorrelation=stop.max_autocorrelation,
            )
            fit = refit if refit is not None else fit
    if fit is None:
        return replace(
            _empty(
                WPS_PI,
                unit,
                "higher",
                method,
                stop.confidence,
                "no fit: equal work amounts, or residuals too autocorrelated to merge",
            ),
            n_raw=len(pairs),
            rounds_used=len(pairs),
        )
    rel = fit.relative_half_width
    met = fit.n >= stop.min_samples and rel <= stop.ci_width
    return PIResult(
        name=WPS_PI,
        unit=unit,
        direction="higher",
        method=method,
        mean=fit.v,
        low=fit.v_low,
        high=fit.v_high,
        half_width=(fit.v_high - fit.v_low) / 2,
        relative_half_width=rel,
        confidence=stop.confidence,
        n_samples=fit.n,
        n_raw=len(pairs),
        rounds_used=len(pairs),
        subsession_size=fit.subsession_size,
        autocorrelation=math.nan,
        warmup_removed=0,
        rounds_rejected=0,
        required_raw=None,
        met=met,
        extra={"alpha_s": fit.alpha_per_round, "r_squared": fit.r_squared},
    )


@dataclass(frozen=True)
class Decision:
    done: bool
    reason: str
    rounds_left: int | None = None  # estimate; None when unknown
    target_met: bool = False  # every CI within the width at this analysis


def decide(
    results: Sequence[PIResult],
    pis: Sequence[PISpec],
    stop: StopSpec,
    *,
    rounds_done: int,
    rounds_failed: int,
    elapsed: float,
    raw_per_round: dict[str, float] | None = None,
    met_streak: int = 0,
) -> Decision:
    """Is the study done? Target reached, budget spent, or too many failures.

    ``met_streak`` is how many analyses in a row, just before this one, met the target:
    the study stops only when ``stop.confirm_rounds`` analyses in a row have met it.
    Stopping at the first analysis whose CI looks narrow enough favours moments where
    the variance happens to be underestimated (bench/RESULTS.md: coverage 92.0% -> 94.0%
    for AR(1) phi = 0.5 with a confirmation).
    """
    must = {p.name for p in pis if p.must_satisfy} | {WPS_PI}
    pending = [r for r in results if r.name in must and not r.met]
    met = not pending and rounds_done > rounds_failed
    rounds_left = _rounds_left(pending, rounds_done - rounds_failed, raw_per_round or {})
    if rounds_done >= 5 and rounds_failed / rounds_done > stop.max_failures:
        return Decision(True, f"stopped early: {rounds_failed} of {rounds_done} trials failed")
    if met and met_streak + 1 >= stop.confirm_rounds:
        return Decision(
            True, "target reached: every CI is within the requested width", 0, target_met=True
        )
    if met:
        rounds_left = stop.confirm_rounds - met_streak - 1
    if rounds_done >= stop.max_rounds:
        return Decision(True, f"budget spent: {rounds_done} rounds (max_rounds)", rounds_left, met)
    if elapsed >= stop.max_time:
        return Decision(True, f"budget spent: {elapsed:.0f} s (max_time)", rounds_left, met)
    return Decision(False, "confirming the target" if met else "running", rounds_left, met)


def _rounds_left(
    pending: Sequence[PIResult], ok_rounds: int, raw_per_round: dict[str, float]
) -> int | None:
    worst = 0
    for r in pending:
        if r.required_raw is None:
            return None
        per_round = raw_per_round.get(r.name, 1.0) or 1.0
        have = r.n_raw
        worst = max(worst, math.ceil(max(r.required_raw - have, 0) / per_round))
    return max(worst, 1) if pending else 0


def planner_for(work: WorkSpec | None) -> WorkAmountPlanner | None:
    """The work-amount planner of a study with an adjustable work amount."""
    if work is None:
        return None
    return WorkAmountPlanner(work.min, work.max, short_round=work.short_round)
