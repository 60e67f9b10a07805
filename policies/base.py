"""The policy contract: autoregressive distributions over one token string.

A policy network (Section IV of "Hyperparameter optimization with REINFORCE and
Transformers") models ``P(a_1:N; theta) = prod_t P(a_{z_t} | a_{z_<t}; theta)``
(eq. 3) for an autoregressive order ``z`` (eq. 22). Policies are static Python
objects (space + sizes) with pure methods on ONE string; callers ``vmap``:

- ``init(key) -> params``
- ``sample(params, key, order) -> (tokens int32[N], log_probs f32[N])``:
  ancestral sampling; ``log_probs[i]`` is ``log P(a_i | a_<i in order)`` at
  position ``i`` (so ``log_probs.sum()`` is the string's log-probability).
- ``log_prob(params, tokens, order) -> f32[N]``: the same per-position
  log-probabilities for given tokens in ONE teacher-forced pass (attention or
  connectivity masks; a ``lax.scan`` for the LSTM).
- ``complete(params, key, tokens, order, start)``: keeps the tokens at the
  first ``start`` steps of ``order`` and samples the rest (the rollouts of
  ReACTS, eq. 16).
- ``entropy(params, tokens, order) -> f32[N]``: entropy of each step's
  conditional distribution given the prefix of ``tokens`` (entropy bonus).

Constraints. Each step only allows ``space.step_mask(tokens, assigned, pos)``
(restricted to ``space.value_mask``); ``log_prob`` recomputes the same masks
with ``assigned`` = the positions earlier in the order, so ``log_prob`` of a
sampled string equals its per-step sampling log-probabilities. If a space's
step mask ever allows nothing, the step falls back to the value mask (the
string will then be invalid and resampled). Strings that the step masks cannot
rule out (e.g. NAS-Bench-101 cells without an input-output path) are
rejected and resampled (Algorithm 1 line 5: "sample B *valid* strings"), up to
``max_resample`` times; after that a uniform valid string from
``space.sample`` is returned with its log-probability under the policy (this
needs a policy that puts almost all its mass on invalid strings and has not
been seen in practice). The policy's density is therefore the masked product
of eq. 3, not renormalized over valid strings; all gradients use it.

Subclasses implement ``init``, ``logits(params, tokens, order) -> f32[N, D]``
(row ``i`` = unnormalized logits of position ``i`` given the tokens preceding
it in ``order``; later tokens must not influence it) and optionally the
incremental decoder ``decode_init`` / ``decode_step`` (default: recompute
``logits`` and take the row of the position decided at step ``t``), register the
class with ``@register_policy("name")`` (``policies.registry``) and import its
module in ``policies/__init__.py``.
"""

from __future__ import annotations

import warnings
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from policies.orderings import rank_of, set_at, unpermute
from spaces.base import Space

NEG = -1e30  # a finite "minus infinity" keeps gradients of masked logits NaN-free
# matrix products of the logits at full float32 precision: GPUs otherwise round float32 products to TF32
# (~1e-3 relative), and the log-probabilities of sampling and of log_prob (a PPO ratio at the old
# parameters) would then differ; CPUs compute float32 products in full either way (same numbers)
PRECISION = "highest"

_IN_REGISTRY = ("POLICIES", "available_policies", "make_policy", "register_policy")  # defined here in 0.2


def __getattr__(name: str):
    """The registry's names, once defined here: still importable for a release, with a warning."""
    if name in _IN_REGISTRY:
        warnings.warn(
            f"policies.base.{name} moved to policies.registry: import it from policies (from policies import "
            f"{name}); the old name goes in nasjax 0.4",
            DeprecationWarning,
            stacklevel=2,
        )
        from policies import registry

        return getattr(registry, name)
    raise AttributeError(f"module 'policies.base' has no attribute {name!r}")


def masked_log_softmax(logits: jax.Array, allowed: jax.Array) -> jax.Array:
    """log-softmax over ``allowed`` values; disallowed ones get ``NEG``."""
    z = jnp.where(allowed, logits, NEG)
    return jnp.where(allowed, jax.nn.log_softmax(z, axis=-1), NEG)


def value_families(space: Space) -> tuple[np.ndarray, np.ndarray, int]:
    """Shared value embeddings per *value family* (MAADE's embedding layer).

    The paper shares one value embedding ``V`` across hyperparameters that take
    values in the same space and keeps "a separate embedding layer for each
    hyperparameter family" otherwise. Tokens are grouped by cardinality (a
    space may override with a ``value_families`` attribute: one family id per
    token). Returns ``(offset int32[N], family int32[N], rows)``: the value
    ``v`` of token ``i`` is row ``offset[i] + v`` of one ``[rows, d]`` table.
    """
    card = np.asarray(space.cardinalities)
    fam = getattr(space, "value_families", None)
    if fam is None:
        _, fam = np.unique(card, return_inverse=True)
    fam = np.asarray(fam, np.int32)
    sizes = np.zeros(fam.max() + 1, np.int64)
    for f, c in zip(fam, card):
        sizes[f] = max(sizes[f], c)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    return starts[fam].astype(np.int32), fam, int(sizes.sum())


class Policy:
    """Base class: masked sampling and teacher-forced log-probabilities."""

    registry_name = "policy"
    max_resample = 100

    def __init__(self, space: Space):
        self.space = space
        self.num_tokens = space.num_tokens
        self.num_values = space.max_cardinality
        self._value_mask = np.asarray(space.value_mask)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(space={self.space.name})"

    # -- to implement ----------------------------------------------------------
    def init(self, key: jax.Array) -> Any:
        raise NotImplementedError

    def logits(self, params, tokens: jax.Array, order: jax.Array) -> jax.Array:
        raise NotImplementedError

    def decode_init(self, params, order: jax.Array) -> Any:
        del params, order
        return ()

    def decode_step(self, params, carry, tokens: jax.Array, order: jax.Array, t: jax.Array):
        """Logits of position ``order[t]``; tokens at steps ``< t`` are final."""
        return self.logits(params, tokens, order)[order[t]], carry

    # -- masks -----------------------------------------------------------------
    def allowed(self, tokens: jax.Array, assigned: jax.Array, position: jax.Array) -> jax.Array:
        vm = jnp.asarray(self._value_mask)[position]
        m = self.space.step_mask(tokens, assigned, position) & vm
        return jnp.where(jnp.any(m), m, vm)

    def _all_allowed(self, tokens: jax.Array, order: jax.Array) -> jax.Array:
        """bool[N, D]: the step masks met while decoding ``tokens`` in ``order``."""
        rank = rank_of(order)
        positions = jnp.arange(self.num_tokens)
        return jax.vmap(lambda i: self.allowed(tokens, rank < rank[i], i))(positions)

    # -- the contract ----------------------------------------------------------
    def log_prob(self, params, tokens: jax.Array, order: jax.Array) -> jax.Array:
        with jax.default_matmul_precision(PRECISION):
            logits = self.logits(params, tokens, order)
        logp = masked_log_softmax(logits, self._all_allowed(tokens, order))
        return jnp.take_along_axis(logp, tokens[:, None].astype(jnp.int32), axis=1)[:, 0]

    def entropy(self, params, tokens: jax.Array, order: jax.Array) -> jax.Array:
        allowed = self._all_allowed(tokens, order)
        with jax.default_matmul_precision(PRECISION):
            logits = self.logits(params, tokens, order)
        logp = masked_log_softmax(logits, allowed)
        return -jnp.sum(jnp.where(allowed, jnp.exp(logp) * logp, 0.0), axis=-1)

    def complete(self, params, key: jax.Array, tokens: jax.Array, order: jax.Array, start: jax.Array):
        """Keeps steps ``< start`` of ``tokens``, samples the rest; one pass, no validity check."""
        n = self.num_tokens

        def body(carry, t):
            toks, assigned, dc, k = carry
            pos = order[t]
            logits, dc = self.decode_step(params, dc, toks, order, t)
            logp = masked_log_softmax(logits, self.allowed(toks, assigned, pos))
            k, sub = jax.random.split(k)
            v = jnp.where(t < start, toks[pos], jax.random.categorical(sub, logp)).astype(jnp.int32)
            return (set_at(toks, pos, v), set_at(assigned, pos, True), dc, k), logp[v]

        with jax.default_matmul_precision(PRECISION):  # the same products as log_prob's
            init = (tokens.astype(jnp.int32), jnp.zeros(n, bool), self.decode_init(params, order), key)
            (toks, _, _, _), lp_by_step = jax.lax.scan(body, init, jnp.arange(n))
        return toks, unpermute(lp_by_step, order)

    @property
    def constrained(self) -> bool:
        """Whether a string that obeys the value mask can be invalid (static)."""
        sp = type(self.space)
        return sp.is_valid is not Space.is_valid or sp.step_mask is not Space.step_mask

    def complete_valid(self, params, key: jax.Array, tokens: jax.Array, order: jax.Array, start: jax.Array):
        """``complete`` resampled until ``space.is_valid`` (Algorithm 1, line 5)."""
        if not self.constrained:  # product spaces: every masked sample is valid
            return self.complete(params, key, tokens, order, start)
        k0, k_loop, k_fb = jax.random.split(key, 3)
        first = self.complete(params, k0, tokens, order, start)

        def cond(c):
            _, (toks, _), tries = c
            return ~self.space.is_valid(toks) & (tries < self.max_resample)

        def body(c):
            k, _, tries = c
            k, sub = jax.random.split(k)
            return k, self.complete(params, sub, tokens, order, start), tries + 1

        _, (toks, lp), _ = jax.lax.while_loop(cond, body, (k_loop, first, jnp.int32(0)))
        # never reached in practice; keeps the promise "valid strings only"
        # (a rollout keeps its prefix by falling back to the string it came from)
        ok = self.space.is_valid(toks)
        fb = jnp.where((start > 0) & self.space.is_valid(tokens), tokens, self.space.sample(k_fb))
        toks = jnp.where(ok, toks, fb)
        lp = jnp.where(ok, lp, self.log_prob(params, fb, order))
        return toks, lp

    def sample(self, params, key: jax.Array, order: jax.Array):
        """A valid string and its per-position log-probabilities."""
        blank = jnp.zeros(self.num_tokens, jnp.int32)
        return self.complete_valid(params, key, blank, order, jnp.int32(0))


def num_params(tree) -> int:
    return int(sum(np.prod(x.shape) for x in jax.tree_util.tree_leaves(tree)))
