"""Multi-objective regularized evolution: aging evolution whose tournaments compare Pareto ranks.

Real et al. (2019)'s regularized evolution (``nas.searchers.regularized_evolution``: a population
that ages out its oldest member, tournaments of ``tournament_size`` uniform draws, one mutation per
child) with the fitness replaced by a multi-objective priority, as Syne Tune's
``MultiObjectiveRegularizedEvolution`` (MO-REA; Salinas, Perrone, Archambeau & Cruchant, 2021, "A
multi-objective perspective on jointly tuning hardware and hyperparameters"): after every result the
population is sorted into non-dominated fronts, and a tournament's winner is its member with the best
priority. Our priority within a front is NSGA-II's crowding distance (Deb et al. 2002,
``nas.core.pareto``: lower front first, then the less crowded); Syne Tune orders a front by an
epsilon-net (farthest-point order from the member best in the first objective). Syne Tune computes the
priorities with the new member appended and before the oldest leaves; here after it leaves.

Everything else (initial random population of ``num_init``, never re-query, batches of independent
tournaments) is regularized evolution's. Told scores: f32[B, M] to maximize (``nas.core.multi_objective``).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import struct

from nas.core.multi_objective import MultiObjectiveOptions, losses
from nas.core.pareto import nsga2_priority
from nas.core.registry import register
from nas.searchers.regularized_evolution import EvolutionState, RegularizedEvolution, RegularizedEvolutionOptions


@dataclasses.dataclass(frozen=True)
class MOEvolutionOptions(MultiObjectiveOptions, RegularizedEvolutionOptions):
    """Regularized evolution's options (population 30, tournament 10) and ``num_objectives``."""


@struct.dataclass
class MOEvolutionState(EvolutionState):
    pop_rank: jax.Array  # int32[P]: front of each member in the population
    pop_crowd: jax.Array  # f32[P]: crowding distance within its front


@register("mo_regularized_evolution")
class MORegularizedEvolution(RegularizedEvolution):
    """Aging evolution with tournaments on (front rank, crowding distance)."""

    Options = MOEvolutionOptions

    def init(self, key):
        base = super().init(key)
        p, m = self.options.population_size, self.options.num_objectives
        fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)}
        fields["pop_scores"] = jnp.full((p, m), -jnp.inf, jnp.float32)
        return MOEvolutionState(**fields, pop_rank=jnp.full((p,), p, jnp.int32), pop_crowd=jnp.zeros((p,), jnp.float32))

    def _tournament(self, key, state):
        """Parent = the best of ``tournament_size`` uniform draws by (rank, -crowding), ties to the first drawn."""
        u = jax.random.uniform(key, (self.options.tournament_size,))
        idx = jnp.minimum((u * state.pop_count).astype(jnp.int32), jnp.maximum(state.pop_count - 1, 0))
        best = jnp.lexsort((-state.pop_crowd[idx], state.pop_rank[idx]))[0]
        return state.pop_tokens[idx[best]]

    def _tell(self, key, tokens, scores, state):
        state, _ = super()._tell(key, tokens, scores, state)
        present = jnp.arange(self.options.population_size) < state.pop_count
        rank, crowd = nsga2_priority(losses(state.pop_scores), present)
        state = state.replace(pop_rank=rank, pop_crowd=crowd)
        return state, {"front_size": jnp.sum(present & (rank == 0)).astype(jnp.float32)}
