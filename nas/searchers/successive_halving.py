"""Successive halving and Hyperband, synchronous (Li et al., 2018, JMLR, Algorithms 1 and 2).

A bracket starts ``n_0`` new configurations at its lowest rung; once every result of a rung is in,
the best ``n_{i+1} = floor(n_i / eta)`` of them (by validation score, ties to the one started first)
are promoted to the next rung's fidelity, until the bracket's top rung; then the next bracket of the
schedule starts (``nas.core.ladders``: the paper's brackets mapped onto the objective's
fidelities). Brackets repeat until the compute budget is spent.

- ``successive_halving``: one bracket, repeated: ``bracket`` s (-1 = the most exploratory one,
  starting at the lowest rung), ``num_configs`` n (0 = ``ceil(eta^s)``, so one configuration reaches
  the top).
- ``hyperband``: the paper's brackets s = s_max..0 in turn.

The promoted configurations of a rung are dispatched best first (``promotion_order="best_first"``, the
default of ``successive_halving``: the better ones finish first, so where several reach the top budget
the incumbent improves earlier) or in the order they were started (``"start_order"``, the default of
Hyperband, BOHB and the multi-fidelity BANANAS). The rung ladder: ``nas.core.ladders`` (``eta``, ``min_budget``,
``max_budget``, ``anchor`` = ``"max"``, Hyperband's).

Synchronous: with W > 1 workers a rung's promotions wait for the whole rung (``Job.ok`` False while
the last results of the rung are running). A promotion names the rung below as its parent, so an
objective that continues a training pays only the difference of the budgets. Every configuration a
bracket starts is new (``draw_new``): no (configuration, fidelity) pair is evaluated twice. Where the
space runs out of configurations, the rung shrinks to those started.

Subclasses (BOHB, the multi-fidelity BANANAS) change where new configurations come from
(``propose``), what they remember of results (``observe``) and how a rung ranks its members
(``promotion_scores``); their model state lives in ``BracketState.model``.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from nas.core import ladders
from nas.core.dedup import Seen
from nas.core.multi_fidelity import Job, MultiFidelitySearcher
from nas.core.options import one_of
from nas.core.registry import register
from nas.core.unseen_draw import draw_new
from nas.core.vmap_ops import run_if

PROMOTION_ORDERS = ("best_first", "start_order")


@dataclasses.dataclass(frozen=True)
class BracketOptions(ladders.RungOptions):
    """Attributes (and those of ``RungOptions``: eta, min_budget, max_budget, anchor):
    promotion_order: the order a completed rung's promoted configurations are dispatched in:
      ``best_first`` (by their rank at the rung below) or ``start_order`` (the order they were started;
      the default of Hyperband, BOHB and the multi-fidelity BANANAS, whose results it keeps).
    """

    promotion_order: str = "start_order"

    def check(self):
        super().check()
        one_of(self, "promotion_order", PROMOTION_ORDERS)


@struct.dataclass
class BracketState:
    bracket: jax.Array  # int32[]: brackets started so far (the schedule's bracket is bracket % len)
    rung: jax.Array  # int32[]: the rung running now
    size: jax.Array  # int32[]: configurations of this rung
    started: jax.Array  # int32[]: new configurations started in this bracket (rung 0)
    tokens: jax.Array  # int32[C, N]: the bracket's configurations, in the order started
    member: jax.Array  # bool[C]: in this rung
    asked: jax.Array  # bool[C]: dispatched at this rung
    told: jax.Array  # bool[C]: result in at this rung
    score: jax.Array  # f32[C]: results at this rung
    rank: jax.Array  # int32[C]: rank at the rung below (0 = best): the dispatch order of ``best_first``
    seen: Seen  # every configuration started (at ask: its own books, a promotion queries it again)
    exhausted: jax.Array  # bool[]: no configuration left to start
    model: object  # a subclass's data and model (None here)


class BracketSearcher(MultiFidelitySearcher):
    """Synchronous successive-halving brackets; subclasses give ``make_brackets``."""

    Options = BracketOptions
    # compile-bound; rungs are gathers, compares and sums: the same histories with the loop emitters
    compile_profile = "integer_steps"  # (tests/test_compiler_hooks.py, the goldens of tests/mf_golden.py)

    def make_brackets(self, ladder: tuple[int, ...]) -> tuple[ladders.Bracket, ...]:
        raise NotImplementedError

    def setup(self):
        super().setup()
        self.rungs = ladders.ladder_from_options(self.options, self.budgets)
        self.ladder, self.eta, self.ideal = self.rungs.fidelities, self.rungs.eta, list(self.rungs.ideal)
        self.schedule_brackets = self.make_brackets(self.ladder)
        rmax = max(len(x) for x in self.schedule_brackets)
        fid = np.full((len(self.schedule_brackets), rmax), -1, np.int32)
        size = np.zeros((len(self.schedule_brackets), rmax + 1), np.int32)  # a 0 after each top rung
        for j, br in enumerate(self.schedule_brackets):
            fid[j, : len(br)] = [f for f, _ in br]
            size[j, : len(br)] = [n for _, n in br]
        self.rung_fidelity, self.rung_size = fid, size
        self.num_rungs = np.asarray([len(x) for x in self.schedule_brackets], np.int32)
        self.capacity = int(size.max())

    def schedule(self, unit: str = "") -> str:
        """The bracket schedule in words (the experiment prints it once); ``unit``: the fidelities' unit."""
        return ladders.describe_schedule(self.registry_name, self.schedule_brackets, self.budgets, unit, self.rungs)

    @property
    def max_evaluations(self) -> int:
        bound = ladders.evaluation_bound(self.schedule_brackets, self.budgets, self.max_resource)
        return min(bound, super().max_evaluations)

    # -- hooks ------------------------------------------------------------------------------------
    def init_model(self, key):
        return None

    def propose(self, key, state: BracketState):
        """A new configuration for rung 0: ``(tokens[N], ok, state)`` (here: uniform among the unseen)."""
        tokens, ok, seen = draw_new(key, self.space, state.seen)
        return tokens, ok, state.replace(seen=seen)

    def observe(self, key, job: Job, score, state: BracketState) -> BracketState:
        """Remembers a result (subclasses with a model); called before the rung may complete."""
        return state

    def promotion_scores(self, key, state: BracketState, needed) -> jax.Array:
        """f32[C]: what ranks the members of a rung that completes when ``needed`` (here: their results)."""
        return state.score

    def start_bracket(self, key, state: BracketState, started) -> BracketState:
        """Prepares a bracket that starts when ``started`` (a model refit; here nothing)."""
        return state

    # -- the contract -----------------------------------------------------------------------------
    def init(self, key):
        c, n = self.capacity, self.space.num_tokens
        k_model, _ = jax.random.split(key)
        return BracketState(
            bracket=jnp.int32(0), rung=jnp.int32(0), size=jnp.int32(self.rung_size[0, 0]), started=jnp.int32(0),
            tokens=jnp.zeros((c, n), jnp.int32), member=jnp.zeros((c,), bool), asked=jnp.zeros((c,), bool),
            told=jnp.zeros((c,), bool), score=jnp.full((c,), -jnp.inf, jnp.float32),
            rank=jnp.arange(c, dtype=jnp.int32), exhausted=jnp.bool_(False),
            model=self.init_model(k_model), **self.new_books(BracketState, self.max_evaluations),
        )  # fmt: skip

    def _fidelity(self, state, rung):
        table = jnp.asarray(self.rung_fidelity)
        return table[state.bracket % table.shape[0], jnp.clip(rung, 0, table.shape[1] - 1)]

    def ask(self, key, state):
        k_new, k_adv = jax.random.split(key)
        want_new = (state.rung == 0) & (state.started < state.size) & ~state.exhausted
        fallback = (state.tokens[0], jnp.bool_(False), state)
        new_tokens, new_ok, proposed = run_if(want_new, lambda s: self.propose(k_new, s), state, fallback)
        new_ok = want_new & new_ok
        state = jax.tree.map(lambda a, b: jnp.where(new_ok, a, b), proposed, state)
        dry = want_new & ~new_ok  # the space is exhausted: this rung holds what it started (no job this time)
        state = state.replace(size=jnp.where(dry, state.started, state.size), exhausted=state.exhausted | dry)
        state = self._advance(k_adv, state, hooks=False)  # a shrunk rung may be complete now
        waiting = state.member & ~state.asked
        if self.options.promotion_order == "best_first":
            slot_p = jnp.argmin(jnp.where(waiting, state.rank, state.rank.shape[0]))
        else:  # start_order: the waiting member started first
            slot_p = jnp.argmax(waiting)
        promote = ~want_new & (state.rung > 0) & jnp.any(waiting)
        slot = jnp.where(new_ok, state.started, slot_p)
        tokens = jnp.where(new_ok, new_tokens, state.tokens[slot_p])
        ok = new_ok | promote
        parent = jnp.where(state.rung > 0, self._fidelity(state, state.rung - 1), -1)
        job = Job.make(tokens, self._fidelity(state, state.rung), parent, ok)
        upd = state.replace(
            tokens=state.tokens.at[slot].set(tokens),
            member=state.member.at[slot].set(True),
            asked=state.asked.at[slot].set(True),
            started=state.started + new_ok.astype(jnp.int32),
        )
        return job, jax.tree.map(lambda a, b: jnp.where(ok, a, b), upd, state)

    def _tell(self, key, job, score, state):
        k_obs, k_adv = jax.random.split(key)
        match = state.asked & ~state.told & jnp.all(state.tokens == job.tokens, axis=-1)
        slot = jnp.argmax(match)
        hit = jnp.any(match) & (job.fidelity == self._fidelity(state, state.rung))
        state = self.observe(k_obs, job, score, state)
        state = state.replace(
            told=state.told.at[slot].set(state.told[slot] | hit),
            score=state.score.at[slot].set(jnp.where(hit, score, state.score[slot])),
        )
        state = self._advance(k_adv, state)
        return state, {"bracket": state.bracket.astype(jnp.float32), "rung": state.rung.astype(jnp.float32)}

    # -- rung completion --------------------------------------------------------------------------
    def _advance(self, key, state, hooks: bool = True):
        """A completed rung promotes its best members (or ends the bracket); else ``state`` unchanged.

        ``hooks`` False (a rung cut short when the space ran out): promotions by the results, and no
        ``start_bracket`` (no bracket starts without new configurations), so ``ask`` holds no model code."""
        k_rank, k_start = jax.random.split(key)
        complete = (state.size > 0) & (jnp.sum(state.told) >= state.size)
        j = state.bracket % self.rung_size.shape[0]
        sizes = jnp.asarray(self.rung_size)
        last = state.rung >= jnp.asarray(self.num_rungs)[j] - 1
        ranking = self.promotion_scores(k_rank, state, complete & ~last) if hooks else state.score
        rank_by = jnp.where(state.member, ranking, -jnp.inf)
        order = jnp.lexsort((jnp.arange(rank_by.shape[0]), -rank_by, ~state.member))
        rank = jnp.zeros_like(order).at[order].set(jnp.arange(order.shape[0]))
        full = state.size == sizes[j, state.rung]
        shrunk = jnp.clip(jnp.floor(state.size / self.eta).astype(jnp.int32), 1, sizes[j, state.rung + 1])
        keep = jnp.where(full, sizes[j, state.rung + 1], shrunk)
        promoted = state.replace(
            rung=state.rung + 1, size=keep, member=rank < keep, rank=rank, asked=jnp.zeros_like(state.asked),
            told=jnp.zeros_like(state.told), score=jnp.full_like(state.score, -jnp.inf),
        )  # fmt: skip
        nb = state.bracket + 1
        fresh = state.replace(
            bracket=nb, rung=jnp.int32(0), size=jnp.where(state.exhausted, 0, sizes[nb % sizes.shape[0], 0]),
            started=jnp.int32(0), member=jnp.zeros_like(state.member), asked=jnp.zeros_like(state.asked),
            told=jnp.zeros_like(state.told), score=jnp.full_like(state.score, -jnp.inf),
        )  # fmt: skip
        nxt = jax.tree.map(lambda a, b: jnp.where(last, a, b), fresh, promoted)
        state = jax.tree.map(lambda a, b: jnp.where(complete, a, b), nxt, state)
        return self.start_bracket(k_start, state, complete & last) if hooks else state


@dataclasses.dataclass(frozen=True)
class SuccessiveHalvingOptions(BracketOptions):
    """Attributes (and those of ``BracketOptions``):
    bracket: s, the bracket repeated (-1 = the one starting at the lowest rung).
    num_configs: n, configurations started per bracket (0 = ceil(eta^s), one reaches the top).
    promotion_order: ``best_first`` here (``start_order``: as before it was an option).
    """

    bracket: int = -1
    num_configs: int = 0
    promotion_order: str = "best_first"

    def check(self):
        super().check()
        if self.bracket < -1 or self.num_configs < 0:
            raise ValueError("bracket must be >= -1 (-1 = the lowest rung) and num_configs >= 0 (0 = ceil(eta^s))")


@register("successive_halving")
class SuccessiveHalving(BracketSearcher):
    """One bracket of successive halving, repeated until the budget is spent."""

    Options = SuccessiveHalvingOptions

    def make_brackets(self, ladder):
        o = self.options
        return (ladders.successive_halving_bracket(ladder, self.eta, o.bracket, o.num_configs),)


@register("hyperband")
class Hyperband(BracketSearcher):
    """Hyperband: the brackets s = s_max..0 of Algorithm 2, repeated until the budget is spent."""

    def make_brackets(self, ladder):
        return ladders.hyperband_brackets(ladder, self.eta)
