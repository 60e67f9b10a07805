"""NAS-Bench-101 (Ying et al., 2019): a 7-vertex cell, <= 9 edges, 3 operations.

Tokens (N = 26, D = 3): the 21 entries of the strictly upper-triangular 7x7
adjacency matrix in row-major order ``(0,1), (0,2), ..., (0,6), (1,2), ...,
(5,6)`` (values 0/1), then the ops of interior vertices 1..5 (values 0..2 =
``conv3x3-bn-relu, conv1x1-bn-relu, maxpool3x3``). Vertex 0 is the input,
vertex 6 the output.

Validity is the official one (``api.NASBench.is_valid`` after
``ModelSpec._prune``): delete vertices that are not on an input-to-output
path; the input must reach the output and the pruned cell has at most 9 edges.
A raw string may thus hold more than 9 edges if the extra ones dangle.

Canonical index, jittable: prune (dangling vertices lose their
edges and get op code 3 = "absent"), then take the minimum, over the 120
relabellings of the 5 interior vertices that keep the matrix upper-triangular,
of the 31-bit code ``edge bits (21, first edge most significant) << 10 | op
codes (5 x 2 bits)``. Isomorphic cells share the set of such relabellings, so
they get one code; distinct codes are distinct labelled graphs. Each
relabelling's edge code is a linear function of the edge bits (and its op code
of the op one-hots), so all 120 codes come from two small matmuls per cell
(exact in f32: valid edge codes are integers below 2^21; a relabelling that
breaks upper-triangularity carries a 2^22 penalty that rounding cannot bring
below 2^21), followed by a lexicographic min (edge code, then op code).
``decode_code`` inverts the code to the canonical token string.
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np

from spaces import nb101_encodings as enc
from spaces.base import Space, onehot_features
from spaces.nb101_hash import INPUT, OPS, OUTPUT, spec_hash

NUM_VERTICES = 7
NUM_EDGES = 21
NUM_OPS = 5
MAX_EDGES = 9
EDGE_I, EDGE_J = (a.astype(np.int32) for a in np.triu_indices(NUM_VERTICES, 1))  # row-major
ABSENT = 3  # op code of a pruned vertex in the canonical code
CANDIDATES = 8  # proposals per rejection round (74% of uniform strings are valid)
NUM_TOKENS_RANDOM = NUM_EDGES + 2 * NUM_OPS  # random words per proposal

# ---- static tables for the canonical code -----------------------------------------------------
_PERMS = np.array([(0, *p, 6) for p in itertools.permutations(range(1, 6))], np.int32)  # new label of vertex v
_EDGE_POS = -np.ones((NUM_VERTICES, NUM_VERTICES), np.int64)
_EDGE_POS[EDGE_I, EDGE_J] = np.arange(NUM_EDGES)


def _code_tables() -> np.ndarray:
    """f32[21 + 20, 2 * 120]: (edge bits, op one-hots) -> (edge code, op code) of each relabelling."""
    t = np.zeros((NUM_EDGES + 4 * NUM_OPS, 2 * len(_PERMS)), np.float64)
    for k, sig in enumerate(_PERMS):
        for e in range(NUM_EDGES):
            a, b = sig[EDGE_I[e]], sig[EDGE_J[e]]
            t[e, k] = 2.0 ** (NUM_EDGES - 1 - _EDGE_POS[a, b]) if a < b else 2.0**22
        for u in range(NUM_OPS):
            for val in range(4):
                t[NUM_EDGES + 4 * u + val, len(_PERMS) + k] = val * 4.0 ** (NUM_OPS - sig[u + 1])
    return t.astype(np.float32)


_CODE_TABLE = _code_tables()


def adjacency(tokens: jax.Array) -> jax.Array:
    """int32[7, 7] upper-triangular adjacency of one string."""
    adj = jnp.zeros((NUM_VERTICES, NUM_VERTICES), jnp.int32)
    return adj.at[EDGE_I, EDGE_J].set(tokens[:NUM_EDGES].astype(jnp.int32))


def prune(tokens: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(keep bool[7], pruned edge bits int32[21]): vertices on an input-to-output path."""
    # paths have <= 6 edges: 6 rounds of "a vertex is reached if a reached vertex points to it";
    # elementwise ops that XLA fuses (a batched 7x7 matmul is 10x slower on CPU)
    adj = adjacency(tokens) > 0
    fwd = jnp.arange(NUM_VERTICES) == 0
    bwd = jnp.arange(NUM_VERTICES) == NUM_VERTICES - 1
    for _ in range(NUM_VERTICES - 1):
        fwd = fwd | jnp.any(fwd[:, None] & adj, axis=0)
        bwd = bwd | jnp.any(adj & bwd[None, :], axis=1)
    keep = fwd & bwd
    bits = tokens[:NUM_EDGES].astype(jnp.int32) * (keep[EDGE_I] & keep[EDGE_J])
    return keep, bits


def canonical_code(tokens: jax.Array) -> jax.Array:
    """int32 canonical code of the pruned cell (meaningful for valid strings)."""
    keep, bits = prune(tokens)
    ops = jnp.where(keep[1:6], tokens[NUM_EDGES:].astype(jnp.int32), ABSENT)
    hi = jax.lax.Precision.HIGHEST  # exact f32 products on every backend (no TF32/bf16 passes)
    p = len(_PERMS)
    edge_code = jnp.dot(bits.astype(jnp.float32), jnp.asarray(_CODE_TABLE[:NUM_EDGES, :p]), precision=hi)
    onehot = jax.nn.one_hot(ops, 4, dtype=jnp.float32).reshape(-1)
    op_code = jnp.dot(onehot, jnp.asarray(_CODE_TABLE[NUM_EDGES:, p:]), precision=hi)
    # lexicographic min: the smallest edge code (relabellings that break upper-triangularity
    # carry >= 2^22 and never win), then the smallest op code among relabellings reaching it
    e_min = jnp.min(edge_code)
    o_min = jnp.min(jnp.where(edge_code == e_min, op_code, jnp.inf))
    return e_min.astype(jnp.int32) * 1024 + o_min.astype(jnp.int32)


def _uniform_int(bits: jax.Array, n: int) -> jax.Array:
    """Uniform integers in [0, n) from uint32 words (bias < 2^-23)."""
    return (((bits >> 9) * n) >> 23).astype(jnp.int32)


def decode_code(code: int) -> np.ndarray:
    """Canonical code -> its canonical token string (absent ops become conv3x3), host side."""
    code = int(code)
    edges = [(code >> (10 + NUM_EDGES - 1 - e)) & 1 for e in range(NUM_EDGES)]
    ops = [(code >> (2 * (NUM_OPS - 1 - u))) & 3 for u in range(NUM_OPS)]
    return np.asarray(edges + [o if o < ABSENT else 0 for o in ops], np.int32)


class NB101Space(Space):
    """The NAS-Bench-101 cell space; see the module docstring for the encoding."""

    name = "nb101"
    cardinalities = (2,) * NUM_EDGES + (3,) * NUM_OPS
    token_names = tuple(f"edge_{i}->{j}" for i, j in zip(EDGE_I, EDGE_J)) + tuple(f"op_{v}" for v in range(1, 6))
    feature_kinds = ("onehot", "adjacency", "path", "trunc_path", "continuous_adjacency")

    def __init__(self, trunc_path_cutoff: int = enc.TRUNC_PATH_DEFAULT):
        # BANANAS' code truncates the path encoding to its first 40 entries (paths of length <= 3)
        self.trunc_path_cutoff = int(trunc_path_cutoff)

    @property
    def num_configurations(self) -> int:
        """The 423,624 distinct cells of the space (Ying et al., 2019): canonical codes of the valid strings."""
        return 423_624

    # -- validity and ids ---------------------------------------------------
    def is_valid(self, tokens: jax.Array) -> jax.Array:
        keep, bits = prune(tokens)
        return self.in_range(tokens) & keep[0] & (jnp.sum(bits) <= MAX_EDGES)

    def string_id(self, tokens: jax.Array) -> jax.Array:
        return jnp.where(self.is_valid(tokens), canonical_code(tokens), -1)

    # -- search moves -------------------------------------------------------
    def _first_accepted(self, key: jax.Array, draw, accept) -> jax.Array:
        """Rejection sampling, ``CANDIDATES`` proposals per round: the first accepted one.

        Taking the first accepted of i.i.d. proposals has the distribution of
        plain one-at-a-time rejection; drawing them in a batch keeps the loop
        short under ``vmap`` (all lanes wait for the slowest) and keeps the
        compiled program small (one ``string_id`` in the loop body).
        """

        def body(carry):
            i, _, _ = carry
            bits = jax.random.bits(jax.random.fold_in(key, i), (CANDIDATES, NUM_TOKENS_RANDOM), jnp.uint32)
            cands = draw(bits)
            ok = accept(cands)
            j = jnp.argmax(ok)
            return i + 1, cands[j], ok[j]

        init = (jnp.int32(0), jnp.zeros(self.num_tokens, jnp.int32), jnp.bool_(False))
        return jax.lax.while_loop(lambda c: ~c[2], body, init)[1]

    def sample(self, key: jax.Array) -> jax.Array:
        """Uniform over valid strings: uniform edge bits and ops, rejected until valid (BANANAS' ``random_spec``)."""

        def draw(bits):
            edges = (bits[:, :NUM_EDGES] >> 31).astype(jnp.int32)
            ops = _uniform_int(bits[:, NUM_EDGES : NUM_EDGES + NUM_OPS], 3)
            return jnp.concatenate([edges, ops], axis=1)

        return self._first_accepted(key, draw, jax.vmap(self.is_valid))

    def mutate(self, key: jax.Array, tokens: jax.Array) -> jax.Array:
        """BANANAS / NAS-Bench-101 mutation (``mutate_spec``, mutation_rate 1).

        Each of the 21 edge bits flips with probability 1/7 (the official
        ``mutation_rate / NUM_VERTICES``: 3 flips in expectation) and each op is
        resampled to a different op with probability 1/5 (``mutation_rate /
        OP_SPOTS``); redrawn from the parent until the child is valid and not
        isomorphic to the parent (BANANAS only asks for validity).
        """
        tokens = tokens.astype(jnp.int32)
        parent_id = self.string_id(tokens)

        def draw(bits):
            u = (bits >> 8).astype(jnp.float32) * 2.0**-24  # uniform [0, 1)
            flip = u[:, :NUM_EDGES] < 1.0 / NUM_VERTICES
            edges = jnp.where(flip, 1 - tokens[:NUM_EDGES], tokens[:NUM_EDGES])
            change = u[:, NUM_EDGES : NUM_EDGES + NUM_OPS] < 1.0 / NUM_OPS
            shift = 1 + (bits[:, NUM_EDGES + NUM_OPS :] & 1).astype(jnp.int32)  # a different op, uniformly
            ops = jnp.where(change, (tokens[NUM_EDGES:] + shift) % 3, tokens[NUM_EDGES:])
            return jnp.concatenate([edges, ops], axis=1)

        def accept(cands):
            ids = jax.vmap(self.string_id)(cands)
            return (ids >= 0) & (ids != parent_id)

        return self._first_accepted(key, draw, accept)

    def neighbors(self, tokens: jax.Array) -> tuple[jax.Array, jax.Array]:
        """31 one-edit strings (21 edge flips, 5 x 2 op changes); mask = valid, new, not repeated."""
        nbrs, _ = super().neighbors(tokens)
        ids = jax.vmap(self.string_id)(nbrs)
        m = ids.shape[0]
        earlier = jnp.tril(jnp.ones((m, m), bool), k=-1)
        first = ~jnp.any((ids[:, None] == ids[None, :]) & earlier, axis=1)
        return nbrs, (ids >= 0) & (ids != self.string_id(tokens)) & first

    def step_mask(self, tokens: jax.Array, assigned: jax.Array, position: jax.Array) -> jax.Array:
        """Allowed values at ``position``: an edge may be 1 only while fewer than 9 assigned edges are 1.

        This keeps the raw edge count <= 9, a sufficient condition for the
        official limit (which counts pruned edges); every architecture keeps a
        representative (its pruned form), so none becomes unreachable.
        """
        on = jnp.sum(jnp.where(assigned[:NUM_EDGES], tokens[:NUM_EDGES] == 1, False))
        edge_mask = jnp.stack([jnp.bool_(True), on < MAX_EDGES, jnp.bool_(False)])
        return jnp.where(position < NUM_EDGES, edge_mask, jnp.ones(3, bool))

    # -- features -------------------------------------------------------------
    def _cutoff(self, kind: str) -> int | None:
        if kind == "trunc_path":
            return self.trunc_path_cutoff
        if kind.startswith("trunc_path:"):
            return int(kind.split(":", 1)[1])
        return None

    def feature_dim(self, kind: str = "onehot") -> int:
        if kind == "onehot":
            return int(sum(self.cardinalities))
        if kind == "adjacency":
            return NUM_EDGES + 3 * NUM_OPS
        if kind == "continuous_adjacency":
            return NUM_EDGES + 3 * NUM_OPS + 1
        if kind == "path":
            return enc.NUM_PATHS
        cut = self._cutoff(kind)
        if cut is not None:
            return cut
        raise self._unknown_kind(kind)

    def features(self, tokens: jax.Array, kind: str = "onehot") -> jax.Array:
        if kind == "onehot":
            return onehot_features(tokens, self.cardinalities)
        keep, bits = prune(tokens)
        ops = tokens[NUM_EDGES:].astype(jnp.int32)
        if kind == "adjacency":
            return enc.adjacency_features(bits, ops, keep)
        if kind == "continuous_adjacency":
            return enc.continuous_adjacency_features(bits, ops, keep)
        if kind == "path":
            return enc.path_features(bits, ops)
        cut = self._cutoff(kind)
        if cut is not None:
            return enc.path_features(bits, ops)[:cut]
        raise self._unknown_kind(kind)

    # -- readable specs (host side) ---------------------------------------------
    def to_spec(self, tokens) -> dict:
        """``{"matrix": 7x7 list, "ops": ["input", ..., "output"]}`` (raw, unpruned)."""
        t = np.asarray(tokens).astype(int)
        m = np.zeros((NUM_VERTICES, NUM_VERTICES), int)
        m[EDGE_I, EDGE_J] = t[:NUM_EDGES]
        return {"matrix": m.tolist(), "ops": [INPUT] + [OPS[o] for o in t[NUM_EDGES:]] + [OUTPUT]}

    def from_spec(self, spec: dict) -> np.ndarray:
        """Official spec (n <= 7 vertices; op names or ints -1/-2/0..2, -3 padding) -> tokens.

        A spec with ``n < 7`` vertices (pruned specs, padded rows) keeps vertices
        ``0..n-2``, moves the output to vertex 6 and leaves the unused interior
        vertices without edges (they prune away).
        """
        names = {-1: INPUT, -2: OUTPUT, 0: OPS[0], 1: OPS[1], 2: OPS[2]}
        ops = [names.get(o, o) if isinstance(o, int | np.integer) else o for o in spec["ops"]]
        if OUTPUT not in ops:
            raise ValueError(f"nb101 spec has no 'output' op: {spec['ops']}")
        n = ops.index(OUTPUT) + 1
        if any(o not in (-3, "-3") for o in ops[n:]):
            raise ValueError(f"nb101 spec: only padding (-3) may follow the output, got {spec['ops']}")
        raw = np.asarray(spec["matrix"])
        if raw.dtype == object or (not np.issubdtype(raw.dtype, np.number) and raw.dtype != bool):
            raise ValueError(f"nb101 spec: matrix must hold numbers 0/1, got dtype {raw.dtype}")
        m = raw.astype(int)
        if not np.array_equal(m, raw):  # astype(int) would truncate 0.5 to an edge-free 0
            raise ValueError("nb101 spec: matrix must be a strictly upper-triangular 0/1 matrix (non-integer entries)")
        if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] < n or n > NUM_VERTICES or n < 2:
            raise ValueError(f"nb101 spec: matrix shape {m.shape} does not fit {n} vertices (max 7)")
        if np.any(m[n:]) or np.any(m[:, n:]) or np.any(np.tril(m)) or not np.all(np.isin(m, (0, 1))):
            raise ValueError("nb101 spec: matrix must be a strictly upper-triangular 0/1 matrix")
        if ops[0] != INPUT or any(o not in OPS for o in ops[1 : n - 1]):
            raise ValueError(f"nb101 spec: ops must be 'input', {list(OPS)}..., 'output'; got {spec['ops']}")
        place = list(range(n - 1)) + [NUM_VERTICES - 1]  # old vertex -> new vertex
        full = np.zeros((NUM_VERTICES, NUM_VERTICES), int)
        full[np.ix_(place, place)] = m[:n, :n]
        op_tok = [0] * NUM_OPS
        for v in range(1, n - 1):
            op_tok[v - 1] = OPS.index(ops[v])
        return np.asarray(list(full[EDGE_I, EDGE_J]) + op_tok, np.int32)

    def official_hash(self, tokens) -> str | None:
        """The official NAS-Bench-101 module hash (md5) of a string, ``None`` if disconnected."""
        spec = self.to_spec(tokens)
        return spec_hash(np.asarray(spec["matrix"]), spec["ops"])


SPACE = NB101Space()
