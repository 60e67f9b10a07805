"""Feature encodings of NAS-Bench-101 cells for surrogates (BANANAS, White et al. 2021).

All functions take one pruned cell (edge bits int32[21] of the pruned
upper-triangular matrix in row-major order, op tokens int32[5]) and are
jittable; callers vmap.

- ``adjacency``: the 21 edge bits + a one-hot of each interior op (15), the
  "adjacency matrix and one-hot list of operations" encoding of BANANAS' Sec. 4
  ablation. Pruned vertices get an all-zero op one-hot.
- ``path``: BANANAS' path encoding (Sec. 4): one binary feature per possible
  input-to-output path, indexed by its op sequence. A path with ops
  ``o_0, ..., o_{L-1}`` (o_0 next to the input) has index
  ``sum_i 3^i (o_i + 1)`` (BANANAS' ``get_path_indices``), so the
  ``sum_{k=0..5} 3^k = 364`` indices are grouped by length: 0 is the direct
  input->output edge, 1..3 length one, 4..12 length two, ...
- ``trunc_path``: the first ``K`` path features, i.e. the shortest paths
  (BANANAS' code uses ``cutoff=40`` = all paths of length <= 3 by default).
- ``continuous_adjacency``: NAS-Bench-101's continuous encoding (Ying et al. 2019), BANANAS'
  ablation (2): a real value in [0, 1] per possible edge and the number of edges ``K``, the cell
  holding the ``K`` edges of largest value (``continuous_adjacency_cell``); ops stay categorical.
  A discrete cell's point: its 21 pruned edge bits, the op one-hots of ``adjacency``, then ``K``.

Paths are enumerated by dynamic programming over vertices in topological
order: ``reach[v]`` is the set (bool[364]) of path indices from the input to
``v``; extending a path of index ``j`` and length ``L`` by op ``o`` gives
``j + 3^L (o + 1)``, which is a fixed gather over precomputed parents.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

NUM_PATHS = sum(3**k for k in range(6))  # 364
TRUNC_PATH_DEFAULT = 40


def _path_tables() -> tuple[np.ndarray, np.ndarray]:
    """parent[j] (index without its last op) and last_op[j] (-1 for the empty path)."""
    parent = np.zeros(NUM_PATHS, np.int32)
    last = -np.ones(NUM_PATHS, np.int32)
    for j in range(1, NUM_PATHS):
        digits, x = [], j
        while x > 0:  # bijective base 3, digits 1..3, least significant first
            d = x % 3 or 3
            digits.append(d)
            x = (x - d) // 3
        last[j] = digits[-1] - 1
        parent[j] = j - digits[-1] * 3 ** (len(digits) - 1)
    return parent, last


_PARENT, _LAST_OP = _path_tables()
_EDGE_I, _EDGE_J = (a.astype(np.int32) for a in np.triu_indices(7, 1))


def adjacency_features(bits: jax.Array, ops: jax.Array, keep: jax.Array) -> jax.Array:
    """f32[36]: pruned edge bits and per-vertex op one-hots (zeros for pruned vertices)."""
    onehot = jax.nn.one_hot(ops, 3, dtype=jnp.float32) * keep[1:6, None]
    return jnp.concatenate([bits.astype(jnp.float32), onehot.reshape(-1)])


def continuous_adjacency_features(bits: jax.Array, ops: jax.Array, keep: jax.Array) -> jax.Array:
    """f32[37]: ``adjacency_features`` and the number of edges of the pruned cell."""
    num = jnp.sum(bits).astype(jnp.float32)[None]
    return jnp.concatenate([adjacency_features(bits, ops, keep), num])


def continuous_adjacency_cell(values: jax.Array, num_edges: jax.Array, ops: jax.Array) -> jax.Array:
    """int32[26] tokens of a continuous encoding: edge bits 1 on the ``num_edges`` largest ``values``
    (f32[21], ties to the earlier edge), then the 5 interior ops (int[5])."""
    rank = jnp.argsort(jnp.argsort(-values, stable=True), stable=True)  # 0 = the largest value
    bits = (rank < num_edges).astype(jnp.int32)
    return jnp.concatenate([bits, jnp.asarray(ops, jnp.int32)])


def path_features(bits: jax.Array, ops: jax.Array) -> jax.Array:
    """f32[364]: which input-to-output op sequences the pruned cell contains."""
    adj = jnp.zeros((7, 7), bool).at[_EDGE_I, _EDGE_J].set(bits > 0)
    parent = jnp.asarray(_PARENT)
    last = jnp.asarray(_LAST_OP)
    reach = [jnp.zeros(NUM_PATHS, bool).at[0].set(True)]  # the empty path ends at the input
    for v in range(1, 6):
        into = jnp.any(jnp.stack(reach) & adj[:v, v][:, None], axis=0)  # paths arriving at v
        reach.append(into[parent] & (last == ops[v - 1]))
    out = jnp.any(jnp.stack(reach) & adj[:6, 6][:, None], axis=0)
    return out.astype(jnp.float32)


def path_indices_reference(matrix: np.ndarray, ops: list[int]) -> list[int]:
    """Host reference (explicit path enumeration as BANANAS' ``get_paths``); ops of vertices 1..5."""
    paths = {0: [[]]}
    for j in range(1, 7):
        paths[j] = [p + ([ops[i - 1]] if i > 0 else []) for i in range(j) if matrix[i][j] for p in paths[i]]
    return sorted({sum(3**i * (o + 1) for i, o in enumerate(p)) for p in paths[6]})
