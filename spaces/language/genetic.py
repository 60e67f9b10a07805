"""Table 1's Genetic CNN space (Xie & Yuille 2017, Section 3.1) in the language (``spaces.language.table1``
documents it): stages of nodes whose wiring is a binary code, structural or with the code traced
(``gated``: every architecture one compiled program)."""

from __future__ import annotations

from spaces.language import flax_modules as fm
from spaces.language.hyperparameters import D, DependentHyperparameter
from spaces.language.library import basic_module, siso_sequential, substitution_module

GENETIC_NODES = (3, 4)
GENETIC_CHANNELS = (8, 16)


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


def genetic_space(
    gated: bool = False, nodes: tuple[int, ...] = GENETIC_NODES, channels: tuple[int, ...] = GENETIC_CHANNELS
):
    """Stages of ``nodes`` nodes with ``channels`` channels each (Xie & Yuille's CIFAR-10 network has 3 stages
    of 3, 4 and 5 nodes), 2x2 max pools between them, global average pool."""
    if len(nodes) != len(channels):
        raise ValueError(f"genetic_space: one channel count per stage, got nodes={nodes}, channels={channels}")
    stage = _genetic_stage_gated if gated else _genetic_stage
    parts = []
    for s, (k, ch) in enumerate(zip(nodes, channels)):
        if s > 0:
            parts.append(fm.max_pool(2, 2))
        parts.append(stage(_genetic_bits(k, s + 1), k, ch))
    parts.append(fm.global_avg_pool())
    return siso_sequential(parts)


def genetic_gated_space(nodes: tuple[int, ...] = GENETIC_NODES, channels: tuple[int, ...] = GENETIC_CHANNELS):
    return genetic_space(gated=True, nodes=nodes, channels=channels)


def genetic_codes(g, nodes: tuple[int, ...] = GENETIC_NODES) -> list[list[int]]:
    """The binary code of each stage of a terminal Genetic graph ``g`` (bits in Xie & Yuille's order)."""
    values = {h.name.rsplit("-", 1)[0]: h.value for h in g.hyperparameters.values() if h.name.startswith("s")}
    return [[int(values[f"s{s + 1}_{i + 1}{j + 1}"]) for j in range(k) for i in range(j)] for s, k in enumerate(nodes)]


def genetic_active_params(
    codes: list[list[int]], nodes: tuple[int, ...] = GENETIC_NODES, channels: tuple[int, ...] = GENETIC_CHANNELS
) -> int:
    """Parameters of the structural Genetic network of ``codes`` (one list of bits per stage),
    without the head: conv3x3 (no bias) + BN scale and bias per default node and kept node."""
    total, in_ch = 0, 1
    for code, k, ch in zip(codes, nodes, channels):
        kept, _, _ = genetic_topology(code, k)
        total += (9 * in_ch * ch + 2 * ch) + (1 + sum(kept)) * (9 * ch * ch + 2 * ch)
        in_ch = ch
    return total
