"""The model and optimizer of ``spaces.benchmarks.mlp_training``: a one-hidden-layer MLP padded to a
fixed width with a unit mask, its activations as one select, and Adam / Nesterov SGD as one optax
transformation chosen per configuration.

Padding: the hidden layer has ``max_width`` units of which the first ``width`` are real; padded units
output 0 and their weights are multiplied by 0 in the forward pass, so they get zero gradients and no
penalty, and the network computes exactly the narrower network's function (up to float summation
order). Initialization is scikit-learn's ``MLPRegressor``'s (Glorot uniform,
``bound = sqrt(6 / (fan_in + fan_out))``, 2 instead of 6 for logistic, biases too) with the
configuration's own width, drawn per unit from ``fold_in(key, unit)`` so that a unit's initial
weights do not depend on the padding.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax
from flax import linen as nn

ACTIVATIONS = ("identity", "logistic", "tanh", "relu")
SOLVERS = ("sgd", "adam")


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


def solver() -> optax.GradientTransformationExtraArgs:
    """Adam or SGD with Nesterov momentum, chosen per configuration by ``hp["solver"]``, as one optax transformation
    with one state (count, first moment, second moment): an ``optax.adam`` step
    (``b1 = beta_1, b2 = 0.999, eps = 1e-8``, bias-corrected) or an ``optax.sgd(momentum, nesterov=True)`` step
    (trace ``t = g + momentum t``, update ``g + momentum t``), times ``-learning_rate_init``; the same numbers as
    stepping both optax optimizers and selecting, at half the state and work. ``update`` takes ``hp`` (one
    configuration's values) as an extra argument so that it can be vmapped."""
    b2, eps = 0.999, 1e-8

    def init(params):
        zeros = jax.tree.map(jnp.zeros_like, params)
        return (jnp.zeros((), jnp.int32), zeros, zeros)

    def update(g, state, params=None, *, hp):
        del params
        count, mu, nu = state
        is_adam = hp["solver"] == SOLVERS.index("adam")
        decay = jnp.where(is_adam, hp["beta_1"], hp["momentum"])
        scale = jnp.where(is_adam, 1.0 - hp["beta_1"], 1.0)
        count = optax.safe_int32_increment(count)
        mu = jax.tree.map(lambda m, x: decay * m + scale * x, mu, g)
        nu = jax.tree.map(lambda v, x: b2 * v + (1.0 - b2) * x * x, nu, g)
        c1 = 1.0 - hp["beta_1"] ** count.astype(jnp.float32)
        c2 = 1.0 - b2 ** count.astype(jnp.float32)
        lr = hp["learning_rate_init"]

        def direction(m, v, x):
            return jnp.where(is_adam, (m / c1) / (jnp.sqrt(v / c2) + eps), x + decay * m)

        return jax.tree.map(lambda m, v, x: -lr * direction(m, v, x), mu, nu, g), (count, mu, nu)

    return optax.GradientTransformationExtraArgs(init, update)
