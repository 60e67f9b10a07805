"""Local search (hill climbing with restarts), White, Nolen & Savani 2020,
"Local Search is State of the Art for NAS Benchmarks" (arXiv:2005.02960).

The paper's Algorithm 1: evaluate a random architecture ``v``; repeatedly
evaluate its neighbourhood ``N(v)`` (all strings one edit away) and move to
the best neighbour while it improves; stop at a local optimum. Its experiments
(the released code, ``local_search(num_init=10, query_full_nbhd=False,
stop_at_minimum=True)`` in naszilla) use these details, which we follow:

1. Start: query ``num_init`` (10) new random strings (uniform over the unqueried strings; an
   integer draw each where string ids are grid rows, ``nas.core.unseen_draw``); the best is the centre.
2. Query the centre's not-yet-queried neighbours one at a time in a random
   order (the code shuffles the neighbourhood).
   - ``full_neighborhood=False`` (the code's default): move to the first
     neighbour that beats the centre ("first improvement").
   - ``full_neighborhood=True`` (Algorithm 1): query the whole neighbourhood,
     then move to its best member if it beats the centre.
3. When the centre has no unqueried neighbour left and none improved, it is a
   local optimum: restart at step 1 with fresh random strings.
Strings already queried are never queried again (the code keeps a hash dict;
we keep ``nas.core.dedup.Seen``), so a neighbour queried earlier is skipped, not
re-scored.

``batch_size`` B > 1 (an extension): a step queries the next B neighbours in
the random order and moves to the best improving one among them; when fewer
than B unqueried neighbours remain, the batch is topped up with random
strings that are queried but do not steer the search. B = 1 is the paper's
algorithm.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import struct

from nas.core.contract import Searcher
from nas.core.dedup import EMPTY, Seen, computed_where, first_occurrence, pack_first, seen_add, seen_contains
from nas.core.options import SearcherOptions, positive
from nas.core.registry import register
from nas.core.unseen_draw import uniform_unseen

INIT, CLIMB = 0, 1  # phases
KIND_RANDOM, KIND_NEIGHBOR, KIND_FILLER = 0, 1, 2  # what each asked slot is


@struct.dataclass
class LocalSearchState:
    seen: Seen
    phase: jax.Array  # int32[]: INIT (drawing the random start) or CLIMB
    init_count: jax.Array  # int32[]: random start strings told in this restart
    center: jax.Array  # int32[N]: current centre (in INIT: best random string so far)
    center_score: jax.Array  # f32[]
    perm: jax.Array  # int32[K]: random order of the centre's neighbourhood
    sweep_tokens: jax.Array  # int32[N]: best neighbour queried around this centre
    sweep_score: jax.Array  # f32[]
    kinds: jax.Array  # int32[B]: KIND_* of each slot of the last ask
    restarts: jax.Array  # int32[]


@dataclasses.dataclass(frozen=True)
class LocalSearchOptions(SearcherOptions):
    """Attributes:
    num_init: random strings queried at each (re)start; the best is the first centre.
    full_neighborhood: query the whole neighbourhood before moving (Algorithm 1)
      instead of moving at the first improvement (the released code's default).
    """

    num_init: int = 10
    full_neighborhood: bool = False

    def check(self):
        super().check()
        positive(self, "num_init")


@register("local_search")
class LocalSearch(Searcher):
    """Hill climbing over ``space.neighbors`` with random restarts."""

    Options = LocalSearchOptions
    # compile-bound at XLA's default level; the loop emitters: the same histories, about 40 % less compile
    compile_profile = "integer_steps"  # (nas.engine.compile_policy)

    def setup(self):
        probe = jax.ShapeDtypeStruct((self.space.num_tokens,), jnp.int32)  # shapes only: nothing to compile
        self.num_neighbors = int(jax.eval_shape(self.space.neighbors, probe)[0].shape[0])

    def init(self, key):
        n, b, k = self.space.num_tokens, self.batch_size, self.num_neighbors
        return LocalSearchState(
            **self.new_books(LocalSearchState, (self.num_steps + 1) * b),  # + b: room for a batch's tentative ids
            phase=jnp.int32(INIT),
            init_count=jnp.int32(0),
            center=jnp.zeros((n,), jnp.int32),
            center_score=jnp.float32(-jnp.inf),
            perm=jax.random.permutation(key, k).astype(jnp.int32),
            sweep_tokens=jnp.zeros((n,), jnp.int32),
            sweep_score=jnp.float32(-jnp.inf),
            kinds=jnp.zeros((b,), jnp.int32),
            restarts=jnp.int32(0),
        )

    def _next_neighbors(self, center, perm, seen):
        """The first B unqueried neighbours of ``center`` in ``perm`` order, and how many exist."""
        b = self.batch_size
        nbrs, mask = self.space.neighbors(center)
        nbrs, mask = nbrs[perm], mask[perm]
        ids = jax.vmap(self.space.string_id)(nbrs)
        ok = mask & (ids >= 0) & ~seen_contains(seen, ids) & first_occurrence(ids)
        (out,), _ = pack_first(ok, b, nbrs.astype(jnp.int32))
        (out_ids,), _ = pack_first(ok, b, ids, fill=EMPTY)
        return out, out_ids, jnp.sum(ok)

    def _moved(self, state, tokens, score, key):
        """State with the centre moved to ``tokens`` and a fresh neighbour order."""
        return state.replace(
            center=tokens,
            center_score=score,
            perm=jax.random.permutation(key, self.num_neighbors).astype(jnp.int32),
            sweep_score=jnp.float32(-jnp.inf),
        )

    def ask(self, key, state):
        b = self.batch_size
        k_perm, k_rand = jax.random.split(key)
        climbing = state.phase == CLIMB
        if self.options.full_neighborhood:
            # a finished sweep moves to its best neighbour when that improves (Algorithm 1)
            _, _, avail = self._next_neighbors(state.center, state.perm, state.seen)
            move = climbing & (avail == 0) & (state.sweep_score > state.center_score)
            moved = self._moved(state, state.sweep_tokens, state.sweep_score, k_perm)
            state = jax.tree.map(lambda x, y: jnp.where(move, x, y), moved, state)
        nbrs, nbr_ids, avail = self._next_neighbors(state.center, state.perm, state.seen)
        # no unqueried neighbour and no move: a local optimum, restart from random strings
        restart = climbing & (avail == 0)
        climbing = climbing & ~restart
        state = state.replace(
            phase=jnp.where(restart, INIT, state.phase),
            init_count=jnp.where(restart, 0, state.init_count),
            center_score=jnp.where(restart, -jnp.inf, state.center_score),
            restarts=state.restarts + restart.astype(jnp.int32),
        )
        n_nbr = jnp.where(climbing, jnp.minimum(avail, b), 0)

        seen_n = seen_add(state.seen, jnp.where(jnp.arange(b) < n_nbr, nbr_ids, EMPTY))
        # read only where neighbours leave slots: a one-step program draws them only then (nas.core.dedup), with
        # no head (a second copy of the sampling to compile for a draw that runs at restarts)
        rand = computed_where(n_nbr < b, lambda: uniform_unseen(k_rand, self.space, seen_n, b, head=False))
        slots = jnp.arange(b)
        is_nbr = slots < n_nbr
        tokens = jnp.where(is_nbr[:, None], nbrs, rand[jnp.clip(slots - n_nbr, 0, b - 1)])
        kinds = jnp.where(is_nbr, KIND_NEIGHBOR, jnp.where(climbing, KIND_FILLER, KIND_RANDOM))
        return tokens, state.replace(kinds=kinds.astype(jnp.int32))

    def _tell(self, key, tokens, scores, state):
        tokens = tokens.astype(jnp.int32)
        scores = scores.astype(jnp.float32)
        k_start, k_move = jax.random.split(key)
        # random start strings: the best of them becomes the centre once num_init are in
        r_scores = jnp.where(state.kinds == KIND_RANDOM, scores, -jnp.inf)
        r_best = jnp.argmax(r_scores)
        better = r_scores[r_best] > state.center_score
        state = state.replace(
            center=jnp.where(better, tokens[r_best], state.center),
            center_score=jnp.where(better, r_scores[r_best], state.center_score),
            init_count=state.init_count + jnp.sum(state.kinds == KIND_RANDOM),
        )
        start = (state.phase == INIT) & (state.init_count >= self.options.num_init)
        started = self._moved(state, state.center, state.center_score, k_start).replace(phase=jnp.int32(CLIMB))
        state = jax.tree.map(lambda x, y: jnp.where(start, x, y), started, state)
        # neighbours: remember the sweep's best; first improvement moves at once
        n_scores = jnp.where(state.kinds == KIND_NEIGHBOR, scores, -jnp.inf)
        n_best = jnp.argmax(n_scores)
        sweep_better = n_scores[n_best] > state.sweep_score
        state = state.replace(
            sweep_tokens=jnp.where(sweep_better, tokens[n_best], state.sweep_tokens),
            sweep_score=jnp.where(sweep_better, n_scores[n_best], state.sweep_score),
        )
        if not self.options.full_neighborhood:
            move = n_scores[n_best] > state.center_score
            moved = self._moved(state, tokens[n_best], n_scores[n_best], k_move)
            state = jax.tree.map(lambda x, y: jnp.where(move, x, y), moved, state)
        metrics = {"restarts": state.restarts.astype(jnp.float32), "center_score": state.center_score}
        return state, metrics
