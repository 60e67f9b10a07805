"""AnalogNAS-Bench (Benmeziane et al., 2025, arXiv:2506.18495): NAS-Bench-201
cells trained on CIFAR-10 and evaluated for analog in-memory computing.

The ``analog-nasbench`` package (``data.anb``, a pickle of ``Architecture``
objects) gives every one of the 15,625 NB201 cells its own accuracies (%):

- ``baseline``: full-precision digital accuracy;
- ``ptq`` / ``qat``: after post-training quantization / quantization-aware training;
- ``noisy``: digitally trained weights on a simulated noisy analog crossbar;
- ``analog``: hardware-aware (analog) trained, on the noisy crossbar;
- ``baseline_drift_<t>`` / ``analog_drift_<t>`` for t = 60, 3600, 86400,
  2592000 s: the same after conductance drift for t seconds. The package stores
  "mean ± spread" over its drift repetitions; we use the mean.

Registered as ``analognas/<metric>``. There is ONE value per cell: no seeds
(the "random" protocol equals "mean") and no separate test split
(``has_test=False``; reports show the metric's error, 100 - accuracy). The
package has no training time: ``cost`` is 1 per query.

Tokens are NB201's (``spaces.nb201.SPACE``: edges (1<-0), (2<-0), (2<-1),
(3<-0), (3<-1), (3<-2), ops none, skip, conv1x1, conv3x3, avgpool). The
package's 6-tuples list the edges by source node, (1<-0), (2<-0), (3<-0),
(2<-1), (3<-1), (3<-2), with ops 0 skip_connect, 1 none, 2 nor_conv_3x3,
3 nor_conv_1x1, 4 avg_pool_3x3. We established this against NB201's own
cifar10-valid accuracies: all-``1`` cells score 10% (no path), the 341 cells at
10% are exactly NB201's disconnected cells, and among the 720 edge orders this
one correlates best with NB201 (Pearson 0.994; the mirrored DAG 0.988 comes
second, and 98% of the 1,330 cell pairs that tell the two apart side with
ours); tests check the known cells.
"""

from __future__ import annotations

import os
import pickle

import numpy as np

from spaces import nb201
from spaces.benchmarks.cache import cached_arrays, load_package_pickle, package_version, reinstall
from spaces.benchmarks.tabular import TabularBenchmark
from spaces.data_files import data_errors
from spaces.files import DataError, MissingPackageError

ACCURACIES = {m: f"{m}_accuracy" for m in ("baseline", "ptq", "qat", "noisy", "analog")}
DRIFTS = {f"{k}_drift_{t}": f"{k}_drift_{t}" for k in ("baseline", "analog") for t in (60, 3600, 86400, 2592000)}
METRICS = {**ACCURACIES, **DRIFTS}  # registry name -> package attribute

# package tuple position of each NB201 token, and package op -> NB201 op index
TUPLE_POSITION = (0, 1, 3, 2, 4, 5)
OP_TO_NB201 = (
    nb201.OPS.index("skip_connect"),
    nb201.OPS.index("none"),
    nb201.OPS.index("nor_conv_3x3"),
    nb201.OPS.index("nor_conv_1x1"),
    nb201.OPS.index("avg_pool_3x3"),
)


def to_nb201_tokens(arch: tuple[int, ...]) -> np.ndarray:
    """A package architecture tuple -> NB201 tokens int32[6]."""
    a = np.asarray(arch, np.int64)
    if a.shape != (6,) or np.any((a < 0) | (a > 4)):
        raise ValueError(f"not an AnalogNAS-Bench architecture tuple: {arch!r}")
    return np.asarray([OP_TO_NB201[a[p]] for p in TUPLE_POSITION], np.int32)


class _Record:
    """Stand-in for the package's pickled classes (their attributes, nothing else)."""


class _Unpickler(pickle.Unpickler):
    # The package module imports pkg_resources (gone from recent setuptools) just
    # to find this file; reading the pickle with stand-ins avoids that import.
    def find_class(self, module, name):
        if module == "analognasbench.data" and name in ("Architecture", "DriftMeasurement"):
            return _Record
        return super().find_class(module, name)


def package_path() -> str:
    """The package's ``data.anb`` pickle."""
    import importlib.util

    spec = importlib.util.find_spec("analognasbench")
    if spec is None or not spec.submodule_search_locations:
        raise MissingPackageError("AnalogNAS-Bench needs the 'analog-nasbench' package: pip install analog-nasbench")
    return os.path.join(list(spec.submodule_search_locations)[0], "data.anb")


def package_table() -> dict:
    """The raw ``data.anb`` dict ``{(0, 0, 0, 4, 3, 2): record}`` (records carry the package's attributes)."""
    return load_package_pickle(package_path(), "analog-nasbench", _Unpickler)


def _value(x) -> float:
    """A metric value: a float, or a drift record's mean (``value``)."""
    return float(x.value) if isinstance(x, _Record) else float(x)


def _arrays() -> dict[str, np.ndarray]:
    table, path = package_table(), package_path()
    with data_errors(path, reinstall("analog-nasbench")):  # entries not as the package ships them
        radix = 5 ** np.arange(5, -1, -1)
        rows = np.asarray([int(to_nb201_tokens(k) @ radix) for k in table])
        if len(table) != 5**6 or len(np.unique(rows)) != 5**6:
            raise DataError(f"{path}: expected the 15625 NB201 cells once each, got {len(table)} entries")
        out = {}
        for name, attr in METRICS.items():
            vals = np.full(5**6, np.nan, np.float32)
            vals[rows] = [_value(getattr(rec, attr)) for rec in table.values()]
            if np.any(~np.isfinite(vals)):
                raise DataError(f"{path}: {attr} has missing values")
            out[name] = vals
    return out


def load_arrays() -> dict[str, np.ndarray]:
    """``{metric: f32[15625]}`` accuracies (%) in NB201 row order (base-5 tokens), cached."""
    return cached_arrays("analog_nasbench", package_version("analog-nasbench"), _arrays)


def load(metric: str = "analog", protocol: str = "mean") -> TabularBenchmark:
    """AnalogNAS-Bench with ``metric`` as the score: one value per cell, no test split."""
    if metric not in METRICS:
        raise ValueError(f"unknown AnalogNAS-Bench metric {metric!r}; choose from {list(METRICS)}")
    return TabularBenchmark.build(
        name=f"analognas/{metric}",
        space=nb201.SPACE,
        dense=True,
        valid=load_arrays()[metric],
        cost=np.ones(5**6, np.float32),
        test=None,
        protocol=protocol,
        report_kind="acc_pct",
    )
