"""NSGA-II, Deb, Pratap, Agarwal & Meyarivan (2002), "A Fast and Elitist Multiobjective Genetic
Algorithm: NSGA-II", IEEE TEVC 6(2), Sec. III, on token strings.

    P_0 <- population_size random strings (queried)
    generation t:
        Q_t <- N children: parents by binary tournament on (front rank, crowding distance), uniform
               crossover (probability crossover_prob, each token swapped with probability swap_prob),
               then the space's mutation (one token changed); queried
        R_t <- P_t U Q_t; fast non-dominated sort; P_{t+1} <- the first N of R_t by the
               crowded-comparison operator (fronts in order, the last one cut by crowding distance)

The ranks and crowding distances (``nas.core.pareto``) are those computed on ``R_t``, and the next
generation's tournaments use them, as in the paper. Objectives are the told scores f32[B, M]
(maximized; ``nas.core.multi_objective``); a failed evaluation ranks after every real one.

The library's operators on token strings: ``space.mutate`` (one token changed, always valid; what
regularized evolution uses) and a uniform crossover (``uniform_crossover``), which is also what
Optuna's ``NSGAIISampler`` does by default (``UniformCrossover``, crossover probability 0.9, swapping
probability 0.5; its mutation resamples each parameter with probability 1/N, one change on average,
where ours changes exactly one token, so a child differs from its parents). A crossover child that
is invalid (NAS-Bench-101's edge limit) is skipped like a repeat.

Choices: ``batch_size`` B must divide ``population_size`` N, so a generation is N / B steps and a
step never mixes generations; never re-query (``nas.core.dedup``): children are drawn in rounds of
``mutants_per_round`` per slot until new ones are found, as in ``regularized_evolution``.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import struct

from nas.core.contract import Searcher
from nas.core.dedup import EMPTY, Seen, fill_unique, seen_add
from nas.core.multi_objective import MultiObjectiveOptions, losses
from nas.core.options import positive
from nas.core.pareto import crowded_better, nsga2_order, nsga2_priority
from nas.core.registry import register
from nas.core.unseen_draw import uniform_unseen


@dataclasses.dataclass(frozen=True)
class NSGA2Options(MultiObjectiveOptions):
    """Attributes (and ``num_objectives``):
    population_size: N, parents per generation and children per generation.
    crossover_prob: probability that a child is a crossover of two parents (else a copy of one), 0.9.
    swap_prob: uniform crossover's probability of taking each token from the second parent, 0.5.
    mutants_per_round: children proposed per slot per ``fill_unique`` round (never re-query).
    """

    population_size: int = 20
    crossover_prob: float = 0.9
    swap_prob: float = 0.5
    mutants_per_round: int = 8

    def check(self):
        super().check()
        positive(self, "population_size", "mutants_per_round")
        if self.population_size < 2:
            raise ValueError(f"population_size must be >= 2, got {self.population_size}")
        if self.population_size % self.batch_size:
            raise ValueError(
                f"batch_size ({self.batch_size}) must divide population_size ({self.population_size}): "
                "a generation is population_size / batch_size steps"
            )
        for name in ("crossover_prob", "swap_prob"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must lie in [0, 1], got {getattr(self, name)}")


@struct.dataclass
class NSGA2State:
    seen: Seen
    pop_tokens: jax.Array  # int32[N, S] parents P_t
    pop_scores: jax.Array  # f32[N, M]
    pop_rank: jax.Array  # int32[N]: front rank in R_{t-1}
    pop_crowd: jax.Array  # f32[N]: crowding distance in R_{t-1}
    pop_count: jax.Array  # int32[]: parents present (0 before the first selection)
    kid_tokens: jax.Array  # int32[N, S] children Q_t told so far
    kid_scores: jax.Array  # f32[N, M]
    kid_count: jax.Array  # int32[]
    num_told: jax.Array  # int32[]
    generation: jax.Array  # int32[]


def uniform_crossover(key: jax.Array, a: jax.Array, b: jax.Array, swap_prob: float) -> jax.Array:
    """int32[S]: ``a`` with each token taken from ``b`` with probability ``swap_prob`` (uniform crossover)."""
    return jnp.where(jax.random.bernoulli(key, swap_prob, a.shape), b, a)


def environmental_selection(tokens, scores, mask, n: int):
    """The first ``n`` rows of ``R`` by the crowded-comparison operator: (tokens, scores, ranks, crowding)."""
    ranks, crowd = nsga2_priority(losses(scores), mask)
    keep = nsga2_order(ranks, crowd)[:n]
    return tokens[keep], scores[keep], ranks[keep], crowd[keep]


@register("nsga2")
class NSGA2(Searcher):
    """Deb et al.'s NSGA-II on token strings (module docstring)."""

    Options = NSGA2Options
    compile_profile = "compile_bound"  # compare- and gather-bound, like regularized evolution

    def init(self, key):
        del key
        n, s, m = self.options.population_size, self.space.num_tokens, self.options.num_objectives
        return NSGA2State(
            **self.new_books(NSGA2State, (self.num_steps + 1) * self.batch_size),  # seen, num_told
            pop_tokens=jnp.zeros((n, s), jnp.int32), pop_scores=jnp.full((n, m), -jnp.inf, jnp.float32),
            pop_rank=jnp.full((n,), n, jnp.int32), pop_crowd=jnp.zeros((n,), jnp.float32), pop_count=jnp.int32(0),
            kid_tokens=jnp.zeros((n, s), jnp.int32), kid_scores=jnp.full((n, m), -jnp.inf, jnp.float32),
            kid_count=jnp.int32(0), generation=jnp.int32(0),
        )  # fmt: skip

    def tournament(self, key, state):
        """Binary tournament: the better of two uniform parents by rank, then crowding (ties: the first)."""
        i, j = jax.random.randint(key, (2,), 0, jnp.maximum(state.pop_count, 1))
        b_wins = crowded_better(state.pop_rank[j], state.pop_crowd[j], state.pop_rank[i], state.pop_crowd[i])
        return state.pop_tokens[jnp.where(b_wins, j, i)]

    def child(self, key, state):
        """One child: two tournaments, crossover with probability ``crossover_prob``, one mutation."""
        k1, k2, k_cross, k_swap, k_mut = jax.random.split(key, 5)
        a, b = self.tournament(k1, state), self.tournament(k2, state)
        crossed = uniform_crossover(k_swap, a, b, self.options.swap_prob)
        child = jnp.where(jax.random.bernoulli(k_cross, self.options.crossover_prob), crossed, a)
        return self.space.mutate(k_mut, child)

    def ask(self, key, state):
        b, m = self.batch_size, self.options.mutants_per_round
        k_rand, k_kids = jax.random.split(key)

        def propose(k):
            return jax.vmap(lambda kk: self.child(kk, state))(jax.random.split(k, m * b))

        rand = uniform_unseen(k_rand, self.space, state.seen, b)
        is_init = state.num_told + jnp.arange(b) < self.options.population_size
        rand_ids = jnp.where(is_init, jax.vmap(self.space.string_id)(rand), EMPTY)
        kids, _ = fill_unique(k_kids, self.space, propose, seen_add(state.seen, rand_ids), b, exact_fallback=True)
        # the first generation is random; P % B == 0, so a batch is all random or all children
        return jnp.where(is_init[:, None], rand, kids), state

    def _tell(self, key, tokens, scores, state):
        del key
        n, b = self.options.population_size, tokens.shape[0]  # scores f32[B, M], checked by the base
        at = state.kid_count
        state = state.replace(
            kid_tokens=jax.lax.dynamic_update_slice(state.kid_tokens, tokens.astype(jnp.int32), (at, 0)),
            kid_scores=jax.lax.dynamic_update_slice(state.kid_scores, scores, (at, 0)),
            kid_count=at + b,
        )

        def select(st):
            r_tokens = jnp.concatenate([st.pop_tokens, st.kid_tokens])
            r_scores = jnp.concatenate([st.pop_scores, st.kid_scores])
            mask = jnp.concatenate([jnp.arange(n) < st.pop_count, jnp.ones((n,), bool)])
            tok, sc, rank, crowd = environmental_selection(r_tokens, r_scores, mask, n)
            return st.replace(pop_tokens=tok, pop_scores=sc, pop_rank=rank, pop_crowd=crowd, pop_count=jnp.int32(n),
                              kid_count=jnp.int32(0), generation=st.generation + 1)  # fmt: skip

        state = jax.lax.cond(state.kid_count >= n, select, lambda st: st, state)
        front = jnp.sum((state.pop_rank == 0) & (jnp.arange(n) < state.pop_count))
        return state, {"generation": state.generation.astype(jnp.float32), "front_size": front.astype(jnp.float32)}
