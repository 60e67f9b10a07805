"""Monte Carlo tree search with UCT over the traversal tree (Negrinho et al. 2019, Section 7.2;
Browne et al. 2012; the MCTS searcher of DeepArchitect).

A node of the tree is a prefix of decisions: the values of the active tokens, in token order,
decided so far (for a flattened language space, the independent hyperparameters assigned along
the traversal; inactive tokens are not decisions). One simulation (``ask``):

1. *Selection*: from the root, while every allowed value of the next decision has a visited
   child, move to the child with the largest UCT value
   ``mean + c * sqrt(2 ln n_parent / n_child)`` (``exploration`` c = 0.33 in the paper).
2. *Expansion*: at the first node with unvisited children, pick one of them uniformly; it
   joins the tree when its result is told.
3. *Rollout*: the remaining decisions are uniform (Algorithm 3).
4. *Backup* (``tell``): the root and every node on the selected path get one more visit and
   the score.

The tree lives in fixed arrays (``1 + budget`` nodes, a child table ``[nodes, D]``), so ask/tell
are pure and scan-able. Each simulation stores the length of its tree part; ``tell`` walks the
path again from the tokens. Differences from the paper's code: an architecture is never
queried twice (``proposals`` simulations are drawn and the first new one kept, ``nas.core.dedup``); a
failed evaluation (``-inf``) is backed up as the lowest finite score seen; ``reward_scale=
"minmax"`` (not the default) maps means to [0, 1] with the range of scores seen, for objectives
whose scores are not accuracies in [0, 1].
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import struct

from nas.core.contract import Searcher
from nas.core.dedup import Seen, fill_unique_aux
from nas.core.options import SearcherOptions, one_of, positive
from nas.core.registry import register


@dataclasses.dataclass(frozen=True)
class MCTSOptions(SearcherOptions):
    """Attributes:
    exploration: the UCT exploration constant c (0.33).
    proposals: simulations drawn per round when looking for a new architecture.
    reward_scale: ``none`` (raw scores, the paper) or ``minmax`` (means scaled to [0, 1]).
    """

    exploration: float = 0.33
    proposals: int = 8
    reward_scale: str = "none"

    def check(self):
        super().check()
        positive(self, "proposals")
        one_of(self, "reward_scale", ("none", "minmax"))
        if self.exploration < 0:
            raise ValueError(f"exploration must be >= 0, got {self.exploration}")


@struct.dataclass
class MCTSState:
    visits: jax.Array  # f32[M]
    sums: jax.Array  # f32[M] summed scores
    children: jax.Array  # int32[M, D]: child node of each value, -1 = not in the tree
    num_nodes: jax.Array  # int32[]
    tree_len: jax.Array  # int32[B]: tree part (selection + expansion steps) of the last ask's strings
    lo: jax.Array  # f32[]: lowest finite score told (+inf before any)
    hi: jax.Array  # f32[]
    seen: Seen  # the queried ids (kept by the base, Searcher.record_told); the tree is the algorithm's


def uct_values(state: MCTSState, node: jax.Array, exploration: float, minmax: bool) -> jax.Array:
    """f32[D]: UCT value of each child of ``node`` (``-inf`` for children not in the tree or unvisited)."""
    ch = state.children[node]
    safe = jnp.maximum(ch, 0)
    n = jnp.where(ch >= 0, state.visits[safe], 0.0)
    mean = state.sums[safe] / jnp.maximum(n, 1.0)
    if minmax:
        span = state.hi - state.lo
        mean = jnp.where(span > 0, (mean - state.lo) / jnp.where(span > 0, span, 1.0), 0.5)
    bonus = exploration * jnp.sqrt(2.0 * jnp.log(jnp.maximum(state.visits[node], 1.0)) / jnp.maximum(n, 1.0))
    return jnp.where(n > 0, mean + bonus, -jnp.inf)


def allowed_values(space, tokens: jax.Array, assigned: jax.Array, i) -> jax.Array:
    """bool[D]: the values decision ``i`` may take given the ``assigned`` tokens (``space.step_mask``; every
    value of the token if the mask allows none)."""
    vmask = jnp.asarray(space.value_mask)[i]
    allowed = vmask & space.step_mask(tokens, assigned, i)
    return jnp.where(jnp.any(allowed), allowed, vmask)


@register("mcts")
class MCTS(Searcher):
    """UCT over the decisions of a string, in token order (module docstring)."""

    Options = MCTSOptions

    @property
    def capacity(self) -> int:
        return 1 + self.num_steps * self.batch_size

    def init(self, key):
        del key
        m, d = self.capacity, self.space.max_cardinality
        return MCTSState(
            visits=jnp.zeros((m,), jnp.float32),
            sums=jnp.zeros((m,), jnp.float32),
            children=jnp.full((m, d), -1, jnp.int32),
            num_nodes=jnp.int32(1),
            tree_len=jnp.zeros((self.batch_size,), jnp.int32),
            lo=jnp.float32(jnp.inf),
            hi=jnp.float32(-jnp.inf),
            **self.new_books(MCTSState, self.num_steps * self.batch_size),
        )

    def uct_exploration(self) -> float:
        """The constant of the UCT bonus ``c sqrt(2 ln n_parent / n_child)``."""
        return self.options.exploration

    def simulate(self, key, state) -> tuple[jax.Array, jax.Array]:
        """One selection + expansion + rollout: (tokens int32[N], tree part length)."""
        sp, n = self.space, self.space.num_tokens
        minmax = self.options.reward_scale == "minmax"

        def step(carry, i):
            node, in_tree, tokens, assigned, length, k = carry
            k, k_pick = jax.random.split(k)
            act = sp.active(tokens)[i]
            allowed = allowed_values(sp, tokens, assigned, i)
            ch = state.children[node]
            unvisited = allowed & ((ch < 0) | (state.visits[jnp.maximum(ch, 0)] == 0))
            expand = in_tree & jnp.any(unvisited)
            uct = jnp.where(allowed, uct_values(state, node, self.uct_exploration(), minmax), -jnp.inf)
            rand = jax.random.categorical(k_pick, jnp.where(jnp.where(expand, unvisited, allowed), 0.0, -jnp.inf))
            v = jnp.where(in_tree & ~expand, jnp.argmax(uct), rand).astype(jnp.int32)
            tokens = jnp.where(act, tokens.at[i].set(v), tokens)
            decided = act & in_tree
            length = length + decided.astype(jnp.int32)
            node = jnp.where(decided & ~expand, ch[v], node)
            in_tree = in_tree & ~(act & expand)
            return (node, in_tree, tokens, assigned.at[i].set(True), length, k), None

        init = (jnp.int32(0), jnp.bool_(True), jnp.zeros((n,), jnp.int32), jnp.zeros((n,), bool), jnp.int32(0), key)
        (_, _, tokens, _, length, _), _ = jax.lax.scan(step, init, jnp.arange(n))
        return tokens, length

    def ask(self, key, state):
        def propose(k):
            return jax.vmap(lambda kk: self.simulate(kk, state))(jax.random.split(k, self.options.proposals))

        tokens, _, tree_len = fill_unique_aux(key, self.space, propose, state.seen, self.batch_size)
        return tokens, state.replace(tree_len=tree_len)

    def backup(self, state: MCTSState, tokens: jax.Array, length: jax.Array, reward: jax.Array) -> MCTSState:
        """Adds ``reward`` to the root and the first ``length`` decisions' nodes (allocating a new one)."""
        act = self.space.active(tokens)
        state = state.replace(visits=state.visits.at[0].add(1.0), sums=state.sums.at[0].add(reward))

        def step(carry, i):
            st, node, done = carry
            go = act[i] & (done < length)
            v = tokens[i]
            child = st.children[node, v]
            new = go & (child < 0)
            child = jnp.where(new, st.num_nodes, child)
            tgt = jnp.where(go, child, st.visits.shape[0])  # out of range: dropped
            st = st.replace(
                children=st.children.at[node, v].set(jnp.where(new, child, st.children[node, v])),
                num_nodes=st.num_nodes + new.astype(jnp.int32),
                visits=st.visits.at[tgt].add(1.0, mode="drop"),
                sums=st.sums.at[tgt].add(reward, mode="drop"),
            )
            return (st, jnp.where(go, child, node), done + go.astype(jnp.int32)), None

        (state, _, _), _ = jax.lax.scan(step, (state, jnp.int32(0), jnp.int32(0)), jnp.arange(self.space.num_tokens))
        return state

    def rewards(self, scores: jax.Array, state: MCTSState) -> tuple[jax.Array, jax.Array, jax.Array]:
        """(reward of each told score, lowest and highest finite score so far): a failed evaluation is
        backed up as the lowest finite score seen (0 before any)."""
        scores = scores.astype(jnp.float32)
        finite = jnp.isfinite(scores)
        lo = jnp.minimum(state.lo, jnp.min(jnp.where(finite, scores, jnp.inf)))
        hi = jnp.maximum(state.hi, jnp.max(jnp.where(finite, scores, -jnp.inf)))
        return jnp.where(finite, scores, jnp.where(jnp.isfinite(lo), lo, 0.0)), lo, hi

    def backup_batch(self, state, tokens, rewards, lo, hi):
        """Backs up each told string's reward along its path (``backup``) and records the score range."""

        def one(st, x):
            tok, length, r = x
            return self.backup(st, tok, length, r), None

        state, _ = jax.lax.scan(one, state, (tokens.astype(jnp.int32), state.tree_len, rewards))
        return state.replace(lo=lo, hi=hi)

    def _tell(self, key, tokens, scores, state):
        del key
        rewards, lo, hi = self.rewards(scores, state)
        state = self.backup_batch(state, tokens, rewards, lo, hi)
        return state, {"tree_nodes": state.num_nodes.astype(jnp.float32), "root_visits": state.visits[0]}
