"""Searchers and the machinery that runs them.

- ``nas.core``: the searcher contract, options, registry, never-re-query sets.
- ``nas.searchers``: the built-in searchers (importing it registers them).
- ``nas.engine``: the compiled run machinery (runner, chunked host loop, checkpoints, devices).
- ``nas.experiment``: configs to runs, workdirs, reports, peers, the command line.
- ``nas.host``: ask/tell from Python for objectives that are not JAX.
- ``nas.adapters``: Optuna and Ray Tune integrations.
"""

import spaces as _spaces  # noqa: F401, E402  (installs the finder of moved modules' old paths: spaces.moved)
