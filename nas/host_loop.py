"""The host loop over compiled chunks (Brax style): progress, checkpoints, resume.

``run_chunked(searcher, benchmark, keys, ...)`` runs many seeds of one searcher
as a sequence of compiled chunks, ``jax.jit(jax.vmap(chunk))`` where a chunk
is ``chunk_steps`` ask/query/tell steps under ``lax.scan``. Between chunks the
host draws a progress bar (stderr), reports per-chunk metrics through a
callback and writes a checkpoint of the whole run state (atomically: a
temporary file, then ``os.replace``).

Chunking never changes numbers: step ``t`` of a seed uses
``fold_in(key, t)`` (``nas.runner.search_step``), so the keys do not depend on
where chunk boundaries fall, and a run resumed from a checkpoint continues
exactly where it stopped. The benchmark is passed to the compiled chunk as an
argument, so large tables are not baked into the program.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
import zlib
from collections.abc import Callable

import jax
import numpy as np

from nas.devices import shard_keys
from nas.runner import History, init_state, run_steps
from nas.searcher import Searcher


def auto_chunk_steps(num_steps: int, target_chunks: int = 10) -> int:
    """The divisor of ``num_steps`` closest to ``num_steps / target_chunks``.

    A divisor keeps every chunk the same length, so one program is compiled.
    """
    want = max(1, num_steps / target_chunks)
    divisors = [d for d in range(1, num_steps + 1) if num_steps % d == 0]
    return min(divisors, key=lambda d: (abs(d - want), d))


def save_atomic(path: str, arrays: dict[str, np.ndarray]) -> None:
    """``np.savez`` to ``path`` through a temporary file and ``os.replace``."""
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        np.savez(f, **arrays)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _options(searcher: Searcher) -> tuple[list, bool]:
    """The searcher's options as reprs, and whether all of them are plain values."""
    # plain values and dataclasses have stable reprs; functions or arrays do not (addresses, size)
    plain = (int, float, str, bool, tuple, type(None))
    opts, stable = [], True
    for k, v in sorted(vars(searcher).items()):
        if k == "space":
            continue
        if isinstance(v, plain) or dataclasses.is_dataclass(v):
            opts.append((k, repr(v)))
        else:
            opts.append((k, type(v).__name__))
            stable = False
    return opts, stable


def fingerprint(searcher: Searcher, keys: jax.Array, extra: str = "") -> str:
    """Identifies a run: the searcher's type and options, the seeds' keys, ``extra``."""
    opts, _ = _options(searcher)
    key_crc = zlib.crc32(np.asarray(jax.random.key_data(keys) if _is_typed(keys) else keys).tobytes())
    return f"{type(searcher).__name__}|{searcher.space.name}|{opts}|keys={key_crc}|{extra}"


# compiled chunk programs reused across calls in one process (resume, several configs)
_COMPILED: dict[tuple, Callable] = {}


def _compiled(searcher: Searcher, what: str, length: int, make: Callable[[], Callable]) -> Callable:
    opts, stable = _options(searcher)
    if not stable:
        return make()
    key = (type(searcher), id(searcher.space), repr(opts), what, length)
    if key not in _COMPILED:
        _COMPILED[key] = make()
    return _COMPILED[key]


def _is_typed(keys) -> bool:
    return jax.dtypes.issubdtype(keys.dtype, jax.dtypes.prng_key)


def _load_checkpoint(path: str, like, fprint: str):
    """State saved at ``path`` restored into the structure of ``like``; None when absent."""
    if not os.path.exists(path):
        return None
    with np.load(path, allow_pickle=False) as z:
        saved = str(z["fingerprint"])
        if saved != fprint:
            raise ValueError(
                f"checkpoint {path} belongs to a different run (searcher options, seeds or benchmark differ).\n"
                f"  saved:   {saved}\n  current: {fprint}\n"
                "Use a new workdir, or delete the checkpoint to start this run over."
            )
        leaves, treedef = jax.tree.flatten(like)
        loaded = [z[f"leaf_{i:04d}"] for i in range(len(leaves))]
    for i, (a, b) in enumerate(zip(loaded, leaves)):
        if a.shape != b.shape or a.dtype != b.dtype:
            raise ValueError(f"checkpoint {path}: leaf {i} is {a.shape}/{a.dtype}, expected {b.shape}/{b.dtype}")
    return jax.tree.unflatten(treedef, [jax.numpy.asarray(a) for a in loaded])


def _save_checkpoint(path: str, state, fprint: str) -> None:
    leaves = jax.tree.leaves(state)
    arrays = {f"leaf_{i:04d}": np.asarray(x) for i, x in enumerate(leaves)}
    arrays["fingerprint"] = np.asarray(fprint)
    save_atomic(path, arrays)


def _progress(label: str, done: int, total: int, queries: int, elapsed: float) -> None:
    width = 24
    fill = int(width * done / max(total, 1))
    bar = "#" * fill + "-" * (width - fill)
    sys.stderr.write(f"\r{label:>24s} [{bar}] {done}/{total} chunks, {queries} queries/seed, {elapsed:6.1f} s")
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def incumbent_stats(valid: np.ndarray, test: np.ndarray, report: Callable | None = None) -> dict[str, float]:
    """Mean over seeds of the best validation score and its string's test score.

    ``valid``/``test`` are f32[S, q] (the queries so far); ties keep the
    earlier query, as ``nas.runner.incumbent_curve``. With ``report`` (e.g.
    ``benchmark.report``) also the mean reported metric of the incumbents.
    """
    idx = np.argmax(valid, axis=1)
    rows = np.arange(valid.shape[0])
    inc = test[rows, idx]
    out = {"best_valid_mean": float(np.mean(valid[rows, idx])), "incumbent_test_mean": float(np.mean(inc))}
    if report is not None:
        out["incumbent_reported_mean"] = float(np.mean(report(inc)))
    return out


def run_chunked(
    searcher: Searcher,
    benchmark,
    keys: jax.Array,
    *,
    chunk_steps: int = 0,
    ckpt_path: str | None = None,
    fingerprint_extra: str = "",
    progress: bool = True,
    label: str = "",
    max_chunks: int | None = None,
    on_chunk: Callable[[dict], None] | None = None,
    report: Callable | None = None,
) -> History | None:
    """Runs ``keys.shape[0]`` seeds of ``searcher`` in compiled chunks.

    Returns the batched History (``[S, max_queries]``), or None when
    ``max_chunks`` stopped the run early (an "interruption": the checkpoint
    holds the state and a later call with the same ``ckpt_path`` resumes).
    ``on_chunk(info)`` receives after each chunk: ``chunk``, ``num_chunks``,
    ``step``, ``queries`` (per seed), ``elapsed_s``, ``metrics`` (the
    searcher's metrics at the chunk's last step, mean over seeds) and the
    incumbent statistics of ``incumbent_stats`` (with ``report``).
    """
    total = searcher.num_steps
    chunk_steps = int(chunk_steps) or auto_chunk_steps(total)
    if chunk_steps < 1:
        raise ValueError(f"chunk_steps must be >= 1 (or 0 = auto), got {chunk_steps}")
    fprint = fingerprint(searcher, keys, fingerprint_extra)
    keys = shard_keys(searcher, keys)  # the seeds split over the devices (nas/devices.py)
    init = _compiled(searcher, "init", 0, lambda: jax.jit(jax.vmap(lambda k: init_state(searcher, k))))
    state = init(keys)
    if ckpt_path is not None:
        loaded = _load_checkpoint(ckpt_path, state, fprint)
        state = state if loaded is None else jax.device_put(loaded, keys.sharding)

    def chunk_fn(length: int, lo: int = 0):
        # optional hook: a searcher may run steps [lo, lo + length) as a static variant of itself
        # with the same state shapes (BO searchers fit on a padded bucket; surrogates/padding.py)
        variant = getattr(searcher, "chunk_variant", None)
        s = variant(lo, lo + length) if variant is not None else searcher

        def make():
            def one(key, st, bench):
                return run_steps(s, bench, key, st, length)

            return jax.jit(jax.vmap(one, in_axes=(0, 0, None)))

        return _compiled(s, "chunk", length, make)

    step = int(np.asarray(state.step).reshape(-1)[0])
    bounds = list(range(0, total, chunk_steps)) + [total]
    num_chunks = len(bounds) - 1
    b = searcher.batch_size
    t0 = time.perf_counter()
    done_now = 0
    for c in range(num_chunks):
        lo, hi = bounds[c], bounds[c + 1]
        if hi <= step:
            continue  # finished before the checkpoint was written
        lo = max(lo, step)  # a checkpoint from another chunk_steps: finish this chunk from there
        if max_chunks is not None and done_now >= max_chunks:
            return None
        state, metrics = chunk_fn(hi - lo, lo)(keys, state, benchmark)
        step = hi
        done_now += 1
        if ckpt_path is not None:
            _save_checkpoint(ckpt_path, state, fprint)
        queries = min(step * b, searcher.max_queries)
        if on_chunk is not None:
            h = state.history
            info = {
                "chunk": c + 1,
                "num_chunks": num_chunks,
                "step": step,
                "queries": queries,
                "elapsed_s": time.perf_counter() - t0,
                "metrics": {k: float(np.mean(np.asarray(v)[:, -1])) for k, v in metrics.items()},
            }
            info.update(incumbent_stats(np.asarray(h.valid[:, :queries]), np.asarray(h.test[:, :queries]), report))
            on_chunk(info)
        if progress:
            _progress(label or searcher.registry_name, c + 1, num_chunks, queries, time.perf_counter() - t0)
    h = state.history
    q = searcher.max_queries
    return History(tokens=h.tokens[:, :q], valid=h.valid[:, :q], test=h.test[:, :q], cost=h.cost[:, :q])
