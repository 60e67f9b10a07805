"""Raw data samples that describe a task, the set TNAS's data-based dataset encoder reads.

Shala, Elsken, Hutter & Grabocka (2023), Section 3.1: phi encodes a task from samples of its data (there:
images per class). Here the tasks with raw data are the real-training tasks ``mlp/<dataset>`` (objects with
``x_train`` / ``y_train``, standardized, ``spaces.benchmarks.mlp_training``); the tabular suites have none.

A task's *pool* is a fixed random subset of its training rows, padded to ``POOL_ROWS`` rows and to the
model's ``data_columns`` columns with a cell mask; meta-training draws ``data_rows`` rows of it per outer
step (``draw_rows``), meta-test one fixed draw. Only a task's training inputs and targets are read, never
its validation or test split.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

POOL_ROWS = 512  # training rows kept per task (diabetes has 318 fit rows, Boston 364, Naval 8,593)


def has_data(benchmark) -> bool:
    return hasattr(benchmark, "x_train") and hasattr(benchmark, "y_train")


def data_pool(benchmark, num_columns: int, seed: int = 0, num_rows: int = POOL_ROWS):
    """(x f32[P, C], y f32[P], mask bool[P, C]) from ``benchmark``'s training rows (``P = num_rows``,
    ``C = num_columns``); ``ValueError`` naming the fix for a task without raw data or with too many columns."""
    name = getattr(benchmark, "name", type(benchmark).__name__)
    if not has_data(benchmark):
        raise ValueError(
            f"{name} has no raw data samples (a table): the data-based dataset encoder (model.dataset_input="
            "'data') needs real-training tasks such as mlp/<dataset>; use dataset_input='observations'"
        )
    x, y = np.asarray(benchmark.x_train, np.float32), np.asarray(benchmark.y_train, np.float32)
    n, c = x.shape
    if c > num_columns:
        raise ValueError(f"{name} has {c} features; the model reads at most {num_columns}: raise model.data_columns")
    rows = np.random.default_rng(seed).permutation(n)[:num_rows]
    px = np.zeros((num_rows, num_columns), np.float32)
    py = np.zeros((num_rows,), np.float32)
    mask = np.zeros((num_rows, num_columns), bool)
    px[: len(rows), :c], py[: len(rows)], mask[: len(rows), :c] = x[rows], y[rows], True
    return px, py, mask


def draw_rows(key: jax.Array, x: jax.Array, y: jax.Array, mask: jax.Array, num: int):
    """``num`` rows of a pool drawn uniformly without replacement among its real rows (padding rows, still
    masked, only when the pool has fewer than ``num`` real ones): (x f32[num, C], y f32[num], mask[num, C])."""
    real = jnp.any(mask, axis=1)
    order = jnp.argsort(jnp.where(real, jax.random.uniform(key, real.shape), 2.0))[:num]
    return x[order], y[order], mask[order]
