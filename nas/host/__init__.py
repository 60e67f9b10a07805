"""Searchers driven from the host, for objectives that are not JAX.

- ``ask_tell``: ``Study``, an Optuna-style ask/tell API over any registered searcher (its compiled
  ``ask``/``tell``, the runner's key schedule).
- ``host_search``: a whole search run of a Python objective through a ``Study``.
- ``multi_fidelity``: a multi-fidelity searcher's run on a host objective (one worker, the compiled
  engine's keys and charges).
"""
