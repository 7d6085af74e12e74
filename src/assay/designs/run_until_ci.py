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
* with readings only: the first rounds are dropped as warm-up (by default as many as
  MSER finds, :func:`auto_warmup`; ``warmup_rounds = N``: the first N), then the same
  subsession merging and t-interval over the per-round readings;
* with an adjustable work amount: additionally the work-per-second regression
  t = alpha + w / v gives the stable speed v with its CI.

Beyond Pilot (issue #21; bench/bench_shapes.py): no merge to fewer than
``min_samples`` merged samples; the interval rests on the
round means when rounds differ (Kalibera & Jones); the mean's interval is corrected
for the skewness of the merged samples (Hall's transformation); no stop before
``min_rounds``; a change of level keeps the target unmet and ends the study with no
valid CI; ``statistic = "median"`` gives the median with a distribution-free interval.

>>> import numpy as np
>>> from assay.spec import PISpec, StopSpec
>>> rng = np.random.default_rng(1)
>>> rounds = [RoundData(reading=float(x), duration=1.0) for x in rng.normal(10, 0.5, 40)]
>>> r = analyze_pi(PISpec(name="t", unit="s"), rounds, StopSpec())
>>> r.method, r.met, round(r.mean)
('readings, MSER warm-up removal, subsession t-interval', True, 10)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal, NamedTuple

import numpy as np

from assay.spec import PISpec, StopSpec, WorkSpec
from assay.stats.autocorr import (
    Subsession,
    autocorrelation,
    is_white_noise,
    merge_subsessions,
    optimal_subsession,
    subsession_interval,
)
from assay.stats.changepoint import dominant_segment
from assay.stats.drift_bound import block_means
from assay.stats.intervals import MeanCI, _t_quantile, required_sample_size, t_interval
from assay.stats.validity import LevelShift, LevelStep
from assay.stats.warmup import head_differs, mser_truncation
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
# A common cut stays only if the rounds agree that what it removes differs from the rest:
# a t-test across rounds at this level, from CUT_CONFIRM_ROUNDS rounds on (issue #17:
# stationary AR(1) 0.9 readings lost a third of their units to wandering taken for
# warm-ups; bench/RESULTS.md).
CUT_CONFIRM_ALPHA = 0.05
CUT_CONFIRM_ROUNDS = 3
# Samples count as independent when their lag-1 autocorrelation is not significant at
# this level (the median's order-statistic interval needs them so).
INDEPENDENCE_ALPHA = 0.05
# Once readings are merged, the residual correction takes phi at its one-sided upper
# bound at this level (stats.autocorr.subsession_interval; #21).
MERGED_BOUND_ALPHA = 0.05
# Samples that need no merging take phi at that bound too while fewer than
# UNMERGED_BOUND_BELOW, and both bounds and the widening use small-sample corrections
# (issue #37: a few AR(1) readings pass Pilot's |r1| <= 0.1 often, 27% of 12 AR(1) 0.5
# readings, and a study stopped on them: 71% coverage at 11-14 rounds). Beyond 50,
# AR(1) 0.5 readings pass in under 1%, and the bound would cost i.i.d. ones rounds.
UNMERGED_BOUND_ALPHA = 0.05
UNMERGED_BOUND_BELOW = 50
# Fewer unmerged samples than this take phi at least at 0.9 (#37): those that look
# independent under AR(1) 0.8 need a t-interval ~5x as wide (13% of 11 such readings
# pass Pilot's test, 0.2% of 30), which no bound that i.i.d. ones can live with gives.
UNMERGED_FLOOR_BELOW = 30
# Level of the preliminary test for a between-round variance component (#21).
ROUND_EFFECT_ALPHA = 0.25
# Level of the test for a change of level at each look that would meet the target (#21):
# a study has several such looks (bench/bench_shapes.py: 4% false alarms with 0.01 on
# rounds in two modes), and its permutations, on at most SHIFT_MAX_SAMPLES block means
SHIFT_ALPHA = 0.002
SHIFT_PERMUTATIONS = 999
SHIFT_MAX_SAMPLES = 60
# |skewness| of the merged samples from which a result's note says that its interval
# leans to one side (Bulmer: "highly skewed" beyond 1)
SKEW_NOTE = 1.0


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
    # the means of DRIFT_BLOCKS consecutive blocks of the samples, in order (none with
    # fewer than MIN_PER_BLOCK a block): a gate's bound that holds under drift
    # (assay.stats.drift_bound), for this run and for a later one compared with it
    blocks: tuple[float, ...] = ()

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

    See :func:`stable_parts` for the rules.
    """
    kept, removed, rejected = stable_parts(rounds, method)
    samples = np.concatenate(kept) if kept else np.empty(0)
    return samples, removed, rejected


def stable_parts(
    rounds: Sequence[RoundData], method: str = "edm"
) -> tuple[list[np.ndarray], int, int]:
    """The stable part of every round; return (parts, removed, rounds rejected).

    ``edm-pilot`` (Pilot as published): each round keeps its own dominant segment, and a
    round without one contributes nothing. ``edm``: the warm-up and cool-down are taken
    as properties of the workload, the same in every round, so every round is cut at the
    median head and median tail found across rounds, if the rounds confirm it
    (:func:`cut_confirmed`). Cutting each round where its own data deviate (Pilot) trims
    exactly the excursions of autocorrelated noise and so shrinks the variance the CI
    sees (bench/RESULTS.md: coverage 89% for AR(1) phi = 0.5).
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
        rounds_units = [units for units, _ in pairs]
        if head and not cut_confirmed(rounds_units, head, tail, at_head=True):
            head = 0
        if tail and not cut_confirmed(rounds_units, head, tail, at_head=False):
            tail = 0
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
    return kept, removed, rejected


def cut_confirmed(rounds: Sequence[np.ndarray], head: int, tail: int, *, at_head: bool) -> bool:
    """Whether the rounds agree that the readings a common cut removes (the first
    ``head`` of every round if ``at_head``, else the last ``tail``) differ from the
    readings kept between the cuts.

    A warm-up is a property of the workload: it lifts (or lowers) the head of every
    round.  The excursions of autocorrelated noise land in a round's head as often
    above as below its rest; change-point tests within a round take them for changes,
    and a study of stationary AR(1) 0.9 readings lost a third of its units to them.
    Each round gives one difference of means (the rounds are independent, whatever the
    autocorrelation within them), and the cut is confirmed when their
    ``1 - CUT_CONFIRM_ALPHA`` t-interval excludes 0.  With fewer than
    :data:`CUT_CONFIRM_ROUNDS` rounds to judge by, the cut stands: a missed warm-up
    biases the estimate, a needless cut only costs readings.

    >>> rng = np.random.default_rng(0)
    >>> warm = [np.r_[rng.normal(12, 1, 30), rng.normal(10, 1, 170)] for _ in range(5)]
    >>> cut_confirmed(warm, 30, 0, at_head=True)
    True
    >>> flat = [rng.normal(10, 1, 200) for _ in range(5)]
    >>> cut_confirmed(flat, 30, 0, at_head=True)
    False
    """
    diffs: list[float] = []
    for units in rounds:
        end = max(int(units.size) - tail, head)  # as stable_parts cuts a short round
        kept = units[head:end]
        cut = units[:head] if at_head else units[end:]
        if cut.size and kept.size:
            diffs.append(float(cut.mean() - kept.mean()))
    if len(diffs) < CUT_CONFIRM_ROUNDS:
        return True
    ci = t_interval(np.asarray(diffs), 1.0 - CUT_CONFIRM_ALPHA)
    return not ci.low <= 0.0 <= ci.high


def analyze_samples(
    pi: PISpec,
    samples: np.ndarray,
    stop: StopSpec,
    method: str,
    rounds_used: int,
    removed: int = 0,
    rejected: int = 0,
    *,
    searched: tuple[Subsession | None] | None = None,
) -> PIResult:
    """Subsession merging and a t-interval on an ordered sample; the shared core of both
    paths (``searched``: what a subsession search already made on ``samples`` found, in
    a 1-tuple, if one was made)."""
    if pi.statistic == "median":
        return median_result(pi, samples, stop, method, rounds_used, removed, rejected)
    if pi.mean == "harmonic" and samples.size and not bool(np.all(samples > 0)):
        bad = int(np.argmax(~(samples > 0)))
        return _empty(
            pi.name,
            pi.unit,
            pi.direction,
            method,
            stop.confidence,
            f"mean = 'harmonic' needs positive readings (rates): reading {bad + 1} of "
            f"{samples.size} is {float(samples[bad]):g}; use the arithmetic mean, or make "
            "the benchmark report a rate",
            samples,
            rounds_used,
            removed,
            rejected,
        )
    known = None if pi.mean == "harmonic" else searched  # (harmonic searches 1/x)
    if known is not None and known[0] is None:
        got = None  # no size qualifies: searched already
    else:
        got = _pilot_interval(
            samples,
            stop,
            harmonic=pi.mean == "harmonic",
            correct_residual=stop.residual_correction,
            subsession=None if known is None else known[0],
        )
    unmerged_note = ""
    if got is None and fixed_count(stop) and pi.mean != "harmonic":
        got = unmerged_interval(samples, stop)
        if got is not None:
            unmerged_note = (
                f"{samples.size} readings (a fixed count) are too few to merge away their "
                f"lag-1 autocorrelation ({got[1].autocorrelation:.2f}): the interval is of "
                "the readings unmerged, widened for the largest autocorrelation they leave "
                "possible"
            )
    if got is None:
        drifting = samples.size >= 3 * stop.min_samples
        empty = _empty(
            pi.name,
            pi.unit,
            pi.direction,
            method,
            stop.confidence,
            (
                f"the lag-1 autocorrelation ({autocorrelation(samples):.2f}) does not fall to "
                f"{stop.max_autocorrelation} by merging the {samples.size} samples into no "
                f"fewer than {stop.min_samples}: the PI drifts or shifted during the study, "
                "so no valid CI exists (background load, frequency scaling or a changing "
                "system?)"
            )
            if drifting
            else "not enough samples yet to merge away their autocorrelation",
            samples,
            rounds_used,
            removed,
            rejected,
        )
        if not drifting:
            return empty
        # only then does locate_change say where its level moved: early on, a best
        # split of a few samples means nothing
        empty = replace(empty, extra={"drifting": 1.0})
        return range_result(pi, samples, empty, stop) or empty
    ci, sub = got
    plain = ci
    skew = 0.0
    cox = False
    positive_note = ""
    if pi.mean == "arithmetic":
        ci, skew, cox = skew_corrected(ci, sub.means, samples)
        if ci.low < 0.0 < ci.mean and sub.means.size >= 2 and bool(np.all(sub.means > 0)):
            ci = positive_interval(plain, sub.means)
            positive_note = POSITIVE_NOTE
    rel = ci.relative_half_width
    met = ci.n >= stop.min_samples and rel <= stop.ci_width
    required: int | None = None
    if pi.mean == "arithmetic" and ci.n >= 2 and ci.std > 0 and ci.mean != 0:
        need = required_sample_size(ci.std, ci.mean, stop.ci_width, stop.confidence)
        # the skewness correction lengthens the t-interval by this much
        stretch = ci.half_width / plain.half_width if plain.half_width > 0 else 1.0
        if math.isfinite(stretch) and stretch > 1.0:
            need = math.ceil(need * stretch * stretch)
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
        note="; ".join(
            n
            for n in (
                unmerged_note,
                _skew_note(skew, sub.means, cox),
                positive_note,
                unmet_note(
                    met,
                    rel,
                    stop.ci_width,
                    ci,
                    sub.size,
                    required,
                    rounds_used,
                    samples,
                    observed_std=float(np.std(sub.means, ddof=1)) if sub.means.size > 1 else None,
                ),
            )
            if n
        ),
        extra={"skewness": skew} if abs(skew) >= SKEW_NOTE else {},
    )


def unmet_note(
    met: bool,
    rel: float,
    target: float,
    ci: MeanCI,
    merged: int,
    required_raw: int | None,
    rounds_used: int,
    samples: np.ndarray,
    observed_std: float | None = None,
) -> str:
    """Why a PI's finite interval is wider than the target, and what would get there
    (issue #45: `true` on a busy machine spent its 1,000 rounds at ±8% and said only
    "not met"): the spread of its merged samples, their merging for autocorrelation,
    and the rounds the target needs at that spread (the half-width shrinks as 1/√n).

    >>> from assay.stats.intervals import t_interval
    >>> x = np.array([1.0, 3.0] * 10)
    >>> note = unmet_note(False, 0.22, 0.05, t_interval(x), 1, 400, 20, x)
    >>> note.split(":")[0], "±5.0% needs about 400 rounds" in note
    ('not met at ±22.0% on 20 rounds', True)

    ``observed_std``: the samples' own standard deviation, when the interval's (``ci.std``)
    is larger: a few samples cannot yet rule out an autocorrelation they may have, and
    the interval allows for it; the note then gives both, so that the spread it names is
    the one a reader sees in the readings (a CV of 6.5% was said to be 32%).

    >>> y = np.array([1.0, 1.1] * 10)
    >>> small = MeanCI(1.05, 0.1, 20, 0.25, 0.95)
    >>> note = unmet_note(False, 0.1, 0.05, small, 1, None, 20, y, observed_std=0.05)
    >>> "(coefficient of variation 4.8%), widened 5.0× because 20 samples" in note
    True
    """
    if met or not math.isfinite(rel) or rel <= target or ci.mean == 0 or rounds_used < 1:
        return ""
    widened = (
        observed_std is not None
        and math.isfinite(observed_std)
        and observed_std > 0
        and ci.std > 1.05 * observed_std
    )
    cv = (observed_std if widened and observed_std is not None else ci.std) / abs(ci.mean)
    why = f"the readings spread (coefficient of variation {cv:.1%}" if cv < 0.1 else ""
    why = why or f"the readings spread (coefficient of variation {cv:.0%}"
    if merged > 1:
        why += f" of means of {merged} successive readings, merged for their autocorrelation"
    why += ")"
    if widened and observed_std is not None:
        why += (
            f", widened {ci.std / observed_std:.1f}× because {ci.n} samples cannot yet rule "
            "out an autocorrelation they may have"
        )
    per_round = samples.size / rounds_used if samples.size else 1.0
    need = ""
    if required_raw is not None and per_round > 0:
        rounds = math.ceil(required_raw / per_round)
        need = f"; at this spread ±{target:.1%} needs about {rounds:,} rounds"
    return (
        f"not met at ±{rel:.1%} on {rounds_used} rounds: {why}{need} (the half-width "
        "shrinks as 1/√n); a quieter machine (other processes' work spreads short "
        "commands most), the median for a heavy tail (--median, statistic = 'median') or a "
        "wider --ci-width gets there sooner"
    )


class SkewCorrected(NamedTuple):
    """What :func:`skew_corrected` made of a mean's interval."""

    ci: MeanCI
    #: the skewness the interval was corrected for (0: none significant)
    skewness: float
    #: whether the samples looked log-normal, so the interval also holds Cox's
    log_normal: bool


def fixed_count(stop: StopSpec) -> bool:
    """Whether the study runs a fixed number of rounds (``--runs N``: as many at least as
    at most), so that no interval decides when it stops."""
    return stop.min_rounds >= stop.max_rounds


def unmerged_interval(samples: np.ndarray, stop: StopSpec) -> tuple[MeanCI, Subsession] | None:
    """The interval of a fixed count of readings that merging cannot make independent
    (too few to leave ``min_samples`` merged ones): the t-interval of the readings
    unmerged, widened for the lag-1 autocorrelation at its upper bound, as a fixed count
    of unmerged readings that pass Pilot's test is; None from 30 readings on (those that
    do not merge drift) or below ``min_samples`` (10: fewer readings get no interval at
    all; at 3-7, AR(1) 0.8 ones covered 91-99%, AR(1) 0.95 ones 76-91%).

    Only where no interval decides when to stop: ``--runs 10`` gave "± ∞" in 7 of 12
    tries of ``sleep 0.01`` (i.i.d. readings fail Pilot's ``|r1| <= 0.1`` at n = 10 two
    times in three); a sequential study would stop on the samples whose autocorrelation
    reads lowest (bench/bench_fixed_count.py: coverage).
    """
    if not stop.min_samples <= samples.size < min(UNMERGED_FLOOR_BELOW, 3 * stop.min_samples):
        return None
    unmerged = Subsession(size=1, means=samples.copy(), autocorrelation=autocorrelation(samples))
    unmerged.means.setflags(write=False)
    return _pilot_interval(samples, stop, correct_residual=True, subsession=unmerged)


def _pilot_interval(
    samples: np.ndarray,
    stop: StopSpec,
    *,
    harmonic: bool = False,
    correct_residual: bool,
    subsession: Subsession | None,
) -> tuple[MeanCI, Subsession] | None:
    """:func:`~assay.stats.autocorr.subsession_interval` with the run design's rules:
    Pilot's merging even at small n (not merging while r1 is not significant let a study
    stop on readings that only look independent: bench/RESULTS.md, #21, AR(1) 0.5
    readings 89.3% -> 92.6%, i.i.d. ones 93.6% -> 95.0%), phi's upper bounds, and the
    small-n floor on phi unless the count is fixed (the floor is for a study that stops
    on its interval: it stops on the samples whose autocorrelation reads lowest)."""
    return subsession_interval(
        samples,
        confidence=stop.confidence,
        max_autocorrelation=stop.max_autocorrelation,
        min_subsessions=stop.min_samples,
        harmonic=harmonic,
        correct_residual=correct_residual,
        merged_bound_alpha=MERGED_BOUND_ALPHA,
        unmerged_bound_alpha=UNMERGED_BOUND_ALPHA,
        unmerged_bound_below=UNMERGED_BOUND_BELOW,
        unmerged_floor_below=None if fixed_count(stop) else UNMERGED_FLOOR_BELOW,
        small_sample=True,
        subsession=subsession,
    )


def skew_corrected(
    ci: MeanCI, means: np.ndarray, samples: np.ndarray | None = None
) -> SkewCorrected:
    """The mean's interval ``ci`` (a t-interval of ``means``, the merged samples, maybe
    widened for their residual autocorrelation) corrected for their skewness; with the
    skewness corrected for and whether Cox's interval is held too. ``samples`` are the
    samples before merging (``means`` when not given).

    Hall's (1992) transformation (:func:`~assay.stats.skewed_mean.hall_interval`) with
    :func:`~assay.stats.skewed_mean.tail_skewness`, widened by the same factor as
    ``ci``; symmetric samples keep (nearly) the t-interval. The t-interval of a
    right-skewed mean is too short on the right, and a sequential study stops when it
    first looks narrow enough, which is on samples that missed the tail
    (bench/bench_shapes.py, lognormal sigma 1 readings: 87.9% coverage with the
    t-interval and Cochran's minimum sample size, 96.5% with this). Cochran's rule (no
    stop below 25 g1^2 samples) is gone: the sample skewness is lowest on exactly the
    samples that missed the tail, so it let studies stop on those.

    Merged samples are judged by the samples they were made of too: ten means of six
    log-normal readings cannot show a skewness of 2.5 beyond chance, their 60 readings
    can (a mean of q independent readings has 1/sqrt(q) of their skewness; significant
    at the merged samples' number, as autocorrelated readings' skewness varies more by
    chance). Where the readings look log-normal the interval also holds Cox's
    (:func:`~assay.stats.skewed_mean.cox_hull`), skewness significant on the
    means or not: studies of log-normal readings that stopped before 100 rounds covered
    68%; now almost none stop there (bench/RESULTS.md, #59).
    """
    from assay.stats.intervals import widen
    from assay.stats.skewed_mean import cox_hull, hall_interval, looks_log_normal, tail_skewness

    raw = means if samples is None else samples
    plain = t_interval(means, ci.confidence)
    if not (
        math.isfinite(ci.half_width) and math.isfinite(plain.half_width) and plain.half_width > 0.0
    ):
        return SkewCorrected(ci, 0.0, False)
    g = tail_skewness(means)
    per_sample = raw.size / means.size
    if per_sample > 1.0:
        # significant at the merged samples' number: autocorrelated readings' skewness
        # varies more by chance than independent ones'
        carried = tail_skewness(raw, effective_n=means.size) / math.sqrt(per_sample)
        g = carried if abs(carried) > abs(g) else g
    factor = max(ci.half_width / plain.half_width, 1.0)
    # no significant skewness: Hall's interval would be the t-interval again
    hall = ci if g == 0.0 else widen(hall_interval(means, ci.confidence, skewness=g), factor)
    # Cox's interval of the readings (log-normal at their own number: the logs' test is
    # what keeps it off normal ones), widened as merging and the residual
    # autocorrelation widened the mean's error over their own t-interval's
    if not looks_log_normal(raw):
        return SkewCorrected(hall, g, False)
    own = t_interval(raw, ci.confidence).half_width
    widen_by = ci.half_width / own if own > 0.0 and math.isfinite(own) else factor
    return SkewCorrected(cox_hull(hall, raw, widen_by=max(widen_by, 1.0)), g, True)


#: What the report says when a PI's interval is Cox's (:func:`positive_interval`).
POSITIVE_NOTE = (
    "every reading is positive but the t-interval crossed zero (a heavy spread): the CI "
    "is Cox's log-normal interval for the mean, positive and asymmetric"
)


def positive_interval(ci: MeanCI, means: np.ndarray) -> MeanCI:
    """Cox's interval (:func:`~assay.stats.skewed_mean.cox_interval`) for the mean of the
    positive merged samples ``means``, widened by the factor ``ci`` (their t-interval,
    maybe widened for residual autocorrelation) has over the plain t-interval: a rate, a
    count or a total whose t-interval crosses zero (``6858 rows/s ± 11403``) gets
    bounds that stay positive."""
    from assay.stats.skewed_mean import cox_interval

    plain = t_interval(means, ci.confidence)
    factor = ci.half_width / plain.half_width if plain.half_width > 0 else 1.0
    widen_by = factor if math.isfinite(factor) and factor > 1.0 else 1.0
    return cox_interval(means, ci.confidence, widen_by=widen_by)


def _skew_note(skew: float, means: np.ndarray, cox: bool) -> str:
    """The note on a skewness correction: the samples' own skewness, and the one the
    interval was corrected for when that is larger (a right-skewed positive sample is
    corrected at least as a log-normal one of its spread would be, and merged samples at
    least for the skewness of the samples they were made of:
    :func:`skew_corrected`); and whether the interval also holds Cox's (``cox``)."""
    from assay.stats.skewed_mean import sample_skewness

    if abs(skew) < SKEW_NOTE and not cox:
        return ""
    held = "Cox's log-normal interval, which a tail not yet drawn does not shorten"
    if abs(skew) < SKEW_NOTE:
        return f"log-normal-looking readings: the interval also holds {held}"
    side = "right" if skew > 0 else "left"
    own = sample_skewness(means)
    said = f"skewness {own:.2g}"
    if math.isfinite(own) and not math.isclose(own, skew, rel_tol=0.01):
        said += (
            f"; corrected for skewness {skew:.2g}, as a log-normal sample of this spread or "
            "the unmerged readings show"
        )
    return (
        f"skewed samples ({said}): the interval is corrected for it (Hall's "
        f"transformation) and longer on the {side}{f', and holds {held}' if cox else ''}; "
        "the mean of a heavy tail rests on its few far readings (statistic = 'median' "
        "gives a distribution-free interval of the median)"
    )


def median_result(
    pi: PISpec,
    samples: np.ndarray,
    stop: StopSpec,
    method: str,
    rounds_used: int,
    removed: int = 0,
    rejected: int = 0,
) -> PIResult:
    """The median with its distribution-free interval (``statistic = "median"``).

    The interval between two order statistics whose binomial coverage is at least the
    confidence (``scipy.stats.quantile_test``): valid for any continuous distribution,
    heavy tails included, but only for independent samples, so samples whose lag-1
    autocorrelation is significant get no interval (the mean's subsession interval is
    the tool for those).
    """
    from scipy import stats

    method = method.replace("subsession t-interval", "median, order-statistic interval")
    n = int(samples.size)
    if n < 3:
        return _empty(
            pi.name,
            pi.unit,
            pi.direction,
            method,
            stop.confidence,
            "not enough samples yet",
            samples,
            rounds_used,
            removed,
            rejected,
        )
    r1 = autocorrelation(samples)
    if not is_white_noise(samples, INDEPENDENCE_ALPHA):
        return replace(
            _empty(
                pi.name,
                pi.unit,
                pi.direction,
                method,
                stop.confidence,
                f"no valid CI for the median: the samples' lag-1 autocorrelation ({r1:.2f}) "
                "is significant, and an order-statistic interval needs independent samples "
                "(statistic = 'mean' merges them into subsessions)",
                samples,
                rounds_used,
                removed,
                rejected,
            ),
            mean=float(np.median(samples)),
        )
    median = float(np.median(samples))
    ci = stats.quantile_test(samples, q=median, p=0.5).confidence_interval(stop.confidence)
    low, high = float(ci.low), float(ci.high)
    finite = math.isfinite(low) and math.isfinite(high)
    half = (high - low) / 2 if finite else math.inf
    rel = half / abs(median) if finite and median != 0 else math.inf
    met = n >= stop.min_samples and rel <= stop.ci_width
    # the interval narrows as 1/sqrt(n)
    required = (
        max(math.ceil(n * (rel / stop.ci_width) ** 2), stop.min_samples)
        if math.isfinite(rel)
        else None
    )
    return PIResult(
        name=pi.name,
        unit=pi.unit,
        direction=pi.direction,
        method=method,
        mean=median,
        low=low if finite else -math.inf,
        high=high if finite else math.inf,
        half_width=half,
        relative_half_width=rel,
        confidence=stop.confidence,
        n_samples=n,
        n_raw=n,
        rounds_used=rounds_used,
        subsession_size=1,
        autocorrelation=r1,
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
    # unit readings: the stable part of each round, in order (None: readings)
    parts: tuple[np.ndarray, ...] | None = None
    first_round: int = 0  # readings: the round (0-based) of samples[0]
    # readings: the subsession search already made on ``samples`` (the automatic
    # warm-up's, when it cut nothing), which the interval then does not make again
    # in a 1-tuple: what it found (None: no size qualifies); None: no search was made
    searched: tuple[Subsession | None] | None = None


#: Readings before MSER looks for a warm-up among them (``warmup_rounds = "auto"``).
MSER_MIN_ROUNDS = 10


def auto_warmup(readings: np.ndarray, stop: StopSpec) -> int:
    """How many of the first readings are warm-up (``warmup_rounds = "auto"``): MSER on
    the means of subsessions of the size that makes them uncorrelated (on the raw
    readings, MSER's cuts follow the excursions of autocorrelated noise), kept where
    the head it cuts differs from the rest beyond chance (:func:`head_differs`).

    Measured on ``bench/bench_shapes.py`` (bench/RESULTS.md): no coverage lost on
    stationary readings, and a warm-up of the first rounds removed.
    """
    return _auto_warmup(readings, stop)[0]


def _auto_warmup(
    readings: np.ndarray, stop: StopSpec
) -> tuple[int, tuple[Subsession | None] | None]:
    """:func:`auto_warmup`, and what its subsession search on ``readings`` found (in a
    1-tuple; None when it made none): the interval's own search, when nothing is cut."""
    if readings.size < MSER_MIN_ROUNDS:
        return 0, None
    sub = optimal_subsession(readings, stop.max_autocorrelation, stop.min_samples)
    if sub is None:
        return 0, (None,)
    head = mser_truncation(sub.means)  # whole subsessions
    return (head * sub.size, (sub,)) if head and head_differs(sub.means, head) else (0, (sub,))


def pi_samples(pi: PISpec, rounds: Sequence[RoundData], stop: StopSpec) -> PISamples:
    """The samples one PI's estimate rests on: stable unit readings, or readings after
    the first ``warmup_rounds`` (Pilot's UR or readings path)."""
    if pi.units is not None or any(r.units is not None for r in rounds):
        unit_rounds = [r for r in rounds if r.units is not None]
        parts, removed, rejected = stable_parts(unit_rounds, stop.warmup_removal)
        samples = np.concatenate(parts) if parts else np.empty(0)
        method = {
            "edm": "unit readings, EDM warm-up removal (pruned), subsession t-interval",
            "edm-pilot": "unit readings, EDM warm-up removal (Pilot), subsession t-interval",
        }.get(stop.warmup_removal, "unit readings, subsession t-interval")
        return PISamples(samples, method, len(unit_rounds), removed, rejected, tuple(parts))
    readings = np.array([r.reading for r in rounds if r.reading is not None], dtype=float)
    searched: tuple[Subsession | None] | None = None
    if stop.warmup_rounds == "auto":
        skipped, searched = _auto_warmup(readings, stop)
        method = "readings, MSER warm-up removal, subsession t-interval"
    else:
        skipped = min(stop.warmup_rounds, readings.size)
        method = "readings, subsession t-interval"
    return PISamples(
        readings[skipped:],
        method,
        int(readings.size - skipped),
        removed=skipped,
        first_round=skipped,
        searched=searched if skipped == 0 else None,
    )


def analyze_pi(
    pi: PISpec, rounds: Sequence[RoundData], stop: StopSpec, *, locate: bool = True
) -> PIResult:
    """The estimate of one PI from the rounds done so far (Pilot's UR or readings path).

    Beyond Pilot (issue #21, bench/bench_shapes.py): with unit readings, an interval
    rests on the round means when the rounds differ more than their unit readings
    explain (:func:`between_rounds`); the mean's interval is corrected for the
    skewness of the samples it rests on (:func:`skew_corrected`); and before a result
    meets its target, those samples are checked for a change of level
    (:func:`check_level`).

    ``locate=False`` leaves out where the level of a drifting PI moved
    (:func:`locate_change`, a note for the report): a study loop that analyses after
    every trial and reports only its last analysis skips it in the others.
    """
    got = pi_samples(pi, rounds, stop)
    res = analyze_samples(
        pi,
        got.samples,
        stop,
        got.method,
        got.rounds_used,
        got.removed,
        got.rejected,
        searched=got.searched,
    )
    if got.parts is not None and pi.statistic == "mean":
        res = between_rounds(pi, got.parts, res, stop)
    res = _require_rounds(res, stop)
    by_round = got.parts is None or "rounds_level" in res.extra  # one value per round
    if "drifting" in res.extra and by_round and "range_blocks" not in res.extra:
        res = drift_stop(got, res, pi.mean == "harmonic")
    if locate and "drifting" in res.extra:
        res = locate_change(pi, got, res)
    if res.met:  # last: the fewer looks it gets, the fewer false alarms
        res = check_level(pi, got, res, stop)
    return with_blocks(pi, got.samples, res)


def with_blocks(pi: PISpec, samples: np.ndarray, res: PIResult) -> PIResult:
    """``res`` with its samples' block means (:attr:`PIResult.blocks`; a mean PI only)."""
    if pi.statistic != "mean":
        return res
    means = block_means(samples, harmonic=pi.mean == "harmonic")
    if means is None or not bool(np.all(np.isfinite(means))):
        return res
    return replace(res, blocks=tuple(float(m) for m in means))


def _require_rounds(res: PIResult, stop: StopSpec) -> PIResult:
    if not res.met or res.rounds_used >= stop.min_rounds:
        return res
    per_round = res.n_raw / max(res.rounds_used, 1)
    need = math.ceil(stop.min_rounds * per_round)
    return replace(res, met=False, required_raw=max(res.required_raw or 0, need))


def _round_means(parts: Sequence[np.ndarray], harmonic: bool) -> np.ndarray:
    return np.array(
        [p.size / float(np.sum(1.0 / p)) if harmonic else float(np.mean(p)) for p in parts]
    )


def between_rounds(
    pi: PISpec, parts: Sequence[np.ndarray], res: PIResult, stop: StopSpec
) -> PIResult:
    """The unit-level result, or one resting on the round means when the rounds differ.

    Kalibera & Jones' two-level view (rounds x unit readings): the variance of the mean
    has a between-round part that only more rounds reduce. Its F test
    (:func:`~assay.stats.validity.round_effect`) is a preliminary test in Bancroft's
    "sometimes pool" sense, at ``ROUND_EFFECT_ALPHA`` = 0.25 so that a modest
    between-round part is not pooled away; when it rejects, the interval is the
    subsession t-interval of the round means (``n_samples`` = rounds).
    """
    from assay.stats.validity import round_effect

    kept = [p for p in parts if p.size > 0]
    if len(kept) < 2 or (pi.mean == "harmonic" and not all(bool(np.all(p > 0)) for p in kept)):
        return res  # (a harmonic PI's reading of 0 or less: analyze_samples says so)
    means = _round_means(kept, pi.mean == "harmonic")
    if math.isfinite(res.half_width) and res.n_samples >= 2:
        se = res.half_width / _t_quantile(res.confidence, res.n_samples - 1)
        p = round_effect(means, se * se, res.n_samples - 1)
        why = f"the rounds differ more than their unit readings explain (F test p = {p:.2g})"
    elif len(kept) >= 3:
        # no subsession of the unit readings is uncorrelated: rounds that sit at
        # different levels look exactly like that, so the round means may still do
        p = 0.0
        why = "the unit readings' autocorrelation does not merge away"
    else:
        return res
    extra = {**res.extra, "round_effect_p": p}
    if math.isfinite(res.half_width) and res.n_samples >= 2:
        # a round mean's noise by the unit readings, for the step check (_round_step)
        extra |= {"unit_round_variance": se * se * len(kept), "unit_df": res.n_samples - 1.0}
    # what described the unit readings' interval does not describe the round means'
    unit_level = {k: v for k, v in extra.items() if k not in ("drifting", "skewness")}
    if p >= ROUND_EFFECT_ALPHA:
        return replace(res, extra=extra)
    per_round = res.n_raw / len(kept)
    by_round = analyze_samples(
        pi,
        means,
        stop,
        res.method.replace("subsession t-interval", "t-interval of round means"),
        res.rounds_used,
        res.warmup_removed,
        res.rounds_rejected,
    )
    need = None if by_round.required_raw is None else math.ceil(by_round.required_raw * per_round)
    note = (
        f"rests on {by_round.n_samples} round means (of {res.n_raw} unit readings): {why}, "
        "so only more rounds narrow the interval"
    )
    if by_round.note:
        note = f"{note}; {by_round.note}"
    return replace(
        by_round,
        n_raw=res.n_raw,
        required_raw=need,
        note=note,
        # drifting now only if the round means drift
        extra={**unit_level, **by_round.extra, "rounds_level": 1.0},
    )


def _round_of(got: PISamples, res: PIResult, sample: int) -> int:
    """The round (0-based, among the analysed ones) of merged sample ``sample``."""
    raw = sample * max(res.subsession_size, 1)
    if got.parts is None:
        return got.first_round + raw
    starts = np.cumsum([0] + [p.size for p in got.parts])
    return int(np.searchsorted(starts, raw, side="right") - 1)


def _shift_base(pi: PISpec, got: PISamples, res: PIResult) -> tuple[np.ndarray, list[int]]:
    """The series a change of level is looked for in, and the round (0-based) each of
    its values starts in: the round means with unit readings (the unit readings inside
    one round need not be exchangeable, rounds in modes; the rounds are), else the
    merged samples the interval rests on."""
    means, rounds = _kept_round_means(got, pi.mean == "harmonic")
    if got.parts is not None and ("rounds_level" in res.extra or len(rounds) >= 6):
        q = max(res.subsession_size, 1) if "rounds_level" in res.extra else 1
        merged = merge_subsessions(means, q)
        return merged, [rounds[i * q] for i in range(merged.size)]
    q = max(res.subsession_size, 1) if math.isfinite(res.half_width) else 1
    merged = merge_subsessions(got.samples, q)
    at = replace(res, subsession_size=q)
    return merged, [_round_of(got, at, i) for i in range(merged.size)]


def _kept_round_means(got: PISamples, harmonic: bool) -> tuple[np.ndarray, list[int]]:
    """The means of the rounds with stable unit readings, and each one's round (0-based)."""
    rounds = [k for k, p in enumerate(got.parts or ()) if p.size > 0]
    return _round_means([got.parts[k] for k in rounds] if got.parts else [], harmonic), rounds


def _find_shift(
    pi: PISpec, got: PISamples, res: PIResult, alpha: float, permutations: int
) -> tuple[LevelShift, int] | None:
    """The most significant change of level and its round (1-based), or None."""
    from assay.stats.validity import level_shift

    series, starts = _shift_base(pi, got, res)
    shift = level_shift(
        series,
        alpha=alpha,
        permutations=permutations,
        confidence=res.confidence,
        max_samples=SHIFT_MAX_SAMPLES,
    )
    if shift is None:
        return None
    return shift, starts[min(shift.index, len(starts) - 1)] + 1


def _step_series(pi: PISpec, got: PISamples, res: PIResult) -> tuple[np.ndarray, list[int]] | None:
    """The values the step tests split (the round means of unit readings, or the
    readings) with each one's round (0-based); None where no step is tested: a
    harmonic mean, another statistic, or no finite interval."""
    if pi.mean == "harmonic" or pi.statistic != "mean" or not math.isfinite(res.half_width):
        return None
    if got.parts is not None:
        return _kept_round_means(got, False)
    return got.samples, [got.first_round + i for i in range(got.samples.size)]


def _round_step(
    got: PISamples, res: PIResult, series: np.ndarray, starts: list[int]
) -> tuple[LevelShift, int] | None:
    """The largest step in the round means (or readings) ``series`` of a result that
    rests on them (:func:`_step_series`), with its round (1-based); None with too few
    (#37).

    E-Divisive's permutation test cannot reach ``SHIFT_ALPHA`` on the rounds of a
    study that stops early (11 split 4 | 7 have 330 arrangements), and on merged
    samples a step after the first rounds falls inside the first sample. The maximum
    over splits of the unmerged values' two-means statistic has neither limit
    (:func:`~assay.stats.validity.level_step`). When the rounds differ more than
    their unit readings explain and one step is why (around its two means the round
    means vary no more than the unit readings say, by ``between_rounds``' F test at
    ``ROUND_EFFECT_ALPHA``), the step is a z test on the unit readings' noise, as the
    interval on them takes it; otherwise a t test on the round means' own spread,
    widened for the autocorrelation the split leaves unless the interval takes the
    values as independent (no merging). An interval on unit readings found the round
    means as alike as its noise says, but its between-rounds F test weighs every round
    alike and misses a step a few rounds hold (#59: a +3% step after round 4 of 40):
    its round means get the t test too, and a step found there only ever adds a note
    (see :func:`check_level`).
    """
    found = _largest_step(series, res, SHIFT_MAX_SAMPLES)
    if found is None:
        return None
    step, on_units = found
    test = (
        "the round means split against their unit readings' noise, max-z"
        if on_units
        else f"the {'round means' if got.parts is not None else 'readings'} split, max-t"
    )
    return _step_shift(series, starts, step, res, test)


def _largest_step(
    series: np.ndarray, res: PIResult, max_samples: int, head: int | None = None
) -> tuple[LevelStep, bool] | None:
    """The largest step among the splits of ``series`` (with ``head``, of its first
    values: :func:`~assay.stats.validity.level_step`), and whether it was tested on
    the unit readings' noise (a z test, where the round means vary around its two
    means as that noise says, as an interval on the unit readings takes it) rather
    than on the values' own spread (a t test, widened for the autocorrelation the split
    leaves unless the interval took the values as independent)."""
    from assay.stats.validity import level_step

    if "unit_round_variance" in res.extra:
        known = level_step(
            series,
            max_samples=max_samples,
            variance=res.extra["unit_round_variance"],
            variance_df=res.extra["unit_df"],
            head=head,
        )
        if known is not None and known.residual_p >= ROUND_EFFECT_ALPHA:
            return known, True
    z = None if res.subsession_size <= 1 else 1.645
    step = level_step(series, z=z, max_samples=max_samples, head=head)
    return None if step is None else (step, False)


def _step_shift(
    series: np.ndarray, starts: Sequence[int], step: LevelStep, res: PIResult, test: str
) -> tuple[LevelShift, int]:
    """A step found in ``series`` as a level shift (with Welch's interval of its two
    means' difference), and its round (1-based)."""
    from assay.stats.history import segment_steps

    k = step.index
    welch = segment_steps(series, [k], res.confidence)[0].welch
    shift = LevelShift(
        index=k,
        p_value=step.p_value,
        mean_before=step.mean_before,
        mean_after=step.mean_after,
        diff_low=welch.diff_low,
        diff_high=welch.diff_high,
        changes=1,
        test=test,
    )
    return shift, starts[min(k, len(starts) - 1)] + 1


#: The first rounds apart from the rest (#59: a +3% step after round 4 of 40 went
#: unsaid in 63 of 92 met studies): at most this many first rounds, and a third of them.
EARLY_STEP_ROUNDS = 10


def _early_step(
    got: PISamples, res: PIResult, series: np.ndarray, starts: list[int]
) -> tuple[LevelShift, int] | None:
    """Whether the first rounds' means sit apart from the rest's, for a result on unit
    readings (``series``: its round means, :func:`_step_series`): the round means split
    after each of their first :data:`EARLY_STEP_ROUNDS` (a third at most), the largest
    statistic of those few splits against the same maximum of i.i.d. series. As in
    :func:`_round_step`, a z on the unit readings' noise where around the two means the
    round means vary as that noise says, else a t on their own spread, widened. Among
    every split a step a few rounds in drowns in the many ways a long series can be
    cut; among the first ones it shows; and a short study's dozen round means are too
    few for their own spread to tell (#59: at 11-14 rounds the unflagged studies showed
    a step of +2.1%, where the t test needs about +3%). None where the result does not
    rest on rounds of unit readings."""
    if got.parts is None:
        return None
    head = min(EARLY_STEP_ROUNDS, series.size // 3)
    found = _largest_step(series, res, max(series.size, 1), head)
    if found is None:
        return None
    step, on_units = found
    test = "the first rounds against the rest" + (
        ", against their unit readings' noise, max-z" if on_units else ", max-t"
    )
    return _step_shift(series, starts, step, res, test)


#: Blocks of the range that bounds the mean of a PI whose level moved (at least
#: ``min_samples``): with 10, a stationary series' mean falls outside it 0.2% of the time.
RANGE_BLOCKS = 10


def range_result(pi: PISpec, samples: np.ndarray, res: PIResult, stop: StopSpec) -> PIResult | None:
    """A PI whose level moved, bounded by the range of its block means when that range
    is as narrow as asked (:func:`~assay.stats.validity.block_range`), else None.

    No single t-interval describes a drifting PI, and Pilot gives none; but a question
    wider than the drift still has an answer (±50% asked, 3% moved: #36's busy CI
    runner ran ``sleep 0.01`` for 1000 rounds and said nothing). The range holds the
    whole drift, so it never meets a target narrower than the drift.
    """
    from assay.stats.validity import block_range

    blocks = max(RANGE_BLOCKS, stop.min_samples)
    got = block_range(samples, blocks, harmonic=pi.mean == "harmonic")
    if got is None:
        return None
    low, mean, high = got
    half = (high - low) / 2
    if not all(math.isfinite(x) for x in (low, mean, high, half)) or mean == 0:
        return None  # readings near float's limits: their sums overflow
    rel = half / abs(mean)
    if not rel <= stop.ci_width:
        return None
    ranged = f"; range of {blocks} block means (the level moved)"
    return replace(
        res,
        # once, where the samples' analysis had bounded them and the level check again
        method=res.method if res.method.endswith(ranged) else res.method + ranged,
        mean=mean,
        low=low,
        high=high,
        half_width=half,
        relative_half_width=rel,
        n_samples=blocks,
        subsession_size=samples.size // blocks,
        required_raw=None,
        met=True,
        note=(
            f"the level moved during the study, by less than the width asked: the interval "
            f"is the range of {blocks} block means, which holds the mean over the study "
            "whatever the drift (not a t-interval; a narrower target gets no valid CI)"
        ),
        extra={**res.extra, "range_blocks": float(blocks)},
    )


def check_level(pi: PISpec, got: PISamples, res: PIResult, stop: StopSpec) -> PIResult:
    """No single interval when the level shifted (or drifted) during the study.

    The merged samples the interval rests on (with unit readings: the round means) are
    (nearly) exchangeable when the PI is stationary, so E-Divisive means with a
    permutation test at ``SHIFT_ALPHA`` (:func:`~assay.stats.validity.level_shift`) can
    look for a change among them. It runs only when the result would meet its target,
    at most ``confirm_rounds`` times per study, which keeps the false alarms on a
    stationary PI near ``SHIFT_ALPHA`` per look.

    The largest step in the rounds (:func:`_round_step`, which a short series needs)
    counts as a change at ``SHIFT_ALPHA`` too; below ``STEP_NOTE_ALPHA`` the result
    keeps its interval and its note says where the level may have stepped and which
    rounds the interval is the mean of (:func:`step_note`).
    """
    found = _find_shift(pi, got, res, SHIFT_ALPHA, SHIFT_PERMUTATIONS)
    if found is None:
        base = _step_series(pi, got, res)
        if base is None:
            return res
        step = _round_step(got, res, *base)
        if step is None or step[0].p_value >= STEP_NOTE_ALPHA:
            # the first rounds apart from the rest only ever add the note
            early = _early_step(got, res, *base)
            if early is not None and early[0].p_value < EARLY_STEP_ALPHA:
                return step_note(got, res, *early)
            return res
        # on unit readings (not their round means) the step only adds its note
        on_units = got.parts is not None and "rounds_level" not in res.extra
        if on_units or step[0].p_value >= SHIFT_ALPHA:
            return step_note(got, res, *step)
        found = step
    shift, at = found
    rel = shift.mean_after / shift.mean_before - 1 if shift.mean_before else math.nan
    ranged = range_result(pi, got.samples, res, stop)
    if ranged is not None:
        return replace(
            ranged,
            note=f"{ranged.note}; the mean moved from {shift.mean_before:.6g} to "
            f"{shift.mean_after:.6g} ({rel:+.1%}) at round {at} of {res.rounds_used}",
        )
    note = (
        f"no valid CI: the mean moved during the study, from {shift.mean_before:.6g} to "
        f"{shift.mean_after:.6g} ({rel:+.1%}, difference [{shift.diff_low:.4g}, "
        f"{shift.diff_high:.4g}]) at round {at} of {res.rounds_used} ({shift.test} "
        f"p = {shift.p_value:.2g}"
        + (f"; {shift.changes} changes in all" if shift.changes > 1 else "")
        + "): a level shift or a drift (background load, frequency scaling, a growing "
        "data set?); no single interval describes it"
    )
    return replace(
        res,
        low=-math.inf,
        high=math.inf,
        half_width=math.inf,
        relative_half_width=math.inf,
        met=False,
        required_raw=None,
        note=note,
        extra={
            **res.extra,
            "shift_round": float(at),
            "shift_p": shift.p_value,
            "mean_before": shift.mean_before,
            "mean_after": shift.mean_after,
        },
    )


#: A step in the rounds of a met result below this p (and not below ``SHIFT_ALPHA``):
#: the interval stands, its note says where the level may have stepped (#37).
STEP_NOTE_ALPHA = 0.01
#: The first rounds' note level: a second look at the same rounds after the step test's
#: own at ``STEP_NOTE_ALPHA``, so half of it (at 0.01 its z test, exact on the unit
#: readings' noise, noted 1.2% of stationary AR(1) 0.5 studies; at 0.005, 0.2%)
EARLY_STEP_ALPHA = STEP_NOTE_ALPHA / 2


def step_note(got: PISamples, res: PIResult, step: LevelShift, at: int) -> PIResult:
    """A met result whose rounds may hold a step: which level its interval describes.

    The interval is of the mean over all the rounds it rests on; after a step that is
    a mix of two levels, so the note names the step's round, the means on either side
    and the rounds the interval covers, for the reader to judge (a new study from
    round ``at`` on, or ``warmup_rounds``, gives the later level alone).
    """
    first = got.first_round + 1
    last = first + res.rounds_used - 1
    rel = step.mean_after / step.mean_before - 1 if step.mean_before else math.nan
    note = (
        f"the level may have stepped at round {at}: from {step.mean_before:.6g} to "
        f"{step.mean_after:.6g} ({rel:+.1%}; {step.test} p = {step.p_value:.2g}); the "
        f"interval is of the mean over rounds {first}–{last}, both levels, not of the "
        f"level since round {at} ({step.mean_after:.6g})"
    )
    return replace(
        res,
        note=f"{res.note}; {note}" if res.note else note,
        extra={
            **res.extra,
            "step_round": float(at),
            "step_p": step.p_value,
            "mean_before": step.mean_before,
            "mean_after": step.mean_after,
        },
    )


#: Readings that never merge to independence are tested for a trend on their first
#: 60, 120, 240, ... (a look at each length, whatever the analyses between: at most a
#: few looks per study), at this level (#37: such studies ran to the 1,000-round budget).
DRIFT_FIRST_LOOK = 60
DRIFT_ALPHA = 0.001
#: The same test on the round means of unit readings (#59): stricter, as a round level
#: that wanders slowly (AR(1) 0.8 across rounds) fooled the autocorrelation bound of 60
#: round means in 2 of 100 studies at DRIFT_ALPHA; a real drift is far beyond either.
DRIFT_ALPHA_ROUNDS = 0.0001


def drift_stop(got: PISamples, res: PIResult, harmonic: bool = False) -> PIResult:
    """A PI whose readings never merge to independence (no valid CI) and whose level
    moves: said, with the rate, so that the study stops instead of running to its
    budget.  The test (:func:`~assay.stats.validity.level_trend`, its variance widened
    for the autocorrelation left around the line) runs on the first ``c`` readings,
    ``c`` the largest of 60, 120, 240, ... that is in: the same answer at every
    analysis until the next length, so a stationary series gets a few looks at
    :data:`DRIFT_ALPHA`, not one per analysis.  With unit readings whose round means
    do not merge either (#59: such studies ran to their 1,000-round budget), the same
    on the round means (of the rounds with stable unit readings)."""
    from assay.stats.validity import level_trend

    if got.parts is None:
        series, what, alpha = got.samples, "readings", DRIFT_ALPHA
    else:
        series, what = _kept_round_means(got, harmonic)[0], "round means"
        alpha = DRIFT_ALPHA_ROUNDS
    n = series.size
    if n < DRIFT_FIRST_LOOK:
        return res
    c = DRIFT_FIRST_LOOK * 2 ** int(math.log2(n / DRIFT_FIRST_LOOK))
    trend = level_trend(series[:c])
    if trend is None or trend.p_value >= alpha:
        return res
    per_round = trend.relative_slope
    return replace(
        res,
        note=(
            f"{res.note}; the level is moving: {per_round:+.2%} per round over the first "
            f"{c} {what} used (a straight line through them: p = {trend.p_value:.2g}, "
            f"its variance widened for an autocorrelation up to {trend.phi_bound:.2f}); "
            "more rounds would not give an interval"
        ),
        extra={**res.extra, "trend_per_round": per_round, "trend_p": trend.p_value},
    )


def locate_change(pi: PISpec, got: PISamples, res: PIResult) -> PIResult:
    """Where the level of a PI without an interval changed most, added to its note.

    Its samples are autocorrelated here (that is why no interval exists), so no test
    is made: E-Divisive's best split says where, not whether
    (:func:`~assay.stats.validity.largest_step`).
    """
    from assay.stats.validity import largest_step

    series, starts = _shift_base(pi, got, res)
    step = largest_step(series, max_samples=SHIFT_MAX_SAMPLES)
    if step is None:
        return res
    k, before, after = step
    at = starts[min(k, len(starts) - 1)] + 1
    return replace(
        res,
        note=f"{res.note}; the largest change of level is at round {at} of "
        f"{res.rounds_used}: from {before:.6g} to {after:.6g}",
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
    moved = [r for r in results if r.name in must and "shift_round" in r.extra]
    if moved:
        # more rounds cannot give one interval to a PI whose level moved: say so now
        names = ", ".join(f"{r.name} (round {r.extra['shift_round']:.0f})" for r in moved)
        return Decision(
            True, f"stopped early: the mean moved during the study: {names}; no valid CI"
        )
    moving = [r for r in results if r.name in must and "trend_per_round" in r.extra]
    if moving:
        names = ", ".join(f"{r.name} ({r.extra['trend_per_round']:+.2%} per round)" for r in moving)
        return Decision(True, f"stopped early: the level is moving: {names}; no valid CI")
    if met and met_streak + 1 >= stop.confirm_rounds:
        return Decision(
            True, "target reached: every CI is within the requested width", 0, target_met=True
        )
    if met:
        rounds_left = stop.confirm_rounds - met_streak - 1
    spent = budget_spent(rounds_done, stop.max_rounds, elapsed, stop.max_time)
    if spent is not None:
        return Decision(True, spent, rounds_left, met)
    return Decision(False, "confirming the target" if met else "running", rounds_left, met)


def budget_spent(
    rounds: int, max_rounds: int | None, elapsed: float, max_time: float | None
) -> str | None:
    """The reason a study stops on its budget, or None while the budget lasts: its
    rounds (``max_rounds``) first, then its measured seconds (``max_time``).

    >>> budget_spent(10, 10, 3.2, 60.0), budget_spent(4, 10, 61.0, 60.0)
    ('budget spent: 10 rounds (max_rounds)', 'budget spent: 61 s (max_time)')
    >>> budget_spent(4, 10, 3.2, None) is None
    True
    """
    if max_rounds is not None and rounds >= max_rounds:
        return f"budget spent: {rounds} rounds (max_rounds)"
    if max_time is not None and elapsed >= max_time:
        return f"budget spent: {elapsed:.0f} s (max_time)"
    return None


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


def next_look(decision: Decision, rounds_done: int, stop: StopSpec) -> int:
    """After an analysis of ``rounds_done`` rounds, the round count at which the next one
    can change the decision: the next round when this one met the target (its
    confirmation), else ``confirm_rounds`` rounds on. A study stops only on
    ``confirm_rounds`` met rounds in a row, so none of the rounds before can end it
    (the budget aside, which needs no analysis); at the look, the rounds skipped are
    analysed only if it meets the target (the confirmation, replayed). The stop comes
    on the same round as with an analysis after every round, at half the analyses
    with the default confirmation (issue #17: ~0.6 ms each between 50 ms commands);
    only the level check (:func:`check_level`, on met rounds) then falls on other
    rounds where the level moved (bench/RESULTS.md).

    >>> stop = StopSpec()  # confirm_rounds = 2
    >>> next_look(Decision(False, "running"), 10, stop)
    12
    >>> next_look(Decision(False, "confirming the target", 1, target_met=True), 12, stop)
    13
    """
    return rounds_done + (1 if decision.target_met else stop.confirm_rounds)


def planner_for(work: WorkSpec | None) -> WorkAmountPlanner | None:
    """The work-amount planner of a study with an adjustable work amount."""
    if work is None:
        return None
    return WorkAmountPlanner(work.min, work.max, short_round=work.short_round)
