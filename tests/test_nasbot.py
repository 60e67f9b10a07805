"""NASBOT: the OTMANN distance (by hand, against an exact linear program, its properties), the layer graphs it
reads, the fitted kernel matrix, and a small real search against random search."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nas.searchers import make_searcher
from scripts.experiments.otmann_checks import exact_otmann
from spaces.benchmarks.hpolib import SPACE as HPOLIB
from spaces.benchmarks.registry import make_benchmark
from spaces.nb101 import NB101Space
from spaces.nb201 import SPACE as NB201
from surrogates import otmann
from surrogates.gp import fit_kernel_gp
from surrogates.layer_graphs import ZETA, mismatch_matrix, network_reader

pytestmark = pytest.mark.slow  # NASBOT fits a GP on OTMANN distances at every step

TOY_LABELS = ("ip", "op", "conv3", "conv5")


def chain(labels, masses):
    """A LayerGraph of a chain of layers: input -> ... -> output."""
    n = len(labels)
    adj = np.zeros((n, n), bool)
    adj[np.arange(n - 1), np.arange(1, n)] = True
    return otmann.prepare(
        otmann.LayerGraph(jnp.asarray(labels, jnp.int32), jnp.asarray(masses, jnp.float32), jnp.asarray(adj))
    )


def test_otmann_by_hand():
    mm = jnp.asarray(mismatch_matrix(TOY_LABELS))
    dist = jax.jit(lambda a, b: otmann.otmann(a, b, mm, nu_str=0.5))
    g1 = chain([0, 2, 1], [1, 2, 1])  # ip -> conv3 (mass 2) -> op
    g2 = chain([0, 2, 2, 1], [1, 1, 1, 1])  # ip -> conv3 -> conv3 -> op
    # path lengths (shortest = longest = random walk on a chain), (from ip | to op):
    #   g1: ip (0|2), conv (1|1), op (2|0);  g2: ip (0|3), c1 (1|2), c2 (2|1), op (3|0)
    # C_str = (3 |d_ip| + 3 |d_op|) / 6: ip-ip 1/2, conv-c1 1/2, conv-c2 1/2, op-op 1/2; with nu_str = 0.5
    # every matched unit costs 0.25 < 2 nu_nas, all 4 units match: d = 4 * 0.25 = 1, d_bar = 1 / (4 + 4)
    d, d_bar = dist(g1, g2)
    assert float(d) == pytest.approx(1.0, abs=1e-5) and float(d_bar) == pytest.approx(0.125, abs=1e-6)
    # conv5 layers: each conv unit also pays the mismatch 0.1 sqrt(2 * 2) = 0.2: d = 1 + 2 * 0.2
    g3 = chain([0, 3, 3, 1], [1, 1, 1, 1])
    assert float(dist(g1, g3)[0]) == pytest.approx(1.4, abs=1e-5)
    # a conv of mass 3: one unit is left unassigned and pays nu_nas = 1: d = 1 + 1, d_bar = 2 / (5 + 4)
    g4 = chain([0, 2, 1], [1, 3, 1])
    d, d_bar = dist(g4, g2)
    assert float(d) == pytest.approx(2.0, abs=1e-5) and float(d_bar) == pytest.approx(2 / 9, abs=1e-6)
    # a network is at distance 0 from itself
    assert float(dist(g1, g1)[0]) == pytest.approx(0.0, abs=1e-5)


@pytest.mark.parametrize("space", [NB201, NB101Space(), HPOLIB], ids=lambda s: s.name)
def test_otmann_is_the_linear_program_and_a_pseudo_distance(space):
    reader = network_reader(space)
    mm = jnp.asarray(reader.mismatch)
    toks = jax.vmap(space.sample)(jax.random.split(jax.random.PRNGKey(3), 24))
    nets = jax.vmap(lambda t: otmann.prepare(reader.read(t)))(toks)
    d, d_bar = jax.jit(lambda a, b: otmann.otmann_matrix(a, b, mm, nu_str=0.4))(nets, nets)
    d, d_bar = np.asarray(d), np.asarray(d_bar)
    total = np.asarray(nets.masses, np.float64).sum(1)
    scale = total[:, None] + total[None, :]
    np.testing.assert_allclose(np.diag(d_bar), 0.0, atol=1e-6)  # d(x, x) = 0
    np.testing.assert_allclose(d_bar, d_bar.T, atol=1e-6)  # symmetric
    np.testing.assert_allclose(d / scale, d_bar, rtol=1e-6)
    for i, j in [(0, 1), (2, 3), (4, 5), (6, 7), (8, 9), (10, 11)]:
        want = exact_otmann(otmann.row(nets, i), otmann.row(nets, j), mm, 0.4)
        assert float(d[i, j]) == pytest.approx(want, abs=2e-6 * float(scale[i, j])), (i, j)


def test_nb201_cells_as_layer_graphs():
    read = network_reader(NB201).read
    # edges (1<-0) conv3x3, (3<-0) skip, the rest none: the conv feeds only none edges (no path to the output),
    # so the network is input -> skip -> output; input/output weigh ZETA of max(processing mass, C^2)
    g = read(jnp.asarray([3, 0, 0, 1, 0, 0]))
    np.testing.assert_allclose(np.asarray(g.masses), [ZETA * 256, 0, 0, 0, 16, 0, 0, ZETA * 256])
    assert np.argwhere(np.asarray(g.adj)).tolist() == [[0, 4], [4, 7]]
    # every edge none: the empty network input -> output
    g = read(jnp.zeros(6, jnp.int32))
    assert np.argwhere(np.asarray(g.adj)).tolist() == [[0, 7]]
    # (1<-0) conv3x3 and (3<-1) conv1x1: a chain of 2304 + 256
    g = read(jnp.asarray([3, 0, 0, 0, 2, 0]))
    np.testing.assert_allclose(np.asarray(g.masses)[[1, 5]], [9 * 256, 256])
    shortest = np.asarray(otmann.path_lengths(g))[[0, 1, 5, 7]][:, [0, 3]]  # from the input, to the output
    np.testing.assert_allclose(shortest, [[0, 3], [1, 2], [2, 1], [3, 0]])


def test_nasbot_refuses_spaces_that_are_not_networks():
    from spaces.benchmarks.hpobench import SPACE as HPOBENCH
    from spaces.hpo import mlp_space

    make_searcher("nasbot", HPOBENCH)  # an MLP: depth x width
    with pytest.raises(ValueError, match="not one it can read"):
        make_searcher("nasbot", mlp_space())


@functools.lru_cache(maxsize=1)
def bench():
    return make_benchmark("nb201/cifar10")


def test_fitted_kernel_matrix_is_positive_semidefinite():
    """The raw kernel is not PSD for every beta (docs/nasbot.md); fitted on NB201 samples, the Gram matrix
    K(theta) and K(theta) + noise are."""
    b = bench()
    s = make_searcher("nasbot", b.space, gp_steps=50)
    for seed in range(2):
        toks = jax.vmap(b.space.sample)(jax.random.split(jax.random.PRNGKey(seed), 30))
        y = b.query(jax.random.PRNGKey(0), toks)["valid"]
        nets = s.networks(toks)
        d, d_bar = s.distances(nets, nets)
        h, mask = s.rest_distance(toks, toks), jnp.ones(30, bool)

        def fit(d, d_bar, h, y, mask):
            return fit_kernel_gp(lambda th: s.kernel(th, d, d_bar, h), s.init_theta(d, d_bar, h, mask), y, mask, s.gp)

        theta = jax.jit(fit)(d, d_bar, h, y, mask)["theta"]
        k = np.asarray(s.kernel(theta, d, d_bar, h), np.float64)
        ev = np.linalg.eigvalsh((k + k.T) / 2)
        assert ev.min() > -1e-6 * ev.max(), (seed, ev.min())
        assert ev.min() + np.exp(float(theta["log_noise"])) > 0

