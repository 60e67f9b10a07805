"""A Study's one-step programs skip the proposals their result does not read, and decide the same strings.

``nas.core.dedup.one_step_programs``: inside it ``fill_unique`` proposes only a proposal's first rows when
they fill the batch, and computes its fallbacks only for empty slots. Here each searcher's ``ask`` traced
inside and outside it runs a whole run side by side, on spaces small enough that the first candidates are
often queried already and the fallbacks and the exhausted space's last resort are reached.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nas.core.dedup import computed_where, fill_unique, one_step_programs, seen_add, seen_init
from nas.searchers import make_searcher
from spaces.base import CategoricalSpace
from spaces.params import Float, Int, declared_space

GRID = CategoricalSpace("tiny", {"a": [0, 1, 2, 3], "b": [0, 1, 2], "c": ["x", "y"]})  # 24 strings, grid rows
HPO = declared_space({"lr": Float(1e-3, 1e-1, log=True, num=5), "w": Int(1, 4), "act": ["a", "b"]})  # 40


def _jitted(searcher, one_step: bool):
    """The searcher's jitted ``ask`` (traced inside ``one_step_programs`` or not) and ``tell``."""

    def ask(key, state):
        if one_step:
            with one_step_programs():
                return searcher.ask(key, state)
        return searcher.ask(key, state)

    return jax.jit(ask), jax.jit(searcher.tell)


def _steps(searcher, one_step: bool, steps: int, seed: int = 0):
    """The tokens of ``steps`` ask/tell steps (scores from the tokens), the asks traced inside
    ``one_step_programs`` or not."""

    ask, tell = _jitted(searcher, one_step)
    key = jax.random.PRNGKey(seed)
    state = jax.jit(searcher.init)(jax.random.fold_in(key, 7))
    out = []
    for t in range(steps):
        k_ask, k_tell = jax.random.split(jax.random.fold_in(key, t))
        tokens, state = ask(k_ask, state)
        scores = jnp.sum(tokens * jnp.arange(1, tokens.shape[1] + 1), axis=1).astype(jnp.float32)
        state, _ = tell(k_tell, tokens, scores, state)
        out.append(np.asarray(tokens))
    return np.stack(out)


@pytest.mark.parametrize("space", [GRID, HPO], ids=["grid", "hpo"])
@pytest.mark.parametrize("batch_size", [1, 3])
@pytest.mark.parametrize(
    "name,options",
    [
        ("random_search", {}),
        ("regularized_evolution", {"population_size": 6, "tournament_size": 3, "num_init": 4}),
        ("local_search", {"num_init": 3}),
    ],
)
def test_one_step_asks_propose_the_same_strings(name, options, space, batch_size):
    size = int(np.prod(space.cardinalities))
    steps = size // batch_size + 2  # past the space's end: the last resort's repeats too
    searcher = make_searcher(name, space, max_queries=steps * batch_size, batch_size=batch_size, **options)
    for seed in (0, 1):
        plain, one_step = _steps(searcher, False, steps, seed), _steps(searcher, True, steps, seed)
        np.testing.assert_array_equal(one_step, plain)


def test_fill_unique_head_is_used_only_when_it_fills_the_batch():
    """A head whose first row is queried already: the full rounds decide, as without the head."""
    all_toks = jnp.asarray([[a, b, c] for a in range(4) for b in range(3) for c in range(2)], jnp.int32)
    seen = seen_add(seen_init(24), jax.vmap(GRID.string_id)(all_toks[:10]))

    def propose(k):
        return jnp.concatenate([all_toks[:1], jax.vmap(GRID.sample)(jax.random.split(k, 7))])

    def run(head):
        def f(k):
            with one_step_programs():
                return fill_unique(k, GRID, propose, seen, 2, propose_head=head)

        return jax.jit(f)(jax.random.PRNGKey(3))

    plain = run(None)
    for rows in (2, 4):
        got = run(lambda k, rows=rows: propose(k)[:rows])
        np.testing.assert_array_equal(np.asarray(got[0]), np.asarray(plain[0]))
        np.testing.assert_array_equal(np.asarray(got[1]), np.asarray(plain[1]))


def test_computed_where_skips_only_in_one_step_programs():
    calls = []

    def compute():
        calls.append(1)
        return jnp.ones((2, 3), jnp.int32)

    with one_step_programs():
        skipped = jax.jit(lambda p: computed_where(p, compute))(False)
    assert skipped.tolist() == [[0, 0, 0]] * 2
    assert jax.jit(lambda p: computed_where(p, compute))(False).tolist() == [[1, 1, 1]] * 2


def _asha_jobs(searcher, one_step: bool, steps: int):
    """ASHA's jobs over ``steps`` asks, each told at once (a score from its tokens and fidelity)."""

    ask, tell = _jitted(searcher, one_step)
    key = jax.random.PRNGKey(5)
    state = jax.jit(searcher.init)(key)
    out = []
    for t in range(steps):
        k_ask, k_tell = jax.random.split(jax.random.fold_in(key, t))
        job, state = ask(k_ask, state)
        score = (jnp.sum(job.tokens * jnp.arange(1, 4)) + job.fidelity).astype(jnp.float32)
        state, _ = tell(k_tell, job, score, state)
        out.append(np.concatenate([np.asarray(job.tokens), np.asarray([job.fidelity, job.parent, job.ok])]))
    return np.stack(out)


@pytest.mark.parametrize("space", [GRID, HPO], ids=["grid", "hpo"])
def test_one_step_asha_asks_the_same_jobs(space):
    """Promotions (no draw) and new configurations, up to the space's end."""
    searcher = make_searcher("asha", space, max_queries=30, fidelities=(1, 3, 9))
    np.testing.assert_array_equal(_asha_jobs(searcher, True, 60), _asha_jobs(searcher, False, 60))
