"""TPE with Hyperband's brackets: the multi-fidelity TPE (``tpe_hyperband``).

Hyperband (``nas.searchers.successive_halving``) runs its brackets; each new configuration comes from the
univariate TPE of ``nas.searchers.tpe`` fitted to the results at the largest budget that has at least
``n_startup_trials`` (10) of them, as BOHB (``nas.searchers.bohb``) models the largest budget with enough
results; until a budget has them, Hyperband's uniform configuration. The good set is the best
``gamma(n) = min(ceil(0.1 n), 25)`` of that budget's ``n`` results (failed ones rank last), the bad set
the rest; the ask is the configuration of the per-hyperparameter best values of 24 draws from l(x),
else the best new one of the drawn configurations (never a configuration started before), else
Hyperband's uniform one.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import struct

from nas.core.dedup import seen_contains, seen_insert
from nas.core.registry import register
from nas.core.seen_set import first_in_order
from nas.core.unseen_draw import draw_new
from nas.searchers.observations import Observations, observations_init, observe
from nas.searchers.successive_halving import BracketOptions, Hyperband
from nas.searchers.tpe import TPE, TPEModelOptions, TPEOptions, default_gamma


@dataclasses.dataclass(frozen=True)
class TPEHyperbandOptions(TPEModelOptions, BracketOptions):
    """Attributes: ``BracketOptions``' (eta, min_budget, max_budget, ...) and TPE's (``TPEModelOptions``), where
    n_startup_trials is the results a budget needs before its model is used (10); until one has them, uniform.
    """


@struct.dataclass
class TPEHyperbandModel:
    obs: Observations
    from_model: jax.Array  # int32[]: configurations sampled from a model so far


@register("tpe_hyperband")
class TPEHyperband(Hyperband):
    """Hyperband whose new configurations come from TPE (module docstring) at the largest budget with at least
    ``n_startup_trials`` results, as BOHB models its largest budget with enough results (``nas.searchers.bohb``)."""

    Options = TPEHyperbandOptions
    compile_profile = "compile_bound"
    continuous_values = True

    def setup(self):
        super().setup()
        o = self.options
        inner = TPEOptions(n_startup_trials=o.n_startup_trials, n_ei_candidates=o.n_ei_candidates,
                           gamma_fraction=o.gamma_fraction, gamma_max=o.gamma_max, prior_weight=o.prior_weight,
                           magic_clip=o.magic_clip, max_queries=1)  # fmt: skip
        self.tpe = TPE(self.space, inner)  # its model only (its budget is never read)

    def init_model(self, key):
        del key
        return TPEHyperbandModel(obs=observations_init(self.max_evaluations, self.space.num_tokens),
                                 from_model=jnp.int32(0))  # fmt: skip

    def observe(self, key, job, score, state):
        return state.replace(model=state.model.replace(obs=observe(state.model.obs, job, score)))

    def propose(self, key, state):
        o, obs = self.options, state.model.obs
        tokens, ok, seen = draw_new(key, self.space, state.seen)  # Hyperband's draw (same key)
        counts = jnp.stack([jnp.sum(obs.fidelity == f) for f in range(self.num_fidelities)])
        enough = counts >= max(o.n_startup_trials, 1)
        b = jnp.max(jnp.where(enough, jnp.arange(self.num_fidelities), -1))
        at = (obs.fidelity == b) & (b >= 0)
        n = jnp.sum(at)
        idx = jnp.arange(at.shape[0])
        order = jnp.lexsort((idx, -obs.score, ~at))
        rank = jnp.zeros_like(order).at[order].set(idx)
        good = at & (rank < default_gamma(n, o.gamma_fraction, o.gamma_max))
        bad = at & ~good
        act = jax.vmap(self.space.active)(obs.tokens)
        values, ratio = self.tpe._draw(jax.random.fold_in(key, 2), obs.tokens, act, good, bad)
        best = self.space.canonical(jnp.take_along_axis(values, jnp.argmax(ratio, axis=0)[None, :], axis=0)[0])
        drawn = jax.vmap(self.space.canonical)(values)
        total = jnp.sum(jnp.where(jax.vmap(self.space.active)(values), ratio, 0.0), axis=1)
        cand = jnp.concatenate([best[None], drawn[jnp.argsort(-total, stable=True)]])  # preference order
        ids = jax.vmap(self.space.string_id)(cand)
        new = (ids >= 0) & ~seen_contains(state.seen, ids) & first_in_order(ids)
        pick = jnp.argmax(new)  # the first new one in preference order
        take = (b >= 0) & jnp.any(new)
        tokens = jnp.where(take, cand[pick], tokens)
        seen = jax.tree.map(lambda x, y: jnp.where(take, x, y), seen_insert(state.seen, ids[pick]), seen)
        model = state.model.replace(from_model=state.model.from_model + take.astype(jnp.int32))
        return tokens, ok | take, state.replace(seen=seen, model=model)

    def _tell(self, key, job, score, state):
        state, metrics = super()._tell(key, job, score, state)
        return state, {**metrics, "from_model": state.model.from_model.astype(jnp.float32)}
