"""MAADE: Masked Attention Autoregressive Density Estimator (Section IV-A).

Three layers (Fig. 1):

1. Embedding. A query vector ``q_i`` in R^d per hyperparameter and a value
   embedding ``V`` shared by hyperparameters of one value family (grouped by
   cardinality, ``policies.base.value_families``); ``v_i = V[:, a_i]``.
2. Context representation: two-stream masked attention (eqs. 4-9). Stream 1
   starts at ``q_i^(0) = q_i``, stream 2 at ``k_i^(0) = v_i + q_i``; each of the
   ``M`` blocks computes

       q_i^(m+1) = PosFF(q_i^(m) + Attn(Q = q_i^(m), KV = k^(m)_{z<i}))     (7)
       k_i^(m+1) = PosFF(k_i^(m) + Attn(Q = k_i^(m), KV = k^(m)_{z<=i}))    (8)
       PosFF(x)  = W2 tanh(W1 x + b1) + b2                                (9)

   with the same block parameters for both streams, ``h_i = q_i^(M)``, no
   layer normalization, no residual around PosFF and no positional encoding
   (the paper's simplifications). ``z<i`` means "earlier in the order": masks
   come from the order's ranks, so one pass gives every conditional.
3. Density estimation (eq. 10): a per-hyperparameter affine map of ``h_i``
   and a softmax over that hyperparameter's (step-masked) values.

Attention is additive (Bahdanau et al., ref. [47]):
``score(x, k_j) = w^T tanh(W_q x + W_k k_j + b)``, softmax over the allowed
keys, output ``sum_j alpha_j W_v k_j``. Choices where the paper is silent:
a value projection ``W_v`` as in the Transformer (ref. [11]), one attention
head, PosFF inner width ``ff_dim = 4 d`` (the Transformer's ratio), LeCun
normal initialization, zero biases, and zero-initialized output heads so the
initial policy is uniform over each step's allowed values (the first batch is
a uniform sample, as in random search).

A query with no preceding keys (the first hyperparameter of an order) gets an
attention output of exactly zero, i.e. ``q^(1) = PosFF(q^(0))``; the softmax
is never taken over an empty set (which would be 0/0).

The context layer's parameters (``params["context"]``) are O(d^2) and do not
depend on ``N`` (Table II); ``N`` only enters through the query vectors and
the output heads.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from policies.base import NEG, Policy, value_families
from policies.orderings import preceding_mask, set_at
from policies.registry import register_policy


def _lecun(key, shape, fan_in):
    return jax.random.normal(key, shape, jnp.float32) / jnp.sqrt(fan_in)


def masked_additive_attention(p, hq: jax.Array, hk: jax.Array, hv: jax.Array, mask: jax.Array) -> jax.Array:
    """Additive attention of projected queries ``hq = x W_q`` [Nq, d] over keys ``hk = k W_k`` with
    values ``hv = k W_v`` [Nk, d], restricted by ``mask`` [Nq, Nk].

    Takes projections (not raw vectors) so that both streams share one projection of the keys
    and the incremental decoder caches ``hk``/``hv`` of the decided positions.
    """
    scores = jnp.tanh(hq[:, None, :] + hk[None, :, :] + p["b"]) @ p["v"]  # [Nq, Nk]
    scores = jnp.where(mask, scores, NEG)
    scores = scores - jnp.max(scores, axis=1, keepdims=True)
    e = jnp.where(mask, jnp.exp(scores), 0.0)
    total = jnp.sum(e, axis=1, keepdims=True)
    # no allowed key (first step of the query stream): weights 0, output 0
    alpha = e / jnp.where(total > 0, total, 1.0)
    return alpha @ hv


def pos_ff(p, x: jax.Array) -> jax.Array:
    """Eq. 9 with tanh in place of ReLU."""
    return jnp.tanh(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]


@register_policy("maade")
class MAADE(Policy):
    """Two-stream masked additive attention policy (ReMAADE's policy network)."""

    def __init__(self, space, d: int = 36, num_blocks: int = 1, ff_dim: int | None = None):
        super().__init__(space)
        if d < 1 or num_blocks < 1:
            raise ValueError(f"MAADE needs d >= 1 and num_blocks (M) >= 1, got d={d}, M={num_blocks}")
        self.d = int(d)
        self.num_blocks = int(num_blocks)
        self.ff_dim = int(ff_dim) if ff_dim else 4 * self.d
        self.value_offset, _, self.value_rows = value_families(space)

    def init(self, key):
        d, f, n, dv = self.d, self.ff_dim, self.num_tokens, self.num_values
        k_q, k_v, k_ctx = jax.random.split(key, 3)
        blocks = []
        for kb in jax.random.split(k_ctx, self.num_blocks):
            k = jax.random.split(kb, 6)
            blocks.append(
                {
                    "attn": {
                        "w_q": _lecun(k[0], (d, d), d),
                        "w_k": _lecun(k[1], (d, d), d),
                        "b": jnp.zeros(d),
                        "v": _lecun(k[2], (d,), d),
                        "w_v": _lecun(k[3], (d, d), d),
                    },
                    "ff": {
                        "w1": _lecun(k[4], (d, f), d),
                        "b1": jnp.zeros(f),
                        "w2": _lecun(k[5], (f, d), f),
                        "b2": jnp.zeros(d),
                    },
                }
            )
        return {
            "embed": {
                "query": jax.random.normal(k_q, (n, d)) * 1.0,
                "value": jax.random.normal(k_v, (self.value_rows, d)) * 1.0,
            },
            "context": blocks,
            "heads": {"w": jnp.zeros((n, d, dv)), "b": jnp.zeros((n, dv))},
        }

    def context(self, params, tokens: jax.Array, order: jax.Array) -> jax.Array:
        """``h_i`` for every position in one pass: f32[N, d]."""
        q = params["embed"]["query"]
        v = params["embed"]["value"][jnp.asarray(self.value_offset) + tokens]
        k = v + q
        m_q = preceding_mask(order)  # eq. 7: strictly earlier keys
        m_k = preceding_mask(order, inclusive=True)  # eq. 8: earlier keys and itself
        for blk in params["context"]:
            a = blk["attn"]
            hk, hv = k @ a["w_k"], k @ a["w_v"]  # both streams attend over the same keys
            q, k = (
                pos_ff(blk["ff"], q + masked_additive_attention(a, q @ a["w_q"], hk, hv, m_q)),
                pos_ff(blk["ff"], k + masked_additive_attention(a, k @ a["w_q"], hk, hv, m_k)),
            )
        return q

    def logits(self, params, tokens, order):
        h = self.context(params, tokens, order)
        return jnp.einsum("nd,ndv->nv", h, params["heads"]["w"]) + params["heads"]["b"]  # eq. 10

    # -- incremental decoding (sampling): same numbers as ``logits``, O(N d) per step
    # The key stream of a position depends only on keys at or before it in the
    # order, so once a token is fixed its keys at every level are final. The
    # decoder caches their attention projections (``k W_k`` and ``k W_v`` per
    # block), so each step projects one new key per block and one query.
    def decode_init(self, params, order):
        n, d = self.num_tokens, self.d
        return jnp.zeros((self.num_blocks, n, d)), jnp.zeros((self.num_blocks, n, d)), jnp.zeros(n, bool)

    def decode_step(self, params, carry, tokens, order, t):
        hk, hv, done = carry
        emb = params["embed"]
        prev = order[jnp.maximum(t - 1, 0)]
        # 1) the key stream of the position decided at step t - 1 (its token is now final)
        k = emb["value"][jnp.asarray(self.value_offset)[prev] + tokens[prev]] + emb["query"][prev]
        done_new = set_at(done, prev, True)
        new_hk, new_hv = [], []
        for m, blk in enumerate(params["context"]):
            a = blk["attn"]
            hk_m, hv_m = set_at(hk[m], prev, k @ a["w_k"]), set_at(hv[m], prev, k @ a["w_v"])
            att = masked_additive_attention(a, (k @ a["w_q"])[None], hk_m, hv_m, done_new[None])[0]
            k = pos_ff(blk["ff"], k + att)
            new_hk.append(hk_m)
            new_hv.append(hv_m)
        first = t == 0  # nothing decided yet: the cache stays empty
        hk = jnp.where(first, hk, jnp.stack(new_hk))
        hv = jnp.where(first, hv, jnp.stack(new_hv))
        done = jnp.where(first, done, done_new)
        # 2) the query stream of the position decided at step t
        pos = order[t]
        x = emb["query"][pos]
        for m, blk in enumerate(params["context"]):
            a = blk["attn"]
            x = pos_ff(blk["ff"], x + masked_additive_attention(a, (x @ a["w_q"])[None], hk[m], hv[m], done[None])[0])
        logits = x @ params["heads"]["w"][pos] + params["heads"]["b"][pos]
        return logits, (hk, hv, done)
