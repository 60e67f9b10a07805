"""NAS-Bench-Graph (Qin et al., NeurIPS 2022 Datasets & Benchmarks): GNN cells.

A cell has 4 computing nodes; node ``i`` reads from an earlier node chosen by
a "link structure" ``link[i]`` (0 = the cell input, j = node j) and applies one
of 9 GNN ops (``gat, gcn, gin, cheb, sage, arma, graph, fc, skip``); the
package's ``architecture.py`` lists the 9 canonical link structures
``[0,0,0,0] .. [0,1,2,3]``. Many (link, ops) pairs are the same network
(isomorphic branches, ``skip`` ops that only pass a tensor on); the package
maps each to one canonical hash with ``Arch.valid_hash`` (regularize ->
move_skip_op -> equalpart_sort -> ``hash_arch``, the link index then the op
indices as base-10 digits). The ``light/<dataset>.bench`` files hold one
entry per canonical hash: 26,206 architectures on cora, citeseer, pubmed, cs,
physics, photo, computers, arxiv; 2,021 on proteins, whose op set is
restricted to ``gcn, sage, arma, fc, skip`` in the package.

Token encoding (ours): ``[link, op_1, op_2, op_3, op_4]`` with ``link`` the
index into the 9 link structures and ``op_i`` an index into the dataset's op
list (9 ops; 5 for proteins), i.e. 9 * 9^4 = 59,049 strings (9 * 5^4 = 5,625
for proteins). ``string_id`` is the table row of the string's canonical hash
(a lookup table over all strings, built once with the package's
``valid_hash`` and cached), ``-1`` for strings whose canonical hash is not in
the table (the 9 all-``skip`` strings; on proteins also strings the package
canonicalizes outside its 2,021 rows). Every row is reached by its canonical
string (the hash's digits), checked when the table is built.

Because several strings share a row, ``sample`` draws a table *row*
uniformly (and returns its canonical string), not a string; ``mutate`` and
``neighbors`` change one token and keep only strings with a row different
from the current one (``neighbors`` also drops repeats of a row); ``features``
("onehot") encodes the row's canonical string, so equal networks get equal
features. ``step_mask`` allows every value (the few strings without a row
score ``-inf``).

Data: one validation and one test performance per architecture (the light
files store one value, no seeds), a fraction in [0, 1]: accuracy, and for
proteins ROC-AUC (OGB's metric for ogbn-proteins; the files name no metric,
and its values, 0.67..0.85, fit ROC-AUC rather than multi-label accuracy),
plus the inference latency (s) and parameter count (M). There is no training
time: ``cost`` is the latency. Ties in validation are real (e.g. two cora rows
share the best value 0.81933); summaries break them by the lower row.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from spaces.base import Space, onehot_features
from spaces.files import MissingPackageError

DATASETS = ("cora", "citeseer", "pubmed", "cs", "physics", "photo", "computers", "arxiv", "proteins")
# the package's architecture.link_list and gnn_list / gnn_list_proteins (tests check they match)
LINKS = ((0, 0, 0, 0), (0, 0, 0, 1), (0, 0, 1, 1), (0, 0, 1, 2), (0, 0, 1, 3), (0, 1, 1, 1), (0, 1, 1, 2), (0, 1, 2, 2))
LINKS = LINKS + ((0, 1, 2, 3),)
OPS = ("gat", "gcn", "gin", "cheb", "sage", "arma", "graph", "fc", "skip")
OPS_PROTEINS = ("gcn", "sage", "arma", "fc", "skip")


def canonical_hash(link: int, ops: tuple[str, ...]) -> int:
    """The package's hash of the network ``(LINKS[link], ops)``."""
    try:
        from nas_bench_graph.architecture import Arch
    except ImportError as e:  # pragma: no cover - a requirement
        raise MissingPackageError(
            "NAS-Bench-Graph needs the 'nas-bench-graph' package: pip install nas-bench-graph"
        ) from e

    return int(Arch(list(LINKS[link]), list(ops)).valid_hash())


class NBGraphSpace(Space):
    """``[link, op_1..op_4]`` strings; ids are table rows (module docstring)."""

    def __init__(self, name: str, op_names: tuple[str, ...], lut: np.ndarray, canon: np.ndarray):
        self.name = name
        self.op_names = tuple(op_names)
        self.cardinalities = (len(LINKS),) + (len(op_names),) * 4
        self.token_names = ("link", "op_1", "op_2", "op_3", "op_4")
        self.lut = np.asarray(lut, np.int32)
        self.canon = np.asarray(canon, np.int32)
        self.num_rows = int(self.canon.shape[0])

    @property
    def num_configurations(self) -> int:
        return self.num_rows  # one string id per table row

    def string_id(self, tokens: jax.Array) -> jax.Array:
        ok = self.in_range(tokens)
        idx = self.mixed_radix(jnp.clip(tokens, 0, jnp.asarray(self.cardinalities) - 1))
        return jnp.where(ok, jnp.asarray(self.lut)[idx], -1)

    def is_valid(self, tokens: jax.Array) -> jax.Array:
        return self.string_id(tokens) >= 0

    def sample(self, key: jax.Array) -> jax.Array:
        """A uniformly drawn table row's canonical string."""
        return jnp.asarray(self.canon)[jax.random.randint(key, (), 0, self.num_rows)]

    def neighbors(self, tokens: jax.Array) -> tuple[jax.Array, jax.Array]:
        """One-token edits; mask: has a row, differs from ``tokens``' row, first edit reaching it."""
        nbrs, _ = super().neighbors(tokens)
        ids = jax.vmap(self.string_id)(nbrs)
        k = ids.shape[0]
        earlier = jnp.tril(jnp.ones((k, k), bool), -1)
        repeat = jnp.any(earlier & (ids[:, None] == ids[None, :]), axis=1)
        return nbrs, (ids >= 0) & (ids != self.string_id(tokens)) & ~repeat

    def mutate(self, key: jax.Array, tokens: jax.Array) -> jax.Array:
        """A uniformly chosen valid one-token edit with another row (a fresh sample if none exists)."""
        k_pick, k_fallback = jax.random.split(key)
        nbrs, ok = self.neighbors(tokens)
        pick = jax.random.categorical(k_pick, jnp.where(ok, 0.0, -jnp.inf))
        return jnp.where(jnp.any(ok), nbrs[pick], self.sample(k_fallback))

    def canonical_string(self, tokens: jax.Array) -> jax.Array:
        """int32[N]: the canonical string of ``tokens``' table row (``tokens`` itself when it has none), so
        equal networks get equal encodings."""
        row = self.string_id(tokens)
        return jnp.where(row >= 0, jnp.asarray(self.canon)[jnp.maximum(row, 0)], tokens)

    def features(self, tokens: jax.Array, kind: str = "onehot") -> jax.Array:
        if kind != "onehot":
            raise self._unknown_kind(kind)
        canon = self.canonical_string(tokens)
        return onehot_features(jnp.clip(canon, 0, jnp.asarray(self.cardinalities) - 1), self.cardinalities)

    def to_spec(self, tokens) -> dict:
        t = np.asarray(tokens)
        return {"link": list(LINKS[int(t[0])]), "ops": [self.op_names[int(o)] for o in t[1:]]}

    def from_spec(self, spec: dict) -> np.ndarray:
        try:
            link = LINKS.index(tuple(int(x) for x in spec["link"]))
            ops = [self.op_names.index(o) for o in spec["ops"]]
        except (KeyError, ValueError, TypeError) as e:
            raise ValueError(
                f"{self.name}: spec needs 'link' in {[list(x) for x in LINKS]} and 4 'ops' from {self.op_names}"
            ) from e
        if len(ops) != 4:
            raise ValueError(f"{self.name}: spec needs 4 ops, got {spec['ops']}")
        return np.asarray([link, *ops], np.int32)
