"""Meta-learning the deep-kernel GP with REPTILE (Shala, Elsken, Hutter & Grabocka, 2023, Section 3.2,
Algorithm 1; Nichol, Achiam & Schulman, 2018).

One outer step (``meta_step``):

    sample a source task q and a mini-batch of k of its evaluations (x, y), and a set D_q describing q
    L(w) = -log p(y | x, D_q; w)                          (eq. 3, ``deep_kernel.neg_log_marginal_likelihood``)
    w' <- w;  v times: w' <- w' - eta_inner * grad L(w')  (SGD as in the paper, or Adam)
    w  <- w - eta_REP (w - w')

``reptile_update`` is the generic step (any loss, any pytree; tested against a hand computation);
``meta_step`` applies it to the deep kernel; ``meta_steps`` scans ``n`` outer steps (one compiled chunk).
Step ``t`` draws its randomness from ``fold_in(key, t)``, so a run split into chunks (checkpoints,
resumption) computes exactly what an uninterrupted run computes.

How a mini-batch is drawn (``task_sampling``): ``"task"`` (the default) draws one source task per outer
step and k of its evaluations; ``"pair"`` draws k (task, architecture) pairs uniformly at random, each
row with its own task's set (the paper's line 3, "We sample datasets and architectures uniformly at
random from the meta-training dataset"; its meta-dataset holds one architecture per dataset, so its
batches mix datasets). Targets are standardized over the whole mini-batch in both modes.

The set D_q given to the dataset encoder is a random subset of task q's table of random size in
``[set_min, set_max]`` (padded with a mask), drawn independently of the mini-batch: at meta-test the
encoder sees the target's queries so far, a set of that kind (``surrogates.set_encoder`` explains this
deviation from the paper's data samples); with raw data (``dataset_input="data"``) it is a random draw of
rows of the task's data pool. The meta-data hold the SOURCE tasks only; which tasks those
are is decided by the caller (``scripts.meta_train`` refuses the target).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax
import jax.numpy as jnp
import optax
from flax import struct

from surrogates.deep_kernel import (
    DeepKernelConfig,
    neg_log_marginal_likelihood,
    neg_log_marginal_likelihood_pairs,
    uses_data,
)
from surrogates.task_data import draw_rows

INNER_OPTIMIZERS = ("sgd", "adam")
TASK_SAMPLING = ("task", "pair")


@dataclasses.dataclass(frozen=True)
class ReptileConfig:
    """Algorithm 1's settings.

    Attributes:
      inner_steps: v, inner gradient steps per outer step.
      batch_size: k, evaluations per mini-batch (one task).
      inner_lr, inner_optimizer: eta_SGD and the inner optimizer (``"sgd"`` as the paper, or ``"adam"``).
      outer_lr: eta_REP.
      set_min, set_max: size range of the set given to the dataset encoder.
      task_sampling: ``"task"`` (one task per mini-batch) or ``"pair"`` (the paper's (task, architecture) pairs).
    """

    inner_steps: int = 5
    batch_size: int = 64
    inner_lr: float = 1e-3
    inner_optimizer: str = "adam"
    outer_lr: float = 0.1
    set_min: int = 5
    set_max: int = 64
    task_sampling: str = "task"

    def __post_init__(self):
        for name in ("inner_steps", "batch_size", "set_min", "set_max"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{name} must be an integer, got {value!r}")
        # a negative or zero step size ascends or stands still; eta_REP above 1 overshoots the adapted weights
        if not (isinstance(self.inner_lr, (int, float)) and 0.0 < self.inner_lr < float("inf")):
            raise ValueError(f"inner_lr must be a finite number > 0, got {self.inner_lr!r}")
        if not (isinstance(self.outer_lr, (int, float)) and 0.0 < self.outer_lr <= 1.0):
            raise ValueError(f"outer_lr (eta_REP) must be in (0, 1], got {self.outer_lr!r}")
        if self.inner_optimizer not in INNER_OPTIMIZERS:
            raise ValueError(f"inner_optimizer must be one of {list(INNER_OPTIMIZERS)}, got {self.inner_optimizer!r}")
        if self.task_sampling not in TASK_SAMPLING:
            raise ValueError(f"task_sampling must be one of {list(TASK_SAMPLING)}, got {self.task_sampling!r}")
        if not 1 <= self.set_min <= self.set_max:
            raise ValueError(f"need 1 <= set_min <= set_max, got {self.set_min}, {self.set_max}")
        if self.inner_steps < 1 or self.batch_size < 2:
            raise ValueError(f"need inner_steps >= 1 and batch_size >= 2, got {self.inner_steps}, {self.batch_size}")


@struct.dataclass
class MetaData:
    """Source tasks of one search space: every string's encoder inputs and each task's scores; with the
    data-based dataset encoder each task's pool of raw data samples (``surrogates.task_data``)."""

    arch_x: jax.Array  # [R, ...] psi's input per string
    features: jax.Array  # f32[R, F] one-hot encoding per string (set elements)
    scores: jax.Array  # f32[Q, R] validation score of each string on each source task
    data_x: jax.Array | None = None  # f32[Q, P, C] data pools (dataset_input="data" only)
    data_y: jax.Array | None = None  # f32[Q, P]
    data_mask: jax.Array | None = None  # bool[Q, P, C]


def inner_optimizer(cfg: ReptileConfig) -> optax.GradientTransformation:
    return optax.sgd(cfg.inner_lr) if cfg.inner_optimizer == "sgd" else optax.adam(cfg.inner_lr)


def reptile_update(w, loss: Callable, opt: optax.GradientTransformation, inner_steps: int, outer_lr: float):
    """One REPTILE step on any pytree ``w``: returns (``w - outer_lr (w - w')``, losses f32[inner_steps]).

    ``w'`` is ``inner_steps`` steps of ``opt`` on ``loss`` from ``w`` with a fresh optimizer state.
    Non-finite gradients (a failed Cholesky) are zeroed.
    """
    value_grad = jax.value_and_grad(loss)

    def step(carry, _):
        p, st = carry
        val, g = value_grad(p)
        g = jax.tree.map(lambda a: jnp.where(jnp.isfinite(a), a, 0.0), g)
        upd, st = opt.update(g, st, p)
        return (optax.apply_updates(p, upd), st), val

    (w_inner, _), losses = jax.lax.scan(step, (w, opt.init(w)), None, length=inner_steps)
    new = jax.tree.map(lambda a, b: a - outer_lr * (a - b), w, w_inner)
    return new, losses


def task_set(k_set, k_size, data: MetaData, q: jax.Array, cfg: ReptileConfig, dk_cfg: DeepKernelConfig):
    """The set describing task ``q``: a random subset of its table of random size in ``[set_min, set_max]``,
    or with raw data ``dk_cfg.data_rows`` rows of its pool."""
    if uses_data(dk_cfg):
        return draw_rows(k_set, data.data_x[q], data.data_y[q], data.data_mask[q], dk_cfg.data_rows)
    set_rows = jax.random.choice(k_set, data.scores.shape[1], (cfg.set_max,), replace=False)
    size = jax.random.randint(k_size, (), cfg.set_min, cfg.set_max + 1)
    return data.features[set_rows], data.scores[q, set_rows], jnp.arange(cfg.set_max) < size


def sample_task_batch(key: jax.Array, data: MetaData, cfg: ReptileConfig, dk_cfg: DeepKernelConfig):
    """A source task, k of its evaluations and its set: the arguments of eq. 3 for one task."""
    k_task, k_rows, k_set, k_size = jax.random.split(key, 4)
    num_tasks, num_rows = data.scores.shape
    q = jax.random.randint(k_task, (), 0, num_tasks)
    rows = jax.random.choice(k_rows, num_rows, (cfg.batch_size,), replace=False)
    y = data.scores[q, rows]
    return q, (data.arch_x[rows], y, jnp.ones_like(y, bool)) + task_set(k_set, k_size, data, q, cfg, dk_cfg)


def sample_pair_batch(key: jax.Array, data: MetaData, cfg: ReptileConfig, dk_cfg: DeepKernelConfig):
    """k (task, architecture) pairs drawn uniformly (distinct pairs) and every task's set stacked: the
    arguments of ``neg_log_marginal_likelihood_pairs``."""
    k_pairs, k_set, k_size = jax.random.split(key, 3)
    num_tasks, num_rows = data.scores.shape
    pair = jax.random.choice(k_pairs, num_tasks * num_rows, (cfg.batch_size,), replace=False)
    q, rows = pair // num_rows, pair % num_rows
    y = data.scores[q, rows]
    fold = jax.random.fold_in
    sets = [task_set(fold(k_set, t), fold(k_size, t), data, jnp.int32(t), cfg, dk_cfg) for t in range(num_tasks)]
    stacked = tuple(jnp.stack(a) for a in zip(*sets))
    return q, (data.arch_x[rows], y, jnp.ones_like(y, bool), q) + stacked


def meta_step(key: jax.Array, w, data: MetaData, cfg: ReptileConfig, dk_cfg: DeepKernelConfig):
    """Algorithm 1, lines 3-8: returns (new w, mean inner loss, task index; the first pair's with "pair")."""
    if cfg.task_sampling == "pair":
        q, batch = sample_pair_batch(key, data, cfg, dk_cfg)
        nll, q = neg_log_marginal_likelihood_pairs, q[0]
    else:
        q, batch = sample_task_batch(key, data, cfg, dk_cfg)
        nll = neg_log_marginal_likelihood

    def loss(p):
        return nll(p, dk_cfg, *batch) / cfg.batch_size

    new, losses = reptile_update(w, loss, inner_optimizer(cfg), cfg.inner_steps, cfg.outer_lr)
    return new, jnp.mean(losses), q


def meta_steps(key: jax.Array, w, data: MetaData, start: jax.Array, num: int, cfg, dk_cfg):
    """Outer steps ``start .. start + num - 1`` (step t uses ``fold_in(key, t)``).

    Returns (w, mean inner losses f32[num], task indices int32[num]).
    """

    def body(p, t):
        p, loss, q = meta_step(jax.random.fold_in(key, t), p, data, cfg, dk_cfg)
        return p, (loss, q)

    w, (losses, tasks) = jax.lax.scan(body, w, start + jnp.arange(num))
    return w, losses, tasks
