"""Random scalarizations: BANANAS and local search on several objectives, ParEGO's way.

Knowles (2006), "ParEGO: A Hybrid Algorithm With On-Line Landscape Approximation for Expensive
Multiobjective Optimization Problems", IEEE TEVC 10(1), Sec. III: at every iteration draw a weight
vector ``lambda`` uniformly from the ``C(s + M - 1, M - 1)`` vectors whose components are multiples of
``1/s`` summing to 1 (``parego_weights``: s = 10 for two objectives, 5 for three, 4 beyond), normalize
each objective to [0, 1] by the lowest and highest values observed so far, and scalarize with the
augmented Chebyshev function

    f_lambda(x) = max_j lambda_j c_j(x) + rho * sum_j lambda_j c_j(x),   rho = 0.05,

where ``c_j`` is objective ``j``'s normalized loss (0 = the best seen). The single-objective machinery
then works on ``-f_lambda`` (higher is better). This is ParEGO, not Paria et al. (2019): weights are
drawn uniformly from ParEGO's simplex grid and the scalarization is the augmented Chebyshev; no
prior over weights is integrated into the acquisition.

- ``parego_bananas``: BANANAS (``nas.searchers.bananas``) whose predictor is fitted, at every step, on
  all observations scalarized with that step's weights (one weight vector per batch of ``k`` queries);
  its candidates mutate the best observations under the same scalarization.
- ``parego_local_search``: local search (``nas.searchers.local_search``) with one weight vector per
  climb, drawn at every (re)start: a changing scalarization within a climb would make "a local
  optimum" meaningless. Moves compare neighbours under the current weights and the current
  normalization (recomputed from all observations after every result).

Told scores: f32[B, M] to maximize (``nas.core.multi_objective``); a failed evaluation stays ``-inf``.
"""

from __future__ import annotations

import dataclasses
import itertools

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from nas.core.multi_objective import MultiObjectiveOptions
from nas.core.registry import register
from nas.searchers.bananas import Bananas, BananasOptions
from nas.searchers.bo import BOState
from nas.searchers.local_search import LocalSearch, LocalSearchOptions, LocalSearchState

RHO = 0.05  # ParEGO's augmentation weight
WEIGHT_FOLD = 0x5CA1A2  # the weight draw's key: fold_in(ask key, WEIGHT_FOLD), the inner searcher's keys unchanged


def parego_weights(m: int) -> np.ndarray:
    """f32[K, M]: ParEGO's weight vectors, every ``(l_1, ..., l_M) / s`` with whole ``l_j >= 0`` summing to ``s``."""
    s = {2: 10, 3: 5}.get(m, 4)
    rows = [c for c in itertools.product(range(s + 1), repeat=m) if sum(c) == s]
    return np.asarray(rows, np.float32) / s


def observed_bounds(scores: jax.Array, mask: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(lowest, highest) f32[M] of the finite rows of ``scores[n, M]`` under ``mask`` (inf / -inf when none)."""
    ok = mask & jnp.all(jnp.isfinite(scores), axis=-1)
    lo = jnp.min(jnp.where(ok[:, None], scores, jnp.inf), axis=0)
    hi = jnp.max(jnp.where(ok[:, None], scores, -jnp.inf), axis=0)
    return lo, hi


def chebyshev_score(scores: jax.Array, weights: jax.Array, lo: jax.Array, hi: jax.Array) -> jax.Array:
    """f32[...]: ``-f_lambda`` (module docstring) of score vectors ``[..., M]`` (to maximize) normalized by
    ``[lo, hi]``; ``-inf`` for a failed evaluation. A constant objective (hi == lo) contributes 0."""
    span = hi - lo
    c = jnp.where(span > 0, (hi - scores) / jnp.where(span > 0, span, 1.0), 0.0)
    f = jnp.max(weights * c, axis=-1) + RHO * jnp.sum(weights * c, axis=-1)
    return jnp.where(jnp.all(jnp.isfinite(scores), axis=-1), -f, -jnp.inf)


def draw_weights(key: jax.Array, m: int) -> jax.Array:
    """One of ParEGO's weight vectors, uniformly."""
    grid = jnp.asarray(parego_weights(m))
    return grid[jax.random.randint(key, (), 0, grid.shape[0])]


# -- BANANAS ---------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class ScalarizedBananasOptions(MultiObjectiveOptions, BananasOptions):
    """BANANAS' options (``nas.searchers.bananas``) and ``num_objectives``."""


@struct.dataclass
class ScalarizedBOState:
    bo: BOState  # the BO loop's data; its scores are rewritten with each step's scalarization
    values: jax.Array  # f32[C, M]: the told score vectors, in order


@register("parego_bananas")
class ParEGOBananas(Bananas):
    """BANANAS on ParEGO's random augmented-Chebyshev scalarizations, new weights every step."""

    Options = ScalarizedBananasOptions
    random_steps_light = False  # its random steps scalarize the objectives (float arithmetic)
    books_in = "bo"  # the BO state keeps the books (Searcher.record_told)

    def init(self, key):
        c, m = self.capacity, self.options.num_objectives
        return ScalarizedBOState(bo=super().init(key), values=jnp.full((c, m), -jnp.inf, jnp.float32))

    def scalarized(self, key, state) -> BOState:
        """The BO data with every observation scalarized under a weight vector drawn from ``key``."""
        weights = draw_weights(key, self.options.num_objectives)
        seen = jnp.arange(state.values.shape[0]) < state.bo.count
        lo, hi = observed_bounds(state.values, seen)
        scores = jnp.where(seen, chebyshev_score(state.values, weights, lo, hi), -jnp.inf)
        return state.bo.replace(scores=scores)

    def ask(self, key, state):
        tokens, _ = super().ask(key, self.scalarized(jax.random.fold_in(key, WEIGHT_FOLD), state))
        return tokens, state

    def _tell(self, key, tokens, scores, state):  # scores f32[B, M], checked by the base
        values = jax.lax.dynamic_update_slice(state.values, scores, (state.bo.count, 0))
        bo, metrics = super()._tell(key, tokens, scores[:, 0], state.bo)
        return ScalarizedBOState(bo=bo, values=values), metrics


# -- local search ----------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class ScalarizedLocalSearchOptions(MultiObjectiveOptions, LocalSearchOptions):
    """Local search's options (``nas.searchers.local_search``) and ``num_objectives``."""


@struct.dataclass
class ScalarizedLSState:
    ls: LocalSearchState  # the climb; its centre and sweep scores are rescalarized after every result
    weights: jax.Array  # f32[M]: this climb's weights
    center_values: jax.Array  # f32[M]: the centre's score vector (-inf: no centre)
    sweep_values: jax.Array  # f32[M]: the best neighbour's of this sweep
    lo: jax.Array  # f32[M]: lowest score seen per objective
    hi: jax.Array  # f32[M]: highest


def _matching_row(tokens: jax.Array, target: jax.Array, values: jax.Array, old: jax.Array) -> jax.Array:
    """The score vector of the row of ``tokens`` equal to ``target``, else ``old`` (a string is queried once)."""
    match = jnp.all(tokens == target, axis=-1)
    return jnp.where(jnp.any(match), values[jnp.argmax(match)], old)


@register("parego_local_search")
class ParEGOLocalSearch(LocalSearch):
    """Local search on ParEGO's augmented-Chebyshev scalarization, new weights at every (re)start."""

    Options = ScalarizedLocalSearchOptions
    books_in = "ls"  # the climb's state keeps the books (Searcher.record_told)

    def init(self, key):
        m = self.options.num_objectives
        none = jnp.full((m,), -jnp.inf, jnp.float32)
        return ScalarizedLSState(
            ls=super().init(key), weights=jnp.full((m,), 1.0 / m, jnp.float32), center_values=none,
            sweep_values=none, lo=jnp.full((m,), jnp.inf, jnp.float32), hi=none,
        )  # fmt: skip

    def ask(self, key, state):
        old_center = state.ls.center
        tokens, ls = super().ask(key, state.ls)
        fresh = (ls.phase == 0) & (ls.init_count == 0)  # the first ask of a (re)start: new weights
        weights = jnp.where(fresh, draw_weights(jax.random.fold_in(key, WEIGHT_FOLD), self.options.num_objectives),
                            state.weights)  # fmt: skip
        restarted = jnp.isneginf(ls.center_score)
        moved = jnp.any(ls.center != old_center)  # a full-neighbourhood sweep moved to its best neighbour
        center_values = jnp.where(restarted, -jnp.inf, jnp.where(moved, state.sweep_values, state.center_values))
        sweep_values = jnp.where(jnp.isneginf(ls.sweep_score), -jnp.inf, state.sweep_values)
        return tokens, state.replace(ls=ls, weights=weights, center_values=center_values, sweep_values=sweep_values)

    def _tell(self, key, tokens, scores, state):  # scores f32[B, M], checked by the base
        lo, hi = observed_bounds(scores, jnp.ones((tokens.shape[0],), bool))
        lo, hi = jnp.minimum(lo, state.lo), jnp.maximum(hi, state.hi)  # every observation so far

        def scal(v):
            return chebyshev_score(v, state.weights, lo, hi)

        ls = state.ls.replace(center_score=scal(state.center_values), sweep_score=scal(state.sweep_values))
        ls, metrics = super()._tell(key, tokens, scal(scores), ls)
        center_values = _matching_row(tokens, ls.center, scores, state.center_values)
        sweep_values = _matching_row(tokens, ls.sweep_tokens, scores, state.sweep_values)
        sweep_values = jnp.where(jnp.isneginf(ls.sweep_score), -jnp.inf, sweep_values)
        state = state.replace(ls=ls, center_values=center_values, sweep_values=sweep_values, lo=lo, hi=hi)
        return state, metrics
