"""The searcher contract for EVERY registered searcher, and the baselines' algorithms.

Each registered searcher runs on NAS-Bench-201 cifar10 (package data) twice:
jit'ed ``init/ask/tell`` called step by step from a Python loop, and the
compiled ``lax.scan`` runner. Both must query the same strings with the same
scores; every query is a valid string and none is repeated. Searchers may set
cheap options in ``tests/searcher_settings.py`` (``max_queries`` too).
"""

import functools

import jax
import numpy as np
import pytest

from nas.engine.runner import INIT_FOLD, make_search, told_scores
from nas.searchers import available_searchers, make_searcher
from spaces.benchmarks.registry import make_benchmark
from tests.searcher_settings import cheap_options, searcher_params

QUERIES = 24


@functools.lru_cache(maxsize=1)
def bench():
    return make_benchmark("nb201/cifar10")


def build(name, **over):
    kwargs = cheap_options(name)
    kwargs.setdefault("max_queries", QUERIES)
    kwargs.update(over)
    return make_searcher(name, bench().space, **kwargs)


def metrics_for(searcher) -> tuple[str, ...]:
    """A multi-objective searcher searches error against latency; the others read no metric."""
    return ("latency",) if searcher.num_objectives > 1 else ()


def python_loop(searcher, key):
    """The runner's key schedule, one jit'ed call at a time."""
    b = bench()
    ask, tell, query = jax.jit(searcher.ask), jax.jit(searcher.tell), jax.jit(b.query)
    state = jax.jit(searcher.init)(jax.random.fold_in(key, INIT_FOLD))
    toks, vals = [], []
    for t in range(searcher.num_steps):
        k_ask, k_query, k_tell = jax.random.split(jax.random.fold_in(key, t), 3)
        tokens, state = ask(k_ask, state)
        res = query(k_query, tokens)
        state, metrics = tell(k_tell, tokens, told_scores(searcher, res, b, metrics_for(searcher)), state)
        assert all(np.ndim(v) == 0 for v in metrics.values()), "metrics must be scalars"
        toks.append(np.asarray(tokens))
        vals.append(np.asarray(res["valid"]))
    q = searcher.max_queries
    return np.concatenate(toks)[:q], np.concatenate(vals)[:q]


@pytest.mark.parametrize("name", searcher_params(available_searchers()))
def test_python_loop_equals_scan_no_repeats(name):
    searcher = build(name)
    key = jax.random.PRNGKey(7)
    toks, vals = python_loop(searcher, key)
    hist = jax.jit(make_search(searcher, metrics_for(searcher)))(key, bench())
    np.testing.assert_array_equal(toks, np.asarray(hist.tokens))
    np.testing.assert_array_equal(vals, np.asarray(hist.score))
    space = bench().space
    ids = np.asarray(jax.vmap(space.string_id)(hist.tokens))
    assert np.all(ids >= 0), f"{name} queried invalid strings"
    assert len(set(ids.tolist())) == len(ids), f"{name} queried a string twice"
    assert np.all(np.isfinite(vals))


@pytest.mark.parametrize("name", ["random_search", "regularized_evolution", "local_search"])
def test_baselines_batched_and_unknown_options(name):
    searcher = build(name, batch_size=4, max_queries=30)  # 30 = 7.5 batches: the last one is cut
    hist = jax.jit(make_search(searcher))(jax.random.PRNGKey(1), bench())
    ids = np.asarray(jax.vmap(bench().space.string_id)(hist.tokens))
    assert hist.tokens.shape[0] == 30 and len(set(ids.tolist())) == 30 and np.all(ids >= 0)
    with pytest.raises(ValueError, match="no option"):
        make_searcher(name, bench().space, populaton_size=3)


def hamming(a, b):
    return int(np.sum(np.asarray(a) != np.asarray(b)))


def test_regularized_evolution_children_mutate_the_population():
    """After the random start, each query is one mutation of a member of the
    population, i.e. of one of the last P queries (aging: the oldest died)."""
    s = build("regularized_evolution")  # the registry test's program: compiled once
    p, run = s.options.population_size, jax.jit(make_search(s))
    starts, children = [], []
    for seed in range(4):
        h = run(jax.random.PRNGKey(seed), bench())
        toks, vals = np.asarray(h.tokens), np.asarray(h.score)
        for t in range(p, s.max_queries):
            dists = [hamming(toks[t], toks[j]) for j in range(t - p, t)]
            assert min(dists) == 1, (seed, t)
        starts.append(vals[:p])
        children.append(vals[p:])
    # tournaments favour good parents: children beat the random start on average
    assert np.mean(children) > np.mean(starts)


def replay_local_search(toks, vals, num_init, space):
    """Checks a B=1 first-improvement local-search trace against the paper's algorithm.

    Used by tests/test_runner.py on 150-query runs, long enough to reach local optima."""
    seen, phase, start, center, c_score, restarts = set(), "init", [], None, -np.inf, 0
    for t, (tok, v) in enumerate(zip(toks, vals)):
        tok = tuple(int(x) for x in tok)
        if phase == "climb":
            nbrs, mask = space.neighbors(np.asarray(center, np.int32))
            nbrs = {tuple(int(x) for x in n) for n, m in zip(np.asarray(nbrs), np.asarray(mask)) if m}
            if tok in nbrs:
                if v > c_score:  # first improvement: move at once
                    center, c_score = tok, v
            else:  # only allowed at a local optimum: every neighbour already queried
                assert nbrs <= seen, f"query {t} left the neighbourhood before it was exhausted"
                phase, start, restarts = "init", [], restarts + 1
        if phase == "init":
            start.append((v, tok))
            if len(start) == num_init:
                c_score, center = max(start, key=lambda x: x[0])
                phase = "climb"
        seen.add(tok)
    return restarts


def test_local_search_full_neighborhood_moves_to_best():
    space = bench().space
    s = make_searcher("local_search", space, max_queries=60, num_init=5, full_neighborhood=True)
    h = jax.jit(make_search(s))(jax.random.PRNGKey(3), bench())
    toks, vals = np.asarray(h.tokens), np.asarray(h.score)
    center = toks[int(np.argmax(vals[:5]))]
    # the first sweep queries all 24 neighbours of the best start string
    assert all(hamming(center, toks[t]) == 1 for t in range(5, 29))
    best = toks[5 + int(np.argmax(vals[5:29]))]
    if vals[5:29].max() > vals[:5].max():  # improved: the next sweep is around the best neighbour
        assert hamming(best, toks[29]) == 1
