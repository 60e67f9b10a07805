"""Adapters: the registered searchers inside tools researchers already use.

- ``nas.adapters.optuna_sampler.SearcherSampler``: a searcher as an Optuna sampler.
- ``nas.adapters.ray_tune.SearcherSearch``: a searcher as a Ray Tune ``Searcher``.

Both drive a ``nas.host.ask_tell.Study`` through ``nas.adapters.bridge.StudyBridge``. Optuna and Ray are
optional: each adapter module imports its tool when it is imported and says how to install it.
"""
