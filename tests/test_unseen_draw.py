"""Exact uniform draws over unqueried strings (nas.core.unseen_draw) and the sorted queried set
(nas.core.dedup.Seen)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nas.core.dedup import EMPTY, PAD, count_repeats, fill_unique, seen_add, seen_contains, seen_init
from nas.core.unseen_draw import (
    decode,
    draw_distinct_ids,
    draw_unseen,
    exact,
    first_draws,
    kth_unseen,
    uniform_unseen,
)
from nas.engine.runner import make_search
from nas.searchers import make_searcher
from spaces.base import CategoricalSpace
from spaces.hpo import mlp_space
from spaces.nb101 import NB101Space
from spaces.nb201 import SPACE as NB201

SPACE = CategoricalSpace("tiny", {"a": [0, 1, 2, 3], "b": [0, 1, 2], "c": ["x", "y"]})  # 24 strings


def chi2(counts: np.ndarray) -> float:
    expected = counts.sum() / counts.size
    return float(((counts - expected) ** 2 / expected).sum())


def test_grid_row_spaces():
    assert NB201.ids_are_grid_rows and SPACE.ids_are_grid_rows
    assert not NB101Space().ids_are_grid_rows  # isomorphic cells share an id
    assert not mlp_space().ids_are_grid_rows  # conditional: inactive tokens do not count
    assert not CategoricalSpace("c", {"a": [1, 2], "b": [3, 4]}, canonical=lambda d: d).ids_are_grid_rows
    toks = jnp.asarray([[3, 2, 1], [0, 0, 0], [1, 2, 0]], jnp.int32)
    ids = jax.vmap(SPACE.string_id)(toks)
    assert (jax.vmap(lambda i: decode(SPACE, i))(ids) == toks).all()


def test_a_grid_too_large_for_int32_rows_draws_new_strings_by_rejection():
    """10^20 strings: hashed ids (spaces.string_ids), so no integer draws; the same key's strings, once seen,
    are rejected and new ones drawn."""
    space = CategoricalSpace("huge", {f"h{i}": list(range(100)) for i in range(10)})
    assert space.plain_product and not space.ids_are_grid_rows and not exact(space)
    draw = jax.jit(lambda seen: uniform_unseen(jax.random.PRNGKey(0), space, seen, 4))
    first = draw(seen_init(8))
    seen = seen_add(seen_init(8), jax.vmap(space.string_id)(first))
    again = draw(seen)
    ids = jax.vmap(space.string_id)(again)
    assert not seen_contains(seen, ids).any() and len(set(ids.tolist())) == 4
    assert not {t.tobytes() for t in np.asarray(again)} & {t.tobytes() for t in np.asarray(first)}


def test_seen_stays_sorted_and_distinct():
    seen = seen_add(seen_init(8), jnp.asarray([9, 3, EMPTY, 3, -1, 7, 0], jnp.int32))
    assert seen.ids.tolist() == [-1, 0, 3, 7, 9, PAD, PAD, PAD] and int(seen.count) == 5
    assert seen_contains(seen, jnp.asarray([3, 4, -1, EMPTY])).tolist() == [True, False, True, False]
    big = seen_add(seen_init(6), jnp.asarray([5, 1, 4, 1, 0, 2, 8, 3], jnp.int32))  # the scan path (B > 4)
    assert big.ids.tolist() == [0, 1, 2, 4, 5, 8] and int(big.count) == 6  # full: 3 dropped


def test_kth_unseen_matches_brute_force():
    rng = np.random.default_rng(0)

    @jax.jit
    def unseen_ids(ids):  # one shape for every case: ids padded with EMPTY
        seen = seen_add(seen_init(16), ids)
        return jax.vmap(lambda r: kth_unseen(seen, r))(jnp.arange(40))

    for _ in range(20):
        ids = rng.choice(40, size=rng.integers(0, 12), replace=False).tolist() + ([-1] if rng.random() < 0.5 else [])
        unseen = [x for x in range(40) if x not in ids]
        got = unseen_ids(jnp.asarray(ids + [EMPTY] * (13 - len(ids)), jnp.int32))
        assert got[: len(unseen)].tolist() == unseen


def test_draw_unseen_is_uniform_over_unseen_and_distinct():
    seen = seen_add(seen_init(24), jnp.asarray([0, 5, 6, 7, 23, 11, 12, 2, 19, 20], jnp.int32))
    draw = jax.jit(jax.vmap(lambda k: draw_unseen(k, SPACE, seen, 3)[1]))
    ids = np.asarray(draw(jax.random.split(jax.random.PRNGKey(0), 7000)))
    assert not np.isin(ids, np.asarray(seen.ids)).any()
    assert all(len(set(row)) == 3 for row in ids.tolist())
    for col in range(3):  # each slot uniform over the 14 unseen strings (chi2, 13 dof: p = 1e-4 at ~40)
        counts = np.bincount(ids[:, col], minlength=24)[np.setdiff1d(np.arange(24), np.asarray(seen.ids))]
        assert counts.min() > 0 and chi2(counts) < 40


def test_canonical_spaces_draw_their_configurations_as_integers():
    """Equivalent strings share an id (two commuting layers): the K = 18 configurations are drawn by rank, each
    draw uniform over the unqueried ones, decoded to a string whose id is the drawn one."""

    def sorted_pair(spec):
        a, b = sorted([spec["x0"], spec["x1"]])
        return {**spec, "x0": a, "x1": b}

    space = CategoricalSpace("pairs", {f"x{i}": [0, 1, 2] for i in range(3)}, canonical=sorted_pair)
    configs = space.configuration_ids
    assert exact(space) and not space.ids_are_grid_rows and len(configs) == space.num_configurations == 18
    seen = seen_add(seen_init(18), jnp.asarray(configs[[0, 4, 9, 17]], jnp.int32))
    draw = jax.jit(jax.vmap(lambda k: draw_unseen(k, space, seen, 2)))
    tokens, ids = draw(jax.random.split(jax.random.PRNGKey(4), 5000))
    ids = np.asarray(ids)
    assert np.isin(ids, configs).all() and not np.isin(ids, np.asarray(seen.ids)).any()
    assert (ids[:, 0] != ids[:, 1]).all()
    assert (np.asarray(jax.vmap(jax.vmap(space.string_id))(tokens)) == ids).all()
    counts = np.bincount(ids[:, 1], minlength=space.size)[np.setdiff1d(configs, np.asarray(seen.ids))]
    assert counts.min() > 0 and chi2(counts) < 37  # 14 unseen, 13 dof: p = 1e-4 at ~37


def test_draw_distinct_ids_is_a_uniform_ordered_sample():
    draw = jax.jit(jax.vmap(lambda k: draw_distinct_ids(k, 24, 20)))
    ids = np.asarray(draw(jax.random.split(jax.random.PRNGKey(1), 6000)))
    assert all(len(set(row)) == 20 for row in ids.tolist()) and ids.min() >= 0 and ids.max() < 24
    for col in (0, 10, 19):  # every position uniform over the space (23 dof: p = 1e-4 at ~55)
        assert chi2(np.bincount(ids[:, col], minlength=24)) < 55
    over = np.asarray(jax.jit(lambda k: draw_distinct_ids(k, 24, 30))(jax.random.PRNGKey(2)))
    assert sorted(over[:24].tolist()) == list(range(24))  # all 24 first, then repeats


def test_first_draws_equals_pairwise_compare():
    from nas.core.dedup import first_occurrence

    cand = jax.random.randint(jax.random.PRNGKey(3), (300,), 0, 200)
    assert (first_draws(cand, 200) == first_occurrence(cand)).all()


def test_random_search_exhausts_a_small_space_without_repeats():
    for b in (1, 5):
        s = make_searcher("random_search", SPACE, max_queries=24, batch_size=b)
        tokens = jax.jit(jax.vmap(make_search(s), in_axes=(0, None)))(
            jax.random.split(jax.random.PRNGKey(4), 3), _Table()
        ).tokens
        assert count_repeats(SPACE, tokens) == 0


def test_exact_fallback_fills_a_stuck_proposal_with_new_strings():
    stuck = jnp.zeros((8, 3), jnp.int32)
    seen = seen_add(seen_init(24), jax.vmap(SPACE.string_id)(stuck[:1]))
    toks, fresh = jax.jit(lambda k: fill_unique(k, SPACE, lambda _: stuck, seen, 5, max_rounds=4, exact_fallback=True))(
        jax.random.PRNGKey(5)
    )
    ids = np.asarray(jax.vmap(SPACE.string_id)(toks))
    assert not fresh.any() and len(set(ids.tolist())) == 5 and 0 not in ids.tolist()


class _Table:
    """A tiny objective: the score is the string id (a pytree with no leaves)."""

    def query(self, key, tokens):
        ids = jax.vmap(SPACE.string_id)(tokens).astype(jnp.float32)
        return {"valid": ids, "test": ids, "cost": jnp.ones_like(ids)}


jax.tree_util.register_pytree_node(_Table, lambda t: ((), None), lambda aux, ch: _Table())


@pytest.mark.parametrize("name", ["regularized_evolution", "local_search"])
def test_evolution_and_local_search_never_repeat_on_a_small_space(name):
    s = make_searcher(
        name,
        SPACE,
        max_queries=20,
        **({"population_size": 5, "tournament_size": 2} if "evo" in name else {"num_init": 3}),
    )
    h = jax.jit(jax.vmap(make_search(s), in_axes=(0, None)))(jax.random.split(jax.random.PRNGKey(6), 4), _Table())
    assert count_repeats(SPACE, h.tokens) == 0
