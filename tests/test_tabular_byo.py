"""Bring your own benchmark: tables from explicit rows, optional cost, canonical strings."""

import itertools

import jax
import numpy as np
import pytest

from nas.engine.runner import make_search
from nas.searchers import make_searcher
from spaces.base import CategoricalSpace
from spaces.benchmarks.tabular import TabularBenchmark

SPACE = CategoricalSpace("byo", {f"x{i}": [0, 1, 2] for i in range(4)})


def score(tokens):
    return float(np.dot(tokens, [1.0, 2.0, 3.0, 4.0]))


def all_strings(space):
    return np.asarray(list(itertools.product(*[range(c) for c in space.cardinalities])), np.int32)


def test_rows_in_any_order_give_the_right_scores():
    strings = all_strings(SPACE)
    perm = np.random.default_rng(0).permutation(len(strings))
    shuffled = strings[perm]
    bench = TabularBenchmark.build(
        name="byo", space=SPACE, valid=[score(s) for s in shuffled], strings=shuffled, report_kind="identity"
    )
    res = bench.query(jax.random.PRNGKey(0), strings[:20])
    np.testing.assert_allclose(np.asarray(res["valid"]), [score(s) for s in strings[:20]])
    np.testing.assert_array_equal(np.asarray(res["cost"]), 0.0)  # cost is optional
    ids = np.asarray(jax.vmap(SPACE.string_id)(shuffled))
    by_id = TabularBenchmark.build(name="byo", space=SPACE, valid=[score(s) for s in shuffled], string_ids=ids)
    np.testing.assert_array_equal(np.asarray(by_id.query(None, strings[:20])["valid"]), np.asarray(res["valid"]))


def test_from_dict_partial_table_and_seeds():
    table = {(2, 1, 0, 0): {"valid": [1.0, 3.0], "test": 5.0, "cost": 7.0}, (0, 0, 0, 1): {"valid": [4.0], "test": 1.0}}
    bench = TabularBenchmark.from_dict(name="byo", space=SPACE, table=table)
    res = bench.query(jax.random.PRNGKey(0), np.asarray([[0, 0, 0, 1], [2, 1, 0, 0], [1, 1, 1, 1]], np.int32))
    np.testing.assert_allclose(np.asarray(res["valid"]), [4.0, 2.0, -np.inf])
    np.testing.assert_allclose(np.asarray(res["test"]), [1.0, 5.0, -np.inf])
    np.testing.assert_allclose(np.asarray(res["cost"]), [0.0, 7.0, 0.0])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({}, "exactly one of strings="),
        ({"strings": [[0, 0, 0, 0], [0, 0, 0, 0]]}, "are the same string"),
        ({"strings": [[0, 0, 0, 3], [0, 0, 0, 0]]}, "invalid string"),
        ({"strings": [[0, 0, 0], [0, 0, 1]]}, "strings must be int[R, 4]"),
        ({"string_ids": [0, 1], "cost": [1.0]}, "cost must have one value per row"),
    ],
)
def test_bad_rows_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        TabularBenchmark.build(name="byo", space=SPACE, valid=[1.0, 2.0], **kwargs)


def sorted_pair(spec):
    """Two interchangeable layers: (a, b) and (b, a) are one network."""
    a, b = sorted([spec["x0"], spec["x1"]])
    return {**spec, "x0": a, "x1": b}


def test_canonical_strings_share_an_id_and_are_never_queried_twice():
    space = CategoricalSpace("pairs", {f"x{i}": [0, 1, 2] for i in range(3)}, canonical=sorted_pair)
    ids = jax.vmap(space.string_id)(np.asarray([[1, 2, 0], [2, 1, 0], [1, 1, 0]], np.int32))
    assert ids[0] == ids[1] != ids[2]
    np.testing.assert_array_equal(np.asarray(space.canonical(np.asarray([2, 1, 2], np.int32))), [1, 2, 2])
    strings = all_strings(space)
    distinct = len(set(np.asarray(jax.vmap(space.string_id)(strings)).tolist()))
    assert distinct == 18  # 6 unordered pairs x 3
    rows = {tuple(int(t) for t in s): float(s.sum()) for s in strings if s[0] <= s[1]}
    bench = TabularBenchmark.from_dict(name="pairs", space=space, table=rows)
    searcher = make_searcher("random_search", space, batch_size=6, max_queries=distinct)
    hist = jax.jit(make_search(searcher))(jax.random.PRNGKey(3), bench)
    got = np.asarray(jax.vmap(space.string_id)(hist.tokens))
    assert len(set(got.tolist())) == distinct
    assert np.all(np.isfinite(np.asarray(hist.score)))


def test_canonical_must_be_idempotent_and_values_distinct():
    with pytest.raises(ValueError, match="idempotent"):
        CategoricalSpace("bad", {"x": [0, 1]}, canonical=lambda s: {"x": 1 - s["x"]})
    with pytest.raises(ValueError, match="lists a value twice"):
        CategoricalSpace("bad", {"a": [1, 1, 2]})
