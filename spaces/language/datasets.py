"""Datasets for training compiled language networks: no download needed for digits and diabetes.

- ``digits``: scikit-learn's 1,797 handwritten digits, 8x8 grey images (``[N, 8, 8, 1]`` in [0, 1]),
  10 classes: the image task for CNN spaces.
- ``diabetes``: scikit-learn's 442 patients x 10 standardised features, a regression target
  (standardised with the training split's statistics): the task for MLP spaces.
- ``cifar10``: CIFAR-10 through ``tensorflow-datasets`` for users who have it and its data
  (imported lazily; a clear message otherwise). Pixels in [0, 1], ``[N, 32, 32, 3]``.

Splits are a fixed seeded permutation (train 60%, validation 20%, test 20%) so every run sees
the same data; CIFAR-10 keeps its test set and takes the validation split from the training set.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from spaces.files import MissingPackageError

TASKS = ("digits", "diabetes", "cifar10")


@dataclasses.dataclass(frozen=True, eq=False)
class Dataset:
    """Arrays of one task; ``num_outputs`` classes (``kind="classification"``) or 1 (regression)."""

    name: str
    kind: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_valid: np.ndarray
    y_valid: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    num_outputs: int

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(self.x_train.shape[1:])


def _split(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    perm = np.random.default_rng(seed).permutation(n)
    a, b = int(0.6 * n), int(0.8 * n)
    return perm[:a], perm[a:b], perm[b:]


def digits() -> Dataset:
    from sklearn.datasets import load_digits

    d = load_digits()
    x = (d.images / 16.0).astype(np.float32)[..., None]
    y = d.target.astype(np.int32)
    tr, va, te = _split(len(y))
    return Dataset("digits", "classification", x[tr], y[tr], x[va], y[va], x[te], y[te], 10)


def diabetes() -> Dataset:
    from sklearn.datasets import load_diabetes

    d = load_diabetes()
    x, y = d.data.astype(np.float32), d.target.astype(np.float32)
    tr, va, te = _split(len(y))
    mx, sx = x[tr].mean(0), x[tr].std(0) + 1e-8
    my, sy = y[tr].mean(), y[tr].std()
    x, y = (x - mx) / sx, (y - my) / sy
    return Dataset("diabetes", "regression", x[tr], y[tr], x[va], y[va], x[te], y[te], 1)


def cifar10(data_dir: str = "", num_valid: int = 5000) -> Dataset:
    """CIFAR-10 from ``tensorflow-datasets`` (``data_dir`` where its files are; never downloads)."""
    try:
        import tensorflow_datasets as tfds
    except ImportError as e:
        raise MissingPackageError(
            "the cifar10 task needs tensorflow-datasets and its CIFAR-10 files: pip install tensorflow-datasets "
            "tensorflow, then prepare the data once (tfds.builder('cifar10').download_and_prepare()) and pass "
            "its data_dir"
        ) from e
    kwargs = {"data_dir": data_dir} if data_dir else {}
    try:
        train = tfds.as_numpy(tfds.load("cifar10", split="train", batch_size=-1, download=False, **kwargs))
        test = tfds.as_numpy(tfds.load("cifar10", split="test", batch_size=-1, download=False, **kwargs))
    except Exception as e:  # tfds raises its own errors for missing data
        raise FileNotFoundError(
            f"CIFAR-10 is not prepared in {data_dir or 'the default tfds data_dir'}: run "
            "tfds.builder('cifar10', data_dir=...).download_and_prepare() once where the internet is reachable"
        ) from e
    x = train["image"].astype(np.float32) / 255.0
    y = train["label"].astype(np.int32)
    perm = np.random.default_rng(0).permutation(len(y))
    va, tr = perm[:num_valid], perm[num_valid:]
    xt, yt = test["image"].astype(np.float32) / 255.0, test["label"].astype(np.int32)
    return Dataset("cifar10", "classification", x[tr], y[tr], x[va], y[va], xt, yt, 10)


def load(name: str, data_dir: str = "") -> Dataset:
    if name == "digits":
        return digits()
    if name == "diabetes":
        return diabetes()
    if name == "cifar10":
        return cifar10(data_dir)
    raise ValueError(f"unknown task {name!r}; tasks: {list(TASKS)}")
