"""BANANAS: Bayesian optimization with a neural-network ensemble and path encodings.

White, Neiswanger & Savani (seed paper 001), Algorithm 1. Draw ``t0`` random architectures;
then every iteration (1) fit the predictor on all queried architectures, (2) build candidates by
mutating the best queried architectures (acquisition optimization), (3) score candidates with
the acquisition function, (4) query the top ``k`` (the paper's experiments: ``t0 = k = 10``,
150 queries, 5 members, UCB with beta = 0.5, path encoding).

Defaults follow the authors' released code (naszilla ``bananas``), which differs from the seed
paper's text in two places: independent Thompson sampling (``acquisition="its"``, the final
paper's choice; UCB by config) and mutations with several edits (``max_edits=2``; the code flips
each NB201 edge with probability 1/4). Measured on NB201 cifar10 (README): ITS helps, and with
it the 1-2-edit candidates; together they bring BANANAS level with regularized evolution.

Components (all static options of the searcher, see ``__init__``):
- ``predictor``: ``"ensemble"`` (``surrogates.mlp_ensemble``) or ``"gp"`` (``surrogates.gp``).
- ``encoding``: a feature kind of the space (``"path"``, ``"trunc_path"``, ``"adjacency"``,
  ``"onehot"``); ``"auto"`` = ``"path"`` where the space has it, else ``"onehot"``.
- ``acquisition``: ``ucb | ei | pi | ts | its`` (``surrogates.acquisition``).
- ``acq_opt``: ``"mutation"`` (the paper's code ``get_candidates``: ``num_candidates`` distinct,
  unqueried mutations of the best architecture, continuing with the next best ones up to
  ``patience`` parents when a parent has too few distinct mutations; each mutation applies
  ``max_edits`` edits at most, the count drawn uniformly from ``1..max_edits``, as the paper's
  code mixes edit counts; 1 = one-token neighbours, as the paper's text), ``"random"``
  (``num_random`` random unqueried architectures; the paper's ablation used 1000), or
  ``"mutation_random"`` (both sets). With ``dedup_encoding`` (default, as the paper's code) candidates
  are also distinct in the predictor's encoding and differ in it from every queried architecture.

Batch: ``batch_size`` is ``k`` (queries per step); ``num_init`` must be a multiple of it (the first
``num_init / k`` steps are random). Never queries a string twice (``nas.dedup``); when fewer than
``k`` candidates remain, the rest are fresh random strings.

Compilation: the state holds the data at full capacity. With ``bucket = -1`` (default) every step
fits on all ``C`` rows (padded, masked) and the whole run compiles once (``nas.runner``); the
faster bucketed run uses ``surrogates.padding.run_segments``, which runs segments with a static
bucket ``P`` (``with_bucket``): ``P = 0`` steps are random, ``P > 0`` fits on rows ``[:P]``.
"""

from __future__ import annotations

import copy

import jax
import jax.numpy as jnp
from flax import struct

from nas.dedup import Seen, fill_unique, seen_add, seen_contains, seen_init
from nas.searcher import Searcher, register
from surrogates.acquisition import ACQUISITIONS, acquisition_scores
from surrogates.gp import GPConfig, fit_gp, gp_posterior, gp_posterior_sample
from surrogates.mlp_ensemble import MLPEnsembleConfig, ensemble_mean_std, fit_ensemble, predict_ensemble
from surrogates.padding import bucket_size

ACQ_OPTS = ("mutation", "random", "mutation_random")
PREDICTORS = ("ensemble", "gp")
# static bucket variants of each searcher object (module level: searcher attributes stay plain options)
_VARIANTS: dict[tuple[int, int], tuple] = {}


@struct.dataclass
class BOState:
    tokens: jax.Array  # int32[C, N] queried strings, in order
    scores: jax.Array  # f32[C] their scores (-inf for invalid / empty rows)
    count: jax.Array  # int32[] rows filled
    seen: Seen


def first_in_order(ids: jax.Array, among: jax.Array | None = None) -> jax.Array:
    """bool[M]: ``ids[i]`` is the first occurrence of its value (stable sort, O(M log M)).

    With ``among`` (bool[M]) only those rows count: a row of ``among`` is first if no earlier row
    of ``among`` has its value; rows outside ``among`` are reported True and hide nothing.
    """
    m = ids.shape[0]
    among = jnp.ones((m,), bool) if among is None else among
    order = jnp.lexsort((jnp.arange(m), ids, ~among))  # rows of `among` first, then by value, then index
    s, a = ids[order], among[order]
    dup = jnp.concatenate([jnp.zeros((1,), bool), (s[1:] == s[:-1]) & a[1:] & a[:-1]])
    return jnp.zeros_like(dup).at[order].set(~dup)


def feature_hash(feats: jax.Array) -> jax.Array:
    """int32[M]: a hash of each feature row (rounded to 1/1024), equal rows give equal hashes.

    Integer arithmetic wraps around exactly and does not depend on the summation order, so the
    hash is deterministic on every backend (a float dot product need not be).
    """
    q = jax.lax.bitcast_convert_type(jnp.round(feats * 1024.0).astype(jnp.int32), jnp.uint32)  # negatives too
    mult = jax.random.bits(jax.random.PRNGKey(0x5EED), (feats.shape[-1],), jnp.uint32) | jnp.uint32(1)
    h = jnp.sum(q * mult, axis=-1, dtype=jnp.uint32)
    h = (h ^ (h >> 15)) * jnp.uint32(0x2C1B3C6D)
    return jax.lax.bitcast_convert_type(h ^ (h >> 12), jnp.int32)


def take_first(cand: jax.Array, ok: jax.Array, n: int) -> tuple[jax.Array, jax.Array]:
    """The first ``n`` rows of ``cand`` with ``ok`` in order: (tokens[n, N], ok[n])."""
    slot = jnp.where(ok, jnp.cumsum(ok) - 1, n)
    out = jnp.zeros((n, cand.shape[1]), cand.dtype).at[slot].set(cand, mode="drop")
    return out, jnp.arange(n) < jnp.sum(ok)


class BOSearcher(Searcher):
    """Shared batch-BO loop for ``bananas`` and ``gp_bo`` (subclasses set defaults)."""

    PREFERRED_ENCODINGS = ("path", "onehot")

    def __init__(
        self,
        space,
        batch_size: int = 10,
        max_queries: int = 150,
        num_init: int = 10,
        encoding: str = "auto",
        predictor: str = "ensemble",
        acquisition: str = "its",
        beta: float = 0.5,
        acq_opt: str = "mutation",
        num_candidates: int = 100,
        patience: int = 5,
        max_edits: int = 2,
        num_random: int = 100,
        num_members: int = 5,
        num_layers: int = 10,
        width: int = 20,
        learning_rate: float = 0.01,
        epochs: int = 150,
        mlp_batch_size: int = 32,
        loss: str = "mae",
        kernel: str = "hamming",
        gp_steps: int = 100,
        gp_learning_rate: float = 0.05,
        dedup_encoding: bool = True,
        bucket_multiple: int = 64,
        bucket: int = -1,
    ):
        super().__init__(space, batch_size, max_queries)
        if num_init < 1 or num_init % self.batch_size:
            raise ValueError(f"num_init ({num_init}) must be a positive multiple of batch_size ({self.batch_size})")
        if num_init >= self.max_queries:
            raise ValueError(f"num_init ({num_init}) must be below max_queries ({self.max_queries})")
        if predictor not in PREDICTORS:
            raise ValueError(f"predictor must be one of {list(PREDICTORS)}, got {predictor!r}")
        if acquisition not in ACQUISITIONS:
            raise ValueError(f"acquisition must be one of {list(ACQUISITIONS)}, got {acquisition!r}")
        if acq_opt not in ACQ_OPTS:
            raise ValueError(f"acq_opt must be one of {list(ACQ_OPTS)}, got {acq_opt!r}")
        kinds = tuple(getattr(space, "feature_kinds", ("onehot",)))
        if encoding == "auto":
            encoding = next(k for k in self.PREFERRED_ENCODINGS + ("onehot",) if k in kinds)
        if encoding not in kinds:
            raise ValueError(
                f"encoding {encoding!r} is not a feature kind of space {space.name!r} (it has {list(kinds)}); "
                "pass one of those, or 'auto'"
            )
        self.num_init = int(num_init)
        self.encoding = encoding
        self.predictor = predictor
        self.acquisition = acquisition
        self.beta = float(beta)
        self.acq_opt = acq_opt
        self.num_candidates = int(num_candidates)
        self.patience = int(patience)
        if max_edits < 1:
            raise ValueError(f"max_edits must be >= 1 (edits per mutation candidate), got {max_edits}")
        self.max_edits = int(max_edits)
        self.num_random = int(num_random)
        self.mlp = MLPEnsembleConfig(
            num_members=num_members,
            num_layers=num_layers,
            width=width,
            learning_rate=learning_rate,
            epochs=epochs,
            batch_size=mlp_batch_size,
            loss=loss,
        )
        self.gp = GPConfig(kernel=kernel, fit_steps=gp_steps, learning_rate=gp_learning_rate)
        self.dedup_encoding = bool(dedup_encoding)
        self.bucket_multiple = int(bucket_multiple)
        self.bucket = int(bucket)

    @property
    def splits_over_devices(self) -> bool:
        """False with a GP: jaxlib's batched CPU LAPACK kernels (the GP's Cholesky) deadlocked
        when the seeds were split over 2 CPU devices (``nas/devices.py``); such runs stay on one."""
        return self.predictor != "gp"

    # -- buckets (surrogates.padding) -------------------------------------------------
    @property
    def capacity(self) -> int:
        return self.num_steps * self.batch_size

    def bucket_for_step(self, t: int) -> int:
        """Static fit size for step ``t``: 0 while random, else the padded data size."""
        n = t * self.batch_size
        return 0 if n < self.num_init else bucket_size(n, self.capacity, self.bucket_multiple)

    def with_bucket(self, bucket: int) -> BOSearcher:
        """The same searcher with a static fit size (cached so each variant compiles once)."""
        if bucket == self.bucket:
            return self
        key = (id(self), int(bucket))
        if key not in _VARIANTS:
            v = copy.copy(self)
            v.bucket = int(bucket)
            _VARIANTS[key] = (self, v)  # holding the parent keeps its id from being reused
        return _VARIANTS[key][1]

    def chunk_variant(self, lo: int, hi: int) -> BOSearcher:
        """The variant that runs steps ``[lo, hi)`` (``nas.host_loop`` hook): random-only, bucketed, or generic."""
        buckets = {self.bucket_for_step(t) for t in range(lo, hi)}
        if buckets == {0}:
            return self.with_bucket(0)
        if 0 in buckets:
            return self  # the chunk mixes random and model steps: the generic program decides per step
        return self.with_bucket(max(buckets))

    # -- contract ---------------------------------------------------------------------
    def init(self, key):
        del key
        c, n = self.capacity, self.space.num_tokens
        return BOState(
            tokens=jnp.zeros((c, n), jnp.int32),
            scores=jnp.full((c,), -jnp.inf, jnp.float32),
            count=jnp.int32(0),
            seen=seen_init(c),
        )

    def _random(self, key, seen):
        def propose(k):
            return jax.vmap(self.space.sample)(jax.random.split(k, max(2 * self.batch_size, 16)))

        tokens, _ = fill_unique(key, self.space, propose, seen, self.batch_size)
        return tokens

    def ask(self, key, state):
        if self.bucket == 0:
            return self._random(key, state.seen), state
        if self.bucket > 0:
            return self._model_ask(key, state, self.bucket), state
        tokens = jax.lax.cond(
            state.count < self.num_init,
            lambda: self._random(key, state.seen),
            lambda: self._model_ask(key, state, self.capacity),
        )
        return tokens, state

    def tell(self, key, tokens, scores, state):
        del key
        start = state.count
        new = BOState(
            tokens=jax.lax.dynamic_update_slice(state.tokens, tokens.astype(jnp.int32), (start, 0)),
            scores=jax.lax.dynamic_update_slice(state.scores, scores.astype(jnp.float32), (start,)),
            count=start + tokens.shape[0],
            seen=seen_add(state.seen, jax.vmap(self.space.string_id)(tokens)),
        )
        return new, {}

    # -- one BO iteration -------------------------------------------------------------
    def candidates(self, key, state) -> tuple[jax.Array, jax.Array]:
        """Acquisition-optimization candidates (tokens[M, N], ok[M]): unqueried and distinct."""
        k_mut, k_rand = jax.random.split(key)
        parts, props = [], []
        if self.acq_opt in ("mutation", "mutation_random"):
            c, pat = self.num_candidates, self.patience
            _, parents = jax.lax.top_k(state.scores, pat)
            parent_ok = jnp.isfinite(state.scores[parents])
            keys = jax.random.split(k_mut, pat * c)
            par = jnp.repeat(parents, c)
            muts = jax.vmap(self.mutate)(keys, state.tokens[par])
            props.append((muts, jnp.repeat(parent_ok, c), c))
        if self.acq_opt in ("random", "mutation_random"):
            rnd = jax.vmap(self.space.sample)(jax.random.split(k_rand, self.num_random))
            props.append((rnd, jnp.ones((self.num_random,), bool), self.num_random))
        allc = jnp.concatenate([p[0] for p in props])
        ids = jax.vmap(self.space.string_id)(allc)
        ok_all = (ids >= 0) & ~seen_contains(state.seen, ids) & first_in_order(ids)
        if self.dedup_encoding:
            # as get_candidates in the paper's code (a dict of path indices): a candidate whose
            # encoding equals a queried architecture's or an earlier candidate's is dropped; the
            # predictor cannot tell them apart (e.g. NB201 cells that differ only on edges off
            # every input-output path), so they would be scored as the architecture already seen
            feats = jax.vmap(lambda t: self.space.features(t, self.encoding))
            h_cand = feature_hash(feats(allc))
            h_seen = feature_hash(feats(state.tokens))
            filled = jnp.arange(h_seen.shape[0]) < state.count
            in_seen = jnp.any((h_cand[:, None] == h_seen[None, :]) & filled[None, :], axis=1)
            ok_all &= ~in_seen & first_in_order(h_cand, ok_all)
        start = 0
        for toks, pok, n in props:
            m = toks.shape[0]
            t, ok = take_first(toks, ok_all[start : start + m] & pok, n)
            parts.append((t, ok))
            start += m
        return jnp.concatenate([p[0] for p in parts]), jnp.concatenate([p[1] for p in parts])

    def mutate(self, key, tokens):
        """``space.mutate`` applied ``e`` times, ``e`` uniform in ``1..max_edits`` (may undo itself:
        such candidates equal a queried parent and are dropped)."""
        if self.max_edits == 1:
            return self.space.mutate(key, tokens)
        k_num, k_edit = jax.random.split(key)
        num = jax.random.randint(k_num, (), 1, self.max_edits + 1)

        def edit(i, t):
            return jnp.where(i < num, self.space.mutate(jax.random.fold_in(k_edit, i), t), t)

        return jax.lax.fori_loop(0, self.max_edits, edit, tokens)

    def predict(self, key, x, y, mask, x_cand) -> tuple[jax.Array, jax.Array, jax.Array]:
        """(mean[M], std[M], members[E, M]) of the predictor fitted on the masked rows."""
        if self.predictor == "ensemble":
            params = fit_ensemble(key, x, y, mask, self.mlp)
            members = predict_ensemble(params, x_cand, self.mlp)
            mean, std = ensemble_mean_std(members)
            return mean, std, members
        params = fit_gp(x, y, mask, self.gp)
        mean, std = gp_posterior(params, x_cand, self.gp)
        members = None
        if self.acquisition == "ts":
            members = gp_posterior_sample(jax.random.fold_in(key, 1), params, x_cand, self.gp)[None]
        return mean, std, members

    def _model_ask(self, key, state, rows: int):
        k_cand, k_fit, k_acq, k_fill = jax.random.split(key, 4)
        cand, cand_ok = self.candidates(k_cand, state)
        feats = jax.vmap(lambda t: self.space.features(t, self.encoding))
        y = state.scores[:rows]
        mask = (jnp.arange(rows) < state.count) & jnp.isfinite(y)
        mean, std, members = self.predict(k_fit, feats(state.tokens[:rows]), y, mask, feats(cand))
        best = jnp.max(jnp.where(mask, y, -jnp.inf))
        acq = acquisition_scores(self.acquisition, k_acq, mean, std, best, members, self.beta)
        acq = jnp.where(cand_ok & jnp.isfinite(acq), acq, -jnp.inf)
        _, top = jax.lax.top_k(acq, self.batch_size)
        chosen, chosen_ok = cand[top], cand_ok[top] & jnp.isfinite(acq[top])
        # too few candidates: fresh random strings, distinct from the seen and the chosen ones
        ids = jnp.where(chosen_ok, jax.vmap(self.space.string_id)(chosen), -2)
        fill = self._random(k_fill, seen_add(state.seen, ids))
        slot = jnp.cumsum(~chosen_ok) - 1
        return jnp.where(chosen_ok[:, None], chosen, fill[jnp.clip(slot, 0, self.batch_size - 1)])


@register("bananas")
class Bananas(BOSearcher):
    """BANANAS (seed paper 001): MLP ensemble, path encoding, ITS (UCB beta 0.5 by config), mutation candidates."""

    TEST_KWARGS = {"max_queries": 30, "epochs": 3, "num_members": 2, "num_layers": 2, "num_candidates": 20}
