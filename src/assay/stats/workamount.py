"""Choosing the work amount of each round (Pilot §III-A(b), §III-E).

Pilot varies the work amount between rounds so that the WPS regression
(:mod:`assay.stats.wps`) sees distinct work amounts:

* very short rounds are dominated by non-stable phases, so after a round shorter
  than a threshold the work is doubled, and the lower bound ``a`` is raised to
  the first work amount that meets the threshold;
* the first ``n`` usable rounds grow linearly in duration so that a rough result
  is available after about ``t`` seconds (eq. 5);
* afterwards work amounts are midpoints of a repeated bisection of ``[a, b]``
  (Fig. 3), which spreads them over the whole valid range.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Iterator, Sequence

__all__ = ["WorkAmountPlanner", "bisection_sequence", "slice_increment"]


def _check_range(a: float, b: float) -> tuple[float, float]:
    a, b = float(a), float(b)
    if not (math.isfinite(a) and math.isfinite(b)):
        raise ValueError(f"a and b must be finite, got a={a!r}, b={b!r}")
    if not a < b:
        raise ValueError(f"need a < b, got a={a!r}, b={b!r}")
    return a, b


def _bisection_points(a: float, b: float) -> Iterator[float]:
    """Infinite level-order midpoints of ``[a, b]`` (see bisection_sequence)."""
    width = b - a
    level = 1
    while True:
        denom = 2.0**level
        for j in range(2 ** (level - 1)):
            yield a + width * (2 * j + 1) / denom
        level += 1


def bisection_sequence(a: float, b: float, count: int) -> list[float]:
    """First ``count`` work amounts of Pilot's bisection sequence (Fig. 3).

    Round 1 is the midpoint of ``[a, b]``; round 2 the midpoint of ``a`` and
    round 1; round 3 the midpoint of round 1 and ``b``; then level by level,
    left to right: level ``L`` holds ``a + (2j + 1) (b - a) / 2**L`` for
    ``j = 0 .. 2**(L-1) - 1``.

    Parameters
    ----------
    a, b : float
        Valid range of work amounts, finite, ``a < b``.
    count : int
        Number of values (``>= 0``).

    Returns
    -------
    list of float

    Examples
    --------
    >>> bisection_sequence(0.0, 16.0, 8)
    [8.0, 4.0, 12.0, 2.0, 6.0, 10.0, 14.0, 1.0]
    """
    a, b = _check_range(a, b)
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise ValueError(f"count must be an integer >= 0, got {count!r}")
    points = _bisection_points(a, b)
    return [next(points) for _ in range(count)]


def slice_increment(total_seconds: float, first_round_seconds: float, rounds: int) -> float:
    """Per-round duration increment ``k`` of Pilot's eq. 5.

    If round 1 takes ``s`` seconds and each round is ``k`` seconds longer than
    the previous one, ``n`` rounds take ``t = k n (n - 1) / 2 + n s`` seconds,
    hence ``k = (2t - 2sn) / (n^2 - n)``.

    Parameters
    ----------
    total_seconds : float
        Budget ``t`` for the first ``n`` rounds (finite, ``> 0``).
    first_round_seconds : float
        Duration ``s`` of round 1 (finite, ``>= 0``).
    rounds : int
        Number of rounds ``n`` (``>= 2``).

    Returns
    -------
    float
        ``k`` in seconds; negative when ``n`` rounds of length ``s`` already
        exceed the budget.

    Examples
    --------
    >>> round(slice_increment(60.0, 1.0, 50), 6)  # (120 - 100) / 2450
    0.008163
    """
    t = float(total_seconds)
    s = float(first_round_seconds)
    if not (math.isfinite(t) and t > 0.0):
        raise ValueError(f"total_seconds must be finite and > 0, got {total_seconds!r}")
    if not (math.isfinite(s) and s >= 0.0):
        raise ValueError(
            f"first_round_seconds must be finite and >= 0, got {first_round_seconds!r}"
        )
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 2:
        raise ValueError(f"rounds must be an integer >= 2, got {rounds!r}")
    n = rounds
    return (2.0 * t - 2.0 * s * n) / (n * n - n)


class WorkAmountPlanner:
    """Chooses the work amount of the next round from the finished ones.

    Parameters
    ----------
    a, b : float
        Valid range of work amounts (finite, ``0 <= a < b``).  Work amounts are
        integers in ``[max(1, ceil(a)), floor(b)]``.
    short_round : float, default 1.0
        Threshold in seconds: rounds shorter than this are "short": stored by the caller but not
        used in analysis, and followed by a round with twice the work.
    budget_seconds : float, default 60.0
        Pilot's ``t`` of eq. 5: time by which the first ``initial_rounds``
        usable rounds should have finished, for a quick first result.
    initial_rounds : int, default 50
        Pilot's ``n`` of eq. 5 (``>= 2``).
    start_work : int, optional
        Work amount of the very first round.  Default: ``a`` (rounded up) if
        ``a > 0``, else 1 — the smallest positive work amount.  Starting at 1
        is safe: the doubling rule reaches a round of ``short_round`` seconds
        after about ``log2(w*)`` rounds that together last less than twice
        ``short_round`` plus the per-round set-up cost, instead of risking a first
        round of ``(b - a) / 2`` work that could take hours.

    Notes
    -----
    :meth:`next_work_amount` applies, in this order:

    1. no history: ``start_work``;
    2. last round short: double its work (at least 1 more unit), clamped to
       ``[a, b]``;
    3. fewer than ``initial_rounds`` usable (non-short) rounds: linear growth
       of eq. 5.  With ``w1, s`` the work and duration of the first usable round
       and ``U`` the number of usable rounds so far, the next round should take
       ``s + U k`` seconds, i.e. ``U k`` more than round 1, which at the
       observed rate ``r = sum(w) / sum(t)`` over usable rounds is
       ``w1 + U k r`` work.  ``r`` includes the per-round overhead ``alpha``,
       so it underestimates the speed and the rounds come out slightly shorter
       than planned: the budget is respected.  If ``k <= 0`` (round 1 alone is
       so long that ``n`` copies exceed the budget) ``k = s / (n - 1)`` is used
       instead, so the work amounts still span a factor of two — the regression
       needs distinct work amounts — and the budget is exceeded;
    4. afterwards: the first entry of ``bisection_sequence(a, b, ...)``, rounded
       to an integer, whose work amount has not been run yet.  When every
       integer in the range has been run, the least-run entry is repeated.

    The lower bound ``a`` only ever rises: to the work of a round that met the
    threshold right after a short round (Pilot's short-round rule, derived from
    the history on every call), and through :meth:`raise_lower_bound` (e.g. to
    the work equivalent of a fitted ``alpha``; Pilot then discards the rounds
    below it).  Apart from that the plan is a deterministic function of the
    history passed in.

    Examples
    --------
    >>> p = WorkAmountPlanner(0, 1_000_000)
    >>> p.next_work_amount([])
    1
    >>> p.next_work_amount([(1, 0.001), (2, 0.002)])
    4
    """

    def __init__(
        self,
        a: float,
        b: float,
        short_round: float = 1.0,
        budget_seconds: float = 60.0,
        initial_rounds: int = 50,
        *,
        start_work: int | None = None,
    ) -> None:
        a, b = _check_range(a, b)
        if a < 0.0:
            raise ValueError(f"a must be >= 0, got {a!r}")
        if math.floor(b) < max(1, math.ceil(a)):
            raise ValueError(f"[{a!r}, {b!r}] contains no positive integer work amount")
        thr = float(short_round)
        if not (math.isfinite(thr) and thr >= 0.0):
            raise ValueError(f"short_round must be finite and >= 0, got {thr!r}")
        budget = float(budget_seconds)
        if not (math.isfinite(budget) and budget > 0.0):
            raise ValueError(f"budget_seconds must be finite and > 0, got {budget!r}")
        if (
            isinstance(initial_rounds, bool)
            or not isinstance(initial_rounds, int)
            or initial_rounds < 2
        ):
            raise ValueError(f"initial_rounds must be an integer >= 2, got {initial_rounds!r}")
        self._a = a
        self._b = b
        self._threshold = thr
        self._budget = budget
        self._rounds = initial_rounds
        if start_work is None:
            self._start = max(1, math.ceil(a))
        else:
            if isinstance(start_work, bool) or not isinstance(start_work, int):
                raise ValueError(f"start_work must be an integer, got {start_work!r}")
            if not max(1, math.ceil(a)) <= start_work <= math.floor(b):
                raise ValueError(f"start_work must lie in [a, b] and be >= 1, got {start_work!r}")
            self._start = start_work

    @property
    def a(self) -> float:
        """Current lower bound of the work amount (only ever rises)."""
        return self._a

    @property
    def b(self) -> float:
        """Upper bound of the work amount."""
        return self._b

    @property
    def short_round_seconds(self) -> float:
        """Rounds shorter than this many seconds are short."""
        return self._threshold

    @property
    def budget_seconds(self) -> float:
        """Eq. 5 budget ``t`` for the initial rounds, seconds."""
        return self._budget

    @property
    def initial_rounds(self) -> int:
        """Eq. 5 number of initial rounds ``n``."""
        return self._rounds

    def is_short(self, seconds: float) -> bool:
        """Whether a round of this duration is too short to be used.

        Examples
        --------
        >>> WorkAmountPlanner(0, 100).is_short(0.5)
        True
        """
        return float(seconds) < self._threshold

    def raise_lower_bound(self, work: float) -> None:
        """Raise ``a`` to ``work`` (no effect if ``work <= a``).

        Use it with the work equivalent of a fitted ``alpha`` (Pilot §III-A(b):
        rounds whose work is below it are discarded).

        Raises
        ------
        ValueError
            If ``work`` is not finite or exceeds ``b``.

        Examples
        --------
        >>> p = WorkAmountPlanner(0, 100)
        >>> p.raise_lower_bound(10)
        >>> p.a
        10.0
        """
        w = float(work)
        if not math.isfinite(w):
            raise ValueError(f"work must be finite, got {work!r}")
        if w > self._b:
            raise ValueError(f"cannot raise the lower bound to {w!r}: above b={self._b!r}")
        self._a = max(self._a, w)

    def _lo(self) -> int:
        return max(1, math.ceil(self._a))

    def _hi(self) -> int:
        return math.floor(self._b)

    def _clamp(self, w: float) -> int:
        return min(max(round(w), self._lo()), self._hi())

    def next_work_amount(self, history: Sequence[tuple[float, float]]) -> int:
        """Work amount for the next round.

        Parameters
        ----------
        history : sequence of (work, seconds)
            All finished rounds, oldest first, short ones included.

        Returns
        -------
        int
            A work amount in ``[max(1, ceil(a)), floor(b)]``.

        Examples
        --------
        >>> p = WorkAmountPlanner(0, 1000, short_round=1.0)
        >>> p.next_work_amount([(256, 0.5)])
        512
        >>> p.next_work_amount([(256, 0.5), (512, 1.1)]) > 512
        True
        >>> p.a
        512.0
        """
        rounds = [(float(w), float(s)) for w, s in history]
        for w, s in rounds:
            if not (math.isfinite(w) and math.isfinite(s) and s >= 0.0):
                raise ValueError(f"history entries must be finite (work, seconds>=0), got {(w, s)}")
        if not rounds:
            return self._start
        # Short-round rule: a round meeting the threshold right after a short one sets a.
        for (_, s_prev), (w, s) in itertools.pairwise(rounds):
            if self.is_short(s_prev) and not self.is_short(s) and w > self._a:
                self._a = min(w, self._b)

        w_last, s_last = rounds[-1]
        if self.is_short(s_last):
            return self._clamp(max(2.0 * w_last, w_last + 1.0))

        usable = [(w, s) for w, s in rounds if not self.is_short(s)]
        if len(usable) < self._rounds:
            w1, s1 = usable[0]
            k = slice_increment(self._budget, s1, self._rounds)
            if k <= 0.0:
                k = s1 / (self._rounds - 1)
            total_s = sum(s for _, s in usable)
            rate = sum(w for w, _ in usable) / total_s if total_s > 0.0 else math.inf
            if not math.isfinite(rate):
                return self._clamp(2.0 * w1)
            proposal = w1 + len(usable) * k * rate
            # Once the linear phase reaches b, repeating b adds no leverage to the
            # regression (and equal neighbours correlate its residuals): bisect instead.
            if proposal < self._b:
                return self._clamp(proposal)

        return self._bisection_next(rounds)

    def _bisection_next(self, rounds: list[tuple[float, float]]) -> int:
        lo, hi = self._lo(), self._hi()
        if lo >= hi or self._a >= self._b:
            return hi
        used = Counter(round(w) for w, _ in rounds)
        width = self._b - self._a
        seen: list[int] = []
        level_size = 1
        points = _bisection_points(self._a, self._b)
        # Stop once the midpoints are finer than half a unit: every integer seen.
        while level_size <= 4 * width + 4:
            for _ in range(level_size):
                w = self._clamp(next(points))
                if used[w] == 0:
                    return w
                seen.append(w)
            level_size *= 2
        # Every integer of the range has been run: repeat the least-run one.
        fewest = min(used[w] for w in seen)
        return next(w for w in seen if used[w] == fewest)
