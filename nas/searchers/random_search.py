"""Random search without repeated queries (Li & Talwalkar, 2019, "Random Search and
Reproducibility for Neural Architecture Search", the baseline of every NAS comparison)."""

from __future__ import annotations

import dataclasses

import jax
from flax import struct

from nas.dedup import Seen, fill_unique, seen_add, seen_init
from nas.searcher import Searcher, SearcherOptions, positive, register


@dataclasses.dataclass(frozen=True)
class RandomSearchOptions(SearcherOptions):
    """Attributes:
    pool: candidates drawn per round of ``fill_unique``; a larger pool needs
      fewer rounds late in a long run on a small space.
    """

    pool: int = 16

    def check(self):
        super().check()
        positive(self, "pool")


@struct.dataclass
class RandomSearchState:
    seen: Seen


@register("random_search")
class RandomSearch(Searcher):
    """Uniform samples over valid strings, skipping strings already queried."""

    Options = RandomSearchOptions

    def init(self, key):
        del key
        return RandomSearchState(seen=seen_init(self.max_queries))

    def ask(self, key, state):
        def propose(k):
            return jax.vmap(self.space.sample)(jax.random.split(k, self.options.pool))

        tokens, _ = fill_unique(
            key, self.space, propose, state.seen, self.batch_size, fallback_rounds=0
        )  # the proposal is uniform already
        return tokens, state

    def tell(self, key, tokens, scores, state):
        del key, scores
        ids = jax.vmap(self.space.string_id)(tokens)
        return state.replace(seen=seen_add(state.seen, ids)), {}
