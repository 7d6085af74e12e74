"""Measuring given settings a given number of times: the executor of sweeps and knob studies.

A design (incremental sampling, Latin Hypercube samples, a tuner) decides *which*
settings to measure; :class:`SettingsRunner` measures them.  Each trial is committed to
the store as it ends with its setting and repetition number, so running the same study
again measures only what is missing: a setting's finished repetitions (failed ones
included: a failing trial is data) are never repeated.

Within a batch the (setting, repetition) pairs run in a seeded random order, so slow
drift of the machine is not confounded with any parameter (the ordering trap); where
a parameter sets a role of a multi-host study up again (#42), the settings that share
the role's values run together, groups in random order, so a batch reconfigures once
per group (a slow drift can then align with those parameters within a batch: the price
of not restarting servers before every trial).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from typing_extensions import Unpack

from assay.spec import ClaimSpec, PISpec, Spec
from assay.store import Store, TrialRecord
from assay.studies.base import OpenStudy, Study, StudyOptions
from assay.values import plain as _plain

if TYPE_CHECKING:
    import pandas as pd

    from assay.stats.claims import JudgedClaim

T = TypeVar("T")

#: The key of a trial's repetition number in its stored setting.
REPETITION = "repetition"


def setting_key(setting: Mapping[str, Any]) -> str:
    """A canonical text for a setting (its repetition number left out).

    >>> setting_key({"b": 2, "a": "x", "repetition": 1}) == setting_key({"a": "x", "b": 2})
    True
    """
    return json.dumps(
        {k: _plain(v) for k, v in setting.items() if k != REPETITION},
        sort_keys=True,
        default=str,
    )


def pending_trials(
    settings: Sequence[Mapping[str, Any]],
    repetitions: int,
    done: Iterable[Mapping[str, Any]],
) -> list[tuple[int, int]]:
    """(setting index, repetition) pairs not yet in ``done`` (stored trial settings).

    >>> pending_trials([{"a": 1}, {"a": 2}], 2, [{"a": 1, "repetition": 0}])
    [(0, 1), (1, 0), (1, 1)]
    """
    have = {(setting_key(s), int(s.get(REPETITION, 0))) for s in done}
    return [
        (i, r)
        for i, s in enumerate(settings)
        for r in range(repetitions)
        if (setting_key(s), r) not in have
    ]


def run_order(
    settings: Sequence[Mapping[str, Any]], repetitions: int, seed: int
) -> list[tuple[int, int]]:
    """Every (setting index, repetition) of a batch in a random order that depends only
    on the seed and the batch: a resumed batch runs its missing trials in the order an
    uninterrupted one would have (an order drawn from the progress made would not).

    >>> sorted(run_order([{"a": 1}, {"a": 2}], 2, 0))
    [(0, 0), (0, 1), (1, 0), (1, 1)]
    >>> run_order([{"a": 1}, {"a": 2}], 2, 0) == run_order([{"a": 1}, {"a": 2}], 2, 0)
    True
    """
    planned = [(i, r) for i in range(len(settings)) for r in range(repetitions)]
    batch = json.dumps([setting_key(s) for s in settings])
    digest = hashlib.sha256(batch.encode()).hexdigest()[:16]
    random.Random(f"{seed}:{digest}").shuffle(planned)
    return planned


def grouped(items: Sequence[T], *keys: Callable[[T], object]) -> list[T]:
    """``items`` with those of equal first ``key`` together, groups in the order of their
    first item and items in their order within a group (a random order stays random in
    both); within each group, likewise by the next key.

    >>> grouped([(0, 0), (1, 0), (0, 1), (2, 0), (1, 1)], lambda p: p[0])
    [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0)]
    >>> grouped([(0, 0), (1, 1), (0, 1), (1, 0), (0, 0)], lambda p: p[0], lambda p: p[1])
    [(0, 0), (0, 0), (0, 1), (1, 1), (1, 0)]
    """
    if not keys:
        return list(items)
    groups: dict[object, list[T]] = {}
    for item in items:
        groups.setdefault(keys[0](item), []).append(item)
    return [item for group in groups.values() for item in grouped(group, *keys[1:])]


def reconfiguring(spec: Spec) -> list[str]:
    """The parameters of a setting whose change sets a role up again (#42), those that
    more roles use first: a batch runs the settings that share the first one's value
    together, and within them those that share the next one's, so that the roles most
    depend on are set up again least often."""
    if spec.cluster is None or spec.cluster.roles is None:
        return []
    from assay.execute.roles import RolePlan

    plan = RolePlan.of(spec)
    uses = [plan.uses(r) for r in plan.roles]
    names = set().union(*uses) & plan.per_trial
    return sorted(names, key=lambda n: (-sum(n in u for u in uses), n))


def _value_of(full: Sequence[Mapping[str, Any]], name: str) -> Callable[[tuple[int, int]], object]:
    """The key of a (setting index, repetition) pair: its setting's value of ``name``."""
    return lambda pair: str(full[pair[0]].get(name))


def trial_value(pi: PISpec, t: TrialRecord) -> float:
    """A trial's reading of ``pi``; NaN for a failed trial."""
    if not t.ok:
        return math.nan
    return float(t.readings.get(pi.name, math.nan))


def trials_table(
    trials: Sequence[TrialRecord], params: Sequence[str], pis: Sequence[PISpec]
) -> pd.DataFrame:
    """One row per trial: the parameters, ``repetition``, ``status`` and one column per PI
    (NaN where the trial failed).

    >>> from assay.spec import PISpec
    >>> t = TrialRecord(seq=0, status="ok", setting={"a": 1, "repetition": 0},
    ...                 readings={"wall_time": 0.5})
    >>> trials_table([t], ["a"], [PISpec(name="wall_time")]).to_dict("records")
    [{'a': 1, 'repetition': 0, 'status': 'ok', 'wall_time': 0.5}]
    """
    rows = [
        {
            **{p: t.setting.get(p) for p in params},
            REPETITION: int(t.setting.get(REPETITION, 0)),
            "status": t.status,
            **{pi.name: trial_value(pi, t) for pi in pis},
        }
        for t in trials
    ]
    columns = [*params, REPETITION, "status", *(pi.name for pi in pis)]
    import pandas as pd  # lazy: a knob study's report needs none of it (0.2 s)

    return pd.DataFrame(rows, columns=columns)


def setting_means(table: pd.DataFrame, params: Sequence[str], metric: str) -> pd.DataFrame:
    """Mean, standard deviation and count of ``metric`` per setting, over the
    repetitions that succeeded; settings whose every repetition failed are left out.

    >>> import pandas as pd
    >>> t = pd.DataFrame({"a": [1, 1, 2], "y": [1.0, 3.0, float("nan")]})
    >>> setting_means(t, ["a"], "y").to_dict("records")
    [{'a': 1, 'y': 2.0, 'y_sd': 1.4142135623730951, 'y_n': 2}]
    """
    import pandas as pd

    ok = table.dropna(subset=[metric])
    if ok.empty:
        return pd.DataFrame(columns=[*params, metric, f"{metric}_sd", f"{metric}_n"])
    g = ok.groupby(list(params), sort=True, dropna=False)[metric]
    out = pd.DataFrame({metric: g.mean(), f"{metric}_sd": g.std(), f"{metric}_n": g.count()})
    return out.reset_index()


@dataclass
class SettingsProgress:
    """What the live display shows after each trial of a batch."""

    done: int  # trials of this batch finished (this session)
    total: int  # trials this batch runs (this session)
    failed: int
    last: TrialRecord


class SettingsSession:
    """An open study in which batches of settings are measured (see :class:`SettingsRunner`)."""

    def __init__(self, runner: SettingsRunner, st: OpenStudy, seed: int) -> None:
        self._runner = runner
        self._st = st
        self._seed = seed

    @property
    def trials(self) -> list[TrialRecord]:
        """Every trial of the study, stored ones first."""
        return self._st.trials

    @property
    def open_study(self) -> OpenStudy:
        return self._st

    def values(self, setting: Mapping[str, Any]) -> dict[str, object]:
        """A setting as its trials are stored: the study's [params], the setting over them."""
        return {**self._runner.spec.params, **{k: _plain(v) for k, v in setting.items()}}

    def key(self, setting: Mapping[str, Any]) -> str:
        """The :func:`setting_key` of a setting's stored trials (fixed params included)."""
        return setting_key(self.values(setting))

    def measure(
        self,
        settings: Sequence[Mapping[str, Any]],
        repetitions: int,
        *,
        deadline: float | None = None,
        on_progress: Callable[[SettingsProgress], None] | None = None,
    ) -> list[TrialRecord]:
        """Measure each setting ``repetitions`` times, skipping what is stored already.

        Returns the trials of these settings (stored and new).  Stops launching trials
        once ``deadline`` (a ``time.monotonic()`` value) has passed.
        """
        st = self._st
        runner = self._runner
        # compared as stored: a study's fixed [params] are part of every stored setting
        full = [self.values(s) for s in settings]
        todo = run_order(full, repetitions, self._seed)
        pending = set(pending_trials(full, repetitions, (t.setting for t in st.trials)))
        todo = [p for p in todo if p in pending]
        names = reconfiguring(runner.spec)
        todo = grouped(todo, *(_value_of(full, n) for n in names))
        seq = st.store.next_seq(st.study_id)
        batch = [
            runner.request(seq + n, full[i], setting={**full[i], REPETITION: rep})
            for n, (i, rep) in enumerate(todo)
        ]
        failed = 0
        if deadline is None or time.monotonic() < deadline:
            with contextlib.closing(runner.measure(st, batch)) as records:
                for done, rec in enumerate(records, start=1):
                    failed += not rec.ok
                    if on_progress is not None:
                        on_progress(SettingsProgress(done, len(todo), failed, rec))
                    if deadline is not None and time.monotonic() >= deadline:
                        break  # the trials not yet started are not run
        wanted = {setting_key(s) for s in full}
        return [t for t in st.trials if setting_key(t.setting) in wanted]


class SettingsRunner(Study):
    """Opens a study in its store and lets a design measure batches of settings in it.

    Trial execution, setup/reset/teardown, the bottleneck watch, leftover-process
    clean-up and the store are :class:`~assay.studies.base.Study`'s.

    ``runner.session(body)`` opens (or resumes) the study, runs the setup command,
    calls ``body(session)``, runs the teardown command and ends the session with
    ``result(body's return value)`` recorded in the store.
    """

    def __init__(
        self,
        spec: Spec,
        store_path: Path,
        *,
        seed: int = 0,
        **options: Unpack[StudyOptions],
    ) -> None:
        # sweeps and knob studies do not report the launch overhead: not measured unless asked
        options.setdefault("measure_overhead", False)
        super().__init__(spec, store_path, **options)
        self.seed = seed
        self.leftover: str | None = None

    def session(
        self,
        body: Callable[[SettingsSession], T],
        result: Callable[[T], Mapping[str, Any]] | None = None,
    ) -> T:
        self.leftover = self._stop_leftover()
        with Store(self.store_path) as store:
            st = self._open(store)
            out = self._with_setup(lambda: body(SettingsSession(self, st, self.seed)))
            store.end_session(st.session, {} if result is None else dict(result(out)))
            return out


def judge_setting_claims(
    claims: Sequence[ClaimSpec],
    trials: Iterable[TrialRecord],
    key_of: Callable[[Mapping[str, Any]], str],
    default_pi: str,
    confidence: float,
    not_measured: str,
) -> list[JudgedClaim]:
    """Each claim of a sweep or knob study on the readings of its two settings (their
    repetitions), as a live comparison analyses two variants' raw samples.  ``key_of``
    gives the key of a trial's setting and of a claimed one (a dict of the claim's
    ``ratio``); ``not_measured`` says why a setting without trials has none."""
    from assay.designs.run_until_ci import INDEPENDENCE_ALPHA
    from assay.stats.claims import judged
    from assay.stats.compare import InsufficientDataError, VariantStats, compare_samples

    by_setting: dict[str, list[TrialRecord]] = {}
    for t in trials:
        if t.ok:
            by_setting.setdefault(key_of(t.setting), []).append(t)
    out: list[JudgedClaim] = []
    for claim in claims:
        pi = claim.pi or default_pi
        values = [
            [
                t.readings[pi]
                for t in by_setting.get(key_of(side if isinstance(side, dict) else {}), [])
                if pi in t.readings
            ]
            for side in claim.ratio
        ]
        stats: tuple[VariantStats | None, VariantStats | None] = (None, None)
        missing = not_measured
        if all(len(v) >= 2 for v in values):
            try:
                c = compare_samples(
                    values[0], values[1], confidence, independence_alpha=INDEPENDENCE_ALPHA
                )
                stats = (c.a, c.b)
            except InsufficientDataError as exc:
                missing = str(exc)
        elif any(values):
            missing = "fewer than 2 valid readings"
        out.append(
            judged(claim.says, pi, claim.labels(), claim.rule, *stats, confidence, missing=missing)
        )
    return out
