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
from dataclasses import asdict, dataclass
from typing import Any, Literal

from assay.stats.compare import VariantStats, welch_test

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
        if self.verdict == "worse":
            return f"{self.candidate} is worse than {self.baseline}: {shown}, beyond {limit}"
        if self.verdict == "not worse":
            return (
                f"{self.candidate} is not worse than {self.baseline} by more than {limit}: {shown}"
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
