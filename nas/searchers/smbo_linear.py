"""SMBO with a linear surrogate on hashed features (Negrinho et al. 2019, Section 7.2).

"For SMBO, we use a linear surrogate function to predict the validation accuracy of an
architecture from its features (hashed modules sequences and hyperparameter values). For each
architecture requested from this search algorithm, with probability 0.1 a randomly specified
architecture is returned; otherwise it evaluates 512 random architectures with the surrogate
model and returns the one with the best predicted validation accuracy."

Each ``ask`` refits ridge regression (``surrogates.ridge``, ``l2``) on every architecture told
so far (failed evaluations, ``-inf``, are left out), scores ``num_candidates`` uniform random,
unqueried architectures and returns the best; each slot of the batch is instead a random
unqueried architecture with probability ``random_prob``. Features: the space's ``hashed`` kind
(a flattened language space: hashed ``(hyperparameter, value)`` pairs and hashed identities of
the modules present, ``spaces.language.flatten``) or, on spaces without it, ``onehot``.

Differences from the paper's code: never re-queries an architecture (candidates already queried
are skipped; DESIGN.md), and a batch of ``B`` takes the top ``B`` candidates of one pool.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import struct

from nas.core.contract import Searcher
from nas.core.dedup import Seen, fill_unique, first_occurrence, rank_among, seen_add, seen_contains
from nas.core.options import SearcherOptions, feature_kind, positive
from nas.core.registry import register
from surrogates.ridge import fit_ridge, predict_ridge


@dataclasses.dataclass(frozen=True)
class SMBOLinearOptions(SearcherOptions):
    """Attributes:
    num_candidates: random architectures scored by the surrogate per ask (512).
    random_prob: probability that a slot is a random architecture instead (0.1).
    l2: ridge penalty of the linear surrogate.
    encoding: a feature kind of the space; ``auto`` = ``hashed`` where the space has it, else ``onehot``.
    """

    num_candidates: int = 512
    random_prob: float = 0.1
    l2: float = 1e-2
    encoding: str = "auto"

    def check(self):
        super().check()
        positive(self, "num_candidates")
        if not 0.0 <= self.random_prob <= 1.0:
            raise ValueError(f"random_prob must be in [0, 1], got {self.random_prob}")
        if self.l2 <= 0:
            raise ValueError(f"l2 must be > 0, got {self.l2}")


@struct.dataclass
class SMBOState:
    tokens: jax.Array  # int32[C, N] queried strings
    scores: jax.Array  # f32[C]
    count: jax.Array  # int32[]
    seen: Seen


@register("smbo_linear")
class SMBOLinear(Searcher):
    """Best of ``num_candidates`` random architectures under a ridge surrogate; random with prob. 0.1."""

    Options = SMBOLinearOptions
    splits_over_devices = True  # no LAPACK call (surrogates.ridge)

    def setup(self):
        self.encoding = feature_kind(self.space, self.options.encoding, ("hashed",))

    @property
    def capacity(self) -> int:
        return self.num_steps * self.batch_size

    def init(self, key):
        del key
        c, n = self.capacity, self.space.num_tokens
        return SMBOState(
            tokens=jnp.zeros((c, n), jnp.int32),
            scores=jnp.full((c,), -jnp.inf, jnp.float32),
            count=jnp.int32(0),
            **self.new_books(SMBOState, c),
        )

    def features(self, tokens):
        return jax.vmap(lambda t: self.space.features(t, self.encoding))(tokens)

    def surrogate(self, state):
        """(w, b) of the ridge fit on the architectures told so far."""
        mask = (jnp.arange(self.capacity) < state.count) & jnp.isfinite(state.scores)
        y = jnp.where(mask, state.scores, 0.0)
        return fit_ridge(self.features(state.tokens), y, mask, self.options.l2)

    def ask(self, key, state):
        b = self.batch_size
        k_pool, k_coin, k_rand = jax.random.split(key, 3)
        w, bias = self.surrogate(state)
        pool = jax.vmap(self.space.sample)(jax.random.split(k_pool, self.options.num_candidates))
        ids = jax.vmap(self.space.string_id)(pool)
        ok = (ids >= 0) & ~seen_contains(state.seen, ids) & first_occurrence(ids)
        pred = jnp.where(ok, predict_ridge(w, bias, self.features(pool)), -jnp.inf)
        _, top = jax.lax.top_k(pred, b)
        chosen, chosen_ok = pool[top], ok[top]
        # a slot is random with probability random_prob, or when the pool had too few new strings
        use_random = (jax.random.uniform(k_coin, (b,)) < self.options.random_prob) | ~chosen_ok
        keep_ids = jnp.where(use_random, -2, ids[top])
        rand, _ = fill_unique(
            k_rand, self.space, self._propose_random, seen_add(state.seen, keep_ids), b, fallback_rounds=0
        )  # the proposal is uniform already
        slot = rank_among(use_random)
        tokens = jnp.where(use_random[:, None], rand[jnp.clip(slot, 0, b - 1)], chosen)
        return tokens.astype(jnp.int32), state

    def _propose_random(self, key):
        return jax.vmap(self.space.sample)(jax.random.split(key, max(2 * self.batch_size, 16)))

    def _tell(self, key, tokens, scores, state):
        del key
        start = state.count
        state = SMBOState(
            tokens=jax.lax.dynamic_update_slice(state.tokens, tokens.astype(jnp.int32), (start, 0)),
            scores=jax.lax.dynamic_update_slice(state.scores, scores.astype(jnp.float32), (start,)),
            count=start + tokens.shape[0],
            seen=state.seen,  # the base adds the told ids (Searcher.record_told)
        )
        return state, {"best": jnp.max(state.scores)}
