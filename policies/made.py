"""MADE policy (Germain et al., 2015; the "REINFORCE with MADE" ablation).

A masked MLP over the one-hot encoding of all tokens. Each hidden unit ``k``
has a degree ``m(k)`` in ``1..N-1``; an input token decided at step ``r``
(``r = rank[j]``, 0-based) has degree ``r + 1``. Connections follow MADE's
rule: input ``j`` -> hidden ``k`` iff ``m(k) >= rank[j] + 1``, hidden ``k`` ->
hidden ``k'`` iff ``m(k') >= m(k)``, hidden ``k`` -> output ``i`` iff
``m(k) <= rank[i]``. Output ``i`` therefore depends only on tokens earlier in
the order, and one pass gives every conditional. Masks are computed from the
order on the fly (MADE's order-agnostic training, Section 3.3 of Germain et
al.), so ordering ensembles work as for MAADE.

Choices where the paper is silent: degrees are assigned cyclically
(``m(k) = k mod (N-1) + 1``, every degree equally often, instead of MADE's
random draw, so the network does not depend on a seed), ReLU hidden units as
in MADE, no direct input-output connections, ``num_layers = 1`` hidden layer
of width ``N * d`` (``d = 36``), the width that gives the O(N^2 d^2)
context-layer complexity the paper lists for MADE in Table II. Output layer
zero-initialized (uniform initial policy), LeCun-normal hidden weights.
The first hyperparameter of an order connects to no hidden unit: its logits
are its output biases.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from policies.base import Policy
from policies.orderings import rank_of
from policies.registry import register_policy


@register_policy("made")
class MADE(Policy):
    def __init__(self, space, d: int = 36, hidden: int | None = None, num_layers: int = 1):
        super().__init__(space)
        if num_layers < 1:
            raise ValueError(f"MADE needs num_layers >= 1, got {num_layers}")
        n = self.num_tokens
        self.hidden = int(hidden) if hidden else n * int(d)
        self.num_layers = int(num_layers)
        self.degrees = (np.arange(self.hidden) % max(n - 1, 1) + 1).astype(np.int32)

    def init(self, key):
        n, dv, h = self.num_tokens, self.num_values, self.hidden
        keys = jax.random.split(key, self.num_layers)
        layers = [{"w": jax.random.normal(keys[0], (n, dv, h)) / np.sqrt(n), "b": jnp.zeros(h)}]
        for k in keys[1:]:
            layers.append({"w": jax.random.normal(k, (h, h)) / np.sqrt(h), "b": jnp.zeros(h)})
        return {"hidden": layers, "heads": {"w": jnp.zeros((h, n, dv)), "b": jnp.zeros((n, dv))}}

    def logits(self, params, tokens, order):
        rank = rank_of(order)
        deg = jnp.asarray(self.degrees)
        x = jax.nn.one_hot(tokens, self.num_values)  # [N, D]
        in_mask = deg[None, :] >= rank[:, None] + 1  # [N, H]
        first = params["hidden"][0]
        h = jax.nn.relu(jnp.einsum("nv,nvh,nh->h", x, first["w"], in_mask) + first["b"])
        hh_mask = deg[None, :] >= deg[:, None]
        for layer in params["hidden"][1:]:
            h = jax.nn.relu(h @ (layer["w"] * hh_mask) + layer["b"])
        out_mask = deg[:, None] <= rank[None, :]  # [H, N]
        return jnp.einsum("h,hnv,hn->nv", h, params["heads"]["w"], out_mask) + params["heads"]["b"]
