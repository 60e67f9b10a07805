"""Shared machinery of the policy-gradient searchers (ReMAADE, ReACTS).

Objectives ("Hyperparameter optimization with REINFORCE and Transformers"):

- REINFORCE, eq. 2: ``mean_k log P(a^k) A^k`` with ``A = f - b``.
- PPO, eqs. 11-13 (and 23-24 with orderings): ``mean_k min(r_k A_k,
  clip(r_k, 1 - eps, 1 + eps) A_k)``, ``r = P(z, a; theta) / P(z, a; theta_0)``
  where ``theta_0`` are the parameters that sampled the batch; the 1/S of
  eq. 22 cancels in the ratio. At ``theta = theta_0`` the value and gradient
  equal REINFORCE's. PPO is only different from REINFORCE when several
  gradient steps are taken on one batch: as in Schulman et al. (ref. [48]),
  ``ppo_epochs`` Adam steps per batch (default 4; the paper does not say).
  Without PPO one Adam step per batch is taken (Algorithm 1, line 8).
- Both also accept per-token log-probabilities and advantages (``[B, N]``):
  ReACTS' actor-critic gradient, eq. 17, and its PPO variant with per-token
  ratios (standard PPO for per-step advantages).

Baseline ``b`` (paper: "a baseline function", unspecified): an exponential
moving average of the batch-mean reward, updated with the current batch before
it is used (``b <- decay b + (1 - decay) mean_k f_k``, ENAS-style, starting at
the first batch mean). Default ``baseline_decay = 0``: ``b`` is the mean reward
of the current batch of ``B = 30`` policy samples. Zoph & Le's moving average
(decay 0.9 here) was measured too: with only 5 updates in 150 queries it stays
near the first (uniform) batch's mean while rewards rise, so later advantages
are almost all positive; on NAS-Bench-201 cifar10 (200 seeds) it found worse
incumbents (best validation 91.24 vs 91.34 %). Rewards are the validation
scores as the benchmark gives them (NB201 accuracy in %, HPOLib -log MSE);
the paper normalizes nothing else, and Adam makes the step size independent of
the reward scale. The optional entropy bonus (ref. [49]) adds
``entropy_coef * mean_k sum_i H(P(. | a^k_<i))``, per-step entropies along the
sampled strings (default 0, as in the paper's experiments).

Never re-querying a string (and what happens once the policy has converged):
``ask`` draws candidates from the policy (each picks an order from ``Z_S``
uniformly, eq. 22, samples a valid string, Algorithm 1 line 5) and keeps the
first ones that were not queried before nor earlier in the batch
(``nas.core.dedup.fill_unique_aux``, rounds of ``pool`` candidates, at most
``max_rounds`` rounds). A converged policy proposes almost only strings it
already queried; after ``max_rounds`` rounds the remaining slots are filled
with uniform random valid strings (``fill_unique``'s fallback). Those are
queried (the budget is spent on new strings, which also explores) and count
for the incumbent, but they are NOT policy samples, so they are excluded from
the gradient and from the baseline (weight 0): including them would be an
off-policy update without importance weights. Policy samples filtered for
novelty are treated as on-policy (the filter conditions the sampling
distribution; this is the usual approximation).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import struct

from nas.core.dedup import Seen, fill_unique_aux, seen_add, seen_init
from nas.core.searcher import Searcher, SearcherOptions, one_of, positive
from policies.base import make_policy
from policies.orderings import make_orderings


def pg_objective(logp, logp_old, adv, weight, ppo: bool, clip_eps: float):
    """Objective to MAXIMIZE: REINFORCE (eq. 2/17) or clipped PPO (eqs. 11-13).

    ``logp``, ``logp_old`` and ``adv`` are ``[B]`` (per string) or ``[B, N]``
    (per token); ``weight`` is ``[B]`` (1 for policy samples, 0 otherwise).
    The sum over tokens is inside, the mean over weighted strings outside.
    """
    if ppo:
        ratio = jnp.exp(logp - logp_old)
        obj = jnp.minimum(ratio * adv, jnp.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * adv)
    else:
        obj = logp * adv
    if obj.ndim == 2:
        obj = jnp.sum(obj, axis=1)
    return jnp.sum(weight * obj) / jnp.maximum(jnp.sum(weight), 1.0)


def ema_baseline(b, num_updates, batch_mean, decay: float):
    return jnp.where(num_updates == 0, batch_mean, decay * b + (1.0 - decay) * batch_mean)


@struct.dataclass
class PolicySearchState:
    params: Any
    opt_state: Any
    orders: jax.Array  # int32[S, N]: the ordering ensemble Z_S (eq. 22)
    order_idx: jax.Array  # int32[B]: order used by each string of the last ask
    fresh: jax.Array  # bool[B]: the string is a policy sample (not a fallback)
    baseline: jax.Array  # f32[]
    num_updates: jax.Array  # int32[]
    seen: Seen
    extra: Any = None  # searcher-specific (ReACTS' data buffer)


POLICY_KWARGS = {"maade": ("d", "num_blocks"), "made": ("d",), "lstm": ("d",), "factorized": ()}


@dataclasses.dataclass(frozen=True)
class PolicySearchOptions(SearcherOptions):
    """Options shared by ReMAADE and ReACTS (paper defaults).

    Attributes:
      batch_size: B, policy samples per step (30).
      policy: ``maade`` | ``made`` | ``lstm`` | ``factorized`` (``policies/``).
      d: embedding width (36).
      num_blocks: M, attention blocks of MAADE (1).
      num_orders: S, the ordering ensemble Z_S of eq. 22 (1 = the natural order).
      learning_rate: Adam's step size alpha (1e-2).
      ppo: clipped PPO (eqs. 11-13) instead of REINFORCE.
      clip_eps: PPO's epsilon (0.1).
      ppo_epochs: Adam steps per batch with PPO (4; one step without PPO).
      entropy_coef: weight of the entropy bonus (0 = none, as the paper's experiments).
      pool: policy samples per dedup round (0 = 2 B).
      max_rounds: dedup rounds before uniform fallback strings fill the batch.
    """

    batch_size: int = 30
    policy: str = "maade"
    d: int = 36
    num_blocks: int = 1
    num_orders: int = 1
    learning_rate: float = 1e-2
    ppo: bool = True
    clip_eps: float = 0.1
    ppo_epochs: int = 4
    entropy_coef: float = 0.0
    pool: int = 0
    max_rounds: int = 16

    def check(self):
        super().check()
        one_of(self, "policy", sorted(POLICY_KWARGS))
        positive(self, "d", "num_blocks", "num_orders", "ppo_epochs", "max_rounds")
        if self.pool < 0:
            raise ValueError(f"pool must be >= 0 (0 = 2 * batch_size), got {self.pool}")
        if not self.learning_rate > 0:
            raise ValueError(f"learning_rate must be > 0, got {self.learning_rate}")


class PolicySearcher(Searcher):
    """Common init/ask and Adam update of ReMAADE and ReACTS."""

    Options = PolicySearchOptions

    def setup(self):
        o = self.options
        kw = {"d": o.d, "num_blocks": o.num_blocks}
        self.policy = make_policy(o.policy, self.space, **{k: kw[k] for k in POLICY_KWARGS[o.policy]})
        self.pool_size = o.pool if o.pool > 0 else 2 * o.batch_size
        self.optimizer = optax.adam(o.learning_rate)

    @property
    def update_epochs(self) -> int:
        """Adam steps per batch: ``ppo_epochs`` with PPO, one without (Algorithm 1, line 8)."""
        return self.options.ppo_epochs if self.options.ppo else 1

    # -- init / ask ------------------------------------------------------------
    def init_policy_state(self, key, extra=None) -> PolicySearchState:
        k_p, k_o = jax.random.split(key)
        params = self.policy.init(k_p)
        b = self.batch_size
        return PolicySearchState(
            params=params,
            opt_state=self.optimizer.init(params),
            orders=make_orderings(k_o, self.space.num_tokens, self.options.num_orders),
            order_idx=jnp.zeros(b, jnp.int32),
            fresh=jnp.zeros(b, bool),
            baseline=jnp.float32(0.0),
            num_updates=jnp.int32(0),
            seen=seen_init(self.max_queries),
            extra=extra,
        )

    def init(self, key):
        return self.init_policy_state(key)

    def sample_one(self, params, orders, key):
        """Eq. 22: an order drawn uniformly from Z_S, then a valid string."""
        k_z, k_a = jax.random.split(key)
        z = jax.random.randint(k_z, (), 0, orders.shape[0])
        tokens, _ = self.policy.sample(params, k_a, orders[z])
        return tokens, z

    def ask(self, key, state):
        def propose(k):
            keys = jax.random.split(k, self.pool_size)
            return jax.vmap(self.sample_one, in_axes=(None, None, 0))(state.params, state.orders, keys)

        tokens, fresh, z = fill_unique_aux(
            key, self.space, propose, state.seen, self.batch_size, self.options.max_rounds
        )
        return tokens, state.replace(order_idx=z, fresh=fresh)

    # -- update ------------------------------------------------------------------
    def batch_log_prob(self, params, tokens, orders):
        """Per-token log-probabilities f32[B, N] of a batch (one parallel pass each)."""
        return jax.vmap(self.policy.log_prob, in_axes=(None, 0, 0))(params, tokens, orders)

    def batch_entropy(self, params, tokens, orders):
        return jnp.sum(jax.vmap(self.policy.entropy, in_axes=(None, 0, 0))(params, tokens, orders), axis=1)

    def optimize(self, state, tokens, orders, adv, weight, per_token: bool):
        """``update_epochs`` Adam steps on the (PPO or REINFORCE) objective; skipped when no weight."""
        logp_old = jax.lax.stop_gradient(self.batch_log_prob(state.params, tokens, orders))
        if not per_token:
            logp_old = jnp.sum(logp_old, axis=1)

        def loss_fn(params):
            logp = self.batch_log_prob(params, tokens, orders)
            if not per_token:
                logp = jnp.sum(logp, axis=1)
            obj = pg_objective(logp, logp_old, adv, weight, self.options.ppo, self.options.clip_eps)
            if self.options.entropy_coef == 0.0:  # no bonus: skip the extra pass
                return -obj, jnp.float32(0.0)
            ent = jnp.sum(weight * self.batch_entropy(params, tokens, orders)) / jnp.maximum(jnp.sum(weight), 1.0)
            return -(obj + self.options.entropy_coef * ent), ent

        def epoch(carry, _):
            params, opt_state = carry
            (loss, ent), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
            updates, opt_state = self.optimizer.update(grads, opt_state, params)
            return (optax.apply_updates(params, updates), opt_state), (loss, ent)

        (params, opt_state), (loss, ent) = jax.lax.scan(
            epoch, (state.params, state.opt_state), None, length=self.update_epochs
        )
        if self.options.entropy_coef == 0.0:  # report the entropy at the sampling parameters
            ent = jnp.sum(weight * self.batch_entropy(state.params, tokens, orders))[None] / jnp.maximum(
                jnp.sum(weight), 1.0
            )
        any_w = jnp.sum(weight) > 0
        keep = lambda new, old: jax.tree_util.tree_map(lambda a, b: jnp.where(any_w, a, b), new, old)  # noqa: E731
        params, opt_state = keep(params, state.params), keep(opt_state, state.opt_state)
        return state.replace(params=params, opt_state=opt_state, num_updates=state.num_updates + 1), loss[0], ent[0]

    def rewards_and_weights(self, state, tokens, scores):
        """Weight 1 for policy samples with a finite score, the masked batch mean and ``seen`` update."""
        weight = (state.fresh & jnp.isfinite(scores)).astype(jnp.float32)
        f = jnp.where(weight > 0, scores, 0.0)
        mean = jnp.sum(weight * f) / jnp.maximum(jnp.sum(weight), 1.0)
        seen = seen_add(state.seen, jax.vmap(self.space.string_id)(tokens))
        return f, weight, mean, state.replace(seen=seen)
