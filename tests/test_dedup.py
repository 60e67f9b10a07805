"""Never spend a query twice: new strings from any proposal, uniform fallbacks, packing helpers."""

import jax
import jax.numpy as jnp
import numpy as np

from nas.core.dedup import count_repeats, fill_unique, pack_first, seen_add, seen_init
from spaces.base import CategoricalSpace

SPACE = CategoricalSpace("tiny", {"a": [0, 1, 2, 3], "b": [0, 1, 2], "c": ["x", "y"]})  # 24 strings


def test_pack_first_keeps_order_and_reports_filled():
    ok = jnp.asarray([False, True, True, False, True])
    (rows, tags), filled = pack_first(ok, 2, jnp.arange(10).reshape(5, 2), jnp.arange(5), fill=-1)
    assert rows.tolist() == [[2, 3], [4, 5]] and tags.tolist() == [1, 2] and filled.tolist() == [True, True]
    (tags,), filled = pack_first(ok, 4, jnp.arange(5), fill=-1)
    assert tags.tolist() == [1, 2, 4, -1] and filled.tolist() == [True, True, True, False]


def test_a_collapsed_proposal_still_gets_new_strings():
    """A converged policy proposes one string only: the uniform fallback fills the batch with new strings."""
    stuck = jnp.zeros((8, 3), jnp.int32)
    seen = seen_add(seen_init(24), jax.vmap(SPACE.string_id)(stuck[:1]))
    toks, fresh = jax.jit(lambda k: fill_unique(k, SPACE, lambda _: stuck, seen, 5, max_rounds=4))(
        jax.random.PRNGKey(0)
    )
    ids = np.asarray(jax.vmap(SPACE.string_id)(toks))
    assert not fresh.any() and len(set(ids.tolist())) == 5 and 0 not in ids.tolist()


def test_nearly_exhausted_space_counts_repeats():
    """20 of 24 strings seen: 4 new ones exist; asking for 6 leaves 2 repeats, which reports count."""
    all_toks = jnp.asarray([[a, b, c] for a in range(4) for b in range(3) for c in range(2)], jnp.int32)
    seen = seen_add(seen_init(24), jax.vmap(SPACE.string_id)(all_toks[:20]))
    toks, _ = fill_unique(jax.random.PRNGKey(1), SPACE, lambda k: all_toks[:1], seen, 6, max_rounds=2)
    run = np.concatenate([np.asarray(all_toks[:20]), np.asarray(toks)])[None]
    assert count_repeats(SPACE, run) == 2
    new = {tuple(t) for t in np.asarray(toks)} - {tuple(t) for t in np.asarray(all_toks[:20])}
    assert len(new) == 4
