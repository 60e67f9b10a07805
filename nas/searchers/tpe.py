"""TPE: the tree-structured Parzen estimator (Bergstra, Bardenet, Bengio & Kegl, 2011, "Algorithms for
Hyper-Parameter Optimization", NeurIPS), with the defaults of Optuna's ``TPESampler`` (univariate) as
Watanabe (2023, "Tree-Structured Parzen Estimator: Understanding Its Algorithm Components and Their
Roles for Better Empirical Performance") describes them.

The first ``n_startup_trials`` (10) configurations are uniform. After that, of the ``n`` results told
the best ``gamma(n) = min(ceil(gamma_fraction n), gamma_max)`` (0.1, 25; failed ones rank last) make
the good set and the rest the bad set, and per hyperparameter (univariate) two Parzen estimators are
built over the values where it is active:

    l(x) = sum_k w_k K_k(x) / sum_k w_k  over the good results and one prior kernel
    g(x)   the same over the bad results

Weights (Optuna's ``default_weights``): 1 for a set of fewer than 25 results, else the 25 latest get 1
and the older ones a ramp from 1/n up; the prior kernel gets ``prior_weight`` (1). Kernels:

- an ordinal token (a numeric grid, ``spaces.hpo``) lives on a unit axis (its grid values on their
  declared scale where the space says it, ``spaces.continuous_space``, else its index): a
  truncated normal at each value, discretized to the grid cells. Bandwidth: the larger gap to a
  neighbour among the sorted values, the prior and the ends (the outermost values take their inner
  gap, Optuna's ``consider_endpoints=False``), clipped to ``[1 / min(100, 1 + K), 1]`` of the axis
  (the "magic clip"); the prior is ``N(0.5, 1)``;
- a categorical token: kernel k is ``(a + [x == x_k]) / (a c + 1)``, ``a = prior_weight / K`` (K
  kernels, c values); the prior is uniform.

``n_ei_candidates`` (24) values are drawn from l per hyperparameter, and the one maximizing
``log l(x) - log g(x)`` is asked (the expected improvement is monotone in it). Never re-query: where
that configuration was queried, the best new one of the 24 drawn configurations (ranked by the summed
ratio), else a uniform new one (``nas.core.dedup.fill_unique``). A batch of B asks B draws.

Multi-fidelity: ``tpe`` runs with a Study's pruners (``pruner="asha"``: Optuna's TPE with a pruner), and
``tpe_hyperband`` is Hyperband (``nas.searchers.successive_halving``) whose new configurations come from
this TPE over the results at the largest budget with at least ``n_startup_trials`` of them (as BOHB,
``nas.searchers.bohb``, models the largest budget with enough results; until one has, uniform ones).
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from jax.scipy.special import ndtr

from nas.core.contract import Searcher
from nas.core.dedup import Seen, fill_unique
from nas.core.options import SearcherOptions, positive
from nas.core.registry import register
from nas.core.unseen_draw import exact, uniform_unseen

TABLE_MAX = 4096  # ordinal tokens with at most this many values may sit on their own scale (a table)
_TINY = 1e-37


@dataclasses.dataclass(frozen=True)
class TPEModelOptions:
    """TPE's model options (Optuna's ``TPESampler`` defaults), shared by ``tpe`` and ``tpe_hyperband``:
    n_startup_trials: uniform configurations before the model (10).
    n_ei_candidates: values drawn from l(x) per hyperparameter (24).
    gamma_fraction, gamma_max: the good set holds ``min(ceil(gamma_fraction n), gamma_max)`` results (0.1, 25).
    prior_weight: the weight of the prior kernel (1.0).
    magic_clip: bandwidths at least ``1 / min(100, 1 + K)`` of the axis (True).
    """

    n_startup_trials: int = 10
    n_ei_candidates: int = 24
    gamma_fraction: float = 0.1
    gamma_max: int = 25
    prior_weight: float = 1.0
    magic_clip: bool = True

    def check(self):
        super().check()  # the searcher's own options (SearcherOptions, BracketOptions) first
        positive(self, "n_ei_candidates", "gamma_max")
        if self.n_startup_trials < 0:
            raise ValueError(f"n_startup_trials must be >= 0, got {self.n_startup_trials}")
        if not 0.0 < self.gamma_fraction <= 1.0:
            raise ValueError(f"gamma_fraction must be in (0, 1], got {self.gamma_fraction}")
        if not self.prior_weight > 0.0:
            raise ValueError(f"prior_weight must be > 0, got {self.prior_weight}")


@dataclasses.dataclass(frozen=True)
class TPEOptions(TPEModelOptions, SearcherOptions):
    """Attributes (``TPEModelOptions``' and):
    ordered_lists: a ``CategoricalSpace``'s increasing numeric value lists are ordinal, as the Optuna peer
      (``nas.experiment.tpe_peer``) reads them (False: a list is categorical, as in a Study).
    """

    ordered_lists: bool = False


@struct.dataclass
class TPEState:
    seen: Seen | None  # the queried ids (the base keeps them)
    num_told: jax.Array  # int32[]
    tokens: jax.Array  # int32[E, N]: the told strings, in order
    scores: jax.Array  # f32[E]: their scores (-inf: failed; rows past num_told unused)


def _axis(space, i: int) -> np.ndarray | None:
    """f64[c]: token ``i``'s grid values on a unit axis (their declared scale), or None: the index axis."""
    c = space.cardinalities[i]
    scales = getattr(space, "scales", None)
    if c > TABLE_MAX or c < 2 or scales is None or scales[i] is None:
        return None
    vals = np.asarray(space.hyperparameters[i].values, np.float64)
    pos = np.log(vals) if scales[i] == "log" else vals
    pos = (pos - pos[0]) / (pos[-1] - pos[0])
    return None if np.allclose(pos, np.linspace(0, 1, c), atol=1e-9) else pos


def _bounds(pos: np.ndarray) -> np.ndarray:
    """f64[c + 1]: the cells around the values ``pos`` (midpoints; half a gap beyond each end)."""
    mid = (pos[1:] + pos[:-1]) / 2
    return np.concatenate([[pos[0] - (pos[1] - pos[0]) / 2], mid, [pos[-1] + (pos[-1] - pos[-2]) / 2]])


def default_gamma(n, fraction: float, cap: int):
    """int32[]: the size of the good set among ``n`` results (Optuna's ``default_gamma``)."""
    return jnp.minimum(jnp.ceil(fraction * n).astype(jnp.int32), cap)


def mixture_weights(mask: jax.Array, prior_weight: float) -> jax.Array:
    """f32[E + 1]: log weights of the kernels of the masked rows (trial order) and of the prior (last)."""
    n = jnp.sum(mask).astype(jnp.float32)
    r = (jnp.cumsum(mask) - 1).astype(jnp.float32)  # a row's place among the masked ones, oldest first
    ramp_len = n - 25.0
    ramp = jnp.where(ramp_len > 1, 1.0 / n + r * (1.0 - 1.0 / n) / jnp.maximum(ramp_len - 1.0, 1.0), 1.0 / n)
    w = jnp.where((n < 25) | (r >= ramp_len), 1.0, ramp)
    w = jnp.append(jnp.where(mask, w, 0.0), prior_weight)
    return jnp.log(jnp.maximum(w, 0.0) / jnp.sum(w))


def bandwidths(mus: jax.Array, mask: jax.Array, lo, hi, magic_clip: bool) -> jax.Array:
    """f32[E + 1]: the kernels' sigmas on ``[lo, hi]`` (module docstring), the prior's last."""
    e = mus.shape[0]
    x = jnp.append(jnp.where(mask, mus, jnp.inf), (lo + hi) / 2)  # the prior's mean among the values
    order = jnp.argsort(x, stable=True)
    s = x[order]
    k = jnp.sum(mask) + 1  # kernels: sorted positions [0, k)
    j = jnp.arange(e + 1)
    left = jnp.where(j == 0, lo, jnp.roll(s, 1))
    right = jnp.where(j == k - 1, hi, jnp.roll(s, -1))
    sig = jnp.maximum(s - left, right - s)
    inner_first = jnp.roll(s, -1) - s  # consider_endpoints=False: the outermost take their inner gap
    inner_last = s - jnp.roll(s, 1)
    sig = jnp.where((k >= 2) & (j == 0), inner_first, sig)
    sig = jnp.where((k >= 2) & (j == k - 1), inner_last, sig)
    sig = jnp.zeros_like(sig).at[order].set(sig)
    width = hi - lo
    low = width / jnp.minimum(100.0, 1.0 + k.astype(jnp.float32)) if magic_clip else 1e-12 * width
    sig = jnp.clip(jnp.where(jnp.isfinite(sig), sig, width), low, width)
    return sig.at[e].set(width)  # the prior: N(mid, width)


def _log_mass(a, b, mu, sig):
    """log of a normal's mass on ``[a, b]`` (stable in both tails and for narrow cells)."""
    za, zb = (a - mu) / sig, (b - mu) / sig
    wide = jnp.where(za > 0, ndtr(-za) - ndtr(-zb), ndtr(zb) - ndtr(za))
    zc = (za + zb) / 2
    narrow = jnp.exp(-0.5 * zc * zc) / math.sqrt(2 * math.pi) * (zb - za)  # the density at the middle x the width
    return jnp.log(jnp.maximum(jnp.where(zb - za < 1e-3, narrow, wide), _TINY))


def _numeric_log_density(cells, mus, sig, log_w, lo, hi):
    """f32[M]: log l(x) of the cells ``cells`` ((a, b) f32[M] each) under the truncated-normal mixture."""
    a, b = cells
    z = _log_mass(lo, hi, mus, sig)  # [K]: each kernel's mass on the axis
    lm = jax.vmap(lambda u, v: _log_mass(u, v, mus, sig))(a, b)  # [M, K]
    return jax.nn.logsumexp(lm - z[None, :] + log_w[None, :], axis=1)


@register("tpe")
class TPE(Searcher):
    """Univariate TPE as Optuna's ``TPESampler`` (module docstring)."""

    Options = TPEOptions
    compile_profile = "compile_bound"  # its mixtures' exp and log: XLA's default emitters (nas.engine.compile_policy)
    continuous_values = True  # a Study gives it fine grids: every Float is effectively continuous (spaces.params)

    def setup(self):
        sp = self.space
        ordinal = tuple(getattr(sp, "ordinal", None) or self._ordered_lists())
        cards = sp.cardinalities
        self.cat = [i for i in range(sp.num_tokens) if not ordinal[i]]
        axes = {i: _axis(sp, i) for i in range(sp.num_tokens) if ordinal[i]}
        self.uniform = [i for i, p in axes.items() if p is None]
        self.tabled = [i for i, p in axes.items() if p is not None]
        width = max([cards[i] for i in self.tabled], default=1)
        bnd = np.full((len(self.tabled), width + 1), np.inf)  # padding past a token's last cell: never hit
        pos = np.zeros((len(self.tabled), width))
        for row, i in enumerate(self.tabled):
            bnd[row, : cards[i] + 1] = _bounds(axes[i])
            pos[row, : cards[i]] = axes[i]
        self._tables, self._pos = bnd.astype(np.float32), pos.astype(np.float32)

    def _ordered_lists(self) -> tuple[bool, ...]:
        """Per token: an increasing list of numbers where ``ordered_lists`` is set (else none is ordinal)."""
        values = getattr(self.space, "values", {}) if self.options.ordered_lists else {}
        out = []
        for name in self.space.token_names:
            v = values.get(name)
            numeric = v is not None and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v)
            out.append(bool(numeric and len(v) > 1 and np.all(np.diff(np.asarray(v, float)) > 0)))
        return tuple(out)

    # -- the contract ------------------------------------------------------------------------------------
    def init(self, key):
        del key
        e, n = self.num_steps * self.batch_size, self.space.num_tokens
        return TPEState(tokens=jnp.zeros((e, n), jnp.int32), scores=jnp.full((e,), -jnp.inf, jnp.float32),
                        **self.new_books(TPEState, e))  # fmt: skip

    def ask(self, key, state):
        b, space = self.batch_size, self.space
        k_rand, k_model = jax.random.split(key)

        def model(_):
            return fill_unique(k_model, space, lambda k: self.propose(k, state), state.seen, b, max_rounds=4,
                               exact_fallback=exact(space))[0]  # fmt: skip

        def uniform(_):
            return uniform_unseen(k_rand, space, state.seen, b)

        tokens = jax.lax.cond(state.num_told < self.options.n_startup_trials, uniform, model, None)
        return tokens, state

    def _tell(self, key, tokens, scores, state):
        del key
        scores = jnp.where(jnp.isnan(scores), -jnp.inf, scores).astype(jnp.float32)
        at = jnp.minimum(state.num_told, state.scores.shape[0] - tokens.shape[0])
        return state.replace(
            tokens=jax.lax.dynamic_update_slice(state.tokens, tokens.astype(jnp.int32), (at, 0)),
            scores=jax.lax.dynamic_update_slice(state.scores, scores, (at,)),
        ), {}

    # -- the model ---------------------------------------------------------------------------------------
    def split(self, state):
        """(good bool[E], bad bool[E]): the best ``gamma(n)`` results told and the rest (failed ones last)."""
        e = state.scores.shape[0]
        idx = jnp.arange(e)
        told = idx < state.num_told
        n_good = default_gamma(state.num_told, self.options.gamma_fraction, self.options.gamma_max)
        order = jnp.lexsort((idx, -state.scores, ~told))  # told rows best first (ties: earlier)
        rank = jnp.zeros_like(order).at[order].set(idx)
        return told & (rank < n_good), told & (rank >= n_good)

    def propose(self, key, state):
        """int32[B * (1 + C), N]: B draws of the model; first the B configurations of the per-hyperparameter
        best values, then the B * C drawn configurations by their summed log ratio (best first)."""
        good, bad = self.split(state)
        act = jax.vmap(self.space.active)(state.tokens)  # [E, N]
        draws = jax.vmap(lambda k: self._draw(k, state.tokens, act, good, bad))(
            jax.random.split(key, self.batch_size)
        )  # (values [B, C, N], log ratios [B, C, N])
        values, ratio = draws
        canon = jax.vmap(jax.vmap(self.space.canonical))
        best = jnp.take_along_axis(values, jnp.argmax(ratio, axis=1)[:, None, :], axis=1)[:, 0]  # [B, N]
        best = jax.vmap(self.space.canonical)(best)
        drawn = canon(values).reshape(-1, self.space.num_tokens)
        active = jax.vmap(jax.vmap(self.space.active))(values).reshape(drawn.shape)
        total = jnp.sum(jnp.where(active, ratio.reshape(drawn.shape), 0.0), axis=1)
        return jnp.concatenate([best, drawn[jnp.argsort(-total, stable=True)]])

    def _draw(self, key, tokens, act, good, bad):
        """(values int32[C, N], log l - log g f32[C, N]): C values drawn from l per token."""
        o, n = self.options, self.space.num_tokens
        c = o.n_ei_candidates
        values = jnp.zeros((c, n), jnp.int32)
        ratio = jnp.zeros((c, n), jnp.float32)
        keys = jax.random.split(key, n)
        cards = self.space.cardinalities
        groups = ((self.cat, self._categorical, False), (self.uniform, self._uniform, False),
                  (self.tabled, self._table, True))  # fmt: skip
        for group, fn, tabled in groups:
            if not group:
                continue
            g = np.asarray(group)
            ks = keys[g]
            extra = (jnp.arange(len(group)),) if tabled else (jnp.asarray([cards[i] for i in group]),)
            v, r = jax.vmap(fn, in_axes=(0, 1, 1, 1, 0))(ks, tokens[:, g], act[:, g] & good[:, None],
                                                         act[:, g] & bad[:, None], *extra)  # fmt: skip
            values = values.at[:, g].set(v.T)
            ratio = ratio.at[:, g].set(r.T)
        return values, ratio

    def _categorical(self, key, x, good, bad, card):
        """One categorical token: C draws from l and their log l - log g."""
        o, c_max = self.options, max([self.space.cardinalities[i] for i in self.cat])
        vals = jnp.arange(c_max)
        exists = vals < card

        def log_probs(mask):  # [K, c_max]: each kernel's log distribution, and the log weights
            k = jnp.sum(mask).astype(jnp.float32) + 1.0
            a = o.prior_weight / k
            obs = jnp.append(x, -1)  # the prior (last) observes nothing: uniform
            hit = (obs[:, None] == vals[None, :]).astype(jnp.float32)
            is_obs = jnp.where(jnp.arange(obs.shape[0]) < x.shape[0], 1.0, 0.0)
            lp = jnp.log(a + hit) - jnp.log(a * card + is_obs)[:, None]
            return jnp.where(exists[None, :], lp, -jnp.inf), mixture_weights(mask, o.prior_weight)

        lp_l, w_l = log_probs(good)
        lp_g, w_g = log_probs(bad)
        k1, k2 = jax.random.split(key)
        kern = jax.random.categorical(k1, w_l, shape=(o.n_ei_candidates,))
        draw = jax.random.categorical(k2, lp_l[kern]).astype(jnp.int32)
        ll = jax.nn.logsumexp(lp_l[:, draw] + w_l[:, None], axis=0)
        lg = jax.nn.logsumexp(lp_g[:, draw] + w_g[:, None], axis=0)
        return draw, ll - lg

    def _numeric(self, key, mus, good, bad, lo, hi, to_cell, cell):
        o = self.options
        sig_l = bandwidths(mus, good, lo, hi, o.magic_clip)
        sig_g = bandwidths(mus, bad, lo, hi, o.magic_clip)
        mu = jnp.append(mus, (lo + hi) / 2)
        w_l, w_g = mixture_weights(good, o.prior_weight), mixture_weights(bad, o.prior_weight)
        k1, k2 = jax.random.split(key)
        kern = jax.random.categorical(k1, w_l, shape=(o.n_ei_candidates,))
        m, s = mu[kern], sig_l[kern]
        z = jax.random.truncated_normal(k2, (lo - m) / s, (hi - m) / s, dtype=jnp.float32)
        draw = to_cell(jnp.clip(m + s * z, lo, hi))
        cells = cell(draw)
        ll = _numeric_log_density(cells, mu, sig_l, w_l, lo, hi)
        lg = _numeric_log_density(cells, mu, sig_g, w_g, lo, hi)
        return draw, ll - lg

    def _uniform(self, key, x, good, bad, card):
        """An ordinal token on its index axis, scaled to [0, 1]: cell v is ``[(v - 1/2) / (c - 1), (v + 1/2) /
        (c - 1)]``."""
        step = 1.0 / jnp.maximum(card - 1, 1).astype(jnp.float32)
        lo, hi = -0.5 * step, 1.0 + 0.5 * step

        def to_cell(u):
            return jnp.clip(jnp.round(u / step), 0, card - 1).astype(jnp.int32)

        def cell(v):
            v = v.astype(jnp.float32)
            return (v - 0.5) * step, (v + 0.5) * step

        return self._numeric(key, x.astype(jnp.float32) * step, good, bad, lo, hi, to_cell, cell)

    def _table(self, key, x, good, bad, row):
        """An ordinal token on its declared scale (``_axis``): cells between the midpoints of its values."""
        bnd, pos = jnp.asarray(self._tables)[row], jnp.asarray(self._pos)[row]
        card = jnp.sum(jnp.isfinite(bnd)) - 1
        lo, hi = bnd[0], bnd[card]

        def to_cell(u):
            return jnp.clip(jnp.searchsorted(bnd, u, side="right") - 1, 0, card - 1).astype(jnp.int32)

        def cell(v):
            return bnd[v], bnd[v + 1]

        return self._numeric(key, pos[x], good, bad, lo, hi, to_cell, cell)

