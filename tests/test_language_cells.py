"""NAS-Bench-101 and NAS-Bench-201 cells written in the language (spaces.language.cells).

A table's cell (NB201 string or token indices; NB101 adjacency matrix and ops) becomes the
language assignment of the cell space, compiles to the benchmark's network (stem, stacked
cells, downsampling) and its compiled plan has the table cell's ops and edges: per cell, one
module per op, summation nodes whose in-degree is the cell's, NB101 projections for the edges
that leave the input and the concatenation of the vertices that feed the output.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from spaces import nb201 as nb201_table
from spaces.language import cells
from spaces.language.compile import plan_of
from spaces.language.core import InvalidArchitecture

NB201_STRING = "|nor_conv_3x3~0|+|nor_conv_1x1~0|none~1|+|skip_connect~0|avg_pool_3x3~1|nor_conv_3x3~2|"


def forward_shape(net, hw=8):
    x = jnp.zeros((2, hw, hw, 1))
    variables = net.init(jax.random.PRNGKey(0), x)
    return net.apply(variables, x).shape


def test_nb201_string_and_tokens_give_one_assignment_and_network():
    space = cells.nb201_space(channels=4, cells_per_stage=2)
    arch = cells.nb201_architecture(NB201_STRING, space)
    assert arch.values == ("nor_conv_3x3", "nor_conv_1x1", "none", "skip_connect", "avg_pool_3x3", "nor_conv_3x3")
    assert cells.nb201_architecture(nb201_table.parse_arch_string(NB201_STRING), space) == arch
    plan = plan_of(space.replay(arch))
    n_cells = 3 * 2
    # per cell: 2 conv3x3 edges, 1 conv1x1, 1 avg pool, 1 skip; reductions add 2 conv3x3 (stride 2 and 1)
    assert cells.count_modules(plan, "ReLUConvBN", kernel=3, stride=1) == 2 * n_cells + 2
    assert cells.count_modules(plan, "ReLUConvBN", kernel=3, stride=2) == 2
    assert cells.count_modules(plan, "ReLUConvBN", kernel=1) == 1 * n_cells
    assert cells.count_modules(plan, "AvgPool", kernel=3) == 1 * n_cells
    assert cells.count_modules(plan, "Zero") == 0
    # node 1 has one input, node 2 one (the other is none), node 3 three: one 3-input Add per cell
    adds = [len(s.sources) for s in plan.steps if s.type_name == "Add"]
    assert sorted(adds) == sorted([3] * n_cells + [2] * 2)  # + the residual sums of the 2 reductions
    assert forward_shape(space.compile(arch)) == (2, 16)  # 4 -> 8 -> 16 channels


def test_nb201_all_none_node_is_zero():
    space = cells.nb201_space(channels=4)
    arch = cells.nb201_architecture([0, 0, 0, 3, 0, 0], space)  # only 3<-0 carries a conv
    plan = plan_of(space.replay(arch))
    assert cells.count_modules(plan, "Zero") == 0  # nodes 1 and 2 are dead: not reachable from the output
    arch = cells.nb201_architecture([0, 0, 0, 0, 1, 0], space)  # node 1 all none, 3<-1 skip: zeros reach the output
    plan = plan_of(space.replay(arch))
    assert cells.count_modules(plan, "Zero") == 3  # one per cell
    assert forward_shape(space.compile(arch)) == (2, 16)
    with pytest.raises(ValueError, match="NAS-Bench-201"):
        cells.nb201_architecture("|conv~0|", space)


# NAS-Bench-101 example cell (Ying et al. 2019's README): 7 vertices, 9 edges
NB101_MATRIX = np.array(
    [
        [0, 1, 1, 1, 0, 1, 0],
        [0, 0, 0, 0, 0, 0, 1],
        [0, 0, 0, 0, 0, 0, 1],
        [0, 0, 0, 0, 1, 0, 0],
        [0, 0, 0, 0, 0, 0, 1],
        [0, 0, 0, 0, 0, 0, 1],
        [0, 0, 0, 0, 0, 0, 0],
    ]
)
NB101_OPS = ["input", "conv3x3-bn-relu", "conv1x1-bn-relu", "maxpool3x3", "conv3x3-bn-relu", "maxpool3x3", "output"]


def test_nb101_cell_ops_edges_and_channels():
    space = cells.nb101_space(stem_channels=8, num_stacks=2, cells_per_stack=1)
    arch = cells.nb101_architecture(NB101_MATRIX, NB101_OPS, space)
    assert len(arch.values) == 26
    plan = plan_of(space.replay(arch))
    n_cells = 2
    # ops: 2 conv3x3 per cell + the stem; conv1x1: 1 op + 4 projections (edges 0->1, 0->2, 0->3, 0->5)
    assert cells.count_modules(plan, "ConvBNReLU", kernel=3) == 2 * n_cells + 1
    assert cells.count_modules(plan, "ConvBNReLU", kernel=1) == (1 + 4) * n_cells
    assert cells.count_modules(plan, "MaxPool", kernel=3) == 2 * n_cells
    # the output concatenates the 4 vertices that feed it; no vertex sums inputs (in-degree 1 each)
    assert [len(s.sources) for s in plan.steps if s.type_name == "Concat"] == [4] * n_cells
    assert not [s for s in plan.steps if s.type_name == "Add"]
    assert cells.compute_vertex_channels(8, 8, NB101_MATRIX) == [8, 2, 2, 2, 2, 2, 8]
    assert cells.compute_vertex_channels(8, 10, NB101_MATRIX) == [8, 3, 3, 2, 2, 2, 10]
    assert forward_shape(space.compile(arch)) == (2, 16)


def test_nb101_pruning_and_disconnected_cells():
    m = np.zeros((7, 7), int)
    m[0, 1] = m[1, 6] = m[0, 2] = 1  # vertex 2 dangles (no path to the output): pruned
    m[2, 3] = 1
    ops = ["conv3x3-bn-relu", "conv1x1-bn-relu", "conv1x1-bn-relu", "maxpool3x3", "maxpool3x3"]
    space = cells.nb101_space(stem_channels=4)
    plan = plan_of(space.replay(cells.nb101_architecture(m, ops, space)))
    assert cells.count_modules(plan, "ConvBNReLU", kernel=1) == 2  # one projection per cell, no pruned op
    m2 = np.zeros((7, 7), int)
    m2[0, 1] = m2[2, 6] = 1
    with pytest.raises(InvalidArchitecture, match="does not reach"):
        space.replay(cells.nb101_architecture(m2, ops, space))


@pytest.mark.slow
def test_a_table_cell_trains_on_digits():
    from tests.test_language_table1 import train_losses

    space = cells.nb201_space(channels=4)
    plan = plan_of(space.replay(cells.nb201_architecture(NB201_STRING, space)))
    losses = train_losses(plan)
    assert losses[-1] < 0.8 * losses[0], losses
