"""Padded data sizes for surrogates whose training set grows every step.

A BO searcher refits its surrogate on all queried architectures at every step,
so the data size ``n`` grows from ``t0`` to the budget. Compiling a fit per
``n`` would recompile every step; a fit on the full capacity ``C`` every step
wastes work early on. OSS Vizier's ``PaddingSchedule`` pads ``n`` up to a few
bucket sizes and masks the padded rows; each bucket compiles once.

Under ``vmap`` a ``lax.switch`` over bucket sizes executes every branch, so the
bucket cannot be chosen inside one compiled program. The data size before step
``t`` is the same for every seed (``t * batch_size``), so the bucket of each step
is known on the host: the searcher runs each range of steps with one bucket as
a static variant of itself (``nas.searchers.bo``, ``nas.engine.chunked_loop``).

``bucket_size(n, capacity, multiple)``: the smallest multiple of ``multiple``
>= ``n``, capped at the capacity. A multiple of the MLP mini-batch (32) wastes
at most one partial mini-batch; the BO searchers default to 64 (buckets 64,
128, 150 for 150 queries: fewer programs to compile).
"""

from __future__ import annotations


def bucket_size(n: int, capacity: int, multiple: int = 32) -> int:
    """Padded row count for ``n`` real rows (``n <= capacity``)."""
    if n < 0 or n > capacity:
        raise ValueError(f"bucket_size: n={n} outside [0, {capacity}]")
    if multiple < 1:
        raise ValueError(f"bucket_size: multiple must be >= 1, got {multiple}")
    return min(-(-n // multiple) * multiple, capacity)
