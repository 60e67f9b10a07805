"""Autoregressive factorization orders and the ordering ensemble Z_S (eq. 22).

An *order* is a permutation ``int32[N]`` of the token positions: ``order[t]``
is the hyperparameter decided at step ``t``. Every policy in ``policies/``
conditions on one; ``rank[i]`` (the step at which position ``i`` is decided)
turns an order into attention / connectivity masks.

Ordering ensembles (Section VII-B, eq. 22): a set ``Z_S`` of ``S`` permutations
is drawn once per search; each sampled string first draws one member of
``Z_S`` uniformly, so ``P(z, a) = (1/S) prod_i P(a_{z_i} | a_{z_<i})``.

Choices where the paper is silent (documented here, used by the searchers):
- the first member of ``Z_S`` is the identity, i.e. the space's natural token
  order; ``S = 1`` (the paper's default) therefore means "the natural order",
  as in an ordinary autoregressive model;
- the other ``S - 1`` members are distinct uniformly drawn permutations (the
  paper calls ``Z_S`` a set). When ``N! - 1 < S - 1`` there are not enough
  distinct permutations and ``make_orderings`` raises. For ``N <= 8`` they are
  drawn without replacement from the enumerated permutations; for larger ``N``
  (``N! >= 362,880``) they are i.i.d. uniform permutations, where a repeat has
  negligible probability.
"""

from __future__ import annotations

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np

_ENUMERATE_MAX_N = 8


def rank_of(order: jax.Array) -> jax.Array:
    """``rank[order[t]] = t``: the step at which each position is decided."""
    return unpermute(jnp.arange(order.shape[-1], dtype=jnp.int32), order)


def unpermute(by_step: jax.Array, order: jax.Array) -> jax.Array:
    """``out[order[t]] = by_step[t]`` for ``by_step`` indexed by step along axis 0.

    Written as a one-hot select instead of a scatter (same result; for the N <= 26 tokens of
    the spaces here an elementwise select that XLA fuses under ``vmap``).
    """
    n = order.shape[-1]
    hit = order[None, :] == jnp.arange(n, dtype=order.dtype)[:, None]  # [position, step]
    hit = hit.reshape(hit.shape + (1,) * (by_step.ndim - 1))
    return jnp.sum(jnp.where(hit, by_step[None], jnp.zeros((), by_step.dtype)), axis=1)


def set_at(x: jax.Array, index: jax.Array, value: jax.Array) -> jax.Array:
    """``x.at[index].set(value)`` along axis 0 as a one-hot select (see ``unpermute``)."""
    hit = jnp.arange(x.shape[0]) == index
    return jnp.where(hit.reshape((-1,) + (1,) * (x.ndim - 1)), value, x)


def preceding_mask(order: jax.Array, inclusive: bool = False) -> jax.Array:
    """bool[N, N]: ``m[i, j]`` = position ``j`` precedes position ``i`` in ``order``.

    With ``inclusive`` the diagonal is set too (the key stream of MAADE attends
    to itself, eq. 8; the query stream does not, eq. 7).
    """
    r = rank_of(order)
    return (r[None, :] <= r[:, None]) if inclusive else (r[None, :] < r[:, None])


def identity_order(num_tokens: int) -> jax.Array:
    return jnp.arange(num_tokens, dtype=jnp.int32)


def _all_permutations(n: int) -> np.ndarray:
    """All ``n!`` permutations in lexicographic order; row 0 is the identity."""
    return np.asarray(list(itertools.permutations(range(n))), np.int32)


def make_orderings(key: jax.Array, num_tokens: int, num_orders: int) -> jax.Array:
    """``Z_S``: int32[S, N], identity first, then ``S - 1`` distinct random permutations."""
    if num_orders < 1:
        raise ValueError(f"num_orders (S) must be >= 1, got {num_orders}")
    if num_tokens <= _ENUMERATE_MAX_N:
        total = math.factorial(num_tokens)
        if num_orders > total:
            raise ValueError(f"S={num_orders} orderings requested but N={num_tokens} tokens have only {total}")
        perms = jnp.asarray(_all_permutations(num_tokens))
        if num_orders == 1:
            return perms[:1]
        # without replacement among the non-identity permutations
        pick = jax.random.choice(key, total - 1, (num_orders - 1,), replace=False) + 1
        return jnp.concatenate([perms[:1], perms[pick]], axis=0)
    rest = jax.vmap(lambda k: jax.random.permutation(k, num_tokens))(jax.random.split(key, num_orders - 1))
    return jnp.concatenate([identity_order(num_tokens)[None], rest.astype(jnp.int32)], axis=0)
