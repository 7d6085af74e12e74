"""Claims judged on their evidence: "b is at least 1.5x as slow as a", "a and c are the
same within 5%" (issue #62).

A claim is about the ratio of two means, ``numerator / denominator``, and names the
region it says that ratio lies in: ``at_least`` a bound, ``at_most`` a bound, or
``within`` a margin of 1 (equivalence).  Its verdict rests on an interval of the ratio
at ``1 - 2 alpha`` (a 90% interval for the usual ``alpha = 0.05``):

- **holds**: the interval lies inside the claimed region.  For a one-sided claim that is
  the one-sided test at ``alpha`` rejecting the ratio outside the region; for an
  equivalence claim it is the two one-sided tests (TOST, Schuirmann 1987), each at
  ``alpha``.
- **fails**: the interval lies entirely outside the region (the opposite one-sided
  test at ``alpha``).
- **undecided**: it straddles a boundary of the region.

So a claim whose true ratio is outside its region is called "holds" at most ``alpha``
of the time, and one whose true ratio is inside is called "fails" at most ``alpha`` of
the time (bench/bench_claims.py measures both).

>>> v = judge_claim(ClaimRule("at_least", 1.5), 1.92, 1.71, 2.16)
>>> v.verdict
'holds'
>>> judge_claim(ClaimRule("within", 0.05), 1.03, 0.99, 1.07).verdict
'undecided'
>>> judge_claim(ClaimRule("at_most", 0.8), 0.95, 0.9, 1.0).verdict
'fails'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from assay.values import finite_or_none

if TYPE_CHECKING:  # numpy and scipy only where a ratio is computed: study files load fast
    from assay.stats.compare import VariantStats

__all__ = [
    "CLAIM_KINDS",
    "ClaimKind",
    "ClaimRule",
    "ClaimVerdict",
    "JudgedClaim",
    "Verdict",
    "claim_level",
    "claim_method",
    "judge_claim",
    "judged",
    "paired_ratio_interval",
    "ratio_interval",
]

ClaimKind = Literal["at_least", "at_most", "within"]
Verdict = Literal["holds", "fails", "undecided"]
CLAIM_KINDS: tuple[ClaimKind, ...] = ("at_least", "at_most", "within")


def claim_level(confidence: float) -> float:
    """The level of the two-sided interval a claim is judged on: ``1 - 2 alpha`` with
    ``alpha = 1 - confidence``, so each of its one-sided tests is at ``alpha``.

    >>> round(claim_level(0.95), 3)
    0.9
    """
    if not 0.5 < confidence < 1:
        raise ValueError(f"confidence must be in (0.5, 1), got {confidence}")
    return round(1.0 - 2.0 * (1.0 - confidence), 12)


@dataclass(frozen=True)
class ClaimRule:
    """The region a claim says the ratio lies in: ``at_least`` / ``at_most`` a ratio
    (> 0), or ``within`` a margin of 1 (``0.05``: ``|ratio - 1| <= 5%``)."""

    kind: ClaimKind
    bound: float

    def __post_init__(self) -> None:
        if self.kind not in CLAIM_KINDS:
            raise ValueError(f"a claim is one of {', '.join(CLAIM_KINDS)}, not {self.kind!r}")
        if not (math.isfinite(self.bound) and self.bound > 0):
            raise ValueError(f"{self.kind}: expected a positive number, got {self.bound}")
        if self.kind == "within" and self.bound >= 1:
            raise ValueError(f"within: expected a margin below 100%, got {self.bound:.0%}")

    @property
    def region(self) -> tuple[float, float]:
        """The ratios the claim allows, ``(low, high)``."""
        if self.kind == "at_least":
            return self.bound, math.inf
        if self.kind == "at_most":
            return 0.0, self.bound
        return 1.0 - self.bound, 1.0 + self.bound

    def text(self) -> str:
        """The claimed region in words: "at least 1.5×", "at most 0.8×", "within 5%"."""
        if self.kind == "within":
            return f"within {self.bound * 100:g}%"
        return f"{self.kind.replace('_', ' ')} {self.bound:g}×"


@dataclass(frozen=True)
class ClaimVerdict:
    """A claim's verdict with the estimate of the ratio and its interval."""

    verdict: Verdict
    estimate: float  # numerator mean / denominator mean
    low: float
    high: float
    rule: ClaimRule
    why: str  # the interval against the region, in words

    def as_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "estimate": finite_or_none(self.estimate),
            "low": finite_or_none(self.low),
            "high": finite_or_none(self.high),
            "kind": self.rule.kind,
            "bound": self.rule.bound,
            "why": self.why,
        }


def judge_claim(rule: ClaimRule, estimate: float, low: float, high: float) -> ClaimVerdict:
    """The verdict of ``rule`` on the ratio's interval ``[low, high]`` (at
    :func:`claim_level`); an interval that is not finite (no valid estimate, or one
    too wide to bound) is undecided.

    >>> judge_claim(ClaimRule("within", 0.1), 1.02, 0.95, 1.08).verdict
    'holds'
    >>> judge_claim(ClaimRule("within", 0.1), 1.5, 1.3, 1.7).why
    'the interval [1.3, 1.7] lies outside 0.9 ... 1.1'
    >>> judge_claim(ClaimRule("at_least", 1.5), math.nan, math.nan, math.nan).verdict
    'undecided'
    """
    lo, hi = rule.region
    span = f"[{low:.3g}, {high:.3g}]"
    region = _region_text(rule)
    if not (math.isfinite(low) and math.isfinite(high)) or low > high:
        return ClaimVerdict(
            "undecided", estimate, low, high, rule, "no interval of the ratio to judge by"
        )
    if lo <= low and high <= hi:
        return ClaimVerdict("holds", estimate, low, high, rule, f"the interval {span} {region}")
    if high < lo or low > hi:
        return ClaimVerdict(
            "fails", estimate, low, high, rule, f"the interval {span} {_outside_text(rule)}"
        )
    return ClaimVerdict(
        "undecided",
        estimate,
        low,
        high,
        rule,
        f"the interval {span} straddles {_boundary_text(rule, low, high)}",
    )


def _region_text(rule: ClaimRule) -> str:
    return _where(rule, inside=True)


def _outside_text(rule: ClaimRule) -> str:
    return _where(rule, inside=False)


def _where(rule: ClaimRule, *, inside: bool) -> str:
    """Where an interval lies against the claimed region, in words."""
    lo, hi = rule.region
    if rule.kind == "within":
        return f"lies {'inside' if inside else 'outside'} {lo:g} ... {hi:g}"
    edge = lo if rule.kind == "at_least" else hi
    above = (rule.kind == "at_least") == inside
    return f"is {'at or ' if inside else ''}{'above' if above else 'below'} {edge:g}"


def _boundary_text(rule: ClaimRule, low: float, high: float) -> str:
    lo, hi = rule.region
    edges = [e for e in (lo, hi) if math.isfinite(e) and e > 0 and low <= e <= high]
    return " and ".join(f"{e:g}" for e in edges) or f"{lo:g}"


def ratio_interval(
    numerator: VariantStats,
    denominator: VariantStats,
    confidence: float,
    *,
    always_valid: bool = False,
) -> tuple[float, float, float]:
    """``(estimate, low, high)`` of ``numerator mean / denominator mean`` at
    :func:`claim_level`: Fieller's interval with Welch's degrees of freedom (the
    interval :func:`~assay.stats.compare.welch_test` gives the relative difference), or
    ``always_valid``: the interval that holds at every look of a study that stops when
    its claims are decided (:func:`~assay.stats.compare.always_valid_relative`).

    >>> from assay.stats.compare import SummaryStats, analyze_variant
    >>> a = analyze_variant(SummaryStats(2.0, 0.04, 20))
    >>> b = analyze_variant(SummaryStats(1.0, 0.01, 20))
    >>> [round(x, 2) for x in ratio_interval(a, b, 0.95)]
    [2.0, 1.9, 2.11]
    """
    from assay.stats.compare import _compare, always_valid_relative

    level = claim_level(confidence)
    comp = _compare(numerator, denominator, level)
    if always_valid:
        low, high = always_valid_relative(comp, 1.0 - level)
    else:
        low, high = comp.welch.rel_low, comp.welch.rel_high
    return comp.welch.relative + 1.0, low + 1.0, high + 1.0


def paired_ratio_interval(
    original: Sequence[float], reproduced: Sequence[float], confidence: float
) -> tuple[float, float, float]:
    """``(estimate, low, high)`` of the geometric mean of ``reproduced[i] /
    original[i]`` over pairs (the settings both measured, each once or as a mean) at
    :func:`claim_level`: Student's t interval of the mean log ratio (the paired t test
    on the logs), exponentiated.  Pairs with a value that is not positive and finite
    are left out; NaN with fewer than two pairs left.

    >>> est, low, high = paired_ratio_interval([1, 2, 4, 8], [1.1, 2.1, 4.5, 8.6], 0.95)
    >>> round(est, 3), round(low, 3), round(high, 3)
    (1.087, 1.05, 1.126)
    """
    import numpy as np
    from scipy import stats

    a = np.asarray(original, dtype=float)
    b = np.asarray(reproduced, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError("original and reproduced must be 1-D and of the same length")
    keep = np.isfinite(a) & np.isfinite(b) & (a > 0) & (b > 0)
    d = np.log(b[keep]) - np.log(a[keep])
    if d.size < 2:
        return math.nan, math.nan, math.nan
    level = claim_level(confidence)
    mean = float(d.mean())
    half = float(stats.t.ppf(0.5 + level / 2, d.size - 1)) * float(d.std(ddof=1)) / d.size**0.5
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


@dataclass(frozen=True)
class JudgedClaim:
    """A claim of a study with its verdict: what it says, on which PI and ratio, and
    how the interval was made (``method``)."""

    says: str
    pi: str
    numerator: str
    denominator: str
    verdict: ClaimVerdict
    level: float  # the interval's two-sided level, claim_level(confidence)
    method: str

    def as_dict(self) -> dict[str, Any]:
        """The result schema's ``claims`` entry."""
        return {
            "says": self.says,
            "pi": self.pi,
            "ratio": [self.numerator, self.denominator],
            **self.verdict.as_dict(),
            "confidence": self.level,
            "method": self.method,
        }


def judged(
    says: str,
    pi: str,
    labels: tuple[str, str],
    rule: ClaimRule,
    numerator: VariantStats | None,
    denominator: VariantStats | None,
    confidence: float,
    *,
    always_valid: bool = False,
    missing: str = "no valid samples",
) -> JudgedClaim:
    """A claim judged on its two sides' stats (:func:`ratio_interval`,
    :func:`judge_claim`); undecided, with ``missing`` said of the side that has none."""
    level = claim_level(confidence)
    if numerator is None or denominator is None:
        side = labels[0] if numerator is None else labels[1]
        nan = math.nan
        verdict = ClaimVerdict("undecided", nan, nan, nan, rule, f"{side}: {missing}")
    else:
        verdict = judge_claim(
            rule, *ratio_interval(numerator, denominator, confidence, always_valid=always_valid)
        )
    method = claim_method(rule, level, always_valid=always_valid)
    return JudgedClaim(says, pi, labels[0], labels[1], verdict, level, method)


def claim_method(rule: ClaimRule, level: float, *, always_valid: bool = False) -> str:
    """How a claim's verdict was reached, in words.

    >>> for part in claim_method(ClaimRule("within", 0.1), 0.9).split(": "):
    ...     print(part)
    two one-sided tests (TOST) at alpha 0.05
    Fieller's 90% interval of the ratio of means (Welch df) inside 0.9 ... 1.1
    """
    alpha = (1.0 - level) / 2.0
    interval = (
        f"the always-valid {level:.0%} interval of the ratio of means (the study stopped "
        "on its claims)"
        if always_valid
        else f"Fieller's {level:.0%} interval of the ratio of means (Welch df)"
    )
    lo, hi = rule.region
    if rule.kind == "within":
        return f"two one-sided tests (TOST) at alpha {alpha:g}: {interval} inside {lo:g} ... {hi:g}"
    side = f">= {lo:g}" if rule.kind == "at_least" else f"<= {hi:g}"
    return f"one-sided test at alpha {alpha:g}: {interval} {side}"
