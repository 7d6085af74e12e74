"""Running a comparison study (Pilot §III-F): interleaved rounds until the ranking is decided.

Every cycle runs each variant once, in a fresh random order drawn from the study's
seed (``A0 B0 C0``, ``B1 A1 C1``, ...; :func:`assay.designs.compare.cycle_order`).
Each trial is committed to the store as it ends, with ``setting`` naming its variant
and cycle; the seed is recorded in the store, so running the same study again
continues the same schedule where it stopped (mid-cycle included).

After each complete cycle the deciding PI's samples of every variant (readings, or
stable unit readings: the same warm-up handling as ``assay run``) are ranked with
:func:`assay.stats.compare.rank_variants`, and :func:`assay.designs.compare.compare_decision`
says whether every adjacent pair is decided by the study's sequential rule
(``stop.sequential``: by default an always-valid e-value of at least ``1 / alpha``)
and, when asked, every CI narrow enough, or the budget is spent.  In a comparison one *round*
of the budget (``max_rounds``) is one *cycle*: every variant once.
"""

from __future__ import annotations

import math
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from typing_extensions import Unpack

from assay.designs.compare import (
    ALWAYS_VALID_MIN_SAMPLES,
    CompareDecision,
    PIComparison,
    Statistic,
    bounded_words,
    compare_decision,
    compare_pi,
    cycle_order,
    undecided_text,
)
from assay.designs.run_until_ci import INDEPENDENCE_ALPHA, Decision, budget_spent, pi_samples
from assay.execute.overhead import LaunchOverhead
from assay.spec import ClaimSpec, PISpec, Spec, SpecError
from assay.stats.claims import JudgedClaim, judged
from assay.stats.compare import PairDecision, pair_e_value
from assay.stats.drift_bound import block_ratio_bound
from assay.stats.gate import GateVerdict, gate_verdict, regression_gate, with_drift_bound
from assay.store import Store, TrialRecord
from assay.studies.base import (
    AnalysisPace,
    OpenStudy,
    Study,
    StudyError,
    StudyOptions,
    execution_dict,
    execution_fields,
    failure_summary,
    host_warnings,
    open_stored,
    result_header,
    samples_dict,
    stderr_warning,
    watch_report,
)
from assay.studies.run import Segments, round_data
from assay.studies.scan import ScanSummary, scan_summary

#: The key under which a comparison's schedule (seed, order, variants) is stored.
SCHEDULE_KEY = "compare_schedule"


@dataclass
class CompareProgress:
    """What the live display shows after each cycle."""

    cycles: int
    trials: int
    failed: int
    elapsed: float
    comparison: PIComparison | None
    decision: Decision
    mean_cycle_s: float


@dataclass
class CompareResult:
    """Everything a report needs about a finished (or stopped) comparison."""

    study: str
    store: str
    pi: str  # the deciding PI
    comparisons: list[PIComparison]  # the deciding PI first
    decision: Decision
    seed: int | None
    fixed_order: bool
    cycles: int
    trials_total: int
    trials_by_status: dict[str, int] = field(default_factory=dict)
    failures: list[dict[str, Any]] = field(default_factory=list)
    elapsed_s: float = 0.0
    bookkeeping_s_per_trial: float | None = None
    bookkeeping_s_median: float | None = None  # the typical own cost between trials
    launch_overhead: LaunchOverhead | None = None
    environment: dict[str, Any] = field(default_factory=dict)
    resumed_trials: int = 0
    session_wall_s: float | None = None  # this session's wall time (None: not run now)
    session_measured_s: float | None = None  # of which its commands ran
    warnings: list[str] = field(default_factory=list)
    resources: dict[str, Any] | None = None  # the bottleneck watch, by variant
    sources: list[str] = field(default_factory=list)  # --from: the files read
    # on a cluster of several hosts: the deciding PI ranked within each host (a block)
    by_host: dict[str, PIComparison] = field(default_factory=dict)
    variants: list[str] = field(default_factory=list)  # in the order given (file, --from)
    gates: list[GateVerdict] = field(default_factory=list)  # --fail-if-worse, if asked
    scan: ScanSummary | None = None  # variants that differ only in parameter values
    samples: list[dict[str, Any]] = field(default_factory=list)  # by variant and PI
    claims: list[JudgedClaim] = field(default_factory=list)  # [[claim]]: verdicts (#62)

    def as_dict(self) -> dict[str, Any]:
        d = self.decision
        return {
            **result_header("compare"),
            "study": self.study,
            "store": self.store,
            "done": d.done,
            "reason": d.reason,
            "decided": isinstance(d, CompareDecision) and d.decided,
            "undecided": [list(p) for p in getattr(d, "undecided", ())],
            "rounds_left": d.rounds_left,
            "pi": self.pi,
            "comparisons": [comparison_dict(c) for c in self.comparisons],
            "schedule": {"seed": self.seed, "fixed_order": self.fixed_order, "cycles": self.cycles},
            **execution_dict(self),
            "sources": self.sources,
            "by_host": {h: comparison_dict(c) for h, c in self.by_host.items()},
            "gate": [g.as_dict() for g in self.gates],
            "claims": [c.as_dict() for c in self.claims],
            "scan": None if self.scan is None else self.scan.as_dict(),
            "samples": self.samples,
        }

    def gate(self, threshold: float, baseline: str | None = None) -> list[GateVerdict]:
        """``--fail-if-worse``: every other variant against ``baseline`` (default: the
        first given) on the deciding PI; stored in :attr:`gates` and returned.
        ``ValueError`` for an unknown baseline."""
        comp = self.comparisons[0]
        names = self.variants or list(comp.ranking.order)
        base = names[0] if baseline is None else baseline
        if base not in names:
            raise ValueError(f"--baseline {base!r}: no such variant; the variants: {names}")
        stats = comp.ranking.variants
        blocks = comp.ranking.blocks
        verdicts = [
            regression_gate(
                name,
                stats[name],
                base,
                stats[base],
                direction=comp.direction,
                threshold=threshold,
                confidence=comp.ranking.confidence,
                statistic=comp.statistic,
            )
            if name in stats and base in stats
            else gate_verdict(
                name,
                base,
                relative=math.nan,
                low=math.nan,
                high=math.nan,
                direction=comp.direction,
                threshold=threshold,
                why=f"{name if name not in stats else base} has no valid samples",
            )
            for name in names
            if name != base
        ]
        # a gross change decides where an interval is invalid or a drift widened it (#58)
        self.gates = [
            with_drift_bound(
                v,
                block_ratio_bound(blocks[v.candidate], blocks[base])
                if v.candidate in blocks and base in blocks
                else None,
            )
            for v in verdicts
        ]
        return self.gates


def judge_claims(
    claims: Sequence[ClaimSpec],
    comparisons: Sequence[PIComparison],
    confidence: float,
    *,
    always_valid: bool = False,
) -> list[JudgedClaim]:
    """Each ``[[claim]]``'s verdict on its PI's comparison (the first PI by default):
    the ratio of the two variants' means with its interval (:mod:`assay.stats.claims`);
    undecided, saying why, when a variant has no valid samples."""
    by_pi = {c.name: c for c in comparisons}
    out: list[JudgedClaim] = []
    for claim in claims:
        comp = by_pi[claim.pi or comparisons[0].name]
        labels = claim.labels()
        stats = comp.ranking.variants
        gone = next((v for v in labels if v not in stats), "")
        out.append(
            judged(
                claim.says,
                comp.name,
                labels,
                claim.rule,
                stats.get(labels[0]),
                stats.get(labels[1]),
                confidence,
                always_valid=always_valid,
                missing=comp.ranking.problems.get(gone, "no valid samples"),
            )
        )
    return out


def variant_rows(c: PIComparison) -> list[dict[str, Any]]:
    """One dict per variant, best first: estimate, relative difference to the best,
    and the tests against the variant ranked just above (the pair the decision rests on)."""
    r = c.ranking
    rows: list[dict[str, Any]] = []
    for i, name in enumerate(r.order):
        v = r.variants.get(name)
        row: dict[str, Any] = {"rank": i + 1, "variant": name, "unit": c.unit}
        row["direction"] = c.direction
        row["statistic"] = c.statistic
        if v is not None:
            row.update(
                mean=v.mean,
                low=v.ci.low,
                high=v.ci.high,
                half_width=v.ci.half_width,
                relative_half_width=v.ci.relative_half_width,
                confidence=v.ci.confidence,
                n_samples=v.n,
                subsession_size=v.subsession_size,
                n_raw=v.n_raw,
            )
        else:
            row["problem"] = r.problems.get(name, "")
            raw = r.raw.get(name)
            if raw is not None:  # no interval: what the raw samples say (issue #40)
                row.update(
                    raw_median=raw.median,
                    raw_vs=raw.other,
                    raw_relative=raw.relative,
                    raw_mann_whitney_p=raw.mann_whitney_p,
                )
        med = c.medians.get(name)
        if med is not None:
            row.update(median=med.median, median_low=med.low, median_high=med.high)
        to_best = c.to_best.get(name)
        if to_best is not None and to_best.shift is not None:
            # on the median the effect is the Hodges-Lehmann shift, relative to the
            # best's median: a shift of location, not a difference of means
            hl = to_best.shift
            row.update(
                effect="Hodges-Lehmann shift",
                shift_to_best=hl.shift,
                shift_to_best_low=hl.low,
                shift_to_best_high=hl.high,
                relative_to_best=hl.relative,
                relative_to_best_low=hl.rel_low,
                relative_to_best_high=hl.rel_high,
            )
        elif to_best is not None:
            w = to_best.welch
            row.update(
                effect="difference of means",
                relative_to_best=w.relative,
                relative_to_best_low=w.rel_low,
                relative_to_best_high=w.rel_high,
            )
        if i == 0:
            # "best" only against every variant: one without an interval ranks last but
            # is not shown worse (issue #40: the slower of two was called best)
            best = r.decided or (v is not None and not r.problems)
            row["verdict"] = "best" if best else "undecided"
        else:
            pair = r.pairs[i - 1]
            row["verdict"] = pair.status
            if pair.bound is not None and i == 1 and "relative_to_best" not in row:
                row.update(  # no interval: the range of block means that decided (#58)
                    effect="range of block means (holds under drift)",
                    relative_to_best=pair.bound.relative,
                    relative_to_best_low=pair.bound.low,
                    relative_to_best_high=pair.bound.high,
                )
            if pair.comparison is not None:
                comp = pair.comparison
                row.update(
                    vs_previous_welch_p=comp.welch.p_value,
                    vs_previous_mann_whitney_p=comp.mann_whitney_p,
                    vs_previous_hedges_g=abs(comp.hedges_g),
                )
            if not pair.decided:
                row.update(extra_samples_previous=pair.extra_better, extra_samples=pair.extra_worse)
                if pair.note:
                    row["note"] = pair.note
        rows.append(row)
    return rows


def comparison_dict(c: PIComparison) -> dict[str, Any]:
    """The JSON form of one PI's comparison."""
    return {
        "pi": c.name,
        "unit": c.unit,
        "direction": c.direction,
        "statistic": c.statistic,
        "method": c.method,
        "alpha": c.ranking.alpha,
        "confidence": c.ranking.confidence,
        "decided": c.ranking.decided,
        "order": list(c.ranking.order),
        "variants": variant_rows(c),
        "pairs": [pair_dict(p, c.statistic) for p in c.ranking.pairs],
        "samples_per_round": c.samples_per_round,
    }


def pair_dict(p: PairDecision, statistic: str = "mean") -> dict[str, Any]:
    """The JSON form of one adjacent pair: its verdict and the tests behind it."""
    comp = p.comparison
    out: dict[str, Any] = {
        "better": p.better,
        "worse": p.worse,
        "status": p.status,
        "welch_p": None if comp is None else comp.welch.p_value,
        "mann_whitney_p": None if comp is None else comp.mann_whitney_p,
        # always valid: 1 / e_value is a p-value at any stopping time (the mean's rule;
        # the median is decided by Mann-Whitney at the looks)
        "e_value": None if comp is None or statistic != "mean" else pair_e_value(comp),
        "extra_samples_better": p.extra_better,
        "extra_samples_worse": p.extra_worse,
        "note": p.note,
    }
    if p.bound is not None:  # worse / better - 1 from the block ranges (#58)
        out["bound"] = {
            "relative": p.bound.relative,
            "low": p.bound.low,
            "high": p.bound.high,
            "blocks": p.bound.blocks,
            "exchangeable_error_rate": p.bound.error_rate,
        }
    if comp is not None and comp.shift is not None:
        hl = comp.shift
        out["hodges_lehmann"] = {  # better minus worse, relative to worse's median
            "shift": hl.shift,
            "low": hl.low,
            "high": hl.high,
            "relative": hl.relative,
            "relative_low": hl.rel_low,
            "relative_high": hl.rel_high,
            "confidence": hl.confidence,
            "method": hl.method,
        }
    return out


def compare_trials(
    spec: Spec,
    pi: PISpec,
    trials: list[TrialRecord],
    segments: Segments | None = None,
    *,
    plan: bool = True,
) -> PIComparison:
    """Rank the variants of a comparison study on one PI from its stored trials
    (``plan``: with the extra samples undecided pairs need, see :func:`compare_pi`)."""
    cache: Segments = {} if segments is None else segments
    samples: dict[str, Any] = {}
    per_round: dict[str, float] = {}
    method = "readings, subsession t-interval"
    for v in spec.variants:
        ok = [t for t in trials if t.ok and t.setting.get("variant") == v.name]
        got = pi_samples(pi, round_data(pi, ok, spec.stop.warmup_removal, cache), spec.stop)
        samples[v.name] = got.samples
        per_round[v.name] = got.samples.size / got.rounds_used if got.rounds_used else 1.0
        method = got.method
    if pi.statistic == "median":
        method = method.replace(
            "subsession t-interval",
            "subsession-merged (the median's tests run on the subsession means, so "
            "autocorrelated readings stay valid), medians with order-statistic CIs",
        )
        tests = "Hodges-Lehmann shift with its distribution-free (Moses) CI, Mann-Whitney U decides"
    else:
        method = method.replace("subsession t-interval", "subsession t-intervals")
        tests = "Welch's t-test, Mann-Whitney U, Hedges' g"
    return compare_pi(
        pi.name,
        pi.unit,
        pi.direction,
        samples,
        alpha=spec.stop.alpha,
        confidence=spec.stop.confidence,
        max_autocorrelation=spec.stop.max_autocorrelation,
        method=f"{method}, interleaved rounds; {tests}",
        samples_per_round=per_round,
        correct_residual=spec.stop.residual_correction,
        statistic=pi.statistic,
        independence_alpha=small_n_rule(spec, pi),
        plan=plan,
        sequential=True,
    )


def small_n_rule(spec: Spec, pi: PISpec) -> float | None:
    """The merging rule of the always-valid means comparison: no merging without
    significant autocorrelation, and the residual correction floored at phi's upper
    bound (:func:`assay.stats.autocorr.subsession_interval`), so that it can decide from
    3 readings a variant.  Either half alone is not enough: Pilot's merging finds no
    subsession size in a few i.i.d. readings (a 2x difference took 11 cycles), and the
    rule without the bound let AR(1) 0.8 readings that look independent declare A/A
    differences (13.5% at alpha 0.01; bench/RESULTS.md, #17/#21).  Other rules and
    the median keep Pilot's merging, as measured."""
    s = spec.stop
    if s.sequential != "always-valid" or not s.residual_correction or pi.statistic != "mean":
        return None
    return INDEPENDENCE_ALPHA


def stored_cycles(trials: Sequence[TrialRecord], variants: int) -> tuple[dict[int, int], int]:
    """How many trials of each cycle are stored (each cycle's first ones), and the
    first cycle with none after the last stored one (the frontier)."""
    stored: dict[int, int] = {}
    for t in trials:
        stored[t.seq // variants] = stored.get(t.seq // variants, 0) + 1
    return stored, max(stored) + 1 if stored else 0


def host_comparisons(spec: Spec, pi: PISpec, trials: list[TrialRecord]) -> dict[str, PIComparison]:
    """The variants ranked within each host that ran trials (each cycle runs on one
    host, so a host is a block of whole cycles); empty on one host."""
    hosts = sorted({t.host for t in trials if t.ok})
    if len(hosts) < 2:
        return {}
    return {h: compare_trials(spec, pi, [t for t in trials if t.host == h]) for h in hosts}


def host_disagreement(by_host: dict[str, PIComparison]) -> str | None:
    """A warning when hosts whose rankings are decided rank the variants differently.

    The pooled ranking then averages over a host effect: say which host ranks how.
    """
    decided = {h: c.ranking.order for h, c in by_host.items() if c.ranking.decided}
    if len(set(decided.values())) < 2:
        return None
    ranks = "; ".join(f"{h}: {' > '.join(order)}" for h, order in decided.items())
    return (
        f"the hosts rank the variants differently ({ranks}): the pooled ranking mixes "
        "machines; compare on identical hosts, or per host"
    )


#: Trials of one variant, every one failed, after which a comparison stops: a command
#: that cannot start (a typo, a missing file) will not start on cycle 1,000 either.
DEAD_AFTER = 5


def dead_variant(trials: Sequence[TrialRecord], names: Sequence[str]) -> str | None:
    """Why a comparison stops when one variant has failed every one of its (at least
    :data:`DEAD_AFTER`) trials, with that variant's error; None otherwise."""
    for name in names:
        mine = [t for t in trials if t.setting.get("variant") == name]
        if len(mine) >= DEAD_AFTER and not any(t.ok for t in mine):
            return (
                f"stopped early: variant {name} failed all of its {len(mine)} trials "
                f"({failure_summary(mine)})"
            )
    return None


def decide_comparison(
    comp: PIComparison,
    spec: Spec,
    *,
    cycles: int,
    trials: int,
    failed: int,
    elapsed: float,
) -> Decision:
    """Done when the ranking is decided (and CIs narrow enough, if required), the budget
    is spent, or most trials fail; every variant needs ``min_samples`` merged samples
    (with the always-valid rule only when ``min_samples`` is changed from its default:
    its e-values ask for as many samples as the difference needs, from
    :data:`~assay.designs.compare.ALWAYS_VALID_MIN_SAMPLES` on)."""
    stop = spec.stop
    if trials >= 5 and failed / trials > stop.max_failures:
        return Decision(True, f"stopped early: {failed} of {trials} trials failed")
    ranking = comp.ranking
    need = stop.min_samples
    # (a study file's override dumps every field, so "changed" is read off the value)
    # (the median always stops at the looks: min_samples keeps its meaning there)
    if (
        stop.sequential == "always-valid"
        and comp.statistic == "mean"
        and need == type(stop).model_fields["min_samples"].default
    ):
        need = ALWAYS_VALID_MIN_SAMPLES
    short = [v for v in ranking.order if v not in ranking.variants or ranking.variants[v].n < need]
    budget = cycles >= stop.max_rounds or elapsed >= stop.max_time
    if short and not budget:
        return CompareDecision(False, f"collecting: every variant needs {need} samples", None)
    # min_rounds counts cycles here only when it is set (--runs, --min-rounds): a 2x gap
    # is decided in 6-8 cycles, fewer than run's default of 10
    asked = (
        stop.min_rounds if stop.min_rounds != type(stop).model_fields["min_rounds"].default else 0
    )
    if cycles < asked and not budget:
        return CompareDecision(False, f"collecting: {asked} cycles asked", None)
    ci_met = None
    if stop.require_ci_width:
        ci_met = (
            all(v.ci.relative_half_width <= stop.ci_width for v in ranking.variants.values())
            and not ranking.problems
        )
    return compare_decision(
        ranking,
        ci_met,
        cycles,
        max_rounds=stop.max_rounds,
        elapsed=elapsed,
        max_time=stop.max_time,
        samples_per_round=comp.samples_per_round,
        sequential=stop.sequential,
        statistic=comp.statistic,
    )


def claims_decision(
    ranking: Decision, claims: Sequence[JudgedClaim], budget: str | None
) -> CompareDecision:
    """``[stop] until = "claims"``: done when every claim holds or fails (the ranking's
    own decision then only says how its pairs stand), or when the ``budget`` is spent
    (:func:`~assay.designs.run_until_ci.budget_spent`'s reason; None while it lasts)."""
    open_ = [c.says for c in claims if c.verdict.verdict == "undecided"]
    decided = getattr(ranking, "decided", False)
    pairs = getattr(ranking, "undecided", ())
    if not open_:
        counts = {v: sum(c.verdict.verdict == v for c in claims) for v in ("holds", "fails")}
        # "1 holds", "2 hold"
        said = ", ".join(f"{n} {v if n == 1 else v[:-1]}" for v, n in counts.items() if n)
        return CompareDecision(True, f"claims decided: {said}", 0, decided=decided, undecided=pairs)
    if budget is not None:
        return CompareDecision(
            True,
            f"{budget}; claims still undecided: {'; '.join(open_)}",
            None,
            decided=decided,
            undecided=pairs,
        )
    return CompareDecision(
        False, f"running: {len(open_)} claim(s) undecided", None, decided=decided, undecided=pairs
    )


class CompareRunner(Study):
    """Runs a comparison study to its stopping rule: trial execution, store, setup,
    reset and teardown are :class:`~assay.studies.base.Study`'s; the schedule (one
    batch per cycle) and the decision are the comparison's."""

    def __init__(
        self,
        spec: Spec,
        store_path: Path,
        *,
        pi: str | None = None,
        seed: int | None = None,
        fixed_order: bool | None = None,
        on_compare_progress: Callable[[CompareProgress], None] | None = None,
        **options: Unpack[StudyOptions],
    ) -> None:
        super().__init__(spec, store_path, **options)
        if len(spec.variants) < 2:
            raise ValueError(f"{spec.source_path}: a comparison needs at least two variants")
        self.pi = spec.pi_named(pi)
        self.seed = seed
        self.fixed_order = fixed_order
        self.on_compare_progress = on_compare_progress

    def _schedule(self, st: OpenStudy) -> tuple[int, bool]:
        """The seed and order rule: recorded in the store, so a resumed study keeps them."""
        names = [v.name for v in self.spec.variants]
        stored = st.store.study_value(st.study_id, SCHEDULE_KEY)
        if stored is None:
            seed = self.seed if self.seed is not None else secrets.randbelow(2**31)
            fixed = bool(self.fixed_order)
            value = {"seed": seed, "fixed_order": fixed, "variants": names}
            st.store.set_study_value(st.study_id, SCHEDULE_KEY, value)
            return seed, fixed
        seed, fixed = int(stored["seed"]), bool(stored["fixed_order"])
        clash = []
        if self.seed is not None and self.seed != seed:
            clash.append(f"--seed {seed}")
        if self.fixed_order is not None and self.fixed_order != fixed:
            clash.append("--fixed-order" if fixed else "a random order")
        if clash:
            raise StudyError(
                f"study '{self.spec.study.name}' was started with {' and '.join(clash)}; "
                "resume it with the same schedule, or pass --fresh to start again"
            )
        return seed, fixed

    def _check_stored(self, trials: list[TrialRecord], seed: int, fixed: bool) -> None:
        """Every stored trial holds its place in the schedule (cycle = seq // variants),
        and each cycle's stored trials are its first ones (cycles may finish out of order
        on a cluster)."""
        names = [v.name for v in self.spec.variants]
        n = len(names)
        done: dict[int, list[int]] = {}
        for t in trials:
            cycle, pos = divmod(t.seq, n)
            want = cycle_order(names, seed, cycle, fixed)[pos]
            if t.run != 0 or t.seq < 0 or t.setting.get("variant") != want:
                raise StudyError(
                    f"{self.store_path}: stored trial {t.seq} ({t.setting.get('variant')!r}) "
                    f"does not follow this comparison's schedule (expected {want!r} at "
                    f"position {t.seq}); pass --fresh to start again"
                )
            done.setdefault(cycle, []).append(pos)
        for cycle, positions in done.items():
            if sorted(positions) != list(range(len(positions))):
                raise StudyError(
                    f"{self.store_path}: cycle {cycle} has stored trials at positions "
                    f"{sorted(positions)}, not its first {len(positions)}; pass --fresh to "
                    "start again"
                )

    def run(self) -> CompareResult:
        leftover = self._stop_leftover()
        with Store(self.store_path) as store:
            st = self._open(store)
            seed, fixed = self._schedule(st)
            self._check_stored(st.trials, seed, fixed)
            decision = self._with_setup(lambda: self._loop_cycles(st, seed, fixed))
            result = self._compare_result(st, decision, seed, fixed)
            result.warnings[:0] = [*([leftover] if leftover else []), *self.step_notes]
            store.end_session(st.session, result.as_dict())
            return result

    def stored(self) -> CompareResult:
        """The comparison as stored, ranked and decided as at the end of :meth:`run`
        (its schedule from the store), without running anything or writing to the store."""
        with Store(self.store_path, read_only=True) as store:
            st = open_stored(store, self.spec.study.name)
            schedule = store.study_value(st.study_id, SCHEDULE_KEY) or {}
            seed, fixed = int(schedule.get("seed", 0)), bool(schedule.get("fixed_order"))
            n = len(self.spec.variants)
            stored, frontier = stored_cycles(st.trials, n)
            complete = [c for c in range(frontier) if stored.get(c, 0) == n]
            decision: Decision
            if len(complete) == frontier > 0:
                comp = compare_trials(self.spec, self.pi, st.trials)
                decision = self._decide(comp, st.trials, frontier)
            else:
                decision = Decision(
                    False, f"{len(complete)} of {frontier} cycles complete: not decided yet"
                )
            return self._compare_result(st, decision, seed, fixed)

    def _decide(self, comp: PIComparison, trials: list[TrialRecord], cycles: int) -> Decision:
        dead = dead_variant(trials, [v.name for v in self.spec.variants])
        if dead is not None:
            return Decision(True, dead)
        failed, elapsed = self._state(trials)
        decision = decide_comparison(
            comp, self.spec, cycles=cycles, trials=len(trials), failed=failed, elapsed=elapsed
        )
        if self.spec.stop.until != "claims" or decision.reason.startswith(
            ("stopped early", "collecting")
        ):
            return decision
        stop = self.spec.stop
        budget = budget_spent(cycles, stop.max_rounds, elapsed, stop.max_time)
        return claims_decision(decision, self._judge(comp, trials), budget)

    def _judge(self, comp: PIComparison, trials: list[TrialRecord]) -> list[JudgedClaim]:
        """The claims on the data so far: with ``until = "claims"`` on their always-valid
        intervals (the study stops on them), else on the fixed-look ones."""
        named = {c.pi for c in self.spec.claims} - {None, comp.name}
        comps = [comp] + [
            compare_trials(self.spec, p, trials) for p in self.spec.pis if p.name in named
        ]
        return judge_claims(
            self.spec.claims,
            comps,
            self.spec.stop.confidence,
            always_valid=self.spec.stop.until == "claims",
        )

    def _state(self, trials: list[TrialRecord]) -> tuple[int, float]:
        failed = sum(1 for t in trials if not t.ok)
        return failed, sum(t.duration or 0.0 for t in trials)

    def _loop_cycles(self, st: OpenStudy, seed: int, fixed: bool) -> Decision:
        spec = self.spec
        names = [v.name for v in spec.variants]
        by_name = {v.name: v for v in spec.variants}
        n = len(names)
        segments: Segments = {}
        # the always-valid rule may look after any cycle or skip any (its e-values hold
        # at every stopping time): on short commands it analyses at a pace
        paced = spec.stop.sequential == "always-valid" and self.pi.statistic == "mean"
        pace = AnalysisPace()
        while True:
            stored, frontier = stored_cycles(st.trials, n)
            if all(stored.get(c, 0) == n for c in range(frontier)) and frontier > 0:
                failed, elapsed = self._state(st.trials)
                dead = dead_variant(st.trials, names) if failed >= DEAD_AFTER else None
                if dead is not None:  # at once, whatever the pace: nothing to analyse
                    return Decision(True, dead)
                skip = (
                    paced
                    and not pace.due(st.measured_now)
                    and frontier < spec.stop.max_rounds
                    and elapsed < spec.stop.max_time
                )
            else:
                skip = True
            if not skip:
                started = time.perf_counter()
                # the always-valid rule judges the pairs again by their e-values, with its
                # own estimate of the samples they need: Welch's is left to the result
                comp = compare_trials(spec, self.pi, st.trials, segments, plan=not paced)
                decision = self._decide(comp, st.trials, frontier)
                if self.on_compare_progress is not None:
                    self.on_compare_progress(
                        CompareProgress(
                            frontier,
                            len(st.trials),
                            failed,
                            elapsed,
                            comp,
                            decision,
                            elapsed / frontier,
                        )
                    )
                if decision.done:
                    return decision
                pace.analysed(time.perf_counter() - started, measured=st.measured_now)
            # the cycles to run: unfinished ones first, then new ones, one per trial slot;
            # each cycle is a block (its variants in order on one host)
            # (no new cycle beside an unfinished one on one slot: an uninterrupted study
            # may decide after any cycle, and the budget counts the unfinished ones too)
            unfinished = [c for c in range(frontier) if stored.get(c, 0) < n]
            room = max(0 if unfinished else 1, self.executor.slots() - len(unfinished))
            room = min(room, max(0, spec.stop.max_rounds - frontier))
            cycles = unfinished + list(range(frontier, frontier + room))
            if not cycles:  # the budget is spent (the decision above said so)
                comp = compare_trials(spec, self.pi, st.trials, segments)
                return self._decide(comp, st.trials, frontier)
            batch = []
            for cycle in cycles:
                order = cycle_order(names, seed, cycle, fixed)
                for pos in range(stored.get(cycle, 0), n):
                    v = by_name[order[pos]]
                    values: dict[str, object] = dict(spec.variant_params(v))
                    setting = {**values, "variant": v.name, "cycle": cycle}
                    batch.append(
                        self.request(
                            cycle * n + pos,
                            values,
                            command=v.command,
                            env=v.env,
                            setting=setting,
                            block=cycle,
                        )
                    )
            for _ in self.measure(st, batch):
                pass

    def _compare_result(
        self, st: OpenStudy, decision: Decision, seed: int, fixed: bool
    ) -> CompareResult:
        trials = st.trials
        pis = [self.pi, *(p for p in self.spec.pis if p is not self.pi)]
        comparisons = [compare_trials(self.spec, p, trials) for p in pis]
        warnings = [
            f"{c.name}: {name}: {why}"
            for c in comparisons
            for name, why in c.ranking.problems.items()
        ]
        if any(p.mean == "harmonic" for p in pis):
            warnings.append(
                "harmonic-mean PIs are compared on the arithmetic mean of their readings"
            )
        by_host = host_comparisons(self.spec, self.pi, trials)
        disagreement = host_disagreement(by_host)
        if disagreement is not None:
            warnings.append(f"{self.pi.name}: {disagreement}")
        by_variant: dict[str, Any] = {}
        for v in self.spec.variants:
            mine = [t for t in trials if t.setting.get("variant") == v.name]
            warnings.extend(host_warnings(self.spec, mine, label=f"{v.name}: "))
            warnings.extend(stderr_warning(mine, label=f"{v.name}: "))
            watch, res = watch_report(self.spec, mine, label=f"{v.name}: ")
            warnings.extend(watch)
            if res is not None:
                by_variant[v.name] = res
        return CompareResult(
            study=self.spec.study.name,
            store=str(self.store_path),
            pi=self.pi.name,
            comparisons=comparisons,
            decision=decision,
            seed=seed,
            fixed_order=fixed,
            cycles=len(trials) // len(self.spec.variants),
            variants=[v.name for v in self.spec.variants],
            by_host=by_host,
            warnings=warnings,
            resources=by_variant or None,
            scan=scan_summary(self.spec, comparisons[0]),
            samples=samples_dict(pis, trials, "variant"),
            claims=self._judge(comparisons[0], trials) if self.spec.claims else [],
            **execution_fields(st),
        )


def compare_files(
    files: Sequence[str],
    *,
    pi: str | None = None,
    alpha: float = 0.01,
    confidence: float = 0.95,
    statistic: Statistic = "mean",
    fmt: str | None = None,
) -> CompareResult:
    """``assay compare --from``: rank results measured elsewhere (the formats of
    :mod:`assay.importers.results`, detected, or ``fmt``; no execution);
    ``statistic="median"`` ranks on medians (Mann–Whitney, the Hodges–Lehmann shift;
    summaries cannot be).  :class:`~assay.spec.SpecError` (or the reader's ValueError)
    says why the files cannot be compared; a variant known only by a summary is a
    warning."""
    from assay.importers.results import read_result_files

    files = list(files)
    results = read_result_files(files, pi=pi, fmt=fmt)
    if len(results) < 2:
        raise SpecError(
            f"--from: found {len(results)} result(s) in {', '.join(files)}; "
            "a comparison needs at least two"
        )
    for attr in ("unit", "direction"):
        kinds = {getattr(r, attr) for r in results}
        if len(kinds) > 1:
            raise SpecError(
                f"--from: the results differ in {attr} ({', '.join(sorted(kinds))}); "
                "compare results of the same PI (pick one with --pi)"
            )
    first = results[0]
    pi_name = pi or first.pi or "wall_time"
    formats = sorted({r.format for r in results})
    summaries = any(r.samples is None for r in results)
    method = (
        f"imported ({', '.join(formats)}): samples subsession-merged"
        + (" where their autocorrelation is significant" if statistic == "mean" else "")
        + (
            "; summaries where no samples were given (mean and variance: Welch's test only)"
            if summaries
            else ""
        )
        + (
            "; medians, Hodges-Lehmann shift with its distribution-free (Moses) CI, "
            "Mann-Whitney U decides"
            if statistic == "median"
            else "; Welch's t-test, Mann-Whitney U (samples only), Hedges' g"
        )
    )
    comp = compare_pi(
        pi_name,
        first.unit,
        first.direction,
        {r.name: r.data for r in results},
        alpha=alpha,
        confidence=confidence,
        method=method,
        statistic=statistic,
        # the live comparison's rule for small samples (small_n_rule): raw samples must
        # never decide less than a summary of them (#58: Pilot's merging decided 85 of
        # 300 2x pairs of 10 samples, this rule 273; bench/bench_drift_decision.py)
        independence_alpha=INDEPENDENCE_ALPHA if statistic == "mean" else None,
    )
    r = comp.ranking
    median = statistic == "median"
    if r.decided:
        rule = "Mann-Whitney p" if median else "CI-separated or Welch p"
        reason = f"decided: every adjacent pair is {rule} < {r.alpha:g}{bounded_words(r)}"
    else:
        reason = (
            f"not decided from these results; {undecided_text(r, 'Noether' if median else 'Welch')}"
        )
    decision = CompareDecision(
        True,
        reason,
        0 if r.decided else None,
        decided=r.decided,
        undecided=tuple((p.better, p.worse) for p in r.undecided),
    )
    return CompareResult(
        variants=[r.name for r in results],
        study=f"compare --from {' '.join(Path(f).name for f in files)}",
        store="",
        pi=pi_name,
        comparisons=[comp],
        decision=decision,
        seed=None,
        fixed_order=False,
        cycles=0,
        trials_total=0,
        sources=files,
        warnings=[f"{name}: {why}" for name, why in r.problems.items()]
        + [f"{x.name}: {x.note}" for x in results if x.note],
    )
