"""Bucketed padding for surrogates whose training set grows every step.

A BO searcher refits its surrogate on all queried architectures at every step, so the data size
``n`` grows from ``t0`` to the budget. Compiling a fit per ``n`` would recompile every step; a
fit on the full capacity ``C`` every step wastes work early on. OSS Vizier's ``PaddingSchedule``
pads ``n`` up to a few bucket sizes and masks the padded rows; each bucket compiles once.

Under ``vmap`` a ``lax.switch`` over bucket sizes executes every branch, so the bucket cannot be
chosen inside one compiled program. Instead a run is cut into **segments** on the host: the data
size before step ``t`` is ``t * batch_size`` for every seed (deterministic), so the bucket of
each step is known in advance; consecutive steps with the same bucket form one segment, compiled
once as a ``lax.scan`` (``nas.runner.run_steps``) vmapped over seeds. The searcher state keeps
fixed shapes (data stored at full capacity ``C``); only the static bucket ``P`` of the searcher
object differs between segments (``searcher.with_bucket(P)``), and its fit uses rows ``[:P]``.

- ``bucket_size(n, capacity, multiple)``: smallest multiple of ``multiple`` >= ``n``, capped at the
  capacity. A multiple of the MLP mini-batch (32) wastes at most one partial mini-batch; the BO
  searchers default to 64 (buckets 64, 128, 150 for 150 queries: fewer programs to compile,
  compilation dominating on a 2-core CPU).
- ``segment_plan(searcher)``: ``[(bucket, num_steps), ...]`` from ``searcher.bucket_for_step``.
- ``run_segments(searcher, benchmark, keys)``: the host loop; returns the batched ``History``
  (identical shapes and key schedule to ``nas.runner.make_search``).
"""

from __future__ import annotations

import functools

import jax

from nas.devices import shard_keys
from nas.runner import History, init_state, run_steps


def bucket_size(n: int, capacity: int, multiple: int = 32) -> int:
    """Padded row count for ``n`` real rows (``n <= capacity``)."""
    if n < 0 or n > capacity:
        raise ValueError(f"bucket_size: n={n} outside [0, {capacity}]")
    if multiple < 1:
        raise ValueError(f"bucket_size: multiple must be >= 1, got {multiple}")
    return min(-(-n // multiple) * multiple, capacity)


def segment_plan(searcher) -> list[tuple[int, int]]:
    """Consecutive steps with the same bucket: ``[(bucket, num_steps), ...]``."""
    plan: list[tuple[int, int]] = []
    for t in range(searcher.num_steps):
        b = searcher.bucket_for_step(t)
        if plan and plan[-1][0] == b:
            plan[-1] = (b, plan[-1][1] + 1)
        else:
            plan.append((b, 1))
    return plan


@functools.lru_cache(maxsize=64)
def _init_fn(searcher):
    return jax.jit(jax.vmap(lambda k: init_state(searcher, k)))


@functools.lru_cache(maxsize=256)
def make_segment_fn(searcher, num_steps: int):
    """``jit(vmap(run_steps))`` for one segment: ``(keys[S], state[S], benchmark) -> state[S]``.

    Cached per (searcher object, steps), so a second run with the same searcher compiles nothing.
    """

    def seg(keys, state, benchmark):
        def one(k, st):
            st, _ = run_steps(searcher, benchmark, k, st, num_steps)
            return st

        return jax.vmap(one)(keys, state)

    return jax.jit(seg)


def run_segments(searcher, benchmark, keys: jax.Array, on_segment=None) -> History:
    """Runs every seed in ``keys`` through the whole budget, one compiled call per segment.

    ``on_segment(index, bucket, num_steps)`` (optional) is called after each segment finishes.
    """
    keys = shard_keys(searcher, keys)  # the seeds split over the devices (nas/devices.py)
    state = _init_fn(searcher)(keys)
    for i, (bucket, steps) in enumerate(segment_plan(searcher)):
        state = make_segment_fn(searcher.with_bucket(bucket), steps)(keys, state, benchmark)
        if on_segment is not None:
            jax.block_until_ready(state.step)
            on_segment(i, bucket, steps)
    h = state.history
    q = searcher.max_queries
    return History(tokens=h.tokens[:, :q], valid=h.valid[:, :q], test=h.test[:, :q], cost=h.cost[:, :q])
