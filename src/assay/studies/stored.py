"""A stored study's result, rebuilt from its store alone (``assay show``, ``assay
report``): nothing runs and nothing is written; the result is built by the study's
runner (its ``stored()``), so it reads as it did at the end of the study's run.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from assay.errors import StudyError
from assay.store import Store, TrialRecord, is_archived
from assay.studies.base import CONFIG_KEY, StoredStudy, find_stored, open_stored


class NoSuchStudy(StudyError):
    """The store has no study of that name, or several and none was named (a usage
    error: the message names the store's studies)."""


def stored_result(
    path: Path, study: str | None = None
) -> tuple[StoredStudy, Any, list[TrialRecord]]:
    """Study ``study`` of the store at ``path`` (or its only one): the stored study, its
    result and its trials.  Raises :class:`NoSuchStudy`, :class:`StudyError`,
    :class:`~assay.store.StoreError`, or ``ValueError`` when the stored data cannot be
    analysed (a sweep's space)."""
    with Store(path, read_only=True) as db:
        stored, trials, config = read_stored(db, study)
    return stored, stored_runner_result(stored, path, config), trials


class ReportInputs(NamedTuple):
    """What a report page is made from: the stored study, its result, its trials, and
    the plots the store keeps for them (name, caption, SVG; None when it keeps none)."""

    stored: StoredStudy
    result: Any
    trials: list[TrialRecord]
    plots: list[tuple[str, str, str]] | None


def report_result(path: Path, study: str | None = None) -> ReportInputs:
    """As :func:`stored_result`, for a report page: a sweep whose store keeps what
    ``assay show`` prints for its trials now is read from that
    (:class:`~assay.studies.sweep.KeptSweep`), not analysed again; the plots the store
    keeps for these trials come with it (:func:`kept_plots`)."""
    import json

    with Store(path, read_only=True) as db:
        stored, trials, config = read_stored(db, study)
        plots = kept_plots(db, stored)
        kept = kept_shown(db, stored) if stored.kind == "sweep" else None
        doc = None if kept is None else json.loads(str(kept["json"]))
        if isinstance(doc, dict) and doc.get("kind") == "sweep":
            from assay.studies.sweep import SweepRunner, kept_doc_readable, stored_steps

            if kept_doc_readable(doc):  # the store is data
                steps = stored_steps(db, stored.study_id)
                runner = SweepRunner(stored.spec, path, monitor=False)
                return ReportInputs(stored, runner.kept(doc, trials, steps), trials, plots)
    return ReportInputs(stored, stored_runner_result(stored, path, config), trials, plots)


def read_stored(db: Store, study: str | None) -> tuple[StoredStudy, list[TrialRecord], Any]:
    """The study (named, or the store's only one), its trials and a knob study's config."""
    stored = find_stored(db, study_name(db, study))
    return stored, open_stored(db, stored.name).trials, db.study_value(stored.study_id, CONFIG_KEY)


def study_name(db: Store, study: str | None) -> str:
    """``study`` when the store holds it, or the store's only study when None;
    :class:`NoSuchStudy` names the store's studies otherwise."""
    names = [n for n in db.study_names() if not is_archived(n)]
    listed = ", ".join(repr(n) for n in names) or "none"
    if study is None:
        if len(names) != 1:
            raise NoSuchStudy(f"{db.path} holds {len(names)} studies; name one: {listed}")
        return names[0]
    if db.find_study(study) is None:
        raise NoSuchStudy(f"{db.path}: no study named {study!r}; its studies: {listed}")
    return study


def stored_mark(db: Store, stored: StoredStudy) -> list[Any]:
    """What a result built from the store depends on besides the study file: its trials
    (how many, the newest's id) and its sessions (the last one's id and whether it
    ended), with Assay's version: equal fingerprints, equal results."""
    from assay._version import __version__

    count, newest = db.trial_span(stored.study_id)
    last = stored.sessions[-1] if stored.sessions else {}
    return [__version__, count, newest, last.get("id"), last.get("ended") is not None]


#: The study value that keeps what ``assay show`` prints for a study (its report, its
#: JSON, exit status and note: ``assay.cli.show.remember_shown``), so that a long
#: study's analysis (a sweep's models, a knob study's forests) is not made again each
#: time it is shown or reported.
SHOWN_KEY = "shown"
#: 2: the result documents carry schema_version and kind; 3: order on run means; 4: the
#: claims laid over the exit status of compare, sweep and knob studies, knob claims
SHOWN_FORMAT = 4


def kept_shown(db: Store, stored: StoredStudy) -> dict[str, Any] | None:
    """What ``assay show`` kept for the study while it still holds (same trials,
    sessions and Assay version, a well-formed entry: the store is data); None
    otherwise."""
    kept = db.study_value(stored.study_id, SHOWN_KEY)
    if not isinstance(kept, dict) or kept.get("format") != SHOWN_FORMAT:
        return None
    if [kept.get("fingerprint"), kept.get("kind")] != [stored_mark(db, stored), stored.kind]:
        return None
    texts, status, note = kept.get("texts"), kept.get("status"), kept.get("note")
    fine = isinstance(texts, dict) and isinstance(kept.get("json"), str)
    fine = fine and type(status) is int and (note is None or isinstance(note, str))
    return kept if fine and isinstance(kept.get("store"), str) else None


#: The study value that keeps a report page's plots for the study's trials (a sweep or
#: knob study renders them at its end: drawing them was most of a report's time, #60).
PLOTS_KEY = "report plots"
PLOTS_FORMAT = 1


def keep_plots(db: Store, stored: StoredStudy, plots: Sequence[tuple[str, str, str]]) -> None:
    """Keep the report's plots (name, caption, SVG) drawn from the study's trials now."""
    db.set_study_value(stored.study_id, PLOTS_KEY, {
        "format": PLOTS_FORMAT,
        "fingerprint": stored_mark(db, stored),
        "kind": stored.kind,
        "plots": [list(p) for p in plots],
    })  # fmt: skip


def kept_plots(db: Store, stored: StoredStudy) -> list[tuple[str, str, str]] | None:
    """The plots :func:`keep_plots` kept while they still hold (same trials, sessions
    and Assay version, a well-formed entry); None otherwise.  Their SVG is the store's
    data: the page checks it before inlining it
    (:func:`assay.report.kept_svg.plot_svg`)."""
    kept = db.study_value(stored.study_id, PLOTS_KEY)
    if not isinstance(kept, dict) or kept.get("format") != PLOTS_FORMAT:
        return None
    if [kept.get("fingerprint"), kept.get("kind")] != [stored_mark(db, stored), stored.kind]:
        return None
    plots = kept.get("plots")
    if not isinstance(plots, list):
        return None
    out = [tuple(p) for p in plots if isinstance(p, list) and len(p) == 3]
    if len(out) != len(plots) or not all(isinstance(v, str) for p in out for v in p):
        return None
    return [(str(n), str(t), str(svg)) for n, t, svg in out]


def recall_shown(path: Path, study: str | None) -> dict[str, Any] | None:
    """:func:`kept_shown` of the study (named, or the store's only one) of the store at
    ``path``.  Raises as :func:`stored_result` does for a missing store or study."""
    with Store(path, read_only=True) as db:
        return kept_shown(db, find_stored(db, study_name(db, study)))


def stored_runner_result(stored: StoredStudy, path: Path, config: Any) -> Any:
    """The study's result from the store, built by its runner's ``stored()``."""
    spec = stored.spec
    last = stored.last_result
    asked = last.get("pi")  # the PI its run was asked for (compare --pi, order --pi)
    pi = asked if isinstance(asked, str) and asked in {p.name for p in spec.pis} else None
    if stored.kind == "compare":
        from assay.studies.compare import CompareRunner

        return CompareRunner(spec, path, pi=pi, monitor=False).stored()
    if stored.kind == "order":
        from assay.studies.order import OrderRunner

        alpha = last.get("alpha")
        return OrderRunner(spec, path, pi=pi, alpha=alpha, monitor=False).stored()
    if stored.kind == "sweep":
        from assay.studies.sweep import SweepRunner

        return SweepRunner(spec, path, monitor=False).stored()
    if stored.kind == "knobs":
        from assay.spec import KnobsSpec
        from assay.studies.knobs import KnobsRunner

        cfg = spec.knobs_config if config is None else KnobsSpec.model_validate(config)
        return KnobsRunner(spec, path, cfg, monitor=False).stored()
    from assay.studies.run import Runner

    return Runner(spec, path, monitor=False).stored()


def stored_trials(path: Path, study: str) -> list[TrialRecord]:
    """The trials of study ``study`` of the store at ``path`` (opened read-only)."""
    with Store(path, read_only=True) as db:
        return open_stored(db, study_name(db, study)).trials


def stored_value(path: Path, stored: StoredStudy, key: str = CONFIG_KEY) -> Any:
    """A value the store keeps for the study (by default the options a knob study ranked
    with; an order study's schedule under its key); None if none."""
    with Store(path, read_only=True) as db:
        return db.study_value(stored.study_id, key)
