"""LSTM controller (Zoph & Le, 2017): the RL baseline policy of NAS-Bench-101.

At step ``t`` the LSTM reads the embedding of the value chosen at step
``t - 1`` (a learned "go" vector at ``t = 0``) and its top hidden state goes
through the head of the hyperparameter decided at step ``t`` (per-token
affine + softmax, as eq. 10). Zoph & Le use a fixed order, where the step
index tells the controller which decision comes next; to support ordering
ensembles the input also adds that hyperparameter's query vector
``q_{z_t}`` (with the natural order this is just a per-step input bias).

Choices where the papers are silent or differ: ``num_layers = 2`` stacked
LSTM layers as in Zoph & Le with ``d = 36`` units (they use 35), value
embeddings shared per value family as in MAADE, forget-gate bias 1, LeCun
normal weights, zero-initialized heads (uniform initial policy). The context
layer is O(d^2) in parameters (Table II). ``log_prob`` is one teacher-forced
``lax.scan`` over the N steps; sampling is incremental (the carry holds the
LSTM state).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from policies.base import Policy, value_families
from policies.orderings import unpermute
from policies.registry import register_policy


@register_policy("lstm")
class LSTMController(Policy):
    def __init__(self, space, d: int = 36, num_layers: int = 2):
        super().__init__(space)
        if d < 1 or num_layers < 1:
            raise ValueError(f"LSTM needs d >= 1 and num_layers >= 1, got d={d}, num_layers={num_layers}")
        self.d = int(d)
        self.num_layers = int(num_layers)
        self.value_offset, _, self.value_rows = value_families(space)

    def init(self, key):
        d, n, dv = self.d, self.num_tokens, self.num_values
        k_emb, k_q, k_go, k_l = jax.random.split(key, 4)
        layers = []
        for k in jax.random.split(k_l, self.num_layers):
            b = jnp.zeros(4 * d).at[d : 2 * d].set(1.0)  # forget gate bias 1
            layers.append({"w": jax.random.normal(k, (2 * d, 4 * d)) / np.sqrt(2 * d), "b": b})
        return {
            "embed": {
                "value": jax.random.normal(k_emb, (self.value_rows, d)),
                "query": jax.random.normal(k_q, (n, d)),
                "go": jax.random.normal(k_go, (d,)),
            },
            "context": layers,
            "heads": {"w": jnp.zeros((n, d, dv)), "b": jnp.zeros((n, dv))},
        }

    def decode_init(self, params, order):
        del order
        z = jnp.zeros((self.num_layers, self.d))
        return (z, z)

    def decode_step(self, params, carry, tokens, order, t):
        emb = params["embed"]
        prev_pos = order[jnp.maximum(t - 1, 0)]
        prev = emb["value"][jnp.asarray(self.value_offset)[prev_pos] + tokens[prev_pos]]
        x = jnp.where(t == 0, emb["go"], prev) + emb["query"][order[t]]
        hs, cs = carry
        new_h, new_c = [], []
        for layer, h, c in zip(params["context"], hs, cs):
            gates = jnp.concatenate([x, h]) @ layer["w"] + layer["b"]
            i, f, g, o = jnp.split(gates, 4)
            c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
            h = jax.nn.sigmoid(o) * jnp.tanh(c)
            new_h.append(h)
            new_c.append(c)
            x = h
        pos = order[t]
        logits = x @ params["heads"]["w"][pos] + params["heads"]["b"][pos]
        return logits, (jnp.stack(new_h), jnp.stack(new_c))

    def logits(self, params, tokens, order):
        def body(carry, t):
            logits, carry = self.decode_step(params, carry, tokens, order, t)
            return carry, logits

        _, by_step = jax.lax.scan(body, self.decode_init(params, order), jnp.arange(self.num_tokens))
        return unpermute(by_step, order)
