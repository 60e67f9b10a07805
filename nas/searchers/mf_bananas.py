"""A multi-fidelity BANANAS: the neural ensemble chooses the configurations that successive halving
promotes (White, Neiswanger & Savani, 2021, "BANANAS", Section 6: "incorporating a successive-halving
approach to BANANAS could result in a significant decrease in the runtime").

The schedule is Hyperband's brackets (or one successive-halving bracket, ``brackets``;
``nas.searchers.successive_halving``). At the start of each bracket the BANANAS step
(``nas.searchers.bo``, Algorithm 1) runs once: fit the ensemble (``surrogates.mlp_ensemble``) on the
results so far, build candidates by mutating the best configurations (``nas.searchers.acquisition_candidates``),
score them with the acquisition function at the top fidelity (``surrogates.acquisition``) and queue
the best ``n_0`` as the bracket's new configurations. Two variants (``variant``):

- ``highest_fidelity`` (a): the ensemble is trained on the results of one fidelity, the highest that
  holds at least ``num_init`` of them (the top fidelity once it has enough); promotions go by the
  observed scores, as in successive halving.
- ``fidelity_feature`` (b): the ensemble is trained on every result, the fidelity an input feature
  (``log(budget / lowest) / log(top / lowest)``, 0..1), and predicts at the top fidelity; it chooses
  the pairs (configuration, fidelity): new configurations by their acquisition at the top fidelity,
  and the configurations promoted to each higher fidelity by the same acquisition, refit on the
  rung's results (the ensemble's ranking replaces the observed one).

Until the data suffice (fewer than ``num_init`` results where the model trains), new configurations
are uniform, as BANANAS' first ``t0`` queries. Every configuration a bracket starts is new. The fit
and the candidate search run only at the steps that start a bracket or complete a rung
(``run_if``), so the compiled scan does not pay for them on every step.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from nas.core import ladders
from nas.core.dedup import seen_contains, seen_insert
from nas.core.options import feature_kind, one_of, positive
from nas.core.registry import register
from nas.core.unseen_draw import draw_new
from nas.core.vmap_ops import run_if
from nas.searchers.acquisition_candidates import ACQ_OPTS, acquisition_candidates, fill_missing
from nas.searchers.bananas import EnsembleOptions, ensemble_config
from nas.searchers.observations import Observations, observations_init, observe
from nas.searchers.successive_halving import BracketOptions, BracketSearcher
from surrogates.acquisition import ACQUISITIONS, acquisition_scores
from surrogates.mlp_ensemble import ensemble_mean_std, fit_ensemble, predict_ensemble

VARIANTS = ("highest_fidelity", "fidelity_feature")


@dataclasses.dataclass(frozen=True)
class MFBananasOptions(EnsembleOptions, BracketOptions):
    """Attributes (and those of ``BracketOptions``):
    variant: ``highest_fidelity`` (a) or ``fidelity_feature`` (b) (module docstring).
    brackets: ``hyperband`` (every bracket in turn) or ``successive_halving`` (the lowest one).
    num_init: results the ensemble needs before it proposes (10, BANANAS' t0).
    encoding, acquisition, num_candidates, patience, max_edits, dedup_encoding: the BANANAS step
      (``nas.searchers.bo``).
    The ensemble: ``EnsembleOptions`` (BANANAS').
    """

    variant: str = "highest_fidelity"
    brackets: str = "hyperband"
    num_init: int = 10
    encoding: str = "auto"
    acquisition: str = "its"
    acq_opt: str = "mutation"
    num_candidates: int = 100
    patience: int = 5
    max_edits: int = 2
    num_random: int = 100
    dedup_encoding: bool = True

    def check(self):
        super().check()
        one_of(self, "variant", VARIANTS)
        one_of(self, "brackets", ("hyperband", "successive_halving"))
        one_of(self, "acquisition", ACQUISITIONS)
        one_of(self, "acq_opt", ACQ_OPTS)
        positive(self, "num_init", "num_candidates", "patience", "max_edits", "num_random")
        self.check_ensemble()


@struct.dataclass
class EnsembleModel:
    obs: Observations
    queue: jax.Array  # int32[C, N]: the bracket's new configurations, in order
    queue_ok: jax.Array  # bool[C]: slot proposed by the model (else a uniform draw)
    proposed: jax.Array  # int32[]: brackets whose new configurations the model proposed


@register("mf_bananas")
class MFBananas(BracketSearcher):
    """BANANAS' ensemble proposing (and, variant b, promoting) within successive-halving brackets."""

    Options = MFBananasOptions
    compile_profile = "default"  # trains a network: its ensemble's fits depend on the level (tests/mf_golden.py)

    def make_brackets(self, ladder):
        if self.options.brackets == "hyperband":
            return ladders.hyperband_brackets(ladder, self.eta)
        return (ladders.successive_halving_bracket(ladder, self.eta),)

    def setup(self):
        super().setup()
        self.encoding = feature_kind(self.space, self.options.encoding, ("path", "ordinal", "onehot"))
        self.mlp = ensemble_config(self.options)
        b = self.budgets
        span = math.log(b[-1] / b[0]) if len(b) > 1 else 1.0
        self.fidelity_feature = np.asarray([math.log(x / b[0]) / span for x in b], np.float32)

    def init_model(self, key):
        c, n = self.capacity, self.space.num_tokens
        return EnsembleModel(obs=observations_init(self.max_evaluations, n), queue=jnp.zeros((c, n), jnp.int32),
                             queue_ok=jnp.zeros((c,), bool), proposed=jnp.int32(0))  # fmt: skip

    # -- data and model ---------------------------------------------------------------------------
    def _features(self, tokens, fidelity=None):
        x = jax.vmap(lambda t: self.space.features(t, self.encoding))(tokens).astype(jnp.float32)
        if self.options.variant == "highest_fidelity":
            return x
        z = jnp.asarray(self.fidelity_feature)[jnp.clip(fidelity, 0, self.num_fidelities - 1)]
        return jnp.concatenate([x, jnp.broadcast_to(z, x.shape[:1])[:, None]], axis=1)

    def _training_rows(self, obs: Observations):
        """(mask bool[E], ready bool[]): the rows the ensemble trains on and whether they suffice."""
        filled = jnp.arange(obs.score.shape[0]) < obs.count
        if self.options.variant == "fidelity_feature":
            return filled, obs.count >= self.options.num_init
        counts = jnp.stack([jnp.sum(filled & (obs.fidelity == f)) for f in range(self.num_fidelities)])
        f_model = jnp.max(jnp.where(counts >= self.options.num_init, jnp.arange(self.num_fidelities), -1))
        return filled & (obs.fidelity == f_model), f_model >= 0

    def _fit_predict(self, key, state, tokens):
        """(mean, std, members) at the top fidelity for ``tokens[M, N]``, the ensemble fit on the data."""
        obs = state.model.obs
        mask, _ = self._training_rows(obs)
        params = fit_ensemble(key, self._features(obs.tokens, obs.fidelity), obs.score, mask, self.mlp)
        top = jnp.full((tokens.shape[0],), self.num_fidelities - 1, jnp.int32)
        members = predict_ensemble(params, self._features(tokens, top), self.mlp)
        mean, std = ensemble_mean_std(members)
        return mean, std, members

    def _acquire(self, key, state, mean, std, members):
        obs = state.model.obs
        at_top = obs.fidelity == self.num_fidelities - 1
        best = jnp.max(jnp.where(at_top, obs.score, -jnp.inf))
        return acquisition_scores(self.options.acquisition, key, mean, std, best, members)

    def _fill_queue(self, key, state):
        """The bracket's new configurations: the BANANAS step's top ``C`` candidates (uniform ones missing)."""
        o, obs = self.options, state.model.obs
        k_cand, k_fit, k_acq, k_fill = jax.random.split(key, 4)
        mask, _ = self._training_rows(obs)
        parents = jnp.where(mask, obs.score, -jnp.inf)  # mutations of the best results the model trains on
        feats = (lambda t: self.space.features(t, self.encoding)) if o.dedup_encoding else None
        cand, cand_ok = acquisition_candidates(
            k_cand, self.space, obs.tokens, parents, obs.count, state.seen, acq_opt=o.acq_opt,
            num_candidates=o.num_candidates, patience=o.patience, max_edits=o.max_edits, num_random=o.num_random,
            features=feats,
        )  # fmt: skip
        mean, std, members = self._fit_predict(k_fit, state, cand)
        acq = jnp.where(cand_ok, self._acquire(k_acq, state, mean, std, members), -jnp.inf)
        _, top = jax.lax.top_k(acq, min(self.capacity, acq.shape[0]))
        pad = self.capacity - top.shape[0]  # fewer candidates than slots: uniform ones fill the rest
        chosen = jnp.pad(cand[top], ((0, pad), (0, 0)))
        chosen_ok = jnp.pad(jnp.isfinite(acq[top]), (0, pad))
        queue = fill_missing(k_fill, self.space, state.seen, chosen, chosen_ok)
        model = state.model.replace(queue=queue, queue_ok=jnp.ones_like(chosen_ok), proposed=state.model.proposed + 1)
        return state.replace(model=model)

    # -- hooks of the brackets ----------------------------------------------------------------------
    def start_bracket(self, key, state, started):
        _, ready = self._training_rows(state.model.obs)
        cleared = state.replace(model=state.model.replace(queue_ok=jnp.zeros_like(state.model.queue_ok)))
        state = jax.tree.map(lambda a, b: jnp.where(started, a, b), cleared, state)
        return run_if(started & ready, lambda s: self._fill_queue(key, s), state, state)

    def propose(self, key, state):
        slot = jnp.minimum(state.started, self.capacity - 1)
        queued = state.model.queue[slot]
        sid = self.space.string_id(queued)
        from_queue = state.model.queue_ok[slot] & (sid >= 0) & ~seen_contains(state.seen, sid)
        tokens, ok, seen = draw_new(key, self.space, state.seen)
        tokens = jnp.where(from_queue, queued, tokens)
        seen = jax.tree.map(lambda a, b: jnp.where(from_queue, a, b), seen_insert(state.seen, sid), seen)
        return tokens, ok | from_queue, state.replace(seen=seen)

    def observe(self, key, job, score, state):
        return state.replace(model=state.model.replace(obs=observe(state.model.obs, job, score)))

    def promotion_scores(self, key, state, needed):
        if self.options.variant == "highest_fidelity":
            return state.score
        _, ready = self._training_rows(state.model.obs)

        def ranked(s):
            k_fit, k_acq = jax.random.split(key)
            mean, std, members = self._fit_predict(k_fit, s, s.tokens)
            return self._acquire(k_acq, s, mean, std, members)

        return run_if(needed & ready, ranked, state, state.score)

    def _tell(self, key, job, score, state):
        state, metrics = super()._tell(key, job, score, state)
        return state, {**metrics, "model_brackets": state.model.proposed.astype(jnp.float32)}
