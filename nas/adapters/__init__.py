"""Adapters: the registered searchers inside tools researchers already use.

- ``nas.adapters.optuna_sampler.SearcherSampler``: a searcher as an Optuna sampler.
- ``nas.adapters.ray_tune.SearcherSearch``: a searcher as a Ray Tune ``Searcher``.
- ``nas.adapters.optuna_pruner.ASHAPruner`` / ``HyperbandPruner``: the host Study's pruners as Optuna pruners.
- ``nas.adapters.optuna_multi_fidelity.MultiFidelitySampler``: a multi-fidelity searcher as an Optuna sampler
  with the pruner that ends each trial at its budget (one Optuna trial per evaluation).
- ``nas.adapters.optuna_mirror.OptunaMirror``: a Study mirrored live into an Optuna storage (for
  ``optuna-dashboard``); ``study.to_optuna()`` copies a Study into an ``optuna.Study`` for Optuna's plots
  (``nas.adapters.optuna_distributions``: its space as Optuna's distributions); ``nas.adapters.optuna_dashboard``
  starts ``optuna-dashboard`` on 127.0.0.1 from Python.
- ``nas.adapters.ray_multi_fidelity.MultiFidelitySearch``: a multi-fidelity searcher as a Ray Tune ``Searcher``
  with the ``TrialScheduler`` that pauses trials at their budgets and resumes promotions from checkpoints.

The single-fidelity adapters drive a ``nas.host.study.Study`` through ``nas.adapters.bridge.StudyBridge``;
the multi-fidelity ones a ``nas.host.study.Study``. Optuna and Ray are optional: each adapter
module imports its tool when it is imported and says how to install it.
"""
