"""NASBOT: Bayesian optimization with a GP on the OTMANN distance (Kandasamy, Neiswanger, Schneider, Poczos &
Xing, 2018, "Neural Architecture Search with Bayesian Optimisation and Optimal Transport", Sections 3-4).

Kernel (Section 4): ``kappa(x, x') = alpha exp(-beta d(x, x')) + alpha_bar exp(-beta_bar d_bar(x, x'))``
with ``d`` the OTMANN distance and ``d_bar`` its normalized form (``surrogates.otmann``; networks read by
``surrogates.layer_graphs``; ``nu_str`` weighs the structural term, ``nu_nas`` is the non-assignment
penalty; the authors' code sums kernels over four ``nu_str`` values, here one, so one transport problem is
solved per pair). On the HPO grids the hyperparameters outside the network (learning rate, batch size,
dropout, ...) enter through a Hamming kernel factor ``exp(-h(x, x') / l)`` (NASBOT searches architectures
only). ``alpha``, ``alpha_bar``, ``beta``, ``beta_bar`` (``l``) and the noise are fitted by marginal
likelihood (``surrogates.gp.fit_kernel_gp``; the authors fit them by DiRect within bounds). The kernel is
not positive definite in general (OTMANN is not a Hilbertian distance); the authors project the Gram matrix
onto the PSD cone, here the noise term and the Cholesky's floored pivots (``surrogates.linalg``) keep it
factorable (on NB201 samples the Gram matrices are PSD: tested).

Acquisition optimization (Section 4, "Optimising the acquisition"): an evolutionary algorithm on expected
improvement. The pool starts with the queried networks and their acquisition values; each generation draws
``mutations_per_generation`` parents from the pool with probabilities ``exp((phi - mean) / (2 std))`` of
their acquisition values ``phi`` (the authors' fitness sampler), mutates each by 1-5 edits with
probabilities 0.5 / 0.25 / 0.125 / 0.075 / 0.05 (the authors' ``ga_mutation_op_distro``; an edit is the
space's one-token mutation: change a layer's label, add or remove a layer or an edge), scores the mutants
and adds them to the pool; ``num_candidates`` acquisition evaluations per step in all. The batch is the
``batch_size`` unqueried candidates with the highest EI (NASBOT evaluates asynchronously in parallel with
hallucinated observations; here a synchronous top-k). ``num_init`` random networks come first.

The loop, its padded data buckets (one compiled program per bucket, OSS Vizier style), ``dedup`` and the
random fallback are the BO loop's (``nas.searchers.bo``). The OTMANN distances between queried networks are
computed once, when they are told, and kept in the state; a step computes those of its candidates to the
queried networks (``num_candidates x`` bucket size transport problems per seed).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from nas.core.dedup import Seen, seen_contains
from nas.core.options import SearcherOptions, one_of, positive
from nas.core.registry import register
from nas.core.seen_set import first_in_order
from nas.searchers.acquisition_candidates import fill_missing, mutate_edits
from nas.searchers.bo import BOSearcher, check_initial_design
from surrogates.acquisition import acquisition_scores
from surrogates.gp import GPConfig, fit_kernel_gp, posterior_from_cross
from surrogates.layer_graphs import READABLE, network_reader
from surrogates.otmann import otmann_matrix, prepare

NASBOT_ACQUISITIONS = ("ei", "ucb", "pi", "its")
EDIT_PROBS = (0.5, 0.25, 0.125, 0.075, 0.05)  # 1..5 edits per mutation (the authors' default)
FITNESS_SCALE = 2.0  # parents ~ exp((phi - mean) / (FITNESS_SCALE * std))


@dataclasses.dataclass(frozen=True)
class NasbotOptions(SearcherOptions):
    """Attributes:
    batch_size, num_init, bucket_multiple: the BO loop (``nas.searchers.bo``): 10, 10, 64.
    acquisition: ``ei`` (NASBOT's), ``ucb`` (``beta``), ``pi`` or ``its``.
    num_candidates: acquisition evaluations per step (100; the authors: 50-500 growing with the step).
    mutations_per_generation: mutants per EA generation (50, the authors' ``num_mutations_per_epoch``).
    nu_str, nu_nas: OTMANN's structural coefficient (0.4) and non-assignment penalty (1).
    gp_steps, gp_learning_rate: Adam steps and step size on the marginal likelihood (100, 0.05).
    """

    INIT_IN_BATCHES = True  # a ClassVar of SearcherOptions: num_init fits whole batches (fit_defaults)
    batch_size: int = 10
    num_init: int = 10
    bucket_multiple: int = 64
    acquisition: str = "ei"
    beta: float = 0.5
    num_candidates: int = 100
    mutations_per_generation: int = 50
    nu_str: float = 0.4
    nu_nas: float = 1.0
    gp_steps: int = 100
    gp_learning_rate: float = 0.05

    def check(self):
        super().check()
        check_initial_design(self)
        positive(self, "num_candidates", "mutations_per_generation", "gp_steps")
        one_of(self, "acquisition", NASBOT_ACQUISITIONS)
        if self.num_candidates % self.mutations_per_generation:
            raise ValueError(
                f"num_candidates ({self.num_candidates}) must be a multiple of mutations_per_generation "
                f"({self.mutations_per_generation})"
            )
        if self.nu_str < 0 or self.nu_nas <= 0:
            raise ValueError(f"need nu_str >= 0 and nu_nas > 0, got {self.nu_str}, {self.nu_nas}")


@struct.dataclass
class NasbotState:
    tokens: jax.Array  # int32[C, N] queried strings, in order
    scores: jax.Array  # f32[C] (-inf: empty or failed)
    count: jax.Array  # int32[]
    seen: Seen
    dist: jax.Array  # f32[C, C] OTMANN d between queried strings
    dist_bar: jax.Array  # f32[C, C] normalized d_bar


@register("nasbot")
class NASBOT(BOSearcher):
    """GP with the OTMANN kernel, EI maximized by an evolutionary algorithm (module docstring)."""

    Options = NasbotOptions
    compile_profile = "compile_bound"  # every program, its random steps too (nas.engine.compile_policy)

    def setup(self):
        self.reader = network_reader(self.space)
        if self.reader is None:
            raise ValueError(
                f"nasbot: OTMANN needs the layers of a network, and space {self.space.name!r} is not one it can "
                f"read ({READABLE}); use gp_bo, whose Hamming kernel works on any space"
            )
        o = self.options
        self.gp = GPConfig(fit_steps=o.gp_steps, learning_rate=o.gp_learning_rate)
        self.rest = np.asarray(self.reader.rest_tokens)

    # -- distances --------------------------------------------------------------------
    def networks(self, tokens):
        return jax.vmap(lambda t: prepare(self.reader.read(t)))(tokens)

    def distances(self, x1, x2):
        o = self.options
        return otmann_matrix(x1, x2, jnp.asarray(self.reader.mismatch), nu_str=o.nu_str, nu_nas=o.nu_nas)

    def rest_distance(self, t1, t2):
        """f32[A, B]: how many hyperparameters outside the network differ (0 on cell spaces)."""
        diff = (t1[:, None, :] != t2[None, :, :]) & self.rest
        return jnp.sum(diff, axis=-1).astype(jnp.float32)

    # -- contract ---------------------------------------------------------------------
    def init(self, key):
        del key
        c, n = self.capacity, self.space.num_tokens
        return NasbotState(
            tokens=jnp.zeros((c, n), jnp.int32),
            scores=jnp.full((c,), -jnp.inf, jnp.float32),
            count=jnp.int32(0),
            **self.new_books(NasbotState, c),
            dist=jnp.zeros((c, c), jnp.float32),
            dist_bar=jnp.zeros((c, c), jnp.float32),
        )

    def _tell(self, key, tokens, scores, state):
        del key
        start = state.count
        tokens = tokens.astype(jnp.int32)
        all_tokens = jax.lax.dynamic_update_slice(state.tokens, tokens, (start, 0))
        d, d_bar = self.distances(self.networks(tokens), self.networks(all_tokens))  # [B, C]

        def put(m, rows):  # the new rows and, transposed, the new columns
            return jax.lax.dynamic_update_slice(jax.lax.dynamic_update_slice(m, rows, (start, 0)), rows.T, (0, start))

        return state.replace(
            tokens=all_tokens,
            scores=jax.lax.dynamic_update_slice(state.scores, scores.astype(jnp.float32), (start,)),
            count=start + tokens.shape[0],
            dist=put(state.dist, d),
            dist_bar=put(state.dist_bar, d_bar),
        ), {}

    # -- the GP -------------------------------------------------------------------------
    def kernel(self, theta, d, d_bar, h):
        """``alpha e^(-beta d) + alpha_bar e^(-beta_bar d_bar)``, times ``e^(-h / l)`` where hyperparameters
        outside the network exist."""
        k = jnp.exp(theta["log_alpha"] - jnp.exp(theta["log_beta"]) * d)
        k = k + jnp.exp(theta["log_alpha_bar"] - jnp.exp(theta["log_beta_bar"]) * d_bar)
        if self.reader.has_rest:
            k = k * jnp.exp(-h / jnp.exp(theta["log_ls"]))
        return k

    def prior_var(self, theta):
        return jnp.exp(theta["log_alpha"]) + jnp.exp(theta["log_alpha_bar"])

    def init_theta(self, d, d_bar, h, mask):
        """``beta``, ``beta_bar`` (``1/l``) = 1 / the mean distance between queried strings; ``alpha =
        alpha_bar = 1/2``; noise 0.1."""
        both = mask[:, None] & mask[None, :] & ~jnp.eye(mask.shape[0], dtype=bool)

        def log_mean(m):
            mean = jnp.sum(jnp.where(both, m, 0.0)) / jnp.maximum(jnp.sum(both), 1)
            return jnp.log(jnp.where(mean > 1e-6, mean, 1.0))

        half = jnp.log(jnp.float32(0.5))
        theta = {"log_alpha": half, "log_alpha_bar": half, "log_beta": -log_mean(d), "log_beta_bar": -log_mean(d_bar)}
        theta["log_noise"] = jnp.log(jnp.float32(0.1))
        if self.reader.has_rest:
            theta["log_ls"] = log_mean(h)
        return theta

    # -- one BO iteration -------------------------------------------------------------
    def _model_ask(self, key, state, rows: int):
        o = self.options
        k_ea, k_fill = jax.random.split(key)
        x, y = state.tokens[:rows], state.scores[:rows]
        mask = (jnp.arange(rows) < state.count) & jnp.isfinite(y)
        d, d_bar, h = state.dist[:rows, :rows], state.dist_bar[:rows, :rows], self.rest_distance(x, x)
        params = fit_kernel_gp(
            lambda th: self.kernel(th, d, d_bar, h), self.init_theta(d, d_bar, h, mask), y, mask, self.gp
        )
        theta, best = params["theta"], jnp.max(jnp.where(mask, y, -jnp.inf))
        data_nets = self.networks(x)

        def acquire(k, k_star):
            mean, std = posterior_from_cross(params, k_star, self.prior_var(theta))
            return acquisition_scores(o.acquisition, k, mean, std, best, None, o.beta)

        # the pool: the queried networks, then each generation's mutants (a scan: one copy of the transport code)
        per_gen, gens = o.mutations_per_generation, o.num_candidates // o.mutations_per_generation
        m = o.num_candidates
        pool_tokens = jnp.concatenate([x, jnp.zeros((m, x.shape[1]), jnp.int32)])
        data_acq = acquire(jax.random.fold_in(k_ea, gens), self.kernel(theta, d, d_bar, h))
        pool_acq = jnp.concatenate([jnp.where(mask, data_acq, -jnp.inf), jnp.full((m,), -jnp.inf)])

        def generation(carry, g):
            pool_tokens, pool_acq, cand_ids = carry
            k_par, k_mut, k_acq = jax.random.split(jax.random.fold_in(k_ea, g), 3)
            parents = jax.random.categorical(k_par, fitness_logits(pool_acq), shape=(per_gen,))
            mutants = jax.vmap(lambda kk, t: mutate_edits(self.space, kk, t, len(EDIT_PROBS), EDIT_PROBS))(
                jax.random.split(k_mut, per_gen), pool_tokens[parents]
            )
            ids = jax.vmap(self.space.string_id)(mutants)
            ok = (ids >= 0) & ~seen_contains(state.seen, ids) & first_in_order(ids)
            ok &= ~jnp.any(ids[:, None] == cand_ids[None, :], axis=1)
            dm, dm_bar = self.distances(data_nets, self.networks(mutants))  # [P, per_gen]
            acq = acquire(k_acq, self.kernel(theta, dm, dm_bar, self.rest_distance(x, mutants)))
            acq = jnp.where(ok & jnp.isfinite(acq), acq, -jnp.inf)
            lo = rows + g * per_gen
            return (
                jax.lax.dynamic_update_slice(pool_tokens, mutants, (lo, 0)),
                jax.lax.dynamic_update_slice(pool_acq, acq, (lo,)),
                jax.lax.dynamic_update_slice(cand_ids, jnp.where(ok, ids, -2), (g * per_gen,)),
            ), None

        init = (pool_tokens, pool_acq, jnp.full((m,), -2, jnp.int32))
        (pool_tokens, pool_acq, _), _ = jax.lax.scan(generation, init, jnp.arange(gens))
        cand_acq = pool_acq[rows:]
        _, top = jax.lax.top_k(cand_acq, self.batch_size)
        chosen, chosen_ok = pool_tokens[rows:][top], jnp.isfinite(cand_acq[top])
        return fill_missing(k_fill, self.space, state.seen, chosen, chosen_ok)  # too few candidates: random


def fitness_logits(acq: jax.Array) -> jax.Array:
    """Log-probabilities of drawing each pool member as a parent: ``(phi - mean) / (2 std)`` over the members
    with a finite acquisition value (the authors' ``get_exp_probs_from_fitness``), ``-inf`` for the others."""
    ok = jnp.isfinite(acq)
    n = jnp.maximum(jnp.sum(ok), 1)
    mean = jnp.sum(jnp.where(ok, acq, 0.0)) / n
    std = jnp.sqrt(jnp.sum(jnp.where(ok, jnp.square(acq - mean), 0.0)) / n)
    z = jnp.where(std > 0, (acq - mean) / (FITNESS_SCALE * jnp.where(std > 0, std, 1.0)), 0.0)
    return jnp.where(ok, z, -jnp.inf)
