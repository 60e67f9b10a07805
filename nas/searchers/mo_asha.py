"""MO-ASHA: asynchronous successive halving that promotes by Pareto rank (Schmucker, Donini, Perrone &
Archambeau, 2021, "Multi-objective multi-fidelity hyperparameter optimization with application to
fairness"; Salinas et al., 2021, the same scheduler in Syne Tune).

ASHA's promotion rule (Li et al. 2020, Algorithm 2; ``nas.searchers.asha``: every free worker promotes
the best configuration of the top ``floor(|rung k| / eta)`` of the highest rung that has one not promoted
yet, else starts a new configuration at the bottom rung) with "best" a multi-objective priority over
the rung's results: non-dominated sorting, and within a front NSGA-II's crowding distance (Deb et al.
2002, ``nas.core.pareto``), one of the two orders Schmucker et al. compare (the other, an epsilon-net,
is Syne Tune's default). A rung's top ``q`` are the first ``q`` of its results in that order (ties: the
configuration started first). Results at a rung are the told score vectors f32[M] (maximized,
``nas.core.multi_objective``); a failed evaluation ranks last.

Cost: when a result arrives, the fronts of its rung are updated, not recomputed
(``nas.core.pareto.insert_front_ranks``: the rows the new one dominates move back by at most one front,
front by front), and the crowding distances and the order recomputed: a few sorts and vector passes over
the rung's fixed capacity ``C`` (the most configurations the budget can start) for two objectives.

**Capacity.** ASHA's state holds the configurations one run can start whatever the order results
arrive in (``nas.core.ladders.asha_bounds``: 406 on NAS-Bench-201 with 12 and 200 epochs, eta = 3,
W = 4, instead of the 2,505 that one new configuration per bottom-rung budget would take); that bound
holds for any order of promotion, so MO-ASHA's too, and keeps its per-result sorts small.

Everything else (rungs on the objective's fidelities, never evaluating a configuration twice at a
fidelity, promotions continuing their parent's training) is ASHA's, reused from ``nas.searchers.asha``
unchanged.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import struct

from nas.core.multi_objective import MultiObjectiveOptions, losses
from nas.core.pareto import crowding_distance, insert_front_ranks
from nas.core.registry import register
from nas.searchers.asha import ASHA, ASHAOptions, ASHAState


@dataclasses.dataclass(frozen=True)
class MOASHAOptions(MultiObjectiveOptions, ASHAOptions):
    """ASHA's options (eta, min/max budget, early_stopping_rate, workers) and ``num_objectives``."""


@struct.dataclass
class MOASHAState(ASHAState):
    values: jax.Array  # f32[C, K, M]: the score vector of each configuration at each rung (-inf: none)
    rank: jax.Array  # int32[K, C]: each configuration's front in its rung (C + 1: absent)
    order: jax.Array  # int32[K, C]: each configuration's position in its rung's priority order (C: absent)


@register("mo_asha")
class MOASHA(ASHA):
    """Asynchronous successive halving promoting by (front rank, crowding distance) (module docstring)."""

    Options = MOASHAOptions

    def schedule(self, unit: str = "") -> str:
        text = super().schedule(unit)
        return f"mo_{text}; promotions by Pareto rank over {self.options.num_objectives} objectives"

    def init(self, key):
        base = super().init(key)
        c, k, m = self.capacity, len(self.ladder), self.options.num_objectives
        fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)}
        return MOASHAState(**fields, values=jnp.full((c, k, m), -jnp.inf, jnp.float32),
                           rank=jnp.full((k, c), c + 1, jnp.int32), order=jnp.full((k, c), c, jnp.int32))  # fmt: skip

    def promotable(self, state: MOASHAState) -> tuple[jax.Array, jax.Array]:
        """(rung k, slot) of the job ``get_job`` promotes, k = -1 when none: the highest rung whose first
        ``floor(n_k / eta)`` results in priority order hold one not promoted yet; that one goes first."""
        best_k, best_slot = jnp.int32(-1), jnp.int32(0)
        for k in range(len(self.ladder) - 1):  # low to high: the highest rung with a candidate wins
            members = state.has[:, k]
            quota = jnp.floor(jnp.sum(members) / self.eta).astype(jnp.int32)
            cand = members & (state.order[k] < quota) & ~state.promoted[:, k]
            slot = jnp.argmin(jnp.where(cand, state.order[k], jnp.iinfo(jnp.int32).max))
            found = jnp.any(cand)
            best_k = jnp.where(found, k, best_k)
            best_slot = jnp.where(found, slot, best_slot)
        return best_k, best_slot

    def _tell(self, key, job, score, state):
        del key
        c = state.tokens.shape[0]
        score = jnp.asarray(score, jnp.float32).reshape(self.options.num_objectives)
        rung_of = (
            jnp.full((self.num_fidelities,), -1, jnp.int32)
            .at[jnp.asarray(self.ladder)]
            .set(jnp.arange(len(self.ladder), dtype=jnp.int32))
        )
        k = rung_of[jnp.clip(job.fidelity, 0, self.num_fidelities - 1)]
        match = (jnp.arange(c) < state.count) & jnp.all(state.tokens == job.tokens, axis=-1)
        slot = jnp.argmax(match)
        hit = jnp.any(match) & (k >= 0)
        kk = jnp.maximum(k, 0)
        values = state.values.at[slot, kk].set(jnp.where(hit, score, state.values[slot, kk]))
        has = state.has.at[slot, kk].set(state.has[slot, kk] | hit)
        # the rung's priority order: fronts, then crowding distance, then the order started
        rung = losses(values[:, kk])
        ranks = insert_front_ranks(rung, state.has[:, kk], state.rank[kk], slot)
        crowd = crowding_distance(rung, ranks, has[:, kk])
        order = jnp.lexsort((jnp.arange(c), -crowd, ranks))
        position = jnp.zeros((c,), jnp.int32).at[order].set(jnp.arange(c, dtype=jnp.int32))
        position = jnp.where(has[:, kk], position, c)
        state = state.replace(
            values=values,
            has=has,
            score=state.score.at[slot, kk].set(jnp.where(hit, score[0], state.score[slot, kk])),
            rank=state.rank.at[kk].set(jnp.where(hit, ranks, state.rank[kk])),
            order=state.order.at[kk].set(jnp.where(hit, position, state.order[kk])),
        )
        top = jnp.sum(state.has[:, -1])
        return state, {"started": state.count.astype(jnp.float32), "at_top": top.astype(jnp.float32)}
