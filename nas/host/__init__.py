"""The tuner: searchers driven from Python for objectives that are not JAX (your own training).

- ``study``: ``Study``, ``create_study``, ``load_study``: Optuna-style ask/tell over any registered searcher
  (its compiled ``ask``/``tell``, the runner's key schedule). Inside, one driver chosen once:
  ``batch_driver`` (a single-fidelity searcher's batches, told when complete) or ``job_driver`` (a
  multi-fidelity searcher's jobs, worker slots and promotions, through ``mf_schedule``: the compiled
  engine's steps, budget and keys, one event at a time).
- ``trials``: ``Trial``, what the objective gets (params and Optuna's ``suggest_*`` calls, checked by
  ``suggest``; budget, parent, checkpoint folders, ``report(value, step)``/``should_prune``),
  ``TrialPruned``, ``NoTrialNow``, ``BudgetSpent``; ``study_budget``: ``max_trials`` or ``max_resource``.
- ``objectives``: ``directions=[...]``, several values per trial (Optuna's multi-objective studies):
  the checks, the row a multi-objective searcher is told, ``best_trials`` (the Pareto front).
- ``pruning``: ASHA's stopping rule and Hyperband's brackets as pruners (jitted decisions on rung arrays).
- ``study_base``: what the Study keeps around its searcher: trials by number under a lock, reports, storage
  and replay, ``trials_dataframe``; ``storage``: the journal file and SQLite; ``study_record``: the
  settings as JSON data.
- ``optimize``: the one loop of ``Study.optimize`` (its time limits, SIGTERM, its arguments' checks);
  ``workers``: where it runs the objective (one interface: inline, threads or an executor, processes, Ray);
  ``progress``: what it shows meanwhile (a redrawn line on a terminal, a record per trial in a log).
- ``task_search``: whole searches on a batch evaluator (the language experiments), thin uses of a Study.

The user guide: docs/tutorials/tuning.md.
"""
