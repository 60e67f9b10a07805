"""The search spaces of Table 1 (Negrinho et al. 2019, Section 7.1) written in the language, sized
for 8x8 single-channel images (scikit-learn digits, 10 classes; the trainer adds the dense head).

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
from spaces.language.hyperparameters import D, DependentHyperparameter
from spaces.language.library import basic_module, identity, siso_or, siso_repeat, siso_sequential, substitution_module
from spaces.language.search_space import LanguageSpace

NB_OPS = ("conv3x3-bn-relu", "conv1x1-bn-relu", "maxpool3x3")
NB_SKIPS = ((0, 2), (0, 3), (0, 4), (1, 3), (1, 4), (2, 4))  # optional edges of the 5-vertex cell
NASNET_OPS = ("identity", "sep3x3", "sep5x5", "avg3x3", "max3x3", "conv1x1")
FLAT_OPS = ("conv1x1", "conv3x3", "sep3x3", "sep5x5", "max3x3", "avg3x3", "identity")
GENETIC_NODES = (3, 4)
GENETIC_CHANNELS = (8, 16)


# --- NAS-Bench-101-like -------------------------------------------------------------------------


def nasbench_space():
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

    return siso_sequential([fm.conv_bn_relu(8, 3), cell(8, 8), fm.max_pool(2, 2), cell(8, 16), fm.global_avg_pool()])


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


def nasnet_space():
    normal, reduction = nasnet_cell_hyperparameters(), nasnet_cell_hyperparameters()
    s_in, s_out = fm.conv_bn_relu(8, 3)
    prev2, prev = s_out, s_out
    for hs, ch, red in ((normal, 8, False), (reduction, 16, True), (normal, 16, False)):
        c_in, c_out = nasnet_cell(hs, ch, red)
        prev["out"].connect(c_in["prev"])
        prev2["out"].connect(c_in["prev2"])
        prev2, prev = prev, c_out
    g_in, g_out = fm.global_avg_pool()
    prev["out"].connect(g_in["in"])
    return s_in, g_out


# --- flat ----------------------------------------------------------------------------------------


def _flat_layer():
    h_filters = D([8, 16])
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


def flat_space():
    return siso_sequential(
        [
            fm.conv_bn_relu(8, 3),
            siso_repeat(_flat_layer, D([1, 2, 3])),
            fm.max_pool(2, 2),
            siso_repeat(_flat_layer, D([1, 2, 3])),
            fm.global_avg_pool(),
        ]
    )


# --- Genetic CNN -------------------------------------------------------------------------------


def genetic_topology(bits, num_nodes: int) -> tuple[list[bool], list[list[int]], list[int]]:
    """(kept nodes, predecessors of each node (-1 = stage input), nodes summed into the output).

    ``bits`` in Xie & Yuille's order: (1,2), (1,3), (2,3), (1,4), ... (node pairs by target)."""
    pairs = [(i, j) for j in range(num_nodes) for i in range(j)]
    if len(bits) != len(pairs):
        raise ValueError(f"a {num_nodes}-node stage has {len(pairs)} bits, got {len(bits)}")
    edge = {p: bool(b) for p, b in zip(pairs, bits)}
    has_in = [any(edge[(i, j)] for i in range(j)) for j in range(num_nodes)]
    has_out = [any(edge[(j, k)] for k in range(j + 1, num_nodes)) for j in range(num_nodes)]
    kept = [a or b for a, b in zip(has_in, has_out)]
    if not any(kept):
        kept[0] = True
    preds = [[i for i in range(j) if edge[(i, j)]] or [-1] for j in range(num_nodes)]
    outs = [j for j in range(num_nodes) if kept[j] and not has_out[j]]
    return kept, preds, outs


def _genetic_bits(num_nodes: int, stage: int) -> list:
    return [D([0, 1], name=f"s{stage}_{i + 1}{j + 1}") for j in range(num_nodes) for i in range(j)]


def _genetic_stage(h_bits: list, num_nodes: int, channels: int):
    names = [f"b{k}" for k in range(len(h_bits))]

    def build(dh):
        kept, preds, outs = genetic_topology([dh[n] for n in names], num_nodes)
        i_in, i_out = fm.conv_bn_relu(channels, 3)  # default input node
        node_outs = {}
        for j in range(num_nodes):
            if not kept[j]:
                continue
            n_in, n_out = fm.conv_bn_relu(channels, 3)
            terms = [i_out if p < 0 else node_outs[p] for p in preds[j]]
            if len(terms) == 1:
                terms[0]["out"].connect(n_in["in"])
            else:
                a_in, a_out = fm.add(len(terms))
                for k, t in enumerate(terms):
                    t["out"].connect(a_in[f"in{k}"])
                a_out["out"].connect(n_in["in"])
            node_outs[j] = n_out
        o_in, o_out = fm.conv_bn_relu(channels, 3)  # default output node
        if len(outs) == 1:
            node_outs[outs[0]]["out"].connect(o_in["in"])
        else:
            a_in, a_out = fm.add(len(outs))
            for k, j in enumerate(outs):
                node_outs[j]["out"].connect(a_in[f"in{k}"])
            a_out["out"].connect(o_in["in"])
        return i_in, o_out

    return substitution_module("GeneticStage", build, dict(zip(names, h_bits)), ["in"], ["out"])


def _gated_sum(gates: list, type_name: str = "GatedSum"):
    """Sum of inputs ``in{k}`` scaled by traced 0/1 ``gates`` (dependent hyperparameters)."""
    n = len(gates)

    def compile_fn(di, dh):
        del di
        return lambda di: {"out": sum(dh[f"g{k}"] * di[f"in{k}"] for k in range(n))}

    hs = {f"g{k}": g for k, g in enumerate(gates)}
    return basic_module(type_name, compile_fn, hs, [f"in{k}" for k in range(n)], traced=tuple(hs))


def _genetic_stage_gated(h_bits: list, num_nodes: int, channels: int):
    deps = {f"b{k}": h for k, h in enumerate(h_bits)}

    def gate(fn):
        return DependentHyperparameter(
            lambda dh: float(fn(genetic_topology([dh[f"b{k}"] for k in range(len(deps))], num_nodes))), deps
        )

    i_in, i_out = fm.conv_bn_relu(channels, 3)  # default input node
    node_outs = []
    for j in range(num_nodes):
        # inputs: the stage input, then nodes 0..j-1; gate = 1 for the node's predecessors (or the input)
        gates = [gate(lambda t, j=j: -1 in t[1][j])] + [gate(lambda t, i=i, j=j: i in t[1][j]) for i in range(j)]
        s_in, s_out = _gated_sum(gates)
        i_out["out"].connect(s_in["in0"])
        for i in range(j):
            node_outs[i]["out"].connect(s_in[f"in{i + 1}"])
        n_in, n_out = fm.conv_bn_relu(channels, 3)
        s_out["out"].connect(n_in["in"])
        node_outs.append(n_out)
    o_in, o_out = _gated_sum([gate(lambda t, j=j: j in t[2]) for j in range(num_nodes)], "GatedOutput")
    for j in range(num_nodes):
        node_outs[j]["out"].connect(o_in[f"in{j}"])
    c_in, c_out = fm.conv_bn_relu(channels, 3)  # default output node
    o_out["out"].connect(c_in["in"])
    return i_in, c_out


def genetic_space(gated: bool = False):
    stage = _genetic_stage_gated if gated else _genetic_stage
    parts = []
    for s, (k, ch) in enumerate(zip(GENETIC_NODES, GENETIC_CHANNELS)):
        if s > 0:
            parts.append(fm.max_pool(2, 2))
        parts.append(stage(_genetic_bits(k, s + 1), k, ch))
    parts.append(fm.global_avg_pool())
    return siso_sequential(parts)


def genetic_gated_space():
    return genetic_space(gated=True)


def genetic_codes(g) -> list[list[int]]:
    """The binary code of each stage of a terminal Genetic graph ``g`` (bits in Xie & Yuille's order)."""
    values = {h.name.rsplit("-", 1)[0]: h.value for h in g.hyperparameters.values() if h.name.startswith("s")}
    return [
        [int(values[f"s{s + 1}_{i + 1}{j + 1}"]) for j in range(k) for i in range(j)]
        for s, k in enumerate(GENETIC_NODES)
    ]


def genetic_active_params(codes: list[list[int]]) -> int:
    """Parameters of the structural Genetic network of ``codes`` (one list of bits per stage),
    without the head: conv3x3 (no bias) + BN scale and bias per default node and kept node."""
    total, in_ch = 0, 1
    for code, k, ch in zip(codes, GENETIC_NODES, GENETIC_CHANNELS):
        kept, _, _ = genetic_topology(code, k)
        total += (9 * in_ch * ch + 2 * ch) + (1 + sum(kept)) * (9 * ch * ch + 2 * ch)
        in_ch = ch
    return total


TABLE1 = {
    "nasbench": nasbench_space,
    "nasnet": nasnet_space,
    "flat": flat_space,
    "genetic": genetic_space,
    "genetic_gated": genetic_gated_space,
}


# the NAS-Bench-like cell has 1,728 value combinations and creates no hyperparameters: explored by probes
FLATTEN_OPTIONS = {"nasbench": {"max_combos": 64}}


def table1_space(name: str) -> LanguageSpace:
    """The ``LanguageSpace`` of Table 1 space ``name`` (``TABLE1``'s keys)."""
    if name not in TABLE1:
        from spaces.names import unknown

        raise ValueError(unknown("Table 1 space", name, sorted(TABLE1)))
    return LanguageSpace(TABLE1[name], name)


def table1_flat(name: str, **options):
    """The flattened (``spaces.base.Space``) form of Table 1 space ``name``."""
    return table1_space(name).flatten(**{**FLATTEN_OPTIONS.get(name, {}), **options})
