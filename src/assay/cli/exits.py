"""Exit statuses: what a script or CI job can tell from ``$?`` alone.

0 means the study did what was asked; a study that ran but fell short says how with its
own status, so ``assay run -- ./bench || …`` catches a benchmark that never worked.
Status 1 is the regression gate's (``assay compare --fail-if-worse``, ``assay run
--baseline FILE --fail-if-worse``); a crash of
Python itself also exits 1, with a traceback.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

OK = 0
WORSE = 1  # --fail-if-worse: a candidate is worse than the baseline beyond the threshold
USAGE = 2  # a usage error or a bad study file: the message names the file and field
STUDY = 3  # the store or the study cannot go on (locked, changed, disk full, ...)
NO_RESULT = 4  # nothing valid was measured: every trial failed, or too many did
SHORT = 5  # the budget (or the data given) ran out before the target was reached
SETTINGS_FAILED = 6  # a sweep answered, but settings whose every trial failed are left out
INTERRUPTED = 130  # Ctrl-C / SIGTERM: the finished trials are kept

HELP = """
\b
Exit status:
  0    done: the target was reached (or every planned trial measured, or
       run --runs N ran its N runs)
  1    --fail-if-worse (compare; run --baseline): worse than the baseline;
       compare, sweep, knobs: a [[claim]] fails
  2    usage error or bad study file     3  the store or study cannot go on
  4    no valid result (every trial failed, or too many: the report says why)
  5    the budget ran out before the target (CI width, decision, R²), or
       --fail-if-worse could not tell (the interval straddles the threshold),
       or a [[claim]] is undecided
  6    sweep: answered, but settings whose every trial failed are left out
  130  interrupted (Ctrl-C, SIGTERM); run the same command again to resume
"""


def _ok_trials(by_status: Mapping[str, int]) -> int:
    return int(by_status.get("ok", 0))


def run_status(result: Any) -> int:
    """``assay run``: every CI within its width, or why not."""
    # a result measured in process (studies.run.in_process_result) stores no trials
    in_process = result.decision.reason.startswith("measured in process")
    if (_ok_trials(result.trials_by_status) == 0 and not in_process) or (
        result.decision.reason.startswith("stopped early")
    ):
        return NO_RESULT
    if not any(math.isfinite(r.mean) for r in result.results):
        return NO_RESULT
    return OK if result.decision.target_met else SHORT


def fixed_count_status(result: Any, target_asked: bool) -> int:
    """``assay run --runs N``: the user asked for N runs, not a CI width, so a run whose
    interval is not met (or invalid) is still an answer (0); 5 only when a target was
    asked for as well (``--ci-width``); no valid result (4) as always."""
    status = run_status(result)
    return OK if status == SHORT and not target_asked else status


def baseline_status(result: Any, comparisons: Any) -> int:
    """``assay run --baseline FILE --fail-if-worse``: 1 when a PI is worse than the
    baseline beyond the threshold, 5 when one cannot be told, else 0; no valid result
    (4) first."""
    if run_status(result) == NO_RESULT:
        return NO_RESULT
    return _verdicts_status([c.gate.verdict for c in comparisons if c.gate is not None])


def _verdicts_status(verdicts: list[str]) -> int:
    """The gate's statuses: 1 when one is worse, else 5 when one (or, with none, the
    gate itself) could not tell, else 0."""
    if "worse" in verdicts:
        return WORSE
    return SHORT if "undecided" in verdicts or not verdicts else OK


def compare_status(result: Any) -> int:
    """``assay compare``: a decided ranking, or why not."""
    if result.decision.reason.startswith("stopped early"):
        return NO_RESULT
    if _ok_trials(result.trials_by_status) == 0 and not result.sources:
        return NO_RESULT
    failed: dict[str, int] = {}
    for f in result.failures:
        variant = str((f.get("setting") or {}).get("variant", ""))
        failed[variant] = failed.get(variant, 0) + 1
    if result.cycles and any(n >= result.cycles for v, n in failed.items() if v):
        return NO_RESULT  # a variant without one valid trial: nothing to rank it by
    return OK if getattr(result.decision, "decided", False) else SHORT


def gate_status(result: Any) -> int:
    """``assay compare --fail-if-worse``: 1 when a candidate is worse than the baseline
    beyond the threshold (with confidence), 5 when one cannot be told, else 0; no valid
    result (4) first."""
    if compare_status(result) == NO_RESULT:
        return NO_RESULT
    return _verdicts_status([g.verdict for g in result.gates])


def with_claims(status: int, result: Any) -> int:
    """``status`` with the study's ``[[claim]]`` verdicts laid over it: 1 when a claim
    fails, 5 when one is undecided (never over a status that says there is no result
    or that a study's settings failed)."""
    claims = [c.verdict.verdict for c in getattr(result, "claims", ())]
    if not claims or status in (NO_RESULT, SETTINGS_FAILED, WORSE):
        return status
    if "fails" in claims:
        return WORSE
    return SHORT if "undecided" in claims else status


def compare_exit(result: Any) -> int:
    """``assay compare``'s status: the gate's (or the ranking's, :func:`compare_status`)
    with the claims' laid over it (:func:`with_claims`).  A study that stops on its
    claims (``until = "claims"``) answered what it was asked once they are decided, its
    ranking decided or not."""
    base = gate_status(result) if result.gates else compare_status(result)
    if base == SHORT and not result.gates and result.decision.reason.startswith("claims decided"):
        base = OK
    return with_claims(base, result)


def order_status(result: Any) -> int:
    """``assay order``: every planned run measured and analysed."""
    return NO_RESULT if len(result.table) == 0 else OK


def sweep_status(result: Any) -> int:
    """``assay sweep``: the R² target met, or the whole space measured (by the loop, or
    a small grid measured whole at once and analysed as a designed experiment); 6 when
    settings whose every trial failed are left out of the answer."""
    if len(result.measured) == 0 or not result.steps:
        return NO_RESULT
    if result.lost_settings:  # the answer leaves settings out: never a plain success
        return SETTINGS_FAILED
    return OK if result.steps[-1].reason in ("r2", "exhausted", "grid") else SHORT


def knobs_status(result: Any) -> int:
    """``assay knobs``: a ranking was made (it raises when too few samples are valid)."""
    return OK
