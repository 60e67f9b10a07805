"""The searcher contract and the machinery every searcher shares.

- ``searcher``: the contract (pure ``init/ask/tell`` on a stateless object), options as frozen
  dataclasses (a searcher's identity) and the registry (``register``, ``make_searcher``).
- ``dedup``: never spend a query twice (``Seen``, a sorted fixed-capacity id set; ``fill_unique``).
- ``unseen_draw``: uniform draws among the strings not queried yet.
"""

from nas.core import threefry_cpu

threefry_cpu.install()  # JAX's random bits compiled unrolled on the CPU: the same numbers, a fraction of the XLA time
