"""NAS-Bench-101 and NAS-Bench-201 cells and networks written in the language.

Negrinho et al. 2019 (Section 7.1, Table 1) search the "Nasbench" space of Ying et al. (2019);
this module writes its cell, and the cell of Dong & Yang (2020, NAS-Bench-201), as language
spaces, so that a cell found on a table compiles to a trainable ``flax`` network:

- ``nb101_cell(matrix, ops, h_out)``: the NAS-Bench-101 cell (Ying et al. 2019, Section 2.1 and
  its ``model_builder``): dangling vertices pruned; each interior vertex sums its inputs (the
  cell input through a 1x1 ``Projection`` conv-BN-ReLU, other vertices ``Truncate``-d to its
  channel count) and applies its op; the output concatenates the interior vertices that feed
  it and adds the projected input when the input feeds it directly. Channels per vertex follow
  ``compute_vertex_channels`` (the output's channels split among the vertices that feed it).
- ``nb101_network(matrix, ops, ...)``: stem conv3x3-BN-ReLU, ``num_stacks`` stacks of
  ``cells_per_stack`` cells, 2x2 max-pool ``Downsample`` and doubled channels between stacks,
  global average pool (the trainer adds the dense head). The table's network has stem 128,
  3 stacks of 3 cells; the defaults here are sized for 8x8 digits.
- ``nb201_cell(ops)`` / ``nb201_network(ops, ...)``: the 4-node NAS-Bench-201 cell (node ``j``
  sums ``op(node_i)`` over ``i < j``; ``none`` edges carry nothing, a node with only ``none``
  inputs is ``Zero``), stem conv3x3-BN, three stages of ``cells_per_stage`` cells joined by
  residual reduction blocks (ReLU-conv3x3/2-BN, ReLU-conv3x3-BN, shortcut avg-pool/2 + 1x1 conv),
  BN-ReLU, global average pool. The table's network has 16 channels and 5 cells per stage.
- ``nb201_space`` / ``nb201_architecture(arch_string)``: the cell as a search space (6 edges,
  ``D(OPS)`` each) and a table string as its language assignment; ``nb101_space`` /
  ``nb101_architecture(matrix, ops)`` likewise (21 edge bits and 5 ops, one substitution module).
"""

from __future__ import annotations

import flax.linen as nn
import numpy as np

from spaces import nb201 as nb201_table
from spaces.language import flax_modules as fm
from spaces.language.compile import is_training, layer_name
from spaces.language.core import InvalidArchitecture, unassigned_independent
from spaces.language.hyperparameters import D
from spaces.language.library import identity, siso_sequential, substitution_module
from spaces.language.search_space import Architecture, LanguageSpace
from spaces.nb101_hash import OPS as NB101_OPS
from spaces.nb101_hash import prune

NB201_OPS = nb201_table.OPS


def _truncate(channels: int):
    """Keeps the first ``channels`` channels (NAS-Bench-101's ``truncate``)."""
    return fm.siso_layer("Truncate", lambda x, dh: x[..., : int(dh["channels"])], {"channels": channels})


def _projection(channels: int):
    """1x1 conv-BN-ReLU from the cell input to a vertex (NAS-Bench-101's ``projection``)."""
    return fm.conv_bn_relu(channels, 1)


def compute_vertex_channels(in_channels: int, out_channels: int, matrix: np.ndarray) -> list[int]:
    """Channels of each vertex (NAS-Bench-101 ``model_builder.compute_vertex_channels``)."""
    v = matrix.shape[0]
    ch = [0] * v
    ch[0], ch[v - 1] = in_channels, out_channels
    if v == 2:
        return ch
    in_degree = matrix[1:].sum(axis=0)
    interior, correction = divmod(out_channels, int(in_degree[v - 1]))
    for i in range(1, v - 1):
        if matrix[i, v - 1]:
            ch[i] = interior + (1 if correction > 0 else 0)
            correction -= 1
    for i in range(v - 3, 0, -1):
        if not matrix[i, v - 1]:
            for dst in range(i + 1, v - 1):
                if matrix[i, dst]:
                    ch[i] = max(ch[i], ch[dst])
    return ch


def _nb101_op(op: str, channels: int):
    if op == "conv3x3-bn-relu":
        return fm.conv_bn_relu(channels, 3)
    if op == "conv1x1-bn-relu":
        return fm.conv_bn_relu(channels, 1)
    if op == "maxpool3x3":
        return fm.max_pool(3, 1)
    raise ValueError(f"unknown NAS-Bench-101 op {op!r}; ops: {list(NB101_OPS)}")


def nb101_cell(matrix, ops, in_channels: int, out_channels: int):
    """A NAS-Bench-101 cell as basic modules (module docstring); ``ops`` without input/output.

    Raises ``InvalidArchitecture`` when the input does not reach the output."""
    matrix = np.asarray(matrix, np.int64)
    full_ops = ["input", *ops, "output"]
    if matrix.shape != (len(full_ops), len(full_ops)):
        raise ValueError(f"a {len(full_ops)}-vertex cell needs a {len(full_ops)}x{len(full_ops)} matrix")
    pruned = prune(np.triu(matrix, 1), full_ops)
    if pruned is None:
        raise InvalidArchitecture("the NAS-Bench-101 cell's input does not reach its output")
    matrix, full_ops = pruned
    v = matrix.shape[0]
    ch = compute_vertex_channels(in_channels, out_channels, matrix)
    cell_in, cell_in_out = identity()
    outs = {}
    for t in range(1, v - 1):
        terms = []
        for s in range(1, t):
            if matrix[s, t]:
                tr_in, tr_out = _truncate(ch[t])
                outs[s]["out"].connect(tr_in["in"])
                terms.append(tr_out)
        if matrix[0, t]:
            p_in, p_out = _projection(ch[t])
            cell_in_out["out"].connect(p_in["in"])
            terms.append(p_out)
        op_in, op_out = _nb101_op(full_ops[t], ch[t])
        _join(terms, fm.add)[1]["out"].connect(op_in["in"])
        outs[t] = op_out
    feeding = [outs[s] for s in range(1, v - 1) if matrix[s, v - 1]]
    if matrix[0, v - 1]:
        p_in, p_out = _projection(out_channels)
        cell_in_out["out"].connect(p_in["in"])
        if feeding:
            a_in, a_out = fm.add(2)
            _join(feeding, fm.concat)[1]["out"].connect(a_in["in0"])
            p_out["out"].connect(a_in["in1"])
            return cell_in, a_out
        return cell_in, p_out
    return cell_in, _join(feeding, fm.concat)[1]


def _join(outs: list, combine):
    """One output as a space: itself, or ``combine(k)`` of the ``k`` outputs."""
    if len(outs) == 1:
        return None, outs[0]
    c_in, c_out = combine(len(outs))
    for j, o in enumerate(outs):
        o["out"].connect(c_in[f"in{j}"])
    return c_in, c_out


def _conv_bn(kernel: int, stride: int):
    def fn(x, dh):
        k, s = (kernel, kernel), (stride, stride)
        y = nn.Conv(int(dh["filters"]), k, s, padding="SAME", use_bias=False, name=layer_name("conv"))(x)
        return nn.BatchNorm(use_running_average=not is_training(), momentum=0.9, name=layer_name("bn"))(y)

    return fn


def nb101_network(matrix, ops, stem_channels: int = 16, num_stacks: int = 2, cells_per_stack: int = 1):
    """The NAS-Bench-101 network of one cell (module docstring) as ``(inputs, outputs)``."""
    parts = [fm.conv_bn_relu(stem_channels, 3)]
    channels = stem_channels
    for stack in range(num_stacks):
        if stack > 0:
            parts.append(fm.siso_layer("Downsample", lambda x, dh: nn.max_pool(x, (2, 2), (2, 2), padding="SAME")))
            channels *= 2
        for c in range(cells_per_stack):
            in_ch = channels // 2 if (stack > 0 and c == 0) else channels
            parts.append(nb101_cell(matrix, ops, in_ch, channels))
    parts.append(fm.global_avg_pool())
    return siso_sequential(parts)


# --- NAS-Bench-201 ---------------------------------------------------------------------------


def _nb201_op(op: str, channels: int):
    if op == "skip_connect":
        return identity()
    if op == "nor_conv_1x1":
        return fm.relu_conv_bn(channels, 1)
    if op == "nor_conv_3x3":
        return fm.relu_conv_bn(channels, 3)
    if op == "avg_pool_3x3":
        return fm.avg_pool(3, 1)
    raise ValueError(f"unknown NAS-Bench-201 op {op!r}; ops: {list(NB201_OPS)}")


def nb201_cell(ops, channels: int):
    """The NAS-Bench-201 cell with ``ops`` on edges (1<-0), (2<-0), (2<-1), (3<-0), (3<-1), (3<-2)."""
    ops = list(ops)
    if len(ops) != 6 or any(op not in NB201_OPS for op in ops):
        raise ValueError(f"a NAS-Bench-201 cell has 6 ops from {list(NB201_OPS)}, got {ops}")
    node_in, node0 = identity()
    nodes = [node0]
    for j in range(1, 4):
        terms = []
        for (to, frm), op in zip(nb201_table.EDGES, ops):
            if to == j and op != "none":
                o_in, o_out = _nb201_op(op, channels)
                nodes[frm]["out"].connect(o_in["in"])
                terms.append(o_out)
        if not terms:  # every input is "none": zeros of the input's shape
            z_in, z_out = fm.zero()
            node0["out"].connect(z_in["in"])
            terms = [z_out]
        nodes.append(_join(terms, fm.add)[1])
    return node_in, nodes[3]


def _nb201_reduction(channels: int):
    """NAS-Bench-201's ``ResNetBasicblock`` with stride 2 (channels doubled by the caller)."""
    a = siso_sequential([fm.relu_conv_bn(channels, 3, 2), fm.relu_conv_bn(channels, 3, 1)])
    shortcut = siso_sequential([fm.avg_pool(2, 2), fm.siso_layer("ConvBN", _conv_bn(1, 1), {"filters": channels})])
    i_in, i_out = identity()
    s_in, s_out = fm.add(2)
    i_out["out"].connect(a[0]["in"])
    i_out["out"].connect(shortcut[0]["in"])
    a[1]["out"].connect(s_in["in0"])
    shortcut[1]["out"].connect(s_in["in1"])
    return i_in, s_out


def nb201_network(ops, channels: int = 8, cells_per_stage: int = 1):
    """The NAS-Bench-201 network of one cell (module docstring) as ``(inputs, outputs)``."""
    parts = [fm.siso_layer("ConvBN", _conv_bn(3, 1), {"filters": channels})]
    for stage in range(3):
        if stage > 0:
            channels *= 2
            parts.append(_nb201_reduction(channels))
        parts += [nb201_cell(ops, channels) for _ in range(cells_per_stage)]
    parts += [fm.batch_norm(), fm.relu(), fm.global_avg_pool()]
    return siso_sequential(parts)


def nb201_space(channels: int = 8, cells_per_stage: int = 1):
    """The NAS-Bench-201 space: 6 edge ops (``D(OPS)``, named ``edge_to<-from``) shared by every cell."""

    def fn():
        hs = {f"edge_{t}<-{f}": D(list(NB201_OPS), name=f"edge_{t}<-{f}") for t, f in nb201_table.EDGES}
        order = [f"edge_{t}<-{f}" for t, f in nb201_table.EDGES]
        return substitution_module(
            "NB201Network",
            lambda dh: nb201_network([dh[n] for n in order], channels, cells_per_stage),
            hs,
            ["in"],
            ["out"],
        )

    return LanguageSpace(fn, "nb201_language")


def nb201_architecture(arch, space: LanguageSpace | None = None) -> Architecture:
    """The language assignment of a NAS-Bench-201 cell: ``|op~0|+|op~0|op~1|+|...|`` or 6 op indices."""
    toks = nb201_table.parse_arch_string(arch) if isinstance(arch, str) else np.asarray(arch, np.int64)
    if toks.shape != (6,) or toks.min() < 0 or toks.max() >= len(NB201_OPS):
        raise ValueError(f"a NAS-Bench-201 cell is 6 op indices in [0, {len(NB201_OPS)}), got {arch!r}")
    by_name = {f"edge_{t}<-{f}": NB201_OPS[int(k)] for (t, f), k in zip(nb201_table.EDGES, toks)}
    return _assignment(space or nb201_space(), by_name)


def nb101_space(stem_channels: int = 16, num_stacks: int = 2, cells_per_stack: int = 1):
    """The NAS-Bench-101 space: 21 edge bits (``e{i}_{j}``) and 5 ops (``op{v}``) shared by every cell."""

    def fn():
        hs = {f"e{i}_{j}": D([0, 1], name=f"e{i}_{j}") for i in range(7) for j in range(i + 1, 7)}
        hs.update({f"op{v}": D(list(NB101_OPS), name=f"op{v}") for v in range(1, 6)})

        def build(dh):
            m = np.zeros((7, 7), np.int64)
            for i in range(7):
                for j in range(i + 1, 7):
                    m[i, j] = dh[f"e{i}_{j}"]
            return nb101_network(m, [dh[f"op{v}"] for v in range(1, 6)], stem_channels, num_stacks, cells_per_stack)

        return substitution_module("NB101Network", build, hs, ["in"], ["out"])

    return LanguageSpace(fn, "nb101_language")


def nb101_architecture(matrix, ops, space: LanguageSpace | None = None) -> Architecture:
    """The language assignment of a NAS-Bench-101 cell (7x7 upper-triangular ``matrix``, ``ops`` with
    or without ``input``/``output``)."""
    matrix = np.asarray(matrix, np.int64)
    ops = list(ops)
    if ops and ops[0] == "input":
        ops = ops[1:-1]
    if matrix.shape != (7, 7) or len(ops) != 5:
        raise ValueError(f"a NAS-Bench-101 cell is a 7x7 matrix and 5 interior ops, got {matrix.shape}, {len(ops)}")
    by_name = {f"e{i}_{j}": int(matrix[i, j] > 0) for i in range(7) for j in range(i + 1, 7)}
    by_name.update({f"op{v}": ops[v - 1] for v in range(1, 6)})
    return _assignment(space or nb101_space(), by_name)


def _assignment(space: LanguageSpace, by_name: dict) -> Architecture:
    """Values in traversal order (Algorithm 2) for hyperparameters named by ``by_name``'s keys."""
    g = space.build()
    values = []
    for h in unassigned_independent(g):
        base = h.name.rsplit("-", 1)[0]
        if base not in by_name:
            raise ValueError(f"{space.name}: no value given for hyperparameter {base}")
        values.append(by_name[base])
        h.assign_value(by_name[base])
    return Architecture(tuple(values), space.name)


def count_modules(plan, type_name: str, **static) -> int:
    """Number of steps of ``plan`` of ``type_name`` whose static hyperparameters include ``static``."""
    return sum(1 for s in plan.steps if s.type_name == type_name and all((k, v) in s.static for k, v in static.items()))


__all__ = [
    "compute_vertex_channels",
    "count_modules",
    "nb101_architecture",
    "nb101_cell",
    "nb101_network",
    "nb101_space",
    "nb201_architecture",
    "nb201_cell",
    "nb201_network",
    "nb201_space",
]
