"""Every loader keeps the "data error" promise: a corrupt copy of each file it reads (made here from the real
files) fails with one line ``<file>: <what is wrong>; <fix>`` (a ``DataError``), never a traceback from a parser."""

import json
import os
import pickle
import shutil

import jax
import numpy as np
import pytest

from nas.searchers import make_searcher
from spaces.benchmarks import analog_nasbench, hpolib, nasbench_graph, nb201
from spaces.benchmarks.registry import make_benchmark
from spaces.files import DataError
from surrogates.meta_params import load_params, save_params
from surrogates.meta_training import meta_train
from surrogates.reptile import ReptileConfig
from tests.conftest import shared_file
from tests.test_tnas_suites import TINY, SumTask, tiny

MODEL = tiny(9)  # the one-hot MLP kernel of TINY's 9 one-hot features


@pytest.fixture(scope="module")
def params_file(tmp_path_factory):
    """A real TNAS parameters file (TINY space, no outer steps: the initial kernel and the source design)."""
    path = str(tmp_path_factory.mktemp("tnas") / "tnas_params.npz")
    rep = ReptileConfig(inner_steps=1, batch_size=4, set_min=2, set_max=4)
    meta_train(path, TINY, {"b": SumTask(1), "c": SumTask(2)}, "a", ("a", "b", "c"), MODEL, rep, 0, 1, seed=0,
               progress=False)  # fmt: skip
    return path


# -- corrupt copies: each writes the bad file under tmp and returns (loader call, the file's path) ---------------
def cut(src, dst, fraction=0.5):
    data = open(src, "rb").read()
    dst.write_bytes(data[: int(len(data) * fraction)])
    return str(dst)


def nb201_csv(tmp, how, **_):
    src = shared_file("nb201/nats_bench_test_acc.csv")
    lines = open(src, encoding="utf-8").read().splitlines(keepends=True)
    path = tmp / "test.csv"
    text = {
        "header_only": lines[0],
        "cut_short": "".join(lines[:100]),
        "cut_mid_line": "".join(lines[:100]) + lines[100][:30],
        "non_numeric": "".join(lines[:2]) + lines[2].replace(lines[2].split(",")[0], "abc", 1),
        "binary": None,
    }[how]
    path.write_bytes(b"\x89PNG\x00\xff" * 100) if text is None else path.write_text(text, encoding="utf-8")
    return lambda: make_benchmark("nb201/cifar10", test_csv=str(path)), path


def data1k(tmp, how, **_):
    src = shared_file("nb101/data-1k.json")
    path = tmp / "data-1k.json"
    if how == "truncated":
        cut(src, path)
    else:
        d = json.load(open(src))
        if how == "unequal_lists":
            d["operations"] = d["operations"][:-3]
        elif how == "non_numeric":
            d["108_final_validation_accuracy"][7] = "0.9a"
        elif how == "nan_accuracy":
            d["108_final_validation_accuracy"][7] = float("nan")
        elif how == "missing_field":
            del d["108_final_validation_accuracy"]
        elif how == "bad_cell":
            d["adjacency"][3] = [[0, 1], [0]]
        path.write_text(json.dumps(d))
    return lambda: make_benchmark("nb101/data1k", data_path=str(path)), path


def nb101_cache(tmp, how, **_):
    path = tmp / "nb101.npz"
    if how == "not_npz":
        path.write_bytes(b"PK\x03\x04 not a zip")
    else:  # an .npz of other arrays
        np.savez(path, a=np.arange(3))
    return lambda: make_benchmark("nb101", data_path=str(path)), path


def uci(tmp, how, **_):
    src = os.path.dirname(shared_file("uci/bostonHousing/data.txt"))
    folder = tmp / "boston"
    shutil.copytree(src, folder)
    lines = (folder / "data.txt").read_text().splitlines()
    (folder / "data.txt").write_text("\n".join(lines[:50] + [lines[50][:20]]) + "\n")  # the last row cut short
    return lambda: make_benchmark("mlp/boston", data_path=str(folder)), folder / "data.txt"


def tnas_params(tmp, how, request, **_):
    params_file = request.getfixturevalue("params_file")
    path = tmp / "p.npz"
    if how == "empty":
        path.write_bytes(b"")
    elif how == "truncated":
        cut(params_file, path)
    else:
        w, model, meta, design, step = load_params(params_file)
        if how == "wrong_shape":
            w["net"] = jax.tree.map(lambda x: np.zeros(x.shape[:-1] + (x.shape[-1] + 1,), x.dtype), w["net"])
        elif how == "not_finite":
            w["kernel"]["log_ls"] = np.float32(np.nan)
        elif how == "unfinished":  # an interrupted (or stopped) meta-training
            meta = {**meta, "outer_steps": 4}
        save_params(str(path), w, model, meta, design, step)
        if how == "missing_array":
            arrays = dict(np.load(path))
            del arrays["model"]
            np.savez(path, **arrays)
    return lambda: make_searcher("tnas", TINY, params_file=str(path), max_queries=8), path


def package(tmp, how, monkeypatch, **_):
    """A package's shipped table, truncated or with entries not as shipped (a copy the loader is pointed at)."""
    monkeypatch.setenv("NASJAX_CACHE", str(tmp / "cache"))  # no parsed copy: the file itself is read
    module, name, real = {
        "nb201": (nb201, "nb201/cifar10", lambda: nb201._package_path("cifar10")),
        "hpolib": (hpolib, "hpolib/naval_propulsion", lambda: hpolib.package_path("hpolib", "naval_propulsion")),
        "nasbench_graph": (nasbench_graph, "nasbench_graph/cora", lambda: nasbench_graph.package_path("cora")),
        "analognas": (analog_nasbench, "analognas/analog", analog_nasbench.package_path),
    }[how.split(":")[0]]
    path = tmp / "table.pkl"
    if how.endswith("truncated"):
        cut(real(), path)
    else:  # a readable pickle whose entries lack a field the loader reads
        entry = {"nb201": {"000000": {"train_time": [1.0]}}, "nasbench_graph": {12345: {"valid_perf": 0.5}}}
        path.write_bytes(pickle.dumps(entry[how.split(":")[0]]))
    attr = "_package_path" if module is nb201 else "package_path"
    monkeypatch.setattr(module, attr, lambda *a: str(path))
    return lambda: make_benchmark(name), path


def ray_checkpoint(tmp, how, **_):
    pytest.importorskip("ray.tune", reason='Ray Tune is not installed (pip install "ray[tune]")')
    from nas.adapters.ray_tune import SearcherSearch

    path = tmp / "searcher.pkl"
    path.write_bytes(b"\x80\x05garbage" if how == "garbage" else pickle.dumps([1, 2]))
    return lambda: SearcherSearch("random_search", max_queries=4).restore(str(path)), path


CASES = (
    [("nb201_csv", h) for h in ("header_only", "cut_short", "cut_mid_line", "non_numeric", "binary")]
    + [("data1k", h) for h in ("truncated", "unequal_lists", "non_numeric", "nan_accuracy", "missing_field")]
    + [("data1k", "bad_cell")]
    + [("nb101_cache", h) for h in ("not_npz", "foreign_npz")]
    + [("uci", "cut_mid_line")]
    + [("tnas_params", h) for h in ("empty", "truncated", "missing_array", "wrong_shape", "not_finite", "unfinished")]
    + [("package", f"{p}:truncated") for p in ("nb201", "hpolib", "nasbench_graph", "analognas")]
    + [("package", f"{p}:wrong_entries") for p in ("nb201", "nasbench_graph")]
    + [("ray_checkpoint", h) for h in ("garbage", "not_a_checkpoint")]
)


@pytest.mark.parametrize("kind, how", CASES, ids=[f"{k}-{h}" for k, h in CASES])
def test_every_loader_names_the_file_and_the_fix(kind, how, tmp_path, monkeypatch, request):
    load, path = globals()[kind](tmp_path, how, monkeypatch=monkeypatch, request=request)
    with pytest.raises(DataError) as e:
        load()
    msg = str(e.value)
    assert "\n" not in msg and str(path) in msg and "; " in msg, msg
