"""The experiment layer: a config file becomes runs, a workdir and reports.

- ``config``: the config schema, its validation, and the benchmark and searchers it builds.
- ``run``: ``run_experiment(config, workdir)``: every selected searcher over many seeds, then reports.
- ``workdir``: the run's directory (atomic files, lock, resume, config check).
- ``report``: summary.json, results.csv, curves.png and the text table.
- ``cost_axis``: every searcher's incumbent against compute (full evaluations, cost, simulated wall-clock).
- ``peers``: other libraries' searchers (Optuna's TPE) run from a host loop beside ours.
- ``host_experiment``: experiments whose evaluations run on the host (language spaces, real training).
- ``cli``: one-line errors and exit codes for the command-line scripts.
"""
