"""TNAS: Bayesian optimization with a meta-learned deep-kernel GP (Shala, Elsken, Hutter & Grabocka, 2023,
"Transfer NAS with meta-learned Bayesian surrogates", Sections 3.1-3.3 and Appendix C).

Meta-test loop: query an initial design (the top-``num_init`` strings of the source tasks, stored in
the parameters file by ``scripts.meta_train``, or random strings), then every step

1. fine-tune the meta-learned kernel parameters on the target's observations so far
   (``finetune_steps`` Adam steps on the marginal likelihood, eq. 3, always from the meta-learned ``w``);
   the dataset encoder phi reads the same observations (``surrogates.set_encoder``), or, for a model
   meta-trained on raw data (``dataset_input="data"``), one fixed draw of the target's training rows
   (``surrogates.task_data``; the benchmark named by ``task_data``);
2. compute the GP posterior (eqs. 1-2) of EVERY unqueried string of the space (exhaustive acquisition,
   as the paper does on NAS-Bench-201) and query the ``batch_size`` best by EI or UCB. Spaces of more
   than ``exhaustive_limit`` strings (NAS-Bench-101's 423k cells) score mutation and/or random
   candidates instead (``acq_opt``; ``nas.searchers.acquisition_candidates``, BANANAS' acquisition optimization).

The architecture encoder psi stays at its meta-learned value during meta-test: with exhaustive acquisition
its encoding of every string of the space is computed once when the searcher is built, so a step costs one
pass of the small MLP xi over the space instead of one of the graph encoder (phi, xi and the kernel are
fine-tuned); candidates are encoded as they are drawn.

Options (``TNASOptions``): ``params_file`` (``""``: a randomly initialized kernel, no meta-learning and
no source design), ``meta_learned`` (False: the file's model and design with random weights, the
"TNAS without meta-learning" ablation), ``initial_design`` (``auto | top | random``), ``num_init``,
``acquisition`` (``ei | ucb``), ``beta``, ``finetune_steps``, ``finetune_lr``, ``finetune_scope`` (``net``:
phi, xi and the GP hyperparameters, the default; ``kernel``: the GP hyperparameters only), ``init_seed``
(the random kernel's and the data draw's key), ``task_data`` (the target's benchmark, read by a raw-data phi);
``acq_opt`` (``auto``: ``exhaustive`` up to ``exhaustive_limit`` strings, else ``mutation_random``; or
``exhaustive | mutation | random | mutation_random``) with ``num_candidates``, ``patience``, ``max_edits``
and ``num_random`` as in the BO loop (``nas.searchers.bo``).

State: the queried strings, scores, their psi encodings and the ``nas.core.dedup`` set; one program
(data padded to the budget), so it runs unchanged in ``lax.scan`` and under ``vmap``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from nas.core.contract import Searcher
from nas.core.dedup import Seen, seen_contains
from nas.core.options import SearcherOptions, one_of, positive
from nas.core.registry import register
from nas.searchers.acquisition_candidates import ACQ_OPTS, acquisition_candidates, fill_missing, random_unseen
from surrogates import deep_kernel as dk
from surrogates.acquisition import acquisition_scores
from surrogates.meta_params import check_shapes, load_params
from surrogates.meta_training import ALL_STRINGS_LIMIT, all_strings, init_params_jit
from surrogates.task_data import data_pool, draw_rows

DESIGNS = ("auto", "top", "random")
TNAS_ACQUISITIONS = ("ei", "ucb")
TNAS_ACQ_OPTS = ("auto", "exhaustive", *ACQ_OPTS)


@dataclasses.dataclass(frozen=True)
class TNASOptions(SearcherOptions):
    """See the module docstring. ``num_init`` must be a multiple of ``batch_size`` and below the budget."""

    INIT_IN_BATCHES = True  # a ClassVar of SearcherOptions: num_init fits whole batches (fit_defaults)
    params_file: str = ""
    meta_learned: bool = True
    initial_design: str = "auto"
    num_init: int = 5
    acquisition: str = "ei"
    beta: float = 0.5
    finetune_steps: int = 10
    finetune_lr: float = 1e-3
    finetune_scope: str = "net"
    init_seed: int = 0
    task_data: str = ""
    acq_opt: str = "auto"
    exhaustive_limit: int = ALL_STRINGS_LIMIT
    num_candidates: int = 100
    patience: int = 5
    max_edits: int = 2
    num_random: int = 100

    def check(self):
        super().check()
        positive(self, "num_init", "exhaustive_limit", "num_candidates", "patience", "max_edits", "num_random")
        one_of(self, "initial_design", DESIGNS)
        one_of(self, "acquisition", TNAS_ACQUISITIONS)
        one_of(self, "acq_opt", TNAS_ACQ_OPTS)
        one_of(self, "finetune_scope", dk.FINETUNE_SCOPES)
        if self.num_init % self.batch_size:
            raise ValueError(f"num_init ({self.num_init}) must be a multiple of batch_size ({self.batch_size})")
        if self.num_init >= self.max_queries:
            raise ValueError(f"num_init ({self.num_init}) must be below max_queries ({self.max_queries})")
        if self.finetune_steps < 0:
            raise ValueError(f"finetune_steps must be >= 0, got {self.finetune_steps}")


def file_sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@struct.dataclass
class TNASState:
    tokens: jax.Array  # int32[C, N] queried strings
    scores: jax.Array  # f32[C] (-inf: empty or failed)
    z_arch: jax.Array  # f32[C, L] psi of each queried string (L = deep_kernel.psi_dim)
    count: jax.Array  # int32[]
    seen: Seen


@register("tnas")
class TNAS(Searcher):
    Options = TNASOptions
    splits_over_devices = False  # a GP (batched CPU Cholesky): see nas.searchers.bo

    def setup(self):
        o, space = self.options, self.space
        design, self.params_sha256, meta = None, "", {}
        if o.params_file:
            w, cfg, meta, design, _ = load_params(o.params_file, finished=True)
            self.params_sha256 = file_sha256(o.params_file)
            if meta.get("space") != space.name:
                raise ValueError(f"{o.params_file} was meta-trained on space {meta.get('space')!r}, not {space.name!r}")
        else:
            cfg, w = dk.default_config(space), None
        has_design = design is not None and len(design) > 0
        kind = o.initial_design if o.initial_design != "auto" else ("top" if has_design else "random")
        if kind == "top" and (design is None or len(design) < o.num_init):
            have = 0 if design is None else len(design)
            raise ValueError(
                f"initial_design 'top' needs {o.num_init} source strings from a params_file (have {have}); "
                "give params_file or set initial_design='random'"
            )
        self.acq_opt = o.acq_opt
        if o.acq_opt == "auto":
            self.acq_opt = "exhaustive" if space.size <= o.exhaustive_limit else "mutation_random"
        if self.acq_opt == "exhaustive":
            tokens = all_strings(space, o.exhaustive_limit)
            if o.max_queries > len(tokens):
                raise ValueError(f"max_queries ({o.max_queries}) exceeds the {len(tokens)} strings of {space.name!r}")
        else:  # example inputs for the shapes of a random kernel
            tokens = np.asarray(jax.vmap(space.sample)(jax.random.split(jax.random.PRNGKey(o.init_seed), 2)))
        arch_x = jax.vmap(lambda t: dk.arch_inputs(cfg, space, t))(jnp.asarray(tokens))
        example = jax.vmap(lambda t: space.features(t, "onehot"))(jnp.asarray(tokens[:2]))
        self.task_set = None
        if dk.uses_data(cfg):
            self.task_set = self._task_set(cfg, meta.get("sources", []))
            example = self.task_set[0]
        if w is not None:  # the file's parameters fit the model it names (else flax fails deep inside a program)
            shapes = jax.eval_shape(lambda k: dk.init_params(k, cfg, arch_x[:2], example), jax.random.PRNGKey(0))
            check_shapes(o.params_file, w, shapes)
        if w is None or not o.meta_learned:
            w = init_params_jit(jax.random.PRNGKey(o.init_seed), cfg, arch_x[:2], example)
        self.cfg, self.w, self.design_kind = cfg, w, kind
        self.design = None if design is None else np.asarray(design[: o.num_init], np.int32)
        if self.acq_opt == "exhaustive":
            self.all_tokens = tokens
            self.all_ids = np.asarray(jax.vmap(space.string_id)(jnp.asarray(tokens)))
            self.all_z = np.asarray(jax.jit(lambda p, x: dk.arch_embeddings(p, cfg, x))(w, arch_x))

    def _task_set(self, cfg, sources):
        """phi's set for a raw-data model: ``cfg.data_rows`` rows of the ``task_data`` benchmark's pool."""
        from spaces.benchmarks.registry import make_benchmark

        o = self.options
        if not o.task_data:
            raise ValueError("this TNAS model's dataset encoder reads raw data: set task_data to the target benchmark")
        if o.task_data in sources:
            raise ValueError(f"task_data {o.task_data!r} is a source task of the model; it must name the target")
        pool = data_pool(make_benchmark(o.task_data), cfg.data_columns)
        return tuple(np.asarray(a) for a in draw_rows(jax.random.PRNGKey(o.init_seed), *pool, cfg.data_rows))

    @property
    def identity(self) -> str:
        """The base identity plus the SHA-256 of the parameters file's contents: a checkpoint or compiled
        program made with one meta-learned model is never reused with another written to the same path."""
        ident = json.loads(super().identity)
        ident["params_sha256"] = self.params_sha256
        return json.dumps(ident, sort_keys=True)

    def _key(self):
        return (*super()._key(), self.params_sha256)

    @property
    def capacity(self) -> int:
        return self.num_steps * self.batch_size

    def init(self, key):
        del key
        c, n = self.capacity, self.space.num_tokens
        return TNASState(
            tokens=jnp.zeros((c, n), jnp.int32),
            scores=jnp.full((c,), -jnp.inf, jnp.float32),
            z_arch=jnp.zeros((c, dk.psi_dim(self.cfg, self.space)), jnp.float32),
            count=jnp.int32(0),
            **self.new_books(TNASState, c),
        )

    def _initial(self, key, state):
        if self.design_kind == "top":
            idx = jnp.clip(state.count + jnp.arange(self.batch_size), 0, self.options.num_init - 1)
            return jnp.asarray(self.design)[idx]
        return random_unseen(key, self.space, state.seen, self.batch_size)

    def _psi(self, tokens):
        """psi (meta-learned, frozen) of a batch of strings: f32[M, L]."""
        arch_x = jax.vmap(lambda t: dk.arch_inputs(self.cfg, self.space, t))(tokens)
        return dk.arch_embeddings(self.w, self.cfg, arch_x)

    def _model(self, key, state):
        o, cfg = self.options, self.cfg
        mask = (jnp.arange(self.capacity) < state.count) & jnp.isfinite(state.scores)
        y = jnp.where(mask, state.scores, 0.0)
        data = (state.z_arch, y, mask)
        if self.task_set is not None:  # raw data samples of the target
            set_args = tuple(jnp.asarray(a) for a in self.task_set)
        else:  # the observations so far
            set_args = (jax.vmap(lambda t: self.space.features(t, "onehot"))(state.tokens), y, mask)
        w = dk.finetune(self.w, cfg, *data, *set_args, o.finetune_steps, o.finetune_lr, True, o.finetune_scope)
        best = jnp.max(jnp.where(mask, state.scores, -jnp.inf))
        k_cand, k_acq, k_fill = jax.random.split(key, 3)  # k_acq: unused by EI and UCB
        cand, z_cand, ok = self._candidates(k_cand, state)
        mean, std = dk.posterior(w, cfg, *data, z_cand, *set_args, psi_given=True)
        acq = acquisition_scores(o.acquisition, k_acq, mean, std, best, None, o.beta)
        ok &= jnp.isfinite(acq)
        # ties (EI underflows to 0 far from the data) go to the higher mean, then to the lower index
        _, top = jax.lax.top_k(jnp.where(ok, acq + 1e-12 * jax.nn.sigmoid(mean - best), -jnp.inf), self.batch_size)
        if self.acq_opt == "exhaustive":  # max_queries <= the space's strings: never short of unqueried ones
            return cand[top]
        return fill_missing(k_fill, self.space, state.seen, cand[top], ok[top])  # too few candidates: random

    def _candidates(self, key, state):
        """(strings int32[M, N], their psi f32[M, L], ok bool[M]): every string of the space, ok where not
        queried yet (exhaustive acquisition), or mutation and random candidates
        (``nas.searchers.acquisition_candidates``)."""
        if self.acq_opt == "exhaustive":
            ok = ~seen_contains(state.seen, jnp.asarray(self.all_ids))
            return jnp.asarray(self.all_tokens), jnp.asarray(self.all_z), ok
        o = self.options
        cand, ok = acquisition_candidates(
            key, self.space, state.tokens, state.scores, state.count, state.seen, acq_opt=self.acq_opt,
            num_candidates=o.num_candidates, patience=o.patience, max_edits=o.max_edits, num_random=o.num_random,
        )  # fmt: skip
        return cand, self._psi(cand), ok

    def ask(self, key, state):
        k_init, k_model = jax.random.split(key)
        tokens = jax.lax.cond(
            state.count < self.options.num_init,
            lambda: self._initial(k_init, state),
            lambda: self._model(k_model, state),
        )
        return tokens, state

    def _tell(self, key, tokens, scores, state):
        del key
        start = state.count
        z = self._psi(tokens)
        new = TNASState(
            tokens=jax.lax.dynamic_update_slice(state.tokens, tokens.astype(jnp.int32), (start, 0)),
            scores=jax.lax.dynamic_update_slice(state.scores, scores.astype(jnp.float32), (start,)),
            z_arch=jax.lax.dynamic_update_slice(state.z_arch, z.astype(jnp.float32), (start, 0)),
            count=start + tokens.shape[0],
            seen=state.seen,  # the base adds the told ids (Searcher.record_told)
        )
        return new, {}
