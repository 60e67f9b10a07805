"""Random search without repeated queries (Li & Talwalkar, 2019 baseline)."""

from __future__ import annotations

import jax
from flax import struct

from nas.dedup import Seen, fill_unique, seen_add, seen_init
from nas.searcher import Searcher, register


@struct.dataclass
class RandomSearchState:
    seen: Seen


@register("random_search")
class RandomSearch(Searcher):
    """Uniform samples over valid strings, skipping strings already queried.

    ``pool`` candidates are drawn per round of ``fill_unique``; a larger pool
    needs fewer rounds late in a long run on a small space.
    """

    def __init__(self, space, batch_size: int = 1, max_queries: int = 150, pool: int = 16):
        super().__init__(space, batch_size, max_queries)
        self.pool = int(pool)

    def init(self, key):
        del key
        return RandomSearchState(seen=seen_init(self.max_queries))

    def ask(self, key, state):
        def propose(k):
            return jax.vmap(self.space.sample)(jax.random.split(k, self.pool))

        tokens, _ = fill_unique(key, self.space, propose, state.seen, self.batch_size)
        return tokens, state

    def tell(self, key, tokens, scores, state):
        del key, scores
        ids = jax.vmap(self.space.string_id)(tokens)
        return state.replace(seen=seen_add(state.seen, ids)), {}
