"""The search spaces of Table 1 (Negrinho et al. 2019, Section 7.1) written in the language, sized
by default for 8x8 single-channel images (scikit-learn digits, 10 classes; the trainer adds the dense
head). Channel widths, blocks per cell and nodes per stage are arguments of the space functions
(``table1_space(name, **options)``; ``SPACE_OPTIONS`` lists them), so a CIFAR-scale space is a config
change: e.g. ``nasnet_space(num_blocks=5)`` is the NASNet cell of Zoph et al. (B = 5 blocks).

- ``nasbench_space``: a NAS-Bench-101-like cell DAG (Ying et al. 2019): 3 interior vertices with
  ops from {conv3x3-BN-ReLU, conv1x1-BN-ReLU, maxpool3x3}, the chain edges 0->1->2->3->4 always
  present (every string is a connected cell) and the 6 other forward edges chosen by bits; the
  cell (``cells.nb101_cell``, one topology shared by every cell) is stacked as stem conv (8),
  cell, 2x2 max pool, cell with 16 channels, global average pool. 64 x 27 = 1,728 cells.
- ``nasnet_space``: NASNet-like normal and reduction cells (Zoph et al. 2018, Section 3): a cell
  has 2 blocks; each block picks 2 inputs (the previous two cells' outputs or an earlier block
  of the cell) and an op for each from {identity, sep3x3, sep5x5, avg3x3, max3x3, conv1x1},
  sums them; the cell concatenates its blocks and projects to its channel count (1x1). In the
  reduction cell, ops reading a cell input have stride 2 (a *dependent* hyperparameter of the
  input choice; identity becomes a strided 1x1 conv). Every normal cell shares one set of
  hyperparameters, every reduction cell another. Network: stem conv (8), normal, reduction (16),
  normal, global average pool.
- ``flat_space``: a flat chain (Liu et al. 2018's flat representation): stem conv (8), two
  stages of 1-3 layers separated by a 2x2 max pool, each layer an op from {conv1x1, conv3x3,
  sep3x3, sep5x5, max3x3, avg3x3, identity} with its own filter count (8 or 16) where the op
  has one, then global average pool.
- ``genetic_space``: Genetic CNN (Xie & Yuille 2017, Section 3.1): 2 stages of 3 and 4 nodes
  (conv3x3-BN-ReLU, 8 and 16 channels) whose wiring is a binary code, one bit per node pair
  ``(i < j)``: the default input node (a conv) feeds the nodes without predecessors, the nodes
  without successors are summed into the default output node (a conv), isolated nodes are
  dropped (all isolated: node 1 alone); 2x2 max pool between stages, global average pool.
  2^3 x 2^6 = 512 architectures. ``gated=True`` writes the same networks with the code *traced*:
  every node exists and each input is scaled by a 0/1 gate computed from the code (dependent
  hyperparameters), so all 512 architectures share one compiled program and train vmapped
  together (the dropped nodes then keep unused parameters, counted by ``num_params``;
  ``genetic_active_params`` counts those in use).

``TABLE1`` maps names to these functions; ``table1_space(name)`` gives the ``LanguageSpace``.
"""

from __future__ import annotations

import flax.linen as nn
import numpy as np

from spaces.language import flax_modules as fm
from spaces.language.cells import nb101_cell
from spaces.language.compile import is_training, layer_name
from spaces.language.genetic import (  # noqa: F401  (Table 1's Genetic CNN space, re-exported)
    GENETIC_CHANNELS,
    GENETIC_NODES,
    genetic_active_params,
    genetic_codes,
    genetic_gated_space,
    genetic_space,
    genetic_topology,
)
from spaces.language.hyperparameters import D, DependentHyperparameter
from spaces.language.library import basic_module, identity, siso_or, siso_repeat, siso_sequential, substitution_module
from spaces.language.search_space import LanguageSpace

NB_OPS = ("conv3x3-bn-relu", "conv1x1-bn-relu", "maxpool3x3")
NB_SKIPS = ((0, 2), (0, 3), (0, 4), (1, 3), (1, 4), (2, 4))  # optional edges of the 5-vertex cell
NASNET_OPS = ("identity", "sep3x3", "sep5x5", "avg3x3", "max3x3", "conv1x1")
FLAT_OPS = ("conv1x1", "conv3x3", "sep3x3", "sep5x5", "max3x3", "avg3x3", "identity")


# --- NAS-Bench-101-like -------------------------------------------------------------------------


def nasbench_space(stem: int = 8, channels: tuple[int, int] = (8, 16)):
    """Stem conv (``stem`` channels), cell, 2x2 max pool, cell, global average pool; the cells output
    ``channels``."""
    h_skips = {f"e{i}_{j}": D([0, 1], name=f"e{i}_{j}") for i, j in NB_SKIPS}
    h_ops = {f"op{v}": D(list(NB_OPS), name=f"op{v}") for v in (1, 2, 3)}

    def cell(in_ch, out_ch):
        def build(dh):
            m = np.zeros((5, 5), np.int64)
            for v in range(4):
                m[v, v + 1] = 1
            for i, j in NB_SKIPS:
                m[i, j] = dh[f"e{i}_{j}"]
            return nb101_cell(m, [dh[f"op{v}"] for v in (1, 2, 3)], in_ch, out_ch)

        return substitution_module("NBCell", build, {**h_skips, **h_ops}, ["in"], ["out"])

    c1, c2 = channels
    return siso_sequential(
        [fm.conv_bn_relu(stem, 3), cell(stem, c1), fm.max_pool(2, 2), cell(c1, c2), fm.global_avg_pool()]
    )


# --- NASNet-like -----------------------------------------------------------------------------------


def _align(channels: int):
    """Input ``in`` brought to ``ref``'s spatial size (strided ReLU-1x1 conv-BN) and ``channels``."""

    def compile_fn(di, dh):
        del di

        def forward(di):
            x, ref = di["in"], di["ref"]
            s = max(x.shape[1] // ref.shape[1], 1)
            y = nn.Conv(channels, (1, 1), (s, s), padding="SAME", use_bias=False, name=layer_name("conv"))(nn.relu(x))
            return {"out": nn.BatchNorm(use_running_average=not is_training(), momentum=0.9, name=layer_name("bn"))(y)}

        return forward

    return basic_module("Align", compile_fn, {"channels": channels}, ["in", "ref"])


def _nasnet_op(op: str, channels: int, stride: int):
    if op == "identity":
        return identity() if stride == 1 else fm.relu_conv_bn(channels, 1, stride)
    if op in ("sep3x3", "sep5x5"):
        return fm.sep_conv(channels, int(op[3]), stride)
    if op == "avg3x3":
        return fm.avg_pool(3, stride)
    if op == "max3x3":
        return fm.max_pool(3, stride)
    return fm.relu_conv_bn(channels, 1, stride)


def _select_op(num_inputs: int, h_idx, h_op, h_stride, channels: int):
    """Substitution module: ``op`` applied to input ``in{idx}`` (the others unused)."""

    def build(dh):
        o_in, o_out = _nasnet_op(dh["op"], channels, dh["stride"])
        ins = {f"in{j}": identity()[0]["in"] for j in range(num_inputs)}  # unused inputs end in dead modules
        ins[f"in{dh['idx']}"] = o_in["in"]
        return ins, o_out

    hs = {"idx": h_idx, "op": h_op, "stride": h_stride}
    return substitution_module("SelectOp", build, hs, [f"in{j}" for j in range(num_inputs)], ["out"])


def nasnet_cell_hyperparameters(num_blocks: int = 2) -> list:
    """Per block, for each of its 2 inputs: (idx over the 2 cell inputs and earlier blocks, op)."""
    return [
        [(D(list(range(2 + b)), name=f"b{b}i{k}"), D(list(NASNET_OPS), name=f"b{b}op{k}")) for k in range(2)]
        for b in range(num_blocks)
    ]


def nasnet_cell(hs: list, channels: int, reduction: bool):
    """A cell with inputs ``prev`` (h_{i-1}) and ``prev2`` (h_{i-2}) and output ``out``."""
    p_in, p_out = identity()  # h_{i-1}
    q_align_in, q_out = _align(channels)  # h_{i-2} brought to h_{i-1}'s size
    pp_in, pp_out = fm.relu_conv_bn(channels, 1)  # h_{i-1} to `channels`
    p_out["out"].connect(pp_in["in"])
    p_out["out"].connect(q_align_in["ref"])
    states = [pp_out, q_out]
    for pair in hs:
        terms = []
        for h_idx, h_op in pair:
            stride = DependentHyperparameter(lambda idx: 2 if (reduction and idx < 2) else 1, {"idx": h_idx})
            s_in, s_out = _select_op(len(states), h_idx, h_op, stride, channels)
            for j, st in enumerate(states):
                st["out"].connect(s_in[f"in{j}"])
            terms.append(s_out)
        a_in, a_out = fm.add(2)
        terms[0]["out"].connect(a_in["in0"])
        terms[1]["out"].connect(a_in["in1"])
        states.append(a_out)
    c_in, c_out = fm.concat(len(hs))
    for j, st in enumerate(states[2:]):
        st["out"].connect(c_in[f"in{j}"])
    proj_in, proj_out = fm.relu_conv_bn(channels, 1)
    c_out["out"].connect(proj_in["in"])
    return {"prev": p_in["in"], "prev2": q_align_in["in"]}, proj_out


def nasnet_space(num_blocks: int = 2, stem: int = 8, channels: tuple[int, int, int] = (8, 16, 16)):
    """Stem conv (``stem``), normal, reduction and normal cells of ``num_blocks`` blocks with ``channels``
    (the paper's NASNet cells, Zoph et al. 2018, have 5 blocks), global average pool."""
    normal, reduction = nasnet_cell_hyperparameters(num_blocks), nasnet_cell_hyperparameters(num_blocks)
    s_in, s_out = fm.conv_bn_relu(stem, 3)
    prev2, prev = s_out, s_out
    for hs, ch, red in zip((normal, reduction, normal), channels, (False, True, False)):
        c_in, c_out = nasnet_cell(hs, ch, red)
        prev["out"].connect(c_in["prev"])
        prev2["out"].connect(c_in["prev2"])
        prev2, prev = prev, c_out
    g_in, g_out = fm.global_avg_pool()
    prev["out"].connect(g_in["in"])
    return s_in, g_out


# --- flat ----------------------------------------------------------------------------------------


def _flat_layer(filters: tuple[int, ...]):
    h_filters = D(list(filters))
    fns = {
        "conv1x1": lambda: fm.conv_bn_relu(h_filters, 1),
        "conv3x3": lambda: fm.conv_bn_relu(h_filters, 3),
        "sep3x3": lambda: fm.sep_conv(h_filters, 3),
        "sep5x5": lambda: fm.sep_conv(h_filters, 5),
        "max3x3": lambda: fm.max_pool(3, 1),
        "avg3x3": lambda: fm.avg_pool(3, 1),
        "identity": identity,
    }
    return siso_or([fns[o] for o in FLAT_OPS], D(list(range(len(FLAT_OPS)))), name="FlatOp")


def flat_space(stem: int = 8, filters: tuple[int, ...] = (8, 16)):
    """Stem conv (``stem``), two stages of 1-3 layers, each op's filter count one of ``filters``."""

    def layer():
        return _flat_layer(tuple(filters))

    return siso_sequential(
        [
            fm.conv_bn_relu(stem, 3),
            siso_repeat(layer, D([1, 2, 3])),
            fm.max_pool(2, 2),
            siso_repeat(layer, D([1, 2, 3])),
            fm.global_avg_pool(),
        ]
    )


TABLE1 = {
    "nasbench": nasbench_space,
    "nasnet": nasnet_space,
    "flat": flat_space,
    "genetic": genetic_space,
    "genetic_gated": genetic_gated_space,
}


# the NAS-Bench-like cell has 1,728 value combinations and creates no hyperparameters: explored by probes
FLATTEN_OPTIONS = {"nasbench": {"max_combos": 64}}


def space_options(name: str) -> list[str]:
    """The size options (channel widths, blocks, nodes) of Table 1 space ``name``."""
    import inspect

    return [p for p in inspect.signature(TABLE1[name]).parameters if p != "gated"]


def table1_space(name: str, **options) -> LanguageSpace:
    """The ``LanguageSpace`` of Table 1 space ``name`` (``TABLE1``'s keys) with its size ``options``
    (``space_options(name)``; lists become tuples). The name records non-default options."""
    import functools

    if name not in TABLE1:
        from spaces.names import unknown

        raise ValueError(unknown("Table 1 space", name, sorted(TABLE1)))
    bad = sorted(set(options) - set(space_options(name)))
    if bad:
        raise ValueError(f"Table 1 space {name!r} has no option(s) {bad}; its options: {space_options(name)}")
    options = {k: tuple(v) if isinstance(v, list) else v for k, v in options.items()}
    label = name + "".join(f",{k}={options[k]}" for k in sorted(options))
    return LanguageSpace(functools.partial(TABLE1[name], **options) if options else TABLE1[name], label)


def table1_flat(name: str, space: dict | None = None, **options):
    """The flattened (``spaces.base.Space``) form of Table 1 space ``name`` (size options ``space``)."""
    return table1_space(name, **(space or {})).flatten(**{**FLATTEN_OPTIONS.get(name, {}), **options})
