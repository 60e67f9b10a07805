"""Flattening a language space into the fixed-length token contract (spaces/base.py)."""

import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from spaces.language import LanguageSpace
from spaces.language.examples import EXAMPLES
from spaces.language.explore import FlatteningError
from spaces.language.flatten import FlatLanguageSpace
from spaces.string_ids import hash_tokens


@functools.cache
def flat(name):
    return FlatLanguageSpace(LanguageSpace(EXAMPLES[name], name))


def random_strings(space, n, seed=0):
    rng = np.random.default_rng(seed)
    return np.stack([[rng.integers(c) for c in space.cardinalities] for _ in range(n)]).astype(np.int32)


@pytest.mark.parametrize("name", ["figure2", "figure4", "figure16", "figure19_1", "figure19_4"])
def test_active_tokens_are_exactly_those_the_traversal_assigns(name):
    sp = flat(name)
    toks = random_strings(sp, 60)
    act_jit = np.asarray(jax.jit(jax.vmap(sp.active))(jnp.asarray(toks)))
    for t, a in zip(toks, act_jit):
        _, arch, used = sp.decode(t)
        np.testing.assert_array_equal(used, a)
        np.testing.assert_array_equal(sp.from_spec(arch), np.where(a, t, 0))  # to/from the architecture


@pytest.mark.parametrize("name", ["figure1", "figure2", "figure10", "figure11", "figure19_3"])
def test_distinct_canonical_strings_equal_the_count(name):
    sp = flat(name)
    grid = np.asarray(list(itertools.product(*[range(c) for c in sp.cardinalities])), np.int32)
    ids = np.asarray(jax.vmap(sp.string_id)(jnp.asarray(grid)))
    assert len(set(ids.tolist())) == LanguageSpace(EXAMPLES[name], name).count()


def test_string_id_and_canonical_identify_architectures():
    sp = flat("figure4")
    toks = random_strings(sp, 200, seed=1)
    ids = np.asarray(jax.vmap(sp.string_id)(jnp.asarray(toks)))
    archs = [sp.decode(t)[1].values for t in toks]
    for i in range(len(toks)):
        for j in range(i):
            assert (ids[i] == ids[j]) == (archs[i] == archs[j])
    onehot = np.asarray(jax.vmap(lambda t: sp.features(t, "onehot"))(jnp.asarray(toks)))
    act = np.asarray(jax.vmap(sp.active)(jnp.asarray(toks)))
    assert np.array_equal(onehot.sum(1), act.sum(1))  # inactive tokens contribute nothing
    hashed = np.asarray(jax.vmap(lambda t: sp.features(t, "hashed"))(jnp.asarray(toks)))
    assert hashed.shape == (200, sp.hash_dim) and np.all(hashed.sum(1) >= act.sum(1))


def test_mutation_changes_one_hyperparameter_along_the_traversal():
    sp = flat("figure19_1")
    toks = jnp.asarray(random_strings(sp, 100, seed=2))
    keys = jax.random.split(jax.random.PRNGKey(0), toks.shape[0])
    kids = np.asarray(jax.jit(jax.vmap(sp.mutate))(keys, toks))
    before = np.asarray(jax.vmap(sp.active)(toks))
    toks = np.asarray(toks)
    for t, k, a in zip(toks, kids, before):
        changed = (t != k) & a
        assert changed.sum() == 1  # exactly one previously active token changed
        after = sp.active_np(k)
        assert sp.decode(t)[1] != sp.decode(k)[1]
        assert np.all(k[a & after & ~changed] == t[a & after & ~changed])  # the rest of the traversal kept
    ids = np.asarray(jax.vmap(sp.string_id)(jnp.asarray(kids)))
    assert np.all(ids >= 0)


def test_sampling_matches_algorithm_3():
    """Uniform tokens give each architecture the probability random specification gives it (Figure 2)."""
    sp = flat("figure2")
    toks = jax.vmap(sp.sample)(jax.random.split(jax.random.PRNGKey(0), 3000))
    _, counts = np.unique(np.asarray(jax.vmap(sp.string_id)(toks)), return_counts=True)
    # 1/3 per repeat count, then 1/2 per activation: each of the 6 architectures has probability 1/6
    freqs = counts / toks.shape[0]
    assert len(counts) == 6 and np.all(np.abs(freqs - 1 / 6) < 0.03)  # 4.4 standard deviations


def test_neighbors_and_specs():
    sp = flat("figure4")
    t = jnp.asarray(random_strings(sp, 1, seed=4)[0])
    nbrs, ok = sp.neighbors(t)
    act = np.asarray(sp.active(t))
    nbrs, ok = np.asarray(nbrs), np.asarray(ok)
    assert ok.sum() == sum(c - 1 for c, a in zip(sp.cardinalities, act) if a)
    spec = sp.to_spec(t)
    assert spec["space"] == "figure4" and np.array_equal(sp.from_spec(spec), np.where(act, t, 0))


def test_large_spaces_hash_their_ids():
    sp = flat("figure19_4")  # 417 tokens: the product grid does not fit in int32
    assert sp.size > 2**31
    toks = jnp.asarray(random_strings(sp, 50, seed=5))
    ids = np.asarray(jax.vmap(sp.string_id)(toks))
    assert np.all(ids >= 0) and len(set(ids.tolist())) == len({sp.decode(t)[1].values for t in np.asarray(toks)})
    assert int(hash_tokens(jnp.zeros(3, jnp.int32))) != int(hash_tokens(jnp.asarray([0, 0, 1])))


def test_unbounded_and_unflattenable_spaces_fail_clearly():
    from spaces.language import D
    from spaces.language import flax_modules as fm
    from spaces.language.core import UnboundedSpaceError
    from spaces.language.library import substitution_module

    with pytest.raises(UnboundedSpaceError, match="without bound"):
        FlatLanguageSpace(LanguageSpace(EXAMPLES["figure18"], "f18", max_depth=8))

    def big():  # 2^13 combinations, and the substitution creates a hyperparameter
        hs = {f"b{i}": D([0, 1]) for i in range(13)}
        return substitution_module("Big", lambda dh: fm.dense(D([4, 8])), hs, ["in"], ["out"])

    with pytest.raises(FlatteningError, match="create them outside"):
        FlatLanguageSpace(LanguageSpace(big, "big"))
