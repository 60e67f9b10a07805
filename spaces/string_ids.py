"""String ids of spaces of any size: exact grid rows where they fit in int32, a 31-bit hash where they do not.

Searchers keep the ids of the strings they queried in int32 arrays (``nas.core.seen_set.Seen``), so a
space's ``string_id`` is an int32. A product grid of fewer than ``GRID_ID_LIMIT = 2**31`` strings (every
tabular benchmark, NAS-Bench-201, most HPO grids) uses its exact row (``Space.mixed_radix``): no two
configurations share an id, and unqueried configurations are drawn as integers (``nas.core.unseen_draw``).
A larger space (a list space of ten parameters with a hundred values each, 10^20 strings; twenty
``Float`` parameters, 101^20) uses ``hash_tokens`` of its canonical string instead. The choice is static,
made from the cardinalities when the program is traced, so the ids, and the histories, of the spaces
that fit are those of the exact rows, bit for bit.

What a hash costs, and what it does not:

- It never makes a searcher query a configuration twice: the hash is a function of the canonical string,
  so one configuration always has one id, and an id in the queried set is never queried again.
- Two different configurations can share an id (a collision); the second one then looks queried and is
  never proposed. The hash behaves as a random function to 31 bits, so a new configuration is mistaken
  for one of ``c`` queried ones with probability at most about ``c / 2**31`` (5e-7 after 1,000
  queries), and a run of ``Q`` queries loses any configuration this way with probability at most about
  ``Q**2 / 2**32`` (2e-4 for ``Q = 1,000``, 0.02 for ``Q = 10,000``). In a space of 10^20
  configurations losing one of them changes nothing a search can observe.
- ``nas.core.dedup.count_repeats`` counts repeats by the strings themselves on a product grid, so a
  collision is not reported as a repeat there.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

GRID_ID_LIMIT = 2**31  # product grids with fewer strings have exact int32 ids (their rows)


def grid_rows_fit(size: int) -> bool:
    """A product grid of ``size`` strings has int32 row ids (``size < GRID_ID_LIMIT``)."""
    return int(size) < GRID_ID_LIMIT


def hash_tokens(tokens: jax.Array) -> jax.Array:
    """A 31-bit hash of a token string (random odd multipliers, then murmur3's finalizer); the collision
    bound is in the module docstring."""
    n = tokens.shape[-1]
    mult = np.random.default_rng(12345).integers(1, 2**31, size=n, dtype=np.uint64) * 2 + 1
    h = jnp.sum(tokens.astype(jnp.uint32) * jnp.asarray(mult.astype(np.uint32)), dtype=jnp.uint32)
    h = h ^ (h >> 16)
    h = h * jnp.uint32(0x85EBCA6B)
    h = h ^ (h >> 13)
    h = h * jnp.uint32(0xC2B2AE35)
    h = h ^ (h >> 16)
    return (h & jnp.uint32(0x7FFFFFFF)).astype(jnp.int32)
