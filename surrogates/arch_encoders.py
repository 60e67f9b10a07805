"""Architecture encoders psi for the deep kernel of TNAS (Shala, Elsken, Hutter & Grabocka, 2023, Section 3.1
and Appendix B): a bidirectional DAG encoder for cell spaces and an MLP for flat spaces.

**DAG encoder** (``DAGEncoder``): the D-VAE encoder of Zhang, Jiang, Cui, Garnett & Chen (2019), Section 3.2,
in its bidirectional form, which TNAS uses ("one GRU cell to traverse the topological order of the DAG in
the direction from the input to the output, and another GRU cell to pass through the DAG in the backward
direction ... then put through a fully-connected neural network layer"). Nodes are visited one at a time
in topological order (asynchronous message passing, not the synchronous rounds of a GCN/GIN):

    m_v = sum_{u -> v} sigmoid(W_g h_u) * (W_m h_u)            (D-VAE's gated sum, eq. 3)
    h_v = GRU(x_v, m_v)                                        (x_v: the node's one-hot type)

and the same with a second GRU over the reversed DAG. The encoding is
``Dense([h_fwd(output node), h_bwd(input node)])``. This variant is implemented (rather than a GIN/GCN)
because it is the paper's encoder and because a node's state is a function of everything computed
before it, which is what an architecture computes; the sum aggregation makes the encoding independent
of how the nodes of the DAG are numbered (any topological numbering gives the same encoding: tested).

Nodes must be numbered in a topological order with the single input first and the single output last.
NAS-Bench-201 is given as the usual operation-on-node DAG (D-VAE, MetaD2A): 8 nodes = input, one node per
cell edge carrying that edge's operation (``none`` included), output; op node ``(j <- i)`` reads the op
nodes that write cell node ``i`` (or the input) and feeds those reading cell node ``j`` (or the output).
The DAG is fixed; only the node types depend on the string (``nb201_node_types``, jittable). It is built
and checked (acyclic, one source, one sink, topological numbering) with networkx on the host.

NAS-Bench-Graph cells (Qin et al., 2022) are op-on-node DAGs of their own: 6 nodes = input, the 4 computing
nodes carrying their GNN op (``skip`` included), output; computing node ``i`` reads node ``link[i]`` (0 =
the cell input) and the output reads every computing node that no other node reads (the package's leaves).
The DAG depends on the string's link structure, one of 9 (``nasbench_graph_adjacencies``, built and checked
with networkx): the encoder's input is the link index followed by the node types, and the encoder looks the
adjacency up per string.

NAS-Bench-101 cells (Ying et al., 2019) are op-on-node DAGs already: 7 vertices = input, 5 interior vertices
carrying conv3x3 / conv1x1 / maxpool3x3, output, numbered in a topological order (upper-triangular
adjacency). The encoder reads the PRUNED cell (``spaces.nb101.prune``: vertices off every input-output path
lose their edges and take the type "absent"), so strings that differ only in dangling parts get one
encoding; its input is the 21 pruned edge bits followed by the 7 node types (``nb101_inputs``).

**MLP encoder** (``MLPEncoder``): for flat hyperparameter spaces, an MLP on the one-hot encoding.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from spaces import nb101
from spaces.nasbench_graph import LINKS as NBGRAPH_LINKS
from spaces.nasbench_graph import OPS as NBGRAPH_OPS
from spaces.nb201 import EDGES as NB201_EDGES
from spaces.nb201 import OPS as NB201_OPS

if TYPE_CHECKING:
    import networkx as nx

DAG_INPUT, DAG_OUTPUT = 0, 1  # node type ids of every cell family; op k has type 2 + k
NB201_NUM_TYPES = 2 + len(NB201_OPS)
NBGRAPH_NUM_TYPES = 2 + len(NBGRAPH_OPS)  # the 9 GNN ops (proteins' 5 are among them)
NB101_NUM_TYPES = 2 + nb101.ABSENT + 1  # the 3 ops and "absent" (a pruned interior vertex)


def nb201_op_graph() -> nx.DiGraph:
    """The operation-on-node DAG of an NB201 cell: node 0 = input, 1..6 = the 6 cell edges, 7 = output."""
    import networkx as nx  # imported where a graph is built: importing the searchers stays quick

    g = nx.DiGraph()
    n_edges = len(NB201_EDGES)
    out = n_edges + 1
    g.add_nodes_from(range(n_edges + 2))
    for k, (to, frm) in enumerate(NB201_EDGES, start=1):
        if frm == 0:
            g.add_edge(0, k)  # reads the cell input
        for k2, (to2, _) in enumerate(NB201_EDGES, start=1):
            if to2 == frm:
                g.add_edge(k2, k)  # reads cell node `frm`, written by op node k2
        if to == 3:
            g.add_edge(k, out)  # writes the cell output
    return g


def check_topological_dag(g: nx.DiGraph) -> np.ndarray:
    """int32[V, V] adjacency of ``g`` after checking what ``DAGEncoder`` assumes; ValueError otherwise."""
    import networkx as nx

    v = g.number_of_nodes()
    if sorted(g.nodes) != list(range(v)):
        raise ValueError(f"DAG nodes must be 0..{v - 1}, got {sorted(g.nodes)}")
    if not nx.is_directed_acyclic_graph(g):
        raise ValueError("the architecture graph has a cycle; the DAG encoder needs a DAG")
    sources = [n for n in g if g.in_degree(n) == 0]
    sinks = [n for n in g if g.out_degree(n) == 0]
    if sources != [0] or sinks != [v - 1]:
        raise ValueError(f"the DAG needs one input (node 0) and one output (node {v - 1}); got {sources}, {sinks}")
    if any(u >= w for u, w in g.edges):
        raise ValueError("DAG nodes must be numbered in a topological order (every edge u -> w with u < w)")
    return nx.to_numpy_array(g, nodelist=range(v), dtype=np.int32)


@functools.lru_cache(maxsize=1)
def nb201_adjacency() -> tuple[tuple[int, ...], ...]:
    """The NB201 op DAG's adjacency as a hashable tuple (a static attribute of ``DAGEncoder``)."""
    return tuple(tuple(int(a) for a in row) for row in check_topological_dag(nb201_op_graph()))


def _with_ends(ops: jax.Array) -> jax.Array:
    """int32[V]: input, the op nodes (type ``2 + op``), output."""
    end = functools.partial(jnp.array, dtype=jnp.int32)
    return jnp.concatenate([end([DAG_INPUT]), 2 + ops.astype(jnp.int32), end([DAG_OUTPUT])])


def nb201_node_types(tokens: jax.Array) -> jax.Array:
    """int32[8]: input, the 6 edge ops (type ``2 + op``), output. One string; callers vmap."""
    return _with_ends(tokens)


def nasbench_graph_op_graph(link: tuple[int, ...]) -> nx.DiGraph:
    """The op-on-node DAG of a NAS-Bench-Graph cell with link structure ``link`` (module docstring):
    node 0 = input, 1..4 = the computing nodes, 5 = output."""
    import networkx as nx

    n = len(link)
    g = nx.DiGraph()
    g.add_nodes_from(range(n + 2))
    g.add_edges_from((src, i) for i, src in enumerate(link, start=1))  # src 0 is the input, j computing node j
    g.add_edges_from((i, n + 1) for i in range(1, n + 1) if i not in link)  # leaves feed the output
    return g


@functools.lru_cache(maxsize=1)
def nasbench_graph_adjacencies() -> tuple[tuple[tuple[int, ...], ...], ...]:
    """The 9 link structures' DAG adjacencies (checked), indexed like ``spaces.nasbench_graph.LINKS``."""
    return tuple(
        tuple(tuple(int(a) for a in row) for row in check_topological_dag(nasbench_graph_op_graph(link)))
        for link in NBGRAPH_LINKS
    )


def nasbench_graph_inputs(tokens: jax.Array, op_names: tuple[str, ...]) -> jax.Array:
    """int32[7]: the link index, then input, the 4 nodes' ops as types over ``NBGRAPH_OPS``, output. Pass a
    canonical string (``NBGraphSpace`` maps a string to its row's): equal networks get equal inputs."""
    global_op = jnp.asarray([NBGRAPH_OPS.index(o) for o in op_names], jnp.int32)
    return jnp.concatenate([tokens[:1].astype(jnp.int32), _with_ends(global_op[tokens[1:]])])


def nb101_inputs(tokens: jax.Array) -> jax.Array:
    """int32[21 + 7]: the pruned cell's edge bits (``spaces.nb101`` order), then input, the 5 interior
    vertices' types (``2 + op``, ``2 + ABSENT`` when pruned), output. One string; callers vmap."""
    keep, bits = nb101.prune(tokens)
    ops = jnp.where(keep[1:6], tokens[nb101.NUM_EDGES :].astype(jnp.int32), nb101.ABSENT)
    return jnp.concatenate([bits, _with_ends(ops)])


def nb101_split(arch_x: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(node types int32[M, 7], adjacency f32[M, 7, 7]) of a batch of ``nb101_inputs``."""
    adjacency = jax.vmap(nb101.adjacency)(arch_x)  # reads the 21 leading edge bits
    return arch_x[:, nb101.NUM_EDGES :], adjacency.astype(jnp.float32)


class _GatedSumGRU(nn.Module):
    """One direction of the D-VAE encoder over nodes in index order (a topological order of ``adjacency``)."""

    hidden: int

    @nn.compact
    def __call__(self, x: jax.Array, adjacency: jax.Array) -> jax.Array:
        """x f32[M, V, T] node inputs, adjacency f32[M, V, V] (u -> v) -> hidden states f32[M, V, H]."""
        m, v = x.shape[0], x.shape[1]
        gate, msg = nn.Dense(self.hidden, name="gate"), nn.Dense(self.hidden, use_bias=False, name="message")
        cell = nn.GRUCell(features=self.hidden, name="gru")
        states, gated = [], []  # gated[u] = sigmoid(W_g h_u) * W_m h_u, computed once per node
        for node in range(v):  # V is small and static: unrolled, each node sees all finished predecessors
            if states:
                weight = adjacency[:, :node, node, None]
                agg = jnp.sum(weight * jnp.stack(gated, axis=1), axis=1)
            else:
                agg = jnp.zeros((m, self.hidden), x.dtype)
            h, _ = cell(agg, x[:, node])
            states.append(h)
            gated.append(jax.nn.sigmoid(gate(h)) * msg(h))
        return jnp.stack(states, axis=1)


class DAGEncoder(nn.Module):
    """Bidirectional D-VAE encoder (module docstring): node types int32[M, V] -> f32[M, out_dim].

    ``adjacency`` (static, V x V, topological numbering) is the DAG of every string (NB201's op DAG);
    ``call(types, adjacency=a)`` with f32[V, V] (one DAG for the batch, e.g. relabelled) or f32[M, V, V]
    (one per string: NAS-Bench-Graph's link structures, NAS-Bench-101's cells) overrides it.
    """

    adjacency: tuple[tuple[int, ...], ...] | None
    num_types: int
    hidden: int = 32
    out_dim: int = 16

    @nn.compact
    def __call__(self, node_types: jax.Array, adjacency: jax.Array | None = None) -> jax.Array:
        if adjacency is None and self.adjacency is None:
            raise ValueError("DAGEncoder without a fixed adjacency needs the adjacency of every call")
        adj = jnp.asarray(self.adjacency if adjacency is None else adjacency, jnp.float32)
        m, v = node_types.shape
        adj = jnp.broadcast_to(adj, (m, v, v))
        x = jax.nn.one_hot(node_types, self.num_types)
        fwd = _GatedSumGRU(self.hidden, name="forward")(x, adj)
        rev = jnp.arange(v - 1, -1, -1)  # reversed DAG: reversed numbering is a topological order of adj^T
        bwd = _GatedSumGRU(self.hidden, name="backward")(x[:, rev], jnp.swapaxes(adj[:, rev][:, :, rev], 1, 2))
        both = jnp.concatenate([fwd[:, v - 1], bwd[:, v - 1]], axis=-1)  # output node fwd, input node bwd
        return nn.Dense(self.out_dim, name="readout")(both)


class MLPEncoder(nn.Module):
    """psi for flat spaces: an MLP on the one-hot encoding f32[M, F] -> f32[M, out_dim]."""

    hidden: int = 32
    out_dim: int = 16

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        x = nn.relu(nn.Dense(self.hidden)(x))
        return nn.Dense(self.out_dim)(x)
