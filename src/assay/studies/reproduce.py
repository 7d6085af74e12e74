"""``assay reproduce``: a study run again from its store, judged against the original
(issue #62, part 3).

The original is a store (or a ``--json`` result naming its store): its study file and
command lines as the last session ran them.  The same study runs again into a store of
its own (:mod:`assay.cli.reproduce` drives the runner), and this module judges the two:
PI by PI (and variant by variant), the ratio reproduced / original of the means with
its 90% interval (:func:`assay.stats.claims.ratio_interval`), **reproduced** when the
interval lies within the tolerance of 1 (two one-sided tests, as a ``within`` claim),
**not reproduced** when it lies entirely outside, **undecided** otherwise; each
``[[claim]]`` reproduced when the reproduction reaches the original's verdict again;
and the two machines' environments side by side.

A sweep or knob study measures many settings, a few times each or once: its PI is
judged over the settings both measured, paired, by the geometric mean of the ratios
with the paired t interval of their logs
(:func:`~assay.stats.claims.paired_ratio_interval`); a sweep's settings measured more
than once in both are judged one by one too (shown, not part of the verdict: with
many settings some straddle by chance), and what each study found (a sweep's
significant parameters and important points, a knob study's top knobs) is set side by
side.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.errors import SpecError
from assay.stats.claims import (
    ClaimRule,
    claim_level,
    judge_claim,
    paired_ratio_interval,
    ratio_interval,
)
from assay.stats.compare import SummaryStats, VariantStats, analyze_variant
from assay.store import TrialRecord
from assay.studies.base import StoredStudy
from assay.studies.settings import setting_key
from assay.values import finite_or_none, short

#: The kinds of study ``assay reproduce`` runs again.
REPRODUCE_KINDS = ("run", "compare", "order", "sweep", "knobs")
#: The kinds whose PIs are judged over their settings, paired.
PAIRED_KINDS = ("sweep", "knobs")
#: The default tolerance: a reproduction within 10% of the original is the same result.
DEFAULT_TOLERANCE = 0.10

_VERDICTS = {"holds": "reproduced", "fails": "not reproduced", "undecided": "undecided"}


@dataclass(frozen=True)
class PIReproduction:
    """One PI (of one variant, in a comparison): the original and reproduced means, the
    ratio reproduced / original with its interval, and the verdict."""

    pi: str
    variant: str | None
    unit: str
    original: float
    reproduced: float
    ratio: float
    low: float
    high: float
    verdict: str  # reproduced, not reproduced, undecided
    why: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "pi": self.pi,
            "variant": self.variant,
            "unit": self.unit,
            "original": finite_or_none(self.original),
            "reproduced": finite_or_none(self.reproduced),
            "ratio": finite_or_none(self.ratio),
            "low": finite_or_none(self.low),
            "high": finite_or_none(self.high),
            "verdict": self.verdict,
            "why": self.why,
        }


@dataclass(frozen=True)
class ClaimReproduction:
    """A claim's verdict in the original and in the reproduction: reproduced when the
    reproduction reaches the original's (decided) verdict again."""

    says: str
    original: str
    reproduced: str
    verdict: str
    estimate: float | None
    low: float | None
    high: float | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "says": self.says,
            "original": self.original,
            "reproduced": self.reproduced,
            "verdict": self.verdict,
            "estimate": self.estimate,
            "low": self.low,
            "high": self.high,
        }


@dataclass(frozen=True)
class Finding:
    """What the original and the reproduction found (a sweep's significant
    parameters, a knob study's top knobs), side by side."""

    what: str
    original: str
    reproduced: str

    @property
    def same(self) -> bool:
        return self.original == self.reproduced

    def as_dict(self) -> dict[str, Any]:
        return {**vars(self), "same": self.same}


@dataclass
class ReproduceResult:
    """Everything the reproduction's report shows."""

    study: str
    kind: str
    original_store: str
    store: str
    tolerance: float
    confidence: float  # the ratios' two-sided level
    pis: list[PIReproduction]
    claims: list[ClaimReproduction]
    environments: list[tuple[str, Any, Any]]  # key, original, reproduced
    reproduction: Any  # the reproduction's own result (StudyResult, CompareResult)
    original_when: str | None = None
    warnings: list[str] = field(default_factory=list)
    # a sweep's settings measured more than once in both, one by one (not in the verdict)
    settings: list[PIReproduction] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        """``not reproduced`` when any PI or claim is not; ``undecided`` when any is
        undecided (or nothing could be judged); else ``reproduced``."""
        said = [p.verdict for p in self.pis] + [c.verdict for c in self.claims]
        if "not reproduced" in said:
            return "not reproduced"
        if not said or "undecided" in said:
            return "undecided"
        return "reproduced"

    def as_dict(self) -> dict[str, Any]:
        from assay.studies.base import result_header

        return {
            **result_header("reproduce"),
            "study": self.study,
            "reproduced_kind": self.kind,
            "verdict": self.verdict,
            "original_store": self.original_store,
            "original_when": self.original_when,
            "store": self.store,
            "tolerance": self.tolerance,
            "confidence": self.confidence,
            "pis": [p.as_dict() for p in self.pis],
            "claims": [c.as_dict() for c in self.claims],
            "settings": [p.as_dict() for p in self.settings],
            "findings": [f.as_dict() for f in self.findings],
            "environment": [
                {"key": k, "original": a, "reproduced": b, "differs": a != b}
                for k, a, b in self.environments
            ],
            "reproduction": self.reproduction.as_dict(),
            "warnings": self.warnings,
        }


def original_store(path: str | Path, study: str | None) -> tuple[Path, str | None]:
    """The store (and study) an original names: a store as given, or a ``--json``
    result's ``store`` (relative to the result file's folder when not absolute) and
    ``study``.  :class:`~assay.errors.SpecError` says what is missing."""
    p = Path(path)
    if p.suffix.lower() != ".json":
        return p, study
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SpecError(f"{p}: cannot read the result: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("store"), str) or not doc["store"]:
        raise SpecError(
            f'{p}: not an Assay result that names its store (no "store"): reproduce needs '
            "the study as it ran; give the store (.assay.db) instead"
        )
    store = Path(doc["store"])
    if not store.is_absolute():
        store = p.parent / store
    if not store.exists():
        raise SpecError(
            f"{p}: its store {doc['store']} is not here ({store}); copy the store beside "
            "the result, or give the store's path"
        )
    named = doc.get("study")
    return store, study or (named if isinstance(named, str) else None)


def check_kind(stored: StoredStudy) -> None:
    """Only the kinds of :data:`REPRODUCE_KINDS` are run again, with a clear refusal."""
    if stored.kind not in REPRODUCE_KINDS:
        kinds = ", ".join(REPRODUCE_KINDS[:-1]) + f" and {REPRODUCE_KINDS[-1]}"
        raise SpecError(
            f"study {stored.name!r} is {'an' if stored.kind[0] in 'aeiou' else 'a'} "
            f"{stored.kind} study; assay reproduce runs again "
            f"{kinds} studies (not yet {stored.kind})"
        )


def interval_stats(mean: float, half_width: float, n: int, confidence: float) -> VariantStats:
    """The summary a PI's interval stands for: its mean, and the standard error its
    half-width makes at its confidence with ``n - 1`` degrees of freedom (a run's
    interval already holds its warm-up removal, merging and drift handling).

    >>> s = interval_stats(10.0, 0.5, 21, 0.95)
    >>> round(s.mean, 1), round((s.var / s.n) ** 0.5, 3)
    (10.0, 0.24)
    """
    from scipy import stats

    t = float(stats.t.ppf(0.5 + confidence / 2, max(n - 1, 1)))
    se = half_width / t
    return analyze_variant(SummaryStats(mean, se * se * n, n))


def _judge(
    pi: str,
    variant: str | None,
    unit: str,
    new: VariantStats | None,
    old: VariantStats | None,
    tolerance: float,
    confidence: float,
    missing: str,
) -> PIReproduction:
    nan = math.nan
    if new is None or old is None:
        return PIReproduction(pi, variant, unit, nan, nan, nan, nan, nan, "undecided", missing)
    est, low, high = ratio_interval(new, old, confidence)
    v = judge_claim(ClaimRule("within", tolerance), est, low, high)
    return PIReproduction(
        pi, variant, unit, old.mean, new.mean, est, low, high, _VERDICTS[v.verdict], v.why
    )


def _run_stats(result: Any) -> dict[str, tuple[str, VariantStats | None]]:
    out: dict[str, tuple[str, VariantStats | None]] = {}
    for r in result.results:
        ok = math.isfinite(r.mean) and math.isfinite(r.half_width) and r.n_samples >= 2
        stats = interval_stats(r.mean, r.half_width, r.n_samples, r.confidence) if ok else None
        out[r.name] = (r.unit, stats)
    return out


def pi_reproductions(
    kind: str, original: Any, reproduction: Any, tolerance: float, confidence: float
) -> list[PIReproduction]:
    """Each PI (each variant's, in a comparison) of the original against the
    reproduction."""
    rows: list[PIReproduction] = []
    if kind == "order":
        return order_reproductions(original, reproduction, tolerance, confidence)
    if kind == "run":
        old, new = _run_stats(original), _run_stats(reproduction)
        for name, (unit, o) in old.items():
            n = new.get(name, (unit, None))[1]
            gone = "the original" if o is None else "the reproduction"
            rows.append(
                _judge(name, None, unit, n, o, tolerance, confidence, f"{gone} has no interval")
            )
        return rows
    news = {c.name: c for c in reproduction.comparisons}
    for c in original.comparisons:
        nc = news.get(c.name)
        for variant in c.ranking.order:
            o = c.ranking.variants.get(variant)
            n = None if nc is None else nc.ranking.variants.get(variant)
            why = (
                f"the original: {c.ranking.problems.get(variant, 'no valid samples')}"
                if o is None
                else "the reproduction: "
                + (
                    "no valid samples"
                    if nc is None
                    else nc.ranking.problems.get(variant, "no valid samples")
                )
            )
            rows.append(_judge(c.name, variant, c.unit, n, o, tolerance, confidence, why))
    return rows


def setting_values(
    trials: Sequence[TrialRecord], pis: Sequence[str]
) -> dict[str, dict[str, list[float]]]:
    """Each setting's (by :func:`~assay.studies.settings.setting_key`) finite readings
    of each PI, from the trials that succeeded."""
    out: dict[str, dict[str, list[float]]] = {}
    for t in trials:
        if not t.ok:
            continue
        for pi in pis:
            v = t.readings.get(pi)
            if v is not None and math.isfinite(float(v)):
                out.setdefault(setting_key(t.setting), {}).setdefault(pi, []).append(float(v))
    return out


def _label(key: str, order: Sequence[str] = ()) -> str:
    """A setting as people write it, its parameters in ``order`` first:
    ``journal_mode=wal, synchronous=full``."""
    setting = json.loads(key)
    names = [k for k in order if k in setting] + [k for k in setting if k not in order]
    return ", ".join(f"{k}={short(setting[k])}" for k in names)


def _geomean(xs: Sequence[float]) -> float:
    logs = [math.log(x) for x in xs if x > 0 and math.isfinite(x)]
    return math.exp(sum(logs) / len(logs)) if logs else math.nan


def paired_reproduction(
    pi: str,
    unit: str,
    old: Mapping[str, Mapping[str, list[float]]],
    new: Mapping[str, Mapping[str, list[float]]],
    tolerance: float,
    confidence: float,
) -> PIReproduction:
    """``pi`` over the settings both measured: the geometric mean of the ratios of
    their means (reproduced / original), its paired t interval of the logs, and the
    verdict as a ``within`` claim."""
    keys = sorted(k for k in old.keys() & new.keys() if old[k].get(pi) and new[k].get(pi))
    a = [sum(old[k][pi]) / len(old[k][pi]) for k in keys]
    b = [sum(new[k][pi]) / len(new[k][pi]) for k in keys]
    what = f"geometric mean over {len(keys)} settings"
    nan = math.nan
    est, low, high = paired_ratio_interval(a, b, confidence) if keys else (nan, nan, nan)
    if not math.isfinite(low):
        why = f"{len(keys)} settings with a positive value in both (2 needed)"
        return PIReproduction(pi, what, unit, nan, nan, est, nan, nan, "undecided", why)
    v = judge_claim(ClaimRule("within", tolerance), est, low, high)
    return PIReproduction(
        pi, what, unit, _geomean(a), _geomean(b), est, low, high, _VERDICTS[v.verdict], v.why
    )


def setting_reproductions(
    pi: str,
    unit: str,
    old: Mapping[str, Mapping[str, list[float]]],
    new: Mapping[str, Mapping[str, list[float]]],
    tolerance: float,
    confidence: float,
    order: Sequence[str] = (),
) -> list[PIReproduction]:
    """Each setting both measured more than once, judged on its own: the ratio of its
    means with Fieller's interval over its repetitions (named with its parameters in
    ``order`` first)."""
    rows: list[PIReproduction] = []
    for key in old.keys() & new.keys():
        o, n = old[key].get(pi, []), new[key].get(pi, [])
        if len(o) < 2 or len(n) < 2:
            continue
        so, sn = (_stats(x) for x in (o, n))
        missing = "no interval"
        label = _label(key, order)
        rows.append(_judge(pi, label, unit, sn, so, tolerance, confidence, missing))
    return sorted(rows, key=lambda r: (r.verdict == "reproduced", str(r.variant)))


def _stats(xs: Sequence[float]) -> VariantStats:
    """The summary of two or more values, as a comparison's variant."""
    return analyze_variant(SummaryStats(statistics.fmean(xs), statistics.variance(xs), len(xs)))


def _run_means(table: Any, test: str) -> list[float]:
    """An order study's test: its mean in each run (the unit its order test decides
    on: positions within a run are not independent)."""
    rows = table[table["test"] == test]
    return [float(x) for x in rows.groupby(["order", "run"])["value"].mean()]


def order_reproductions(
    original: Any, reproduction: Any, tolerance: float, confidence: float
) -> list[PIReproduction]:
    """Each test of an order study: the ratio of its means over its runs (reproduced /
    original) with Fieller's interval over the run means."""
    rows: list[PIReproduction] = []
    for test in dict.fromkeys(original.table["test"]):
        stats = []
        for r in (reproduction, original):
            means = _run_means(r.table, str(test)) if len(r.table) else []
            ok = len(means) >= 2
            stats.append(_stats(means) if ok else None)
        gone = "the original" if stats[1] is None else "the reproduction"
        rows.append(_judge(original.pi, str(test), original.unit, stats[0], stats[1], tolerance,
                           confidence, f"{gone} has fewer than 2 runs of it"))  # fmt: skip
    return rows


def findings(kind: str, original: Any, reproduction: Any) -> list[Finding]:
    """What each study found, side by side: a sweep's significant parameters (those
    that explain at least its ``min_share`` of the variance) and important points; a
    knob study's top-k knobs for each PI; the tests an order study found order matters
    for."""
    if kind == "order":

        def flagged(r: Any) -> str:
            return ", ".join(sorted(r.analysis.flagged)) or "none"

        return [Finding("tests order matters for", flagged(original), flagged(reproduction))]
    if kind == "sweep":
        out = [Finding(
            f"significant parameters (≥ {original.min_share:.0%} of the variance)",
            ", ".join(sorted(original.material)) or "none",
            ", ".join(sorted(reproduction.material)) or "none",
        )]  # fmt: skip

        def points(r: Any) -> str:
            found = sorted(p.describe() for p in (r.analysis.points if r.analysis else ()))
            return "; ".join(found) or "none"

        return [*out, Finding("important points", points(original), points(reproduction))]
    if kind == "knobs":
        new = {r.pi: r for r in reproduction.analysis.rankings}
        return [
            Finding(
                f"top-{r.top_k} knobs for {r.pi}",
                ", ".join(sorted(r.top)),
                ", ".join(sorted(new[r.pi].top)) if r.pi in new else "not ranked",
            )
            for r in original.analysis.rankings
        ]
    return []


def claim_reproductions(original: Any, reproduction: Any) -> list[ClaimReproduction]:
    """Each ``[[claim]]`` of the original judged again on the reproduction."""
    out: list[ClaimReproduction] = []
    new = {c.says: c for c in getattr(reproduction, "claims", [])}
    for c in getattr(original, "claims", []):
        n = new.get(c.says)
        then = c.verdict.verdict
        now = "undecided" if n is None else n.verdict.verdict
        if now == "undecided":
            verdict = "undecided"
        elif then == "undecided":
            verdict = "undecided"  # nothing to reproduce: the original did not decide
        else:
            verdict = "reproduced" if now == then else "not reproduced"
        est = None if n is None else finite_or_none(n.verdict.estimate)
        low = None if n is None else finite_or_none(n.verdict.low)
        high = None if n is None else finite_or_none(n.verdict.high)
        out.append(ClaimReproduction(c.says, then, now, verdict, est, low, high))
    return out


#: The environment keys shown side by side, in this order (others follow).
ENVIRONMENT_ORDER = ("host", "cpu_model", "cpu_count", "cpu_freq_mhz", "memory_bytes",
                     "kernel", "machine", "python", "assay")  # fmt: skip


def environments(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """The two environments' plain values side by side (nested ones, such as the
    executor's, left out), in :data:`ENVIRONMENT_ORDER` first.

    >>> environments({"host": "a", "python": "3.11"}, {"host": "b", "python": "3.11"})
    [('host', 'a', 'b'), ('python', '3.11', '3.11')]
    """
    keys = [k for k in ENVIRONMENT_ORDER if k in old or k in new]
    keys += sorted((set(old) | set(new)) - set(keys))

    def plain(x: Any) -> bool:
        return x is None or isinstance(x, (str, int, float, bool))

    return [(k, old.get(k), new.get(k)) for k in keys if plain(old.get(k)) and plain(new.get(k))]


def judge_reproduction(
    stored: StoredStudy,
    original: Any,
    reproduction: Any,
    *,
    original_path: Path,
    tolerance: float = DEFAULT_TOLERANCE,
    trials: tuple[Sequence[TrialRecord], Sequence[TrialRecord]] = ((), ()),
) -> ReproduceResult:
    """The reproduction judged against the original (both results as their runners
    give them; a sweep's or knob study's with the trials of each, ``trials``)."""
    confidence = stored.spec.stop.confidence
    sessions: Sequence[Mapping[str, Any]] = stored.sessions
    when = sessions[-1].get("started") if sessions else None
    if stored.kind in PAIRED_KINDS:
        pis, per_setting, warnings = _judge_paired(stored, original, tolerance, trials)
    else:
        pis = pi_reproductions(stored.kind, original, reproduction, tolerance, confidence)
        per_setting, warnings = [], []
    return ReproduceResult(
        study=stored.name,
        kind=stored.kind,
        original_store=str(original_path),
        store=str(reproduction.store),
        tolerance=tolerance,
        confidence=claim_level(confidence),
        pis=pis,
        claims=claim_reproductions(original, reproduction),
        environments=environments(original.environment or {}, reproduction.environment or {}),
        reproduction=reproduction,
        original_when=None if when is None else str(when),
        warnings=warnings,
        settings=per_setting,
        findings=findings(stored.kind, original, reproduction),
    )


def _judge_paired(
    stored: StoredStudy,
    original: Any,
    tolerance: float,
    trials: tuple[Sequence[TrialRecord], Sequence[TrialRecord]],
) -> tuple[list[PIReproduction], list[PIReproduction], list[str]]:
    """A sweep or knob study judged setting by setting, paired (see the module's
    docstring): its PIs, a sweep's settings one by one, and the warnings."""
    confidence = stored.spec.stop.confidence
    pis = [original.pi] if stored.kind == "sweep" else list(stored.spec.pis)
    old, new = (setting_values(t, [p.name for p in pis]) for t in trials)
    rows = [paired_reproduction(p.name, p.unit, old, new, tolerance, confidence) for p in pis]
    per_setting = (
        setting_reproductions(
            pis[0].name, pis[0].unit, old, new, tolerance, confidence, original.params
        )
        if stored.kind == "sweep"
        else []
    )
    warnings: list[str] = []
    both = len(old.keys() & new.keys())
    if both < len(old):
        warnings.append(
            f"{both} of the original's {len(old)} settings were measured in the reproduction "
            "too: the ratios are over those (a sweep samples settings until its model "
            "predicts; another run may stop at another step)"
        )
    return rows, per_setting, warnings
