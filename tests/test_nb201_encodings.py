"""NAS-Bench-201 feature encodings (hand-checked cells) and test-CSV handling."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from spaces import nb201
from spaces.benchmarks import nb201 as nb201_tables
from spaces.files import DataError

SPACE = nb201.SPACE
NONE, SKIP, C1, C3, POOL = range(5)


_features = jax.jit(SPACE.features, static_argnums=1)


def feats(tokens, kind):
    return np.asarray(_features(jnp.asarray(tokens, jnp.int32), kind))


def ones(x):
    return set(np.flatnonzero(x).tolist())


def test_feature_dims_and_kinds():
    assert SPACE.feature_kinds == ("onehot", "adjacency", "path", "trunc_path", "continuous_adjacency")
    for kind, dim in (("onehot", 30), ("adjacency", 30), ("path", 84), ("trunc_path", 20)):
        assert SPACE.feature_dim(kind) == dim
        assert feats([C3] * 6, kind).shape == (dim,)
    with pytest.raises(ValueError, match="unknown feature kind"):
        SPACE.features(jnp.zeros(6, jnp.int32), "gcn")


def test_adjacency_is_per_edge_op_onehot():
    t = [C3, C3, POOL, SKIP, C3, SKIP]
    x = feats(t, "adjacency").reshape(6, 5)
    assert np.array_equal(x.argmax(1), t) and np.all(x.sum(1) == 1)
    np.testing.assert_array_equal(feats(t, "adjacency"), feats(t, "onehot"))


def test_path_encoding_hand_checked_cells():
    # only the direct edge 0->3 is not "none": one length-1 path, op conv3x3 -> feature C3 - 1
    assert ones(feats([NONE, NONE, NONE, C3, NONE, NONE], "path")) == {2}
    # all conv3x3: paths (c3), (c3,c3) twice (shared feature), (c3,c3,c3)
    assert ones(feats([C3] * 6, "path")) == {2, 4 + 2 * 4 + 2, 20 + 2 * 16 + 2 * 4 + 2}
    # |c3~0|+|c3~0|pool~1|+|skip~0|c3~1|skip~2|: 0->3 skip; 0->1->3 (c3,c3); 0->2->3 (c3,skip);
    # 0->1->2->3 (c3,pool,skip)
    t = nb201.parse_arch_string(
        "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|"
    )
    assert ones(feats(t, "path")) == {0, 4 + 2 * 4 + 2, 4 + 2 * 4 + 0, 20 + 2 * 16 + 3 * 4 + 0}
    # the same cell's truncated encoding keeps the paths of length <= 2
    assert ones(feats(t, "trunc_path")) == {0, 14, 12}
    # a none on each path: no path at all (this cell is disconnected)
    assert ones(feats([SKIP, NONE, NONE, NONE, NONE, SKIP], "path")) == set()
    # op order along a path matters: (c1 then pool) != (pool then c1)
    a = feats([C1, NONE, NONE, NONE, POOL, NONE], "path")
    b = feats([POOL, NONE, NONE, NONE, C1, NONE], "path")
    assert ones(a) == {4 + 1 * 4 + 3} and ones(b) == {4 + 3 * 4 + 1}


def test_empty_path_encoding_iff_disconnected():
    """Independent check over all 15,625 cells: no path <=> input cannot reach output."""
    allt = np.asarray(list(itertools.product(range(5), repeat=6)), np.int32)
    enc = np.asarray(jax.jit(jax.vmap(lambda t: SPACE.features(t, "path")))(allt))

    def connected(t):
        reach = {0}
        for (to, frm), op in zip(nb201.EDGES, t):  # edges are listed in topological order
            if op != NONE and frm in reach:
                reach.add(to)
        return 3 in reach

    conn = np.asarray([connected(t) for t in allt])
    assert (~conn).sum() == 341  # NB201's cells that score chance (10% on CIFAR-10)
    np.testing.assert_array_equal(enc.sum(1) > 0, conn)
    assert set(np.unique(enc)) <= {0.0, 1.0} and enc.sum(1).max() == 4


def test_neighbors_and_mutate():
    t = jnp.asarray([C3, C3, POOL, SKIP, C3, SKIP], jnp.int32)

    @jax.jit
    def probe(key, t):
        return *SPACE.neighbors(t), jax.vmap(SPACE.mutate, in_axes=(0, None))(jax.random.split(key, 100), t)

    nbrs, ok, m = map(np.asarray, probe(jax.random.PRNGKey(0), t))
    assert nbrs.shape == (24, 6) and bool(ok.all())
    assert np.all((nbrs != np.asarray(t)).sum(1) == 1)
    assert len({tuple(r) for r in nbrs.tolist()}) == 24
    assert np.all((m != np.asarray(t)).sum(1) == 1)


# -- the test CSV ------------------------------------------------------------------------------------
HEADER = "CIFAR10TestAccuracy200Epochs,ArchitectureString\n"


def arch(tokens):
    return SPACE.to_spec(np.asarray(tokens))


def full_csv(path, edit=None):
    lines = [HEADER]
    for i, t in enumerate(itertools.product(range(5), repeat=6)):
        lines.append(f"{50 + i % 40},{arch(t)}\n")
    if edit:
        lines = edit(lines)
    path.write_text("".join(lines))
    return str(path)


def test_csv_reads_every_cell(tmp_path):
    test = nb201_tables.read_test_csv(full_csv(tmp_path / "ok.csv"), "cifar10")
    assert test.shape == (15625,) and test[0] == 50 and test[41] == 51


@pytest.mark.parametrize(
    "edit, match",
    [
        (lambda ls: ["Acc,ArchitectureString\n"] + ls[1:], "needs columns"),
        (lambda ls: ls[:-1], "1 of 15625 NAS-Bench-201 cells have no"),
        (lambda ls: ls[:5] + ["50,|conv~0|\n"] + ls[6:], r":6: not a NAS-Bench-201 architecture string"),
        (lambda ls: ls[:5] + ["abc," + ls[5].split(",", 1)[1]] + ls[6:], r":6: could not convert"),
        (lambda ls: ls[:5] + ["150," + ls[5].split(",", 1)[1]] + ls[6:], "not an accuracy"),
        (lambda ls: ls[:5] + [ls[4]] + ls[6:], "appears twice"),
        (lambda ls: ls[:5] + ["77\n"] + ls[6:], r":6:"),
    ],
    ids=["columns", "missing-cell", "bad-arch", "bad-number", "out-of-range", "duplicate", "short-row"],
)
def test_csv_garbled_files_fail_clearly(tmp_path, edit, match):
    with pytest.raises(ValueError, match=match):
        nb201_tables.read_test_csv(full_csv(tmp_path / "bad.csv", edit), "cifar10")


def test_csv_missing_empty_or_binary(tmp_path):
    with pytest.raises(DataError, match="test CSV not found"):
        nb201_tables.load("cifar10", test_csv=str(tmp_path / "absent.csv"))
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(ValueError, match="needs columns"):
        nb201_tables.read_test_csv(str(tmp_path / "empty.csv"), "cifar10")
    (tmp_path / "bin.csv").write_bytes(bytes(range(256)) * 4)
    with pytest.raises(ValueError, match="not a UTF-8 CSV"):
        nb201_tables.read_test_csv(str(tmp_path / "bin.csv"), "cifar10")


def test_real_csv_matches_query(nb201_test_csv):
    bench = nb201_tables.load("cifar100", test_csv=nb201_test_csv)
    assert bench.has_test
    t = nb201.parse_arch_string(
        "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|"
    )
    res = jax.jit(bench.query)(jax.random.PRNGKey(0), jnp.asarray(t)[None])
    # that row of the CSV: CIFAR100TestAccuracy200Epochs = 70.29333326822916
    assert abs(float(res["test"][0]) - 70.29333326822916) < 1e-3
