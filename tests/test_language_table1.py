"""The Table 1 search spaces of Negrinho et al. (2019) written in the language (spaces.language.table1).

Each space flattens, samples, compiles to a flax network and a sampled architecture trains: its
loss on a tiny batch of digits falls in a few Adam steps. Exact checks: Genetic CNN topologies by
hand (Xie & Yuille 2017, Section 3.1), the gated Genetic space is one program whose gates equal
the structural topology, parameter counts of the structural Genetic network, NASNet reduction
cells halve the spatial size through the dependent stride.
"""

import re

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from spaces.language import table1
from spaces.language.compile import plan_of
from spaces.language.training import Network, num_params

pytest.importorskip("sklearn", reason="the digits data need scikit-learn (pip install scikit-learn)")


def tiny_batch(n=32):
    from spaces.language.datasets import load

    d = load("digits")
    return jnp.asarray(d.x_train[:n]), jnp.asarray(d.y_train[:n])


def train_losses(plan, steps=6, lr=1e-2):
    x, y = tiny_batch()
    model = Network(plan, 10)
    traced = jnp.asarray(plan.traced_vector)
    variables = model.init(jax.random.PRNGKey(0), x, traced, False)
    params, stats = variables["params"], variables.get("batch_stats", {})
    opt = optax.adam(lr)
    state = opt.init(params)

    @jax.jit
    def step(params, stats, state):
        def loss_fn(p):
            out, upd = model.apply({"params": p, "batch_stats": stats}, x, traced, True, mutable=["batch_stats"])
            return optax.softmax_cross_entropy_with_integer_labels(out, y).mean(), upd

        (loss, upd), g = jax.value_and_grad(loss_fn, has_aux=True)(params)
        u, state = opt.update(g, state, params)
        return optax.apply_updates(params, u), upd.get("batch_stats", stats), state, loss

    losses = []
    for _ in range(steps):
        params, stats, state, loss = step(params, stats, state)
        losses.append(float(loss))
    return losses


@pytest.mark.parametrize("name", sorted(table1.TABLE1))
def test_every_table1_space_compiles_and_a_sample_trains(name):
    flat = table1.table1_flat(name)
    key = jax.random.PRNGKey(3)
    tokens = np.asarray(flat.sample(key))
    g, arch, _ = flat.decode(tokens)
    plan = plan_of(g)
    losses = train_losses(plan)
    assert np.all(np.isfinite(losses)), losses
    assert losses[-1] < 0.8 * losses[0], (name, arch, losses)  # memorising 32 images
    # the language assignment replays to the same network
    assert plan_of(flat.language.replay(arch)).signature == plan.signature


def test_genetic_topology_by_hand():
    # 4 nodes, code (1,2)=1 (1,3)=0 (2,3)=1 (1,4)=0 (2,4)=0 (3,4)=0: chain 1->2->3, node 4 isolated
    kept, preds, outs = table1.genetic_topology([1, 0, 1, 0, 0, 0], 4)
    assert kept == [True, True, True, False] and preds[:3] == [[-1], [0], [1]] and outs == [2]
    # all zeros: node 1 alone between the default nodes
    assert table1.genetic_topology([0, 0, 0], 3) == ([True, False, False], [[-1], [-1], [-1]], [0])
    # (1,3)=1, (2,3)=1: nodes 1 and 2 read the input, 3 sums them and is the only output
    assert table1.genetic_topology([0, 1, 1], 3) == ([True, True, True], [[-1], [-1], [0, 1]], [2])


def test_genetic_gated_is_one_program_with_the_structural_gates():
    from spaces.language.datasets import load

    data = load("digits")
    gated, structural = table1.table1_space("genetic_gated"), table1.table1_space("genetic")
    rng = np.random.default_rng(0)
    signatures = set()
    for _ in range(6):
        g, arch = gated.sample(rng)
        plan = plan_of(g)
        signatures.add(plan.signature)
        codes = table1.genetic_codes(g)
        g_struct = structural.replay(arch.values)  # its values in the other space (same traversal of the bits)
        assert table1.genetic_codes(g_struct) == codes
        assert num_params(plan_of(g_struct), data) == table1.genetic_active_params(codes) + 16 * 10 + 10
        traced = plan.traced_vector
        gates = {"GatedSum": [], "GatedOutput": []}
        for st in plan.steps:  # topological order: stage 1 before stage 2, node j before node j + 1
            if st.type_name in gates:
                gates[st.type_name].append([float(traced[slot]) for _, slot in st.traced])
        expect_nodes, expect_out = [], []
        for code, k in zip(codes, table1.GENETIC_NODES):
            _, preds, outs = table1.genetic_topology(code, k)
            expect_nodes += [[float(-1 in preds[j])] + [float(i in preds[j]) for i in range(j)] for j in range(k)]
            expect_out.append([float(j in outs) for j in range(k)])
        assert gates["GatedSum"] == expect_nodes and gates["GatedOutput"] == expect_out
    assert len(signatures) == 1


def test_nasnet_reduction_stride_depends_on_the_input_choice():
    for seed in range(3):
        g, _ = table1.table1_space("nasnet").sample(np.random.default_rng(seed))
        select = [dh for m, dh in g.substituted if m.type_name == "SelectOp"]
        assert len(select) == 12  # 3 cells x 2 blocks x 2 inputs
        assert all(dh["stride"] in (1, 2) and (dh["stride"] == 1 or dh["idx"] < 2) for dh in select)
        # the reduction cell's input choices (the second set of cell hyperparameters)
        reduction = [h for h in g.hyperparameters.values() if re.fullmatch(r"b\di\d-2", h.name)]
        assert len(reduction) == 4
        assert sum(dh["stride"] == 2 for dh in select) == sum(h.value < 2 for h in reduction)
