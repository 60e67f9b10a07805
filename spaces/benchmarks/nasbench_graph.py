"""NAS-Bench-Graph tables (Qin et al., 2022): loaders and the space built from them.

The space (``spaces.nasbench_graph.NBGraphSpace``) needs two lookup arrays built
from the package's table hashes with its ``valid_hash`` (every token string's
row and every row's canonical string); they are built once and cached.
"""

from __future__ import annotations

import functools
import itertools
import os

import numpy as np

from spaces.benchmarks.cache import cached_arrays, load_package_pickle, package_version, reinstall
from spaces.benchmarks.tabular import TabularBenchmark
from spaces.data_files import data_errors
from spaces.files import DataError, MissingPackageError
from spaces.nasbench_graph import DATASETS, LINKS, OPS, OPS_PROTEINS, NBGraphSpace, canonical_hash

FIX = reinstall("nas-bench-graph")


def _package():
    try:
        import nas_bench_graph
    except ImportError as e:  # pragma: no cover - a requirement
        raise MissingPackageError(
            "NAS-Bench-Graph needs the 'nas-bench-graph' package: pip install nas-bench-graph"
        ) from e
    return nas_bench_graph


def package_path(dataset: str) -> str:
    """The package's ``light/<dataset>.bench`` pickle."""
    if dataset not in DATASETS:
        raise ValueError(f"unknown NAS-Bench-Graph dataset {dataset!r}; choose from {list(DATASETS)}")
    return os.path.join(os.path.dirname(os.path.abspath(_package().__file__)), "light", f"{dataset}.bench")


def package_table(dataset: str) -> dict:
    """The raw ``light/<dataset>.bench`` dict ``{hash: {"valid_perf", "perf", "latency", "para"}}``."""
    return load_package_pickle(package_path(dataset), "nas-bench-graph")


def _lookup_arrays(op_names: tuple[str, ...], table_hashes: np.ndarray) -> dict[str, np.ndarray]:
    """Row of every token string (``lut``) and the canonical string of every row (``canon``)."""
    row_of = {int(h): r for r, h in enumerate(table_hashes)}
    lut = np.full(len(LINKS) * len(op_names) ** 4, -1, np.int32)
    for i, (link, *ops) in enumerate(itertools.product(range(len(LINKS)), *[range(len(op_names))] * 4)):
        lut[i] = row_of.get(canonical_hash(link, tuple(op_names[o] for o in ops)), -1)
    # canonical string of a row = the digits of its hash (link index, then ops as indices into OPS)
    digits = np.stack([(table_hashes // 10**p) % 10 for p in (4, 3, 2, 1, 0)], 1)
    ops_in_space = np.asarray([OPS.index(o) for o in op_names])
    pos = np.full(len(OPS), -1)
    pos[ops_in_space] = np.arange(len(op_names))
    canon = np.concatenate([digits[:, :1], pos[digits[:, 1:]]], 1).astype(np.int32)
    if np.any(canon < 0) or np.any(digits[:, 0] >= len(LINKS)):
        raise DataError(f"NAS-Bench-Graph: a table hash uses an op outside the space's op list; {FIX}")
    radix = np.asarray([len(op_names) ** p for p in (4, 3, 2, 1, 0)])
    unreachable = np.flatnonzero(lut[canon @ radix] != np.arange(len(table_hashes)))
    if unreachable.size:
        raise DataError(
            f"NAS-Bench-Graph: {unreachable.size} table rows are not reached by their canonical string; {FIX}"
        )
    return {"lut": lut, "canon": canon}


def _table_arrays(dataset: str) -> dict[str, np.ndarray]:
    table, path = package_table(dataset), package_path(dataset)
    with data_errors(path, FIX):  # entries not as the package ships them
        hashes = np.asarray(sorted(table), np.int64)
        col = {k: np.asarray([float(table[int(h)][k]) for h in hashes], np.float64) for k in ("valid_perf", "perf")}
        extra = {k: np.asarray([float(table[int(h)][k]) for h in hashes], np.float32) for k in ("latency", "para")}
    return {"hashes": hashes, "valid": col["valid_perf"], "test": col["perf"], **extra}


def load_arrays(dataset: str) -> dict[str, np.ndarray]:
    """Host arrays ``hashes`` (sorted), ``valid``, ``test``, ``latency`` (s), ``para`` (M), cached."""
    if dataset not in DATASETS:
        raise ValueError(f"unknown NAS-Bench-Graph dataset {dataset!r}; choose from {list(DATASETS)}")
    tag = package_version("nas-bench-graph")
    return cached_arrays(f"nasbench_graph_{dataset}", tag, lambda: _table_arrays(dataset))


@functools.cache
def space(dataset: str) -> NBGraphSpace:
    """The space of ``dataset`` (one object shared by the 8 datasets with the same 26,206 rows)."""
    ops_set = OPS_PROTEINS if dataset == "proteins" else OPS
    ref = "proteins" if dataset == "proteins" else "cora"  # the 8 non-proteins tables share their hashes
    if dataset != ref:
        return space(ref)
    hashes = load_arrays(ref)["hashes"]
    tag = package_version("nas-bench-graph")
    look = cached_arrays(f"nasbench_graph_lookup_{ref}", tag, lambda: _lookup_arrays(ops_set, hashes))
    return NBGraphSpace("nasbench_graph" + ("_proteins" if ref == "proteins" else ""), ops_set, **look)


def load(dataset: str = "cora", protocol: str = "mean") -> TabularBenchmark:
    """NAS-Bench-Graph on ``dataset``: one validation and test value per architecture."""
    arrays = load_arrays(dataset)
    sp = space(dataset)
    ref = "proteins" if dataset == "proteins" else "cora"
    if not np.array_equal(arrays["hashes"], load_arrays(ref)["hashes"]):
        raise DataError(f"{package_path(dataset)}: its architectures differ from {ref}'s (one space for both); {FIX}")
    return TabularBenchmark.build(
        name=f"nasbench_graph/{dataset}",
        space=sp,
        dense=True,
        valid=arrays["valid"],
        cost=arrays["latency"],
        test=arrays["test"],
        protocol=protocol,
        report_kind="auc_frac" if dataset == "proteins" else "acc_frac",
    )
