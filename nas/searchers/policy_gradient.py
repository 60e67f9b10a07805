"""Shared machinery of the policy-gradient searchers (ReMAADE, ReACTS).

Objectives ("Hyperparameter optimization with REINFORCE and Transformers"):

- REINFORCE, eq. 2: ``mean_k log P(a^k) A^k`` with ``A = f - b``.
- PPO, eqs. 11-13 (and 23-24 with orderings), ``r = P(z, a; theta) / P(z, a;
  theta_0)`` where ``theta_0`` are the parameters that sampled the batch (the
  1/S of eq. 22 cancels in the ratio). Two clipped objectives
  (``ppo_objective``): by default Schulman et al.'s (ref. [48], their eq. 7)
  ``mean_k min(r_k A_k, clip(r_k, 1 - eps, 1 + eps) A_k)``; ``"literal"`` is
  eq. 11 as printed, ``mean_k A_k min(r_k, clip(r_k, 1 - eps, 1 + eps))``.
  They agree where ``A >= 0``; where ``A < 0`` the printed form takes the
  optimistic side of the clip (``clipped_surrogate``, ``literal_surrogate``).
  At ``theta = theta_0`` both have the value and gradient of REINFORCE, so PPO
  differs from REINFORCE only when several gradient steps are taken on one
  batch. The paper takes one (Algorithm 1, line 8; eq. 14: one update per
  batch), which makes its PPO REINFORCE (its Tables III and IV give ReMAADE and
  "ReMAADE w/o PPO" the same 6.16 +- 0.25); the library takes ``ppo_epochs``
  Adam steps per batch (default 4, as in Schulman et al.; ``ppo_epochs=1`` is
  the paper's). Without PPO one Adam step per batch is taken.
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
the reward scale. The optional entropy bonus (ref. [49]; the paper: "if we have
a large exploration budget") adds ``entropy_coef * mean_k sum_i H(P(. |
a^k_<i))``, per-step entropies along the sampled strings (default 0, as in the
paper's experiments; docs/research/remaade_long.md measures it over 3,200 queries).

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

Metrics of every step (``step_metrics``; the same keys at every step):
``reward_mean`` and ``baseline``, ``loss`` (first epoch), ``entropy`` (the
policy's ``sum_i H(P(. | a_<i))`` at the sampling parameters, mean over the
batch's policy samples, or over its fallback strings when it has none),
``fresh_frac`` (policy samples with a finite score, the gradient's strings) and
``fallback_frac`` (uniform fallback strings).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import struct

from nas.core.contract import Searcher
from nas.core.dedup import Seen, fill_unique_aux
from nas.core.options import SearcherOptions, one_of, positive
from policies import make_policy
from policies.orderings import make_orderings

PPO_OBJECTIVES = ("schulman", "literal")


def clipped_surrogate(ratio, adv, clip_eps: float):
    """Schulman et al. (2017), eq. 7: ``min(r A, clip(r, 1 - eps, 1 + eps) A)``, elementwise.

    The pessimistic bound: no gradient once ``r > 1 + eps`` with ``A > 0`` or ``r < 1 - eps`` with
    ``A < 0``. The library's default reading of ReMAADE eq. 11.
    """
    return jnp.minimum(ratio * adv, jnp.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * adv)


def literal_surrogate(ratio, adv, clip_eps: float):
    """ReMAADE eq. 11 (and 13, 23) as printed: ``A min(r, clip(r, 1 - eps, 1 + eps))``, elementwise.

    Equal to ``clipped_surrogate`` where ``A >= 0``. Where ``A < 0`` it is ``A (1 + eps)`` once ``r > 1 +
    eps`` (no gradient; Schulman's keeps ``r A``) and ``r A`` once ``r < 1 - eps`` (the gradient keeps
    pushing ``r`` down; Schulman's stops at ``(1 - eps) A``).
    """
    return adv * jnp.minimum(ratio, jnp.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps))


def pg_objective(logp, logp_old, adv, weight, ppo: bool, clip_eps: float, ppo_objective: str = "schulman"):
    """Objective to MAXIMIZE: REINFORCE (eq. 2/17) or clipped PPO (eqs. 11-13, ``ppo_objective``).

    ``logp``, ``logp_old`` and ``adv`` are ``[B]`` (per string) or ``[B, N]``
    (per token); ``weight`` is ``[B]`` (1 for policy samples, 0 otherwise).
    The sum over tokens is inside, the mean over weighted strings outside.
    """
    if ppo:
        surrogate = literal_surrogate if ppo_objective == "literal" else clipped_surrogate
        # A string outside the gradient (weight 0: a fallback string, often improbable under the policy) can
        # gain so much log-probability over the epochs that exp overflows; 0 * inf would make the value and
        # the gradient NaN, so its ratio is pinned at 1 (its advantage is 0 anyway).
        on = (weight > 0).reshape(weight.shape + (1,) * (logp.ndim - 1))
        obj = surrogate(jnp.exp(jnp.where(on, logp - logp_old, 0.0)), adv, clip_eps)
    else:
        obj = logp * adv
    if obj.ndim == 2:
        obj = jnp.sum(obj, axis=1)
    return jnp.sum(weight * obj) / jnp.maximum(jnp.sum(weight), 1.0)


def ema_baseline(b, num_updates, batch_mean, decay: float):
    """Eq. 1's b: ``decay b + (1 - decay) batch_mean``, the first batch's mean at the first update
    (``decay = 0``: the batch mean)."""
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
    seen: Seen  # the queried ids (kept by the base, Searcher.record_told)
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
      ppo_objective: ``schulman`` (Schulman et al.'s ``min(r A, clip(r) A)``) or ``literal``
        (eq. 11 as printed, ``A min(r, clip(r))``); the same where ``A >= 0``.
      clip_eps: PPO's epsilon (0.1).
      ppo_epochs: Adam steps per batch with PPO (4; the paper's Algorithm 1 takes 1; one step
        without PPO).
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
    ppo_objective: str = "schulman"
    clip_eps: float = 0.1
    ppo_epochs: int = 4
    entropy_coef: float = 0.0
    pool: int = 0
    max_rounds: int = 16

    def check(self):
        super().check()
        one_of(self, "policy", sorted(POLICY_KWARGS))
        one_of(self, "ppo_objective", PPO_OBJECTIVES)
        positive(self, "d", "num_blocks", "num_orders", "ppo_epochs", "max_rounds")
        if self.pool < 0:
            raise ValueError(f"pool must be >= 0 (0 = 2 * batch_size), got {self.pool}")
        if not self.learning_rate > 0:
            raise ValueError(f"learning_rate must be > 0, got {self.learning_rate}")


class PolicySearcher(Searcher):
    """Common init/ask and Adam update of ReMAADE and ReACTS; each writes its update as ``_tell`` (the base
    adds the told strings to ``seen``)."""

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
            extra=extra,
            **self.new_books(PolicySearchState, self.max_queries),
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
        """``update_epochs`` Adam steps on the (PPO or REINFORCE) objective; skipped when no weight.

        Returns the new state, the first epoch's loss and the step entropy (``step_entropy``).
        """
        o = self.options
        logp_old = jax.lax.stop_gradient(self.batch_log_prob(state.params, tokens, orders))
        if not per_token:
            logp_old = jnp.sum(logp_old, axis=1)

        def loss_fn(params):
            logp = self.batch_log_prob(params, tokens, orders)
            if not per_token:
                logp = jnp.sum(logp, axis=1)
            obj = pg_objective(logp, logp_old, adv, weight, o.ppo, o.clip_eps, o.ppo_objective)
            if o.entropy_coef == 0.0:  # no bonus: skip the extra pass
                return -obj
            ent = jnp.sum(weight * self.batch_entropy(params, tokens, orders)) / jnp.maximum(jnp.sum(weight), 1.0)
            return -(obj + o.entropy_coef * ent)

        def epoch(carry, _):
            params, opt_state = carry
            loss, grads = jax.value_and_grad(loss_fn)(params)
            updates, opt_state = self.optimizer.update(grads, opt_state, params)
            return (optax.apply_updates(params, updates), opt_state), loss

        (params, opt_state), loss = jax.lax.scan(
            epoch, (state.params, state.opt_state), None, length=self.update_epochs
        )
        any_w = jnp.sum(weight) > 0
        keep = lambda new, old: jax.tree_util.tree_map(lambda a, b: jnp.where(any_w, a, b), new, old)  # noqa: E731
        params, opt_state = keep(params, state.params), keep(opt_state, state.opt_state)
        ent = self.step_entropy(state.params, tokens, orders, state.fresh)
        return state.replace(params=params, opt_state=opt_state, num_updates=state.num_updates + 1), loss[0], ent

    def step_entropy(self, params, tokens, orders, fresh):
        """The policy's ``sum_i H(P(. | a_<i))`` at ``params``, mean over the batch's policy samples
        (over all its strings, i.e. the fallback ones, when it has none)."""
        probe = jnp.where(jnp.any(fresh), fresh, True).astype(jnp.float32)
        return jnp.sum(probe * self.batch_entropy(params, tokens, orders)) / jnp.sum(probe)

    @staticmethod
    def step_metrics(state, batch_mean, loss, ent, weight, **extra):
        """The metrics every policy searcher reports at every step (module docstring), as f32 scalars."""
        metrics = {
            "reward_mean": batch_mean,
            "baseline": state.baseline,
            "loss": loss,
            "entropy": ent,
            "fresh_frac": jnp.mean(weight),
            "fallback_frac": jnp.mean((~state.fresh).astype(jnp.float32)),
            **extra,
        }
        return jax.tree_util.tree_map(lambda x: jnp.asarray(x, jnp.float32), metrics)

    @staticmethod
    def rewards_and_weights(state, scores):
        """``(f, weight, mean)``: weight 1 for policy samples with a finite score, their rewards ``f`` (0
        elsewhere) and the masked batch mean."""
        weight = (state.fresh & jnp.isfinite(scores)).astype(jnp.float32)
        f = jnp.where(weight > 0, scores, 0.0)
        mean = jnp.sum(weight * f) / jnp.maximum(jnp.sum(weight), 1.0)
        return f, weight, mean
