"""The searcher contract and the machinery every searcher shares; importing it changes nothing in JAX.

- ``contract``: the ``Searcher`` base class (pure ``init/ask/tell`` on a stateless object) and its hooks.
- ``options``: searcher options as frozen dataclasses of checked plain values (a searcher's identity).
- ``registry``: ``register`` and ``make_searcher``; the built-in searchers are read from ``nas.searchers``.
- ``seen_set``: the queried ids (``Seen``, sorted, fixed capacity) and exact uniform draws outside them.
- ``dedup``: never spend a query twice (``fill_unique`` from any proposal; ``count_repeats``).
- ``unseen_draw``: uniform draws among the strings not queried yet.
- ``multi_fidelity``, ``multi_objective``, ``pareto``, ``hypervolume``: the job contract of the
  multi-fidelity searchers and the fronts of the multi-objective ones.
- ``threefry_cpu``: a faster CPU lowering of JAX's random bits (the same bits), which the engine installs
  when it compiles a searcher's programs (``nas.engine.compile_policy.prepare_compile``).
"""
