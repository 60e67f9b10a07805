"""ReMAADE (Algorithm 1): REINFORCE / PPO with an autoregressive policy network.

"Hyperparameter optimization with REINFORCE and Transformers", Section V-A.
Each step samples ``B`` valid, never-queried strings from the policy
(``ask``), gets their validation scores, and updates the policy with Adam on
the PPO objective (eqs. 11-13, 23-24; ``ppo=True``) or REINFORCE (eq. 2;
``ppo=False``) with advantage ``f - b`` (see ``policy_gradient`` for the
baseline, the PPO epochs, deduplication and the converged-policy fallback).

Paper defaults: ``learning_rate = 1e-2``, ``d = 36``, ``num_blocks`` (M) ``= 1``,
``num_orders`` (S) ``= 1``, ``batch_size`` (B) ``= 30``, ``clip_eps = 0.1``. The
library's update differs from the text's in two options (docs/research/fidelity.md):
``ppo_epochs = 4`` (the text: one update per batch, ``ppo_epochs=1``) and
Schulman's clipped objective (the text's eq. 11: ``ppo_objective="literal"``);
``configs/paper/remaade.py`` runs the text's version.

The ablation of Table IV are configurations of this one searcher:

=============================  ===========================================
plain vanilla REINFORCE        ``policy="factorized", ppo=False`` (eq. 21)
REINFORCE with MADE            ``policy="made", ppo=False``
ReMAADE w/o PPO                ``policy="maade", ppo=False``
ReMAADE                        ``policy="maade"`` (PPO)
LSTM controller (Zoph & Le)    ``policy="lstm", ppo=False``
=============================  ===========================================
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp

from nas.core.registry import register
from nas.searchers.policy_gradient import PolicySearcher, PolicySearchOptions, ema_baseline


@dataclasses.dataclass(frozen=True)
class ReMAADEOptions(PolicySearchOptions):
    """Attributes (and those of ``PolicySearchOptions``):
    baseline_decay: decay of the moving-average baseline b of eq. 1 (0 = the batch's mean reward;
      the paper: "a baseline function").
    """

    baseline_decay: float = 0.0

    def check(self):
        super().check()
        if not 0.0 <= self.baseline_decay < 1.0:
            raise ValueError(f"baseline_decay must be in [0, 1), got {self.baseline_decay}")


@register("remaade")
class ReMAADE(PolicySearcher):
    Options = ReMAADEOptions

    def _tell(self, key, tokens, scores, state):
        del key
        f, weight, batch_mean = self.rewards_and_weights(state, scores)
        any_w = jnp.sum(weight) > 0
        ema = ema_baseline(state.baseline, state.num_updates, batch_mean, self.options.baseline_decay)
        b = jnp.where(any_w, ema, state.baseline)
        adv = weight * (f - b)
        orders = state.orders[state.order_idx]
        state, loss, ent = self.optimize(state.replace(baseline=b), tokens, orders, adv, weight, per_token=False)
        return state, self.step_metrics(state, batch_mean, loss, ent, weight)
