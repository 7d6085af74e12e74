"""The schedule of an ordering-trap experiment (Duplyakin et al., ATC'23): pure functions.

An experiment is a list of *runs*; a run is a sequence of trials of the tests, each
test repeated ``repetitions`` times. *Fixed-order* runs all follow one baseline order
(the tests as declared); *random-order* runs each follow a fresh permutation of the
same trials. The paper asks for both kinds, "N repetitions for each": ``fixed_runs``
and ``random_runs`` default to the same N.

Two baselines are offered for the repetitions inside a fixed run:

* ``"blocked"`` (default): ``A A A B B B C C C``, each test's repetitions back to back,
  as most benchmark scripts (and hyperfine or pyperf) run them;
* ``"cycled"``: ``A B C A B C A B C``, the declared list run ``repetitions`` times (with
  one repetition both are OrderSage's fixed order).

Runs of the two kinds alternate (fixed, random, fixed, random, ...; the longer kind
finishes the list), so that a slow drift of the machine hits both kinds alike. The
permutation of random run ``k`` is drawn from ``numpy.random.default_rng([seed, k])``:
it depends only on the seed, the run's index and the trials, so any run can be
replayed on its own (resuming an interrupted experiment, or repeating one run).

>>> plan = order_schedule(["a", "b"], fixed_runs=1, random_runs=1, repetitions=2, seed=7)
>>> [(r.index, r.kind, r.trials) for r in plan]
[(0, 'fixed', ('a', 'a', 'b', 'b')), (1, 'random', ('b', 'a', 'b', 'a'))]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

__all__ = [
    "Baseline",
    "OrderKind",
    "PlannedRun",
    "PlannedTrial",
    "baseline_order",
    "flat_schedule",
    "order_schedule",
    "random_order",
    "run_kinds",
]

OrderKind = Literal["fixed", "random"]
Baseline = Literal["blocked", "cycled"]


@dataclass(frozen=True)
class PlannedRun:
    """One run: its index in the experiment, its kind and its trials' tests in order."""

    index: int
    kind: OrderKind
    trials: tuple[str, ...]


@dataclass(frozen=True)
class PlannedTrial:
    """One trial of the schedule: run index, position in the run, test, kind of order."""

    run: int
    position: int
    test: str
    kind: OrderKind


def _check_tests(tests: Sequence[str]) -> list[str]:
    names = [str(t) for t in tests]
    if not names:
        raise ValueError("at least one test is needed")
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"test names must be unique, repeated: {', '.join(dup)}")
    return names


def _check_count(value: int, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def baseline_order(
    tests: Sequence[str], repetitions: int, baseline: Baseline = "blocked"
) -> list[str]:
    """The trials of a fixed-order run.

    >>> baseline_order(["a", "b"], 2)
    ['a', 'a', 'b', 'b']
    >>> baseline_order(["a", "b"], 2, "cycled")
    ['a', 'b', 'a', 'b']
    """
    names = _check_tests(tests)
    reps = _check_count(repetitions, "repetitions", 1)
    if baseline == "blocked":
        return [t for t in names for _ in range(reps)]
    if baseline == "cycled":
        return [t for _ in range(reps) for t in names]
    raise ValueError(f"baseline must be 'blocked' or 'cycled', got {baseline!r}")


def random_order(tests: Sequence[str], repetitions: int, seed: int, run: int) -> list[str]:
    """The trials of random-order run ``run``: a permutation of every test × repetitions,
    drawn from ``default_rng([seed, run])``.

    >>> random_order(["a", "b", "c"], 1, seed=3, run=1) == random_order(["a", "b", "c"], 1, 3, 1)
    True
    >>> sorted(random_order(["a", "b"], 2, seed=3, run=1))
    ['a', 'a', 'b', 'b']
    """
    trials = baseline_order(tests, repetitions, "blocked")
    s = _check_count(seed, "seed", 0)
    k = _check_count(run, "run", 0)
    perm = np.random.default_rng([s, k]).permutation(len(trials))
    return [trials[i] for i in perm]


def run_kinds(fixed_runs: int, random_runs: int) -> list[OrderKind]:
    """The kind of every run: alternating, fixed first; the longer kind ends the list.

    >>> run_kinds(2, 3)
    ['fixed', 'random', 'fixed', 'random', 'random']
    """
    nf = _check_count(fixed_runs, "fixed_runs", 1)
    nr = _check_count(random_runs, "random_runs", 1)
    kinds: list[OrderKind] = []
    for i in range(max(nf, nr)):
        if i < nf:
            kinds.append("fixed")
        if i < nr:
            kinds.append("random")
    return kinds


def order_schedule(
    tests: Sequence[str],
    *,
    fixed_runs: int,
    random_runs: int,
    repetitions: int,
    seed: int,
    baseline: Baseline = "blocked",
) -> list[PlannedRun]:
    """Every run of the experiment, in execution order.

    Parameters
    ----------
    tests : sequence of str
        Unique test names; their declared order is the baseline.
    fixed_runs, random_runs : int
        How many runs of each kind (>= 1).
    repetitions : int
        Trials of each test per run (>= 1).
    seed : int
        Non-negative seed of the random orders (record it to replay the experiment).
    baseline : {"blocked", "cycled"}
        The fixed order's arrangement of the repetitions.

    Returns
    -------
    list of PlannedRun

    Examples
    --------
    >>> plan = order_schedule(["a", "b", "c"], fixed_runs=2, random_runs=2,
    ...                       repetitions=1, seed=5, baseline="cycled")
    >>> [r.kind for r in plan], plan[0].trials == plan[2].trials
    (['fixed', 'random', 'fixed', 'random'], True)
    """
    fixed = tuple(baseline_order(tests, repetitions, baseline))
    runs: list[PlannedRun] = []
    for i, kind in enumerate(run_kinds(fixed_runs, random_runs)):
        trials = fixed if kind == "fixed" else tuple(random_order(tests, repetitions, seed, i))
        runs.append(PlannedRun(i, kind, trials))
    return runs


def flat_schedule(runs: Sequence[PlannedRun]) -> list[PlannedTrial]:
    """The schedule as one list of trials in execution order (the resume order).

    >>> flat = flat_schedule(order_schedule(["a", "b"], fixed_runs=1, random_runs=1,
    ...                                     repetitions=1, seed=0))
    >>> [(t.run, t.position, t.kind) for t in flat]
    [(0, 0, 'fixed'), (0, 1, 'fixed'), (1, 0, 'random'), (1, 1, 'random')]
    """
    return [
        PlannedTrial(r.index, pos, test, r.kind) for r in runs for pos, test in enumerate(r.trials)
    ]
