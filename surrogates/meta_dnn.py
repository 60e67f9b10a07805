"""AlphaX's meta-DNN: an MLP that predicts an architecture's accuracy from its encoding (Wang, Zhao, Jinnai,
Tian & Fonseca, 2019, "AlphaX: eXploring Neural Architectures with Deep Neural Networks and Monte Carlo Tree
Search", Section 3, "Meta-DNN assisted MCTS rollouts").

The authors' NASBench-101 meta-DNN (``net_predictor.py``) reads the adjacency matrix and the node list, has
four ReLU layers (512, 2048, 2048, 512) and a sigmoid output, and is refitted with Adam (2e-4), batch 128,
20 epochs, on all evaluated architectures every 100 evaluations. Here: ``num_layers`` ReLU layers of
``width`` units (a flax module) and a linear output on standardized scores (any objective, not only
accuracies in [0, 1]); trained with optax Adam, warm-started, a few mini-batch steps after every
evaluation (``train``), so the network follows the data as it grows within one compiled program.

Pure functions of one search (callers ``vmap`` over seeds); data arrive padded with a mask.
"""

from __future__ import annotations

import dataclasses

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
from flax import struct


class MetaDNN(nn.Module):
    """f32[B, F] -> f32[B]: ``num_layers`` ReLU layers of ``width`` units, linear output."""

    num_layers: int
    width: int

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        for _ in range(self.num_layers):
            x = nn.relu(nn.Dense(self.width)(x))
        return nn.Dense(1)(x)[..., 0]


@dataclasses.dataclass(frozen=True)
class MetaDNNConfig:
    num_layers: int = 4
    width: int = 128
    learning_rate: float = 1e-3
    batch_size: int = 32
    steps: int = 5  # Adam steps after every evaluation

    @property
    def module(self) -> MetaDNN:
        return MetaDNN(self.num_layers, self.width)

    @property
    def optimizer(self) -> optax.GradientTransformation:
        return optax.adam(self.learning_rate)


@struct.dataclass
class MetaDNNState:
    params: dict
    opt_state: optax.OptState
    y_mean: jax.Array  # f32[] the standardization of the targets the params were trained on
    y_scale: jax.Array


def init(key: jax.Array, num_features: int, cfg: MetaDNNConfig) -> MetaDNNState:
    params = cfg.module.init(key, jnp.zeros((1, num_features), jnp.float32))
    return MetaDNNState(params, cfg.optimizer.init(params), jnp.float32(0.0), jnp.float32(1.0))


def predict(state: MetaDNNState, x: jax.Array, cfg: MetaDNNConfig) -> jax.Array:
    """Predicted scores f32[B] (in the objective's units) of the encodings ``x`` f32[B, F]."""
    return cfg.module.apply(state.params, x) * state.y_scale + state.y_mean


def train(key: jax.Array, state: MetaDNNState, x: jax.Array, y: jax.Array, mask: jax.Array, cfg: MetaDNNConfig):
    """``cfg.steps`` Adam steps on the mean squared error of standardized targets, each on ``batch_size``
    rows drawn uniformly (with replacement) from the rows where ``mask`` and ``y`` is finite. Returns the
    new state and the loss of the last batch."""
    ok = mask & jnp.isfinite(y)
    n = jnp.maximum(jnp.sum(ok), 1)
    y_mean = jnp.sum(jnp.where(ok, y, 0.0)) / n
    std = jnp.sqrt(jnp.sum(jnp.where(ok, jnp.square(y - y_mean), 0.0)) / n)
    y_scale = jnp.where(std > 1e-8, std, 1.0)
    target = jnp.where(ok, (y - y_mean) / y_scale, 0.0)
    logits = jnp.where(ok, 0.0, -jnp.inf)
    opt = cfg.optimizer

    def loss_fn(params, rows):
        err = cfg.module.apply(params, x[rows]) - target[rows]
        w = ok[rows].astype(jnp.float32)
        return jnp.sum(w * err * err) / jnp.maximum(jnp.sum(w), 1.0)

    def step(carry, k):
        params, opt_state = carry
        rows = jax.random.categorical(k, logits, shape=(cfg.batch_size,))
        loss, grads = jax.value_and_grad(loss_fn)(params, rows)
        updates, opt_state = opt.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state), loss

    (params, opt_state), losses = jax.lax.scan(step, (state.params, state.opt_state), jax.random.split(key, cfg.steps))
    return MetaDNNState(params, opt_state, y_mean, y_scale), losses[-1]
