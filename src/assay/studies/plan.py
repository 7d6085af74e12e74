"""``assay plan``: what a study will do, before it does it (issue #62, part 2).

From the study file alone: the trials each design runs (a run's rounds, a comparison's
cycles, a sweep's settings times repetitions, a knob study's samples, an order
experiment's runs), bounded by the study's budget; the hosts and roles it needs.  The
time and the disk come from how long a trial takes and how much of the store it fills:
from an earlier store of the same study when there is one (its stored trials), else
from a short pilot (a few trials run for real, in a private temporary store: said
so), or not at all (``pilot=0``; a study on a cluster is not piloted).

The counts are what the designs are: exact for a knob study or an order experiment,
a range for the designs that stop on their own (a run between ``min_rounds`` and
``max_rounds``, a comparison between its first possible stop and its cycle budget,
a sweep between its first step and the whole space); a run's pilot also estimates the
rounds its CI width needs from the readings' spread.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.spec import Spec
from assay.studies.base import study_kind
from assay.values import plain

#: Trials a pilot runs (per variant of a comparison, per setting of a sweep).
PILOT_TRIALS = 3
#: Assay's own cost between two trials of a long study (bench/RESULTS.md: 0.85 ms
#: typical for a no-op, more with the bottleneck watch and analyses).
OWN_COST_S = 0.002
_PILOTED = {"compare": "variants", "order": "tests", "sweep": "settings"}


@dataclass(frozen=True)
class TrialCounts:
    """How many trials a study runs: at least, typically (None: unknown before it
    runs), at most (its trial budget), and how the counts come about."""

    least: int
    most: int
    how: str
    typical: int | None = None


@dataclass
class Plan:
    """What :func:`plan_study` found."""

    study: str
    kind: str
    source: str
    counts: TrialCounts
    hosts: list[str]
    max_time_s: float | None  # the study's time budget (measured time), None without
    per_trial_s: float | None = None  # wall seconds a trial takes, own cost included
    bytes_per_trial: float | None = None
    timing_from: str = ""  # "an earlier store (N trials)", "a pilot of N trials", why not
    notes: list[str] = field(default_factory=list)

    def within_budget(self, trials: int | None) -> int | None:
        """``trials``, or the fewer its time budget lets run at this pace (the budget
        counts measured time, which the time per trial here also holds)."""
        if trials is None or self.per_trial_s is None or self.max_time_s is None:
            return trials
        return min(trials, max(1, math.ceil(self.max_time_s / self.per_trial_s)))

    def seconds(self, trials: int | None) -> float | None:
        """The wall time ``trials`` take (None: unknown)."""
        if trials is None or self.per_trial_s is None:
            return None
        return trials * self.per_trial_s

    def as_dict(self) -> dict[str, Any]:
        c = self.counts
        most = self.within_budget(c.most)

        def disk(n: int | None) -> float | None:
            return None if n is None or self.bytes_per_trial is None else n * self.bytes_per_trial

        return {
            "kind": "plan",
            "study": self.study,
            "planned_kind": self.kind,
            "source": self.source,
            "trials": {
                "least": c.least,
                "typical": c.typical,
                "most": c.most,
                "most_in_budget": most,
                "how": c.how,
            },
            "hosts": self.hosts,
            "max_time_s": self.max_time_s,
            "per_trial_s": self.per_trial_s,
            "timing_from": self.timing_from,
            "seconds": {
                "least": self.seconds(c.least),
                "typical": self.seconds(c.typical),
                "most": self.seconds(most),
            },
            "store_bytes": {"least": disk(c.least), "typical": disk(c.typical), "most": disk(most)},
            "notes": self.notes,
        }


def trial_counts(spec: Spec) -> TrialCounts:
    """The trials of ``spec``'s design (see the module).

    >>> from assay.spec import parse_spec_text
    >>> s = parse_spec_text('[study]\\nname="x"\\n[benchmark]\\ncommand=["true"]\\n')
    >>> c = trial_counts(s)
    >>> c.least, c.most
    (10, 1000)
    """
    kind = study_kind(spec)
    stop = spec.stop
    if kind == "compare":
        from assay.designs.compare import ALWAYS_VALID_MIN_SAMPLES

        v = len(spec.variants)
        first = ALWAYS_VALID_MIN_SAMPLES if stop.sequential == "always-valid" else 10
        return TrialCounts(
            v * first,
            v * stop.max_rounds,
            f"{v} variants a cycle; it stops once its "
            + ("claims are" if stop.until == "claims" else "ranking is")
            + f" decided (a 2x gap in about 6 cycles, a 20% one in 13-76), at most "
            f"{stop.max_rounds} cycles",
        )
    if kind == "sweep":
        from assay.designs.sweep import IncrementalSampling

        assert spec.sweep is not None
        sw = spec.sweep
        r = sw.repetitions
        design = IncrementalSampling(
            sw.space().settings(),
            start=sw.start,
            step=sw.step,
            splits=sw.splits,
            model=sw.model,
            budget=sw.max_settings,
        )
        size, most = design.n_candidates, design.max_settings
        if design.whole_grid:
            n = size * r
            return TrialCounts(
                n, n, f"the {size} settings measured whole (a small grid), each {r} times", n
            )
        first = min(most, max(1, math.ceil(sw.start * size - 1e-9)))
        # no stop before the held-out splits can judge a model
        judged = min(most, max(first, design.min_settings or first))
        need = f" (the splits judge a model from {judged} settings)" if judged > first else ""
        return TrialCounts(
            judged * r,
            most * r,
            f"{first} settings first, {design.settings_per_step} more a step, each {r} times, "
            f"until the held-out R² reaches {sw.r2:g}{need}; at most {most} of the {size} "
            "settings",
        )
    if kind == "knobs":
        k = spec.knobs_config
        val = k.validation_samples or max(10, k.samples // 4)  # as KnobsRunner draws them
        defaults = {knob.name: knob.default for knob in spec.knob_specs}
        claimed = {  # the settings the claims name, the other knobs at their defaults
            json.dumps({**defaults, **side}, sort_keys=True)
            for c in spec.claims
            for side in c.ratio
            if isinstance(side, dict)
        }
        extra = len(claimed) * k.claim_repetitions
        said = (
            f", then the {len(claimed)} settings the claims name, each {k.claim_repetitions} times"
            if claimed
            else ""
        )
        return TrialCounts(
            k.samples + extra,
            k.samples + val + extra,
            f"{k.samples} Latin Hypercube samples, then up to {val} top-k validation samples "
            f"(fewer when the top knobs have fewer distinct settings){said}",
            k.samples + val + extra,
        )
    if kind == "order":
        from assay.spec import OrderSpec

        o = spec.order or OrderSpec()
        runs = (o.fixed_runs or o.runs) + (o.random_runs or o.runs)
        n = runs * len(spec.tests) * o.repetitions
        return TrialCounts(
            n, n, f"{runs} runs of {len(spec.tests)} tests, each test {o.repetitions} times", n
        )
    return TrialCounts(
        stop.min_rounds,
        stop.max_rounds,
        f"rounds until every CI is within ±{stop.ci_width:.0%} (at least {stop.min_rounds}, "
        f"at most {stop.max_rounds})",
    )


def extras_missing(spec: Spec, kind: str) -> list[str]:
    """The optional packages the study needs and this Python lacks, each as the
    one-line error the study would stop with (found without importing them)."""
    from assay.extras import missing_extra

    needs: list[tuple[str, str, str]] = []
    if kind == "knobs":
        needs.append(("sklearn", "models", "ranking knobs with random forests"))
    if kind == "sweep" and spec.sweep is not None and spec.sweep.model in ("mlp", "linear"):
        needs.append(("sklearn", "models", f"the sweep's {spec.sweep.model} model"))
    if spec.cluster is not None:
        needs.append(("distributed", "cluster", "a [cluster]"))
        needs.append(("asyncssh", "cluster", "a [cluster] over SSH"))
    said = (missing_extra(*n) for n in needs)
    return [f"{s} (the study would stop with this before its first trial)" for s in said if s]


def hosts_needed(spec: Spec) -> list[str]:
    """The machines a study runs on, in words: this machine, or its cluster's roles (and
    what its ``[[fault]]``s do to them)."""
    cluster = spec.cluster
    if cluster is None:
        return ["this machine, one trial at a time"]
    out = []
    if cluster.roles:
        for role, hosts in cluster.roles.items():
            out.append(f"role {role}: {len(hosts)} host(s) ({', '.join(hosts)})")
        if cluster.groups > 1:
            out.append(f"{cluster.groups} groups of hosts run trials in parallel")
    else:
        out.append(f"{len(cluster.hosts)} host(s) over SSH ({', '.join(cluster.hosts)})")
    for f in spec.faults:
        where = "every host" if f.host == "all" else f"host {f.host}"
        until = f"for {f.duration:g} s" if f.duration is not None else "until the trial ends"
        which = f" of variant(s) {', '.join(f.variants)}" if f.variants else ""
        out.append(
            f"fault: {f.action} on {where} of role {f.role}, {f.at:g} s into every "
            f"trial{which}, {until}"
        )
    return out


def time_budget(spec: Spec, kind: str) -> float | None:
    """The study's time budget in measured seconds (None: none)."""
    if kind == "sweep" and spec.sweep is not None:
        return spec.sweep.max_time
    if kind in ("run", "compare"):
        return spec.stop.max_time
    return None


def from_store(spec: Spec, store: Path) -> tuple[float, float, int] | None:
    """(wall seconds a trial, store bytes a trial, trials) of the study's earlier trials
    in ``store``; None when it holds none of this study."""
    from assay.store import Store

    if not store.exists():
        return None
    with Store(store, read_only=True) as db:
        if db.find_study(spec.study.name) is None:
            return None
        from assay.studies.stored import read_stored

        stored, trials, _ = read_stored(db, spec.study.name)
    if not trials:
        return None
    walls = [s for s in (_session_wall(x) for x in stored.sessions) if s is not None]
    measured = sum(t.duration or 0.0 for t in trials)
    own = sum(t.bookkeeping_s or 0.0 for t in trials)
    per = (sum(walls) if walls else measured + own) / len(trials)
    size = sum(p.stat().st_size for p in store.parent.glob(store.name + "*") if p.is_file())
    return per, size / len(trials), len(trials)


def _session_wall(session: dict[str, Any]) -> float | None:
    result = session.get("result") or {}
    wall = (result.get("session") or {}).get("wall_s") if isinstance(result, dict) else None
    return float(wall) if isinstance(wall, (int, float)) and wall > 0 else None


def pilot_spec(spec: Spec, kind: str, trials: int) -> list[Spec]:
    """The run studies a pilot measures: the study itself (a run), each variant (a
    comparison), or a first, a middle and a last setting (a sweep), ``trials`` rounds
    each; an order experiment's tests as a comparison's variants; a knob study at its
    knobs' defaults."""
    stop = spec.stop.model_copy(
        update={"min_rounds": trials, "max_rounds": trials, "warmup_rounds": 0}
    )
    base = {"stop": stop, "variants": [], "claims": [], "sweep": None, "tests": [], "order": None}
    if kind == "run":
        return [spec.model_copy(update={"stop": stop})]
    if kind in ("compare", "order"):
        out = []
        for v in spec.variants if kind == "compare" else spec.tests:
            bench = spec.benchmark
            if v.command is not None:
                bench = bench.model_copy(update={"command": v.command})
            if v.env:
                bench = bench.model_copy(update={"env": {**bench.env, **v.env}})
            params = {**spec.params, **v.params}
            out.append(spec.model_copy(update={**base, "benchmark": bench, "params": params}))
        return out
    if kind == "knobs":  # the knobs at their defaults
        defaults = {k.name: k.default for k in spec.knob_specs}
        update = {**base, "knob_specs": [], "knobs_options": None}
        return [spec.model_copy(update={**update, "params": {**spec.params, **defaults}})]
    if kind == "sweep" and spec.sweep is not None:
        space = spec.sweep.space().settings()
        picks = sorted({0, len(space) // 2, len(space) - 1})
        out = []
        for i in picks:
            row = {k: plain(v) for k, v in space.iloc[i].to_dict().items()}
            out.append(spec.model_copy(update={**base, "params": {**spec.params, **row}}))
        return out
    return []


def pilot(specs: list[Spec]) -> tuple[float, float, float | None]:
    """(wall seconds a trial, store bytes a trial, the readings' coefficient of variation
    of the first PI of a single run study, else None) from running each spec's trials
    for real in a private temporary store, on this machine."""
    from assay.execute.executor import LocalExecutor
    from assay.privatefs import private_temp
    from assay.stats.spread import spread
    from assay.studies.run import Runner

    walls, sizes, cvs = 0.0, 0, []
    n = 0
    with private_temp("assay-plan-") as folder:
        for i, s in enumerate(specs):
            store = folder / f"pilot{i}.assay.db"
            ex = LocalExecutor(monitor=False)
            result = Runner(s, store, measure_overhead=False, executor=ex).run()
            # the trials' own time and Assay's typical cost between two: a short pilot's
            # session wall, and even its median cost between trials, is mostly its
            # one-time start (imports, the first analysis: 0.4 s a trial of 3)
            walls += result.elapsed_s + OWN_COST_S * result.trials_total
            n += result.trials_total
            for row in result.samples[:1]:
                got = spread([float(x) for x in row["values"]])
                if got.sd is not None and got.mean is not None:
                    cvs.append(got.sd / abs(got.mean) if got.mean else math.nan)
            sizes += sum(p.stat().st_size for p in folder.iterdir() if p.is_file())
            for p in list(folder.iterdir()):
                if p.is_file():
                    os.unlink(p)
    if n == 0:
        raise ValueError("the pilot ran no trial")
    cv = cvs[0] if len(specs) == 1 and cvs else None
    return walls / n, sizes / n, cv


def rounds_for_width(cv: float, width: float, confidence: float, least: int, most: int) -> int:
    """The rounds a CI of ±``width`` needs at the readings' ``cv`` (independent
    readings: ``(z cv / width)^2``), within ``[least, most]``.

    >>> rounds_for_width(0.1, 0.05, 0.95, 10, 1000)
    16
    """
    from statistics import NormalDist

    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    need = math.ceil((z * cv / width) ** 2) if math.isfinite(cv) else most
    return min(max(need, least), most)


def plan_study(spec: Spec, store: Path, *, pilot_trials: int = PILOT_TRIALS) -> Plan:
    """The plan of ``spec`` whose store is ``store`` (see the module)."""
    kind = study_kind(spec)
    counts = trial_counts(spec)
    result = Plan(
        spec.study.name,
        kind,
        spec.source_path or "",
        counts,
        hosts_needed(spec),
        time_budget(spec, kind),
    )
    result.notes.extend(extras_missing(spec, kind))
    earlier = from_store(spec, store)
    if earlier is not None:
        result.per_trial_s, result.bytes_per_trial, n = earlier
        result.timing_from = f"its earlier store {store} ({n} trials)"
        return result
    if pilot_trials <= 0:
        result.timing_from = "no pilot (--pilot 0), and no earlier store of this study"
        return result
    if spec.cluster is not None:
        result.timing_from = (
            "no pilot: a study on a cluster is not piloted from here (run it once, then plan "
            "again from its store)"
        )
        return result
    specs = pilot_spec(spec, kind, pilot_trials)
    if not specs:
        result.timing_from = f"no pilot for a {kind} study (plan again from its store)"
        return result
    per, size, cv = pilot(specs)
    result.per_trial_s, result.bytes_per_trial = per, size
    result.timing_from = (
        f"a pilot of {sum(s.stop.max_rounds for s in specs)} trials on this machine"
        + (f" ({len(specs)} {_PILOTED.get(kind, 'settings')})" if len(specs) > 1 else "")
    )
    if kind == "run" and cv is not None:
        typical = rounds_for_width(
            cv, spec.stop.ci_width, spec.stop.confidence, counts.least, counts.most
        )
        result.counts = TrialCounts(counts.least, counts.most, counts.how, typical)
        result.notes.append(
            f"the pilot's readings vary by {cv:.1%} (CV): about {typical} rounds reach "
            f"±{spec.stop.ci_width:.0%} if they are independent (autocorrelated or drifting "
            "readings need more)"
        )
    return result
