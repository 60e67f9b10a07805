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
import math
import os
import pickle
import re
import tarfile
import zlib
from collections.abc import Iterator

from spaces.benchmarks.nb201 import TEST_COLUMNS
from spaces.data_files import short
from spaces.files import DataError, write_text_atomic
from spaces.nb201 import parse_arch_string

# our dataset name -> (NATS-Bench dataset, its test set)
NATS_TEST_SETS = {"cifar10": ("cifar10", "ori-test"), "cifar100": ("cifar100", "x-test"),
                  "imagenet16": ("ImageNet16-120", "x-test")}  # fmt: skip
HP = "200"
NUM_CELLS = 5**6
REDOWNLOAD = (
    "download NATS-tss-v1_0-3ffb9-simple.tar again (https://github.com/D-X-Y/NATS-Bench#preparation-and-download)"
)
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
    except DataError as e:  # a class the archive must not pickle (``_PlainUnpickler``)
        raise DataError(f"{where}: {e}") from e
    except Exception as e:  # a cut or garbled pickle raises almost anything (EOFError, OverflowError, KeyError, ...)
        what = f"not a bz2-compressed pickle of NATS-Bench ({type(e).__name__}: {short(e)})" if data else "empty"
        raise DataError(f"{where}: {what}; {REDOWNLOAD}") from e


def _tar_entries(path: str) -> Iterator[tuple[str, bytes]]:
    """(``path:member``, bytes) of each ``*.pickle.pbz2`` in the tar archive ``path``; a ``DataError`` when the
    archive is cut short: in a member (its header says more bytes than there are) or between two (no two
    zero blocks, the end a tar archive is written with, where the members end)."""
    try:
        with tarfile.open(path) as tar:
            for member in tar:
                if member.isfile() and member.name.endswith(".pickle.pbz2"):
                    yield f"{path}:{member.name}", tar.extractfile(member).read()
            tar.fileobj.seek(tar.offset)
            complete = tar.fileobj.read(2 * tarfile.BLOCKSIZE) == bytes(2 * tarfile.BLOCKSIZE)
    except (tarfile.TarError, OSError, EOFError, zlib.error) as e:
        what = f"a tar archive cut short or damaged ({type(e).__name__}: {short(e)})"
        raise DataError(f"{path}: {what}; {REDOWNLOAD}") from e
    if not complete:
        raise DataError(f"{path}: a tar archive cut short (it stops after a member, without the end of an "
                        f"archive); {REDOWNLOAD}")  # fmt: skip


def _entries(path: str) -> Iterator[tuple[str, bytes]]:
    """(where, bytes) of each ``*.pickle.pbz2`` in a folder, a ``.tar`` of it, or the file itself; ``where``
    names the file (and the member of a tar archive) for messages."""
    if os.path.isdir(path):
        for name in sorted(os.listdir(path)):
            if name.endswith(".pickle.pbz2"):
                with open(os.path.join(path, name), "rb") as f:
                    yield os.path.join(path, name), f.read()
    elif tarfile.is_tarfile(path):
        yield from _tar_entries(path)
    elif path.endswith(".tar"):
        size = os.path.getsize(path)
        what = "empty" if not size else f"not a readable tar archive ({size:,} bytes: cut short or another format)"
        raise DataError(f"{path}: {what}; {REDOWNLOAD}")
    else:
        with open(path, "rb") as f:
            yield path, f.read()


def read_archive(path: str) -> tuple[list[str], dict[int, dict]]:
    """``(meta_archs, {index: {hp: ArchResults state}})`` from any of the release's layouts."""
    if not os.path.exists(path):
        raise DataError(
            f"NATS-Bench archive not found: {path}; download NATS-tss-v1_0-3ffb9-simple.tar "
            "(https://github.com/D-X-Y/NATS-Bench#preparation-and-download) and pass it or its folder"
        )
    meta, infos = None, {}
    for name, data in _entries(path):
        obj = load_pbz2(data, name)
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
    if not all(math.isfinite(a) for a in accs):
        raise DataError(f"{where}: the {test_set} accuracies for {nats} are not all finite numbers ({accs})")
    return sum(accs) / len(accs)


def read_test_accuracies(path: str, partial: bool = False) -> tuple[list[dict], dict[str, list[int]]]:
    """``(rows, missing)``: one row per usable cell (``ArchitectureString`` and the three ``TEST_COLUMNS``,
    200-epoch seed means, all finite numbers), and the cells left out, ``{reason: [index, ...]}``.

    Every one of the 15,625 cells must be usable unless ``partial``; with ``partial`` a cell without
    200-epoch results or a finite test accuracy on each data set is left out (never written as NaN), and an
    archive with no usable cell is still an error.
    """
    meta, infos = read_archive(path)
    rows, missing = [], {}

    def leave_out(index: int, reason: str, error: str) -> None:
        if not partial:
            raise DataError(f"{error}; NATS-tss-v1_0-3ffb9-simple has it (or convert with --partial to leave it out)")
        missing.setdefault(reason, []).append(index)

    outside = [i for i in sorted(infos) if not 0 <= i < len(meta)]
    if outside:
        raise DataError(f"{path}: architecture index {outside[0]} is not in meta_archs ({len(meta)} entries)")
    for index in range(len(meta)):
        if index not in infos:
            missing.setdefault("not in the archive", []).append(index)
            continue
        hp = infos[index].get(HP) if isinstance(infos[index], dict) else None
        where = f"{path}: architecture {index}"
        if not isinstance(hp, dict):
            leave_out(index, f"without {HP}-epoch results", f"{where} has no {HP}-epoch results")
            continue
        arch = hp.get("arch_str", meta[index])
        if arch != meta[index]:
            raise DataError(f"{where} is {arch!r} in its file but {meta[index]!r} in meta_archs")
        try:
            parse_arch_string(arch)  # a cell of NAS-Bench-201's space
        except ValueError as e:
            raise DataError(f"{where}: {e}") from e
        row = {"ArchitectureString": arch}
        for dataset, column in TEST_COLUMNS.items():
            try:
                row[column] = cell_test_accuracy(hp, dataset, where)
            except DataError as e:
                nats, test_set = NATS_TEST_SETS[dataset]
                leave_out(index, f"without a finite {test_set} accuracy for {nats}", str(e))
                break
        else:
            rows.append(row)
    if not partial and len(rows) != NUM_CELLS:
        raise DataError(
            f"{path}: {len(rows)} of the {NUM_CELLS} NAS-Bench-201 cells have results; the full "
            "NATS-tss-v1_0-3ffb9-simple release has all of them (or convert with --partial)"
        )
    if not rows:
        raise DataError(f"{path}: no cell has a 200-epoch test accuracy on all three data sets ({describe(missing)}); "
                        "nothing to write: give NATS-tss-v1_0-3ffb9-simple")  # fmt: skip
    return rows, missing


def describe(missing: dict[str, list[int]]) -> str:
    """``12 not in the archive (indexes 0, 1, 2, 3, 4, ...); 2 without a finite x-test accuracy for cifar100
    (indexes 5, 7)``: the cells left out."""
    parts = []
    for reason, indexes in missing.items():
        shown = ", ".join(str(i) for i in indexes[:5]) + (", ..." if len(indexes) > 5 else "")
        parts.append(f"{len(indexes):,} {reason} (indexes {shown})")
    return "; ".join(parts) or "none"


def archive_test_accuracies(path: str, partial: bool = False) -> list[dict]:
    """The rows of ``read_test_accuracies`` (the cells it leaves out with ``partial`` are not said)."""
    return read_test_accuracies(path, partial)[0]


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
