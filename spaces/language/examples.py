"""The paper's example search spaces written in the language (Negrinho et al. 2019).

Each ``figure*`` function is a search-space function (``() -> (inputs, outputs)``); wrap it with
``LanguageSpace(fn, name)``. ``EXAMPLES`` lists them by name.

- ``figure1``: one hidden layer, dropout 0.25/0.5, 100/200/300 units (6 architectures).
- ``figure2``: 1, 2 or 4 dense layers of 300 units with a shared ReLU/tanh choice (6).
- ``figure4``: conv, optional dropout, two parallel chains of 1/2/4 and twice as many convs
  (a dependent hyperparameter), concatenated: 25,008 architectures (Section 5).
- ``figure10``: two convs sharing their filter count and stride: 27 (Appendix A).
- ``figure11``: three convs whose filter counts form a chain of dependent hyperparameters: 243.
- ``figure16``: the ENAS recurrent cell (Appendix B), its connections chosen by a substitution
  module, with ``num_nodes`` nodes (8 in the paper; 4 by default here).
- ``figure18``: ``maybe_one_more(dense)``, a space without bound (Appendix D.1).
- ``figure19_*``: the four compositions of Appendix D.2 with ``a_fn, b_fn, c_fn`` as small
  dense/conv spaces that take one binary hyperparameter.
"""

from __future__ import annotations

import functools

from spaces.language import flax_modules as fm
from spaces.language.hyperparameters import D, DependentHyperparameter
from spaces.language.library import (
    basic_module,
    maybe_one_more,
    siso_optional,
    siso_or,
    siso_repeat,
    siso_sequential,
    substitution_module,
)


def figure1():
    return siso_sequential([fm.dropout(D([0.25, 0.5])), fm.dense(D([100, 200, 300])), fm.relu()])


def figure2():
    h_or, h_repeat = D([0, 1]), D([1, 2, 4])
    return siso_repeat(lambda: siso_sequential([fm.dense(D([300])), siso_or([fm.relu, fm.tanh], h_or)]), h_repeat)


def figure4():
    h_n = D([1, 2, 4])
    h_ndep = DependentHyperparameter(lambda dh: 2 * dh["x"], {"x": h_n})
    c_in, c_out = fm.conv2d(D([64, 128]))
    o_in, o_out = siso_optional(lambda: fm.dropout(D([0.25, 0.5])), D([0, 1]))

    def fn():
        return fm.conv2d(D([64, 128]))

    r1_in, r1_out = siso_repeat(fn, h_n)
    r2_in, r2_out = siso_repeat(fn, h_ndep)
    cc_in, cc_out = fm.concat(2)
    o_in["in"].connect(c_out["out"])
    r1_in["in"].connect(o_out["out"])
    r2_in["in"].connect(o_out["out"])
    cc_in["in0"].connect(r1_out["out"])
    cc_in["in1"].connect(r2_out["out"])
    return c_in, cc_out


def figure10():
    h_filters, h_stride = D([32, 64, 128]), D([1])

    def conv_fn(h_kernel):
        return fm.conv2d(h_filters, h_kernel, h_stride)

    c1 = conv_fn(D([1, 3, 5]))
    c2 = conv_fn(D([1, 3, 5]))
    c1[1]["out"].connect(c2[0]["in"])
    return c1[0], c2[1]


def figure11():
    h_filters = [D([32, 64, 128])]
    h_factor, h_stride = D([1, 2, 4]), D([1])
    io = []
    for i in range(3):
        io.append(fm.conv2d(h_filters[i], D([1, 3, 5]), h_stride))
        if i > 0:
            io[i - 1][1]["out"].connect(io[i][0]["in"])
        if i < 2:
            h_filters.append(DependentHyperparameter(lambda x, y: x * y, {"x": h_filters[i], "y": h_factor}))
    return io[0][0], io[-1][1]


def _mean(k: int):
    def compile_fn(di, dh):
        del di, dh
        return lambda di: {"out": sum(di[f"in{i}"] for i in range(k)) / k}

    return basic_module("Mean", compile_fn, {"k": k}, [f"in{i}" for i in range(k)])


def _enas_input_node(h_units):
    h_in, h_out = fm.dense(h_units)
    x_in, x_out = fm.dense(h_units)
    a_in, a_out = fm.add(2)
    n_in, n_out = fm.activation(D(["relu", "tanh", "sigmoid", "identity"]))
    a_in["in0"].connect(x_out["out"])
    a_in["in1"].connect(h_out["out"])
    n_in["in"].connect(a_out["out"])
    return {"x": x_in["in"], "ht": h_in["in"]}, n_out


def _enas_intermediate_node(h_units):
    return siso_sequential([fm.dense(h_units), fm.activation(D(["relu", "tanh", "sigmoid", "identity"]))])


def figure16(num_nodes: int = 4):
    """ENAS's recurrent cell (Figure 16): node ``i`` takes its input from a chosen earlier node;
    the cell output is the mean of the nodes no other node reads."""
    h_units = D([32, 64, 128, 256])

    def substitution_fn(dh):
        nodes = [_enas_input_node(h_units)] + [_enas_intermediate_node(h_units) for _ in range(1, num_nodes)]
        for i in range(1, num_nodes):
            nodes[i][0]["in"].connect(nodes[dh[str(i)]][1]["out"])
        unused = sorted(set(range(num_nodes)) - set(dh.values()))
        c_in, c_out = _mean(len(unused))
        for j, i in enumerate(unused):
            c_in[f"in{j}"].connect(nodes[i][1]["out"])
        return nodes[0][0], {"ht+1": c_out["out"]}

    hyperps = {str(i): D(list(range(i))) for i in range(1, num_nodes)}
    return substitution_module("Cell", substitution_fn, hyperps, ["x", "ht"], ["ht+1"])


def figure18():
    return maybe_one_more(lambda: fm.dense(D([16, 32])))


def _binary_dense(h):
    return fm.dense(DependentHyperparameter(lambda b: 16 * (1 + b), {"b": h}))


def _binary_act(h):
    return siso_or([fm.relu, fm.tanh], h)


def _binary_dropout(h):
    return fm.dropout(DependentHyperparameter(lambda b: 0.1 + 0.4 * b, {"b": h}))


A_FN, B_FN, C_FN = _binary_dense, _binary_act, _binary_dropout


def figure19_1():
    return siso_repeat(
        lambda: siso_or([lambda: A_FN(D([0, 1])), lambda: B_FN(D([0, 1])), lambda: C_FN(D([0, 1]))], D([0, 1, 2])),
        D([1, 2, 4]),
    )


def figure19_2():
    return siso_or(
        [lambda f=f: siso_repeat(lambda: f(D([0, 1])), D([1, 2, 4])) for f in (A_FN, B_FN, C_FN)], D([0, 1, 2])
    )


def figure19_3():
    h = D([0, 1])
    return siso_or([lambda f=f: siso_repeat(lambda: f(h), D([1, 2, 4])) for f in (A_FN, B_FN, C_FN)], D([0, 1, 2]))


def figure19_4():
    return siso_or(
        [lambda f=f: siso_repeat(f, D([1, 2, 4])) for f in (figure19_1, figure19_2, figure19_3)], D([0, 1, 2])
    )


EXAMPLES = {
    "figure1": figure1,
    "figure2": figure2,
    "figure4": figure4,
    "figure10": figure10,
    "figure11": figure11,
    "figure16": functools.partial(figure16, 4),
    "figure18": figure18,
    "figure19_1": figure19_1,
    "figure19_2": figure19_2,
    "figure19_3": figure19_3,
    "figure19_4": figure19_4,
}
