"""Seeds across devices: every CPU core a JAX device, the seed axis sharded over them.

XLA runs one CPU program mostly on one core: a vmapped search over 100 seeds kept the 2-core
machine at a load of ~1.3. Seeds are independent, so the leading (seed) axis of the keys and
of the search state can be split over devices and ``jax.jit`` partitions the vmapped program
along it (computation follows the data's sharding; nothing crosses devices inside a step).
On the CPU this needs one JAX device per core: ``use_cpu_cores()`` asks for them before the
backend starts (``jax_num_cpu_devices``). On a GPU or TPU host the same code shards over the
accelerators (one GPU: no sharding, nothing changes).

Results do not depend on the sharding: each seed runs the same per-seed program
(``tests/test_devices.py`` runs 1 and 2 devices and compares the histories bit for bit).

Known limit: a program with a batched CPU LAPACK call (the GP's Cholesky in ``gp_bo`` and
``bananas(predictor="gp")``) deadlocked in jaxlib's ``ParallelBatchMap`` when the seeds were
split over 2 CPU devices (gdb: the LAPACK kernel waits on tasks the idle pool never runs). Such
searchers say ``splits_over_devices = False`` and the runners keep them on one device. The hang
also happened on one device (2 of about 10 GP-BO runs of 100 seeds; resuming from the
checkpoint got through), so the root cause is in the LAPACK kernel, not in the split.
"""

from __future__ import annotations

import logging
import os

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec


def cpu_cores() -> int:
    """Cores this process may run on (the affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def use_cpu_cores(num: int = 0) -> int:
    """Makes the CPU backend expose ``num`` devices (0 = one per core); call before any JAX
    computation. Returns the number asked for, or 0 when the backend had already started (then
    nothing changes and a warning says so)."""
    num = int(num) or cpu_cores()
    if num < 1:
        raise ValueError(f"use_cpu_cores: num must be >= 1 (or 0 = one per core), got {num}")
    try:
        jax.config.update("jax_num_cpu_devices", num)
    except RuntimeError as e:  # the backend is already initialized
        logging.warning("use_cpu_cores(%d) ignored: %s", num, e)
        return 0
    return num


def seed_mesh_size(num_seeds: int, devices=None) -> int:
    """The number of devices the seed axis is split over: the most devices ``d`` (of the default
    backend's) such that ``num_seeds % d == 0`` (equal shards; 1 = no sharding)."""
    n = len(devices if devices is not None else jax.devices())
    return max(d for d in range(1, n + 1) if num_seeds % d == 0)


def seed_sharding(num_seeds: int) -> NamedSharding | None:
    """Sharding of arrays whose leading axis is the seed axis, or None for a single device."""
    d = seed_mesh_size(num_seeds)
    if d == 1:
        return None
    mesh = Mesh(np.asarray(jax.devices()[:d]), ("seeds",))
    return NamedSharding(mesh, PartitionSpec("seeds"))


def shard_seeds(tree, num_seeds: int):
    """``tree`` (leaves with leading axis ``num_seeds``) placed split over the devices; unchanged
    where there is a single device or the seeds do not split evenly."""
    sharding = seed_sharding(num_seeds)
    if sharding is None:
        return tree
    for leaf in jax.tree.leaves(tree):
        if np.ndim(leaf) == 0 or np.shape(leaf)[0] != num_seeds:
            raise ValueError(f"shard_seeds: every leaf needs the seed axis ({num_seeds}) first, got {np.shape(leaf)}")
    return jax.device_put(tree, sharding)


def shard_keys(searcher, keys):
    """The seed keys of a run of ``searcher``, split over the devices unless the searcher says it
    must stay on one (``splits_over_devices = False``, e.g. GP predictors; see above). The state
    that ``jit`` computes from the keys follows their placement."""
    if not searcher.splits_over_devices:
        return keys
    return shard_seeds(keys, keys.shape[0])


def shard_like(keys, tree):
    """``tree`` (leaves with the seed axis first) placed like ``keys``: split over the same devices.

    The state that ``init`` returns must be placed like the state a chunk returns,
    or the second chunk sees new input shardings and compiles again.
    """
    sharding = getattr(keys, "sharding", None)
    if not isinstance(sharding, NamedSharding):
        return tree
    return jax.device_put(tree, sharding)


def enable_compilation_cache(path: str, min_compile_secs: float = 0.5) -> None:
    """Turns on JAX's persistent compilation cache in ``path`` ('' = leave it off): a rerun of the same
    programs skips most XLA compiles. Programs that compile faster than ``min_compile_secs`` are not cached."""
    if not path:
        return
    os.makedirs(path, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", path)
    min_secs = os.environ.get("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", min_compile_secs)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", float(min_secs))
