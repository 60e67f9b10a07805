"""NAS-Bench-101 data: conversion of the official files into a cache, and benchmark loaders.

The official files (Ying et al., 2019; github.com/google-research/nasbench)
``nasbench_only108.tfrecord`` (108 epochs, ~500 MB) and
``nasbench_full.tfrecord`` (4/12/36/108 epochs, ~2 GB) hold one record per
training run (cell x epoch budget x repeat, 3 repeats); ``spaces.benchmarks.nb101_tfrecord``
reads them without TensorFlow. The official API reads ``evaluation_data[2]``
(end of training); we read the last evaluation point, which is that one.

``convert`` turns a file into a ``.npz`` cache (written atomically) of arrays
sorted by the canonical code of ``spaces.nb101``: ``code``, ``hash``,
``tokens``, ``epochs`` and per (cell, epoch, repeat) ``valid``, ``test``,
``train_time`` (accuracies as fractions, NaN where absent), ``params``.
``load`` builds the ``TabularBenchmark`` (accuracies in %) of one budget, or with ``fidelities`` a
``MultiFidelityTable`` of several; ``load_data1k`` the 1,000-cell subset of nasbench-vis (validation
only; with ``fidelities`` its 4/12/36/108-epoch runs).

A file that holds only some of the 423,624 cells (a filtered or partial copy) is refused by ``convert``
and ``load`` with the count, unless ``partial=True`` says that searching those cells only is meant;
``load`` then warns with the count (a table of some cells is not NAS-Bench-101's search problem).
"""

from __future__ import annotations

import base64
import json
import logging
import os
import time
from pathlib import Path

import jax
import numpy as np

from spaces import nb101
from spaces.benchmarks.cache import read_cache, source_tag, write_cache
from spaces.benchmarks.data_files import missing_hint
from spaces.benchmarks.multi_fidelity_table import MultiFidelityTable
from spaces.benchmarks.nb101_tfrecord import decode_model_metrics, frame_records
from spaces.benchmarks.objective import check_fidelities
from spaces.benchmarks.tabular import TabularBenchmark
from spaces.data_files import data_errors, numbers, read_json, require
from spaces.files import DataError
from spaces.nb101_hash import spec_hash

DOWNLOAD = (
    "Download the official NAS-Bench-101 data (https://github.com/google-research/nasbench#download-the-dataset): "
    "https://storage.googleapis.com/nasbench/nasbench_only108.tfrecord (108 epochs, ~500 MB) or "
    "https://storage.googleapis.com/nasbench/nasbench_full.tfrecord (4/12/36/108 epochs, ~2 GB), "
    "and pass its path (or the .npz cache converted from it) as data_path."
)
CACHE_VERSION = 2
NUM_CELLS = 423_624  # the cells of nasbench_only108.tfrecord and nasbench_full.tfrecord (Ying et al., 2019)


# ---- conversion ----------------------------------------------------------------------------------
def _require(path: str) -> Path:
    if not path:
        raise DataError(
            f"NAS-Bench-101 needs data_path (no file in the data directory either). {missing_hint('nb101')}"
        )
    p = Path(path).expanduser()
    require(p, f"NAS-Bench-101 data file not found: {p}. {missing_hint('nb101')}",
            "the NAS-Bench-101 file (nasbench_only108.tfrecord or its .npz cache)")  # fmt: skip
    return p


def partial_problem(num_cells: int, path) -> str | None:
    """Why a file of ``num_cells`` cells is not the whole of NAS-Bench-101 (None when it is)."""
    if num_cells >= NUM_CELLS:
        return None
    return (
        f"{path}: holds {num_cells:,} of the {NUM_CELLS:,} NAS-Bench-101 cells (a filtered or partial file), "
        "not the benchmark; give the full nasbench_only108.tfrecord (or nasbench_full.tfrecord), or pass "
        "partial=True (--config.benchmark_options.partial=true; scripts.convert_nb101 --partial) to search "
        "these cells only"
    )


def parse_records(path: str) -> tuple[dict[str, np.ndarray], list[tuple], dict]:
    """Checks framing and CRCs and decodes every row into compact arrays.

    Returns per-record arrays ``cell`` (index into ``cells``), ``epochs``,
    ``valid``, ``test``, ``time`` (final evaluation), per-cell ``params``;
    ``cells`` [(hash, matrix, ops, first record)] in order of appearance; and
    timing ``stats``. Arrays, not per-record dicts: the full file has 5M records.
    """
    p = _require(path)
    if p.stat().st_size == 0:
        raise DataError(f"{p}: empty file, not a NAS-Bench-101 TFRecord. {DOWNLOAD}")
    buf = np.memmap(p, np.uint8, mode="r")
    t0 = time.perf_counter()
    offs, lens = frame_records(buf, str(p))
    t_frame = time.perf_counter() - t0
    n_rec = len(offs)
    rec = {"cell": np.zeros(n_rec, np.int32), "epochs": np.zeros(n_rec, np.int32)}
    rec.update({k: np.full(n_rec, np.nan) for k in ("valid", "test", "time")})
    index, cells, params = {}, [], []
    mv = memoryview(buf)  # slicing a memmap builds an array object per record; a memoryview is cheaper
    for r, (off, n) in enumerate(zip(offs.tolist(), lens.tolist())):
        where = f"{p}: record {r} at byte offset {off - 12}"
        try:
            h, epochs, adj, ops, raw = json.loads(bytes(mv[off : off + n]))
            if not (isinstance(h, str) and isinstance(epochs, int) and isinstance(adj, str) and isinstance(ops, str)):
                raise ValueError("fields must be [str, int, str, str, str]")
        except ValueError as e:
            expected = "[module_hash, epochs, adjacency, ops, metrics]"
            raise DataError(f"{where}: bad JSON row, expected {expected} ({e})") from e
        try:
            metrics = decode_model_metrics(base64.b64decode(raw, validate=True), final_only=True)
        except (ValueError, TypeError) as e:
            raise DataError(f"{where}: bad ModelMetrics protobuf ({e})") from e
        evals = metrics["evaluation_data"]
        if not evals or "validation_accuracy" not in evals[-1]:
            raise DataError(f"{where}: ModelMetrics has no final evaluation with a validation accuracy")
        c = index.get(h)
        if c is None:
            dim = int(round(len(adj) ** 0.5))
            if dim * dim != len(adj) or set(adj) - {"0", "1"}:
                raise DataError(f"{where}: adjacency {adj!r} is not a square 0/1 matrix")
            c = index[h] = len(cells)
            cells.append((h, np.asarray([int(x) for x in adj]).reshape(dim, dim), ops.split(","), r))
            params.append(metrics["trainable_parameters"])
        ev = evals[-1]
        rec["cell"][r], rec["epochs"][r] = c, epochs
        rec["valid"][r] = ev["validation_accuracy"]
        rec["test"][r] = ev.get("test_accuracy", np.nan)
        rec["time"][r] = ev.get("training_time", np.nan)
    rec["params"] = np.asarray(params, np.int64)
    stats = {"records": n_rec, "bytes": int(len(buf)), "frame_crc_s": t_frame}
    stats["frame_crc_mb_s"] = len(buf) / 1e6 / max(t_frame, 1e-9)
    return rec, cells, stats


def convert(path: str, cache_path: str | None = None, verify_hash: bool = False, partial: bool = False) -> str:
    """Converts an official TFRecord into the ``.npz`` cache (atomically); returns the cache path.

    A file of fewer than the 423,624 cells is refused unless ``partial`` (module docstring)."""
    p = _require(path)
    t0 = time.perf_counter()
    rec, cells, stats = parse_records(str(p))
    hashes = [c[0] for c in cells]
    tokens = np.zeros((len(cells), nb101.SPACE.num_tokens), np.int32)
    for i, (h, m, ops, r) in enumerate(cells):
        try:
            tokens[i] = nb101.SPACE.from_spec({"matrix": m, "ops": ops})
        except ValueError as e:
            raise DataError(f"{p}: record {r}: cell {h} is not a NAS-Bench-101 cell ({e})") from e
        if verify_hash and spec_hash(m, ops) != h:
            raise DataError(f"{p}: record {r}: stored hash {h} != official hash of its cell {spec_hash(m, ops)}")
    codes = canonical_codes(tokens)
    if np.any(codes < 0):
        r = cells[int(np.flatnonzero(codes < 0)[0])][3]
        raise DataError(f"{p}: record {r}: cell is not a valid NAS-Bench-101 cell")
    uniq, first = np.unique(codes, return_index=True)
    if len(uniq) != len(codes):
        dup = np.setdiff1d(np.arange(len(codes)), first)[0]
        other = hashes[int(first[np.searchsorted(uniq, codes[dup])])]
        raise DataError(f"{p}: cells {hashes[dup]} and {other} have one canonical code (isomorphic, two hashes)")
    order = np.argsort(codes)
    row_of_cell = np.empty(len(cells), np.int64)
    row_of_cell[order] = np.arange(len(cells))
    epochs = np.unique(rec["epochs"]).astype(np.int32)
    row, col = row_of_cell[rec["cell"]], np.searchsorted(epochs, rec["epochs"])
    # repeat number = rank of a record among the records of its (cell, epochs), in file order
    group = row * len(epochs) + col
    srt = np.argsort(group, kind="stable")
    starts = np.searchsorted(group[srt], group[srt])
    rep = np.empty(len(group), np.int64)
    rep[srt] = np.arange(len(group)) - starts
    if np.any(rep >= 3):
        r = int(np.flatnonzero(rep >= 3)[0])
        h, e = hashes[rec["cell"][r]], rec["epochs"][r]
        raise DataError(f"{p}: record {r}: more than 3 repeats of cell {h} at {e} epochs")
    shape = (len(cells), len(epochs), 3)
    arrays = {}
    for name, src in (("valid", "valid"), ("test", "test"), ("train_time", "time")):
        arrays[name] = np.full(shape, np.nan, np.float32)
        arrays[name][row, col, rep] = rec[src]
    arrays.update(
        code=codes[order].astype(np.int32),
        hash=np.asarray(hashes, "S32")[order],
        tokens=tokens[order].astype(np.int8),
        epochs=epochs,
        params=rec["params"][order],
        version=np.int32(CACHE_VERSION),
        source_tag=np.asarray(source_tag(p)),
    )
    problem = partial_problem(len(cells), p)  # once the records are known to be sound
    if problem and not partial:
        raise DataError(problem)
    target = Path(cache_path) if cache_path else default_cache_path(p)
    target.parent.mkdir(parents=True, exist_ok=True)
    write_cache(target, arrays)  # atomic, with a manifest: readers never see a half-written cache
    stats["total_s"] = time.perf_counter() - t0
    part = f" (partial: {len(cells):,} of the {NUM_CELLS:,} cells)" if problem else ""
    print(
        f"nb101: converted {p.name}: {stats['records']} records, {len(cells)} cells{part}, epochs {epochs.tolist()}, "
        f"framing+CRC {stats['frame_crc_mb_s']:.0f} MB/s, total {stats['total_s']:.1f} s -> {target}"
    )
    return str(target)


_IDS = None


def canonical_codes(tokens: np.ndarray, batch: int = 65536) -> np.ndarray:
    """``SPACE.string_id`` of many strings, jitted on padded power-of-two batches (few compilations)."""
    global _IDS
    if _IDS is None:
        _IDS = jax.jit(jax.vmap(nb101.SPACE.string_id))
    size = min(batch, max(1024, 1 << int(np.ceil(np.log2(max(len(tokens), 1))))))
    out = np.empty(len(tokens), np.int32)
    for s in range(0, len(tokens), size):
        chunk = tokens[s : s + size]
        pad = np.zeros((size, tokens.shape[1]), np.int32)
        pad[: len(chunk)] = chunk
        out[s : s + len(chunk)] = np.asarray(_IDS(pad))[: len(chunk)]
    return out


def default_cache_path(tfrecord: Path) -> Path:
    """``<dir>/<name>.nb101.npz`` next to the TFRecord, or ``~/.cache/nasjax`` if that folder is read-only."""
    if os.access(tfrecord.parent, os.W_OK):
        return tfrecord.with_suffix(".nb101.npz")
    return Path.home() / ".cache" / "nasjax" / (tfrecord.stem + ".nb101.npz")


def load_arrays(data_path: str) -> dict[str, np.ndarray]:
    """The cache arrays of a TFRecord (converted on first use) or of a ``.npz`` cache."""
    p = _require(data_path)
    if p.suffix != ".npz":
        cache = default_cache_path(p)
        tag = source_tag(p)
        arrays = read_cache(cache) if cache.exists() else None
        if arrays is not None and not _current(arrays, tag):
            logging.warning("NAS-Bench-101 cache %s was made from another version of %s; reconverting", cache, p)
            arrays = None
        if arrays is None:
            convert(str(p), str(cache), partial=True)  # ``load`` says whether a partial table may be used
            arrays = read_cache(cache)
        if arrays is None:
            raise DataError(f"{cache}: the NAS-Bench-101 cache just written cannot be read back (disk full?)")
        return arrays
    arrays = read_cache(p)
    if arrays is None or int(arrays.get("version", -1)) != CACHE_VERSION:
        raise DataError(
            f"{p}: not a readable NAS-Bench-101 cache of version {CACHE_VERSION}; "
            "pass the official .tfrecord instead (it is converted again)"
        )
    return arrays


def _current(arrays: dict[str, np.ndarray], tag: str) -> bool:
    """The cache is of this version and was made from the file with content tag ``tag``."""
    return int(arrays.get("version", -1)) == CACHE_VERSION and str(arrays.get("source_tag", "")) == tag


# ---- loaders -------------------------------------------------------------------------------------
def _budget_table(a: dict[str, np.ndarray], epochs: int, name: str, protocol: str, path: str) -> TabularBenchmark:
    """The cells trained at ``epochs``: validation accuracy (%) per repeat, mean test accuracy (%), mean time."""
    with data_errors(path, f"pass the official .tfrecord instead (it is converted again). {DOWNLOAD}"):
        k = a["epochs"].tolist().index(epochs)
        valid = a["valid"][:, k, :]
        has = ~np.all(np.isnan(valid), axis=1)  # cells trained at this budget
        with np.errstate(all="ignore"):
            test = np.nanmean(a["test"][has, k, :], axis=1) * 100.0
            cost = np.nanmean(a["train_time"][has, k, :], axis=1)
        row_ids = a["code"][has]
    return TabularBenchmark.build(
        name=name,
        space=nb101.SPACE,
        valid=valid[has] * 100.0,
        test=test,
        cost=np.nan_to_num(cost),
        row_ids=row_ids,
        protocol=protocol,
        report_kind="acc_pct",
        cost_unit="s",
    )


def _check_budgets(fidelities, avail: list[int], where: str) -> tuple[int, ...]:
    """``fidelities`` as increasing epoch budgets that ``where`` holds (at least two), or a ``DataError``."""
    try:
        budgets = check_fidelities("NAS-Bench-101", fidelities, "epochs")
    except ValueError:
        budgets = ()
    if len(budgets) < 2 or any(b != int(b) for b in budgets):
        raise DataError(f"NAS-Bench-101 fidelities must be two or more increasing epoch budgets, got {fidelities!r}")
    budgets = tuple(int(b) for b in budgets)
    missing = [e for e in budgets if e not in avail]
    if missing:
        raise DataError(f"{where} has epochs {avail}, not {missing} (asked fidelities {budgets})")
    return budgets


def load(
    data_path: str = "", protocol: str = "mean", epochs: int = 108, fidelities=(), partial: bool = False
) -> TabularBenchmark | MultiFidelityTable:
    """NAS-Bench-101 at ``epochs``: validation accuracy (%) per repeat, mean test accuracy (%), mean time.

    ``fidelities`` (e.g. ``(4, 12, 36, 108)``, the budgets of ``nasbench_full.tfrecord``): one table per
    budget, each with its recorded repeats and training times, as a ``MultiFidelityTable`` named ``nb101``
    (``epochs`` is then unused). ``partial``: accept a file of fewer than the 423,624 cells (with a warning).
    """
    a = load_arrays(data_path)
    with data_errors(data_path, f"pass the official .tfrecord instead (it is converted again). {DOWNLOAD}"):
        avail = a["epochs"].tolist()
        problem = partial_problem(len(a["code"]), data_path)
    if problem and not partial:
        raise DataError(problem)
    if problem:
        logging.warning("nb101: %s holds %s of the %s cells (partial=True): a search of these cells only",
                        data_path, f"{len(a['code']):,}", f"{NUM_CELLS:,}")  # fmt: skip
    if fidelities:
        budgets = _check_budgets(fidelities, avail, f"NAS-Bench-101 file {data_path}")
        levels = [_budget_table(a, e, "nb101", protocol, data_path) for e in budgets]
        return MultiFidelityTable.stack("nb101", levels, budgets, "epochs")
    if epochs not in avail:
        raise DataError(f"NAS-Bench-101 file {data_path} has epochs {avail}, not {epochs}")
    return _budget_table(a, epochs, "nb101" if epochs == 108 else f"nb101/{epochs}ep", protocol, data_path)


DATA1K_SOURCE = "github.com/tiga1231/nasbench-vis (static/data/data-1k.json)"
DATA1K_FIELDS = ("adjacency", "operations", "108_final_validation_accuracy", "final_training_time")
DATA1K_EPOCHS = (4, 12, 36, 108)  # one run per budget; its one training time is the 108-epoch run's


def load_data1k(data_path: str = "", protocol: str = "mean", fidelities=()) -> TabularBenchmark | MultiFidelityTable:
    """The 1,000 real cells of ``data-1k.json`` (nasbench-vis): 108-epoch validation of one run, no test.

    ``fidelities`` (a subset of ``(4, 12, 36, 108)``): one table per budget, the validation accuracy of that
    budget's run; the file records one training time (``final_training_time``, the 108-epoch run's), so the
    cost at ``e`` epochs is derived as ``e / 108`` of it.
    """
    fix = f"use an intact data-1k.json from {DATA1K_SOURCE}"
    if not data_path:
        raise DataError(
            f"nb101/data1k needs data_path=<data-1k.json> (no file in the data directory either). "
            f"{missing_hint('nb101_data1k')}"
        )
    path = data_path
    require(path, f"nb101/data1k file not found: {path}. {missing_hint('nb101_data1k')}", "the data-1k.json file")
    budgets = _check_budgets(fidelities, list(DATA1K_EPOCHS), path) if fidelities else (108,)
    d = read_json(path, fix)
    if not isinstance(d, dict):
        raise DataError(f"{path}: expected a JSON object of parallel lists, got a {type(d).__name__}; {fix}")
    fields = DATA1K_FIELDS + tuple(f"{e}_final_validation_accuracy" for e in budgets if e != 108)
    missing = [k for k in fields if k not in d]
    if missing:
        raise DataError(f"{path}: lacks the field(s) {missing}; {fix}")
    cells = d["adjacency"]
    n = len(cells) if isinstance(cells, list) else -1
    if n < 1:
        raise DataError(f"{path}: adjacency must be a non-empty list of matrices; {fix}")
    if not isinstance(d["operations"], list) or len(d["operations"]) != n:
        raise DataError(f"{path}: operations must be a list of {n} op lists like adjacency (unequal lengths); {fix}")
    acc = {e: numbers(d[f"{e}_final_validation_accuracy"], f"{e}_final_validation_accuracy", path, fix, length=n,
                      low=0, high=1) for e in budgets}  # fmt: skip
    seconds = numbers(d["final_training_time"], "final_training_time", path, fix, length=n, low=0)
    tokens = []
    for i, (m, o) in enumerate(zip(cells, d["operations"])):
        with data_errors(f"{path}: cell {i}", fix):
            tokens.append(nb101.SPACE.from_spec({"matrix": m, "ops": o}))
    codes = canonical_codes(np.stack(tokens))
    if np.any(codes < 0) or len(np.unique(codes)) != len(codes):
        raise DataError(f"{path}: cells are invalid or repeated; {fix}")
    order = np.argsort(codes)
    time_108 = seconds.astype(np.float32)[order]
    levels = [
        TabularBenchmark.build(
            name="nb101/data1k",
            space=nb101.SPACE,
            valid=acc[e].astype(np.float32)[order, None] * 100.0,
            cost=time_108 if e == 108 else time_108 * np.float32(e / 108),
            test=None,
            row_ids=codes[order],
            protocol=protocol,
            report_kind="acc_pct",
            cost_unit="s",
        )
        for e in budgets
    ]
    if not fidelities:
        return levels[0]
    return MultiFidelityTable.stack("nb101/data1k", levels, budgets, "epochs")
