"""The batch Bayesian-optimization loop shared by BANANAS and GP-BO.

White, Neiswanger & Savani (2021), "BANANAS: Bayesian Optimization with Neural
Architectures for Neural Architecture Search", Algorithm 1: draw ``num_init``
random architectures; then every step (1) fit the predictor on all queried
architectures, (2) build candidates by mutating the best queried ones
(acquisition optimization), (3) score them with the acquisition function,
(4) query the top ``k = batch_size``. Subclasses choose the predictor.

Options (``BOOptions``):
- ``encoding``: a feature kind of the space (``"path"``, ``"trunc_path"``, ``"ordinal"``,
  ``"adjacency"``, ``"onehot"``); ``"auto"`` = the subclass's preferred kind.
- ``acquisition``: ``ucb | ei | pi | ts | its`` (``surrogates.acquisition``).
- ``acq_opt``: ``"mutation"`` (the authors' ``get_candidates``:
  ``num_candidates`` distinct, unqueried mutations of the best architecture,
  continuing with the next best ones up to ``patience`` parents; each mutation
  applies 1..``max_edits`` edits, the count uniform; ``num_parents = k``: the
  mutations spread over the ``k`` best, Algorithm 1's step 2), ``"random"``
  (``num_random`` random unqueried architectures) or ``"mutation_random"``.
  With ``dedup_encoding`` (the authors' code) candidates are also distinct in
  the predictor's encoding and differ in it from every queried architecture.

Batch: ``num_init`` must be a multiple of ``batch_size`` (the first
``num_init / batch_size`` steps are random). No string is queried twice
(``nas.core.dedup``); when fewer than ``k`` candidates remain, the rest are fresh
random strings.

Compilation (OSS Vizier's padding schedule): the state holds the data at full
capacity ``C``. The data size before step ``t`` is ``t * batch_size`` for every
seed, so the chunked loop runs each range of steps with the same padded size
``P = bucket_size(n, C, bucket_multiple)`` as a static variant of the searcher
(``program_for``): ``P = 0`` steps are random, ``P > 0`` fit on rows ``[:P]``.
The generic searcher (``variant = None``) fits on all ``C`` rows and decides
random vs model per step, so ``nas.engine.runner.make_search`` compiles one program.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp
from flax import struct

from nas.core.contract import Searcher
from nas.core.dedup import Seen
from nas.core.options import SearcherOptions, feature_kind, one_of, positive
from nas.searchers.acquisition_candidates import ACQ_OPTS, acquisition_candidates, fill_missing, random_unseen
from surrogates.acquisition import ACQUISITIONS, acquisition_scores
from surrogates.gp import GPConfig, fit_gp, gp_posterior, gp_posterior_sample
from surrogates.kernels import KERNELS
from surrogates.padding import bucket_size

PREDICTORS = ("ensemble", "gp")


@struct.dataclass
class BOState:
    tokens: jax.Array  # int32[C, N] queried strings, in order
    scores: jax.Array  # f32[C] their scores (-inf for invalid / empty rows)
    count: jax.Array  # int32[] rows filled
    seen: Seen


@dataclasses.dataclass(frozen=True)
class BOOptions(SearcherOptions):
    """Options of the BO loop (module docstring) and of its GP predictor.

    Attributes:
      batch_size: k, architectures queried per step (10).
      num_init: t0, random architectures before the first fit (10).
      encoding, acquisition, acq_opt: see the module docstring.
      beta: UCB's exploration weight (0.5).
      num_candidates, patience, max_edits, num_random, num_parents: acquisition optimization.
      kernel, gp_steps, gp_learning_rate: the exact GP (``surrogates.gp``):
        kernel on the encoding, Adam steps and step size on the marginal likelihood.
      dedup_encoding: drop candidates whose encoding equals a queried or earlier one.
      bucket_multiple: padded data sizes are multiples of this (fewer compiled programs).
    """

    INIT_IN_BATCHES = True  # a ClassVar of SearcherOptions: num_init fits whole batches (fit_defaults)
    batch_size: int = 10
    num_init: int = 10
    encoding: str = "auto"
    acquisition: str = "its"
    beta: float = 0.5
    acq_opt: str = "mutation"
    num_candidates: int = 100
    patience: int = 5
    max_edits: int = 2
    num_random: int = 100
    num_parents: int = 1
    kernel: str = "hamming"
    gp_steps: int = 100
    gp_learning_rate: float = 0.05
    dedup_encoding: bool = True
    bucket_multiple: int = 64

    def check(self):
        super().check()
        positive(self, "num_candidates", "patience", "num_random", "num_parents", "gp_steps")
        check_initial_design(self)
        if self.max_edits < 1:
            raise ValueError(f"max_edits must be >= 1 (edits per mutation candidate), got {self.max_edits}")
        one_of(self, "acquisition", ACQUISITIONS)
        one_of(self, "acq_opt", ACQ_OPTS)
        one_of(self, "kernel", KERNELS)


def check_initial_design(options) -> None:
    """``ValueError`` unless ``num_init`` random strings fill whole batches below the budget (the padded
    buckets' step schedule needs it)."""
    positive(options, "num_init", "bucket_multiple")
    if options.num_init % options.batch_size:
        raise ValueError(f"num_init ({options.num_init}) must be a multiple of batch_size ({options.batch_size})")
    if options.num_init >= options.max_queries:
        raise ValueError(f"num_init ({options.num_init}) must be below max_queries ({options.max_queries})")


class BOSearcher(Searcher):
    """The batch BO loop; subclasses set ``Options``, ``PREFERRED_ENCODINGS`` and ``predict``."""

    Options = BOOptions
    PREFERRED_ENCODINGS = ("path", "ordinal", "onehot")  # "ordinal": order-aware HPO spaces (spaces.ordinal)
    # The random first steps (variant 0) draw unqueried strings and fill the buffers: gathers, compares
    # and integer arithmetic, which compile like random search's steps (XLA level 1 and the loop emitters,
    # nas.engine.compile_policy) for the same numbers. A subclass whose random steps compute in floats
    # (NASBOT's tell, ParEGO's scalarization) keeps False.
    random_steps_light: ClassVar[bool] = False

    @property
    def compile_profile(self) -> str:
        return "integer_steps" if self.random_steps_light and self.variant == 0 else "default"

    def setup(self):
        self.encoding = feature_kind(self.space, self.options.encoding, self.PREFERRED_ENCODINGS)
        o = self.options
        self.gp = GPConfig(kernel=o.kernel, fit_steps=o.gp_steps, learning_rate=o.gp_learning_rate)

    @property
    def predictor(self) -> str:
        return "gp"

    # -- padded data buckets (the chunked loop's hooks) ----------------------------------
    @property
    def capacity(self) -> int:
        return self.num_steps * self.batch_size

    def bucket_for_step(self, t: int) -> int:
        """Static fit size for step ``t``: 0 while random, else the padded data size."""
        n = t * self.batch_size
        return 0 if n < self.options.num_init else bucket_size(n, self.capacity, self.options.bucket_multiple)

    def breakpoints(self) -> list[int]:
        return [t for t in range(1, self.num_steps) if self.bucket_for_step(t) != self.bucket_for_step(t - 1)]

    def program_for(self, lo: int, hi: int) -> BOSearcher:
        """Steps ``[lo, hi)`` within one bucket run as the variant that fits on that many rows."""
        buckets = {self.bucket_for_step(t) for t in range(lo, hi)}
        if len(buckets) > 1:
            return self  # spans a bucket change: the generic program (full capacity, random vs model per step)
        return self.with_variant(buckets.pop())

    # -- contract ---------------------------------------------------------------------
    def init(self, key):
        del key
        c, n = self.capacity, self.space.num_tokens
        return BOState(
            tokens=jnp.zeros((c, n), jnp.int32),
            scores=jnp.full((c,), -jnp.inf, jnp.float32),
            count=jnp.int32(0),
            **self.new_books(BOState, c),
        )

    def _random(self, key, seen):
        return random_unseen(key, self.space, seen, self.batch_size)

    def ask(self, key, state):
        if self.variant == 0:
            return self._random(key, state.seen), state
        if self.variant is not None:
            return self._model_ask(key, state, self.variant), state
        tokens = jax.lax.cond(
            state.count < self.options.num_init,
            lambda: self._random(key, state.seen),
            lambda: self._model_ask(key, state, self.capacity),
        )
        return tokens, state

    def _tell(self, key, tokens, scores, state):
        del key
        start = state.count
        new = BOState(
            tokens=jax.lax.dynamic_update_slice(state.tokens, tokens.astype(jnp.int32), (start, 0)),
            scores=jax.lax.dynamic_update_slice(state.scores, scores.astype(jnp.float32), (start,)),
            count=start + tokens.shape[0],
            seen=state.seen,  # the base adds the told ids (Searcher.record_told)
        )
        return new, {}

    # -- one BO iteration -------------------------------------------------------------
    def candidates(self, key, state) -> tuple[jax.Array, jax.Array]:
        """Acquisition-optimization candidates (tokens[M, N], ok[M]): unqueried and distinct."""
        o = self.options
        feats = (lambda t: self.space.features(t, self.encoding)) if o.dedup_encoding else None
        return acquisition_candidates(
            key, self.space, state.tokens, state.scores, state.count, state.seen, acq_opt=o.acq_opt,
            num_candidates=o.num_candidates, patience=o.patience, max_edits=o.max_edits, num_random=o.num_random,
            features=feats, num_parents=o.num_parents,
        )  # fmt: skip

    def predict(self, key, x, y, mask, x_cand, count=None) -> tuple[jax.Array, jax.Array, jax.Array | None]:
        """(mean[M], std[M], members[E, M] or None) of the predictor fitted on the masked rows (here: the GP);
        ``count``: the rows filled (the data size)."""
        params = fit_gp(x, y, mask, self.gp)
        mean, std = gp_posterior(params, x_cand, self.gp)
        members = None
        if self.options.acquisition == "ts":
            members = gp_posterior_sample(jax.random.fold_in(key, 1), params, x_cand, self.gp)[None]
        return mean, std, members

    def _model_ask(self, key, state, rows: int):
        k_cand, k_fit, k_acq, k_fill = jax.random.split(key, 4)
        cand, cand_ok = self.candidates(k_cand, state)
        feats = jax.vmap(lambda t: self.space.features(t, self.encoding))
        y = state.scores[:rows]
        mask = (jnp.arange(rows) < state.count) & jnp.isfinite(y)
        mean, std, members = self.predict(k_fit, feats(state.tokens[:rows]), y, mask, feats(cand), state.count)
        best = jnp.max(jnp.where(mask, y, -jnp.inf))
        acq = acquisition_scores(self.options.acquisition, k_acq, mean, std, best, members, self.options.beta)
        acq = jnp.where(cand_ok & jnp.isfinite(acq), acq, -jnp.inf)
        _, top = jax.lax.top_k(acq, self.batch_size)
        chosen, chosen_ok = cand[top], cand_ok[top] & jnp.isfinite(acq[top])
        return fill_missing(k_fill, self.space, state.seen, chosen, chosen_ok)  # too few candidates: random
