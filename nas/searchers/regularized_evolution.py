"""Regularized (aging) evolution, Real et al. 2019, "Regularized Evolution for
Image Classifier Architecture Search", Algorithm 1.

    population <- num_init random strings (queried)
    repeat:
        sample <- tournament_size members drawn uniformly (with replacement)
        parent <- the sample's best by validation score
        child  <- mutate(parent); query it
        append child to the population; remove the OLDEST member
        (regularization: age, not fitness, decides who dies)

Defaults follow BANANAS' experiments (White et al. 2021, sec. 5: "the same
hyperparameters as in the NASBench paper, but changing the population size
from 50 to 30"): ``population_size=30``, ``tournament_size=10``. The mutation
is the space's ``mutate`` (one token changed to a different value on
NAS-Bench-201 and HPO grids, as in BANANAS' code).

Choices (documented differences from the sources):
- Initial population: ``num_init`` random strings, ``0`` meaning
  ``population_size`` (Real et al.: P random models). BANANAS' code starts with
  10 random strings and lets children grow the population up to its size;
  ``num_init=10`` gives that (the population is a ring buffer that fills first,
  then replaces its oldest member).
- Random strings are uniform over the strings not queried yet: one integer draw each where string
  ids are grid rows (``nas.core.unseen_draw``), rejection sampling elsewhere.
- Never re-query (the library's promise, ``nas.core.dedup``): a child that was already queried is not spent.
  ``fill_unique`` draws rounds of ``mutants_per_round`` mutants from fresh
  tournaments and takes the first new string, so the selection pressure is the
  paper's; the sources simply re-query duplicates.
- ``batch_size`` B > 1: B independent tournaments per step, their children are
  appended in order (B = 1 is the paper's sequential algorithm).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import struct

from nas.core.contract import Searcher
from nas.core.dedup import EMPTY, Seen, computed_where, fill_unique, seen_add
from nas.core.options import SearcherOptions, positive
from nas.core.registry import register
from nas.core.unseen_draw import uniform_unseen


@dataclasses.dataclass(frozen=True)
class RegularizedEvolutionOptions(SearcherOptions):
    """Attributes:
    population_size: P, members alive at once.
    tournament_size: members drawn (with replacement) per tournament.
    num_init: random strings that start the population (0 = ``population_size``).
    mutants_per_round: mutants proposed per ``fill_unique`` round (never-re-query).
    """

    population_size: int = 30
    tournament_size: int = 10
    num_init: int = 0
    mutants_per_round: int = 8

    def check(self):
        super().check()
        positive(self, "population_size", "tournament_size", "mutants_per_round")
        if self.tournament_size > self.population_size:
            raise ValueError(
                f"tournament_size ({self.tournament_size}) must be <= population_size ({self.population_size})"
            )
        if not 0 <= self.num_init <= self.population_size:
            raise ValueError(
                f"num_init must be in [0, population_size={self.population_size}] (0 = population_size), "
                f"got {self.num_init}"
            )


@struct.dataclass
class EvolutionState:
    seen: Seen
    pop_tokens: jax.Array  # int32[P, N] ring buffer of members
    pop_scores: jax.Array  # f32[P]
    pop_count: jax.Array  # int32[]: members present (<= P)
    pop_next: jax.Array  # int32[]: ring slot the next member goes to (the oldest once full)
    num_told: jax.Array  # int32[]: queries told so far


@register("regularized_evolution")
class RegularizedEvolution(Searcher):
    """Aging evolution with tournament selection (Real et al. 2019, Alg. 1)."""

    Options = RegularizedEvolutionOptions
    # compile-bound at XLA's default level; the loop emitters: the same histories, about 40 % less compile
    compile_profile = "integer_steps"  # (nas.engine.compile_policy)

    @property
    def num_init(self) -> int:
        return self.options.num_init or self.options.population_size

    def init(self, key):
        del key
        p, n = self.options.population_size, self.space.num_tokens
        return EvolutionState(
            # seen (+ B: room for a batch's tentative ids) and num_told
            **self.new_books(EvolutionState, (self.num_steps + 1) * self.batch_size),
            pop_tokens=jnp.zeros((p, n), jnp.int32),
            pop_scores=jnp.full((p,), -jnp.inf, jnp.float32),
            pop_count=jnp.int32(0),
            pop_next=jnp.int32(0),
        )

    def _tournament(self, key, state):
        """Parent = best of ``tournament_size`` uniform draws from the population."""
        u = jax.random.uniform(key, (self.options.tournament_size,))
        idx = jnp.minimum((u * state.pop_count).astype(jnp.int32), jnp.maximum(state.pop_count - 1, 0))
        # population slots are filled 0..count-1 first, so idx always points at a member
        win = idx[jnp.argmax(state.pop_scores[idx])]
        return state.pop_tokens[win]

    def ask(self, key, state):
        b, m = self.batch_size, self.options.mutants_per_round
        k_rand, k_child = jax.random.split(key)

        def propose_children(k):
            k_sel, k_mut = jax.random.split(k)
            parents = jax.vmap(lambda kk: self._tournament(kk, state))(jax.random.split(k_sel, b))  # [B, N]
            keys = jax.random.split(k_mut, m * b).reshape(m, b, -1)
            # mutant-major order: the first round offers one child of each of the B parents
            kids = jax.vmap(lambda kr: jax.vmap(self.space.mutate)(kr, parents))(keys)  # [M, B, N]
            return kids.reshape(m * b, -1)

        def child(k, j):  # row j of propose_children(k) with B = 1: the j-th mutant of the one parent
            k_sel, k_mut = jax.random.split(k)
            parent = self._tournament(jax.random.split(k_sel, 1)[0], state)
            return self.space.mutate(jax.random.split(k_mut, m)[j], parent)

        is_init = state.num_told + jnp.arange(b) < self.num_init
        # read only in the random phase: a one-step program draws them only there (nas.core.dedup), with no
        # head (each proposal's first rows alone): a second copy of the sampling and of the mutation compiled
        # for about 1.4 s more CPU and ran no faster than the M mutants and the pool of random strings
        rand = computed_where(jnp.any(is_init), lambda: uniform_unseen(k_rand, self.space, state.seen, b, head=False))
        # children must also differ from the random strings a mixed batch queries
        rand_ids = jnp.where(is_init, jax.vmap(self.space.string_id)(rand), EMPTY)
        kids, _ = fill_unique(
            k_child, self.space, propose_children, seen_add(state.seen, rand_ids), b, exact_fallback=True,
            propose_row=(child, m),  # a one-step program of one trial: one mutant at a time until one is new
        )
        # a batch straddling the end of the random phase keeps its random slots first
        n_rand = jnp.sum(is_init)
        kid_idx = jnp.clip(jnp.arange(b) - n_rand, 0, b - 1)
        tokens = jnp.where(is_init[:, None], rand, kids[kid_idx])
        return tokens, state

    def _tell(self, key, tokens, scores, state):
        del key
        p = self.options.population_size

        def add(st, x):
            tok, sc = x
            count, nxt = st.pop_count, st.pop_next
            st = st.replace(
                pop_tokens=st.pop_tokens.at[nxt].set(tok),
                pop_scores=st.pop_scores.at[nxt].set(sc),
                pop_count=jnp.minimum(count + 1, p),
                pop_next=(nxt + 1) % p,  # once full, the next slot holds the oldest member
            )
            return st, None

        xs = (tokens.astype(jnp.int32), scores.astype(jnp.float32))
        state, _ = jax.lax.scan(add, state, xs, unroll=len(scores) <= 4)  # a few members: no loop to run
        return state, {"population_best": jnp.max(state.pop_scores)}
