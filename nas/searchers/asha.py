"""ASHA, the asynchronous successive-halving algorithm (Li, Jamieson, Rostamizadeh, Gonina, Ben-Tzur,
Hardt, Recht & Talwalkar, 2020, "A System for Massively Parallel Hyperparameter Tuning", MLSys,
Algorithm 2).

Every free worker asks ``get_job``: from the highest rung down (below the top), the first
configuration in the top ``floor(|rung k| / eta)`` of rung ``k`` (by validation score, ties to the
one started first) that was not promoted yet is promoted to rung ``k + 1``; if there is none, a new
configuration starts at the bottom rung. A result joins its rung when it arrives (the engine tells
results in the order they finish on the simulated clock), so promotions are decided as results
arrive and no worker ever waits for a rung to fill.

Rungs: the budgets ``r eta^(s + k)`` of the paper (minimum resource ``r``, minimum early-stopping
rate ``s``) on the objective's fidelities, mapped as for Hyperband (``nas.searchers.brackets``:
the nearest offered fidelity on a log scale, repeats merged); ``early_stopping_rate`` drops the
lowest ``s`` rungs. New configurations are uniform among those never started (no configuration is
evaluated twice at a fidelity). A promotion names the rung below as its parent (an objective that
continues a training pays the difference).

State: every configuration started, in order, with its result at each rung and whether it was
promoted out of each rung; fixed capacity (the most configurations the budget can start).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import struct

from nas.core.dedup import Seen, seen_init
from nas.core.multi_fidelity import Job, MultiFidelitySearcher
from nas.core.searcher import register
from nas.searchers import brackets as bk
from nas.searchers.mf_observations import draw_new
from nas.searchers.successive_halving import BracketOptions


@dataclasses.dataclass(frozen=True)
class ASHAOptions(BracketOptions):
    """Attributes (and those of ``BracketOptions``: eta, min_budget, max_budget; ``workers`` W):
    early_stopping_rate: s, rungs dropped from the bottom of the ladder (0).
    """

    early_stopping_rate: int = 0

    def check(self):
        super().check()
        if self.early_stopping_rate < 0:
            raise ValueError(f"early_stopping_rate must be >= 0, got {self.early_stopping_rate}")


@struct.dataclass
class ASHAState:
    tokens: jax.Array  # int32[C, N]: configurations started, in order
    count: jax.Array  # int32[]
    score: jax.Array  # f32[C, K]: result at each rung (-inf: none or failed)
    has: jax.Array  # bool[C, K]: result in at rung k
    promoted: jax.Array  # bool[C, K]: promoted out of rung k
    ranked: jax.Array  # f32[K, C]: each rung's results, best first (-inf after them): top-k without a sort
    seen: Seen
    exhausted: jax.Array  # bool[]


@register("asha")
class ASHA(MultiFidelitySearcher):
    """Asynchronous successive halving with W workers (``workers``)."""

    Options = ASHAOptions

    def setup(self):
        super().setup()
        o, b = self.options, self.budgets
        lo = bk.fidelity_index(b, o.min_budget, "min_budget", 0)
        hi = bk.fidelity_index(b, o.max_budget, "max_budget", len(b) - 1)
        ladder = bk.rung_ladder(b, o.eta, lo, hi)
        if o.early_stopping_rate >= len(ladder):
            raise ValueError(f"early_stopping_rate={o.early_stopping_rate} leaves no rung of the {len(ladder)}-rung "
                             f"ladder {[b[f] for f in ladder]}; use 0..{len(ladder) - 1}")  # fmt: skip
        self.ladder = ladder[o.early_stopping_rate :]
        self.ideal = bk.ideal_budgets(b, o.eta, lo, hi)[o.early_stopping_rate :]
        # new configurations cost at least the bottom rung's budget: at most this many can start
        self.capacity = int(self.max_resource // b[self.ladder[0]]) + self.workers + 1

    def schedule(self, unit: str = "") -> str:
        unit = f" {unit}" if unit else ""
        rungs = ", ".join(f"{self.budgets[f]:g}" for f in self.ladder)
        return (f"asha: eta={self.options.eta:g}, {self.workers} workers; the paper's rung budgets "
                f"{', '.join(f'{r:.4g}' for r in self.ideal)}{unit} run at the fidelities {rungs}{unit}")  # fmt: skip

    def init(self, key):
        c, k = self.capacity, len(self.ladder)
        return ASHAState(
            tokens=jnp.zeros((c, self.space.num_tokens), jnp.int32), count=jnp.int32(0),
            score=jnp.full((c, k), -jnp.inf, jnp.float32), has=jnp.zeros((c, k), bool),
            promoted=jnp.zeros((c, k), bool), ranked=jnp.full((k, c), -jnp.inf, jnp.float32), seen=seen_init(c),
            exhausted=jnp.bool_(False),
        )  # fmt: skip

    def promotable(self, state: ASHAState) -> tuple[jax.Array, jax.Array]:
        """(rung k, slot) of the job ``get_job`` promotes, k = -1 when none (Algorithm 2's loop).

        Rung k's top ``q = floor(n_k / eta)``: the members scoring above the q-th best result
        (``ranked[k, q - 1]``), then those equal to it in the order started, up to q. The promoted one is
        the best candidate not promoted yet (ties: started first)."""
        best_k, best_slot = jnp.int32(-1), jnp.int32(0)
        floor = jnp.finfo(jnp.float32).min  # a failed result (-inf) still outranks "not a candidate"
        for k in range(len(self.ladder) - 1):  # low to high: the highest rung with a candidate wins
            members, score = state.has[:, k], state.score[:, k]
            quota = jnp.floor(jnp.sum(members) / self.options.eta).astype(jnp.int32)
            t = state.ranked[k, jnp.maximum(quota - 1, 0)]
            above = members & (score > t)
            tied = members & (score == t)
            top = (above | (tied & (jnp.cumsum(tied) <= quota - jnp.sum(above)))) & (quota > 0)
            cand = top & ~state.promoted[:, k]
            slot = jnp.argmax(jnp.where(cand, jnp.maximum(score, floor), -jnp.inf))
            found = jnp.any(cand)
            best_k = jnp.where(found, k, best_k)
            best_slot = jnp.where(found, slot, best_slot)
        return best_k, best_slot

    def ask(self, key, state):
        k, slot = self.promotable(state)
        promote = k >= 0
        new_tokens, new_ok, seen = draw_new(key, self.space, state.seen)
        new_ok = ~promote & new_ok & ~state.exhausted & (state.count < state.tokens.shape[0])
        ok = promote | new_ok
        ladder = jnp.asarray(self.ladder, jnp.int32)
        fidelity = jnp.where(promote, ladder[k + 1], ladder[0])
        parent = jnp.where(promote, ladder[jnp.maximum(k, 0)], -1)
        tokens = jnp.where(promote, state.tokens[slot], new_tokens)
        job = Job.make(tokens, fidelity, parent, ok)
        promoted = state.replace(promoted=state.promoted.at[slot, jnp.maximum(k, 0)].set(True))
        started = state.replace(tokens=state.tokens.at[state.count].set(new_tokens, mode="drop"),
                                count=state.count + 1, seen=seen)  # fmt: skip
        nxt = jax.tree.map(lambda a, b: jnp.where(promote, a, b), promoted, started)
        state = state.replace(exhausted=state.exhausted | (~promote & ~new_ok))
        return job, jax.tree.map(lambda a, b: jnp.where(ok, a, b), nxt, state)

    def tell(self, key, job, score, state):
        del key
        rung_of = (
            jnp.full((self.num_fidelities,), -1, jnp.int32)
            .at[jnp.asarray(self.ladder)]
            .set(jnp.arange(len(self.ladder), dtype=jnp.int32))
        )
        k = rung_of[jnp.clip(job.fidelity, 0, self.num_fidelities - 1)]
        match = (jnp.arange(state.tokens.shape[0]) < state.count) & jnp.all(state.tokens == job.tokens, axis=-1)
        slot = jnp.argmax(match)
        hit = jnp.any(match) & (k >= 0)
        score = jnp.where(jnp.isnan(score), -jnp.inf, score)
        kk = jnp.maximum(k, 0)
        state = state.replace(
            score=state.score.at[slot, kk].set(jnp.where(hit, score, state.score[slot, kk])),
            has=state.has.at[slot, kk].set(state.has[slot, kk] | hit),
            ranked=state.ranked.at[kk].set(
                jnp.where(hit, insert_descending(state.ranked[kk], score), state.ranked[kk])
            ),
        )
        top = jnp.sum(state.has[:, -1])
        return state, {"started": state.count.astype(jnp.float32), "at_top": top.astype(jnp.float32)}


def insert_descending(values: jax.Array, v: jax.Array) -> jax.Array:
    """``values`` (f32[C], descending, ``-inf`` padded) with ``v`` inserted in order (the last entry drops off):
    elementwise, no sort."""
    pos = jnp.sum(values > v)
    j = jnp.arange(values.shape[0])
    shifted = jnp.concatenate([values[:1], values[:-1]])
    return jnp.where(j < pos, values, jnp.where(j == pos, v, shifted))
