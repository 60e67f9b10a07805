"""The experiment layer: a config file becomes a run plan, runs, a workdir and reports.

- ``config``: the config schema, ``searcher_configs`` and ``validate_config``; ``config_fields`` checks and
  reads the fields (data files, the benchmark), ``searcher_plan`` each searcher entry (options, budget).
- ``plan``: ``make_plan(config, workdir)``: the typed run plan, checked once; every later step takes it.
- ``registry``: every searcher a config can name, the compiled ones and the peers, in one lookup.
- ``run``: ``run_experiment(config, workdir)``: every selected searcher over many seeds, then reports.
- ``workdir``: the run's directory (atomic files, lock, resume, config check).
- ``report``: summary.json, results.csv, curves.png and the text table.
- ``cost_axis``: every searcher's incumbent against compute (full evaluations, cost, simulated wall-clock).
- ``peers``: other libraries' searchers (Optuna's TPE, Syne Tune's) run from a Python loop beside ours;
  ``peer_base`` (what a peer is, and its registry), ``tpe_peer``, ``syne_tune_peer``, ``mo_peers``.
- ``task_experiment``: experiments on a training task (language spaces, each architecture really trained).
- ``cli``: one-line errors and exit codes for the command-line scripts.
"""
