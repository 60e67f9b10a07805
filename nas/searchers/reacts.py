"""ReACTS (Algorithms 2-3): actor-critic policy gradient with a learned simulator.

"Hyperparameter optimization with REINFORCE and Transformers", Section VI.
Each step (Algorithm 2) samples ``B`` valid, never-queried strings from the
policy (as ReMAADE, see ``policy_gradient``), queries them, then

1. retrains the simulator ``S_phi`` on ALL strings queried so far with the
   covariate-shift weights of eq. 20: a string ``a`` gets weight
   ``(t + 1) P(a; theta_t) / sum_{s<=t} P(a; theta_s)``, the density ratio of
   the current policy to the mixture of the policies that produced the data
   (bounded by ``t + 1``). ``P(a; theta_s)`` is the policy's marginal over its
   ordering ensemble, ``(1/S) sum_z P(a | z)``, evaluated with the stored
   parameters of every past step (memory O(steps x |theta|); the log-marginals
   are cached, so a step evaluates only its new strings under the earlier
   policies and every string under the current one). ``S_phi`` is the
   BANANAS meta-network (ref. [17]): ``surrogates.mlp_ensemble`` (5 MLPs,
   10 x 20 ReLU, Adam 0.01, MAE), on the space's path encoding where it has
   one (NAS-Bench-101/201, as BANANAS) and one-hot otherwise;
   ``sim_epochs = 150`` as in BANANAS' NAS experiments; the ensemble mean is
   the prediction. Algorithm 2, line 6 computes ``phi^t`` at every step (a
   fit from scratch, ``sim_warm_epochs = 0``); by default
   (``sim_warm_epochs = 30``) each step continues from the previous step's
   simulator for 30 epochs (a full fit at the first step), about 3x cheaper
   and as good (500 seeds on NB201 cifar10: mean best validation accuracy
   91.411 vs 91.400; results/policy_speed.json).
2. estimates, for each sampled string ``a^k`` and each step ``i`` of its order,
   the value of the prefix ``a^k_<i`` by ``L = rollouts`` completions sampled
   from the policy and scored by ``S_phi`` (eq. 16; completions are valid
   strings, resampled like policy samples; the empty prefix is included);
3. updates the policy with the actor-critic gradient of eq. 17,
   ``(1/B) sum_k sum_i grad log P(a^k_i | a^k_<i) [f(a^k) - V(a^k_<i)]``
   (Algorithm 3), with Adam; with ``ppo=True`` (default) it maximizes the
   per-token clipped PPO surrogate of these per-step advantages for
   ``ppo_epochs`` steps (the paper defines no PPO for eq. 17; Algorithm 3,
   line 8 takes one gradient step of eq. 17, which is ``ppo=False``, "ReACTS
   w/o PPO", and which ``ppo_epochs=1`` equals: the ratios are 1 there).

Fallback strings (uniform samples once the policy has converged) are queried
and enter the simulator's data, but not the policy gradient.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from nas.core.options import positive
from nas.core.registry import register
from nas.searchers.policy_gradient import PolicySearcher, PolicySearchOptions
from policies.orderings import unpermute
from surrogates.mlp_ensemble import MLPEnsembleConfig, fit_ensemble, init_ensemble, predict_ensemble


@dataclasses.dataclass(frozen=True)
class ReACTSOptions(PolicySearchOptions):
    """Attributes (and those of ``PolicySearchOptions``):
    rollouts: L, policy completions per prefix in eq. 16 (8).
    features: the simulator's encoding, a feature kind of the space (``auto`` =
      ``path`` where the space has it, else ``onehot``).
    sim_members, sim_layers, sim_width, sim_lr, sim_epochs, sim_batch_size: the
      simulator, BANANAS' MLP ensemble (5 MLPs, 10 x 20 ReLU, Adam 0.01,
      150 epochs, batches of 32).
    sim_warm_epochs: E > 0 (30) = continue from the previous step's simulator for
      min(E, sim_epochs) epochs; 0 = refit it from scratch every step.
    """

    rollouts: int = 8
    features: str = "auto"
    sim_members: int = 5
    sim_layers: int = 10
    sim_width: int = 20
    sim_lr: float = 0.01
    sim_epochs: int = 150
    sim_batch_size: int = 32
    sim_warm_epochs: int = 30

    def check(self):
        super().check()
        positive(self, "rollouts", "sim_members", "sim_layers", "sim_width", "sim_epochs", "sim_batch_size")
        if self.sim_warm_epochs < 0:
            raise ValueError(f"sim_warm_epochs must be >= 0 (0 = refit from scratch), got {self.sim_warm_epochs}")


@register("reacts")
class ReACTS(PolicySearcher):
    Options = ReACTSOptions

    def setup(self):
        super().setup()
        o = self.options
        features = o.features
        if features == "auto":
            features = "path" if "path" in self.space.feature_kinds else "onehot"
        if features not in self.space.feature_kinds:
            raise ValueError(
                f"{self.space.name} has no feature kind {features!r}; choose from {list(self.space.feature_kinds)}"
            )
        self.features = features
        self.sim_cfg = MLPEnsembleConfig(
            num_members=o.sim_members,
            num_layers=o.sim_layers,
            width=o.sim_width,
            learning_rate=o.sim_lr,
            epochs=o.sim_epochs,
            batch_size=o.sim_batch_size,
        )
        self.capacity = self.num_steps * self.batch_size

    def init(self, key):
        n, q = self.space.num_tokens, self.capacity
        state = self.init_policy_state(key)
        history = jax.tree_util.tree_map(lambda x: jnp.zeros((self.num_steps,) + x.shape, x.dtype), state.params)
        extra = {
            "tokens": jnp.zeros((q, n), jnp.int32),
            "scores": jnp.full((q,), -jnp.inf, jnp.float32),
            "count": jnp.int32(0),
            "params_history": history,
            # log P(a_q; theta_s) of eq. 20, filled in as strings and policies arrive (row s, column q)
            "log_marginals": jnp.full((self.num_steps, q), -jnp.inf, jnp.float32),
        }
        if self.options.sim_warm_epochs:
            dim = self.space.feature_dim(self.features)
            extra["sim"] = init_ensemble(jax.random.fold_in(key, 7), dim, self.sim_cfg)
        return state.replace(extra=extra)

    def log_marginal(self, params, tokens, orders):
        """``log P(a; theta) = log (1/S) sum_z P(a | z)`` (eq. 22 marginalized over Z_S)."""
        lp = jax.vmap(lambda o: jnp.sum(self.policy.log_prob(params, tokens, o)))(orders)
        return jax.nn.logsumexp(lp) - jnp.log(orders.shape[0])

    def log_marginals(self, params, tokens, orders):
        """``log P(a; theta)`` for each row of ``tokens``, a batch of rows at a time (bounded memory:
        one string's additive attention holds N x N x d activations)."""
        return jax.lax.map(lambda a: self.log_marginal(params, a, orders), tokens, batch_size=self.batch_size)

    def shift_weights(self, log_marginals, history, params, tokens, buf_tokens, start, orders, t):
        """Eq. 20: ``(t + 1) P(a; theta_t) / sum_{s<=t} P(a; theta_s)`` for each row of ``buf_tokens``.

        ``log_marginals[s, q]`` caches ``log P(a_q; theta_s)``: each step adds the new strings under
        the earlier policies and every string under the current one (``(t + 1) B + Q`` evaluations
        instead of ``(t + 1) Q``). Returns the weights and the updated cache.
        """
        new = jax.lax.map(lambda p: self.log_marginals(p, tokens, orders), history)  # [T, B]
        lm = jax.lax.dynamic_update_slice(log_marginals, new, (0, start))
        lm = jax.lax.dynamic_update_index_in_dim(lm, self.log_marginals(params, buf_tokens, orders), t, axis=0)
        lp = jnp.where(jnp.arange(self.num_steps)[:, None] <= t, lm, -jnp.inf)
        cur = jax.lax.dynamic_index_in_dim(lp, t, axis=0, keepdims=False)
        return (t + 1) * jnp.exp(cur - jax.nn.logsumexp(lp, axis=0)), lm

    def fit_simulator(self, key, x, scores, mask, weights, previous, t):
        """Algorithm 2, line 6: ``S_phi`` fitted to the rows of ``mask`` with the weights of eq. 20.

        ``sim_warm_epochs = 0``: a fit from scratch at every step (``previous`` is ignored; the text's
        "compute phi^t"); else ``previous`` (step ``t - 1``'s simulator) is trained for
        ``sim_warm_epochs`` more epochs, and step 0 is a full fit from its initialization.
        """
        warm = min(self.options.sim_warm_epochs, self.sim_cfg.epochs)
        if not warm:
            return fit_ensemble(key, x, scores, mask, self.sim_cfg, weights=weights)
        epochs = jnp.where(t == 0, self.sim_cfg.epochs, warm)
        return fit_ensemble(key, x, scores, mask, self.sim_cfg, weights, previous, epochs)

    def simulate(self, sim, tokens):
        x = jax.vmap(lambda a: self.space.features(a, self.features))(tokens)
        return jnp.mean(predict_ensemble(sim, x, self.sim_cfg), axis=0)

    def prefix_values(self, key, params, sim, tokens, orders):
        """Eq. 16: ``V[k, i]`` for the prefix of ``tokens[k]`` before step ``i`` of ``orders[k]``, f32[B, N]."""
        b, n, L = self.batch_size, self.space.num_tokens, self.options.rollouts
        keys = jax.random.split(key, b * n * L).reshape(b, n, L, -1)

        def one(k, a, order, i):
            return self.policy.complete_valid(params, k, a, order, i)[0]

        def at_step(i):  # the prefixes before step i of every string, one step at a time (memory)
            roll = jax.vmap(jax.vmap(one, in_axes=(0, None, None, None)), in_axes=(0, 0, 0, None))(
                keys[:, i], tokens, orders, i
            )  # [B, L, N]
            return jnp.mean(self.simulate(sim, roll.reshape(b * L, n)).reshape(b, L), axis=1)

        by_step = jax.lax.map(at_step, jnp.arange(n)).T  # [B, N]
        # step i of order k decides position orders[k, i]: V before that position
        return jax.vmap(unpermute)(by_step, orders)

    def _tell(self, key, tokens, scores, state):
        k_fit, k_roll = jax.random.split(key)
        f, weight, batch_mean = self.rewards_and_weights(state, scores)
        ex, t, b = state.extra, state.num_updates, self.batch_size
        # Algorithm 2 line 6: all data so far, reweighted to the current policy (eq. 20)
        start = ex["count"]
        buf_tokens = jax.lax.dynamic_update_slice(ex["tokens"], tokens.astype(jnp.int32), (start, 0))
        buf_scores = jax.lax.dynamic_update_slice(ex["scores"], scores.astype(jnp.float32), (start,))
        count = start + b
        history = jax.tree_util.tree_map(
            lambda h, p: jax.lax.dynamic_update_index_in_dim(h, p, t, axis=0), ex["params_history"], state.params
        )
        mask = (jnp.arange(self.capacity) < count) & jnp.isfinite(buf_scores)
        w_shift, log_marginals = self.shift_weights(
            ex["log_marginals"], history, state.params, tokens, buf_tokens, start, state.orders, t
        )
        w_shift = jnp.where(mask, w_shift, 0.0)
        x = jax.vmap(lambda a: self.space.features(a, self.features))(buf_tokens)
        sim = self.fit_simulator(k_fit, x, buf_scores, mask, w_shift, ex.get("sim"), t)
        pred = self.simulate(sim, buf_tokens)
        sim_mae = jnp.sum(jnp.where(mask, jnp.abs(pred - jnp.where(mask, buf_scores, 0.0)), 0.0)) / jnp.maximum(
            jnp.sum(mask), 1
        )
        # Algorithm 3: per-prefix values by rollouts, then eq. 17
        orders = state.orders[state.order_idx]
        values = self.prefix_values(k_roll, state.params, sim, tokens, orders)
        adv = weight[:, None] * (f[:, None] - values)
        state = state.replace(
            extra={
                "tokens": buf_tokens,
                "scores": buf_scores,
                "count": count,
                "params_history": history,
                "log_marginals": log_marginals,
                **({"sim": sim} if self.options.sim_warm_epochs else {}),
            },
            baseline=jnp.sum(weight * values[jnp.arange(b), orders[:, 0]]) / jnp.maximum(jnp.sum(weight), 1.0),
        )
        state, loss, ent = self.optimize(state, tokens, orders, adv, weight, per_token=True)
        return state, self.step_metrics(
            state, batch_mean, loss, ent, weight, sim_mae=sim_mae, shift_weight_max=jnp.max(w_shift)
        )
