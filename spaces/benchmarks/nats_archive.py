"""NATS-Bench's own NAS-Bench-201 release -> the test-accuracy CSV that ``spaces.benchmarks.nb201`` reads.

NATS-Bench (Dong et al., 2021; github.com/D-X-Y/NATS-Bench, MIT) ships the topology search space, which
is NAS-Bench-201's, as ``NATS-tss-v1_0-3ffb9-simple``: a folder (downloaded as a ``.tar``) of bz2-
compressed pickles, the layout its ``nats_bench`` API reads in fast mode:

    meta.pickle.pbz2         {"meta_archs": [arch string of index 0, 1, ...], ...}
    000000.pickle.pbz2 ...   {hp: ArchResults state}, hp "12" or "200" (training epochs)

An ``ArchResults`` state is a plain dict: ``arch_str``, ``dataset_seed`` ({dataset: [seeds]}) and
``all_results`` ({(dataset, seed): ResultsCount state}); a ``ResultsCount`` state holds ``epochs`` and
``eval_acc1es`` ({"<set>@<epoch>": accuracy %}). The single-file release ``NATS-tss-v1_0-3ffb9.pickle.pbz2``
holds the same states under ``arch2infos`` ({index: {hp: state}}) next to ``meta_archs``.

``archive_test_accuracies`` computes what the API's ``get_more_info(index, dataset, hp="200",
is_random=False)["test-accuracy"]`` returns, the seed mean of the last epoch's accuracy on the test
set: ``ori-test`` for ``cifar10`` (trained on train+valid), ``x-test`` for ``cifar100`` and
``ImageNet16-120``. These are the columns of the CSV the project's tables were made with
(``nats_bench_test_acc.csv``). Tested on small archives in both layouts built by the tests
(``tests/test_data_files.py``), not on the real release (it cannot be downloaded here).

The pickles are read with an unpickler that admits plain containers and numpy scalars only: the
``-full`` release (network weights, torch tensors) is refused with a clear error.
"""

from __future__ import annotations

import bz2
import csv
import io
import os
import pickle
import re
import tarfile
from collections.abc import Iterator

from spaces.benchmarks.nb201 import TEST_COLUMNS
from spaces.files import DataError, write_text_atomic
from spaces.nb201 import parse_arch_string

# our dataset name -> (NATS-Bench dataset, its test set)
NATS_TEST_SETS = {"cifar10": ("cifar10", "ori-test"), "cifar100": ("cifar100", "x-test"),
                  "imagenet16": ("ImageNet16-120", "x-test")}  # fmt: skip
HP = "200"
NUM_CELLS = 5**6
_ARCH_FILE = re.compile(r"(?:^|/)(\d+)\.pickle\.pbz2$")
_SAFE = {("collections", "OrderedDict"), ("collections", "defaultdict"), ("builtins", "set"),
         ("numpy", "dtype"), ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
         ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
         ("numpy", "ndarray")}  # fmt: skip


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) in _SAFE:
            return super().find_class(module, name)
        raise DataError(
            f"the archive pickles {module}.{name}; only NATS-Bench's '-simple' release (no network weights) "
            "is read: use NATS-tss-v1_0-3ffb9-simple"
        )


def load_pbz2(data: bytes, where: str):
    """A bz2-compressed pickle of plain containers (``DataError`` naming ``where`` otherwise)."""
    try:
        return _PlainUnpickler(io.BytesIO(bz2.decompress(data))).load()
    except (OSError, EOFError, ValueError, pickle.UnpicklingError) as e:
        raise DataError(f"{where}: not a bz2-compressed pickle of NATS-Bench ({type(e).__name__}: {e})") from e


def _entries(path: str) -> Iterator[tuple[str, bytes]]:
    """(name, bytes) of each ``*.pickle.pbz2`` in a folder, a ``.tar`` of it, or the file itself."""
    if os.path.isdir(path):
        for name in sorted(os.listdir(path)):
            if name.endswith(".pickle.pbz2"):
                with open(os.path.join(path, name), "rb") as f:
                    yield name, f.read()
    elif tarfile.is_tarfile(path):
        with tarfile.open(path) as tar:
            for member in tar:
                if member.isfile() and member.name.endswith(".pickle.pbz2"):
                    yield member.name, tar.extractfile(member).read()
    else:
        with open(path, "rb") as f:
            yield os.path.basename(path), f.read()


def read_archive(path: str) -> tuple[list[str], dict[int, dict]]:
    """``(meta_archs, {index: {hp: ArchResults state}})`` from any of the release's layouts."""
    if not os.path.exists(path):
        raise DataError(
            f"NATS-Bench archive not found: {path}; download NATS-tss-v1_0-3ffb9-simple.tar "
            "(https://github.com/D-X-Y/NATS-Bench#preparation-and-download) and pass it or its folder"
        )
    meta, infos = None, {}
    for name, data in _entries(path):
        obj = load_pbz2(data, f"{path}:{name}")
        arch = _ARCH_FILE.search(name)
        if name.endswith("meta.pickle.pbz2") or (isinstance(obj, dict) and "arch2infos" in obj):
            meta = obj.get("meta_archs") if isinstance(obj, dict) else None
            infos.update({int(k): v for k, v in (obj.get("arch2infos") or {}).items()})
        elif arch is not None and isinstance(obj, dict):
            infos[int(arch.group(1))] = obj
    if not isinstance(meta, list):
        raise DataError(f"{path}: no meta.pickle.pbz2 with 'meta_archs' (is this NATS-tss-v1_0-3ffb9-simple?)")
    return meta, infos


def cell_test_accuracy(state: dict, dataset: str, where: str) -> float:
    """Seed-mean test accuracy (%) after the last epoch of one ``ArchResults`` state (``NATS_TEST_SETS``)."""
    nats, test_set = NATS_TEST_SETS[dataset]
    try:
        seeds = state["dataset_seed"][nats]
        accs = []
        for seed in seeds:
            run = state["all_results"][(nats, seed)]
            accs.append(float(run["eval_acc1es"][f"{test_set}@{int(run['epochs']) - 1}"]))
    except (KeyError, TypeError, ValueError) as e:
        raise DataError(f"{where}: no {test_set} accuracy for {nats} ({type(e).__name__}: {e})") from e
    if not accs:
        raise DataError(f"{where}: no trained seed for {nats}")
    return sum(accs) / len(accs)


def archive_test_accuracies(path: str, partial: bool = False) -> list[dict]:
    """One row per cell: ``ArchitectureString`` and the three ``TEST_COLUMNS`` (200-epoch seed means).

    Every one of the 15,625 cells must be there unless ``partial``.
    """
    meta, infos = read_archive(path)
    rows = []
    for index in sorted(infos):
        if not 0 <= index < len(meta):
            raise DataError(f"{path}: architecture index {index} is not in meta_archs ({len(meta)} entries)")
        hp = infos[index].get(HP) if isinstance(infos[index], dict) else None
        if not isinstance(hp, dict):
            raise DataError(f"{path}: architecture {index} has no {HP}-epoch results")
        arch = hp.get("arch_str", meta[index])
        if arch != meta[index]:
            raise DataError(f"{path}: architecture {index} is {arch!r} in its file but {meta[index]!r} in meta_archs")
        where = f"{path}: architecture {index}"
        try:
            parse_arch_string(arch)  # a cell of NAS-Bench-201's space
        except ValueError as e:
            raise DataError(f"{where}: {e}") from e
        rows.append(
            {"ArchitectureString": arch, **{TEST_COLUMNS[d]: cell_test_accuracy(hp, d, where) for d in TEST_COLUMNS}}
        )
    if not partial and len(rows) != NUM_CELLS:
        raise DataError(
            f"{path}: {len(rows)} of the {NUM_CELLS} NAS-Bench-201 cells have results; the full "
            "NATS-tss-v1_0-3ffb9-simple release has all of them (or convert with --partial)"
        )
    return rows


def write_test_csv(rows: list[dict], out: str) -> None:
    """The rows as the CSV ``spaces.benchmarks.nb201.read_test_csv`` reads (full float precision), atomically."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    cols = ["ArchitectureString", *TEST_COLUMNS.values()]
    w.writerow(cols)
    for row in rows:
        w.writerow([row["ArchitectureString"], *(repr(float(row[c])) for c in cols[1:])])
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    write_text_atomic(out, buf.getvalue())
