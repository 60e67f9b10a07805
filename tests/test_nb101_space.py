"""NAS-Bench-101 space: official hash, canonical index, validity, moves, features, specs.

Real cells come from ../shared/data/nb101/data-1k.json (1,000 cells with their
official module hash as ``key``).
"""

import json

import jax
import numpy as np
import pytest

from spaces import nb101
from spaces.nb101_encodings import NUM_PATHS, path_indices_reference
from spaces.nb101_hash import prune as host_prune
from tests.conftest import shared_file

S = nb101.SPACE
ids_fn = jax.jit(jax.vmap(S.string_id))


@pytest.fixture(scope="module")
def samples():
    """1,000 uniform valid strings (one batch shape everywhere, so each function compiles once)."""
    return np.asarray(jax.jit(jax.vmap(S.sample))(jax.random.split(jax.random.PRNGKey(0), 1000)))


@pytest.fixture(scope="module")
def data1k():
    with open(shared_file("nb101/data-1k.json")) as f:
        d = json.load(f)
    tokens = np.stack([S.from_spec({"matrix": m, "ops": o}) for m, o in zip(d["adjacency"], d["operations"])])
    return d, tokens


def relabel(tokens, rng):
    """A random topological relabelling of the interior vertices (keeps the matrix upper-triangular)."""
    m = np.asarray(S.to_spec(tokens)["matrix"])
    ops = list(tokens[21:])
    placed, order = set(), []
    while len(order) < 5:
        preds_placed = [all(u in placed or u == 0 for u in np.flatnonzero(m[:, v])) for v in range(1, 6)]
        ready = [v for v in range(1, 6) if v not in placed and preds_placed[v - 1]]
        v = int(rng.choice(ready))
        placed.add(v)
        order.append(v)
    new = {0: 0, 6: 6, **{v: i + 1 for i, v in enumerate(order)}}
    m2 = np.zeros_like(m)
    for a, b in zip(*np.nonzero(m)):
        m2[new[a], new[b]] = 1
    ops2 = [0] * 5
    for v in range(1, 6):
        ops2[new[v] - 1] = ops[v - 1]
    assert not np.any(np.tril(m2))
    return np.asarray(list(m2[nb101.EDGE_I, nb101.EDGE_J]) + ops2, np.int32)


def add_dangling(tokens, rng):
    """Edges to/from vertices that pruning removes: input->v with v a sink, or v->output with v a source."""
    t = tokens.copy()
    m = np.asarray(S.to_spec(t)["matrix"])
    for v in range(1, 6):
        if m[:, v].any() or m[v, :].any():
            continue  # only unused vertices of cells with < 7 vertices
        e = nb101._EDGE_POS[0, v] if rng.random() < 0.5 else nb101._EDGE_POS[v, 6]
        t[e] = 1
        t[21 + v - 1] = rng.integers(3)
    return t


def test_official_hash_matches_all_1000_keys(data1k):
    d, tokens = data1k
    assert [S.official_hash(t) for t in tokens] == d["key"]


def test_canonical_ids_distinct_and_invariant(data1k):
    d, tokens = data1k
    ids = np.asarray(ids_fn(tokens))
    assert np.all(ids >= 0) and len(set(ids.tolist())) == 1000  # 1,000 distinct hashes -> distinct codes
    rng = np.random.default_rng(0)
    moved = np.stack([add_dangling(relabel(t, rng), rng) for t in tokens])
    assert np.any(moved != tokens)
    n_dangling = sum(int(t[:21].sum() > s[:21].sum()) for t, s in zip(moved, tokens))
    assert n_dangling > 100  # the 158 cells with < 7 vertices got dangling edges
    np.testing.assert_array_equal(np.asarray(ids_fn(moved)), ids)
    for j in range(0, 1000, 50):  # the official hash agrees that these are the same cell
        assert S.official_hash(moved[j]) == d["key"][j]
    dec = np.stack([nb101.decode_code(c) for c in ids])  # the code decodes to a string of the same cell
    np.testing.assert_array_equal(np.asarray(ids_fn(dec)), ids)


def test_equal_hash_iff_equal_code_on_random_cells(samples):
    rng = np.random.default_rng(1)
    toks = np.concatenate([samples[:500], np.stack([relabel(t, rng) for t in samples[:500]])])
    ids = np.asarray(ids_fn(toks)).tolist()
    hashes = [S.official_hash(t) for t in toks]
    pairs = set(zip(ids, hashes))
    assert len(pairs) == len(set(ids)) == len(set(hashes))  # a bijection between codes and hashes
    assert len(set(ids)) < len(ids)  # the relabelled copies did collide


def test_validity_is_the_official_rule():
    rng = np.random.default_rng(2)
    toks = np.concatenate([rng.integers(0, 2, (1000, 21)), rng.integers(0, 3, (1000, 5))], 1).astype(np.int32)
    got = np.asarray(ids_fn(toks)) >= 0  # string_id is -1 exactly for invalid strings
    want = []
    for t in toks:
        spec = S.to_spec(t)
        pr = host_prune(np.asarray(spec["matrix"]), spec["ops"])
        want.append(pr is not None and pr[0].sum() <= 9)
    np.testing.assert_array_equal(got, np.asarray(want))
    assert np.any(got & (toks[:, :21].sum(1) > 9))  # dangling edges beyond 9 are allowed, as officially
    assert np.any(~got) and np.any(got)
    special = np.array([[1] * 21 + [0, 0, 3, 0, 0], [0] * 26], np.int32)  # op out of range; input not connected
    assert np.all(np.asarray(ids_fn(np.concatenate([special, toks[2:]])))[:2] == -1)


def test_sample_mutate_neighbors(samples):
    toks = samples
    ids = np.asarray(ids_fn(toks))
    assert np.all(ids >= 0) and len(set(ids.tolist())) > 300  # small cells have many strings
    kids = jax.jit(jax.vmap(S.mutate))(jax.random.split(jax.random.PRNGKey(4), 1000), toks)
    kid_ids = np.asarray(ids_fn(kids))
    assert np.all(kid_ids >= 0) and np.all(kid_ids != ids)
    edits = np.asarray(kids != toks).sum(1)
    assert 2.5 < edits.mean() < 5.5  # ~21/7 edge flips + ~5/5 op changes, conditioned on a new valid cell
    nbrs, mask = jax.jit(S.neighbors)(toks[0])
    nbrs, mask = np.asarray(nbrs), np.asarray(mask)
    assert nbrs.shape == (31, 26) and np.all(np.sum(nbrs != np.asarray(toks[0]), 1) == 1)
    nb_ids = np.asarray(ids_fn(np.concatenate([nbrs, toks[31:]])))[:31]
    want = {i for i in nb_ids.tolist() if i >= 0 and i != ids[0]}
    assert set(nb_ids[mask].tolist()) == want and mask.sum() == len(want)


def test_step_mask_keeps_raw_edges_at_most_nine():
    t = np.zeros(26, np.int32)
    t[:9] = 1
    assigned = np.zeros(26, bool)
    assigned[:9] = True
    assert np.asarray(S.step_mask(t, assigned, 12)).tolist() == [True, False, False]
    assert np.asarray(S.step_mask(t, assigned, 22)).tolist() == [True, True, True]
    assigned[8] = False
    assert np.asarray(S.step_mask(t, assigned, 12)).tolist() == [True, True, False]

    def draw(key):  # autoregressive sampling in a random order, each token uniform over allowed values
        k_perm, k_val = jax.random.split(key)
        order = jax.random.permutation(k_perm, 26)

        def step(carry, xs):
            tok, asg = carry
            pos, k = xs
            allowed = S.step_mask(tok, asg, pos) & jax.numpy.asarray(S.value_mask)[pos]
            v = jax.random.categorical(k, jax.numpy.where(allowed, 0.0, -jax.numpy.inf))
            return (tok.at[pos].set(v), asg.at[pos].set(True)), None

        init = (jax.numpy.zeros(26, jax.numpy.int32), jax.numpy.zeros(26, bool))
        return jax.lax.scan(step, init, (order, jax.random.split(k_val, 26)))[0][0]

    toks = np.asarray(jax.jit(jax.vmap(draw))(jax.random.split(jax.random.PRNGKey(5), 300)))
    assert toks[:, :21].sum(1).max() == 9 and np.all(toks[:, 21:] < 3)


def test_features_match_reference_and_are_invariant(samples):
    toks = samples
    all_feats = jax.jit(jax.vmap(lambda t: {k: S.features(t, k) for k in S.feature_kinds}))  # one compilation
    feats = {k: np.asarray(f) for k, f in all_feats(toks).items()}
    for kind, f in feats.items():
        assert f.shape == (1000, S.feature_dim(kind))
    assert S.feature_dim("onehot") == 57 and S.feature_dim("adjacency") == 36 and NUM_PATHS == 364
    assert S.feature_dim("trunc_path") == 40 and S.feature_dim("trunc_path:100") == 100
    np.testing.assert_array_equal(feats["trunc_path"], feats["path"][:, :40])
    for t, f in zip(toks[:300], feats["path"]):
        spec = S.to_spec(t)
        want = np.zeros(364)
        want[path_indices_reference(np.asarray(spec["matrix"]), list(t[21:]))] = 1
        np.testing.assert_array_equal(f, want)
    rng = np.random.default_rng(7)
    moved = np.stack([relabel(t, rng) for t in toks])
    path2 = np.asarray(all_feats(moved)["path"])
    np.testing.assert_array_equal(path2, feats["path"])
    adj = feats["adjacency"]
    assert np.all(adj[:, 21:].reshape(1000, 5, 3).sum(-1) <= 1) and np.all(adj[:, :21].sum(1) <= 9)
    with pytest.raises(ValueError, match="unknown feature kind"):
        S.feature_dim("gcn")


def test_spec_roundtrip_and_errors():
    t = np.array([1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1, 0, 1, 2, 1, 0, 0, 2], np.int32)
    spec = S.to_spec(t)
    assert spec["ops"][0] == "input" and spec["ops"][-1] == "output" and len(spec["matrix"]) == 7
    np.testing.assert_array_equal(S.from_spec(spec), t)
    small = {"matrix": [[0, 1, 0], [0, 0, 1], [0, 0, 0]], "ops": ["input", "maxpool3x3", "output"]}
    t3 = S.from_spec(small)
    assert S.official_hash(t3) is not None and int(S.string_id(t3)) >= 0
    with pytest.raises(ValueError, match="upper-triangular"):
        S.from_spec({"matrix": [[0, 0], [1, 0]], "ops": ["input", "output"]})
    with pytest.raises(ValueError, match="ops must be"):
        S.from_spec({"matrix": [[0, 1, 0], [0, 0, 1], [0, 0, 0]], "ops": ["input", "conv5x5", "output"]})
