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

**MLP encoder** (``MLPEncoder``): for flat hyperparameter spaces, an MLP on the one-hot encoding.
"""

from __future__ import annotations

import functools

import flax.linen as nn
import jax
import jax.numpy as jnp
import networkx as nx
import numpy as np

from spaces.nb201 import EDGES as NB201_EDGES
from spaces.nb201 import OPS as NB201_OPS

NB201_INPUT, NB201_OUTPUT = 0, 1  # node type ids; op k has type 2 + k
NB201_NUM_TYPES = 2 + len(NB201_OPS)


def nb201_op_graph() -> nx.DiGraph:
    """The operation-on-node DAG of an NB201 cell: node 0 = input, 1..6 = the 6 cell edges, 7 = output."""
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


def nb201_node_types(tokens: jax.Array) -> jax.Array:
    """int32[8]: input, the 6 edge ops (type ``2 + op``), output. One string; callers vmap."""
    ops = 2 + tokens.astype(jnp.int32)
    return jnp.concatenate([jnp.array([NB201_INPUT], jnp.int32), ops, jnp.array([NB201_OUTPUT], jnp.int32)])


class _GatedSumGRU(nn.Module):
    """One direction of the D-VAE encoder over nodes in index order (a topological order of ``adjacency``)."""

    hidden: int

    @nn.compact
    def __call__(self, x: jax.Array, adjacency: jax.Array) -> jax.Array:
        """x f32[M, V, T] node inputs, adjacency f32[V, V] (u -> v) -> hidden states f32[M, V, H]."""
        m, v = x.shape[0], x.shape[1]
        gate, msg = nn.Dense(self.hidden, name="gate"), nn.Dense(self.hidden, use_bias=False, name="message")
        cell = nn.GRUCell(features=self.hidden, name="gru")
        states, gated = [], []  # gated[u] = sigmoid(W_g h_u) * W_m h_u, computed once per node
        for node in range(v):  # V is small and static: unrolled, each node sees all finished predecessors
            if states:
                weight = adjacency[:node, node][None, :, None]
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
    ``call(types, adjacency=a)`` with a per-batch f32[V, V] overrides it (a relabelled DAG).
    """

    adjacency: tuple[tuple[int, ...], ...]
    num_types: int
    hidden: int = 32
    out_dim: int = 16

    @nn.compact
    def __call__(self, node_types: jax.Array, adjacency: jax.Array | None = None) -> jax.Array:
        adj = jnp.asarray(self.adjacency, jnp.float32) if adjacency is None else adjacency.astype(jnp.float32)
        x = jax.nn.one_hot(node_types, self.num_types)
        fwd = _GatedSumGRU(self.hidden, name="forward")(x, adj)
        v = x.shape[1]
        rev = jnp.arange(v - 1, -1, -1)  # reversed DAG: reversed numbering is a topological order of adj^T
        bwd = _GatedSumGRU(self.hidden, name="backward")(x[:, rev], adj[rev][:, rev].T)
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
