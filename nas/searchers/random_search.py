"""Random search without repeated queries (Li & Talwalkar, 2019, "Random Search and
Reproducibility for Neural Architecture Search", the baseline of every NAS comparison).

Each query is uniform over the strings not queried yet. On spaces whose string
ids are grid rows (``Space.ids_are_grid_rows``: NAS-Bench-201, HPO grids) the
whole run's ids are drawn at ``init`` as a uniformly ordered sample without
replacement (``nas.core.unseen_draw.draw_distinct_ids``, what numpy's
``Generator.choice(replace=False)`` returns) and ``ask`` reads the next ones;
elsewhere (NAS-Bench-101's isomorphic cells, constrained or conditional spaces)
rounds of ``pool`` uniform samples are filtered against the queried set
(``nas.core.dedup.fill_unique``). Both draw from the same distribution.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import struct

from nas.core.contract import Searcher
from nas.core.dedup import Seen, fill_unique
from nas.core.options import SearcherOptions, positive
from nas.core.registry import register
from nas.core.unseen_draw import configuration_ranks, decode, draw_distinct_ids, exact, uniform_proposal


@dataclasses.dataclass(frozen=True)
class RandomSearchOptions(SearcherOptions):
    """Attributes:
    pool: candidates drawn per round of ``fill_unique`` (spaces whose ids are not grid
      rows; unused elsewhere); a larger pool needs fewer rounds late in a long run on a small space.
    """

    pool: int = 16

    def check(self):
        super().check()
        positive(self, "pool")


@struct.dataclass
class RandomSearchState:
    seen: Seen | None  # the queried ids (spaces whose ids are not grid rows)
    order: jax.Array | None  # int32[steps * B]: the run's ids (grid-row spaces)
    num_told: jax.Array  # int32[]: strings told so far (counted by the base, Searcher.record_told)


@register("random_search")
class RandomSearch(Searcher):
    """Uniform samples over valid strings, skipping strings already queried."""

    Options = RandomSearchOptions
    # compile-bound at XLA's default level; the loop emitters: the same histories, about 40 % less compile
    compile_profile = "integer_steps"  # (nas.engine.compile_policy)
    continuous_values = True  # a Study gives it fine grids: ranges are effectively continuous (spaces.params)
    # its programs trace and lower in ~0.2 s; read from the program store they started no sooner, and the
    # process's peak RSS was 14-20 MB higher (scripts.bench.bench_tuner): traced as they are
    stored_programs = False

    def setup(self):
        self.grid_rows = exact(self.space)  # grid rows, or configurations listed (ranks drawn as integers)

    def init(self, key):
        total = self.num_steps * self.batch_size
        books = self.new_books(RandomSearchState, total)  # seen, num_told
        if self.grid_rows:  # the drawn order holds the run's ids: no seen set
            order = draw_distinct_ids(key, configuration_ranks(self.space)[0], total)
            return RandomSearchState(order=order, **{**books, "seen": None})
        return RandomSearchState(order=None, **books)

    def ask(self, key, state):
        b = self.batch_size
        if self.grid_rows:
            ids = jax.lax.dynamic_slice(state.order, (jnp.minimum(state.num_told, state.order.shape[0] - b),), (b,))
            return jax.vmap(lambda i: decode(self.space, i))(ids), state

        propose, head = uniform_proposal(self.space, self.options.pool, b)
        tokens, _ = fill_unique(key, self.space, propose, state.seen, b, fallback_rounds=0, propose_head=head)
        return tokens, state

    def _tell(self, key, tokens, scores, state):
        del key, tokens, scores
        return state, {}  # nothing but the books (the base: seen, num_told)
