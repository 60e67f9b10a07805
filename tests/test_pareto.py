"""Non-dominated sorting, crowding distance and hypervolume against hand-made fronts and brute force."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nas.core import hypervolume as hv_mod
from nas.core import pareto
from nas.core.pareto import nondominated_mask

# compiled once per shape for the whole module (eager while loops and scans would compile per call)
front_ranks, front_ranks_2d = jax.jit(pareto.front_ranks), jax.jit(pareto.front_ranks_2d)
crowding_distance, nsga2_priority = jax.jit(pareto.crowding_distance), jax.jit(pareto.nsga2_priority)
insert_front_ranks, nsga2_order = jax.jit(pareto.insert_front_ranks), pareto.nsga2_order
hypervolume, hypervolume_2d, hypervolume_3d = (jax.jit(f) for f in (hv_mod.hypervolume, hv_mod.hypervolume_2d,
                                                                     hv_mod.hypervolume_3d))  # fmt: skip


def brute_ranks(p: np.ndarray) -> np.ndarray:
    """Fronts by peeling, in plain Python."""
    left, rank, f = set(range(len(p))), np.zeros(len(p), int), 0
    while left:
        front = {i for i in left if not any(np.all(p[j] <= p[i]) and np.any(p[j] < p[i]) for j in left)}
        for i in front:
            rank[i] = f
        left -= front
        f += 1
    return rank


def brute_hypervolume(p: np.ndarray, ref: np.ndarray) -> float:
    """Exact: the grid of every coordinate, a cell counted when some point weakly dominates its lower corner."""
    p = p[np.all(p < ref, axis=1)]
    if len(p) == 0:
        return 0.0
    axes = [np.unique(np.concatenate([p[:, j], [ref[j]]])) for j in range(p.shape[1])]
    total = 0.0
    for cell in itertools.product(*[range(len(a) - 1) for a in axes]):
        lo = np.array([a[c] for a, c in zip(axes, cell)])
        size = np.prod([a[c + 1] - a[c] for a, c in zip(axes, cell)])
        if np.any(np.all(p <= lo, axis=1)):
            total += size
    return float(total)


# two hand-made fronts: F0 = {a, b, c}, F1 = {d, e} (d dominated by a, e by b and c), f dominated by d
HAND = np.array([[1.0, 5.0], [2.0, 3.0], [4.0, 1.0], [2.0, 6.0], [4.0, 4.0], [3.0, 7.0]], np.float32)


def test_front_ranks_on_a_hand_made_set():
    for fn in (front_ranks, front_ranks_2d):
        np.testing.assert_array_equal(np.asarray(fn(jnp.asarray(HAND))), [0, 0, 0, 1, 1, 2])


def test_crowding_distance_on_a_hand_made_front():
    ranks = jnp.asarray([0, 0, 0, 1, 1, 2])
    d = np.asarray(crowding_distance(jnp.asarray(HAND), ranks))
    # F0 sorted by both objectives a, b, c: b is interior, (4 - 1) / 3 + (5 - 1) / 4 = 2
    assert np.isinf(d[0]) and np.isinf(d[2]) and d[1] == pytest.approx(2.0)
    assert np.isinf(d[3]) and np.isinf(d[4]) and np.isinf(d[5])  # boundaries of their fronts
    order = np.asarray(nsga2_order(ranks, jnp.asarray(d)))
    assert order.tolist()[:3] == [0, 2, 1] and order.tolist()[3:] == [3, 4, 5]


def test_ranks_ties_failed_and_masked_rows():
    p = jnp.asarray([[1.0, 1.0], [1.0, 1.0], [0.5, 2.0], [jnp.inf, 0.0], [jnp.nan, 1.0], [0.0, 0.0]])
    mask = jnp.asarray([True, True, True, True, True, False])
    for fn in (front_ranks, front_ranks_2d):
        r = np.asarray(fn(p, mask))
        assert r.tolist() == [0, 0, 0, 6, 6, 7]  # copies share a front; failed rows n, padding n + 1
    d = np.asarray(crowding_distance(p, jnp.asarray(front_ranks(p, mask)), mask))
    assert d[3] == d[4] == d[5] == 0.0


@pytest.mark.parametrize("m", [2, 3])
def test_front_ranks_match_brute_force(m):
    rng = np.random.default_rng(m)
    for _ in range(5):
        p = rng.integers(0, 6, size=(40, m)).astype(np.float32)  # a small grid: many ties and copies
        want = brute_ranks(p)
        np.testing.assert_array_equal(np.asarray(front_ranks(jnp.asarray(p))), want)
        if m == 2:
            np.testing.assert_array_equal(np.asarray(front_ranks_2d(jnp.asarray(p))), want)
        np.testing.assert_array_equal(nondominated_mask(p), want == 0)
    ranks, crowd = nsga2_priority(jnp.asarray(p))
    assert np.all(np.asarray(crowd) >= 0)


def test_hypervolume_by_hand():
    ref = jnp.asarray([5.0, 8.0])
    # a: 4 x 3 = 12, b adds (5-2) x (5-3) - overlap ... computed on the grid: 12 + 3*2... use brute force
    assert float(hypervolume_2d(jnp.asarray(HAND[:1]), ref)) == pytest.approx(4 * 3)
    assert float(hypervolume_2d(jnp.asarray(HAND[:3]), ref)) == pytest.approx(4 * 3 + 3 * 2 + 1 * 2)
    # dominated points, copies and points beyond the reference add nothing
    more = jnp.asarray(np.concatenate([HAND, HAND[:2], [[0.0, 9.0], [6.0, 0.0], [5.0, 1.0]]]))
    assert float(hypervolume_2d(more, ref)) == pytest.approx(20.0)
    assert float(hypervolume_2d(more, ref, jnp.zeros(more.shape[0], bool))) == 0.0


@pytest.mark.parametrize("m", [2, 3])
def test_hypervolume_matches_brute_force(m):
    rng = np.random.default_rng(10 + m)
    ref = np.full(m, 5.0, np.float32)
    hv = hypervolume
    for _ in range(6):
        n = 12 if m == 3 else 25
        p = rng.integers(0, 7, size=(n, m)).astype(np.float32)  # ties, copies, points beyond the reference
        mask = rng.random(n) < 0.8
        got = float(hv(jnp.asarray(p), jnp.asarray(ref), jnp.asarray(mask)))
        assert got == pytest.approx(brute_hypervolume(p[mask], ref), abs=1e-4)
    if m == 3:
        assert float(hypervolume_3d(jnp.asarray([[1.0, 2.0, 3.0]]), jnp.asarray(ref))) == pytest.approx(4 * 3 * 2)


@pytest.mark.parametrize("m", [2, 3])
def test_inserted_front_ranks_match_a_full_sort(m):
    rng = np.random.default_rng(20 + m)
    n = 30
    p = jnp.asarray(rng.integers(0, 5, size=(n, m)).astype(np.float32).tolist())
    p = p.at[3].set(jnp.inf)  # a failed evaluation
    mask = np.zeros(n, bool)
    ranks = front_ranks(p, jnp.asarray(mask))
    insert = insert_front_ranks
    for new in rng.permutation(n)[:20]:
        ranks = insert(p, jnp.asarray(mask), ranks, int(new))
        mask[new] = True
        want = np.asarray(front_ranks(p, jnp.asarray(mask)))
        np.testing.assert_array_equal(np.asarray(ranks)[mask], want[mask])
