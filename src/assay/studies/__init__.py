"""One loop per kind of study: each asks its design for a batch of trials, hands the
batch to the executor (:mod:`assay.execute.executor`), commits every trial to the
store as it returns, analyses and decides.  Result types and their ``as_dict()``
live beside their loops; :mod:`assay.report` renders them.

=========================  ====================================================
:mod:`~.base`              opening a study, setup/teardown, ``measure`` a batch
:mod:`~.run`               run until the CI is narrow enough (Pilot)
:mod:`~.compare`           interleaved comparison of variants (Pilot §III-F)
:mod:`~.order`             the ordering trap: fixed vs random orders (OrderSage)
:mod:`~.settings`          settings × repetitions, shared by sweeps and knob studies
:mod:`~.sweep`             incremental sampling + ANOVA (extensive evaluation)
:mod:`~.knobs`             LHS + random-forest knob ranking, tuning (Kanellis et al.)
=========================  ====================================================
"""
