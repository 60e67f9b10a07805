"""AlphaX: Monte Carlo tree search with meta-DNN assisted rollouts (Wang, Zhao, Jinnai, Tian & Fonseca, 2019,
"AlphaX: eXploring Neural Architectures with Deep Neural Networks and Monte Carlo Tree Search", Section 3).

A state is a partly built network, an action an edit that builds it further: on the token string contract,
the next decision (an NB201 edge's operation; an NB101 edge or vertex operation; a hyperparameter), so the
root is the empty network and a leaf a complete one (the library's MCTS tree, ``nas.searchers.mcts``, fixed
arrays). One simulation (``ask``, ``tell``):

1. *Selection* (eq. 1): from the root, the action maximizing ``Q(s, a) / N(s, a) + 2c sqrt(2 ln N(s) /
   N(s, a))`` while every action of the state has been tried (``exploration`` c; values min-max scaled to
   [0, 1] with the scores seen, ``reward_scale``, as accuracies are in the paper).
2. *Expansion*: an untried action of the first state that has one, chosen uniformly: the new node ``s'``.
3. *Meta-DNN assisted simulation* (eq. 2): a uniform rollout from ``s'`` to a complete network is truly
   evaluated (the query); ``num_rollouts`` = k further uniform rollouts from ``s'`` are scored by the
   meta-DNN (``surrogates.meta_dnn``) instead of being evaluated, and ``s'`` is valued
   ``(Acc(rollout) + 1/k sum_i Pred(rollout_i)) / 2``.
4. *Backpropagation* (eq. 3): every node on the path, ``s'`` and the root get one more visit and the value.

The meta-DNN is trained on every evaluated network (its adjacency/op encoding, ``encoding``) after every
evaluation (warm-started Adam mini-batch steps); until ``min_train`` networks are evaluated, ``s'`` is valued
by its evaluation alone (an untrained meta-DNN predicts noise).

Deviations from the paper: no distributed workers (the batch of ``batch_size`` simulations per step is drawn
from one tree without virtual losses) and no transfer learning of trained weights between networks (a
tabular or JAX objective trains from scratch); a smaller meta-DNN (default 4 x 128 units; the authors'
NASBench code: 512-2048-2048-512) trained a few steps per evaluation (the authors: 20 epochs every 100
evaluations); an architecture is never queried twice (``proposals`` simulations per round, ``nas.core.dedup``)
and a failed evaluation counts as the lowest score seen, as in ``nas.searchers.mcts``.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import struct

from nas.core.dedup import Seen
from nas.core.options import feature_kind, positive
from nas.core.registry import register
from nas.searchers.mcts import MCTS, MCTSOptions, allowed_values
from surrogates import meta_dnn


@dataclasses.dataclass(frozen=True)
class AlphaXOptions(MCTSOptions):
    """Attributes (and ``MCTSOptions``' ``proposals``):
    exploration: AlphaX's c (the selection bonus is ``2c sqrt(2 ln N / n)``); 0.1, chosen among 2 (the
      authors' code's ``Cp``), 0.5, 0.1, 0.03 and 0.01 on AnalogNAS-Bench and HPOLib protein
      (``configs/setting_choice.py``), benchmarks the reported tables do not use.
    reward_scale: ``minmax`` (values scaled to [0, 1], the default) or ``none``.
    num_rollouts: k, meta-DNN scored rollouts per new node (10, the authors' ``num_dyna_sim``).
    min_train: evaluations before the meta-DNN's predictions count.
    encoding: the meta-DNN's input, a feature kind of the space (``auto``: adjacency, else one-hot).
    num_layers, width, learning_rate, train_batch, train_steps: the meta-DNN and its training.
    """

    exploration: float = 0.1
    reward_scale: str = "minmax"
    num_rollouts: int = 10
    min_train: int = 10
    encoding: str = "auto"
    num_layers: int = 4
    width: int = 128
    learning_rate: float = 1e-3
    train_batch: int = 32
    train_steps: int = 5

    def check(self):
        super().check()
        positive(self, "num_rollouts", "min_train", "num_layers", "width", "train_batch", "train_steps")
        if self.learning_rate <= 0:
            raise ValueError(f"learning_rate must be > 0, got {self.learning_rate}")


@struct.dataclass
class AlphaXState:
    visits: jax.Array  # f32[M] N(s)
    sums: jax.Array  # f32[M] summed values (Q)
    children: jax.Array  # int32[M, D]
    num_nodes: jax.Array  # int32[]
    tree_len: jax.Array  # int32[B]
    lo: jax.Array  # f32[]
    hi: jax.Array  # f32[]
    seen: Seen  # the queried ids (kept by the base, Searcher.record_told)
    data_tokens: jax.Array  # int32[C, N] evaluated networks (the meta-DNN's training set)
    data_scores: jax.Array  # f32[C]
    count: jax.Array  # int32[]
    net: meta_dnn.MetaDNNState


@register("alphax")
class AlphaX(MCTS):
    """MCTS over network-building actions with meta-DNN assisted rollouts (module docstring)."""

    Options = AlphaXOptions

    def setup(self):
        self.encoding = feature_kind(self.space, self.options.encoding, ("adjacency",))
        o = self.options
        self.net = meta_dnn.MetaDNNConfig(o.num_layers, o.width, o.learning_rate, o.train_batch, o.train_steps)

    def features(self, tokens):
        return jax.vmap(lambda t: self.space.features(t, self.encoding))(tokens).astype(jnp.float32)

    def init(self, key):
        tree = super().init(key)
        c, n = self.num_steps * self.batch_size, self.space.num_tokens
        net = meta_dnn.init(key, self.space.feature_dim(self.encoding), self.net)
        fields = {f.name: getattr(tree, f.name) for f in dataclasses.fields(tree)}
        return AlphaXState(
            **fields, data_tokens=jnp.zeros((c, n), jnp.int32), data_scores=jnp.full((c,), -jnp.inf),
            count=jnp.int32(0), net=net,
        )  # fmt: skip

    def uct_exploration(self) -> float:
        return 2.0 * self.options.exploration  # eq. 1: 2c sqrt(2 ln N / n)

    def complete(self, key, tokens, length):
        """A uniform rollout: the first ``length`` decisions of ``tokens`` (the node ``s'``), the rest drawn
        uniformly among the allowed values, as ``simulate``'s rollout."""
        sp = self.space

        def step(carry, i):
            out, assigned, done, k = carry
            k, k_pick = jax.random.split(k)
            act = sp.active(out)[i]
            rand = jax.random.categorical(k_pick, jnp.where(allowed_values(sp, out, assigned, i), 0.0, -jnp.inf))
            v = jnp.where(done < length, tokens[i], rand).astype(jnp.int32)
            out = jnp.where(act, out.at[i].set(v), out)
            return (out, assigned.at[i].set(True), done + act.astype(jnp.int32), k), None

        n = sp.num_tokens
        init = (jnp.zeros((n,), jnp.int32), jnp.zeros((n,), bool), jnp.int32(0), key)
        (out, _, _, _), _ = jax.lax.scan(step, init, jnp.arange(n))
        return out

    def node_values(self, key, tokens, rewards, state):
        """Eq. 2: ``(reward + mean meta-DNN prediction of k rollouts from s') / 2`` per told string (the reward
        alone before ``min_train`` evaluations)."""
        k = self.options.num_rollouts

        def one(kk, tok, length):
            rolls = jax.vmap(lambda r: self.complete(r, tok, length))(jax.random.split(kk, k))
            return jnp.mean(meta_dnn.predict(state.net, self.features(rolls), self.net))

        keys = jax.random.split(key, tokens.shape[0])
        pred = jax.vmap(one)(keys, tokens.astype(jnp.int32), state.tree_len)
        return jnp.where(state.count >= self.options.min_train, 0.5 * (rewards + pred), rewards)

    def _tell(self, key, tokens, scores, state):
        k_sim, k_train = jax.random.split(key)
        rewards, lo, hi = self.rewards(scores, state)
        values = self.node_values(k_sim, tokens, rewards, state)
        state = self.backup_batch(state, tokens, values, lo, hi)
        start = state.count
        data_tokens = jax.lax.dynamic_update_slice(state.data_tokens, tokens.astype(jnp.int32), (start, 0))
        data_scores = jax.lax.dynamic_update_slice(state.data_scores, scores.astype(jnp.float32), (start,))
        count = start + tokens.shape[0]
        mask = jnp.arange(data_scores.shape[0]) < count
        net, loss = meta_dnn.train(k_train, state.net, self.features(data_tokens), data_scores, mask, self.net)
        state = state.replace(data_tokens=data_tokens, data_scores=data_scores, count=count, net=net)
        metrics = {"tree_nodes": state.num_nodes.astype(jnp.float32), "root_visits": state.visits[0]}
        return state, {**metrics, "meta_loss": loss}
