"""BANANAS and GP-BO: candidates, no repeats, compiled programs per data size, and search quality on NB201."""

import functools
import logging

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nas.core.seen_set import first_in_order
from nas.engine.chunked_loop import chunk_bounds, run_chunked
from nas.searchers import make_searcher
from nas.searchers.bananas import Bananas
from nas.searchers.bo import BOSearcher
from spaces import nb201
from spaces.benchmarks.registry import make_benchmark

TINY = dict(epochs=3, num_members=2, num_layers=2, width=8, num_candidates=20)


@functools.lru_cache(maxsize=2)
def bench(test=False):
    from tests.conftest import SHARED_DATA

    csv = SHARED_DATA / "nb201" / "nats_bench_test_acc.csv"
    if test and not csv.exists():
        pytest.skip(f"{csv} absent")
    return make_benchmark("nb201/cifar10", test_csv=str(csv)) if test else make_benchmark("nb201/cifar10")


def test_nb201_path_encoding_hand_checked():
    # all nor_conv_3x3 (op 3 -> path digit 2): 0->3 = feature 2; 0->1->3 and 0->2->3 = 4 + 2*4 + 2 = 14;
    # 0->1->2->3 = 20 + 2*16 + 2*4 + 2 = 62
    f = np.asarray(nb201.SPACE.features(jnp.asarray([3] * 6), "path"))
    assert np.flatnonzero(f).tolist() == [2, 14, 62]
    # edge 1<-0 "none": only 0->3 and 0->2->3 remain
    f = np.asarray(nb201.SPACE.features(jnp.asarray([0, 3, 3, 3, 3, 3]), "path"))
    assert np.flatnonzero(f).tolist() == [2, 14]


def test_first_in_order():
    ids = jnp.asarray([5, 3, 5, 7, 3, 3, 9])
    assert np.asarray(first_in_order(ids)).tolist() == [True, True, False, True, False, False, True]
    among = jnp.asarray([False, True, True, True, False, True, True])
    assert np.asarray(first_in_order(ids, among)).tolist() == [True, True, True, True, True, False, True]


def test_candidates_are_distinct_in_the_encoding():
    """The paper's code keeps one candidate per path encoding and none equal to a queried one's."""
    s = make_searcher("bananas", bench().space, **{**TINY, "num_candidates": 60})
    state = s.init(jax.random.PRNGKey(0))
    # the best cell has a 'none' on edge 3<-2: edges 2<-1 and 2<-0 lie only on dead paths... except
    # 0->2->3, which is blocked; so mutating them never changes the path encoding
    toks = jnp.asarray([[3, 3, 3, 3, 3, 0]] + [[1, 1, 1, 1, 1, 1]] * 9)
    state, _ = s.tell(jax.random.PRNGKey(2), toks, jnp.arange(10, 0, -1, dtype=jnp.float32), state)
    cand, ok = jax.jit(s.candidates)(jax.random.PRNGKey(3), state)
    feats = np.asarray(jax.vmap(lambda t: nb201.SPACE.features(t, "path"))(cand))[np.asarray(ok)]
    assert len({f.tobytes() for f in feats}) == len(feats) == int(np.sum(ok)) > 10
    queried = {np.asarray(nb201.SPACE.features(t, "path")).tobytes() for t in toks}
    assert not ({f.tobytes() for f in feats} & queried)
    plain = make_searcher("bananas", bench().space, **{**TINY, "num_candidates": 60, "dedup_encoding": False})
    cand2, ok2 = jax.jit(plain.candidates)(jax.random.PRNGKey(3), state)
    feats2 = np.asarray(jax.vmap(lambda t: nb201.SPACE.features(t, "path"))(cand2))[np.asarray(ok2)]
    assert len({f.tobytes() for f in feats2}) < len(feats2)  # without it, duplicates in the encoding


def _told_state(s):
    state = s.init(jax.random.PRNGKey(0))
    toks = jax.vmap(s.space.sample)(jax.random.split(jax.random.PRNGKey(1), 10))
    state, _ = s.tell(jax.random.PRNGKey(2), toks, jnp.arange(10, dtype=jnp.float32), state)
    return state, toks


def test_candidates_are_new_distinct_mutations_of_the_best():
    s = make_searcher("bananas", bench().space, **dict(TINY, max_edits=1))
    state, toks = _told_state(s)
    cand, ok = jax.jit(s.candidates)(jax.random.PRNGKey(3), state)
    cand, ok = np.asarray(cand)[np.asarray(ok)], np.asarray(ok)
    assert ok.sum() == 20
    ids = np.asarray(jax.vmap(s.space.string_id)(jnp.asarray(cand)))
    seen = set(np.asarray(jax.vmap(s.space.string_id)(toks)).tolist())
    assert len(set(ids.tolist())) == 20 and not (set(ids.tolist()) & seen)
    # BANANAS' get_candidates: 20 mutations of the best (score 9; 24 one-edit neighbours, so about
    # 13 distinct), then mutations of the next best parents, in order
    dist = np.asarray([[int(np.sum(c != np.asarray(toks[p]))) for p in (9, 8, 7, 6, 5)] for c in cand])
    from_best = dist[:, 0] == 1
    assert np.all(dist.min(1) == 1)
    assert 8 <= from_best.sum() < 20 and np.all(from_best[: from_best.sum()])


def test_multi_edit_candidates_mix_edit_counts():
    for dedup in (False, True):
        s = make_searcher("bananas", bench().space, **dict(TINY, max_edits=2, dedup_encoding=dedup))
        state, toks = _told_state(s)
        cand, ok = jax.jit(s.candidates)(jax.random.PRNGKey(3), state)
        cand = np.asarray(cand)[np.asarray(ok)]
        assert len(cand) == 20
        dist = np.asarray([[int(np.sum(c != np.asarray(toks[p]))) for p in (9, 8, 7, 6, 5)] for c in cand])
        assert set(dist.min(1).tolist()) == {1, 2}  # one or two edits of a parent, both counts used
        if not dedup:  # 20 draws from the best's 264 neighbours: nearly all distinct and first
            assert set(dist[:15, 0].tolist()) == {1, 2}
    with pytest.raises(ValueError, match="max_edits"):
        make_searcher("bananas", bench().space, max_edits=0)


def test_options_fail_clearly():
    with pytest.raises(ValueError, match="feature kind"):
        make_searcher("bananas", bench().space, encoding="graph2vec")
    with pytest.raises(ValueError, match="multiple of batch_size"):
        make_searcher("bananas", bench().space, num_init=15)
    with pytest.raises(ValueError, match="acquisition"):
        make_searcher("gp_bo", bench().space, acquisition="ucbb")


def _count_compiles(fn):
    """Number of XLA compilations while running ``fn`` (jax's compile log)."""
    records = []
    handler = logging.Handler()
    handler.emit = lambda r: records.append(r.getMessage())
    logger = logging.getLogger("jax._src.interpreters.pxla")
    logger.addHandler(handler)
    try:
        with jax.log_compiles(True):
            fn()
    finally:
        logger.removeHandler(handler)
    return sum("Compiling" in m for m in records)


class _ProgramPerBucket(Bananas):
    """BANANAS as it compiled before its one program: a program per padded data bucket, sums over the bucket."""

    def bucket_for_step(self, t):
        return BOSearcher.bucket_for_step(self, t)

    def predict(self, key, x, y, mask, x_cand, count=None):
        return super().predict(key, x, y, mask, x_cand)


@pytest.mark.slow
def test_one_program_for_every_bucket_equals_a_program_per_bucket():
    s = make_searcher("bananas", bench().space, max_queries=50, bucket_multiple=32, **TINY)
    assert [s.bucket_for_step(t) for t in range(s.num_steps)] == [0, 50, 50, 50, 50]
    assert s.padded_sizes() == (32, 50) and s.breakpoints() == [1]
    gp = make_searcher("bananas", bench().space, max_queries=50, bucket_multiple=32, predictor="gp")
    assert [gp.bucket_for_step(t) for t in range(gp.num_steps)] == [0, 32, 32, 32, 50]  # the GP keeps its buckets
    assert gp.breakpoints() == [1, 4] and chunk_bounds(gp, 5) == [0, 1, 4, 5]  # chunks never span a bucket change
    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    first = _count_compiles(lambda: jax.block_until_ready(run_chunked(s, bench(), keys, progress=False).score))
    assert 1 <= first <= 2 + 12  # the random first step and the model steps, plus a few small host-side ops
    # a second run (new seeds, a new but equal searcher object) compiles nothing
    s2 = make_searcher("bananas", bench().space, max_queries=50, bucket_multiple=32, **TINY)
    keys2 = jax.random.split(jax.random.PRNGKey(1), 3)
    hist = None

    def again():
        nonlocal hist
        hist = run_chunked(s2, bench(), keys2, progress=False)
        jax.block_until_ready(hist.score)

    assert _count_compiles(again) == 0
    ids = np.asarray(jax.vmap(jax.vmap(s.space.string_id))(hist.tokens))
    assert all(len(set(r.tolist())) == 50 for r in ids) and np.all(ids >= 0)
    # the same numbers, bit for bit, as a program per bucket (32 rows for steps 1-3, 50 for step 4)
    per_bucket = run_chunked(_ProgramPerBucket(bench().space, s.options), bench(), keys2, progress=False)
    assert all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(hist), jax.tree.leaves(per_bucket)))


def test_gp_bo_defaults():
    # gp_bo runs in the registry-wide test (tests/test_searchers.py); here its defaults
    s = make_searcher("gp_bo", bench().space)
    assert (s.encoding, s.predictor, s.options.acquisition, s.gp.kernel) == ("adjacency", "gp", "ei", "hamming")
    assert make_searcher("bananas", bench().space).encoding == "path"
