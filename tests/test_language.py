"""The search-space language (Negrinho et al. 2019): counts, laziness, dependent hyperparameters,
traversal order, serialization and compilation to flax."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from spaces.language import (
    Architecture,
    D,
    DependentHyperparameter,
    LanguageSpace,
    SubstitutionModule,
    UnboundedSpaceError,
    build,
    ordered_modules,
    unassigned_independent,
    unassigned_now,
)
from spaces.language import flax_modules as fm
from spaces.language.examples import EXAMPLES, figure4, figure11
from spaces.language.library import siso_optional, siso_repeat


@pytest.mark.parametrize(
    "name, count",
    [("figure4", 25008), ("figure10", 27), ("figure11", 243), ("figure1", 6), ("figure2", 6), ("figure16", 6144)],
)
def test_counts_match_the_paper(name, count):
    # 25,008 (Section 5), 27 and 243 (Appendix A); figure16 with 4 nodes: 3! * 4 * 4^4
    assert LanguageSpace(EXAMPLES[name], name).count() == count


def test_count_agrees_with_enumeration_of_sampled_architectures():
    """Figure 19's compositions: the closed-form products against brute-force distinct samples."""
    sp = LanguageSpace(EXAMPLES["figure19_3"], "f19_3")
    rng = np.random.default_rng(0)
    seen = {sp.sample(rng)[1].values for _ in range(400)}
    assert len(seen) == sp.count() == 18  # 3 choices x 3 repeat counts x 2 values of the shared h


def test_unbounded_space_raises_at_the_depth_limit():
    sp = LanguageSpace(EXAMPLES["figure18"], "f18", max_depth=6)
    with pytest.raises(UnboundedSpaceError, match="max_depth=6"):
        sp.count()
    g = sp.build()  # the same space is fine to sample while the recursion stops early
    for h in unassigned_independent(g):
        h.assign_value(h.values[0])  # 0 = no more layers
    assert g.is_terminal()


def test_substitution_is_lazy():
    """A substitution module's subspace is not created before its hyperparameters have values."""
    created = []

    def space():
        h = D([0, 1])

        def sub():
            created.append(1)
            return fm.dense(D([8, 16]))

        return siso_optional(sub, h)

    g = build(space)
    (h,) = unassigned_now(g)
    assert created == [] and any(isinstance(m, SubstitutionModule) for m in ordered_modules(g))
    assert len(g.hyperparameters) == 1  # only the optional's hyperparameter exists
    h.assign_value(1)
    assert created == [1] and not any(isinstance(m, SubstitutionModule) for m in ordered_modules(g))
    assert [x.values for x in unassigned_now(g)] == [[8, 16]]


def test_dependent_chain_figure11():
    """Filters of conv i+1 = filters of conv i x factor, assigned as soon as their inputs are."""
    g = build(figure11)
    order = []
    for h in unassigned_independent(g):
        order.append(h.values)
        h.assign_value({(32, 64, 128): 64, (1, 2, 4): 4}.get(tuple(h.values), h.values[-1]))
    filters = [m.hyperps["filters"].value for m in reversed(ordered_modules(g))]
    assert filters == [64, 256, 1024]
    # Algorithm 2: the last conv (kernel) first, its dependent filters' inputs after the modules' own
    assert order[0] == [1, 3, 5]


def test_dependent_hyperparameter_is_assigned_when_its_inputs_are():
    def space():
        h = D([1, 2, 4])
        dep = DependentHyperparameter(lambda dh: 2 * dh["x"], {"x": h})
        return siso_repeat(lambda: fm.dense(D([4])), dep)

    g = build(space)
    h = next(iter(unassigned_independent(g)))
    dep = next(x for x in g.hyperparameters.values() if isinstance(x, DependentHyperparameter))
    assert not dep.assigned
    h.assign_value(2)
    assert dep.value == 4 and len(list(ordered_modules(g))) == 4  # repeat substituted by 4 dense layers


def test_traversal_order_figure4():
    """Algorithms 2 and 5: breadth-first from the output, inputs by local name."""
    g = build(figure4)
    first = next(iter(unassigned_independent(g)))
    assert first.values == [1, 2, 4]
    first.assign_value(1)
    rest = [h.values for h in unassigned_independent(g) if not h.assign_value(h.values[0])]
    # concat -> (chain 1's conv, chain 2's last conv) -> (the optional, chain 2's first conv) -> first conv
    assert rest == [[64, 128], [64, 128], [0, 1], [64, 128], [64, 128]]


def test_serialization_round_trip_gives_the_same_model():
    sp = LanguageSpace(figure4, "figure4")
    rng = np.random.default_rng(3)
    arch = next(a for _, a in iter(lambda: sp.sample(rng), None) if a.values[0] == 2)  # a mid-sized one
    again = Architecture.from_json(arch.to_json())
    assert again == arch
    x = jax.random.normal(jax.random.PRNGKey(0), (2, 4, 4, 3))
    net1, net2 = sp.compile(arch), sp.compile(again)
    assert net1.plan.signature == net2.plan.signature
    v1 = jax.jit(net1.init)(jax.random.PRNGKey(1), x)
    shapes = jax.tree_util.tree_map(lambda a: a.shape, jax.eval_shape(net2.init, jax.random.PRNGKey(1), x))
    assert shapes == jax.tree_util.tree_map(lambda a: a.shape, v1)
    np.testing.assert_array_equal(jax.jit(net1.apply)(v1, x), jax.jit(net2.apply)(v1, x))


def test_bad_assignments_fail_clearly():
    sp = LanguageSpace(EXAMPLES["figure1"], "figure1")
    with pytest.raises(ValueError, match="not a value of"):
        sp.replay([250, 0.5])
    with pytest.raises(ValueError, match="needs more"):
        sp.replay([100])
    with pytest.raises(ValueError, match="terminal after 2"):
        sp.replay([100, 0.5, 3])
    with pytest.raises(RuntimeError, match="search-space function"):
        D([1, 2])


def test_compiled_network_equals_a_recursive_forward():
    """Algorithm 4 (topological order) against a memoized recursion from the outputs over the same plan."""
    sp = LanguageSpace(figure4, "figure4")
    _, arch = sp.sample(np.random.default_rng(5))
    net = sp.compile(arch)
    x = jax.random.normal(jax.random.PRNGKey(0), (1, 8, 8, 3))
    params = net.init(jax.random.PRNGKey(1), x)["params"]
    steps = net.plan.steps

    def conv(name, h):
        p = params[name]
        y = jax.lax.conv_general_dilated(h, p["kernel"], (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return y + p["bias"]

    memo = {}

    def out_of(i):
        if i not in memo:
            st = steps[i]
            ins = [x if j < 0 else out_of(j) for _, j, _ in st.sources]
            if st.type_name == "Conv2D":
                memo[i] = conv(st.name, ins[0])
            elif st.type_name == "Concat":
                memo[i] = jnp.concatenate(ins, axis=-1)
            else:  # Identity or Dropout (identity at inference)
                memo[i] = ins[0]
        return memo[i]

    want = out_of(net.plan.outputs[0][1])
    np.testing.assert_allclose(net.apply({"params": params}, x), want, rtol=1e-5, atol=1e-5)
    n = arch.values[0]
    assert sum(s.type_name == "Conv2D" for s in steps) == 1 + n + 2 * n
