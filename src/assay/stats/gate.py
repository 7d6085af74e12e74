"""A regression gate for CI: is a candidate worse than the baseline by more than a
threshold, with the study's confidence?

The relative difference ``(candidate - baseline) / baseline`` gets Welch's test with
Fieller's interval (:func:`assay.stats.compare.welch_test`), or on a study of the
median the Hodges–Lehmann shift relative to the baseline's median with its
distribution-free interval (:func:`assay.stats.rank_shift.rank_shift`), turned so that
positive means worse (slower for lower-is-better PIs, less for higher-is-better ones).
The verdict rests on the whole interval, never on the point estimate:

* ``worse``: the interval lies beyond the threshold (a regression, with confidence);
* ``not worse``: the interval lies below it (any slow-down is smaller than asked);
* ``undecided``: the interval straddles it; more rounds would narrow it.

>>> v = gate_verdict("new", "old", relative=0.30, low=0.25, high=0.35,
...                  direction="lower", threshold=0.05)
>>> v.verdict, v.text()
('worse', 'new is worse than old: +30.0% [+25.0%, +35.0%] slower, beyond 5%')
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

from assay.stats.compare import VariantStats, welch_test
from assay.stats.drift_bound import RatioBound

Verdict = Literal["worse", "not worse", "undecided"]


def change_text(relative: float, low: float, high: float) -> str | None:
    """A relative change with its interval, ``"+30.0% [+25.0%, +35.0%]"``; None when any
    of them is not finite.

    >>> change_text(0.3, 0.25, 0.35), change_text(0.1, float("-inf"), 0.2)
    ('+30.0% [+25.0%, +35.0%]', None)
    """
    if not all(math.isfinite(x) for x in (relative, low, high)):
        return None
    return f"{relative:+.1%} [{low:+.1%}, {high:+.1%}]"


@dataclass(frozen=True)
class GateVerdict:
    """One candidate against the baseline; ``worseness`` bounds are signed so that a
    positive value is a regression whatever the PI's direction."""

    candidate: str
    baseline: str
    relative: float  # (candidate - baseline) / baseline, as measured
    low: float  # its confidence interval
    high: float
    direction: str  # "lower" or "higher" is better
    threshold: float
    verdict: Verdict
    why: str = ""  # why there is no interval, when there is none (said in its text)
    # how the interval was made when it is not the ordinary one: the conservative bound
    # that holds under drift (assay.stats.drift_bound), said in the text
    bound: str = ""

    @property
    def worseness(self) -> tuple[float, float, float]:
        """(estimate, low, high) of the regression, positive = worse."""
        if self.direction == "lower":
            return self.relative, self.low, self.high
        return -self.relative, -self.high, -self.low

    @property
    def limit(self) -> str:
        """The threshold as people write it: ``5%``, or ``0.50%`` below 1%."""
        return f"{self.threshold:.0%}" if self.threshold >= 0.01 else f"{self.threshold:.2%}"

    def text(self) -> str:
        word = "slower" if self.direction == "lower" else "lower"
        change = change_text(*self.worseness)
        shown = "no interval" if change is None else f"{change} {word}"
        limit = self.limit
        how = f" ({self.why}; the interval shown is {self.bound})" if self.bound else ""
        if self.verdict == "worse":
            return f"{self.candidate} is worse than {self.baseline}: {shown}, beyond {limit}{how}"
        if self.verdict == "not worse":
            return (
                f"{self.candidate} is not worse than {self.baseline} by more than {limit}: "
                f"{shown}{how}"
            )
        if self.bound:
            return (
                f"{self.candidate} vs {self.baseline}: undecided at {limit}: {shown} "
                f"({self.why}; even {self.bound}, straddles the threshold)"
            )
        if "[" in shown:
            why = "the interval straddles the threshold"
        else:  # (it said "too few samples" also of a run whose interval was refused)
            why = self.why or "one side has no interval"
        return f"{self.candidate} vs {self.baseline}: undecided at {limit}: {shown} ({why})"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"text": self.text()}


def gate_verdict(
    candidate: str,
    baseline: str,
    *,
    relative: float,
    low: float,
    high: float,
    direction: str,
    threshold: float,
    why: str = "",
) -> GateVerdict:
    """The verdict on a relative difference and its interval (see the module); ``why``:
    why there is no interval, when there is none.

    >>> gate_verdict("new", "old", relative=math.nan, low=math.nan, high=math.nan,
    ...              direction="lower", threshold=0.05, why="new has none: the mean moved").text()
    'new vs old: undecided at 5%: no interval (new has none: the mean moved)'
    """
    v = GateVerdict(candidate, baseline, relative, low, high, direction, threshold, "undecided")
    _, lo, hi = v.worseness
    verdict: Verdict = "undecided"
    if math.isfinite(lo) and lo > threshold:
        verdict = "worse"
    elif math.isfinite(hi) and hi < threshold:
        verdict = "not worse"
    return GateVerdict(candidate, baseline, relative, low, high, direction, threshold, verdict, why)


def drift_gate(
    candidate: str,
    baseline: str,
    bound: RatioBound,
    *,
    direction: str,
    threshold: float,
    why: str,
) -> GateVerdict:
    """The verdict on the conservative interval of two runs' block ranges
    (:func:`assay.stats.drift_bound.block_ratio_bound`), where ``why`` says why the
    ordinary one is invalid: a 4x slow-down beyond any drift the runs showed is worse.

    >>> from assay.stats.drift_bound import block_ratio_bound
    >>> b = block_ratio_bound([4.0, 4.4, 3.6, 4.2], [1.0, 1.6, 1.2, 1.1])
    >>> v = drift_gate("this run", "the reference", b, direction="lower", threshold=0.05,
    ...                why="no valid interval: the level moved")
    >>> v.verdict, v.text()[:71]
    ('worse', 'this run is worse than the reference: +230.6% [+125.0%, +340.0%] slower')
    """
    v = gate_verdict(
        candidate,
        baseline,
        relative=bound.relative,
        low=bound.low,
        high=bound.high,
        direction=direction,
        threshold=threshold,
        why=why,
    )
    return replace(v, bound=bound.words())


def with_drift_bound(v: GateVerdict, bound: RatioBound | None) -> GateVerdict:
    """``v``, or where it is undecided, the verdict of the two runs' block ranges
    (:func:`drift_gate`) when they decide, or when ``v`` has no interval to show.  The
    ranges hold on their own, so a gross change decides even where the ordinary
    interval is invalid or as wide as a drift made it (#58).

    >>> from assay.stats.drift_bound import block_ratio_bound
    >>> nan = math.nan
    >>> v = gate_verdict("new", "old", relative=nan, low=nan, high=nan, direction="lower",
    ...                  threshold=0.05, why="new has none: the level moved")
    >>> with_drift_bound(v, block_ratio_bound([4.0, 4.4, 3.6], [1.0, 1.6, 1.2])).verdict
    'worse'
    """
    if v.verdict != "undecided" or bound is None:
        return v
    shown = change_text(*v.worseness) is not None
    why = v.why or ("its interval straddles the threshold" if shown else "no valid interval")
    if not why.startswith("no valid interval") and not shown:
        why = f"no valid interval: {why}"
    d = drift_gate(
        v.candidate, v.baseline, bound, direction=v.direction, threshold=v.threshold, why=why
    )
    return d if d.verdict != "undecided" or not shown else v


def regression_gate(
    candidate: str,
    cand: VariantStats,
    baseline: str,
    base: VariantStats,
    *,
    direction: str,
    threshold: float,
    confidence: float,
    statistic: str = "mean",
) -> GateVerdict:
    """The gate on two variants' merged samples at ``confidence``: Welch's test of
    candidate vs baseline with Fieller's interval of their ratio, or with
    ``statistic="median"`` the Hodges–Lehmann shift relative to the baseline's median
    with its Moses interval (the study ranked on medians: the gate says the same)."""
    if statistic == "median" and cand.merged is not None and base.merged is not None:
        from assay.stats.rank_shift import rank_shift

        hl = rank_shift(cand.merged, base.merged, confidence)
        relative, low, high = hl.relative, hl.rel_low, hl.rel_high
    else:
        w = welch_test(cand.mean, cand.var, cand.n, base.mean, base.var, base.n, confidence)
        relative, low, high = w.relative, w.rel_low, w.rel_high
    return gate_verdict(
        candidate,
        baseline,
        relative=relative,
        low=low,
        high=high,
        direction=direction,
        threshold=threshold,
    )
