"""ASHA, the asynchronous successive-halving algorithm (Li, Jamieson, Rostamizadeh, Gonina, Ben-Tzur,
Hardt, Recht & Talwalkar, 2020, "A System for Massively Parallel Hyperparameter Tuning", MLSys,
Algorithm 2).

Every free worker asks ``get_job``: from the highest rung down (below the top), the first
configuration in the top ``floor(|rung k| / eta)`` of rung ``k`` (by validation score, ties to the
one started first) that was not promoted yet is promoted to rung ``k + 1``; if there is none, a new
configuration starts at the bottom rung. A result joins its rung when it arrives (the engine tells
results in the order they finish on the simulated clock), so promotions are decided as results
arrive and no worker ever waits for a rung to fill.

Rungs: the budgets ``r eta^(s + k)`` of the paper (minimum resource ``r``, the minimum budget, and
minimum early-stopping rate ``s``), then the top budget ``R`` (the incumbent is chosen among top-budget
results): ``anchor="min"`` of ``nas.core.ladders``, whose ladder maps them onto the objective's
fidelities (the nearest offered fidelity on a log scale, repeats merged); ``anchor="max"`` gives
Hyperband's ladder ``R eta^-k`` instead, and ``eta=0`` the budgets' own ratio (two fidelities: two
rungs). ``early_stopping_rate`` drops the lowest ``s`` rungs. New configurations are uniform among
those never started (no configuration is evaluated twice at a fidelity). A promotion names the rung
below as its parent (an objective that continues a training pays the difference).

State: every configuration started, in order, with its result at each rung and whether it was
promoted out of each rung; its capacity (and the engine's steps, ``max_evaluations``) are bounds on
what one run can start and evaluate under the budget (``nas.core.ladders.asha_bounds``), so the
compiled run carries no slot and takes no step that the budget cannot reach.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import struct

from nas.core import ladders
from nas.core.dedup import EMPTY, Seen, computed_where, seen_insert
from nas.core.multi_fidelity import Job, MultiFidelitySearcher, failed_as_neg_inf
from nas.core.registry import register
from nas.core.unseen_draw import draw_candidate
from nas.core.vmap_ops import first_max, first_true


@dataclasses.dataclass(frozen=True)
class ASHAOptions(ladders.RungOptions):
    """Attributes (and those of ``RungOptions``: eta, min_budget, max_budget; ``workers`` W):
    anchor: ``"min"``: rungs ``r eta^k`` from the minimum budget (the paper's; ``"max"``: Hyperband's).
    early_stopping_rate: s, rungs dropped from the bottom of the ladder (0).
    """

    anchor: str = "min"
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
    seen: Seen  # every configuration started (at ask: its own books, a promotion queries it again)
    exhausted: jax.Array  # bool[]


@register("asha")
class ASHA(MultiFidelitySearcher):
    """Asynchronous successive halving with W workers (``workers``)."""

    Options = ASHAOptions
    # compile-bound; rungs are gathers, compares and sums: the same histories with the loop emitters
    compile_profile = "integer_steps"  # (tests/test_compiler_hooks.py, the goldens of tests/mf_golden.py)

    def setup(self):
        super().setup()
        o, b = self.options, self.budgets
        full = ladders.ladder_from_options(o, b)
        if o.early_stopping_rate >= len(full.fidelities):
            raise ValueError(f"early_stopping_rate={o.early_stopping_rate} leaves no rung of the "
                             f"{len(full.fidelities)}-rung ladder {[b[f] for f in full.fidelities]}; use "
                             f"0..{len(full.fidelities) - 1}")  # fmt: skip
        self.rungs = full.drop_lowest(o.early_stopping_rate)
        self.ladder, self.eta, self.ideal = self.rungs.fidelities, self.rungs.eta, list(self.rungs.ideal)
        # the least charge of an evaluation at each rung: a promotion may continue a training (the difference)
        charges = [b[self.ladder[0]]] + [b[y] - b[x] for x, y in zip(self.ladder, self.ladder[1:])]
        configs, evaluations = ladders.asha_bounds(tuple(charges), self.eta, self.workers, self.max_resource)
        self.capacity = min(configs, int(self.max_resource // b[self.ladder[0]]) + self.workers + 1)
        self._max_evaluations = min(evaluations, super().max_evaluations)

    @property
    def max_evaluations(self) -> int:
        return self._max_evaluations

    def schedule(self, unit: str = "") -> str:
        return ladders.describe_ladder(f"asha ({self.workers} workers)", self.rungs, self.budgets, unit)

    def init(self, key):
        c, k = self.capacity, len(self.ladder)
        return ASHAState(
            tokens=jnp.zeros((c, self.space.num_tokens), jnp.int32), count=jnp.int32(0),
            score=jnp.full((c, k), -jnp.inf, jnp.float32), has=jnp.zeros((c, k), bool),
            promoted=jnp.zeros((c, k), bool), ranked=jnp.full((k, c), -jnp.inf, jnp.float32),
            exhausted=jnp.bool_(False), **self.new_books(ASHAState, c),
        )  # fmt: skip

    def promotable(self, state: ASHAState) -> tuple[jax.Array, jax.Array]:
        """(rung k, slot) of the job ``get_job`` promotes, k = -1 when none (Algorithm 2's loop).

        Rung k's top ``q = floor(n_k / eta)``: the members scoring above the q-th best result
        (``ranked[k, q - 1]``), then the first ``q - |above|`` of those equal to it in the order started.
        The promoted one is the best candidate not promoted yet (ties: started first): ``rung_candidate``."""
        best_k, best_slot = jnp.int32(-1), jnp.int32(0)
        for k in range(len(self.ladder) - 1):  # low to high: the highest rung with a candidate wins
            members = state.has[:, k]
            quota = jnp.floor(jnp.sum(members) / self.eta).astype(jnp.int32)
            t = state.ranked[k, jnp.maximum(quota - 1, 0)]
            found, slot = rung_candidate(members, state.score[:, k], state.promoted[:, k], t, quota)
            best_k = jnp.where(found, k, best_k)
            best_slot = jnp.where(found, slot, best_slot)
        return best_k, best_slot

    def ask(self, key, state):
        return self.masked_ask(key, state, jnp.bool_(True))

    def ask_if(self, key, state, pred):
        if type(self).ask is not ASHA.ask:  # a subclass that asks its own way: the generic select
            return super().ask_if(key, state, pred)
        return self.masked_ask(key, state, pred)

    def masked_ask(self, key, state, pred):
        """``ask`` where ``pred``, else no job and ``state`` unchanged, writing only the entries a job changes."""
        k, slot = self.promotable(state)
        promote = (k >= 0) & pred
        # read only where no promotion is due (a one-step program draws it only then: nas.core.dedup)
        new_tokens, sid, drawn = computed_where(~promote, lambda: draw_candidate(key, self.space, state.seen))
        new_ok = pred & ~promote & drawn & ~state.exhausted & (state.count < state.tokens.shape[0])
        ok = promote | new_ok  # False where not pred: no job, no change
        ladder = jnp.asarray(self.ladder, jnp.int32)
        fidelity = jnp.where(promote, ladder[k + 1], ladder[0])
        parent = jnp.where(promote, ladder[jnp.maximum(k, 0)], -1)
        tokens = jnp.where(promote, state.tokens[slot], new_tokens)
        job = Job.make(tokens, fidelity, parent, ok)
        # only the entries the job changes are written (whole-state selects would dominate the step's time)
        kk = jnp.maximum(k, 0)
        at = jnp.where(new_ok, state.count, state.tokens.shape[0])  # past the end: dropped
        return job, state.replace(
            promoted=state.promoted.at[slot, kk].set(state.promoted[slot, kk] | promote),
            tokens=state.tokens.at[at].set(new_tokens, mode="drop"),
            count=state.count + new_ok.astype(jnp.int32),
            seen=seen_insert(state.seen, jnp.where(new_ok, sid, EMPTY)),  # EMPTY: skipped
            exhausted=state.exhausted | (pred & ~ok),
        )

    def _tell(self, key, job, score, state):
        return self.masked_tell(key, job, score, state, jnp.bool_(True))

    def tell_if(self, key, job, score, state, pred):
        own_way = type(self)._tell is not ASHA._tell or type(self).tell is not MultiFidelitySearcher.tell
        if own_way:  # a subclass that tells its own way: the generic select
            return super().tell_if(key, job, score, state, pred)
        return self.masked_tell(key, job, failed_as_neg_inf(score), state, pred)

    def masked_tell(self, key, job, score, state, pred):
        """``_tell`` where ``pred``, else ``state`` unchanged, writing only the entries the result changes
        (``score`` without NaN, ``failed_as_neg_inf``)."""
        del key
        rung_of = (
            jnp.full((self.num_fidelities,), -1, jnp.int32)
            .at[jnp.asarray(self.ladder)]
            .set(jnp.arange(len(self.ladder), dtype=jnp.int32))
        )
        k = rung_of[jnp.clip(job.fidelity, 0, self.num_fidelities - 1)]
        match = (jnp.arange(state.tokens.shape[0]) < state.count) & jnp.all(state.tokens == job.tokens, axis=-1)
        slot = first_true(match)
        hit = jnp.any(match) & (k >= 0) & pred
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


def rung_candidate(members, score, promoted, t, quota) -> tuple[jax.Array, jax.Array]:
    """``(found, slot)``: the best member of a rung's top ``quota`` not promoted yet (ties: the lowest slot).

    The top: the members above the threshold ``t`` (the quota-th best result), then the first ``quota -
    |above|`` members equal to it, in slot order. Failed results (``-inf``) rank as the lowest float, above
    "no candidate". Written without a cumulative sum (XLA's is quadratic in the slots on CPU): the best
    candidate above ``t`` competes with the first unpromoted tied member, which is in the top iff fewer
    than ``quota - |above|`` tied members precede it."""
    floor = jnp.finfo(jnp.float32).min
    above = members & (score > t)
    tied = members & (score == t)
    room = quota - jnp.sum(above)
    up = jnp.where(above & ~promoted, jnp.maximum(score, floor), -jnp.inf)
    i_above = first_max(up)  # the best unpromoted member above t (ties: the lowest slot)
    best_above = up[i_above]
    waiting = tied & ~promoted
    i_tied = first_true(waiting)  # the first unpromoted tied member
    before = jnp.sum(tied & (jnp.arange(tied.shape[0]) < i_tied))
    tied_ok = jnp.any(waiting) & (before < room)
    tie_value = jnp.maximum(t, floor)
    above_ok = best_above > -jnp.inf
    # the larger value wins, an equal one the lower slot (argmax over every candidate)
    take_tied = tied_ok & (~above_ok | (tie_value > best_above) | ((tie_value == best_above) & (i_tied < i_above)))
    found = (above_ok | tied_ok) & (quota > 0)
    return found, jnp.where(take_tied, i_tied, i_above)
