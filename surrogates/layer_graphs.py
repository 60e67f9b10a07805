"""Token strings as NASBOT layer graphs (``surrogates.otmann.LayerGraph``): which spaces are networks, and how.

NASBOT (Kandasamy et al., 2018, Section 3 and Appendix) describes a network by its layers: a label, a mass
(the amount of computation) and the DAG. Labels, masses and label mismatch penalties follow the paper and
the authors' code: a CNN layer's mass is its multiply-adds per output pixel, ``k^2 c_in c_out`` for a ``k x
k`` convolution and ``k^2 c`` for a pooling layer (the authors' code: ``c_in c_out`` and ``c_in``; here the
kernel area counts too, so a 3x3 convolution weighs 9x a 1x1 one); an MLP layer's is ``c_in c_out`` (the
input layer passes one channel, as in the authors' code); the input, output and decision layers weigh
``zeta = 0.1`` of the processing layers' total (at least ``zeta`` of a ``1x1``/one-unit layer, so an empty
network has mass). Mismatch ``M``: two convolutions ``0.1 sqrt(2 |k1 - k2|)`` (0.2 between 1x1 and 3x3), two
rectifiers or two sigmoids 0.1, a rectifier and a sigmoid 0.25, equal labels 0, anything else infinite.

Readers (``network_reader(space)``; ``None`` for a space that is not a network):

- **NAS-Bench-201** (``nb201``, 8 slots): the operation-on-node DAG of ``surrogates.arch_encoders`` (input,
  one layer per cell edge, output); a ``none`` edge is no layer; ``skip_connect`` is an identity layer of
  mass ``c`` (its own label: it matches only itself). ``c = 16`` (NB201's first stage).
- **NAS-Bench-101** (``nb101``, 7 slots): the pruned cell (``spaces.nb101.prune``), vertices as layers
  (conv3x3, conv1x1, maxpool3x3); ``c = 128`` (its stem). Vertices off every input-output path are no layers.
- **HPOLib FCNet** (``hpolib``): input, two dense layers (``n_units_1/2`` units, ``activation_fn_1/2``
  relu or tanh), the linear decision layer, output. **HPOBench MLP** (``hpobench``): input, ``depth`` ReLU
  layers of ``width`` units, linear, output. Their other hyperparameters (learning rate, batch size,
  dropout, ...) are not part of a network: ``rest_tokens`` marks them for a separate kernel.

Layers not on any input-output path get mass 0 (pruned); a string whose input does not reach its output
(NB201 cells with ``none`` cuts) is the empty network, input -> output.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from spaces import nb101
from spaces.nb101 import NB101Space
from spaces.nb201 import NB201Space
from surrogates.arch_encoders import nb201_adjacency
from surrogates.otmann import LayerGraph

ZETA = 0.1  # mass of the input, output and decision layers, as a fraction of the processing layers' mass
INF = float("inf")
CONV_SCALE = np.sqrt(2.0) / 10.0  # the authors' code: mismatch of two convolutions = CONV_SCALE sqrt(|k1 - k2|)

# label vocabularies (ids 0, 1 are the input and output layers everywhere)
CNN_NB201 = ("ip", "op", "skip", "conv1", "conv3", "avg-pool")
CNN_NB101 = ("ip", "op", "conv3", "conv1", "max-pool")
MLP = ("ip", "op", "linear", "relu", "tanh")


def mismatch_matrix(labels: tuple[str, ...]) -> np.ndarray:
    """f32[V, V] label mismatch penalties ``M`` (module docstring); ``inf`` between incompatible labels."""
    rect, sigm = {"relu"}, {"tanh"}
    m = np.full((len(labels), len(labels)), INF, np.float32)
    for i, a in enumerate(labels):
        for j, b in enumerate(labels):
            if a == b:
                m[i, j] = 0.0
            elif a.startswith("conv") and b.startswith("conv"):
                m[i, j] = CONV_SCALE * np.sqrt(abs(int(a[4:]) - int(b[4:])))
            elif a.endswith("pool") and b.endswith("pool"):
                m[i, j] = 0.5
            elif (a in rect and b in rect) or (a in sigm and b in sigm):
                m[i, j] = 0.1
            elif a in rect | sigm and b in rect | sigm:
                m[i, j] = 0.25
    return m


@dataclasses.dataclass(frozen=True)
class NetworkReader:
    """How one space's strings are networks: the label vocabulary and ``read(tokens) -> LayerGraph``."""

    name: str
    labels: tuple[str, ...]
    read: Callable[[jax.Array], LayerGraph]
    rest_tokens: tuple[bool, ...]  # per token: a hyperparameter outside the network (its own kernel)

    @property
    def mismatch(self) -> np.ndarray:
        return mismatch_matrix(self.labels)

    @property
    def has_rest(self) -> bool:
        return any(self.rest_tokens)


def _reachable(adj: jax.Array, present: jax.Array) -> jax.Array:
    """bool[L]: present slots on an input (slot 0) -> output (slot L-1) path of ``adj``."""
    n = adj.shape[0]
    a = adj & present[:, None] & present[None, :]
    fwd = jnp.arange(n) == 0
    bwd = jnp.arange(n) == n - 1
    for _ in range(n - 1):
        fwd = fwd | jnp.any(fwd[:, None] & a, axis=0)
        bwd = bwd | jnp.any(a & bwd[None, :], axis=1)
    return fwd & bwd


def _finish(labels: jax.Array, proc_mass: jax.Array, adj: jax.Array, unit_mass: float, ends: tuple[int, ...] = ()):
    """A LayerGraph from processing masses (0 = no layer) and the slots of the input, output and decision
    layers (``ends``, besides the first and last slot): pruned to input-output paths (the empty network
    input -> output where the input does not reach the output), the ``ends`` weighing ``ZETA`` of the total."""
    n = labels.shape[0]
    slots = jnp.arange(n)
    is_end = jnp.isin(slots, jnp.asarray((0, n - 1) + tuple(ends), jnp.int32))
    keep = _reachable(adj, is_end | (proc_mass > 0))
    connected = keep[n - 1]
    keep = jnp.where(connected, keep, (slots == 0) | (slots == n - 1))
    proc = jnp.where(keep & ~is_end, proc_mass, 0.0)
    empty = jnp.zeros((n, n), bool).at[0, n - 1].set(True)
    adj = jnp.where(connected, adj & keep[:, None] & keep[None, :], empty)
    side = ZETA * jnp.maximum(jnp.sum(proc), unit_mass)
    masses = jnp.where(keep & is_end, side, proc)
    return LayerGraph(labels=labels.astype(jnp.int32), masses=masses.astype(jnp.float32), adj=adj)


# -- NAS-Bench-201 --------------------------------------------------------------------------------------------
NB201_CHANNELS = 16
_C = NB201_CHANNELS
NB201_OP_LABEL = np.array([0, 2, 3, 4, 5], np.int32)  # none (no layer), skip, conv1x1, conv3x3, avg-pool
NB201_OP_MASS = np.array([0.0, _C, _C * _C, 9 * _C * _C, 9 * _C], np.float32)


def read_nb201(tokens: jax.Array) -> LayerGraph:
    ops = tokens.astype(jnp.int32)
    labels = jnp.concatenate([jnp.zeros(1, jnp.int32), jnp.asarray(NB201_OP_LABEL)[ops], jnp.ones(1, jnp.int32)])
    mass = jnp.concatenate([jnp.zeros(1), jnp.asarray(NB201_OP_MASS)[ops], jnp.zeros(1)])
    adj = jnp.asarray(nb201_adjacency(), bool)
    return _finish(labels, mass, adj, float(_C * _C))


# -- NAS-Bench-101 --------------------------------------------------------------------------------------------
NB101_CHANNELS = 128
_C1 = NB101_CHANNELS
NB101_OP_LABEL = np.array([2, 3, 4], np.int32)  # conv3x3-bn-relu, conv1x1-bn-relu, maxpool3x3
NB101_OP_MASS = np.array([9 * _C1 * _C1, _C1 * _C1, 9 * _C1], np.float32)


def read_nb101(tokens: jax.Array) -> LayerGraph:
    ops = jnp.clip(tokens[nb101.NUM_EDGES :].astype(jnp.int32), 0, 2)
    labels = jnp.concatenate([jnp.zeros(1, jnp.int32), jnp.asarray(NB101_OP_LABEL)[ops], jnp.ones(1, jnp.int32)])
    mass = jnp.concatenate([jnp.zeros(1), jnp.asarray(NB101_OP_MASS)[ops], jnp.zeros(1)])
    return _finish(labels, mass, nb101.adjacency(tokens) > 0, float(_C1 * _C1))


# -- MLPs of the tabular HPO benchmarks -----------------------------------------------------------------------
HPOLIB_NETWORK = ("activation_fn_1", "activation_fn_2", "n_units_1", "n_units_2")
HPOBENCH_NETWORK = ("depth", "width")
_ACT_LABEL = {"relu": MLP.index("relu"), "tanh": MLP.index("tanh")}


def _chain(present: jax.Array) -> jax.Array:
    """bool[L, L]: each present slot feeds the next present one (static loops; L is small)."""
    n = present.shape[0]
    adj = jnp.zeros((n, n), bool)
    for u in range(n):
        for v in range(u + 1, n):
            between = jnp.all(~present[u + 1 : v]) if v > u + 1 else jnp.bool_(True)
            adj = adj.at[u, v].set(present[u] & present[v] & between)
    return adj


def _mlp_graph(units: jax.Array, act_labels: jax.Array) -> LayerGraph:
    """input, hidden layers (``units`` 0 = absent), linear decision layer, output; NASBOT's MLP masses."""
    h = units.shape[0]
    fan_in = jnp.concatenate([jnp.ones(1), units[:-1]])  # the input passes one channel (the authors' code)
    mass = jnp.concatenate([jnp.zeros(1), units * fan_in, jnp.zeros(2)])
    labels = jnp.concatenate([jnp.asarray([0]), act_labels, jnp.asarray([MLP.index("linear"), 1])])
    present = jnp.concatenate([jnp.ones(1, bool), units > 0, jnp.ones(2, bool)])
    return _finish(labels, mass, _chain(present), 1.0, ends=(h + 1,))


def _hpolib_reader(space) -> Callable[[jax.Array], LayerGraph]:
    idx = [space.token_names.index(n) for n in HPOLIB_NETWORK]
    act = [np.asarray([_ACT_LABEL[a] for a in space.values[n]], np.int32) for n in HPOLIB_NETWORK[:2]]
    units = [np.asarray(space.values[n], np.float32) for n in HPOLIB_NETWORK[2:]]

    def read(tokens):
        t = [tokens[i] for i in idx]
        acts = jnp.stack([jnp.asarray(act[0])[t[0]], jnp.asarray(act[1])[t[1]]])
        return _mlp_graph(jnp.stack([jnp.asarray(units[0])[t[2]], jnp.asarray(units[1])[t[3]]]), acts)

    return read


def _hpobench_reader(space) -> Callable[[jax.Array], LayerGraph]:
    i_depth, i_width = (space.token_names.index(n) for n in HPOBENCH_NETWORK)
    depths = np.asarray(space.values["depth"], np.int32)
    widths = np.asarray(space.values["width"], np.float32)
    max_depth = int(depths.max())

    def read(tokens):
        depth, width = jnp.asarray(depths)[tokens[i_depth]], jnp.asarray(widths)[tokens[i_width]]
        units = jnp.where(jnp.arange(max_depth) < depth, width, 0.0)
        return _mlp_graph(units, jnp.full((max_depth,), MLP.index("relu"), jnp.int32))

    return read


def _rest(space, network_tokens) -> tuple[bool, ...]:
    return tuple(t not in network_tokens for t in space.token_names)


def _has(space, names) -> bool:
    return hasattr(space, "values") and set(names) <= set(getattr(space, "token_names", ()))


@functools.cache
def network_reader(space) -> NetworkReader | None:
    """The NASBOT reading of ``space`` (module docstring), or ``None`` when its strings are not networks."""
    n = space.num_tokens
    if isinstance(space, NB201Space):
        return NetworkReader("nb201", CNN_NB201, read_nb201, (False,) * n)
    if isinstance(space, NB101Space):
        return NetworkReader("nb101", CNN_NB101, read_nb101, (False,) * n)
    if _has(space, HPOLIB_NETWORK) and all(a in _ACT_LABEL for n in HPOLIB_NETWORK[:2] for a in space.values[n]):
        return NetworkReader("hpolib", MLP, _hpolib_reader(space), _rest(space, HPOLIB_NETWORK))
    if _has(space, HPOBENCH_NETWORK):
        return NetworkReader("hpobench", MLP, _hpobench_reader(space), _rest(space, HPOBENCH_NETWORK))
    return None


READABLE = "NAS-Bench-201 and NAS-Bench-101 cells, HPOLib FCNet and HPOBench MLPs"
