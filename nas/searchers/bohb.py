"""BOHB: Hyperband whose new configurations come from a TPE-style model (Falkner, Klein & Hutter, 2018,
"BOHB: Robust and Efficient Hyperparameter Optimization at Scale", ICML, Algorithm 2 and Section 4).

The brackets are Hyperband's (``nas.searchers.successive_halving``). Each new configuration is
sampled when a worker needs it (as HpBandSter does), from the observations so far:

    with probability rho (random_fraction, 1/3): a uniform configuration
    b = the largest budget with a model; none: a uniform configuration
    l(x), g(x): KDEs over the best and the other results at budget b (Eqs. 2-3)
    draw N_s (num_samples, 64) candidates from l'(x) (l's bandwidths times b_w, bandwidth_factor 3)
    return the candidate with the largest l(x) / g(x)

As in HpBandSter's code: at a budget with ``n`` results the good set holds the best
``n_good = max(N_min, floor(q n / 100))`` (q = top_n_percent, 15) and the bad set the next
``min(max(N_min, floor((100 - q) n / 100)), n - n_good)``; a budget has a model once both sets hold
more than ``D`` rows (D tokens; ``N_min = min_points_in_model``, 0 = D + 1). Bandwidths follow the
normal-reference rule, at least ``min_bandwidth`` (``surrogates.categorical_kde``: Aitchison-Aitken
kernels for the categorical tokens). Failed evaluations (``-inf``) rank last. The acquisition
compares ``max(l, 1e-32) / max(g, 1e-32)``, as the code's ``minimize_me``.

Never re-query: a candidate already started is skipped (the best new one is taken); when every
candidate was seen, a uniform new configuration. The random draw uses the key Hyperband's draw
uses, so until some budget has a model BOHB starts the configurations Hyperband starts.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
from flax import struct

from nas.core.dedup import seen_contains, seen_insert
from nas.core.options import positive
from nas.core.registry import register
from nas.core.seen_set import first_in_order
from nas.core.unseen_draw import draw_new
from nas.searchers.observations import Observations, observations_init, observe
from nas.searchers.successive_halving import BracketOptions, Hyperband
from surrogates import categorical_kde as kde

_FLOOR = math.log(1e-32)  # HpBandSter's max(1e-32, density), in logs


@dataclasses.dataclass(frozen=True)
class BOHBOptions(BracketOptions):
    """Attributes (and those of ``BracketOptions``):
    random_fraction: rho, the fraction of uniform configurations (1/3).
    top_n_percent: q, the percentage of a budget's results in the good set (15).
    num_samples: N_s, candidates drawn from l'(x) per new configuration (64).
    bandwidth_factor: b_w, widens l for sampling (3).
    min_bandwidth: the least kernel bandwidth (1e-3).
    min_points_in_model: N_min (0 = the number of tokens + 1).
    """

    random_fraction: float = 1.0 / 3.0
    top_n_percent: int = 15
    num_samples: int = 64
    bandwidth_factor: float = 3.0
    min_bandwidth: float = 1e-3
    min_points_in_model: int = 0

    def check(self):
        super().check()
        positive(self, "num_samples")
        if not 0.0 <= self.random_fraction <= 1.0:
            raise ValueError(f"random_fraction must be in [0, 1], got {self.random_fraction}")
        if not 0 < self.top_n_percent < 100:
            raise ValueError(f"top_n_percent must be in (0, 100), got {self.top_n_percent}")
        if not self.bandwidth_factor > 0 or not self.min_bandwidth > 0:
            raise ValueError("bandwidth_factor and min_bandwidth must be > 0")
        if self.min_points_in_model < 0:
            raise ValueError(f"min_points_in_model must be >= 0 (0 = tokens + 1), got {self.min_points_in_model}")


@struct.dataclass
class BOHBModel:
    obs: Observations
    from_model: jax.Array  # int32[]: configurations sampled from a model so far


def good_and_bad(obs: Observations, fidelity: int, n_min: int, top_n_percent: int, dims: int):
    """(good bool[E], bad bool[E], has_model bool[]) of the results at ``fidelity`` (module docstring)."""
    at = obs.fidelity == fidelity
    n = jnp.sum(at)
    n_good = jnp.maximum(n_min, (top_n_percent * n) // 100)
    n_bad = jnp.minimum(jnp.maximum(n_min, ((100 - top_n_percent) * n) // 100), n - n_good)
    idx = jnp.arange(at.shape[0])
    order = jnp.lexsort((idx, -obs.score, ~at))  # this budget's results, best first (ties: earlier)
    rank = jnp.zeros_like(order).at[order].set(idx)
    good = at & (rank < n_good)
    bad = at & (rank >= n_good) & (rank < n_good + n_bad)
    has_model = (n >= n_min) & (jnp.minimum(n_good, n) > dims) & (n_bad > dims)
    return good, bad, has_model


@register("bohb")
class BOHB(Hyperband):
    """Hyperband's brackets with KDE-sampled new configurations."""

    Options = BOHBOptions
    compile_profile = "compile_bound"  # its KDE's exp and log: XLA's default emitters (nas.engine.compile_policy)

    def setup(self):
        super().setup()
        self.n_min = self.options.min_points_in_model or self.space.num_tokens + 1

    def init_model(self, key):
        return BOHBModel(obs=observations_init(self.max_evaluations, self.space.num_tokens), from_model=jnp.int32(0))

    def model_fidelity(self, obs: Observations) -> jax.Array:
        """int32[]: the largest fidelity whose results make a model, -1 for none."""
        best = jnp.int32(-1)
        for f in range(self.num_fidelities):
            _, _, ok = good_and_bad(obs, f, self.n_min, self.options.top_n_percent, self.space.num_tokens)
            best = jnp.where(ok, f, best)
        return best

    def observe(self, key, job, score, state):
        return state.replace(model=state.model.replace(obs=observe(state.model.obs, job, score)))

    def propose(self, key, state):
        o, obs = self.options, state.model.obs
        tokens, ok, seen = draw_new(key, self.space, state.seen)  # Hyperband's draw (same key)
        b = self.model_fidelity(obs)
        use_model = (b >= 0) & (jax.random.uniform(jax.random.fold_in(key, 1)) >= o.random_fraction)
        good, bad, _ = good_and_bad(obs, b, self.n_min, o.top_n_percent, self.space.num_tokens)
        cards = self.space.cardinalities
        bw_l = kde.normal_reference_bandwidth(obs.tokens, good, cards, o.min_bandwidth)
        bw_g = kde.normal_reference_bandwidth(obs.tokens, bad, cards, o.min_bandwidth)
        wide = jnp.minimum(bw_l * o.bandwidth_factor, kde.max_bandwidth(cards))
        cand = kde.sample(jax.random.fold_in(key, 2), obs.tokens, good, wide, cards, o.num_samples)
        ratio = jnp.maximum(kde.log_density(cand, obs.tokens, good, bw_l, cards), _FLOOR) - jnp.maximum(
            kde.log_density(cand, obs.tokens, bad, bw_g, cards), _FLOOR
        )
        ids = jax.vmap(self.space.string_id)(cand)
        new = (ids >= 0) & ~seen_contains(state.seen, ids) & first_in_order(ids)
        best = jnp.argmax(jnp.where(new, ratio, -jnp.inf))
        take = use_model & jnp.any(new)
        tokens = jnp.where(take, cand[best], tokens)
        seen = jax.tree.map(lambda a, b: jnp.where(take, a, b), seen_insert(state.seen, ids[best]), seen)
        model = state.model.replace(from_model=state.model.from_model + take.astype(jnp.int32))
        return tokens, ok | take, state.replace(seen=seen, model=model)

    def _tell(self, key, job, score, state):
        state, metrics = super()._tell(key, job, score, state)
        return state, {**metrics, "from_model": state.model.from_model.astype(jnp.float32)}
