"""NAS-Bench-101's official module hash and pruning, host side (numpy + hashlib).

Ying et al. (2019), "NAS-Bench-101", Sec. 2.2: a cell is keyed by an MD5
graph-invariance hash of its *pruned* adjacency matrix and vertex labels.
The algorithm (``graph_util.hash_module`` in google-research/nasbench) is a
Weisfeiler-Lehman style refinement, written here from its description:

1. each vertex starts from ``md5(str((out_degree, in_degree, label)))``;
2. ``V`` times, every vertex becomes ``md5(sorted in-neighbour hashes joined +
   "|" + sorted out-neighbour hashes joined + "|" + own hash)``;
3. the fingerprint is ``md5(str(sorted(vertex hashes)))``.

Labels are ``-1`` for the input, ``-2`` for the output and the op's index in
``["conv3x3-bn-relu", "conv1x1-bn-relu", "maxpool3x3"]`` for interior
vertices (the official ``ModelSpec.hash_spec``). Degrees are Python ints, so
``str`` prints e.g. ``(2, 0, -1)``; a float matrix would print ``2.0`` and give
a different hash, which is why matrices are cast to int first.

Pruning (official ``ModelSpec._prune``): vertices that are not both reachable
from the input and able to reach the output are deleted with their edges and
ops; if input and output are not connected the spec is invalid (``None``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

OPS = ("conv3x3-bn-relu", "conv1x1-bn-relu", "maxpool3x3")
INPUT, OUTPUT = "input", "output"
LABEL = {INPUT: -1, OUTPUT: -2, **{op: i for i, op in enumerate(OPS)}}


def _md5(text: str) -> str:
    return hashlib.md5(text.encode("utf-8")).hexdigest()


def hash_module(matrix: np.ndarray, labels: Sequence[int]) -> str:
    """MD5 graph-invariance hash of an (already pruned) labelled DAG."""
    matrix = np.asarray(matrix).astype(np.int64)
    v = matrix.shape[0]
    if matrix.shape != (v, v) or len(labels) != v:
        raise ValueError(f"hash_module: matrix {matrix.shape} and {len(labels)} labels do not match")
    in_deg = matrix.sum(0).tolist()
    out_deg = matrix.sum(1).tolist()
    hashes = [_md5(str((o, i, int(lab)))) for o, i, lab in zip(out_deg, in_deg, labels)]
    ins = [np.flatnonzero(matrix[:, u]) for u in range(v)]
    outs = [np.flatnonzero(matrix[u, :]) for u in range(v)]
    for _ in range(v):
        hashes = [
            _md5(
                "".join(sorted(hashes[w] for w in ins[u]))
                + "|"
                + "".join(sorted(hashes[w] for w in outs[u]))
                + "|"
                + hashes[u]
            )
            for u in range(v)
        ]
    return _md5(str(sorted(hashes)))


def prune(matrix: np.ndarray, ops: Sequence[str]) -> tuple[np.ndarray, list[str]] | None:
    """Official pruning: keep vertices on an input-to-output path; ``None`` if disconnected."""
    matrix = np.asarray(matrix).astype(np.int64)
    v = matrix.shape[0]
    fwd = np.zeros(v, bool)
    fwd[0] = True
    for j in range(1, v):  # upper-triangular: one pass in vertex order suffices
        fwd[j] = bool(np.any(fwd[:j] & (matrix[:j, j] > 0)))
    bwd = np.zeros(v, bool)
    bwd[v - 1] = True
    for i in range(v - 2, -1, -1):
        bwd[i] = bool(np.any(bwd[i + 1 :] & (matrix[i, i + 1 :] > 0)))
    keep = fwd & bwd
    if not (keep[0] and keep[v - 1]):
        return None
    idx = np.flatnonzero(keep)
    return matrix[np.ix_(idx, idx)], [ops[i] for i in idx]


def labels_of(ops: Sequence[str]) -> list[int]:
    """``["input", op..., "output"]`` -> ``[-1, op index..., -2]`` (official labelling)."""
    if ops[0] != INPUT or ops[-1] != OUTPUT:
        raise ValueError(f"ops must start with 'input' and end with 'output', got {list(ops)}")
    bad = [op for op in ops[1:-1] if op not in OPS]
    if bad:
        raise ValueError(f"unknown NAS-Bench-101 ops {bad}; allowed: {list(OPS)}")
    return [-1] + [OPS.index(op) for op in ops[1:-1]] + [-2]


def spec_hash(matrix: np.ndarray, ops: Sequence[str]) -> str | None:
    """The official hash of a spec after pruning; ``None`` when the spec is disconnected."""
    pruned = prune(matrix, ops)
    if pruned is None:
        return None
    m, o = pruned
    return hash_module(m, labels_of(o))
