"""Searchers driven from the host: a tuner for objectives that are not JAX (your own training).

- ``ask_tell``: ``Study``, an Optuna-style ask/tell API over any registered searcher (its compiled
  ``ask``/``tell``, the runner's key schedule); with a multi-fidelity searcher it builds a
  ``mf_study.MultiFidelityStudy``.
- ``mf_study``: trials with a budget and, for a promotion, the trial (and checkpoint) they continue;
  ``mf_schedule``: the compiled engine's steps, worker slots, budget and keys, one event at a time.
- ``trials``: ``Trial`` (params, budget, parent, checkpoint folders, ``report``/``should_prune``),
  ``TrialPruned``, ``NoTrialNow``, ``BudgetSpent``.
- ``objectives``: ``directions=[...]``, several values per trial (Optuna's multi-objective studies):
  the checks, the row a multi-objective searcher is told, ``best_trials`` (the Pareto front).
- ``pruning``: ASHA's stopping rule and Hyperband's brackets as pruners (jitted decisions on rung arrays).
- ``study_base``: what every Study shares: trials by number under a lock, reports, storage and replay,
  ``trials_dataframe``; ``storage``: the journal file and SQLite.
- ``workers``: ``optimize`` with W workers (inline, threads); ``process_workers``: fresh worker processes;
  ``ray_workers``: Ray tasks.
- ``host_search``: a whole search run of a Python objective through a ``Study``.
- ``multi_fidelity``: a multi-fidelity searcher's run on a batch evaluator (one worker, the compiled
  engine's keys and charges).

The user guide: docs/tuner.md.
"""
