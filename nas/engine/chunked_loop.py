"""Many seeds of one searcher in compiled chunks (Brax style): progress, checkpoints, resume.

``run_chunked(searcher, objective, keys, ...)`` runs many seeds of one searcher
as a sequence of compiled chunks, ``jax.jit(jax.vmap(chunk))``, where a chunk is
a range of ask/query/tell steps under ``lax.scan``. The ranges are every
``chunk_steps`` steps, also cut at the searcher's ``breakpoints()``; each range
runs ``searcher.program_for(lo, hi)``, a static program (for BO searchers: a fit
on a fixed padded number of rows, OSS Vizier's padding schedule). A program is
compiled once per (searcher variant, chunk length) and cached. What a step is (a batch of
queries, or one finished evaluation of a multi-fidelity searcher's simulated workers) and what
the loop counts and reports between chunks is the searcher's run kind (``nas.engine.run_kinds``),
chosen once per run.

Between chunks the loop draws a progress bar (stderr), reports per-chunk
metrics through a callback and writes a checkpoint of the whole run state
(``nas.engine.checkpoint``, atomic) once ``CHECKPOINT_EVERY_S`` seconds have passed since
the last one, and when the run stops early (``max_chunks``); never after the last chunk,
whose state the caller saves as the history. A fresh run compiles all its programs (init and
chunks) before the first chunk, together in threads (``nas.engine.program_cache``; ``compile_runs``
does it for several searchers at once), under a ``compiling <label> ...`` line
(``nas.engine.compile_notice``), so a long compile never looks like a hang.

Chunking never changes numbers: step ``t`` of a seed uses ``fold_in(key, t)``
(``nas.engine.runner.search_step``), so the keys do not depend on where chunk
boundaries fall, and a run resumed from a checkpoint continues exactly where it
stopped. The objective is passed to the compiled chunk as an argument, so large
tables are not baked into the program.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

import jax
import numpy as np
from jax.sharding import NamedSharding

from nas.core.contract import Searcher
from nas.engine import checkpoint, compile_policy, program_cache
from nas.engine.compile_notice import compile_notice
from nas.engine.devices import first_value, from_lead, gather_seeds, is_lead, shard_keys, shard_like
from nas.engine.incumbent import incumbent_indices
from nas.engine.program_cache import cached_jit, compile_ahead, is_compiled
from nas.engine.run_kinds import auto_chunk_steps, evaluations_done, run_kind
from nas.engine.runner import History

# a checkpoint costs a write and an fsync of the whole run state: for runs of many short chunks, at most
# one per CHECKPOINT_EVERY_S seconds (a kill then loses at most that much work; resuming stays exact)
CHECKPOINT_EVERY_S = 30.0


__all__ = [  # auto_chunk_steps, evaluations_done: nas.engine.run_kinds's, importable here as before
    "CHECKPOINT_EVERY_S", "auto_chunk_steps", "chunk_bounds", "chunk_for", "chunk_program", "chunk_programs",
    "compile_runs", "evaluations_done", "incumbent_stats", "init_program", "queries_done", "resume",
    "run_chunked", "run_programs", "save_checkpoint", "show_progress",
]  # fmt: skip


def chunk_bounds(searcher: Searcher, chunk_steps: int = 0) -> list[int]:
    """``[0, ..., num_steps]``: every ``chunk_steps`` steps (0 = the run kind's choice) and the searcher's
    breakpoints."""
    total, kind = searcher.num_steps, run_kind(searcher)
    chunk_steps = int(chunk_steps) or kind.chunk_steps(searcher)
    if chunk_steps < 1:
        raise ValueError(f"chunk_steps must be >= 1 (or 0 = auto), got {chunk_steps}")
    cuts = set(range(0, total, chunk_steps)) | {t for t in searcher.breakpoints() if 0 < t < total}
    if kind.last_rows(searcher) is not None and total > 1:
        cuts.add(total - 1)  # the partial last batch is a program of its own
    return sorted(cuts) + [total]


def init_program(searcher: Searcher, sharding=None, metrics: tuple[str, ...] = ()) -> Callable:
    """``keys[S] -> RunState[S]``, compiled once per searcher (and placement, and recorded metrics).

    ``sharding``: the seed keys' ``NamedSharding`` (``nas.engine.devices``); the state comes out split like
    the keys, also its leaves that do not depend on them (no re-placement program per leaf after it).
    """
    opts = compile_policy.init_compiler_options(searcher)  # it runs once: options for a short compile
    init = run_kind(searcher).init_state

    def make():
        fn = jax.vmap(lambda k: init(searcher, k, metrics))
        if sharding is None:
            return jax.jit(fn, compiler_options=opts)
        return jax.jit(fn, out_shardings=sharding, compiler_options=opts)

    return cached_jit(searcher, _with_metrics(("init", sharding), metrics), 0, make)


def _with_metrics(what, metrics: tuple[str, ...]):
    """A program's cache key: ``what``, and the recorded metrics when there are any."""
    return (what, tuple(metrics)) if metrics else what


def chunk_program(searcher: Searcher, length: int, rows: int | None = None, metrics: tuple[str, ...] = ()) -> Callable:
    """``(keys[S], state[S], objective) -> (state[S], metrics[S, length])``: ``length`` steps of ``searcher``
    (``rows``: the last step's partial batch, ``metrics``: those recorded, ``nas.engine.runner.search_step``)."""

    steps = run_kind(searcher).run_steps

    def make():
        def one(key, state, objective):
            return steps(searcher, objective, key, state, length, rows, metrics)

        # the state is donated: a chunk updates it in place (one copy of the run state in memory, not two)
        opts = compile_policy.compiler_options(searcher)
        return jax.jit(jax.vmap(one, in_axes=(0, 0, None)), donate_argnums=1, compiler_options=opts)

    return cached_jit(searcher, _with_metrics(f"chunk{rows or ''}", metrics), length, make)


def incumbent_stats(
    score: np.ndarray, report_score: np.ndarray, queries: int, report: Callable | None = None, has_test: bool = True
) -> dict[str, float]:
    """Mean over seeds of the best score among the first ``queries`` and its query's report score.

    ``score``/``report_score`` are the whole ``[S, T]`` history buffers (host arrays). The incumbent is
    ``nas.engine.incumbent.incumbent_index``'s, computed in numpy (no program to compile between chunks): the
    first query with the best non-NaN score (ties keep the earlier query; query 0 while none is above
    ``-inf``). Keys: ``best_valid_mean`` (the searched score), ``incumbent_test_mean`` (its test score), or
    ``incumbent_validation_mean`` when the objective has no test split (``has_test`` False: the report score
    is then the seed-mean validation score), and with ``report`` ``incumbent_reported_mean`` (the reported
    metric, e.g. error %). Lines written before these names existed call a validation mean
    ``incumbent_test_mean`` too.
    """
    score = np.asarray(score)
    idx = np.maximum(incumbent_indices(score)[:, queries - 1], 0)
    rows = np.arange(score.shape[0])
    inc = report_score[rows, idx]
    split = "test" if has_test else "validation"
    out = {"best_valid_mean": float(np.mean(score[rows, idx])), f"incumbent_{split}_mean": float(np.mean(inc))}
    if report is not None:
        out["incumbent_reported_mean"] = float(np.mean(report(inc)))
    return out


def show_progress(
    label: str,
    done: int,
    total: int,
    queries: float,
    elapsed: float,
    unit: str = "chunks",
    part: float = 0.0,
    what: str = "queries",
) -> None:
    """One progress line on stderr, redrawn in place (a newline when ``done == total``); ``part``: the
    fraction of the unit under way that is done (a group of peer seeds, query by query); ``queries``: what
    each seed has done (``what``: a multi-fidelity run counts its evaluations, a mean over seeds)."""
    width = 24
    fill = int(width * (done + part) / max(total, 1))
    bar = "#" * fill + "-" * (width - fill)
    sys.stderr.write(f"\r{label:>24s} [{bar}] {done}/{total} {unit}, {queries:.0f} {what}/seed, {elapsed:6.1f} s")
    program_cache.bar_open[0] = done != total  # compile_ahead's notice then starts a line of its own
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def run_chunked(
    searcher: Searcher,
    objective,
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
    metrics: tuple[str, ...] = (),
) -> History | None:
    """Runs ``keys.shape[0]`` seeds of ``searcher`` on ``objective`` in compiled chunks.

    Returns the batched History (``[S, max_queries]``), or None when
    ``max_chunks`` stopped the run early (an interruption: the checkpoint holds
    the state and a later call with the same ``ckpt_path`` resumes).
    ``on_chunk(info)`` receives after each chunk, before its checkpoint is
    written: ``chunk``, ``num_chunks``, ``step``, ``queries`` (per seed; a multi-fidelity run: history rows,
    and ``evaluations_mean``, the evaluations finished, and ``resource_spent_mean``),
    ``elapsed_s``, ``devices`` (how many the seeds are split over), ``metrics`` (the searcher's
    metrics at the chunk's last step, mean over seeds) and the incumbent statistics of ``incumbent_stats`` (with
    ``report``). A caller that records these lines keyed by ``step`` loses none
    on a kill and duplicates none on resume. With ``progress``, a ``compiling`` line whenever
    programs compile (``compile_ahead``) and a progress bar go to stderr. ``metrics``: the objective's
    metrics to record in the history and to tell a multi-objective searcher (``nas.engine.runner``).
    """
    metrics, kind = tuple(metrics), run_kind(searcher)
    bounds = chunk_bounds(searcher, chunk_steps)
    extra = fingerprint_extra + (f" metrics={list(metrics)}" if metrics else "")
    fprint = checkpoint.run_fingerprint(searcher, keys, extra)
    keys = shard_keys(searcher, keys)  # the seeds split over the devices (nas/engine/devices.py)
    sharding = keys.sharding if isinstance(getattr(keys, "sharding", None), NamedSharding) else None
    name = label or searcher.registry_name
    notice = progress and is_lead()
    new_searcher = not is_compiled(searcher, _with_metrics(("init", sharding), metrics), 0)
    with compile_notice(name, notice and new_searcher):  # one line for the init and the chunk programs
        init = init_program(searcher, sharding, metrics)
        if new_searcher and not (ckpt_path is not None and os.path.exists(ckpt_path)):  # a fresh run
            compile_ahead(run_programs(searcher, objective, keys, bounds, metrics, max_chunks), name, False)
        state = shard_like(keys, init(keys))
        if ckpt_path is not None:
            state = resume(ckpt_path, keys, state, fprint)
        step = saved = int(first_value(state.step))
        num_chunks = len(bounds) - 1
        first = next((c for c in range(num_chunks) if bounds[c + 1] > step), None)
        programs = chunk_programs(searcher, bounds, step, metrics, max_chunks)
        compile_ahead([(p, (keys, state, objective)) for p in programs], name, notice and not new_searcher)
    t0 = t_saved = time.perf_counter()
    done_now = 0
    if progress and first is not None:  # the bar at once: a first chunk can run for minutes
        done = kind.done_per_seed(searcher, state, step)  # every process takes part (a gather); process 0 draws
        if is_lead():
            show_progress(name, first, num_chunks, done, 0.0, what=kind.counts)
    for c in range(num_chunks):
        lo, hi = bounds[c], bounds[c + 1]
        if hi <= step:
            continue  # finished before the checkpoint was written
        lo = max(lo, step)  # a checkpoint from another chunk_steps: finish this chunk from there
        if max_chunks is not None and done_now >= max_chunks:
            if ckpt_path is not None and step > saved:  # an early stop keeps its progress
                save_checkpoint(ckpt_path, state, fprint)
            return None
        program = chunk_for(searcher, lo, hi, metrics)
        compile_ahead([(program, (keys, state, objective))], f"{name} (steps {lo}-{hi})", notice)
        state, chunk_metrics = program(keys, state, objective)
        step = hi
        done_now += 1
        queries = kind.queries_done(searcher, step)
        if on_chunk is not None:
            h = state.history
            info = {
                "chunk": c + 1,
                "num_chunks": num_chunks,
                "step": step,
                "queries": queries,
                "elapsed_s": time.perf_counter() - t0,
                "devices": 1 if sharding is None else len(sharding.device_set),  # rounding: docs/reference/scaling.md
                "metrics": {k: float(np.mean(v[:, -1])) for k, v in gather_seeds(chunk_metrics).items()},
            }
            score, rep = gather_seeds((h.score, h.report_score))
            score = kind.incumbent_score(searcher, score, h)
            info.update(incumbent_stats(score, rep, queries, report, getattr(objective, "has_test", True)))
            info.update(kind.chunk_info(state))
            on_chunk(info)
        if ckpt_path is not None and c < num_chunks - 1:  # the last chunk's state becomes the history
            # process 0's clock decides for every process: the save gathers the state from all of them
            if from_lead(np.bool_(time.perf_counter() - t_saved >= CHECKPOINT_EVERY_S)):
                save_checkpoint(ckpt_path, state, fprint)
                t_saved, saved = time.perf_counter(), step
        if progress:
            done = kind.done_per_seed(searcher, state, step)
            if is_lead():
                show_progress(name, c + 1, num_chunks, done, time.perf_counter() - t0, what=kind.counts)
    history = kind.history(searcher, state)
    return history if jax.process_count() == 1 else gather_seeds(history)


def queries_done(searcher: Searcher, step: int) -> int:
    """Queries per seed after ``step`` steps (a multi-fidelity searcher: evaluations finished, one per step)."""
    return run_kind(searcher).queries_done(searcher, step)


def chunk_for(searcher: Searcher, lo: int, hi: int, metrics: tuple[str, ...] = ()) -> Callable:
    """The compiled program of steps ``[lo, hi)`` (``rows``: the last step's partial batch)."""
    rows = run_kind(searcher).last_rows(searcher) if hi == searcher.num_steps and hi - lo == 1 else None
    return chunk_program(searcher.program_for(lo, hi), hi - lo, rows, metrics)


def chunk_programs(
    searcher: Searcher, bounds: list[int], step: int, metrics: tuple[str, ...] = (), max_chunks: int | None = None
) -> list[Callable]:
    """The distinct programs of the chunks a run from ``step`` calls (the first ``max_chunks`` of them)."""
    out, chunks = [], 0
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        if hi <= step:
            continue
        if max_chunks is not None and chunks >= max_chunks:
            break
        program = chunk_for(searcher, max(lo, step), hi, metrics)
        chunks += 1
        if all(program is not p for p in out):
            out.append(program)
    return out


def run_programs(
    searcher: Searcher,
    objective,
    keys: jax.Array,
    bounds: list[int],
    metrics: tuple[str, ...] = (),
    max_chunks: int | None = None,
) -> list[tuple[Callable, tuple]]:
    """``(program, example arguments)`` of every program a fresh run of ``searcher`` calls: its init program
    and its distinct chunk programs (``compile_ahead`` compiles them together). ``keys``: placed as
    ``shard_keys`` places them; the chunks' state is the init program's output as an abstract value
    (shapes and shardings), so nothing runs."""
    sharding = keys.sharding if isinstance(getattr(keys, "sharding", None), NamedSharding) else None
    init = init_program(searcher, sharding, metrics)
    state = init.trace(keys).out_info
    chunks = chunk_programs(searcher, bounds, 0, metrics, max_chunks)
    return [(init, (keys,))] + [(p, (keys, state, objective)) for p in chunks]


def compile_runs(runs: dict, keys: jax.Array, chunk_steps: int = 0, metrics: tuple[str, ...] = (), notice=True):
    """Compiles the programs of fresh runs of several searchers together (``runs``: label -> (searcher,
    objective)), under one ``compiling <labels> ...`` line, so their compiles overlap
    (``nas.engine.program_cache``); ``run_chunked`` then finds them compiled. Searchers whose programs would
    not all fit the program cache with the others' are left to compile when they run."""
    programs, labels = [], []
    for label, (searcher, objective) in runs.items():
        placed = shard_keys(searcher, keys)
        more = run_programs(searcher, objective, placed, chunk_bounds(searcher, chunk_steps), tuple(metrics))
        if len(programs) + len(more) > program_cache.CACHE_SIZE // 2:
            continue
        programs += more
        labels.append(label)
    if programs:
        compile_ahead(programs, ", ".join(labels), notice and is_lead())
    return labels


def save_checkpoint(ckpt_path: str, state, fprint: str) -> None:
    """The whole run state to ``ckpt_path`` (every process takes part in the gather; process 0 writes)."""
    host_state = gather_seeds(state)
    if is_lead():
        checkpoint.save(ckpt_path, host_state, fprint)


def resume(ckpt_path: str, keys: jax.Array, state, fprint: str):
    """``state`` replaced by the checkpoint at ``ckpt_path`` where there is one, placed like ``keys``.

    Process 0 reads the file (a multi-process run keeps its workdir there) and broadcasts what it
    read, so every process resumes from the same step.
    """
    if jax.process_count() == 1:
        loaded = checkpoint.load(ckpt_path, state, fprint)
        return state if loaded is None else shard_like(keys, loaded)
    like = jax.tree.map(lambda x: np.zeros(x.shape, x.dtype), state)
    loaded = checkpoint.load(ckpt_path, like, fprint) if is_lead() else None
    if not from_lead(np.bool_(loaded is not None)):
        return state
    return shard_like(keys, from_lead(loaded if loaded is not None else like))
